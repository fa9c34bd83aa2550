import APKCore
import Foundation
import SignatureSchemes
import TestSupport
import Testing
@testable import Verify

/// Source stamps (apksig `SourceStampVerifier`), judged by apksigner 35: a fixture signed by apksigner 35 with
/// `--stamp-signer` (v1, v2 and v3 stamped), then its stamp pair changed in the ways a stamp goes wrong. The
/// stamp pair lies outside what the APK's signatures cover, so every variant still verifies; only the stamp's
/// verdict and findings change. `verify` must print exactly what apksigner 35 prints (standard output, standard
/// error, exit status), with and without `-Werr`. apksig 35.0.2's own stamped APKs are compared in the real-world
/// corpus tests (RealWorldCorpusTests).
@Suite("Verify: source stamps, as apksigner 35 verifies them", .removesTemporaryDirectories)
struct SourceStampTests {
    /// How a variant changes the stamp pair, and what apksigner says about the result.
    enum Variant: String, CaseIterable, CustomStringConvertible {
        /// As apksigner 35 wrote it: "Verified for SourceStamp: true" and the "Source Stamp Signer" lines.
        case intact
        /// The last byte of the attributes' signature flipped: SOURCE_STAMP_DID_NOT_VERIFY.
        case attributeSignatureFlipped
        /// A signature by an algorithm apksig does not know beside each real one: INFO lines, still verified.
        case unknownSignatureAlgorithm
        /// The block ends after the certificate: SOURCE_STAMP_MALFORMED_SIGNATURE.
        case truncatedAfterCertificate
        /// Another key's certificate in the block: SOURCE_STAMP_CERTIFICATE_MISMATCH_BETWEEN_SIGNATURE_BLOCK_AND_APK.
        case otherCertificate
        /// The pair's ID changed, so no stamp pair remains: the APK's own warning "No SourceStamp signature".
        case pairMissing
        /// Attributes re-signed with the stamp key: a zero timestamp (SOURCE_STAMP_INVALID_TIMESTAMP) after an
        /// unknown attribute (SOURCE_STAMP_UNKNOWN_ATTRIBUTE, an info).
        case zeroTimestampAndUnknownAttribute
        /// No signatures over the v3 digests: SOURCE_STAMP_NO_SIGNATURE.
        case v3Unstamped

        var description: String { rawValue }

        /// The code our report must carry (none for the intact stamp).
        var code: Verify.Issue.Code? {
            switch self {
            case .intact, .unknownSignatureAlgorithm: return nil
            case .attributeSignatureFlipped: return .sourceStampDidNotVerify
            case .truncatedAfterCertificate: return .sourceStampMalformedSignature
            case .otherCertificate: return .sourceStampCertificateMismatch
            case .pairMissing: return .sourceStampSigMissing
            case .zeroTimestampAndUnknownAttribute: return .sourceStampInvalidTimestamp
            case .v3Unstamped: return .sourceStampNoSignature
            }
        }
    }

    /// The stamped fixture: signed by rsa2048, stamped by rsa4096 (so its signatures are RSA PKCS#1 v1.5 SHA-512).
    struct Stamped {
        let directory: URL
        let apk: String
        let bytes: [UInt8]
        let block: SigningBlock
        let stamp: SourceStampBlock
    }

    static let stamped: Result<Stamped, Error> = TestSupport.sharedByTests { Result {
        let directory = try TestSupport.makeTemporaryDirectory("source-stamp")
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory)
        let aligned = try VerifyFixtures.zipalign(unsigned, output: directory.appendingPathComponent("aligned.apk").path)
        let apk = directory.appendingPathComponent("stamped.apk").path
        let signed = try NewerApksigner.run(["sign", "--ks", try TestKey.rsa2048.keystore, "--ks-pass", "pass:\(TestKeys.password)",
                                             "--v4-signing-enabled", "false",
                                             "--stamp-signer", "--ks", try TestKey.rsa4096.keystore, "--ks-pass", "pass:\(TestKeys.password)",
                                             "--out", apk, aligned])
        guard signed.succeeded else { throw FixtureError(message: "apksigner 35 sign --stamp-signer failed:\n\(signed)") }
        let bytes = try VerifyFixtures.read(apk)
        let block = try VerifyFixtures.signingBlock(of: bytes)
        guard let value = block.value(for: SigningBlock.ID.sourceStamp) else { throw FixtureError(message: "apksigner 35 wrote no stamp pair") }
        return Stamped(directory: directory, apk: apk, bytes: bytes, block: block, stamp: try SourceStampBlock(decoding: value))
    } }

    @Test("verify -v --print-certs (and -Werr) prints what apksigner 35 prints", arguments: Variant.allCases)
    func likeApksigner(_ variant: Variant) throws {
        let stamped = try Self.stamped.get()
        let apk = try Self.write(variant, of: stamped)
        for options in [["-v", "--print-certs"], ["-v", "-Werr"]] {
            let arguments = ["verify"] + options + [apk]
            let ours = try TestSupport.apkpatch(arguments), theirs = try NewerApksigner.run(arguments)
            #expect(ours.status == theirs.status && ours.stdout == theirs.stdout && ours.stderr == theirs.stderr,
                    "\(variant) \(options)\nours: \(ours)\napksigner 35: \(theirs)")
        }
        let report = try VerifyFixtures.verify(apk)
        #expect(report.isSignatureVerified, "\(variant): \(report.signatureErrors)")
        let codes = (report.sourceStamp?.warnings ?? []) + report.signatureWarnings
        if let code = variant.code {
            #expect(codes.contains { $0.code == code } && report.sourceStamp?.isVerified != true, "\(variant): \(codes)")
        } else {
            #expect(report.sourceStamp?.isVerified == true && codes.isEmpty, "\(variant): \(codes)")
        }
    }

    @Test("--json has the stamp: verified, its certificate, the timestamp apksigner 35 wrote, and the findings with their codes")
    func json() throws {
        let stamped = try Self.stamped.get()
        // The stamp certificate's digest as apksigner 35 prints it.
        let printed = try NewerApksigner.run(["verify", "--print-certs", stamped.apk]).stdout.split(separator: "\n")
            .first { $0.hasPrefix("Source Stamp Signer certificate SHA-256 digest: ") }?.split(separator: " ").last.map(String.init)
        let stampSHA256 = try #require(printed, "apksigner 35 printed no Source Stamp Signer")
        for variant in [Variant.intact, .zeroTimestampAndUnknownAttribute] {
            let result = try TestSupport.apkpatch(["verify", "--json", try Self.write(variant, of: stamped, as: "json-\(variant)")])
            let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            let stamp = try #require(object?["sourceStamp"] as? [String: Any], "\(variant): \(result)")
            #expect((stamp["certificate"] as? [String: Any])?["sha256"] as? String == stampSHA256, "\(variant): \(stamp)")
            if variant == .intact {
                #expect(stamp["verified"] as? Bool == true && (stamp["warnings"] as? [Any])?.isEmpty == true, "\(stamp)")
                // apksigner 35 stamps the time it signed: within the last day.
                let timestamp = try #require(stamp["timestamp"] as? Int, "\(stamp)")
                #expect(abs(Double(timestamp) - Date().timeIntervalSince1970) < 86_400, "\(stamp)")
            } else {
                let warnings = (stamp["warnings"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
                let infos = (stamp["infos"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
                #expect(stamp["verified"] as? Bool == false && warnings == ["SOURCE_STAMP_INVALID_TIMESTAMP"]
                        && infos == ["SOURCE_STAMP_UNKNOWN_ATTRIBUTE"] && stamp["timestamp"] == nil, "\(stamp)")
            }
        }
        // No stamp-cert-sha256 entry: no stamp object at all.
        let unstamped = try VerifyFixtures.signedAPK(in: try TestSupport.makeTemporaryDirectory("source-stamp-none"))
        let plain = try JSONSerialization.jsonObject(with: Data(try TestSupport.apkpatch(["verify", "--json", unstamped]).stdout.utf8)) as? [String: Any]
        #expect(plain?["sourceStamp"] == nil, "\(plain ?? [:])")
    }

    @Test("verify --verify-source-stamp (the stamp alone) prints what apksigner 35 prints", arguments: Variant.allCases)
    func stampAloneLikeApksigner(_ variant: Variant) throws {
        let stamped = try Self.stamped.get()
        let apk = try Self.write(variant, of: stamped, as: "alone-\(variant)")
        let arguments = ["verify", "--verify-source-stamp", "-v", "--print-certs", apk]
        let ours = try TestSupport.apkpatch(arguments), theirs = try NewerApksigner.run(arguments)
        #expect(ours.status == theirs.status && ours.stdout == theirs.stdout && ours.stderr == theirs.stderr,
                "\(variant)\nours: \(ours)\napksigner 35: \(theirs)")
        // The stamp's verdict is the command's: the intact stamp (and one with unknown extra signatures) verifies.
        #expect(ours.succeeded == (variant == .intact || variant == .unknownSignatureAlgorithm), "\(variant): \(ours)")
    }

    @Test("verify --verify-source-stamp: no stamp, the stamp certificate's digest expected or not, a stamp block without its entry, as apksigner 35")
    func stampAloneFindings() throws {
        let stamped = try Self.stamped.get()
        let directory = try TestSupport.makeTemporaryDirectory("source-stamp-alone")
        let unstamped = try VerifyFixtures.signedAPK(in: directory)
        let withoutEntry = directory.appendingPathComponent("without-entry.apk").path
        let name = Array(SourceStamp.certificateDigestEntryName.utf8), renamed = Array("stamp-cert-sha25X".utf8)
        var bytes = stamped.bytes
        for start in 0..<(bytes.count - name.count) where Array(bytes[start..<(start + name.count)]) == name {
            bytes.replaceSubrange(start..<(start + name.count), with: renamed)
        }
        try VerifyFixtures.write(bytes, to: withoutEntry)
        let digest = try #require(try NewerApksigner.run(["verify", "--print-certs", stamped.apk]).stdout.split(separator: "\n")
            .first { $0.hasPrefix("Source Stamp Signer certificate SHA-256 digest: ") }?.split(separator: " ").last.map(String.init))
        let cases: [(label: String, options: [String], apk: String, code: String?)] = [
            ("no stamp", ["-v"], unstamped, "SOURCE_STAMP_CERT_DIGEST_AND_SIG_BLOCK_MISSING"),
            ("the expected digest", ["-v", "--stamp-cert-digest", digest.uppercased()], stamped.apk, nil),
            ("another digest", ["-v", "--stamp-cert-digest", String(digest.reversed())], stamped.apk, "SOURCE_STAMP_EXPECTED_DIGEST_MISMATCH"),
            ("a stamp block without its entry", ["-v", "-Werr"], withoutEntry, "SOURCE_STAMP_SIGNATURE_BLOCK_WITHOUT_CERT_DIGEST"),
        ]
        for item in cases {
            let arguments = ["verify", "--verify-source-stamp"] + item.options + [item.apk]
            let ours = try TestSupport.apkpatch(arguments), theirs = try NewerApksigner.run(arguments)
            #expect(ours.status == theirs.status && ours.stdout == theirs.stdout && ours.stderr == theirs.stderr,
                    "\(item.label)\nours: \(ours)\napksigner 35: \(theirs)")
            let json = try TestSupport.apkpatch(["verify", "--verify-source-stamp", "--json"] + item.options.filter { $0 != "-v" && $0 != "-Werr" } + [item.apk])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(item.label): \(json)")
            let codes = (object["errors"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
            #expect(object["sourceStampOnly"] as? Bool == true && object["verified"] as? Bool == (item.code == nil)
                    && codes == (item.code.map { [$0] } ?? []) && json.succeeded == (item.code == nil), "\(item.label): \(json.stdout)")
        }
        let refused = try TestSupport.apkpatch(["verify", "--stamp-cert-digest", digest, stamped.apk])
        #expect(refused.status != 0 && refused.stderr.contains("--stamp-cert-digest goes with --verify-source-stamp"), "\(refused)")
    }

    /// Hostile stamp blocks never trap and never change the APK's verdict: the stamp pair of the apksigner 35 fixture with
    /// bytes flipped, cut short or with a length prefix set to 0xffffffff, 300 cases from a fixed seed (printed on failure).
    @Test("a damaged stamp block is at worst a stamp warning: no trap, the APK still verifies")
    func damagedStampBlocks() throws {
        let stamped = try Self.stamped.get()
        let value = stamped.stamp.encoded()
        let seed: UInt64 = 20_261_127
        var generator = SplitMix64(seed: seed)
        for round in 0..<300 {
            var damaged = value
            switch round % 3 {
            case 0:
                for _ in 0..<Int.random(in: 1...4, using: &generator) { damaged[Int.random(in: 0..<damaged.count, using: &generator)] ^= UInt8.random(in: 1...255, using: &generator) }
            case 1:
                damaged = Array(damaged.prefix(Int.random(in: 0..<damaged.count, using: &generator)))
            default:
                let at = Int.random(in: 0..<(damaged.count - 4), using: &generator)
                damaged.replaceSubrange(at..<(at + 4), with: [0xff, 0xff, 0xff, 0xff])
            }
            var block = stamped.block
            block.pairs = block.pairs.filter { $0.id != SigningBlock.ID.verityPadding }.map { pair in
                pair.id == SigningBlock.ID.sourceStamp ? SigningBlock.Pair(id: pair.id, value: damaged) : pair
            }
            let bytes = try VerifyFixtures.replacingSigningBlock(in: stamped.bytes, with: block.encoded())
            let report = try Verifier(options: VerificationOptions(checksInstallability: false)).verify(source: ByteArrayDataSource(bytes), label: "damaged")
            #expect(report.isSignatureVerified && report.signatureErrors.isEmpty && report.sourceStamp != nil,
                    "seed \(seed) round \(round): \(report.signatureErrors) \(String(describing: report.sourceStamp))")
        }
    }

    // MARK: - Making the variants

    /// Written as `name` (the variant's own name by default), with the files made on the way in a folder of that
    /// name: tests run side by side, and a file rewritten in place while apksigner, keytool or openssl reads it
    /// is a crash or a wrong signature, not a finding.
    static func write(_ variant: Variant, of stamped: Stamped, as name: String? = nil) throws -> String {
        let name = name ?? "\(variant)"
        let scratch = stamped.directory.appendingPathComponent("work-\(name)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        var stamp = stamped.stamp
        var pairID = SigningBlock.ID.sourceStamp
        var value: [UInt8]
        switch variant {
        case .intact:
            value = stamp.encoded()
        case .attributeSignatureFlipped:
            value = stamp.encoded()
            value[value.count - 1] ^= 0x01
        case .unknownSignatureAlgorithm:
            for index in stamp.schemeSignatures.indices {
                stamp.schemeSignatures[index].signatures.insert(AlgorithmTaggedValue(algorithmID: 0x0999, value: [1, 2, 3]), at: 0)
            }
            value = stamp.encoded()
        case .truncatedAfterCertificate:
            value = LengthPrefixed.encode(LengthPrefixed.encode(stamp.certificate))
        case .otherCertificate:
            stamp.certificate = try certificateDER(of: .ecP256, in: scratch)
            value = stamp.encoded()
        case .pairMissing:
            pairID = SigningBlock.ID.sourceStamp ^ 0x100
            value = stamp.encoded()
        case .zeroTimestampAndUnknownAttribute:
            let encoded = SourceStampBlock.SignedAttributes.encode([(0x1234_5678, [7, 7]), (SourceStamp.AttributeID.timestamp, [UInt8](repeating: 0, count: 8))])
            let signature = try rsaSHA512Signature(of: encoded, key: .rsa4096, in: scratch)
            stamp.attributes = SourceStampBlock.SignedAttributes(encoded: encoded, signatures: [AlgorithmTaggedValue(algorithm: .rsaPKCS1v15WithSHA512, value: signature)])
            value = stamp.encoded()
        case .v3Unstamped:
            stamp.schemeSignatures.removeAll { $0.scheme == SourceStamp.Scheme.v3 }
            value = stamp.encoded()
        }
        var block = stamped.block
        block.pairs = block.pairs.filter { $0.id != SigningBlock.ID.verityPadding }.map { pair in
            pair.id == SigningBlock.ID.sourceStamp ? SigningBlock.Pair(id: pairID, value: value) : pair
        }
        let path = stamped.directory.appendingPathComponent("\(name).apk").path
        try VerifyFixtures.write(try VerifyFixtures.replacingSigningBlock(in: stamped.bytes, with: block.encoded()), to: path)
        return path
    }

    /// The DER certificate of `key` (keytool -exportcert).
    static func certificateDER(of key: TestKey, in directory: URL) throws -> [UInt8] {
        let path = directory.appendingPathComponent("\(key).der").path
        let result = try TestSupport.run("keytool", ["-exportcert", "-keystore", try key.keystore, "-storepass", TestKeys.password,
                                                     "-alias", "signer", "-file", path])
        guard result.succeeded else { throw FixtureError(message: "keytool -exportcert failed:\n\(result)") }
        return try VerifyFixtures.read(path)
    }

    /// An RSA PKCS#1 v1.5 SHA-512 signature of `data` by `key`, made by the openssl command line (apksig signs
    /// with SHA-512 for RSA keys over 3072 bits).
    static func rsaSHA512Signature(of data: [UInt8], key: TestKey, in directory: URL) throws -> [UInt8] {
        let keyPath = directory.appendingPathComponent("\(key)-key.pem").path
        let dataPath = directory.appendingPathComponent("attributes.bin").path, signaturePath = directory.appendingPathComponent("attributes.sig").path
        let exported = try TestSupport.run("openssl", ["pkcs12", "-in", try key.keystore, "-nocerts", "-nodes", "-passin", "pass:\(TestKeys.password)", "-out", keyPath])
        guard exported.succeeded else { throw FixtureError(message: "openssl pkcs12 failed:\n\(exported)") }
        try VerifyFixtures.write(data, to: dataPath)
        let signed = try TestSupport.run("openssl", ["dgst", "-sha512", "-sign", keyPath, "-out", signaturePath, dataPath])
        guard signed.succeeded else { throw FixtureError(message: "openssl dgst -sign failed:\n\(signed)") }
        return try VerifyFixtures.read(signaturePath)
    }
}
