import Foundation
import Sets
import Testing
import TestSupport

/// `apkpatch merge` and `run --merge`: one installable APK from a set, judged by apksigner, aapt (badging,
/// resources, xmltree), zipalign and unzip.
@Suite(.serialized, .removesTemporaryDirectories) struct SetMergeTests {
    let scratch: URL
    let fixture: SplitSetFixture
    let keystore: String

    init() throws {
        scratch = try TestSupport.makeTemporaryDirectory("apkpatch-set-merge")
        // A base as Play delivers it: split required, and the meta-data of split delivery and the source stamp.
        fixture = try SplitSetFixture(in: scratch, manifestAttributes: #"android:isSplitRequired="true""#, applicationElements: """
            <meta-data android:name="com.android.vending.splits.required" android:value="true"/>
            <meta-data android:name="com.android.stamp.source" android:value="https://play.google.com/store"/>
            <meta-data android:name="com.android.stamp.type" android:value="STAMP_TYPE_DISTRIBUTION_APK"/>
            <meta-data android:name="com.android.vending.derived.apk.id" android:value="1"/>
            <meta-data android:name="kept.by.merge" android:value="yes"/>
            """)
        keystore = scratch.appendingPathComponent("debug.p12").path
    }

    @Test(arguments: [SplitSetFixture.Form.apks, .xapk, .directory])
    func mergeWritesOneInstallableAPK(form: SplitSetFixture.Form) throws {
        let input = try fixture.pack(form)
        let output = scratch.appendingPathComponent("merged-\(form.rawValue).apk").path
        let result = try TestSupport.apkpatch(["merge", input, "--out", output, "--debug-keystore", keystore, "--json"])
        #expect(result.succeeded, "\(result)")
        #expect(!(try SetOracles.certificateSHA256(output)).isEmpty)
        let badging = try SetOracles.badging(output)
        #expect(badging.contains("name='com.example.set' versionCode='7'") && !badging.contains("split="), "\(badging)")
        // The splits' configurations are in the merged table: the xhdpi drawable and the French string.
        let resources = try TestSupport.run("aapt", ["dump", "--values", "resources", output])
        #expect(resources.succeeded, "\(resources)")
        #expect(resources.stdout.contains("config xhdpi"), "\(resources.stdout)")
        #expect(resources.stdout.contains("config fr"), "\(resources.stdout)")
        #expect(resources.stdout.contains("\"Bonjour\""), "\(resources.stdout)")
        #expect(resources.stdout.contains("\"Hello\""), "\(resources.stdout)")
        // Each resource's configuration flags are those aapt gives the same resources built in one APK
        // (drawable/icon varies by density, string/hello by locale).
        let monolithic = try TestSupport.run("aapt", ["dump", "resources", fixture.monolithicAPK])
        let specs = { (text: String) in text.split(separator: "\n").filter { $0.contains("spec resource") }.map { $0.trimmingCharacters(in: .whitespaces) } }
        #expect(specs(resources.stdout) == specs(monolithic.stdout), "\(resources.stdout)\n---\n\(monolithic.stdout)")
        #expect(specs(resources.stdout).contains { $0.contains("drawable/icon: flags=0x00000100") })
        let listing = try TestSupport.run("unzip", ["-lv", output])
        #expect(listing.stdout.contains("lib/arm64-v8a/libfoo.so") && listing.stdout.contains("res/drawable-xhdpi-v4/icon.xml"), "\(listing.stdout)")
        #expect(listing.stdout.split(separator: "\n").contains { $0.hasSuffix("resources.arsc") && $0.contains("Stored") }, "resources.arsc stored")
        #expect(try TestSupport.run("zipalign", ["-c", "-p", "4", output]).succeeded)
        // The split machinery is gone from the manifest; other meta-data stays.
        let manifest = try TestSupport.run("aapt", ["dump", "xmltree", output, "AndroidManifest.xml"])
        for gone in ["isSplitRequired", "com.android.vending.splits.required", "com.android.stamp.source", "com.android.stamp.type",
                     "com.android.vending.derived.apk.id"] {
            #expect(!manifest.stdout.contains(gone), "\(gone) is still in the manifest:\n\(manifest.stdout)")
        }
        #expect(manifest.stdout.contains("kept.by.merge"))
        let verify = try TestSupport.apkpatch(["verify", output])
        #expect(verify.succeeded, "\(verify)")
        // The .idsig (its tree's leaves hashed by the signer as it wrote) ends with fsverity's tree of the file.
        let tree = output + ".tree"
        let fsverity = try TestSupport.run("fsverity", ["digest", output, "--out-merkle-tree", tree])
        #expect(fsverity.succeeded, "\(fsverity)")
        let expectedTree = try TestSupport.readBytes(tree), idsig = try TestSupport.readBytes(output + ".idsig")
        #expect(!expectedTree.isEmpty && Array(idsig.suffix(expectedTree.count)) == expectedTree, "the v4 tree is not fs-verity's")
    }

    @Test func runMergeAppliesThePatchFirst() throws {
        let patch = scratch.appendingPathComponent("patch")
        try TestSupport.write("merged and patched", to: "assets/new.txt", in: patch)
        try TestSupport.write(FixtureAPK.pseudoRandomBytes(count: 2000, seed: 31), to: "splits/config.arm64_v8a/lib/arm64-v8a/libbar.so", in: patch)
        let output = scratch.appendingPathComponent("run-merged.apk").path
        let result = try TestSupport.apkpatch(["run", try fixture.pack(.apks), "--patch", patch.path, "--merge", "--out", output,
                                               "--debug-keystore", keystore])
        #expect(result.succeeded, "\(result)")
        #expect(try TestSupport.run("unzip", ["-p", output, "assets/new.txt"]).stdout == "merged and patched")
        let listing = try TestSupport.run("unzip", ["-l", output]).stdout
        #expect(listing.contains("lib/arm64-v8a/libbar.so") && listing.contains("lib/arm64-v8a/libfoo.so"), "\(listing)")
        #expect(try TestSupport.run("apksigner", ["verify", output]).succeeded)
        // Nothing of the unsigned intermediate APKs is left beside the output.
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).allSatisfy { !$0.hasPrefix(".run-merged") })
    }

    @Test func featureSplitIsRefusedWithTheReason() throws {
        let feature = try SplitSetFixture.makeSplit(in: scratch, packageName: "com.example.set", versionCode: 7, split: "camera", isFeatureSplit: true)
        let input = try fixture.pack(.directory, adding: ["split_camera.apk": feature])
        let output = scratch.appendingPathComponent("feature-merged.apk").path
        let result = try TestSupport.apkpatch(["merge", input, "--out", output, "--debug-keystore", keystore])
        #expect(!result.succeeded)
        #expect(result.stderr.contains("feature split \"camera\" cannot be merged faithfully"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    /// Android tells entries apart by their names' bytes: a split's "cafe\u{301}.txt" beside the base's
    /// "caf\u{E9}.txt" (equal Swift Strings) is a second entry, which the merged APK keeps with its own content.
    @Test func entriesWhoseNamesAreEquivalentButNotTheSameBytesAreBothMerged() throws {
        let composed = "assets/caf\u{E9}.txt", decomposed = "assets/cafe\u{301}.txt"
        let folder = scratch.appendingPathComponent("twins-\(UUID().uuidString)")
        try TestSupport.write("base\n", to: composed, in: folder)
        let base = scratch.appendingPathComponent("base-with-twin.apk").path
        try FileManager.default.copyItem(atPath: fixture.apks["base.apk"]!, toPath: base)
        let added = try TestSupport.run("aapt", ["add", base, composed], currentDirectory: folder.path)
        #expect(added.succeeded, "\(added)")
        let split = try SplitSetFixture.makeSplit(in: scratch, packageName: "com.example.set", versionCode: 7, split: "config.arm64_v8a",
                                                  files: [decomposed: Array("split\n".utf8)])
        let input = try fixture.pack(.directory, replacing: ["base.apk": base, "split_config.arm64_v8a.apk": split])
        let output = scratch.appendingPathComponent("merged-twins.apk").path
        let result = try TestSupport.apkpatch(["merge", input, "--out", output, "--debug-keystore", keystore])
        #expect(result.succeeded, "\(result)")
        let found = try TestSupport.libziparchiveFind(output, names: [composed, decomposed])
        #expect(found.stdout == "626173650a\n73706c69740a\n", "libziparchive finds each by its bytes: \(found)")
        #expect(try TestSupport.run("apksigner", ["verify", output]).succeeded)
    }

    /// A merged APK whose base says android:extractNativeLibs="false" gets true when a merged native library is
    /// compressed (Android loads a library in place only when it is stored). "lib/arm64-v8a/liba\u{600}.so" is one,
    /// by the name's bytes as Android's NativeLibraryHelper reads it; a Prepend mark (U+0600) joins the dot in a
    /// Character, and the merged APK kept "false" with the library compressed.
    @Test func aCompressedLibraryNamedWithAMarkMakesTheMergedAPKExtractLibraries() throws {
        let work = scratch.appendingPathComponent("extract-\(UUID().uuidString)")
        let inPlace = try SplitSetFixture(in: work, applicationAttributes: #"android:extractNativeLibs="false""#)
        let library = "lib/arm64-v8a/liba\u{600}.so"
        // Compressible, so that `aapt add` deflates it.
        let split = try SplitSetFixture.makeSplit(in: work, packageName: "com.example.set", versionCode: 7, split: "config.arm64_v8a",
                                                  files: [library: [UInt8](repeating: 0x41, count: 4000)])
        let input = try inPlace.pack(.directory, replacing: ["split_config.arm64_v8a.apk": split])
        let output = scratch.appendingPathComponent("merged-extracts.apk").path
        let result = try TestSupport.apkpatch(["merge", input, "--out", output, "--debug-keystore", keystore])
        #expect(result.succeeded, "\(result)")
        let manifest = try TestSupport.run("aapt", ["dump", "xmltree", output, "AndroidManifest.xml"])
        #expect(manifest.stdout.contains("android:extractNativeLibs(0x010104ea)=(type 0x12)0xffffffff"), "\(manifest.stdout)")
        let listing = try TestSupport.run("unzip", ["-v", output]).stdout
        #expect(listing.split(separator: "\n").contains { $0.hasSuffix(library) && $0.contains("Defl") }, "\(listing)")
    }

    /// Hostile tables never trap: a split table with bytes changed at random (seeded) merges or is refused.
    @Test func damagedSplitTablesAreRefusedNotTrapped() throws {
        let base = try TestSupport.readBytes(unzipped(fixture.apks["base.apk"]!, "resources.arsc"))
        let french = try TestSupport.readBytes(unzipped(fixture.apks["split_config.fr.apk"]!, "resources.arsc"))
        #expect(throws: ResourceTableMerger.Failure.self) { try ResourceTableMerger.merge(base: base, splits: [("truncated", Array(french.prefix(100)))]) }
        #expect(throws: ResourceTableMerger.Failure.self) { try ResourceTableMerger.merge(base: Array(base.prefix(40)), splits: [("fr", french)]) }
        var generator = SplitMix64(seed: 18)
        var refused = 0
        for _ in 0..<300 {
            var damaged = french
            for _ in 0..<3 { damaged[Int.random(in: 0..<damaged.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            do { _ = try ResourceTableMerger.merge(base: base, splits: [("damaged", damaged)]) } catch { refused += 1 }
        }
        #expect(refused > 0, "seed 18: no damaged table was refused")
    }

    func unzipped(_ archive: String, _ name: String) throws -> String {
        let folder = scratch.appendingPathComponent("extract-\(UUID().uuidString)")
        _ = try TestSupport.run("unzip", ["-q", archive, name, "-d", folder.path])
        return folder.appendingPathComponent(name).path
    }
}
