import APKCore
import Foundation
import Testing
import TestSupport

/// Every "To fix:" advice `verify` gives for an install finding, each proven on an APK with that finding: the
/// advised command (with the suite's signing options, as the advice asks) runs on it, and the result verifies
/// without the finding. (verifyAdviceFixes in PackagingRepairTests does the same for a compressed resources.arsc;
/// SetVerifyFixTests for a set.) Part of the serialized PipelineTests suite: its keystore.
extension PipelineTests {
    /// The "To fix:" line of `apkpatch verify apk` without its label, and the whole result.
    func fixAdvice(_ apk: String) throws -> (advice: String?, verify: TestSupport.ProcessResult) {
        let verify = try TestSupport.apkpatch(["verify", apk])
        let line = verify.stderr.split(separator: "\n").first { $0.hasPrefix("To fix: ") }
        return (line.map { String($0.dropFirst("To fix: ".count)) }, verify)
    }

    /// `apkpatch verify apk` passes with no install finding left and no advice.
    func expectNothingToFix(_ apk: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (advice, verify) = try fixAdvice(apk)
        #expect(verify.succeeded && advice == nil && !verify.stderr.contains("INSTALL_") && !verify.stdout.contains("INSTALL_"),
                "\(verify)", sourceLocation: sourceLocation)
    }

    /// `apk` with `entry` taken out and put back at the end by zip, stored (-0) or deflated (-9).
    func rezip(_ apk: String, _ entry: String, stored: Bool) throws {
        let work = dir.appendingPathComponent("rezip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        try #require(try TestSupport.run("unzip", ["-q", "-o", apk, entry, "-d", work.path]).succeeded)
        try #require(try TestSupport.run("zip", ["-q", "-d", apk, entry]).succeeded)
        try #require(try TestSupport.run("zip", ["-q", stored ? "-0" : "-9", apk, entry], currentDirectory: work.path).succeeded)
    }

    /// Signed by Debian's apksigner (31), which keeps the input's alignment, so the finding survives signing.
    func signedByApksigner(_ input: String, as name: String) throws -> String {
        let output = dir.appendingPathComponent(name).path
        let result = try TestSupport.run("apksigner", ["sign", "--ks", keystore, "--ks-pass", "env:KS_PASS", "--out", output, input],
                                         environment: environment)
        try #require(result.succeeded, "\(result)")
        return output
    }

    func offset(of entry: String, in apk: String) throws -> Int64 {
        try #require(try APKArchive(path: apk).entry(named: entry)).dataOffset
    }

    /// The advice for a finding only `run` repairs, run as printed: `apkpatch run APK --out APK-fixed.apk`.
    func expectRunAdviceFixes(_ broken: String, finding: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (advice, verify) = try fixAdvice(broken)
        #expect(verify.stderr.contains(finding) || verify.stdout.contains(finding), "\(verify)", sourceLocation: sourceLocation)
        let fixed = String(broken.dropLast(4)) + "-fixed.apk"
        #expect(advice?.hasPrefix("apkpatch run \(broken) --out \(fixed) ") == true, "\(verify)", sourceLocation: sourceLocation)
        let run = try TestSupport.apkpatch(["run", broken, "--out", fixed] + signing, environment: environment)
        #expect(run.succeeded, "\(run)", sourceLocation: sourceLocation)
        try expectInstallable(fixed, sourceLocation: sourceLocation)
        try expectNothingToFix(fixed, sourceLocation: sourceLocation)
    }

    @Test("verify's advice for a resources.arsc off 4 bytes (targetSdk 30) is run, and run fixes it")
    func adviceForMisalignedResourceTable() throws {
        var fixture = FixtureAPK()
        fixture.targetSdk = 30
        var broken: String?
        for padding in 1...8 where broken == nil {
            fixture.assets["pad.txt"] = Array(String(repeating: "p", count: padding).utf8)
            let input = try fixture.build(in: dir, name: "fix-arsc-src.apk")
            try rezip(input, "resources.arsc", stored: true)
            if try offset(of: "resources.arsc", in: input) % 4 != 0 { broken = try signedByApksigner(input, as: "fix-arsc.apk") }
        }
        let apk = try #require(broken, "an APK with resources.arsc stored off a 4-byte boundary")
        #expect(try offset(of: "resources.arsc", in: apk) % 4 != 0)
        try expectRunAdviceFixes(apk, finding: "INSTALL_RESOURCES_ARSC_NOT_ALIGNED")
        // The advice's outputs are named from the input less its ".apk" found by bytes: a Prepend mark joins the
        // dot in a Character, and "fix-arsc\u{600}.apk" became "fix-arsc\u{600}.apk-fixed.apk".
        let marked = dir.appendingPathComponent("fix-arsc\u{600}.apk").path
        try FileManager.default.copyItem(atPath: apk, toPath: marked)
        let advice = try fixAdvice(marked).advice
        #expect(advice?.utf8.contains("fix-arsc\u{600}-fixed.apk".utf8) == true, "\(advice ?? "no advice")")
    }

    @Test("verify's advice for a compressed or unaligned .so with extractNativeLibs=false is run, and run fixes it", arguments: [false, true])
    func adviceForMappedLibraries(stored: Bool) throws {
        var fixture = FixtureAPK()
        fixture.applicationAttributes = "android:extractNativeLibs=\"false\""
        // Random bytes for the stored one, text that deflates for the compressed one (zip stores what does not shrink).
        fixture.rawFiles["lib/arm64-v8a/libdemo.so"] = stored ? FixtureAPK.pseudoRandomBytes(count: 9000, seed: 5) : Array(repeating: 0x61, count: 20_000)
        var broken: String?
        for padding in 1...8 where broken == nil {
            fixture.assets["pad.txt"] = Array(String(repeating: "p", count: padding).utf8)
            let input = try fixture.build(in: dir, name: "fix-so-src.apk")
            try rezip(input, "lib/arm64-v8a/libdemo.so", stored: stored)
            if try !stored || offset(of: "lib/arm64-v8a/libdemo.so", in: input) % 4096 != 0 {
                broken = try signedByApksigner(input, as: stored ? "fix-so-unaligned.apk" : "fix-so-compressed.apk")
            }
        }
        let apk = try #require(broken)
        try expectRunAdviceFixes(apk, finding: stored ? "INSTALL_NATIVE_LIBRARY_NOT_PAGE_ALIGNED" : "INSTALL_NATIVE_LIBRARY_COMPRESSED")
    }

    /// A stored .so that zipalign -p placed on a 4 KiB page (zero padding, no alignment field): `sign` moves it to
    /// 16 KiB, as the advice says.
    @Test("verify's advice for a stored .so off 16 KiB with no alignment field is sign, and sign fixes it")
    func adviceForLibraryOff16KiB() throws {
        var fixture = FixtureAPK()
        fixture.storedExtensions = ["so"]
        fixture.rawFiles["lib/arm64-v8a/libdemo.so"] = FixtureAPK.pseudoRandomBytes(count: 9000, seed: 6)
        var broken: String?
        for padding in 1...8 where broken == nil {
            fixture.assets["pad.txt"] = Array(String(repeating: "p", count: padding * 700).utf8)
            let input = try fixture.build(in: dir, name: "fix-16k-src.apk")
            let aligned = dir.appendingPathComponent("fix-16k-zipaligned.apk").path
            try #require(try TestSupport.run("zipalign", ["-f", "-p", "4", input, aligned]).succeeded)
            let signed = try signedByApksigner(aligned, as: "fix-16k.apk")
            if try offset(of: "lib/arm64-v8a/libdemo.so", in: signed) % 16384 != 0 { broken = signed }
        }
        let apk = try #require(broken, "an APK with its .so on a 4 KiB page that is not a 16 KiB one")
        let (advice, verify) = try fixAdvice(apk)
        #expect(verify.succeeded && verify.stderr.contains("INSTALL_NATIVE_LIBRARY_NOT_16K_ALIGNED"), "\(verify)")
        let fixed = String(apk.dropLast(4)) + "-fixed.apk"
        #expect(advice?.hasPrefix("apkpatch sign --out \(fixed) \(apk) ") == true, "\(verify)")
        let sign = try TestSupport.apkpatch(["sign", "--out", fixed, apk] + signing, environment: environment)
        #expect(sign.succeeded, "\(sign)")
        try expectInstallable(fixed)
        try expectNothingToFix(fixed)
    }

    /// An earlier `sign --lib-page-alignment 4096` wrote 4096 into the library's alignment field; `sign` (and
    /// apksigner) keep that multiple when they sign again, and so does `run` with no patch: advising either alone
    /// would change nothing. The advice is `align -P 16` (which pads as zipalign does, dropping the field), then `sign`.
    @Test("verify's advice for a .so an earlier --lib-page-alignment 4096 placed is align -P 16, then sign, and it fixes it")
    func adviceForLibraryPinnedTo4KiB() throws {
        var fixture = FixtureAPK()
        fixture.storedExtensions = ["so"]
        fixture.rawFiles["lib/arm64-v8a/libdemo.so"] = FixtureAPK.pseudoRandomBytes(count: 9000, seed: 7)
        var broken: String?
        for padding in 1...8 where broken == nil {
            fixture.assets["pad.txt"] = Array(String(repeating: "p", count: padding * 700).utf8)
            let input = try fixture.build(in: dir, name: "fix-pinned-src.apk")
            let signed = dir.appendingPathComponent("fix-pinned.apk").path
            let sign = try TestSupport.apkpatch(["sign", "--lib-page-alignment", "4096", "--out", signed, input] + signing, environment: environment)
            try #require(sign.succeeded, "\(sign)")
            if try offset(of: "lib/arm64-v8a/libdemo.so", in: signed) % 16384 != 0 { broken = signed }
        }
        let apk = try #require(broken, "an APK with its .so on a 4 KiB page that is not a 16 KiB one")
        let (advice, verify) = try fixAdvice(apk)
        #expect(verify.succeeded && verify.stderr.contains("INSTALL_NATIVE_LIBRARY_NOT_16K_ALIGNED"), "\(verify)")
        #expect(advice?.contains("lib/arm64-v8a/libdemo.so on 4096 bytes") == true, "\(verify)")

        // What the advice was before, sign again, and run with no patch: both keep the 4 KiB page.
        let resigned = dir.appendingPathComponent("fix-pinned-sign.apk").path, rerun = dir.appendingPathComponent("fix-pinned-run.apk").path
        for (again, arguments) in [(resigned, ["sign", "--out", resigned, apk]), (rerun, ["run", apk, "--out", rerun])] {
            let result = try TestSupport.apkpatch(arguments + signing, environment: environment)
            #expect(result.succeeded, "\(result)")
            #expect(try offset(of: "lib/arm64-v8a/libdemo.so", in: again) % 16384 != 0, "\(arguments[0]) moved a library its alignment field pins")
        }

        // The advice as printed: align, then sign.
        let base = String(apk.dropLast(4)), aligned = base + "-aligned.apk", fixed = base + "-fixed.apk"
        #expect(advice?.hasPrefix("apkpatch align -P 16 4 \(apk) \(aligned) && apkpatch sign --out \(fixed) \(aligned) ") == true, "\(verify)")
        let align = try TestSupport.apkpatch(["align", "-P", "16", "4", apk, aligned])
        #expect(align.succeeded, "\(align)")
        let sign = try TestSupport.apkpatch(["sign", "--out", fixed, aligned] + signing, environment: environment)
        #expect(sign.succeeded, "\(sign)")
        #expect(try offset(of: "lib/arm64-v8a/libdemo.so", in: fixed) % 16384 == 0)
        try expectInstallable(fixed)
        try expectNothingToFix(fixed)
    }

    /// A 64-bit library linked for 4 KiB pages: no packaging changes its LOAD segments' p_align (run leaves the
    /// warning), so the advice is to link it again with the flag it names; done with g++ here, the rebuilt APK
    /// verifies clean.
    @Test("verify's advice for a .so whose ELF LOAD segments are aligned to 4 KiB is to relink it, and relinking fixes it")
    func adviceForLibraryLinkedFor4KiBPages() throws {
        let source = dir.appendingPathComponent("demo.cpp")
        try TestSupport.write("extern \"C\" int apkpatch_demo(int x) { return x * 7 + 1; }\n", to: "demo.cpp", in: dir)
        func link(_ flags: [String]) throws -> [UInt8] {
            let output = dir.appendingPathComponent("libdemo-\(UUID().uuidString).so").path
            let gxx = try TestSupport.run("g++", ["-shared", "-fPIC", "-O2", "-o", output, source.path] + flags)
            try #require(gxx.succeeded, "\(gxx)")
            return try TestSupport.readBytes(output)
        }
        var fixture = FixtureAPK()
        fixture.rawFiles["lib/x86_64/libdemo.so"] = try link(["-Wl,-z,max-page-size=4096"])
        let input = try fixture.build(in: dir, name: "fix-elf-src.apk")
        try rezip(input, "lib/x86_64/libdemo.so", stored: false)
        let broken = try signedByApksigner(input, as: "fix-elf.apk")
        let (advice, verify) = try fixAdvice(broken)
        #expect(verify.succeeded && verify.stderr.contains("INSTALL_NATIVE_LIBRARY_ELF_NOT_16K_ALIGNED"), "\(verify)")
        let text = try #require(advice, "\(verify)")
        #expect(text.hasPrefix("link lib/x86_64/libdemo.so again with -Wl,-z,max-page-size=16384 "), "\(text)")
        #expect(!text.contains("apkpatch"), "no apkpatch command changes an ELF's p_align: \(text)")

        // Repackaging does not help, as the advice says.
        let repacked = dir.appendingPathComponent("fix-elf-repacked.apk").path
        #expect(try TestSupport.apkpatch(["run", broken, "--out", repacked] + signing, environment: environment).succeeded)
        #expect(try fixAdvice(repacked).verify.stderr.contains("INSTALL_NATIVE_LIBRARY_ELF_NOT_16K_ALIGNED"))

        // The advice followed: linked again with the flag it names, the APK built and signed again.
        let flag = try #require(text.split(separator: " ").first { $0.hasPrefix("-Wl,") }.map(String.init))
        fixture.rawFiles["lib/x86_64/libdemo.so"] = try link([flag])
        let rebuilt = try fixture.build(in: dir, name: "fix-elf-rebuilt-src.apk")
        let fixed = dir.appendingPathComponent("fix-elf-rebuilt.apk").path
        #expect(try TestSupport.apkpatch(["sign", "--out", fixed, rebuilt] + signing, environment: environment).succeeded)
        try expectInstallable(fixed)
        try expectNothingToFix(fixed)
    }
}
