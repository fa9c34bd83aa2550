import APKCore

/// One certificate of a signing-certificate lineage, as stored (apksig
/// `V3SigningCertificateLineage.SigningCertificateNode`). The bytes are kept as read, so a lineage read and
/// written again is the same bytes.
public struct SigningCertificateNode: Sendable, Hashable {
    /// The certificate, DER, exactly as stored.
    public var certificateDER: [UInt8]
    /// The algorithm the previous node's key signed this node with; 0 for the first node (nobody signed it).
    public var parentSignatureAlgorithmID: UInt32
    /// The algorithm this node's key signs the next node with; 0 for the last node.
    public var signatureAlgorithmID: UInt32
    /// The previous node's signature over `signedData`; empty for the first node.
    public var signature: [UInt8]
    /// The capabilities the app grants this (older) certificate: `SignerCapabilities` flags.
    public var flags: UInt32

    public init(certificateDER: [UInt8], parentSignatureAlgorithmID: UInt32, signatureAlgorithmID: UInt32,
                signature: [UInt8], flags: UInt32) {
        self.certificateDER = certificateDER
        self.parentSignatureAlgorithmID = parentSignatureAlgorithmID
        self.signatureAlgorithmID = signatureAlgorithmID
        self.signature = signature
        self.flags = flags
    }

    /// What the previous node's key signs (apksig `encodeSignedData` without its outer length prefix):
    /// the length-prefixed certificate, then the uint32 ID of the algorithm it is signed with.
    public static func signedData(certificateDER: [UInt8], parentSignatureAlgorithmID: UInt32) -> [UInt8] {
        LengthPrefixed.encode(certificateDER) + parentSignatureAlgorithmID.littleEndianBytes
    }

    public var signedData: [UInt8] {
        Self.signedData(certificateDER: certificateDER, parentSignatureAlgorithmID: parentSignatureAlgorithmID)
    }
}

/// The binary lineage as the v3 proof-of-rotation attribute (0x3ba06f8c) carries it, and as the lineage file
/// wraps it (apksig `V3SigningCertificateLineage`, format version 1). This is the structure only: checking the
/// signatures is the reader's job (the signer and the verifier each have their own key types).
///
///     uint32 version (1)
///     repeated, each uint32-length-prefixed, a node:
///         length-prefixed signed data: length-prefixed certificate, uint32 parent signature algorithm ID
///         uint32 flags
///         uint32 signature algorithm ID (the one this node signs the next with)
///         length-prefixed signature over the signed data, by the previous node's key
public enum V3SigningCertificateLineage {
    public static let version: UInt32 = 1

    /// The nodes of an encoded lineage. Throws `SchemeBlockFormatError` on a truncated or inconsistent
    /// structure and on an unknown version.
    public static func decode(_ value: ArraySlice<UInt8>) throws -> [SigningCertificateNode] {
        var input = value
        guard let version = try? LengthPrefixed.takeUInt32(&input, what: "lineage version") else {
            throw SchemeBlockFormatError("empty signing certificate lineage")
        }
        guard version == Self.version else {
            throw SchemeBlockFormatError("signing certificate lineage version \(version) is unknown (only version 1 exists)")
        }
        var nodes: [SigningCertificateNode] = []
        do {
            while !input.isEmpty {
                let number = nodes.count + 1
                var node = try LengthPrefixed.take(&input, what: "lineage node #\(number)")
                var signedData = try LengthPrefixed.take(&node, what: "signed data of lineage node #\(number)")
                let flags = try LengthPrefixed.takeUInt32(&node, what: "flags of lineage node #\(number)")
                let algorithmID = try LengthPrefixed.takeUInt32(&node, what: "signature algorithm of lineage node #\(number)")
                let signature = try LengthPrefixed.take(&node, what: "signature of lineage node #\(number)")
                let certificate = try LengthPrefixed.take(&signedData, what: "certificate of lineage node #\(number)")
                let parentAlgorithmID = try LengthPrefixed.takeUInt32(&signedData, what: "parent signature algorithm of lineage node #\(number)")
                nodes.append(SigningCertificateNode(certificateDER: Array(certificate), parentSignatureAlgorithmID: parentAlgorithmID,
                                                    signatureAlgorithmID: algorithmID, signature: Array(signature), flags: flags))
            }
        } catch let error as SigningBlockError {
            throw SchemeBlockFormatError(error.message)
        }
        return nodes
    }

    /// apksig `encodeSigningCertificateLineage`.
    public static func encode(_ nodes: [SigningCertificateNode]) -> [UInt8] {
        var out = version.littleEndianBytes
        for node in nodes {
            let body = LengthPrefixed.encode(node.signedData) + node.flags.littleEndianBytes + node.signatureAlgorithmID.littleEndianBytes
                + LengthPrefixed.encode(node.signature)
            out += LengthPrefixed.encode(body)
        }
        return out
    }
}

/// The standalone lineage file `apksigner rotate` writes and `--lineage` reads (apksig
/// `SigningCertificateLineage.write`/`read`):
///
///     uint32 magic 0x3eff39d1, uint32 format version (1), uint32 length, then the encoded lineage above.
public enum SigningCertificateLineageFile {
    public static let magic: UInt32 = 0x3eff_39d1
    public static let version: UInt32 = 1
    /// The magic, the version and the lineage's length.
    public static let headerSize = 12
    /// The longest lineage a file may declare. A node is about a kilobyte (a certificate and a signature), so
    /// this is thousands of rotations; a bigger length is damage, and reading it would be a copy of that size.
    public static let maximumLineageSize = 16 << 20

    /// How many bytes of a file starting with `header` (at least `headerSize` bytes) to read: the header and the
    /// lineage it declares, nothing after it (apksig ignores what follows too). Throws when the declared length
    /// passes `maximumLineageSize`.
    public static func fileSize(header: ArraySlice<UInt8>) throws -> Int {
        var rest = header.dropFirst(8)
        let length = (try? LengthPrefixed.takeUInt32(&rest, what: "lineage length")).map(Int.init) ?? 0
        guard length <= maximumLineageSize else {
            throw SchemeBlockFormatError("the file declares a lineage of \(length) bytes, more than any real one (at most \(maximumLineageSize)): it is damaged; make it again with rotate")
        }
        return headerSize + length
    }

    /// True when `bytes` start with the lineage file's magic (an APK starts with a ZIP local header instead).
    public static func hasMagic(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.count >= 4 && Array(bytes.prefix(4)) == magic.littleEndianBytes
    }

    public static func decode(_ bytes: ArraySlice<UInt8>) throws -> [SigningCertificateNode] {
        guard bytes.count >= 8 else { throw SchemeBlockFormatError("not a lineage file: too short for its header") }
        guard hasMagic(bytes) else { throw SchemeBlockFormatError("not a lineage file: the magic number 0x3eff39d1 is missing") }
        var rest = bytes.dropFirst(4)
        let encoded: ArraySlice<UInt8>
        do {
            let version = try LengthPrefixed.takeUInt32(&rest, what: "lineage file version")
            guard version == Self.version else {
                throw SchemeBlockFormatError("lineage file format version \(version) is unknown (only version 1 exists)")
            }
            encoded = try LengthPrefixed.take(&rest, what: "lineage")
        } catch let error as SigningBlockError {
            throw SchemeBlockFormatError(error.message)
        }
        return try V3SigningCertificateLineage.decode(encoded)
    }

    public static func encode(_ nodes: [SigningCertificateNode]) -> [UInt8] {
        magic.littleEndianBytes + version.littleEndianBytes + LengthPrefixed.encode(V3SigningCertificateLineage.encode(nodes))
    }
}
