import Testing
@testable import APKCore

@Suite(.removesTemporaryDirectories) struct SigningBlockTests {
    @Test func encodedBlockIsPaddedTo4096AndParsesBack() throws {
        let block = SigningBlock(pairs: [.init(id: SigningBlock.ID.v2, value: Array(repeating: 7, count: 1000))])
        let encoded = block.encoded()
        #expect(encoded.count % 4096 == 0)
        let source = ByteArrayDataSource(encoded + EndOfCentralDirectory(entryCount: 0, centralDirectorySize: 0, centralDirectoryOffset: Int64(encoded.count)).encoded())
        let parsed = try #require(try SigningBlock.locate(in: source, centralDirectoryOffset: Int64(encoded.count)))
        #expect(parsed.value(for: SigningBlock.ID.v2) == Array(repeating: 7, count: 1000))
        #expect(parsed.pairs.last?.id == SigningBlock.ID.verityPadding)
    }
}
