import APKCore
import Foundation
import Sign
import SignatureSchemes
import Testing
import TestSupport

/// `sign --stamp-signer` against apksigner 35, which adds source stamps (apksig `V2SourceStampSigner`): with the
/// timestamp off (`--stamp-timestamp-enabled false`, so that nothing depends on the clock) the same inputs and
/// options give the same APK and `.idsig` bytes; with it on, apksigner 35 and `apkpatch verify` find the stamp
/// verified, and it carries the time of signing. The keys and lineages are `NewerApksignerTests`' (RSA, so every
/// signature is deterministic).
@Suite(.removesTemporaryDirectories) struct SourceStampSigningTests {
    /// The cases: `K0`…`K2` stand for the keys' options, `S1`/`S2` for `--stamp-signer` and key 1's or 2's options,
    /// `L01` for the lineage key 0 → 1.
    static let cases: [NewerApksignerTests.Case] = [
        .init(label: "v1, v2 and v3 stamped", options: ["K0", "S2"], hasV31: false),
        .init(label: "unaligned input, stamp key rotated (--stamp-lineage)", options: ["K0", "S1", "--stamp-lineage", "L01"], aligned: false, hasV31: false),
        // targetSdkVersion 33 needs v2 from API 30 on: verified up to API 29.
        .init(label: "v1 only: the stamp is the signing block's one pair", options: ["K0", "S2", "--v2-signing-enabled", "false", "--v3-signing-enabled", "false",
                                                                                   "--v4-signing-enabled", "false"],
              hasV31: false, verifyOptions: ["--max-sdk-version", "29"]),
        .init(label: "v2 only", options: ["K0", "S2", "--v1-signing-enabled", "false", "--v3-signing-enabled", "false", "--min-sdk-version", "24"],
              hasV31: false, verifyOptions: ["--min-sdk-version", "24"]),
        .init(label: "a rotation at 33 (the stamp covers v3.0, not v3.1)", options: ["K0", "--next-signer", "K1", "--lineage", "L01", "S2"]),
        .init(label: "verity digests too, file size aligned", options: ["K0", "S2", "--verity-enabled", "true", "--align-file-size"], hasV31: false),
    ]

    static func arguments(_ options: [String], _ setup: NewerApksignerTests.Setup) -> [String] {
        options.flatMap { option -> [String] in
            switch option {
            case "S1": return ["--stamp-signer"] + setup.keys[1]
            case "S2": return ["--stamp-signer"] + setup.keys[2]
            default: return NewerApksignerTests.arguments([option], setup)
            }
        }
    }

    @Test("stamped without a timestamp: apksigner 35's APK and .idsig byte for byte, verified by apksigner 35 as by apkpatch",
          arguments: cases)
    func likeApksigner35(_ testCase: NewerApksignerTests.Case) throws {
        let setup = try NewerApksignerTests.setup(), dir = try TestSupport.makeTemporaryDirectory()
        let input = testCase.aligned ? setup.aligned : setup.unaligned
        let ours = dir.appendingPathComponent("ours.apk").path, theirs = dir.appendingPathComponent("theirs.apk").path
        let options = Self.arguments(testCase.options, setup) + ["--stamp-timestamp-enabled", "false"]
        let sign = try TestSupport.apkpatch(["sign"] + options + ["--out", ours, input])
        #expect(sign.succeeded, "\(sign)")
        try NewerApksigner.check(NewerApksigner.run(["sign"] + options + ["--out", theirs, input]))
        #expect(try TestSupport.readBytes(ours) == TestSupport.readBytes(theirs), "the APKs differ")
        let v4 = FileManager.default.fileExists(atPath: theirs + ".idsig")
        #expect(FileManager.default.fileExists(atPath: ours + ".idsig") == v4)
        if v4 { #expect(try TestSupport.readBytes(ours + ".idsig") == TestSupport.readBytes(theirs + ".idsig"), "the .idsig files differ") }

        let verifyArguments = ["verify", "-v", "--print-certs"] + testCase.verifyOptions + [ours]
        let apksigner = try NewerApksigner.run(verifyArguments)
        #expect(apksigner.succeeded && apksigner.stdout.contains("Verified for SourceStamp: true\n")
                && apksigner.stdout.contains("Source Stamp Signer certificate"), "\(apksigner)")
        let verify = try TestSupport.apkpatch(verifyArguments)
        #expect(verify.succeeded && NewerApksignerTests.withoutLineage(verify.stdout) == apksigner.stdout && verify.stderr == apksigner.stderr,
                "\(verify)\n---\n\(apksigner)")
    }

    @Test("with the timestamp (the default) and a stamp lineage: apksigner 35 verifies the stamp, which holds the time of signing, its attributes in apksig's order")
    func timestamped() throws {
        let setup = try NewerApksignerTests.setup(), dir = try TestSupport.makeTemporaryDirectory()
        let ours = dir.appendingPathComponent("ours.apk").path, theirs = dir.appendingPathComponent("theirs.apk").path
        let options = Self.arguments(["K0", "S1", "--stamp-lineage", "L01"], setup)
        let before = Int(Date().timeIntervalSince1970)
        let sign = try TestSupport.apkpatch(["sign"] + options + ["--out", ours, setup.aligned])
        let after = Int(Date().timeIntervalSince1970)
        #expect(sign.succeeded, "\(sign)")
        let apksigner = try NewerApksigner.run(["verify", "-v", "--print-certs", ours])
        #expect(apksigner.succeeded && apksigner.stdout.contains("Verified for SourceStamp: true\n") && apksigner.stderr.isEmpty, "\(apksigner)")
        let json = try TestSupport.apkpatch(["verify", "--json", ours])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        let stamp = try #require(object["sourceStamp"] as? [String: Any], "\(json.stdout)")
        let timestamp = try #require(stamp["timestamp"] as? Int, "\(stamp)")
        #expect(stamp["verified"] as? Bool == true && (before...after).contains(timestamp), "\(before)...\(after): \(stamp)")
        #expect((stamp["lineage"] as? [Any])?.count == 2, "\(stamp)")
        // The attributes in the order apksigner 35 writes them (the lineage first), the same lineage bytes.
        try NewerApksigner.check(NewerApksigner.run(["sign"] + options + ["--out", theirs, setup.aligned]))
        func attributes(_ path: String) throws -> [(id: UInt32, value: [UInt8])] {
            let value = try #require(try APKFacts(path).signingBlock?.value(for: SigningBlock.ID.sourceStamp), "\(path): no stamp")
            var rest = try #require(try SourceStampBlock(decoding: value).attributes?.encoded, "\(path): no attributes")[4...]
            var result: [(id: UInt32, value: [UInt8])] = []
            while rest.count >= 8 {
                let length = Int(rest.prefix(4).reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
                let pair = Array(rest.prefix(4 + length).dropFirst(4))
                result.append((UInt32(pair[0]) | UInt32(pair[1]) << 8 | UInt32(pair[2]) << 16 | UInt32(pair[3]) << 24, Array(pair.dropFirst(4))))
                rest = rest.dropFirst(4 + length)
            }
            return result
        }
        let mine = try attributes(ours), theirAttributes = try attributes(theirs)
        #expect(mine.map(\.id) == [SourceStamp.AttributeID.proofOfRotation, SourceStamp.AttributeID.timestamp]
                && mine.map(\.id) == theirAttributes.map(\.id) && mine.first?.value == theirAttributes.first?.value, "\(mine.map(\.id)) vs \(theirAttributes.map(\.id))")
    }

    @Test("an input already stamped: the same stamp key re-stamps it, another is refused (nothing written) unless --force-stamp-overwrite true, as apksigner 35")
    func existingStamp() throws {
        let setup = try NewerApksignerTests.setup(), dir = try TestSupport.makeTemporaryDirectory()
        let noTime = ["--stamp-timestamp-enabled", "false"]
        func apksigner35(_ options: [String], _ name: String) throws -> String {
            let path = dir.appendingPathComponent(name).path
            try NewerApksigner.check(NewerApksigner.run(["sign"] + Self.arguments(options, setup) + noTime + ["--out", path, setup.aligned]))
            return path
        }
        let stamped = try apksigner35(["K0", "S2"], "stamped.apk")
        // apksigner re-signing an APK copies the old stamp and JAR records on as bytes between records (apkpatch
        // writes only records its central directory names: see README), so the outputs differ there; the stamp is
        // judged by apksigner 35: verified, by the stamp key asked for.
        for (label, options, stampKey) in [("same stamp key", ["K0", "S2"], 2), ("another key, forced", ["K0", "S1", "--force-stamp-overwrite", "true"], 1)] {
            let ours = dir.appendingPathComponent("ours.apk").path
            let sign = try TestSupport.apkpatch(["sign"] + Self.arguments(options, setup) + noTime + ["--out", ours, stamped])
            #expect(sign.succeeded, "\(label): \(sign)")
            let expected = try TestSupport.run("openssl", ["x509", "-noout", "-fingerprint", "-sha256", "-in", setup.keys[stampKey][3]]).stdout
                .split(separator: "=").last.map { $0.replacingOccurrences(of: ":", with: "").lowercased().trimmingCharacters(in: .whitespacesAndNewlines) } ?? "?"
            let apksigner = try NewerApksigner.run(["verify", "-v", "--print-certs", ours])
            #expect(apksigner.succeeded && apksigner.stdout.contains("Verified for SourceStamp: true\n")
                    && apksigner.stdout.contains("Source Stamp Signer certificate SHA-256 digest: \(expected)\n"), "\(label): \(apksigner)")
            let verify = try TestSupport.apkpatch(["verify", "-v", "--print-certs", ours])
            #expect(verify.stdout == apksigner.stdout && verify.stderr == apksigner.stderr, "\(label): \(verify)")
        }
        let refused = dir.appendingPathComponent("refused.apk").path
        let other = try TestSupport.apkpatch(["sign"] + Self.arguments(["K0", "S1"], setup) + ["--out", refused, stamped])
        #expect(other.status != 0 && other.stderr.contains("stamp-cert-sha256") && other.stderr.contains("--force-stamp-overwrite true"), "\(other)")
        #expect(!FileManager.default.fileExists(atPath: refused) && !FileManager.default.fileExists(atPath: refused + ".idsig"))
        #expect(try NewerApksigner.run(["sign"] + Self.arguments(["K0", "S1"], setup) + ["--out", refused, stamped]).status != 0)
    }

    @Test("refusals: an EC stamp key, --stamp-signer without key options, --stamp-lineage alone, a stamp in run; no password is echoed")
    func refusals() throws {
        let setup = try NewerApksignerTests.setup(), dir = try TestSupport.makeTemporaryDirectory()
        let ec = try TestKeys.make(.ecP256, in: dir, name: "ecstamp")
        let out = dir.appendingPathComponent("out.apk").path
        let key0 = setup.keys[0]
        let ecStamp = try TestSupport.apkpatch(["sign"] + key0 + ["--stamp-signer", "--key", ec.keyPK8, "--cert", ec.certificatePEM, "--out", out, setup.aligned])
        #expect(ecStamp.status != 0 && ecStamp.stderr.contains("source stamp key is EC") && ecStamp.stderr.contains("RSA"), "\(ecStamp)")
        #expect(!FileManager.default.fileExists(atPath: out))
        let bare = try TestSupport.apkpatch(["sign"] + key0 + ["--stamp-signer", "--out", out, setup.aligned])
        #expect(bare.status != 0 && bare.stderr.contains("--stamp-signer needs the stamp key's options"), "\(bare)")
        let lineageAlone = try TestSupport.apkpatch(["sign"] + key0 + ["--stamp-lineage", setup.lineage01, "--out", out, setup.aligned])
        #expect(lineageAlone.status != 0 && lineageAlone.stderr.contains("--stamp-lineage goes with --stamp-signer"), "\(lineageAlone)")
        let run = try TestSupport.apkpatch(["run", setup.aligned, "--out", out] + key0 + ["--stamp-signer"] + setup.keys[2])
        #expect(run.status != 0 && run.stderr.contains("apkpatch sign --stamp-signer"), "\(run)")
        // A wrong stamp keystore password: the error says so, and never shows it.
        let keystore = dir.appendingPathComponent("stamp.p12").path
        try TestKeys.check(try TestSupport.run("openssl", ["pkcs12", "-export", "-inkey", ec.keyPK8.replacingOccurrences(of: ".pk8", with: ".key.pem"),
                                                          "-in", ec.certificatePEM, "-name", "stamp", "-passout", "pass:right-secret", "-out", keystore]))
        let secret = "wrong-secret-42"
        let wrong = try TestSupport.apkpatch(["sign"] + key0 + ["--stamp-signer", "--ks", keystore, "--ks-pass", "pass:\(secret)", "--out", out, setup.aligned])
        #expect(wrong.status != 0 && wrong.stderr.contains("password") && !wrong.stderr.contains(secret) && !wrong.stdout.contains(secret), "\(wrong)")
    }
}
