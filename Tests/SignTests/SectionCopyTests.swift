import APKCore
import DigestLanes
import Foundation
@testable import Sign
import SignatureSchemes
import Testing
import TestSupport
import Unpack

/// The parallel copy of an input APK's entries section (`SectionCopy`, `SectionLayout`) at its seams: entries
/// whose data crosses 1 MiB chunks and the workers' two-chunk runs, deflated entries split by a chunk (inflated
/// after the run) or larger than a chunk (inflated through the mapping), empty entries, many entries. apksigner
/// is the oracle: with apksigner 0.9's
/// layout both tools must write the same bytes (and the same v4 `.idsig`, whose tree's leaves the copy hashes),
/// and apksigner must verify apkpatch's default output with v1 checked (every entry's digest); Linux's
/// `fsverity` checks the v4 tree of the default output.
@Suite(.removesTemporaryDirectories) struct SectionCopyTests {
    static func seamFixture(in directory: URL) throws -> String {
        var fixture = FixtureAPK()
        fixture.minSdk = 18
        fixture.storedExtensions = ["bin"]
        // 1,200 entries, ~10 MB in all: stored random blocks of uneven sizes that straddle chunk and run
        // boundaries, and compressible text between them.
        for index in 0..<600 {
            fixture.assets["blocks/b\(index).bin"] = FixtureAPK.pseudoRandomBytes(count: 3_000 + (index * 7_919) % 29_000, seed: UInt64(index))
            fixture.assets["text/t\(index).txt"] = Array(String(repeating: "line \(index) of some text\n", count: 20 + index % 300).utf8)
        }
        // 6 bits of entropy a byte: aapt deflates it (to ~2.3 MiB), more than a worker's 1 MiB buffer.
        fixture.assets["big/random.dat"] = FixtureAPK.pseudoRandomBytes(count: 3 << 20, seed: 0x5ec7).map { $0 & 0x3f | 0x40 }
        // Stored entries of 4 MiB or more (SectionCopy.isLarge): each one's v1 digest is taken by the work item
        // that copies the whole chunks inside its data, paired with their v2/v3 digests; two of them, so the
        // chunk groups are what is left between and around them.
        fixture.assets["huge/blob.bin"] = FixtureAPK.pseudoRandomBytes(count: 5 << 20, seed: 0xb10b)
        fixture.assets["huge/blob2.bin"] = FixtureAPK.pseudoRandomBytes(count: (4 << 20) + 4_097, seed: 0xb10c)
        fixture.assets["empty.txt"] = []
        fixture.assets["empty.bin"] = []
        return try fixture.build(in: directory, name: "seams.apk")
    }

    @Test("chunk and run seams: the same bytes as apksigner, and apksigner verifies every v1 digest")
    func seams() throws {
        let dir = try TestSupport.makeTemporaryDirectory("section-copy")
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.seamFixture(in: dir)
        let archive = try APKArchive(path: input)
        // Over 12 chunks: two groups of six or more, so the sixteen-lane kernel runs (fewer go to SHA-NI).
        #expect(archive.source.count > 13 << 20)
        #expect(archive.zip.entries.count > 1_024)
        let big = try #require(archive.entry(named: "assets/big/random.dat"))
        #expect(big.method == .deflated && big.compressedSize > 1 << 20)

        // apksigner 0.9's layout: byte for byte.
        let keys = try TestKeys.make(.rsa2048, in: dir, name: "seams")
        let same = dir.appendingPathComponent("same-apkpatch.apk").path, theirs = dir.appendingPathComponent("same-apksigner.apk").path
        let ours = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out", same]
                                            + ApksigSignerConformanceTests.apksigner09Layout + [input])
        #expect(ours.succeeded, "\(ours)")
        let reference = try TestSupport.run("apksigner", ["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out", theirs, input])
        #expect(reference.succeeded, "\(reference)")
        #expect(try TestSupport.readBytes(same) == (try TestSupport.readBytes(theirs)), "apkpatch's output differs from apksigner's")
        // The v4 tree: the leaves of the chunks (hashed by the copy's three kinds of work item) and the rest.
        #expect(try TestSupport.readBytes(same + ".idsig") == (try TestSupport.readBytes(theirs + ".idsig")), "the .idsig differs from apksigner's")

        // apkpatch's defaults re-align every stored entry (new local headers between input runs).
        let realigned = dir.appendingPathComponent("default.apk").path
        let signed = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out", realigned, input])
        #expect(signed.succeeded, "\(signed)")
        for minSdk in ["18", "24"] {
            let verify = try TestSupport.run("apksigner", ["verify", "--min-sdk-version", minSdk, realigned])
            #expect(verify.succeeded, "minSdk \(minSdk): \(verify)")
        }
        let idsig = try TestSupport.readBytes(realigned + ".idsig")
        let tree = dir.appendingPathComponent("tree.bin").path
        let fsverity = try TestSupport.run("fsverity", ["digest", realigned, "--out-merkle-tree", tree])
        #expect(fsverity.succeeded, "\(fsverity)")
        #expect(try V4Signature(encoded: idsig).tree == (try TestSupport.readBytes(tree)), "the v4 tree is not fs-verity's")
        // Without the SHA-256 lanes (OpenSSL for every digest, one chunk at a time): the same bytes.
        let plain = dir.appendingPathComponent("no-lanes.apk").path
        let unaccelerated = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out", plain, input],
                                                     environment: ["APKPATCH_SHA256_LANES": "0"])
        #expect(unaccelerated.succeeded, "\(unaccelerated)")
        #expect(try TestSupport.readBytes(plain) == (try TestSupport.readBytes(realigned)))
        #expect(try TestSupport.readBytes(plain + ".idsig") == idsig)
        // With SHA-NI pairs (the kernel of CPUs without AVX-512, chosen here whatever the CPU): the same bytes.
        if SHA256Lanes.Kernel.shaNIPairs.isAvailable {
            let pairs = dir.appendingPathComponent("sha-ni-pairs.apk").path
            let paired = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out", pairs, input],
                                                  environment: ["APKPATCH_SHA256_LANES": "2"])
            #expect(paired.succeeded, "\(paired)")
            #expect(try TestSupport.readBytes(pairs) == (try TestSupport.readBytes(realigned)))
            #expect(try TestSupport.readBytes(pairs + ".idsig") == idsig)
        }
        // One core only (`SignerConfig.concurrency`, as in batch signing): the same bytes.
        let key = try KeySource.keyAndCertificate(keyPath: keys.keyPK8, certificatePath: keys.certificatePEM, keyPassword: nil).load()
        var config = SignerConfig(key: key)
        config.concurrency = 1
        config.preparesV4Signature = true
        let serial = dir.appendingPathComponent("serial.apk").path
        let report = try Signer(config: config).sign(try APKArchive(path: input, limits: Signer.inputLimits, readsAll: true), to: serial)
        #expect(try TestSupport.readBytes(serial) == (try TestSupport.readBytes(realigned)))
        // The leaves of every block before the signing block (the copy's whole chunks, then the rest of the
        // entries and the JAR signature files from the streaming digester), and the .idsig they make.
        let leaves = try #require(report.verityLeaves)
        let written = try APKArchive(path: serial)
        let block = try #require(try SigningBlock.locate(in: written.source, centralDirectoryOffset: written.zip.centralDirectoryOffset))
        #expect(leaves.blockCount == Int(block.offset) / 4096, "the leaves end where the signing block starts")
        try V4SchemeSigner.writeSignature(forAPKAt: serial, key: key, to: serial + ".idsig", concurrency: 1, leaves: leaves)
        #expect(try TestSupport.readBytes(serial + ".idsig") == idsig)
        // The signer's own v4 signature (`makesV4Signature`), made from what it was about to write: the same .idsig.
        config.makesV4Signature = true
        let early = try Signer(config: config).sign(try APKArchive(path: input, limits: Signer.inputLimits, readsAll: true),
                                                    to: dir.appendingPathComponent("early-v4.apk").path)
        let made = try #require(early.v4Signature, "the signer made no v4 signature")
        #expect(made.encoded() == idsig)
    }

    @Test("a large entry's chunks: its item claims them in order from the front, free cores take the back half of the rest")
    func largeEntryChunks() {
        let chunks = LargeEntryChunks(10..<20)
        #expect(chunks.claim(10))
        #expect(!chunks.claim(12), "only the next chunk in order")
        #expect(chunks.take() == 16..<20, "half of the nine left, from the back")
        #expect(chunks.take() == 14..<16)
        #expect(chunks.claim(11))
        #expect(chunks.take() == 13..<14)
        #expect(chunks.take() == nil, "one chunk left: the entry's item is about to reach it")
        #expect(chunks.claim(12))
        #expect(!chunks.claim(13), "taken")
        #expect(chunks.take() == nil)
        // Never more than one group of lanes at once.
        let long = LargeEntryChunks(0..<100)
        #expect(long.take() == 84..<100)
        #expect(LargeEntryChunks(0..<1).take() == nil)
        #expect(LargeEntryChunks(3..<3).take() == nil && !LargeEntryChunks(3..<3).claim(3))
    }

    @Test("an APK that is one large stored entry: the other cores copy its back chunks, and the bytes are the serial copy's")
    func largeEntryShared() throws {
        let dir = try TestSupport.makeTemporaryDirectory("section-copy-large")
        defer { try? FileManager.default.removeItem(at: dir) }
        var fixture = FixtureAPK()
        fixture.storedExtensions = ["bin"]
        // 24 whole chunks inside one entry's data and almost nothing else: a core done with the rest takes chunks
        // from the back while the entry's own item hashes it from the front.
        fixture.assets["huge/only.bin"] = FixtureAPK.pseudoRandomBytes(count: 25 << 20, seed: 0x1a27)
        let input = try fixture.build(in: dir, name: "large.apk")
        let keys = try TestKeys.make(.rsa2048, in: dir, name: "large")
        let key = try KeySource.keyAndCertificate(keyPath: keys.keyPK8, certificatePath: keys.certificatePEM, keyPassword: nil).load()
        func sign(_ name: String, concurrency: Int) throws -> (path: String, leaves: LeafDigests?) {
            var config = SignerConfig(key: key)
            config.concurrency = concurrency
            config.preparesV4Signature = true
            let path = dir.appendingPathComponent(name).path
            let report = try Signer(config: config).sign(try APKArchive(path: input, limits: Signer.inputLimits, readsAll: true), to: path)
            return (path, report.verityLeaves)
        }
        let serial = try sign("serial.apk", concurrency: 1)
        let serialBytes = try TestSupport.readBytes(serial.path)
        for run in 0..<3 {
            let shared = try sign("shared-\(run).apk", concurrency: 2)
            #expect(try TestSupport.readBytes(shared.path) == serialBytes, "run \(run): the output differs from the one-core copy's")
            #expect(shared.leaves == serial.leaves, "run \(run): the v4 leaves differ from the one-core copy's")
        }
        let verify = try TestSupport.run("apksigner", ["verify", "--min-sdk-version", "21", serial.path])
        #expect(verify.succeeded, "\(verify)")
    }

    @Test("the chunks left to the groups: all of them less the ranges large entries copy")
    func chunkRanges() {
        #expect(SectionCopy.chunkRanges(10, without: []) == [0..<10])
        #expect(SectionCopy.chunkRanges(10, without: [3..<3]) == [0..<10])
        #expect(SectionCopy.chunkRanges(10, without: [6..<8, 2..<4]) == [0..<2, 4..<6, 8..<10])
        #expect(SectionCopy.chunkRanges(10, without: [0..<4, 4..<10]) == [])
        #expect(SectionCopy.chunkRanges(10, without: [7..<10]) == [0..<7])
    }

    @Test("SectionLayout reads any range: literals, merged runs, short runs served from one read")
    func layoutReads() throws {
        let input = (0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let source = ByteArrayDataSource(input)
        var layout = SectionLayout()
        var expected: [UInt8] = []
        var position: Int64 = 0
        var step = 0
        while position < Int64(input.count) {
            // Short input runs (skipping a few bytes, as a replaced header does) between literals.
            let length = Int64(1 + (step * 37) % 200)
            let end = min(Int64(input.count), position + length)
            layout.append(input: position..<end)
            expected += input[Int(position)..<Int(end)]
            let literal = [UInt8](repeating: UInt8(step & 0xff), count: step % 3)
            layout.append(literal: literal)
            expected += literal
            position = end + Int64(step % 4)
            step += 1
        }
        #expect(layout.count == Int64(expected.count))
        // Contiguous input runs merge.
        var merged = SectionLayout()
        merged.append(input: 0..<10); merged.append(input: 10..<20)
        #expect(merged.segments.count == 1)

        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: expected.count, alignment: 16)
        defer { buffer.deallocate() }
        for window in [16, 300, 1 << 20] {
            let windowBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: window, alignment: 16)
            defer { windowBuffer.deallocate() }
            for (start, length) in [(0, expected.count), (1, 17), (777, 1_000), (expected.count - 5, 5), (123, 0)] {
                let range = Int64(start)..<Int64(start + length)
                try layout.read(range, from: source, into: buffer, window: windowBuffer)
                #expect(Array(buffer[0..<length]) == Array(expected[start..<(start + length)]), "window \(window), \(range)")
            }
        }
    }
}
