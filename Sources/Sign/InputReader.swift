import APKCore

/// Reads the input APK's bulk data (entry bytes to copy and to digest) through `DataSource.stream`, which
/// for a mapped file is `pread` into reused buffers rather than the mapping.
///
/// Why: pages touched through a mapping stay in the process's resident set (with the pages the kernel maps
/// around each fault), so copying a 45 MB APK through its mapping would make the signer 45 MB bigger.
/// Headers and the central directory are read through the mapping (they are small).
struct InputReader: Sendable {
    let source: any DataSource
    static let bufferSize: Int64 = 1 << 20

    init(source: any DataSource) { self.source = source }

    /// Streams `range` to `body` in pieces of at most `bufferSize` bytes.
    func read(_ range: Range<Int64>, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        try source.stream(range, chunkSize: Self.bufferSize, body)
    }

    /// Calls `body` with all of `range` in one contiguous buffer (for inflating a compressed entry).
    func withContiguousBytes<R>(_ range: Range<Int64>, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        var result: R?
        try source.stream(range, chunkSize: max(range.count64, 1)) { result = try body($0) }
        if let result { return result }
        return try body(UnsafeRawBufferPointer(start: nil, count: 0))  // an empty range: no piece was read
    }

    /// The bytes in `range` (small records such as a local header).
    func bytes(_ range: Range<Int64>) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Int(range.count64))
        try read(range) { out.append(contentsOf: $0) }
        return out
    }
}
