import APKCore
import Glibc

/// The previous build's entries section and its 1 MiB chunk digests, so that re-signing a nearly identical
/// APK (watch mode) digests only the chunks whose bytes changed.
///
/// A chunk's digest is reused only after its bytes compare equal to the previous build's bytes at the same
/// offset (a memcmp is several times cheaper than SHA-256), so reuse can never produce a wrong digest.
public final class ChunkDigestReuse: @unchecked Sendable {
    /// The previous entries section (section 0 of the digested contents).
    var previous: (any DataSource)?
    /// Per algorithm, the previous section-0 chunk digests, concatenated.
    var previousDigests: [ContentDigestAlgorithm: [UInt8]] = [:]
    /// How many chunks the last `ContentDigester.digests` call reused.
    public private(set) var reusedChunkCount = 0
    /// How many chunks it computed.
    public private(set) var computedChunkCount = 0

    public init() {}

    /// The previous digests of chunk `index` covering `range`, if `bytes` equal what was digested then.
    func reusableDigests(chunk index: Int, range: Range<Int64>, bytes: UnsafeRawBufferPointer,
                         algorithms: [ContentDigestAlgorithm]) -> [[UInt8]]? {
        guard let previous, range.upperBound <= previous.count else { return nil }
        var digests: [[UInt8]] = []
        for algorithm in algorithms {
            let size = algorithm.chunkDigestOutputSize
            guard let all = previousDigests[algorithm], all.count >= (index + 1) * size else { return nil }
            digests.append(Array(all[(index * size)..<((index + 1) * size)]))
        }
        let same = (try? previous.withBytes(in: range) { old in
            old.count == bytes.count && (bytes.count == 0 || memcmp(old.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        }) ?? false
        previous.discard(range)
        return same ? digests : nil
    }

    func record(section: any DataSource, digests: [ContentDigestAlgorithm: [UInt8]], reused: Int, computed: Int) {
        previous = section
        previousDigests = digests
        reusedChunkCount = reused
        computedChunkCount = computed
    }
}
