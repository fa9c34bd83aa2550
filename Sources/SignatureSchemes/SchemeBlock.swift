import APKCore

/// The two wire formats of APK Signing Block signer blocks. v3.1 (block ID 0x1b93ad61) uses the v3 format.
public enum SignatureSchemeVersion: Int, Sendable, Hashable, CustomStringConvertible {
    case v2 = 2
    case v3 = 3

    /// The ID of this scheme's pair in the APK Signing Block.
    public var blockID: UInt32 { self == .v2 ? SigningBlock.ID.v2 : SigningBlock.ID.v3 }

    /// "APK Signature Scheme v2" / "v3", as apksigner names them.
    public var description: String { "APK Signature Scheme v\(rawValue)" }
}

/// A 32-bit algorithm ID with a length-prefixed value: the shape of both the digests in signed data and
/// the signatures over it.
///
///     uint32 length of what follows (the pair)
///     uint32 signature algorithm ID
///     uint32 length of value, then the value
public struct AlgorithmTaggedValue: Sendable, Hashable {
    /// A `SignatureAlgorithm` ID; kept raw because verifiers must skip IDs they do not know.
    public var algorithmID: UInt32
    public var value: [UInt8]
    public init(algorithmID: UInt32, value: [UInt8]) { self.algorithmID = algorithmID; self.value = value }
    public init(algorithm: SignatureAlgorithm, value: [UInt8]) { self.init(algorithmID: algorithm.id, value: value) }
    /// The known algorithm, or nil for an ID apksig does not know.
    public var algorithm: SignatureAlgorithm? { SignatureAlgorithm(id: algorithmID) }

    func encoded() -> [UInt8] {
        var w = LittleEndianWriter(capacity: 12 + value.count)
        w.write(UInt32(8 + value.count))
        w.write(algorithmID)
        w.write(UInt32(value.count))
        w.write(bytes: value)
        return w.bytes
    }

    static func decode(_ bytes: ArraySlice<UInt8>, what: String) throws -> AlgorithmTaggedValue {
        var rest = bytes
        guard rest.count >= 8 else { throw SchemeBlockFormatError("\(what) too short: \(rest.count) bytes") }
        let id = readUInt32(&rest)
        let value = try LengthPrefixed.take(&rest, what: what)
        return AlgorithmTaggedValue(algorithmID: id, value: Array(value))
    }
}

/// An additional attribute in a signer's signed data: uint32 ID, then the value (the rest of the
/// length-prefixed element).
public struct AdditionalAttribute: Sendable, Hashable {
    public var id: UInt32
    public var value: [UInt8]
    public init(id: UInt32, value: [UInt8]) { self.id = id; self.value = value }

    /// Attribute IDs apksig writes (`V2SchemeConstants`, `V3SchemeConstants`).
    public enum ID {
        /// v2 signers: "this APK was also signed with scheme N" (value uint32 N, 3 for v3). A v2-only
        /// verifier ignores it; Android P+ rejects an APK whose v2 signer claims a v3 signature that is absent.
        public static let strippingProtection: UInt32 = 0xbeef_f00d
        /// v3 signers: the signing certificate lineage (proof of rotation).
        public static let proofOfRotation: UInt32 = 0x3ba0_6f8c
        /// v3.0 signers: minimum SDK of the v3.1 block (its stripping protection).
        public static let rotationMinSdkVersion: UInt32 = 0x559f_8b02
        /// v3.0 and v3.1 signers: minimum SDK of the v3.2 (hybrid) block (its stripping protection).
        public static let hybridMinSdkVersion: UInt32 = 0xbf94_0529
        /// v3.x signers that target a development release.
        public static let signerTargetsDevRelease: UInt32 = 0xc2a6_b3ba
    }

    /// The v2 stripping-protection attribute naming `scheme` (apksig writes it with 3 when v3 is enabled).
    public static func strippingProtection(scheme: Int = 3) -> AdditionalAttribute {
        AdditionalAttribute(id: ID.strippingProtection, value: UInt32(truncatingIfNeeded: scheme).littleEndianBytes)
    }

    /// The v3.0 signer's stripping protection of a v3.1 block: the lowest minSdkVersion of the v3.1 signers.
    public static func rotationMinSdkVersion(_ level: Int) -> AdditionalAttribute {
        AdditionalAttribute(id: ID.rotationMinSdkVersion, value: UInt32(truncatingIfNeeded: level).littleEndianBytes)
    }

    /// A v3.1 signer's mark that its minSdkVersion names the development release after that level (no value).
    public static let signerTargetsDevRelease = AdditionalAttribute(id: ID.signerTargetsDevRelease, value: [])

    /// The value read as a little-endian uint32, when it is at least 4 bytes (as apksig's `getInt`).
    public var uint32Value: UInt32? {
        guard value.count >= 4 else { return nil }
        return UInt32(value[0]) | UInt32(value[1]) << 8 | UInt32(value[2]) << 16 | UInt32(value[3]) << 24
    }

    func encoded() -> [UInt8] {
        LengthPrefixed.encode(id.littleEndianBytes + value)
    }
}

/// The signed data of one v2/v3 signer: what the signer's signatures cover.
///
/// v2 (`V2SchemeSigner.generateSignerBlock`):
///
///     length-prefixed sequence of length-prefixed digests (AlgorithmTaggedValue)
///     length-prefixed sequence of length-prefixed X.509 certificates (DER)
///     length-prefixed sequence of length-prefixed additional attributes
///     length-prefixed empty element (apksig appends `new byte[0]`: four zero bytes)
///
/// v3 (`V3SchemeSigner.encodeSignedData`):
///
///     length-prefixed digests, length-prefixed certificates,
///     int32 minSdkVersion, int32 maxSdkVersion,
///     length-prefixed additional attributes
public struct SignatureSchemeSignedData: Sendable, Hashable {
    public var digests: [AlgorithmTaggedValue]
    /// DER certificates exactly as stored; the first one carries the signer's public key.
    public var certificates: [[UInt8]]
    /// v3 only (ignored for v2).
    public var minSdkVersion: Int32
    /// v3 only (ignored for v2). apksig writes `Integer.MAX_VALUE` for the newest signer.
    public var maxSdkVersion: Int32
    public var additionalAttributes: [AdditionalAttribute]

    public init(digests: [AlgorithmTaggedValue], certificates: [[UInt8]], minSdkVersion: Int32 = 0,
                maxSdkVersion: Int32 = Int32.max, additionalAttributes: [AdditionalAttribute] = []) {
        self.digests = digests
        self.certificates = certificates
        self.minSdkVersion = minSdkVersion
        self.maxSdkVersion = maxSdkVersion
        self.additionalAttributes = additionalAttributes
    }

    /// The bytes to sign, byte for byte as apksig encodes them for `version`.
    public func encoded(for version: SignatureSchemeVersion) -> [UInt8] {
        let digestBytes = LengthPrefixed.encode(digests.flatMap { $0.encoded() })
        let certificateBytes = LengthPrefixed.encode(certificates.flatMap { LengthPrefixed.encode($0) })
        let attributeBytes = LengthPrefixed.encode(additionalAttributes.flatMap { $0.encoded() })
        switch version {
        case .v2:
            return digestBytes + certificateBytes + attributeBytes + LengthPrefixed.encode([UInt8]())
        case .v3:
            return digestBytes + certificateBytes + minSdkVersion.littleEndianBytes + maxSdkVersion.littleEndianBytes + attributeBytes
        }
    }

    /// Parses signed data as apksig's `V2SchemeVerifier` / `V3SchemeVerifier` do (trailing bytes after the
    /// last field are ignored, as there).
    public init(decoding bytes: ArraySlice<UInt8>, version: SignatureSchemeVersion) throws {
        var rest = bytes
        let digestsBytes = try LengthPrefixed.take(&rest, what: "signed data digests")
        let certificatesBytes = try LengthPrefixed.take(&rest, what: "signed data certificates")
        let (minSdk, maxSdk) = try readSDKRange(&rest, version: version, of: "signed data")
        let attributesBytes = try LengthPrefixed.take(&rest, what: "signed data additional attributes")
        var digests: [AlgorithmTaggedValue] = []
        for (index, item) in try LengthPrefixed.split(digestsBytes, what: "digests").enumerated() {
            digests.append(try AlgorithmTaggedValue.decode(item, what: "digest #\(index + 1)"))
        }
        let certificates = try LengthPrefixed.split(certificatesBytes, what: "certificates").map { Array($0) }
        var attributes: [AdditionalAttribute] = []
        for (index, item) in try LengthPrefixed.split(attributesBytes, what: "additional attributes").enumerated() {
            guard item.count >= 4 else {
                throw SchemeBlockFormatError("additional attribute #\(index + 1) is \(item.count) bytes, too short to contain an attribute ID")
            }
            var body = item
            let id = readUInt32(&body)
            attributes.append(AdditionalAttribute(id: id, value: Array(body)))
        }
        self.init(digests: digests, certificates: certificates, minSdkVersion: minSdk, maxSdkVersion: maxSdk,
                  additionalAttributes: attributes)
    }
}

/// One signer of a v2 or v3 block.
///
/// v2: length-prefixed signed data, length-prefixed signatures, length-prefixed public key.
/// v3: length-prefixed signed data, int32 minSdkVersion, int32 maxSdkVersion, length-prefixed signatures,
/// length-prefixed public key (X.509 SubjectPublicKeyInfo, DER).
public struct SignatureSchemeSigner: Sendable, Hashable {
    /// The signed data exactly as stored: what `signatures` sign. Verify against these bytes, never a
    /// re-encoding.
    public var signedDataBytes: [UInt8]
    /// `signedDataBytes`, decoded.
    public var signedData: SignatureSchemeSignedData
    /// v3 only: the SDK range this signer applies to (must equal the signed data's range).
    public var minSdkVersion: Int32
    public var maxSdkVersion: Int32
    public var signatures: [AlgorithmTaggedValue]
    /// SubjectPublicKeyInfo DER.
    public var publicKey: [UInt8]

    /// A signer whose signed data is `signedData` encoded for `version`; `signatures` must sign
    /// `signedData.encoded(for: version)`. The v3 outer SDK range is the signed data's.
    public init(signedData: SignatureSchemeSignedData, version: SignatureSchemeVersion,
                signatures: [AlgorithmTaggedValue], publicKey: [UInt8]) {
        self.signedDataBytes = signedData.encoded(for: version)
        self.signedData = signedData
        self.minSdkVersion = signedData.minSdkVersion
        self.maxSdkVersion = signedData.maxSdkVersion
        self.signatures = signatures
        self.publicKey = publicKey
    }

    /// Parses one signer element (the contents of its length prefix).
    public init(decoding bytes: ArraySlice<UInt8>, version: SignatureSchemeVersion) throws {
        var rest = bytes
        let signedDataBytes = try LengthPrefixed.take(&rest, what: "signed data")
        let (minSdk, maxSdk) = try readSDKRange(&rest, version: version, of: "signer")
        let signaturesBytes = try LengthPrefixed.take(&rest, what: "signatures")
        let publicKey = try LengthPrefixed.take(&rest, what: "public key")
        var signatures: [AlgorithmTaggedValue] = []
        for (index, item) in try LengthPrefixed.split(signaturesBytes, what: "signatures").enumerated() {
            signatures.append(try AlgorithmTaggedValue.decode(item, what: "signature #\(index + 1)"))
        }
        self.signedDataBytes = Array(signedDataBytes)
        self.signedData = try SignatureSchemeSignedData(decoding: signedDataBytes, version: version)
        self.minSdkVersion = minSdk
        self.maxSdkVersion = maxSdk
        self.signatures = signatures
        self.publicKey = Array(publicKey)
    }

    /// The signer element (without its own length prefix), as apksig encodes it for `version`.
    public func encoded(for version: SignatureSchemeVersion) -> [UInt8] {
        let signatureBytes = LengthPrefixed.encode(signatures.flatMap { $0.encoded() })
        switch version {
        case .v2:
            return LengthPrefixed.encode(signedDataBytes) + signatureBytes + LengthPrefixed.encode(publicKey)
        case .v3:
            return LengthPrefixed.encode(signedDataBytes) + minSdkVersion.littleEndianBytes + maxSdkVersion.littleEndianBytes
                + signatureBytes + LengthPrefixed.encode(publicKey)
        }
    }
}

/// The value of a v2 or v3 (or v3.1) pair in the APK Signing Block: a length-prefixed sequence of
/// length-prefixed signers.
public struct SignatureSchemeBlock: Sendable, Hashable {
    public var version: SignatureSchemeVersion
    public var signers: [SignatureSchemeSigner]

    public init(version: SignatureSchemeVersion, signers: [SignatureSchemeSigner]) {
        self.version = version; self.signers = signers
    }

    /// Parses a block value (bytes after the pair's ID). Bytes after the signers sequence are ignored, as
    /// apksig does.
    public init(decoding value: [UInt8], version: SignatureSchemeVersion) throws {
        var rest = value[...]
        let signersBytes = try LengthPrefixed.take(&rest, what: "\(version) signers")
        var signers: [SignatureSchemeSigner] = []
        for (index, item) in try LengthPrefixed.split(signersBytes, what: "\(version) signers").enumerated() {
            do {
                signers.append(try SignatureSchemeSigner(decoding: item, version: version))
            } catch let error as SchemeBlockFormatError {
                throw SchemeBlockFormatError("signer #\(index + 1): \(error.message)")
            } catch let error as SigningBlockError {
                throw SchemeBlockFormatError("signer #\(index + 1): \(error.message)")
            }
        }
        self.init(version: version, signers: signers)
    }

    /// The pair value, byte for byte as apksig writes it.
    public func encoded() -> [UInt8] {
        LengthPrefixed.encode(signers.flatMap { LengthPrefixed.encode($0.encoded(for: version)) })
    }

    /// The APK Signing Block pair carrying this block.
    public var pair: SigningBlock.Pair { SigningBlock.Pair(id: version.blockID, value: encoded()) }
}

/// A malformed v2/v3 block.
public struct SchemeBlockFormatError: Error, CustomStringConvertible, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "malformed APK Signature Scheme block: \(message)" }
}

/// v3's int32 minSdkVersion and int32 maxSdkVersion from the front of `bytes` (a signer and its signed data each
/// carry the pair); v2 has none, and its range is all of them.
private func readSDKRange(_ bytes: inout ArraySlice<UInt8>, version: SignatureSchemeVersion, of what: String) throws -> (Int32, Int32) {
    guard version == .v3 else { return (0, Int32.max) }
    guard bytes.count >= 8 else { throw SchemeBlockFormatError("\(what) too short for min/max SDK versions") }
    return (Int32(bitPattern: readUInt32(&bytes)), Int32(bitPattern: readUInt32(&bytes)))
}

/// Reads a little-endian uint32 from the front of `bytes`; the caller has checked there are 4.
private func readUInt32(_ bytes: inout ArraySlice<UInt8>) -> UInt32 {
    let s = bytes.startIndex
    let value = UInt32(bytes[s]) | UInt32(bytes[s + 1]) << 8 | UInt32(bytes[s + 2]) << 16 | UInt32(bytes[s + 3]) << 24
    bytes = bytes[(s + 4)...]
    return value
}
