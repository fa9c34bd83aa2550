/// An entry to write: its metadata and the bytes that follow its local header, verbatim.
///
/// For an unchanged input entry `data` is a slice of the mapped input (copied raw, never re-inflated); for a
/// new one it holds the freshly compressed bytes and `uncompressed` the plaintext, which the v1 signer
/// digests without inflating again.
public struct OutputEntry: Sendable {
    public var entry: ZipEntry
    public var data: any DataSource
    public var uncompressed: (any DataSource)?

    public init(entry: ZipEntry, data: any DataSource, uncompressed: (any DataSource)? = nil) {
        self.entry = entry; self.data = data; self.uncompressed = uncompressed
    }
}

extension OutputEntry {
    /// Largest entry read whole into memory (a manifest, say; framework-res.apk's resources.arsc is 31 MB):
    /// a 1 MB input whose manifest inflates to 1 GB must not cost 1 GB.
    public static let maxInMemorySize: Int64 = 128 << 20

    /// About what `entries` take in an APK: their data, headers and central directory records, alignment
    /// padding and the EOCD (`OutputFile.reserve` allocates it up front; a wrong guess costs nothing).
    public static func estimatedArchiveSize(of entries: [OutputEntry], comment: [UInt8] = []) -> Int64 {
        entries.reduce(Int64(22 + comment.count)) { total, item in
            let entry = item.entry
            let records = 30 + 46 + 2 * entry.nameBytes.count + entry.localExtra.count + entry.centralExtra.count + entry.comment.count
            return total + item.data.count + Int64(records) + 8
        }
    }
}

/// An MS-DOS date and time as ZIP stores them.
public struct DOSTimestamp: Sendable, Hashable, Comparable {
    public var date: UInt16
    public var time: UInt16
    public init(date: UInt16, time: UInt16) { self.date = date; self.time = time }

    /// 2009-01-01 00:00, apksig's timestamp for new entries when nothing else is known.
    public static let apksigDefault = DOSTimestamp(date: 0x3a21, time: 0)

    /// apksig's rule for entries it adds: the newest timestamp among the kept entries, so output is
    /// reproducible (no wall clock) and new entries do not look older than the rest.
    public static func newest(in entries: [ZipEntry]) -> DOSTimestamp {
        entries.map { DOSTimestamp(date: $0.lastModifiedDate, time: $0.lastModifiedTime) }.max() ?? apksigDefault
    }

    public static func < (a: DOSTimestamp, b: DOSTimestamp) -> Bool { (a.date, a.time) < (b.date, b.time) }
}
