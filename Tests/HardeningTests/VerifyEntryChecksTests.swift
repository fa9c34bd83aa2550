import APKCore
import Foundation
import Testing
import TestSupport
import ZlibWrapper

/// `verify --check-entries` (issue 19): entries whose data is not what their headers say, in APKs whose signatures
/// verify (apksigner signs and accepts them: the v2+ schemes digest the bytes as they are, and a JAR check skips
/// `META-INF/`). Without the option verify passes them, as apksigner does; with it each entry a device cannot read
/// (libziparchive refuses its stream or size) is an ENTRY_DATA_CORRUPT error, a wrong CRC-32 (which libziparchive
/// does not compare) an ENTRY_CRC32_MISMATCH warning, and bytes after a deflate stream's end an
/// ENTRY_BYTES_AFTER_DEFLATE_STREAM warning.
/// The damage is CorruptEntryTests' (every shape `sign` refuses), the inputs HostileArchiveMatrixTests'.
@Suite(.removesTemporaryDirectories) struct VerifyEntryChecksTests {
    let dir: URL

    init() throws { dir = try TestSupport.makeTemporaryDirectory("verify-entries") }

    typealias Damage = CorruptEntryTests.Damage
    /// The shapes whose entry cannot be read, those that read with another CRC-32, those with bytes after the stream.
    static let unreadable: [Damage] = [.truncatedDeflate, .invalidDeflate, .unterminatedDeflate, .inflatesLonger, .inflatesShorter]
    static let crc: [Damage] = [.storedCRC, .deflatedCRC, .spanningStoredCRC, .largeStoredCRC]
    static let trailing: [Damage] = [.trailingAfterDeflate, .trailingAfterLargeDeflate]

    func write(_ bytes: [UInt8], _ name: String) throws -> String {
        let path = dir.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text.prefix(2000))")
    }

    /// The `context` of each finding with `code` in the report's `key` list.
    static func contexts(_ object: [String: Any], _ key: String, _ code: String) -> [String] {
        (object[key] as? [[String: Any]] ?? []).filter { $0["code"] as? String == code }.compactMap { $0["context"] as? String }
    }

    /// Every shape in one v2+v3-signed APK (minSdkVersion 24: no JAR check reads any entry).
    @Test func everyDamageFoundWithoutJARCheck() throws {
        var layout = try ZipRelayout(bytes: try HostileArchiveMatrixTests.inputs.get().unsigned)
        layout.trailing = try Damage.allCases.map(CorruptEntryTests.record)
        let apk = try write(try HostileArchiveMatrixTests.apksigned(try layout.build(), ["--v1-signing-enabled", "false"]), "damaged-v2.apk")
        #expect(try TestSupport.run("apksigner", ["verify", apk]).succeeded, "apksigner accepts the signatures over the damage")
        // Android's reader fails on the streams (Debian's libziparchive does not compare CRC-32s; upstream does).
        let android = try TestSupport.libziparchiveCheck(apk)
        for damage in Self.unreadable {
            #expect(android.stdout.contains(damage.name + ":"), "libziparchive reads \(damage.name): \(android)")
        }

        // Without the option verify gives apksigner's verdict and reads no entry.
        let plain = try TestSupport.apkpatch(["verify", "--json", apk])
        #expect(plain.succeeded, "\(plain)")
        let plainReport = try Self.json(plain.stdout)
        #expect(plainReport["entriesChecked"] as? Bool == false && (plainReport["entryErrors"] as? [Any])?.isEmpty == true, "\(plain.stdout.prefix(2000))")

        let checked = try TestSupport.apkpatch(["verify", "--check-entries", "--json", apk])
        #expect(checked.status == 1, "\(checked)")
        let report = try Self.json(checked.stdout)
        #expect(report["entriesChecked"] as? Bool == true && report["signatureVerified"] as? Bool == true && report["verified"] as? Bool == false)
        #expect(Set(Self.contexts(report, "entryErrors", "ENTRY_DATA_CORRUPT")) == Set(Self.unreadable.map(\.name)), "\(checked.stdout.prefix(4000))")
        #expect((report["entryErrors"] as? [Any])?.count == Self.unreadable.count, "one error per entry")
        #expect(Set(Self.contexts(report, "entryWarnings", "ENTRY_CRC32_MISMATCH")) == Set(Self.crc.map(\.name)), "\(checked.stdout.prefix(4000))")
        #expect(Set(Self.contexts(report, "entryWarnings", "ENTRY_BYTES_AFTER_DEFLATE_STREAM")) == Set(Self.trailing.map(\.name)), "\(checked.stdout.prefix(4000))")
        #expect((report["entryWarnings"] as? [Any])?.count == Self.crc.count + Self.trailing.count, "one warning per entry")
        #expect(!checked.stdout.contains("\"JAR_SIG"), "no JAR signature was checked")

        let text = try TestSupport.apkpatch(["verify", "--check-entries", apk])
        #expect(text.status == 1, "\(text)")
        #expect(text.stderr.contains("Entry checks (beyond apksigner): \(Self.unreadable.count) errors, \(Self.crc.count + Self.trailing.count) warnings"), "\(text.stderr)")
        #expect(text.stderr.contains("WARNING: [ENTRY_CRC32_MISMATCH] \(Damage.storedCRC.name): its data has CRC-32 0x"), "\(text.stderr)")
        #expect(text.stderr.contains("WARNING: [ENTRY_CRC32_MISMATCH] \(Damage.deflatedCRC.name): its inflated data has CRC-32 0x"), "\(text.stderr)")
        #expect(text.stderr.contains("ERROR: [ENTRY_DATA_CORRUPT] \(Damage.inflatesShorter.name): the entry's data cannot be read: its data does not inflate as its header declares"), "\(text.stderr)")
        #expect(text.stderr.contains("WARNING: [ENTRY_BYTES_AFTER_DEFLATE_STREAM] \(Damage.trailingAfterDeflate.name): 7 of the entry's"), "\(text.stderr)")
        #expect(text.stderr.contains("CORRUPT ENTRIES: the signatures verify and Android would install this APK, but reading \(Self.unreadable.count) of its entries fails on the device; build it again from intact sources"), "\(text.stderr)")
        #expect(text.stdout.isEmpty || !text.stdout.contains("ENTRY_"), "apksigner's lines stay apksigner's: \(text.stdout)")
    }

    /// The control: the intact APK passes with the option, and nothing is reported.
    @Test func intactAPKPasses() throws {
        let apk = try write(try HostileArchiveMatrixTests.inputs.get().signed, "intact.apk")
        let checked = try TestSupport.apkpatch(["verify", "--check-entries", "--json", apk])
        #expect(checked.succeeded, "\(checked)")
        let report = try Self.json(checked.stdout)
        #expect(report["entriesChecked"] as? Bool == true)
        #expect((report["entryErrors"] as? [Any])?.isEmpty == true && (report["entryWarnings"] as? [Any])?.isEmpty == true, "\(checked.stdout.prefix(2000))")
        let text = try TestSupport.apkpatch(["verify", "--check-entries", apk])
        #expect(text.succeeded && !text.stderr.contains("Entry checks"), "\(text)")
    }

    /// A JAR-signed APK (v1 only, minSdkVersion below 24): the JAR check skips `META-INF/` (as apksig does), so
    /// damaged entries there pass it and only the scan finds them; an entry it digests it reports itself, once.
    @Test func entriesTheJARCheckDoesNotRead() throws {
        let v1Only = try HostileArchiveMatrixTests.inputs.get().v1Only
        func renamed(_ damage: Damage, _ name: String) throws -> (entry: ZipEntry, data: [UInt8]) {
            let (entry, data) = try CorruptEntryTests.record(damage)
            return (CorruptEntryTests.entry(name, method: entry.method, crc: entry.crc32, compressed: Int(entry.compressedSize),
                                            uncompressed: Int(entry.uncompressedSize)), data)
        }
        var layout = try ZipRelayout(bytes: v1Only)
        layout.trailing = [try renamed(.storedCRC, "META-INF/damaged-stored.bin"), try renamed(.invalidDeflate, "META-INF/damaged-deflate.bin"),
                           try renamed(.trailingAfterDeflate, "META-INF/trailing.bin")]
        let apk = try write(try layout.build(), "damaged-meta-inf.apk")
        #expect(try TestSupport.run("apksigner", ["verify", apk]).succeeded, "apksigner accepts it")
        let plain = try TestSupport.apkpatch(["verify", apk])
        #expect(plain.succeeded, "\(plain)")
        let checked = try TestSupport.apkpatch(["verify", "--check-entries", "--json", apk])
        #expect(checked.status == 1, "\(checked)")
        let report = try Self.json(checked.stdout)
        #expect(report["signatureVerified"] as? Bool == true && (report["verifiedSchemes"] as? [String]) == ["v1"], "\(checked.stdout.prefix(2000))")
        #expect(Self.contexts(report, "entryErrors", "ENTRY_DATA_CORRUPT") == ["META-INF/damaged-deflate.bin"], "\(checked.stdout.prefix(3000))")
        #expect(Self.contexts(report, "entryWarnings", "ENTRY_CRC32_MISMATCH") == ["META-INF/damaged-stored.bin"], "\(checked.stdout.prefix(3000))")
        #expect(Self.contexts(report, "entryWarnings", "ENTRY_BYTES_AFTER_DEFLATE_STREAM") == ["META-INF/trailing.bin"], "\(checked.stdout.prefix(3000))")

        // A damaged entry the JAR check digests (apksigner signs a stored one without looking at its CRC-32): the
        // JAR check fails on it, and the scan does not read it again.
        var digested = try ZipRelayout(bytes: try HostileArchiveMatrixTests.inputs.get().unsigned)
        digested.trailing = [try CorruptEntryTests.record(.storedCRC)]
        let jarSigned = try write(try HostileArchiveMatrixTests.apksigned(try digested.build(), ["--min-sdk-version", "21", "--v2-signing-enabled", "false", "--v3-signing-enabled", "false"]), "damaged-v1.apk")
        let jar = try TestSupport.apkpatch(["verify", "--check-entries", "--min-sdk-version", "21", "--json", jarSigned])
        #expect(jar.status == 1, "\(jar)")
        let jarReport = try Self.json(jar.stdout)
        let jarErrors = (jarReport["errors"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String }
        #expect(jarErrors.contains { $0.hasPrefix("Failed to read entry \(Damage.storedCRC.name)") }, "\(jar.stdout.prefix(3000))")
        #expect(Self.contexts(jarReport, "entryWarnings", "ENTRY_CRC32_MISMATCH").isEmpty, "read twice: \(jar.stdout.prefix(3000))")
    }
}
