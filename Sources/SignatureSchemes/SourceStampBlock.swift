import APKCore

/// A source stamp: a second signature, by the distributor's stamp key (an app store), over the digests the APK's
/// own signatures cover, so that an installed app can be traced to where it came from (apksig
/// `internal/apk/stamp/`). The APK names the stamp certificate by its SHA-256 digest in the `stamp-cert-sha256`
/// entry (covered by the APK's signatures); the stamp itself is pair 0x6dff800d of the APK Signing Block,
/// outside what those signatures cover.
public enum SourceStamp {
    /// The entry holding the SHA-256 digest of the stamp certificate (apksig
    /// `SOURCE_STAMP_CERTIFICATE_HASH_ZIP_ENTRY_NAME`).
    public static let certificateDigestEntryName = "stamp-cert-sha256"

    /// The signature scheme IDs a stamp signs digests for (apksig `Constants.VERSION_*`). A stamp has no
    /// v3.1 entry: the v3.0 block that must accompany a v3.1 block is what it signs.
    public enum Scheme {
        public static let jar: UInt32 = 1
        public static let v2: UInt32 = 2
        public static let v3: UInt32 = 3
        public static let v31: UInt32 = 31
    }

    /// The content digest ID of the JAR scheme's stamped digest: SHA-256 of META-INF/MANIFEST.MF (apksig
    /// `ContentDigestAlgorithm.SHA256`), beside the chunked IDs of `ContentDigestAlgorithm.id`.
    public static let manifestDigestID: UInt32 = 4

    /// Stamp attribute IDs (`SourceStampConstants`).
    public enum AttributeID {
        /// The stamp key's rotation history, in the format of a v3 signer's lineage.
        public static let proofOfRotation: UInt32 = 0x9d63_03f7
        /// When the stamp was signed: the first 8 bytes of the value, a little-endian int64 of epoch seconds.
        public static let timestamp: UInt32 = 0xe43c_5946
    }

    /// The bytes a stamp signs for one scheme (apksig `encodeAsSequenceOfLengthPrefixedPairsOfIntAndLengthPrefixedBytes`
    /// over the scheme's digests sorted by ID): for each digest, uint32 length of what follows, uint32 content
    /// digest ID, length-prefixed digest.
    public static func signedDigestBytes(_ digests: [UInt32: [UInt8]]) -> [UInt8] {
        digests.sorted { $0.key < $1.key }.flatMap { AlgorithmTaggedValue(algorithmID: $0.key, value: $0.value).encoded() }
    }
}

/// The value of the source stamp pair (ID `SigningBlock.ID.sourceStamp`, 0x6dff800d) in the APK Signing Block, as
/// apksig's `V2SourceStampSigner.generateSourceStampBlock` writes it:
///
///     length-prefixed stamp block:
///         length-prefixed bytes: the stamp certificate (X.509, DER)
///         length-prefixed sequence of length-prefixed signed scheme digests:
///             uint32 signature scheme ID (`SourceStamp.Scheme`)
///             length-prefixed sequence of signatures (`AlgorithmTaggedValue`) over `SourceStamp.signedDigestBytes`
///         length-prefixed bytes: the stamp attributes, a length-prefixed sequence of length-prefixed
///             (uint32 ID, value) pairs (`SourceStamp.AttributeID`)
///         length-prefixed sequence of signatures (`AlgorithmTaggedValue`) over the stamp attributes' bytes
///
/// The last two fields are optional (older stamps end after the signed digests). Verifiers read the fields in
/// this order and judge each before reading the next (`SourceStampVerifier` in Verify), so a malformed field
/// after a bad certificate is reported as the bad certificate, as apksig does.
public struct SourceStampBlock: Sendable, Hashable {
    /// The signatures over one scheme's digests.
    public struct SchemeSignatures: Sendable, Hashable {
        public var scheme: UInt32
        public var signatures: [AlgorithmTaggedValue]
        public init(scheme: UInt32, signatures: [AlgorithmTaggedValue]) { self.scheme = scheme; self.signatures = signatures }
    }

    /// The stamp attributes exactly as signed, and the signatures over them.
    public struct SignedAttributes: Sendable, Hashable {
        /// The encoded attribute sequence (with its own length prefix), the bytes the signatures cover.
        public var encoded: [UInt8]
        public var signatures: [AlgorithmTaggedValue]
        public init(encoded: [UInt8], signatures: [AlgorithmTaggedValue]) { self.encoded = encoded; self.signatures = signatures }

        /// `attributes` encoded as apksig's `encodeStampAttributes` does, in the order given.
        public static func encode(_ attributes: [(id: UInt32, value: [UInt8])]) -> [UInt8] {
            LengthPrefixed.encode(attributes.flatMap { LengthPrefixed.encode($0.id.littleEndianBytes + $0.value) })
        }
    }

    public var certificate: [UInt8]
    public var schemeSignatures: [SchemeSignatures]
    public var attributes: SignedAttributes?

    public init(certificate: [UInt8], schemeSignatures: [SchemeSignatures], attributes: SignedAttributes?) {
        self.certificate = certificate; self.schemeSignatures = schemeSignatures; self.attributes = attributes
    }

    /// The pair value, byte for byte as apksig writes it (schemes in the order given; apksig sorts them by ID).
    public func encoded() -> [UInt8] {
        var body = LengthPrefixed.encode(certificate)
        body += LengthPrefixed.encode(schemeSignatures.flatMap { scheme in
            LengthPrefixed.encode(scheme.scheme.littleEndianBytes + LengthPrefixed.encode(scheme.signatures.flatMap { $0.encoded() }))
        })
        if let attributes {
            body += LengthPrefixed.encode(attributes.encoded)
            body += LengthPrefixed.encode(attributes.signatures.flatMap { $0.encoded() })
        }
        return LengthPrefixed.encode(body)
    }

    /// The APK Signing Block pair carrying this stamp.
    public var pair: SigningBlock.Pair { SigningBlock.Pair(id: SigningBlock.ID.sourceStamp, value: encoded()) }

    /// Parses a whole pair value, every field at once (for tools and tests; verifying reads field by field, see
    /// the type's comment). Bytes after the stamp block are ignored, as apksig does.
    public init(decoding value: [UInt8]) throws {
        var outer = value[...]
        var body = try LengthPrefixed.take(&outer, what: "source stamp block")
        let certificate = Array(try LengthPrefixed.take(&body, what: "source stamp certificate"))
        var schemes: [SchemeSignatures] = []
        for item in try LengthPrefixed.split(try LengthPrefixed.take(&body, what: "source stamp signed digests"), what: "signed digests") {
            var rest = item
            let scheme = try LengthPrefixed.takeUInt32(&rest, what: "source stamp signature scheme ID")
            schemes.append(SchemeSignatures(scheme: scheme, signatures: try Self.signatures(try LengthPrefixed.take(&rest, what: "signatures"))))
        }
        var attributes: SignedAttributes?
        if !body.isEmpty {
            let encoded = Array(try LengthPrefixed.take(&body, what: "source stamp attributes"))
            attributes = SignedAttributes(encoded: encoded, signatures: try Self.signatures(try LengthPrefixed.take(&body, what: "attribute signatures")))
        }
        self.init(certificate: certificate, schemeSignatures: schemes, attributes: attributes)
    }

    private static func signatures(_ bytes: ArraySlice<UInt8>) throws -> [AlgorithmTaggedValue] {
        try LengthPrefixed.split(bytes, what: "source stamp signatures").enumerated().map { index, item in
            try AlgorithmTaggedValue.decode(item, what: "source stamp signature #\(index + 1)")
        }
    }
}

extension ContentDigestAlgorithm {
    /// apksig's `ContentDigestAlgorithm.getId()`: what a source stamp names the digest by.
    public var id: UInt32 {
        switch self {
        case .chunkedSHA256: return 1
        case .chunkedSHA512: return 2
        case .verityChunkedSHA256: return 3
        }
    }
}
