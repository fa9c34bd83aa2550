import APKCore

/// Reads the input APK's bulk data (entry bytes to copy and to digest).
///
/// A mapped input is read through its mapping: hashing reads the page cache where it is, and copies reach the
/// output through `writev` from the mapping (`SigningOutput.consume(stable:)`), so the kernel's one copy is
/// the only one. Pages touched through a mapping stay in the process's resident set, so every sequential
/// reader gives them back behind itself with a `ReleaseCursor`: memory stays flat whatever the APK size.
/// An input truncated by another program while it is read raises SIGBUS; the CLI turns that into a clean
/// failure without output (`BusErrorGuard`). Other sources are streamed through reused buffers.
struct InputReader: Sendable {
    let source: any DataSource
    /// The input's mapping, when it is one.
    let mapping: MappedFile?
    static let bufferSize: Int64 = 1 << 20

    init(source: any DataSource) {
        self.source = source
        mapping = source as? MappedFile
    }

    /// Calls `body` with `range` in pieces of at most `bufferSize` bytes: from the mapping (mapped pages go
    /// back behind the reader through `released`) or read into a reused buffer.
    func read(_ range: Range<Int64>, releasing released: inout ReleaseCursor, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard let mapping else { return try source.stream(range, chunkSize: Self.bufferSize, body) }
        var position = range.lowerBound
        while position < range.upperBound {
            let end = min(range.upperBound, position + Self.bufferSize)
            released.willRead(position..<end)
            try mapping.withBytes(in: position..<end, body)
            released.advance(to: end)
            position = end
        }
    }

    /// Copies `range` into `output`, without a copy of our own when the input is mapped (the mapping lives as
    /// long as the archive, which outlives the output).
    func copy(_ range: Range<Int64>, into output: SigningOutput, releasing released: inout ReleaseCursor) throws {
        if mapping == nil { return try source.stream(range, chunkSize: Self.bufferSize) { try output.consume($0) } }
        try read(range, releasing: &released) { try output.consume(stable: $0) }
    }

    /// Calls `body` with all of `range` in one contiguous buffer (for inflating a compressed entry).
    func withContiguousBytes<R>(_ range: Range<Int64>, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        if let mapping { return try mapping.withBytes(in: range, body) }
        var result: R?
        try source.stream(range, chunkSize: max(range.count64, 1)) { result = try body($0) }
        if let result { return result }
        return try body(UnsafeRawBufferPointer(start: nil, count: 0))  // an empty range: no piece was read
    }

    /// A sequential reader's window on the input mapping, moved in 2 MiB granules: the pages ahead are mapped
    /// in one call per granule (`MappedFile.populate`) rather than fault by fault, and the pages it has
    /// passed go back to the page cache (`MappedFile.discard`), `lag` bytes behind its position so that
    /// pieces still queued for `writev` or a digest worker are not faulted in twice. Dropping pages another
    /// thread still reads is harmless (they fault back in, unchanged).
    struct ReleaseCursor {
        static let granule: Int64 = 2 << 20
        let mapping: MappedFile?
        let lag: Int64
        private var released: Int64
        private var populated: Int64

        init(_ reader: InputReader?, from start: Int64, lag: Int64 = 0) {
            mapping = reader?.mapping
            self.lag = lag
            released = start / Self.granule * Self.granule
            populated = released
        }

        /// The reader is about to read `range`: maps the granules it reaches into that are not mapped yet.
        mutating func willRead(_ range: Range<Int64>) {
            guard let mapping, range.upperBound > populated else { return }
            let start = max(populated, range.lowerBound / Self.granule * Self.granule)
            let end = min(mapping.count, (range.upperBound + Self.granule - 1) / Self.granule * Self.granule)
            mapping.populate(start..<end)
            populated = end
        }

        /// The reader has finished with everything before `position`.
        mutating func advance(to position: Int64) {
            guard let mapping else { return }
            let end = (position - lag) / Self.granule * Self.granule
            if end > released {
                mapping.discard(released..<end)
                released = end
            }
        }

        /// The reader is done: everything it touched up to `end` goes back, out to the granule around `end`.
        mutating func finish(at end: Int64) {
            guard let mapping else { return }
            let end = min(mapping.count, (end + Self.granule - 1) / Self.granule * Self.granule)
            guard end > released else { return }
            mapping.discard(released..<end)
            released = end
        }
    }
}
