import OpenSSLWrapper

/// Which PKCS #7 digest/signature algorithm pairs Android verifies in JAR signatures, per API level, and how
/// to verify them. The table is apksig's `V1SchemeVerifier.SUPPORTED_SIG_ALG_OIDS`, entry for entry: a JAR
/// signature verifies on an API range only if its pair is supported on every level of the range.
enum JARSignatureAlgorithms {
    static let digestMD5 = "1.2.840.113549.2.5"
    static let digestSHA1 = "1.3.14.3.2.26"
    static let digestSHA224 = "2.16.840.1.101.3.4.2.4"
    static let digestSHA256 = "2.16.840.1.101.3.4.2.1"
    static let digestSHA384 = "2.16.840.1.101.3.4.2.2"
    static let digestSHA512 = "2.16.840.1.101.3.4.2.3"

    static let rsa = "1.2.840.113549.1.1.1"
    static let md5WithRSA = "1.2.840.113549.1.1.4"
    static let sha1WithRSA = "1.2.840.113549.1.1.5"
    static let sha224WithRSA = "1.2.840.113549.1.1.14"
    static let sha256WithRSA = "1.2.840.113549.1.1.11"
    static let sha384WithRSA = "1.2.840.113549.1.1.12"
    static let sha512WithRSA = "1.2.840.113549.1.1.13"

    static let dsa = "1.2.840.10040.4.1"
    static let sha1WithDSA = "1.2.840.10040.4.3"
    static let sha224WithDSA = "2.16.840.1.101.3.4.3.1"
    static let sha256WithDSA = "2.16.840.1.101.3.4.3.2"
    static let sha384WithDSA = "2.16.840.1.101.3.4.3.3"
    static let sha512WithDSA = "2.16.840.1.101.3.4.3.4"

    static let ecPublicKey = "1.2.840.10045.2.1"
    static let sha1WithECDSA = "1.2.840.10045.4.1"
    static let sha224WithECDSA = "1.2.840.10045.4.3.1"
    static let sha256WithECDSA = "1.2.840.10045.4.3.2"
    static let sha384WithECDSA = "1.2.840.10045.4.3.3"
    static let sha512WithECDSA = "1.2.840.10045.4.3.4"

    static let maxLevel = Int(Int32.max)

    static let digests: [String: VerificationDigest] = [
        digestMD5: .md5, digestSHA1: .sha1, digestSHA224: .sha224, digestSHA256: .sha256, digestSHA384: .sha384, digestSHA512: .sha512,
    ]

    static let friendlyNames: [String: String] = [
        digestMD5: "MD5", digestSHA1: "SHA-1", digestSHA224: "SHA-224", digestSHA256: "SHA-256", digestSHA384: "SHA-384", digestSHA512: "SHA-512",
        rsa: "RSA", md5WithRSA: "MD5 with RSA", sha1WithRSA: "SHA-1 with RSA", sha224WithRSA: "SHA-224 with RSA",
        sha256WithRSA: "SHA-256 with RSA", sha384WithRSA: "SHA-384 with RSA", sha512WithRSA: "SHA-512 with RSA",
        dsa: "DSA", sha1WithDSA: "SHA-1 with DSA", sha224WithDSA: "SHA-224 with DSA", sha256WithDSA: "SHA-256 with DSA",
        sha384WithDSA: "SHA-384 with DSA", sha512WithDSA: "SHA-512 with DSA",
        ecPublicKey: "ECDSA", sha1WithECDSA: "SHA-1 with ECDSA", sha224WithECDSA: "SHA-224 with ECDSA",
        sha256WithECDSA: "SHA-256 with ECDSA", sha384WithECDSA: "SHA-384 with ECDSA", sha512WithECDSA: "SHA-512 with ECDSA",
    ]

    /// Signature OIDs that name their digest (apksig `OID_TO_JCA_SIGNATURE_ALG`).
    private static let signatureAlgorithms: [String: VerificationSignatureAlgorithm] = [
        md5WithRSA: .init(keyType: .rsa, digest: .md5), sha1WithRSA: .init(keyType: .rsa, digest: .sha1),
        sha224WithRSA: .init(keyType: .rsa, digest: .sha224), sha256WithRSA: .init(keyType: .rsa, digest: .sha256),
        sha384WithRSA: .init(keyType: .rsa, digest: .sha384), sha512WithRSA: .init(keyType: .rsa, digest: .sha512),
        sha1WithDSA: .init(keyType: .dsa, digest: .sha1), sha224WithDSA: .init(keyType: .dsa, digest: .sha224),
        sha256WithDSA: .init(keyType: .dsa, digest: .sha256),
        sha1WithECDSA: .init(keyType: .ec, digest: .sha1), sha224WithECDSA: .init(keyType: .ec, digest: .sha224),
        sha256WithECDSA: .init(keyType: .ec, digest: .sha256), sha384WithECDSA: .init(keyType: .ec, digest: .sha384),
        sha512WithECDSA: .init(keyType: .ec, digest: .sha512),
    ]

    private static let table: [String: [ClosedRange<Int>]] = {
        var t: [String: [ClosedRange<Int>]] = [:]
        func add(_ d: String, _ s: String, _ ranges: ClosedRange<Int>...) { t[d + "with" + s] = ranges }
        let all = 0...maxLevel
        func from(_ level: Int) -> ClosedRange<Int> { level...maxLevel }
        // RSA
        add(digestMD5, rsa, all); add(digestMD5, md5WithRSA, 0...8, from(21))
        for s in [sha1WithRSA, sha224WithRSA, sha256WithRSA, sha384WithRSA, sha512WithRSA] { add(digestMD5, s, 21...23) }
        add(digestSHA1, rsa, all); add(digestSHA1, md5WithRSA, 21...23); add(digestSHA1, sha1WithRSA, all)
        for s in [sha224WithRSA, sha256WithRSA, sha384WithRSA, sha512WithRSA] { add(digestSHA1, s, 21...23) }
        add(digestSHA224, rsa, 0...8, from(21)); add(digestSHA224, md5WithRSA, 21...23); add(digestSHA224, sha1WithRSA, 21...23)
        add(digestSHA224, sha224WithRSA, 0...8, from(21)); add(digestSHA224, sha256WithRSA, 21...21)
        add(digestSHA224, sha384WithRSA, 21...23); add(digestSHA224, sha512WithRSA, 21...23)
        add(digestSHA256, rsa, 0...8, from(18)); add(digestSHA256, md5WithRSA, 21...23); add(digestSHA256, sha1WithRSA, 21...21)
        add(digestSHA256, sha224WithRSA, 21...23); add(digestSHA256, sha256WithRSA, 0...8, from(18))
        add(digestSHA256, sha384WithRSA, 21...23); add(digestSHA256, sha512WithRSA, 21...23)
        add(digestSHA384, rsa, from(18))
        for s in [md5WithRSA, sha1WithRSA, sha224WithRSA, sha256WithRSA, sha512WithRSA] { add(digestSHA384, s, 21...23) }
        add(digestSHA384, sha384WithRSA, from(21))
        add(digestSHA512, rsa, from(18))
        for s in [md5WithRSA, sha1WithRSA, sha224WithRSA, sha256WithRSA] { add(digestSHA512, s, 21...23) }
        add(digestSHA512, sha384WithRSA, 21...21); add(digestSHA512, sha512WithRSA, from(21))
        // DSA
        for s in [sha1WithDSA, sha224WithDSA, sha256WithDSA] { add(digestMD5, s, 21...23) }
        add(digestSHA1, dsa, all); add(digestSHA1, sha1WithDSA, from(9)); add(digestSHA1, sha224WithDSA, 21...23); add(digestSHA1, sha256WithDSA, 21...23)
        add(digestSHA224, dsa, from(22)); add(digestSHA224, sha1WithDSA, 21...23); add(digestSHA224, sha224WithDSA, from(21)); add(digestSHA224, sha256WithDSA, 21...23)
        add(digestSHA256, dsa, from(22)); add(digestSHA256, sha1WithDSA, 21...23); add(digestSHA256, sha224WithDSA, 21...23); add(digestSHA256, sha256WithDSA, from(21))
        for d in [digestSHA384, digestSHA512] { for s in [sha1WithDSA, sha224WithDSA, sha256WithDSA] { add(d, s, 21...23) } }
        // EC
        add(digestSHA1, ecPublicKey, from(18)); add(digestSHA224, ecPublicKey, from(21)); add(digestSHA256, ecPublicKey, from(18))
        add(digestSHA384, ecPublicKey, from(18)); add(digestSHA512, ecPublicKey, from(18))
        let ecdsa = [sha1WithECDSA, sha224WithECDSA, sha256WithECDSA, sha384WithECDSA, sha512WithECDSA]
        for s in ecdsa { add(digestMD5, s, 21...23) }
        for (d, own) in [(digestSHA1, sha1WithECDSA), (digestSHA224, sha224WithECDSA), (digestSHA256, sha256WithECDSA),
                         (digestSHA384, sha384WithECDSA), (digestSHA512, sha512WithECDSA)] {
            for s in ecdsa { add(d, s, s == own ? (d == digestSHA1 ? from(18) : from(21)) : 21...23) }
        }
        return t
    }()

    static func supportedLevels(digestOID: String, signatureOID: String) -> [ClosedRange<Int>] {
        table[digestOID + "with" + signatureOID] ?? []
    }

    /// The parts of `desired` not covered by `supported` (apksig `InclusiveIntRange.getValuesNotIn`).
    static func levels(_ desired: ClosedRange<Int>, notIn supported: [ClosedRange<Int>]) -> [ClosedRange<Int>] {
        var missing: [ClosedRange<Int>] = []
        var start = desired.lowerBound
        for range in supported.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if start > desired.upperBound { break }
            if range.upperBound < start { continue }
            if range.lowerBound > start { missing.append(start...min(desired.upperBound, range.lowerBound - 1)) }
            if range.upperBound >= desired.upperBound { start = desired.upperBound + 1; break }
            start = max(start, range.upperBound + 1)
        }
        if start <= desired.upperBound { missing.append(start...desired.upperBound) }
        return missing
    }

    /// The JDK's DSA and ECDSA signature decoding (`DerInputStream(..., allowBER: false)`, `getSequence(2)`):
    /// SEQUENCE { INTEGER, INTEGER } in DER only: definite lengths in their shortest form, no INTEGER with a
    /// redundant leading zero byte, nothing after. Anything else throws "Invalid encoding for signature"
    /// (OpenSSL only reports such a signature as not verifying).
    static func isStrictDERPairOfIntegers(_ s: [UInt8]) -> Bool {
        var i = 0
        func length() -> Int? {
            guard i < s.count else { return nil }
            let first = s[i]
            i += 1
            if first < 0x80 { return Int(first) }
            let count = Int(first & 0x7f)
            guard count >= 1, count <= 4, i + count <= s.count, s[i] != 0 else { return nil }
            var value = 0
            for _ in 0..<count { value = value << 8 | Int(s[i]); i += 1 }
            return value >= 0x80 ? value : nil
        }
        guard s.first == 0x30 else { return false }
        i = 1
        guard let total = length(), i + total == s.count else { return false }
        for _ in 0..<2 {
            guard i < s.count, s[i] == 0x02 else { return false }
            i += 1
            guard let count = length(), count >= 1, i + count <= s.count else { return false }
            if count >= 2 && s[i] == 0 && s[i + 1] < 0x80 { return false }
            i += count
        }
        return i == s.count
    }

    /// The JCA-equivalent signature algorithm (apksig `getJcaSignatureAlgorithm`): the signature OID alone
    /// when it names a digest, else the digest OID with the key type of the bare key OID.
    static func verificationAlgorithm(digestOID: String, signatureOID: String) throws -> VerificationSignatureAlgorithm {
        if let algorithm = signatureAlgorithms[signatureOID] { return algorithm }
        let keyType: VerificationSignatureAlgorithm.KeyType
        switch signatureOID {
        case rsa: keyType = .rsa
        case dsa: keyType = .dsa
        case ecPublicKey: keyType = .ec
        default:
            throw V1SchemeVerifier.SignerInfoFailure.verify("Unsupported JCA Signature algorithm . Digest algorithm: \(digestOID), signature algorithm: \(signatureOID)")
        }
        guard let digest = digests[digestOID] else {
            throw V1SchemeVerifier.SignerInfoFailure.verify("Unsupported digest algorithm: \(digestOID)")
        }
        return VerificationSignatureAlgorithm(keyType: keyType, digest: digest)
    }

    /// Rejects signatures Java's `Signature.verify` would throw on rather than return false for: an RSA
    /// signature whose length is not the modulus's (OpenSSL accepts a shorter one, with its leading zero
    /// bytes dropped; the JDK throws "Bad signature length"), an ECDSA/DSA signature that is not a DER
    /// SEQUENCE of two INTEGERs.
    /// The difference matters: a throw ends verification of the whole signature block, a false only skips
    /// to the next SignerInfo.
    static func checkSignatureEncoding(_ signature: [UInt8], algorithm: VerificationSignatureAlgorithm, certificate: VerificationCertificate) throws {
        switch algorithm.keyType {
        case .rsa:
            let modulusBytes = (certificate.keyBitSize + 7) / 8
            if signature.count != modulusBytes {
                throw V1SchemeVerifier.SignerInfoFailure.verify("Bad signature length: got \(signature.count) but was expecting \(modulusBytes)")
            }
        case .ec, .dsa:
            guard isStrictDERPairOfIntegers(signature) else {
                throw V1SchemeVerifier.SignerInfoFailure.verify("Could not verify signature: invalid encoding for signature")
            }
        }
    }
}
