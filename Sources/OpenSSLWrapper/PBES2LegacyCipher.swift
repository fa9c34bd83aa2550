internal import COpenSSL

/// PBES2 (RFC 8018 6.2) with the two ciphers of OpenSSL 3's legacy provider (a module the statically linked
/// libcrypto does not load) that this build has anyway: DES-CBC (as 3DES with the one key three times) and
/// RC2-CBC (CPasswordKDF's). `openssl pkcs8 -topk8 -v2 des-cbc` or `-v2 rc2-cbc` (with `-provider legacy`) write
/// them. PBKDF2 with any HMAC-SHA-1/-2 PRF, by OpenSSL.
struct PBES2LegacyCipher {
    enum Cipher { case des, rc2(effectiveBits: Int) }
    let cipher: Cipher
    let salt: [UInt8]
    let iterations: Int
    let keyLength: Int
    let prf: OpaquePointer
    let iv: [UInt8]

    static let desCBCOID = DER.objectIdentifier("1.3.14.3.2.7")
    static let rc2CBCOID = DER.objectIdentifier("1.2.840.113549.3.2")

    /// nil unless `der` is PBES2 with PBKDF2 (explicit salt) and DES-CBC or RC2-CBC.
    init?(algorithmIdentifierDER der: [UInt8]) {
        guard let (kdf, scheme) = PKCS5.pbes2Parts(der), kdf[0].tag == DER.octetStringTag,
              let iterations = PBES2Parameters.positiveInt32(kdf[1]), scheme.count == 2 else { return nil }
        var keyLength: Int?
        var prf: OpaquePointer = FetchedDigests.sha1
        for field in kdf.dropFirst(2) {
            if field.tag == DER.integerTag, keyLength == nil {
                guard let length = PBES2Parameters.positiveInt32(field) else { return nil }
                keyLength = length
            } else {
                guard let digest = HMACAlgorithm.digest(field) else { return nil }
                prf = digest.digest
            }
        }
        if scheme[0].encoded.elementsEqual(Self.desCBCOID) {
            guard scheme[1].tag == DER.octetStringTag, scheme[1].contents.count == 8, keyLength == nil || keyLength == 8 else { return nil }
            cipher = .des
            iv = Array(scheme[1].contents)
            self.keyLength = 8
        } else if scheme[0].encoded.elementsEqual(Self.rc2CBCOID) {
            // RC2-CBC-Parameter ::= SEQUENCE { rc2ParameterVersion INTEGER OPTIONAL, iv OCTET STRING (8) }; the
            // version encodes the effective key bits (RFC 8018 B.2.3), 32 when absent.
            guard scheme[1].tag == DER.sequenceTag, let parameters = try? scheme[1].children(), (1...2).contains(parameters.count),
                  let ivField = parameters.last, ivField.tag == DER.octetStringTag, ivField.contents.count == 8 else { return nil }
            var effectiveBits = 32
            if parameters.count == 2 {
                guard let version = PBES2Parameters.positiveInt32(parameters[0]) else { return nil }
                switch version {
                case 160: effectiveBits = 40
                case 120: effectiveBits = 64
                case 58: effectiveBits = 128
                case 256...: effectiveBits = version
                default: return nil
                }
            }
            guard (1...128).contains(keyLength ?? 16), effectiveBits <= 1024 else { return nil }
            cipher = .rc2(effectiveBits: effectiveBits)
            iv = Array(ivField.contents)
            self.keyLength = keyLength ?? 16
        } else {
            return nil
        }
        salt = Array(kdf[0].contents)
        self.iterations = iterations
        self.prf = prf
    }

    /// The plaintext, PKCS#7 padding removed; nil when the padding is wrong (a wrong password).
    func decrypt(_ ciphertext: [UInt8], password: [UInt8]) -> [UInt8]? {
        guard !ciphertext.isEmpty, ciphertext.count % 8 == 0 else { return nil }
        var key = [UInt8](repeating: 0, count: keyLength)
        defer { PasswordKDF.wipe(&key) }
        let derived = withCPassword(password) { pass in
            PKCS5_PBKDF2_HMAC(pass, Int32(password.count), salt, Int32(salt.count), Int32(iterations), prf, Int32(keyLength), &key)
        }
        ERR_clear_error()
        guard derived == 1 else { return nil }
        switch cipher {
        case .des:
            var tripled = key + key + key
            defer { PasswordKDF.wipe(&tripled) }
            return ciphertext.withUnsafeBytes { cbcDecrypt(EVP_des_ede3_cbc(), $0, key: tripled, iv: iv) }
        case .rc2(let effectiveBits):
            return ciphertext.withUnsafeBytes { LegacyCiphers.rc2CBCDecryptUnpadding(key: key, effectiveBits: effectiveBits, iv: iv, $0) }
        }
    }
}

/// The password-based encryptions of keys and keystores this build does not read, named for the user: PBES2
/// with the other ciphers of OpenSSL 3's legacy provider (Blowfish, CAST5, IDEA, SEED, RC5; DES-CBC and RC2-CBC only inside PKCS#12 stores) and the MD2 schemes of PBES1 (MD2 is in no OpenSSL 3 build Debian ships).
package enum UnreadableEncryption {
    private static let pbes1MD2: [(oid: [UInt8], name: String)] = [
        (DER.objectIdentifier("1.2.840.113549.1.5.1"), "PBES1 with MD2 and DES-CBC (pbeWithMD2AndDES-CBC)"),
        (DER.objectIdentifier("1.2.840.113549.1.5.4"), "PBES1 with MD2 and RC2-CBC (pbeWithMD2AndRC2-CBC)"),
    ]
    private static let legacyCiphers: [(oid: [UInt8], name: String)] = [
        (DER.objectIdentifier("1.3.6.1.4.1.3029.1.2"), "Blowfish-CBC"),
        (DER.objectIdentifier("1.2.840.113533.7.66.10"), "CAST5-CBC"),
        (DER.objectIdentifier("1.3.6.1.4.1.188.7.1.1.2"), "IDEA-CBC"),
        (DER.objectIdentifier("1.2.410.200004.1.4"), "SEED-CBC"),
        (DER.objectIdentifier("1.2.840.113549.3.8"), "RC5-CBC"),
        // Read in PKCS#8 keys (PBES2LegacyCipher), not in PKCS#12 stores.
        (PBES2LegacyCipher.desCBCOID, "DES-CBC"),
        (PBES2LegacyCipher.rc2CBCOID, "RC2-CBC"),
    ]

    /// What `der` (the AlgorithmIdentifier of an encrypted key or safe) is, when it is a scheme OpenSSL 3's
    /// default provider and this build cannot decrypt: "PBES2 with Blowfish-CBC"; nil for any other.
    package static func name(algorithmIdentifierDER der: [UInt8]) -> String? {
        var reader = DERReader(der)
        guard let algorithm = try? reader.read(), algorithm.tag == DER.sequenceTag, let parts = try? algorithm.children(),
              let oid = parts.first else { return nil }
        if let md2 = pbes1MD2.first(where: { oid.encoded.elementsEqual($0.oid) }) { return md2.name }
        guard let (_, scheme) = PKCS5.pbes2Parts(der), let cipher = scheme.first else { return nil }
        if let legacy = legacyCiphers.first(where: { cipher.encoded.elementsEqual($0.oid) }) { return "PBES2 with " + legacy.name }
        return nil
    }
}
