import APKCore
import BinaryXML
import Testing
import TestSupport
import Unpack

/// `ResourceTableLoadCheck` reads a stored table in place, through the input's mapping, and every page it touches
/// stays in the resident set until someone gives it back: on framework-res.apk's 31 MB table that put 31 MB on the
/// peak memory of verify, align, sign and watch. The check gives the pages back behind its walk, so at no time
/// does more than a few MiB of the table stay mapped.
@Suite struct ResourceTableCheckPagesTests {
    /// A mapped source that records what is given back (and gives it back).
    final class RecordingSource: DataSource, @unchecked Sendable {
        let base: any DataSource
        var discarded: [Range<Int64>] = []
        init(_ base: any DataSource) { self.base = base }
        var count: Int64 { base.count }
        func withBytes<R>(in range: Range<Int64>, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
            try base.withBytes(in: range, body)
        }
        func discard(_ range: Range<Int64>) {
            discarded.append(range)
            base.discard(range)
        }
    }

    @Test("the check of framework-res.apk's stored table gives its pages back every few MiB, and all of them at the end")
    func pagesGoBackBehindTheWalk() throws {
        let archive = try APKArchive(path: TestSupport.frameworkRes)
        let entry = try #require(archive.entry(named: ResourceTableLoadCheck.entryName))
        try #require(!entry.isCompressed && entry.dataRange.count > 24 << 20, "framework-res.apk's resources.arsc: \(entry.method), \(entry.dataRange.count) bytes")
        let source = RecordingSource(archive.source)
        #expect(try ResourceTableLoadCheck.problem(in: source, range: entry.dataRange, minSdkVersion: { nil }) == nil)

        // The last discard is the whole table; those before it follow the walk, each from where the one before
        // ended (a step is at least 4 MiB, more when a chunk is larger: the 9 MB global string pool, whose middle
        // the walk does not read).
        let table = entry.dataRange
        #expect(source.discarded.last == table, "\(source.discarded)")
        let behind = source.discarded.dropLast()
        #expect(behind.count >= Int(table.count / (8 << 20)), "\(behind.count) discards behind the walk: \(source.discarded)")
        var end = table.lowerBound
        for range in behind {
            #expect(range.lowerBound == end && range.upperBound > end, "\(range) after \(end): \(source.discarded)")
            end = range.upperBound
        }
    }
}
