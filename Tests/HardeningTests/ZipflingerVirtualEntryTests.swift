import APKCore
import Foundation
import Testing
import TestSupport

/// AGP's zipflinger leaves "virtual entries" where it keeps room: a local header with no name, no data and an extra
/// field of zeros, which no central directory entry names, 132 bytes of them at the start of most Gradle builds
/// (the real-world corpus's Yosemite.apk, app-uiautomator.apk, pocoservice-debug.apk). Android opens them and
/// apksigner signs and verifies them (keeping the record), so every writing command must take them: `sign` keeps
/// them where they are, as apksig copies the bytes between records (its output is apksigner's, byte for byte, and
/// `apksigcopier compare` rebuilds it from the unsigned input), the others write outputs without them; anything
/// else before the first entry stays refused.
@Suite(.removesTemporaryDirectories) struct ZipflingerVirtualEntryTests {
    let dir: URL
    let keystore: String
    static let password = "zipflinger"
    var signing: [String] { ["--ks", keystore, "--ks-pass", "env:ZFE_KS_PASS"] }
    var environment: [String: String] { ["ZFE_KS_PASS": Self.password] }

    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("zipflinger")
        keystore = dir.appendingPathComponent("release.p12").path
        try TestSupport.makeKeyStore(at: keystore, password: Self.password, dname: "CN=Zipflinger")
    }

    /// How zipflinger fills a virtual entry's extra field.
    enum Form: String, CaseIterable {
        /// com.android.zipflinger as AGP ships it (apksigcopier's `zipflinger_virtual_entry`): version 0, the fixed
        /// DOS time 1981-01-01 01:01:02, an extra field of zeros.
        case zeros
        /// zipflinger's first `fillVirtualEntry`: version 2.0 (0x0014), time and date 0, and the extra field one
        /// Android alignment record (0xd935) whose declared size takes the rest of it, its data zeros.
        case alignmentRecord
    }

    /// `input` with a virtual entry of `size` bytes at offset 0 and one of 40 bytes before its second record, the
    /// offsets after them moved, both of `form`; `extraFill` other than 0 fills the first one's last extra
    /// byte, which makes it a record that is not a virtual entry.
    func withVirtualEntries(_ input: String, name: String, size: Int = 132, extraFill: UInt8 = 0, form: Form = .zeros) throws -> String {
        let output = dir.appendingPathComponent(name).path
        let python = #"""
            import struct, sys
            def virtual_entry(size, fill):
                if form == "zeros":
                    head = b"PK\x03\x04" + bytes(4) + bytes(2) + b"\x21\x08\x21\x02"
                    extra = bytes(size - 30)
                else:
                    head = b"PK\x03\x04" + struct.pack("<H", 0x0014) + bytes(4) + bytes(4)
                    extra = struct.pack("<HH", 0xd935, size - 34) + bytes(size - 34)
                if fill:
                    extra = extra[:-1] + bytes([fill])
                return head + bytes(14) + struct.pack("<H", size - 30) + extra
            src, dst, size, fill, form = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
            data = open(src, "rb").read()
            eocd = data.rfind(b"PK\x05\x06")
            count, cd_offset = struct.unpack("<H", data[eocd + 10:eocd + 12])[0], struct.unpack("<I", data[eocd + 16:eocd + 20])[0]
            records, p = [], cd_offset
            for _ in range(count):
                n, m, k = struct.unpack("<HHH", data[p + 28:p + 34])
                records.append((struct.unpack("<I", data[p + 42:p + 46])[0], p - cd_offset))
                p += 46 + n + m + k
            second = sorted(records)[1][0]
            first = virtual_entry(size, fill)
            entries = first + data[:second] + virtual_entry(40, 0) + data[second:cd_offset]
            cd = bytearray(data[cd_offset:])
            for offset, at in records:
                cd[at + 42:at + 46] = struct.pack("<I", offset + len(first) + (40 if offset >= second else 0))
            cd[eocd - cd_offset + 16:eocd - cd_offset + 20] = struct.pack("<I", len(entries))
            open(dst, "wb").write(entries + bytes(cd))
            """#
        let result = try TestSupport.run("python3", ["-c", python, input, output, String(size), String(extraFill), form.rawValue])
        try #require(result.succeeded, "\(result)")
        return output
    }

    /// A Gradle-like APK: virtual entries, then signed by apksigner (v1 and v2, minSdk 21), which keeps them.
    func gradleLike() throws -> String {
        let built = try FixtureAPK.cordovaLike().build(in: dir, name: "app.apk")
        let unsigned = try withVirtualEntries(built, name: "zipflinger-unsigned.apk")
        let signed = dir.appendingPathComponent("zipflinger-signed.apk").path
        let sign = try TestSupport.run("apksigner", ["sign", "--ks", keystore, "--ks-pass", "env:ZFE_KS_PASS", "--out", signed, unsigned],
                                       environment: environment)
        try #require(sign.succeeded, "\(sign)")
        let apksigner = try TestSupport.run("apksigner", ["verify", signed])
        try #require(apksigner.succeeded, "apksigner should accept a zipflinger virtual entry: \(apksigner)")
        #expect(try TestSupport.readBytes(signed).prefix(8) == [0x50, 0x4B, 0x03, 0x04, 0, 0, 0, 0], "apksigner dropped the virtual entry")
        return signed
    }

    @Test("sign, run, align and unpack take zipflinger's virtual entries; sign keeps them, the others leave them out")
    func writersTakeVirtualEntries() throws {
        let input = try gradleLike()
        let entries = try TestSupport.run("unzip", ["-Z1", input]).stdout.split(separator: "\n").count
        let signed = dir.appendingPathComponent("signed.apk").path, ran = dir.appendingPathComponent("run.apk").path
        let aligned = dir.appendingPathComponent("aligned.apk").path, unpacked = dir.appendingPathComponent("unpacked").path
        let commands: [(String, [String])] = [
            ("sign", ["sign"] + signing + ["--out", signed, input]),
            ("run", ["run", input] + signing + ["--out", ran, "-q"]),
            ("align", ["align", "-p", "4", input, aligned]),
            ("unpack", ["unpack", input, "-o", unpacked]),
        ]
        for (label, arguments) in commands {
            let result = try TestSupport.apkpatch(arguments, environment: environment)
            #expect(result.succeeded, "\(label): \(result)")
        }
        let inputRecords = try APKArchive(path: input).zip.virtualEntryRecords
        #expect(inputRecords.count == 2 && inputRecords.first == 0..<132, "the input's virtual entries: \(inputRecords)")
        for (label, output) in [("sign", signed), ("run", ran), ("align", aligned)] {
            let archive = try APKArchive(path: output)
            if label == "sign" {
                // Where apksig copies them: the first at offset 0, the other before the record that followed it.
                let records = archive.zip.virtualEntryRecords
                #expect(records.count == 2 && records.first == 0..<132 && records == archive.zip.staleSignerRecords,
                        "sign: the output's virtual entries are \(records), not the input's two")
            } else {
                #expect(archive.zip.staleSignerRecords.isEmpty && archive.entries.map(\.localHeaderOffset).min() == 0,
                        "\(label): the output keeps a virtual entry")
            }
            let android = try TestSupport.libziparchiveCheck(output)
            #expect(android.succeeded && android.stdout.hasPrefix("OK \(archive.entries.count) entries"), "\(label): \(android)")
            let zipalign = try TestSupport.run("zipalign", ["-c", "-p", "4", output])
            #expect(zipalign.succeeded, "\(label): \(zipalign)")
        }
        for (label, output) in [("sign", signed), ("run", ran)] {
            let apksigner = try TestSupport.run("apksigner", ["verify", output])
            #expect(apksigner.succeeded, "\(label): \(apksigner)")
        }
        let files = try FileManager.default.subpathsOfDirectory(atPath: unpacked).filter {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: unpacked + "/" + $0, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
        #expect(files.count == entries, "unpack extracted \(files.count) files of \(entries) entries")
    }

    /// An unsigned Gradle build (apksigcopier's reproducible-build case): `sign --alignment-preserved true` writes
    /// apksigner 35's bytes with the same key and options, virtual entries included, and `apksigcopier compare`
    /// (which rebuilds the signed APK from the unsigned one, keeping its virtual entry) accepts the output.
    @Test func signedUnsignedGradleBuildIsApksignersAndCopies() throws {
        // Aligned first, as Gradle writes it: the virtual entries (132 and 40 bytes) keep every offset's remainder.
        let built = try FixtureAPK.cordovaLike().build(in: dir, name: "app.apk"), aligned = dir.appendingPathComponent("aligned.apk").path
        let zipalign = try TestSupport.run("zipalign", ["-p", "4", built, aligned])
        try #require(zipalign.succeeded, "\(zipalign)")
        let unsigned = try withVirtualEntries(aligned, name: "zipflinger-unsigned.apk")
        let options = ["--alignment-preserved", "true", "--v4-signing-enabled", "false"]
        let ours = dir.appendingPathComponent("ours.apk").path, theirs = dir.appendingPathComponent("apksigner35.apk").path
        let sign = try TestSupport.apkpatch(["sign"] + signing + options + ["--out", ours, unsigned], environment: environment)
        try #require(sign.succeeded, "\(sign)")
        let apksigner = try NewerApksigner.run(["sign"] + signing + options + ["--out", theirs, unsigned], environment: environment)
        try #require(apksigner.succeeded, "apksigner 35 sign: \(apksigner)")
        #expect(try TestSupport.readBytes(ours) == TestSupport.readBytes(theirs), "sign wrote other bytes than apksigner 35")
        let compare = try TestSupport.run("apksigcopier", ["compare", ours, "--unsigned", unsigned])
        #expect(compare.succeeded, "apksigcopier compare of the signed Gradle build with its unsigned input: \(compare)")
    }

    @Test("a nameless record whose extra field is not all zeros stays refused before the first entry")
    func otherRecordsStayRefused() throws {
        let built = try FixtureAPK.cordovaLike().build(in: dir, name: "app.apk")
        let input = try withVirtualEntries(built, name: "not-virtual.apk", extraFill: 1)
        let output = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.apkpatch(["sign"] + signing + ["--out", output, input], environment: environment)
        #expect(result.status == 1 && result.stderr.contains("132 bytes before the first local header"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    /// zipflinger's first form of virtual entry (its alignment record declares the padding) is taken as the later
    /// one: Android's libziparchive opens such an APK, sign keeps the records and apksigner verifies the output; a record whose padding is not all zeros stays refused.
    @Test func theFirstFormIsTakenAsTheLaterOne() throws {
        let built = try FixtureAPK.cordovaLike().build(in: dir, name: "app.apk")
        let input = try withVirtualEntries(built, name: "first-form.apk", form: .alignmentRecord)
        // The 132-byte record as zipflinger's first fillVirtualEntry writes it: version 20, no flags, stored, time
        // and date 0, CRC-32 and sizes 0, no name, 102 bytes of extra: 0xd935, 98, 98 zero bytes.
        let bytes = try TestSupport.readBytes(input)
        #expect(Array(bytes.prefix(34)) == [0x50, 0x4B, 0x03, 0x04, 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                             102, 0, 0x35, 0xD9, 98, 0])
        #expect(bytes[34..<132].allSatisfy { $0 == 0 } && bytes[132..<136] == [0x50, 0x4B, 0x03, 0x04])
        let android = try TestSupport.libziparchiveCheck(input)
        #expect(android.succeeded, "\(android)")

        let signed = dir.appendingPathComponent("first-form-signed.apk").path
        let result = try TestSupport.apkpatch(["sign"] + signing + ["--out", signed, input], environment: environment)
        #expect(result.succeeded, "\(result)")
        let archive = try APKArchive(path: signed)
        #expect(archive.zip.virtualEntryRecords.first == 0..<132, "the output lost the first-form virtual entry: \(archive.zip.virtualEntryRecords)")
        let apksigner = try TestSupport.run("apksigner", ["verify", signed])
        #expect(apksigner.succeeded, "\(apksigner)")

        let padded = try withVirtualEntries(built, name: "first-form-not-virtual.apk", extraFill: 1, form: .alignmentRecord)
        let refused = dir.appendingPathComponent("refused.apk").path
        let refusal = try TestSupport.apkpatch(["sign"] + signing + ["--out", refused, padded], environment: environment)
        #expect(refusal.status == 1 && refusal.stderr.contains("132 bytes before the first local header"), "\(refusal)")
        #expect(!FileManager.default.fileExists(atPath: refused))
    }
}
