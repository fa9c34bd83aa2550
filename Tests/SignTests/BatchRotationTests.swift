import Foundation
import Testing
import TestSupport

/// `apkpatch sign --out-dir` with every signer option the one-APK `sign` takes: a release's APKs signed with a
/// rotated key in one step, as a CI job does (keystores made by keytool, the lineage by `apksigner rotate`). Each
/// output and its `.idsig` must be the bytes `sign --out` writes for that APK alone with the same options (which
/// other suites compare with apksigner's byte for byte), signed by the keys apksigner reads: Debian's 31 the v1,
/// v2 and v3.0 signers, apksigner 35 the v3.1 one and the v4.1 signature. A failure is the one-APK path's error:
/// up front when the options cannot be signed, else in the summary item of the APK it depends on.
@Suite(.serialized, .removesTemporaryDirectories) struct BatchRotationTests {
    /// The keys, and the inputs: two APKs with minSdkVersion 21 (v3.0 and v3.1 blocks at the default rotation)
    /// and one with 33 (for a signer that covers only API 33 and later).
    static let shared: (keys: RotatedKeys, apks: [String], level33: String) = TestSupport.sharedByTests {
        let directory = try! TestSupport.makeTemporaryDirectory("batch-rotation")
        var one = FixtureAPK(), two = FixtureAPK.cordovaLike(), level33 = FixtureAPK()
        one.packageName = "com.example.one"
        two.packageName = "com.example.two"
        level33.packageName = "com.example.level33"
        level33.minSdk = 33
        return (try! RotatedKeys(in: directory),
                [try! one.build(in: directory, name: "one.apk"), try! two.build(in: directory, name: "two.apk")],
                try! level33.build(in: directory, name: "level33.apk"))
    }

    var keys: RotatedKeys { Self.shared.keys }
    var old: [String] { ["--ks", keys.oldKeystore.path, "--ks-pass", "env:OLD_KS_PASS"] }
    var new: [String] { ["--ks", keys.newKeystore.path, "--ks-pass", "env:NEW_KS_PASS"] }
    var environment: [String: String] { ["OLD_KS_PASS": keys.oldPassword, "NEW_KS_PASS": keys.newPassword] }
    var lineage: String { keys.lineage.path }

    /// `apkpatch sign OPTIONS --out-dir DIR --json INPUTS`, its summary's items in input order.
    func batch(_ options: [String], _ inputs: [String], into directory: String) throws -> (result: TestSupport.ProcessResult, items: [[String: Any]]) {
        let result = try TestSupport.apkpatch(["sign"] + options + ["--out-dir", directory, "--json"] + inputs, environment: environment)
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let items = json?["results"] as? [[String: Any]] ?? []
        #expect(items.map { $0["input"] as? String } == inputs, "\(result)")
        #expect(json?["succeeded"] as? Int == items.filter { $0["error"] == nil }.count && json?["failed"] as? Int == items.filter { $0["error"] != nil }.count)
        return (result, items)
    }

    /// Signs `inputs` with `options` in one batch and each alone with `--out`: the same APK and `.idsig` bytes (or
    /// no `.idsig` on either side), each listed in the summary with its `.idsig`. Returns the batch's outputs.
    func signedAsAlone(_ label: String, _ options: [String], _ inputs: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        let dir = try TestSupport.makeTemporaryDirectory("batch-rotation-case")
        let folder = dir.appendingPathComponent("signed").path
        let (result, items) = try batch(options, inputs, into: folder)
        #expect(result.succeeded, "\(label): \(result)", sourceLocation: sourceLocation)
        var outputs: [String] = []
        for (index, input) in inputs.enumerated() {
            let name = URL(fileURLWithPath: input).lastPathComponent
            let ours = folder + "/" + name, alone = dir.appendingPathComponent(name).path
            let single = try TestSupport.apkpatch(["sign"] + options + ["--out", alone, input], environment: environment)
            #expect(single.succeeded, "\(label), \(name) alone: \(single)", sourceLocation: sourceLocation)
            #expect(try TestSupport.readBytes(ours) == (try TestSupport.readBytes(alone)), "\(label), \(name): not the APK sign --out writes",
                    sourceLocation: sourceLocation)
            let signatures = [ours, alone].map { try? TestSupport.readBytes($0 + ".idsig") }
            #expect(signatures[0] == signatures[1], "\(label), \(name): not the .idsig sign --out writes", sourceLocation: sourceLocation)
            let report = items.indices.contains(index) ? items[index]["report"] as? [String: Any] : nil
            #expect(report?["output"] as? String == ours && report?["v4SignatureFile"] as? String == (signatures[0] == nil ? nil : ours + ".idsig"),
                    "\(label), \(name): \(items)", sourceLocation: sourceLocation)
            outputs.append(ours)
        }
        return outputs
    }

    /// The certificate SHA-256 digests of the signers that `apksigner verify -v --print-certs ARGUMENTS` prints for
    /// `apk` (Debian's 31 as "Signer #N"; apksigner 35, when `fromLevel33`, the v3.1 block's signer as "Signer
    /// (minSdkVersion=33, …)"), once it verifies, the `.idsig` too when `ARGUMENTS` name one.
    func apksignerSigners(_ apk: String, _ arguments: [String] = [], fromLevel33: Bool = false,
                          sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        let command = ["verify", "-v", "--print-certs"] + arguments + [apk]
        let result = fromLevel33 ? try NewerApksigner.run(command) : try TestSupport.run("apksigner", command)
        #expect(result.succeeded, "\(apk) \(arguments): \(result)", sourceLocation: sourceLocation)
        if arguments.contains("--v4-signature-file") {
            #expect(result.stdout.contains("Verified using v4 scheme (APK Signature Scheme v4): true"), "\(apk): \(result)", sourceLocation: sourceLocation)
        }
        let prefix = fromLevel33 ? "Signer (minSdkVersion=33, maxSdkVersion=2147483647) " : "Signer #"
        return result.stdout.split(separator: "\n").filter { $0.hasPrefix(prefix) && $0.contains("certificate SHA-256 digest:") }
            .map { String($0.split(separator: " ").last!) }
    }

    /// `apkpatch verify --expect-certificate-sha256` for each digest passes.
    func expectSigners(_ apk: String, _ digests: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let verify = try TestSupport.apkpatch(["verify"] + digests.flatMap { ["--expect-certificate-sha256", $0] } + [apk])
        #expect(verify.succeeded, "\(apk): \(verify)", sourceLocation: sourceLocation)
    }

    @Test("the default rotation (v3.1 from API 33) signs every APK of the batch as sign --out does, .idsig included")
    func defaultRotation() throws {
        for apk in try signedAsAlone("rotation at 33", old + ["--next-signer"] + new + ["--lineage", lineage], Self.shared.apks) {
            // Up to API 32 the old key (v1, v2, v3.0); from 33 the new one in the v3.1 block, whose .idsig is v4.1.
            #expect(try apksignerSigners(apk, ["--max-sdk-version", "32", "--v4-signature-file", apk + ".idsig"]) == [keys.oldSHA256], "\(apk)")
            #expect(try apksignerSigners(apk, ["--min-sdk-version", "33", "--v4-signature-file", apk + ".idsig"], fromLevel33: true) == [keys.newSHA256], "\(apk)")
            try expectSigners(apk, [keys.newSHA256])
        }
    }

    @Test("a rotation from API 28 (the new key in v3.0) signs every APK of the batch as sign --out does")
    func rotationFrom28() throws {
        let options = old + ["--next-signer"] + new + ["--lineage", lineage, "--rotation-min-sdk-version", "28"]
        for apk in try signedAsAlone("rotation at 28", options, Self.shared.apks) {
            #expect(try apksignerSigners(apk, ["--min-sdk-version", "28", "--v4-signature-file", apk + ".idsig"]) == [keys.newSHA256], "\(apk)")
            #expect(try apksignerSigners(apk, ["--max-sdk-version", "27"]) == [keys.oldSHA256], "\(apk)")
            try expectSigners(apk, [keys.newSHA256])
        }
    }

    @Test("a signer targeting API 33 and two v1/v2 signers sign every APK of the batch as sign --out does")
    func targetedAndSeveralSigners() throws {
        let targeted = old + ["--signer-for-min-sdk-version", "33"] + new + ["--signer-lineage", lineage]
        for apk in try signedAsAlone("targeted signer", targeted, Self.shared.apks) {
            #expect(try apksignerSigners(apk, ["--max-sdk-version", "32"]) == [keys.oldSHA256], "\(apk)")
            #expect(try apksignerSigners(apk, ["--min-sdk-version", "33"], fromLevel33: true) == [keys.newSHA256], "\(apk)")
            try expectSigners(apk, [keys.newSHA256])
        }
        // v1 and v2 carry both signers; no v4 signature (a v2 block with two signers has none to give).
        // Both keystores name their key "release": the second signer's JAR files get a name of their own.
        let twoSigners = old + ["--next-signer"] + new + ["--v1-signer-name", "NEWKEY", "--v3-signing-enabled", "false"]
        for apk in try signedAsAlone("two signers", twoSigners, Self.shared.apks) {
            #expect(try apksignerSigners(apk) == [keys.oldSHA256, keys.newSHA256], "\(apk)")
            #expect(!FileManager.default.fileExists(atPath: apk + ".idsig"))
            try expectSigners(apk, [keys.oldSHA256, keys.newSHA256])
        }
    }

    @Test("signers the options cannot sign stop the batch first; one an APK's level cannot take fails that APK, with sign --out's error")
    func failuresAreTheOneAPKPaths() throws {
        let dir = try TestSupport.makeTemporaryDirectory("batch-rotation-refused")
        let input = Self.shared.apks[0]
        // About the options, whatever the APK: v3 holds one signer (no lineage), a key given twice.
        for options in [old + ["--next-signer"] + new, old + ["--next-signer"] + old + ["--lineage", lineage]] {
            let folder = dir.appendingPathComponent("refused").path
            let batch = try TestSupport.apkpatch(["sign"] + options + ["--out-dir", folder] + Self.shared.apks, environment: environment)
            let alone = try TestSupport.apkpatch(["sign"] + options + ["--out", dir.appendingPathComponent("alone.apk").path, input], environment: environment)
            let firstLine = { (text: String) in text.split(separator: "\n").first.map(String.init) ?? "" }
            #expect(batch.status == alone.status && alone.status != 0 && firstLine(batch.stderr) == firstLine(alone.stderr) && !firstLine(alone.stderr).isEmpty,
                    "\(batch)\n---\n\(alone)")
            #expect(!FileManager.default.fileExists(atPath: folder), "\(options)")
        }
        // A signer from API 33 alone covers an APK from 33, not one from 21: that APK fails, the other is signed.
        let fromLevel33 = ["--signer-for-min-sdk-version", "33"] + new
        let folder = dir.appendingPathComponent("signed").path
        let (batch, items) = try batch(fromLevel33, [input, Self.shared.level33], into: folder)
        #expect(batch.status == 1, "\(batch)")
        let error = try #require(items.first?["error"] as? String, "\(items)")
        let alone = try TestSupport.apkpatch(["sign"] + fromLevel33 + ["--out", dir.appendingPathComponent("alone.apk").path, input], environment: environment)
        #expect(alone.status == 1 && alone.stderr.contains(error) && error.contains("do not cover API 28"), "\(error)\n---\n\(alone)")
        #expect(!FileManager.default.fileExists(atPath: folder + "/one.apk") && !FileManager.default.fileExists(atPath: dir.appendingPathComponent("alone.apk").path))
        let signed = folder + "/level33.apk", level33Alone = dir.appendingPathComponent("level33.apk").path
        #expect(try TestSupport.apkpatch(["sign"] + fromLevel33 + ["--out", level33Alone, Self.shared.level33], environment: environment).succeeded)
        #expect(try TestSupport.readBytes(signed) == (try TestSupport.readBytes(level33Alone)))
        #expect(try apksignerSigners(signed, ["--v4-signature-file", signed + ".idsig"]) == [keys.newSHA256])
    }
}
