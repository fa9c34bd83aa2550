import ZlibWrapper

/// What reading an entry's data as a device reads it found wrong with it.
public enum EntryDataProblem: Sendable, Equatable, CustomStringConvertible {
    /// The data cannot be read as its header says (the reason): a deflate stream that fails or does not end, or
    /// inflates to another size. libziparchive refuses to extract such an entry (`inflateImpl`: kZlibError,
    /// kInconsistentInformation), so a device cannot read it.
    case unreadable(String)
    /// The data (inflated, for a deflated entry) has another CRC-32 than its header declares. Android's
    /// libziparchive does not compare it (`kCrcChecksEnabled` is false) and reads the bytes as they are; readers
    /// that check it (java.util.zip's ZipInputStream, unzip) refuse the entry.
    case crcMismatch(actual: UInt32, declared: UInt32, inflated: Bool)
    /// This many of a deflated entry's compressed bytes follow the end of its stream: readers stop at the
    /// stream's end, so no CRC-32 covers those bytes (libziparchive refuses them only when they come after the
    /// read that ended the stream).
    case bytesAfterStream(Int64)

    public var description: String {
        switch self {
        case .unreadable(let reason):
            return reason
        case .crcMismatch(let actual, let declared, let inflated):
            return "its \(inflated ? "inflated " : "")data has CRC-32 \(APKArchive.hex(actual)), its header declares \(APKArchive.hex(declared))"
        case .bytesAfterStream(let count):
            return "\(count) of its compressed bytes follow the end of its deflate stream"
        }
    }
}

extension APKArchive {
    /// Reads the data of each of `entries` as a device reads it (a stored entry's CRC-32; a deflated one inflated
    /// whole: its stream, size and CRC-32, and where the stream ends) and calls `found`, in `entries`' order, for
    /// each one whose data is not what its header says. One libdeflate decompressor and one output buffer serve
    /// every entry up to `Inflate.wholeBufferLimit` (allocating them per entry costs more than inflating a small
    /// one); larger ones stream through zlib in bounded memory.
    public func scanEntryData(_ entries: [ZipEntry], _ found: (ZipEntry, EntryDataProblem) throws -> Void) rethrows {
        let inflater = try? Inflate.Inflater()
        var buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { buffer.deallocate() }
        // An empty entry has nothing to read, but a CRC-32 other than 0 (an empty input's) is still wrong.
        for entry in entries where entry.compressedSize > 0 || entry.uncompressedSize > 0 || entry.crc32 != 0 {
            let problem = Self.problem(of: entry) {
                if !entry.isCompressed {
                    let crc = try source.withBytes(in: entry.dataRange) { CRC32.checksum($0) }
                    if crc != entry.crc32 { throw CRCMismatch(crc: crc) }
                    return 0
                }
                guard let inflater, entry.uncompressedSize <= Inflate.wholeBufferLimit else {
                    var crc = CRC32()
                    var consumed = 0
                    try source.withBytes(in: entry.dataRange) { raw in
                        try Inflate.inflate(raw, expectedSize: entry.uncompressedSize, consumed: { consumed = $0 }) { crc.update($0) }
                    }
                    if crc.value != entry.crc32 { throw CRCMismatch(crc: crc.value) }
                    return entry.compressedSize - Int64(consumed)
                }
                let size = Int(entry.uncompressedSize)
                if buffer.count < size {
                    buffer.deallocate()
                    buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
                }
                let output = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<size])
                let consumed = try source.withBytes(in: entry.dataRange) { Int64(try inflater.inflate($0, into: output)) }
                let crc = CRC32.checksum(UnsafeRawBufferPointer(output))
                if crc != entry.crc32 { throw CRCMismatch(crc: crc) }
                return entry.compressedSize - consumed
            }
            if let problem { try found(entry, problem) }
        }
    }

    /// A CRC-32 that is not the header's.
    private struct CRCMismatch: Error { let crc: UInt32 }

    /// What `read` (which reads `entry`'s data and returns how many compressed bytes follow its stream's end)
    /// found wrong, if anything.
    private static func problem(of entry: ZipEntry, _ read: () throws -> Int64) -> EntryDataProblem? {
        do {
            let trailing = try read()
            return trailing > 0 ? .bytesAfterStream(trailing) : nil
        } catch let mismatch as CRCMismatch {
            return .crcMismatch(actual: mismatch.crc, declared: entry.crc32, inflated: entry.isCompressed)
        } catch let failure as Inflate.Failure {
            return .unreadable("its data does not inflate as its header declares: \(failure)")
        } catch {
            // Bytes outside the file: the archive's own checks refuse such an APK before any entry is read.
            return .unreadable("its data cannot be read: \(error)")
        }
    }
}
