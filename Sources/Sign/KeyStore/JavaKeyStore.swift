import OpenSSLWrapper

/// A Sun/Oracle JKS or JCEKS keystore (`keytool -storetype JKS|JCEKS`), parsed here because OpenSSL does not
/// know the formats. Layout (sun.security.provider.JavaKeyStore and com.sun.crypto.provider.JceKeyStore,
/// `engineLoad`/`engineStore`), all integers big-endian as `DataOutputStream` writes them:
///
///     u32 magic 0xFEEDFEED (JKS) or 0xCECECECE (JCEKS), u32 version (1 or 2), u32 entry count
///     entry: u32 tag (1 = private key, 2 = trusted certificate), UTF alias, u64 creation time (ms)
///       tag 1: u32 length + EncryptedPrivateKeyInfo, u32 chain length,
///              per certificate: [v2: UTF type "X.509"], u32 length + DER
///       tag 2: [v2: UTF type], u32 length + DER
///     20-byte SHA-1 over (password as UTF-16BE, "Mighty Aphrodite", every byte before the digest)
///
/// (UTF = u16 length + modified UTF-8.) Keys are wrapped with Sun's proprietary KeyProtector
/// (OID 1.3.6.1.4.1.42.2.17.1.1): salt(20) ‖ ciphertext ‖ check(20), the keystream being successive
/// SHA-1(password ‖ previous block) starting from the salt, and check = SHA-1(password ‖ plaintext).
/// The plaintext is a PKCS#8 PrivateKeyInfo. JCEKS protects keys with JCEKeyProtector instead (and reads
/// KeyProtector's too); its tag 3, a secret-key entry, is a serialized Java object (JavaSerializedObject).
struct JavaKeyStore {
    static let magic: UInt32 = 0xFEED_FEED
    static let jceksMagic: UInt32 = 0xCECE_CECE
    static let keyProtectorOID = "1.3.6.1.4.1.42.2.17.1.1"

    struct Entry {
        let alias: String
        let creationMilliseconds: Int64
        /// The EncryptedPrivateKeyInfo of a key entry; nil for a trusted certificate or a secret key.
        let protectedKey: [UInt8]?
        let certificates: [Certificate]
        /// A JCEKS secret-key entry (no certificate).
        var isSecretKey = false
    }

    let entries: [Entry]
    /// "JKS" or "JCEKS", for messages.
    let typeName: String

    /// Parses `bytes` and checks the integrity digest with `password`.
    init(bytes: [UInt8], password: Secret) throws {
        var reader = BigEndianReader(bytes)
        switch try reader.readUInt32() {
        case Self.magic: typeName = "JKS"
        case Self.jceksMagic: typeName = "JCEKS"
        default: throw KeyStoreError(.malformed, "not a JKS or JCEKS keystore (no 0xFEEDFEED or 0xCECECECE magic)")
        }
        let version = try reader.readUInt32()
        guard version == 1 || version == 2 else {
            throw KeyStoreError(.malformed, "unsupported \(typeName) version \(version) (expected 1 or 2)")
        }
        let count = try reader.readUInt32()
        var entries: [Entry] = []
        for index in 0..<count {
            let tag = try reader.readUInt32()
            let alias = try reader.readUTF()
            let created = Int64(bitPattern: try reader.readUInt64())
            switch tag {
            case 1:
                let protectedKey = try reader.readBytes(Int(try reader.readUInt32()))
                let chainLength = try reader.readUInt32()
                guard chainLength <= 64 else { throw KeyStoreError(.malformed, "\(typeName) entry \"\(alias)\": implausible chain length \(chainLength)") }
                var chain: [Certificate] = []
                for _ in 0..<chainLength { chain.append(try Self.readCertificate(&reader, version: version, alias: alias, typeName: typeName)) }
                entries.append(Entry(alias: alias, creationMilliseconds: created, protectedKey: protectedKey, certificates: chain))
            case 2:
                let certificate = try Self.readCertificate(&reader, version: version, alias: alias, typeName: typeName)
                entries.append(Entry(alias: alias, creationMilliseconds: created, protectedKey: nil, certificates: [certificate]))
            case 3 where typeName == "JCEKS":
                // A sealed secret key (AES, HMAC...): listed, never used to sign.
                try JavaSerializedObject.skip(&reader)
                entries.append(Entry(alias: alias, creationMilliseconds: created, protectedKey: nil, certificates: [], isSecretKey: true))
            default:
                throw KeyStoreError(.malformed, "\(typeName) entry \(index + 1) has unknown tag \(tag)")
            }
        }
        let signedLength = reader.position
        let storedDigest = try reader.readBytes(20)
        let digest = Digest(.sha1)
        digest.update(password.utf16BigEndian)
        digest.update(Array("Mighty Aphrodite".utf8))
        bytes.withUnsafeBytes { digest.update(UnsafeRawBufferPointer(rebasing: $0[0..<signedLength])) }
        guard digest.finish() == storedDigest else {
            throw KeyStoreError(.wrongStorePassword, "wrong keystore password (\(typeName) integrity check failed)")
        }
        self.entries = entries
    }

    private static func readCertificate(_ reader: inout BigEndianReader, version: UInt32, alias: String, typeName: String) throws -> Certificate {
        if version == 2 {
            let type = try reader.readUTF()
            guard type == "X.509" else {
                throw KeyStoreError(.malformed, "\(typeName) entry \"\(alias)\": unsupported certificate type \(type)")
            }
        }
        let der = try reader.readBytes(Int(try reader.readUInt32()))
        do { return try Certificate(derEncoded: der) } catch {
            throw KeyStoreError(.malformed, "\(typeName) entry \"\(alias)\": certificate does not parse (\(error))")
        }
    }

    /// Unwraps a KeyProtector- or JCEKeyProtector-protected key and returns its PKCS#8 DER. Throws
    /// `.wrongKeyPassword` when the check digest (KeyProtector) or the padding (JCEKeyProtector) says so.
    static func recoverKey(_ encryptedPrivateKeyInfo: [UInt8], password: Secret, alias: String) throws -> [UInt8] {
        // EncryptedPrivateKeyInfo ::= SEQUENCE { AlgorithmIdentifier, OCTET STRING }
        let encrypted: [UInt8]
        do {
            var outer = DERReader(encryptedPrivateKeyInfo)
            let info = try outer.read(expecting: DER.sequenceTag, "EncryptedPrivateKeyInfo")
            var fields = DERReader(info.contents)
            let algorithm = try fields.read(expecting: DER.sequenceTag, "AlgorithmIdentifier")
            var algorithmFields = DERReader(algorithm.contents)
            let oid = try algorithmFields.read(expecting: DER.objectIdentifierTag, "algorithm")
            let encryptedData = try fields.read(expecting: DER.octetStringTag, "encryptedData").contents
            let algorithmName = DER.dottedObjectIdentifier(oid.contents)
            if algorithmName == JCEKeyProtector.objectIdentifier {
                var parameters: ArraySlice<UInt8> = []
                if !algorithmFields.isAtEnd { parameters = try algorithmFields.read().encoded }
                do {
                    return try JCEKeyProtector.recover(parameters: parameters, encrypted: encryptedData, passwordUTF16BE: password.utf16BigEndian)
                } catch let failure as JCEKeyProtector.Failure {
                    switch failure {
                    case .wrongPassword:
                        throw KeyStoreError(.wrongKeyPassword, "wrong password for key \"\(alias)\"")
                    case .passwordNotPrintableASCII:
                        throw KeyStoreError(.wrongKeyPassword, "wrong password for key \"\(alias)\" (Java protects JCEKS keys only with printable ASCII passwords)")
                    case .malformed(let reason):
                        throw KeyStoreError(.malformed, "key \"\(alias)\": \(reason)")
                    }
                }
            }
            guard algorithmName == keyProtectorOID else {
                throw KeyStoreError(.unsupportedType,
                                    "key \"\(alias)\" is protected with \(algorithmName ?? "an unknown algorithm"), neither JKS's nor JCEKS's key protection; convert the store to PKCS12 with keytool -importkeystore")
            }
            encrypted = Array(encryptedData)
        } catch let error as DERError {
            throw KeyStoreError(.malformed, "key \"\(alias)\": \(error)")
        }
        let saltLength = 20, checkLength = 20
        guard encrypted.count > saltLength + checkLength else {
            throw KeyStoreError(.malformed, "key \"\(alias)\": protected key is too short (\(encrypted.count) bytes)")
        }
        let salt = Array(encrypted[0..<saltLength])
        let cipher = encrypted[saltLength..<(encrypted.count - checkLength)]
        let check = Array(encrypted[(encrypted.count - checkLength)...])
        let passwordBytes = password.utf16BigEndian

        var plain = [UInt8](); plain.reserveCapacity(cipher.count)
        var block = salt
        var cipherIndex = cipher.startIndex
        while cipherIndex < cipher.endIndex {
            let digest = Digest(.sha1)
            digest.update(passwordBytes)
            digest.update(block)
            block = digest.finish()
            for byte in block where cipherIndex < cipher.endIndex {
                plain.append(cipher[cipherIndex] ^ byte)
                cipherIndex += 1
            }
        }
        let verify = Digest(.sha1)
        verify.update(passwordBytes)
        verify.update(plain)
        guard verify.finish() == check else {
            for index in plain.indices { plain[index] = 0 }
            throw KeyStoreError(.wrongKeyPassword, "wrong password for key \"\(alias)\"")
        }
        return plain
    }
}

/// A bounds-checked big-endian cursor (Java's DataInputStream order). Hostile input throws.
struct BigEndianReader {
    private let bytes: [UInt8]
    private(set) var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func readBytes(_ count: Int) throws -> [UInt8] {
        guard count >= 0, bytes.count - position >= count else {
            throw KeyStoreError(.malformed, "keystore truncated: need \(count) bytes at offset \(position), \(bytes.count - position) available")
        }
        defer { position += count }
        return Array(bytes[position..<(position + count)])
    }

    mutating func readUInt16() throws -> UInt16 { try readBytes(2).reduce(0) { $0 << 8 | UInt16($1) } }
    mutating func readUInt32() throws -> UInt32 { try readBytes(4).reduce(0) { $0 << 8 | UInt32($1) } }
    mutating func readUInt64() throws -> UInt64 { try readBytes(8).reduce(0) { $0 << 8 | UInt64($1) } }

    /// Java's `readUTF`: a u16 length and modified UTF-8 (NUL as C0 80, supplementary characters as two
    /// 3-byte surrogates), decoded through UTF-16.
    mutating func readUTF() throws -> String {
        let data = try readBytes(Int(try readUInt16()))
        var units: [UInt16] = []
        var index = 0
        while index < data.count {
            let first = data[index]
            if first < 0x80 {
                units.append(UInt16(first)); index += 1
            } else if first & 0xe0 == 0xc0, index + 1 < data.count {
                units.append(UInt16(first & 0x1f) << 6 | UInt16(data[index + 1] & 0x3f)); index += 2
            } else if first & 0xf0 == 0xe0, index + 2 < data.count {
                units.append(UInt16(first & 0x0f) << 12 | UInt16(data[index + 1] & 0x3f) << 6 | UInt16(data[index + 2] & 0x3f))
                index += 3
            } else {
                throw KeyStoreError(.malformed, "malformed modified UTF-8 in keystore alias")
            }
        }
        return String(decoding: units, as: UTF16.self)
    }
}
