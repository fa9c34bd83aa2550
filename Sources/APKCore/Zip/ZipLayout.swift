// ZIP record layouts, from PKWARE's APPNOTE.TXT (sections 4.3.7 local file header, 4.3.9 data descriptor,
// 4.3.12 central directory header, 4.3.16 end of central directory record). All fields are little-endian.
// APKs never use ZIP64 (apksig and Android's libziparchive refuse it), so neither do we.

/// Local file header: signature, version needed, flags, method, time, date, CRC-32, compressed size,
/// uncompressed size, name length, extra length; then the name and the extra field.
public enum LocalFileHeaderLayout {
    public static let signature: UInt32 = 0x0403_4b50
    public static let fixedSize = 30
    public static let flagsOffset = 6
    public static let crcOffset = 14
    public static let nameLengthOffset = 26
}

/// Central directory file header: signature, version made by, version needed, flags, method, time, date,
/// CRC-32, compressed size, uncompressed size, name length, extra length, comment length, disk number start,
/// internal attributes, external attributes, local header offset; then name, extra and comment.
public enum CentralDirectoryRecordLayout {
    public static let signature: UInt32 = 0x0201_4b50
    public static let fixedSize = 46
}

/// End of central directory record: signature, disk number, CD disk, entries on this disk, total entries,
/// CD size, CD offset, comment length; then the comment (at most 65,535 bytes).
public enum EndOfCentralDirectoryLayout {
    public static let signature: UInt32 = 0x0605_4b50
    public static let fixedSize = 22
    public static let centralDirectoryOffsetOffset = 16
    public static let maxCommentSize = 0xFFFF
}

/// ZIP64 end of central directory locator, which sits right before the EOCD in a ZIP64 archive.
public enum Zip64LocatorLayout {
    public static let signature: UInt32 = 0x0706_4b50
    public static let fixedSize = 20
}

/// Optional data descriptor after an entry's data when flag bit 3 is set (signature optional).
public enum DataDescriptorLayout {
    public static let signature: UInt32 = 0x0807_4b50
}

/// General-purpose flag bits used here.
public enum ZipFlags {
    public static let encrypted: UInt16 = 1 << 0
    public static let dataDescriptor: UInt16 = 1 << 3
    public static let strongEncryption: UInt16 = 1 << 6
    public static let utf8Names: UInt16 = 1 << 11
}

/// Compression methods an APK may use.
public enum CompressionMethod: UInt16, Sendable, Hashable, CustomStringConvertible {
    case stored = 0
    case deflated = 8
    public var description: String { self == .stored ? "stored" : "deflated" }
}

/// Android's ZIP alignment extra field (apksig `ApkSigner.ALIGNMENT_ZIP_EXTRA_DATA_FIELD_HEADER_ID`):
/// header ID 0xd935, data size, then a little-endian uint16 alignment multiple followed by zero padding.
public enum AlignmentExtraLayout {
    public static let headerID: UInt16 = 0xd935
    /// Header (4) + the multiple (2): the smallest such field.
    public static let minimumSize = 6
}
