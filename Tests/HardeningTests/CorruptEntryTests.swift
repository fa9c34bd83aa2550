import APKCore
import Foundation
import Testing
import TestSupport
import ZlibWrapper

/// Entries whose data does not match their headers (issue 19): `sign`, `run` and `watch` copy input entries as
/// they are, and must not sign damage in (`align --check-entries` refuses it too). Each case is one hand-made entry in an aapt-built APK: at the front
/// (in whole 1 MiB chunks, copied and digested on the SHA lanes) or at the back (in the section's partial last
/// chunk), with v1 (its digests inflate deflated entries) and without (nothing else inflates them).
@Suite(.removesTemporaryDirectories) struct CorruptEntryTests {
    enum Damage: String, CaseIterable, CustomStringConvertible {
        case storedCRC, deflatedCRC, truncatedDeflate, invalidDeflate, unterminatedDeflate, inflatesLonger, inflatesShorter
        /// Bytes after the end of the deflate stream, inside the compressed size: a few (inflated whole, by
        /// libdeflate), and 100 KB after a stream inflating past 4 MiB (streamed through zlib).
        case trailingAfterDeflate, trailingAfterLargeDeflate
        /// Stored entries whose data crosses chunk boundaries (its CRC-32 is put together from pieces), and
        /// one large enough to be copied apart from the other chunks.
        case spanningStoredCRC, largeStoredCRC
        var description: String { rawValue }
        var name: String { "assets/damaged-\(rawValue).bin" }
    }

    static let text = Array((0..<600).map { "function handler\($0)(event) { return event.items.length + \($0); }\n" }.joined().utf8)

    static func entry(_ name: String, method: CompressionMethod, crc: UInt32, compressed: Int, uncompressed: Int) -> ZipEntry {
        ZipEntry(nameBytes: Array(name.utf8), method: method, crc32: crc, compressedSize: Int64(compressed),
                 uncompressedSize: Int64(uncompressed), lastModifiedTime: 0, lastModifiedDate: 0x3a21)
    }

    static func stored(_ name: String, _ data: [UInt8], crc: UInt32? = nil) -> (entry: ZipEntry, data: [UInt8]) {
        (entry(name, method: .stored, crc: crc ?? CRC32.checksum(data), compressed: data.count, uncompressed: data.count), data)
    }

    /// The damaged record: header and data.
    static func record(_ damage: Damage) throws -> (entry: ZipEntry, data: [UInt8]) {
        let crc = CRC32.checksum(text)
        let deflated = try text.withUnsafeBytes { try Deflate.compress($0) }
        switch damage {
        case .storedCRC: return stored(damage.name, FixtureAPK.pseudoRandomBytes(count: 3000, seed: 7), crc: 0x1234_5678)
        case .spanningStoredCRC: return stored(damage.name, FixtureAPK.pseudoRandomBytes(count: 1_500_000, seed: 8), crc: 0x1234_5678)
        case .largeStoredCRC: return stored(damage.name, FixtureAPK.pseudoRandomBytes(count: 5_300_000, seed: 9), crc: 0x1234_5678)
        case .deflatedCRC:
            return (entry(damage.name, method: .deflated, crc: crc ^ 1, compressed: deflated.count, uncompressed: text.count), deflated)
        case .truncatedDeflate:
            let cut = Array(deflated.prefix(deflated.count / 2))
            return (entry(damage.name, method: .deflated, crc: crc, compressed: cut.count, uncompressed: text.count), cut)
        case .invalidDeflate:
            // 0xFF: a final block of the reserved type 3.
            let data = [0xFF] + FixtureAPK.pseudoRandomBytes(count: 200, seed: 10)
            return (entry(damage.name, method: .deflated, crc: crc, compressed: data.count, uncompressed: text.count), data)
        case .unterminatedDeflate:
            // One stored block that is not the final one, and nothing after it: the stream never ends.
            let payload = Array(text.prefix(30_000))
            let length = UInt16(payload.count)
            let data = [0x00, UInt8(length & 0xff), UInt8(length >> 8), UInt8(~length & 0xff), UInt8(~length >> 8)] + payload
            return (entry(damage.name, method: .deflated, crc: CRC32.checksum(payload), compressed: data.count, uncompressed: payload.count), data)
        case .inflatesLonger:
            return (entry(damage.name, method: .deflated, crc: crc, compressed: deflated.count, uncompressed: text.count - 1), deflated)
        case .inflatesShorter:
            return (entry(damage.name, method: .deflated, crc: crc, compressed: deflated.count, uncompressed: text.count + 1), deflated)
        case .trailingAfterDeflate:
            let data = deflated + Array("HIDDEN!".utf8)
            return (entry(damage.name, method: .deflated, crc: crc, compressed: data.count, uncompressed: text.count), data)
        case .trailingAfterLargeDeflate:
            let large = Array(repeating: text, count: 120).flatMap { $0 }
            let data = try large.withUnsafeBytes { try Deflate.compress($0) } + FixtureAPK.pseudoRandomBytes(count: 100_000, seed: 12)
            return (entry(damage.name, method: .deflated, crc: CRC32.checksum(large), compressed: data.count, uncompressed: large.count), data)
        }
    }

    let dir: URL
    let base: [UInt8]
    let patch: URL

    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("corrupt")
        base = try TestSupport.readBytes(try FixtureAPK.cordovaLike().build(in: dir, name: "base.apk"))
        patch = dir.appendingPathComponent("patch")
        try TestSupport.write("patched\n", to: "assets/www/patched.txt", in: patch)
    }

    /// The fixture with `record` first and 2.5 MiB of stored filler last (`front`), or the record last.
    func apk(_ name: String, with record: (entry: ZipEntry, data: [UInt8]), front: Bool) throws -> String {
        var layout = try ZipRelayout(bytes: base)
        if front {
            layout.leading = [record]
            layout.trailing = [Self.stored("assets/filler.bin", FixtureAPK.pseudoRandomBytes(count: 2_600_000, seed: 11))]
        } else {
            layout.trailing = [record]
        }
        let path = dir.appendingPathComponent(name).path
        try Data(try layout.build()).write(to: URL(fileURLWithPath: path))
        return path
    }

    func expectRefused(_ result: TestSupport.ProcessResult, _ damage: Damage, output: String, _ label: String) throws {
        #expect(result.status == 1, "\(label): \(result)")
        #expect(result.stderr.contains(damage.name) && result.stderr.contains("corrupt"), "\(label): \(result)")
        #expect(!FileManager.default.fileExists(atPath: output), "\(label) left its output")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty, "\(label) left \(leftovers)")
    }

    var debugKeystore: String { dir.appendingPathComponent("debug.p12").path }

    /// The same layouts with intact entries sign and verify: what fails below is the damage.
    @Test func intactEntriesSign() throws {
        for front in [true, false] {
            let input = try apk("intact-\(front).apk", with: Self.stored("assets/intact.bin", FixtureAPK.pseudoRandomBytes(count: 1_500_000, seed: 8)), front: front)
            for v1 in [true, false] {
                let out = dir.appendingPathComponent("intact-\(front)-\(v1)-signed.apk").path
                let signed = try TestSupport.apkpatch(["sign", "--debug-keystore", debugKeystore, "--out", out]
                                                      + (v1 ? [] : ["--v1-signing-enabled", "false", "--min-sdk-version", "24"]) + [input])
                #expect(signed.succeeded, "\(signed)")
                #expect(try TestSupport.run("apksigner", ["verify", "--min-sdk-version", v1 ? "21" : "24", out]).succeeded)
            }
        }
    }

    @Test("sign refuses a damaged entry, with v1 and without, in whole chunks and in the last one", arguments: Damage.allCases)
    func signRefuses(_ damage: Damage) throws {
        for front in [true, false] {
            let input = try apk("\(damage)-\(front).apk", with: try Self.record(damage), front: front)
            for v1 in [true, false] {
                let out = dir.appendingPathComponent("\(damage)-\(front)-\(v1)-signed.apk").path
                let result = try TestSupport.apkpatch(["sign", "--debug-keystore", debugKeystore, "--out", out]
                                                      + (v1 ? [] : ["--v1-signing-enabled", "false", "--min-sdk-version", "24"]) + [input])
                try expectRefused(result, damage, output: out, "sign \(damage), \(front ? "front" : "back"), v1 \(v1)")
            }
        }
    }

    @Test("run refuses a damaged entry it would copy raw", arguments: Damage.allCases)
    func runRefuses(_ damage: Damage) throws {
        let input = try apk("\(damage)-run.apk", with: try Self.record(damage), front: true)
        for v1 in [true, false] {
            let out = dir.appendingPathComponent("\(damage)-\(v1)-run.apk").path
            let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--debug-keystore", debugKeystore, "--out", out]
                                                  + (v1 ? [] : ["--v1-signing-enabled", "false", "--min-sdk-version", "24"]))
            try expectRefused(result, damage, output: out, "run \(damage), v1 \(v1)")
        }
    }

    /// align copies entries raw, as zipalign does (which copies a damaged one too); with --check-entries it reads
    /// each one's data beside the copy and keeps no output when one is damaged. Without it the damage is copied,
    /// and the signers refuse it (`signRefuses`).
    @Test("align --check-entries refuses a damaged entry (zipalign copies it)", arguments: Damage.allCases)
    func alignChecksEntries(_ damage: Damage) throws {
        let input = try apk("\(damage)-align.apk", with: try Self.record(damage), front: true)
        let zipaligned = dir.appendingPathComponent("\(damage)-zipaligned.apk").path
        #expect(try TestSupport.run("zipalign", ["-f", "-p", "4", input, zipaligned]).succeeded, "zipalign copies it")
        let copied = dir.appendingPathComponent("\(damage)-copied.apk").path
        #expect(try TestSupport.apkpatch(["align", "-f", "-p", "4", input, copied]).succeeded, "align copies it as zipalign does")
        let out = dir.appendingPathComponent("\(damage)-aligned.apk").path
        let result = try TestSupport.apkpatch(["align", "--check-entries", "-f", "-p", "4", input, out])
        #expect(result.status == 1 && result.stderr.contains("Unable to align"), "\(result)")
        try expectRefused(result, damage, output: out, "align \(damage)")
    }

    /// The control for `alignChecksEntries`: the same layouts, intact, align with --check-entries as zipalign
    /// aligns them.
    @Test func intactEntriesAlign() throws {
        for front in [true, false] {
            let input = try apk("intact-align-\(front).apk", with: Self.stored("assets/intact.bin", FixtureAPK.pseudoRandomBytes(count: 1_500_000, seed: 8)), front: front)
            let out = dir.appendingPathComponent("intact-\(front)-aligned.apk").path
            let result = try TestSupport.apkpatch(["align", "--check-entries", "-f", "-p", "4", input, out])
            #expect(result.succeeded, "\(result)")
            #expect(try TestSupport.run("zipalign", ["-c", "-p", "4", out]).succeeded)
        }
    }

    /// Android's own reader on the inputs with trailing bytes (libziparchive's inflateImpl refuses only bytes it
    /// has not read when the stream ends): the few after a small entry arrive in the same read and are never
    /// seen (hidden data, not an error), the 100 KB after the large one are refused. Either way the entry's
    /// bytes are not what it declares: `signRefuses` covers both.
    @Test func androidReadsPastOrRefusesTrailingBytes() throws {
        let small = try apk("trailing-android.apk", with: try Self.record(.trailingAfterDeflate), front: false)
        let hidden = try TestSupport.libziparchiveCheck(small)
        #expect(hidden.succeeded, "\(hidden)")
        let large = try apk("trailing-large-android.apk", with: try Self.record(.trailingAfterLargeDeflate), front: false)
        let refused = try TestSupport.libziparchiveCheck(large)
        #expect(!refused.succeeded && refused.stdout.contains(Damage.trailingAfterLargeDeflate.name), "\(refused)")
    }

    /// A stored entry cannot hide bytes after its data: its sizes must agree (stored data is what it is), so a
    /// compressed size beyond the uncompressed one is refused as malformed by every command.
    @Test func storedEntryWithTrailingBytes() throws {
        let data = FixtureAPK.pseudoRandomBytes(count: 3000, seed: 13)
        let record = (entry: Self.entry("assets/stored-trailing.bin", method: .stored, crc: CRC32.checksum(data),
                                        compressed: data.count + 7, uncompressed: data.count), data: data + Array("HIDDEN!".utf8))
        let input = try apk("stored-trailing.apk", with: record, front: false)
        let out = dir.appendingPathComponent("stored-trailing-out.apk").path
        for arguments in [["sign", "--debug-keystore", debugKeystore, "--out", out, input],
                          ["run", input, "--patch", patch.path, "--debug-keystore", debugKeystore, "--out", out],
                          ["unpack", input, "-o", out]] {
            let result = try TestSupport.apkpatch(arguments)
            #expect(result.status == 1 && result.stderr.contains("stored entry \"assets/stored-trailing.bin\" has compressed size"), "\(arguments[0]): \(result)")
            #expect(!FileManager.default.fileExists(atPath: out), "\(arguments[0]) left its output")
        }
    }

    /// unpack (libzip extracts stored entries, our reader deflated ones) says in its own words which entry is
    /// damaged, how (the CRC-32 it has and the one declared), and what to do; never libzip's bare "zip_fread: CRC
    /// error.". Nothing is extracted.
    @Test("unpack names the damaged entry, what is wrong and what to do", arguments: [Damage.storedCRC, .deflatedCRC])
    func unpackSaysWhatIsWrong(_ damage: Damage) throws {
        let record = try Self.record(damage)
        let input = try apk("\(damage)-unpack.apk", with: record, front: true)
        let out = dir.appendingPathComponent("\(damage)-unpacked").path
        let result = try TestSupport.apkpatch(["unpack", input, "-o", out])
        try expectRefused(result, damage, output: out, "unpack \(damage)")
        let actual = damage == .storedCRC ? CRC32.checksum(record.data) : CRC32.checksum(Self.text)
        func hex(_ value: UInt32) -> String { String(format: "0x%08x", value) }
        #expect(result.stderr.contains("entry \"\(damage.name)\" is corrupt: CRC-32 is \(hex(actual)), the archive says \(hex(record.entry.crc32))."), "\(result)")
        #expect(result.stderr.contains("download or build the APK again"), "\(result)")
        #expect(!result.stderr.contains("zip_") && !result.stderr.contains("CRC error"), "libzip's words: \(result)")
    }

    /// watch reports the failed build and keeps watching (a patch file could replace the entry): no output.
    @Test(arguments: [Damage.deflatedCRC, .spanningStoredCRC])
    func watchReportsAndWritesNothing(_ damage: Damage) throws {
        let input = try apk("\(damage)-watch.apk", with: try Self.record(damage), front: true)
        let out = dir.appendingPathComponent("\(damage)-watch-out.apk").path
        let (process, lines) = try TestSupport.startApkpatch(["watch", input, "--patch", patch.path, "--debug-keystore", debugKeystore, "--out", out])
        defer { if process.isRunning { process.terminate() } }
        #expect(lines.waitFor { $0.contains(damage.name) && $0.contains("corrupt") }, "\(lines.lines)")
        // No build was ever written: the line must not claim it keeps one.
        #expect(lines.waitFor { $0.contains("no build written yet") }, "\(lines.lines)")
        #expect(!lines.lines.contains { $0.contains("keeping the last good build") }, "\(lines.lines)")
        process.interrupt()
        process.waitUntilExit()
        #expect(!FileManager.default.fileExists(atPath: out))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }
}
