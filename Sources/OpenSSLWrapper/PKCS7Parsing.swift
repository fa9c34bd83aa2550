// PKCS #7 / CMS SignedData parsing for JAR (APK v1) signature blocks, as Android reads them.
//
// Written as a small BER reader rather than over OpenSSL's d2i_PKCS7 on purpose: Android verifies a
// SignerInfo's signature over the *verbatim* encoding of its signed attributes (only the first byte changed
// from [0] IMPLICIT to UNIVERSAL SET, see apksig's V1SchemeVerifier), and needs the exact bytes of each
// certificate and of the issuer name. OpenSSL re-encodes those, so we keep the byte ranges ourselves and use
// OpenSSL only for X.509 and signature arithmetic.

/// One BER-encoded ASN.1 element: its tag and where its value and whole encoding lie in the input.
package struct BERElement: Sendable {
    /// The tag class (0 universal, 1 application, 2 context-specific, 3 private).
    package var tagClass: UInt8
    package var isConstructed: Bool
    package var tagNumber: UInt64
    /// The whole encoding (identifier, length, contents, end-of-contents octets if indefinite).
    package var encoded: ArraySlice<UInt8>
    /// The contents octets.
    package var contents: ArraySlice<UInt8>

    package var isUniversalSequence: Bool { tagClass == 0 && isConstructed && tagNumber == 16 }
    package var isUniversalSet: Bool { tagClass == 0 && isConstructed && tagNumber == 17 }
    package func isContextSpecific(_ number: UInt64) -> Bool { tagClass == 2 && tagNumber == number }

    /// The children of a constructed element.
    package func children() throws -> [BERElement] {
        guard isConstructed else { throw ASN1Error("expected a constructed element, found a primitive one (tag \(tagNumber))") }
        return try BERElement.parseAll(contents)
    }

    /// Parses the element at the start of `bytes`, returning it and advancing `bytes` past it.
    package static func parse(_ bytes: inout ArraySlice<UInt8>, depth: Int = 0) throws -> BERElement {
        guard depth < 64 else { throw ASN1Error("nesting deeper than 64 levels") }
        let start = bytes.startIndex
        var i = start
        func next() throws -> UInt8 {
            guard i < bytes.endIndex else { throw ASN1Error("truncated element") }
            defer { i += 1 }
            return bytes[i]
        }
        let identifier = try next()
        let tagClass = identifier >> 6
        let constructed = identifier & 0x20 != 0
        var tagNumber = UInt64(identifier & 0x1f)
        if tagNumber == 0x1f {
            tagNumber = 0
            var count = 0
            while true {
                let b = try next()
                count += 1
                guard count <= 8 else { throw ASN1Error("tag number too large") }
                tagNumber = (tagNumber << 7) | UInt64(b & 0x7f)
                if b & 0x80 == 0 { break }
            }
        }
        let first = try next()
        var contentsRange: Range<Int>
        var end: Int
        if first == 0x80 {
            // Indefinite length: only for constructed encodings; contents run to the end-of-contents octets.
            guard constructed else { throw ASN1Error("indefinite length on a primitive element") }
            let contentsStart = i
            var rest = bytes[i...]
            while true {
                guard rest.count >= 2 else { throw ASN1Error("indefinite-length element without end-of-contents") }
                if rest[rest.startIndex] == 0 && rest[rest.startIndex + 1] == 0 { break }
                _ = try parse(&rest, depth: depth + 1)
            }
            contentsRange = contentsStart..<rest.startIndex
            end = rest.startIndex + 2
        } else {
            var length: Int
            if first & 0x80 == 0 {
                length = Int(first)
            } else {
                let count = Int(first & 0x7f)
                guard count >= 1, count <= 4 else { throw ASN1Error("length of \(count) bytes is not supported") }
                length = 0
                for _ in 0..<count { length = (length << 8) | Int(try next()) }
            }
            guard length <= bytes.endIndex - i else {
                throw ASN1Error("element of \(length) bytes runs past the \(bytes.endIndex - i) bytes available")
            }
            contentsRange = i..<(i + length)
            end = i + length
        }
        let element = BERElement(tagClass: tagClass, isConstructed: constructed, tagNumber: tagNumber,
                                 encoded: bytes[start..<end], contents: bytes[contentsRange])
        bytes = bytes[end...]
        return element
    }

    /// Parses a sequence of consecutive elements filling `bytes` exactly.
    package static func parseAll(_ bytes: ArraySlice<UInt8>) throws -> [BERElement] {
        var rest = bytes
        var out: [BERElement] = []
        while !rest.isEmpty { out.append(try parse(&rest)) }
        return out
    }

    /// Parses exactly one element filling `bytes` (trailing data is an error).
    package static func parseSingle(_ bytes: ArraySlice<UInt8>) throws -> BERElement {
        var rest = bytes
        let element = try parse(&rest)
        guard rest.isEmpty else { throw ASN1Error("\(rest.count) unexpected bytes after the element") }
        return element
    }

    /// The dotted form of an OBJECT IDENTIFIER element.
    package func objectIdentifier() throws -> String {
        guard tagClass == 0, !isConstructed, tagNumber == 6, !contents.isEmpty else { throw ASN1Error("expected an OBJECT IDENTIFIER") }
        var arcs: [UInt64] = []
        var value: UInt64 = 0
        var bits = 0
        for byte in contents {
            value = (value << 7) | UInt64(byte & 0x7f)
            bits += 7
            guard bits <= 63 else { throw ASN1Error("OBJECT IDENTIFIER arc too large") }
            if byte & 0x80 == 0 { arcs.append(value); value = 0; bits = 0 }
        }
        guard bits == 0, let first = arcs.first else { throw ASN1Error("truncated OBJECT IDENTIFIER") }
        let head: [UInt64] = first < 40 ? [0, first] : first < 80 ? [1, first - 40] : [2, first - 80]
        return (head + arcs.dropFirst()).map(String.init).joined(separator: ".")
    }

    /// The contents of a (possibly constructed, BER) OCTET STRING.
    package func octetString() throws -> [UInt8] {
        guard tagClass == 0, tagNumber == 4 else { throw ASN1Error("expected an OCTET STRING") }
        if !isConstructed { return Array(contents) }
        return try children().flatMap { try $0.octetString() }
    }
}

/// Malformed ASN.1.
package struct ASN1Error: Error, CustomStringConvertible {
    package let message: String
    package init(_ message: String) { self.message = message }
    package var description: String { "malformed ASN.1: \(message)" }
}

/// An AlgorithmIdentifier: the OID (parameters are not needed by Android's JAR verifier).
package struct PKCS7AlgorithmIdentifier: Sendable {
    package var oid: String
    init(_ element: BERElement) throws {
        guard element.isUniversalSequence, let first = try element.children().first else {
            throw ASN1Error("expected an AlgorithmIdentifier SEQUENCE")
        }
        oid = try first.objectIdentifier()
    }
}

/// One SignerInfo of a SignedData.
package struct PKCS7SignerInfo: Sendable {
    /// The issuer Name of IssuerAndSerialNumber, exactly as encoded; nil when the signer is identified by
    /// subjectKeyIdentifier (which Android does not support).
    package var issuerNameDER: [UInt8]?
    /// The serial number INTEGER contents as encoded (two's complement, big-endian).
    package var serialNumber: [UInt8]?
    package var digestAlgorithm: PKCS7AlgorithmIdentifier
    package var signatureAlgorithm: PKCS7AlgorithmIdentifier
    /// The signed attributes' verbatim encoding, starting with the [0] IMPLICIT tag byte.
    package var signedAttributesEncoded: [UInt8]?
    package var signature: [UInt8]

    /// The signed attributes as (type OID, values), parsed from `signedAttributesEncoded`.
    package func signedAttributes() throws -> [(type: String, values: [BERElement])] {
        guard let encoded = signedAttributesEncoded else { return [] }
        let set = try BERElement.parseSingle(encoded[...])
        return try set.children().map { attribute in
            let parts = try attribute.children()
            guard attribute.isUniversalSequence, parts.count == 2, parts[1].isUniversalSet else {
                throw ASN1Error("malformed Attribute")
            }
            return (try parts[0].objectIdentifier(), try parts[1].children())
        }
    }
}

/// PKCS #7 SignedData (RFC 2315 / RFC 5652) as found in META-INF/*.RSA|DSA|EC.
package struct PKCS7SignedData: Sendable {
    package static let signedDataOID = "1.2.840.113549.1.7.2"
    package static let dataOID = "1.2.840.113549.1.7.1"
    package static let contentTypeAttributeOID = "1.2.840.113549.1.9.3"
    package static let messageDigestAttributeOID = "1.2.840.113549.1.9.4"

    /// encapContentInfo.eContentType.
    package var encapsulatedContentType: String
    /// The certificates bag, each exactly as encoded.
    package var certificates: [[UInt8]]
    package var signerInfos: [PKCS7SignerInfo]

    /// Parses a ContentInfo holding SignedData.
    package init(berEncoded bytes: [UInt8]) throws {
        var rest = bytes[...]
        let contentInfo = try BERElement.parse(&rest)
        guard contentInfo.isUniversalSequence else { throw ASN1Error("ContentInfo is not a SEQUENCE") }
        let ciParts = try contentInfo.children()
        guard ciParts.count >= 1 else { throw ASN1Error("empty ContentInfo") }
        let contentType = try ciParts[0].objectIdentifier()
        guard contentType == Self.signedDataOID else {
            throw ASN1Error("unsupported ContentInfo.contentType: \(contentType)")
        }
        guard ciParts.count >= 2, ciParts[1].isContextSpecific(0), ciParts[1].isConstructed else {
            throw ASN1Error("ContentInfo has no content")
        }
        let explicit = try ciParts[1].children()
        guard explicit.count == 1, explicit[0].isUniversalSequence else { throw ASN1Error("SignedData is not a SEQUENCE") }
        var fields = try explicit[0].children()[...]
        guard fields.count >= 4 else { throw ASN1Error("SignedData has too few fields") }
        // version INTEGER
        guard fields.first!.tagClass == 0, fields.first!.tagNumber == 2 else { throw ASN1Error("SignedData.version is not an INTEGER") }
        fields = fields.dropFirst()
        // digestAlgorithms SET OF AlgorithmIdentifier
        guard fields.first!.isUniversalSet else { throw ASN1Error("SignedData.digestAlgorithms is not a SET") }
        fields = fields.dropFirst()
        // encapContentInfo
        let encap = fields.first!
        guard encap.isUniversalSequence, let eType = try encap.children().first else {
            throw ASN1Error("malformed SignedData.encapContentInfo")
        }
        encapsulatedContentType = try eType.objectIdentifier()
        fields = fields.dropFirst()
        certificates = []
        if let next = fields.first, next.isContextSpecific(0) {
            guard next.isConstructed else { throw ASN1Error("SignedData.certificates is not constructed") }
            certificates = try next.children().map { Array($0.encoded) }
            fields = fields.dropFirst()
        }
        if let next = fields.first, next.isContextSpecific(1) { fields = fields.dropFirst() }  // crls
        guard let infos = fields.first, infos.isUniversalSet else { throw ASN1Error("SignedData.signerInfos is not a SET") }
        signerInfos = try infos.children().map(Self.parseSignerInfo)
    }

    private static func parseSignerInfo(_ element: BERElement) throws -> PKCS7SignerInfo {
        guard element.isUniversalSequence else { throw ASN1Error("SignerInfo is not a SEQUENCE") }
        var parts = try element.children()[...]
        guard parts.count >= 5 else { throw ASN1Error("SignerInfo has too few fields") }
        parts = parts.dropFirst()  // version
        let sid = parts.first!
        parts = parts.dropFirst()
        var issuer: [UInt8]?
        var serial: [UInt8]?
        if sid.isUniversalSequence {
            let ids = try sid.children()
            guard ids.count == 2, ids[0].isUniversalSequence, ids[1].tagClass == 0, ids[1].tagNumber == 2 else {
                throw ASN1Error("malformed IssuerAndSerialNumber")
            }
            issuer = Array(ids[0].encoded)
            serial = Array(ids[1].contents)
        } else if !sid.isContextSpecific(0) {
            throw ASN1Error("unsupported SignerIdentifier")
        }
        let digestAlgorithm = try PKCS7AlgorithmIdentifier(parts.first!)
        parts = parts.dropFirst()
        var signedAttributes: [UInt8]?
        if let next = parts.first, next.isContextSpecific(0) {
            guard next.isConstructed else { throw ASN1Error("signedAttrs is not constructed") }
            signedAttributes = Array(next.encoded)
            parts = parts.dropFirst()
        }
        guard let algorithm = parts.first else { throw ASN1Error("SignerInfo has no signatureAlgorithm") }
        let signatureAlgorithm = try PKCS7AlgorithmIdentifier(algorithm)
        parts = parts.dropFirst()
        guard let signature = parts.first else { throw ASN1Error("SignerInfo has no signature") }
        return PKCS7SignerInfo(issuerNameDER: issuer, serialNumber: serial, digestAlgorithm: digestAlgorithm,
                               signatureAlgorithm: signatureAlgorithm, signedAttributesEncoded: signedAttributes,
                               signature: try signature.octetString())
    }
}
