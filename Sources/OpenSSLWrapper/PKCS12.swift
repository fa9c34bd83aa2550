internal import COpenSSL

/// One entry of a PKCS#12 keystore: a private key with its certificate chain, or a trusted certificate.
/// `friendlyName` is the alias keytool shows.
public struct PKCS12Entry: Sendable {
    /// The alias (PKCS#9 friendlyName), if the bag carries one.
    public let friendlyName: String?
    /// The PKCS#9 localKeyID linking a key to its certificate.
    public let localKeyID: [UInt8]?
    /// The private key; nil for a trusted-certificate entry, and for a key entry whose key did not decrypt.
    public let privateKey: PrivateKey?
    /// Why a key entry's key did not decrypt with the passwords given (a key with a password of its own): the
    /// store still lists, as keytool -list lists it with the store password alone.
    public let keyError: PKCS12Error?
    /// Key entries: the chain, the key's own certificate first. Certificate entries: the one certificate.
    public let certificates: [Certificate]

    /// A private-key entry (its key decrypted or not), as opposed to a trusted certificate.
    public var isKeyEntry: Bool { privateKey != nil || keyError != nil }
}

/// Why a PKCS#12 store could not be read. `description` carries OpenSSL's own words; it never contains a
/// password.
public struct PKCS12Error: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// The integrity MAC did not verify: wrong store password (or a damaged file).
        case wrongPassword
        /// A shrouded key bag did not decrypt with the key password (or the store password).
        case wrongKeyPassword
        /// A shrouded key bag did not decrypt, and nothing confirmed the store password (no MAC, no encrypted safe):
        /// the store password is wrong, or the key has a password of its own.
        case wrongStoreOrKeyPassword
        /// The integrity MAC verified with the store password but an encrypted safe (the certificates) did not
        /// decrypt with it, nor with the key password: the store was written with a separate encryption password
        /// (`openssl pkcs12 -twopass`).
        case wrongEncryptionPassword
        /// Not a PKCS#12 structure OpenSSL can read.
        case malformed
        /// A well-formed store protected by a scheme this build does not read (named: "PBES2 with Blowfish-CBC").
        case unsupported(String)
        /// An iteration count (the MAC's, a safe's or a key's) above Java's limit: refused before any derivation.
        case iterationCountTooLarge
        /// Creating a store failed.
        case creationFailed
    }
    public let kind: Kind
    public let underlying: OpenSSLError
    public var description: String { underlying.description }
    /// The store or a key is protected by a scheme this build does not read.
    public var isUnsupported: Bool { if case .unsupported = kind { true } else { false } }
}

/// PKCS#12 keystores through OpenSSL (PKCS12_* and PKCS8 functions): reading every entry with its alias, and
/// writing a one-key store that `keytool` and `apksigner --ks` read.
public enum PKCS12 {
    /// Reads every key and certificate in `der`. The MAC is checked with `password`; shrouded keys are
    /// decrypted with `keyPassword` when given, falling back to `password` (keytool's PKCS#12 stores use one
    /// password for both).
    public static func parse(_ der: [UInt8], password: [UInt8], keyPassword: [UInt8]? = nil) throws -> [PKCS12Entry] {
        try read(der, password: password, keyPassword: keyPassword).entries
    }

    /// How `read` decrypted a store.
    package enum Decryption: Sendable, Equatable {
        /// Every key derived together (PKCS12Decryption).
        case derivedTogether
        /// OpenSSL's PKCS12 functions.
        case openSSL
    }

    /// `parse`, saying which way the store was decrypted; `derivingTogether` false takes OpenSSL's way only
    /// (the tests' reference).
    package static func read(_ der: [UInt8], password: [UInt8], keyPassword: [UInt8]? = nil,
                             derivingTogether: Bool = true) throws -> (entries: [PKCS12Entry], decryption: Decryption) {
        let store: OpaquePointer
        do {
            store = try der.withUnsafeBufferPointer { buffer in
                try openSSLPointer("d2i_PKCS12") {
                    var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
                    return d2i_PKCS12(nil, &cursor, buffer.count)
                }
            }
        } catch let error as OpenSSLError {
            throw PKCS12Error(kind: .malformed, underlying: error)
        }
        defer { PKCS12_free(store) }
        try refuseExcessiveIterations(store)
        if derivingTogether, let contents = PKCS12Decryption.contents(of: store, der: der, password: password, keyPassword: keyPassword) {
            return (contents.entries(), .derivedTogether)
        }
        return (try contentsWithOpenSSL(of: store, der: der, password: password, keyPassword: keyPassword).entries(), .openSSL)
    }

    /// Throws when the MAC's, an encrypted safe's or a plain safe's key's iteration count is above Java's limit (the
    /// keys inside encrypted safes are checked as they are decrypted, by `decryptKey` and BagEncryption).
    private static func refuseExcessiveIterations(_ store: OpaquePointer) throws {
        do {
            if PKCS12_mac_present(store) == 1 {
                var algorithm: UnsafePointer<X509_ALGOR>?
                var iterations: UnsafePointer<ASN1_INTEGER>?
                PKCS12_get0_mac(nil, &algorithm, nil, &iterations, store)
                if let iterations { try PBEIterationLimit.check(Int(ASN1_INTEGER_get(iterations)), "MAC") }
                if let algorithm, let der = try? encodeDER("i2d_X509_ALGOR", { i2d_X509_ALGOR(algorithm, $0) }) {
                    try PBEIterationLimit.check(algorithmIdentifierDER: der, "MAC")
                }
            }
            defer { ERR_clear_error() }
            guard let safes = PKCS12_unpack_authsafes(store) else { return }
            defer { apkpatch_sk_PKCS7_pop_free(safes) }
            for index in 0..<apkpatch_sk_PKCS7_num(safes) {
                guard let safe = apkpatch_sk_PKCS7_value(safes, index) else { continue }
                switch apkpatch_PKCS7_type_nid(safe) {
                case NID_pkcs7_data:
                    guard let bags = PKCS12_unpack_p7data(safe) else { continue }
                    defer { apkpatch_sk_PKCS12_SAFEBAG_pop_free(bags) }
                    for bagIndex in 0..<apkpatch_sk_PKCS12_SAFEBAG_num(bags) {
                        guard let bag = apkpatch_sk_PKCS12_SAFEBAG_value(bags, bagIndex) else { continue }
                        try refuseExcessiveIterations(bag: bag)
                    }
                case NID_pkcs7_encrypted:
                    guard let algorithm = apkpatch_PKCS7_encrypted_algorithm(safe),
                          let der = try? encodeDER("i2d_X509_ALGOR", { i2d_X509_ALGOR(algorithm, $0) }) else { continue }
                    try PBEIterationLimit.check(algorithmIdentifierDER: der, "encrypted safe")
                default:
                    continue
                }
            }
        } catch let error as OpenSSLError {
            throw PKCS12Error(kind: .iterationCountTooLarge, underlying: error)
        }
    }

    /// Throws (OpenSSLError) when a shrouded key bag's iteration count is above Java's limit.
    private static func refuseExcessiveIterations(bag: OpaquePointer) throws {
        guard PKCS12_SAFEBAG_get_nid(bag) == NID_pkcs8ShroudedKeyBag, let encrypted = PKCS12_SAFEBAG_get0_pkcs8(bag) else { return }
        var algorithm: UnsafePointer<X509_ALGOR>?
        X509_SIG_get0(encrypted, &algorithm, nil)
        guard let algorithm, let der = try? encodeDER("i2d_X509_ALGOR", { i2d_X509_ALGOR(algorithm, $0) }) else { return }
        try PBEIterationLimit.check(algorithmIdentifierDER: der, "key")
    }

    /// OpenSSL's own reading (PKCS12_verify_mac, PKCS12_unpack_p7encdata, PKCS12_decrypt_skey): any algorithm it
    /// knows, and the reference answer and errors for everything PKCS12Decryption leaves to it. A PBMAC1 MAC,
    /// which this OpenSSL does not know, is checked by MACInputs with OpenSSL's PBKDF2 and HMAC.
    private static func contentsWithOpenSSL(of store: OpaquePointer, der: [UInt8], password: [UInt8], keyPassword: [UInt8]?) throws -> PKCS12Contents {
        try verifyPBMAC1(of: store, der: der, password: password)
        try withCPassword(password) { pass in
            let length = Int32(password.count)
            guard PKCS12_mac_present(store) == 1, !usesPBMAC1(store) else { return }
            ERR_clear_error()
            if PKCS12_verify_mac(store, pass, length) == 1 { return }
            // An empty password may have been encoded as absent (NULL) rather than as an empty BMPString.
            if password.isEmpty, PKCS12_verify_mac(store, nil, 0) == 1 { ERR_clear_error(); return }
            throw PKCS12Error(kind: .wrongPassword, underlying: OpenSSLError.drain("PKCS12_verify_mac"))
        }

        let safes: OpaquePointer
        do {
            safes = try openSSLPointer("PKCS12_unpack_authsafes") { PKCS12_unpack_authsafes(store) }
        } catch let error as OpenSSLError {
            throw PKCS12Error(kind: .malformed, underlying: error)
        }
        defer { apkpatch_sk_PKCS7_pop_free(safes) }

        var contents = PKCS12Contents()
        contents.storePasswordVerified = PKCS12_mac_present(store) == 1
        let decrypt = { (bag: OpaquePointer) in try decryptKey(bag, keyPassword: keyPassword, storePassword: password) }
        do {
            for index in 0..<apkpatch_sk_PKCS7_num(safes) {
                guard let safe = apkpatch_sk_PKCS7_value(safes, index) else { continue }
                switch apkpatch_PKCS7_type_nid(safe) {
                case NID_pkcs7_data:
                    let bags = try openSSLPointer("PKCS12_unpack_p7data") { PKCS12_unpack_p7data(safe) }
                    defer { apkpatch_sk_PKCS12_SAFEBAG_pop_free(bags) }
                    try contents.collect(bags) { bag, _ in try decrypt(bag) }
                case NID_pkcs7_encrypted:
                    let (bags, withStorePassword) = try unpackEncryptedSafe(safe, storePassword: password, keyPassword: keyPassword,
                                                                            macVerified: PKCS12_mac_present(store) == 1)
                    defer { apkpatch_sk_PKCS12_SAFEBAG_pop_free(bags) }
                    if withStorePassword { contents.storePasswordVerified = true }
                    try contents.collect(bags) { bag, _ in try decrypt(bag) }
                default:
                    continue
                }
            }
        } catch let error as OpenSSLError {
            throw PKCS12Error(kind: .malformed, underlying: error)
        }
        return contents
    }

    private static func usesPBMAC1(_ store: OpaquePointer) -> Bool {
        var algorithm: UnsafePointer<X509_ALGOR>?
        PKCS12_get0_mac(nil, &algorithm, nil, nil, store)
        var object: OpaquePointer?
        if let algorithm { X509_ALGOR_get0(&object, nil, nil, algorithm) }
        return object.map { OBJ_obj2nid($0) == NID_pbmac1 } ?? false
    }

    /// Checks a PBMAC1 MAC (nothing to do for a store without one): wrongPassword when it does not verify,
    /// unsupported when its parameters are not ones RFC 9579 allows and OpenSSL 3.4 reads.
    private static func verifyPBMAC1(of store: OpaquePointer, der: [UInt8], password: [UInt8]) throws {
        guard PKCS12_mac_present(store) == 1, usesPBMAC1(store) else { return }
        guard let inputs = MACInputs(store: store, der: der), case .pbmac1(let parameters) = inputs.keyDerivation else {
            throw PKCS12Error(kind: .unsupported("an RFC 9579 PBMAC1 integrity MAC whose parameters are not PBKDF2 with a key length and HMAC-SHA-1/-2"),
                              underlying: OpenSSLError(function: "PBMAC1 parameters", reasons: []))
        }
        guard var key = parameters.deriveWithOpenSSL(password: password) else {
            throw PKCS12Error(kind: .malformed, underlying: OpenSSLError(function: "PKCS5_PBKDF2_HMAC", reasons: []))
        }
        defer { PasswordKDF.wipe(&key) }
        guard inputs.matches(key: key) else {
            throw PKCS12Error(kind: .wrongPassword, underlying: OpenSSLError(function: "PBMAC1 verification", reasons: []))
        }
    }

    /// An encrypted safe's bags (the certificates, in keytool's and OpenSSL's stores), decrypted with the store
    /// password as keytool and OpenSSL decrypt them, then with the key password: `openssl pkcs12 -twopass` encrypts
    /// with a password of its own, the MAC's being the store password. PKCS#12's own PBE schemes (RC2, RC4, 3DES)
    /// are PKCS12LegacyPBE's, the rest OpenSSL's.
    private static func unpackEncryptedSafe(_ safe: UnsafeMutablePointer<COpenSSL.PKCS7>, storePassword: [UInt8], keyPassword: [UInt8]?,
                                            macVerified: Bool) throws -> (bags: OpaquePointer, withStorePassword: Bool) {
        var candidates = [storePassword]
        if let keyPassword, keyPassword != storePassword { candidates.append(keyPassword) }
        let legacy = PKCS12LegacyPBE(encryptedSafe: safe)
        var lastError = OpenSSLError(function: "PKCS12_unpack_p7encdata", reasons: [])
        for (index, candidate) in candidates.enumerated() {
            if let legacy {
                if let bags = PKCS12LegacyPBE.unpackEncryptedSafe(safe, scheme: legacy, password: candidate) { return (bags, index == 0) }
                lastError = OpenSSLError(function: "PKCS12 PBE decryption", reasons: ["bad decrypt"])
                continue
            }
            ERR_clear_error()
            let bags = withCPassword(candidate) { PKCS12_unpack_p7encdata(safe, $0, Int32(candidate.count)) }
            if let bags { return (bags, index == 0) }
            lastError = OpenSSLError.drain("PKCS12_unpack_p7encdata")
            // An algorithm OpenSSL does not have fails alike with every password.
            if lastError.reasons.contains(where: { $0.contains("unsupported") || $0.contains("unknown") }) {
                if let algorithm = apkpatch_PKCS7_encrypted_algorithm(UnsafePointer(safe)),
                   let der = try? encodeDER("i2d_X509_ALGOR", { i2d_X509_ALGOR(algorithm, $0) }),
                   let name = UnreadableEncryption.name(algorithmIdentifierDER: der) {
                    throw PKCS12Error(kind: .unsupported(name), underlying: lastError)
                }
                throw PKCS12Error(kind: .malformed, underlying: lastError)
            }
        }
        throw PKCS12Error(kind: macVerified ? .wrongEncryptionPassword : .wrongPassword, underlying: lastError)
    }

    /// A shrouded key bag decrypted with the key password, then the store password: by PKCS12LegacyPBE for PKCS#12's
    /// own PBE schemes (RC2, RC4, 3DES), else by OpenSSL.
    static func decryptKey(_ bag: OpaquePointer, keyPassword: [UInt8]?, storePassword: [UInt8]) throws -> PrivateKey {
        var candidates: [[UInt8]] = []
        if let keyPassword { candidates.append(keyPassword) }
        if keyPassword != storePassword { candidates.append(storePassword) }
        do {
            try refuseExcessiveIterations(bag: bag)
        } catch let error as OpenSSLError {
            throw PKCS12Error(kind: .iterationCountTooLarge, underlying: error)
        }
        if let legacy = PKCS12LegacyPBE(shroudedKeyBag: bag) {
            for candidate in candidates {
                if let key = legacy.decryptKey(bag, password: candidate) { return key }
            }
            throw PKCS12Error(kind: .wrongKeyPassword, underlying: OpenSSLError(function: "PKCS12 PBE decryption", reasons: ["bad decrypt"]))
        }
        if let encrypted = PKCS12_SAFEBAG_get0_pkcs8(bag) {
            var algorithm: UnsafePointer<X509_ALGOR>?
            X509_SIG_get0(encrypted, &algorithm, nil)
            if let algorithm, let der = try? encodeDER("i2d_X509_ALGOR", { i2d_X509_ALGOR(algorithm, $0) }),
               let name = UnreadableEncryption.name(algorithmIdentifierDER: der) {
                throw PKCS12Error(kind: .unsupported(name), underlying: OpenSSLError(function: "PKCS12_decrypt_skey", reasons: ["unsupported"]))
            }
        }
        var lastError = OpenSSLError(function: "PKCS12_decrypt_skey", reasons: [])
        for candidate in candidates {
            ERR_clear_error()
            let info = withCPassword(candidate) { PKCS12_decrypt_skey(bag, $0, Int32(candidate.count)) }
            guard let info else { lastError = OpenSSLError.drain("PKCS12_decrypt_skey"); continue }
            defer { PKCS8_PRIV_KEY_INFO_free(info) }
            let pointer = try openSSLPointer("EVP_PKCS82PKEY") { EVP_PKCS82PKEY(info) }
            return try PrivateKey(handle: EVPKeyHandle(takingOwnershipOf: pointer))
        }
        throw PKCS12Error(kind: .wrongKeyPassword, underlying: lastError)
    }

    /// A PKCS#12 store holding one key entry: `key` with `certificates` (its own first) under the alias
    /// `friendlyName`, protected by `password` with OpenSSL 3's defaults (PBES2 AES-256-CBC, HMAC-SHA-256
    /// MAC), which keytool (Java 11.0.12+/17) and apksigner read.
    public static func make(key: PrivateKey, certificates: [Certificate], friendlyName: String, password: [UInt8]) throws -> [UInt8] {
        guard let leaf = certificates.first else {
            throw PKCS12Error(kind: .creationFailed, underlying: OpenSSLError(function: "PKCS12_create", reasons: ["no certificate"]))
        }
        do {
            let chain = try openSSLPointer("sk_X509_new_null") { apkpatch_sk_X509_new_null() }
            defer { apkpatch_sk_X509_pop_free(chain) }
            for certificate in certificates.dropFirst() {
                guard X509_up_ref(certificate.handle.pointer) == 1 else { throw OpenSSLError.drain("X509_up_ref") }
                guard apkpatch_sk_X509_push(chain, certificate.handle.pointer) > 0 else {
                    X509_free(certificate.handle.pointer)
                    throw OpenSSLError.drain("sk_X509_push")
                }
            }
            let store = try withCPassword(password) { pass in
                try openSSLPointer("PKCS12_create") {
                    PKCS12_create(pass, friendlyName, key.handle.pointer, leaf.handle.pointer, chain, 0, 0, 0, 0, 0)
                }
            }
            defer { PKCS12_free(store) }
            return try encodeDER("i2d_PKCS12") { i2d_PKCS12(store, $0) }
        } catch let error as OpenSSLError {
            throw PKCS12Error(kind: .creationFailed, underlying: error)
        }
    }
}

/// The keys and certificates of a store's bags, in file order, and the entries they make.
struct PKCS12Contents {
    private var keys: [(name: String?, id: [UInt8]?, key: Result<PrivateKey, PKCS12Error>)] = []
    private var certificates: [(name: String?, id: [UInt8]?, certificate: Certificate)] = []
    /// Whether the MAC or an encrypted safe proved the store password right: if not, a key that did not decrypt
    /// may mean a wrong store password as well as a key password of its own.
    var storePasswordVerified = true

    /// Takes the keys and certificates of `bags` (a STACK_OF(PKCS12_SAFEBAG)); `decryptKey` opens a shrouded key
    /// bag, given with its index in `bags`.
    mutating func collect(_ bags: OpaquePointer, decryptKey: (_ bag: OpaquePointer, _ index: Int32) throws -> PrivateKey) throws {
        for index in 0..<apkpatch_sk_PKCS12_SAFEBAG_num(bags) {
            guard let bag = apkpatch_sk_PKCS12_SAFEBAG_value(bags, index) else { continue }
            let name: String? = PKCS12_get_friendlyname(bag).map { pointer in
                defer { apkpatch_OPENSSL_free(pointer) }
                return String(cString: pointer)
            }
            let id: [UInt8]? = apkpatch_PKCS12_SAFEBAG_localKeyID(bag).map { octets in
                Array(UnsafeBufferPointer(start: ASN1_STRING_get0_data(octets), count: Int(ASN1_STRING_length(octets))))
            }
            switch PKCS12_SAFEBAG_get_nid(bag) {
            case NID_pkcs8ShroudedKeyBag:
                do {
                    keys.append((name, id, .success(try decryptKey(bag, index))))
                } catch let error as PKCS12Error where error.kind == .wrongKeyPassword || error.isUnsupported {
                    keys.append((name, id, .failure(error)))
                }
            case NID_keyBag:
                guard let info = PKCS12_SAFEBAG_get0_p8inf(bag) else { continue }
                let pointer = try openSSLPointer("EVP_PKCS82PKEY") { EVP_PKCS82PKEY(info) }
                keys.append((name, id, .success(try PrivateKey(handle: EVPKeyHandle(takingOwnershipOf: pointer)))))
            case NID_certBag:
                guard PKCS12_SAFEBAG_get_bag_nid(bag) == NID_x509Certificate else { continue }
                let x509 = try openSSLPointer("PKCS12_SAFEBAG_get1_cert") { PKCS12_SAFEBAG_get1_cert(bag) }
                defer { X509_free(x509) }
                let der = try encodeDER("i2d_X509") { i2d_X509(x509, $0) }
                certificates.append((name, id, try Certificate(derEncoded: der)))
            default:
                continue   // CRL, secret and nested bags: nothing a signer needs
            }
        }
    }

    func entries() -> [PKCS12Entry] {
        var entries: [PKCS12Entry] = []
        var usedCertificates = Set<Int>()
        for key in keys {
            // The key's own certificate: same localKeyID, else same friendlyName, else the one whose public
            // key matches.
            let leafIndex = certificates.indices.first { key.id != nil && certificates[$0].id == key.id }
                ?? certificates.indices.first { key.name != nil && certificates[$0].name == key.name }
                ?? certificates.indices.first { (try? key.key.get())?.matches(certificates[$0].certificate) == true }
            var chain: [Certificate] = []
            if let leafIndex {
                usedCertificates.insert(leafIndex)
                var inChain: Set<Int> = [leafIndex]
                chain.append(certificates[leafIndex].certificate)
                // Follow issuers among the store's certificates (keytool writes CA certificates as bags of their
                // own, without localKeyID; a CA that is also a key entry may appear only once).
                while chain.count < 16, let last = chain.last, last.issuerNameDER != last.subjectNameDER {
                    let candidates = certificates.indices.filter {
                        !inChain.contains($0) && certificates[$0].certificate.subjectNameDER == last.issuerNameDER
                    }
                    guard let next = candidates.first(where: { certificates[$0].id == nil }) ?? candidates.first else { break }
                    inChain.insert(next)
                    if certificates[next].id == nil { usedCertificates.insert(next) }
                    chain.append(certificates[next].certificate)
                }
            }
            var keyError: PKCS12Error?
            if case .failure(let error) = key.key {
                keyError = storePasswordVerified || error.isUnsupported ? error
                    : PKCS12Error(kind: .wrongStoreOrKeyPassword, underlying: error.underlying)
            }
            entries.append(PKCS12Entry(friendlyName: key.name ?? leafIndex.flatMap { certificates[$0].name },
                                       localKeyID: key.id, privateKey: try? key.key.get(), keyError: keyError, certificates: chain))
        }
        // Named certificates that are neither a key's own nor an unnamed chain member: trusted-certificate entries.
        for (index, certificate) in certificates.enumerated() where !usedCertificates.contains(index) && certificate.name != nil {
            entries.append(PKCS12Entry(friendlyName: certificate.name, localKeyID: certificate.id, privateKey: nil, keyError: nil,
                                       certificates: [certificate.certificate]))
        }
        return entries
    }
}
