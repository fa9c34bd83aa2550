import Foundation
import Testing
import TestSupport
import APKCore
import Sets
import ZlibWrapper

/// `apkpatch verify/sign/run` on split APK sets, end to end through the binary, judged by apksigner, aapt,
/// zipalign and unzip.
@Suite(.serialized, .removesTemporaryDirectories) struct SetCommandTests {
    let scratch: URL
    let fixture: SplitSetFixture
    let keystore: String

    init() throws {
        scratch = try TestSupport.makeTemporaryDirectory("apkpatch-sets")
        fixture = try SplitSetFixture(in: scratch)
        keystore = scratch.appendingPathComponent("debug.p12").path
    }

    /// Signs `set` into `output` with the test's debug keystore.
    @discardableResult
    func sign(_ set: [String], out output: String, keystore: String? = nil) throws -> TestSupport.ProcessResult {
        try TestSupport.apkpatch(["sign", "--debug-keystore", keystore ?? self.keystore, "--out", output] + set)
    }

    /// Android keys split names as Java Strings (an ArrayMap in ApkLiteParseUtils): "config.caf\u{E9}" and
    /// "config.cafe\u{301}" are two splits, not one named twice.
    @Test func splitNamesAreToldApartByTheirBytes() throws {
        let composed = try SplitSetFixture.makeSplit(in: scratch, packageName: "com.example.set", versionCode: 7, split: "config.caf\u{E9}")
        let decomposed = try SplitSetFixture.makeSplit(in: scratch, packageName: "com.example.set", versionCode: 7, split: "config.cafe\u{301}")
        let input = try fixture.pack(.directory, adding: ["split_a.apk": composed, "split_b.apk": decomposed])
        let output = scratch.appendingPathComponent("signed-twins").path
        let result = try sign([input], out: output)
        #expect(result.succeeded, "\(result)")
        for file in ["split_a.apk", "split_b.apk"] {
            #expect(try TestSupport.run("apksigner", ["verify", output + "/" + file]).succeeded, "\(file)")
        }
    }

    /// A container may hold two APKs whose entry names String's == joins ("caf\u{E9}.apk", "cafe\u{301}.apk"): each
    /// entry of the signed container holds its own APK signed, not one of the two twice.
    @Test func containerEntriesWithEquivalentNamesEachGetTheirOwnAPK() throws {
        let composed = try SplitSetFixture.makeSplit(in: scratch, packageName: "com.example.set", versionCode: 7, split: "config.one")
        let decomposed = try SplitSetFixture.makeSplit(in: scratch, packageName: "com.example.set", versionCode: 7, split: "config.two")
        let input = try fixture.pack(.apkm)
        let python = """
            import sys, zipfile
            with zipfile.ZipFile(sys.argv[1], 'a') as z:
                z.write(sys.argv[2], 'caf\\u00e9.apk', zipfile.ZIP_STORED)
                z.write(sys.argv[3], 'cafe\\u0301.apk', zipfile.ZIP_STORED)
            """
        let added = try TestSupport.run("python3", ["-c", python, input, composed, decomposed])
        #expect(added.succeeded, "\(added)")
        let output = scratch.appendingPathComponent("signed-twins.apkm").path
        let result = try sign([input], out: output)
        #expect(result.succeeded, "\(result)")
        let signed = try APKArchive(path: output)
        for (name, split) in [("caf\u{E9}.apk", "config.one"), ("cafe\u{301}.apk", "config.two")] {
            let entry = try #require(signed.entries.first { $0.nameBytes == Array(name.utf8) }, "\(name.debugDescription)")
            let apk = scratch.appendingPathComponent("extracted-\(split).apk").path
            try Data(try signed.uncompressedData(of: entry)).write(to: URL(fileURLWithPath: apk))
            #expect(try SetOracles.badging(apk).contains("split='\(split)'"), "\(name.debugDescription) holds another split")
            #expect(try TestSupport.run("apksigner", ["verify", apk]).succeeded)
        }
    }

    /// Which files of a set are its APKs, and which bundletool folder holds each, is read from the names' bytes:
    /// "splits/\u{301}base-de.apk" is under splits/ (a Character joins the mark to the slash, and the set was refused
    /// as holding an APK outside bundletool's folders); "config.de\u{600}.APK" ends in ".apk" without regard to
    /// ASCII case, as adb's install-multiple (EndsWithIgnoreCase) reads it (a Prepend mark joins the dot in a
    /// Character); a folder's ".\u{301}de.apk" is hidden by its leading dot byte, as `ls` and the shell's `*` hide it.
    @Test func membersAndTheirFoldersAreToldByTheNamesBytes() throws {
        let german = try SplitSetFixture.makeSplit(in: scratch, packageName: "com.example.set", versionCode: 7, split: "config.de")
        /// The set's members (their split names, or file names), or why the set was refused.
        func members(_ path: String, byFileName: Bool = false) -> String {
            do {
                return try APKSet.open(paths: [path]).members.map { byFileName ? $0.name : $0.splitName }.sorted().joined(separator: " ")
            } catch {
                return "\(error)"
            }
        }
        let all = "base config.arm64_v8a config.de config.fr config.xhdpi_v4"
        #expect(APKSet.isSet(paths: ["x\u{600}.apks"]), "a container by its extension after the dot byte")
        #expect(members(try fixture.pack(.apks, adding: ["splits/\u{301}base-de.apk": german])) == all)
        #expect(members(try fixture.pack(.apkm, adding: ["config.de\u{600}.APK": german])) == all)
        let folder = try fixture.pack(.directory, adding: [".\u{301}de.apk": german, "de.Apk": german])
        #expect(members(folder, byFileName: true) == "base.apk de.Apk split_config.arm64_v8a.apk split_config.fr.apk split_config.xhdpi.apk")
    }

    /// Loose APK files given with --out are a set when each name ends with ".apk" by its bytes (any ASCII case, as
    /// adb's EndsWithIgnoreCase): "de\u{600}.apk" (a Prepend mark joins the dot in a Character) was not, and the
    /// command asked for --out-dir.
    @Test func looseAPKsWithMarkedNamesAreASet() throws {
        let german = try SplitSetFixture.makeSplit(in: scratch, packageName: "com.example.set", versionCode: 7, split: "config.de")
        let folder = try fixture.pack(.directory, adding: ["de\u{600}.apk": german])
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.utf8.count > 4 }.sorted().map { folder + "/" + $0 }
        let output = scratch.appendingPathComponent("signed-loose-marked").path
        let result = try sign(files, out: output)
        #expect(result.succeeded, "\(result)")
        #expect(FileManager.default.fileExists(atPath: output + "/de\u{600}.apk"), "\((try? FileManager.default.contentsOfDirectory(atPath: output)) ?? [])")
    }

    /// A folder output replaces the one an earlier run wrote, whatever its APKs are named as a folder's APKs may be:
    /// "de\u{600}.Apk" (a Prepend mark joins the dot in a Character; ".Apk" in another ASCII case) and its .idsig
    /// are an earlier output's files, told by bytes.
    @Test func aFolderOutputWithOddlyNamedAPKsIsReplacedByTheNextRun() throws {
        let german = try SplitSetFixture.makeSplit(in: scratch, packageName: "com.example.set", versionCode: 7, split: "config.de")
        let input = try fixture.pack(.directory, adding: ["de\u{600}.Apk": german])
        let output = scratch.appendingPathComponent("signed-odd-names").path
        for run in 1...2 {
            let result = try sign([input], out: output)
            #expect(result.succeeded, "run \(run): \(result)")
        }
        #expect(FileManager.default.fileExists(atPath: output + "/de\u{600}.Apk.idsig"))
    }

    @Test(arguments: SplitSetFixture.Form.allCases)
    func signKeepsTheFormAndSignsEveryAPKWithOneKey(form: SplitSetFixture.Form) throws {
        let input = try fixture.pack(form)
        let output = scratch.appendingPathComponent(form == .directory ? "signed" : "signed.\(form.rawValue)").path
        let result = try sign([input], out: output)
        #expect(result.succeeded, "\(result)")
        let apks = try SetOracles.apkFiles(of: output, form: form, scratch: scratch)
        #expect(Set(apks.keys) == Set(SplitSetFixture.names(in: form).values))
        // One certificate for all, per apksigner; the same package, versionCode and split names, per aapt.
        let certificates = try Set(apks.values.map(SetOracles.certificateSHA256))
        #expect(certificates.count == 1)
        var splits: [String] = []
        for path in apks.values {
            let badging = try SetOracles.badging(path)
            #expect(badging.contains("name='com.example.set' versionCode='7'"), "\(badging)")
            if let split = badging.range(of: "split='") { splits.append(String(badging[split.upperBound...].prefix { $0 != "'" })) }
            let aligned = try TestSupport.run("zipalign", ["-c", "-p", "4", path])
            #expect(aligned.succeeded, "\(aligned)")
        }
        #expect(splits.sorted() == ["config.arm64_v8a", "config.fr", "config.xhdpi_v4"])
        // The container's other entries are copied byte for byte (toc.pb, info.json and the icon, manifest.json and the OBB).
        for (name, content) in SplitSetFixture.extras(in: form) {
            #expect(try TestSupport.readBytes(unzipped(output, name)) == content, "\(name) changed")
        }
        // And the set verifies as a set.
        let verified = try TestSupport.apkpatch(["verify", output])
        #expect(verified.succeeded, "\(verified)")
    }

    /// `name` extracted from the container `archive` into the scratch directory (binary-safe).
    func unzipped(_ archive: String, _ name: String) throws -> String {
        let folder = scratch.appendingPathComponent("extract-\(UUID().uuidString)")
        _ = try TestSupport.run("unzip", ["-q", archive, name, "-d", folder.path])
        return folder.appendingPathComponent(name).path
    }

    /// SAI's .apks holds the APKs at its top (bundletool's under splits/); a bundletool .apks with another
    /// build beside splits/ (universal.apk) is refused with what to do instead; a universal .apks is a set of
    /// one. (Standalone APKs beside splits/: SetStandaloneTests.)
    @Test func saiAPKsAndBundletoolStandalones() throws {
        let sai = try fixture.pack(.apkm, name: "sai.apks")
        let output = scratch.appendingPathComponent("sai-signed.apks").path
        let result = try sign([sai], out: output)
        #expect(result.succeeded, "\(result)")
        #expect(try Set(SetOracles.apkFiles(of: output, form: .apks, scratch: scratch).keys) == Set(SplitSetFixture.names(in: .apkm).values))
        let beside = try fixture.pack(.apks, adding: ["universal.apk": fixture.monolithicAPK])
        let refused = try sign([beside], out: scratch.appendingPathComponent("beside-out.apks").path)
        #expect(!refused.succeeded && refused.stderr.contains("\"universal.apk\" is neither a split APK") && refused.stderr.contains("extract-apks"), "\(refused)")
        // bundletool --mode=universal: one universal.apk (and toc.pb) is a set of one, kept a .apks.
        let universal = scratch.appendingPathComponent("universal-in").path
        try TestSupport.write(TestSupport.readBytes(fixture.monolithicAPK), to: "universal.apk", in: URL(fileURLWithPath: universal))
        try TestSupport.write(SplitSetFixture.extras(in: .apks)["toc.pb"]!, to: "toc.pb", in: URL(fileURLWithPath: universal))
        let universalAPKs = scratch.appendingPathComponent("universal.apks").path
        #expect(try TestSupport.run("zip", ["-q", "-X", "-0", universalAPKs, "toc.pb", "universal.apk"], currentDirectory: universal).succeeded)
        let universalOut = scratch.appendingPathComponent("universal-signed.apks").path
        let signedUniversal = try sign([universalAPKs], out: universalOut)
        #expect(signedUniversal.succeeded, "\(signedUniversal)")
        #expect(try !SetOracles.certificateSHA256(unzipped(universalOut, "universal.apk")).isEmpty)
        #expect(try TestSupport.readBytes(unzipped(universalOut, "toc.pb")) == SplitSetFixture.extras(in: .apks)["toc.pb"])
    }

    @Test func severalAPKPathsGiveADirectory() throws {
        let paths = ["base.apk", "split_config.fr.apk", "split_config.arm64_v8a.apk"].map { fixture.apks[$0]! }
        let output = scratch.appendingPathComponent("several").path
        let result = try sign(paths, out: output)
        #expect(result.succeeded, "\(result)")
        let names = try FileManager.default.contentsOfDirectory(atPath: output).filter { !$0.hasSuffix(".idsig") }.sorted()
        #expect(names.count == 3 && names.allSatisfy { $0.hasSuffix(".apk") }, "\(names)")
        // Signing again into the same directory replaces the earlier output.
        let again = try sign(paths, out: output)
        #expect(again.succeeded, "\(again)")
    }

    /// A directory output is replaced in one step (renameat2(RENAME_EXCHANGE)): a failed run leaves the previous
    /// output whole, a successful one replaces it, and neither leaves a staging directory behind.
    @Test func directoryOutputIsReplacedWholeOrNotAtAll() throws {
        let input = try fixture.pack(.directory)
        let output = scratch.appendingPathComponent("swapped").path
        #expect(try sign([input], out: output).succeeded)
        func snapshot() throws -> [String: [UInt8]] {
            var files: [String: [UInt8]] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: output) { files[name] = try TestSupport.readBytes(output + "/" + name) }
            return files
        }
        func hidden() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: scratch.path).filter { $0.hasPrefix(".swapped") } }
        let before = try snapshot()
        #expect(before.count == 8, "\(before.keys.sorted())")

        // A set whose ABI split has a corrupt entry: signing it fails after the other APKs were written.
        let split = scratch.appendingPathComponent("corrupt-split.apk").path
        var bytes = try TestSupport.readBytes(fixture.apks["split_config.arm64_v8a.apk"]!)
        let entry = try #require(try APKArchive(path: fixture.apks["split_config.arm64_v8a.apk"]!).zip.entries.max { $0.compressedSize < $1.compressedSize })
        bytes[Int(entry.dataOffset + entry.compressedSize / 2)] ^= 0x55
        try TestSupport.write(bytes, to: "corrupt-split.apk", in: scratch)
        let corrupt = try fixture.pack(.directory, replacing: ["split_config.arm64_v8a.apk": split])
        let failed = try sign([corrupt], out: output)
        #expect(!failed.succeeded && failed.stderr.contains("corrupt"), "\(failed)")
        #expect(try snapshot() == before, "the previous output is untouched")
        #expect(try hidden().isEmpty)

        // A successful run with other APKs replaces it: only the new files, nothing hidden left.
        let paths = ["base.apk", "split_config.fr.apk"].map { fixture.apks[$0]! }
        let replaced = try TestSupport.apkpatch(["sign", "--debug-keystore", keystore, "--v4-signing-enabled", "false", "--out", output] + paths)
        #expect(replaced.succeeded, "\(replaced)")
        let after = try snapshot().keys.sorted()
        #expect(after.count == 2 && after.allSatisfy { $0.hasSuffix(".apk") }, "only the new APKs, no .idsig of the old output: \(after)")
        #expect(try hidden().isEmpty)
    }

    @Test func runPatchesBaseAndSplitsAndUpdatesTheXAPKManifest() throws {
        let input = try fixture.pack(.xapk)
        let patch = scratch.appendingPathComponent("patch")
        try TestSupport.write("hello", to: "assets/new.txt", in: patch)
        try TestSupport.write(FixtureAPK.pseudoRandomBytes(count: 3000, seed: 21), to: "splits/config.arm64_v8a/lib/arm64-v8a/libbar.so", in: patch)
        try TestSupport.write("manifest:\n  versionCode: 8\n  versionName: \"1.1\"\n", to: "apkpatch.yml", in: patch)
        let output = scratch.appendingPathComponent("patched.xapk").path
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore, "--json"])
        #expect(result.succeeded, "\(result)")
        #expect(result.stdout.contains("\"versionCode\" : 8"), "\(result.stdout)")
        let apks = try SetOracles.apkFiles(of: output, form: .xapk, scratch: scratch)
        // Every APK now has versionCode 8 (the splits too: Android installs a set only with one versionCode).
        for path in apks.values { #expect(try SetOracles.badging(path).contains("versionCode='8'")) }
        let abi = try TestSupport.run("unzip", ["-l", apks["config.arm64_v8a.apk"]!])
        #expect(abi.stdout.contains("lib/arm64-v8a/libbar.so") && abi.stdout.contains("lib/arm64-v8a/libfoo.so"), "\(abi.stdout)")
        let base = try TestSupport.run("unzip", ["-p", apks["com.example.set.apk"]!, "assets/new.txt"])
        #expect(base.stdout == "hello")
        #expect(try Set(apks.values.map(SetOracles.certificateSHA256)).count == 1)
        let manifest = try TestSupport.run("unzip", ["-p", output, "manifest.json"])
        let json = try JSONSerialization.jsonObject(with: Data(manifest.stdout.utf8)) as? [String: Any]
        #expect(json?["version_code"] as? String == "8")
        #expect(json?["version_name"] as? String == "1.1")
        #expect(json?["package_name"] as? String == "com.example.set")
        let obb = "Android/obb/com.example.set/main.7.com.example.set.obb"
        #expect(try TestSupport.readBytes(unzipped(output, obb)) == SplitSetFixture.extras(in: .xapk)[obb])
    }

    @Test func patchForAnUnknownSplitIsRefused() throws {
        let input = try fixture.pack(.apks)
        let patch = scratch.appendingPathComponent("patch-unknown")
        try TestSupport.write("x", to: "splits/config.x86/lib/x86/libx.so", in: patch)
        let output = scratch.appendingPathComponent("unknown.apks").path
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--debug-keystore", keystore])
        #expect(!result.succeeded)
        #expect(result.stderr.contains("splits/config.x86/ names no split of the set"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    @Test func verifyListsEachAPKAndRefusesASplitSignedByAnotherKey() throws {
        let signed = scratch.appendingPathComponent("signed-dir").path
        #expect(try sign([try fixture.pack(.directory)], out: signed).succeeded)
        let json = try TestSupport.apkpatch(["verify", "--json", signed])
        #expect(json.succeeded, "\(json)")
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        let apks = object?["apks"] as? [[String: Any]] ?? []
        #expect(apks.compactMap { $0["split"] as? String } == ["base", "config.arm64_v8a", "config.fr", "config.xhdpi_v4"])
        #expect(object?["verified"] as? Bool == true)
        #expect(object?["versionCode"] as? Int == 7)

        // --expect-certificate-sha256 on the set: the certificate apksigner names holds for every APK; another does not.
        let split = (signed as NSString).appendingPathComponent("split_config.fr.apk")
        let debugKey = try SetOracles.certificateSHA256(split)
        let expected = try TestSupport.apkpatch(["verify", "--expect-certificate-sha256", debugKey.uppercased(), signed])
        #expect(expected.succeeded, "\(expected)")
        let stranger = String(repeating: "ab", count: 32)
        let unexpected = try TestSupport.apkpatch(["verify", "--expect-certificate-sha256", stranger, signed])
        #expect(unexpected.status == 1 && unexpected.stderr.contains("split_config.fr.apk is not signed by the expected certificate"), "\(unexpected)")
        func matched(_ arguments: [String]) throws -> (set: Bool?, apks: [String: Bool]) {
            let result = try TestSupport.apkpatch(["verify", "--json"] + arguments + [signed])
            let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            var apks: [String: Bool] = [:]
            for apk in object?["apks"] as? [[String: Any]] ?? [] {
                let report = apk["report"] as? [String: Any]
                let matched = report?["expectedSignerMatched"] as? Bool
                apks[apk["name"] as? String ?? "?"] = matched
                // An APK signed by another certificate does not verify, in its report as in the exit status.
                if matched == false { #expect(report?["verified"] as? Bool == false, "\(apk)") }
            }
            let setMatched = object?["expectedSignerMatched"] as? Bool
            if setMatched == false { #expect(object?["verified"] as? Bool == false && result.status == 1, "\(result)") }
            return (setMatched, apks)
        }
        let good = try matched(["--expect-certificate-sha256", debugKey])
        #expect(good.set == true && good.apks.count == 4 && good.apks.values.allSatisfy { $0 }, "\(good)")
        #expect(try matched(["--expect-certificate-sha256", stranger]).set == false)
        #expect(try matched([]).set == nil)
        // --print-certs-pem on the set: the certificate in PEM as apksigner 35 prints it for an APK of the set.
        let pem = try TestSupport.apkpatch(["verify", "--print-certs-pem", signed])
        let theirPEM = try NewerApksigner.run(["verify", "--print-certs-pem", split])
        let pemBlock = theirPEM.stdout.split(separator: "\n").drop { !$0.hasPrefix("-----BEGIN") }.map { "  \($0)\n" }.joined()
        #expect(pem.succeeded && theirPEM.succeeded && pemBlock.contains("-----END CERTIFICATE-----") && pem.stdout.contains(pemBlock), "\(pem)\n---\n\(theirPEM)")

        // One split re-signed with another key: every APK verifies alone, the set does not.
        let other = scratch.appendingPathComponent("other").path
        let resigned = try TestSupport.apkpatch(["sign", "--debug-keystore", scratch.appendingPathComponent("other.p12").path, "--out", other + ".apk", split])
        #expect(resigned.succeeded, "\(resigned)")
        try FileManager.default.removeItem(atPath: split)
        try FileManager.default.moveItem(atPath: other + ".apk", toPath: split)
        let mixed = try TestSupport.apkpatch(["verify", signed])
        #expect(!mixed.succeeded)
        #expect(mixed.stderr.contains("split_config.fr.apk is signed by certificate SHA-256"), "\(mixed)")
        #expect(mixed.stderr.contains("signatures are inconsistent"), "\(mixed)")
        // The expectation names the APK signed otherwise: the re-signed split (its new certificate per apksigner).
        let bad = try matched(["--expect-certificate-sha256", debugKey])
        #expect(bad.set == false && bad.apks.filter { !$0.value }.map(\.key) == ["split_config.fr.apk"] && bad.apks.count == 4, "\(bad)")
        let otherKey = try SetOracles.certificateSHA256(split)
        #expect(try matched(["--expect-certificate-sha256", otherKey]).apks.filter { $0.value }.map(\.key) == ["split_config.fr.apk"])
    }

    /// Sets Android would refuse: each gets an error naming the APK at fault, and nothing is written.
    @Test func inconsistentSetsAreRefusedWithoutOutput() throws {
        let work = scratch.appendingPathComponent("inconsistent")
        let otherVersion = try SplitSetFixture.makeSplit(in: work, packageName: "com.example.set", versionCode: 9, split: "config.x86")
        let otherPackage = try SplitSetFixture.makeSplit(in: work, packageName: "com.example.other", versionCode: 7, split: "config.x86")
        let orphan = try SplitSetFixture.makeSplit(in: work, packageName: "com.example.set", versionCode: 7, split: "feature.config.xhdpi",
                                                   configForSplit: "feature")
        let cases: [(String, [String: String], String)] = [
            ("two bases", ["second_base.apk": fixture.apks["base.apk"]!], "two base APKs in one set"),
            ("versionCode", ["split_config.x86.apk": otherVersion], "split_config.x86.apk has versionCode 9, but the base"),
            ("package", ["split_config.x86.apk": otherPackage], "split_config.x86.apk belongs to package com.example.other"),
            ("missing feature", ["split_feature.config.xhdpi.apk": orphan], "feature split \"feature\", which is not in the set"),
        ]
        for (label, adding, message) in cases {
            for form in [SplitSetFixture.Form.directory, .apks] {
                var renamed = adding
                if form == .apks { renamed = Dictionary(uniqueKeysWithValues: adding.map { ("splits/" + $0.key, $0.value) }) }
                let input = try fixture.pack(form, adding: renamed)
                let output = scratch.appendingPathComponent("bad-\(UUID().uuidString)" + (form == .apks ? ".apks" : "")).path
                let result = try sign([input], out: output)
                #expect(!result.succeeded, "\(label) in \(form) was accepted")
                #expect(result.stderr.contains(message), "\(label) in \(form): \(result)")
                #expect(!FileManager.default.fileExists(atPath: output), "\(label) in \(form) left an output")
                let verify = try TestSupport.apkpatch(["verify", input])
                #expect(!verify.succeeded && verify.stderr.contains(message), "verify, \(label) in \(form): \(verify)")
            }
        }
        // No temporary files are left beside the outputs either.
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).allSatisfy { !$0.hasPrefix(".bad-") })
    }

    @Test func encryptedAPKMIsRefusedClearly() throws {
        let path = scratch.appendingPathComponent("encrypted.apkm").path
        // APKMirror's encrypted format: a libsodium secret stream header (version byte, algorithm 1 or 2, …).
        try Data([0x01, 0x02] + FixtureAPK.pseudoRandomBytes(count: 4000, seed: 5)).write(to: URL(fileURLWithPath: path))
        let result = try TestSupport.apkpatch(["verify", path])
        #expect(!result.succeeded)
        #expect(result.stderr.contains("is an encrypted .apkm"), "\(result)")
        let signed = try sign([path], out: scratch.appendingPathComponent("enc-out.apkm").path)
        #expect(!signed.succeeded && signed.stderr.contains("is an encrypted .apkm"), "\(signed)")
    }

    @Test func hostileContainerIsRefused() throws {
        var zip = ZipBuilder()
        let base = try TestSupport.readBytes(fixture.apks["base.apk"]!)
        zip.items.append(.init(name: "../evil.apk", data: base, crc: CRC32.checksum(base)))
        let path = scratch.appendingPathComponent("evil.apks").path
        try Data(zip.build()).write(to: URL(fileURLWithPath: path))
        let result = try sign([path], out: scratch.appendingPathComponent("evil-out.apks").path)
        #expect(!result.succeeded)
        #expect(result.stderr.contains("unsafe") && result.stderr.contains("../evil.apk"), "\(result)")
    }

    /// A set is signed as a whole: --no-sign and --keep-stages (about one APK's build) and watch --live are refused with the reason and what to do, and nothing is written.
    @Test func oneAPKOptionsAreRefusedForASet() throws {
        let input = try fixture.pack(.apks)
        let patch = scratch.appendingPathComponent("empty-patch")
        try FileManager.default.createDirectory(at: patch, withIntermediateDirectories: true)
        let output = scratch.appendingPathComponent("refused.apks").path
        for (flags, reason) in [(["--no-sign"], "install only when all are signed with one key"),
                                (["--keep-stages", scratch.appendingPathComponent("stages").path], "writes the stages of one APK")] {
            let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output] + flags)
            #expect(!result.succeeded && result.stderr.contains(reason), "\(result)")
        }
        let live = try TestSupport.apkpatch(["watch", input, "--patch", patch.path, "--out", output, "--live"])
        #expect(!live.succeeded && live.stderr.contains("--live is not supported for a split APK set"), "\(live)")
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    /// v4: a directory output gets each APK's .idsig, as `apkpatch sign` writes one for an APK; apksigner checks
    /// each against its APK. A container has no place for them: asked for explicitly, that is refused.
    @Test func directoryOutputsGetV4SignaturesContainersRefuseThem() throws {
        let input = try fixture.pack(.directory)
        let output = scratch.appendingPathComponent("with-idsig").path
        let result = try sign([input], out: output)
        #expect(result.succeeded, "\(result)")
        let names = try FileManager.default.contentsOfDirectory(atPath: output).sorted()
        #expect(names.filter { $0.hasSuffix(".apk.idsig") }.count == 4, "\(names)")
        for apk in names where apk.hasSuffix(".apk") {
            let path = output + "/" + apk
            let checked = try TestSupport.run("apksigner", ["verify", "-v", "--v4-signature-file", path + ".idsig", path])
            #expect(checked.succeeded && checked.stdout.contains("Verified using v4 scheme (APK Signature Scheme v4): true"), "\(apk): \(checked)")
        }
        // Signing again over it replaces the APKs and their signatures (an earlier output of this command).
        let again = try TestSupport.apkpatch(["sign", "--debug-keystore", keystore, "--v4-signing-enabled", "false", "--out", output, input])
        #expect(again.succeeded, "\(again)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: output).filter { $0.hasSuffix(".idsig") }.isEmpty)

        let container = try fixture.pack(.apks)
        let refusedOutput = scratch.appendingPathComponent("v4.apks").path
        let refused = try TestSupport.apkpatch(["sign", "--debug-keystore", keystore, "--v4-signing-enabled", "true", "--out", refusedOutput, container])
        #expect(!refused.succeeded && refused.stderr.contains("no place for them"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: refusedOutput))
    }
}
