internal import CZlib
internal import CLibdeflate
internal import CZlibDeflate
internal import CCRC32

/// CRC-32 as ZIP uses it, fed incrementally: the same function as zlib's `crc32`. The whole 64-byte blocks of
/// a piece of 256 bytes or more are folded on 512-bit registers where the CPU has VPCLMULQDQ (CCRC32: four
/// times the bytes per instruction of libdeflate's 128-bit form), the rest by libdeflate (carry-less
/// multiplication too, far ahead of zlib's tables). `sign` checks every stored byte it copies with it.
public struct CRC32: Sendable {
    public private(set) var value: UInt32 = 0
    public init() {}
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        var folded = 0
        if bytes.count >= 256 && Self.folds512 {
            folded = bytes.count & ~63
            value = apk_crc32_vpclmul(value, base.assumingMemoryBound(to: UInt8.self), folded)
        }
        if folded < bytes.count { value = libdeflate_crc32(value, base + folded, bytes.count - folded) }
    }
    /// Whether this CPU folds on 512-bit registers (the tests say which form they checked).
    package static let folds512 = apk_crc32_vpclmul_available() != 0
    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc = CRC32(); crc.update(bytes); return crc.value
    }
    public static func checksum(_ bytes: [UInt8]) -> UInt32 { bytes.withUnsafeBytes { checksum($0) } }
    /// The CRC-32 of two pieces one after the other, from each piece's CRC-32 and the second's length.
    public static func combine(_ first: UInt32, _ second: UInt32, secondLength: Int64) -> UInt32 {
        UInt32(truncatingIfNeeded: crc32_combine(uLong(first), uLong(second), .init(secondLength)))
    }
}

/// A zlib failure, with zlib's own message.
public struct ZlibError: Error, CustomStringConvertible {
    public let operation: String
    public let code: Int32
    public let message: String
    public var description: String { "\(operation) failed: \(message) (zlib \(code))" }
}

/// Raw DEFLATE (no zlib header), as ZIP stores it.
public enum Deflate {
    /// Compresses `input` at `level` (0–9; 6 is zlib's default, 9 what aapt and apksigner use): zlib's bytes. From
    /// level 4 on, CZlibDeflate's copy of zlib's deflate with its faster search for the same matches (the JAR signature
    /// files at level 9 are a third of signing a large APK); `compressWithZlib` is what it must equal.
    ///
    /// `scratch`: memory lent for the deflate's tables (about 1.7 MB for a large input), used before any of its
    /// own; memory the process has written already takes no page faults, where fresh memory's first writes do
    /// (under a hypervisor, each may also be the host's first touch of the page). Its bytes are overwritten.
    public static func compress(_ input: UnsafeRawBufferPointer, level: Int32 = 6,
                                scratch: [UnsafeMutableRawBufferPointer] = []) throws -> [UInt8] {
        guard level >= 4, input.count <= 0xffff_ff00 else { return try compressWithZlib(input, level: level) }
        let fast: Int32 = input.count >= fasterSearchMinimum ? 1 : 0
        let capacity = apkpatch_deflate_bound(input.count)
        var rc = Z_OK
        // The regions must be alike: the smallest size stands for all.
        let regionSize = scratch.map(\.count).min() ?? 0
        var regions: [UnsafeMutablePointer<UInt8>?] = scratch.map { $0.baseAddress?.assumingMemoryBound(to: UInt8.self) }
        if regions.contains(nil) { regions = [] }
        // Deflated straight into the array: no second buffer to fault in and copy.
        let output = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            var written = 0
            rc = regions.withUnsafeBufferPointer { lent in
                apkpatch_deflate_raw_in(input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, level, fast,
                                        buffer.baseAddress, capacity, &written, lent.baseAddress.map { UnsafePointer($0) },
                                        lent.count, regionSize)
            }
            count = rc == Z_OK ? written : 0
        }
        guard rc == Z_OK else {
            throw ZlibError(operation: "deflate", code: rc, message: rc == Z_MEM_ERROR ? "out of memory" : "cannot compress")
        }
        return output
    }

    /// The smallest input the faster search is turned on for. It allocates and zeroes tables of about 1.7 MB
    /// (per three-byte hash and per window slot), which costs more than it saves until a hash's chain can grow
    /// long; below this size (a JAR signature block file, a pin list) zlib's own search runs. Either way the bytes
    /// are zlib's.
    static let fasterSearchMinimum = 32 << 10

    /// Compresses `input` at `level` with the system zlib itself: the reference `compress` is tested against.
    public static func compressWithZlib(_ input: UnsafeRawBufferPointer, level: Int32 = 6) throws -> [UInt8] {
        var stream = z_stream()
        var rc = apkpatch_deflateInit2(&stream, level, -MAX_WBITS, 8)
        guard rc == Z_OK else { throw ZlibError(operation: "deflateInit2", code: rc, message: "cannot initialise deflate") }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(input.count)))
        var output = [UInt8](repeating: 0, count: max(bound, 16))
        let produced: Int = output.withUnsafeMutableBytes { out in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
            stream.avail_in = uInt(input.count)
            stream.next_out = out.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.avail_out = uInt(out.count)
            rc = deflate(&stream, Z_FINISH)
            return Int(stream.total_out)
        }
        guard rc == Z_STREAM_END else {
            throw ZlibError(operation: "deflate", code: rc, message: stream.msg.map { String(cString: $0) } ?? "incomplete")
        }
        output.removeSubrange(produced...)
        return output
    }

    public static func compress(_ input: [UInt8], level: Int32 = 6, scratch: [UnsafeMutableRawBufferPointer] = []) throws -> [UInt8] {
        try input.withUnsafeBytes { try compress($0, level: level, scratch: scratch) }
    }

    /// Compresses `input` with libdeflate at `level` (0–12): at level 1 about twice as fast as zlib and a
    /// little smaller, but not zlib's bytes. For output no other tool has to reproduce byte for byte.
    public static func compressFast(_ input: UnsafeRawBufferPointer, level: Int32) throws -> [UInt8] {
        guard let compressor = libdeflate_alloc_compressor(level) else {
            throw ZlibError(operation: "libdeflate_alloc_compressor", code: level, message: "cannot create a level \(level) compressor")
        }
        defer { libdeflate_free_compressor(compressor) }
        let bound = libdeflate_deflate_compress_bound(compressor, input.count)
        return try [UInt8](unsafeUninitializedCapacity: max(bound, 16)) { out, count in
            count = libdeflate_deflate_compress(compressor, input.baseAddress, input.count, out.baseAddress, out.count)
            guard count > 0 || input.count == 0 && bound == 0 else {
                count = 0
                throw ZlibError(operation: "libdeflate_deflate_compress", code: 0, message: "output larger than its bound")
            }
        }
    }

    public static func compressFast(_ input: [UInt8], level: Int32) throws -> [UInt8] {
        try input.withUnsafeBytes { try compressFast($0, level: level) }
    }
}

/// Raw DEFLATE fed in pieces, for inputs too large to hold in memory. The output is the same as
/// `Deflate.compress` of the whole input at the same level, however the input is split.
public final class Deflater {
    private var stream = z_stream()
    private var output = [UInt8](repeating: 0, count: 256 << 10)
    private var finished = false

    public init(level: Int32 = 6) throws {
        let rc = apkpatch_deflateInit2(&stream, level, -MAX_WBITS, 8)
        guard rc == Z_OK else { throw ZlibError(operation: "deflateInit2", code: rc, message: "cannot initialise deflate") }
    }

    deinit { deflateEnd(&stream) }

    /// Compresses `input`, handing compressed bytes to `sink` as they are produced.
    public func update(_ input: UnsafeRawBufferPointer, _ sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        precondition(!finished, "Deflater fed after finish")
        guard input.count > 0 else { return }
        stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress!.assumingMemoryBound(to: Bytef.self))
        stream.avail_in = uInt(input.count)
        try run(flush: Z_NO_FLUSH, sink)
    }

    /// Ends the stream, handing the last compressed bytes to `sink`.
    public func finish(_ sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard !finished else { return }
        finished = true
        stream.next_in = nil
        stream.avail_in = 0
        try run(flush: Z_FINISH, sink)
    }

    private func run(flush: Int32, _ sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        while true {
            let (rc, produced): (Int32, Int) = output.withUnsafeMutableBytes { out in
                stream.next_out = out.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.avail_out = uInt(out.count)
                let rc = deflate(&stream, flush)
                return (rc, out.count - Int(stream.avail_out))
            }
            guard rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR else {
                throw ZlibError(operation: "deflate", code: rc, message: stream.msg.map { String(cString: $0) } ?? "failed")
            }
            if produced > 0 { try output.withUnsafeBytes { try sink(UnsafeRawBufferPointer(rebasing: $0[0..<produced])) } }
            if flush == Z_FINISH {
                if rc == Z_STREAM_END { return }
            } else if stream.avail_in == 0 && produced < output.count {
                return
            }
        }
    }
}

/// Raw INFLATE with a hard bound on the output: a stream that would inflate past `expectedSize` (a zip bomb,
/// or a lying header) stops with an error instead of consuming memory or disk.
public enum Inflate {
    public enum Failure: Error, CustomStringConvertible {
        case exceedsDeclaredSize(Int64)
        case shorterThanDeclared(expected: Int64, actual: Int64)
        case corrupt(String)
        public var description: String {
            switch self {
            case .exceedsDeclaredSize(let size): return "inflates to more than its declared \(size) bytes"
            case .shorterThanDeclared(let expected, let actual): return "inflates to \(actual) bytes, not the declared \(expected)"
            case .corrupt(let message): return "compressed data is corrupt (\(message))"
            }
        }
    }

    /// Inflates `input`, calling `body` with each chunk of output (at most `chunkSize` bytes, or the whole
    /// entry at once when it is small); throws unless the stream ends after exactly `expectedSize` bytes.
    ///
    /// `consumed` is told, after each step, how many input bytes zlib has read so far: it never reads them
    /// again, so a caller reading from a mapping can give those pages back while a large entry inflates. The
    /// last count is where the stream ended: fewer than `input.count` when bytes follow its end, which
    /// inflating never reads (a caller that must account for every byte compares).
    public static func inflate(_ input: UnsafeRawBufferPointer, expectedSize: Int64, chunkSize: Int = 256 << 10,
                               consumed report: (Int) -> Void = { _ in },
                               _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        if expectedSize >= 0 && expectedSize <= wholeBufferLimit {
            report(try inflateWhole(input, expectedSize: Int(expectedSize), body))
            return
        }
        var stream = z_stream()
        var rc = apkpatch_inflateInit2(&stream, -MAX_WBITS)
        guard rc == Z_OK else { throw ZlibError(operation: "inflateInit2", code: rc, message: "cannot initialise inflate") }
        defer { inflateEnd(&stream) }
        // No bigger than the entry needs (one byte more shows a stream longer than declared in the same
        // step): most entries are small, and a fresh 256 KiB per entry is page faults, not inflating.
        let chunkSize = Int(max(1, min(Int64(chunkSize), expectedSize + 1)))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var consumed = 0
        var total: Int64 = 0
        repeat {
            let inputChunk = min(input.count - consumed, 1 << 20)
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress.map { ($0 + consumed).assumingMemoryBound(to: Bytef.self) })
            stream.avail_in = uInt(inputChunk)
            stream.next_out = buffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.avail_out = uInt(chunkSize)
            rc = CZlib.inflate(&stream, Z_NO_FLUSH)
            consumed += inputChunk - Int(stream.avail_in)
            report(consumed)
            let produced = chunkSize - Int(stream.avail_out)
            total += Int64(produced)
            if total > expectedSize { throw Failure.exceedsDeclaredSize(expectedSize) }
            if produced > 0 { try body(UnsafeRawBufferPointer(rebasing: buffer[0..<produced])) }
            if rc == Z_STREAM_END { break }
            if rc == Z_BUF_ERROR && consumed >= input.count && produced == 0 {
                throw Failure.corrupt("unexpected end of compressed data")
            }
            guard rc == Z_OK || rc == Z_BUF_ERROR else {
                throw Failure.corrupt(stream.msg.map { String(cString: $0) } ?? "zlib error \(rc)")
            }
        } while true
        guard total == expectedSize else { throw Failure.shorterThanDeclared(expected: expectedSize, actual: total) }
    }

    /// Entries up to this size are inflated by libdeflate into one buffer (2.5 times zlib's speed); larger ones
    /// stream through zlib, so memory stays bounded whatever an entry declares.
    public static let wholeBufferLimit: Int64 = 4 << 20

    /// libdeflate into a buffer of exactly `expectedSize` bytes, with the same failures as the zlib path;
    /// returns how many input bytes the stream took.
    static func inflateWhole(_ input: UnsafeRawBufferPointer, expectedSize: Int, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Int {
        guard let decompressor = libdeflate_alloc_decompressor() else {
            throw ZlibError(operation: "libdeflate_alloc_decompressor", code: 0, message: "out of memory")
        }
        defer { libdeflate_free_decompressor(decompressor) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(expectedSize, 1), alignment: 16)
        defer { buffer.deallocate() }
        var consumed = 0
        var produced = 0
        let result = libdeflate_deflate_decompress_ex(decompressor, input.baseAddress, input.count, buffer.baseAddress,
                                                      expectedSize, &consumed, &produced)
        switch result {
        case LIBDEFLATE_SUCCESS:
            guard produced == expectedSize else { throw Failure.shorterThanDeclared(expected: Int64(expectedSize), actual: Int64(produced)) }
        case LIBDEFLATE_INSUFFICIENT_SPACE:
            throw Failure.exceedsDeclaredSize(Int64(expectedSize))
        default:
            throw Failure.corrupt("invalid or truncated DEFLATE data")
        }
        try body(UnsafeRawBufferPointer(rebasing: buffer[0..<produced]))
        return consumed
    }

    /// Inflates whole entries into buffers the caller gives, with one libdeflate decompressor for all of them
    /// (allocating one costs more than inflating a small entry).
    public final class Inflater {
        private let decompressor: OpaquePointer

        public init() throws {
            guard let decompressor = libdeflate_alloc_decompressor() else {
                throw ZlibError(operation: "libdeflate_alloc_decompressor", code: 0, message: "out of memory")
            }
            self.decompressor = decompressor
        }

        deinit { libdeflate_free_decompressor(decompressor) }

        /// Inflates `input` into `output`, which must be exactly the size it declares; with the same failures
        /// as `Inflate.inflate(_:expectedSize:_:)`. Returns how many bytes of `input` the stream took (libdeflate
        /// counts to the byte holding the stream's last bit, as zlib does).
        @discardableResult
        public func inflate(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws -> Int {
            var consumed = 0
            var produced = 0
            let result = libdeflate_deflate_decompress_ex(decompressor, input.baseAddress, input.count, output.baseAddress,
                                                          output.count, &consumed, &produced)
            switch result {
            case LIBDEFLATE_SUCCESS:
                guard produced == output.count else { throw Failure.shorterThanDeclared(expected: Int64(output.count), actual: Int64(produced)) }
            case LIBDEFLATE_INSUFFICIENT_SPACE:
                throw Failure.exceedsDeclaredSize(Int64(output.count))
            default:
                throw Failure.corrupt("invalid or truncated DEFLATE data")
            }
            return consumed
        }
    }

    /// One raw deflate stream inflated as far as its reader asks, into buffers the reader gives: for a large
    /// entry read front to back while it inflates (resources.arsc's check), in bounded memory. With
    /// `inflate(_:expectedSize:_:)`'s failures: `read(into:)` throws once the stream would pass `expectedSize`,
    /// and at the end (`read` returns 0) unless it ended after exactly `expectedSize` bytes.
    public final class Stream {
        private var stream = z_stream()
        private let input: UnsafeRawBufferPointer
        private let expectedSize: Int64
        /// Input bytes the stream has taken: where it ended, once it has (`isFinished`).
        public private(set) var consumed = 0
        /// Output bytes produced so far.
        public private(set) var produced: Int64 = 0
        public private(set) var isFinished = false

        /// `input` must stay valid (and its bytes unchanged) while the stream is read.
        public init(_ input: UnsafeRawBufferPointer, expectedSize: Int64) throws {
            self.input = input
            self.expectedSize = expectedSize
            let rc = apkpatch_inflateInit2(&stream, -MAX_WBITS)
            guard rc == Z_OK else { throw ZlibError(operation: "inflateInit2", code: rc, message: "cannot initialise inflate") }
        }

        deinit { inflateEnd(&stream) }

        /// Inflates into `output` up to its size; returns how many bytes it wrote, 0 only at the stream's end.
        public func read(into output: UnsafeMutableRawBufferPointer) throws -> Int {
            guard !isFinished, output.count > 0 else { return 0 }
            var written = 0
            while written < output.count {
                let inputChunk = min(input.count - consumed, 1 << 20)
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress.map { ($0 + consumed).assumingMemoryBound(to: Bytef.self) })
                stream.avail_in = uInt(inputChunk)
                let room = min(output.count - written, 1 << 30)
                stream.next_out = (output.baseAddress! + written).assumingMemoryBound(to: Bytef.self)
                stream.avail_out = uInt(room)
                let rc = CZlib.inflate(&stream, Z_NO_FLUSH)
                consumed += inputChunk - Int(stream.avail_in)
                let step = room - Int(stream.avail_out)
                written += step
                produced += Int64(step)
                if produced > expectedSize { throw Failure.exceedsDeclaredSize(expectedSize) }
                if rc == Z_STREAM_END {
                    isFinished = true
                    guard produced == expectedSize else { throw Failure.shorterThanDeclared(expected: expectedSize, actual: produced) }
                    break
                }
                if rc == Z_BUF_ERROR && consumed >= input.count && step == 0 {
                    throw Failure.corrupt("unexpected end of compressed data")
                }
                guard rc == Z_OK || rc == Z_BUF_ERROR else {
                    throw Failure.corrupt(stream.msg.map { String(cString: $0) } ?? "zlib error \(rc)")
                }
            }
            return written
        }
    }

    /// The first `count` bytes `input` inflates to (fewer when the stream ends before), without inflating the
    /// rest: what a reader of a header (an ELF file's program headers) needs of a compressed entry.
    public static func prefix(_ input: UnsafeRawBufferPointer, count: Int) throws -> [UInt8] {
        guard count > 0 else { return [] }
        var stream = z_stream()
        var rc = apkpatch_inflateInit2(&stream, -MAX_WBITS)
        guard rc == Z_OK else { throw ZlibError(operation: "inflateInit2", code: rc, message: "cannot initialise inflate") }
        defer { inflateEnd(&stream) }
        var out = [UInt8](repeating: 0, count: count)
        let produced: Int = out.withUnsafeMutableBytes { buffer in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
            stream.avail_in = uInt(min(input.count, Int(UInt32.max)))
            stream.next_out = buffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
            stream.avail_out = uInt(count)
            // zlib stops when the output is full, the stream ends, or the input runs out.
            repeat { rc = CZlib.inflate(&stream, Z_NO_FLUSH) } while rc == Z_OK && stream.avail_out > 0 && stream.avail_in > 0
            return count - Int(stream.avail_out)
        }
        guard rc == Z_OK || rc == Z_STREAM_END || (rc == Z_BUF_ERROR && produced > 0) else {
            throw Failure.corrupt(stream.msg.map { String(cString: $0) } ?? "zlib error \(rc)")
        }
        return Array(out[0..<produced])
    }

    /// Inflates `input` into a new array of exactly `expectedSize` bytes.
    public static func inflate(_ input: UnsafeRawBufferPointer, expectedSize: Int64) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Int(min(expectedSize, 1 << 30)))
        try inflate(input, expectedSize: expectedSize) { out.append(contentsOf: $0) }
        return out
    }
}
