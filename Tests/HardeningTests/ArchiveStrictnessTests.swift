import APKCore
import Foundation
import Testing
import TestSupport
import ZlibWrapper

/// The same archive strictness in every command (issue 19): bytes no central-directory record accounts for,
/// a second end record, an entry count that disagrees with the central directory, and names that name no file
/// are refused by `unpack`, `run`, `sign` and `watch` before anything is written, and fail `verify`. A v1-only
/// APK with a prefix (Janus, CVE-2017-13156) fails `verify` although apksigner 0.9 accepts it.
@Suite(.removesTemporaryDirectories) struct ArchiveStrictnessTests {
    enum Hostile: String, CaseIterable, CustomStringConvertible {
        case prefix, zeroPrefix, hiddenLocalEntry, bytesAfterEntries, bytesBeforeEndRecord, uncountedCentralRecord, secondEndRecord
        case emptyName, dotName, dotDotName
        /// The shape a re-signing leaves (`ZipArchive.staleSignerRecords`) is read only when it is exactly that:
        /// an intact record of `stamp-cert-sha256` or `pinlist.meta`. A damaged one, or one followed by more
        /// bytes, is an extra local entry like any other.
        case damagedStampRecord, stampRecordThenHiddenEntry
        var description: String { rawValue }

        /// What the refusal says.
        var message: String {
            switch self {
            // Zeros too: Android 8.1+ opens no APK that does not start with a local header (libziparchive).
            case .prefix, .zeroPrefix: return "bytes before the first local header belong to no entry"
            case .hiddenLocalEntry, .bytesAfterEntries, .damagedStampRecord, .stampRecordThenHiddenEntry:
                return "belong to no entry of the central directory"
            case .bytesBeforeEndRecord: return "between the central directory"
            case .uncountedCentralRecord: return "more bytes after them"
            // The record in the comment ends the file, and so does the record holding it: readers disagree on
            // which describes the archive (libziparchive takes the last, a streaming reader meets the first).
            case .secondEndRecord: return "two end of central directory records"
            case .emptyName, .dotName, .dotDotName: return "which names no file"
            }
        }
    }

    static let dexPrefix: [UInt8] = Array("dex\n035\0".utf8) + (0..<120).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }

    /// A local record for an entry the central directory does not list: what a streaming reader would see.
    static func hiddenRecord(named name: String, data: [UInt8] = Array("hidden content".utf8), crc: UInt32? = nil) -> [UInt8] {
        let entry = ZipEntry(nameBytes: Array(name.utf8), method: .stored, crc32: crc ?? CRC32.checksum(data), compressedSize: Int64(data.count),
                             uncompressedSize: Int64(data.count), lastModifiedTime: 0, lastModifiedDate: 0x3a21)
        return entry.encodedLocalHeader(extra: []) + data
    }

    static func make(_ hostile: Hostile, from base: [UInt8]) throws -> [UInt8] {
        var layout = try ZipRelayout(bytes: base)
        switch hostile {
        case .prefix: layout.inserted[0] = dexPrefix
        case .zeroPrefix: layout.inserted[0] = [UInt8](repeating: 0, count: 64)
        case .hiddenLocalEntry: layout.inserted[1] = hiddenRecord(named: "classes.dex")
        case .bytesAfterEntries: layout.afterEntries = hiddenRecord(named: "assets/after.txt")
        case .damagedStampRecord:
            let digest = [UInt8](repeating: 0x5a, count: 32)
            layout.inserted[1] = hiddenRecord(named: "stamp-cert-sha256", data: digest, crc: CRC32.checksum(digest) ^ 1)
        case .stampRecordThenHiddenEntry:
            layout.inserted[1] = hiddenRecord(named: "stamp-cert-sha256", data: [UInt8](repeating: 0x5a, count: 32)) + hiddenRecord(named: "classes.dex")
        case .bytesBeforeEndRecord: layout.beforeEndRecord = Array("junk between the central directory and its end".utf8)
        case .uncountedCentralRecord:
            var entry = layout.archive.entries[0]
            entry.nameBytes = Array("assets/uncounted.txt".utf8)
            layout.uncountedCentralRecords = entry.encodedCentralDirectoryRecord(localHeaderOffset: 0)
        case .secondEndRecord:
            layout.comment = EndOfCentralDirectory(entryCount: 1, centralDirectorySize: 0, centralDirectoryOffset: 0).encoded()
        case .emptyName, .dotName, .dotDotName:
            let name = hostile == .emptyName ? "" : hostile == .dotName ? "." : ".."
            var builder = ZipBuilder()
            builder.items = [.init(name: "AndroidManifest.xml", data: [1, 2, 3], crc: 0x55bc801d), .init(name: name, data: [], crc: 0)]
            return builder.build()
        }
        return try layout.build()
    }

    let dir: URL
    let base: String
    let patch: URL

    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("strict")
        let unsigned = try FixtureAPK.cordovaLike().build(in: dir, name: "unsigned.apk")
        base = dir.appendingPathComponent("base.apk").path
        let keys = dir.appendingPathComponent("k.p12").path
        try TestSupport.makeKeyStore(at: keys, password: "android", dname: "CN=Strict")
        let signed = try TestSupport.run("apksigner", ["sign", "--ks", keys, "--ks-pass", "pass:android", "--out", base, unsigned])
        guard signed.succeeded else { throw FixtureError(message: "apksigner sign: \(signed)") }
        patch = dir.appendingPathComponent("patch")
        try TestSupport.write("patched\n", to: "assets/www/patched.txt", in: patch)
    }

    @Test(arguments: Hostile.allCases)
    func everyCommandRefusesIt(_ hostile: Hostile) throws {
        let input = dir.appendingPathComponent("\(hostile).apk").path
        try Data(try Self.make(hostile, from: try TestSupport.readBytes(base))).write(to: URL(fileURLWithPath: input))
        let debug = dir.appendingPathComponent("debug-\(hostile).p12").path
        let out = dir.appendingPathComponent("out-\(hostile).apk").path
        let unpacked = dir.appendingPathComponent("unpacked-\(hostile)").path
        let commands: [(String, [String])] = [
            ("unpack", ["unpack", input, "-o", unpacked]),
            ("sign", ["sign", "--debug-keystore", debug, "--out", out, input]),
            ("run", ["run", input, "--patch", patch.path, "--debug-keystore", debug, "--out", out]),
            ("watch", ["watch", input, "--patch", patch.path, "--debug-keystore", debug, "--out", out]),
        ]
        for (name, arguments) in commands {
            let result = try TestSupport.run("timeout", ["60", TestSupport.apkpatchBinary] + arguments)
            #expect(result.status == 1, "\(name) must refuse \(hostile): \(result)")
            #expect(result.stderr.contains(hostile.message), "\(name) on \(hostile): \(result)")
            #expect(!FileManager.default.fileExists(atPath: out) && !FileManager.default.fileExists(atPath: unpacked),
                    "\(name) left output for \(hostile)")
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty, "no temporary file stays behind: \(leftovers)")
        let verify = try TestSupport.apkpatch(["verify", input])
        #expect(verify.status == 1, "verify must fail \(hostile): \(verify)")
    }

    /// Zero bytes between records are padding (apksig pads the entries to the signing block's 4096-byte
    /// boundary with them) and cannot hold a record: signed as apksigner signs them.
    @Test func zeroPaddingIsAccepted() throws {
        var layout = try ZipRelayout(bytes: try TestSupport.readBytes(base))
        layout.inserted[2] = [UInt8](repeating: 0, count: 64)
        let input = dir.appendingPathComponent("zero-gap.apk").path
        try Data(try layout.build()).write(to: URL(fileURLWithPath: input))
        let out = dir.appendingPathComponent("zero-gap-signed.apk").path
        let signed = try TestSupport.apkpatch(["sign", "--debug-keystore", dir.appendingPathComponent("z.p12").path, "--out", out, input])
        #expect(signed.succeeded, "\(signed)")
        #expect(try TestSupport.run("apksigner", ["verify", out]).succeeded)
    }

    /// A v1-only APK (targetSdkVersion 28: from 30 a v2 signature is required, and apksigner refuses v1 alone
    /// for that), its JAR signature covering entries only, so that its layout can change under it.
    func v1OnlyAPK() throws -> String {
        var fixture = FixtureAPK.cordovaLike()
        fixture.targetSdk = 28
        let unsigned = try fixture.build(in: dir, name: "v1-unsigned.apk")
        let keys = dir.appendingPathComponent("j.p12").path
        try TestSupport.makeKeyStore(at: keys, password: "android", dname: "CN=Janus")
        let v1Only = dir.appendingPathComponent("v1only.apk").path
        let signed = try TestSupport.run("apksigner", ["sign", "--ks", keys, "--ks-pass", "pass:android", "--v2-signing-enabled", "false",
                                                       "--v3-signing-enabled", "false", "--out", v1Only, unsigned])
        try #require(signed.succeeded, "\(signed)")
        return v1Only
    }

    /// Codes of `verify --json` (errors and install errors: "E:CODE"; warnings: "W:CODE").
    static func codes(_ result: TestSupport.ProcessResult) throws -> Set<String> {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result)")
        var codes: Set<String> = []
        for (key, mark) in [("errors", "E"), ("installErrors", "E"), ("archiveErrors", "E"), ("warnings", "W"), ("installWarnings", "W")] {
            for issue in object[key] as? [[String: Any]] ?? [] { codes.insert("\(mark):\(issue["code"] as? String ?? "?")") }
        }
        return codes
    }

    /// Janus (CVE-2017-13156): a v1-only APK with a DEX prefix. The JAR signature covers entries only, so
    /// apksigner 0.9 says it verifies; Android 5.0-8.0 would run the prefix as the app's code, and 8.1+ opens
    /// no such APK (libziparchive): verify fails it, signature-only too. A zero prefix cannot be a DEX: the
    /// signature verdict is apksigner's, and the install check still fails it. A local record hidden between
    /// entries is seen by no central-directory reader (Android, apksig): a signature warning, and apksigner's
    /// verdict (`--signature-only`) stands; verify fails it, as every other command refuses it (ARCHIVE_UNACCOUNTED_BYTES).
    @Test func bytesNoJARSignatureCoversInVerify() throws {
        let v1Only = try v1OnlyAPK()
        #expect(try TestSupport.run("apksigner", ["verify", v1Only]).succeeded)
        func variant(_ name: String, _ change: (inout ZipRelayout) -> Void) throws -> String {
            var layout = try ZipRelayout(bytes: try TestSupport.readBytes(v1Only))
            change(&layout)
            let path = dir.appendingPathComponent("\(name).apk").path
            try Data(try layout.build()).write(to: URL(fileURLWithPath: path))
            let theirs = try TestSupport.run("apksigner", ["verify", path])
            #expect(theirs.succeeded, "apksigner accepts \(name) (JAR signatures cover entries only): \(theirs)")
            return path
        }

        let janus = try variant("janus") { $0.inserted[0] = Self.dexPrefix }
        let ours = try TestSupport.apkpatch(["verify", "--json", janus])
        #expect(ours.status == 1, "\(ours)")
        #expect(try Self.codes(ours).isSuperset(of: ["E:JAR_SIG_UNPROTECTED_BYTES", "E:INSTALL_BYTES_BEFORE_FIRST_ENTRY"]), "\(ours)")
        let signatureOnly = try TestSupport.apkpatch(["verify", "--signature-only", janus])
        #expect(signatureOnly.status == 1 && signatureOnly.stderr.contains("Janus"), "\(signatureOnly)")

        let zeros = try variant("zero-prefix") { $0.inserted[0] = [UInt8](repeating: 0, count: 64) }
        let zeroReport = try TestSupport.apkpatch(["verify", "--json", zeros])
        #expect(zeroReport.status == 1, "\(zeroReport)")
        let zeroCodes = try Self.codes(zeroReport)
        #expect(zeroCodes.contains("E:INSTALL_BYTES_BEFORE_FIRST_ENTRY") && !zeroCodes.contains("E:JAR_SIG_UNPROTECTED_BYTES"), "\(zeroReport)")
        let zeroSignatures = try TestSupport.apkpatch(["verify", "--signature-only", zeros])
        #expect(zeroSignatures.succeeded, "the signature verdict is apksigner's: \(zeroSignatures)")

        let hidden = try variant("hidden-entry") { $0.inserted[1] = Self.hiddenRecord(named: "classes.dex") }
        let hiddenReport = try TestSupport.apkpatch(["verify", "--json", hidden])
        #expect(hiddenReport.status == 1, "\(hiddenReport)")
        let hiddenCodes = try Self.codes(hiddenReport)
        #expect(hiddenCodes.contains("W:JAR_SIG_UNPROTECTED_BYTES") && hiddenCodes.filter { $0.hasPrefix("E:") } == ["E:ARCHIVE_UNACCOUNTED_BYTES"], "\(hiddenReport)")
        let hiddenSignatures = try TestSupport.apkpatch(["verify", "--signature-only", hidden])
        #expect(hiddenSignatures.succeeded && hiddenSignatures.stdout.contains("WARNING: "), "the signature verdict is apksigner's: \(hiddenSignatures)")
        // The commands that write refuse all three.
        for input in [janus, zeros, hidden] {
            let out = dir.appendingPathComponent("v1-signed.apk").path
            let signed = try TestSupport.apkpatch(["sign", "--debug-keystore", dir.appendingPathComponent("d.p12").path, "--out", out, input])
            #expect(signed.status == 1 && signed.stderr.contains("belong to no entry"), "\(signed)")
            #expect(!FileManager.default.fileExists(atPath: out))
        }
    }
}
