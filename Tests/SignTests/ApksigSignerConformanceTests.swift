import APKCore
import BinaryXML
import Foundation
@testable import Sign
import Testing
import TestSupport
import Unpack

/// `apkpatch sign` against apksig's signer test suite (`ApkSignerTest.java`, `ApkUtilsTest.java`): which inputs
/// apksigner signs or refuses, and what it writes. Inputs are made at test time; each is signed by both
/// `apkpatch sign` and the real `apksigner sign`. With apksigner 0.9's layout options (`--alignment-preserved
/// true --lib-page-alignment 4096 --jar-deflate-level 9`) the two outputs must be the same bytes.
@Suite(.removesTemporaryDirectories) struct ApksigSignerConformanceTests {
    static let shared: (directory: URL, rsa: TestKeys.Files, base: String) = TestSupport.sharedByTests {
        let directory = try! TestSupport.makeTemporaryDirectory("apksig-signer-conformance")
        var fixture = FixtureAPK()
        fixture.assets["data.txt"] = Array(String(repeating: "conformance ", count: 200).utf8)
        let base = try! fixture.build(in: directory, name: "base.apk")
        return (directory, try! TestKeys.make(.rsa2048, in: directory, name: "conf"), base)
    }

    /// apksigner 0.9's defaults for what apkpatch sets by option (alignment as build-tools ≤ 34, zlib level 9).
    static let apksigner09Layout = ["--alignment-preserved", "true", "--misaligned-apk-permitted", "true", "--lib-page-alignment", "4096", "--jar-deflate-level", "9"]

    /// One entry of a hand-made archive: its raw bytes and the methods its two headers declare.
    struct RawEntry {
        var name: [UInt8]
        var data: [UInt8]
        var crc: UInt32
        var uncompressedSize: Int
        var localMethod: UInt16
        var centralMethod: UInt16
        /// Sizes (both headers) and offset (central directory) as 0xFFFFFFFF with a ZIP64 extra field.
        var zip64 = false
        /// The local header's extra field (before a ZIP64 one).
        var localExtra: [UInt8] = []
    }

    /// The fixture's entries as they are stored (AndroidManifest.xml deflated, resources.arsc stored, …).
    static func baseEntries() throws -> [RawEntry] { try entries(of: shared.base) }

    /// The entries of the APK at `path` as they are stored, in file order.
    static func entries(of path: String) throws -> [RawEntry] {
        let archive = try APKArchive(path: path)
        return try archive.zip.indicesInFileOrder.map { index in
            let entry = archive.entries[index]
            return RawEntry(name: entry.nameBytes, data: try archive.source.bytes(in: entry.dataRange), crc: entry.crc32,
                            uncompressedSize: Int(entry.uncompressedSize), localMethod: entry.method.rawValue,
                            centralMethod: entry.method.rawValue)
        }
    }

    static func stored(_ name: String, _ data: [UInt8]) throws -> RawEntry {
        RawEntry(name: Array(name.utf8), data: data, crc: crc32(data), uncompressedSize: data.count, localMethod: 0, centralMethod: 0)
    }

    /// Plain CRC-32 (tests only).
    static func crc32(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc >> 1) ^ (0xEDB8_8320 & (0 &- (crc & 1))) }
        }
        return ~crc
    }

    /// Writes a ZIP byte by byte, with the methods and ZIP64 fields each entry asks for.
    static func write(_ entries: [RawEntry], to name: String, in directory: URL) throws -> String {
        var out = LittleEndianWriter(capacity: 1 << 16)
        var central = LittleEndianWriter(capacity: 1 << 12)
        for entry in entries {
            let offset = out.bytes.count
            let (compressed, uncompressed) = (UInt32(entry.data.count), UInt32(entry.uncompressedSize))
            let localExtra: [UInt8] = entry.localExtra + (entry.zip64 ? le16(1) + le16(16) + le64(entry.uncompressedSize) + le64(entry.data.count) : [])
            out.write(LocalFileHeaderLayout.signature)
            out.write(UInt16(entry.zip64 ? 45 : 20)); out.write(UInt16(0)); out.write(entry.localMethod)
            out.write(UInt16(0)); out.write(UInt16(0x3a21)); out.write(entry.crc)
            out.write(entry.zip64 ? 0xFFFF_FFFF : compressed); out.write(entry.zip64 ? 0xFFFF_FFFF : uncompressed)
            out.write(UInt16(entry.name.count)); out.write(UInt16(localExtra.count))
            out.write(bytes: entry.name); out.write(bytes: localExtra); out.write(bytes: entry.data)
            let centralExtra: [UInt8] = entry.zip64
                ? le16(1) + le16(24) + le64(entry.uncompressedSize) + le64(entry.data.count) + le64(offset) : []
            central.write(CentralDirectoryRecordLayout.signature)
            central.write(UInt16(entry.zip64 ? 45 : 20)); central.write(UInt16(entry.zip64 ? 45 : 20)); central.write(UInt16(0))
            central.write(entry.centralMethod); central.write(UInt16(0)); central.write(UInt16(0x3a21)); central.write(entry.crc)
            central.write(entry.zip64 ? 0xFFFF_FFFF : compressed); central.write(entry.zip64 ? 0xFFFF_FFFF : uncompressed)
            central.write(UInt16(entry.name.count)); central.write(UInt16(centralExtra.count)); central.write(UInt16(0))
            central.write(UInt16(0)); central.write(UInt16(0)); central.write(UInt32(0))
            central.write(entry.zip64 ? 0xFFFF_FFFF : UInt32(offset))
            central.write(bytes: entry.name); central.write(bytes: centralExtra)
        }
        let centralOffset = out.bytes.count
        out.write(bytes: central.bytes)
        out.write(bytes: EndOfCentralDirectory(entryCount: entries.count, centralDirectorySize: Int64(central.bytes.count),
                                               centralDirectoryOffset: Int64(centralOffset)).encoded())
        let path = directory.appendingPathComponent(name).path
        try Data(out.bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8 & 0xff)] }
    static func le64(_ v: Int) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }

    /// Signs `input` with apkpatch (apksigner 0.9's layout) and with apksigner; returns both results and outputs.
    static func signWithBoth(_ input: String, _ options: [String] = [], in directory: URL, label: String)
        throws -> (ours: TestSupport.ProcessResult, theirs: TestSupport.ProcessResult, oursPath: String, theirsPath: String) {
        let keys = shared.rsa
        let oursPath = directory.appendingPathComponent("\(label)-apkpatch.apk").path
        let theirsPath = directory.appendingPathComponent("\(label)-apksigner.apk").path
        let ours = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out", oursPath]
                                            + apksigner09Layout + options + [input])
        let theirs = try TestSupport.run("apksigner", ["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out", theirsPath]
                                         + options + [input])
        return (ours, theirs, oursPath, theirsPath)
    }

    /// Both sign it, to the same bytes, which apksigner verifies (at `verifyMinSdk` when given).
    static func expectSameAsApksigner(_ input: String, _ options: [String] = [], in directory: URL, label: String,
                                      verifyMinSdk: Int? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let both = try signWithBoth(input, options, in: directory, label: label)
        #expect(both.theirs.succeeded, "apksigner: \(both.theirs)", sourceLocation: sourceLocation)
        #expect(both.ours.succeeded, "apkpatch: \(both.ours)", sourceLocation: sourceLocation)
        guard both.ours.succeeded, both.theirs.succeeded else { return }
        #expect(try TestSupport.readBytes(both.oursPath) == (try TestSupport.readBytes(both.theirsPath)),
                "\(label): apkpatch's output differs from apksigner's", sourceLocation: sourceLocation)
        let verify = try TestSupport.run("apksigner", ["verify"] + (verifyMinSdk.map { ["--min-sdk-version", "\($0)"] } ?? []) + [both.oursPath])
        #expect(verify.succeeded, "\(verify)", sourceLocation: sourceLocation)
    }

    // MARK: - What the signer accepts as input

    /// apksig reads a method other than stored as deflate (as Android's JAR verifier does) and signs it, but
    /// libziparchive, which reads the manifest at install, extracts only stored and deflated entries: apksigner's
    /// output cannot install. Here Android's rule wins: refused before any output exists.
    @Test("testWeirdZipCompressionMethod: method 21 on the manifest is refused (apksig signs it; Android cannot extract it)")
    func weirdCompressionMethod() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        var entries = try Self.baseEntries()
        let manifest = try #require(entries.firstIndex { $0.name == Array("AndroidManifest.xml".utf8) })
        #expect(entries[manifest].centralMethod == 8)
        entries[manifest].localMethod = 21
        entries[manifest].centralMethod = 21
        let input = try Self.write(entries, to: "weird.apk", in: dir)
        let both = try Self.signWithBoth(input, in: dir, label: "weird")
        #expect(both.theirs.succeeded, "\(both.theirs)")
        #expect(!(try TestSupport.libziparchiveCheck(both.theirsPath).succeeded), "libziparchive extracts method 21")
        #expect(both.ours.status == 1 && both.ours.stderr.contains("compression method 21, which Android cannot extract"), "\(both.ours)")
        #expect(!FileManager.default.fileExists(atPath: both.oursPath))
    }

    /// The central directory's method rules (apksig and libziparchive both read by it); the output's local header
    /// is written anew to agree with it, so a streaming reader reads the entry as Android does. That header is
    /// the only difference from apksigner's output, which keeps the input's.
    @Test("testZipCompressionMethodMismatchBetweenLfhAndCd: the central directory's method rules; the local header is repaired")
    func compressionMethodMismatch() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        var entries = try Self.baseEntries()
        let manifest = try #require(entries.firstIndex { $0.name == Array("AndroidManifest.xml".utf8) })
        entries[manifest].localMethod = 0  // the data is deflated; the central directory says so
        let input = try Self.write(entries, to: "mismatch.apk", in: dir)
        let both = try Self.signWithBoth(input, in: dir, label: "mismatch")
        try #require(both.theirs.succeeded && both.ours.succeeded, "\(both.theirs)\n\(both.ours)")
        let theirs = try APKArchive(path: both.theirsPath), ours = try APKArchive(path: both.oursPath)
        for (label, archive) in [("apksigner", theirs), ("apkpatch", ours)] {
            let entry = try #require(archive.entry(named: "AndroidManifest.xml"))
            let local = try archive.source.bytes(in: (entry.localHeaderOffset + 8)..<(entry.localHeaderOffset + 10))
            #expect((local == [8, 0]) == (label == "apkpatch"), "\(label): local method \(local)")
        }
        #expect(ours.entries.map(\.name) == theirs.entries.map(\.name))
        for entry in ours.entries where !entry.name.hasPrefix("META-INF/") {
            #expect(try ours.uncompressedData(of: entry) == theirs.uncompressedData(of: try #require(theirs.entry(named: entry.name))), "\(entry.name)")
        }
        #expect(try TestSupport.run("apksigner", ["verify", both.oursPath]).succeeded)
        #expect(try TestSupport.libziparchiveCheck(both.oursPath).succeeded)
    }

    @Test("names that are unsafe as paths are signed: apksig refuses only what a v1 manifest cannot hold")
    func pathLikeNamesAreSigned() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let entries = try Self.baseEntries() + [
            try Self.stored("assets/../up.txt", Array("up".utf8)),
            try Self.stored("assets\\windows.txt", Array("win".utf8)),
            try Self.stored("/absolute.txt", Array("abs".utf8)),
        ]
        let input = try Self.write(entries, to: "names.apk", in: dir)
        try Self.expectSameAsApksigner(input, in: dir, label: "names")
    }

    @Test("testV1SigningRejectsInvalidZipEntryNames: CR, LF and NUL refused with v1, signed without it (NUL refused: Android does not open it)",
          arguments: [UInt8(0x0d), 0x0a, 0x00])
    func v1RejectsControlCharacters(character: UInt8) throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let name = Array("assets/a".utf8) + [character] + Array("b".utf8)
        let entries = try Self.baseEntries() + [RawEntry(name: name, data: [1], crc: Self.crc32([1]), uncompressedSize: 1,
                                                         localMethod: 0, centralMethod: 0)]
        let input = try Self.write(entries, to: "control-\(character).apk", in: dir)
        if character == 0 {
            // Here Android's rule wins over apksig's: libziparchive does not open an archive with a NUL in a name
            // (IsValidEntryName, "Invalid entry name"), so the APK could never install; refused with or without v1.
            for options in [[], ["--v1-signing-enabled", "false", "--min-sdk-version", "24"]] {
                let both = try Self.signWithBoth(input, options, in: dir, label: "nul-\(options.count)")
                #expect(both.ours.status == 1 && both.ours.stderr.contains("NUL byte"), "\(both.ours)")
                #expect(!FileManager.default.fileExists(atPath: both.oursPath))
            }
            return
        }
        let withV1 = try Self.signWithBoth(input, in: dir, label: "v1-\(character)")
        #expect(!withV1.theirs.succeeded, "\(withV1.theirs)")
        #expect(!withV1.ours.succeeded, "\(withV1.ours)")
        #expect(withV1.ours.stderr.contains("which a JAR manifest cannot express"), "\(withV1.ours)")
        try Self.expectSameAsApksigner(input, ["--v1-signing-enabled", "false", "--min-sdk-version", "24"], in: dir,
                                       label: "nov1-\(character)", verifyMinSdk: 24)
    }

    /// apksig keeps the ZIP64 fields; apkpatch writes standard records instead (Android 10 and older read no
    /// ZIP64, and every size fits 32 bits), so the output is read by the strict reader, apksigner 0.9 (which
    /// reads no ZIP64 either: v1 included) and Debian's libziparchive, with every entry's data as it was.
    @Test("testSignApk_apkWithZip64Records_signsAndVerifiesSuccessfully: ZIP64 entry fields are read and written as standard records",
          arguments: [false, true])
    func zip64Records(alignmentPreserved: Bool) throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        var entries = try Self.baseEntries()
        for index in entries.indices where entries[index].name != Array("AndroidManifest.xml".utf8) { entries[index].zip64 = true }
        entries.append(try Self.stored("assets/zip64-stored.bin", Array(repeating: 7, count: 77)))
        entries[entries.count - 1].zip64 = true
        let input = try Self.write(entries, to: "zip64.apk", in: dir)
        let keys = Self.shared.rsa
        for v1 in [true, false] {
            let output = dir.appendingPathComponent("zip64-\(alignmentPreserved)-\(v1).apk").path
            let result = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out", output,
                                                   "--alignment-preserved", "\(alignmentPreserved)", "--misaligned-apk-permitted", "true",
                                                   "--v1-signing-enabled", "\(v1)"]
                                                  + (v1 ? [] : ["--min-sdk-version", "24"]) + [input])
            try #require(result.succeeded, "\(result)")
            let verify = try TestSupport.apkpatch(["verify", "--signature-only"] + (v1 ? [] : ["--min-sdk-version", "24"]) + [output])
            #expect(verify.succeeded, "\(verify)")
            let theirs = try TestSupport.run("apksigner", ["verify"] + (v1 ? [] : ["--min-sdk-version", "24"]) + [output])
            #expect(theirs.succeeded, "\(theirs)")
            #expect(try TestSupport.libziparchiveCheck(output).succeeded)
            // The strict reader reads no ZIP64 field: there is none left.
            let signed = try APKArchive(source: try MappedFile(path: output), label: output, limits: { var l = UnpackLimits(); l.readsZip64 = false; return l }())
            for entry in signed.entries {
                #expect(ExtraField.removing(0x0001, from: entry.localExtra) == entry.localExtra, "\(entry.name): a ZIP64 record in its local header")
                #expect(ExtraField.removing(0x0001, from: entry.centralExtra) == entry.centralExtra, "\(entry.name): a ZIP64 record in its central record")
            }
            for entry in entries {
                let name = String(decoding: entry.name, as: UTF8.self)
                let copied = try #require(signed.entry(named: name))
                #expect(try signed.source.bytes(in: copied.dataRange) == entry.data, "\(name)")
            }
        }
    }

    // MARK: - minSdkVersion and debuggable as apksig's ApkUtils reads them

    /// An APK built by aapt from `manifest` (no resources).
    static func aaptAPK(manifest: String, name: String, in directory: URL) throws -> String {
        let work = directory.appendingPathComponent("aapt-\(name)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        try TestSupport.write(manifest, to: "AndroidManifest.xml", in: work)
        let output = directory.appendingPathComponent(name).path
        let result = try TestSupport.run("aapt", ["package", "-f", "-M", "AndroidManifest.xml", "-I", TestSupport.frameworkRes, "-F", output],
                                         currentDirectory: work.path)
        guard result.succeeded else { throw FixtureError(message: "aapt failed:\n\(result)") }
        return output
    }

    static func manifest(usesSDK: String, application: String = "") -> String {
        """
        <?xml version="1.0" encoding="utf-8"?>
        <manifest xmlns:android="http://schemas.android.com/apk/res/android" package="com.example.conformance">
            \(usesSDK)
            <application android:label="x" \(application)></application>
        </manifest>
        """
    }

    @Test("ApkUtilsTest testGetMinSdkVersionForValidCodename: codenames map by their first letter")
    func codenameLevels() {
        #expect(SDKVersion.apiLevel(forCodename: "AAAA") == 1)
        #expect(SDKVersion.apiLevel(forCodename: "CUPCAKE") == 2)
        #expect(SDKVersion.apiLevel(forCodename: "FROYO") == 7)
        #expect(SDKVersion.apiLevel(forCodename: "N") == 23)
        #expect(SDKVersion.apiLevel(forCodename: "NMR1") == 23)
        #expect(SDKVersion.apiLevel(forCodename: "OMG") == 25)
        #expect(SDKVersion.apiLevel(forCodename: "QQQ") == 27)
        #expect(SDKVersion.apiLevel(forCodename: "VanillaIceCream") == 32)
        #expect(SDKVersion.apiLevel(forCodename: "Baklava") == 34)
        // testGetMinSdkVersionForEmptyCodename, testGetMinSdkVersionForUnexpectedCodename
        #expect(SDKVersion.apiLevel(forCodename: "") == nil)
        #expect(SDKVersion.apiLevel(forCodename: "1ABC") == nil)
        #expect(SDKVersion.apiLevel(forCodename: "tiramisu") == nil)
    }

    @Test("a preview codename minSdkVersion is signed as apksigner signs it, not refused")
    func codenameMinSdkVersionIsSigned() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        // 'K' = 18: the first level where RSA JAR signatures use SHA-256, so the level decides the bytes.
        for codename in ["KitKat", "VanillaIceCream", "Jellybean"] {
            let input = try Self.aaptAPK(manifest: Self.manifest(usesSDK: "<uses-sdk android:minSdkVersion=\"\(codename)\" />"),
                                         name: "\(codename).apk", in: dir)
            try Self.expectSameAsApksigner(input, in: dir, label: codename)
        }
    }

    @Test("getMinSdkVersionFromBinaryAndroidManifest: the largest minSdkVersion of all <uses-sdk> decides")
    func largestUsesSDKDecides() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try Self.aaptAPK(manifest: Self.manifest(usesSDK: """
            <uses-sdk android:minSdkVersion="9" />
            <uses-sdk android:minSdkVersion="21" />
            """), name: "two-uses-sdk.apk", in: dir)
        try Self.expectSameAsApksigner(input, in: dir, label: "two-uses-sdk")
        let keys = Self.shared.rsa
        let json = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--json",
                                             "--out", dir.appendingPathComponent("json.apk").path, input])
        #expect(json.stdout.contains("\"minSdkVersion\" : 21") || json.stdout.contains("\"minSdkVersion\":21"), "\(json)")
    }

    @Test("testDebuggableApk: boolean, string and integer android:debuggable read as apksig reads them")
    func debuggableValues() throws {
        func attribute(_ value: ResourceValue) -> XMLTree.Attribute {
            XMLTree.Attribute(namespace: XMLTree.androidNamespace, name: "debuggable", resourceID: 0x0101_000f, rawValue: nil, value: value)
        }
        #expect(try Signer.apksigDebuggable(nil) == false)
        #expect(try Signer.apksigDebuggable(attribute(.boolean(true))) == true)
        #expect(try Signer.apksigDebuggable(attribute(.boolean(false))) == false)
        #expect(try Signer.apksigDebuggable(attribute(.string("true"))) == true)
        #expect(try Signer.apksigDebuggable(attribute(.string("TRUE"))) == true)
        #expect(try Signer.apksigDebuggable(attribute(.string("True"))) == false)
        #expect(try Signer.apksigDebuggable(attribute(.string("1"))) == true)
        #expect(try Signer.apksigDebuggable(attribute(.integer(1))) == true)
        #expect(try Signer.apksigDebuggable(attribute(.integer(5))) == false)
        #expect(throws: SignError.self) { try Signer.apksigDebuggable(attribute(.reference(0x7f05_0000))) }
        #expect(throws: SignError.self) { try Signer.apksigDebuggable(attribute(.typed(.float, 0x3f80_0000))) }
    }

    @Test("testDebuggableApk: a string android:debuggable=\"true\" is refused with --debuggable-apk-permitted false")
    func debuggableStringIsRefused() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let built = try Self.aaptAPK(manifest: Self.manifest(usesSDK: "<uses-sdk android:minSdkVersion=\"21\" />",
                                                             application: "android:debuggable=\"true\""),
                                     name: "debuggable-boolean.apk", in: dir)
        // The same manifest with the value stored as the string "true" (aapt itself writes a boolean).
        let archive = try APKArchive(path: built)
        var tree = try XMLTree(binaryXML: try archive.uncompressedData(of: try #require(archive.entry(named: "AndroidManifest.xml"))))
        guard case .element(var root)? = tree.nodes.first(where: { if case .element = $0 { return true } else { return false } }) else {
            Issue.record("no root element"); return
        }
        for (index, node) in root.children.enumerated() {
            guard case .element(var application) = node, application.name == "application" else { continue }
            let attribute = try #require(application.attributeIndex(id: 0x0101_000f, name: "debuggable"))
            application.attributes[attribute].value = .string("true")
            application.attributes[attribute].rawValue = "true"
            root.children[index] = .element(application)
        }
        tree = XMLTree(root: root)
        var entries = try Self.baseEntries().filter { $0.name != Array("AndroidManifest.xml".utf8) }
        entries.insert(try Self.stored("AndroidManifest.xml", try tree.binaryXML()), at: 0)
        let input = try Self.write(entries, to: "debuggable-string.apk", in: dir)
        let refused = try Self.signWithBoth(input, ["--debuggable-apk-permitted", "false"], in: dir, label: "debuggable-string")
        #expect(!refused.theirs.succeeded, "\(refused.theirs)")
        #expect(!refused.ours.succeeded, "\(refused.ours)")
        #expect(refused.ours.stderr.contains("debuggable"), "\(refused.ours)")
        try Self.expectSameAsApksigner(input, in: dir, label: "debuggable-string-permitted")
    }
}

extension ApksigSignerConformanceTests {
    /// 65,535 entries fit a ZIP; the three JAR signature files would not. apksig writes a ZIP64 end record then
    /// (testSignApk_apkWithExactly64kFiles_signsAndVerifiesSuccessfully), which older Android cannot read; apkpatch
    /// refuses before copying and says how to sign it: without v1, which apksigner verifies.
    @Test("testSignApk_apkWithExactly64kFiles: v1 would need ZIP64, so it is refused with the way out; v2/v3 alone sign")
    func exactly64kEntries() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        var entries = try Self.baseEntries()
        let filler = 0xFFFF - entries.count
        entries.reserveCapacity(0xFFFF)
        for index in 0..<filler { entries.append(try Self.stored(String(format: "assets/f/%05d", index), [])) }
        let input = try Self.write(entries, to: "64k.apk", in: dir)
        let keys = Self.shared.rsa
        let output = dir.appendingPathComponent("64k-signed.apk").path
        let refused = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out", output, input])
        #expect(!refused.succeeded, "\(refused)")
        #expect(refused.stderr.contains("--v1-signing-enabled false"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: output))
        let signed = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out", output,
                                               "--v1-signing-enabled", "false", "--min-sdk-version", "24", input])
        #expect(signed.succeeded, "\(signed)")
        let verify = try TestSupport.run("apksigner", ["verify", "--min-sdk-version", "24", output])
        #expect(verify.succeeded, "\(verify)")
    }
}

extension ApksigSignerConformanceTests {
    /// The plain archive with a ZIP64 end record and locator put before its end record, whose fields become
    /// markers (or keep their values, `markers` false); `entries` overrides the ZIP64 record's entry count.
    /// `beforeRecord` and `afterRecord` are bytes put between the central directory and the ZIP64 record, and
    /// between that record and its locator.
    static func withZip64EndRecord(_ plain: [UInt8], markers: Bool, entries overridden: Int? = nil,
                                   beforeRecord: [UInt8] = [], afterRecord: [UInt8] = []) -> [UInt8] {
        let eocd = plain.count - 22
        func uint(_ at: Int, _ count: Int) -> Int { (0..<count).reduce(0) { $0 | Int(plain[at + $1]) << (8 * $1) } }
        let (count, size, offset) = (uint(eocd + 10, 2), uint(eocd + 12, 4), uint(eocd + 16, 4))
        var record = beforeRecord + le32(0x0606_4b50) + le64(44) + le16(45) + le16(45) + le32(0) + le32(0)
        record += le64(overridden ?? count) + le64(overridden ?? count) + le64(size) + le64(offset) + afterRecord
        let locator = le32(0x0706_4b50) + le32(0) + le64(eocd + beforeRecord.count) + le32(1)
        var end = Array(plain[eocd...])
        if markers {
            for i in 8..<12 { end[i] = 0xff }
            for i in 12..<20 { end[i] = 0xff }
        }
        return Array(plain[..<eocd]) + record + locator + end
    }

    static func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }

    @Test("testSignApk_apkWithZip64Eocd_signsAndVerifiesSuccessfully: a ZIP64 end record of standard values is read, a standard one written",
          arguments: [true, false])
    func zip64EndRecord(markers: Bool) throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let plain = Self.shared.base
        let input = dir.appendingPathComponent("zip64-eocd.apk").path
        try Data(Self.withZip64EndRecord(try TestSupport.readBytes(plain), markers: markers)).write(to: URL(fileURLWithPath: input))
        let keys = Self.shared.rsa
        // apksig drops the ZIP64 records with the rest of the old end: the output is what the plain input gives.
        let ours = dir.appendingPathComponent("ours.apk").path
        let theirs = dir.appendingPathComponent("theirs.apk").path
        let signed = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out", ours]
                                              + Self.apksigner09Layout + [input])
        try #require(signed.succeeded, "\(signed)")
        let reference = try TestSupport.run("apksigner", ["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out", theirs, plain])
        try #require(reference.succeeded, "\(reference)")
        #expect(try TestSupport.readBytes(ours) == (try TestSupport.readBytes(theirs)))

        // A ZIP64 end record that disagrees with the standard one is not guessed at.
        let conflicting = dir.appendingPathComponent("zip64-conflict.apk").path
        try Data(Self.withZip64EndRecord(try TestSupport.readBytes(plain), markers: false, entries: 1)).write(to: URL(fileURLWithPath: conflicting))
        let refused = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out",
                                                dir.appendingPathComponent("conflict-signed.apk").path, conflicting])
        #expect(!refused.succeeded, "\(refused)")

        // The ZIP64 record and its locator are end records, accounted for like the standard one: bytes before
        // the record or between it and its locator are no record's (libziparchive reads the record through the
        // locator, and apksig would carry such bytes nowhere), so they are refused.
        for (name, before, after, message) in [("before", Array("hidden".utf8), [UInt8](), "between the central directory"),
                                               ("after", [UInt8](), Array("hidden".utf8), "between the ZIP64 end of central directory record")] {
            let input = dir.appendingPathComponent("zip64-\(name).apk").path
            try Data(Self.withZip64EndRecord(try TestSupport.readBytes(plain), markers: markers, beforeRecord: before, afterRecord: after))
                .write(to: URL(fileURLWithPath: input))
            let output = dir.appendingPathComponent("zip64-\(name)-signed.apk").path
            let result = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out", output, input])
            #expect(result.status == 1 && result.stderr.contains(message), "\(name): \(result)")
            #expect(!FileManager.default.fileExists(atPath: output))
        }
    }
}

extension ApksigSignerConformanceTests {
    /// apksigner signs a minSdkVersion 21 APK with --v1-signing-enabled false, and its own verifier then
    /// rejects the output ("Missing META-INF/MANIFEST.MF"): Android 5-6 read only JAR signatures. apkpatch
    /// writes the same bytes, as a drop-in must, and warns with the way out; without the warning once
    /// --min-sdk-version 24 says the app needs Android 7.0.
    @Test("no v1 below API 24: apksigner's bytes, with a warning saying the APK will not install below 24")
    func noV1BelowAPI24() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let both = try Self.signWithBoth(Self.shared.base, ["--v1-signing-enabled", "false"], in: dir, label: "nov1-21")
        try #require(both.theirs.succeeded, "\(both.theirs)")
        let theirVerdict = try TestSupport.run("apksigner", ["verify", both.theirsPath])
        #expect(!theirVerdict.succeeded, "apksigner's own output for minSdkVersion 21 without v1: \(theirVerdict)")
        #expect(both.ours.succeeded, "\(both.ours)")
        #expect(both.ours.stderr.contains("WARNING") && both.ours.stderr.contains("--min-sdk-version 24"), "\(both.ours)")
        #expect(try TestSupport.readBytes(both.oursPath) == (try TestSupport.readBytes(both.theirsPath)))
        let stated = try Self.signWithBoth(Self.shared.base, ["--v1-signing-enabled", "false", "--min-sdk-version", "24"], in: dir, label: "nov1-quiet")
        // (The fixture's resources.arsc is where aapt put it, which --alignment-preserved keeps: that has a warning of its own.)
        #expect(stated.ours.succeeded && !stated.ours.stderr.contains("without v1"), "\(stated.ours)")
        try Self.expectSameAsApksigner(Self.shared.base, ["--v1-signing-enabled", "false", "--min-sdk-version", "24"], in: dir,
                                       label: "nov1-24", verifyMinSdk: 24)
    }
}

extension ApksigSignerConformanceTests {
    /// Android 7-8.1 (API 24-27) verify v2 or v1 only: a v3-only APK with minSdkVersion 24 cannot install there,
    /// though apksigner signs it and its verifier accepts it. apkpatch writes the same bytes and warns below 28.
    @Test("v3 alone below API 28: apksigner's bytes, with a warning (Android 7-8 cannot read it); from 28 none")
    func v3OnlyBelowAPI28() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let v3Only = ["--v1-signing-enabled", "false", "--v2-signing-enabled", "false"]
        let warned = try Self.signWithBoth(Self.shared.base, v3Only + ["--min-sdk-version", "24"], in: dir, label: "v3-24")
        #expect(warned.theirs.succeeded, "\(warned.theirs)")
        #expect(warned.ours.succeeded, "\(warned.ours)")
        #expect(warned.ours.stderr.contains("WARNING") && warned.ours.stderr.contains("--v2-signing-enabled true"), "\(warned.ours)")
        #expect(try TestSupport.readBytes(warned.oursPath) == (try TestSupport.readBytes(warned.theirsPath)))
        try Self.expectSameAsApksigner(Self.shared.base, v3Only + ["--min-sdk-version", "28"], in: dir, label: "v3-28", verifyMinSdk: 28)
    }
}
