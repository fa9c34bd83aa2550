internal import COpenSSL

/// PKCS#8 EncryptedPrivateKeyInfo under the schemes whose ciphers OpenSSL 3 keeps in its legacy provider (a module
/// the statically linked libcrypto does not load), which Java's EncryptedPrivateKeyInfo and apksigner's `--key`
/// read: PKCS#12's RC2 and RC4 PBE (PKCS12LegacyPBE) and PBES1 (RFC 8018 6.1, `openssl pkcs8 -topk8 -v1
/// PBE-MD5-DES` and the like: PBEWithMD5AndDES, PBEWithSHA1AndDES, PBEWithMD5AndRC2, PBEWithSHA1AndRC2), and PBES2
/// with DES-CBC or RC2-CBC (PBES2LegacyCipher).
enum LegacyEncryptedPrivateKey {
    enum Outcome {
        /// Not one of these schemes: OpenSSL's answer stands.
        case notLegacy
        /// One of these schemes, and the password does not open it.
        case wrongPassword
        /// A scheme this build does not read (UnreadableEncryption's name for it).
        case unreadable(String)
        case key(PrivateKey)
    }

    /// `der` (an EncryptedPrivateKeyInfo) decrypted with `password`, if its scheme is one of these.
    static func decrypt(_ der: [UInt8], password: [UInt8]) -> Outcome {
        // EncryptedPrivateKeyInfo ::= SEQUENCE { encryptionAlgorithm AlgorithmIdentifier, encryptedData OCTET STRING }
        var reader = DERReader(der)
        guard let info = try? reader.read(), info.tag == DER.sequenceTag, let fields = try? info.children(), fields.count == 2,
              fields[0].tag == DER.sequenceTag, fields[1].tag == DER.octetStringTag else { return .notLegacy }
        let algorithm = Array(fields[0].encoded)
        var plaintext: [UInt8]?
        let ciphertext = Array(fields[1].contents)
        // 3DES is OpenSSL's (its default provider): this is reached only when OpenSSL failed, and its error stands.
        if let scheme = PKCS12LegacyPBE(algorithmIdentifierDER: algorithm), scheme.cipher != .tripleDESCBC {
            plaintext = ciphertext.withUnsafeBytes { scheme.decrypt($0, password: password) }
        } else if let scheme = PBES1Parameters(algorithmIdentifierDER: algorithm) {
            plaintext = scheme.decrypt(ciphertext, password: password)
        } else if let scheme = PBES2LegacyCipher(algorithmIdentifierDER: algorithm) {
            plaintext = scheme.decrypt(ciphertext, password: password)
        } else if let name = UnreadableEncryption.name(algorithmIdentifierDER: algorithm) {
            return .unreadable(name)
        } else {
            return .notLegacy
        }
        guard var plaintext else { return .wrongPassword }
        defer { PasswordKDF.wipe(&plaintext) }
        return PKCS12Decryption.privateKey(pkcs8: plaintext).map { .key($0) } ?? .wrongPassword
    }

    /// The DER of a PEM `ENCRYPTED PRIVATE KEY`; nil for any other PEM.
    static func der(fromPEM text: String) -> [UInt8]? {
        guard text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") else { return nil }
        defer { ERR_clear_error() }
        return try? withReadOnlyMemoryBIO(wrapping: Array(text.utf8)) { bio -> [UInt8]? in
            guard let signature = PEM_read_bio_PKCS8(bio, nil, nil, nil) else { return nil }
            defer { X509_SIG_free(signature) }
            return try? encodeDER("i2d_X509_SIG") { i2d_X509_SIG(signature, $0) }
        } ?? nil
    }
}

/// PBES1 (RFC 8018 6.1): PBKDF1 over MD5 or SHA-1 (the first 8 bytes of the iterated digest are the key, the next 8
/// the IV) with DES-CBC or RC2-CBC (64 effective bits). DES-CBC runs as OpenSSL's 3DES with the one key three
/// times (E(K, D(K, E(K, x))) is E(K, x)): single DES is in the legacy provider, 3DES in the default one.
struct PBES1Parameters {
    enum Cipher { case des, rc2 }
    let digest: OpaquePointer
    let cipher: Cipher
    let salt: [UInt8]
    let iterations: Int

    private static let schemes: [(oid: [UInt8], sha1: Bool, cipher: Cipher)] = [
        (DER.objectIdentifier("1.2.840.113549.1.5.3"), false, .des),
        (DER.objectIdentifier("1.2.840.113549.1.5.6"), false, .rc2),
        (DER.objectIdentifier("1.2.840.113549.1.5.10"), true, .des),
        (DER.objectIdentifier("1.2.840.113549.1.5.11"), true, .rc2),
    ]

    /// nil unless `der` is SEQUENCE { one of these OIDs, PBEParameter SEQUENCE { salt OCTET STRING (8), iterationCount } }.
    init?(algorithmIdentifierDER der: [UInt8]) {
        guard let (index, salt, iterations) = PKCS12LegacyPBE.saltAndIterations(der, schemes: Self.schemes.map(\.oid)),
              salt.count == 8 else { return nil }
        digest = Self.schemes[index].sha1 ? FetchedDigests.sha1 : FetchedDigests.md5
        cipher = Self.schemes[index].cipher
        self.salt = salt
        self.iterations = iterations
    }

    /// The plaintext, PKCS#7 padding removed; nil when the padding is wrong.
    func decrypt(_ ciphertext: [UInt8], password: [UInt8]) -> [UInt8]? {
        guard !ciphertext.isEmpty, ciphertext.count % 8 == 0, let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context); ERR_clear_error() }
        var derived = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        defer { PasswordKDF.wipe(&derived) }
        var length: UInt32 = 0
        guard EVP_DigestInit_ex2(context, digest, nil) == 1, EVP_DigestUpdate(context, password, password.count) == 1,
              EVP_DigestUpdate(context, salt, salt.count) == 1, EVP_DigestFinal_ex(context, &derived, &length) == 1,
              length >= 16 else { return nil }
        for _ in 1..<iterations {
            guard EVP_DigestInit_ex2(context, digest, nil) == 1, EVP_DigestUpdate(context, derived, Int(length)) == 1,
                  EVP_DigestFinal_ex(context, &derived, &length) == 1 else { return nil }
        }
        var key = Array(derived[0..<8]), iv = Array(derived[8..<16])
        defer { PasswordKDF.wipe(&key); PasswordKDF.wipe(&iv) }
        switch cipher {
        case .des:
            var tripled = key + key + key
            defer { PasswordKDF.wipe(&tripled) }
            return ciphertext.withUnsafeBytes { cbcDecrypt(EVP_des_ede3_cbc(), $0, key: tripled, iv: iv) }
        case .rc2:
            return ciphertext.withUnsafeBytes { LegacyCiphers.rc2CBCDecryptUnpadding(key: key, effectiveBits: 64, iv: iv, $0) }
        }
    }
}
