internal import COpenSSL

/// Reads a PKCS#12 store with every password-derived key computed at once by PasswordKDF: the integrity MAC's
/// key (PKCS#12 KDF with SHA-256 or SHA-1, or RFC 9579's PBMAC1 with PBKDF2-HMAC-SHA256), the encrypted safes' and
/// the shrouded key bags' (PBES2 with PBKDF2-HMAC-SHA256 and AES-CBC, as keytool (JDK 17+) and OpenSSL 3 write them;
/// PKCS#12's own PBE on SHA-1 with 3DES, RC2 or RC4, as older Java, `keytool -J-Dkeystore.pkcs12.legacy` and
/// `openssl pkcs12 -legacy` write them). OpenSSL still parses the structure and decodes the bags; only the
/// iterations move. Anything else (other algorithms, BER the DER walk does not follow, a wrong password, a failure
/// of any kind) gives nil, and the caller reads the store the OpenSSL way: its answers and its errors stay the
/// reference.
enum PKCS12Decryption {
    static func contents(of store: OpaquePointer, der: [UInt8], password: [UInt8], keyPassword: [UInt8]?) -> PKCS12Contents? {
        defer { ERR_clear_error() }
        var requests: [PasswordKDF.Request] = []
        /// Appends `added` and gives their places among `requests`.
        func append(_ added: [PasswordKDF.Request]) -> Range<Int> {
            defer { requests += added }
            return requests.count..<requests.count + added.count
        }

        var mac: (inputs: MACInputs, request: Int)?
        if PKCS12_mac_present(store) == 1 {
            guard let inputs = MACInputs(store: store, der: der), let request = inputs.request(password: password) else { return nil }
            mac = (inputs, append([request]).lowerBound)
        }

        guard let safes = PKCS12_unpack_authsafes(store) else { return nil }
        defer { apkpatch_sk_PKCS7_pop_free(safes) }
        // keytool's and OpenSSL's stores keep their shrouded keys in plain safes, so those keys are derived
        // with the others; the first password tried is the key password (as PKCS12.decryptKey tries them).
        let keyCandidate = keyPassword ?? password
        enum Safe {
            case plain(bags: OpaquePointer, keys: [Int32: (encryption: BagEncryption, requests: Range<Int>)])
            case encrypted(ciphertext: UnsafeRawBufferPointer, encryption: BagEncryption, requests: Range<Int>)
        }
        var plan: [Safe] = []
        var bagStacks: [OpaquePointer] = []
        defer { for bags in bagStacks { apkpatch_sk_PKCS12_SAFEBAG_pop_free(bags) } }
        for index in 0..<apkpatch_sk_PKCS7_num(safes) {
            guard let safe = apkpatch_sk_PKCS7_value(safes, index) else { continue }
            switch apkpatch_PKCS7_type_nid(safe) {
            case NID_pkcs7_data:
                guard let bags = PKCS12_unpack_p7data(safe) else { return nil }
                bagStacks.append(bags)
                var keys: [Int32: (encryption: BagEncryption, requests: Range<Int>)] = [:]
                for bagIndex in 0..<apkpatch_sk_PKCS12_SAFEBAG_num(bags) {
                    guard let bag = apkpatch_sk_PKCS12_SAFEBAG_value(bags, bagIndex),
                          PKCS12_SAFEBAG_get_nid(bag) == NID_pkcs8ShroudedKeyBag,
                          let encryption = shroudedKeyEncryption(bag), let added = encryption.requests(password: keyCandidate) else { continue }
                    keys[bagIndex] = (encryption, append(added))
                }
                plan.append(.plain(bags: bags, keys: keys))
            case NID_pkcs7_encrypted:
                guard let algorithm = apkpatch_PKCS7_encrypted_algorithm(safe),
                      let content = apkpatch_PKCS7_encrypted_content(safe),
                      let algorithmDER = try? encodeDER("i2d_X509_ALGOR", { i2d_X509_ALGOR(algorithm, $0) }),
                      let encryption = BagEncryption(algorithmIdentifierDER: algorithmDER),
                      let added = encryption.requests(password: password) else { return nil }
                let ciphertext = UnsafeRawBufferPointer(start: ASN1_STRING_get0_data(content), count: Int(ASN1_STRING_length(content)))
                plan.append(.encrypted(ciphertext: ciphertext, encryption: encryption, requests: append(added)))
            default:
                continue
            }
        }

        guard var derived = PasswordKDF.derive(requests) else { return nil }
        defer { for index in derived.indices { PasswordKDF.wipe(&derived[index]) } }
        if let mac, !mac.inputs.matches(key: derived[mac.request]) { return nil }

        var contents = PKCS12Contents()
        contents.storePasswordVerified = mac != nil || plan.contains { if case .encrypted = $0 { true } else { false } }
        let decryptWithOpenSSL = { (bag: OpaquePointer) in try PKCS12.decryptKey(bag, keyPassword: keyPassword, storePassword: password) }
        do {
            for safe in plan {
                switch safe {
                case let .plain(bags, keys):
                    try contents.collect(bags) { bag, index in
                        if let key = keys[index], let privateKey = decryptShroudedKey(bag, encryption: key.encryption, derived: derived[key.requests]) {
                            return privateKey
                        }
                        return try decryptWithOpenSSL(bag)
                    }
                case let .encrypted(ciphertext, encryption, range):
                    guard var plaintext = encryption.decrypt(ciphertext, derived: derived[range]) else { return nil }
                    defer { PasswordKDF.wipe(&plaintext) }
                    guard let bags = plaintext.withUnsafeBufferPointer({ apkpatch_d2i_PKCS12_SAFEBAGS($0.baseAddress, $0.count) }) else {
                        return nil
                    }
                    defer { apkpatch_sk_PKCS12_SAFEBAG_pop_free(bags) }
                    try contents.collect(bags) { bag, _ in
                        // A key inside an encrypted safe: its derivation was not known in advance.
                        if let encryption = shroudedKeyEncryption(bag), let keyRequests = encryption.requests(password: keyCandidate),
                           var keys = PasswordKDF.derive(keyRequests) {
                            defer { for index in keys.indices { PasswordKDF.wipe(&keys[index]) } }
                            if let privateKey = decryptShroudedKey(bag, encryption: encryption, derived: keys[...]) { return privateKey }
                        }
                        return try decryptWithOpenSSL(bag)
                    }
                }
            }
        } catch {
            return nil
        }
        return contents
    }

    private static func shroudedKeyEncryption(_ bag: OpaquePointer) -> BagEncryption? {
        guard let encrypted = PKCS12_SAFEBAG_get0_pkcs8(bag) else { return nil }
        var algorithm: UnsafePointer<X509_ALGOR>?
        X509_SIG_get0(encrypted, &algorithm, nil)
        guard let algorithm, let der = try? encodeDER("i2d_X509_ALGOR", { i2d_X509_ALGOR(algorithm, $0) }) else { return nil }
        return BagEncryption(algorithmIdentifierDER: der)
    }

    /// The bag's key, decrypted with the `derived` keys and decoded as PKCS12_decrypt_skey and EVP_PKCS82PKEY decode
    /// it; nil on any failure (OpenSSL's own path then gives the answer).
    private static func decryptShroudedKey(_ bag: OpaquePointer, encryption: BagEncryption, derived: ArraySlice<[UInt8]>) -> PrivateKey? {
        guard let encrypted = PKCS12_SAFEBAG_get0_pkcs8(bag) else { return nil }
        var content: UnsafePointer<ASN1_OCTET_STRING>?
        X509_SIG_get0(encrypted, nil, &content)
        guard let content else { return nil }
        let ciphertext = UnsafeRawBufferPointer(start: ASN1_STRING_get0_data(content), count: Int(ASN1_STRING_length(content)))
        guard var plaintext = encryption.decrypt(ciphertext, derived: derived) else { return nil }
        defer { PasswordKDF.wipe(&plaintext) }
        return privateKey(pkcs8: plaintext)
    }

    /// A decrypted PrivateKeyInfo decoded as PKCS12_decrypt_skey and EVP_PKCS82PKEY decode it; nil on any failure.
    static func privateKey(pkcs8 plaintext: [UInt8]) -> PrivateKey? {
        defer { ERR_clear_error() }
        let info = plaintext.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PKCS8_PRIV_KEY_INFO(nil, &cursor, buffer.count)
        }
        guard let info else { return nil }
        defer { PKCS8_PRIV_KEY_INFO_free(info) }
        guard let pointer = EVP_PKCS82PKEY(info) else { return nil }
        return try? PrivateKey(handle: EVPKeyHandle(takingOwnershipOf: pointer))
    }
}

/// How a shrouded key bag or an encrypted safe is encrypted, in the schemes PKCS12Decryption derives keys for:
/// PBES2 (PBKDF2-HMAC-SHA256, AES-CBC) or PKCS#12's own PBE on SHA-1. An iteration count above Java's limit is
/// not one of them: PKCS12.decryptKey refuses it.
enum BagEncryption {
    case pbes2(PBES2Parameters)
    case pkcs12PBE(PKCS12LegacyPBE)

    init?(algorithmIdentifierDER der: [UInt8]) {
        if let parameters = PBES2Parameters(algorithmIdentifierDER: der) {
            self = .pbes2(parameters)
        } else if let scheme = PKCS12LegacyPBE(algorithmIdentifierDER: der), scheme.iterations <= PBEIterationLimit.maximum {
            self = .pkcs12PBE(scheme)
        } else {
            return nil
        }
    }

    /// The derivations this encryption's key (and IV) take from `password`; nil when there are none to run.
    func requests(password: [UInt8]) -> [PasswordKDF.Request]? {
        switch self {
        case .pbes2(let parameters): [parameters.request(password: password)]
        case .pkcs12PBE(let scheme): scheme.requests(password: password)
        }
    }

    /// `ciphertext` decrypted with the results of `requests`, in order; nil when it does not decrypt.
    func decrypt(_ ciphertext: UnsafeRawBufferPointer, derived: ArraySlice<[UInt8]>) -> [UInt8]? {
        switch self {
        case .pbes2(let parameters): derived.first.flatMap { parameters.decrypt(ciphertext, key: $0) }
        case .pkcs12PBE(let scheme): scheme.decrypt(ciphertext, keyAndIV: derived)
        }
    }
}

/// What the integrity MAC is checked with: an HMAC over the authenticated safe's octets, keyed either by the
/// PKCS#12 KDF (id 3) of the password as PKCS12_verify_mac computes it (SHA-256 or SHA-1 only here; the key is
/// as long as the digest), or by RFC 9579's PBMAC1 (any PRF and HMAC it names). Only when the authenticated safe
/// is a primitive DER OCTET STRING (d2i_PKCS12 also reads BER: then it is OpenSSL's).
struct MACInputs {
    enum KeyDerivation {
        case pkcs12(kind: PasswordKDF.Kind, keyLength: Int, salt: [UInt8], iterations: Int)
        case pbmac1(PBMAC1Parameters)
    }
    let keyDerivation: KeyDerivation
    /// The HMAC's digest.
    let digest: OpaquePointer
    let expected: [UInt8]
    let content: ArraySlice<UInt8>

    private static let dataOID = DER.objectIdentifier("1.2.840.113549.1.7.1")

    init?(store: OpaquePointer, der: [UInt8]) {
        var digest: UnsafePointer<ASN1_OCTET_STRING>?
        var algorithm: UnsafePointer<X509_ALGOR>?
        var salt: UnsafePointer<ASN1_OCTET_STRING>?
        var iterations: UnsafePointer<ASN1_INTEGER>?
        PKCS12_get0_mac(&digest, &algorithm, &salt, &iterations, store)
        guard let digest, let algorithm, let salt else { return nil }
        var digestObject: OpaquePointer?
        X509_ALGOR_get0(&digestObject, nil, nil, algorithm)
        guard let digestObject else { return nil }
        switch OBJ_obj2nid(digestObject) {
        case NID_sha256, NID_sha1:
            let isSHA1 = OBJ_obj2nid(digestObject) == NID_sha1
            // No iteration count means 1 (pkcs12_gen_mac); ASN1_INTEGER_get gives -1 for what does not fit a long.
            let count = iterations.map { Int(ASN1_INTEGER_get($0)) } ?? 1
            guard (1...Int(Int32.max)).contains(count) else { return nil }
            keyDerivation = .pkcs12(kind: isSHA1 ? .pkcs12SHA1(id: 3) : .pkcs12SHA256(id: 3), keyLength: isSHA1 ? 20 : 32,
                                    salt: Array(UnsafeBufferPointer(start: ASN1_STRING_get0_data(salt), count: Int(ASN1_STRING_length(salt)))),
                                    iterations: count)
            self.digest = isSHA1 ? FetchedDigests.sha1 : FetchedDigests.sha256
        case NID_pbmac1:
            guard let algorithmDER = try? encodeDER("i2d_X509_ALGOR", { i2d_X509_ALGOR(algorithm, $0) }),
                  let parameters = PBMAC1Parameters(algorithmIdentifierDER: algorithmDER) else { return nil }
            keyDerivation = .pbmac1(parameters)
            self.digest = parameters.mac
        default:
            return nil
        }

        // PFX ::= SEQUENCE { version, authSafe ContentInfo (data, [0] EXPLICIT OCTET STRING), macData }
        var reader = DERReader(der)
        guard let pfx = try? reader.read(), pfx.tag == DER.sequenceTag, let parts = try? pfx.children(), (2...3).contains(parts.count),
              parts[1].tag == DER.sequenceTag, let contentInfo = try? parts[1].children(), contentInfo.count == 2,
              contentInfo[0].encoded.elementsEqual(Self.dataOID), contentInfo[1].tag == 0xa0,
              let explicit = try? contentInfo[1].children(), explicit.count == 1, explicit[0].tag == DER.octetStringTag else { return nil }

        self.expected = Array(UnsafeBufferPointer(start: ASN1_STRING_get0_data(digest), count: Int(ASN1_STRING_length(digest))))
        self.content = explicit[0].contents
    }

    /// The MAC key's derivation from `password` for PasswordKDF; nil when it derives no such key (a PBMAC1 PRF
    /// other than SHA-256, a password OpenSSL cannot make a BMPString of).
    func request(password: [UInt8]) -> PasswordKDF.Request? {
        switch keyDerivation {
        case let .pkcs12(kind, keyLength, salt, iterations):
            guard let bmpPassword = PasswordKDF.bmpString(utf8: password) else { return nil }
            return PasswordKDF.Request(kind: kind, password: bmpPassword, salt: salt, iterations: iterations, length: keyLength)
        case .pbmac1(let parameters):
            return parameters.request(password: password)
        }
    }

    /// True when HMAC(key, content) is the stored MAC (compared in constant time, as OpenSSL does).
    func matches(key: [UInt8]) -> Bool {
        var mac = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let computed = content.withUnsafeBufferPointer { data in
            HMAC(digest, key, Int32(key.count), data.baseAddress, data.count, &mac, &length)
        }
        guard computed != nil, Int(length) == expected.count else { return false }
        return CRYPTO_memcmp(mac, expected, expected.count) == 0
    }
}

/// PBES2 (RFC 8018 6.2) with PBKDF2-HMAC-SHA256 and AES-128/192/256-CBC, read from an AlgorithmIdentifier's DER
/// only when it has exactly that shape; nil for anything else (PKCS#12 PBE, other PRFs or ciphers, odd encodings).
struct PBES2Parameters {
    let salt: [UInt8]
    let iterations: Int
    let keyLength: Int
    let iv: [UInt8]

    private static let aesCBCOIDs: [(oid: [UInt8], keyLength: Int)] = [
        (DER.objectIdentifier("2.16.840.1.101.3.4.1.2"), 16),
        (DER.objectIdentifier("2.16.840.1.101.3.4.1.22"), 24),
        (DER.objectIdentifier("2.16.840.1.101.3.4.1.42"), 32),
    ]

    init?(algorithmIdentifierDER der: [UInt8]) {
        // SEQUENCE { pbes2, SEQUENCE { SEQUENCE { pbkdf2, SEQUENCE { salt, iterations, keyLength?, prf } },
        //                               SEQUENCE { aes-cbc, iv } } }
        guard let (kdfParameters, cipher) = PKCS5.pbes2Parts(der), kdfParameters.count >= 3, cipher.count == 2,
              let aes = Self.aesCBCOIDs.first(where: { cipher[0].encoded.elementsEqual($0.oid) }),
              cipher[1].tag == DER.octetStringTag, cipher[1].contents.count == 16 else { return nil }

        // PBKDF2-params: salt OCTET STRING (the "specified" choice), iterationCount, keyLength OPTIONAL (must be
        // the cipher's, as OpenSSL requires), prf (only hmacWithSHA256 here: the default is HMAC-SHA-1).
        // Above Java's limit: left to PKCS12.decryptKey, which refuses it.
        guard kdfParameters[0].tag == DER.octetStringTag, let iterations = Self.positiveInt32(kdfParameters[1]),
              iterations <= PBEIterationLimit.maximum else { return nil }
        if kdfParameters.count == 4 {
            guard Self.positiveInt32(kdfParameters[2]) == aes.keyLength else { return nil }
        }
        guard HMACAlgorithm.digest(kdfParameters[kdfParameters.count - 1])?.isSHA256 == true else { return nil }

        salt = Array(kdfParameters[0].contents)
        self.iterations = iterations
        keyLength = aes.keyLength
        iv = Array(cipher[1].contents)
    }

    /// A minimal DER INTEGER in 1...2³¹-1.
    static func positiveInt32(_ element: DERElement) -> Int? {
        let bytes = Array(element.contents)
        guard element.tag == DER.integerTag, (1...4).contains(bytes.count), bytes[0] & 0x80 == 0,
              bytes.count == 1 || bytes[0] != 0 || bytes[1] & 0x80 != 0 else { return nil }
        let value = bytes.reduce(0) { $0 << 8 | Int($1) }
        return value >= 1 ? value : nil
    }

    func request(password: [UInt8]) -> PasswordKDF.Request {
        PasswordKDF.Request(kind: .pbkdf2HMACSHA256, password: password, salt: salt, iterations: iterations, length: keyLength)
    }

    /// AES-CBC with PKCS#7 padding, as PKCS12_pbe_crypt_ex decrypts; nil when the padding is wrong (a wrong key).
    func decrypt(_ ciphertext: UnsafeRawBufferPointer, key: [UInt8]) -> [UInt8]? {
        guard key.count == keyLength else { return nil }
        let cipher = switch keyLength {
        case 16: EVP_aes_128_cbc()
        case 24: EVP_aes_192_cbc()
        default: EVP_aes_256_cbc()
        }
        return cbcDecrypt(cipher, ciphertext, key: key, iv: iv)
    }
}

/// `ciphertext` decrypted by OpenSSL's `cipher` (a CBC cipher) with PKCS#7 padding removed; nil when the padding
/// is wrong (a wrong key) or OpenSSL fails. The plaintext is the caller's to wipe.
func cbcDecrypt(_ cipher: OpaquePointer?, _ ciphertext: UnsafeRawBufferPointer, key: [UInt8], iv: [UInt8]) -> [UInt8]? {
    guard let cipher, let context = EVP_CIPHER_CTX_new() else { return nil }
    defer { EVP_CIPHER_CTX_free(context); ERR_clear_error() }
    guard let input = ciphertext.baseAddress?.assumingMemoryBound(to: UInt8.self), ciphertext.count < Int(Int32.max) - 32,
          EVP_DecryptInit_ex(context, cipher, nil, key, iv) == 1 else { return nil }
    var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 32)
    var updated: Int32 = 0
    var finished: Int32 = 0
    let ok = plaintext.withUnsafeMutableBufferPointer { output -> Bool in
        guard EVP_DecryptUpdate(context, output.baseAddress, &updated, input, Int32(ciphertext.count)) == 1 else { return false }
        return EVP_DecryptFinal_ex(context, output.baseAddress! + Int(updated), &finished) == 1
    }
    defer { PasswordKDF.wipe(&plaintext) }
    guard ok else { return nil }
    return Array(plaintext[..<Int(updated + finished)])
}
