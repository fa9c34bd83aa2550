import APKCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SignatureSchemes

/// Starts the APK Signature Scheme v2/v3 content digests (the costly part of verifying: every byte of the
/// APK hashed in 1 MiB chunks) *before* the archive and AndroidManifest.xml are parsed, so that the hashing
/// runs on the cores while the main thread parses.
///
/// It is speculation, and nothing trusts it: the layout it digests (where the signing block, central
/// directory and end of central directory start) is found here by a quick look, and `ContentDigestCache`
/// takes the result only when the validated `ZipArchive` and `SigningBlock.locate` give exactly the same three
/// offsets, which fix every digested byte (the same `ContentDigester` over the same ranges of the same
/// source). Otherwise, or when the prefetch failed, the verifier computes the digests itself, so reports never
/// depend on it. The algorithms come from the signature records of the v2/v3/v3.1 blocks, read without
/// verifying anything; a digest the verifier then asks for and the prefetch did not compute is computed then.
final class ContentDigestPrefetch: Sendable {

    /// The three offsets that decide which bytes are digested.
    struct Layout: Equatable {
        var signingBlockOffset: Int64
        var centralDirectoryOffset: Int64
        var endOfCentralDirectoryOffset: Int64
    }

    struct Stopped: Error {}

    let layout: Layout
    let algorithms: Set<ContentDigestAlgorithm>
    /// Set by `cancel()`: the digester's reads fail from then on (the long-work use of `FirstFailure`).
    private let stop = Parallel.FirstFailure()
    private let work: BackgroundValue<[ContentDigestAlgorithm: [UInt8]]>

    private init(layout: Layout, algorithms: Set<ContentDigestAlgorithm>, entries: any DataSource,
                 centralDirectory: any DataSource, endOfCentralDirectory: [UInt8]) {
        self.layout = layout
        self.algorithms = algorithms
        let stop = self.stop
        work = BackgroundValue {
            // A stopped prefetch fails its next read, which ends ContentDigester's workers within one chunk.
            let digests = try ContentDigester.digests(entries: StoppableSource(base: entries, stop: stop),
                                                      centralDirectory: StoppableSource(base: centralDirectory, stop: stop),
                                                      endOfCentralDirectory: endOfCentralDirectory, algorithms: algorithms)
            try stop.rethrow()
            return digests
        }
    }

    /// Starts digesting `source` on background threads, or returns nil when it has no APK Signing Block
    /// with chunked content digests to compute (or its layout is not what a quick look can find).
    static func start(source: any DataSource) -> ContentDigestPrefetch? {
        guard let eocd = quickEndOfCentralDirectory(in: source),
              let size = quickSigningBlockSize(in: source, centralDirectoryOffset: eocd.centralDirectoryOffset),
              size <= maxSigningBlockSize,
              let block = try? SigningBlock.locate(in: source, centralDirectoryOffset: eocd.centralDirectoryOffset) else { return nil }
        var algorithms: Set<ContentDigestAlgorithm> = []
        for id in [SigningBlock.ID.v2, SigningBlock.ID.v3, SigningBlock.ID.v31] {
            guard let value = block.value(for: id) else { continue }
            algorithms.formUnion(signatureAlgorithms(inSchemeBlock: value, hasSDKRange: id != SigningBlock.ID.v2).map(\.contentDigestAlgorithm).filter(\.isChunked))
        }
        guard !algorithms.isEmpty else { return nil }
        let layout = Layout(signingBlockOffset: block.offset, centralDirectoryOffset: eocd.centralDirectoryOffset,
                            endOfCentralDirectoryOffset: eocd.offset)
        let entries: any DataSource, centralDirectory: any DataSource, endOfCentralDirectory: [UInt8]
        do {
            entries = try source.slice(0..<layout.signingBlockOffset)
            centralDirectory = try source.slice(layout.centralDirectoryOffset..<layout.endOfCentralDirectoryOffset)
            endOfCentralDirectory = try source.bytes(in: layout.endOfCentralDirectoryOffset..<source.count)
        } catch {
            return nil
        }
        return ContentDigestPrefetch(layout: layout, algorithms: algorithms, entries: entries, centralDirectory: centralDirectory,
                                     endOfCentralDirectory: endOfCentralDirectory)
    }

    /// The digests, once computed, when `layout` is the one they were computed for; nil when it is not, or
    /// when the prefetch failed (the caller then computes them itself).
    func digests(for layout: Layout) -> [ContentDigestAlgorithm: [UInt8]]? {
        guard layout == self.layout else { return nil }
        return try? work.get()
    }

    /// Stops the work (within one chunk per worker) and waits for it, so nothing runs after `verify` returns.
    func cancel() {
        stop.record(Stopped())
        work.wait()
    }

    // MARK: - Quick looks (never trusted; see the type's documentation)

    /// Real signing blocks are kilobytes. A larger one is left to the validated path, so that the quick look
    /// (which runs before the archive's limits are checked) never copies much of a crafted file.
    static let maxSigningBlockSize: UInt64 = 16 << 20

    /// The size field in the signing block footer that would sit right before the central directory (any
    /// 8 bytes there; `SigningBlock.locate` checks the magic).
    static func quickSigningBlockSize(in source: any DataSource, centralDirectoryOffset: Int64) -> UInt64? {
        guard centralDirectoryOffset >= 24 else { return nil }
        return try? source.withBytes(in: (centralDirectoryOffset - 24)..<(centralDirectoryOffset - 16)) {
            UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self))
        }
    }

    /// The end of central directory record found as `ZipArchive` looks for it (the last record whose comment
    /// reaches the end of the file), without any of its validation; nil when there is none.
    static func quickEndOfCentralDirectory(in source: any DataSource) -> (offset: Int64, centralDirectoryOffset: Int64)? {
        let fixed = Int64(EndOfCentralDirectoryLayout.fixedSize)
        let size = source.count
        guard size >= fixed else { return nil }
        let searchStart = max(0, size - fixed - Int64(EndOfCentralDirectoryLayout.maxCommentSize))
        return try? source.withBytes(in: searchStart..<size) { tail -> (offset: Int64, centralDirectoryOffset: Int64)? in
            var position = tail.count - Int(fixed)
            while position >= 0 {
                var r = LittleEndianReader(tail, offset: position)
                if try r.read(UInt32.self) == EndOfCentralDirectoryLayout.signature {
                    // disk, CD disk, entries on disk, entries (u16 each), CD size (u32), CD offset (u32), comment length (u16).
                    _ = try r.readBytes(12)
                    let centralDirectoryOffset = try r.read(UInt32.self)
                    let commentLength = Int(try r.read(UInt16.self))
                    if position + Int(fixed) + commentLength == tail.count {
                        return (searchStart + Int64(position), Int64(centralDirectoryOffset))
                    }
                }
                position -= 1
            }
            return nil
        } ?? nil
    }

    /// The signature algorithms named by the signature records of every signer of a v2/v3/v3.1 block, as far
    /// as the block is well-formed (the verifier reports malformed blocks; this only guesses the digests).
    static func signatureAlgorithms(inSchemeBlock block: [UInt8], hasSDKRange: Bool) -> [SignatureAlgorithm] {
        var found: [SignatureAlgorithm] = []
        var outer = SchemeBuffer(block)
        guard var signers = try? outer.lengthPrefixedSlice() else { return [] }
        while signers.hasRemaining {
            // signer: signed data, [v3/v3.1: min SDK int32, max SDK int32], signatures, public key.
            guard var signer = try? signers.lengthPrefixedSlice(), (try? signer.lengthPrefixedSlice()) != nil else { break }
            if hasSDKRange { guard (try? signer.getInt()) != nil, (try? signer.getInt()) != nil else { break } }
            guard var signatures = try? signer.lengthPrefixedSlice() else { break }
            while signatures.hasRemaining {
                guard var record = try? signatures.lengthPrefixedSlice(), let id = try? record.getInt() else { break }
                if let algorithm = SignatureAlgorithm(id: UInt32(bitPattern: id)) { found.append(algorithm) }
            }
        }
        return found
    }
}

/// A source whose reads fail once its prefetch is stopped.
private struct StoppableSource: DataSource {
    let base: any DataSource
    let stop: Parallel.FirstFailure
    var count: Int64 { base.count }
    func withBytes<R>(in range: Range<Int64>, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try stop.rethrow()
        return try base.withBytes(in: range, body)
    }
    func read(_ range: Range<Int64>, into buffer: UnsafeMutableRawBufferPointer) throws {
        try stop.rethrow()
        try base.read(range, into: buffer)
    }
    func discard(_ range: Range<Int64>) { base.discard(range) }
}
