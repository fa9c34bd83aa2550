import APKCore
import ZlibWrapper

/// What verify finds in entries' data when no JAR signature check reads them (v2+ signed, minSdkVersion ≥ 24):
/// the JAR check inflates every entry it digests and fails on one it cannot read; without it, nothing else
/// reads the entries, so this scan does, alongside the block schemes' digests.
/// - Corrupt data (ENTRY_DATA_CORRUPT): a stored entry whose CRC-32 is not its header's, a deflated one that
///   does not inflate, inflates to another size or to data with another CRC-32. The v2+ signature covers the
///   bytes as they are, so Android installs the APK, but reading the entry fails on the device (libziparchive
///   checks size and CRC-32 as it extracts), and `sign` and `run` refuse to copy it.
/// - Bytes after the end of a deflate stream (ENTRY_BYTES_AFTER_DEFLATE_STREAM): Android and apksig read only
///   up to the stream's end, so those bytes are covered by no CRC-32 and read by no one, a place to hide data
///   in a signed APK; `sign` and `run` refuse to copy such an entry. Only inflating finds where a stream ends.
enum EntryDataScan {
    /// The warning for `entry`, `trailing` of whose compressed bytes follow its deflate stream.
    static func bytesAfterStream(_ entry: ZipEntry, trailing: Int64) -> Issue {
        .warning(.entryBytesAfterDeflateStream, entry.name, "\(trailing) of the entry's \(entry.compressedSize) compressed bytes follow the end of its deflate stream: no reader inflates them and no CRC-32 covers them, so they are hidden in the signed APK. Android installs it, but apkpatch sign and run refuse to copy such an entry; rebuild the APK with a standard ZIP writer")
    }

    /// The warning for `entry`, whose data is corrupt for `reason`.
    static func corrupt(_ entry: ZipEntry, _ reason: String) -> Issue {
        .warning(.entryDataCorrupt, entry.name, "entry \(entry.name.debugQuoted) is corrupt: \(reason). The signature covers the bytes as they are, so Android installs the APK, but reading this entry fails on the device (libziparchive checks its size and CRC-32), and apkpatch sign and run refuse to copy it; rebuild the APK from intact sources")
    }

    /// Entries up to this size are inflated into one buffer (libdeflate); larger ones stream through zlib.
    static let wholeBufferLimit: Int64 = 4 << 20

    /// Warnings for `entries`, in archive order.
    static func warnings(archive: APKArchive, entries: [ZipEntry]) -> [Issue] {
        guard let inflater = try? Inflate.Inflater() else { return [] }
        var buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { buffer.deallocate() }
        var warnings: [Issue] = []
        for entry in entries where entry.compressedSize > 0 || entry.uncompressedSize > 0 {
            do {
                if !entry.isCompressed {
                    let crc = try archive.source.withBytes(in: entry.dataRange) { CRC32.checksum($0) }
                    if crc != entry.crc32 { warnings.append(corrupt(entry, crcMismatch(crc, entry))) }
                } else if entry.uncompressedSize <= Self.wholeBufferLimit {
                    if buffer.count < Int(entry.uncompressedSize) {
                        buffer.deallocate()
                        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(entry.uncompressedSize), alignment: 16)
                    }
                    let output = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Int(entry.uncompressedSize)])
                    let consumed = try archive.source.withBytes(in: entry.dataRange) { Int64(try inflater.inflate($0, into: output)) }
                    let crc = CRC32.checksum(UnsafeRawBufferPointer(output))
                    if crc != entry.crc32 {
                        warnings.append(corrupt(entry, crcMismatch(crc, entry)))
                    } else if consumed < entry.compressedSize {
                        warnings.append(bytesAfterStream(entry, trailing: entry.compressedSize - consumed))
                    }
                } else {
                    let trailing = try archive.withUncompressedChunks(of: entry, { _ in })
                    if trailing > 0 { warnings.append(bytesAfterStream(entry, trailing: trailing)) }
                }
            } catch let failure as Inflate.Failure {
                warnings.append(corrupt(entry, "its data does not inflate as its header declares: \(failure)"))
            } catch let error as UnpackError {
                if case .corruptEntry(_, _, let reason) = error { warnings.append(corrupt(entry, reason)) }
            } catch {
                // Unreadable bytes: the checks that read the archive report them.
            }
        }
        return warnings
    }

    static func crcMismatch(_ crc: UInt32, _ entry: ZipEntry) -> String {
        func hex(_ value: UInt32) -> String { let digits = String(value, radix: 16); return "0x" + String(repeating: "0", count: 8 - digits.count) + digits }
        return "its \(entry.isCompressed ? "inflated " : "")data has CRC-32 \(hex(crc)), its header declares \(hex(entry.crc32))"
    }
}
