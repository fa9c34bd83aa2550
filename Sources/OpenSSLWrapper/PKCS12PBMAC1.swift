internal import COpenSSL

/// RFC 9579's integrity MAC for PKCS#12: PBMAC1 (RFC 8018 7.1), an HMAC over the authenticated safe keyed by
/// PBKDF2 of the password's bytes as given (not the BMPString the PKCS#12 KDF takes), with the salt, iterations,
/// key length and PRF of its own parameters; MacData's salt and iteration count are not used. `openssl pkcs12
/// -export -pbmac1_pbkdf2` (OpenSSL 3.4 and later) writes it. The OpenSSL linked here (3.0) does not know it as a
/// MAC, so it is checked here, as OpenSSL 3.4's PKCS12_verify_mac checks it.
struct PBMAC1Parameters {
    let salt: [UInt8]
    let iterations: Int
    let keyLength: Int
    /// PBKDF2's PRF digest, and whether it is SHA-256 (PasswordKDF derives those with the store's other keys).
    let prf: OpaquePointer
    let prfIsSHA256: Bool
    /// The HMAC's digest (messageAuthScheme).
    let mac: OpaquePointer

    /// The parameters of a PBMAC1 AlgorithmIdentifier; nil when it is not PBMAC1 with PBKDF2 (explicit salt,
    /// iterations 1...2³¹-1, the key length RFC 9579 requires, 1...64 bytes) and one of the HMACs above.
    init?(algorithmIdentifierDER der: [UInt8]) {
        // SEQUENCE { id-PBMAC1, PBMAC1-params SEQUENCE { keyDerivationFunc SEQUENCE { id-PBKDF2, PBKDF2-params },
        //                                               messageAuthScheme SEQUENCE { hmacWith..., NULL? } } }
        guard let parameters = PKCS5.parameterFields(of: der, oid: PKCS5.pbmac1OID), parameters.count == 2,
              let kdfParameters = PKCS5.pbkdf2Fields(parameters[0]), (3...4).contains(kdfParameters.count),
              kdfParameters[0].tag == DER.octetStringTag, let iterations = PBES2Parameters.positiveInt32(kdfParameters[1]),
              let keyLength = PBES2Parameters.positiveInt32(kdfParameters[2]), keyLength <= 64,
              let mac = HMACAlgorithm.digest(parameters[1]) else { return nil }
        // PBKDF2-params' prf is HMAC-SHA-1 when absent (RFC 8018 A.2).
        let prf: (digest: OpaquePointer, isSHA256: Bool)
        if kdfParameters.count == 4 {
            guard let digest = HMACAlgorithm.digest(kdfParameters[3]) else { return nil }
            prf = digest
        } else {
            prf = (FetchedDigests.sha1, false)
        }
        salt = Array(kdfParameters[0].contents)
        self.iterations = iterations
        self.keyLength = keyLength
        self.prf = prf.digest
        prfIsSHA256 = prf.isSHA256
        self.mac = mac.digest
    }

    /// The MAC key as PasswordKDF derives it with the store's other keys: only for a SHA-256 PRF.
    func request(password: [UInt8]) -> PasswordKDF.Request? {
        guard prfIsSHA256 else { return nil }
        return PasswordKDF.Request(kind: .pbkdf2HMACSHA256, password: password, salt: salt, iterations: iterations, length: keyLength)
    }

    /// The MAC key by OpenSSL's PKCS5_PBKDF2_HMAC, for any PRF; nil if OpenSSL fails.
    func deriveWithOpenSSL(password: [UInt8]) -> [UInt8]? {
        var key = [UInt8](repeating: 0, count: keyLength)
        let status = withCPassword(password) { pass in
            PKCS5_PBKDF2_HMAC(pass, Int32(password.count), salt, Int32(salt.count), Int32(iterations), prf, Int32(keyLength), &key)
        }
        ERR_clear_error()
        guard status == 1 else { PasswordKDF.wipe(&key); return nil }
        return key
    }
}

/// The HMAC AlgorithmIdentifiers of RFC 8018 B.1.2 (PBKDF2's PRF, PBMAC1's MAC) and the digests they stand for.
enum HMACAlgorithm {
    /// The HMAC algorithms RFC 8018 B.1.2 names (and OpenSSL maps to digests), with the digest each stands for.
    private static let hmacs: [(oid: [UInt8], digest: String)] = [
        (DER.objectIdentifier("1.2.840.113549.2.7"), "SHA1"),
        (DER.objectIdentifier("1.2.840.113549.2.8"), "SHA224"),
        (DER.objectIdentifier("1.2.840.113549.2.9"), "SHA256"),
        (DER.objectIdentifier("1.2.840.113549.2.10"), "SHA384"),
        (DER.objectIdentifier("1.2.840.113549.2.11"), "SHA512"),
        (DER.objectIdentifier("1.2.840.113549.2.12"), "SHA512-224"),
        (DER.objectIdentifier("1.2.840.113549.2.13"), "SHA512-256"),
    ]

    /// The digest of an HMAC AlgorithmIdentifier (parameters NULL or absent).
    static func digest(_ element: DERElement) -> (digest: OpaquePointer, isSHA256: Bool)? {
        guard element.tag == DER.sequenceTag, let parts = try? element.children(), (1...2).contains(parts.count),
              parts.count == 1 || parts[1].encoded.elementsEqual(DER.null),
              let hmac = hmacs.first(where: { parts[0].encoded.elementsEqual($0.oid) }) else { return nil }
        switch hmac.digest {
        case "SHA1": return (FetchedDigests.sha1, false)
        case "SHA224": return (FetchedDigests.sha224, false)
        case "SHA256": return (FetchedDigests.sha256, true)
        case "SHA384": return (FetchedDigests.sha384, false)
        case "SHA512": return (FetchedDigests.sha512, false)
        default:
            // A static method object (nothing to free), fetched from the default provider when used.
            guard let digest = EVP_get_digestbyname(hmac.digest) else { ERR_clear_error(); return nil }
            return (digest, false)
        }
    }
}
