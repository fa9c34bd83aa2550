import Foundation
import Testing
import TestSupport

/// A key rotation, several signers and SDK-targeted signers on a split APK set: every APK gets the signers one
/// APK signed alone would get (Android installs a split only when it is signed as its base), judged by apksigner
/// on each APK and by `apkpatch verify` on the set.
@Suite(.serialized, .removesTemporaryDirectories) struct SetRotationTests {
    let scratch: URL
    let fixture: SplitSetFixture
    /// Keys 0 and 1 (key file, certificate) and the certificates' SHA-256.
    let keys: [(key: String, cert: String, sha256: String)]
    /// The lineage 0 → 1, from `apkpatch rotate`.
    let lineage: String

    init() throws {
        scratch = try TestSupport.makeTemporaryDirectory("apkpatch-set-rotation")
        fixture = try SplitSetFixture(in: scratch)
        var keys: [(String, String, String)] = []
        for index in 0...1 {
            let pem = scratch.appendingPathComponent("key\(index).pem").path, cert = scratch.appendingPathComponent("cert\(index).pem").path
            let pk8 = scratch.appendingPathComponent("key\(index).pk8").path
            let made = try TestSupport.run("sh", ["-c", """
                openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1" -out "$2" -days 1000 -subj /CN=set-key\(index) 2>/dev/null && \
                openssl pkcs8 -topk8 -nocrypt -in "$1" -outform DER -out "$3" && openssl x509 -in "$2" -outform DER | sha256sum
                """, "sh", pem, cert, pk8])
            guard made.succeeded else { throw FixtureError(message: "openssl failed:\n\(made)") }
            keys.append((pk8, cert, String(made.stdout.prefix(64))))
        }
        self.keys = keys
        lineage = scratch.appendingPathComponent("lineage").path
        let rotate = try TestSupport.apkpatch(["rotate", "--out", lineage, "--old-signer", "--key", keys[0].0, "--cert", keys[0].1,
                                               "--new-signer", "--key", keys[1].0, "--cert", keys[1].1])
        guard rotate.succeeded else { throw FixtureError(message: "apkpatch rotate failed:\n\(rotate)") }
    }

    func signer(_ index: Int) -> [String] { ["--key", keys[index].key, "--cert", keys[index].cert] }
    var rotation: [String] { signer(0) + ["--next-signer"] + signer(1) + ["--lineage", lineage] }

    /// apksigner's "Signer #N certificate SHA-256" lines of `apk` verified with `arguments`.
    func apksignerCertificates(_ apk: String, _ arguments: [String] = []) throws -> [String] {
        let result = try TestSupport.run("apksigner", ["verify", "-v", "--print-certs"] + arguments + [apk])
        #expect(result.succeeded, "\(apk): \(result)")
        return result.stdout.split(separator: "\n").filter { $0.hasPrefix("Signer #") && $0.contains("certificate SHA-256 digest:") }
            .map { String($0.split(separator: " ").last!) }
    }

    @Test("the default rotation (v3.1 from API 33) signs every APK of a .apks and of a directory alike")
    func defaultRotation() throws {
        let expectedLineage = try TestSupport.apkpatch(["lineage", "--in", lineage, "--print-certs"]).stdout
        for form in [SplitSetFixture.Form.apks, .directory] {
            let output = scratch.appendingPathComponent(form == .directory ? "rotated" : "rotated.apks").path
            let sign = try TestSupport.apkpatch(["sign"] + rotation + ["--out", output, try fixture.pack(form)])
            #expect(sign.succeeded, "\(sign)")
            let apks = try SetOracles.apkFiles(of: output, form: form, scratch: scratch)
            #expect(apks.count == 4)
            for (name, path) in apks {
                // Debian's apksigner predates v3.1: up to API 32 the old key, in v1, v2 and the v3.0 block.
                for level in ["24", "28"] {
                    #expect(try apksignerCertificates(path, ["--min-sdk-version", level, "--max-sdk-version", "32"]) == [keys[0].sha256], "\(name) at \(level)")
                }
                // From API 33 the new key, in the v3.1 block, with the lineage.
                let ours = try TestSupport.apkpatch(["verify", "--signature-only", "--print-certs", path])
                #expect(ours.succeeded && ours.stdout.contains("Signer (minSdkVersion=33, maxSdkVersion=2147483647) certificate SHA-256 digest: \(keys[1].sha256)"),
                        "\(name): \(ours)")
                let lineages = try TestSupport.apkpatch(["lineage", "--in", path, "--print-certs"])
                #expect(lineages.succeeded && lineages.stdout == expectedLineage, "\(name): \(lineages)")
            }
            // A folder gets each APK's v4 signature (v4 left at its default): the v3.0 signer's signing info, then
            // the v3.1 block's (apksig's v4.1); Debian's apksigner checks the first against the v3.0 block.
            if form == .directory {
                let idsigs = try FileManager.default.subpathsOfDirectory(atPath: output).filter { $0.hasSuffix(".idsig") }
                #expect(idsigs.sorted() == apks.keys.sorted().map { $0 + ".idsig" }, "\(idsigs)")
                for (name, path) in apks {
                    let ours = try TestSupport.apkpatch(["verify", "--signature-only", "--v4-signature-file", path + ".idsig", path])
                    #expect(ours.succeeded, "\(name): \(ours)")
                    let theirs = try TestSupport.run("apksigner", ["verify", "-v", "--max-sdk-version", "32", "--v4-signature-file", path + ".idsig", path])
                    #expect(theirs.succeeded && theirs.stdout.contains("Verified using v4 scheme (APK Signature Scheme v4): true"), "\(name): \(theirs)")
                }
            }
            let verify = try TestSupport.apkpatch(["verify", output])
            #expect(verify.succeeded && verify.stdout.contains("Verifies: set"), "\(verify)")
        }
    }

    @Test("a rotation from API 28 puts the new key in every APK's v3.0 block, with their v4 signatures; run and merge sign it too")
    func rotationFrom28RunAndMerge() throws {
        let input = try fixture.pack(.directory)
        let output = scratch.appendingPathComponent("rotated28").path
        let sign = try TestSupport.apkpatch(["sign"] + rotation + ["--rotation-min-sdk-version", "28", "--out", output, input])
        #expect(sign.succeeded, "\(sign)")
        for (name, path) in try SetOracles.apkFiles(of: output, form: .directory, scratch: scratch) {
            #expect(try apksignerCertificates(path) == [keys[1].sha256], "\(name)")
            #expect(try apksignerCertificates(path, ["--max-sdk-version", "27"]) == [keys[0].sha256], "\(name)")
            let v4 = try TestSupport.run("apksigner", ["verify", "-v", "--v4-signature-file", path + ".idsig", path])
            #expect(v4.succeeded && v4.stdout.contains("Verified using v4 scheme (APK Signature Scheme v4): true"), "\(name): \(v4)")
        }
        #expect(try TestSupport.apkpatch(["verify", output]).succeeded)
        // verify -v --print-certs SET: after the signer, the lineage with its capabilities as apksigner lineage prints it.
        let base = try #require(try SetOracles.apkFiles(of: output, form: .directory, scratch: scratch).first { $0.key.hasPrefix("base") }?.value)
        let lineagePrint = try TestSupport.run("apksigner", ["lineage", "--in", base, "--print-certs", "-v"])
        let setPrint = try TestSupport.apkpatch(["verify", "-v", "--print-certs", "--signature-only", output])
        let indented = lineagePrint.stdout.split(separator: "\n").map { "  \($0)\n" }.joined()
        #expect(lineagePrint.succeeded && lineagePrint.stdout.contains("Has auth capability") && setPrint.stdout.contains(indented)
                && setPrint.stdout.contains("  Signer #1 certificate SHA-256 digest: \(keys[1].sha256)\n"), "\(setPrint)\n---\n\(lineagePrint)")

        let patch = scratch.appendingPathComponent("empty-patch")
        try FileManager.default.createDirectory(at: patch, withIntermediateDirectories: true)
        let runOutput = scratch.appendingPathComponent("run.apks").path
        let run = try TestSupport.apkpatch(["run", try fixture.pack(.apks), "--patch", patch.path, "--out", runOutput] + rotation)
        #expect(run.succeeded, "\(run)")
        for (name, path) in try SetOracles.apkFiles(of: runOutput, form: .apks, scratch: scratch) {
            #expect(try apksignerCertificates(path, ["--max-sdk-version", "32"]) == [keys[0].sha256], "\(name)")
            let ours = try TestSupport.apkpatch(["verify", "--signature-only", "--print-certs", path])
            #expect(ours.stdout.contains("Signer (minSdkVersion=33, maxSdkVersion=2147483647) certificate SHA-256 digest: \(keys[1].sha256)"), "\(name): \(ours)")
        }

        let merged = scratch.appendingPathComponent("merged.apk").path
        let merge = try TestSupport.apkpatch(["merge", input, "--out", merged] + rotation + ["--rotation-min-sdk-version", "28", "--align-file-size", "true"])
        #expect(merge.succeeded, "\(merge)")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: merged)[.size] as? Int)
        #expect(size % 4096 == 0, "merge takes the signing options sign takes: \(size)")
        #expect(try apksignerCertificates(merged) == [keys[1].sha256])
        let v4 = try TestSupport.run("apksigner", ["verify", "-v", "--v4-signature-file", merged + ".idsig", merged])
        #expect(v4.succeeded && v4.stdout.contains("Verified using v4 scheme (APK Signature Scheme v4): true"), "\(v4)")
    }

    @Test("watch on a set with a key rotation signs every rebuilt APK with the rotation, as sign does")
    func watchWithRotation() throws {
        let patch = scratch.appendingPathComponent("watch-patch")
        try TestSupport.write("one\n", to: "assets/note.txt", in: patch)
        let output = scratch.appendingPathComponent("watched").path
        let (process, lines) = try TestSupport.startApkpatch(["watch", try fixture.pack(.directory), "--patch", patch.path, "--out", output]
                                                              + rotation + ["--rotation-min-sdk-version", "28", "--json"])
        defer { if process.isRunning { process.terminate() } }
        let apks = ["base.apk", "split_config.arm64_v8a.apk", "split_config.fr.apk", "split_config.xhdpi.apk"]
        /// Each rebuilt APK: the new key from API 28 (v3.0 block), the old one below, the lineage. (watch's working
        /// builds carry no .idsig, as for one APK.)
        func checkRotation(_ names: [String]) throws {
            let expectedLineage = try TestSupport.apkpatch(["lineage", "--in", lineage, "--print-certs"]).stdout
            for name in names {
                let path = output + "/" + name
                #expect(try apksignerCertificates(path) == [keys[1].sha256], "\(name)")
                #expect(try apksignerCertificates(path, ["--max-sdk-version", "27"]) == [keys[0].sha256], "\(name)")
                let lineages = try TestSupport.apkpatch(["lineage", "--in", path, "--print-certs"])
                #expect(lineages.succeeded && lineages.stdout == expectedLineage, "\(name): \(lineages)")
            }
        }
        let first = SetWatchTests.build(1, in: lines)
        #expect(Set(first?["rebuiltAPKs"] as? [String] ?? []) == Set(apks), "\(lines.lines)")
        try checkRotation(apks)

        // A save under splits/config.fr/ rebuilds that split alone, signed with the rotation like the rest.
        try TestSupport.write("salut\n", to: "splits/config.fr/assets/fr.txt", in: patch)
        let second = SetWatchTests.build(2, in: lines)
        #expect(second?["rebuiltAPKs"] as? [String] == ["split_config.fr.apk"], "\(lines.lines)")
        #expect(try TestSupport.run("unzip", ["-p", output + "/split_config.fr.apk", "assets/fr.txt"]).stdout == "salut\n")
        try checkRotation(["split_config.fr.apk"])
        let verify = try TestSupport.apkpatch(["verify", output])
        #expect(verify.succeeded && verify.stdout.contains("Verifies: set"), "\(verify)")
        process.interrupt()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    @Test("several signers (v1 and v2) and an SDK-targeted signer sign every APK; v4 asked with a v3.1 rotation is written")
    func severalAndTargetedSigners() throws {
        let input = try fixture.pack(.directory)
        let several = scratch.appendingPathComponent("several").path
        let sign = try TestSupport.apkpatch(["sign"] + signer(0) + ["--next-signer"] + signer(1) + ["--v3-signing-enabled", "false", "--out", several, input])
        #expect(sign.succeeded, "\(sign)")
        for (name, path) in try SetOracles.apkFiles(of: several, form: .directory, scratch: scratch) {
            #expect(try apksignerCertificates(path) == [keys[0].sha256, keys[1].sha256], "\(name)")
        }
        #expect(try TestSupport.apkpatch(["verify", several]).succeeded)

        let targeted = scratch.appendingPathComponent("targeted").path
        // The targeted signer's lineage links it to the first signer, as apksig requires (without one, sign refuses).
        let signTargeted = try TestSupport.apkpatch(["sign"] + signer(0) + ["--signer-for-min-sdk-version", "33"] + signer(1) + ["--signer-lineage", lineage, "--out", targeted, input])
        #expect(signTargeted.succeeded, "\(signTargeted)")
        for (name, path) in try SetOracles.apkFiles(of: targeted, form: .directory, scratch: scratch) {
            #expect(try apksignerCertificates(path, ["--max-sdk-version", "32"]) == [keys[0].sha256], "\(name)")
            let ours = try TestSupport.apkpatch(["verify", "--signature-only", "--print-certs", path])
            #expect(ours.stdout.contains("Signer (minSdkVersion=33, maxSdkVersion=2147483647) certificate SHA-256 digest: \(keys[1].sha256)"), "\(name): \(ours)")
        }
        #expect(try TestSupport.apkpatch(["verify", targeted]).succeeded)

        // v4 asked for with a v3.1 rotation: every APK gets its .idsig (v3.0 and v3.1 signing infos).
        let withV4 = scratch.appendingPathComponent("with-v4").path
        let signedV4 = try TestSupport.apkpatch(["sign"] + rotation + ["--v4-signing-enabled", "true", "--out", withV4, input])
        #expect(signedV4.succeeded, "\(signedV4)")
        for (name, path) in try SetOracles.apkFiles(of: withV4, form: .directory, scratch: scratch) {
            let ours = try TestSupport.apkpatch(["verify", "--signature-only", "--v4-signature-file", path + ".idsig", path])
            #expect(ours.succeeded, "\(name): \(ours)")
        }
    }
}
