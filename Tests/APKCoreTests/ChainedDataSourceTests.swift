import Testing
@testable import APKCore
#if canImport(Glibc)
import Glibc
#endif

@Suite(.removesTemporaryDirectories) struct ChainedDataSourceTests {
    /// `read(_:into:)` puts each piece's part of a range in its place, whatever pieces the range spans (an empty
    /// piece among them, a file mapping read with pread), the same bytes `withBytes` gives.
    @Test func readsARangeAcrossPiecesInPlace() throws {
        var generator = SystemRandomNumberGenerator()
        let flat = (0..<9_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let path = "/tmp/apkpatch-chain-\(getpid()).bin"
        defer { unlink(path) }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        #expect(flat[0..<5_000].withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) } == 5_000)
        close(fd)
        // A mapped file's first 4,000 bytes, then 0 bytes, then 3 bytes, then the rest.
        let pieces: [any DataSource] = [try MappedFile(path: path).slice(0..<4_000), ByteArrayDataSource([]),
                                        ByteArrayDataSource(Array(flat[4_000..<4_003])), ByteArrayDataSource(Array(flat[4_003...]))]
        let chain = ChainedDataSource(pieces)
        #expect(chain.count == Int64(flat.count))
        let ranges: [Range<Int>] = [0..<9_000, 3_999..<4_004, 4_000..<4_003, 4_002..<4_004, 0..<0, 4_000..<4_000, 8_999..<9_000,
                                    1_234..<8_765, 4_003..<9_000, 0..<4_000]
        for range in ranges {
            var buffer = [UInt8](repeating: 0xEE, count: range.count + 1)
            try buffer.withUnsafeMutableBytes { try chain.read(Int64(range.lowerBound)..<Int64(range.upperBound), into: $0) }
            #expect(Array(buffer[0..<range.count]) == Array(flat[range]), "range \(range)")
            #expect(buffer[range.count] == 0xEE, "range \(range): a byte past it was written")
            let viaBytes = try chain.withBytes(in: Int64(range.lowerBound)..<Int64(range.upperBound)) { Array($0) }
            #expect(viaBytes == Array(flat[range]))
        }
        #expect(throws: (any Error).self) {
            var buffer = [UInt8](repeating: 0, count: 2)
            try buffer.withUnsafeMutableBytes { try chain.read(8_999..<9_001, into: $0) }
        }
    }
}
