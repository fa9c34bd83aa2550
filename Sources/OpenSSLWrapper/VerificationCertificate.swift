internal import COpenSSL

/// An X.509 certificate as the APK verifier needs it: the exact DER it was parsed from, the names and serial
/// used to match a PKCS #7 SignerInfo, key usage and critical-extension checks Android performs, and the
/// facts `apksigner verify --print-certs` prints.
///
/// `derBytes` are never re-encoded (apksig's `GuaranteedEncodedFormX509Certificate` exists because
/// re-encoded certificates changed an app's signing identity).
package final class VerificationCertificate: @unchecked Sendable {
    package let derBytes: [UInt8]
    private let x509: OpaquePointer

    package init(derEncoded: [UInt8]) throws {
        guard !derEncoded.isEmpty else { throw OpenSSLError(function: "d2i_X509", reasons: ["empty certificate"]) }
        let parsed: OpaquePointer = try derEncoded.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            let length = buffer.count
            return try openSSLPointer("d2i_X509") { d2i_X509(nil, &pointer, length) }
        }
        // Trailing bytes after the certificate: Java's CertificateFactory rejects them too.
        var check: UnsafePointer<UInt8>?
        let consumed = derEncoded.withUnsafeBufferPointer { buffer -> Int in
            check = buffer.baseAddress
            let length = buffer.count
            let again = d2i_X509(nil, &check, length)
            defer { X509_free(again) }
            return check.map { $0 - buffer.baseAddress! } ?? 0
        }
        guard consumed == derEncoded.count else {
            X509_free(parsed)
            throw OpenSSLError(function: "d2i_X509", reasons: ["\(derEncoded.count - consumed) trailing bytes after the certificate"])
        }
        self.derBytes = derEncoded
        self.x509 = parsed
    }

    deinit { X509_free(x509) }

    /// The SubjectPublicKeyInfo DER of the certificate's key.
    package var subjectPublicKeyInfoDER: [UInt8] {
        guard let pubkey = X509_get_X509_PUBKEY(x509) else { return [] }
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509_PUBKEY(pubkey, &out)
        guard length > 0, let out else { return [] }
        defer { apkpatch_OPENSSL_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// "RSA", "EC", "DSA", or the OpenSSL name of another key type.
    package var keyAlgorithm: String {
        guard let key = X509_get0_pubkey(x509) else { return "unknown" }
        return Self.keyAlgorithmName(of: key)
    }

    static func keyAlgorithmName(of key: OpaquePointer) -> String {
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA, EVP_PKEY_RSA_PSS: return "RSA"
        case EVP_PKEY_EC: return "EC"
        case EVP_PKEY_DSA: return "DSA"
        default:
            if let name = EVP_PKEY_get0_type_name(key) { return String(cString: name) }
            return "unknown"
        }
    }

    /// The curve of an EC key as OpenSSL names it ("prime256v1", "secp384r1", ...); "" when it has no name
    /// (explicit parameters); nil for other key types.
    package var ecCurveName: String? {
        guard let key = X509_get0_pubkey(x509), EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else { return nil }
        var buffer = [CChar](repeating: 0, count: 80)
        var length = 0
        guard EVP_PKEY_get_group_name(key, &buffer, buffer.count, &length) == 1 else { ERR_clear_error(); return "" }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// RSA modulus bits; EC group order bits; DSA prime bits (as apksigner's key size).
    package var keyBitSize: Int {
        guard let key = X509_get0_pubkey(x509) else { return 0 }
        return Int(EVP_PKEY_get_bits(key))
    }

    /// The subject as Java's `X500Principal.toString()` / apksigner prints it: most significant RDN last,
    /// ", " between RDNs, e.g. "CN=Android Debug, O=Android, C=US".
    package var subjectDN: String { DistinguishedName.javaString(X509_get_subject_name(x509)) }
    package var issuerDN: String { DistinguishedName.javaString(X509_get_issuer_name(x509)) }

    /// The serial number's INTEGER contents.
    package var serialNumberBytes: [UInt8] {
        guard let serial = X509_get0_serialNumber(x509) else { return [] }
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_ASN1_INTEGER(UnsafeMutablePointer(mutating: serial), &out)
        guard length > 0, let out else { return [] }
        defer { apkpatch_OPENSSL_free(out) }
        let der = Array(UnsafeBufferPointer(start: out, count: Int(length)))
        guard let element = try? BERElement.parseSingle(der[...]) else { return [] }
        return Array(element.contents)
    }

    /// True when `issuerNameDER` (an encoded Name) names this certificate's issuer, compared as
    /// `X500Principal.equals` does (canonical form: case and whitespace insensitive).
    package func issuerMatches(nameDER: [UInt8]) -> Bool {
        nameDER.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let name = d2i_X509_NAME(nil, &pointer, buffer.count) else { ERR_clear_error(); return false }
            defer { X509_NAME_free(name) }
            return X509_NAME_cmp(name, X509_get_issuer_name(x509)) == 0
        }
    }

    /// True when the two INTEGER encodings denote the same number (leading sign octets ignored).
    package static func sameInteger(_ a: [UInt8], _ b: [UInt8]) -> Bool { normalize(a) == normalize(b) }

    private static func normalize(_ value: [UInt8]) -> [UInt8] {
        var v = value[...]
        while v.count > 1 {
            let first = v[v.startIndex], second = v[v.startIndex + 1]
            if (first == 0x00 && second & 0x80 == 0) || (first == 0xff && second & 0x80 != 0) { v = v.dropFirst() } else { break }
        }
        return Array(v)
    }

    /// True when the certificate has a critical extension the JDK's X.509 implementation has no class for
    /// (Java's `hasUnsupportedCriticalExtension`, which apksig asks: sun.security.x509.OIDMap). OpenSSL's own
    /// list (EXFLAG_CRITICAL) differs: it refused a critical subjectKeyIdentifier, which apksig and apksigner
    /// accept.
    package var hasUnsupportedCriticalExtension: Bool {
        var buffer = [CChar](repeating: 0, count: 128)
        for index in 0..<X509_get_ext_count(x509) {
            guard let extensionPointer = X509_get_ext(x509, index), X509_EXTENSION_get_critical(extensionPointer) != 0 else { continue }
            let length = OBJ_obj2txt(&buffer, Int32(buffer.count), X509_EXTENSION_get_object(extensionPointer), 1)
            guard length > 0, Int(length) < buffer.count else { return true }
            let oid = String(decoding: buffer[..<Int(length)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if !Self.extensionsJavaSupports.contains(oid) { return true }
        }
        return false
    }

    /// The certificate and CRL extensions of JDK 17's sun.security.x509.OIDMap.
    static let extensionsJavaSupports: Set<String> = [
        "2.5.29.14", "2.5.29.15", "2.5.29.16", "2.5.29.17", "2.5.29.18", "2.5.29.19", "2.5.29.20", "2.5.29.21", "2.5.29.24",
        "2.5.29.27", "2.5.29.28", "2.5.29.29", "2.5.29.30", "2.5.29.31", "2.5.29.32", "2.5.29.33", "2.5.29.35", "2.5.29.36",
        "2.5.29.37", "2.5.29.46", "2.5.29.54", "2.16.840.1.113730.1.1", "1.3.6.1.5.5.7.1.1", "1.3.6.1.5.5.7.1.11",
        "1.3.6.1.5.5.7.48.1.5",
    ]

    /// False when a keyUsage extension is present without digitalSignature and nonRepudiation: Android then
    /// refuses the certificate for JAR signatures.
    package var isAllowedForDigitalSignatures: Bool {
        let usage = X509_get_key_usage(x509)
        if usage == UInt32.max { return true }  // no keyUsage extension
        return usage & UInt32(KU_DIGITAL_SIGNATURE | KU_NON_REPUDIATION) != 0
    }

    /// Verifies `signature` over `data` with this certificate's public key.
    package func verify(signature: [UInt8], data: [UInt8], algorithm: VerificationSignatureAlgorithm) throws -> Bool {
        guard let key = X509_get0_pubkey(x509) else {
            throw OpenSSLError(function: "X509_get0_pubkey", reasons: ["certificate has no usable public key"])
        }
        return try SignatureVerification.verify(key: key, signature: signature, data: data, algorithm: algorithm)
    }
}

extension VerificationCertificate: Equatable {
    /// Certificates are equal when their encodings are (what Android compares).
    package static func == (lhs: VerificationCertificate, rhs: VerificationCertificate) -> Bool { lhs.derBytes == rhs.derBytes }
}
