import Foundation
import Testing
import TestSupport
import ZlibWrapper

/// A hostile corpus made from one valid aapt-built APK (and its apksigner-signed copies): the classes of damage
/// real attackers and broken tools produce (local header vs central directory disagreements, overlapping records,
/// bogus ZIP64 and end records, hostile names, unknown methods, bad descriptors, truncation at every structural
/// boundary, prefixes, broken signing blocks). Every variant goes through every command that reads an APK, and
/// through Android's own reader (libziparchive, as the package manager opens APKs):
/// - no command crashes, hangs or traps; a refusal is exit 1 with an `error:` line and no Swift trace;
/// - nothing is left beside the outputs (no output, no temporary file) when a command refuses;
/// - whatever libziparchive refuses, every command refuses;
/// - the commands that read an archive to write one (`unpack`, `sign`, `run`, `align`) agree with each other.
@Suite(.serialized, .removesTemporaryDirectories) struct HostileCorpusTests {
    // MARK: the base APKs, parsed just enough to damage them

    /// One central directory record and where its local record is.
    struct Record {
        var central: Int          // offset of the central record
        var nameLength: Int
        var centralExtraLength: Int
        var commentLength: Int
        var local: Int            // offset of the local header
        var name: String
        var centralSize: Int { 46 + nameLength + centralExtraLength + commentLength }
    }

    struct Layout {
        var bytes: [UInt8]
        var eocd: Int
        var cdOffset: Int
        var cdSize: Int
        var records: [Record]
        init(_ bytes: [UInt8]) {
            self.bytes = bytes
            var e = bytes.count - 22
            while e >= 0, !(bytes[e] == 0x50 && bytes[e + 1] == 0x4b && bytes[e + 2] == 5 && bytes[e + 3] == 6) { e -= 1 }
            eocd = e
            cdOffset = Int(le32(bytes, e + 16))
            cdSize = Int(le32(bytes, e + 12))
            var at = cdOffset
            var records: [Record] = []
            for _ in 0..<Int(le16(bytes, e + 10)) {
                let n = Int(le16(bytes, at + 28)), x = Int(le16(bytes, at + 30)), c = Int(le16(bytes, at + 32))
                records.append(Record(central: at, nameLength: n, centralExtraLength: x, commentLength: c, local: Int(le32(bytes, at + 42)),
                                      name: String(decoding: bytes[(at + 46)..<(at + 46 + n)], as: UTF8.self)))
                at += 46 + n + x + c
            }
            self.records = records
        }
        func record(_ name: String) -> Record { records.first { $0.name == name }! }
        /// Offset of the entry's data (after its local header, name and extra field).
        func dataOffset(_ r: Record) -> Int { r.local + 30 + Int(le16(bytes, r.local + 26)) + Int(le16(bytes, r.local + 28)) }
        func compressedSize(_ r: Record) -> Int { Int(le32(bytes, r.central + 20)) }
    }

    static func le16(_ b: [UInt8], _ at: Int) -> UInt16 { UInt16(b[at]) | UInt16(b[at + 1]) << 8 }
    static func le32(_ b: [UInt8], _ at: Int) -> UInt32 { (0..<4).reduce(UInt32(0)) { $0 | UInt32(b[at + $1]) << (8 * $1) } }
    static func put16(_ b: inout [UInt8], _ at: Int, _ v: UInt16) { b[at] = UInt8(v & 0xff); b[at + 1] = UInt8(v >> 8) }
    static func put32(_ b: inout [UInt8], _ at: Int, _ v: UInt32) { for i in 0..<4 { b[at + i] = UInt8(truncatingIfNeeded: v >> (8 * i)) } }
    static func bytes16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8)] }
    static func bytes32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    static func bytes64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }

    /// A whole archive re-made from entries (name, method, data as stored, CRC, uncompressed size), stored
    /// records laid out the simple way, for the variants whose names or entry set change.
    struct Entry {
        var name: [UInt8]
        var method: UInt16
        var data: [UInt8]
        var crc: UInt32
        var size: Int
        var flags: UInt16 = 0
        var descriptor: [UInt8] = []
    }

    static func entries(of layout: Layout) -> [Entry] {
        layout.records.map { r in
            let b = layout.bytes
            let start = layout.dataOffset(r)
            return Entry(name: Array(r.name.utf8), method: le16(b, r.central + 10), data: Array(b[start..<(start + layout.compressedSize(r))]),
                         crc: le32(b, r.central + 16), size: Int(le32(b, r.central + 24)))
        }
    }

    static func assemble(_ entries: [Entry]) -> [UInt8] {
        var out: [UInt8] = [], central: [UInt8] = []
        for e in entries {
            let offset = out.count
            let common = bytes16(20) + bytes16(e.flags) + bytes16(e.method) + bytes16(0) + bytes16(0x3a21) + bytes32(e.crc)
                + bytes32(UInt32(e.data.count)) + bytes32(UInt32(e.size)) + bytes16(UInt16(e.name.count))
            out += [0x50, 0x4b, 3, 4] + common + bytes16(0) + e.name + e.data + e.descriptor
            central += [0x50, 0x4b, 1, 2] + bytes16(20) + common + bytes16(0) + bytes16(0) + bytes16(0) + bytes16(0) + bytes32(0)
                + bytes32(UInt32(offset)) + e.name
        }
        return out + central + endRecord(count: entries.count, cdSize: central.count, cdOffset: out.count)
    }

    static func endRecord(count: Int, cdSize: Int, cdOffset: Int, commentLength: Int = 0) -> [UInt8] {
        [0x50, 0x4b, 5, 6] + bytes16(0) + bytes16(0) + bytes16(UInt16(count)) + bytes16(UInt16(count)) + bytes32(UInt32(cdSize))
            + bytes32(UInt32(cdOffset)) + bytes16(UInt16(commentLength))
    }

    // MARK: the corpus

    struct Variant {
        var name: String
        var bytes: [UInt8]
    }

    /// The valid APKs the corpus starts from: aapt's unsigned output (with a stored and a deflated asset), and
    /// apksigner-signed copies (v1 only; v1 + v2).
    struct Bases {
        var unsigned: [UInt8]
        var v1Only: [UInt8]
        var v2: [UInt8]
    }

    static let keyStore: String = TestSupport.sharedByTests {
        let directory = try! TestSupport.makeTemporaryDirectory("hostile-corpus-keystore")
        let path = directory.appendingPathComponent("k.p12").path
        try? TestSupport.makeKeyStore(at: path, password: "android", alias: "k", dname: "CN=Hostile Corpus, C=US", validityDays: 365)
        return path
    }
    static let keyOptions = ["--ks", keyStore, "--ks-pass", "pass:android"]

    static func makeBases(in dir: URL) throws -> Bases {
        var fixture = FixtureAPK()
        fixture.assets = ["stored.txt": Array(repeating: UInt8(ascii: "s"), count: 300), "text.txt": Array(String(repeating: "deflate me ", count: 200).utf8)]
        fixture.storedExtensions = [".txt"]
        fixture.rawFiles = ["classes.dex": Array("dex\n035\0".utf8) + Array(repeating: 7, count: 200)]
        let unsigned = try fixture.build(in: dir, name: "base.apk")
        func apksigner(_ out: String, _ options: [String]) throws -> [UInt8] {
            let result = try TestSupport.run("apksigner", ["sign", "--ks", keyStore, "--ks-pass", "pass:android", "--out", out] + options + [unsigned])
            try #require(result.succeeded, "\(result)")
            return try TestSupport.readBytes(out)
        }
        return Bases(unsigned: try TestSupport.readBytes(unsigned),
                     v1Only: try apksigner(dir.appendingPathComponent("v1.apk").path, ["--v2-signing-enabled", "false", "--v3-signing-enabled", "false", "--min-sdk-version", "21"]),
                     v2: try apksigner(dir.appendingPathComponent("v2.apk").path, ["--v1-signing-enabled", "false", "--v3-signing-enabled", "false"]))
    }

    static func corpus(_ bases: Bases) -> [Variant] {
        var out: [Variant] = []
        let base = Layout(bases.unsigned)
        let manifest = base.record("AndroidManifest.xml")
        let stored = base.record("assets/stored.txt")
        let deflated = base.records.first { le16(base.bytes, $0.central + 10) == 8 && $0.name != "AndroidManifest.xml" } ?? manifest
        func patched(_ name: String, _ edit: (inout [UInt8]) -> Void) {
            var b = base.bytes
            edit(&b)
            out.append(Variant(name: name, bytes: b))
        }
        out.append(Variant(name: "control (intact)", bytes: base.bytes))
        out.append(Variant(name: "control (v1-only signed)", bytes: bases.v1Only))
        out.append(Variant(name: "control (v2 signed)", bytes: bases.v2))

        // Local header vs central directory.
        patched("local name differs") { b in b[stored.local + 30] ^= 0x20 }
        patched("local method differs (stored -> deflated)") { b in put16(&b, stored.local + 8, 8) }
        patched("local method differs (deflated -> stored)") { b in put16(&b, deflated.local + 8, 0) }
        patched("local compressed size differs") { b in put32(&b, stored.local + 18, le32(b, stored.local + 18) + 1) }
        patched("local uncompressed size differs") { b in put32(&b, deflated.local + 22, le32(b, deflated.local + 22) + 1) }
        patched("local CRC-32 differs") { b in put32(&b, stored.local + 14, le32(b, stored.local + 14) ^ 1) }
        patched("local name length differs") { b in put16(&b, stored.local + 26, le16(b, stored.local + 26) + 1) }
        patched("local extra length past the end of the file") { b in put16(&b, stored.local + 28, 0xffff) }
        patched("local extra length into the data") { b in put16(&b, stored.local + 28, le16(b, stored.local + 28) + 64) }
        patched("local encrypted flag only") { b in put16(&b, stored.local + 6, le16(b, stored.local + 6) | 1) }
        patched("central encrypted flag only") { b in put16(&b, stored.central + 8, le16(b, stored.central + 8) | 1) }
        patched("central CRC-32 wrong (stored entry)") { b in put32(&b, stored.central + 16, le32(b, stored.central + 16) ^ 1); put32(&b, stored.local + 14, le32(b, stored.local + 14) ^ 1) }
        patched("central extra length past the central directory") { b in put16(&b, stored.central + 30, 0xfff0) }
        patched("central name length past the central directory") { b in put16(&b, base.records.last!.central + 28, 0xfff0) }
        patched("central record signature wrong") { b in b[base.records.last!.central + 2] = 9 }

        // Overlapping records.
        patched("two central records point at one local record") { b in put32(&b, stored.central + 42, UInt32(manifest.local)) }
        patched("local offset into the central directory") { b in put32(&b, stored.central + 42, UInt32(base.cdOffset)) }
        patched("local offset past the end of the file") { b in put32(&b, stored.central + 42, UInt32(b.count + 100)) }
        patched("local offset into another entry's data") { b in put32(&b, stored.central + 42, UInt32(base.dataOffset(manifest) + 4)) }
        patched("stored size past the end of the file") { b in
            for at in [stored.central + 20, stored.central + 24] { put32(&b, at, 0x7fff_0000) }
            for at in [stored.local + 18, stored.local + 22] { put32(&b, at, 0x7fff_0000) }
        }
        patched("stored data overlaps the next local record") { b in
            for at in [stored.central + 20, stored.central + 24, stored.local + 18, stored.local + 22] { put32(&b, at, le32(b, at) + 40) }
        }

        // End record.
        patched("entry count 0 with entries") { b in put16(&b, base.eocd + 8, 0); put16(&b, base.eocd + 10, 0) }
        patched("entry count one more") { b in put16(&b, base.eocd + 8, le16(b, base.eocd + 8) + 1); put16(&b, base.eocd + 10, le16(b, base.eocd + 10) + 1) }
        patched("entry count one fewer") { b in put16(&b, base.eocd + 8, le16(b, base.eocd + 8) - 1); put16(&b, base.eocd + 10, le16(b, base.eocd + 10) - 1) }
        patched("entry counts disagree (disk vs total)") { b in put16(&b, base.eocd + 8, le16(b, base.eocd + 8) - 1) }
        patched("comment length past the end") { b in put16(&b, base.eocd + 20, 10) }
        patched("comment length shorter than the comment") { b in put16(&b, base.eocd + 20, 2); b += [0x41, 0x42, 0x43, 0x44] }
        patched("trailing garbage after the end record") { b in b += Array("trailing garbage".utf8) }
        patched("central directory offset + size past the end") { b in put32(&b, base.eocd + 12, UInt32(base.cdSize + 4096)) }
        patched("central directory offset past the end") { b in put32(&b, base.eocd + 16, UInt32(b.count + 10)) }
        patched("central directory offset 0") { b in put32(&b, base.eocd + 16, 0) }
        patched("central directory size too small") { b in put32(&b, base.eocd + 12, UInt32(base.cdSize - 10)) }
        patched("disk number not 0") { b in put16(&b, base.eocd + 4, 1) }

        // ZIP64 records with bogus values (record + locator before the end record, which says "see ZIP64").
        func zip64(_ name: String, count: UInt64? = nil, cdOffset: UInt64? = nil, locatorTarget: UInt64? = nil, recordSize: UInt64 = 44) {
            let n = UInt64(base.records.count)
            let recordAt = base.eocd
            let record: [UInt8] = [0x50, 0x4b, 6, 6] + bytes64(recordSize) + bytes16(45) + bytes16(45) + bytes32(0) + bytes32(0)
                + bytes64(count ?? n) + bytes64(count ?? n) + bytes64(UInt64(base.cdSize)) + bytes64(cdOffset ?? UInt64(base.cdOffset))
            let locator: [UInt8] = [0x50, 0x4b, 6, 7] + bytes32(0) + bytes64(locatorTarget ?? UInt64(recordAt)) + bytes32(1)
            var end = Array(base.bytes[base.eocd...])
            put16(&end, 8, 0xffff); put16(&end, 10, 0xffff); put32(&end, 16, 0xffff_ffff)
            out.append(Variant(name: name, bytes: Array(base.bytes[..<base.eocd]) + record + locator + end))
        }
        zip64("zip64 records (consistent)")
        zip64("zip64 entry count bogus", count: 0x1_0000_0000)
        zip64("zip64 entry count 0", count: 0)
        zip64("zip64 central directory offset past the end", cdOffset: UInt64(base.bytes.count) + 1_000_000)
        zip64("zip64 locator pointing past the end", locatorTarget: 0x7fff_ffff_ffff)
        zip64("zip64 locator pointing at the central directory", locatorTarget: UInt64(base.cdOffset))
        zip64("zip64 record size bogus", recordSize: 0x7fff_ffff_ffff)
        patched("zip64 markers without a locator") { b in put16(&b, base.eocd + 8, 0xffff); put16(&b, base.eocd + 10, 0xffff); put32(&b, base.eocd + 16, 0xffff_ffff) }

        // Names and entry sets (archive re-made).
        let entries = entries(of: base)
        func remade(_ name: String, _ edit: (inout [Entry]) -> Void) {
            var e = entries
            edit(&e)
            out.append(Variant(name: name, bytes: assemble(e)))
        }
        remade("re-made control (intact)") { _ in }
        let storedIndex = entries.firstIndex { $0.name == Array("assets/stored.txt".utf8) }!
        let manifestIndex = entries.firstIndex { $0.name == Array("AndroidManifest.xml".utf8) }!
        func renamed(_ label: String, _ newName: [UInt8]) { remade("name: \(label)") { $0[storedIndex].name = newName } }
        renamed("absolute /assets/x", Array("/assets/x.txt".utf8))
        renamed("backslash", Array("assets\\x.txt".utf8))
        renamed("NUL", Array("assets/x\0.txt".utf8))
        renamed("../ segment", Array("../x.txt".utf8))
        renamed("inner .. segment", Array("assets/../../x.txt".utf8))
        renamed("empty", [])
        renamed("very long (65535 bytes)", Array(repeating: UInt8(ascii: "a"), count: 65535))
        renamed("invalid UTF-8", [0x61, 0xff, 0xfe, 0x2e, 0x74])
        renamed("directory name with data", Array("assets/dir/".utf8))
        remade("duplicate name") { $0.append($0[storedIndex]) }
        remade("duplicate name differing in case") { var d = $0[storedIndex]; d.name = Array("assets/STORED.txt".utf8); $0.append(d) }
        remade("AndroidManifest.xml missing") { $0.remove(at: manifestIndex) }
        remade("AndroidManifest.xml twice") { $0.append($0[manifestIndex]) }
        remade("AndroidManifest.xml method 8 over stored bytes") { e in
            let xml = e[manifestIndex]
            if xml.method == 8, let plain = xml.data.withUnsafeBytes({ try? Inflate.inflate($0, expectedSize: Int64(xml.size)) }) { e[manifestIndex].data = plain; e[manifestIndex].size = plain.count }
            e[manifestIndex].method = 8
        }
        remade("AndroidManifest.xml method 3 (reduce)") { $0[manifestIndex].method = 3 }
        remade("method 12 (bzip2)") { $0[storedIndex].method = 12 }
        remade("method 14 (LZMA)") { $0[storedIndex].method = 14 }
        remade("method 99 (AES)") { $0[storedIndex].method = 99; $0[storedIndex].flags |= 1 }
        remade("encrypted flag set") { $0[storedIndex].flags |= 1 }
        remade("data descriptor flag without a descriptor") { $0[storedIndex].flags |= 8 }
        remade("data descriptor with the wrong CRC-32") { e in
            e[storedIndex].flags |= 8
            e[storedIndex].descriptor = [0x50, 0x4b, 7, 8] + bytes32(e[storedIndex].crc ^ 0xffff) + bytes32(UInt32(e[storedIndex].data.count)) + bytes32(UInt32(e[storedIndex].size))
        }
        remade("stored entry sizes differ") { $0[storedIndex].size += 1 }
        remade("deflate bomb (ratio over the limit)") { e in
            let zeros = [UInt8](repeating: 0, count: 32 << 20)
            let packed = (try? Deflate.compress(zeros, level: 9)) ?? []
            e.append(Entry(name: Array("assets/bomb.bin".utf8), method: 8, data: packed, crc: CRC32.checksum(zeros), size: zeros.count))
        }
        remade("deflate stream that fails") { e in
            e.append(Entry(name: Array("assets/broken.bin".utf8), method: 8, data: [0xff, 0xff, 0xff, 0xff, 0xff, 0xff], crc: 0, size: 100))
        }
        remade("nested zip bomb (an asset, not opened)") { e in
            let inner = assemble([Entry(name: Array("bomb.bin".utf8), method: 8, data: (try? Deflate.compress([UInt8](repeating: 0, count: 8 << 20), level: 9)) ?? [],
                                        crc: CRC32.checksum([UInt8](repeating: 0, count: 8 << 20)), size: 8 << 20)])
            e.append(Entry(name: Array("assets/inner.zip".utf8), method: 0, data: inner, crc: CRC32.checksum(inner), size: inner.count))
        }

        // Truncation at every structural boundary.
        var cuts: Set<Int> = [0, 4, 29, base.cdOffset, base.cdOffset + 10, base.eocd, base.eocd + 10, base.bytes.count - 1]
        for r in base.records.prefix(2) + base.records.suffix(1) {
            cuts.formUnion([r.local, r.local + 15, base.dataOffset(r), base.dataOffset(r) + 1, r.central, r.central + 20, r.central + 46])
        }
        for cut in cuts.sorted() where cut < base.bytes.count { out.append(Variant(name: "truncated at \(cut)", bytes: Array(base.bytes[..<cut]))) }

        // Prefix bytes before the first local header (all offsets shifted, as a tool that prepends would).
        func prefixed(_ name: String, _ apk: [UInt8], _ prefix: [UInt8]) {
            let l = Layout(apk)
            var b = prefix + apk
            for r in l.records { put32(&b, prefix.count + r.central + 42, UInt32(r.local + prefix.count)) }
            put32(&b, prefix.count + l.eocd + 16, UInt32(l.cdOffset + prefix.count))
            out.append(Variant(name: name, bytes: b))
        }
        let dex = Array("dex\n035\0".utf8) + [UInt8](repeating: 1, count: 120)
        prefixed("prefix (unsigned)", bases.unsigned, dex)
        prefixed("prefix (v1-only signed, Janus)", bases.v1Only, dex)
        prefixed("prefix (v2 signed)", bases.v2, dex)

        // APK signing block with bogus sizes and ids (v2-signed base; the block sits right before the CD).
        let signed = Layout(bases.v2)
        let footer = signed.cdOffset - 24            // size (8) + magic (16)
        let blockSize = Int(le32(signed.bytes, footer))
        let blockStart = signed.cdOffset - blockSize - 8
        func block(_ name: String, _ edit: (inout [UInt8]) -> Void) {
            var b = signed.bytes
            edit(&b)
            out.append(Variant(name: "signing block: \(name)", bytes: b))
        }
        block("footer size larger than the file") { b in put32(&b, footer, 0x7fff_fff0) }
        block("footer size 0") { b in put32(&b, footer, 0) }
        block("header and footer sizes differ") { b in put32(&b, blockStart, UInt32(blockSize - 8)) }
        block("magic damaged") { b in b[footer + 10] ^= 0xff }
        block("pair length past the block") { b in put32(&b, blockStart + 8, 0x7fff_0000) }
        block("pair length shorter than an id") { b in put32(&b, blockStart + 8, 2); put32(&b, blockStart + 12, 0) }
        block("v2 id changed to an unknown id") { b in b[blockStart + 16] ^= 0x55 }
        block("v2 signature bytes damaged") { b in b[blockStart + 40] ^= 0xff }
        return out
    }

    // MARK: the sweep

    struct Outcome {
        var command: String
        var result: TestSupport.ProcessResult
    }

    /// Where a command deliberately reads differently from Android's reader here (Debian's libziparchive), with
    /// the reason. Every command that writes an APK reads by Android's rules (`UnpackLimits.rewriting`): the
    /// central directory's compression method rules (libziparchive's `FindEntry` never compares the local
    /// header's; the output's local header is written anew to agree), names libziparchive opens are taken
    /// (its `IsValidEntryName` refuses only NUL and invalid UTF-8), a method other than stored or deflated is
    /// refused (its `ExtractToWriter` extracts no other). A ZIP64 end record holding standard values is read
    /// by every writer and written as a standard one: Android reads ZIP64 since 11, the Debian libziparchive
    /// here predates it, and the outputs carry none, so releases before 11 read them too (apksig reads it:
    /// testSignApk_apkWithZip64Eocd). `align` copies entries without inflating them, as zipalign does.
    static let writers: Set<String> = ["unpack", "sign", "run", "align", "merge"]
    static let acceptedByDesign: [String: Set<String>] = [
        "zip64 records (consistent)": writers,
        "central CRC-32 wrong (stored entry)": ["align"],
        "AndroidManifest.xml method 8 over stored bytes": ["align"],
        "deflate stream that fails": ["align"],
    ]
    /// Commands that refuse what the others accept, for a reason of their own: unpack writes files, so it
    /// refuses names no file system takes (65535 bytes) or that would write outside its output directory
    /// (absolute, `..`, a backslash some systems take for a separator), which Android opens and the other
    /// commands copy as they are; sign, run and merge need the manifest (minSdk, the patch's package).
    static let refusedByDesign: [String: Set<String>] = [
        "name: very long (65535 bytes)": ["unpack"],
        "name: absolute /assets/x": ["unpack"],
        "name: backslash": ["unpack"],
        "name: ../ segment": ["unpack"],
        "name: inner .. segment": ["unpack"],
        "AndroidManifest.xml missing": ["sign", "run", "merge"],
    ]

    static func runCommands(on variant: Variant, in work: URL, patch: URL) throws -> (oracle: TestSupport.ProcessResult, outcomes: [Outcome], leftovers: Set<String>) {
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let path = work.appendingPathComponent("hostile.apk").path
        try Data(variant.bytes).write(to: URL(fileURLWithPath: path))
        let oracle = try TestSupport.libziparchiveCheck(path)
        let commands: [(String, [String], String?)] = [
            ("verify", ["verify", path], nil),
            ("verify --json", ["verify", "--json", path], nil),
            ("unpack", ["unpack", path, "-o", work.appendingPathComponent("unpacked").path], "unpacked"),
            ("sign", ["sign", "--out", work.appendingPathComponent("signed.apk").path] + keyOptions + [path], "signed.apk"),
            ("run", ["run", path, "--patch", patch.path, "--out", work.appendingPathComponent("run.apk").path] + keyOptions, "run.apk"),
            ("align", ["align", "-f", "4", path, work.appendingPathComponent("aligned.apk").path], "aligned.apk"),
            ("merge", ["merge", path, "--no-verify", "--out", work.appendingPathComponent("merged.apk").path] + keyOptions, "merged.apk"),
        ]
        var outcomes: [Outcome] = []
        var produced: Set<String> = ["hostile.apk"]
        for (label, arguments, output) in commands {
            let result = try boundedApkpatch(arguments, seconds: 60)
            outcomes.append(Outcome(command: label, result: result))
            if result.status == 0, let output {
                // Outputs (and the v4 signature file beside a signed one) are removed so a later command's
                // leftovers are its own.
                for name in [output, output + ".idsig"] {
                    if FileManager.default.fileExists(atPath: work.appendingPathComponent(name).path) {
                        produced.insert(name)
                        try? FileManager.default.removeItem(at: work.appendingPathComponent(name))
                    }
                }
            }
        }
        let leftovers = snapshot(work).filter { name in !produced.contains(name) && !produced.contains { name.hasPrefix($0 + "/") } }
        #expect(try TestSupport.readBytes(path) == variant.bytes, "\(variant.name): the input was modified")
        return (oracle, outcomes, leftovers)
    }

    @Test func hostileCorpusThroughEveryCommand() throws {
        let dir = try TestSupport.makeTemporaryDirectory("hostile-corpus")
        defer { try? FileManager.default.removeItem(at: dir) }
        let bases = try Self.makeBases(in: dir)
        let patch = dir.appendingPathComponent("empty-patch")
        try FileManager.default.createDirectory(at: patch, withIntermediateDirectories: true)
        let variants = Self.corpus(bases)
        var table: [String] = []
        let writers = Self.writers
        // Four variants at a time: each command is a process of its own, mostly waiting on the others' I/O.
        final class Results: @unchecked Sendable {  // written under `lock`, read after the group is done
            var items: [(oracle: TestSupport.ProcessResult, outcomes: [Outcome], leftovers: Set<String>)?]
            let lock = NSLock()
            init(_ count: Int) { items = Array(repeating: nil, count: count) }
        }
        let box = Results(variants.count)
        let queue = DispatchQueue(label: "hostile-corpus", attributes: .concurrent)
        let group = DispatchGroup()
        let slots = DispatchSemaphore(value: 4)
        for index in variants.indices {
            slots.wait()
            nonisolated(unsafe) let variant = variants[index]
            queue.async(group: group) {
                defer { slots.signal() }
                let result = try? Self.runCommands(on: variant, in: dir.appendingPathComponent("v\(index)"), patch: patch)
                box.lock.lock(); box.items[index] = result; box.lock.unlock()
            }
        }
        group.wait()
        for (index, variant) in variants.enumerated() {
            let label = variant.name
            guard let (oracle, outcomes, leftovers) = box.items[index] else { Issue.record("\(label): could not run the commands"); continue }
            let android = oracle.stdout.split(separator: "\n").last.map(String.init) ?? ""
            table.append("\(oracle.succeeded ? "android accepts" : "android refuses") | " + outcomes.map { "\($0.command)=\($0.result.status)" }.joined(separator: " ") + " | \(label)"
                         + (oracle.succeeded ? "" : " [\(android)]"))
            #expect(leftovers.isEmpty, "\(label): files left behind: \(leftovers.sorted())")
            for outcome in outcomes {
                let result = outcome.result
                let all = result.stdout + result.stderr
                #expect(result.status == 0 || result.status == 1, "\(label): \(outcome.command) died or hung: \(result)")
                #expect(!all.contains("Fatal error") && !all.contains("Stack dump") && !all.contains(".swift:"), "\(label): \(outcome.command) trapped: \(result)")
                if result.status != 0 && !outcome.command.hasPrefix("verify") {
                    // One line that names the problem (the pass: password warning aside).
                    let lines = result.stderr.split(separator: "\n").filter { !$0.hasPrefix("WARNING: --ks-pass") && !$0.trimmingCharacters(in: .whitespaces).isEmpty }
                    #expect(lines.count == 1 && lines[0].count > 20, "\(label): \(outcome.command) refused without one clear error line: \(result)")
                }
            }
            if label.contains("control") {
                // The intact APKs: every writing command takes them, as Android does (verify's verdict is about
                // signatures and install rules: v2 alone at minSdk 21, v1 alone at targetSdk 33 do not install).
                #expect(oracle.succeeded, "\(label): libziparchive refuses the intact APK: \(oracle)")
                for outcome in outcomes where !outcome.command.hasPrefix("verify") {
                    #expect(outcome.result.status == 0, "\(label): \(outcome.command) refuses the intact APK: \(outcome.result)")
                }
            }
            let accepted = Self.acceptedByDesign[label] ?? []
            if !oracle.succeeded {
                for outcome in outcomes where !accepted.contains(outcome.command) {
                    #expect(outcome.result.status != 0, "\(label): Android refuses it (\(android)) but \(outcome.command) accepts it")
                }
            }
            let excepted = accepted.union(Self.refusedByDesign[label] ?? [])
            let writing = outcomes.filter { writers.contains($0.command) && !excepted.contains($0.command) }
            let statuses = Set(writing.map { $0.result.status })
            let disagreement = writing.map { "\($0.command)=\($0.result.status) \($0.result.stderr.split(separator: "\n").last ?? "")" }.joined(separator: "; ")
            #expect(statuses.count <= 1, "\(label): the commands disagree: \(disagreement)")
        }
        let report = table.joined(separator: "\n")
        try? report.write(toFile: dir.deletingLastPathComponent().appendingPathComponent("hostile-corpus-report.txt").path, atomically: true, encoding: .utf8)
        print(report)
    }
}
