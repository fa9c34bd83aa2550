internal import COpenSSL

/// The public-key algorithms APK signing uses, named as Java's `Key.getAlgorithm()` names them (which is
/// also the v1 signature block's file extension: `CERT.RSA`, `CERT.EC`, `CERT.DSA`).
public enum KeyAlgorithm: String, Sendable {
    case rsa = "RSA"
    case ec = "EC"
    case dsa = "DSA"

    init(evpKey: OpaquePointer) throws {
        switch EVP_PKEY_get_base_id(evpKey) {
        case EVP_PKEY_RSA: self = .rsa
        case EVP_PKEY_EC: self = .ec
        case EVP_PKEY_DSA: self = .dsa
        default:
            let name = EVP_PKEY_get0_type_name(evpKey).map { String(cString: $0) } ?? "unknown"
            throw OpenSSLError(function: "EVP_PKEY_get_base_id",
                               reasons: ["unsupported key algorithm \(name): APK signing uses RSA, EC or DSA keys"])
        }
    }
}

/// Owns one `EVP_PKEY`; the only place it is freed.
final class EVPKeyHandle: @unchecked Sendable {
    // Sendable: EVP_PKEY is reference-counted and safe for concurrent read-only use (signing creates its own
    // EVP_MD_CTX per call); nothing mutates the key after construction.
    let pointer: OpaquePointer
    init(takingOwnershipOf pointer: OpaquePointer) { self.pointer = pointer }
    deinit { EVP_PKEY_free(pointer) }
}

/// A private key (RSA, EC or DSA) held by OpenSSL. The key material never leaves OpenSSL's memory except
/// through `pkcs8DER()`; `description` does not print it.
public final class PrivateKey: @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable: immutable after init; see EVPKeyHandle.
    let handle: EVPKeyHandle
    /// The key's algorithm.
    public let algorithm: KeyAlgorithm

    init(handle: EVPKeyHandle) throws {
        self.handle = handle
        algorithm = try KeyAlgorithm(evpKey: handle.pointer)
    }

    /// Parses an unencrypted private key in DER: PKCS#8 `PrivateKeyInfo`, or the traditional RSA/EC/DSA forms.
    public convenience init(derEncoded: [UInt8]) throws {
        let pointer: OpaquePointer = try derEncoded.withUnsafeBufferPointer { buffer in
            try openSSLPointer("d2i_AutoPrivateKey") {
                var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
                return d2i_AutoPrivateKey(nil, &cursor, buffer.count)
            }
        }
        try self.init(handle: EVPKeyHandle(takingOwnershipOf: pointer))
    }

    /// Parses an encrypted PKCS#8 `EncryptedPrivateKeyInfo` (DER) with `password`: PBES2, PKCS#12 PBE, or PBES1
    /// (the schemes whose ciphers OpenSSL 3 keeps in its legacy provider by LegacyEncryptedPrivateKey).
    public convenience init(encryptedDEREncoded der: [UInt8], password: [UInt8]) throws {
        try Self.refuseExcessiveIterations(encryptedPrivateKeyInfo: der)
        let pointer: OpaquePointer
        do {
            pointer = try withReadOnlyMemoryBIO(wrapping: der) { bio in
                try withCPassword(password) { passwordPointer in
                    try openSSLPointer("d2i_PKCS8PrivateKey_bio") {
                        d2i_PKCS8PrivateKey_bio(bio, nil, nil, UnsafeMutableRawPointer(passwordPointer))
                    }
                }
            }
        } catch let error as OpenSSLError {
            switch LegacyEncryptedPrivateKey.decrypt(der, password: password) {
            case .notLegacy: throw error
            case .wrongPassword: throw OpenSSLError(function: "PKCS#8 decryption", reasons: ["bad decrypt"])
            case .unreadable(let scheme): throw UnreadableKeyEncryption(scheme: scheme)
            case .key(let key): self.init(sharing: key); return
            }
        }
        try self.init(handle: EVPKeyHandle(takingOwnershipOf: pointer))
    }

    /// Throws when an EncryptedPrivateKeyInfo's iteration count is above Java's limit, before any derivation.
    private static func refuseExcessiveIterations(encryptedPrivateKeyInfo der: [UInt8]) throws(OpenSSLError) {
        var reader = DERReader(der)
        guard let info = try? reader.read(), info.tag == DER.sequenceTag, let fields = try? info.children(),
              let algorithm = fields.first else { return }
        try PBEIterationLimit.check(algorithmIdentifierDER: algorithm.encoded, "key")
    }

    /// The same OpenSSL key as `key` (the handle is shared; nothing mutates a key after construction).
    private init(sharing key: PrivateKey) {
        handle = key.handle
        algorithm = key.algorithm
    }

    /// Parses a PEM private key (`PRIVATE KEY`, `RSA PRIVATE KEY`, `EC PRIVATE KEY`, ...). Encrypted PEM is
    /// rejected; use `init(pemEncoded:password:)`.
    public convenience init(pemEncoded: String) throws {
        try self.init(pemEncoded: pemEncoded, password: nil)
    }

    /// Parses a PEM private key, decrypting `ENCRYPTED PRIVATE KEY` (or legacy encrypted PEM) with `password`.
    /// Never prompts: without a password an encrypted key fails to open.
    public convenience init(pemEncoded: String, password: [UInt8]?) throws {
        if let der = LegacyEncryptedPrivateKey.der(fromPEM: pemEncoded) { try Self.refuseExcessiveIterations(encryptedPrivateKeyInfo: der) }
        let pointer: OpaquePointer
        do {
            pointer = try withReadOnlyMemoryBIO(wrapping: Array(pemEncoded.utf8)) { bio in
                // A non-NULL user pointer makes PEM_def_callback use it as the password instead of prompting on
                // the terminal; the empty string stands for "no password".
                try withCPassword(password ?? []) { passwordPointer in
                    try openSSLPointer("PEM_read_bio_PrivateKey") {
                        PEM_read_bio_PrivateKey(bio, nil, nil, UnsafeMutableRawPointer(passwordPointer))
                    }
                }
            }
        } catch let error as OpenSSLError {
            // An EncryptedPrivateKeyInfo under a scheme OpenSSL 3 cannot decrypt here: the DER path reads it.
            guard let password, let der = LegacyEncryptedPrivateKey.der(fromPEM: pemEncoded) else { throw error }
            switch LegacyEncryptedPrivateKey.decrypt(der, password: password) {
            case .notLegacy: throw error
            case .wrongPassword: throw OpenSSLError(function: "PKCS#8 decryption", reasons: ["bad decrypt"])
            case .unreadable(let scheme): throw UnreadableKeyEncryption(scheme: scheme)
            case .key(let key): self.init(sharing: key); return
            }
        }
        try self.init(handle: EVPKeyHandle(takingOwnershipOf: pointer))
    }

    /// Generates a new RSA key of `bits` (2048, 3072, 4096...).
    public static func generateRSA(bits: Int) throws -> PrivateKey {
        try generate(algorithmName: "RSA") { context in
            try openSSLCheck("EVP_PKEY_CTX_set_rsa_keygen_bits") { EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) }
        }
    }

    /// Generates a new EC key on a named curve: "P-256", "P-384" or "P-521". The key encodes the curve by
    /// name (what Java and Android expect).
    public static func generateEC(curve: String) throws -> PrivateKey {
        try generate(algorithmName: "EC") { context in
            try openSSLCheck("EVP_PKEY_CTX_set_group_name") { EVP_PKEY_CTX_set_group_name(context, curve) }
        }
    }

    private static func generate(algorithmName: String, configure: (OpaquePointer) throws -> Void) throws -> PrivateKey {
        let context = try openSSLPointer("EVP_PKEY_CTX_new_from_name") { EVP_PKEY_CTX_new_from_name(nil, algorithmName, nil) }
        defer { EVP_PKEY_CTX_free(context) }
        try openSSLCheck("EVP_PKEY_keygen_init") { EVP_PKEY_keygen_init(context) }
        try configure(context)
        var key: OpaquePointer?
        try openSSLCheck("EVP_PKEY_generate") { EVP_PKEY_generate(context, &key) }
        guard let key else { throw OpenSSLError.drain("EVP_PKEY_generate") }
        return try PrivateKey(handle: EVPKeyHandle(takingOwnershipOf: key))
    }

    /// RSA: modulus bits. EC: field bits (256, 384, 521). DSA: prime bits.
    public var bitSize: Int { Int(EVP_PKEY_get_bits(handle.pointer)) }

    /// The matching public key.
    public var publicKey: PublicKey {
        // i2d_PUBKEY on a private key writes only its public half; re-parsing gives an independent object.
        // Cannot fail for a key OpenSSL parsed or generated.
        let spki = (try? encodeDER { i2d_PUBKEY(handle.pointer, $0) }) ?? []
        return (try? PublicKey(subjectPublicKeyInfoDER: spki)) ?? PublicKey(handle: handle, algorithm: algorithm)
    }

    /// Signs `data`: RSA with PKCS#1 v1.5 padding; EC and DSA give the DER-encoded (r, s) SEQUENCE, as Java's
    /// `Signature` (`SHA256withRSA`, `SHA256withECDSA`, ...) produces. RSA signatures are deterministic; DSA
    /// ones too with `dsaNonce: .deterministic` (RFC 6979, Java's `SHA256withDetDSA`).
    public func sign(_ data: [UInt8], digest: DigestAlgorithm, dsaNonce: DSANonce = .random) throws -> [UInt8] {
        try data.withUnsafeBytes { try sign(bytes: $0, digest: digest, dsaNonce: dsaNonce) }
    }

    /// `sign(_:digest:dsaNonce:)` over raw memory.
    public func sign(bytes data: UnsafeRawBufferPointer, digest: DigestAlgorithm, dsaNonce: DSANonce = .random) throws -> [UInt8] {
        if algorithm == .dsa && dsaNonce == .deterministic { return try signDeterministically(bytes: data, digest: digest) }
        let context = try openSSLPointer("EVP_MD_CTX_new") { EVP_MD_CTX_new() }
        defer { EVP_MD_CTX_free(context) }
        try openSSLCheck("EVP_DigestSignInit") { EVP_DigestSignInit(context, nil, digest.evp, nil, handle.pointer) }
        let base = data.baseAddress?.assumingMemoryBound(to: UInt8.self)
        var length = 0
        try openSSLCheck("EVP_DigestSign") { EVP_DigestSign(context, nil, &length, base, data.count) }
        var signature = [UInt8](repeating: 0, count: length)
        try openSSLCheck("EVP_DigestSign") { EVP_DigestSign(context, &signature, &length, base, data.count) }
        return Array(signature.prefix(length))
    }

    /// The key as an unencrypted PKCS#8 `PrivateKeyInfo` (DER). Treat the result as a secret.
    public func pkcs8DER() throws -> [UInt8] {
        let info = try openSSLPointer("EVP_PKEY2PKCS8") { EVP_PKEY2PKCS8(handle.pointer) }
        defer { PKCS8_PRIV_KEY_INFO_free(info) }
        return try encodeDER { i2d_PKCS8_PRIV_KEY_INFO(info, $0) }
    }

    /// Whether `certificate` carries this key's public half.
    public func matches(_ certificate: Certificate) -> Bool {
        guard let certificateKey = try? certificate.publicKey() else { return false }
        return EVP_PKEY_eq(handle.pointer, certificateKey.handle.pointer) == 1
    }

    public var description: String { "PrivateKey(\(algorithm.rawValue) \(bitSize), <redacted>)" }
}

/// A public key (RSA, EC or DSA).
public final class PublicKey: @unchecked Sendable {
    // @unchecked Sendable: immutable after init; see EVPKeyHandle.
    let handle: EVPKeyHandle
    /// The key's algorithm.
    public let algorithm: KeyAlgorithm

    init(handle: EVPKeyHandle, algorithm: KeyAlgorithm) {
        self.handle = handle
        self.algorithm = algorithm
    }

    /// Parses an X.509 `SubjectPublicKeyInfo` (DER), the form certificates and the v2/v3 signer blocks carry.
    public init(subjectPublicKeyInfoDER der: [UInt8]) throws {
        let pointer: OpaquePointer = try der.withUnsafeBufferPointer { buffer in
            try openSSLPointer("d2i_PUBKEY") {
                var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
                return d2i_PUBKEY(nil, &cursor, buffer.count)
            }
        }
        handle = EVPKeyHandle(takingOwnershipOf: pointer)
        algorithm = try KeyAlgorithm(evpKey: pointer)
    }

    /// The key re-encoded as `SubjectPublicKeyInfo` DER. (For the bytes as a certificate carries them, use
    /// the certificate; OpenSSL's encoding matches for the named-curve and RSA keys signing uses.)
    public var subjectPublicKeyInfoDER: [UInt8] {
        (try? encodeDER { i2d_PUBKEY(handle.pointer, $0) }) ?? []
    }

    /// RSA: modulus bits. EC: field bits (256, 384, 521). DSA: prime bits.
    public var bitSize: Int { Int(EVP_PKEY_get_bits(handle.pointer)) }

    /// Checks `signature` over `data`: RSA PKCS#1 v1.5, ECDSA or DSA (DER (r, s)). False on any failure.
    public func verify(signature: [UInt8], data: [UInt8], digest: DigestAlgorithm) -> Bool {
        data.withUnsafeBytes { verify(signature: signature, bytes: $0, digest: digest) }
    }

    /// `verify(signature:data:digest:)` over raw memory.
    public func verify(signature: [UInt8], bytes data: UnsafeRawBufferPointer, digest: DigestAlgorithm) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context); ERR_clear_error() }
        guard EVP_DigestVerifyInit(context, nil, digest.evp, nil, handle.pointer) == 1 else { return false }
        let base = data.baseAddress?.assumingMemoryBound(to: UInt8.self)
        return EVP_DigestVerify(context, signature, signature.count, base, data.count) == 1
    }
}

/// Runs an OpenSSL `i2d_*` function twice (length, then bytes) and returns the DER.
func encodeDER(_ function: String = "i2d", _ i2d: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) throws -> [UInt8] {
    ERR_clear_error()
    let length = i2d(nil)
    guard length > 0 else { throw OpenSSLError.drain(function) }
    var output = [UInt8](repeating: 0, count: Int(length))
    let written = output.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
        return i2d(&cursor)
    }
    guard written == length else { throw OpenSSLError.drain(function) }
    return output
}

/// Runs `body` with `password` as a NUL-terminated C string, wiped afterwards.
func withCPassword<R>(_ password: [UInt8], _ body: (UnsafeMutablePointer<CChar>) throws -> R) rethrows -> R {
    var buffer = password.map { CChar(bitPattern: $0) } + [0]
    defer { for index in buffer.indices { buffer[index] = 0 } }
    return try buffer.withUnsafeMutableBufferPointer { try body($0.baseAddress!) }
}

/// An encrypted private key under a scheme this build does not read (`scheme`: "PBES2 with Blowfish-CBC"), as
/// opposed to a wrong password.
public struct UnreadableKeyEncryption: Error, CustomStringConvertible, Sendable {
    public let scheme: String
    public var description: String { "encrypted with \(scheme), which apkpatch does not read" }
}
