import Testing
@testable import DigestLanes
import OpenSSLWrapper

/// `SHA256Lanes` must give OpenSSL's SHA-256 of every message, whatever the lengths (each padding case:
/// 0, 55, 56, 63, 64 bytes mod 64), however the bytes are split into updates, and however messages share
/// lanes and finish at different times (the kernel runs the fewest blocks any active lane has, so lanes fall
/// out of step, and few active lanes go to SHA-NI pairs), with every kernel this CPU runs.
@Suite struct SHA256LanesTests {
    /// A deterministic generator, so a failure can be reproduced.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9e37_79b9_7f4a_7c15
            var z = state
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            return z ^ (z >> 31)
        }
    }

    static func messages(_ generator: inout SplitMix) -> [[UInt8]] {
        var lengths = [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 4096, 65_536 + 37]
        for _ in 0..<60 { lengths.append(Int.random(in: 0..<5000, using: &generator)) }
        lengths.append((1 << 20) + 5)
        return lengths.map { length in (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) } }
    }

    /// The kernels this CPU runs (OpenSSL everywhere; SHA-NI pairs and AVX-512 where the CPU has them).
    static let kernels = SHA256Lanes.Kernel.allCases.filter(\.isAvailable)

    @Test(arguments: SHA256LanesTests.kernels)
    func matchesOpenSSLWithRandomSplitsAndLanes(kernel: SHA256Lanes.Kernel) throws {
        var generator = SplitMix(state: 42)
        let messages = Self.messages(&generator)
        let expected = messages.map { Digest.hash($0, with: .sha256) }
        let lanes = SHA256Lanes(kernel: kernel)
        var got = [[UInt8]?](repeating: nil, count: messages.count)
        // Several rounds: each queues some messages on random lanes in random pieces, then runs, so lanes
        // carry partial blocks and message ends across runs.
        var pending = Array(messages.indices).shuffled(using: &generator)
        while !pending.isEmpty {
            let batch = pending.prefix(Int.random(in: 1...24, using: &generator))
            pending.removeFirst(batch.count)
            for index in batch {
                let lane = Int.random(in: 0..<SHA256Lanes.width, using: &generator)
                let message = messages[index]
                var offset = 0
                while offset < message.count {
                    let take = min(message.count - offset, Int.random(in: 1...9000, using: &generator))
                    message.withUnsafeBytes { lanes.update(lane, UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + take)])) }
                    offset += take
                }
                lanes.finish(lane, tag: index)
            }
            // The queued bytes are the arrays' storage, alive until run returns.
            lanes.run { tag, digest in
                #expect(got[tag] == nil)
                got[tag] = digest
            }
        }
        for index in messages.indices {
            #expect(got[index] == expected[index], "message \(index), \(messages[index].count) bytes")
        }
    }

    /// A message spread over two runs: bytes queued in one run, the rest and its end in the next.
    @Test(arguments: SHA256LanesTests.kernels)
    func messageContinuesAcrossRuns(kernel: SHA256Lanes.Kernel) throws {
        let message = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let lanes = SHA256Lanes(kernel: kernel)
        var digests: [[UInt8]] = []
        message.withUnsafeBytes { bytes in
            lanes.update(3, UnsafeRawBufferPointer(rebasing: bytes[0..<1001]))
            lanes.run { _, _ in Issue.record("nothing finished yet") }
            lanes.update(3, UnsafeRawBufferPointer(rebasing: bytes[1001...]))
            lanes.finish(3, tag: 7)
            lanes.run { tag, digest in #expect(tag == 7); digests.append(digest) }
        }
        #expect(digests == [Digest.hash(message, with: .sha256)])
    }
}

/// `hashEach` (the C scheduler: lanes take the next message as they finish one) against OpenSSL, for every
/// padding case and messages sharing bytes, empty ones included.
@Suite struct SHA256LanesEachTests {
    @Test(arguments: SHA256LanesTests.kernels)
    func hashEachMatchesOpenSSL(kernel: SHA256Lanes.Kernel) {
        var generator = SHA256LanesTests.SplitMix(state: 7)
        let bytes = (0..<200_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var ranges: [Range<Int>] = [0..<0, 0..<55, 1..<57, 3..<67, 5..<69, 10..<129, 0..<100_000]
        for _ in 0..<3_000 {
            let start = Int.random(in: 0..<190_000, using: &generator)
            ranges.append(start..<(start + Int.random(in: 0..<(Bool.random(using: &generator) ? 300 : 9_000), using: &generator)))
        }
        let expected = Digest.hashEach(ranges, of: bytes, with: .sha256)
        #expect(SHA256Lanes.hashEach(ranges, of: bytes, kernel: kernel) == expected)
        #expect(SHA256Lanes.hashEach([], of: bytes, kernel: kernel).isEmpty)
    }
}

/// `hashBlocks` (the leaves of an fs-verity tree: every 4096-byte block its own message) against OpenSSL.
@Suite struct SHA256LanesBlocksTests {
    @Test(arguments: SHA256LanesTests.kernels)
    func hashBlocksMatchesOpenSSL(kernel: SHA256Lanes.Kernel) {
        var generator = SHA256LanesTests.SplitMix(state: 11)
        for blockCount in [1, 15, 16, 17, 256, 300] {
            let bytes = (0..<(blockCount * 4096)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var output = [UInt8](repeating: 0, count: blockCount * 32)
            bytes.withUnsafeBytes { input in
                output.withUnsafeMutableBytes { SHA256Lanes.hashBlocks(of: input, blockSize: 4096, into: $0.baseAddress!, kernel: kernel) }
            }
            let expected = Digest.hashEach((0..<blockCount).map { ($0 * 4096)..<(($0 + 1) * 4096) }, of: bytes, with: .sha256)
            #expect(output == expected, "\(blockCount) blocks, \(kernel)")
        }
    }
}
