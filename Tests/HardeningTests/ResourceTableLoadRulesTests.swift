import APKCore
import BinaryXML
import Foundation
import Testing
import TestSupport
import ZlibWrapper

/// `resources.arsc` tables Android's resource loader refuses (issue 19, "Outputs that install"): `verify` passed
/// them and `sign`, `run` and `align` copied them into a signed APK as if fine. Each case mutates the table of an
/// aapt-built APK to break one rule of `ResourceTableLoadCheck`, and checks that
/// - Android's own loader refuses it (`Tests/Oracles/arsc-check.cc --strict`: libandroidfw's `LoadedArsc::Load`, every
///   entry as a lookup reads it, and `ResTable::add`), or, for the rules where the loader reads on, that it loses
///   resources (the listing of the unmutated table is not all there);
/// - `ResourceTableLoadCheck` names the rule, and `verify --json` reports INSTALL_RESOURCES_ARSC_MALFORMED with it;
/// - `sign` and `run` refuse the APK and leave no output, nor any temporary file.
@Suite(.removesTemporaryDirectories) struct ResourceTableLoadRulesTests {
    typealias Code = ResourceTableProblem.Code

    /// What Android's loader does with the mutated table.
    enum Oracle {
        /// `arsc-check --strict` fails: a loader refuses the table, or an entry cannot be read.
        case refuses
        /// The table loads, with fewer resources than before the mutation.
        case losesResources
    }

    struct Case: CustomStringConvertible, Sendable {
        let name: String
        let code: Code
        let oracle: Oracle
        let mutate: @Sendable (inout Table) throws -> Void
        var description: String { name }

        init(_ name: String, _ code: Code, _ oracle: Oracle = .refuses, _ mutate: @escaping @Sendable (inout Table) throws -> Void) {
            self.name = name; self.code = code; self.oracle = oracle; self.mutate = mutate
        }
    }

    static let cases: [Case] = [
        // Chunks.
        Case("overlayable with 4 bytes where its first policy chunk should start", .chunkHeaderTruncated) { t in
            t.appendToPackage(Table.chunk(0x0204, header: [UInt8](repeating: 0, count: 1024), body: [0, 0, 0, 0]))
        },
        Case("typeSpec header of 4 bytes", .chunkHeaderTooSmall) { $0.set16($0.firstChild(0x0202).offset + 2, 4) },
        Case("typeSpec header larger than the chunk", .chunkHeaderLargerThanChunk) { t in
            let spec = t.firstChild(0x0202); t.set16(spec.offset + 2, UInt16(spec.size + 4))
        },
        Case("table chunk past the end of the file", .chunkPastEnd) { $0.set32(4, $0.u32(4) + 4) },
        Case("last chunk of the package past its end", .chunkPastEnd, .losesResources) { t in
            let last = t.children.last!; t.set32(last.offset + 4, UInt32(last.size + 8))
        },
        Case("type chunk size not a multiple of 4", .chunkSizeNotAligned) { t in
            let type = t.firstChild(0x0201); t.set32(type.offset + 4, UInt32(type.size - 2))
        },
        // The table.
        Case("empty table", .emptyTable) { $0.bytes = [] },
        Case("no RES_TABLE chunk", .noTable, .losesResources) { $0.set16(0, 0x0009) },
        Case("table header of 8 bytes", .tableHeaderTooSmall) { $0.set16(2, 8) },
        Case("package count 0", .morePackagesThanDeclared) { $0.set32(8, 0) },
        Case("package count 2", .fewerPackagesThanDeclared) { $0.set32(8, 2) },
        Case("no global string pool", .noGlobalStringPool) { $0.set16($0.globalPool, 0x0009) },
        // String pools.
        Case("global pool header of 24 bytes", .stringPoolHeaderTooSmall) { $0.set16($0.globalPool + 2, 24) },
        Case("global pool string count past its end", .stringOffsetsPastEnd) { $0.set32($0.globalPool + 8, 0x0FFF_FFFF) },
        Case("global pool strings start past its end", .stringsStartPastEnd) { t in t.set32(t.globalPool + 20, t.u32(t.globalPool + 4)) },
        Case("global pool styles start past its end", .stylesStartPastEnd) { t in
            try #require(t.u32(t.globalPool + 12) > 0, "the fixture's global pool has styles")
            t.set32(t.globalPool + 24, t.u32(t.globalPool + 4))
        },
        Case("global pool styles before its strings", .stylesBeforeStrings) { t in
            try #require(t.u32(t.globalPool + 12) > 0, "the fixture's global pool has styles")
            t.set32(t.globalPool + 24, t.u32(t.globalPool + 20))
        },
        // A UTF-16 pool whose styles start one byte after its strings: no whole character of string data (a UTF-8
        // pool always has some, as its strings start two bytes before its end at the latest).
        Case("UTF-16 pool with no string data", .emptyStringData) { t in
            let pool = t.firstChild(0x0001).offset
            t.set32(pool + 16, t.u32(pool + 16) & ~0x100)
            if t.u32(pool + 12) == 0 { t.set32(pool + 12, 1) }
            t.set32(pool + 24, t.u32(pool + 20) + 1)
        },
        Case("global pool string data without its final NUL", .stringDataNotTerminated) { t in
            let pool = t.globalPool
            let utf8 = t.u32(pool + 16) & 0x100 != 0
            let end = t.u32(pool + 12) > 0 ? Int(t.u32(pool + 24)) : Int(t.u32(pool + 4))
            if utf8 { t.bytes[pool + end - 1] = 0x41 } else {
                let start = Int(t.u32(pool + 20))
                t.set16(pool + start + ((end - start) / 2 - 1) * 2, 0x41)
            }
        },
        Case("global pool style data without its end marker", .styleDataNotTerminated) { t in
            try #require(t.u32(t.globalPool + 12) > 0, "the fixture's global pool has styles")
            t.set32(t.globalPool + Int(t.u32(t.globalPool + 4)) - 4, 0)
        },
        // The package.
        Case("package header of 280 bytes", .packageHeaderTooSmall) { $0.set16($0.package + 2, 280) },
        Case("package ID 0x100", .packageIDOutOfRange) { $0.set32($0.package + 8, 0x100) },
        Case("type ID offset 256", .typeIDOffsetOutOfRange) { t in
            try #require(t.u16(t.package + 2) >= 288, "aapt writes the type ID offset")
            t.set32(t.package + 284, 256)
        },
        Case("type strings offset past the package", .typeStringsInvalid) { $0.set32($0.package + 268, $0.u32($0.package + 4)) },
        Case("key strings offset not a multiple of 4", .keyStringsInvalid) { $0.set32($0.package + 276, $0.u32($0.package + 276) + 2) },
        // typeSpecs.
        Case("typeSpec header of 12 bytes", .typeSpecHeaderTooSmall) { $0.set16($0.firstChild(0x0202).offset + 2, 12) },
        Case("typeSpec ID 0", .typeSpecIDZero) { $0.bytes[$0.firstChild(0x0202).offset + 8] = 0 },
        Case("typeSpec ID plus type ID offset over 255", .typeSpecIDOutOfRange) { t in
            try #require(t.u16(t.package + 2) >= 288, "aapt writes the type ID offset")
            t.set32(t.package + 284, 255)
        },
        Case("typeSpec of 70,000 entries", .typeSpecTooManyEntries) { $0.set32($0.firstChild(0x0202).offset + 12, 70_000) },
        Case("typeSpec flags past its end", .typeSpecEntriesPastEnd) { t in
            let spec = t.firstChild(0x0202); t.set32(spec.offset + 12, UInt32((spec.size - spec.headerSize) / 4 + 1))
        },
        // Types.
        Case("type header of 20 bytes", .typeHeaderTooSmall) { $0.set16($0.firstChild(0x0201).offset + 2, 20) },
        Case("type ID 0", .typeIDZero) { $0.bytes[$0.firstChild(0x0201).offset + 8] = 0 },
        Case("type of 70,000 entries", .typeTooManyEntries) { $0.set32($0.firstChild(0x0201).offset + 12, 70_000) },
        Case("type offsets overlapping its entries", .typeOffsetsOverlapEntries) { t in
            let type = t.firstChild(0x0201)
            t.set32(type.offset + 16, UInt32(type.headerSize + 4 * Int(t.u32(type.offset + 12)) - 4))
        },
        Case("type entries past its end", .typeEntriesPastEnd) { t in let type = t.firstChild(0x0201); t.set32(type.offset + 16, UInt32(type.size + 4)) },
        Case("type entries not 4-byte aligned", .typeEntriesNotAligned) { t in
            let type = t.firstChild(0x0201); t.set32(type.offset + 16, t.u32(type.offset + 16) + 2)
        },
        Case("type without a typeSpec", .typeWithoutTypeSpec) { $0.bytes[$0.firstChild(0x0201).offset + 8] = 200 },
        // Entries (the first one of the first type chunk, and a style's map).
        Case("entry offset not a multiple of 4", .entryNotAligned) { t in let slot = t.firstEntry(map: false).slot; t.set32(slot, t.u32(slot) + 2) },
        Case("entry offset past its type", .entryPastEnd) { t in let first = t.firstEntry(map: false); t.set32(first.slot, UInt32(first.type.size)) },
        Case("entry of 4 bytes", .entryTooSmall) { t in t.set16(t.firstEntry(map: false).entry, 4) },
        Case("entry size past its type", .entrySizePastEnd) { t in t.set16(t.firstEntry(map: false).entry, 0xFFF0) },
        Case("value of 4 bytes", .valueTooSmall) { t in let entry = t.firstEntry(map: false).entry; t.set16(entry + Int(t.u16(entry)), 4) },
        Case("value size past its type", .valuePastEnd) { t in let entry = t.firstEntry(map: false).entry; t.set16(entry + Int(t.u16(entry)), 0xFFF0) },
        Case("map items not 4-byte aligned", .mapNotAligned) { t in t.set16(t.firstEntry(map: true).entry, 18) },
        Case("map of more items than fit", .mapPastEnd) { t in t.set32(t.firstEntry(map: true).entry + 12, 0x0FFF_FFFF) },
        // Library and overlayable chunks, appended to the package.
        Case("library header of 8 bytes", .libraryHeaderTooSmall) { $0.appendToPackage(Table.chunk(0x0203, header: [], body: [])) },
        Case("library of more entries than fit", .libraryEntriesPastEnd) { $0.appendToPackage(Table.chunk(0x0203, header: Table.le32(1), body: [])) },
        Case("library package ID 0x1ff", .libraryPackageIDOutOfRange) { $0.appendToPackage(Table.library(packageID: 0x1ff)) },
        Case("overlayable header of 1028 bytes", .overlayableHeaderTooSmall) { t in
            t.appendToPackage(Table.chunk(0x0204, header: [UInt8](repeating: 0, count: 1020), body: []))
        },
        Case("two overlayables of one name", .overlayableDuplicateName) { t in
            t.appendToPackage(Table.overlayable(name: "Shared", policies: []))
            t.appendToPackage(Table.overlayable(name: "Shared", policies: []))
        },
        Case("overlayable policy header of 12 bytes", .overlayablePolicyHeaderTooSmall) { t in
            t.appendToPackage(Table.overlayable(name: "Policies", policies: [Table.chunk(0x0205, header: Table.le32(1), body: [])]))
        },
        Case("overlayable policy of more entries than fit", .overlayablePolicyEntriesPastEnd) { t in
            t.appendToPackage(Table.overlayable(name: "Policies", policies: [Table.chunk(0x0205, header: Table.le32(1) + Table.le32(3), body: [])]))
        },
    ]

    let dir: URL
    /// The fixture APK's entries (name → uncompressed data) and its table.
    let entries: [(name: String, data: [UInt8])]
    let table: [UInt8]

    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("arsc-rules")
        var fixture = FixtureAPK()
        fixture.targetSdk = 29  // resources.arsc may be stored anywhere: the only finding is the table's
        fixture.strings["styled"] = "<b>bold</b> and <i>italic</i>"
        fixture.strings["plain"] = "plain"
        fixture.resources["values-fr/strings.xml"] = Array("<resources><string name=\"plain\">simple</string></resources>\n".utf8)
        fixture.resources["values/styles.xml"] = Array("""
            <resources><style name="Theme.Fixture" parent="@android:style/Theme.Material"><item name="android:colorAccent">#ff00ff</item></style></resources>
            """.utf8)
        let path = try fixture.build(in: dir, name: "fixture.apk")
        let archive = try APKArchive(path: path)
        entries = try archive.entries.map { ($0.name, try archive.uncompressedData(of: $0)) }
        table = try #require(entries.first { $0.name == "resources.arsc" }).data
    }

    /// The fixture with `table` as its resources.arsc (every entry stored).
    func apk(_ name: String, table: [UInt8]) throws -> String {
        var builder = ZipBuilder()
        for (entryName, data) in entries {
            let bytes = entryName == "resources.arsc" ? table : data
            builder.items.append(.init(name: entryName, data: bytes, crc: CRC32.checksum(bytes)))
        }
        let path = dir.appendingPathComponent(name).path
        try Data(builder.build()).write(to: URL(fileURLWithPath: path))
        return path
    }

    func writeTable(_ name: String, _ bytes: [UInt8]) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    var debugKeystore: String { dir.appendingPathComponent("debug.p12").path }

    /// The unmutated table (and one with a valid library and overlayable chunk appended) passes every check and
    /// every loader, and its APK signs: what fails below is the mutation.
    @Test func unmutatedTablesLoad() throws {
        #expect(ResourceTableLoadCheck.problem(in: table, minSdkVersion: { 21 }) == nil)
        let strict = try TestSupport.libandroidfwTable(try writeTable("intact.arsc", table), strict: true)
        #expect(strict.succeeded && strict.stdout == "OK\n", "\(strict)")
        var extended = try Table(table)
        extended.appendToPackage(Table.library(packageID: 0x02))
        extended.appendToPackage(Table.overlayable(name: "Themes", policies: [Table.chunk(0x0205, header: Table.le32(1) + Table.le32(1), body: Table.le32(0x7f02_0000))]))
        #expect(ResourceTableLoadCheck.problem(in: extended.bytes, minSdkVersion: { 21 }) == nil)
        let extendedStrict = try TestSupport.libandroidfwTable(try writeTable("extended.arsc", extended.bytes), strict: true)
        #expect(extendedStrict.succeeded, "\(extendedStrict)")
        let input = try apk("intact.apk", table: table)
        let out = dir.appendingPathComponent("intact-signed.apk").path
        let signed = try TestSupport.apkpatch(["sign", "--debug-keystore", debugKeystore, "--out", out, input])
        #expect(signed.succeeded, "\(signed)")
        let verified = try TestSupport.apkpatch(["verify", out])
        #expect(verified.succeeded, "\(verified)")
    }

    @Test("each rule: Android's loader refuses the table, verify reports it, sign and run write nothing", arguments: cases)
    func rule(_ rule: Case) throws {
        var mutated = try Table(table)
        try rule.mutate(&mutated)
        let bytes = mutated.bytes
        let problem = ResourceTableLoadCheck.problem(in: bytes, minSdkVersion: { 21 })
        #expect(problem?.code == rule.code, "\(rule): \(problem.map { "\($0.code): \($0)" } ?? "no problem found")")

        let name = rule.code.rawValue + "-" + String(rule.name.hashValue & 0xffff, radix: 16)
        let tablePath = try writeTable(name + ".arsc", bytes)
        let strict = try TestSupport.libandroidfwTable(tablePath, strict: true)
        switch rule.oracle {
        case .refuses:
            #expect(!strict.succeeded, "\(rule): libandroidfw loads it: \(strict)")
        case .losesResources:
            let before = try TestSupport.libandroidfwTable(try writeTable("intact-listing.arsc", table))
            let after = try TestSupport.libandroidfwTable(tablePath)
            let lost = Set(before.stdout.split(separator: "\n")).subtracting(after.stdout.split(separator: "\n"))
            #expect(before.succeeded && !lost.isEmpty, "\(rule): libandroidfw reads every resource: \(after)")
        }

        let input = try apk(name + ".apk", table: bytes)
        let verified = try TestSupport.apkpatch(["verify", "--json", input])
        #expect(verified.status == 1, "\(rule): \(verified)")
        let report = try JSONSerialization.jsonObject(with: Data(verified.stdout.utf8)) as? [String: Any]
        let install = (report?["installErrors"] as? [[String: Any]]) ?? []
        let finding = install.first { $0["code"] as? String == "INSTALL_RESOURCES_ARSC_MALFORMED" }
        let message = finding?["message"] as? String ?? ""
        #expect(problem.map { message.contains($0.detail) } == true, "\(rule): \(verified.stdout)")
        #expect((report?["installFix"] as? String)?.contains("rebuild resources.arsc") == true, "\(rule): \(verified.stdout)")

        for command in ["sign", "run"] {
            let out = dir.appendingPathComponent("\(name)-\(command).apk").path
            let arguments = command == "sign" ? ["sign", "--debug-keystore", debugKeystore, "--out", out, input]
                                              : ["run", input, "--debug-keystore", debugKeystore, "--out", out]
            let result = try TestSupport.apkpatch(arguments)
            #expect(result.status == 1 && result.stderr.contains("resources.arsc: ") && problem.map { result.stderr.contains($0.detail) } == true,
                    "\(command) \(rule): \(result)")
            #expect(!FileManager.default.fileExists(atPath: out), "\(command) \(rule) left its output")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix(".") }
            #expect(leftovers.isEmpty, "\(command) \(rule) left \(leftovers)")
        }
    }

    /// align copies entries as they are (zipalign does too, whatever the table holds): it refuses to make an APK of
    /// a table Android refuses, and leaves no output.
    @Test func alignRefuses() throws {
        var mutated = try Table(table)
        mutated.bytes[mutated.firstChild(0x0201).offset + 8] = 0
        let input = try apk("align-type-id-zero.apk", table: mutated.bytes)
        let out = dir.appendingPathComponent("align-type-id-zero-aligned.apk").path
        let result = try TestSupport.apkpatch(["align", "-f", "-p", "4", input, out])
        #expect(result.status == 1 && result.stderr.contains("resources.arsc: a type chunk has type ID 0"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// Dense entry offsets are skimmed sixteen at a time for NO_ENTRY: an entry alone among fifteen NO_ENTRY offsets,
    /// in a table as large as a real one, is still read and held to the entry rules. framework-res.apk's table (4.7 M
    /// dense offsets, 96% NO_ENTRY): the one entry of such a block is moved 2 bytes, off its 4-byte boundary; the
    /// fixture's types are too small to have a whole block.
    @Test func entryAloneInABlockOfAbsentOffsetsIsChecked() throws {
        let framework = try APKArchive(path: "/usr/share/android-framework-res/framework-res.apk")
        var mutated = try Table(try framework.uncompressedData(of: try #require(framework.entry(named: "resources.arsc"))))
        #expect(ResourceTableLoadCheck.problem(in: mutated.bytes, minSdkVersion: { 21 }) == nil)
        // The first block of sixteen offsets (from a type's first offset) holding exactly one entry, in a type that
        // also has a block without any.
        var found: (slot: Int, index: Int)?
        search: for type in mutated.children where type.type == 0x0201 && mutated.bytes[type.offset + 9] == 0 {
            let count = Int(mutated.u32(type.offset + 12)), offsets = type.offset + type.headerSize
            var sawEmptyBlock = false
            var single: (slot: Int, index: Int)?
            for block in 0..<(count / 16) {
                let present = (0..<16).filter { mutated.u32(offsets + 4 * (16 * block + $0)) != 0xFFFF_FFFF }
                if present.isEmpty { sawEmptyBlock = true }
                if present.count == 1 && single == nil { single = (offsets + 4 * (16 * block + present[0]), 16 * block + present[0]) }
                if sawEmptyBlock, let single {
                    found = single
                    break search
                }
            }
        }
        let target = try #require(found, "framework-res.apk's table has no block of sixteen offsets with one entry")
        mutated.set32(target.slot, mutated.u32(target.slot) + 2)
        let problem = ResourceTableLoadCheck.problem(in: mutated.bytes, minSdkVersion: { 21 })
        #expect(problem?.code == .entryNotAligned && problem?.detail.contains("entry \(target.index) ") == true, "\(String(describing: problem))")
        let strict = try TestSupport.libandroidfwTable(try writeTable("framework-entry-moved.arsc", mutated.bytes), strict: true)
        #expect(!strict.succeeded, "libandroidfw reads the moved entry: \(strict)")
    }

    /// The table is checked beside the copy (`sign`, `align`) rather than before it: the refusal still comes before
    /// anything is published and still wins over what the copy runs into meanwhile (here a keystore password that
    /// fails, found while the entries are copied), and neither the output nor a temporary file is left, also when
    /// the copy had megabytes to write.
    @Test func refusalBesideTheCopyWinsAndLeavesNothing() throws {
        var mutated = try Table(table)
        mutated.bytes[mutated.firstChild(0x0201).offset + 8] = 0
        var builder = ZipBuilder()
        let large = [UInt8](repeating: 0x5a, count: 6 << 20)
        for (entryName, data) in entries + [("assets/large.bin", large)] {
            let bytes = entryName == "resources.arsc" ? mutated.bytes : data
            builder.items.append(.init(name: entryName, data: bytes, crc: CRC32.checksum(bytes)))
        }
        let work = dir.appendingPathComponent("beside-copy")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let input = dir.appendingPathComponent("beside-copy-input.apk").path
        try Data(builder.build()).write(to: URL(fileURLWithPath: input))
        let keystore = dir.appendingPathComponent("beside-copy.p12").path
        try TestSupport.makeKeyStore(at: keystore, password: "right-password", dname: "CN=Beside Copy")
        let expected = "resources.arsc: a type chunk has type ID 0"
        for command in ["sign", "sign-wrong-password", "align"] {
            let out = work.appendingPathComponent("\(command).apk").path
            let result: TestSupport.ProcessResult
            switch command {
            case "align": result = try TestSupport.apkpatch(["align", "-f", "-p", "4", input, out])
            default:
                result = try TestSupport.apkpatch(["sign", "--ks", keystore, "--ks-pass", "env:BESIDE_COPY_PASS", "--out", out, input],
                                                  environment: ["BESIDE_COPY_PASS": command == "sign" ? "right-password" : "wrong-password"])
            }
            #expect(result.status == 1 && result.stderr.contains(expected), "\(command): \(result)")
            #expect(!result.stderr.localizedCaseInsensitiveContains("password"), "\(command): \(result)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: work.path).isEmpty, "\(command) left files")
        }
    }

    /// One signed APK end to end: apksigner signs whatever the table holds and verifies it; apkpatch verify fails it
    /// on the table alone (the same APK with the intact table verifies).
    @Test func verifyFailsAnAPKApksignerVerifies() throws {
        var mutated = try Table(table)
        mutated.set32(mutated.firstChild(0x0202).offset + 12, 70_000)
        for (label, bytes, verifies) in [("intact", table, true), ("mutated", mutated.bytes, false)] {
            let input = try apk("apksigner-\(label).apk", table: bytes)
            let signed = dir.appendingPathComponent("apksigner-\(label)-signed.apk").path
            let keystore = dir.appendingPathComponent("release.p12").path
            if !FileManager.default.fileExists(atPath: keystore) {
                try TestSupport.makeKeyStore(at: keystore, password: "arsc-rules", dname: "CN=Table Rules")
            }
            let sign = try TestSupport.run("apksigner", ["sign", "--ks", keystore, "--ks-pass", "env:ARSC_KS_PASS", "--out", signed, input],
                                           environment: ["ARSC_KS_PASS": "arsc-rules"])
            try #require(sign.succeeded, "\(sign)")
            #expect(try TestSupport.run("apksigner", ["verify", signed]).succeeded)
            let verified = try TestSupport.apkpatch(["verify", signed])
            #expect(verified.succeeded == verifies, "\(label): \(verified)")
            if !verifies {
                #expect(verified.stderr.contains("resources.arsc: typeSpec 0x1 declares 70000 entries") && verified.stderr.contains("To fix: rebuild resources.arsc"), "\(verified)")
            }
        }
    }
}

/// An aapt-built table opened for mutation: where its chunks are, and little-endian reads and writes. Independent
/// of the code under test: the layout is read straight from the bytes, as `ResourceTypes.h` gives it.
struct Table: Sendable {
    struct Chunk: Sendable { let offset: Int, type: UInt16, headerSize: Int, size: Int }
    var bytes: [UInt8]
    /// Offsets of the global string pool and of the (only) package chunk.
    let globalPool: Int
    let package: Int
    /// The package's chunks, in order.
    let children: [Chunk]

    init(_ bytes: [UInt8]) throws {
        self.bytes = bytes
        func chunk(_ offset: Int) -> Chunk {
            Chunk(offset: offset, type: Self.u16(bytes, offset), headerSize: Int(Self.u16(bytes, offset + 2)), size: Int(Self.u32(bytes, offset + 4)))
        }
        let tableHeader = Int(Self.u16(bytes, 2))
        globalPool = tableHeader
        let pool = chunk(globalPool)
        try #require(pool.type == 0x0001)
        package = globalPool + pool.size
        let packageChunk = chunk(package)
        try #require(packageChunk.type == 0x0200 && package + packageChunk.size == bytes.count)
        var children: [Chunk] = []
        var offset = package + packageChunk.headerSize
        while offset < package + packageChunk.size {
            let child = chunk(offset)
            children.append(child)
            offset += child.size
        }
        self.children = children
    }

    static func u16(_ bytes: [UInt8], _ offset: Int) -> UInt16 { UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8 }
    static func u32(_ bytes: [UInt8], _ offset: Int) -> UInt32 { UInt32(u16(bytes, offset)) | UInt32(u16(bytes, offset + 2)) << 16 }
    static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    func u16(_ offset: Int) -> UInt16 { Self.u16(bytes, offset) }
    func u32(_ offset: Int) -> UInt32 { Self.u32(bytes, offset) }
    mutating func set16(_ offset: Int, _ value: UInt16) { bytes[offset] = UInt8(value & 0xff); bytes[offset + 1] = UInt8(value >> 8) }
    mutating func set32(_ offset: Int, _ value: UInt32) { bytes.replaceSubrange(offset..<offset + 4, with: Self.le32(value)) }

    func firstChild(_ type: UInt16) -> Chunk { children.first { $0.type == type }! }
    /// The first entry of a (dense) type chunk that is a map (`map`: size 16 or more) or a simple value: its type
    /// chunk, where its offset is, and where it is.
    func firstEntry(map: Bool) -> (type: Chunk, slot: Int, entry: Int) {
        for type in children where type.type == 0x0201 && bytes[type.offset + 9] == 0 {
            for index in 0..<Int(u32(type.offset + 12)) {
                let slot = type.offset + type.headerSize + 4 * index
                guard u32(slot) != 0xFFFF_FFFF else { continue }
                let entry = type.offset + Int(u32(type.offset + 16)) + Int(u32(slot))
                if (u16(entry) >= 16) == map { return (type, slot, entry) }
            }
        }
        fatalError("the fixture's table has no \(map ? "map" : "simple") entry")
    }

    /// A chunk: type, header (after the 8-byte chunk header) and body.
    static func chunk(_ type: UInt16, header: [UInt8], body: [UInt8]) -> [UInt8] {
        let headerSize = 8 + header.count, size = headerSize + body.count
        return [UInt8(type & 0xff), UInt8(type >> 8), UInt8(headerSize & 0xff), UInt8(headerSize >> 8)] + le32(UInt32(size)) + header + body
    }
    /// A RES_TABLE_LIBRARY chunk naming one library.
    static func library(packageID: UInt32) -> [UInt8] {
        let name = Array("com.example.lib".utf16).flatMap { [UInt8($0 & 0xff), UInt8($0 >> 8)] }
        return chunk(0x0203, header: le32(1), body: le32(packageID) + name + [UInt8](repeating: 0, count: 256 - name.count))
    }
    /// A RES_TABLE_OVERLAYABLE chunk with these policy chunks.
    static func overlayable(name: String, policies: [[UInt8]]) -> [UInt8] {
        let encoded = Array(name.utf16).flatMap { [UInt8($0 & 0xff), UInt8($0 >> 8)] }
        let header = encoded + [UInt8](repeating: 0, count: 1024 - encoded.count)
        return chunk(0x0204, header: header, body: policies.flatMap { $0 })
    }
    /// Appends `chunk` at the end of the package, growing the package and the table.
    mutating func appendToPackage(_ chunk: [UInt8]) {
        bytes += chunk
        set32(package + 4, u32(package + 4) + UInt32(chunk.count))
        set32(4, u32(4) + UInt32(chunk.count))
    }
}
