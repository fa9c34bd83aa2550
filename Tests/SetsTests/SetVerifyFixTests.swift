import Foundation
import Testing
import TestSupport

/// `verify SET` ends with a "To fix:" line, as `verify APK` does, when an APK of the set fails an install check, and
/// the command it names really fixes the set.
@Suite(.removesTemporaryDirectories) struct SetVerifyFixTests {
    @Test func verifyOfASetNamesTheSignThatAlignsItsLibraries() throws {
        let scratch = try TestSupport.makeTemporaryDirectory("apkpatch-set-fix")
        let fixture = try SplitSetFixture(in: scratch)
        let keystore = scratch.appendingPathComponent("debug.p12").path
        // Signed with the entries where aapt put them: the ABI split's .so is not on a 16 KiB page (resources.arsc not on 4 bytes).
        let signed = scratch.appendingPathComponent("signed").path
        let sign = try TestSupport.apkpatch(["sign", "--debug-keystore", keystore, "--alignment-preserved", "true", "--misaligned-apk-permitted", "true", "--out", signed,
                                             try fixture.pack(.directory)])
        try #require(sign.succeeded, "\(sign)")
        let verify = try TestSupport.apkpatch(["verify", signed])
        #expect(verify.succeeded && verify.stderr.contains("INSTALL_NATIVE_LIBRARY_NOT_16K_ALIGNED"), "\(verify)")
        let fixLine = verify.stderr.split(separator: "\n").first { $0.hasPrefix("To fix: ") }
        let fixed = signed + "-fixed/"
        #expect(fixLine?.hasPrefix("To fix: apkpatch sign --out \(fixed) \(signed) ") == true, "\(verify)")

        // The command as printed, with the signing options it asks for; apksigner judges the signatures.
        let fix = try TestSupport.apkpatch(["sign", "--debug-keystore", keystore, "--out", fixed, signed])
        try #require(fix.succeeded, "\(fix)")
        let again = try TestSupport.apkpatch(["verify", fixed])
        #expect(again.succeeded && !again.stderr.contains("NOT_16K") && !again.stderr.contains("To fix"), "\(again)")
        for name in try FileManager.default.contentsOfDirectory(atPath: fixed) where name.hasSuffix(".apk") {
            let apksigner = try TestSupport.run("apksigner", ["verify", (fixed as NSString).appendingPathComponent(name)])
            #expect(apksigner.succeeded, "\(name): \(apksigner)")
        }
    }
}
