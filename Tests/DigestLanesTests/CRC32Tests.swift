import Testing
import ZlibWrapper

/// `CRC32` must be ZIP's CRC-32 of every message, whatever its length (the 512-bit folding takes whole 64-byte
/// blocks of pieces of 256 bytes or more, libdeflate the rest), its alignment in memory, and however it is
/// split into updates. The oracle is the bytes-at-a-time table of the reflected polynomial, written out here.
@Suite struct CRC32Tests {
    static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xedb8_8320 : crc >> 1 }
        return crc
    }

    static func reference(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xffff_ffff
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xff)] ^ (crc >> 8) }
        return ~crc
    }

    /// 1 MiB and a little more of pseudo-random bytes, eight at a time (a debug build is slow byte by byte).
    static let data: [UInt8] = {
        var generator = SHA256LanesTests.SplitMix(state: 7)
        return (0..<((1 << 20) + 4096) / 8).flatMap { _ in withUnsafeBytes(of: generator.next()) { Array($0) } }
    }()

    /// Known values: the standard check value, and zero bytes (a message of zeros gives a non-zero CRC-32).
    @Test func knownValues() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xcbf4_3926)
        #expect(CRC32.checksum([UInt8](repeating: 0, count: 4096)) == Self.reference([UInt8](repeating: 0, count: 4096)[...]))
        #expect(CRC32.checksum([UInt8](repeating: 0xff, count: 1 << 20)) == Self.reference([UInt8](repeating: 0xff, count: 1 << 20)[...]))
        #expect(CRC32.checksum([]) == 0)
    }

    /// Every length up to 1,100 bytes and some long ones, at each alignment of 0 to 63 bytes past a buffer's
    /// start for the long ones (the kernel loads unaligned).
    @Test func everyLengthAndAlignment() {
        let data = Self.data
        var failures: [String] = []
        var cases = (0...1100).map { (length: $0, offset: $0 % 64) }
        for length in [4096 + 37, 65_536 + 255, 100_000] { cases += [0, 13, 63].map { (length, $0) } }
        cases.append(((1 << 20) + 63, 1))
        for (length, offset) in cases {
            let got = data.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + length)])) }
            if got != Self.reference(data[offset..<(offset + length)]) { failures.append("length \(length) at \(offset)") }
        }
        #expect(failures.isEmpty, "wrong CRC-32 (512-bit folding: \(CRC32.folds512)): \(failures.prefix(10))")
    }

    /// A message fed in random pieces (each piece continues the last one's value) and pieces put together with
    /// `combine` give the CRC-32 of the whole.
    @Test func randomSplits() {
        var generator = SHA256LanesTests.SplitMix(state: 99)
        for round in 0..<16 {
            let length = Int.random(in: 0..<200_000, using: &generator), first = Int.random(in: 0..<4096, using: &generator)
            let data = Array(Self.data[first..<(first + length)])
            let expected = Self.reference(data[...])
            var crc = CRC32(), combined: UInt32 = 0, start = 0
            while start < length {
                let piece = Int.random(in: 0...min(length - start, Bool.random(using: &generator) ? 700 : 70_000), using: &generator)
                data.withUnsafeBytes { bytes in
                    let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + piece)])
                    crc.update(slice)
                    combined = CRC32.combine(combined, CRC32.checksum(slice), secondLength: Int64(piece))
                }
                start += piece
            }
            #expect(crc.value == expected, "round \(round): \(length) bytes fed in pieces")
            #expect(combined == expected, "round \(round): \(length) bytes combined from pieces")
        }
    }
}
