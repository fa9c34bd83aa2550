import APKCore
import TestSupport
import ZlibWrapper

/// An archive seed with one entry's content swapped for other bytes (stored, CRC-32 and sizes right), the other
/// records copied as they are: a mutated manifest, resource table or inner APK then reaches its parser instead of
/// stopping at the ZIP checks.
public struct EntryRepacker {
    let archive: ZipArchive
    let index: Int
    /// The entry's uncompressed content: the seed of the nested mutation.
    public let content: [UInt8]

    /// For an entry inside an archive entry (`splits/base.apk!resources.arsc`): the repacker of the inner archive.
    let inner: [EntryRepacker]
    /// The repacker whose content is mutated (the innermost archive's entry).
    public var innermost: EntryRepacker { inner.first?.innermost ?? self }

    /// `entry` names the entry; `outer!inner` an entry of an archive stored as an entry.
    public init(archive bytes: [UInt8], entry path: String) throws {
        let parts = path.split(separator: "!", maxSplits: 1).map(String.init)
        let name = parts[0]
        archive = try ZipArchive(source: ByteArrayDataSource(bytes))
        guard let index = archive.entries.firstIndex(where: { $0.name == name }) else {
            throw FixtureError(message: "seed archive has no entry \(name)")
        }
        self.index = index
        let entry = archive.entries[index]
        let raw = try archive.source.bytes(in: entry.dataRange)
        content = entry.isCompressed ? try raw.withUnsafeBytes { try Inflate.inflate($0, expectedSize: entry.uncompressedSize) } : raw
        inner = parts.count == 2 ? [try EntryRepacker(archive: content, entry: parts[1])] : []
    }

    /// The archive with the innermost entry's content replaced (and every archive around it re-packed).
    public func repack(with replacement: [UInt8]) throws -> [UInt8] {
        try repackThis(with: inner.first.map { try $0.repack(with: replacement) } ?? replacement)
    }

    func repackThis(with replacement: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        var offsets = [Int64](repeating: 0, count: archive.entries.count)
        var entries = archive.entries
        var swapped = entries[index]
        swapped.method = .stored
        swapped.flags &= ~ZipFlags.dataDescriptor
        swapped.crc32 = CRC32.checksum(replacement)
        swapped.compressedSize = Int64(replacement.count)
        swapped.uncompressedSize = Int64(replacement.count)
        entries[index] = swapped
        for i in archive.indicesInFileOrder {
            offsets[i] = Int64(out.count)
            if i == index {
                out += swapped.encodedLocalHeader(extra: []) + replacement
            } else {
                out += try archive.source.bytes(in: archive.entries[i].recordRange)
            }
        }
        let cdOffset = out.count
        for (i, entry) in entries.enumerated() { out += entry.encodedCentralDirectoryRecord(localHeaderOffset: offsets[i]) }
        out += EndOfCentralDirectory(entryCount: entries.count, centralDirectorySize: Int64(out.count - cdOffset),
                                     centralDirectoryOffset: Int64(cdOffset)).encoded()
        return out
    }
}
