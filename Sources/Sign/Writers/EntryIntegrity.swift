import APKCore
import ZlibWrapper
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Entries copied raw into a signed output must be what their headers say: signing them would give damaged
/// data a valid signature. A stored entry's bytes must have its CRC-32; a deflated entry's stream must inflate
/// without error, end, give exactly the declared size, and that output must have the CRC-32. The checks ride
/// on work the writers do anyway: the CRC-32 of a deflated entry on the bytes inflated for its v1 digest, that
/// of a stored entry on the chunks as they are copied (`StoredEntryChecksums`). Without v1 nothing inflates
/// deflated entries, so they are inflated for the check alone.
enum EntryIntegrity {
    /// False only under the benchmark harness, which times `sign` with and without the checks in one run
    /// (`scripts/bench/run.sh`, workload `entry-checks`): `APKPATCH_BENCH_SKIP_ENTRY_CHECKS=1` skips computing
    /// them. Not an option for users: an output signed so may carry damaged entries, signed.
    static let isEnabled = getenv("APKPATCH_BENCH_SKIP_ENTRY_CHECKS").map { String(cString: $0) != "1" } ?? true

    /// Throws `SignError.corruptEntry` unless `crc` is the entry's declared CRC-32.
    static func check(_ crc: UInt32, of entry: ZipEntry) throws {
        guard crc != entry.crc32 else { return }
        throw SignError.corruptEntry(entry.name, reason: "its \(entry.method == .stored ? "data" : "inflated data") has CRC-32 \(hex(crc)), but its header declares \(hex(entry.crc32))")
    }

    /// `check(_:of:)` for a kept entry, whose fields are read where it is (a copy of the entry retains and releases
    /// its five arrays: thousands of entries are checked).
    static func check(_ crc: UInt32, of item: KeptEntry) throws {
        guard crc != item.entry.crc32 else { return }
        try check(crc, of: item.entry)
    }

    /// Runs `body`, which inflates `entry`, with an inflate failure reported as the entry's corruption.
    static func inflating<T>(_ entry: ZipEntry, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let failure as Inflate.Failure {
            throw SignError.corruptEntry(entry.name, reason: "its data does not inflate as its header declares: \(failure)")
        }
    }

    /// Inflates `entry`'s data with `body` fed the output, and checks the output's CRC-32 and that the stream
    /// ends where the data does.
    static func inflateChecked(_ entry: ZipEntry, _ raw: UnsafeRawBufferPointer,
                               consumed: (Int) -> Void = { _ in }, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        var crc = CRC32()
        var streamEnd = 0
        let checks = isEnabled
        try inflating(entry) {
            try Inflate.inflate(raw, expectedSize: entry.uncompressedSize, consumed: { read in
                streamEnd = read
                consumed(read)
            }) { bytes in
                if checks { crc.update(bytes) }
                try body(bytes)
            }
        }
        guard checks else { return }
        try checkStreamEnd(streamEnd, of: entry)
        try check(crc.value, of: entry)
    }

    /// Throws `SignError.corruptEntry` unless the deflate stream of `entry` took all of its compressed bytes.
    ///
    /// Bytes after the end of the stream but inside the compressed size are never inflated, so no CRC-32
    /// covers them and no reader shows them: apksig's `InflateSinkAdapter` stops at the end of the stream, and
    /// libziparchive's `inflateImpl` (zip_archive.cc) checks only that no bytes are left *unread*, so an entry
    /// whose trailing bytes arrive in the same read (the whole entry when the APK is mapped) installs. A signed
    /// output would carry data nobody can see, signed: a place to smuggle content past review.
    static func checkStreamEnd(_ streamEnd: Int, of entry: ZipEntry) throws {
        let trailing = entry.compressedSize - Int64(streamEnd)
        guard trailing > 0 else { return }
        throw SignError.corruptEntry(entry.name, reason: "its deflate stream ends after \(streamEnd) of its \(entry.compressedSize) compressed bytes, and the \(trailing) bytes after it are data no reader inflates and no CRC-32 covers (hidden in a signed APK, they could smuggle content past review)")
    }

    static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
    }
}

/// The CRC-32 of every stored entry's data in the entries section being copied, fed the section's bytes as
/// they pass (each byte once, from whichever worker copies it, while it is still in that core's cache) and
/// checked at the end. An entry inside one fed piece is checked at once; one spread over several (a chunk
/// boundary runs through it) leaves a CRC-32 per piece, combined in file order by `verify`.
final class StoredEntryChecksums: @unchecked Sendable {
    // @unchecked Sendable: `pieces` slots are written by the one worker that copies their chunk (see `feed`),
    // and read by `verify` after the workers are done.
    private let items: [KeptEntry]
    /// Stored entries with data, in output order: where their data starts and ends in the output.
    private let starts: [Int64]
    private let ends: [Int64]
    private let itemIndices: [Int]
    private let chunkSize: Int64
    /// Per output chunk, the pieces of entries crossing a fed piece's bounds, in output order.
    private let pieces: Parallel.Slots<[Piece]>

    private struct Piece {
        var position: Int  // in `starts`
        var crc: UInt32
        var length: Int64
    }

    /// `items` in output order with their data starts in the output; `sectionSize` bytes will be fed.
    init(items: [KeptEntry], dataStarts: [Int64], sectionSize: Int64, chunkSize: Int64) {
        var starts: [Int64] = [], ends: [Int64] = [], indices: [Int] = []
        for index in items.indices where items[index].entry.method == .stored && items[index].entry.compressedSize > 0 {
            starts.append(dataStarts[index])
            ends.append(dataStarts[index] + items[index].entry.compressedSize)
            indices.append(index)
        }
        self.items = items
        self.starts = starts
        self.ends = ends
        self.itemIndices = indices
        self.chunkSize = chunkSize
        pieces = Parallel.Slots(count: Int((sectionSize + chunkSize - 1) / chunkSize), repeating: [])
    }

    /// The output bytes at `offset` are `bytes`. Every byte of the section is fed exactly once, and all pieces
    /// of one chunk by the same worker, in order.
    func feed(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        guard !starts.isEmpty, EntryIntegrity.isEnabled else { return }
        let end = offset + Int64(bytes.count)
        // The first entry whose data ends after `offset`.
        var low = 0, high = starts.count
        while low < high {
            let middle = (low + high) / 2
            if ends[middle] <= offset { low = middle + 1 } else { high = middle }
        }
        var position = low
        while position < starts.count && starts[position] < end {
            let from = max(starts[position], offset), to = min(ends[position], end)
            let crc = CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[Int(from - offset)..<Int(to - offset)]))
            if from == starts[position] && to == ends[position] {
                try EntryIntegrity.check(crc, of: items[itemIndices[position]])
            } else {
                pieces[Int(from / chunkSize)].append(Piece(position: position, crc: crc, length: to - from))
            }
            position += 1
        }
    }

    /// Checks the entries fed in several pieces.
    func verify() throws {
        guard EntryIntegrity.isEnabled else { return }
        var current: (position: Int, crc: UInt32, length: Int64)?
        func finish() throws {
            guard let done = current else { return }
            let entry = items[itemIndices[done.position]].entry
            guard done.length == entry.compressedSize else {
                throw SignError.internalInconsistency("\(done.length) of the \(entry.compressedSize) bytes of \(entry.name.debugDescription) were checked")
            }
            try EntryIntegrity.check(done.crc, of: entry)
        }
        for chunk in 0..<pieces.count {
            for piece in pieces[chunk] {
                if let open = current, open.position == piece.position {
                    current = (open.position, CRC32.combine(open.crc, piece.crc, secondLength: piece.length), open.length + piece.length)
                } else {
                    try finish()
                    current = (piece.position, piece.crc, piece.length)
                }
            }
        }
        try finish()
    }
}
