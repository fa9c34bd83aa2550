import Testing
import TestSupport
import ZlibWrapper

/// `Inflate.inflate` takes libdeflate for entries up to 4 MiB and zlib's stream above: both must give the same
/// bytes and the same failures for a stream that is longer, shorter or other than its header declares.
@Suite(.removesTemporaryDirectories) struct InflateTests {
    /// Sizes on both sides of the 4 MiB switch, and an empty entry.
    static let sizes = [0, 1, 70_000, (4 << 20) - 1, 4 << 20, (4 << 20) + 1, 9 << 20]

    /// Compressible but not trivial: a zip bomb's zeros would hide a wrong copy.
    static func content(_ size: Int) -> [UInt8] {
        let noise = FixtureAPK.pseudoRandomBytes(count: min(size, 4096), seed: UInt64(size) + 3)
        return (0..<size).map { noise.isEmpty ? 0 : noise[($0 * 7 + $0 / 4096) % noise.count] & 0x0f }
    }

    func inflate(_ compressed: [UInt8], declaring size: Int64) throws -> [UInt8] {
        var out: [UInt8] = []
        try compressed.withUnsafeBytes { try Inflate.inflate($0, expectedSize: size) { out.append(contentsOf: $0) } }
        return out
    }

    @Test("gives back the bytes, by zlib's and libdeflate's compressors alike", arguments: sizes)
    func roundTrip(size: Int) throws {
        let plain = Self.content(size)
        for compressed in [try Deflate.compress(plain, level: 6), try Deflate.compressFast(plain, level: 1)] {
            #expect(try inflate(compressed, declaring: Int64(size)) == plain)
        }
    }

    @Test("a stream longer than declared stops at the declared size", arguments: sizes.filter { $0 > 0 })
    func longerThanDeclared(size: Int) throws {
        let compressed = try Deflate.compress(Self.content(size), level: 6)
        #expect {
            _ = try inflate(compressed, declaring: Int64(size - 1))
        } throws: { error in
            if case Inflate.Failure.exceedsDeclaredSize = error { return true }
            return false
        }
    }

    @Test("a stream shorter than declared is refused", arguments: sizes)
    func shorterThanDeclared(size: Int) throws {
        let compressed = try Deflate.compress(Self.content(size), level: 6)
        #expect {
            _ = try inflate(compressed, declaring: Int64(size + 1))
        } throws: { error in
            if case Inflate.Failure.shorterThanDeclared(let expected, let actual) = error {
                return expected == Int64(size + 1) && actual == Int64(size)
            }
            return false
        }
    }

    @Test("corrupt or truncated data is refused", arguments: [70_000, 9 << 20])
    func corrupt(size: Int) throws {
        let compressed = try Deflate.compress(Self.content(size), level: 6)
        let truncated = Array(compressed.prefix(compressed.count / 2))
        var garbage = compressed
        for i in stride(from: 0, to: garbage.count, by: 3) { garbage[i] ^= 0x5a }
        for bad in [truncated, garbage, [0xff, 0xff, 0xff, 0xff]] {
            #expect(throws: (any Error).self) { _ = try inflate(bad, declaring: Int64(size)) }
        }
    }
}
