import Align
import APKCore
import BinaryXML
import Repack

/// An entry the pipeline stored uncompressed, or aligned, because Android would refuse the APK otherwise.
public struct PackagingRepair: Sendable, Equatable, Encodable {
    /// The entry name (`resources.arsc`, `lib/arm64-v8a/libx.so`).
    public var entry: String
    /// Why Android requires it, as a clause ("Android 11+ requires it for targetSdk 30+ …").
    public var reason: String
    /// What was done to the entry.
    public var action: Action = .stored

    public enum Action: String, Sendable, Equatable {
        /// It was compressed: it is stored (and aligned) in the output.
        case stored
        /// It was stored but its data did not start where Android requires: it is aligned in the output.
        case aligned
    }

    public init(entry: String, reason: String, action: Action = .stored) {
        self.entry = entry; self.reason = reason; self.action = action
    }

    // The JSON lists each action apart (storedForAndroid, alignedForAndroid): an item is its entry and reason.
    private enum CodingKeys: String, CodingKey { case entry, reason }
}

/// Stores what Android requires stored (`PackagingRequirements`): `run` and `watch` repair an input that
/// packs `resources.arsc` (targetSdkVersion ≥ 30) or native libraries (extractNativeLibs="false") compressed,
/// instead of writing an APK that does not install. The writers then align the stored entries (4 bytes,
/// `.so` on the library page size), so stored and aligned is what comes out; an entry the input stored but
/// did not align is reported too, since the output differs from the input there as much.
enum PackagingRepairs {
    /// `entries` with every entry the rules of `manifest` (the output's, patched) require stored, stored; and
    /// what was changed (stored, or only aligned: the input's data offset was off the required boundary).
    /// `cache` keeps watch mode from inflating the same entry again on every build.
    static func apply(to entries: [OutputEntry], manifest: ManifestSummary, cache: StoredEntryCache? = nil) throws
        -> (entries: [OutputEntry], repairs: [PackagingRepair]) {
        let requirements = PackagingRequirements(manifest: manifest)
        guard !requirements.isEmpty else { return (entries, []) }
        var output = entries
        var repairs: [PackagingRepair] = []
        // Stored input entries off their boundary; new entries (offset 0) are written aligned from the start.
        let misaligned = Set(requirements.misalignedEntries(in: entries.map(\.entry)).map { ExactName($0.entry.name) })
        for index in output.indices {
            let entry = output[index].entry
            guard let rule = requirements.rule(for: entry.name) else { continue }
            guard entry.isCompressed else {
                if misaligned.contains(ExactName(entry.name)) {
                    repairs.append(PackagingRepair(entry: entry.name, reason: requirements.reason(for: rule), action: .aligned))
                }
                continue
            }
            if let stored = cache?.stored(for: entry) {
                output[index] = stored
            } else {
                output[index] = try output[index].storedUncompressed()
                cache?.store(output[index], for: entry)
            }
            repairs.append(PackagingRepair(entry: entry.name, reason: requirements.reason(for: rule)))
        }
        return (output, repairs)
    }
}

/// Entries stored by the last build, by the compressed entry they came from (watch mode: the same input entry
/// is not inflated again on every save).
final class StoredEntryCache: @unchecked Sendable {
    // @unchecked Sendable: used by the one thread that builds.
    // By the name's bytes: a stored entry handed back for another (canonically equal) name would be written under
    // the first one's name, twice.
    private var entries: [ExactName: (crc: UInt32, size: Int64, compressedSize: Int64, stored: OutputEntry)] = [:]
    func stored(for entry: ZipEntry) -> OutputEntry? {
        guard let cached = entries[ExactName(entry.name)], cached.crc == entry.crc32, cached.size == entry.uncompressedSize,
              cached.compressedSize == entry.compressedSize else { return nil }
        return cached.stored
    }
    func store(_ stored: OutputEntry, for entry: ZipEntry) {
        entries[ExactName(entry.name)] = (entry.crc32, entry.uncompressedSize, entry.compressedSize, stored)
    }
}
