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
        // Aligned by zipalign (4 bytes, no pages) and signed by apksigner, as a vendor's set may come: the ABI split's
        // .so is not on a 16 KiB page.
        let vendorKeys = scratch.appendingPathComponent("vendor.p12").path
        let keytool = try TestSupport.run("keytool", ["-genkeypair", "-keystore", vendorKeys, "-storetype", "PKCS12", "-alias", "vendor",
                                                      "-keyalg", "RSA", "-keysize", "2048", "-validity", "3650", "-dname", "CN=Vendor",
                                                      "-storepass", "vendor-pass", "-keypass", "vendor-pass"])
        try #require(keytool.succeeded, "\(keytool)")
        let packed = try fixture.pack(.directory)
        let signed = scratch.appendingPathComponent("signed").path
        try FileManager.default.createDirectory(atPath: signed, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: packed) where name.hasSuffix(".apk") {
            let target = (signed as NSString).appendingPathComponent(name)
            let aligned = try TestSupport.run("zipalign", ["-f", "4", (packed as NSString).appendingPathComponent(name), target])
            try #require(aligned.succeeded, "\(aligned)")
            let apksigner = try TestSupport.run("apksigner", ["sign", "--ks", vendorKeys, "--ks-pass", "pass:vendor-pass", target])
            try #require(apksigner.succeeded, "\(apksigner)")
        }
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
