import APKCore
import BinaryXML
import Foundation
import Repack
import Sign
import Testing
import TestSupport
import Unpack

/// Watch mode signs through one `SigningCache`, and `ResourceTableLoadCheck` reads the whole table: each save
/// re-read framework-res.apk's 31 MB table, which had not changed. The cache remembers the input's table once it
/// passed; any other table (a patch's, a compiled one) is still checked on every build.
@Suite(.removesTemporaryDirectories) struct WatchResourceTableCheckTests {
    /// The input's bytes as the signer sees them (the same mapping range), with other content: what the cache
    /// trusts without reading is the identity alone, so this shows whether a build read the table.
    struct SameRangeOtherBytes: DataSource {
        let original: any DataSource
        let bytes: [UInt8]
        var count: Int64 { Int64(bytes.count) }
        var identity: DataIdentity? { original.identity }
        func withBytes<R>(in range: Range<Int64>, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
            try checkRange(range)
            return try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[Int(range.lowerBound)..<Int(range.upperBound)])) }
        }
    }

    @Test("the input's table is checked in the first build only; a patch's broken table is refused in every build")
    func inputTableCheckedOnce() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let archive = try APKArchive(path: try FixtureAPK.cordovaLike().build(in: dir))
        let key = SignCommandTests.shared.rsa.key
        let entries = try Repacker.rawEntries(of: archive.zip)
        let index = try #require(entries.firstIndex { $0.entry.name == ResourceTableLoadCheck.entryName })
        let table = entries[index]
        try #require(!table.entry.isCompressed && table.data.identity != nil)
        // A type chunk with type ID 0: the loader refuses the table.
        var broken = try archive.uncompressedData(of: table.entry)
        let typeChunk = try #require(Self.firstTypeChunk(in: broken))
        broken[typeChunk + 8] = 0
        #expect(ResourceTableLoadCheck.problem(in: broken, minSdkVersion: { nil })?.code == .typeIDZero)
        func with(_ replaced: OutputEntry) -> [OutputEntry] { var copy = entries; copy[index] = replaced; return copy }
        let sameRange = with(OutputEntry(entry: table.entry, data: SameRangeOtherBytes(original: table.data, bytes: broken)))
        let fromPatch = with(try OutputEntry.making(name: table.entry.name, content: broken, method: .stored, timestamp: .apksigDefault))

        func sign(_ entries: [OutputEntry], cache: SigningCache?) throws -> ResourceTableProblem.Code? {
            let output = dir.appendingPathComponent("out.apk").path
            do {
                _ = try Signer(config: SignerConfig(key: key)).sign(entries: entries, to: output, cache: cache)
                return nil
            } catch SignError.resourceTableRefused(let problem) {
                return problem.code
            }
        }
        // Without a cache every build reads the table.
        #expect(try sign(sameRange, cache: nil) == .typeIDZero)
        let cache = SigningCache()
        #expect(try sign(sameRange, cache: cache) == .typeIDZero, "a failed check is not remembered")
        #expect(try sign(entries, cache: cache) == nil)
        #expect(try sign(sameRange, cache: cache) == nil, "the input's range passed: not read again")
        #expect(try sign(fromPatch, cache: cache) == .typeIDZero, "another table is checked")
        #expect(try sign(fromPatch, cache: cache) == .typeIDZero, "a table in memory is checked every time")
        #expect(try sign(entries, cache: cache) == nil)
    }

    /// A table in a newer encoding is judged by the manifest's minSdkVersion too: a rebuild whose manifest lowers
    /// it below what the table needs is refused although the table did not change.
    @Test("the input's sparse table is checked again when the manifest's minSdkVersion changes")
    func sparseTableRecheckedForAnotherMinSdkVersion() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let res = dir.appendingPathComponent("res")
        try TestSupport.write("<resources><string name=\"a\">A</string><string name=\"b\">B</string><string name=\"c\">C</string><string name=\"d\">D</string><string name=\"e\">E</string></resources>\n",
                              to: "values/strings.xml", in: res)
        // One of five strings in French: aapt2 makes the values-fr type sparse from minSdkVersion 26 on.
        try TestSupport.write("<resources><string name=\"c\">C fr</string></resources>\n", to: "values-fr/strings.xml", in: res)
        let compiled = dir.appendingPathComponent("compiled.zip").path
        let compile = try TestSupport.run("aapt2", ["compile", "--dir", res.path, "-o", compiled])
        try #require(compile.succeeded, "\(compile)")
        func link(minSdkVersion level: Int) throws -> APKArchive {
            let manifest = dir.appendingPathComponent("AndroidManifest-\(level).xml")
            try Data("""
                <manifest xmlns:android="http://schemas.android.com/apk/res/android" package="com.example.sparse">
                  <uses-sdk android:minSdkVersion="\(level)" android:targetSdkVersion="29"/><application/>
                </manifest>
                """.utf8).write(to: manifest)
            let apk = dir.appendingPathComponent("min\(level).apk").path
            let linked = try TestSupport.run("aapt2", ["link", "-o", apk, "-I", TestSupport.frameworkRes, "--manifest", manifest.path,
                                                       "--enable-sparse-encoding", compiled])
            try #require(linked.succeeded, "\(linked)")
            return try APKArchive(path: apk)
        }
        let entries = try Repacker.rawEntries(of: try link(minSdkVersion: 26).zip)
        let lowered = try Repacker.rawEntries(of: try link(minSdkVersion: 21).zip)
        let manifestIndex = try #require(entries.firstIndex { $0.entry.name == "AndroidManifest.xml" })
        var withLowered = entries
        withLowered[manifestIndex] = try #require(lowered.first { $0.entry.name == "AndroidManifest.xml" })

        let key = SignCommandTests.shared.rsa.key
        func sign(_ entries: [OutputEntry], cache: SigningCache?) throws -> ResourceTableProblem.Code? {
            do {
                _ = try Signer(config: SignerConfig(key: key)).sign(entries: entries, to: dir.appendingPathComponent("out.apk").path, cache: cache)
                return nil
            } catch SignError.resourceTableRefused(let problem) {
                return problem.code
            }
        }
        try #require(try sign(withLowered, cache: nil) == .sparseTypeBeforeAndroid8)
        let cache = SigningCache()
        #expect(try sign(entries, cache: cache) == nil)
        #expect(try sign(withLowered, cache: cache) == .sparseTypeBeforeAndroid8)
        #expect(try sign(entries, cache: cache) == nil)
    }

    /// Offset of the first RES_TABLE_TYPE chunk (0x0201) in an aapt-built table: the RES_TABLE header, the global
    /// string pool, then the package's header and children.
    static func firstTypeChunk(in table: [UInt8]) -> Int? {
        func u16(_ o: Int) -> Int { Int(table[o]) | Int(table[o + 1]) << 8 }
        func u32(_ o: Int) -> Int { u16(o) | u16(o + 2) << 16 }
        var offset = u16(2)  // past the table header
        while offset + 8 <= table.count {
            switch u16(offset) {
            case 0x0200: offset += u16(offset + 2)  // into the package
            case 0x0201: return offset
            default: offset += u32(offset + 4)
            }
        }
        return nil
    }
}
