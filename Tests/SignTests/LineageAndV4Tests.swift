import APKCore
import Foundation
import OpenSSLWrapper
import Sign
import SignatureSchemes
import Testing
import TestSupport

/// Key rotation files (`apkpatch rotate` / `lineage`) against Debian's apksigner both ways, v4 signatures
/// against apksigner's `.idsig`, Linux's `fsverity` and OpenSSL, and `verify`'s certificate expectations.
@Suite(.removesTemporaryDirectories) struct LineageAndV4Tests {
    static let shared: (directory: URL, keys: [TestKeys.Files]) = TestSupport.sharedByTests {
        let directory = try! TestSupport.makeTemporaryDirectory("lineage-keys")
        return (directory, (1...3).map { try! TestKeys.make(.rsa2048, in: directory, name: "key\($0)") })
    }

    static func signer(_ index: Int) -> [String] {
        let key = shared.keys[index]
        return ["--key", key.keyPK8, "--cert", key.certificatePEM]
    }

    static func sha256(of key: Int) -> String { shared.keys[key].key.certificates[0].fingerprint(.sha256).hexString }

    /// The SHA-256 of key `index`'s certificate as `openssl x509 -fingerprint` gives it, in `--print-certs` form.
    static func opensslSHA256(of index: Int) throws -> String {
        let result = try TestSupport.run("openssl", ["x509", "-in", shared.keys[index].certificatePEM, "-noout", "-fingerprint", "-sha256"])
        guard result.succeeded, let value = result.stdout.split(separator: "=").last else { throw FixtureError(message: "openssl x509: \(result)") }
        return value.lowercased().filter { $0.isHexDigit }
    }

    @Test("rotate writes apksigner's bytes, each tool reads the other's file and prints the same certificates")
    func rotateAndLineageMatchApksigner() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let theirs = dir.appendingPathComponent("theirs.lineage").path, ours = dir.appendingPathComponent("ours.lineage").path
        let apksigner = try TestSupport.run("apksigner", ["rotate", "--out", theirs, "--old-signer"] + Self.signer(0) + ["--new-signer"] + Self.signer(1))
        #expect(apksigner.succeeded, "\(apksigner)")
        let rotate = try TestSupport.apkpatch(["rotate", "--out", ours, "--old-signer"] + Self.signer(0) + ["--new-signer"] + Self.signer(1) + ["-v"])
        #expect(rotate.succeeded && rotate.stdout == "Rotation entry generated.\n", "\(rotate)")
        #expect(try TestSupport.readBytes(ours) == (try TestSupport.readBytes(theirs)), "RSA PKCS#1 signatures are deterministic: same bytes")

        for verbose in [[], ["-v"]] {
            let theirPrint = try TestSupport.run("apksigner", ["lineage", "--in", ours, "--print-certs"] + verbose)
            let ourPrint = try TestSupport.apkpatch(["lineage", "--in", theirs, "--print-certs"] + verbose)
            #expect(theirPrint.succeeded && ourPrint.succeeded, "\(theirPrint)\n\(ourPrint)")
            #expect(ourPrint.stdout == theirPrint.stdout, "\(ourPrint.stdout)\n---\n\(theirPrint.stdout)")
            #expect(ourPrint.stdout.contains("Signer #2 in lineage certificate SHA-256 digest: \(Self.sha256(of: 1))"))
        }

        // Extending a lineage, and capabilities set on both sides.
        let theirs3 = dir.appendingPathComponent("theirs3.lineage").path, ours3 = dir.appendingPathComponent("ours3.lineage").path
        let extend = ["--old-signer"] + Self.signer(1) + ["--set-installed-data", "false", "--new-signer"] + Self.signer(2) + ["--set-rollback"]
        #expect(try TestSupport.run("apksigner", ["rotate", "--in", ours, "--out", theirs3] + extend).succeeded)
        let ourExtend = try TestSupport.apkpatch(["rotate", "--in", theirs, "--out", ours3] + extend)
        #expect(ourExtend.succeeded, "\(ourExtend)")
        #expect(try TestSupport.readBytes(ours3) == (try TestSupport.readBytes(theirs3)))

        let theirsCap = dir.appendingPathComponent("theirs-cap.lineage").path, oursCap = dir.appendingPathComponent("ours-cap.lineage").path
        let change = ["--signer"] + Self.signer(0) + ["--set-permission", "false", "--set-auth=false"]
        let theirChange = try TestSupport.run("apksigner", ["lineage", "--in", ours3, "--out", theirsCap, "-v"] + change)
        #expect(theirChange.succeeded, "\(theirChange)")
        let ourChange = try TestSupport.apkpatch(["lineage", "--in", theirs3, "--out", oursCap, "-v"] + change)
        // The signer is named as apksigner names it (the key file's name up to its first '.').
        #expect(ourChange.succeeded && ourChange.stdout.split(separator: "\n").first == theirChange.stdout.split(separator: "\n").first
                && ourChange.stdout.hasPrefix("Updated signer capabilities for "), "\(ourChange)\n\(theirChange)")
        #expect(try TestSupport.readBytes(oursCap) == (try TestSupport.readBytes(theirsCap)))
        let printed = try TestSupport.apkpatch(["lineage", "--in", oursCap, "--print-certs"]).stdout
        #expect(printed == (try TestSupport.run("apksigner", ["lineage", "--in", theirsCap, "--print-certs"]).stdout))
        #expect(printed.contains("Has permission capability    : false"), "\(printed)")

        // A change needs somewhere to go; an unchanged lineage does not.
        let nowhere = try TestSupport.apkpatch(["lineage", "--in", oursCap] + change.dropLast(2) + ["--set-permission", "true"])
        #expect(!nowhere.succeeded && nowhere.stderr.contains("--out"), "\(nowhere)")
    }

    @Test("a lineage that does not chain, a wrong old signer and a foreign signer are refused")
    func brokenLineagesAreRefused() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let path = dir.appendingPathComponent("l.lineage").path
        #expect(try TestSupport.apkpatch(["rotate", "--out", path, "--old-signer"] + Self.signer(0) + ["--new-signer"] + Self.signer(1)).succeeded)
        var bytes = try TestSupport.readBytes(path)
        bytes[bytes.count - 10] ^= 0x01  // inside the second node's signature
        let tampered = dir.appendingPathComponent("tampered.lineage").path
        try TestSupport.write(bytes, to: "tampered.lineage", in: dir)
        let read = try TestSupport.apkpatch(["lineage", "--in", tampered, "--print-certs"])
        #expect(!read.succeeded && read.stderr.contains("does not verify"), "\(read)")
        #expect(throws: LineageError.self) { try SigningCertificateLineage(contentsOf: tampered) }
        // apksigner agrees.
        #expect(!(try TestSupport.run("apksigner", ["lineage", "--in", tampered, "--print-certs"]).succeeded))

        let wrongParent = try TestSupport.apkpatch(["rotate", "--in", path, "--out", dir.appendingPathComponent("x").path,
                                                    "--old-signer"] + Self.signer(0) + ["--new-signer"] + Self.signer(2))
        #expect(!wrongParent.succeeded && wrongParent.stderr.contains("not the newest certificate"), "\(wrongParent)")
        let foreign = try TestSupport.apkpatch(["lineage", "--in", path, "--out", dir.appendingPathComponent("y").path,
                                                "--signer"] + Self.signer(2) + ["--set-rollback"])
        #expect(foreign.status == 1 && foreign.stderr.contains("is not in the signing certificate lineage"), "\(foreign)")
    }

    @Test("the codec reads and writes apksig's structure: file round trip, attribute value, magic")
    func codecRoundTrip() throws {
        let lineage = try SigningCertificateLineage.rotation(from: Self.shared.keys[0].key, to: Self.shared.keys[1].key)
        let reread = try SigningCertificateLineage(fileBytes: lineage.fileBytes)
        #expect(reread == lineage)
        #expect(try SigningCertificateLineage(attributeValue: lineage.attributeValue) == lineage)
        #expect(Array(lineage.fileBytes.prefix(8)) == [0xd1, 0x39, 0xff, 0x3e, 1, 0, 0, 0])
        #expect(lineage.nodes[0].flags == 0x17 && lineage.nodes[0].signatureAlgorithmID == 0x0103)
        #expect(lineage.nodes[1].parentSignatureAlgorithmID == 0x0103 && lineage.nodes[1].signatureAlgorithmID == 0)
        #expect(throws: LineageError.self) { try SigningCertificateLineage(fileBytes: Array(lineage.fileBytes.dropLast())) }
    }

    @Test("v4: the .idsig is apksigner's bytes; its tree and root are fsverity's; OpenSSL checks its signature; a stale one goes")
    func v4SignatureMatchesApksignerFsverityAndOpenSSL() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let theirs = dir.appendingPathComponent("theirs.apk").path, ours = dir.appendingPathComponent("ours.apk").path
        #expect(try TestSupport.run("apksigner", ["sign"] + Self.signer(0) + ["--out", theirs, input]).succeeded)
        let sign = try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--alignment-preserved", "true", "--misaligned-apk-permitted", "true", "--lib-page-alignment", "4096",
                                                                         "--out", ours, "--json", input])
        #expect(sign.succeeded, "\(sign)")
        #expect(sign.stdout.contains("\"v4SignatureFile\""), "\(sign)")
        #expect(try TestSupport.readBytes(ours) == (try TestSupport.readBytes(theirs)))
        #expect(try TestSupport.readBytes(ours + ".idsig") == (try TestSupport.readBytes(theirs + ".idsig")), "the .idsig is apksigner's, byte for byte")

        let signature = try V4Signature(encoded: try TestSupport.readBytes(ours + ".idsig"))
        let tree = dir.appendingPathComponent("tree.bin").path, descriptor = dir.appendingPathComponent("descriptor.bin").path
        let fsverity = try TestSupport.run("fsverity", ["digest", ours, "--out-merkle-tree", tree, "--out-descriptor", descriptor])
        #expect(fsverity.succeeded, "\(fsverity)")
        #expect(signature.tree == (try TestSupport.readBytes(tree)), "the Merkle tree is fs-verity's")
        // fsverity_descriptor: version, hash algorithm, log2 block size, salt size, 4 reserved, le64 size, root hash.
        #expect(Array(try TestSupport.readBytes(descriptor)[16..<48]) == signature.rootHash, "the root hash is fs-verity's")

        try TestSupport.write(signature.signedData(apkSize: Int64(try TestSupport.readBytes(ours).count)), to: "signed.bin", in: dir)
        try TestSupport.write(signature.signature, to: "signature.bin", in: dir)
        try TestSupport.write(signature.publicKey, to: "public.der", in: dir)
        let openssl = try TestSupport.run("openssl", ["dgst", "-sha256", "-keyform", "DER", "-verify", dir.appendingPathComponent("public.der").path,
                                                      "-signature", dir.appendingPathComponent("signature.bin").path,
                                                      dir.appendingPathComponent("signed.bin").path])
        #expect(openssl.succeeded && openssl.stdout.contains("Verified OK"), "\(openssl)")

        // No v2/v3 signature, so no v4: silent by default (a stale .idsig is removed), an error when asked for.
        try TestSupport.write([1, 2, 3], to: "v1only.apk.idsig", in: dir)
        let v1only = dir.appendingPathComponent("v1only.apk").path
        let quiet = try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--v2-signing-enabled", "false", "--v3-signing-enabled", "false", "--out", v1only, input])
        #expect(quiet.succeeded, "\(quiet)")
        #expect(!FileManager.default.fileExists(atPath: v1only + ".idsig"), "the stale .idsig is gone")
        let loud = try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--v2-signing-enabled", "false", "--v3-signing-enabled", "false",
                                                                         "--v4-signing-enabled", "--out", v1only, input])
        #expect(!loud.succeeded && loud.stderr.contains("v4 signature needs"), "\(loud)")
        let off = dir.appendingPathComponent("off.apk").path
        #expect(try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--v4-signing-enabled", "false", "--out", off, input]).succeeded)
        #expect(!FileManager.default.fileExists(atPath: off + ".idsig"))
    }

    @Test("an explicit v4 the options cannot give is refused before anything is written (sign, run); unasked, it is skipped")
    func impossibleV4IsRefusedFirst() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("x", to: "assets/added.txt", in: patch)
        let twoSigners = Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--v3-signing-enabled", "false"]
        let v1Only = Self.signer(0) + ["--v2-signing-enabled", "false", "--v3-signing-enabled", "false", "--min-sdk-version", "21"]
        // A rotation at 33 and a signer targeting 36: for the fixture's minSdkVersion the v3.1 block has both
        // (33-35 and 36+), which no v4 signature can carry; from 33 on the v3.0 block takes the first.
        let (lineage01, lineage012) = (dir.appendingPathComponent("L01").path, dir.appendingPathComponent("L012").path)
        #expect(try TestSupport.apkpatch(["rotate", "--out", lineage01, "--old-signer"] + Self.signer(0) + ["--new-signer"] + Self.signer(1)).succeeded)
        #expect(try TestSupport.apkpatch(["rotate", "--in", lineage01, "--out", lineage012, "--old-signer"] + Self.signer(1) + ["--new-signer"] + Self.signer(2)).succeeded)
        let twoV31Signers = Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage01, "--signer-for-min-sdk-version", "36"]
            + Self.signer(2) + ["--signer-lineage", lineage012]
        // A key whose certificate file holds a chain, and a certificate too large for the v4 signing infos.
        let key0 = Self.shared.keys[0], keyPEM = String(key0.keyPK8.dropLast(".pk8".count)) + ".key.pem"
        let chain = dir.appendingPathComponent("chain.pem").path
        try TestSupport.write(try String(contentsOfFile: key0.certificatePEM, encoding: .utf8) + String(contentsOfFile: Self.shared.keys[1].certificatePEM, encoding: .utf8),
                              to: "chain.pem", in: dir)
        let large = dir.appendingPathComponent("large.pem").path
        let made = try TestSupport.run("openssl", ["req", "-x509", "-new", "-key", keyPEM, "-subj", "/CN=large", "-days", "3650",
                                                   "-addext", "nsComment=" + String(repeating: "x", count: 7000), "-out", large])
        #expect(made.succeeded, "\(made)")
        let chained = ["--key", key0.keyPK8, "--cert", chain], largeCertificate = ["--key", key0.keyPK8, "--cert", large]
        // An earlier output and its .idsig stay as they were: they still belong together.
        let earlier = dir.appendingPathComponent("earlier.apk").path
        #expect(try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--out", earlier, input]).succeeded)
        let earlierBytes = try TestSupport.readBytes(earlier), earlierSignature = try TestSupport.readBytes(earlier + ".idsig")
        for (label, signers, message) in [("two signers", twoSigners, "the v2 block has 2"), ("v1 only", v1Only, "v4 signature needs"),
                                          ("two v3.1 signers", twoV31Signers, "the v3.1 block has 2"),
                                          ("certificate chain", chained, "a chain of 2"), ("large certificate", largeCertificate, "signing infos take at least")] {
            let fresh = dir.appendingPathComponent("fresh.apk").path
            for command in [["sign"] + signers + ["--out", fresh, input], ["run", input, "--patch", patch.path] + signers + ["--out", fresh]] {
                let refused = try TestSupport.apkpatch(command + ["--v4-signing-enabled", "true"])
                #expect(refused.status == 1 && refused.stderr.contains(message), "\(label), \(command[0]): \(refused)")
                #expect(!FileManager.default.fileExists(atPath: fresh) && !FileManager.default.fileExists(atPath: fresh + ".idsig"), "\(label), \(command[0])")
            }
            if label == "v1 only" || label == "two signers" {  // whatever the APK: --out-dir makes no directory either
                let directory = dir.appendingPathComponent("batch").path
                let batch = try TestSupport.apkpatch(["sign"] + signers + ["--v4-signing-enabled", "true", "--out-dir", directory, input])
                #expect(batch.status == 1 && batch.stderr.contains(message) && !FileManager.default.fileExists(atPath: directory), "\(batch)")
            }
            let again = try TestSupport.apkpatch(["sign"] + signers + ["--v4-signing-enabled", "true", "--out", earlier, input])
            #expect(again.status == 1, "\(label): \(again)")
            #expect(try TestSupport.readBytes(earlier) == earlierBytes && (try TestSupport.readBytes(earlier + ".idsig")) == earlierSignature, "\(label)")
        }
        // A directory where the .idsig goes: asked for, refused before the APK is written (sign and run).
        let blocked = dir.appendingPathComponent("blocked.apk").path
        try FileManager.default.createDirectory(atPath: blocked + ".idsig", withIntermediateDirectories: false)
        for command in [["sign"] + Self.signer(0) + ["--out", blocked, input], ["run", input, "--patch", patch.path] + Self.signer(0) + ["--out", blocked]] {
            let refused = try TestSupport.apkpatch(command + ["--v4-signing-enabled", "true"])
            #expect(refused.status == 1 && refused.stderr.contains("blocked.apk.idsig, where the v4 signature goes, is a directory"), "\(command[0]): \(refused)")
            #expect(!FileManager.default.fileExists(atPath: blocked), "\(command[0]): the APK was written")
        }
        // Not asked for, v4 is skipped as apksigner skips it: the APK is written (and verifies), no .idsig beside it.
        let skipped = dir.appendingPathComponent("skipped.apk").path
        try TestSupport.write([1, 2, 3], to: "skipped.apk.idsig", in: dir)
        let sign = try TestSupport.apkpatch(["sign"] + twoSigners + ["--out", skipped, input])
        #expect(sign.succeeded, "\(sign)")
        #expect(!FileManager.default.fileExists(atPath: skipped + ".idsig"), "the stale .idsig is removed")
        let verify = try TestSupport.run("apksigner", ["verify", "-v", skipped])
        #expect(verify.succeeded && verify.stdout.contains("Number of signers: 2"), "\(verify)")
        // The same signers, with a minSdkVersion at which each block has one of them, do get their v4 signature.
        let level33 = dir.appendingPathComponent("level33.apk").path
        let rotated = try TestSupport.apkpatch(["sign"] + twoV31Signers + ["--min-sdk-version", "33", "--v4-signing-enabled", "true", "--out", level33, input])
        #expect(rotated.succeeded && FileManager.default.fileExists(atPath: level33 + ".idsig"), "\(rotated)")
        let checked = try TestSupport.apkpatch(["verify", "--v4-signature-file", level33 + ".idsig", "--min-sdk-version", "33", level33])
        #expect(checked.succeeded, "\(checked)")
    }

    @Test("verify -v --print-certs prints a rotated APK's lineage as apksigner lineage does; --json gives its capabilities")
    func verifyPrintsTheLineage() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let lineage = dir.appendingPathComponent("lineage").path
        let rotate = try TestSupport.apkpatch(["rotate", "--out", lineage, "--old-signer"] + Self.signer(0) + ["--set-permission", "false", "--new-signer"] + Self.signer(1))
        #expect(rotate.succeeded, "\(rotate)")
        // apksigner 31 signs the rotation into v3.0; apkpatch by default into a v3.1 block.
        let theirs = dir.appendingPathComponent("theirs.apk").path, ours = dir.appendingPathComponent("ours.apk").path
        #expect(try TestSupport.run("apksigner", ["sign"] + Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage, "--out", theirs, input]).succeeded)
        #expect(try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage, "--out", ours, input]).succeeded)
        let printed = try TestSupport.run("apksigner", ["lineage", "--in", theirs, "--print-certs", "-v"])
        #expect(printed.succeeded && printed.stdout.contains("Signer #2 in lineage"), "\(printed)")
        for apk in [theirs, ours] {
            let verbose = try TestSupport.apkpatch(["verify", "--signature-only", "-v", "--print-certs", apk])
            #expect(verbose.succeeded && verbose.stdout.hasSuffix(printed.stdout), "\(apk): \(verbose.stdout)\n---\n\(printed.stdout)")
            // Without -v, apksigner's lines alone: scripts reading --print-certs see no ancestor's digest (but in
            // a v3.1 layout, where the old key still signs the v3.0 block, as that block's signer).
            let plain = try TestSupport.apkpatch(["verify", "--signature-only", "--print-certs", apk])
            #expect(plain.succeeded && !plain.stdout.contains("in lineage"), "\(apk): \(plain.stdout)")
            #expect(plain.stdout.contains(Self.sha256(of: 0)) == (apk == ours), "\(apk): \(plain.stdout)")
            let json = try TestSupport.apkpatch(["verify", "--signature-only", "--json", apk])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            let entries = try #require(object["lineage"] as? [[String: Any]])
            let capabilities = entries.compactMap { $0["capabilities"] as? [String: Bool] }
            #expect(entries.compactMap { $0["sha256"] as? String } == [Self.sha256(of: 0), Self.sha256(of: 1)], "\(apk)")
            #expect(capabilities == [["installedData": true, "sharedUid": true, "permission": false, "rollback": false, "auth": true],
                                     ["installedData": true, "sharedUid": true, "permission": true, "rollback": false, "auth": true]], "\(apk): \(capabilities)")
            let signers = try #require(object["signers"] as? [[String: Any]])
            #expect(signers.allSatisfy { $0["capabilities"] == nil }, "a signer's certificate has no capabilities field")
        }
    }

    @Test("verify --v4-signature-file accepts apksigner's .idsig and rejects a tampered one or another APK's")
    func verifyV4SignatureFile() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let theirs = dir.appendingPathComponent("theirs.apk").path
        #expect(try TestSupport.run("apksigner", ["sign"] + Self.signer(0) + ["--out", theirs, input]).succeeded)
        let ok = try TestSupport.apkpatch(["verify", "--signature-only", "-v", "--v4-signature-file", theirs + ".idsig", theirs])
        #expect(ok.succeeded && ok.stdout.contains("Verified using v4 scheme (APK Signature Scheme v4): true"), "\(ok)")
        let without = try TestSupport.apkpatch(["verify", "--signature-only", "-v", theirs])
        #expect(without.stdout.contains("Verified using v4 scheme (APK Signature Scheme v4): false"), "\(without)")

        // --json: the v4 scheme's signer is the .idsig's signing info: its certificate (the one apksigner names as the
        // APK's signer, and OpenSSL's fingerprint of the key's certificate) and the v3 signer's SDK range.
        func v4Signers(_ idsig: String) throws -> [[String: Any]] {
            let json = try TestSupport.apkpatch(["verify", "--signature-only", "--json", "--v4-signature-file", idsig, theirs])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
            let schemes = try #require(object["schemes"] as? [[String: Any]])
            return try #require(schemes.first { $0["scheme"] as? String == "v4" }?["signers"] as? [[String: Any]], "\(json.stdout)")
        }
        func certificateSHA256(_ signer: [String: Any]) -> String? {
            ((signer["certificates"] as? [[String: Any]])?.first)?["sha256"] as? String
        }
        func errorCodes(_ signer: [String: Any]) -> [String] { (signer["errors"] as? [[String: Any]])?.compactMap { $0["code"] as? String } ?? [] }
        let apksignerDigest = try TestSupport.run("apksigner", ["verify", "--print-certs", theirs]).stdout.split(separator: "\n")
            .first { $0.hasPrefix("Signer #1 certificate SHA-256 digest: ") }?.split(separator: " ").last.map(String.init)
        let good = try v4Signers(theirs + ".idsig")
        let key0SHA256 = try Self.opensslSHA256(of: 0)
        #expect(good.count == 1 && certificateSHA256(good[0]) == apksignerDigest && apksignerDigest == key0SHA256, "\(good)")
        #expect(good.first?["name"] as? String == "#1" && good.first.map(errorCodes) == [], "\(good)")
        // cordovaLike's minSdkVersion, as apksigner's v3 signer covers it up to Integer.MAX_VALUE.
        #expect(good.first?["minSdkVersion"] as? Int == 24 && good.first?["maxSdkVersion"] as? Int == Int(Int32.max), "\(good)")

        let original = try TestSupport.readBytes(theirs + ".idsig")
        func check(_ bytes: [UInt8], code: String, signer: Int? = 0) throws {
            try TestSupport.write(bytes, to: "bad.idsig", in: dir)
            let result = try TestSupport.apkpatch(["verify", "--signature-only", "--v4-signature-file", dir.appendingPathComponent("bad.idsig").path, theirs])
            #expect(!result.succeeded && result.stderr.contains("DOES NOT VERIFY"), "\(code): \(result)")
            let json = try TestSupport.apkpatch(["verify", "--signature-only", "--json", "--v4-signature-file", dir.appendingPathComponent("bad.idsig").path, theirs])
            #expect(json.stdout.contains("\"\(code)\""), "\(code): \(json.stdout)")
            // The finding is the signing info's, with its certificate as the file has it (none when unparsable).
            let signers = try v4Signers(dir.appendingPathComponent("bad.idsig").path)
            if let signer {
                #expect(signers.count == 1 && errorCodes(signers[0]) == [code], "\(code): \(signers)")
                if code != "V4_SIG_MALFORMED_CERTIFICATE" {
                    let expected = try Self.opensslSHA256(of: signer)
                    #expect(signers.first.flatMap(certificateSHA256) == expected, "\(code): \(signers)")
                }
            } else {
                #expect(signers.isEmpty, "\(code): \(signers)")
            }
        }
        var tree = original
        tree[tree.count - 100] ^= 0x01  // in the tree's leaf level
        try check(tree, code: "V4_SIG_APK_TREE_DID_NOT_VERIFY")
        var signed = original
        signed[30] ^= 0x01  // in the root hash, which the signature covers
        try check(signed, code: "V4_SIG_DID_NOT_VERIFY")
        try check(Array(original.prefix(40)), code: "V4_SIG_MALFORMED_SIGNERS", signer: nil)
        // Re-signed after a change (so the signature verifies): the digest, the signer or the root is not the APK's.
        let size = Int64(try TestSupport.readBytes(theirs).count)
        func resigned(by key: Int, _ change: (inout V4Signature) -> Void) throws -> [UInt8] {
            var signature = try V4Signature(encoded: original)
            let signer = Self.shared.keys[key].key
            signature.certificate = signer.certificates[0].derBytes
            signature.publicKey = try signer.certificates[0].publicKey().subjectPublicKeyInfoDER
            change(&signature)
            signature.signature = try signer.privateKey.sign(signature.signedData(apkSize: size), digest: .sha256)
            return signature.encoded()
        }
        #expect(try TestSupport.apkpatch(["verify", "--signature-only", "--v4-signature-file", theirs + ".idsig", theirs]).succeeded)
        try check(try resigned(by: 0) { $0.apkDigest[0] ^= 1 }, code: "V4_SIG_V2_V3_DIGESTS_MISMATCH")
        try check(try resigned(by: 1) { _ in }, code: "V4_SIG_V2_V3_SIGNERS_MISMATCH", signer: 1)
        try check(try resigned(by: 0) { $0.rootHash[0] ^= 1 }, code: "V4_SIG_APK_ROOT_DID_NOT_VERIFY")
        try check(try resigned(by: 0) { $0.signatureAlgorithmID = 0x0999 }, code: "V4_SIG_UNKNOWN_SIG_ALGORITHM")
        try check(try resigned(by: 0) { $0.certificate = [0x30, 0x03, 0x02, 0x01, 0x01] }, code: "V4_SIG_MALFORMED_CERTIFICATE")
        var mismatchedKey = try V4Signature(encoded: original)
        mismatchedKey.publicKey = try Self.shared.keys[1].key.certificates[0].publicKey().subjectPublicKeyInfoDER
        try check(mismatchedKey.encoded(), code: "V4_SIG_PUBLIC_KEY_MISMATCH_BETWEEN_CERTIFICATE_AND_SIGNATURES_RECORD")
    }

    @Test("verify --expect-certificate-sha256: the signer matches, another key does not, a lineage ancestor only when allowed")
    func expectedCertificates() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let lineage = dir.appendingPathComponent("lineage").path
        #expect(try TestSupport.apkpatch(["rotate", "--out", lineage, "--old-signer"] + Self.signer(0) + ["--new-signer"] + Self.signer(1)).succeeded)
        // apksigner 31 signs a rotation into v3.0 (rotation at API 28).
        let rotated = dir.appendingPathComponent("rotated.apk").path
        let sign = try TestSupport.run("apksigner", ["sign"] + Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage, "--out", rotated, input])
        #expect(sign.succeeded, "\(sign)")

        let old = Self.sha256(of: 0), new = Self.sha256(of: 1)
        let colons = stride(from: 0, to: new.count, by: 2).map { String(Array(new)[$0..<$0 + 2]) }.joined(separator: ":").uppercased()
        #expect(try TestSupport.apkpatch(["verify", "--signature-only", "--expect-certificate-sha256", new, rotated]).succeeded)
        #expect(try TestSupport.apkpatch(["verify", "--signature-only", "--expect-certificate-sha256", colons, rotated]).succeeded)
        let ancestor = try TestSupport.apkpatch(["verify", "--signature-only", "--expect-certificate-sha256", old, rotated])
        #expect(!ancestor.succeeded && ancestor.stderr.contains("--allow-lineage-ancestor"), "\(ancestor)")
        // The refusal names what does sign the APK, so a CI log says which key was used.
        #expect(ancestor.stderr.contains("; it is signed by ") && ancestor.stderr.contains("(SHA-256 \(new))"), "\(ancestor)")
        #expect(try TestSupport.apkpatch(["verify", "--signature-only", "--expect-certificate-sha256", old, "--allow-lineage-ancestor", rotated]).succeeded)
        let stranger = try TestSupport.apkpatch(["verify", "--signature-only", "--json", "--expect-certificate-sha256", Self.sha256(of: 2), "--allow-lineage-ancestor", rotated])
        #expect(!stranger.succeeded, "\(stranger)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(stranger.stdout.utf8)) as? [String: Any])
        #expect(object["expectedSignerMatched"] as? Bool == false)
        // The verdict a CI script reads is false; the signatures themselves verify.
        #expect(object["verified"] as? Bool == false && object["signatureVerified"] as? Bool == true, "\(stranger.stdout)")
        #expect((object["lineage"] as? [[String: Any]])?.compactMap { $0["sha256"] as? String } == [old, new])
        let matched = try TestSupport.apkpatch(["verify", "--signature-only", "--json", "--expect-certificate-sha256", new, rotated])
        let matchedObject = try #require(try JSONSerialization.jsonObject(with: Data(matched.stdout.utf8)) as? [String: Any])
        #expect(matched.succeeded && matchedObject["expectedSignerMatched"] as? Bool == true, "\(matched)")
        #expect(matchedObject["verified"] as? Bool == true && matchedObject["signatureVerified"] as? Bool == true)
        let bad = try TestSupport.apkpatch(["verify", "--signature-only", "--expect-certificate-sha256", "abc", rotated])
        #expect(!bad.succeeded && bad.stderr.contains("64 hex digits"), "\(bad)")

        // The lineage read back from the rotated APK, as apksigner reads it.
        let ours = try TestSupport.apkpatch(["lineage", "--in", rotated, "--print-certs"])
        let theirs = try TestSupport.run("apksigner", ["lineage", "--in", rotated, "--print-certs"])
        #expect(ours.succeeded && ours.stdout == theirs.stdout, "\(ours)\n\(theirs)")

        // --print-certs-pem: the certificate as `openssl x509` writes it.
        let pem = try TestSupport.apkpatch(["verify", "--signature-only", "--print-certs-pem", rotated])
        let expected = try TestSupport.run("openssl", ["x509", "-in", Self.shared.keys[1].certificatePEM]).stdout
        #expect(pem.succeeded && pem.stdout.hasSuffix(expected), "\(pem.stdout)\n---\n\(expected)")
    }

    @Test("sign --lineage --next-signer at rotation API 28: apksigner's v1, v2 and layout byte for byte, the new key in v3.0 from 28, in either signer order")
    func rotatedSigningMatchesApksigner() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let lineage = dir.appendingPathComponent("lineage").path
        #expect(try TestSupport.apkpatch(["rotate", "--out", lineage, "--old-signer"] + Self.signer(0) + ["--new-signer"] + Self.signer(1)).succeeded)
        let theirs = dir.appendingPathComponent("theirs.apk").path
        let apksigner = try TestSupport.run("apksigner", ["sign"] + Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage, "--out", theirs, input])
        #expect(apksigner.succeeded, "\(apksigner)")
        let theirBytes = try TestSupport.readBytes(theirs)
        let theirBlock = try #require(try SigningBlock.locate(in: MappedFile(path: theirs), centralDirectoryOffset: try ZipArchive.findEndOfCentralDirectory(in: MappedFile(path: theirs)).centralDirectoryOffset))
        let layout = ["--alignment-preserved", "true", "--misaligned-apk-permitted", "true", "--lib-page-alignment", "4096", "--rotation-min-sdk-version", "28", "--lineage", lineage]
        for (label, signers) in [("ours", Self.signer(0) + ["--next-signer"] + Self.signer(1)), ("reversed", Self.signer(1) + ["--next-signer"] + Self.signer(0))] {
            let ours = dir.appendingPathComponent("\(label).apk").path
            let sign = try TestSupport.apkpatch(["sign"] + signers + layout + ["--out", ours, input])
            #expect(sign.succeeded, "\(label): \(sign)")
            // apksigner 31 gave the rotated v3 signer the algorithms' minimum (24); apksig since the v3.1 work
            // (the ApkSignerTest goldens with setMinSdkVersionForRotation(P)) makes it an SDK-targeted signer
            // from 28. Everything else is apksigner 31's bytes.
            let ourBytes = try TestSupport.readBytes(ours)
            let end = try ZipArchive.findEndOfCentralDirectory(in: MappedFile(path: ours))
            let block = try #require(try SigningBlock.locate(in: MappedFile(path: ours), centralDirectoryOffset: end.centralDirectoryOffset))
            #expect(block.offset == theirBlock.offset && ourBytes[..<Int(block.offset)] == theirBytes[..<Int(theirBlock.offset)], "\(label): entries and JAR signature")
            #expect(block.value(for: SigningBlock.ID.v2) == theirBlock.value(for: SigningBlock.ID.v2), "\(label): v2 block")
            let theirEnd = try ZipArchive.findEndOfCentralDirectory(in: MappedFile(path: theirs))
            #expect(ourBytes[Int(end.centralDirectoryOffset)..<Int(end.offset)] == theirBytes[Int(theirEnd.centralDirectoryOffset)..<Int(theirEnd.offset)], "\(label): central directory")
            let v3 = try SignatureSchemeBlock(decoding: try #require(block.value(for: SigningBlock.ID.v3)), version: .v3).signers
            #expect(v3.count == 1 && v3[0].minSdkVersion == 28 && v3[0].signedData.minSdkVersion == 28 && v3[0].maxSdkVersion == Int32.max, "\(label)")
            #expect(v3.first?.signedData.certificates == [Self.shared.keys[1].key.certificates[0].derBytes], "\(label)")
            // The .idsig: signed by the new key over this APK.
            #expect(try TestSupport.apkpatch(["verify", "--signature-only", "--v4-signature-file", ours + ".idsig", ours]).succeeded, "\(label)")
        }
        let ours = dir.appendingPathComponent("ours.apk").path
        for level in ["28", "33"] {
            let verify = try TestSupport.run("apksigner", ["verify", "-v", "--print-certs", "--min-sdk-version", level, ours])
            #expect(verify.succeeded && verify.stdout.contains("Signer #1 certificate SHA-256 digest: \(Self.sha256(of: 1))"), "\(verify)")
        }
        #expect(try TestSupport.apkpatch(["verify", "--signature-only", "--expect-certificate-sha256", Self.sha256(of: 1), ours]).succeeded)
        #expect(try TestSupport.apkpatch(["lineage", "--in", ours, "--print-certs"]).stdout
                == (try TestSupport.run("apksigner", ["lineage", "--in", theirs, "--print-certs"]).stdout))

        // What is not allowed says so.
        let noLineage = try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--rotation-min-sdk-version", "28", "--out", ours, input])
        #expect(!noLineage.succeeded && noLineage.stderr.contains("--lineage"), "\(noLineage)")
        let stranger = try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--next-signer"] + Self.signer(2) + layout + ["--out", ours, input])
        #expect(!stranger.succeeded && stranger.stderr.contains("is not in the lineage: sign with the lineage's keys (apkpatch lineage --in FILE --print-certs lists them)"), "\(stranger)")
    }
}
