import Foundation
import Testing
import Align
import APKCore
import TestSupport

/// apksig re-aligns a stored entry by rebuilding its local extra field (`ApkSigner.createExtraFieldToAlignData`)
/// from a big-endian view of it (`LocalFileRecord.getExtra` returns a `slice()`), so the records it keeps or
/// drops are not the ones a little-endian reading sees. Entries with `zip`'s timestamp and Unix fields, with
/// zipalign's page padding after them, and apksigner's own output signed again: apkpatch writes apksigner 35's
/// bytes for each.
@Suite(.removesTemporaryDirectories) struct ApksigExtraFieldTests {
    @Test func storedEntriesWithExtraFieldsAreRealignedAsApksigDoes() throws {
        let directory = try TestSupport.makeTemporaryDirectory("apksig-extra")
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        func check(_ result: TestSupport.ProcessResult, _ what: String) throws {
            guard result.succeeded else { throw FixtureError(message: "\(what) failed:\n\(result)") }
        }
        var fixture = FixtureAPK()
        fixture.assets = ["stored.bin": Array(repeating: 0x41, count: 5000)]
        fixture.storedExtensions = ["bin"]
        let base = try fixture.build(in: directory)
        // `zip -0` stores the libraries with its UT (0x5455) and ux (0x7875) extra fields, in the local header too.
        let libraries = directory.appendingPathComponent("zipdir")
        for (name, size) in [("lib/arm64-v8a/libone.so", 70_000), ("lib/armeabi-v7a/libtwo.so", 9_000)] {
            try TestSupport.write((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }, to: name, in: libraries)
        }
        try check(TestSupport.run("zip", ["-q", "-0", base, "lib/arm64-v8a/libone.so", "lib/armeabi-v7a/libtwo.so"], currentDirectory: libraries.path), "zip")
        try check(TestSupport.run("zipalign", ["-f", "-p", "4", base, path("paged.apk")]), "zipalign")
        let extras = try TestSupport.run("zipinfo", ["-v", base])
        #expect(extras.stdout.contains("0x5455") && extras.stdout.contains("0x7875"), "\(extras)")

        try check(TestSupport.run("openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path("key.pem")]), "genpkey")
        try check(TestSupport.run("openssl", ["pkcs8", "-topk8", "-nocrypt", "-in", path("key.pem"), "-outform", "DER", "-out", path("key.pk8")]), "pkcs8")
        try check(TestSupport.run("openssl", ["req", "-new", "-x509", "-key", path("key.pem"), "-subj", "/CN=Extra Fields", "-days", "3650",
                                              "-out", path("cert.pem")]), "req")
        let key = ["--key", path("key.pk8"), "--cert", path("cert.pem")]
        // apksigner's output of the paged input, signed again: its 0xd935 fields read big-endian.
        try check(NewerApksigner.run(["sign"] + key + ["--v4-signing-enabled", "false", "--out", path("signed-once.apk"), path("paged.apk")]), "apksigner 35")

        for input in [base, path("paged.apk"), path("signed-once.apk")] {
            let name = URL(fileURLWithPath: input).deletingPathExtension().lastPathComponent
            let ours = path("\(name)-ours.apk"), theirs = path("\(name)-35.apk")
            let sign = try TestSupport.apkpatch(["sign"] + key + ["--out", ours, input])
            #expect(sign.succeeded, "\(name): \(sign)")
            try check(NewerApksigner.run(["sign"] + key + ["--out", theirs, input]), "apksigner 35 \(name)")
            #expect(try TestSupport.readBytes(ours) == TestSupport.readBytes(theirs), "\(name): not apksigner 35's bytes")
            #expect(try TestSupport.readBytes(ours + ".idsig") == TestSupport.readBytes(theirs + ".idsig"), "\(name)")
            let verify = try TestSupport.run("apksigner", ["verify", "-v", ours])
            #expect(verify.succeeded, "\(name): \(verify)")
            let aligned = try TestSupport.run("zipalign", ["-c", "-p", "4", ours])
            #expect(aligned.succeeded, "\(name): \(aligned)")
        }
    }

    /// The largest multiple the alignment field pads to at every offset: at the worst one its padding is the
    /// multiple less one byte and the field fills a whole local extra field (65535 bytes).
    @Test func theLargestLibraryPageAlignmentFitsAtTheWorstOffset() {
        let multiple = AlignmentPolicy.largestAlignmentExtraFieldMultiple
        #expect(multiple == 65530)
        let nameLength = 10
        // The data after the header, the name and the field's 6 bytes would start 1 past a multiple.
        let headerOffset = Int64(multiple + 1 - (LocalFileHeaderLayout.fixedSize + nameLength + AlignmentExtraLayout.minimumSize))
        var extra: [UInt8] = []
        let count = AlignmentPolicy.apksig(libraryPageAlignment: multiple)
            .appendLocalExtra(inputExtra: [], nameLength: nameLength, headerOffset: headerOffset, alignment: multiple, to: &extra)
        #expect(count == 65535)
        #expect(extra.count == 65535)
        #expect((headerOffset + Int64(LocalFileHeaderLayout.fixedSize + nameLength + count)) % Int64(multiple) == 0)
    }

    /// The walk itself, on the extra fields above: `zip`'s UT and ux records read big-endian claim 0x0900 bytes
    /// and stop the walk; behind zipalign's padding they are kept as one "record" with part of it; an apksig
    /// 0xd935 field whose swapped size fits is kept.
    @Test func theWalkReadsHeadersBigEndian() {
        let zipFields: [UInt8] = [0x55, 0x54, 0x09, 0x00, 0x03] + Array(repeating: 0x11, count: 8) + [0x75, 0x78, 0x0b, 0x00, 0x01, 0x04]
            + Array(repeating: 0, count: 4) + [0x04] + Array(repeating: 0, count: 4)
        #expect(ExtraField.strippingApksigPadding(zipFields).isEmpty)
        let padded = zipFields + Array(repeating: 0, count: 3000)
        #expect(ExtraField.strippingApksigPadding(padded) == Array(padded[0..<(4 + 0x0900)]))
        let apksigField: [UInt8] = [0x35, 0xd9, 0x0d, 0x3c, 0x00, 0x40] + Array(repeating: 0, count: 0x3c0d - 2)
        #expect(ExtraField.strippingApksigPadding(apksigField) == Array(apksigField[0..<(4 + 0x0d3c)]))
        #expect(ExtraField.strippingApksigPadding(Array(repeating: 0, count: 13)).isEmpty)
    }
}
