import APKCore
import OpenSSLWrapper
import SignatureSchemes

/// What is kept between signing runs of the same APK (watch mode): the v1 digest of each entry's
/// uncompressed data, keyed by its name, CRC-32, sizes and method, so an unchanged entry is not inflated and
/// hashed again; and the two recycled output files with the record layout and chunk digests of each, so an
/// unchanged record is neither written nor digested again; and which `resources.arsc` last passed
/// `ResourceTableLoadCheck`, so a table that did not change is not checked again. Thread-safe.
public final class SigningCache: @unchecked Sendable {
    struct Key: Hashable {
        var name: String
        var crc32: UInt32
        var compressedSize: Int64
        var uncompressedSize: Int64
        var method: UInt16
        /// Nil for an entry checked without v1 (an empty digest).
        var algorithm: DigestAlgorithm?
        init(_ entry: ZipEntry, algorithm: DigestAlgorithm?) {
            name = entry.name; crc32 = entry.crc32; compressedSize = entry.compressedSize
            uncompressedSize = entry.uncompressedSize; method = entry.method.rawValue; self.algorithm = algorithm
        }
    }
    private let lock = Lock()
    private var digests: [Key: [UInt8]] = [:]
    private var recycler: OutputRecycler?
    private var layouts: [Int: RecordLayout] = [:]
    /// The last table found loadable, and the minSdkVersion its check asked for (nil: the check did not ask).
    private var loadableResourceTable: (bytes: TableBytes, minSdkVersion: Int??)?
    /// How many bytes of the entries section the last run skipped (already in the recycled file) and wrote.
    public private(set) var lastSkippedBytes: Int64 = 0
    public private(set) var lastWrittenBytes: Int64 = 0

    public init() {}

    /// Number of digests held.
    public var count: Int { lock.withLock { digests.count } }

    func digest(for key: Key) -> [UInt8]? { lock.withLock { digests[key] } }
    func store(_ digest: [UInt8], for key: Key) { lock.withLock { digests[key] = digest } }

    func recycler(for destination: String) -> OutputRecycler {
        lock.withLock {
        if let recycler, recycler.destination == destination { return recycler }
        let new = OutputRecycler(destination: destination)
        recycler = new
        layouts = [:]
        return new
        }
    }

    /// The bytes `ResourceTableLoadCheck` reads of `table` (its plaintext, or its deflated data), as a range of
    /// the input's mapping. Nil for bytes in memory: remembering those would keep a replaced table's buffer alive.
    struct TableBytes: Equatable {
        var identity: DataIdentity
        var isPlain: Bool
        init?(_ table: OutputEntry) {
            let plain = table.uncompressed ?? (table.entry.isCompressed ? nil : table.data)
            guard let identity = (plain ?? table.data).identity, case .mapping = identity else { return nil }
            self.identity = identity
            isPlain = plain != nil
        }
    }

    /// Whether `table` holds the same bytes as the last table found loadable (`noteLoadable`), and, when that
    /// check asked for the manifest's minSdkVersion (a table in a newer encoding), `minSdkVersion` gives the same.
    func isKnownLoadable(_ table: OutputEntry, minSdkVersion: () -> Int?) -> Bool {
        guard let bytes = TableBytes(table), let known = lock.withLock({ loadableResourceTable }), known.bytes == bytes else { return false }
        guard case .some(let level) = known.minSdkVersion else { return true }
        return minSdkVersion() == level
    }

    /// Records that `ResourceTableLoadCheck` found no problem in `table`, asked for `minSdkVersion` (nil: not asked).
    func noteLoadable(_ table: OutputEntry, minSdkVersion: Int??) {
        let known = TableBytes(table).map { (bytes: $0, minSdkVersion: minSdkVersion) }
        lock.withLock { loadableResourceTable = known }
    }

    /// The layout a slot held, removed: from now on the slot is being rewritten.
    func takeLayout(slot: Int) -> RecordLayout? {
        lock.withLock { layouts.removeValue(forKey: slot) }
    }

    /// Records what `slot` now holds. When the other slot holds nothing known (the first build, or after a
    /// failed one), the published file is copied there in the background with the same layout, so the next
    /// build rewrites only what changed rather than all of it.
    func setLayout(_ layout: RecordLayout, slot: Int, skipped: Int64, written: Int64) {
        lock.withLock {
        layouts[slot] = layout
        lastSkippedBytes = skipped
        lastWrittenBytes = written
        if layouts[1 - slot] == nil, let recycler {
            layouts[1 - slot] = layout
            recycler.prepareSpareCopy()
        }
        }
    }
}

/// One local record (header and data) as written at an offset, identified without its bytes.
struct RecordKey: Equatable {
    var offset: Int64
    var header: [UInt8]
    var data: DataIdentity
    var dataCount: Int64
}

/// What a recycled output file holds: its first records (up to the first one whose bytes could not be
/// identified) and the chunk digests of its entries section.
struct RecordLayout {
    var records: [RecordKey]
    var algorithms: Set<ContentDigestAlgorithm>
    var section: SectionChunkDigests?
}
