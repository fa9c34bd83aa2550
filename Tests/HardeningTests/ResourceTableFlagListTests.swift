import APKCore
import BinaryXML
import Foundation
import Testing
import TestSupport

/// RES_TABLE_FLAG_LIST (0x0208): the names of the read/write feature flags a table's resources depend on, which
/// aapt2 writes after the global string pool (its FlaggedResources_test: `[RES_TABLE_FLAG_LIST] chunkSize: 12
/// headerSize: 8 count: 1`). The rules are `LoadedArsc::LoadTable`'s where the aconfig flag
/// `android.content.res.resource_readwrite_flags` is on: no oracle here reads the chunk (Debian's Android 10
/// libandroidfw skips it), so the cases are built from those rules and checked against the walk alone.
@Suite(.removesTemporaryDirectories) struct ResourceTableFlagListTests {
    let table: Table

    init() throws {
        let dir = try TestSupport.makeTemporaryDirectory("arsc-flag-list")
        var fixture = FixtureAPK()
        fixture.strings["flagged"] = "test.package.rwFlag"
        let archive = try APKArchive(path: try fixture.build(in: dir, name: "fixture.apk"))
        table = try Table(try archive.uncompressedData(of: try #require(archive.entry(named: "resources.arsc"))))
    }

    /// `table` with `chunk` inserted at the table's level, before the package (`atPool`: before the global pool).
    func inserting(_ chunk: [UInt8], atPool: Bool = false) -> [UInt8] {
        var bytes = table.bytes
        bytes.insert(contentsOf: chunk, at: atPool ? table.globalPool : table.package)
        bytes.replaceSubrange(4..<8, with: Table.le32(table.u32(4) + UInt32(chunk.count)))
        return bytes
    }

    static func flagList(_ names: [UInt32]) -> [UInt8] { Table.chunk(0x0208, header: [], body: names.flatMap(Table.le32)) }

    var poolCount: UInt32 { table.u32(table.globalPool + 8) }

    @Test func flagListRules() throws {
        #expect(table.u32(table.globalPool + 16) & 0x100 != 0, "aapt writes a UTF-8 global pool")
        let check = { (bytes: [UInt8]) in ResourceTableLoadCheck.problem(in: bytes, minSdkVersion: { 21 })?.code }
        #expect(check(inserting(Self.flagList([0, poolCount - 1]))) == nil, "names in the pool")
        #expect(check(inserting(Self.flagList([]))) == nil, "an empty list")
        #expect(check(inserting(Self.flagList([poolCount]))) == .flagListNameOutOfRange)
        #expect(check(inserting(Self.flagList([0]), atPool: true)) == .flagListWithoutStrings, "before the pool")
        #expect(check(inserting(Self.flagList([]), atPool: true)) == nil, "empty, before the pool")
        // The same pool read as UTF-16: its data must still end with a NUL unit for the pool to load.
        var utf16 = inserting(Self.flagList([0]))
        let flags = table.globalPool + 16, poolEnd = table.globalPool + Int(table.u32(table.globalPool + 4))
        #expect(table.u32(table.globalPool + 12) == 0, "no styles: the string data ends with the pool")
        utf16.replaceSubrange(flags..<(flags + 4), with: Table.le32(table.u32(flags) & ~0x100))
        utf16.replaceSubrange((poolEnd - 2)..<poolEnd, with: [0, 0])
        #expect(check(utf16) == .flagListNameNotUTF8)
        // A flagged chunk in the package is skipped, as the loader skips it.
        var flagged = table
        flagged.appendToPackage(Table.chunk(0x0207, header: Table.le32(0) + [0, 0, 0, 0], body: []))
        #expect(check(flagged.bytes) == nil)
        let problem = try #require(ResourceTableLoadCheck.problem(in: inserting(Self.flagList([poolCount])), minSdkVersion: { 21 }))
        #expect("\(problem)".contains("string \(poolCount) of the global string pool") && "\(problem)".contains("reads resource flag lists"), "\(problem)")
    }
}
