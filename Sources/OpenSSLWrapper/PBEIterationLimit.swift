/// Java's ceiling on password-based iteration counts (PKCS12KeyStore's and KeyProtector's MAX_ITERATION_COUNT):
/// keytool refuses a store above it ("MAC iteration count too large"), and so does apkpatch, before any key
/// derivation runs, ours or OpenSSL's (which has no ceiling): a count of 2³¹-1 would buy an hour of hashing.
package enum PBEIterationLimit {
    package static let maximum = 5_000_000
    package static let function = "password-based iteration count check"

    /// Throws when `count` is above the limit; `what` names whose count it is ("MAC", "key", ...).
    static func check(_ count: Int, _ what: String) throws(OpenSSLError) {
        guard count > maximum else { return }
        throw OpenSSLError(function: function, reasons: [
            "\(what) iteration count too large: \(count) (keytool refuses more than \(maximum); the file is damaged or was made to stall its reader)",
        ])
    }

    /// Throws when the AlgorithmIdentifier (DER) is PBES2 or PBMAC1 with PBKDF2, PKCS#12 PBE or PBES1 and its
    /// iteration count is above the limit; any other shape is the decryption's to judge.
    static func check(algorithmIdentifierDER der: some Collection<UInt8>, _ what: String) throws(OpenSSLError) {
        if let count = iterations(algorithmIdentifierDER: Array(der)) { try check(count, what) }
    }

    static func iterations(algorithmIdentifierDER der: [UInt8]) -> Int? {
        var reader = DERReader(der)
        guard let algorithm = try? reader.read(), algorithm.tag == DER.sequenceTag,
              let top = try? algorithm.children(), top.count == 2, top[1].tag == DER.sequenceTag,
              var parameters = try? top[1].children() else { return nil }
        // PBES2-params and PBMAC1-params: SEQUENCE { keyDerivationFunc AlgorithmIdentifier, ... }, with
        // PBKDF2-params SEQUENCE { salt, iterationCount, ... }.
        if top[0].encoded.elementsEqual(PKCS5.pbes2OID) || top[0].encoded.elementsEqual(PKCS5.pbmac1OID) {
            guard let kdfParameters = parameters.first.flatMap(PKCS5.pbkdf2Fields) else { return nil }
            parameters = kdfParameters
        }
        // pkcs-12PbeParams and PBEParameter: SEQUENCE { salt OCTET STRING, iterationCount INTEGER }.
        guard parameters.count >= 2, parameters[0].tag == DER.octetStringTag else { return nil }
        return count(parameters[1])
    }

    /// A non-negative INTEGER's value, Int.max when it does not fit; nil for anything else.
    static func count(_ element: DERElement) -> Int? {
        let bytes = element.contents.drop { $0 == 0 }
        guard element.tag == DER.integerTag, let first = element.contents.first, first & 0x80 == 0 else { return nil }
        guard bytes.count <= 7 else { return Int.max }
        return bytes.reduce(0) { $0 << 8 | Int($1) }
    }
}
