@testable import APKCore
import Testing
import TestSupport

/// The ZIP64 extended-information record as `ZipArchive` reads it (through the one extra-field walk,
/// `ExtraField.forEachRecord`), strict where apksig's `checkAndReturnZip64Value` is: a record that runs past
/// the extra field, a ZIP64 record too short for the values marked 0xFFFFFFFF, or none at all is an error.
@Suite(.removesTemporaryDirectories) struct Zip64ExtraFieldTests {
    static func record(_ id: UInt16, _ data: [UInt8]) -> [UInt8] {
        [UInt8(id & 0xff), UInt8(id >> 8), UInt8(data.count & 0xff), UInt8(data.count >> 8)] + data
    }

    static func uint64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

    static func values(_ extra: [UInt8], _ fields: [UInt32]) -> Result<[Int64], ZipFormatError> {
        Result { try ZipArchive.zip64Values(in: extra, fields, what: "entry") }.mapError { $0 as! ZipFormatError }
    }

    @Test func valuesMarkedFFFFFFFFComeFromTheZip64RecordInOrder() throws {
        // An alignment record first, then ZIP64 with the uncompressed size and the offset (the compressed size fits).
        let extra = Self.record(0xd935, [4, 0, 0, 0]) + Self.record(0x0001, Self.uint64(5_000_000_000) + Self.uint64(1 << 33))
        #expect(try Self.values(extra, [0xFFFF_FFFF, 1234, 0xFFFF_FFFF]).get() == [5_000_000_000, 1234, 1 << 33])
        #expect(try Self.values(Self.record(0x0001, []), [1, 2, 3]).get() == [1, 2, 3])
    }

    @Test func malformedRecordsAreRefused() {
        let cases: [([UInt8], [UInt32], String)] = [
            (Self.record(0x0001, Self.uint64(7)), [0xFFFF_FFFF, 0xFFFF_FFFF], "entry: ZIP64 extra field too short"),
            (Self.record(0xcafe, [1, 2]) + [0x01, 0x00, 0x10, 0x00, 0, 0], [0xFFFF_FFFF], "entry: extra field runs past its end"),
            (Self.record(0xcafe, [1, 2]), [0xFFFF_FFFF], "entry: 0xFFFFFFFF size or offset without a ZIP64 extra field"),
            (Self.record(0xcafe, []) + [0x01, 0x00], [0xFFFF_FFFF], "entry: 0xFFFFFFFF size or offset without a ZIP64 extra field"),
            (Self.record(0x0001, Self.uint64(1 << 48)), [0xFFFF_FFFF], "entry: ZIP64 value 281474976710656 out of range"),
        ]
        for (extra, fields, message) in cases {
            #expect(Self.values(extra, fields) == .failure(.malformed(message)), "\(extra)")
        }
    }

    /// A stored entry whose ZIP64 record gives two sizes: the refusal names those sizes, not the 0xFFFFFFFF markers
    /// of the central record (which read "compressed size 4294967295 but uncompressed size 4294967295").
    @Test func storedSizesThatDisagreeAreReportedAsTheZip64RecordGivesThem() throws {
        var builder = ZipBuilder()
        builder.items = [ZipBuilder.Item(name: "lib/x.so", data: Array("0123456789".utf8), crc: 0)]
        let bytes = builder.build(mutateCentral: { _, entry in
            entry.compressedSize = 0xFFFF_FFFF
            entry.uncompressedSize = 0xFFFF_FFFF
            entry.centralExtra = Self.record(0x0001, Self.uint64(10) + Self.uint64(17))
        })
        var limits = ZipArchive.Limits()
        limits.readsZip64 = true
        #expect(throws: ZipFormatError.malformed("stored entry \"lib/x.so\" has compressed size 17 but uncompressed size 10 (its ZIP64 extra field says so)")) {
            try ZipArchive(source: ByteArrayDataSource(bytes), limits: limits)
        }
    }
}
