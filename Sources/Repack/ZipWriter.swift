import APKCore
import Align

/// Writes a ZIP archive entry by entry into an `OutputFile`, aligning stored data as it goes (one pass: no
/// second rewrite for zipalign), then the optional APK Signing Block, the central directory and the EOCD.
public final class ZipWriter {
    public let output: OutputFile
    public let alignment: AlignmentPolicy
    /// Entries as written, with their new offsets and local extra fields.
    public private(set) var writtenEntries: [ZipEntry] = []
    private var centralDirectory = LittleEndianWriter()
    private var names: EntryNameTable

    /// A writer into `output`; `expectedEntryCount` sizes the table of names written (it grows past it if need be).
    public init(output: OutputFile, alignment: AlignmentPolicy, expectedEntryCount: Int = 0) {
        self.output = output
        self.alignment = alignment
        names = EntryNameTable(minimumCapacity: expectedEntryCount)
    }

    /// The current end of the written data.
    public var position: Int64 { output.position }

    /// Writes `item`'s local header (with alignment padding) and data. Returns the entry as written.
    @discardableResult
    public func append(_ item: OutputEntry) throws -> ZipEntry {
        var entry = item.entry
        guard names.insert(entry.nameBytes) else { throw RepackError.duplicateEntry(entry.name) }
        guard item.data.count == entry.compressedSize else {
            throw RepackError.inconsistentEntry(entry.name, "\(item.data.count) bytes of data for a declared compressed size of \(entry.compressedSize)")
        }
        guard entry.compressedSize < 0xFFFF_FFFF, entry.uncompressedSize < 0xFFFF_FFFF else {
            throw RepackError.tooLarge("entry \(entry.name.debugQuoted) is 4 GiB or more, which needs ZIP64, which APKs cannot use")
        }
        let headerOffset = output.position
        guard headerOffset <= Int64(UInt32.max) else { throw RepackError.tooLarge("the entries section passes 4 GiB, which needs ZIP64, which APKs cannot use") }
        let multiple = alignment.alignment(for: entry)
        entry.localExtra = alignment.localExtra(for: entry, headerOffset: headerOffset, alignment: multiple)
        guard entry.localExtra.count <= Int(UInt16.max) else { throw RepackError.inconsistentEntry(entry.name, "extra field too large") }
        if entry.method == .stored && multiple > 1 {
            // The central copy of a stale alignment field would disagree with the local one; drop it.
            entry.centralExtra = ExtraField.strippingAlignmentPadding(entry.centralExtra)
        }
        entry.flags &= ~ZipFlags.dataDescriptor
        entry.dataDescriptorSize = 0
        entry.localHeaderOffset = headerOffset
        try output.write(entry.encodedLocalHeader(extra: entry.localExtra))
        entry.dataOffset = output.position
        var sink = output
        try item.data.feed(0..<item.data.count, into: &sink)
        centralDirectory.write(bytes: entry.encodedCentralDirectoryRecord(localHeaderOffset: headerOffset))
        writtenEntries.append(entry)
        return entry
    }

    /// Writes `count` zero bytes after the last entry (apksig pads so the signing block starts on 4096).
    public func writeZeros(_ count: Int) throws { try output.writeZeros(count) }

    /// The central directory for the entries written so far.
    public func centralDirectoryBytes() -> [UInt8] { centralDirectory.bytes }

    /// The EOCD for a central directory at `offset`.
    public func endOfCentralDirectory(centralDirectoryOffset offset: Int64, comment: [UInt8] = []) -> EndOfCentralDirectory {
        EndOfCentralDirectory(entryCount: writtenEntries.count, centralDirectorySize: Int64(centralDirectory.count),
                              centralDirectoryOffset: offset, comment: comment)
    }

    /// Writes the signing block (if any), the central directory and the EOCD, then renames the output into
    /// place. Nothing is visible at the destination before this returns.
    /// `beforeCommit` runs once everything is written, before the output takes its destination's place: an error
    /// there leaves no output (a check that ran beside the writing found a reason to refuse it).
    public func finish(signingBlock: [UInt8]? = nil, comment: [UInt8] = [], beforeCommit: () throws -> Void = {}) throws {
        guard writtenEntries.count <= 0xFFFF else { throw RepackError.tooLarge("\(writtenEntries.count) entries need ZIP64, which APKs cannot use") }
        if let signingBlock { try output.write(signingBlock) }
        let cdOffset = output.position
        guard cdOffset <= Int64(UInt32.max) else { throw RepackError.tooLarge("the archive passes 4 GiB, which needs ZIP64, which APKs cannot use") }
        try output.write(centralDirectory.bytes)
        try output.write(endOfCentralDirectory(centralDirectoryOffset: cdOffset, comment: comment).encoded())
        try beforeCommit()
        try output.commit()
    }
}

/// Why an archive could not be written.
public enum RepackError: Error, CustomStringConvertible {
    case duplicateEntry(String)
    case inconsistentEntry(String, String)
    case tooLarge(String)
    case unreadablePatchFile(String, String)
    case temporaryFile(String, String)

    public var description: String {
        switch self {
        case .duplicateEntry(let name): return "entry \(name.debugQuoted) would be written twice"
        case .inconsistentEntry(let name, let reason): return "entry \(name.debugQuoted): \(reason)"
        case .tooLarge(let reason): return "output too large: \(reason)"
        case .unreadablePatchFile(let path, let reason): return "cannot read patch file \(path): \(reason)"
        case .temporaryFile(let path, let reason):
            return "cannot write a temporary file (\(path)) for a large patch file: \(reason); set TMPDIR to a directory with room for it"
        }
    }
}
