internal import COpenSSL

/// The private-key protection of Java's JCEKS keystores (com.sun.crypto.provider.KeyProtector, OID
/// 1.3.6.1.4.1.42.2.19.1): Sun's "PBEWithMD5AndTripleDES", which no standard defines. The key and IV come from
/// PBES1Core's DESede derivation: each half of the 8-byte salt (the first half reversed when the two are equal) is
/// hashed with the password, then the digest with the password, `iterations` times in all with MD5; the two
/// digests are the 24-byte 3DES key and the 8-byte IV. The plaintext is a PKCS#8 PrivateKeyInfo.
package enum JCEKeyProtector {
    package static let objectIdentifier = "1.3.6.1.4.1.42.2.19.1"
    /// KeyProtector refuses more (a hostile store would otherwise buy minutes of hashing).
    package static let maximumIterations = PBEIterationLimit.maximum

    package enum Failure: Error, Equatable {
        case malformed(String)
        /// Java's PBEKey takes only printable ASCII, so no such password can have protected a key.
        case passwordNotPrintableASCII
        case wrongPassword
    }

    /// The PKCS#8 DER of the key protected with `password` (UTF-16 big-endian, Java's chars), from the
    /// AlgorithmIdentifier's parameters (PBEParameter ::= SEQUENCE { salt OCTET STRING, iterationCount INTEGER })
    /// and the encrypted data. The result is a secret: the caller wipes it.
    /// Throws `Failure`.
    package static func recover(parameters: ArraySlice<UInt8>, encrypted: ArraySlice<UInt8>, passwordUTF16BE: [UInt8]) throws -> [UInt8] {
        var reader = DERReader(parameters)
        guard let sequence = try? reader.read(), reader.isAtEnd, sequence.tag == DER.sequenceTag,
              let fields = try? sequence.children(), fields.count == 2, fields[0].tag == DER.octetStringTag,
              let iterations = PBES2Parameters.positiveInt32(fields[1]) else {
            throw Failure.malformed("its PBEWithMD5AndTripleDES parameters are not a salt and an iteration count")
        }
        var salt = Array(fields[0].contents)
        guard salt.count == 8 else { throw Failure.malformed("its PBEWithMD5AndTripleDES salt is \(salt.count) bytes, not 8") }
        guard iterations <= maximumIterations else {
            throw Failure.malformed("its PBEWithMD5AndTripleDES iteration count \(iterations) is above Java's limit of \(maximumIterations)")
        }
        guard !encrypted.isEmpty, encrypted.count % 8 == 0 else { throw Failure.malformed("its encrypted key is \(encrypted.count) bytes, not whole 3DES blocks") }

        var password: [UInt8] = []
        for index in stride(from: 0, to: passwordUTF16BE.count - 1, by: 2) {
            let unit = UInt16(passwordUTF16BE[index]) << 8 | UInt16(passwordUTF16BE[index + 1])
            guard (0x20...0x7e).contains(unit) else { PasswordKDF.wipe(&password); throw Failure.passwordNotPrintableASCII }
            password.append(UInt8(unit))
        }
        defer { PasswordKDF.wipe(&password) }

        if salt[0..<4].elementsEqual(salt[4..<8]) { salt[0..<4].reverse() }
        var derived = [UInt8](repeating: 0, count: 32)
        defer { PasswordKDF.wipe(&derived) }
        for half in 0..<2 {
            let first = Array(salt[(half * 4)..<(half * 4 + 4)])
            let derivedHalf = derived.withUnsafeMutableBufferPointer { output in
                apkpatch_md5_chain(first, first.count, password, password.count, UInt(iterations), output.baseAddress! + half * 16)
            }
            guard derivedHalf == 1 else {
                ERR_clear_error()
                throw Failure.malformed("OpenSSL's MD5 failed")
            }
        }
        var key = Array(derived[0..<24]), iv = Array(derived[24..<32])
        defer { PasswordKDF.wipe(&key); PasswordKDF.wipe(&iv) }
        let plaintext = Array(encrypted).withUnsafeBytes { cbcDecrypt(EVP_des_ede3_cbc(), $0, key: key, iv: iv) }
        // A wrong password passes the padding check one time in 256: then the plaintext is no PrivateKeyInfo.
        guard var plaintext else { throw Failure.wrongPassword }
        var keyReader = DERReader(plaintext)
        guard let info = try? keyReader.read(), keyReader.isAtEnd, info.tag == DER.sequenceTag,
              let fields = try? info.children(), fields.first?.tag == DER.integerTag else {
            PasswordKDF.wipe(&plaintext)
            throw Failure.wrongPassword
        }
        return plaintext
    }
}
