import Foundation
import Testing
import TestSupport

/// `ForeignCorpus.crc32`, which the corpus suites check unpack's extracted bytes with against libziparchive's
/// records: its contiguous form (Data, arrays, their slices) and its sequence form give zlib's CRC-32 (the
/// values are Python's `zlib.crc32`).
@Suite struct TestChecksumTests {
    @Test func contiguousAndSequenceFormsGiveZlibsValue() {
        let check = Array("123456789".utf8)
        #expect(ForeignCorpus.crc32(check) == 0xcbf4_3926)
        #expect(ForeignCorpus.crc32(Data(check)) == 0xcbf4_3926)
        #expect(ForeignCorpus.crc32(Data([0x55] + check)[1...]) == 0xcbf4_3926)
        #expect(ForeignCorpus.crc32(check.lazy.map { $0 }) == 0xcbf4_3926)
        let large = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        #expect(ForeignCorpus.crc32(Data(large)) == 0xdcf2_9a4b)
        #expect(ForeignCorpus.crc32(large.lazy.map { $0 }) == 0xdcf2_9a4b)
    }
}
