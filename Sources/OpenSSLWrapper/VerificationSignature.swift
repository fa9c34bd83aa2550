internal import COpenSSL

/// Digests the APK verifier meets in JAR signatures and signature algorithms, wider than the signer's
/// `DigestAlgorithm`: old JAR signatures use MD5, SHA-224 and SHA-384 too.
package enum VerificationDigest: String, Sendable, Hashable, CaseIterable {
    case md5 = "MD5", sha1 = "SHA-1", sha224 = "SHA-224", sha256 = "SHA-256", sha384 = "SHA-384", sha512 = "SHA-512"

    /// The legacy method, as signature verification (EVP_DigestVerifyInit, RSA-PSS MGF1) has always been given.
    var legacyEVP: OpaquePointer {
        switch self {
        case .md5: return EVP_md5()
        case .sha1: return EVP_sha1()
        case .sha224: return EVP_sha224()
        case .sha256: return EVP_sha256()
        case .sha384: return EVP_sha384()
        case .sha512: return EVP_sha512()
        }
    }

    /// The provider's implementation, fetched once per process: with a legacy `EVP_sha256()` OpenSSL 3 fetches
    /// it again on every init, and a JAR signature check makes a digest per entry and per manifest section.
    var evp: OpaquePointer {
        switch self {
        case .md5: return FetchedDigests.md5
        case .sha1: return FetchedDigests.sha1
        case .sha224: return FetchedDigests.sha224
        case .sha256: return FetchedDigests.sha256
        case .sha384: return FetchedDigests.sha384
        case .sha512: return FetchedDigests.sha512
        }
    }

    /// The digest of `bytes`.
    package func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        EVP_Digest(bytes.baseAddress, bytes.count, &output, &length, evp, nil)
        return Array(output[0..<Int(length)])
    }

    package func hash(_ bytes: [UInt8]) -> [UInt8] { bytes.withUnsafeBytes { hash($0) } }
    package func hash(_ bytes: ArraySlice<UInt8>) -> [UInt8] { bytes.withUnsafeBytes { hash($0) } }

    /// A streaming digest context.
    package func makeHasher() -> VerificationHasher { VerificationHasher(self) }
}

/// A streaming digest for the verifier (single owner).
package final class VerificationHasher {
    private let context: OpaquePointer
    init(_ digest: VerificationDigest) {
        context = EVP_MD_CTX_new()!
        EVP_DigestInit_ex(context, digest.evp, nil)
    }
    deinit { EVP_MD_CTX_free(context) }
    package func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
    }
    package func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }
    package func finish() -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &output, &length)
        return Array(output[0..<Int(length)])
    }
}

/// A signature algorithm as the verifier must check it: key type, padding and digest.
package struct VerificationSignatureAlgorithm: Sendable, Hashable, CustomStringConvertible {
    package enum KeyType: String, Sendable { case rsa = "RSA", ec = "EC", dsa = "DSA" }
    package enum Padding: Sendable, Hashable { case pkcs1, pss(saltLength: Int) }
    package var keyType: KeyType
    package var digest: VerificationDigest
    package var padding: Padding = .pkcs1
    package init(keyType: KeyType, digest: VerificationDigest, padding: Padding = .pkcs1) {
        self.keyType = keyType; self.digest = digest; self.padding = padding
    }
    package var description: String {
        let d = String(digest.rawValue.filter { $0 != "-" })
        switch (keyType, padding) {
        case (.rsa, .pss): return "\(d)withRSA/PSS"
        case (.ec, _): return "\(d)withECDSA"
        default: return "\(d)with\(keyType.rawValue)"
        }
    }
}

/// A public key parsed from SubjectPublicKeyInfo DER, for APK Signature Scheme v2/v3 signer records.
package final class VerificationPublicKey: @unchecked Sendable {
    private let key: OpaquePointer
    package let subjectPublicKeyInfoDER: [UInt8]

    /// Parses `der`; throws when it is not a SubjectPublicKeyInfo of `expectedType` (Java's
    /// `KeyFactory.getInstance(type).generatePublic` fails the same way).
    package init(subjectPublicKeyInfoDER der: [UInt8], expectedType: VerificationSignatureAlgorithm.KeyType) throws {
        guard !der.isEmpty else { throw OpenSSLError(function: "d2i_PUBKEY", reasons: ["empty public key"]) }
        let parsed: OpaquePointer = try der.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            let key = try openSSLPointer("d2i_PUBKEY") { d2i_PUBKEY(nil, &pointer, buffer.count) }
            if pointer.map({ $0 - buffer.baseAddress! }) != buffer.count {
                EVP_PKEY_free(key)
                throw OpenSSLError(function: "d2i_PUBKEY", reasons: ["trailing bytes after the public key"])
            }
            return key
        }
        let name = VerificationCertificate.keyAlgorithmName(of: parsed)
        guard name == expectedType.rawValue else {
            EVP_PKEY_free(parsed)
            throw OpenSSLError(function: "d2i_PUBKEY", reasons: ["expected a \(expectedType.rawValue) key, found \(name)"])
        }
        key = parsed
        subjectPublicKeyInfoDER = der
    }

    deinit { EVP_PKEY_free(key) }

    /// RSA modulus bits, EC group order bits, DSA prime bits.
    package var bitSize: Int { Int(EVP_PKEY_get_bits(key)) }

    package func verify(signature: [UInt8], data: [UInt8], algorithm: VerificationSignatureAlgorithm) throws -> Bool {
        try SignatureVerification.verify(key: key, signature: signature, data: data, algorithm: algorithm)
    }
}

enum SignatureVerification {
    /// Verifies with EVP_DigestVerify. Returns false for a signature that does not verify (including one that
    /// is not even well-formed DER for ECDSA/DSA, which Java also reports as "did not verify" or an
    /// exception); throws when the key does not suit the algorithm.
    static func verify(key: OpaquePointer, signature: [UInt8], data: [UInt8], algorithm: VerificationSignatureAlgorithm) throws -> Bool {
        let actual = VerificationCertificate.keyAlgorithmName(of: key)
        guard actual == algorithm.keyType.rawValue else {
            throw OpenSSLError(function: "EVP_DigestVerifyInit", reasons: ["\(algorithm) needs a \(algorithm.keyType.rawValue) key, the key is \(actual)"])
        }
        ERR_clear_error()
        guard let context = EVP_MD_CTX_new() else { throw OpenSSLError.drain("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context); ERR_clear_error() }
        var pkeyContext: OpaquePointer?
        try openSSLCheck("EVP_DigestVerifyInit") { EVP_DigestVerifyInit(context, &pkeyContext, algorithm.digest.legacyEVP, nil, key) }
        if case .pss(let saltLength) = algorithm.padding, let pkeyContext {
            try openSSLCheck("EVP_PKEY_CTX_set_rsa_padding") { EVP_PKEY_CTX_set_rsa_padding(pkeyContext, RSA_PKCS1_PSS_PADDING) > 0 ? 1 : 0 }
            try openSSLCheck("EVP_PKEY_CTX_set_rsa_mgf1_md") { EVP_PKEY_CTX_set_rsa_mgf1_md(pkeyContext, algorithm.digest.legacyEVP) > 0 ? 1 : 0 }
            try openSSLCheck("EVP_PKEY_CTX_set_rsa_pss_saltlen") { EVP_PKEY_CTX_set_rsa_pss_saltlen(pkeyContext, Int32(saltLength)) > 0 ? 1 : 0 }
        }
        let rc = signature.withUnsafeBufferPointer { sig in
            data.withUnsafeBufferPointer { message in
                EVP_DigestVerify(context, sig.baseAddress, sig.count, message.baseAddress, message.count)
            }
        }
        return rc == 1
    }
}
