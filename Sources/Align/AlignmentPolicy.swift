import APKCore

/// Where each entry's data must start, as zipalign and apksig decide it.
///
/// Stored entries start on `defaultAlignment` (4) bytes so Android can mmap them; stored native libraries
/// (`.so`) start on a page boundary so they can be loaded in place when `extractNativeLibs` is false
/// (4 KiB pages, or 16 KiB for Android 15 devices with 16 KiB pages). Compressed entries are never aligned:
/// nothing maps them.
public struct AlignmentPolicy: Sendable, Hashable {
    /// Alignment for stored entries, in bytes (zipalign's `<align>`).
    public var defaultAlignment: Int
    /// Alignment for stored `.so` files; nil aligns them like any other stored entry (zipalign without -p).
    public var nativeLibraryAlignment: Int?
    /// How padding is written into the local header's extra field.
    public var paddingStyle: PaddingStyle
    /// Keep an entry's existing alignment multiple from its 0xd935 extra field (apksig's rule) instead of the
    /// policy's own choice.
    public var honorsAlignmentExtraField: Bool

    public enum PaddingStyle: Sendable, Hashable {
        /// Zero bytes appended to the extra field, as zipalign writes them.
        case zeroFill
        /// An Android 0xd935 extra field holding the multiple, as apksig (apksigner, AGP) writes it.
        case alignmentExtraField
        /// The 0xd935 field exactly as apksig's signer writes it (`ApkSigner.createExtraFieldToAlignData`):
        /// the earlier extra walked as apksig walks it (`ExtraField.strippingApksigPadding`), and an existing field's
        /// multiple taken as it is, 0 or 1 meaning "not aligned" (`getInputJarEntryDataAlignmentMultiple`).
        case apksigSigner
    }

    public init(defaultAlignment: Int = 4, nativeLibraryAlignment: Int? = 16384,
                paddingStyle: PaddingStyle = .alignmentExtraField, honorsAlignmentExtraField: Bool = false) {
        self.defaultAlignment = defaultAlignment
        self.nativeLibraryAlignment = nativeLibraryAlignment
        self.paddingStyle = paddingStyle
        self.honorsAlignmentExtraField = honorsAlignmentExtraField
    }

    /// zipalign's behaviour: `zipalign [-p | -P kb] <align>`.
    public static func zipalign(_ alignment: Int, pageSize: Int?) -> AlignmentPolicy {
        AlignmentPolicy(defaultAlignment: alignment, nativeLibraryAlignment: pageSize, paddingStyle: .zeroFill)
    }

    /// The pipeline's default: 4 bytes, `.so` on 16 KiB pages (what build-tools 35 and AGP default to).
    public static let android15 = AlignmentPolicy()

    /// What apksig's signer does (`Signer` re-aligns with it): stored entries on 4 bytes, `.so` files on
    /// `libraryPageAlignment`, an existing 0xd935 field's multiple kept.
    public static func apksig(libraryPageAlignment: Int) -> AlignmentPolicy {
        AlignmentPolicy(defaultAlignment: 4, nativeLibraryAlignment: libraryPageAlignment, paddingStyle: .apksigSigner,
                        honorsAlignmentExtraField: true)
    }

    /// No alignment at all: entries are written back to back.
    public static let none = AlignmentPolicy(defaultAlignment: 1, nativeLibraryAlignment: nil)

    /// The multiple `entry`'s data must start on (1: no constraint).
    ///
    /// Every stored entry is aligned, directory entries too: zipalign up to build-tools 30 (Debian's) pads them
    /// and its `-c` fails an archive where one is not aligned, apksig's signer aligns them
    /// (`getInputJarEntryDataAlignmentMultiple` looks only at the method), and newer zipalign, which leaves them
    /// as they are (`isDirectory` in ZipAlign.cpp), accepts them aligned.
    public func alignment(for entry: borrowing ZipEntry) -> Int {
        alignment(method: entry.method, localExtra: entry.localExtra, name: entry.name)
    }

    /// `alignment(for:)` from the three fields of the entry it reads (a caller that holds the entry in a class
    /// passes them without copying the whole entry).
    public func alignment(method: CompressionMethod, localExtra: [UInt8], name: String) -> Int {
        guard method == .stored else { return 1 }
        if honorsAlignmentExtraField, let multiple = ExtraField.alignmentMultiple(in: localExtra) {
            if paddingStyle == .apksigSigner { return max(multiple, 1) }
            if multiple > 0 { return multiple }
        }
        if let page = nativeLibraryAlignment, Self.isNativeLibrary(name) { return page }
        return max(defaultAlignment, 1)
    }

    /// True for what newer zipalign (ZipAlign.cpp `isDirectory`) neither pads nor checks: an entry with no data
    /// whose name ends in `/` or `\\`.
    public static func isDirectoryEntry(_ entry: ZipEntry) -> Bool {
        entry.uncompressedSize == 0 && (entry.nameBytes.last == UInt8(ascii: "/") || entry.nameBytes.last == UInt8(ascii: "\\"))
    }

    /// True for names zipalign -p and apksig page-align: stored files ending in `.so`.
    public static func isNativeLibrary(_ name: String) -> Bool {
        // By bytes, as apksig's `endsWith(".so")` reads its String unit for unit: Swift's Characters would join
        // a prepended mark (U+0600) to the dot. The last byte first, as most names end in another letter.
        name.utf8.last == UInt8(ascii: "o") && name.javaHasSuffix(".so")
    }

    /// The local extra field for `entry` when its local header is written at `headerOffset`, so that its
    /// data starts on `alignment`. Earlier padding (zero fill or a 0xd935 field) is dropped first, so
    /// re-aligning an aligned archive gives the same bytes (`.apksigSigner`: what apksig's signer drops).
    public func localExtra(for entry: ZipEntry, headerOffset: Int64, alignment: Int) -> [UInt8] {
        var extra: [UInt8] = []
        appendLocalExtra(for: entry, headerOffset: headerOffset, alignment: alignment, to: &extra)
        return extra
    }

    /// `localExtra(for:headerOffset:alignment:)`'s bytes appended to `output`, and how many they are: a writer
    /// that lays out thousands of headers fills one buffer instead of allocating an array per entry.
    @discardableResult
    public func appendLocalExtra(for entry: borrowing ZipEntry, headerOffset: Int64, alignment: Int, to output: inout [UInt8]) -> Int {
        appendLocalExtra(inputExtra: entry.localExtra, nameLength: entry.nameBytes.count, headerOffset: headerOffset,
                         alignment: alignment, to: &output)
    }

    /// The same from the two fields of the entry it reads: its local extra field as read, and its name's length.
    @discardableResult
    public func appendLocalExtra(inputExtra: [UInt8], nameLength: Int, headerOffset: Int64, alignment: Int, to output: inout [UInt8]) -> Int {
        let start = output.count
        if paddingStyle == .apksigSigner {
            ExtraField.appendStrippingApksigPadding(inputExtra, to: &output)
        } else {
            ExtraField.appendStrippingAlignmentPadding(inputExtra, to: &output)
        }
        guard alignment > 1 else { return output.count - start }
        appendPadding(after: output.count - start, nameLength: nameLength, headerOffset: headerOffset, alignment: alignment, to: &output)
        // A local extra field holds at most 65,535 bytes. When the input's leaves no room for the padding, it is
        // dropped, as zipalign drops it: Android reads nothing else there (libziparchive reads a local extra field
        // only for ZIP64 sizes, which no writer here puts in a local header).
        guard output.count - start > Int(UInt16.max) else { return output.count - start }
        output.removeSubrange(start...)
        appendPadding(after: 0, nameLength: nameLength, headerOffset: headerOffset, alignment: alignment, to: &output)
        return output.count - start
    }

    /// The largest multiple an alignment extra field (0xd935) can always pad to: its padding can need the multiple
    /// less one byte, and with the field's own 6 bytes it must fit a local extra field (at most 65535 bytes).
    public static let largestAlignmentExtraFieldMultiple = Int(UInt16.max) - AlignmentExtraLayout.minimumSize + 1

    /// Appends to `output` the padding that puts on `alignment` the data of an entry whose local header is at
    /// `headerOffset`, when `baseCount` bytes of its extra field come before the padding.
    private func appendPadding(after baseCount: Int, nameLength: Int, headerOffset: Int64, alignment: Int, to output: inout [UInt8]) {
        let dataStart = headerOffset + Int64(LocalFileHeaderLayout.fixedSize + nameLength + baseCount)
        switch paddingStyle {
        case .zeroFill:
            let padding = Int((Int64(alignment) - dataStart % Int64(alignment)) % Int64(alignment))
            output.append(contentsOf: repeatElement(0, count: padding))
        case .alignmentExtraField, .apksigSigner:
            // apksig ApkSigner.createExtraFieldToAlignData: header (id, size), the uint16 multiple, zero padding.
            let withField = dataStart + Int64(AlignmentExtraLayout.minimumSize)
            let padding = Int((Int64(alignment) - withField % Int64(alignment)) % Int64(alignment))
            let size = UInt16(2 + padding), multiple = UInt16(truncatingIfNeeded: alignment)
            output.append(UInt8(truncatingIfNeeded: AlignmentExtraLayout.headerID))
            output.append(UInt8(truncatingIfNeeded: AlignmentExtraLayout.headerID >> 8))
            output.append(UInt8(truncatingIfNeeded: size))
            output.append(UInt8(truncatingIfNeeded: size >> 8))
            output.append(UInt8(truncatingIfNeeded: multiple))
            output.append(UInt8(truncatingIfNeeded: multiple >> 8))
            output.append(contentsOf: repeatElement(0, count: padding))
        }
    }
}

extension ExtraField {
    /// `extra` without alignment padding: 0xd935 records are removed, and a tail of zero bytes (zipalign's
    /// padding, which is not a valid record) is cut off, as is a malformed trailing record.
    public static func strippingAlignmentPadding(_ extra: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        appendStrippingAlignmentPadding(extra, to: &out)
        return out
    }

    /// `strippingAlignmentPadding(extra)` appended to `out`.
    static func appendStrippingAlignmentPadding(_ extra: [UInt8], to out: inout [UInt8]) {
        forEachRecord(in: extra) { id, start, data in
            if extra[start...].allSatisfy({ $0 == 0 }) { return false }
            if id != AlignmentExtraLayout.headerID { out.append(contentsOf: extra[start..<data.upperBound]) }
            return true
        }
    }

    /// `extra` without what apksig's signer drops before it adds its own 0xd935 field, walked as
    /// `ApkSigner.createExtraFieldToAlignData` walks it: on the big-endian buffer `LocalFileRecord.getExtra`
    /// returns (a `slice()`, whose byte order is big-endian whatever the original's), so each record's header ID
    /// and size are read big-endian. What that reads as an empty (0, 0) or a 0xd935 record is dropped, any other
    /// "record" is kept byte for byte, and one running past the end stops the walk, dropping the rest. An
    /// ordinary extra (`zip`'s timestamp and Unix fields) is thus dropped or kept only in part, and an earlier
    /// 0xd935 field is kept when its swapped size fits: apksigner's bytes, which every verifier accepts.
    public static func strippingApksigPadding(_ extra: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        appendStrippingApksigPadding(extra, to: &out)
        return out
    }

    /// `strippingApksigPadding(extra)` appended to `out`.
    static func appendStrippingApksigPadding(_ extra: [UInt8], to out: inout [UInt8]) {
        var start = 0
        while extra.count - start >= 4 {
            let id = UInt16(extra[start]) << 8 | UInt16(extra[start + 1])
            let size = Int(UInt16(extra[start + 2]) << 8 | UInt16(extra[start + 3]))
            guard size <= extra.count - start - 4 else { break }
            if !((id == 0 && size == 0) || id == AlignmentExtraLayout.headerID) { out += extra[start..<(start + 4 + size)] }
            start += 4 + size
        }
    }
}
