import APKCore
import Testing
import TestSupport

/// `ZipArchive.entry(named:)` finds an entry by its name's bytes, as Android's ZIP reader does (libziparchive's
/// `FindEntry`): a canonically equivalent spelling (composed or decomposed, KELVIN SIGN for `K`) is another name.
@Suite struct EntryLookupTests {
    /// Names of several lengths and spellings: the same letters composed and decomposed, a KELVIN SIGN beside a
    /// `K`, a GREEK QUESTION MARK beside a `;`, names that differ only in their last byte.
    static let names = [
        "AndroidManifest.xml", "resources.arsc", "assets/com.android.hints.pins.txt", "assets/com.android.hints.pins.tx",
        "stamp-cert-sha256", "caf\u{E9}.txt", "cafe\u{301}.txt", "\u{212A}ey.txt", "Key.txt", "res/a;b", "res/a\u{37E}c",
        "META-INF/MANIFEST.MF", "lib/arm64-v8a/libx.so",
    ]

    static func archive() throws -> ZipArchive {
        var builder = ZipBuilder()
        builder.items = names.map { ZipBuilder.Item(name: $0, data: Array($0.utf8), crc: 0) }
        return try ZipArchive(source: ByteArrayDataSource(builder.build()))
    }

    @Test("finds the entry with the same bytes, and no other", arguments: names + [
        "\u{212A}ey.tx", "res/a\u{37E}b", "res/a;c", "res/a;b ", "cafe.txt", "caf\u{E9}.tx", "assets/com.android.hints.pins.txt2",
        "resources.arsC", "missing", "",
    ])
    func findsTheSameBytes(name: String) throws {
        let zip = try Self.archive()
        let expected = zip.entries.first { $0.nameBytes == Array(name.utf8) }
        #expect(zip.entry(named: name)?.nameBytes == expected?.nameBytes, "\(name.debugDescription)")
        #expect(expected == nil || zip.entry(named: name) != nil, "\(name.debugDescription)")
    }

    @Test("every entry of a large archive is found by its name, at its own place")
    func largeArchiveLookups() throws {
        var builder = ZipBuilder()
        builder.items = (0..<3000).map { ZipBuilder.Item(name: "res/drawable-\($0 % 7)/i\($0).png", data: [UInt8($0 & 0xFF)], crc: 0) }
        let zip = try ZipArchive(source: ByteArrayDataSource(builder.build()))
        var wrong = 0
        for entry in zip.entries where zip.entry(named: entry.name)?.localHeaderOffset != entry.localHeaderOffset { wrong += 1 }
        #expect(wrong == 0, "\(wrong) of 3000 names found another entry or none")
        #expect(zip.entry(named: "res/drawable-0/i3000.png") == nil)
    }

    @Test("the table of names finds each name at the place it went in, after growing, and no other name")
    func nameTableLookups() {
        var table = EntryNameTable()  // no capacity given: it grows many times
        let names = (0..<5000).map { Array("res/drawable-\($0 % 7)/icon_\($0).png".utf8) } + [Array("caf\u{E9}".utf8), []]
        var refused = 0
        for name in names where !table.insert(name) { refused += 1 }
        #expect(refused == 0)
        let insertedAgain = table.insert(names[42])
        #expect(!insertedAgain, "the same bytes again")
        var wrong = 0
        for (index, name) in names.enumerated() where name.withUnsafeBytes({ table.index(of: $0) }) != index { wrong += 1 }
        #expect(wrong == 0, "\(wrong) of \(names.count) names not found at their place")
        for missing in ["cafe\u{301}", "res/drawable-0/icon_5000.png", "res/drawable-0/icon_0.pn"] {
            #expect(Array(missing.utf8).withUnsafeBytes { table.index(of: $0) } == nil, "\(missing.debugDescription)")
        }
    }

    @Test("canonically equivalent spellings are different entries")
    func equivalentSpellingsAreApart() throws {
        let zip = try Self.archive()
        #expect("caf\u{E9}.txt" == "cafe\u{301}.txt" && "\u{212A}ey.txt" == "Key.txt", "String's == joins them: the premise of the test")
        for name in ["caf\u{E9}.txt", "cafe\u{301}.txt", "\u{212A}ey.txt", "Key.txt", "res/a\u{37E}c"] {
            #expect(zip.entry(named: name)?.nameBytes == Array(name.utf8), "\(name.debugDescription)")
        }
        #expect(zip.entry(named: "res/a;c") == nil, "U+037E GREEK QUESTION MARK is not ;")
    }

    @Test("JAR signature files are told by the name's bytes, as apksig reads its String unit for unit", arguments: [
        ("META-INF/CERT.SF", true), ("META-INF/cert.rsa", true), ("META-INF/MANIFEST.MF", true), ("META-INF/manifest.mf", true),
        ("META-INF/SIG-x", true), ("META-INF/x.EC", true), ("META-INF/x.DsA", true),
        // A combining mark after the folder's slash: Swift's Characters join it to the slash, Java's units do not.
        ("META-INF/\u{301}SIG-x", false), ("META-INF/\u{301}MANIFEST.MF", false), ("META-INF/\u{301}x.SF", true),
        // A second slash with a mark after it is still a subfolder.
        ("META-INF/a/\u{301}b.SF", false), ("META-INF/a/b.SF", false),
        // KELVIN SIGN lower-cases to k; U+0130 to i and a combining dot: neither makes a pattern.
        ("META-INF/S\u{130}G-x", false), ("META-INF/MAN\u{130}FEST.MF", false), ("META-INF/x.\u{212A}", false),
        ("META-INF/MANIFEST.MFX", false), ("meta-inf/MANIFEST.MF", false), ("META-INF/", false), ("META-INF/x.SF/", false),
    ])
    func signatureFilesByBytes(name: String, isSignatureFile: Bool) {
        #expect(JarSignatureFiles.isSignatureFile(name) == isSignatureFile, "\(name.debugDescription)")
    }

    @Test func exactNamesKeyByBytes() {
        let names: Set<ExactName> = [ExactName("caf\u{E9}"), ExactName("cafe\u{301}"), ExactName("K"), ExactName("\u{212A}")]
        #expect(names.count == 4)
        #expect(ExactName("caf\u{E9}") != ExactName("cafe\u{301}"))
        #expect(ExactName("cafe\u{301}") < ExactName("caf\u{E9}"), "UTF-8 byte order: 0x65 before 0xC3")
        #expect(!(ExactName("a") < ExactName("a")))
    }
}
