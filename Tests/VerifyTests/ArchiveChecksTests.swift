import APKCore
import Foundation
import SignatureSchemes
import TestSupport
import Testing
@testable import Verify

/// verify holds every APK, whatever signs it, to the archive rules `unpack`, `run`, `sign`, `watch`, `align` and
/// `merge` read it by (issue 19): bytes in the entries section no central-directory entry accounts for, bytes
/// between the central directory and the end record, an end record whose count disagrees with the central
/// directory, and a second end record that ends the file. Android's libziparchive and apksigner accept the first
/// three (the oracles below say so for each case: this is where apkpatch is stricter than both); the signature
/// verdict stays apksigner's (`signatureVerified`, `--signature-only`), the `ARCHIVE_` errors fail the APK.
@Suite("verify: the archive rules of every other command, whatever the schemes", .removesTemporaryDirectories)
struct ArchiveChecksTests {
    enum Layout: String, CaseIterable, CustomStringConvertible, Sendable {
        case hiddenLocalEntry, bytesAfterEntries, bytesBeforeEndRecord, uncountedCentralRecord
        var description: String { rawValue }

        var code: String {
            switch self {
            case .hiddenLocalEntry, .bytesAfterEntries: return "ARCHIVE_UNACCOUNTED_BYTES"
            case .bytesBeforeEndRecord: return "ARCHIVE_BYTES_BEFORE_END_RECORD"
            case .uncountedCentralRecord: return "ARCHIVE_ENTRY_COUNT_MISMATCH"
            }
        }

        /// What the message and every other command's refusal say.
        var words: String {
            switch self {
            case .hiddenLocalEntry, .bytesAfterEntries: return "belong to no entry of the central directory"
            case .bytesBeforeEndRecord: return "between the central directory"
            case .uncountedCentralRecord: return "more bytes after them"
            }
        }

        /// `bytes` (an APK without a signing block) laid out so.
        func apply(to bytes: [UInt8]) throws -> [UInt8] {
            var layout = try ZipRelayout(bytes: bytes)
            switch self {
            case .hiddenLocalEntry: layout.inserted[1] = ArchiveChecksTests.localRecord(named: "classes.dex")
            case .bytesAfterEntries: layout.afterEntries = ArchiveChecksTests.localRecord(named: "assets/after.txt")
            case .bytesBeforeEndRecord: layout.beforeEndRecord = Array("junk between the central directory and its end".utf8)
            case .uncountedCentralRecord:
                var entry = layout.archive.entries[0]
                entry.nameBytes = Array("assets/uncounted.txt".utf8)
                layout.uncountedCentralRecords = entry.encodedCentralDirectoryRecord(localHeaderOffset: 0)
            }
            return try layout.build()
        }
    }

    /// A stored local record that no central directory record names: what a streaming reader sees.
    static func localRecord(named name: String, data: [UInt8] = Array("hidden content".utf8)) -> [UInt8] {
        let entry = ZipEntry(nameBytes: Array(name.utf8), method: .stored, crc32: VerifyFixtures.crc32(data[...]), compressedSize: Int64(data.count),
                             uncompressedSize: Int64(data.count), lastModifiedTime: 0, lastModifiedDate: 0x3a21)
        return entry.encodedLocalHeader(extra: []) + data
    }

    static func report(_ path: String, maxSdkVersion: Int = Int(Int32.max)) throws -> VerificationReport {
        try VerifyFixtures.verify(path, maxSdkVersion: maxSdkVersion, signatureOnly: false)
    }

    static func codes(_ issues: [Verify.Issue]) -> Set<String> { VerifyFixtures.codes(issues) }

    /// A v1-only APK (targetSdkVersion 28: from 30 Android needs v2): its JAR signature covers entries only, so its
    /// layout can change under it and apksigner still verifies it.
    static func v1Only(in directory: URL) throws -> [UInt8] {
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory) { $0.targetSdk = 28 }
        return try VerifyFixtures.read(try VerifyFixtures.sign(unsigned, key: .rsa2048, schemes: SchemeSet(v1: true, v2: false, v3: false),
                                                               output: directory.appendingPathComponent("v1-only.apk").path))
    }

    @Test("a v1-only APK: apksigner and libziparchive accept it, verify fails it", arguments: Layout.allCases)
    func jarSignedOnly(_ layout: Layout) throws {
        let directory = try TestSupport.makeTemporaryDirectory("archive-checks-v1-\(layout)")
        let path = directory.appendingPathComponent("\(layout).apk").path
        try VerifyFixtures.write(try layout.apply(to: try Self.v1Only(in: directory)), to: path)
        let oracle = try VerifyFixtures.apksignerVerify(path)
        #expect(oracle.verifies, "apksigner accepts \(layout): \(oracle.output)")
        let android = try TestSupport.libziparchiveCheck(path)
        #expect(android.succeeded, "libziparchive opens \(layout): \(android)")

        let report = try Self.report(path)
        #expect(report.isSignatureVerified && report.verifiedSchemes == [.v1], "the signature verdict is apksigner's: \(report.signatureErrors)")
        #expect(Self.codes(report.archiveErrors) == [layout.code], "\(report.archiveErrors)")
        #expect(report.archiveErrors.allSatisfy { $0.message.contains(layout.words) && $0.message.contains("rebuild it") }, "\(report.archiveErrors)")
        #expect(!report.isVerified && report.installErrors.isEmpty)
        #expect(try VerifyFixtures.verify(path).isVerified, "--signature-only gives apksigner's verdict")
    }

    @Test("stray bytes apksigner signs over with v2 and v3: verify fails them too", arguments: [Layout.hiddenLocalEntry, .bytesAfterEntries])
    func signedOverByBlockSchemes(_ layout: Layout) throws {
        let directory = try TestSupport.makeTemporaryDirectory("archive-checks-v2-\(layout)")
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory) { $0.minSdk = 24 }
        let laidOut = directory.appendingPathComponent("laid-out.apk").path
        try VerifyFixtures.write(try layout.apply(to: try VerifyFixtures.read(unsigned)), to: laidOut)
        // apksig copies the bytes between local records on verbatim ("unprocessed data"), under its v2 and v3 digests.
        let signed = try VerifyFixtures.sign(laidOut, key: .rsa2048, schemes: SchemeSet(v1: false, v2: true, v3: true),
                                             output: directory.appendingPathComponent("signed.apk").path)
        #expect(try ZipRelayout(bytes: try VerifyFixtures.read(signed)).archive.strayRanges.count == 1, "apksigner kept the stray record")
        #expect(try VerifyFixtures.apksignerVerify(signed).verifies)
        #expect(try TestSupport.libziparchiveCheck(signed).succeeded)

        let report = try Self.report(signed)
        #expect(report.isSignatureVerified && report.verifiedSchemes == [.v2, .v3], "\(report.signatureErrors)")
        #expect(Self.codes(report.archiveErrors) == [layout.code], "\(report.archiveErrors)")
        #expect(!report.isVerified)
    }

    /// Central directory bytes are under the v2 digest too: an uncounted record signed over still fails. Bytes
    /// before the end record hide the signing block from apksig (JAR_SIG_NO_MANIFEST, its verdict), and are
    /// named beside it.
    @Test("a central directory the end record miscounts, signed over with v2; bytes before the end record")
    func centralDirectorySignedOver() throws {
        let bench = try BlockCraft.Workbench("archive-checks-uncounted", configure: { $0.minSdk = 24 },
                                             rewrite: { try Layout.uncountedCentralRecord.apply(to: $0) })
        let uncounted = try bench.write("uncounted.apk", pairs: [(SigningBlock.ID.v2, BlockCraft.Workbench.schemeBlock([try bench.v2Signer(.rsa2048)]))])
        #expect(try VerifyFixtures.apksignerVerify(uncounted).verifies)
        #expect(try TestSupport.libziparchiveCheck(uncounted).succeeded)
        let report = try Self.report(uncounted)
        #expect(report.isSignatureVerified && report.verifiedSchemes == [.v2], "\(report.signatureErrors)")
        #expect(Self.codes(report.archiveErrors) == ["ARCHIVE_ENTRY_COUNT_MISMATCH"], "\(report.archiveErrors)")
        #expect(report.archiveErrors.first?.message.contains("(1 more record)") == true, "\(report.archiveErrors)")

        let gap = try BlockCraft.Workbench("archive-checks-gap", garbageBeforeEOCD: Array("GARBAGE".utf8), configure: { $0.minSdk = 24 })
        let hidden = try gap.write("gap.apk", pairs: [(SigningBlock.ID.v2, BlockCraft.Workbench.schemeBlock([try gap.v2Signer(.rsa2048)]))])
        let gapReport = try Self.report(hidden)
        #expect(Self.codes(gapReport.signatureErrors) == ["JAR_SIG_NO_MANIFEST"] && Self.codes(gapReport.archiveErrors) == ["ARCHIVE_BYTES_BEFORE_END_RECORD"],
                "\(gapReport.errors)")
    }

    /// Bytes before the first local header: where Android 8.1+ refuses them (INSTALL_BYTES_BEFORE_FIRST_ENTRY) that
    /// one error says it; for a range that ends below 8.1, where nothing else does, the archive check.
    @Test("a prefix signed over with v2: the install error, or the archive error below Android 8.1")
    func prefixSignedOver() throws {
        let directory = try TestSupport.makeTemporaryDirectory("archive-checks-prefix")
        var layout = try ZipRelayout(bytes: try VerifyFixtures.read(try VerifyFixtures.unsignedAPK(in: directory) { $0.minSdk = 24; $0.targetSdk = 28 }))
        layout.inserted[0] = [UInt8](repeating: 0, count: 64)
        let laidOut = directory.appendingPathComponent("prefix.apk").path
        try VerifyFixtures.write(try layout.build(), to: laidOut)
        let signed = try VerifyFixtures.sign(laidOut, key: .rsa2048, schemes: SchemeSet(v1: false, v2: true, v3: true),
                                             output: directory.appendingPathComponent("signed.apk").path)
        #expect(try VerifyFixtures.apksignerVerify(signed).verifies)
        let report = try Self.report(signed)
        #expect(Self.codes(report.installErrors) == ["INSTALL_BYTES_BEFORE_FIRST_ENTRY"] && report.archiveErrors.isEmpty, "\(report.errors)")
        let below = try Self.report(signed, maxSdkVersion: 26)
        #expect(below.installErrors.isEmpty && Self.codes(below.archiveErrors) == ["ARCHIVE_UNACCOUNTED_BYTES"], "\(below.errors)")
        #expect(below.archiveErrors.first?.message.contains("64 bytes before the first local header") == true, "\(below.archiveErrors)")
    }

    /// What the other commands take, verify takes: zero padding between records, and an intact record of an entry
    /// apksigner drops and writes anew (the leftover of re-signing a stamped APK), under v2 and v3.
    @Test("zero padding and a re-signing's leftover record pass")
    func whatTheWritersTakeVerifyTakes() throws {
        let directory = try TestSupport.makeTemporaryDirectory("archive-checks-taken")
        // targetSdkVersion 28: aapt compresses resources.arsc, which Android refuses from 30 on.
        var layout = try ZipRelayout(bytes: try VerifyFixtures.read(try VerifyFixtures.unsignedAPK(in: directory) { $0.minSdk = 24; $0.targetSdk = 28 }))
        layout.inserted[1] = [UInt8](repeating: 0, count: 64)
        layout.inserted[2] = Self.localRecord(named: "stamp-cert-sha256", data: [UInt8](repeating: 0x5a, count: 32))
        let laidOut = directory.appendingPathComponent("taken.apk").path
        try VerifyFixtures.write(try layout.build(), to: laidOut)
        let signed = try VerifyFixtures.sign(laidOut, key: .rsa2048, schemes: SchemeSet(v1: false, v2: true, v3: true),
                                             output: directory.appendingPathComponent("signed.apk").path)
        let archive = try APKArchive(path: signed)
        try #require(archive.zip.staleSignerRecords.count == 1, "the fixture keeps the leftover record")
        let report = try Self.report(signed)
        #expect(report.isVerified, "\(report.errors)")
        let sign = try TestSupport.apkpatch(["sign", "--debug-keystore", directory.appendingPathComponent("d.p12").path,
                                             "--out", directory.appendingPathComponent("ours.apk").path, signed])
        #expect(sign.succeeded, "sign takes it too: \(sign)")
    }

    /// Two end records that end the file, and a count above the central directory's records: no command here opens
    /// such an archive, so verify reports it alone (`--signature-only` too, as a malformed APK).
    @Test("a second end record, a count above the records: verify names each")
    func endRecordsReadersDisagreeOn() throws {
        let directory = try TestSupport.makeTemporaryDirectory("archive-checks-end")
        let v1Only = try Self.v1Only(in: directory)
        // The comment holds a copy of the end record: both describe the same central directory, and libziparchive,
        // which reads the last, opens the APK.
        var twice = try ZipRelayout(bytes: v1Only)
        let end = twice.archive.endOfCentralDirectory
        twice.comment = EndOfCentralDirectory(entryCount: end.entryCount, centralDirectorySize: end.centralDirectorySize,
                                              centralDirectoryOffset: end.centralDirectoryOffset).encoded()
        let two = directory.appendingPathComponent("two-end-records.apk").path
        try VerifyFixtures.write(try twice.build(), to: two)
        #expect(try TestSupport.libziparchiveCheck(two).succeeded)

        var above = v1Only
        for field in [above.count - 22 + 8, above.count - 22 + 10] { above[field] += 1 }
        let more = directory.appendingPathComponent("count-above.apk").path
        try VerifyFixtures.write(above, to: more)
        #expect(!(try TestSupport.libziparchiveCheck(more).succeeded), "libziparchive runs off the end of the central directory")

        for (path, code, words) in [(two, "ARCHIVE_SECOND_END_RECORD", "two end of central directory records"),
                                    (more, "ARCHIVE_ENTRY_COUNT_MISMATCH", "entries, but the central directory (")] {
            for signatureOnly in [false, true] {
                let report = try VerifyFixtures.verify(path, signatureOnly: signatureOnly)
                #expect(Self.codes(report.signatureErrors) == [code] && !report.isVerified, "\(path): \(report.errors)")
                #expect(report.signatureErrors.first?.message.contains(words) == true, "\(report.signatureErrors)")
            }
        }
    }

    /// The command line: `--json` codes, the text under its own heading with a verdict line, `--signature-only`
    /// apksigner's verdict, and `sign` refusing the same APK with the same words.
    @Test("verify's text and --json; sign refuses the same APK")
    func commandLine() throws {
        let directory = try TestSupport.makeTemporaryDirectory("archive-checks-cli")
        let path = directory.appendingPathComponent("gap.apk").path
        try VerifyFixtures.write(try Layout.bytesBeforeEndRecord.apply(to: try Self.v1Only(in: directory)), to: path)

        let json = try TestSupport.apkpatch(["verify", "--json", path])
        #expect(json.status == 1, "\(json)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        #expect(object["verified"] as? Bool == false && object["signatureVerified"] as? Bool == true, "\(json.stdout)")
        let archiveErrors = try #require(object["archiveErrors"] as? [[String: Any]], "\(json.stdout)")
        #expect(archiveErrors.map { $0["code"] as? String } == ["ARCHIVE_BYTES_BEFORE_END_RECORD"], "\(json.stdout)")

        let text = try TestSupport.apkpatch(["verify", path])
        #expect(text.status == 1, "\(text)")
        for line in ["Archive checks (beyond apksigner): 1 error", "ERROR: [ARCHIVE_BYTES_BEFORE_END_RECORD] 46 bytes lie between the central directory",
                     "DOES NOT VERIFY: the signatures verify, but ZIP readers disagree about this archive's layout (use --signature-only for apksigner's verdict)"] {
            #expect(text.stderr.contains(line), "\(line)\n\(text)")
        }
        #expect(try TestSupport.apkpatch(["verify", "--signature-only", path]).succeeded)

        let out = directory.appendingPathComponent("signed.apk").path
        let sign = try TestSupport.apkpatch(["sign", "--debug-keystore", directory.appendingPathComponent("d.p12").path, "--out", out, path])
        #expect(sign.status == 1 && sign.stderr.contains(Layout.bytesBeforeEndRecord.words), "\(sign)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
