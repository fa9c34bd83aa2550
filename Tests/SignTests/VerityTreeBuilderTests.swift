import APKCore
import Foundation
import OpenSSLWrapper
import SignatureSchemes
import Testing
import TestSupport

/// The fs-verity Merkle tree (`VerityTreeBuilder`) against Linux's `fsverity digest --out-merkle-tree`, at the
/// sizes where its pieces and levels change: a partial last block, whole blocks, a partial last 1 MiB piece, two
/// tree levels; built over memory, read with pread, and read after leaves already known (the signer's case).
/// (A file of one block has no tree for fs-verity, and a one-block leaf level in apksig's: APKs are larger.)
@Suite(.removesTemporaryDirectories) struct VerityTreeBuilderTests {
    @Test(arguments: [4097, 8192, (1 << 20) + 5, 3 << 20, (17 << 20) + 4095])
    func treeIsFsverity(size: Int) throws {
        let dir = try TestSupport.makeTemporaryDirectory("verity-tree")
        defer { try? FileManager.default.removeItem(at: dir) }
        let bytes = FixtureAPK.pseudoRandomBytes(count: size, seed: UInt64(size))
        try TestSupport.write(bytes, to: "file.bin", in: dir)
        let path = dir.appendingPathComponent("file.bin").path, treePath = dir.appendingPathComponent("tree.bin").path
        let descriptorPath = dir.appendingPathComponent("descriptor.bin").path
        let fsverity = try TestSupport.run("fsverity", ["digest", path, "--out-merkle-tree", treePath, "--out-descriptor", descriptorPath])
        #expect(fsverity.succeeded, "\(fsverity)")
        let expected = try TestSupport.readBytes(treePath)
        // fsverity_descriptor: version, hash algorithm, log2 block size, salt size, 4 reserved, le64 size, root hash.
        let root = Array(try TestSupport.readBytes(descriptorPath)[16..<48])

        let inMemory = bytes.withUnsafeBytes { VerityTreeBuilder.build(over: $0) }
        #expect(inMemory.bytes == expected && inMemory.rootHash == root, "over memory, \(size) bytes")
        let file = try MappedFile(path: path)
        let read = try VerityTreeBuilder.build(reading: file, concurrency: 2)
        #expect(read.bytes == expected && read.rootHash == root, "read, \(size) bytes")
        // Leaves of the first whole blocks given, as the signer hands them over: only the rest is read.
        let knownBlocks = size / 4096 / 2
        // The leaf level ends the tree, its digests zero-padded to a whole block.
        let leafLevelSize = ((size + 4095) / 4096 * 32 + 4095) / 4096 * 4096
        let leafLevel = Array(expected.suffix(leafLevelSize).prefix(knownBlocks * 32))
        let resumed = try VerityTreeBuilder.build(reading: file, leaves: LeafDigests(blockCount: knownBlocks, digests: leafLevel))
        #expect(resumed.bytes == expected && resumed.rootHash == root, "resumed after \(knownBlocks) blocks, \(size) bytes")
        // Leaves that are not the file's show.
        if knownBlocks > 0 {
            var wrong = leafLevel
            wrong[0] ^= 1
            let mismatched = try VerityTreeBuilder.build(reading: file, leaves: LeafDigests(blockCount: knownBlocks, digests: wrong))
            #expect(mismatched.rootHash != root)
        }
    }

    @Test("salted trees (the verity content digest's 8 zero bytes) agree over memory and read back")
    func saltedTreesAgree() throws {
        let bytes = FixtureAPK.pseudoRandomBytes(count: (5 << 20) + 100, seed: 5)
        let salt = [UInt8](repeating: 0, count: 8)
        let inMemory = bytes.withUnsafeBytes { VerityTreeBuilder.build(over: $0, salt: salt) }
        let read = try VerityTreeBuilder.build(reading: ByteArrayDataSource(bytes), salt: salt)
        #expect(inMemory.bytes == read.bytes && inMemory.rootHash == read.rootHash)
        // The first and last leaves by definition: SHA-256(salt ‖ block), the last block zero-padded.
        let blocks = (bytes.count + 4095) / 4096, leafLevelSize = (blocks * 32 + 4095) / 4096 * 4096
        let leaves = Array(read.bytes.suffix(leafLevelSize))
        #expect(Array(leaves[0..<32]) == Digest.hash(salt + Array(bytes[0..<4096]), with: .sha256))
        let last = Array(bytes[((blocks - 1) * 4096)...]) + [UInt8](repeating: 0, count: blocks * 4096 - bytes.count)
        #expect(Array(leaves[((blocks - 1) * 32)..<(blocks * 32)]) == Digest.hash(salt + last, with: .sha256))
    }
}
