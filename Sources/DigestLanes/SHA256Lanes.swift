internal import CSHA256x16
import OpenSSLWrapper
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Sixteen SHA-256 digests computed together: APK signing and verification hash many independent streams
/// (every 1 MiB chunk for v2/v3, every entry for v1), and a core hashes several streams at once faster than
/// one: sixteen in the lanes of AVX-512 registers faster than one with SHA-NI, or, without AVX-512, two
/// interleaved with SHA-NI faster than one (BENCHMARKS.md names the kernel its machine used).
///
/// Queue bytes and message ends on any lane with `update` and `finish`, then call `run`, which hashes
/// everything queued and hands over each finished message's digest with the tag it was given. Queued bytes
/// are not copied: they must stay valid and unchanged until `run` returns. Each lane hashes its messages in
/// the order they were queued; lanes are independent. A single owner; not thread-safe.
public final class SHA256Lanes {
    public static let width = 16

    /// How the lanes are hashed.
    public enum Kernel: Sendable, CaseIterable {
        /// All sixteen in AVX-512 registers; when few lanes have work left, they run in SHA-NI pairs.
        case avx512
        /// Two at a time, interleaved with SHA-NI: for CPUs without AVX-512 (many AMD ones).
        case shaNIPairs
        /// One OpenSSL digest per lane.
        case openSSL

        /// Whether this CPU can run the kernel.
        public var isAvailable: Bool {
            switch self {
            case .avx512: return SHA256Lanes.hasAVX512
            case .shaNIPairs: return SHA256Lanes.hasSHANI
            case .openSSL: return true
            }
        }
    }

    /// The fastest kernel this CPU runs. `APKPATCH_SHA256_LANES=0` in the environment chooses OpenSSL and
    /// `APKPATCH_SHA256_LANES=2` SHA-NI pairs (where there are SHA-NI instructions), to compare or test them.
    public static let kernel: Kernel = {
        switch getenv("APKPATCH_SHA256_LANES").map({ String(cString: $0) }) {
        case "0": return .openSSL
        case "2" where Kernel.shaNIPairs.isAvailable: return .shaNIPairs
        default: return Kernel.allCases.first { $0.isAvailable }!
        }
    }()

    /// Whether lanes run faster than one OpenSSL digest each (callers then hash many streams side by side).
    public static var isAccelerated: Bool { kernel != .openSSL }

    // Read once: CPUID traps to the hypervisor on a VM, and every SHA256Lanes checks its kernel.
    private static let hasAVX512 = apk_sha256x16_available() != 0
    private static let hasSHANI = apk_sha256_shani_available() != 0

    /// With AVX-512, fewer active lanes than this run in SHA-NI pairs: the sixteen-lane kernel costs the same
    /// however many lanes are active, and below this many the bytes it hashes in that time are fewer than one
    /// SHA-NI stream hashes.
    private static let serialBelow = 6

    private enum Operation {
        case bytes(UnsafeRawPointer, Int)
        case finish(tag: Int)
    }

    private struct Lane {
        var queue: [Operation] = []
        var head = 0
        /// The bytes being consumed.
        var segment: UnsafeRawPointer?
        var segmentLeft = 0
        /// Bytes of the message that do not yet fill a block, at the lane's 128-byte scratch area.
        var carried = 0
        /// Message length so far, in bytes.
        var length: UInt64 = 0
        /// The blocks prepared for the kernel: where, how many, and the message they finish (padding).
        var blocks = 0
        var blockPointer: UnsafeRawPointer?
        var fromSegment = false
        var finishing: Int?
    }

    private let kernel: Kernel
    /// Mutated in place (an array of structs holding arrays would copy a queue on every write back).
    private let lanes: UnsafeMutablePointer<Lane>
    /// Word w of lane j at state[16 * w + j] (the kernel's layout).
    private let state: UnsafeMutablePointer<UInt32>
    /// 128 bytes per lane: a partial block, then room for the padding.
    private let scratch: UnsafeMutableRawPointer
    /// The OpenSSL digests of the unaccelerated form, and the digests it finished.
    private var digests: [Digest] = []
    private var finished: [(tag: Int, digest: [UInt8])] = []

    private static let initialState: [UInt32] = [
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
    ]

    public init(kernel: Kernel = SHA256Lanes.kernel) {
        precondition(kernel.isAvailable, "SHA-256 kernel \(kernel) not available on this CPU")
        self.kernel = kernel
        lanes = .allocate(capacity: Self.width)
        lanes.initialize(repeating: Lane(), count: Self.width)
        state = .allocate(capacity: 8 * Self.width)
        scratch = .allocate(byteCount: 128 * Self.width, alignment: 64)
        for lane in 0..<Self.width { resetState(lane) }
        if kernel == .openSSL { digests = (0..<Self.width).map { _ in Digest(.sha256) } }
    }

    deinit {
        lanes.deinitialize(count: Self.width)
        lanes.deallocate()
        state.deallocate()
        scratch.deallocate()
    }

    /// Appends `bytes` to the message on `lane`.
    public func update(_ lane: Int, _ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        if kernel == .openSSL { digests[lane].update(bytes) } else { lanes[lane].queue.append(.bytes(base, bytes.count)) }
    }

    /// Ends the message on `lane`; `run` hands over its digest with `tag`. The lane's next message starts empty.
    public func finish(_ lane: Int, tag: Int) {
        if kernel == .openSSL {
            finished.append((tag, digests[lane].finish()))
            digests[lane].reset()
        } else {
            lanes[lane].queue.append(.finish(tag: tag))
        }
    }

    /// Hashes everything queued, and calls `body` with each finished message's tag and digest.
    public func run(_ body: (_ tag: Int, _ digest: [UInt8]) throws -> Void) rethrows {
        switch kernel {
        case .avx512: runSixteen()
        case .shaNIPairs: runPairs()
        case .openSSL: break
        }
        let done = finished
        finished.removeAll(keepingCapacity: true)
        for (tag, digest) in done { try body(tag, digest) }
    }

    /// The SHA-256 of each range of `bytes`, concatenated in order (the .SF file digests every manifest
    /// section: thousands of messages of a hundred bytes, where one OpenSSL call each costs more than hashing).
    public static func hashEach(_ ranges: [Range<Int>], of bytes: [UInt8], kernel: Kernel = kernel) -> [UInt8] {
        precondition(kernel.isAvailable, "SHA-256 kernel \(kernel) not available on this CPU")
        guard kernel != .openSSL, !ranges.isEmpty else { return Digest.hashEach(ranges, of: bytes, with: .sha256) }
        var output = [UInt8](repeating: 0, count: ranges.count * 32)
        let offsets = ranges.map { range -> Int in
            precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count)
            return range.lowerBound
        }
        let lengths = ranges.map(\.count)
        bytes.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                let base = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
                let digests = out.baseAddress?.assumingMemoryBound(to: UInt8.self)
                if kernel == .avx512 {
                    apk_sha256x16_each(base, offsets, lengths, ranges.count, digests)
                } else {
                    apk_sha256_shani_each(base, offsets, lengths, ranges.count, digests)
                }
            }
        }
        return output
    }

    /// The SHA-256 of each `blockSize`-byte block of `bytes` (a whole number of them), written one after
    /// another at `output`: the leaf level of an fs-verity Merkle tree, 256 messages a MiB, each lane taking
    /// the next block as it finishes one.
    public static func hashBlocks(of bytes: UnsafeRawBufferPointer, blockSize: Int, into output: UnsafeMutableRawPointer,
                                  kernel: Kernel = kernel) {
        precondition(kernel.isAvailable, "SHA-256 kernel \(kernel) not available on this CPU")
        precondition(blockSize > 0 && bytes.count % blockSize == 0)
        let count = bytes.count / blockSize
        guard count > 0, let base = bytes.baseAddress else { return }
        guard kernel != .openSSL else {
            let hasher = Digest(.sha256)
            for block in 0..<count {
                hasher.update(UnsafeRawBufferPointer(start: base + block * blockSize, count: blockSize))
                hasher.finish().withUnsafeBytes { (output + 32 * block).copyMemory(from: $0.baseAddress!, byteCount: 32) }
                hasher.reset()
            }
            return
        }
        withUnsafeTemporaryAllocation(of: Int.self, capacity: 2 * count) { fields in
            for block in 0..<count {
                fields[block] = block * blockSize
                fields[count + block] = blockSize
            }
            let offsets = UnsafePointer(fields.baseAddress!)
            let input = base.assumingMemoryBound(to: UInt8.self), digests = output.assumingMemoryBound(to: UInt8.self)
            if kernel == .avx512 {
                apk_sha256x16_each(input, offsets, offsets + count, count, digests)
            } else {
                apk_sha256_shani_each(input, offsets, offsets + count, count, digests)
            }
        }
    }

    private func runSixteen() {
        var pointers = [UnsafePointer<UInt8>?](repeating: nil, count: Self.width)
        while true {
            var active: UInt32 = 0, count = 0, blocks = Int.max
            var stand: UnsafeRawPointer?
            for lane in 0..<Self.width where prepare(lane) {
                active |= 1 << UInt32(lane)
                count += 1
                blocks = min(blocks, lanes[lane].blocks)
                stand = lanes[lane].blockPointer
            }
            guard count > 0 else { return }
            if count < Self.serialBelow && Self.hasSHANI {
                runTwoByTwo(active)
                continue
            }
            for lane in 0..<Self.width {
                let pointer = active & (1 << UInt32(lane)) != 0 ? lanes[lane].blockPointer : stand
                pointers[lane] = pointer!.assumingMemoryBound(to: UInt8.self)
            }
            pointers.withUnsafeBufferPointer { apk_sha256x16_blocks(state, $0.baseAddress, active, blocks) }
            for lane in 0..<Self.width where active & (1 << UInt32(lane)) != 0 { advance(lane, by: blocks) }
        }
    }

    /// Runs the lanes two by two with interleaved SHA-NI until no lane has blocks ready.
    private func runPairs() {
        while true {
            var active: UInt32 = 0
            for lane in 0..<Self.width where prepare(lane) { active |= 1 << UInt32(lane) }
            guard active != 0 else { return }
            runTwoByTwo(active)
        }
    }

    /// Runs the `active` lanes' prepared blocks two by two with interleaved SHA-NI (twice one stream's speed),
    /// each pair for the fewer blocks either has; an odd lane out runs alone.
    private func runTwoByTwo(_ active: UInt32) {
        var waiting: Int?
        for lane in 0..<Self.width where active & (1 << UInt32(lane)) != 0 {
            if let first = waiting { runPair(first, lane); waiting = nil } else { waiting = lane }
        }
        if let last = waiting { runAlone(last) }
    }

    private func runPair(_ first: Int, _ second: Int) {
        let blocks = min(lanes[first].blocks, lanes[second].blocks)
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 16) { words in
            for w in 0..<8 {
                words[w] = state[16 * w + first]
                words[8 + w] = state[16 * w + second]
            }
            apk_sha256_shani_x2_blocks(words.baseAddress!, words.baseAddress! + 8,
                                       lanes[first].blockPointer!.assumingMemoryBound(to: UInt8.self),
                                       lanes[second].blockPointer!.assumingMemoryBound(to: UInt8.self), blocks)
            for w in 0..<8 {
                state[16 * w + first] = words[w]
                state[16 * w + second] = words[8 + w]
            }
        }
        advance(first, by: blocks)
        advance(second, by: blocks)
    }

    /// Runs the lane's prepared blocks with SHA-NI on its column of the state.
    private func runAlone(_ lane: Int) {
        let blocks = lanes[lane].blocks
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 8) { words in
            for w in 0..<8 { words[w] = state[16 * w + lane] }
            apk_sha256_shani_blocks(words.baseAddress!, lanes[lane].blockPointer!.assumingMemoryBound(to: UInt8.self), blocks)
            for w in 0..<8 { state[16 * w + lane] = words[w] }
        }
        advance(lane, by: blocks)
    }

    /// Makes the lane's next blocks ready (whole blocks of the queued bytes where they lie, else a block
    /// assembled in scratch, else the padding that ends a message); false when it has nothing to run.
    private func prepare(_ index: Int) -> Bool {
        lanes[index].blocks > 0 || Self.prepare(&lanes[index], carry: scratch + 128 * index)
    }

    private static func prepare(_ lane: inout Lane, carry: UnsafeMutableRawPointer) -> Bool {
        while true {
            if lane.segmentLeft > 0 {
                if lane.carried == 0 && lane.segmentLeft >= 64 {
                    lane.blocks = lane.segmentLeft / 64
                    lane.blockPointer = lane.segment
                    lane.fromSegment = true
                    return true
                }
                let take = min(64 - lane.carried, lane.segmentLeft)
                (carry + lane.carried).copyMemory(from: lane.segment!, byteCount: take)
                lane.carried += take
                lane.segment! += take
                lane.segmentLeft -= take
                lane.length += UInt64(take)
                if lane.carried == 64 {
                    lane.blocks = 1
                    lane.blockPointer = UnsafeRawPointer(carry)
                    lane.fromSegment = false
                    return true
                }
                continue
            }
            guard lane.head < lane.queue.count else {
                lane.queue.removeAll(keepingCapacity: true)
                lane.head = 0
                return false
            }
            let operation = lane.queue[lane.head]
            lane.head += 1
            switch operation {
            case .bytes(let pointer, let count):
                lane.segment = pointer
                lane.segmentLeft = count
            case .finish(let tag):
                // 0x80, zeros to 56 mod 64, then the length in bits, big-endian: one block or two.
                let used = lane.carried
                carry.storeBytes(of: 0x80, toByteOffset: used, as: UInt8.self)
                let total = used < 56 ? 64 : 128
                (carry + used + 1).initializeMemory(as: UInt8.self, repeating: 0, count: total - used - 9)
                carry.storeBytes(of: (lane.length &* 8).bigEndian, toByteOffset: total - 8, as: UInt64.self)
                lane.blocks = total / 64
                lane.blockPointer = UnsafeRawPointer(carry)
                lane.fromSegment = false
                lane.finishing = tag
                return true
            }
        }
    }

    private func advance(_ index: Int, by blocks: Int) {
        lanes[index].blocks -= blocks
        lanes[index].blockPointer! += 64 * blocks
        if lanes[index].fromSegment {
            lanes[index].segment! += 64 * blocks
            lanes[index].segmentLeft -= 64 * blocks
            lanes[index].length += UInt64(64 * blocks)
        } else if lanes[index].blocks == 0 {
            lanes[index].carried = 0
            if let tag = lanes[index].finishing {
                var digest = [UInt8](repeating: 0, count: 32)
                for w in 0..<8 {
                    let word = state[16 * w + index]
                    for b in 0..<4 { digest[4 * w + b] = UInt8(truncatingIfNeeded: word >> (24 - 8 * UInt32(b))) }
                }
                finished.append((tag, digest))
                lanes[index].finishing = nil
                lanes[index].length = 0
                resetState(index)
            }
        }
    }

    private func resetState(_ lane: Int) {
        for w in 0..<8 { state[16 * w + lane] = Self.initialState[w] }
    }
}
