import APKCore
import ZlibWrapper
import Foundation
import Testing
import TestSupport

/// `verify SET` where an APK of the set cannot be opened (not a ZIP, empty, cut short, a layout every other command
/// refuses, no manifest): the set fails with that APK's reason beside the verifier's own report of it, and with
/// `--json` the output stays one JSON object (exit 1), in a folder and in a container, whether the bad APK is a
/// split or the base. A set that cannot be read at all (a container that is not a ZIP, APKs that are not one
/// app) is one JSON object too.
@Suite(.serialized, .removesTemporaryDirectories) struct SetVerifyUnreadableTests {
    let scratch: URL
    let fixture: SplitSetFixture
    /// The fixture's APKs signed by one key (file name in a folder → path).
    let signed: [String: String]

    init() throws {
        scratch = try TestSupport.makeTemporaryDirectory("apkpatch-set-unreadable")
        fixture = try SplitSetFixture(in: scratch)
        let keystore = scratch.appendingPathComponent("debug.p12").path
        let folder = scratch.appendingPathComponent("signed").path
        let result = try TestSupport.apkpatch(["sign", "--debug-keystore", keystore, "--v4-signing-enabled", "false", "--out", folder,
                                               try fixture.pack(.directory)])
        guard result.succeeded else { throw FixtureError(message: "signing the set failed:\n\(result)") }
        signed = Dictionary(uniqueKeysWithValues: SplitSetFixture.names(in: .directory).keys.map { ($0, folder + "/" + $0) })
    }

    enum Malformed: String, CaseIterable, CustomStringConvertible {
        case notZip, empty, truncated, bytesBeforeEndRecord, noManifest
        var description: String { rawValue }
    }

    /// The bytes of a `kind` APK, made from the signed split `apk`.
    static func bytes(_ kind: Malformed, from apk: String) throws -> [UInt8] {
        let good = try TestSupport.readBytes(apk)
        switch kind {
        case .notZip: return Array(String(repeating: "this is not an APK\n", count: 20).utf8)
        case .empty: return []
        case .truncated: return Array(good.prefix(good.count / 2))
        case .bytesBeforeEndRecord:
            // A layout ZIP readers disagree about: the strict reader every command but verify uses refuses it.
            var relayout = try ZipRelayout(bytes: good)
            relayout.beforeEndRecord = Array("JUNK-BEFORE-THE-END-RECORD".utf8)
            return try relayout.build()
        case .noManifest:
            var zip = ZipBuilder()
            let text = Array("no manifest here\n".utf8)
            zip.items = [ZipBuilder.Item(name: "assets/a.txt", data: text, crc: CRC32.checksum(text))]
            return zip.build()
        }
    }

    /// The set in `form` with a `kind` APK beside the signed ones (`asBase`: in the base's place).
    func makeSet(_ form: SplitSetFixture.Form, with kind: Malformed, asBase: Bool) throws -> (path: String, badName: String) {
        let bad = scratch.appendingPathComponent("bad-\(UUID().uuidString).apk").path
        try Data(try Self.bytes(kind, from: signed["split_config.fr.apk"]!)).write(to: URL(fileURLWithPath: bad))
        let badName = asBase ? SplitSetFixture.names(in: form)["base.apk"]! : (form == .directory ? "split_config.zz.apk" : "splits/base-zz.apk")
        let path = asBase ? try fixture.pack(form, replacing: signed.merging(["base.apk": bad]) { $1 })
                          : try fixture.pack(form, replacing: signed, adding: [badName: bad])
        return (path, badName)
    }

    /// One JSON object, the whole of stdout.
    static func object(_ result: TestSupport.ProcessResult) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    }

    @Test(arguments: [SplitSetFixture.Form.directory, .apks, .xapk], Malformed.allCases)
    func anAPKThatCannotBeOpenedFailsTheSetInItsJSON(form: SplitSetFixture.Form, kind: Malformed) throws {
        let (set, badName) = try makeSet(form, with: kind, asBase: false)
        let result = try TestSupport.apkpatch(["verify", "--json", set])
        #expect(result.status == 1, "\(result)")
        let object = try #require(Self.object(result), "stdout is not one JSON object: \(result)")
        #expect(object["verified"] as? Bool == false)
        #expect(object["packageName"] as? String == "com.example.set", "the base was read: \(result.stdout)")
        let errors = object["errors"] as? [String] ?? []
        #expect(errors.count == 1 && errors.allSatisfy { $0.contains(badName) }, "\(errors)")
        let apks = object["apks"] as? [[String: Any]] ?? []
        #expect(apks.count == 5, "\(result.stdout)")
        let bad = apks.first { $0["name"] as? String == badName }
        #expect((bad?["error"] as? String)?.isEmpty == false, "\(result.stdout)")
        // The verifier's report of the bad APK on its own (its bytes are there to read): it does not verify.
        let report = bad?["report"] as? [String: Any]
        #expect(report?["verified"] as? Bool == false, "\(result.stdout)")
        if kind == .notZip || kind == .empty {
            #expect((report?["errors"] as? [[String: Any]])?.first?["code"] as? String == "MALFORMED_APK", "\(result.stdout)")
        }
        if kind == .bytesBeforeEndRecord {
            let codes = ((report?["errors"] as? [[String: Any]] ?? []) + (report?["archiveErrors"] as? [[String: Any]] ?? [])).compactMap { $0["code"] as? String }
            #expect(codes.contains("ARCHIVE_BYTES_BEFORE_END_RECORD"), "\(result.stdout)")
        }
        // The other APKs are reported as ever: each verifies.
        let others = apks.filter { $0["name"] as? String != badName }
        #expect(others.allSatisfy { ($0["report"] as? [String: Any])?["verified"] as? Bool == true }, "\(result.stdout)")

        // In text the same verdict: the reason on stderr, the set's line last.
        let text = try TestSupport.apkpatch(["verify", set])
        #expect(text.status == 1 && text.stdout.contains("DOES NOT VERIFY: set \(set), 5 APKs, package com.example.set"), "\(text)")
        #expect(text.stderr.contains("ERROR: ") && text.stderr.contains(badName), "\(text)")
    }

    /// The base cannot be opened: no package to name, each APK still reported, one JSON object.
    @Test(arguments: [SplitSetFixture.Form.directory, .apks], [Malformed.notZip, .truncated, .noManifest])
    func aBaseThatCannotBeOpenedFailsTheSetInItsJSON(form: SplitSetFixture.Form, kind: Malformed) throws {
        let (set, badName) = try makeSet(form, with: kind, asBase: true)
        let result = try TestSupport.apkpatch(["verify", "--json", set])
        #expect(result.status == 1, "\(result)")
        let object = try #require(Self.object(result), "stdout is not one JSON object: \(result)")
        #expect(object["verified"] as? Bool == false && object["packageName"] == nil, "\(result.stdout)")
        #expect((object["errors"] as? [String])?.contains { $0.contains(badName) } == true, "\(result.stdout)")
        let apks = object["apks"] as? [[String: Any]] ?? []
        #expect(apks.contains { $0["name"] as? String == badName && $0["error"] != nil }, "\(result.stdout)")
        let text = try TestSupport.apkpatch(["verify", set])
        #expect(text.status == 1 && text.stdout.contains("DOES NOT VERIFY: set ") && text.stderr.contains(badName), "\(text)")
    }

    /// A container entry whose deflate stream is damaged (APKPure and APKMirror deflate their APKs): there are no
    /// bytes to verify on their own, and the set fails with the reason, one JSON object.
    @Test func aContainerEntryThatDoesNotInflateFailsTheSetInItsJSON() throws {
        let set = try fixture.pack(.xapk, replacing: signed, adding: ["splits/base-zz.apk": signed["split_config.fr.apk"]!])
        var bytes = try TestSupport.readBytes(set)
        let archive = try ZipArchive(source: ByteArrayDataSource(bytes))
        let entry = try #require(archive.entries.first { $0.name == "splits/base-zz.apk" })
        try #require(entry.method == .deflated && entry.compressedSize > 64)
        for offset in entry.dataRange.dropFirst(16).prefix(32) { bytes[Int(offset)] ^= 0x5a }
        try Data(bytes).write(to: URL(fileURLWithPath: set))
        let result = try TestSupport.apkpatch(["verify", "--json", set])
        #expect(result.status == 1, "\(result)")
        let object = try #require(Self.object(result), "stdout is not one JSON object: \(result)")
        #expect(object["verified"] as? Bool == false && object["packageName"] as? String == "com.example.set", "\(result.stdout)")
        let bad = (object["apks"] as? [[String: Any]])?.first { $0["name"] as? String == "splits/base-zz.apk" }
        #expect((bad?["error"] as? String)?.isEmpty == false && bad?["report"] == nil, "\(result.stdout)")
        #expect((object["errors"] as? [String])?.count == 1, "\(result.stdout)")
    }

    /// No set to verify at all: still one JSON object, the set failing with the reason.
    @Test func aSetThatCannotBeReadIsOneJSONObject() throws {
        let notZip = scratch.appendingPathComponent("junk.apks").path
        try Data("not a zip at all".utf8).write(to: URL(fileURLWithPath: notZip))
        // Two bases: every APK opens, but they are not one app.
        let twoBases = try fixture.pack(.directory, replacing: signed, adding: ["other.apk": signed["base.apk"]!])
        for (set, reason) in [(notZip, "junk.apks"), (twoBases, "two base APKs")] {
            let result = try TestSupport.apkpatch(["verify", "--json", set])
            #expect(result.status == 1, "\(result)")
            let object = try #require(Self.object(result), "stdout is not one JSON object: \(result)")
            #expect(object["verified"] as? Bool == false && object["path"] as? String == set, "\(result.stdout)")
            #expect((object["errors"] as? [String])?.first?.contains(reason) == true, "\(result.stdout)")
        }
    }
}
