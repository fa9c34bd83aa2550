import APKCore
import SignatureSchemes

/// One kept entry of the APK being signed, in output order.
/// A class, not a struct: entries are passed to workers and looked at several times each, and copying a
/// ZipEntry (five arrays and a string) every time cost more than the rest of a watch-mode rebuild. Nor does
/// it hold a copy of its `ZipEntry`: it points into the one array of them all (an input APK's own
/// `ZipArchive.entries`), so a kept entry is a small object and making thousands of them copies no arrays.
final class KeptEntry: Sendable {
    /// The entries this one is among (shared by all the kept entries of one signing), and its position there.
    private let entries: [ZipEntry]
    private let index: Int
    /// Read in place: a getter (or a `_read` of the array's subscript) hands back a copy, retaining its arrays
    /// and string at every access. The array's `span` lends the element itself, for as long as the access lasts
    /// and no longer (the compiler checks the span does not outlive the array it borrows from); an address taken
    /// out of `withUnsafeBufferPointer` would be used after its closure returned, which Swift leaves undefined.
    /// Unchecked: `init` checked the index against the array, which never changes.
    var entry: ZipEntry {
        _read {
            let all = entries
            yield all.span[unchecked: index]
        }
    }
    enum Origin {
        /// An input APK entry: its local record and central directory record are copied from the input.
        case archive(centralRecord: Range<Int64>, centralIndex: Int)
        /// An entry from the Repack stage: headers are encoded from `entry`, data copied from `data`.
        case output(OutputEntry)
    }
    let origin: Origin
    /// The entry `entries[index]`, which `origin` says where to copy from.
    init(_ entries: [ZipEntry], index: Int, origin: Origin) {
        precondition(entries.indices.contains(index), "a kept entry is one of the entries given")
        self.entries = entries
        self.index = index
        self.origin = origin
    }
}

/// Writes the entries section of a signed APK from one kind of source, digesting it as it goes: the input
/// APK's records copied (`InputAPKWriter`), the Repack stage's entries (`RepackedEntriesWriter`), or those
/// entries into watch mode's recycled output (`RecyclingWriter`, the incremental mode). The engine decides
/// what goes in (`SigningEngine.isKept`, `alignedExtra`, the `DigestPlan`); a writer only moves and hashes
/// bytes, with whatever threads, buffers and page-cache advice make that fast.
protocol SectionWriter {
    /// The kept entries' v1 digests computed on other threads while `write` runs, or nil when `write`
    /// computes them itself (and returns them in `WrittenSection.entryDigests`).
    func entryDigestsBesideCopy(_ entries: [KeptEntry], plan: DigestPlan) -> (@Sendable () throws -> [[UInt8]])?

    /// Opens the output and writes `entries` into it.
    func write(_ entries: [KeptEntry], engine: SigningEngine, plan: DigestPlan) throws -> WrittenSection
}

/// What a section writer hands back: the output, positioned after the entries section and still digesting
/// it for v2/v3 (`SigningOutput.finishDigests` gives the chunk digests), and the central directory records.
struct WrittenSection {
    let output: SigningOutput
    /// (position in the central directory, record) for each kept entry.
    var centralRecords: [(order: Int, record: Records.CentralRecord)]
    /// The v1 digest of each kept entry, when the writer computed them.
    var entryDigests: [[UInt8]]?
    /// Stored entries given a new 0xd935 field.
    var realigned: Int
    /// The fs-verity leaf digests of the section's first blocks, when the writer hashed them.
    var verityLeaves: LeafDigests?
    /// Where each kept entry's record and data start in the output, for the pin list.
    var entryStarts: (records: [Int64], data: [Int64])? = nil
}
