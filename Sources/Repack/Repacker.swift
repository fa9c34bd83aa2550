import APKCore
import Align

/// Writes a list of entries as a new, aligned, unsigned APK in one pass.
public enum Repacker {
    /// What was written.
    public struct Report: Sendable {
        public var entries: [ZipEntry]
        public var size: Int64
    }

    /// Writes `entries` in order to `destination` (temp file + rename: nothing partial is ever visible).
    @discardableResult
    public static func write(_ entries: [OutputEntry], to destination: String, alignment: AlignmentPolicy,
                             comment: [UInt8] = [], beforeCommit: () throws -> Void = {}) throws -> Report {
        let output = try OutputFile(destination: destination)
        try output.reserve(estimatedSize(of: entries, comment: comment))
        let writer = ZipWriter(output: output, alignment: alignment, expectedEntryCount: entries.count)
        for entry in entries { try writer.append(entry) }
        try writer.finish(signingBlock: nil, comment: comment, beforeCommit: beforeCommit)
        return Report(entries: writer.writtenEntries, size: output.position)
    }

    /// About what `entries` take in an APK: their data, headers and central directory records, alignment
    /// padding and the EOCD (`OutputFile.reserve` allocates it up front; a wrong guess costs nothing).
    public static func estimatedSize(of entries: [OutputEntry], comment: [UInt8] = []) -> Int64 {
        OutputEntry.estimatedArchiveSize(of: entries, comment: comment)
    }

    /// Every entry of `archive` copied raw in file order, for realigning it (what zipalign does). Bytes between
    /// entries and any APK Signing Block are not carried over, as with zipalign.
    public static func rawEntries(of archive: ZipArchive) throws -> [OutputEntry] {
        try archive.entriesInFileOrder.map { try OutputEntry.copying($0, from: archive.source) }
    }
}
