import BinaryXML
import Foundation
import ResourceTable
import Testing
import TestSupport

@Suite(.removesTemporaryDirectories) struct ResourceTableTests {
    /// A fixture with translations and strings that need escaping.
    static func fixture() -> FixtureAPK {
        var fixture = FixtureAPK()
        fixture.packageName = "com.example.strings"
        fixture.strings = ["greeting": "Hello", "farewell": "Bye", "quote": #"Don\'t say \"no\""#, "lines": #"one\ntwo"#,
                           "spaced": #""  two  spaces ""#, "at": #"\@home"#]
        fixture.resources["values-fr/strings.xml"] = Array("""
            <?xml version="1.0" encoding="utf-8"?>
            <resources><string name="greeting">Bonjour</string><string name="app_name">Fixture FR</string></resources>
            """.utf8)
        fixture.resources["values-b+sr+Latn/strings.xml"] = Array("""
            <resources><string name="greeting">Zdravo</string></resources>
            """.utf8)
        fixture.resources["values-night-v21/strings.xml"] = Array("""
            <resources><string name="greeting">Good night</string></resources>
            """.utf8)
        return fixture
    }

    static func built() throws -> (apk: String, table: [UInt8], dir: URL) {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-arsc")
        let apk = try fixture().build(in: dir)
        return (apk, try Oracle.entry("resources.arsc", in: apk), dir)
    }

    /// aapt's view: for each config, string name → value (from `(string8) "…"` lines).
    static func aaptStrings(_ dump: String) -> [String: [String: String]] {
        var result: [String: [String: String]] = [:]
        var config = "", pendingName: String?
        for line in dump.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("config ") { config = String(trimmed.dropFirst(7).dropLast()); pendingName = nil; continue }
            if trimmed.hasPrefix("resource "), let r = trimmed.range(of: ":string/") {
                pendingName = String(trimmed[r.upperBound...].prefix { $0 != ":" }); continue
            }
            if let name = pendingName, trimmed.hasPrefix("(string"), let q = trimmed.firstIndex(of: "\"") {
                result[config, default: [:]][name] = String(trimmed[trimmed.index(after: q)...].dropLast())
                pendingName = nil
            }
        }
        return result
    }

    @Test func readsStringsLikeAapt() throws {
        let (apk, bytes, dir) = try Self.built()
        defer { try? FileManager.default.removeItem(at: dir) }
        let table = try ResourceTable(bytes: bytes)
        #expect(table.packageName == "com.example.strings")
        #expect(table.packageID == 0x7f)
        let aapt = Self.aaptStrings(try Oracle.aapt(["dump", "--values", "resources", apk]))
        var ours: [String: [String: String]] = [:]
        for configuration in table.stringConfigurations {
            for (name, value) in table.strings(in: configuration) { ours[configuration.description, default: [:]][name] = value }
        }
        #expect(Set(ours.keys) == Set(aapt.keys))
        // aapt prints newlines as \n; compare the simple ones exactly and the others by meaning.
        #expect(ours["(default)"]?["greeting"] == "Hello")
        #expect(ours["fr"]?["greeting"] == aapt["fr"]?["greeting"])
        #expect(ours["b+sr+Latn"]?["greeting"] == "Zdravo")
        #expect(ours["night-v21"]?["greeting"] == "Good night")
        #expect(ours["(default)"]?["quote"] == #"Don't say "no""#)
        #expect(ours["(default)"]?["lines"] == "one\ntwo")
        #expect(ours["(default)"]?["spaced"] == "  two  spaces ")
        #expect(ours["(default)"]?["at"] == "@home")
        #expect(table.resourceID(type: "string", name: "greeting").map { table.resourceName(for: $0)?.name } == "greeting")
    }

    @Test func frameworkTableNamesAndConfigurationsMatchAapt() throws {
        let table = try ResourceTable(bytes: try Oracle.entry("resources.arsc", in: TestSupport.frameworkRes))
        #expect(table.packageName == "android")
        #expect(table.packageID == 0x01)
        let dump = try Oracle.aapt(["dump", "resources", TestSupport.frameworkRes])
        var configs = Set<String>()
        var checked = 0
        for line in dump.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            // This aapt prints MNC "00" (stored as 0xFFFF) as mnc65535; the folder name is values-mcc740-mnc00.
            if trimmed.hasPrefix("config ") { configs.insert(String(trimmed.dropFirst(7).dropLast()).replacingOccurrences(of: "mnc65535", with: "mnc00")) }
            // "spec resource 0x01010000 android:attr/theme: flags=…"
            if trimmed.hasPrefix("spec resource 0x") {
                let parts = trimmed.split(separator: " ")
                guard parts.count >= 4, let id = UInt32(parts[2].dropFirst(2), radix: 16) else { continue }
                let name = parts[3].dropFirst("android:".count).dropLast()
                #expect(table.resourceName(for: id)?.description == String(name))
                checked += 1
            }
        }
        #expect(checked > 5000)
        let ours = Set(table.entries.map(\.configuration.description))
        #expect(ours.subtracting(configs).sorted() == [], "configurations aapt does not print")
        #expect(configs.subtracting(ours).sorted() == [], "configurations we missed")
        // Public framework attributes in the generated table agree with the real table.
        let attr = try #require(table.attribute(id: AndroidAttribute.debuggable))
        #expect(attr.format == FrameworkResources.attribute(id: AndroidAttribute.debuggable)?.format)
        let orientation = try #require(table.attribute(id: 0x0101_001e))
        #expect(Set(orientation.symbols.map(\.name)) == Set(FrameworkResources.attribute(named: "screenOrientation")!.symbols.map(\.name)))
    }

    /// The shipped framework table is what its generator makes today, and agrees with our own parse of
    /// framework-res's resources.arsc (two independent readers: aapt's dump and ResourceTable).
    @Test func shippedFrameworkTableIsCurrentAndAgreesWithTheTable() throws {
        let script = TestSupport.packageRoot.appendingPathComponent("Sources/FrameworkTable/generate-framework-resources.py").path
        let generated = try TestSupport.run("python3", [script, TestSupport.frameworkRes])
        #expect(generated.succeeded, "\(generated)")
        let shipped = try String(contentsOfFile: TestSupport.packageRoot.appendingPathComponent("Sources/BinaryXML/FrameworkResources+Data.swift").path, encoding: .utf8)
        #expect(generated.stdout == shipped, "regenerate with the command in FrameworkResources+Data.swift")

        let table = try ResourceTable(bytes: try Oracle.entry("resources.arsc", in: TestSupport.frameworkRes))
        #expect(FrameworkResources.count > 2000)
        for id in FrameworkResources.allIDs {
            let ours = table.resourceName(for: id)
            #expect(ours?.type == FrameworkResources.name(for: id)?.type && ours?.name == FrameworkResources.name(for: id)?.name, "0x\(String(id, radix: 16))")
            guard let shippedAttribute = FrameworkResources.attribute(id: id) else { continue }
            let parsed = table.attribute(id: id)
            #expect(parsed?.format == shippedAttribute.format, "\(shippedAttribute.name)")
            #expect(Set(parsed?.symbols ?? []) == Set(shippedAttribute.symbols), "\(shippedAttribute.name)")
        }
    }

    @Test func changedStringsShowInAaptDumpAndNothingElseChanges() throws {
        let (apk, bytes, dir) = try Self.built()
        defer { try? FileManager.default.removeItem(at: dir) }
        var table = try ResourceTable(bytes: bytes)
        try table.setString(named: "greeting", qualifiers: "fr", to: "Salut à tous")
        try table.setString(named: "app_name", to: "Renamed")
        try table.setString(named: "farewell", to: "Hello")  // reuses an existing value's text: still its own entry
        let patched = dir.appendingPathComponent("patched.apk").path
        try Oracle.replacing(["resources.arsc": try table.encoded()], in: apk, destination: patched)
        let before = try Oracle.aapt(["dump", "--values", "resources", apk]).split(separator: "\n", omittingEmptySubsequences: false)
        let after = try Oracle.aapt(["dump", "--values", "resources", patched]).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(before.count == after.count)
        let changed = zip(before, after).filter { $0 != $1 }
        // Per changed string: the entry line (only its pool index d=…) and the value line.
        #expect(changed.count == 6, "changed lines: \(changed)")
        for (old, new) in changed where old.contains("resource 0x") {
            #expect(old.replacingOccurrences(of: #"d=0x[0-9a-f]+"#, with: "", options: .regularExpression)
                    == new.replacingOccurrences(of: #"d=0x[0-9a-f]+"#, with: "", options: .regularExpression))
        }
        let strings = Self.aaptStrings(after.joined(separator: "\n"))
        #expect(strings["fr"]?["greeting"] == "Salut à tous")
        #expect(strings["(default)"]?["app_name"] == "Renamed")
        #expect(strings["(default)"]?["farewell"] == "Hello")
        #expect(strings["(default)"]?["greeting"] == "Hello")
        #expect(strings["fr"]?["app_name"] == "Fixture FR")
        // The badging label follows the default app_name.
        #expect(try Oracle.aapt(["dump", "badging", patched]).contains("application-label:'Renamed'"))
        // Reading our output gives the new values.
        let reread = try ResourceTable(bytes: try table.encoded())
        #expect(reread.string(named: "greeting", qualifiers: "fr") == "Salut à tous")
    }

    @Test func addingIsRefusedClearly() throws {
        let (_, bytes, dir) = try Self.built()
        defer { try? FileManager.default.removeItem(at: dir) }
        var table = try ResourceTable(bytes: bytes)
        #expect(throws: ResourceTableError(.addingNotSupported, "")) { try table.setString(named: "brand_new", to: "x") }
        #expect(throws: ResourceTableError(.addingNotSupported, "")) { try table.setString(named: "greeting", qualifiers: "de", to: "Hallo") }
        do { try table.setString(named: "brand_new", to: "x") } catch {
            #expect("\(error)".contains("does not exist in resources.arsc"))
        }
        #expect(try table.encoded() == bytes)  // nothing changed, nothing rewritten
    }

    /// The strings of framework-res's configurations (apostrophes, quotes, markup, %-formats, 80 languages)
    /// decodes to strings.xml text that reads back to the same values.
    @Test func frameworkStringsDecodeAndReapplyUnchanged() throws {
        let bytes = try Oracle.entry("resources.arsc", in: TestSupport.frameworkRes)
        var table = try ResourceTable(bytes: bytes)
        let files = table.stringsXMLFiles()
        #expect(files.count > 500)
        var checked = 0
        // Every third configuration (and the default) keeps the test quick; all languages occur in the sample.
        for (index, (directory, text)) in files.enumerated() where index % 3 == 0 || directory == "values" {
            let changed = try table.applyStringsXML(text, directory: directory, fileName: "res/\(directory)/strings.xml")
            #expect(changed.isEmpty, "\(directory): \(changed.prefix(5))")
            checked += 1
        }
        #expect(checked >= files.count / 3)
        #expect(try table.encoded() == bytes)
    }

    @Test func stringsXMLRoundTrip() throws {
        let (_, bytes, dir) = try Self.built()
        defer { try? FileManager.default.removeItem(at: dir) }
        var table = try ResourceTable(bytes: bytes)
        let files = table.stringsXMLFiles()
        #expect(Set(files.map(\.directory)) == ["values", "values-fr", "values-b+sr+Latn", "values-night-v21"])
        for (directory, text) in files {
            // Applying the decoded files unchanged changes nothing.
            #expect(try table.applyStringsXML(text, directory: directory, fileName: "res/\(directory)/strings.xml").isEmpty)
        }
        #expect(try table.encoded() == bytes)
        let tricky = ["  lead", "trail ", "a  b", "it's", #"say "hi""#, "back\\slash", "@ref", "?attr", "tab\there", "new\nline", "ünïcödé 🎉", "<b>&amp;"]
        for value in tricky {
            let text = StringsXML.encode([StringsXML.Item(name: "x", value: value)])
            #expect(try StringsXML.parse(text, fileName: "t.xml").first?.value == value, "\(text)")
        }
        let changed = try table.applyStringsXML(#"<resources><string name="greeting">Bonsoir <xliff:g id="n" xmlns:xliff="urn:oasis:names:tc:xliff:document:1.2">%1$s</xliff:g></string></resources>"#,
                                                directory: "values-fr", fileName: "strings.xml")
        #expect(changed == ["greeting"])
        #expect(table.string(named: "greeting", qualifiers: "fr") == "Bonsoir %1$s")
        // Markup makes a styled string.
        #expect(try table.applyStringsXML(#"<resources><string name="greeting">a <b>bold</b></string></resources>"#, directory: "values", fileName: "s.xml") == ["greeting"])
        #expect(try ResourceTable(bytes: try table.encoded()).entries.first { $0.name == "greeting" && $0.configuration.qualifiers.isEmpty }?.styledValue
                == StyledString(text: "a bold", spans: [.init(tag: "b", firstChar: 2, lastChar: 5)]))
    }
}
