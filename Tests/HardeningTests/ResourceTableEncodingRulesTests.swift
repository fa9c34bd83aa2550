import APKCore
import BinaryXML
import Foundation
import Testing
import TestSupport
import ZlibWrapper

/// `resources.arsc` encodings that only newer devices read (issue 19, "Outputs that install"): sparse types
/// (`FLAG_SPARSE`, Android 8.0), 16-bit entry offsets (`FLAG_OFFSET16`) and compact entries (`FLAG_COMPACT`), both
/// Android 14. aapt2 writes them only when the APK's minSdkVersion (or, for sparse types, the configuration) is at
/// that level; a table moved into an APK with a lower minSdkVersion installs on devices that cannot read it. Each
/// case builds the APKs with aapt2 at test time and checks that `ResourceTableLoadCheck` names the rule below the
/// level and accepts the table from it on (and when the manifest declares no minSdkVersion, as aapt2 does), that
/// `verify` reports INSTALL_RESOURCES_ARSC_ABOVE_MIN_SDK with advice whose command works, and that `sign` and `run`
/// write nothing.
///
/// What the oracle can confirm: `Tests/Oracles/arsc-check.cc` is Debian's Android 10 libandroidfw. It refuses the
/// 16-bit-offset table (its `VerifyResTableType` takes the offsets for 32-bit ones, as Android 9 to 13 do) and the
/// compact entry (read as a full entry, its size is its key index). It reads sparse types (Android 8.0 and later
/// do), so for those the level is confirmed by aapt2 itself, which writes the type sparse at minSdkVersion 26 and
/// dense at 21. Staged-alias chunks (Android 12+) are unknown to it: it loads every staged-alias case, and the rules
/// are LoadedArsc's of Android 12 and later (`LoadedPackage::Load`, RES_TABLE_STAGED_ALIAS_TYPE).
@Suite(.removesTemporaryDirectories) struct ResourceTableEncodingRulesTests {
    typealias Code = ResourceTableProblem.Code

    let dir: URL
    /// aapt2 builds of one app with sparse encoding enabled, by minSdkVersion: entries (name → data) and table.
    let builds: [Int: (entries: [(name: String, data: [UInt8])], table: [UInt8])]

    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("arsc-encodings")
        let res = dir.appendingPathComponent("res")
        try FileManager.default.createDirectory(at: res.appendingPathComponent("values"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: res.appendingPathComponent("values-fr"), withIntermediateDirectories: true)
        // Four of five strings have no French value: below aapt2's threshold, the values-fr type is sparse.
        try Data("""
            <resources><string name="app_name">Encodings</string><string name="a">Alpha</string><string name="b">Beta</string>
            <string name="c">Gamma</string><string name="d">Delta</string></resources>
            """.utf8).write(to: res.appendingPathComponent("values/strings.xml"))
        try Data("<resources><string name=\"c\">Gamma FR</string></resources>\n".utf8).write(to: res.appendingPathComponent("values-fr/strings.xml"))
        let compiled = dir.appendingPathComponent("compiled.zip").path
        let compile = try TestSupport.run("aapt2", ["compile", "--dir", res.path, "-o", compiled])
        try #require(compile.succeeded, "\(compile)")
        var builds: [Int: (entries: [(name: String, data: [UInt8])], table: [UInt8])] = [:]
        for level in [21, 26, 34] {
            let manifest = dir.appendingPathComponent("AndroidManifest-\(level).xml")
            try Data("""
                <manifest xmlns:android="http://schemas.android.com/apk/res/android" package="com.example.encodings">
                  <uses-sdk android:minSdkVersion="\(level)" android:targetSdkVersion="29"/>
                  <application android:label="@string/app_name"/>
                </manifest>
                """.utf8).write(to: manifest)
            let apk = dir.appendingPathComponent("min\(level).apk").path
            let link = try TestSupport.run("aapt2", ["link", "-o", apk, "-I", TestSupport.frameworkRes, "--manifest", manifest.path,
                                                     "--enable-sparse-encoding", compiled])
            try #require(link.succeeded, "\(link)")
            let archive = try APKArchive(path: apk)
            let entries: [(name: String, data: [UInt8])] = try archive.entries.map { ($0.name, try archive.uncompressedData(of: $0)) }
            let table = try #require(entries.first(where: { $0.name == "resources.arsc" }))
            builds[level] = (entries, table.data)
        }
        self.builds = builds
    }

    /// The build for minSdkVersion `level` with `table` as its resources.arsc (every entry stored).
    func apk(_ name: String, level: Int, table: [UInt8]) throws -> String {
        var builder = ZipBuilder()
        for (entryName, data) in try #require(builds[level]).entries {
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

    /// The type chunks of `table` whose flags byte has `flag`.
    static func types(in table: Table, flagged flag: UInt8) -> [Table.Chunk] {
        table.children.filter { $0.type == 0x0201 && table.bytes[$0.offset + 9] & flag != 0 }
    }

    /// The first dense type of `table` rewritten as aapt2 writes it with compact entries: 16-bit offsets (entry
    /// offset / 4, 0xFFFF for none), padded to 4 bytes, then the entries as they were.
    static func withOffset16(_ table: [UInt8]) throws -> [UInt8] {
        let t = try Table(table)
        let type = try #require(t.children.first { $0.type == 0x0201 && t.bytes[$0.offset + 9] == 0 })
        let count = Int(t.u32(type.offset + 12)), entriesStart = Int(t.u32(type.offset + 16))
        var chunk = Array(t.bytes[type.offset..<type.offset + type.headerSize])
        for index in 0..<count {
            let offset = t.u32(type.offset + type.headerSize + 4 * index)
            let short = offset == 0xFFFF_FFFF ? UInt16(0xFFFF) : UInt16(offset / 4)
            chunk += [UInt8(short & 0xff), UInt8(short >> 8)]
        }
        while chunk.count % 4 != 0 { chunk.append(0) }
        let newStart = chunk.count
        chunk += t.bytes[type.offset + entriesStart..<type.offset + type.size]
        chunk[9] |= 0x02
        chunk.replaceSubrange(4..<8, with: Table.le32(UInt32(chunk.count)))
        chunk.replaceSubrange(16..<20, with: Table.le32(UInt32(newStart)))
        let delta = UInt32(type.size - chunk.count)
        var shrunk = t
        shrunk.set32(t.package + 4, t.u32(t.package + 4) - delta)
        shrunk.set32(4, t.u32(4) - delta)
        shrunk.bytes.replaceSubrange(type.offset..<type.offset + type.size, with: chunk)
        return try Table(shrunk.bytes).bytes
    }

    /// The first entry of the first dense type, a simple value with a key index below 8, in the compact form of
    /// Android 14 (`ResTable_entry::compact`: key u16, flags u16 with FLAG_COMPACT and the data type in its high
    /// byte, data u32), as aapt2 writes it with compact entries.
    static func withCompactEntry(_ table: [UInt8]) throws -> [UInt8] {
        var t = try Table(table)
        let first = t.firstEntry(map: false)
        let key = t.u32(first.entry + 4), dataType = t.bytes[first.entry + 8 + 3], data = t.u32(first.entry + 8 + 4)
        try #require(key < 8, "the entry's size field would read as its key index, below 8")
        t.set16(first.entry, UInt16(key))
        t.set16(first.entry + 2, t.u16(first.entry + 2) | 0x0008 | UInt16(dataType) << 8)
        t.set32(first.entry + 4, data)
        return t.bytes
    }

    struct EncodingCase: CustomStringConvertible, Sendable {
        let name: String, code: Code, level: Int
        /// The finding's `resourceTableEncoding` in `verify --json`: the flag and aapt2's option that writes it.
        let flag: String, aapt2Option: String
        let oracleRefuses: Bool
        let table: @Sendable (ResourceTableEncodingRulesTests) throws -> [UInt8]
        var description: String { name }
    }

    static let encodingCases: [EncodingCase] = [
        EncodingCase(name: "sparse type (aapt2, minSdkVersion 26)", code: .sparseTypeBeforeAndroid8, level: 26,
                     flag: "FLAG_SPARSE", aapt2Option: "--enable-sparse-encoding", oracleRefuses: false) {
            try #require($0.builds[26]).table
        },
        EncodingCase(name: "16-bit entry offsets", code: .offset16TypeBeforeAndroid14, level: 34,
                     flag: "FLAG_OFFSET16", aapt2Option: "--enable-compact-entries", oracleRefuses: true) {
            try withOffset16(try #require($0.builds[21]).table)
        },
        EncodingCase(name: "compact entry", code: .compactEntryBeforeAndroid14, level: 34,
                     flag: "FLAG_COMPACT", aapt2Option: "--enable-compact-entries", oracleRefuses: true) {
            try withCompactEntry(try #require($0.builds[21]).table)
        },
    ]

    /// aapt2 decides the sparse level as the rule does: the same resources are sparse at minSdkVersion 26 and 34,
    /// dense at 21; the tables it writes load in Android's loader and pass the checks in their own APKs.
    @Test func aapt2WritesSparseTypesFromAPI26() throws {
        for (level, expectSparse) in [(21, false), (26, true), (34, true)] {
            let table = try #require(builds[level]).table
            #expect(Self.types(in: try Table(table), flagged: 0x01).isEmpty != expectSparse, "minSdkVersion \(level)")
            #expect(ResourceTableLoadCheck.problem(in: table, minSdkVersion: { level }) == nil, "minSdkVersion \(level)")
            let strict = try TestSupport.libandroidfwTable(try writeTable("aapt2-min\(level).arsc", table), strict: true)
            #expect(strict.succeeded && strict.stdout == "OK\n", "minSdkVersion \(level): \(strict)")
        }
    }

    @Test("each encoding: refused below its level, accepted from it", arguments: encodingCases)
    func encoding(_ rule: EncodingCase) throws {
        let table = try rule.table(self)
        let problem = ResourceTableLoadCheck.problem(in: table, minSdkVersion: { 21 })
        #expect(problem?.code == rule.code, "\(rule): \(problem.map { "\($0.code): \($0)" } ?? "no problem found")")
        #expect(problem?.isAboveMinSdkVersion == true)
        #expect(ResourceTableLoadCheck.problem(in: table, minSdkVersion: { rule.level - 1 })?.code == rule.code, "\(rule)")
        #expect(ResourceTableLoadCheck.problem(in: table, minSdkVersion: { rule.level }) == nil, "\(rule)")
        #expect(ResourceTableLoadCheck.problem(in: table, minSdkVersion: { nil }) == nil, "\(rule): no minSdkVersion declared")

        let name = rule.code.rawValue
        let strict = try TestSupport.libandroidfwTable(try writeTable(name + ".arsc", table), strict: true)
        #expect(strict.succeeded != rule.oracleRefuses, "\(rule): Android 10's libandroidfw: \(strict)")

        let input = try apk(name + ".apk", level: 21, table: table)
        let verified = try TestSupport.apkpatch(["verify", "--json", input])
        #expect(verified.status == 1, "\(rule): \(verified)")
        let report = try JSONSerialization.jsonObject(with: Data(verified.stdout.utf8)) as? [String: Any]
        let finding = ((report?["installErrors"] as? [[String: Any]]) ?? []).first { $0["code"] as? String == "INSTALL_RESOURCES_ARSC_ABOVE_MIN_SDK" }
        let message = finding?["message"] as? String ?? ""
        #expect(problem.map { message.contains($0.detail) } == true && message.contains("minSdkVersion to \(rule.level)"), "\(rule): \(verified.stdout)")
        // The encoding and its level are data on the finding, and the advice is made from them.
        let encoding = finding?["resourceTableEncoding"] as? [String: Any]
        #expect(encoding?["flag"] as? String == rule.flag && encoding?["requiredMinSdkVersion"] as? Int == rule.level
                && encoding?["aapt2Option"] as? String == rule.aapt2Option, "\(rule): \(verified.stdout)")
        let advice = report?["installFix"] as? String ?? ""
        #expect(advice.contains("minSdkVersion: \(rule.level)") && advice.contains("without aapt2's \(rule.aapt2Option) "), "\(rule): \(verified.stdout)")
        #expect((report?["installErrors"] as? [[String: Any]] ?? []).filter { $0["resourceTableEncoding"] != nil }.count == 1, "only on its finding")

        for command in ["sign", "run"] {
            let out = dir.appendingPathComponent("\(name)-\(command).apk").path
            let arguments = command == "sign" ? ["sign", "--debug-keystore", debugKeystore, "--out", out, input]
                                              : ["run", input, "--debug-keystore", debugKeystore, "--out", out]
            let result = try TestSupport.apkpatch(arguments)
            #expect(result.status == 1 && problem.map { result.stderr.contains($0.detail) } == true
                    && result.stderr.contains("minSdkVersion to \(rule.level)"), "\(command) \(rule): \(result)")
            #expect(!FileManager.default.fileExists(atPath: out), "\(command) \(rule) left its output")
        }

        // At its level the same table is accepted: verify finds nothing in it, and sign writes the APK.
        let atLevel = try apk(name + "-at-level.apk", level: rule.level == 26 ? 26 : 34, table: table)
        let signed = dir.appendingPathComponent("\(name)-at-level-signed.apk").path
        let sign = try TestSupport.apkpatch(["sign", "--debug-keystore", debugKeystore, "--out", signed, atLevel])
        #expect(sign.succeeded, "\(rule): \(sign)")
        let verifiedAtLevel = try TestSupport.apkpatch(["verify", signed])
        #expect(verifiedAtLevel.succeeded, "\(rule): \(verifiedAtLevel)")
    }

    /// verify's advice for a sparse table below API 26 is a command that works: run with a patch that raises
    /// minSdkVersion writes an APK that apksigner and verify accept, whose manifest says 26 (aapt dump badging) and
    /// whose table Android's loader reads.
    @Test func theAdvisedCommandRaisesMinSdkVersion() throws {
        let input = try apk("sparse-below-26.apk", level: 21, table: try #require(builds[26]).table)
        let verified = try TestSupport.apkpatch(["verify", "--json", input])
        let report = try JSONSerialization.jsonObject(with: Data(verified.stdout.utf8)) as? [String: Any]
        let advice = try #require(report?["installFix"] as? String, "\(verified)")
        let command = try #require(advice.range(of: "mkdir -p ").map { String(advice[$0.lowerBound...]) }?.components(separatedBy: " (add your signing options)").first)
        let binary = URL(fileURLWithPath: TestSupport.apkpatchBinary).deletingLastPathComponent().path
        let fixed = try TestSupport.run("sh", ["-c", command + " --debug-keystore " + debugKeystore], environment: [
            "PATH": binary + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
        ], currentDirectory: dir.path)
        #expect(fixed.succeeded, "\(command): \(fixed)")
        let output = dir.appendingPathComponent("sparse-below-26-fixed.apk").path
        #expect(try TestSupport.apkpatch(["verify", output]).succeeded)
        #expect(try TestSupport.run("apksigner", ["verify", output]).succeeded)
        #expect(try TestSupport.run("aapt", ["dump", "badging", output]).stdout.contains("sdkVersion:'26'"))
        let table = try writeTable("sparse-fixed.arsc", try APKArchive(path: output).uncompressedData(of: try #require(APKArchive(path: output).entry(named: "resources.arsc"))))
        #expect(try TestSupport.libandroidfwTable(table, strict: true).stdout == "OK\n")
    }

    struct AliasCase: CustomStringConvertible, Sendable {
        let name: String, code: Code?
        let chunk: [UInt8]
        var description: String { name }
    }

    /// A RES_TABLE_STAGED_ALIAS chunk (header: count u32; then stagedResId u32, finalizedResId u32 pairs).
    static func stagedAlias(count: UInt32, _ pairs: [(UInt32, UInt32)]) -> [UInt8] {
        Table.chunk(0x0206, header: Table.le32(count), body: pairs.flatMap { Table.le32($0.0) + Table.le32($0.1) })
    }

    static let aliasCases: [AliasCase] = [
        AliasCase(name: "two aliases", code: nil, chunk: stagedAlias(count: 2, [(0x0101_0001, 0x0101_0600), (0x0101_0002, 0x0101_0601)])),
        AliasCase(name: "header of 8 bytes", code: .stagedAliasHeaderTooSmall, chunk: Table.chunk(0x0206, header: [], body: [])),
        AliasCase(name: "more aliases than fit", code: .stagedAliasEntriesPastEnd, chunk: stagedAlias(count: 2, [(0x0101_0001, 0x0101_0600)])),
        AliasCase(name: "a finalized ID twice", code: .stagedAliasDuplicateFinalizedID,
                  chunk: stagedAlias(count: 2, [(0x0101_0001, 0x0101_0600), (0x0101_0002, 0x0101_0600)])),
        AliasCase(name: "a staged ID twice", code: .stagedAliasDuplicateStagedID,
                  chunk: stagedAlias(count: 2, [(0x0101_0001, 0x0101_0600), (0x0101_0001, 0x0101_0601)])),
    ]

    /// Staged aliases in the framework's package (ID 0x01): Android 12+ refuses the table for each broken rule;
    /// in an app's package (0x7f) the loader ignores the chunk, and so does the check.
    @Test("staged-alias chunks", arguments: aliasCases)
    func stagedAliases(_ rule: AliasCase) throws {
        var framework = try Table(try #require(builds[21]).table)
        framework.set32(framework.package + 8, 0x01)
        framework.appendToPackage(rule.chunk)
        let problem = ResourceTableLoadCheck.problem(in: framework.bytes, minSdkVersion: { 21 })
        #expect(problem?.code == rule.code, "\(rule): \(problem.map { "\($0.code): \($0)" } ?? "no problem found")")

        var app = try Table(try #require(builds[21]).table)
        app.appendToPackage(rule.chunk)
        #expect(ResourceTableLoadCheck.problem(in: app.bytes, minSdkVersion: { 21 }) == nil, "\(rule) in package 0x7f")

        let name = "alias-" + (rule.code?.rawValue ?? "valid")
        let strict = try TestSupport.libandroidfwTable(try writeTable(name + ".arsc", framework.bytes), strict: true)
        #expect(strict.succeeded, "\(rule): Android 10 predates staged aliases and skips the chunk: \(strict)")

        let input = try apk(name + ".apk", level: 21, table: framework.bytes)
        let verified = try TestSupport.apkpatch(["verify", "--json", input])
        let report = try JSONSerialization.jsonObject(with: Data(verified.stdout.utf8)) as? [String: Any]
        let findings = ((report?["installErrors"] as? [[String: Any]]) ?? []).filter { $0["code"] as? String == "INSTALL_RESOURCES_ARSC_MALFORMED" }
        if let problem {
            #expect(findings.count == 1 && (findings.first?["message"] as? String)?.contains(problem.detail) == true, "\(rule): \(verified.stdout)")
            let out = dir.appendingPathComponent(name + "-signed.apk").path
            let signed = try TestSupport.apkpatch(["sign", "--debug-keystore", debugKeystore, "--out", out, input])
            #expect(signed.status == 1 && signed.stderr.contains(problem.detail), "\(rule): \(signed)")
            #expect(!FileManager.default.fileExists(atPath: out), "\(rule): sign left its output")
        } else {
            #expect(report != nil && findings.isEmpty, "\(rule): \(verified.stdout)")
        }
    }
}
