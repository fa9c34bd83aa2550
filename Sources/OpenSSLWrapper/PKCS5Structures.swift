/// The RFC 8018 (PKCS #5) structures that several readers take apart: PBES2's parameters (encrypted keys and
/// safes) and PBMAC1's (RFC 9579 MACs), both with PBKDF2 as their key derivation. Read here once; each reader
/// then judges the fields it needs (the ciphers, PRFs and counts it takes).
enum PKCS5 {
    static let pbkdf2OID = DER.objectIdentifier("1.2.840.113549.1.5.12")
    static let pbes2OID = DER.objectIdentifier("1.2.840.113549.1.5.13")
    static let pbmac1OID = DER.objectIdentifier("1.2.840.113549.1.5.14")

    /// The fields of the parameters of `der`, an AlgorithmIdentifier SEQUENCE { `oid`, SEQUENCE { ... } } and
    /// nothing after it; nil for another algorithm or shape.
    static func parameterFields(of der: [UInt8], oid: [UInt8]) -> [DERElement]? {
        var reader = DERReader(der)
        guard let algorithm = try? reader.read(), reader.isAtEnd, algorithm.tag == DER.sequenceTag,
              let top = try? algorithm.children(), top.count == 2, top[0].encoded.elementsEqual(oid),
              top[1].tag == DER.sequenceTag else { return nil }
        return try? top[1].children()
    }

    /// PBKDF2-params' fields (salt, iterationCount, keyLength OPTIONAL, prf DEFAULT hmacWithSHA1), as many as
    /// the encoding holds, when `keyDerivationFunc` is SEQUENCE { id-PBKDF2, SEQUENCE { ... } }; nil otherwise.
    static func pbkdf2Fields(_ keyDerivationFunc: DERElement) -> [DERElement]? {
        guard keyDerivationFunc.tag == DER.sequenceTag, let parts = try? keyDerivationFunc.children(), parts.count == 2,
              parts[0].encoded.elementsEqual(pbkdf2OID), parts[1].tag == DER.sequenceTag else { return nil }
        return try? parts[1].children()
    }

    /// PBES2-params' parts when `der` is SEQUENCE { id-PBES2, SEQUENCE { SEQUENCE { id-PBKDF2, SEQUENCE { salt,
    /// iterations, keyLength?, prf? } }, SEQUENCE { cipher OID, params } } }: PBKDF2's 2 to 4 fields and the
    /// encryptionScheme's parts (not empty).
    static func pbes2Parts(_ der: [UInt8]) -> (kdf: [DERElement], scheme: [DERElement])? {
        guard let parameters = parameterFields(of: der, oid: pbes2OID), parameters.count == 2,
              let kdf = pbkdf2Fields(parameters[0]), (2...4).contains(kdf.count),
              parameters[1].tag == DER.sequenceTag, let scheme = try? parameters[1].children(), !scheme.isEmpty else { return nil }
        return (kdf, scheme)
    }
}
