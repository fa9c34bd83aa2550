import Foundation
import Testing
import TestSupport

/// Resources of real APKs nobody here wrote (`RealWorldCorpus`: F-Droid's Gradle-built test apps, a Godot game,
/// SystemWebView's repack, uiautomator2's, pocoui's and airtest's Gradle builds), through `decode` and `run`:
/// - decoding then compiling the unchanged text gives the same `aapt dump xmltree` of every XML file (line numbers
///   aside), the same `aapt dump --values resources` and `aapt2 dump resources`;
/// - edits (a new string and its values-fr translation, a new layout, the network-security preset with a CA
///   certificate, a changed color, dimen or bool) show in the dumps exactly, everything else stays as it was, the
///   output verifies with apksigner and apktool decodes the added resources.
@Suite(.removesTemporaryDirectories) struct RealWorldResourceTests {
    typealias APK = RealWorldCorpus.APK

    /// APKs whose archive every rewriting command refuses, and what the message names. Their resources are never
    /// read, so nothing of them is decoded.
    static let refusedArchives: [String: String] = [
        // A dex file before the first local header (the Janus attack, CVE-2017-13156).
        "janus.apk": "before the first local header",
    ]

    /// APKs `decode` refuses (it writes a file for each entry, as unpack does), and the words that say why.
    static let refusedDecodes: [String: String] = [
        // apktool's issue 1498 (assets named ../assets/…) and 1589 (META-INF/../../../../CERT.RSA): names that
        // would escape the output folder.
        "issue1498.apk": "is unsafe to extract",
        "issue1589.apk": "is unsafe to extract",
    ]

    /// APKs whose edits `run` refuses, and the words that say why.
    static let refusedEdits: [String: String] = [
        // apktool's issue 1157: a manifest with no <application> element, which --trust-user-certs needs.
        "issue1157.apk": "has no <application> element",
        // apktool's issue 1589: JAR signature files under META-INF/../../../../, which verifiers read as a signer
        // no new signature can make valid (sign refuses it the same way).
        "issue1589.apk": "ends as a JAR signature block does",
    ]

    /// Findings outside the resource code: the checks still run, and their failure is recorded as known.
    static let knownArchiveIssues: [String: String] = [:]

    /// Where the edited APK's badging differs from the input's beyond the added configurations, known: the check
    /// still runs, its failure is recorded as known.
    static let knownBadgingIssues: [String: String] = [:]

    /// Where decode then run is not lossless in the XML files' dumps, known: the check still runs, its failure is
    /// recorded as known (the table, badging and entries are checked as for every APK).
    static let knownLosses: [String: String] = [
        // aapt1's shared-library client (apktool's shared_libraries/client.apk): aapt kept the raw text of its
        // layouts' references into the library, "@com.google.android.test.shared_library:style/CodeFont"; the
        // library's names are not in the APK, so decode prints the reference as @0x02040000, and that is the raw
        // text of the output. The values (dynamic references, TYPE_DYNAMIC_REFERENCE) come back as they were.
        "client.apk": "the raw text of a reference into a shared library comes back as its ID",
        // aapt1 kept the source's raw text "?attr/android:windowTitleStyle" beside the compiled reference; decode
        // prints the reference by name, ?android:attr/windowTitleStyle, and that text is the raw text of the output.
        "issue767.apk": "aapt1's raw text of a ?type/package:name reference comes back in the canonical ?package:type/name form",
        // A namespace node repeated around the same element (xmlns:android twice on <vector>): XML can name it once.
        "issue1456.apk": "a repeated namespace node comes back once",
    ]

    static let java = ["JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"]

    /// The APKs the JVM oracles (apksigner, apktool: a second or two each) run on: one per distinct resources.arsc
    /// and manifest. The corpus holds the same app signed in several ways (urzip-*, obb.*, the politedroid and
    /// mirrormirror versions share tables); the resource edits give those the same output but for the signature,
    /// and the aapt/aapt2 checks still run on every one.
    static let jvmOracleAPKs: Set<String> = {
        var seen: [[UInt8]: String] = [:]
        for apk in RealWorldCorpus.apps {
            guard apk.isFetched else { continue }
            let path = apk.path
            let table = (try? TestSupport.run("unzip", ["-p", path, "resources.arsc"]))?.stdout ?? ""
            let manifest = (try? TestSupport.run("unzip", ["-p", path, "AndroidManifest.xml"]))?.stdout ?? ""
            let key = Array(table.utf8) + [0] + Array(manifest.utf8)
            if seen[key] == nil { seen[key] = apk.name }
        }
        return Set(seen.values)
    }()

    @Test(arguments: RealWorldCorpus.apps)
    func decodeThenRunIsLossless(_ apk: APK) throws {
        let input = try apk.fetchedPath()
        let work = try TestSupport.makeTemporaryDirectory("realworld-lossless")
        defer { try? FileManager.default.removeItem(at: work) }
        let decoded = work.appendingPathComponent("decoded").path
        if let refusal = Self.refusedArchives[apk.name] ?? Self.refusedDecodes[apk.name] {
            let decode = try TestSupport.apkpatch(["decode", input, "-o", decoded])
            #expect(decode.status == 1 && decode.stderr.contains(refusal), "\(apk): decode should refuse (\(refusal)): \(decode)")
            #expect(!FileManager.default.fileExists(atPath: decoded), "\(apk): decode left \(decoded)")
            return
        }
        if let reason = Self.knownArchiveIssues[apk.name] {
            withKnownIssue(Comment(rawValue: reason)) { try Self.expectLossless(apk, input: input, work: work) }
        } else if let reason = Self.knownLosses[apk.name] {
            // What decode writes must still compile, and the table and archive come back whole: only the XML files'
            // dumps are known to differ.
            let output = try Self.roundTrip(apk, input: input, work: work)
            withKnownIssue(Comment(rawValue: reason)) { try Self.expectSameXMLFiles(apk, input: input, output: output, work: work) }
            try Self.expectSameTableAndEntries(apk, input: input, output: output, work: work)
        } else {
            try Self.expectLossless(apk, input: input, work: work)
        }
    }

    static func expectLossless(_ apk: APK, input: String, work: URL) throws {
        try expectSameDumps(apk, input: input, output: try roundTrip(apk, input: input, work: work), work: work)
    }

    /// `decode`, then `run` with the decoded text as the patch: the output's path.
    static func roundTrip(_ apk: APK, input: String, work: URL) throws -> String {
        let decoded = work.appendingPathComponent("decoded").path, output = work.appendingPathComponent("roundtrip.apk").path
        let decode = try TestSupport.apkpatch(["decode", input, "-o", decoded])
        try #require(decode.succeeded, "\(apk): decode failed: \(decode)")
        let run = try TestSupport.apkpatch(["run", input, "--patch", decoded, "--no-sign", "--out", output, "-q"])
        try #require(run.succeeded, "\(apk): run with the decoded text failed: \(run)")
        return output
    }

    static func expectSameDumps(_ apk: APK, input: String, output: String, work: URL) throws {
        try expectSameXMLFiles(apk, input: input, output: output, work: work)
        try expectSameTableAndEntries(apk, input: input, output: output, work: work)
    }

    /// Every binary XML file of `input` has the same `aapt dump xmltree` in `output`.
    static func expectSameXMLFiles(_ apk: APK, input: String, output: String, work: URL) throws {
        let xmlFiles = try binaryXMLFiles(of: input, in: work)
        #expect(xmlFiles.contains("AndroidManifest.xml"), "\(apk): no binary manifest among \(xmlFiles.prefix(5))")
        try expectSameXMLTrees(input, output, files: xmlFiles, label: "\(apk): decode/run")
    }

    /// The resource table dumps the same (aapt, aapt2, libandroidfw), the badging too, and libziparchive reads the
    /// same entries.
    static func expectSameTableAndEntries(_ apk: APK, input: String, output: String, work: URL) throws {
        Dump.expectEqual(try Dump.aapt(["--values", "resources", input]), try Dump.aapt(["--values", "resources", output]),
                         "\(apk): decode/run changed aapt dump --values resources")
        Dump.expectEqual(try aapt2Resources(input), try aapt2Resources(output), "\(apk): decode/run changed aapt2 dump resources")
        Dump.expectEqual(try Dump.aapt(["badging", input]), try Dump.aapt(["badging", output]), "\(apk): decode/run changed aapt dump badging")
        // Android's own readers: libandroidfw loads the table as it did (flags per resource and configuration,
        // overlayables), libziparchive reads every entry it read.
        let tables = (try androidTable(input, in: work), try androidTable(output, in: work))
        Dump.expectEqual(tables.0, tables.1, "\(apk): decode/run changed libandroidfw's reading of resources.arsc")
        if case .success(let entries) = try Dump.zipEntries(input) {
            // The output is unsigned (--no-sign): the input's JAR signature files are not in it.
            let names = { (entries: [ZipArchiveOracle.Entry]) in Set(entries.map(\.name).filter { !isJARSignatureFile($0) }) }
            switch try Dump.zipEntries(output) {
            case .failure(let error): Issue.record("\(apk): libziparchive does not read the output: \(error)")
            case .success(let read):
                let differing = names(read).symmetricDifference(names(entries)), sameNames = differing.isEmpty
                #expect(sameNames, "\(apk): libziparchive reads other entries in the output: \(differing.sorted().prefix(5))")
            }
        }
        // apktool d reads the outputs of `edits` below, which go through the same compilation (manifest, values) and
        // add to it: one JVM run per APK instead of two keeps the suite's time reasonable.
    }

    /// A shared library's client (aapt1's, apktool's shared_libraries/client.apk): its string/changes is a
    /// TYPE_DYNAMIC_REFERENCE into the library (package 0x02 of its library table). Decoded and compiled back it
    /// must stay dynamic: Android maps only dynamic references to the ID the library gets at load time
    /// (`DynamicRefTable::lookupResourceValue`), so a plain reference would point at whatever package has 0x02.
    @Test func aSharedLibraryClientKeepsItsDynamicReferences() throws {
        let apk = RealWorldCorpus.apk(named: "client.apk")
        let input = try apk.fetchedPath()
        let work = try TestSupport.makeTemporaryDirectory("realworld-dynamic")
        defer { try? FileManager.default.removeItem(at: work) }
        let output = try Self.roundTrip(apk, input: input, work: work)
        let values = try Dump.aapt(["--values", "resources", output])
        let changes = values.split(separator: "\n").drop { !$0.contains(":string/changes: t=") }.prefix(2).map(String.init)
        #expect(changes.count == 2 && changes[0].contains("t=0x07 d=0x02020003") && changes[1].contains("(dynamic reference) 0x02020003"),
                "\(changes)")
    }

    /// Platform builds (LineageOS's framework-res, by aapt v1): decoding then running the unchanged text gives back
    /// resources.arsc byte for byte (styled strings whose span tags keep the source's attribute order included),
    /// every XML file with the same `aapt dump xmltree`, line numbers and text nodes' white space included, the
    /// same `aapt dump badging`, `aapt dump --values resources` and `aapt2 dump resources`; apktool decodes it.
    @Test(arguments: RealWorldCorpus.platformBuilds)
    func platformBuildDecodeThenRunIsLossless(_ apk: APK) throws {
        let input = try apk.fetchedPath()
        let work = try TestSupport.makeTemporaryDirectory("realworld-platform")
        defer { try? FileManager.default.removeItem(at: work) }
        let decoded = work.appendingPathComponent("decoded").path, output = work.appendingPathComponent("roundtrip.apk").path
        let decode = try TestSupport.apkpatch(["decode", input, "-o", decoded])
        try #require(decode.succeeded, "\(apk): decode failed: \(decode)")
        let run = try TestSupport.apkpatch(["run", input, "--patch", decoded, "--no-sign", "--out", output, "-q"])
        try #require(run.succeeded, "\(apk): run with the decoded text failed: \(run)")
        // unzip's length and CRC-32 of the table (the data is copied raw when unchanged).
        func table(_ path: String) throws -> [Substring] {
            let line = try TestSupport.run("unzip", ["-v", path, "resources.arsc"]).stdout.split(separator: "\n").first { $0.hasSuffix(" resources.arsc") }
            let fields = line?.split(separator: " ") ?? []
            return fields.count == 8 ? [fields[0], fields[6]] : fields
        }
        let before = try table(input), after = try table(output)
        #expect(before.count == 2 && before == after, "\(apk): resources.arsc changed: \(before) -> \(after)")
        let files = try Self.binaryXMLFiles(of: input, in: work)
        #expect(files.count > 1000, "\(apk): \(files.count) XML files")
        for start in stride(from: 0, to: files.count, by: 200) {
            let batch = Array(files[start..<min(start + 200, files.count)])
            Dump.expectEqual(try Dump.aapt(["xmltree", input] + batch), try Dump.aapt(["xmltree", output] + batch),
                             "\(apk): decode/run changed aapt dump xmltree of \(batch.first!)…\(batch.last!)")
        }
        for arguments in [["badging"], ["--values", "resources"]] {
            Dump.expectEqual(try Dump.aapt(arguments + [input]), try Dump.aapt(arguments + [output]), "\(apk): decode/run changed aapt dump \(arguments.joined(separator: " "))")
        }
        Dump.expectEqual(try Self.aapt2Resources(input), try Self.aapt2Resources(output), "\(apk): decode/run changed aapt2 dump resources")
        try Self.expectApktoolReads(output, apk: apk, work: work)
    }

    /// A key and a CA certificate, made once per test process (keytool and openssl), for the edit runs.
    static let signing: Result<(keyStore: String, password: String, certificate: String), FixtureError> = TestSupport.sharedByTests {
        do {
            let directory = try TestSupport.makeTemporaryDirectory("realworld-keys")
            let keyStore = directory.appendingPathComponent("release.p12").path, password = "corpus-\(UUID().uuidString.prefix(8))"
            try TestSupport.makeKeyStore(at: keyStore, password: password, dname: "CN=apkpatch corpus")
            let certificate = directory.appendingPathComponent("corpus-ca.pem").path
            let made = try TestSupport.run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", directory.appendingPathComponent("ca.key").path,
                                                       "-out", certificate, "-days", "30", "-subj", "/CN=apkpatch corpus proxy"])
            guard made.succeeded else { throw FixtureError(message: "openssl req failed: \(made)") }
            return .success((keyStore, password, certificate))
        } catch {
            return .failure(FixtureError(message: "making the signing key failed: \(error)"))
        }
    }

    /// One run with every edit: a new string with a values-fr translation, a new layout using it, a new id, the
    /// changed (or, where the APK has none, added) color, dimen and bool, and `--trust-user-certs --ca-cert`.
    @Test(arguments: RealWorldCorpus.apps.filter { refusedArchives[$0.name] == nil })
    func edits(_ apk: APK) throws {
        let input = try apk.fetchedPath()
        let work = try TestSupport.makeTemporaryDirectory("realworld-edits")
        defer { try? FileManager.default.removeItem(at: work) }
        if let reason = Self.knownArchiveIssues[apk.name] {
            withKnownIssue(Comment(rawValue: reason)) { try Self.expectEdits(apk, input: input, work: work) }
        } else {
            try Self.expectEdits(apk, input: input, work: work)
        }
    }

    /// The simple value a changed color, dimen or bool gets, and how aapt2 prints it.
    static func editedValue(_ type: String, was: String?) -> (text: String, printed: String) {
        switch type {
        case "color": ("#ff123456", "#ff123456")
        case "dimen": ("123dp", "123.000000dp")
        default: was == "true" ? ("false", "false") : ("true", "true")
        }
    }

    /// `withJVMOracles`: apksigner and apktool check the output too (by default on `jvmOracleAPKs` only).
    static func expectEdits(_ apk: APK, input: String, work: URL, withJVMOracles: Bool? = nil) throws {
        let signing = try Self.signing.get()
        let before = ResourceDump(try aapt2Resources(input))
        let manifestBefore = try Dump.xmltree(input, "AndroidManifest.xml")
        let hadConfig = manifestBefore.contains("android:networkSecurityConfig(")
        // The first color, dimen and bool of the default configuration with a simple value and a plain name.
        var values = ""
        var changed: [String: (key: String?, printed: String)] = [:]
        for type in ["color", "dimen", "bool"] {
            let existing = before.firstSimpleDefault(ofType: type)
            let name = existing.map { String($0.key.split(separator: "/").last!) } ?? "corpus_\(type)"
            let edit = editedValue(type, was: existing?.value)
            values += "  <\(type) name=\"\(name)\">\(edit.text)</\(type)>\n"
            changed[type] = (existing?.key, edit.printed)
        }
        let patch = work.appendingPathComponent("patch")
        try TestSupport.write("<resources>\n  <string name=\"corpus_added\">Added by apkpatch</string>\n\(values)</resources>\n",
                              to: "res/values/corpus_values.xml", in: patch)
        try TestSupport.write("<resources><string name=\"corpus_added\">Ajouté par apkpatch</string></resources>\n",
                              to: "res/values-fr/corpus_values.xml", in: patch)
        let colorName = changed["color"]!.key.map { String($0.split(separator: "/").last!) } ?? "corpus_color"
        try TestSupport.write("""
            <LinearLayout xmlns:android="http://schemas.android.com/apk/res/android" android:layout_width="match_parent"
                android:layout_height="wrap_content" android:orientation="vertical">
              <TextView android:id="@+id/corpus_text" android:layout_width="wrap_content" android:layout_height="wrap_content"
                  android:text="@string/corpus_added" android:textColor="@color/\(colorName)"/>
            </LinearLayout>
            """, to: "res/layout/corpus_added.xml", in: patch)
        let output = work.appendingPathComponent("edited.apk").path
        let run = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--trust-user-certs", "--ca-cert", signing.certificate,
                                            "--ks", signing.keyStore, "--ks-pass", "env:CORPUS_KS_PASS", "--out", output, "-q"],
                                           environment: ["CORPUS_KS_PASS": signing.password])
        if let reason = refusedEdits[apk.name] {
            #expect(run.status == 1 && run.stderr.contains(reason), "\(apk): run should refuse the edits (\(reason)): \(run)")
            #expect(!FileManager.default.fileExists(atPath: output), "\(apk): run left \(output)")
            return
        }
        try #require(run.succeeded, "\(apk): run with the edits failed: \(run)")

        // Resources: what was there is unchanged but for the edited values; what is new is exactly the additions.
        let after = ResourceDump(try aapt2Resources(output))
        var expectedNew: [String: [String]] = [
            "string/corpus_added": [#"() "Added by apkpatch""#, #"(fr) "Ajouté par apkpatch""#],
            "layout/corpus_added": ["() (file) res/layout/corpus_added.xml type=XML"],
        ]
        if before.key(named: "id/corpus_text") == nil { expectedNew["id/corpus_text"] = ["() "] }
        if !hadConfig { expectedNew["xml/network_security_config"] = ["() (file) res/xml/network_security_config.xml type=XML"] }
        for (type, edit) in changed where edit.key == nil { expectedNew["\(type)/corpus_\(type)"] = ["() \(edit.printed)"] }
        for (key, lines) in before.blocks {
            guard let now = after.blocks[key] else { Issue.record("\(apk): \(key) is gone after the edits"); continue }
            var expected = lines
            if let type = changed.first(where: { $0.value.key == key })?.key {
                expected = lines.map { $0.hasPrefix("() ") ? "() \(changed[type]!.printed)" : $0 }
            }
            #expect(now == expected, "\(apk): \(key) should be \(expected), is \(now)")
        }
        var added = Set(after.blocks.keys).subtracting(before.blocks.keys)
        for (name, lines) in expectedNew {
            guard let key = after.key(named: name) else { Issue.record("\(apk): \(name) was not added"); continue }
            added.remove(key)
            if name == "id/corpus_text" { continue }  // aapt2 prints an id's value as "() " or "() (id)" by version
            #expect(after.blocks[key] == lines, "\(apk): \(key) is \(after.blocks[key] ?? []), expected \(lines)")
            // A new entry of a type the APK has goes in that type.
            let type = name.split(separator: "/")[0]
            if let sibling = before.blocks.keys.first(where: { $0.split(separator: " ").last?.hasPrefix(type + "/") == true }) {
                #expect(ResourceDump.typeID(of: sibling) == ResourceDump.typeID(of: key), "\(apk): \(key) is not in the type of \(sibling)")
            }
        }
        let ca = added.filter { $0.hasSuffix(" raw/corpus_ca") }
        #expect(ca.count == 1 && after.blocks[ca.first ?? ""]?.first?.hasPrefix("() (file) res/raw/corpus_ca.") == true,
                "\(apk): the CA certificate is not raw/corpus_ca: \(ca.map { after.blocks[$0] ?? [] })")
        added.subtract(ca)
        #expect(added.isEmpty, "\(apk): resources added beyond the edits: \(added.sorted())")
        let aapt = try Dump.aapt(["--values", "resources", output])
        #expect(aapt.contains(#"(string8) "Ajouté par apkpatch""#) || aapt.contains(#"(string16) "Ajouté par apkpatch""#),
                "\(apk): aapt dump --values resources lacks the fr string")
        // aapt's badging lists the table's locales and densities and resolves the label once per locale: the edits'
        // configurations (the default one and fr) show there, and nothing else may change (`badging(_:asItReadsFor:literalLabel:)`).
        let badging = try Dump.aapt(["badging", output]), badgingBefore = try Dump.aapt(["badging", input])
        let tableBefore = try androidTable(input, in: work), tableAfter = try androidTable(output, in: work)
        if badging.contains("\nlocales:") {
            let listsFrench = badging.split(separator: "\n").contains { $0.hasPrefix("locales:") && $0.contains(" 'fr'") }
            #expect(listsFrench, "\(apk): aapt's badging lacks the fr locale")
        }
        let asBefore = Self.badging(badging, asItReadsFor: badgingBefore, literalLabel: Self.literalApplicationLabel(manifestBefore))
        let sameBadging = { Dump.expectEqual(badgingBefore, asBefore, "\(apk): the edits changed aapt dump badging beyond the added configurations") }
        if let reason = knownBadgingIssues[apk.name] { withKnownIssue(Comment(rawValue: reason)) { sameBadging() } } else { sameBadging() }
        // libandroidfw loads the edited table, and reads every resource of the input's as it did (flags per
        // resource and configuration: a new configuration holds only the new string).
        if tableBefore.hasPrefix("status 0\n") || tableBefore.hasPrefix("no resources.arsc") {
            let loads = tableAfter.hasPrefix("status 0\n")
            #expect(loads, "\(apk): libandroidfw does not load the edited resources.arsc: \(tableAfter.prefix(300))")
            let read = Set(tableAfter.split(separator: "\n"))
            let changed = tableBefore.split(separator: "\n").dropFirst().filter { !read.contains($0) }
            let readAsBefore = changed.isEmpty
            #expect(readAsBefore, "\(apk): libandroidfw reads \(changed.count) lines of the input's table otherwise after the edits: \(changed.prefix(3))")
        }

        // XML: every file of the input is unchanged but the manifest, which gains the config (and an existing config).
        // aapt loads a shared library (package ID 0, SystemWebView) as package 0x02 and shows its references so.
        let id = { (name: String) -> String in
            guard let key = after.key(named: name) else { return "<none>" }
            let hex = key.split(separator: " ")[1].dropFirst(2)
            return "@0x" + (hex.hasPrefix("00") ? "02" + hex.dropFirst(2) : hex)
        }
        let files = try binaryXMLFiles(of: input, in: work)
        var except: Set<String> = ["AndroidManifest.xml"]
        var configPaths = ["res/xml/network_security_config.xml"]
        if hadConfig {
            // The app's own config changes (every file of its resource, in any configuration).
            let line = manifestBefore.split(separator: "\n").first { $0.contains("networkSecurityConfig(") } ?? ""
            let reference = line.split(separator: "=").last.map { "0x" + $0.dropFirst(3) } ?? ""
            let key = before.blocks.keys.first { $0.split(separator: " ")[1] == reference } ?? ""
            for value in before.blocks[key] ?? [] {
                if let path = value.split(separator: " ").first(where: { $0.hasPrefix("res/") }) { except.insert(String(path)) }
            }
            configPaths = except.filter { $0 != "AndroidManifest.xml" }.sorted()
        }
        try expectSameXMLTrees(input, output, files: files, except: except, label: "\(apk): the edits")
        let manifestAfter = try Dump.xmltree(output, "AndroidManifest.xml")
        let configLine = manifestAfter.split(separator: "\n").first { $0.contains("android:networkSecurityConfig(0x01010527)") }
        if !hadConfig {
            #expect(configLine?.hasSuffix("=" + id("xml/network_security_config")) == true, "\(apk): manifest: \(configLine ?? "no networkSecurityConfig")")
            let without = manifestAfter.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.contains("android:networkSecurityConfig(") }
            Dump.expectEqual(manifestBefore, without.joined(separator: "\n"), "\(apk): the manifest changed beyond android:networkSecurityConfig")
        }
        let layout = try Dump.xmltree(output, "res/layout/corpus_added.xml")
        for expected in ["A: android:text(0x0101014f)=\(id("string/corpus_added"))", "A: android:id(0x010100d0)=\(id("id/corpus_text"))",
                         "A: android:textColor(0x01010098)=\(id("color/\(colorName)"))"] {
            #expect(layout.contains(expected), "\(apk): the new layout lacks \(expected):\n\(layout)")
        }
        for path in configPaths {
            let config = try Dump.xmltree(output, path)
            #expect(config.contains(#"A: src="user""#) && config.contains("A: src=\(id("raw/corpus_ca"))"), "\(apk): \(path): \(config)")
        }

        // Signed as apksigner verifies; apktool decodes every addition.
        guard withJVMOracles ?? jvmOracleAPKs.contains(apk.name) else { return }
        let apksigner = try TestSupport.run("apksigner", ["verify", output], environment: java)
        #expect(apksigner.succeeded, "\(apk): apksigner verify: \(apksigner)")
        guard let decoded = try expectApktoolReads(output, apk: apk, work: work) else { return }
        func text(_ path: String) -> String { (try? String(contentsOfFile: decoded + "/" + path, encoding: .utf8)) ?? "<no \(path)>" }
        #expect(text("res/values/strings.xml").contains(#"<string name="corpus_added">Added by apkpatch</string>"#), "\(apk): apktool's strings.xml")
        #expect(text("res/values-fr/strings.xml").contains(#"<string name="corpus_added">Ajouté par apkpatch</string>"#), "\(apk): apktool's values-fr")
        #expect(text("res/layout/corpus_added.xml").contains(#"android:text="@string/corpus_added""#), "\(apk): \(text("res/layout/corpus_added.xml"))")
        for path in configPaths {
            #expect(text(path).contains(#"<certificates src="user" />"#), "\(apk): apktool's \(path): \(text(path))")
        }
    }

    /// The same edits on a platform build (LineageOS's framework-res: package android, ID 0x01, by aapt v1, with
    /// thousands of resources in each type), and apksigner verifies the output. apktool's reading of this table
    /// is the platform round trip's check: a second decode of 46 MB here would add its seconds to the suite.
    @Test(arguments: RealWorldCorpus.platformBuilds)
    func platformBuildEdits(_ apk: APK) throws {
        let input = try apk.fetchedPath()
        let work = try TestSupport.makeTemporaryDirectory("realworld-platform-edits")
        defer { try? FileManager.default.removeItem(at: work) }
        try Self.expectEdits(apk, input: input, work: work, withJVMOracles: false)
        let apksigner = try TestSupport.run("apksigner", ["verify", work.appendingPathComponent("edited.apk").path], environment: Self.java)
        #expect(apksigner.succeeded, "\(apk): apksigner verify: \(apksigner)")
    }

    // MARK: oracles

    /// The binary XML files of `apk` (the manifest and every compiled XML under res/), by their first chunk.
    static func binaryXMLFiles(of apk: String, in work: URL) throws -> [String] {
        try OracleAnswers.answer(to: ["binary XML files", apk], cached: OracleAnswers.isInput(apk)) { try findBinaryXMLFiles(of: apk, in: work) }
    }

    private static func findBinaryXMLFiles(of apk: String, in work: URL) throws -> [String] {
        let directory = work.appendingPathComponent("xml-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let unzip = try TestSupport.run("unzip", ["-qq", "-o", apk, "AndroidManifest.xml", "res/*", "-d", directory.path])
        #expect(unzip.status == 0 || unzip.status == 1 || unzip.status == 11, "unzip \(apk): \(unzip)")
        var files: [String] = []
        let enumerator = FileManager.default.enumerator(atPath: directory.path)
        while let relative = enumerator?.nextObject() as? String {
            guard relative.hasSuffix(".xml"), let handle = FileHandle(forReadingAtPath: directory.appendingPathComponent(relative).path) else { continue }
            let head = handle.readData(ofLength: 4)
            try? handle.close()
            if Array(head) == [0x03, 0x00, 0x08, 0x00] { files.append(relative) }
        }
        return files.sorted()
    }

    /// `aapt dump xmltree` of `files` in both APKs (line numbers aside), in batches; a difference names its file.
    static func expectSameXMLTrees(_ input: String, _ output: String, files: [String], except: Set<String> = [], label: String,
                                   sourceLocation: SourceLocation = #_sourceLocation) throws {
        let compared = files.filter { !except.contains($0) }
        for start in stride(from: 0, to: compared.count, by: 200) {
            let batch = Array(compared[start..<min(start + 200, compared.count)])
            if try Dump.aapt(["xmltree", input] + batch) == Dump.aapt(["xmltree", output] + batch) { continue }
            for file in batch {
                Dump.expectEqual(try Dump.xmltree(input, file), try Dump.xmltree(output, file), "\(label) changed the xmltree of \(file)",
                                 sourceLocation: sourceLocation)
            }
        }
    }

    /// META-INF/MANIFEST.MF and a JAR signature's .SF, .RSA, .DSA or .EC file (what an unsigned output lacks).
    static func isJARSignatureFile(_ name: String) -> Bool {
        guard name.hasPrefix("META-INF/"), !name.dropFirst(9).contains("/") else { return false }
        return name == "META-INF/MANIFEST.MF" || [".SF", ".RSA", ".DSA", ".EC"].contains { name.uppercased().hasSuffix($0) }
    }

    /// The edited APK's `aapt dump badging` as it reads for the input's, `original`, once what the edits' two new
    /// configurations (the default one and `fr`, neither with a density) show in it is taken out, each only in
    /// the form it must take. aapt (`Command.cpp`, dump badging) lists the table's locales and densities, a
    /// configuration with no density as 160, and resolves the application label once per locale of the table:
    /// - `locales:` gains `'--_--'` and `'fr'`, `densities:` gains `'160'`, where `original` lacked them;
    /// - a new locale gets its `application-label-fr:` line (`application-label:` for the default locale) with the
    ///   label the input resolves by default: the edits add no translation of it;
    /// - where the input had no locale at all, aapt printed `application: label=''` whatever the manifest says,
    ///   and once the table has locales, a literal label (`literalLabel`) reads in each of them and on that line.
    static func badging(_ badging: String, asItReadsFor original: String, literalLabel: String?) -> String {
        let lines = original.split(separator: "\n", omittingEmptySubsequences: false)
        let originalLocales = lines.first { $0.hasPrefix("locales:") } ?? ""
        let newLocales = ["--_--", "fr"].filter { !originalLocales.contains(" '\($0)'") }
        let newDensity = !(lines.first { $0.hasPrefix("densities:") } ?? "").contains(" '160'")
        let hadNoLocale = originalLocales.isEmpty || originalLocales == "locales:"
        // The label a new locale resolves to: the input's default one, or the literal one where no locale resolved it.
        let label = lines.first { $0.hasPrefix("application-label:'") }.map { String($0.dropFirst("application-label:".count)) }
            ?? (hadNoLocale ? literalLabel.map { "'\($0)'" } : nil)
        let newLabelLines = Set(newLocales.map { ($0 == "--_--" ? "application-label:" : "application-label-\($0):") + (label ?? "''") })
        return badging.split(separator: "\n", omittingEmptySubsequences: false).compactMap { line -> String? in
            if label != nil && newLabelLines.contains(String(line)) { return nil }
            if line.hasPrefix("locales:") { return newLocales.reduce(String(line)) { $0.replacingOccurrences(of: " '\($1)'", with: "") } }
            if line.hasPrefix("densities:") && newDensity { return line.replacingOccurrences(of: " '160'", with: "") }
            if hadNoLocale, let literalLabel, line.hasPrefix("application: label='\(literalLabel)' ") {
                return "application: label='' " + line.dropFirst("application: label='\(literalLabel)' ".count)
            }
            return String(line)
        }.joined(separator: "\n")
    }

    /// The `<application>` element's android:label where the manifest holds it as text, not a reference
    /// (`aapt dump xmltree`: `A: android:label(0x01010001)="Text" (Raw: "Text")`).
    static func literalApplicationLabel(_ manifestTree: String) -> String? {
        let lines = manifestTree.split(separator: "\n")
        guard let application = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "E: application" }) else { return nil }
        let depth = lines[application].prefix { $0 == " " }.count
        for line in lines[(application + 1)...] {
            let indent = line.prefix { $0 == " " }.count, body = line.dropFirst(indent)
            guard indent > depth, body.hasPrefix("A:") else { return nil }
            let prefix = #"A: android:label(0x01010001)=""#
            guard body.hasPrefix(prefix), let end = body.range(of: #"" (Raw: "#) else { continue }
            return String(body[body.index(body.startIndex, offsetBy: prefix.count)..<end.lowerBound])
        }
        return nil
    }

    /// libandroidfw's reading of `apk`'s resources.arsc (`TestSupport.libandroidfwTable`: its packages, each
    /// resource's typeSpec and entry flags, the overlayables), with its exit status; "no resources.arsc" without one.
    static func androidTable(_ apk: String, in work: URL) throws -> String {
        try OracleAnswers.answer(to: ["libandroidfw listing", apk], cached: OracleAnswers.isInput(apk)) { try readAndroidTable(apk, in: work) }
    }

    private static func readAndroidTable(_ apk: String, in work: URL) throws -> String {
        let directory = work.appendingPathComponent("table-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let unzip = try TestSupport.run("unzip", ["-qq", "-o", "-j", apk, "resources.arsc", "-d", directory.path])
        let arsc = directory.appendingPathComponent("resources.arsc").path
        guard FileManager.default.fileExists(atPath: arsc) else { return "no resources.arsc (unzip \(unzip.status))" }
        let loaded = try TestSupport.libandroidfwTable(arsc)
        return "status \(loaded.status)\n" + loaded.stdout
    }

    /// `aapt2 dump resources` (stdout only; a failure is a dump too, so two files still compare).
    static func aapt2Resources(_ apk: String) throws -> String {
        try OracleAnswers.answer(to: ["aapt2 dump resources", apk], cached: OracleAnswers.isInput(apk)) {
            let result = try TestSupport.run("aapt2", ["dump", "resources", apk])
            guard result.succeeded else { return "aapt2 dump resources failed (\(result.status)):\n\(result.stdout)" }
            return result.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropFirst().joined(separator: "\n")  // "Binary APK"
        }
    }

    /// `apktool d` (resources only, `-s`) reads `apk` whenever it reads the corpus APK it came from.
    @discardableResult
    static func expectApktoolReads(_ path: String, apk: APK, work: URL) throws -> String? {
        let out = work.appendingPathComponent("apktool-\(UUID().uuidString)").path
        let result = try TestSupport.run("apktool", ["d", "-f", "-s", "-o", out, path], environment: java)
        if result.succeeded { return out }
        let onInput = try TestSupport.run("apktool", ["d", "-f", "-s", "-o", out + "-input", try apk.fetchedPath()], environment: java)
        #expect(!onInput.succeeded, "\(apk): apktool d of our output failed, of the input not: \(result)")
        return nil
    }
}

/// `aapt2 dump resources` as blocks: each `resource 0x7f050000 string/app_name` line with the value lines below it.
struct ResourceDump {
    var blocks: [String: [String]] = [:]

    init(_ dump: String) {
        var current: String?
        for line in dump.split(separator: "\n") {
            let indent = line.prefix { $0 == " " }.count
            let body = line.dropFirst(indent)
            if body.hasPrefix("resource 0x") { current = String(body); blocks[String(body)] = []; continue }
            if indent <= 4 { current = nil; continue }
            // aapt2 ends an array's items with "[" and no line break: the next type's header follows on that line.
            if let current { blocks[current]!.append(body.hasPrefix("[type ") ? "[" : String(body)) }
        }
    }

    /// The block key of `type/name`.
    func key(named name: String) -> String? { blocks.keys.first { $0.hasSuffix(" " + name) } }

    /// The type byte of a key's resource ID (`resource 0x7f050000 …` → 0x05).
    static func typeID(of key: String) -> String { String(key.split(separator: " ")[1].dropFirst(4).prefix(2)) }

    /// The first resource of `type` (by ID) whose default value is simple (no file, reference or bag) and whose name
    /// a values file can spell.
    func firstSimpleDefault(ofType type: String) -> (key: String, value: String)? {
        for key in blocks.keys.sorted() {
            guard let name = key.split(separator: " ").last, name.hasPrefix(type + "/") else { continue }
            let plain = name.dropFirst(type.count + 1).allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." }
            guard plain, let line = blocks[key]?.first(where: { $0.hasPrefix("() ") }) else { continue }
            let value = String(line.dropFirst(3))
            if value.hasPrefix("(") || value.hasPrefix("@") || value.hasPrefix("?") || value.isEmpty { continue }
            return (key, value)
        }
        return nil
    }
}
