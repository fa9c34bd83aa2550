import APKCore
import BinaryXML
import Foundation
import OpenSSLWrapper
import Testing
import TestSupport
import ZlibWrapper

/// A deflated resources.arsc (targetSdk below 30 allows one; aapt's own APKs often have it) is inflated once by
/// `sign`: the table's load check walks it as it inflates, and the same bytes give its v1 digest and its CRC-32 and
/// stream checks, which the section copy leaves to the check. These tests hold the check to the copy's duties: the
/// signed APK's JAR signature covers the table (apksigner checks it: the fixture's minSdkVersion is 21), a damaged
/// stream is refused as the copy refused it, and a table Android refuses writes nothing.
@Suite(.removesTemporaryDirectories) struct DeflatedResourceTableTests {
    let dir: URL
    /// The aapt-built fixture's entries (name → uncompressed data) and its table.
    let entries: [(name: String, data: [UInt8])]
    let table: [UInt8]

    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("arsc-deflated")
        var fixture = FixtureAPK()
        fixture.targetSdk = 29  // a deflated table is allowed: the findings below are the table's own
        for index in 0..<200 { fixture.strings["s\(index)"] = "string number \(index)" }
        fixture.resources["values-fr/strings.xml"] = Array("<resources><string name=\"s1\">chaîne</string></resources>\n".utf8)
        let archive = try APKArchive(path: try fixture.build(in: dir, name: "fixture.apk"))
        entries = try archive.entries.map { ($0.name, try archive.uncompressedData(of: $0)) }
        table = try #require(entries.first { $0.name == "resources.arsc" }).data
    }

    /// The fixture with `table` deflated as its resources.arsc (`compressed` after the stream, `crc` declared),
    /// every other entry stored.
    func apk(_ name: String, table: [UInt8], trailing: [UInt8] = [], crc: UInt32? = nil, declaredSize: Int? = nil) throws -> String {
        var builder = ZipBuilder()
        let tableIndex = try #require(entries.firstIndex { $0.name == "resources.arsc" })
        for (index, (entryName, data)) in entries.enumerated() {
            let bytes = index == tableIndex ? try Deflate.compress(table, level: 9) + trailing : data
            builder.items.append(.init(name: entryName, data: bytes, crc: index == tableIndex ? crc ?? CRC32.checksum(table) : CRC32.checksum(data)))
        }
        let deflate = { (index: Int, entry: inout ZipEntry) in
            guard index == tableIndex else { return }
            entry.method = .deflated
            entry.uncompressedSize = Int64(declaredSize ?? table.count)
        }
        let path = dir.appendingPathComponent(name).path
        try Data(builder.build(mutateLocal: deflate, mutateCentral: deflate)).write(to: URL(fileURLWithPath: path))
        return path
    }

    var debugKeystore: String { dir.appendingPathComponent("debug.p12").path }

    /// The check's inflation gives every byte of the table once, in order, whether the walk reads all of it or stops
    /// at a problem: what it hands on is what the copy would have digested.
    @Test func theCheckSeesTheWholeTable() throws {
        var broken = table
        broken.replaceSubrange(8..<12, with: [2, 0, 0, 0])  // two packages declared, one held: found at the end
        var early = table
        early.replaceSubrange(12 + 2..<12 + 4, with: [4, 0])  // the global string pool's header size: found first
        for (name, bytes, code) in [("intact", table, nil), ("fewer packages", broken, ResourceTableProblem.Code.fewerPackagesThanDeclared),
                                    ("pool header", early, .chunkHeaderTooSmall)] {
            let compressed = try Deflate.compress(bytes, level: 9)
            let entry = ZipEntry(nameBytes: Array("resources.arsc".utf8), method: .deflated, crc32: CRC32.checksum(bytes),
                                 compressedSize: Int64(compressed.count), uncompressedSize: Int64(bytes.count), lastModifiedTime: 0, lastModifiedDate: 0)
            var seen: [UInt8] = []
            let found = try compressed.withUnsafeBytes { raw in
                try ResourceTableLoadCheck.problem(inflating: raw, of: entry, minSdkVersion: { 21 }) { seen += $0 }
            }
            #expect(found.problem?.code == code, "\(name): \(found.problem.map { "\($0)" } ?? "no problem")")
            #expect(found.problem?.code == ResourceTableLoadCheck.problem(in: bytes, minSdkVersion: { 21 })?.code, "\(name)")
            #expect(seen == bytes, "\(name): \(seen.count) of \(bytes.count) bytes seen")
            #expect(found.streamEnd == compressed.count, "\(name)")
        }
    }

    /// sign takes the table's v1 digest from the check's inflation: the JAR signature lists the table's SHA-256, and
    /// apksigner (which checks the JAR signature at minSdkVersion 21) and verify accept the APK.
    @Test func signDigestsTheTableFromTheCheck() throws {
        let input = try apk("deflated.apk", table: table)
        let out = dir.appendingPathComponent("deflated-signed.apk").path
        let signed = try TestSupport.apkpatch(["sign", "--debug-keystore", debugKeystore, "--out", out, input])
        #expect(signed.succeeded, "\(signed)")
        let archive = try APKArchive(path: out)
        let manifest = String(decoding: try archive.uncompressedData(of: try #require(archive.entry(named: "META-INF/MANIFEST.MF"))), as: UTF8.self)
        let digest = Data(Digest.hash(table, with: .sha256)).base64EncodedString()
        #expect(manifest.contains("Name: resources.arsc\r\nSHA-256-Digest: \(digest)\r\n"), "\(manifest.prefix(600))")
        let apksigner = try TestSupport.run("apksigner", ["verify", "-v", out])
        #expect(apksigner.succeeded && apksigner.stdout.contains("Verified using v1 scheme (JAR signing): true"), "\(apksigner)")
        #expect(try TestSupport.apkpatch(["verify", out]).succeeded)
        // Without v1 the check still inflates it alone, and the block signatures cover it.
        let v2 = dir.appendingPathComponent("deflated-v2.apk").path
        let signedV2 = try TestSupport.apkpatch(["sign", "--debug-keystore", debugKeystore, "--v1-signing-enabled", "false", "--min-sdk-version", "24",
                                                 "--out", v2, input])
        #expect(signedV2.succeeded, "\(signedV2)")
        #expect(try TestSupport.run("apksigner", ["verify", "--min-sdk-version", "24", v2]).succeeded)
    }

    struct Damage: CustomStringConvertible, Sendable {
        let name: String, expected: String
        let trailing: [UInt8], crc: UInt32?, declaredSize: Int?
        var description: String { name }
    }

    static let damages: [Damage] = [
        Damage(name: "wrong CRC-32", expected: "has CRC-32", trailing: [], crc: 0x1234_5678, declaredSize: nil),
        Damage(name: "bytes after the stream", expected: "deflate stream ends after", trailing: [1, 2, 3, 4], crc: nil, declaredSize: nil),
        Damage(name: "shorter than declared", expected: "does not inflate as its header declares", trailing: [], crc: nil, declaredSize: -1),
        Damage(name: "longer than declared", expected: "does not inflate as its header declares", trailing: [], crc: nil, declaredSize: -2),
    ]

    /// A damaged deflated table is refused as the copy refuses any damaged entry, with the same words, whether the
    /// signing has v1 (the check's digest) or not, and nothing is written.
    @Test("a damaged deflated table is refused, nothing written", arguments: damages)
    func damaged(_ damage: Damage) throws {
        let size = damage.declaredSize.map { $0 == -1 ? table.count + 4 : table.count - 4 }
        let input = try apk("damaged-\(damage.name.hashValue & 0xffff).apk", table: table, trailing: damage.trailing, crc: damage.crc, declaredSize: size)
        for extra in [[], ["--v1-signing-enabled", "false", "--min-sdk-version", "24"]] {
            let out = dir.appendingPathComponent("damaged-\(extra.count).apk").path
            let result = try TestSupport.apkpatch(["sign", "--debug-keystore", debugKeystore] + extra + ["--out", out, input])
            #expect(result.status == 1 && result.stderr.contains("resources.arsc") && result.stderr.contains(damage.expected), "\(damage) \(extra): \(result)")
            #expect(!FileManager.default.fileExists(atPath: out), "\(damage) \(extra): output left")
        }
    }

    /// A deflated table that breaks a loader rule is refused with the rule, before anything is published.
    @Test func aBrokenDeflatedTableIsRefused() throws {
        var broken = table
        broken.replaceSubrange(8..<12, with: [2, 0, 0, 0])
        let input = try apk("broken.apk", table: broken)
        let out = dir.appendingPathComponent("broken-signed.apk").path
        let result = try TestSupport.apkpatch(["sign", "--debug-keystore", debugKeystore, "--out", out, input])
        #expect(result.status == 1 && result.stderr.contains("declares 2 packages but holds 1"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
