import APKCore
import Foundation
import Testing
import TestSupport
import ZlibWrapper

/// Records that a signing leaves behind (issue 19): apksig drops `stamp-cert-sha256` and `pinlist.meta` from the
/// central directory of what it re-signs but copies their local records on as bytes between records
/// (`ApkSigner.sign` skips those entries before it steps past their records). Our strict reader must read that
/// shape (every APK apksigner re-signs from a stamped Play APK has it) and nothing else of its kind, and our own
/// outputs must not have it: each must pass our `verify`, `unpack` and `sign`, apksigner, `zipalign -c` and
/// Android's libziparchive.
@Suite(.removesTemporaryDirectories) struct StaleSignerRecordTests {
    let dir: URL
    let keystore: String
    static let password = "stale-records"
    var signing: [String] { ["--ks", keystore, "--ks-pass", "env:STALE_KS_PASS"] }
    var environment: [String: String] { ["STALE_KS_PASS": Self.password] }

    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("stale")
        keystore = dir.appendingPathComponent("release.p12").path
        try TestSupport.makeKeyStore(at: keystore, password: Self.password, dname: "CN=Stale")
    }

    /// A Cordova-like APK with pin hints and a source stamp entry (as bundletool and Play leave one), signed by
    /// apksigner twice: the second signing finds the first one's stale stamp record and its pinlist.meta,
    /// and leaves both behind as bytes between records.
    func apksignerResigned() throws -> String {
        var fixture = FixtureAPK.cordovaLike()
        fixture.assets["com.android.hints.pins.txt"] = Array("classes.dex\nresources.arsc 0 64\n".utf8)
        let input = try fixture.build(in: dir, name: "pinned.apk")
        try appendStampAndAnEntry(to: input)
        let once = dir.appendingPathComponent("apksigner-once.apk").path, twice = dir.appendingPathComponent("apksigner-twice.apk").path
        for (from, to) in [(input, once), (once, twice)] {
            let signed = try TestSupport.run("apksigner", ["sign", "--ks", keystore, "--ks-pass", "env:STALE_KS_PASS", "--out", to, from],
                                             environment: environment)
            try #require(signed.succeeded, "\(signed)")
        }
        return twice
    }

    /// Appends a source stamp entry (as bundletool and Play leave one) and a deflated entry after it to `apk`.
    func appendStampAndAnEntry(to apk: String) throws {
        let python = """
        import sys, zipfile
        with zipfile.ZipFile(sys.argv[1], 'a') as z:
            z.writestr(zipfile.ZipInfo('stamp-cert-sha256', (2024, 1, 1, 0, 0, 0)), b'\\x5a' * 32)
            z.writestr(zipfile.ZipInfo('assets/after-stamp.txt', (2024, 1, 1, 0, 0, 0)), b'after the stamp', zipfile.ZIP_DEFLATED)
        """
        let stamped = try TestSupport.run("python3", ["-c", python, apk])
        try #require(stamped.succeeded, "\(stamped)")
    }

    /// How often `name` occurs in `bytes` (a record's name is in its local header and its central record).
    static func occurrences(of name: String, in bytes: [UInt8]) -> Int {
        let needle = Array(name.utf8)
        guard bytes.count >= needle.count else { return 0 }
        return (0...(bytes.count - needle.count)).filter { bytes[$0] == needle[0] && Array(bytes[$0..<($0 + needle.count)]) == needle }.count
    }

    /// Our output: strictly readable with no leftover record, every entry of the central directory and nothing
    /// else, and accepted by every reader we know.
    func expectClean(_ apk: String, _ label: String) throws {
        let archive = try APKArchive(path: apk)
        #expect(archive.zip.staleSignerRecords.isEmpty, "\(label): \(archive.zip.staleSignerRecords)")
        let bytes = try TestSupport.readBytes(apk)
        #expect(Self.occurrences(of: "stamp-cert-sha256", in: bytes) == 0, "\(label) carries the old stamp")
        #expect(Self.occurrences(of: "pinlist.meta", in: bytes) == 2, "\(label): one pinlist.meta, named in its local and central records")
        #expect(try TestSupport.run("apksigner", ["verify", apk]).succeeded, "\(label)")
        let zipalign = try TestSupport.run("zipalign", ["-c", "-p", "4", apk])
        #expect(zipalign.succeeded, "\(label): \(zipalign)")
        let android = try TestSupport.libziparchiveCheck(apk)
        #expect(android.succeeded && android.stdout.hasPrefix("OK \(archive.entries.count) entries"), "\(label): \(android)")
        let verify = try TestSupport.apkpatch(["verify", apk])
        #expect(verify.succeeded, "\(label): \(verify)")
        let unpacked = dir.appendingPathComponent("unpacked-\(label)").path
        let unpack = try TestSupport.apkpatch(["unpack", apk, "-o", unpacked])
        #expect(unpack.succeeded, "\(label): \(unpack)")
        let again = dir.appendingPathComponent("\(label)-again.apk").path
        let sign = try TestSupport.apkpatch(["sign"] + signing + ["--out", again, apk], environment: environment)
        #expect(sign.succeeded, "\(label): \(sign)")
    }

    @Test("apksigner's leftover stamp and pin-list records are read; sign and run leave them out")
    func apksignerLeftoversAreReadAndDropped() throws {
        let resigned = try apksignerResigned()
        let archive = try APKArchive(path: resigned)
        #expect(archive.zip.staleSignerRecords.count == 2, "the stamp and the first pinlist.meta: \(archive.zip.staleSignerRecords)")
        // Android reads it (by its central directory), and so does every command here.
        #expect(try TestSupport.libziparchiveCheck(resigned).succeeded)
        // (Signatures only: apksigner 31 keeps aapt's resources.arsc where it lies, off its 4-byte boundary, which
        // the install checks report; our sign below re-aligns it. From API 24: apksigner 31 writes pinlist.meta
        // after the JAR signature, so its v1 signature lacks the entry and it refuses its own output below 24.)
        let verify = try TestSupport.apkpatch(["verify", "--signature-only", "--min-sdk-version", "24", resigned])
        #expect(verify.succeeded, "\(verify)")
        let unpacked = dir.appendingPathComponent("unpacked-resigned")
        let unpack = try TestSupport.apkpatch(["unpack", resigned, "-o", unpacked.path])
        #expect(unpack.succeeded, "\(unpack)")
        #expect(!FileManager.default.fileExists(atPath: unpacked.appendingPathComponent("stamp-cert-sha256").path))

        let signed = dir.appendingPathComponent("signed.apk").path
        let sign = try TestSupport.apkpatch(["sign"] + signing + ["--out", signed, resigned], environment: environment)
        #expect(sign.succeeded, "\(sign)")
        try expectClean(signed, "signed")
        // An input holding pinlist.meta in its central directory (our own output): its record goes too.
        let signedTwice = dir.appendingPathComponent("signed-twice.apk").path
        #expect(try TestSupport.apkpatch(["sign"] + signing + ["--out", signedTwice, signed], environment: environment).succeeded)
        try expectClean(signedTwice, "signed-twice")

        let aligned = dir.appendingPathComponent("aligned.apk").path
        let align = try TestSupport.apkpatch(["align", "-f", "-p", "4", resigned, aligned])
        #expect(align.succeeded, "\(align)")
        #expect(try APKArchive(path: aligned).zip.staleSignerRecords.isEmpty)
        #expect(try TestSupport.run("zipalign", ["-c", "-p", "4", aligned]).succeeded)
        #expect(try TestSupport.libziparchiveCheck(aligned).succeeded)

        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("patched\n", to: "assets/www/patched.txt", in: patch)
        let ran = dir.appendingPathComponent("ran.apk").path
        let run = try TestSupport.apkpatch(["run", resigned, "--patch", patch.path, "--out", ran] + signing, environment: environment)
        #expect(run.succeeded, "\(run)")
        let ranArchive = try APKArchive(path: ran)
        #expect(ranArchive.zip.staleSignerRecords.isEmpty && ranArchive.entry(named: "stamp-cert-sha256") == nil)
        #expect(try TestSupport.libziparchiveCheck(ran).succeeded)
        #expect(try TestSupport.run("apksigner", ["verify", ran]).succeeded)
    }

    /// A leftover record before the first entry (a stamp that was the first record) is no prefix: Android's
    /// libziparchive finds a local header at offset 0 and reads the APK; sign leaves the record out.
    @Test func leftoverAtTheStart() throws {
        var layout = try ZipRelayout(bytes: try TestSupport.readBytes(try FixtureAPK.cordovaLike().build(in: dir, name: "start.apk")))
        let digest = [UInt8](repeating: 0x5a, count: 32)
        let stamp = ZipEntry(nameBytes: Array("stamp-cert-sha256".utf8), method: .stored, crc32: CRC32.checksum(digest),
                             compressedSize: 32, uncompressedSize: 32, lastModifiedTime: 0, lastModifiedDate: 0x3a21)
        layout.inserted[0] = stamp.encodedLocalHeader(extra: []) + digest
        let input = dir.appendingPathComponent("leading-stamp.apk").path
        try Data(try layout.build()).write(to: URL(fileURLWithPath: input))
        #expect(try APKArchive(path: input).zip.staleSignerRecords == [0..<Int64(30 + 17 + 32)])
        #expect(try TestSupport.libziparchiveCheck(input).succeeded)
        let signed = dir.appendingPathComponent("leading-stamp-signed.apk").path
        let sign = try TestSupport.apkpatch(["sign"] + signing + ["--out", signed, input], environment: environment)
        #expect(sign.succeeded, "\(sign)")
        #expect(try APKArchive(path: signed).zip.firstLocalHeaderOffset == 0)
        #expect(Self.occurrences(of: "stamp-cert-sha256", in: try TestSupport.readBytes(signed)) == 0)
        #expect(try TestSupport.run("apksigner", ["verify", signed]).succeeded)
        #expect(try TestSupport.libziparchiveCheck(signed).succeeded)
    }

    /// apksig's own stamp test APKs (v1-only-with-stamp.apk and its siblings) have zero padding before their stamp
    /// entry; apksigner re-signing one copies the padding and then the stamp's record on: a leftover after zeros,
    /// read as one (verify passes apksigner's output, as apksigner does) and left out by sign. Before the first
    /// local header zeros stay a prefix, leftover or not.
    @Test func leftoverAfterZeroPadding() throws {
        let input = try FixtureAPK.cordovaLike().build(in: dir, name: "padded.apk")
        try appendStampAndAnEntry(to: input)
        // Aligned (as an installable APK is); the padding keeps every offset's remainder.
        let aligned = dir.appendingPathComponent("padded-aligned.apk").path
        let zipalign = try TestSupport.run("zipalign", ["-p", "4", input, aligned])
        try #require(zipalign.succeeded, "\(zipalign)")
        var layout = try ZipRelayout(bytes: try TestSupport.readBytes(aligned))
        let stampPosition = try #require(layout.archive.indicesInFileOrder.firstIndex { layout.archive.entries[$0].name == "stamp-cert-sha256" })
        layout.inserted[stampPosition] = [UInt8](repeating: 0, count: 16384)
        let padded = dir.appendingPathComponent("padded-stamp.apk").path
        try Data(try layout.build()).write(to: URL(fileURLWithPath: padded))
        let resigned = dir.appendingPathComponent("padded-resigned.apk").path
        let apksigner = try TestSupport.run("apksigner", ["sign", "--ks", keystore, "--ks-pass", "env:STALE_KS_PASS", "--out", resigned, padded],
                                            environment: environment)
        try #require(apksigner.succeeded, "\(apksigner)")
        #expect(try APKArchive(path: resigned).zip.staleSignerRecords.count == 1, "apksigner's output holds one leftover stamp record")
        let verify = try TestSupport.apkpatch(["verify", resigned])
        #expect(verify.succeeded, "verify of apksigner's re-signed output: \(verify)")
        let signed = dir.appendingPathComponent("padded-signed.apk").path
        let sign = try TestSupport.apkpatch(["sign"] + signing + ["--out", signed, resigned], environment: environment)
        #expect(sign.succeeded, "\(sign)")
        #expect(Self.occurrences(of: "stamp-cert-sha256", in: try TestSupport.readBytes(signed)) == 0, "sign kept the leftover stamp")
        #expect(try TestSupport.run("apksigner", ["verify", signed]).succeeded)

        var prefixed = try ZipRelayout(bytes: try TestSupport.readBytes(try FixtureAPK.cordovaLike().build(in: dir, name: "prefixed.apk")))
        let digest = [UInt8](repeating: 0x5a, count: 32)
        let stamp = ZipEntry(nameBytes: Array("stamp-cert-sha256".utf8), method: .stored, crc32: CRC32.checksum(digest),
                             compressedSize: 32, uncompressedSize: 32, lastModifiedTime: 0, lastModifiedDate: 0x3a21)
        prefixed.inserted[0] = [UInt8](repeating: 0, count: 16) + stamp.encodedLocalHeader(extra: []) + digest
        let prefixedPath = dir.appendingPathComponent("zeros-then-stamp.apk").path
        try Data(try prefixed.build()).write(to: URL(fileURLWithPath: prefixedPath))
        let refused = try TestSupport.apkpatch(["sign"] + signing + ["--out", signed + ".prefixed", prefixedPath], environment: environment)
        #expect(refused.status == 1 && refused.stderr.contains("before the first local header"), "\(refused)")
    }

    /// Dropping a stamp entry's record gives exactly what apksigner gives for the same APK without the entry:
    /// the deviation from apksig's bytes is that record, nothing else.
    @Test func droppedStampIsAsIfItWereNeverThere() throws {
        let input = try FixtureAPK.cordovaLike().build(in: dir, name: "plain.apk")
        let withStamp = dir.appendingPathComponent("with-stamp.apk").path, without = dir.appendingPathComponent("without-stamp.apk").path
        let python = """
        import shutil, sys, zipfile
        shutil.copy(sys.argv[1], sys.argv[2]); shutil.copy(sys.argv[1], sys.argv[3])
        for path, stamp in [(sys.argv[2], True), (sys.argv[3], False)]:
            with zipfile.ZipFile(path, 'a') as z:
                if stamp:
                    z.writestr(zipfile.ZipInfo('stamp-cert-sha256', (2024, 1, 1, 0, 0, 0)), b'\\x5a' * 32)
                # Deflated: compressed entries are never re-aligned, so the shift that dropping the stamp
                # makes cannot change its record.
                z.writestr(zipfile.ZipInfo('assets/after-stamp.txt', (2024, 1, 1, 0, 0, 0)), b'after the stamp', zipfile.ZIP_DEFLATED)
        """
        let made = try TestSupport.run("python3", ["-c", python, input, withStamp, without])
        try #require(made.succeeded, "\(made)")
        let layout = ["--alignment-preserved", "true", "--lib-page-alignment", "4096", "--misaligned-apk-permitted", "true", "--v4-signing-enabled", "false"]
        let ours = dir.appendingPathComponent("ours.apk").path, theirs = dir.appendingPathComponent("theirs.apk").path
        let sign = try TestSupport.apkpatch(["sign"] + signing + layout + ["--out", ours, withStamp], environment: environment)
        #expect(sign.succeeded, "\(sign)")
        let apksigner = try TestSupport.run("apksigner", ["sign", "--ks", keystore, "--ks-pass", "env:STALE_KS_PASS", "--v4-signing-enabled", "false",
                                                          "--out", theirs, without], environment: environment)
        #expect(apksigner.succeeded, "\(apksigner)")
        #expect(try TestSupport.readBytes(ours) == TestSupport.readBytes(theirs))
        // apksigner's own output of the stamped APK keeps the record as bytes between records.
        let theirsStamped = dir.appendingPathComponent("theirs-stamped.apk").path
        #expect(try TestSupport.run("apksigner", ["sign", "--ks", keystore, "--ks-pass", "env:STALE_KS_PASS", "--v4-signing-enabled", "false",
                                                  "--out", theirsStamped, withStamp], environment: environment).succeeded)
        #expect(try APKArchive(path: theirsStamped).zip.staleSignerRecords.count == 1)
        #expect(Self.occurrences(of: "stamp-cert-sha256", in: try TestSupport.readBytes(theirsStamped)) == 1)
    }
}
