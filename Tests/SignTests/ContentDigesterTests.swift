import APKCore
import OpenSSLWrapper
import SignatureSchemes
import Testing
import TestSupport

/// The streaming digester (used while signing) and the chunked digester (used on a mapped APK) must agree
/// byte for byte, however the input is split.
@Suite(.removesTemporaryDirectories) struct ContentDigesterTests {
    @Test("streaming and mapped content digests agree for any split", arguments: [0, 1, 1 << 20, (1 << 20) + 1, 3 * (1 << 20) + 12345])
    func streamingMatchesChunked(size: Int) throws {
        let entries = FixtureAPK.pseudoRandomBytes(count: size, seed: UInt64(size) + 7)
        let centralDirectory = FixtureAPK.pseudoRandomBytes(count: 3000, seed: 11)
        var eocd = [UInt8](repeating: 0, count: 22)
        eocd[0] = 0x50; eocd[1] = 0x4b; eocd[2] = 0x05; eocd[3] = 0x06
        let algorithms: Set<ContentDigestAlgorithm> = [.chunkedSHA256, .chunkedSHA512]
        let expected = try ContentDigester.digests(entries: ByteArrayDataSource(entries), centralDirectory: ByteArrayDataSource(centralDirectory),
                                                   endOfCentralDirectory: eocd, algorithms: algorithms, concurrency: 2)
        let sequential = try ContentDigester.digests(entries: ByteArrayDataSource(entries), centralDirectory: ByteArrayDataSource(centralDirectory),
                                                     endOfCentralDirectory: eocd, algorithms: algorithms, concurrency: 1)
        #expect(expected == sequential)
        // Feed in pseudo-random piece sizes (seeded, printed on failure through the size argument), some
        // copied and some by reference (as the signer feeds a mapped input), from memory that stays valid
        // until finish().
        let stable = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, entries.count), alignment: 16)
        defer { stable.deallocate() }
        entries.withUnsafeBytes { if $0.count > 0 { stable.copyMemory(from: $0) } }
        let streaming = try StreamingChunkDigester(algorithms: algorithms, maxInFlight: 2)
        var offset = 0
        var state: UInt64 = UInt64(size) | 1
        while offset < entries.count {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let piece = min(entries.count - offset, Int(state >> 44) % 300_000 + 1)
            let bytes = UnsafeRawBufferPointer(rebasing: stable[offset..<(offset + piece)])
            try streaming.consume(bytes)
            offset += piece
        }
        let section = streaming.finish()
        #expect(section.byteCount == Int64(size))
        #expect(section.chunkCount == (size + (1 << 20) - 1) / (1 << 20))
        let actual = try ContentDigester.digests(entries: section, centralDirectory: centralDirectory, endOfCentralDirectory: eocd,
                                                 algorithms: algorithms)
        #expect(actual == expected)
    }

    /// SHA-256 alone goes through the sixteen-lane path (`ChunkLanes`, on a CPU with AVX-512): chunks in
    /// groups of up to sixteen, read side by side in slices. Against H(0x5a || count || H(0xa5 || len ||
    /// chunk)...) computed here chunk by chunk with OpenSSL, for one group, two, and three with a short last
    /// chunk in each section.
    @Test("SHA-256 content digests through the lanes equal a chunk-by-chunk reference",
          arguments: [0, 1, 5 << 20, (16 << 20) + 5, (40 << 20) + 12_345])
    func lanesMatchReference(size: Int) throws {
        var entries = [UInt8](repeating: 0, count: size)
        var state: UInt64 = 0x9e37_79b9_7f4a_7c15 ^ UInt64(size)
        for index in stride(from: 0, to: size, by: 8) {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            withUnsafeBytes(of: state) { word in for i in 0..<min(8, size - index) { entries[index + i] = word[i] } }
        }
        let centralDirectory = FixtureAPK.pseudoRandomBytes(count: 70_000, seed: 5)
        var eocd = [UInt8](repeating: 0, count: 22)
        eocd[0] = 0x50; eocd[1] = 0x4b; eocd[2] = 0x05; eocd[3] = 0x06
        let patched = try ContentDigester.endOfCentralDirectoryForDigesting(eocd, centralDirectoryOffset: Int64(size))
        var chunkDigests: [UInt8] = []
        var count = 0
        for section in [entries, centralDirectory, patched] {
            for start in stride(from: 0, to: section.count, by: 1 << 20) {
                let chunk = Array(section[start..<min(section.count, start + (1 << 20))])
                chunkDigests += Digest.hash([0xa5] + UInt32(chunk.count).littleEndianBytes + chunk, with: .sha256)
                count += 1
            }
        }
        let reference = Digest.hash([0x5a] + UInt32(count).littleEndianBytes + chunkDigests, with: .sha256)
        for concurrency in [1, 2] {
            let digests = try ContentDigester.digests(entries: ByteArrayDataSource(entries), centralDirectory: ByteArrayDataSource(centralDirectory),
                                                      endOfCentralDirectory: eocd, algorithms: [.chunkedSHA256], concurrency: concurrency)
            #expect(digests[.chunkedSHA256] == reference, "concurrency \(concurrency)")
        }
    }

    /// SHA-256 alone goes through two-chunk batches on a CPU with SHA-NI (`ChunkLanes.digests(ofChunks:)`),
    /// and with `hashesVerityLeaves` the fs-verity leaves of every whole block fed are hashed too. Against
    /// OpenSSL chunk by chunk and block by block, for an odd number of chunks (a batch of one at the end), a
    /// short last chunk ending inside a block, and a digester resuming after two known chunks.
    @Test("streamed SHA-256 chunks in pairs and the leaves of the blocks fed equal OpenSSL's, chunk by chunk and block by block",
          arguments: [0, 4096, (3 << 20) + 5000, (4 << 20)])
    func streamedPairsAndLeaves(size: Int) throws {
        let bytes = FixtureAPK.pseudoRandomBytes(count: size, seed: UInt64(size) ^ 0x1eaf)
        var expectedChunks: [UInt8] = []
        for start in stride(from: 0, to: size, by: 1 << 20) {
            let chunk = Array(bytes[start..<min(size, start + (1 << 20))])
            expectedChunks += Digest.hash([0xa5] + UInt32(chunk.count).littleEndianBytes + chunk, with: .sha256)
        }
        var expectedLeaves: [UInt8] = []
        for start in stride(from: 0, to: size / 4096 * 4096, by: 4096) {
            expectedLeaves += Digest.hash(Array(bytes[start..<(start + 4096)]), with: .sha256)
        }
        for resume in [0, 2] where resume == 0 || size >= resume << 20 {
            let prefix = resume == 0 ? nil
                : SectionChunkDigests(chunkCount: resume, byteCount: Int64(resume) << 20,
                                      digests: [.chunkedSHA256: Array(expectedChunks.prefix(32 * resume))])
            let streaming = try StreamingChunkDigester(algorithms: [.chunkedSHA256], resuming: prefix, hashesVerityLeaves: true)
            var offset = resume << 20
            var step = 0
            while offset < size {
                let piece = min(size - offset, [70_001, 1 << 20, 3, 400_000][step % 4])
                try bytes.withUnsafeBytes { try streaming.consume(UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + piece)])) }
                offset += piece
                step += 1
            }
            let section = streaming.finish()
            #expect(section.digests[.chunkedSHA256] == expectedChunks, "size \(size), resuming after \(resume) chunks")
            let leaves = try #require(streaming.verityLeaves)
            #expect(leaves.firstBlock == resume * 256)
            #expect(leaves.digests == Array(expectedLeaves.dropFirst(32 * resume * 256)), "size \(size), resuming after \(resume) chunks")
        }
    }

    @Test("the EOCD is digested with its central directory offset pointing at the signing block")
    func eocdPatched() throws {
        var eocd = [UInt8](repeating: 0, count: 22)
        eocd[16] = 0xff
        let patched = try ContentDigester.endOfCentralDirectoryForDigesting(eocd, centralDirectoryOffset: 0x1234_5678)
        #expect(Array(patched[16..<20]) == [0x78, 0x56, 0x34, 0x12])
        #expect(throws: ContentDigestError.malformedEndOfCentralDirectory(3)) {
            _ = try ContentDigester.endOfCentralDirectoryForDigesting([1, 2, 3], centralDirectoryOffset: 0)
        }
        #expect(throws: ContentDigestError.unsupportedAlgorithm(.verityChunkedSHA256)) {
            _ = try ContentDigester.digests(of: [], algorithms: [.verityChunkedSHA256])
        }
    }

    @Test("PReadFile reads what MappedFile maps, so content digests agree")
    func preadFileMatchesMapping() throws {
        let mapped = try MappedFile(path: TestSupport.frameworkRes)
        let read = try PReadFile(path: TestSupport.frameworkRes)
        #expect(read.count == mapped.count)
        let zip = try ZipArchive(source: mapped)
        let eocd = try mapped.bytes(in: zip.endOfCentralDirectory.offset..<mapped.count)
        func digests(_ source: any DataSource) throws -> [ContentDigestAlgorithm: [UInt8]] {
            try ContentDigester.digests(entries: try source.slice(0..<zip.centralDirectoryOffset),
                                        centralDirectory: try source.slice(zip.centralDirectoryRange),
                                        endOfCentralDirectory: eocd, algorithms: [.chunkedSHA256])
        }
        #expect(try digests(read) == (try digests(mapped)))
        #expect(throws: DataSourceRangeError.self) { _ = try read.bytes(in: (read.count - 1)..<(read.count + 1)) }
        #expect(try read.bytes(in: 0..<4) == [0x50, 0x4b, 0x03, 0x04])
    }
}
