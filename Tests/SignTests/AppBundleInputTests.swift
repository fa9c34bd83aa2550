import Foundation
import Testing
import TestSupport

/// An Android App Bundle given to `sign` or `run` is named as one, with what to do with it (jarsigner for Play,
/// bundletool for APKs). The signer's own error, "no AndroidManifest.xml … give it with --min-sdk-version", led to
/// a bundle "signed" as an APK, signing block and .idsig included.
@Suite(.removesTemporaryDirectories) struct AppBundleInputTests {
    @Test func aBundleIsNamedAsOneNotGivenAMinSdkVersion() throws {
        let dir = try TestSupport.makeTemporaryDirectory("app-bundle")
        defer { try? FileManager.default.removeItem(at: dir) }
        // bundletool's layout: BundleConfig.pb and base/ (manifest/, dex/, ...) at the top.
        let files = dir.appendingPathComponent("bundle")
        try TestSupport.write(FixtureAPK.pseudoRandomBytes(count: 40, seed: 3), to: "BundleConfig.pb", in: files)
        try TestSupport.write(FixtureAPK.pseudoRandomBytes(count: 300, seed: 4), to: "base/manifest/AndroidManifest.xml", in: files)
        try TestSupport.write(FixtureAPK.pseudoRandomBytes(count: 500, seed: 5), to: "base/dex/classes.dex", in: files)
        let bundle = dir.appendingPathComponent("app.aab").path
        let zipped = try TestSupport.run("zip", ["-q", "-X", "-r", bundle, "BundleConfig.pb", "base"], currentDirectory: files.path)
        #expect(zipped.succeeded, "\(zipped)")
        let keystore = dir.appendingPathComponent("debug.p12").path

        let signedPath = dir.appendingPathComponent("signed.aab").path
        let signed = try TestSupport.apkpatch(["sign", "--debug-keystore", keystore, "--out", signedPath, bundle])
        #expect(signed.status == 1 && signed.stderr.contains("app.aab is an Android App Bundle (.aab), not an APK")
                && signed.stderr.contains("jarsigner") && signed.stderr.contains("bundletool build-apks")
                && !signed.stderr.contains("--min-sdk-version"), "\(signed)")
        #expect(!FileManager.default.fileExists(atPath: signedPath) && !FileManager.default.fileExists(atPath: signedPath + ".idsig"))
        let run = try TestSupport.apkpatch(["run", bundle, "--debug-keystore", keystore, "--out", dir.appendingPathComponent("run.apk").path])
        #expect(run.status == 1 && run.stderr.contains("is an Android App Bundle (.aab), not an APK"), "\(run)")
        // In a batch, the bundle's item says the same (the other APKs are signed).
        let batch = try TestSupport.apkpatch(["sign", "--debug-keystore", keystore, "--out-dir", dir.appendingPathComponent("batch").path, bundle])
        #expect(batch.status == 1 && batch.stderr.contains("FAILED \(bundle): \(bundle) is an Android App Bundle (.aab), not an APK"), "\(batch)")

        // A ZIP without a manifest that is no bundle keeps the signer's advice.
        let plain = dir.appendingPathComponent("plain.zip").path
        #expect(try TestSupport.run("zip", ["-q", "-X", "-r", plain, "base"], currentDirectory: files.path).succeeded)
        let other = try TestSupport.apkpatch(["sign", "--debug-keystore", keystore, "--out", dir.appendingPathComponent("p.apk").path, plain])
        #expect(other.status == 1 && other.stderr.contains("--min-sdk-version") && !other.stderr.contains("App Bundle"), "\(other)")
    }
}
