internal import COpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Owns one `X509`; the only place it is freed.
final class X509Handle: @unchecked Sendable {
    // Sendable: the certificate is never modified after parsing; OpenSSL guards its internal caches.
    let pointer: OpaquePointer
    init(takingOwnershipOf pointer: OpaquePointer) { self.pointer = pointer }
    deinit { X509_free(pointer) }
}

/// An X.509 certificate. `derBytes` are exactly the bytes that were parsed and are never re-encoded:
/// Android compares signing certificates byte for byte, and apksig keeps the encoded form for the same
/// reason (`GuaranteedEncodedFormX509Certificate`). Equality and hashing use `derBytes`.
public struct Certificate: Sendable, Hashable, CustomStringConvertible {
    /// The DER encoding, exactly as parsed.
    public let derBytes: [UInt8]
    let handle: X509Handle

    /// Parses one DER certificate; trailing bytes are an error.
    public init(derEncoded: [UInt8]) throws {
        var consumed = 0
        let pointer: OpaquePointer = try derEncoded.withUnsafeBufferPointer { buffer in
            try openSSLPointer("d2i_X509") {
                var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
                let result = d2i_X509(nil, &cursor, buffer.count)
                if let cursor, let base = buffer.baseAddress { consumed = cursor - base }
                return result
            }
        }
        handle = X509Handle(takingOwnershipOf: pointer)
        guard consumed == derEncoded.count else {
            throw OpenSSLError(function: "d2i_X509", reasons: ["\(derEncoded.count - consumed) bytes after the certificate"])
        }
        derBytes = derEncoded
    }

    /// Parses every certificate in `pemOrDER`: PEM (`-----BEGIN CERTIFICATE-----` blocks, other blocks
    /// ignored) or one or more concatenated DER certificates. Throws if none is found.
    public static func parseAll(pemOrDER bytes: [UInt8]) throws -> [Certificate] {
        let leading = bytes.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0a || $0 == 0x0d }
        if leading.first == 0x30 {
            var reader = DERReader(bytes)
            var certificates: [Certificate] = []
            while !reader.isAtEnd {
                let element = try reader.read(expecting: DER.sequenceTag, "certificate")
                certificates.append(try Certificate(derEncoded: Array(element.encoded)))
            }
            guard !certificates.isEmpty else { throw OpenSSLError(function: "d2i_X509", reasons: ["no certificate found"]) }
            return certificates
        }
        var certificates: [Certificate] = []
        try withReadOnlyMemoryBIO(wrapping: bytes) { bio in
            while true {
                var name: UnsafeMutablePointer<CChar>?
                var header: UnsafeMutablePointer<CChar>?
                var data: UnsafeMutablePointer<UInt8>?
                var length = 0
                ERR_clear_error()
                guard PEM_read_bio(bio, &name, &header, &data, &length) == 1 else {
                    // End of input shows as "no start line"; anything else after a block is malformed PEM.
                    let error = OpenSSLError.drain("PEM_read_bio")
                    if certificates.isEmpty || !error.reasons.allSatisfy({ $0.contains("no start line") }) {
                        if certificates.isEmpty {
                            throw OpenSSLError(function: "PEM_read_bio", reasons: error.reasons + ["no certificate found (expected PEM or DER)"])
                        }
                        throw error
                    }
                    return
                }
                defer {
                    apkpatch_OPENSSL_free(name); apkpatch_OPENSSL_free(header); apkpatch_OPENSSL_free(data)
                }
                let label = name.map { String(cString: $0) } ?? ""
                guard label == "CERTIFICATE" || label == "X509 CERTIFICATE" else { continue }
                let der = data.map { Array(UnsafeBufferPointer(start: $0, count: length)) } ?? []
                certificates.append(try Certificate(derEncoded: der))
            }
        }
        return certificates
    }

    /// Builds a self-signed certificate for `key`, as `keytool -genkeypair` does: version 3, a random
    /// positive 64-bit serial number, the subject as issuer, a SubjectKeyIdentifier, signed with SHA-256
    /// (SHA-384 for P-384, SHA-512 for P-521 keys).
    /// - Parameters:
    ///   - subject: a distinguished name in keytool's `-dname` syntax ("CN=Android Debug,O=Android,C=US").
    ///   - notBefore: seconds since 1970 (UTC).
    ///   - validityDays: days from `notBefore` to the end of validity.
    public static func makeSelfSigned(key: PrivateKey, subject: String, notBefore: Int64, validityDays: Int) throws -> Certificate {
        let relativeDistinguishedNames = try DistinguishedName.parse(subject)
        let certificate = try openSSLPointer("X509_new") { X509_new() }
        defer { X509_free(certificate) }
        try openSSLCheck("X509_set_version") { X509_set_version(certificate, 2) }

        var serial = [UInt8](repeating: 0, count: 8)
        try openSSLCheck("RAND_bytes") { RAND_bytes(&serial, Int32(serial.count)) }
        serial[0] = (serial[0] & 0x7f) | 0x01   // positive, and a full 8 bytes like keytool's
        let serialNumber = try openSSLPointer("BN_bin2bn") { BN_bin2bn(serial, Int32(serial.count), nil) }
        defer { BN_free(serialNumber) }
        _ = try openSSLPointer("BN_to_ASN1_INTEGER") { BN_to_ASN1_INTEGER(serialNumber, X509_get_serialNumber(certificate)) }

        let name = try openSSLPointer("X509_NAME_new") { X509_NAME_new() }
        defer { X509_NAME_free(name) }
        // Java encodes the most significant RDN (the last one written) first.
        for rdn in relativeDistinguishedNames.reversed() {
            for (index, attribute) in rdn.enumerated() {
                let object = try openSSLPointer("OBJ_txt2obj") { OBJ_txt2obj(attribute.oid, 1) }
                defer { ASN1_OBJECT_free(object) }
                let value = Array(attribute.value.utf8)
                try openSSLCheck("X509_NAME_add_entry_by_OBJ") {
                    X509_NAME_add_entry_by_OBJ(name, object, MBSTRING_UTF8, value, Int32(value.count), -1, index == 0 ? 0 : -1)
                }
            }
        }
        try openSSLCheck("X509_set_subject_name") { X509_set_subject_name(certificate, name) }
        try openSSLCheck("X509_set_issuer_name") { X509_set_issuer_name(certificate, name) }

        var start = time_t(notBefore)
        _ = try openSSLPointer("X509_time_adj_ex") { X509_time_adj_ex(X509_getm_notBefore(certificate), 0, 0, &start) }
        _ = try openSSLPointer("X509_time_adj_ex") { X509_time_adj_ex(X509_getm_notAfter(certificate), Int32(validityDays), 0, &start) }
        try openSSLCheck("X509_set_pubkey") { X509_set_pubkey(certificate, key.handle.pointer) }

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, certificate, certificate, nil, nil, 0)
        let extensionValue = try openSSLPointer("X509V3_EXT_conf_nid") {
            X509V3_EXT_conf_nid(nil, &context, NID_subject_key_identifier, "hash")
        }
        defer { X509_EXTENSION_free(extensionValue) }
        try openSSLCheck("X509_add_ext") { X509_add_ext(certificate, extensionValue, -1) }

        let signingDigest: OpaquePointer
        switch (key.algorithm, key.bitSize) {
        case (.ec, 384): signingDigest = EVP_sha384()
        case (.ec, 521): signingDigest = EVP_sha512()
        default: signingDigest = EVP_sha256()
        }
        ERR_clear_error()
        guard X509_sign(certificate, key.handle.pointer, signingDigest) > 0 else { throw OpenSSLError.drain("X509_sign") }
        let der = try encodeDER("i2d_X509") { i2d_X509(certificate, $0) }
        return try Certificate(derEncoded: der)
    }

    public static func == (lhs: Certificate, rhs: Certificate) -> Bool { lhs.derBytes == rhs.derBytes }
    public func hash(into hasher: inout Hasher) { hasher.combine(derBytes) }

    /// The subject as apksigner prints it (Java's `X500Name.toString()`): most significant RDN last,
    /// ", " between RDNs, " + " inside a multi-valued RDN, keywords CN, OU, O, L, ST, C, ..., values quoted
    /// where RFC 1779 needs it. E.g. "CN=Android Debug, O=Android, C=US".
    public var subjectDN: String { DistinguishedName.javaString(X509_get_subject_name(handle.pointer)) }

    /// The issuer, formatted like `subjectDN`.
    public var issuerDN: String { DistinguishedName.javaString(X509_get_issuer_name(handle.pointer)) }

    /// The serial number's INTEGER contents octets in minimal two's-complement form (what Java's
    /// `BigInteger.toByteArray()` gives, and what apksig writes into a SignerInfo's IssuerAndSerialNumber).
    public var serialNumberDER: [UInt8] {
        (try? TBSFields(certificateDER: derBytes).serialContents).map { Array(DER.minimalInteger($0)) } ?? []
    }

    /// The issuer Name exactly as encoded in the certificate.
    public var issuerNameDER: [UInt8] { (try? TBSFields(certificateDER: derBytes).issuer).map(Array.init) ?? [] }

    /// The subject Name exactly as encoded in the certificate.
    public var subjectNameDER: [UInt8] { (try? TBSFields(certificateDER: derBytes).subject).map(Array.init) ?? [] }

    /// Start of validity, UTC, ISO 8601 ("2026-11-22T05:25:40Z").
    public var notBefore: String { Self.iso8601(notBeforeSeconds) }
    /// End of validity, UTC, ISO 8601.
    public var notAfter: String { Self.iso8601(notAfterSeconds) }
    /// Start of validity in seconds since 1970 (UTC).
    public var notBeforeSeconds: Int64 { Self.seconds(X509_get0_notBefore(handle.pointer)) }
    /// End of validity in seconds since 1970 (UTC).
    public var notAfterSeconds: Int64 { Self.seconds(X509_get0_notAfter(handle.pointer)) }

    /// The certificate's public key.
    public func publicKey() throws -> PublicKey {
        let pointer = try openSSLPointer("X509_get_pubkey") { X509_get_pubkey(handle.pointer) }
        let keyHandle = EVPKeyHandle(takingOwnershipOf: pointer)
        return PublicKey(handle: keyHandle, algorithm: try KeyAlgorithm(evpKey: pointer))
    }

    /// The digest of `derBytes` (apksigner prints SHA-256, SHA-1 and MD5 fingerprints).
    public func fingerprint(_ algorithm: DigestAlgorithm) -> [UInt8] { Digest.hash(derBytes, with: algorithm) }

    /// The signature algorithm's name as OpenSSL knows it ("sha256WithRSAEncryption", "ecdsa-with-SHA256").
    public var signatureAlgorithmName: String {
        let nid = X509_get_signature_nid(handle.pointer)
        return OBJ_nid2ln(nid).map { String(cString: $0) } ?? "unknown"
    }

    public var description: String { "Certificate(\(subjectDN), SHA-256 \(fingerprint(.sha256).hexString))" }

    private static func seconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64 {
        var parts = tm()
        guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else { return 0 }
        return Int64(timegm(&parts))
    }

    private static func iso8601(_ seconds: Int64) -> String {
        var value = time_t(seconds)
        var parts = tm()
        gmtime_r(&value, &parts)
        func pad(_ number: Int32, _ width: Int) -> String {
            let text = String(number)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))Z"
    }
}

/// The TBSCertificate fields read straight from the DER (RFC 5280 §4.1), so they are the exact bytes.
struct TBSFields {
    let serialContents: ArraySlice<UInt8>
    let issuer: ArraySlice<UInt8>
    let subject: ArraySlice<UInt8>

    init(certificateDER: [UInt8]) throws {
        // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue }
        // TBSCertificate ::= SEQUENCE { [0] EXPLICIT version OPTIONAL, serialNumber INTEGER,
        //   signature AlgorithmIdentifier, issuer Name, validity, subject Name, ... }
        var outer = DERReader(certificateDER)
        let certificate = try outer.read(expecting: DER.sequenceTag, "Certificate")
        var body = DERReader(certificate.contents)
        let tbs = try body.read(expecting: DER.sequenceTag, "TBSCertificate")
        var fields = DERReader(tbs.contents)
        var element = try fields.read()
        if element.tag == 0xa0 { element = try fields.read() }
        guard element.tag == DER.integerTag else { throw DERError("TBSCertificate: serialNumber expected") }
        serialContents = element.contents
        _ = try fields.read(expecting: DER.sequenceTag, "signature")
        issuer = try fields.read(expecting: DER.sequenceTag, "issuer").encoded
        _ = try fields.read(expecting: DER.sequenceTag, "validity")
        subject = try fields.read(expecting: DER.sequenceTag, "subject").encoded
    }
}

extension DER {
    /// Strips redundant leading sign octets from INTEGER contents (0x00 before a clear top bit, 0xFF before
    /// a set one), giving the minimal two's-complement form.
    package static func minimalInteger(_ contents: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var value = contents
        while value.count > 1 {
            let first = value[value.startIndex], second = value[value.startIndex + 1]
            if (first == 0x00 && second & 0x80 == 0) || (first == 0xff && second & 0x80 != 0) {
                value = value.dropFirst()
            } else { break }
        }
        return value
    }
}

/// Distinguished names: Java-style printing and keytool `-dname` parsing.
enum DistinguishedName {
    struct Attribute { let oid: String; let value: String }

    /// Java's `AVAKeyword` table: the keyword `X500Name.toString()` prints for each attribute type. Where
    /// Java registers two keywords for one OID the later wins (ST over S, EMAILADDRESS over EMAIL, DNQ).
    static let keywordsByOID: [String: String] = [
        "2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
        "2.5.4.12": "T", "1.3.6.1.4.1.42.2.11.2.1": "IP", "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC",
        "2.5.4.46": "DNQ", "2.5.4.4": "SURNAME", "2.5.4.42": "GIVENNAME", "2.5.4.43": "INITIALS",
        "2.5.4.44": "GENERATION", "1.2.840.113549.1.9.1": "EMAILADDRESS", "0.9.2342.19200300.100.1.1": "UID",
        "2.5.4.5": "SERIALNUMBER",
    ]

    /// Keywords accepted when parsing (keytool's, case-insensitive).
    static let oidsByKeyword: [String: String] = {
        var map: [String: String] = [:]
        for (oid, keyword) in keywordsByOID { map[keyword] = oid }
        map["S"] = "2.5.4.8"; map["EMAIL"] = "1.2.840.113549.1.9.1"; map["DNQUALIFIER"] = "2.5.4.46"
        return map
    }()

    static func javaString(_ name: OpaquePointer?) -> String {
        guard let name else { return "" }
        let count = X509_NAME_entry_count(name)
        var rdns: [[String]] = []
        var lastSet: Int32 = -1
        for index in 0..<count {
            guard let entry = X509_NAME_get_entry(name, index) else { continue }
            let set = X509_NAME_ENTRY_set(entry)
            let text = attributeString(entry)
            if set == lastSet, !rdns.isEmpty { rdns[rdns.count - 1].append(text) } else { rdns.append([text]) }
            lastSet = set
        }
        return rdns.reversed().map { $0.joined(separator: " + ") }.joined(separator: ", ")
    }

    private static func attributeString(_ entry: OpaquePointer) -> String {
        var oidBuffer = [CChar](repeating: 0, count: 128)
        let object = X509_NAME_ENTRY_get_object(entry)
        let oidLength = OBJ_obj2txt(&oidBuffer, Int32(oidBuffer.count), object, 1)
        let oid = oidLength > 0 ? String(decoding: oidBuffer.prefix(Int(oidLength)).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        let keyword = keywordsByOID[oid] ?? "OID." + oid
        guard let data = X509_NAME_ENTRY_get_data(entry) else { return keyword + "=" }
        let type = ASN1_STRING_type(data)
        if isStringType(type) {
            var utf8: UnsafeMutablePointer<UInt8>?
            let length = ASN1_STRING_to_UTF8(&utf8, data)
            if length >= 0, let utf8 {
                defer { apkpatch_OPENSSL_free(utf8) }
                return keyword + "=" + quoted(String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self))
            }
        }
        // Not a string: Java prints '#' and the hex of the value's DER encoding.
        let contents = ASN1_STRING_get0_data(data).map { Array(UnsafeBufferPointer(start: $0, count: Int(ASN1_STRING_length(data)))) } ?? []
        return keyword + "=#" + DER.tlv(UInt8(truncatingIfNeeded: type), contents).hexString
    }

    /// The ASN.1 string types whose value Java prints as text. (A switch, not a set literal: that set would be
    /// built on every call, and the first set of a type costs a scan of every protocol conformance record.)
    private static func isStringType(_ type: Int32) -> Bool {
        switch type {
        case V_ASN1_UTF8STRING, V_ASN1_PRINTABLESTRING, V_ASN1_T61STRING, V_ASN1_IA5STRING,
             V_ASN1_BMPSTRING, V_ASN1_UNIVERSALSTRING, V_ASN1_GENERALSTRING, V_ASN1_VISIBLESTRING: return true
        default: return false
        }
    }

    /// Java's `AVA.toKeywordValueString` quoting: backslash before '"' and '\', and the whole value in
    /// quotes when it holds one of ,+=\n<>#;\" or leading, trailing or doubled spaces.
    static func quoted(_ value: String) -> String {
        let characters = Array(value)
        if characters.count > 1, characters.first == "\"", characters.last == "\"" { return value }
        var needsQuotes = false
        var previousWhite = false
        var out = ""
        for (index, character) in characters.enumerated() {
            if index == 0, character == " " || character == "\n" { needsQuotes = true }
            switch character {
            case ",", "+", "=", "\n", "<", ">", "#", ";", "\\", "\"": needsQuotes = true
            default: break
            }
            if character == " " || character == "\n" {
                if previousWhite { needsQuotes = true }
                previousWhite = true
            } else {
                if character == "\"" || character == "\\" { out.append("\\") }
                previousWhite = false
            }
            out.append(character)
        }
        if let last = out.last, last == " " || last == "\n" { needsQuotes = true }
        return needsQuotes ? "\"" + out + "\"" : out
    }

    /// Parses keytool's `-dname` syntax: RDNs separated by ',' (or ';'), attributes in one RDN by '+',
    /// `KEYWORD=value` or `OID.1.2.3=value` / `1.2.3=value`, values optionally quoted, '\' escapes.
    /// Returns RDNs in the order written (most specific first, e.g. CN before C).
    static func parse(_ text: String) throws -> [[Attribute]] {
        var rdns: [[Attribute]] = [[]]
        var key = "", value = ""
        var inValue = false, inQuotes = false, escaped = false
        func finishAttribute() throws {
            let trimmedKey = key.trimmingSpaces()
            let trimmedValue = inValue ? value.trimmingSpaces() : ""
            guard !trimmedKey.isEmpty, inValue else {
                throw OpenSSLError(function: "dname", reasons: ["malformed distinguished name \"\(text)\": expected KEY=value pairs such as CN=Name,O=Org,C=US"])
            }
            let upper = trimmedKey.uppercased()
            let oid: String
            if let known = oidsByKeyword[upper] { oid = known }
            else if upper.hasPrefix("OID.") { oid = String(trimmedKey.dropFirst(4)) }
            else if trimmedKey.first?.isNumber == true { oid = trimmedKey }
            else {
                throw OpenSSLError(function: "dname", reasons: ["unknown attribute \"\(trimmedKey)\" in distinguished name; use CN, OU, O, L, ST, C, EMAILADDRESS, DC, UID or an OID"])
            }
            rdns[rdns.count - 1].append(Attribute(oid: oid, value: trimmedValue))
            key = ""; value = ""; inValue = false
        }
        for character in text {
            if escaped { (inValue ? { value.append(character) } : { key.append(character) })(); escaped = false; continue }
            if character == "\\" { escaped = true; continue }
            if inQuotes { if character == "\"" { inQuotes = false } else { value.append(character) }; continue }
            switch character {
            case "\"" where inValue: inQuotes = true
            case "=" where !inValue: inValue = true
            case "+": try finishAttribute()
            case ",", ";": try finishAttribute(); rdns.append([])
            default: if inValue { value.append(character) } else { key.append(character) }
            }
        }
        try finishAttribute()
        return rdns
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var slice = Substring(self)
        while slice.first == " " { slice = slice.dropFirst() }
        while slice.last == " " { slice = slice.dropLast() }
        return String(slice)
    }
}
