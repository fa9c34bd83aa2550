internal import COpenSSL
internal import CPasswordKDF

/// PKCS#12's own password-based encryption (RFC 7292 appendix C), whose key and IV come from the PKCS#12 KDF on
/// SHA-1, derived by CPasswordKDF from the UTF-8 password as PKCS12_PBE_keyivgen derives them (OpenSSL's
/// derivation when CPasswordKDF declines the request). The ciphers: 40- and 128-bit RC2-CBC and RC4, which OpenSSL
/// 3 moved to its legacy provider, a module the statically linked libcrypto does not load (CPasswordKDF's own), and
/// two- and three-key 3DES-CBC (OpenSSL's, from its default provider). `openssl pkcs12 -export -legacy`, OpenSSL
/// 1.x and Java 8's keytool (and keytool's `-J-Dkeystore.pkcs12.legacy`) encrypt a store's certificates with 40-bit
/// RC2 and its keys with 3DES; Java offers the others too.
struct PKCS12LegacyPBE {
    enum Cipher { case rc2CBC, rc4, tripleDESCBC }
    let cipher: Cipher
    let keyLength: Int
    let salt: [UInt8]
    let iterations: Int

    private static let schemes: [(oid: [UInt8], cipher: Cipher, keyLength: Int)] = [
        (DER.objectIdentifier("1.2.840.113549.1.12.1.1"), .rc4, 16),
        (DER.objectIdentifier("1.2.840.113549.1.12.1.2"), .rc4, 5),
        (DER.objectIdentifier("1.2.840.113549.1.12.1.3"), .tripleDESCBC, 24),
        (DER.objectIdentifier("1.2.840.113549.1.12.1.4"), .tripleDESCBC, 16),
        (DER.objectIdentifier("1.2.840.113549.1.12.1.5"), .rc2CBC, 16),
        (DER.objectIdentifier("1.2.840.113549.1.12.1.6"), .rc2CBC, 5),
    ]

    /// nil unless `der` is one of these schemes' AlgorithmIdentifier: SEQUENCE { OID, pkcs-12PbeParams
    /// SEQUENCE { salt OCTET STRING, iterations INTEGER } }.
    init?(algorithmIdentifierDER der: [UInt8]) {
        guard let (index, salt, iterations) = Self.saltAndIterations(der, schemes: Self.schemes.map(\.oid)) else { return nil }
        cipher = Self.schemes[index].cipher
        keyLength = Self.schemes[index].keyLength
        self.salt = salt
        self.iterations = iterations
    }

    /// Which of `schemes` (OIDs, DER) `der` names, with its salt and iteration count, when `der` is SEQUENCE { OID,
    /// SEQUENCE { salt OCTET STRING, iterations INTEGER } }: PKCS#12's pkcs-12PbeParams and PBES1's PBEParameter.
    static func saltAndIterations(_ der: [UInt8], schemes: [[UInt8]]) -> (index: Int, salt: [UInt8], iterations: Int)? {
        var reader = DERReader(der)
        guard let algorithm = try? reader.read(), reader.isAtEnd, algorithm.tag == DER.sequenceTag,
              let parts = try? algorithm.children(), parts.count == 2,
              let index = schemes.firstIndex(where: { parts[0].encoded.elementsEqual($0) }),
              parts[1].tag == DER.sequenceTag, let parameters = try? parts[1].children(), parameters.count == 2,
              parameters[0].tag == DER.octetStringTag,
              let iterations = PBES2Parameters.positiveInt32(parameters[1]) else { return nil }
        return (index, Array(parameters[0].contents), iterations)
    }

    init?(algorithm: UnsafePointer<X509_ALGOR>) {
        guard let der = try? encodeDER("i2d_X509_ALGOR", { i2d_X509_ALGOR(algorithm, $0) }) else { return nil }
        self.init(algorithmIdentifierDER: der)
    }

    /// The IV's length: none for RC4, a block for the CBC ciphers.
    private var ivLength: Int? { cipher == .rc4 ? nil : 8 }

    /// The plaintext of `ciphertext` with `password` (UTF-8, as OpenSSL takes it), PKCS#7 padding removed for the CBC
    /// ciphers; nil when the padding is wrong (a wrong password, mostly: RC4 has no padding, so callers also check
    /// what the plaintext parses as).
    func decrypt(_ ciphertext: UnsafeRawBufferPointer, password: [UInt8]) -> [UInt8]? {
        guard var derived = Self.keyAndIV(password: password, salt: salt, iterations: iterations, keyLength: keyLength,
                                          ivLength: ivLength) else { return nil }
        defer { for index in derived.indices { PasswordKDF.wipe(&derived[index]) } }
        return decrypt(ciphertext, keyAndIV: derived[...])
    }

    /// The derivations of the key (id 1) and, for the CBC ciphers, the IV (id 2) from `password` (UTF-8), for
    /// PasswordKDF to run beside a store's other derivations; nil when OpenSSL makes no BMPString of the password.
    func requests(password: [UInt8]) -> [PasswordKDF.Request]? {
        guard var bmp = PasswordKDF.bmpString(utf8: password) else { return nil }
        defer { PasswordKDF.wipe(&bmp) }
        return Self.requests(bmp: bmp, salt: salt, iterations: iterations, keyLength: keyLength, ivLength: ivLength)
    }

    private static func requests(bmp: [UInt8], salt: [UInt8], iterations: Int, keyLength: Int, ivLength: Int?) -> [PasswordKDF.Request] {
        var requests = [PasswordKDF.Request(kind: .pkcs12SHA1(id: 1), password: bmp, salt: salt, iterations: iterations, length: keyLength)]
        if let ivLength {
            requests.append(PasswordKDF.Request(kind: .pkcs12SHA1(id: 2), password: bmp, salt: salt, iterations: iterations, length: ivLength))
        }
        return requests
    }

    /// `ciphertext` decrypted with the derived key and IV (`requests`' results, in order); nil as for `decrypt`.
    func decrypt(_ ciphertext: UnsafeRawBufferPointer, keyAndIV derived: ArraySlice<[UInt8]>) -> [UInt8]? {
        guard let key = derived.first, key.count == keyLength else { return nil }
        let iv = derived.dropFirst().first
        switch cipher {
        case .rc4:
            return LegacyCiphers.rc4(key: key, ciphertext)
        case .rc2CBC:
            guard let iv else { return nil }
            return LegacyCiphers.rc2CBCDecryptUnpadding(key: key, effectiveBits: keyLength * 8, iv: iv, ciphertext)
        case .tripleDESCBC:
            guard let iv else { return nil }
            return cbcDecrypt(keyLength == 24 ? EVP_des_ede3_cbc() : EVP_des_ede_cbc(), ciphertext, key: key, iv: iv)
        }
    }

    /// The key (id 1) and, with `ivLength`, the IV (id 2) of a PKCS#12 PBE scheme on SHA-1, derived side by side by
    /// CPasswordKDF from `password` (UTF-8, made the BMPString OpenSSL makes of it); OpenSSL's derivation when
    /// CPasswordKDF declines the request.
    static func keyAndIV(password: [UInt8], salt: [UInt8], iterations: Int, keyLength: Int, ivLength: Int?) -> [[UInt8]]? {
        if var bmp = PasswordKDF.bmpString(utf8: password) {
            defer { PasswordKDF.wipe(&bmp) }
            let requests = Self.requests(bmp: bmp, salt: salt, iterations: iterations, keyLength: keyLength, ivLength: ivLength)
            if let derived = PasswordKDF.derive(requests) { return derived }
        }
        guard let key = PasswordKDF.derivePKCS12WithOpenSSL(utf8Password: password, salt: salt, id: 1, iterations: iterations,
                                                           length: keyLength, digest: FetchedDigests.sha1) else { return nil }
        guard let ivLength else { return [key] }
        guard let iv = PasswordKDF.derivePKCS12WithOpenSSL(utf8Password: password, salt: salt, id: 2, iterations: iterations,
                                                           length: ivLength, digest: FetchedDigests.sha1) else { return nil }
        return [key, iv]
    }

    /// The safe's bags, decrypted with `password`; nil when they do not decrypt or parse.
    static func unpackEncryptedSafe(_ safe: UnsafeMutablePointer<COpenSSL.PKCS7>, scheme: PKCS12LegacyPBE, password: [UInt8]) -> OpaquePointer? {
        guard let content = apkpatch_PKCS7_encrypted_content(UnsafePointer(safe)) else { return nil }
        let ciphertext = UnsafeRawBufferPointer(start: ASN1_STRING_get0_data(content), count: Int(ASN1_STRING_length(content)))
        guard var plaintext = scheme.decrypt(ciphertext, password: password) else { return nil }
        defer { PasswordKDF.wipe(&plaintext) }
        defer { ERR_clear_error() }
        return plaintext.withUnsafeBufferPointer { apkpatch_d2i_PKCS12_SAFEBAGS($0.baseAddress, $0.count) }
    }

    /// The scheme of an encrypted safe, if it is one of these.
    init?(encryptedSafe safe: UnsafeMutablePointer<COpenSSL.PKCS7>) {
        guard let algorithm = apkpatch_PKCS7_encrypted_algorithm(UnsafePointer(safe)) else { return nil }
        self.init(algorithm: algorithm)
    }

    /// The scheme of a shrouded key bag, if it is one of these.
    init?(shroudedKeyBag bag: OpaquePointer) {
        guard let encrypted = PKCS12_SAFEBAG_get0_pkcs8(bag) else { return nil }
        var algorithm: UnsafePointer<X509_ALGOR>?
        X509_SIG_get0(encrypted, &algorithm, nil)
        guard let algorithm else { return nil }
        self.init(algorithm: algorithm)
    }

    /// The shrouded key bag's key decrypted with `password`; nil when it does not decrypt or decode.
    func decryptKey(_ bag: OpaquePointer, password: [UInt8]) -> PrivateKey? {
        guard let encrypted = PKCS12_SAFEBAG_get0_pkcs8(bag) else { return nil }
        var content: UnsafePointer<ASN1_OCTET_STRING>?
        X509_SIG_get0(encrypted, nil, &content)
        guard let content else { return nil }
        let ciphertext = UnsafeRawBufferPointer(start: ASN1_STRING_get0_data(content), count: Int(ASN1_STRING_length(content)))
        guard var plaintext = decrypt(ciphertext, password: password) else { return nil }
        defer { PasswordKDF.wipe(&plaintext) }
        return PKCS12Decryption.privateKey(pkcs8: plaintext)
    }
}

/// CPasswordKDF's RC2 and RC4 (legacy_ciphers.h), for PKCS12LegacyPBE and the tests that hold them to OpenSSL's
/// legacy provider and RFC 2268.
package enum LegacyCiphers {
    /// RC2-CBC decryption, no padding removed; nil when the arguments are out of range (a key of 1 to 128 bytes,
    /// 1 to 1024 effective bits, whole 8-byte blocks, an 8-byte IV).
    package static func rc2CBCDecrypt(key: [UInt8], effectiveBits: Int, iv: [UInt8], _ ciphertext: UnsafeRawBufferPointer) -> [UInt8]? {
        guard iv.count == 8, !ciphertext.isEmpty, (1...1024).contains(effectiveBits),
              let input = ciphertext.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
        guard apk_rc2_cbc_decrypt(key, key.count, UInt32(effectiveBits), iv, input, &plaintext, ciphertext.count) == 0 else { return nil }
        return plaintext
    }

    package static func rc2CBCDecrypt(key: [UInt8], effectiveBits: Int, iv: [UInt8], _ ciphertext: [UInt8]) -> [UInt8]? {
        ciphertext.withUnsafeBytes { rc2CBCDecrypt(key: key, effectiveBits: effectiveBits, iv: iv, $0) }
    }

    /// `rc2CBCDecrypt` with the PKCS#7 padding checked and removed; nil when it is wrong (mostly a wrong key).
    static func rc2CBCDecryptUnpadding(key: [UInt8], effectiveBits: Int, iv: [UInt8], _ ciphertext: UnsafeRawBufferPointer) -> [UInt8]? {
        guard var plaintext = rc2CBCDecrypt(key: key, effectiveBits: effectiveBits, iv: iv, ciphertext) else { return nil }
        defer { PasswordKDF.wipe(&plaintext) }
        guard let padding = plaintext.last, (1...8).contains(padding),
              plaintext.suffix(Int(padding)).allSatisfy({ $0 == padding }) else { return nil }
        return Array(plaintext.dropLast(Int(padding)))
    }

    /// RC4 (its own inverse); nil for a key outside 1 to 256 bytes.
    package static func rc4(key: [UInt8], _ input: UnsafeRawBufferPointer) -> [UInt8]? {
        guard !input.isEmpty, let base = input.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return input.isEmpty ? [] : nil }
        var output = [UInt8](repeating: 0, count: input.count)
        guard apk_rc4(key, key.count, base, &output, input.count) == 0 else { return nil }
        return output
    }

    package static func rc4(key: [UInt8], _ input: [UInt8]) -> [UInt8]? {
        input.withUnsafeBytes { rc4(key: key, $0) }
    }
}
