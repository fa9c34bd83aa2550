import APKCore
import Testing
import TestSupport

/// `ZipArchive.entry(named:)` passes most entries over on their names' lengths when the name looked up has one
/// spelling only: it must find exactly what comparing every name with `==` finds.
@Suite struct EntryLookupTests {
    /// Names of several lengths and spellings: the same letters composed and decomposed, a KELVIN SIGN for `K`,
    /// a GREEK QUESTION MARK for `;`, names that differ only in their last byte.
    static let names = [
        "AndroidManifest.xml", "resources.arsc", "assets/com.android.hints.pins.txt", "assets/com.android.hints.pins.tx",
        "stamp-cert-sha256", "caf\u{E9}.txt", "cafe\u{301}.txt", "\u{212A}ey.txt", "res/a;b", "res/a\u{37E}c",
        "META-INF/MANIFEST.MF", "lib/arm64-v8a/libx.so",
    ]

    static func archive() throws -> ZipArchive {
        var builder = ZipBuilder()
        builder.items = names.map { ZipBuilder.Item(name: $0, data: [], crc: 0) }
        return try ZipArchive(source: ByteArrayDataSource(builder.build()))
    }

    @Test("finds what comparing every name finds", arguments: names + [
        "Key.txt", "res/a;c", "res/a;b ", "cafe.txt", "assets/com.android.hints.pins.txt2", "resources.arsC", "missing",
    ])
    func agreesWithComparingEveryName(name: String) throws {
        let zip = try Self.archive()
        let expected = zip.entries.first { $0.name == name }
        #expect(zip.entry(named: name)?.nameBytes == expected?.nameBytes, "\(name.debugDescription)")
    }

    @Test func oneSpellingOnlyForASCIIWithoutTheDecomposedCharacters() {
        #expect(ZipArchive.isSpelledOneWay("assets/com.android.hints.pins.txt"))
        #expect(ZipArchive.isSpelledOneWay("AndroidManifest.xml"))
        #expect(ZipArchive.isSpelledOneWay(""))
        // `K` is also U+212A KELVIN SIGN, `;` U+037E, `` ` `` U+1FEF; anything not ASCII may be composed or not.
        for name in ["Key.txt", "a;b", "a`b", "caf\u{E9}"] { #expect(!ZipArchive.isSpelledOneWay(name), "\(name.debugDescription)") }
    }
}
