import APKCore
import Foundation
import Testing
import TestSupport

/// Outputs that install: `run` stores and aligns what Android requires (resources.arsc for targetSdk 30+,
/// native libraries with extractNativeLibs="false"), verify's advice names a command that fixes it, and `sign`
/// refuses before writing what it cannot fix. Each output is checked with apksigner, `apkpatch verify` (with
/// its install checks) and `zipalign -c -p 4`. (Part of the serialized PipelineTests suite: its keystore.)
extension PipelineTests {
    /// An aapt-built APK whose `entries` were put back compressed with `zip -9` (aapt stores resources.arsc).
    func build(_ name: String, compressing entries: [String] = ["resources.arsc"], configure: (inout FixtureAPK) -> Void) throws -> String {
        var fixture = FixtureAPK()
        fixture.assets["www/index.html"] = Array("<p>hello</p>\n".utf8)
        configure(&fixture)
        let apk = try fixture.build(in: dir, name: name)
        let work = dir.appendingPathComponent("unzip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        for entry in entries {
            try #require(try TestSupport.run("unzip", ["-q", "-o", apk, entry, "-d", work.path]).succeeded)
            try #require(try TestSupport.run("zip", ["-q", "-d", apk, entry]).succeeded)
            try #require(try TestSupport.run("zip", ["-q", "-9", apk, entry], currentDirectory: work.path).succeeded)
        }
        return apk
    }

    func method(of entry: String, in apk: String) throws -> CompressionMethod? {
        try APKArchive(path: apk).entry(named: entry)?.method
    }

    /// apksigner, our verify with install checks, and zipalign -c -p 4 all accept `apk`.
    func expectInstallable(_ apk: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let apksigner = try TestSupport.run("apksigner", ["verify", apk])
        #expect(apksigner.succeeded, "\(apksigner)", sourceLocation: sourceLocation)
        let ours = try TestSupport.apkpatch(["verify", apk])
        #expect(ours.succeeded && !ours.stderr.contains("DOES NOT INSTALL"), "\(ours)", sourceLocation: sourceLocation)
        let zipalign = try TestSupport.run("zipalign", ["-c", "-p", "4", apk])
        #expect(zipalign.succeeded, "\(zipalign)", sourceLocation: sourceLocation)
        let android = try TestSupport.libziparchiveCheck(apk)
        #expect(android.succeeded, "\(android)", sourceLocation: sourceLocation)
    }

    /// `run input --patch P --out dir/outputName` with the suite's key, P holding `content` at `path`.
    func runPatched(_ input: String, _ path: String, _ content: String, to outputName: String) throws -> (patch: URL, output: String, result: TestSupport.ProcessResult) {
        let patch = dir.appendingPathComponent("patch-\(UUID().uuidString)")
        try TestSupport.write(content, to: path, in: patch)
        let output = dir.appendingPathComponent(outputName).path
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output] + signing, environment: environment)
        #expect(result.succeeded, "\(result)")
        return (patch, output, result)
    }

    @Test("run stores and aligns a compressed resources.arsc for targetSdk 30, says so, and the output installs")
    func runStoresResourceTable() throws {
        let input = try build("arsc.apk") { $0.targetSdk = 30 }
        #expect(try method(of: "resources.arsc", in: input) == .deflated)
        let (patch, output, run) = try runPatched(input, "assets/www/index.html", "<p>patched</p>\n", to: "arsc-out.apk")
        #expect(run.stdout.contains("stored resources.arsc: Android 11+ requires it for targetSdk 30+"), "\(run)")
        #expect(try method(of: "resources.arsc", in: output) == .stored)
        #expect(try TestSupport.run("unzip", ["-p", output, "resources.arsc"]).stdout == (try TestSupport.run("unzip", ["-p", input, "resources.arsc"])).stdout)
        try expectInstallable(output)

        let json = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", output, "--json"] + signing, environment: environment)
        #expect(json.succeeded, "\(json)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let stored = try #require(object["storedForAndroid"] as? [[String: Any]])
        #expect(stored.map { $0["entry"] as? String } == ["resources.arsc"])
        #expect((stored.first?["reason"] as? String)?.contains("targetSdk 30+") == true)
        #expect(object["verified"] as? Bool == true)
    }

    @Test("run aligns a stored resources.arsc that is off 4 bytes for targetSdk 30, and says so (text and --json)")
    func runAlignsStoredResourceTable() throws {
        var fixture = FixtureAPK()
        fixture.targetSdk = 30
        let input = try fixture.build(in: dir, name: "arsc-misaligned.apk")
        // Put resources.arsc back stored at the end, behind a small stored file whose size moves it off 4 bytes.
        let work = dir.appendingPathComponent("unzip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        try #require(try TestSupport.run("unzip", ["-q", "-o", input, "resources.arsc", "-d", work.path]).succeeded)
        try #require(try TestSupport.run("zip", ["-q", "-d", input, "resources.arsc"]).succeeded)
        var padding = 1
        while true {
            try TestSupport.write(String(repeating: "p", count: padding), to: "assets/pad\(padding).txt", in: work)
            try #require(try TestSupport.run("zip", ["-q", "-0", input, "assets/pad\(padding).txt", "resources.arsc"], currentDirectory: work.path).succeeded)
            let arsc = try #require(try APKArchive(path: input).entry(named: "resources.arsc"))
            if arsc.method == .stored && arsc.dataOffset % 4 != 0 { break }
            try #require(padding < 4 && (try TestSupport.run("zip", ["-q", "-d", input, "resources.arsc"]).succeeded))
            padding += 1
        }
        let before = try TestSupport.apkpatch(["verify", "--json", input])
        #expect(before.stdout.contains("INSTALL_RESOURCES_ARSC_NOT_ALIGNED"), "Android would refuse the input: \(before)")

        let output = dir.appendingPathComponent("arsc-aligned.apk").path
        let run = try TestSupport.apkpatch(["run", input, "--out", output] + signing, environment: environment)
        #expect(run.succeeded, "\(run)")
        #expect(run.stdout.contains("aligned resources.arsc: Android 11+ requires it for targetSdk 30+"), "\(run)")
        #expect(!run.stdout.contains("stored resources.arsc"), "\(run)")
        try expectInstallable(output)

        let json = try TestSupport.apkpatch(["run", input, "--out", output, "--json"] + signing, environment: environment)
        #expect(json.succeeded, "\(json)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let aligned = try #require(object["alignedForAndroid"] as? [[String: Any]], "\(json.stdout)")
        #expect(aligned.map { $0["entry"] as? String } == ["resources.arsc"])
        #expect((aligned.first?["reason"] as? String)?.contains("targetSdk 30+") == true)
        #expect((object["storedForAndroid"] as? [Any])?.isEmpty == true)

        // An aligned input has nothing to say.
        let again = try TestSupport.apkpatch(["run", output, "--out", dir.appendingPathComponent("arsc-again.apk").path, "--json"] + signing, environment: environment)
        let againObject = try #require(try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any], "\(again)")
        #expect((againObject["alignedForAndroid"] as? [Any])?.isEmpty == true)
    }

    @Test("the targetSdkVersion and extractNativeLibs that count are the patched manifest's")
    func patchedManifestDecides() throws {
        let input = try build("low.apk", compressing: ["resources.arsc", "lib/arm64-v8a/libdemo.so"]) { fixture in
            fixture.targetSdk = 29
            fixture.rawFiles["lib/arm64-v8a/libdemo.so"] = Array(repeating: 0x61, count: 20_000)
        }
        #expect(try method(of: "lib/arm64-v8a/libdemo.so", in: input) == .deflated)
        // Unpatched, targetSdk 29 and extracted libraries: nothing to store; the output installs as it is.
        let plain = dir.appendingPathComponent("low-plain.apk").path
        let first = try TestSupport.apkpatch(["run", input, "--out", plain, "--json"] + signing, environment: environment)
        #expect(first.succeeded, "\(first)")
        #expect(try method(of: "resources.arsc", in: plain) == .deflated)
        let firstObject = try #require(try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any])
        #expect((firstObject["storedForAndroid"] as? [Any])?.isEmpty == true)
        try expectInstallable(plain)

        // Patched to targetSdk 30 and extractNativeLibs="false": both stored, the library on a 16 KiB page.
        let (_, output, run) = try runPatched(input, "apkpatch.yml", "manifest:\n  targetSdkVersion: 30\n  extractNativeLibs: false\n", to: "low-out.apk")
        #expect(run.stdout.contains("stored resources.arsc: Android 11+"), "\(run)")
        #expect(run.stdout.contains("stored lib/arm64-v8a/libdemo.so: android:extractNativeLibs=\"false\""), "\(run)")
        let archive = try APKArchive(path: output)
        let library = try #require(archive.entry(named: "lib/arm64-v8a/libdemo.so"))
        #expect(library.method == .stored && library.dataOffset % 16384 == 0)
        try expectInstallable(output)
    }

    @Test("verify's advice names a command that fixes the APK, and it does")
    func verifyAdviceFixes() throws {
        let input = try build("broken-src.apk") { $0.targetSdk = 31 }
        // A signed APK with a compressed resources.arsc: apksigner accepts it, Android would not install it.
        let broken = dir.appendingPathComponent("broken.apk").path
        #expect(try TestSupport.run("apksigner", ["sign", "--ks", keystore, "--ks-pass", "pass:\(Self.password)", "--out", broken, input]).succeeded)
        let verify = try TestSupport.apkpatch(["verify", broken])
        #expect(!verify.succeeded && verify.stderr.contains("INSTALL_RESOURCES_ARSC_COMPRESSED"), "\(verify)")
        #expect(!verify.stderr.contains("apkpatch align"), "align leaves compressed entries compressed: \(verify)")
        let line = try #require(verify.stderr.split(separator: "\n").first { $0.hasPrefix("To fix: ") }, "\(verify)")
        let command = line.dropFirst("To fix: ".count).split(separator: " ").prefix { $0 != "stores" }.map(String.init)
        let fixed = dir.appendingPathComponent("broken-fixed.apk").path
        #expect(command == ["apkpatch", "run", broken, "--out", fixed], "\(line)")
        // The advised command, with signing options as the advice says.
        let run = try TestSupport.apkpatch(Array(command.dropFirst()) + signing, environment: environment)
        #expect(run.succeeded, "\(run)")
        try expectInstallable(fixed)
        let json = try TestSupport.apkpatch(["verify", "--json", broken])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect((object["installFix"] as? String)?.hasPrefix("apkpatch run ") == true)
    }

    @Test("verify's advice for bytes before the first entry (Janus) strips them, and the command it names makes an APK that installs")
    func verifyAdviceStripsPrefix() throws {
        let input = try build("janus-src.apk", compressing: []) { $0.targetSdk = 30 }
        // A v1-only signature, which does not cover a prefix (CVE-2017-13156), and a DEX header before the first
        // entry; `zip -A` moves the offsets as a crafted APK has them.
        let signed = dir.appendingPathComponent("janus-v1.apk").path
        #expect(try TestSupport.run("apksigner", ["sign", "--ks", keystore, "--ks-pass", "pass:\(Self.password)", "--v2-signing-enabled", "false",
                                                  "--v3-signing-enabled", "false", "--v4-signing-enabled", "false", "--min-sdk-version", "21",
                                                  "--out", signed, input]).succeeded)
        let janus = dir.appendingPathComponent("janus.apk").path
        try Data(Array("dex\n035\0".utf8) + [UInt8](repeating: 0x41, count: 120) + [UInt8](try Data(contentsOf: URL(fileURLWithPath: signed))))
            .write(to: URL(fileURLWithPath: janus))
        #expect(try TestSupport.run("zip", ["-q", "-A", janus]).succeeded)
        let verify = try TestSupport.apkpatch(["verify", janus])
        #expect(verify.status == 1 && verify.stderr.contains("INSTALL_BYTES_BEFORE_FIRST_ENTRY"), "\(verify)")
        // What the advice names first, run as a shell would, with signing options as it says.
        let line = try #require(verify.stderr.split(separator: "\n").first { $0.hasPrefix("To fix: ") }, "\(verify)")
        let command = try #require(line.dropFirst("To fix: ".count).components(separatedBy: " strips the bytes").first)
        let fixed = dir.appendingPathComponent("janus-fixed.apk").path
        #expect(command.hasPrefix("cp ") && command.hasSuffix("--out \(fixed)"), "\(line)")
        let runnable = command.replacingOccurrences(of: "&& apkpatch run ", with: "&& \(TestSupport.apkpatchBinary) run ")
            + " " + signing.joined(separator: " ")
        let repair = try TestSupport.run("sh", ["-c", runnable], environment: environment)
        #expect(repair.succeeded, "\(runnable): \(repair)")
        try expectInstallable(fixed)
        #expect(try Data(contentsOf: URL(fileURLWithPath: janus)).prefix(4) == Data("dex\n".utf8), "the input is never modified")
    }

    @Test("sign's refusal gives each compressed entry the rule it breaks: the table its targetSdk, a library extractNativeLibs")
    func signRefusalNamesEachRule() throws {
        let library = "lib/arm64-v8a/libdemo.so"
        let input = try build("two-rules-src.apk", compressing: ["resources.arsc", library]) { fixture in
            fixture.targetSdk = 30
            fixture.applicationAttributes = "android:extractNativeLibs=\"false\""
            fixture.rawFiles[library] = Array(repeating: 0x61, count: 20_000)
        }
        let output = dir.appendingPathComponent("two-rules.apk").path
        let sign = try TestSupport.apkpatch(["sign"] + signing + ["--out", output, input], environment: environment)
        #expect(sign.status == 1, "\(sign)")
        #expect(sign.stderr.contains("resources.arsc is compressed, but Android 11+ requires it for targetSdk 30+"), "\(sign)")
        #expect(sign.stderr.contains("\(library) is compressed, but android:extractNativeLibs=\"false\" makes Android map native libraries"), "\(sign)")
        #expect(sign.stderr.contains("would not install, so nothing was written. Store them uncompressed"), "\(sign)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("two-rules.apk") || $0.hasPrefix(".two-rules") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test("sign refuses, before writing, an APK whose resources.arsc Android requires stored; re-aligns it by default; refuses to preserve its misalignment unless asked to")
    func signRefusesOrAligns() throws {
        let input = try build("sign-src.apk") { $0.targetSdk = 30 }
        let output = dir.appendingPathComponent("sign-refused.apk").path
        let sign = try TestSupport.apkpatch(["sign"] + signing + ["--out", output, input], environment: environment)
        #expect(sign.status != 0)
        #expect(sign.stderr.contains("resources.arsc is compressed") && sign.stderr.contains("apkpatch run"), "\(sign)")
        #expect(!FileManager.default.fileExists(atPath: output), "nothing written")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains("sign-refused") }
        #expect(leftovers.isEmpty, "\(leftovers)")

        // aapt stores resources.arsc wherever it lands: 4-byte alignment is luck. sign re-aligns it by default;
        // with --alignment-preserved true it would stay where it was (apksigner writes that): refused, nothing
        // written, the advice names the command that fixes it; --misaligned-apk-permitted true writes it anyway
        // and says the APK will not install.
        var fixture = FixtureAPK()
        fixture.targetSdk = 30
        var unaligned: String?
        for length in 1...8 {
            fixture.versionName = "1." + String(repeating: "7", count: length)  // moves resources.arsc, which follows the manifest
            let candidate = try fixture.build(in: dir, name: "preserved-src.apk")
            if let arsc = try APKArchive(path: candidate).entry(named: "resources.arsc"), arsc.dataOffset % 4 != 0 { unaligned = candidate; break }
        }
        let source = try #require(unaligned, "an aapt build with resources.arsc off a 4-byte boundary")
        let realigned = dir.appendingPathComponent("realigned.apk").path
        let signed = try TestSupport.apkpatch(["sign"] + signing + ["--out", realigned, source], environment: environment)
        #expect(signed.succeeded && !signed.stderr.contains("resources.arsc"), "\(signed)")
        try expectInstallable(realigned)
        let preserved = dir.appendingPathComponent("preserved.apk").path
        let refused = try TestSupport.apkpatch(["sign"] + signing + ["--alignment-preserved", "true", "--out", preserved, source], environment: environment)
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.stderr.contains("resources.arsc (data at offset") && refused.stderr.contains("would not install, so nothing was written")
                && refused.stderr.contains("sign without --alignment-preserved true") && refused.stderr.contains("--misaligned-apk-permitted true"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: preserved) && !FileManager.default.fileExists(atPath: preserved + ".idsig"), "nothing written")
        let stray = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains("preserved.apk") }
        #expect(stray.isEmpty, "\(stray)")
        // The advised fix is the default signing (`realigned` above): installable.
        #expect(try TestSupport.apkpatch(["verify", realigned]).succeeded)
        let kept = try TestSupport.apkpatch(["sign"] + signing + ["--alignment-preserved", "true", "--misaligned-apk-permitted", "true",
                                                                  "--out", preserved, source], environment: environment)
        #expect(kept.succeeded, "\(kept)")
        #expect(kept.stderr.contains("WARNING: resources.arsc starts at offset") && kept.stderr.contains("will not install"), "\(kept)")
        // A batch warns of each such APK, naming it.
        let batch = try TestSupport.apkpatch(["sign"] + signing + ["--alignment-preserved", "true", "--misaligned-apk-permitted", "true",
                                                                   "--out-dir", dir.appendingPathComponent("batch").path, source], environment: environment)
        #expect(batch.succeeded && batch.stderr.contains("WARNING: \(source): resources.arsc starts at offset") && batch.stderr.contains("will not install"),
                "\(batch)")
        #expect(try TestSupport.apkpatch(["verify", preserved]).stderr.contains("INSTALL_RESOURCES_ARSC_NOT_ALIGNED"))
        // The same preserved layout with the arsc on its boundary by luck signs without a word.
        var alignedByLuck: String?
        for length in 1...8 {
            fixture.versionName = "2." + String(repeating: "7", count: length)
            let candidate = try fixture.build(in: dir, name: "lucky-src.apk")
            if let arsc = try APKArchive(path: candidate).entry(named: "resources.arsc"), arsc.dataOffset % 4 == 0 { alignedByLuck = candidate; break }
        }
        let lucky = try #require(alignedByLuck)
        let luckySigned = dir.appendingPathComponent("lucky.apk").path
        let preservedLucky = try TestSupport.apkpatch(["sign"] + signing + ["--alignment-preserved", "true", "--out", luckySigned, lucky], environment: environment)
        #expect(preservedLucky.succeeded && !preservedLucky.stderr.contains("resources.arsc"), "\(preservedLucky)")
        try expectInstallable(luckySigned)
    }
}
