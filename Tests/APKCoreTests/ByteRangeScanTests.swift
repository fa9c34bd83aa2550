import APKCore
import Testing
import TestSupport

/// `ByteRangeScan`'s word test against a byte-by-byte one: the entry-name checks of the ZIP reader and the JAR
/// manifest take their fast path on it, so a byte it misses is a name that skips its check.
@Suite struct ByteRangeScanTests {
    @Test("finds a byte outside the range wherever it is, as a byte-by-byte scan does", arguments: [
        (0x01 as UInt8)..<(0x80 as UInt8), 0x20..<0xEE, 0x80..<0x80, 0x00..<0xFF,
    ])
    func agreesWithByteByByte(range: Range<UInt8>) {
        var generator = SplitMix64(seed: 21)
        // Bytes drawn mostly inside the range, lengths across the word boundaries, one byte changed at each place.
        for length in 0...40 {
            for _ in 0..<40 {
                var bytes = (0..<length).map { _ in
                    range.isEmpty ? UInt8.random(in: 0...0xFF, using: &generator)
                                  : UInt8.random(in: range.lowerBound...(range.upperBound - 1), using: &generator)
                }
                if length > 0, Bool.random(using: &generator) {
                    bytes[Int.random(in: 0..<length, using: &generator)] = UInt8.random(in: 0...0xFF, using: &generator)
                }
                let expected = bytes.contains { !range.contains($0) }
                let found = bytes.withUnsafeBytes { ByteRangeScan.containsByte(in: $0, outside: range) }
                #expect(found == expected, "seed 21, range \(range), bytes \(bytes)")
            }
        }
        // Each edge value alone, in a word of in-range bytes and in the tail.
        for edge in [range.lowerBound &- 1, range.lowerBound, range.upperBound &- 1, range.upperBound, 0, 0x7F, 0x80, 0xFF] {
            for position in [0, 7, 8, 12] {
                var bytes = [UInt8](repeating: range.isEmpty ? 0x41 : range.lowerBound, count: 13)
                bytes[position] = edge
                let expected = bytes.contains { !range.contains($0) }
                #expect(bytes.withUnsafeBytes { ByteRangeScan.containsByte(in: $0, outside: range) } == expected,
                        "range \(range), byte 0x\(String(edge, radix: 16)) at \(position)")
            }
        }
    }
}
