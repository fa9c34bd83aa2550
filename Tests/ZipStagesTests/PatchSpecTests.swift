import Foundation
import Overlay
import Testing
import TestSupport
import Yams

/// `apkpatch.yml` is read by Overlay's own YAML reader (SpecYAML); Yams, a full YAML parser, is the oracle for what
/// the documents mean, and the errors must name the line and, for a misspelt key, the nearest known one.
@Suite(.removesTemporaryDirectories) struct PatchSpecTests {
    /// A SpecYAML node as plain values (scalars as strings), to compare with Yams.
    func plain(_ node: YAMLNode?) -> AnyHashable {
        guard let node else { return "<null>" }
        switch node {
        case .scalar(let scalar): return scalar.string
        case .sequence(let items, _): return items.map { plain($0) } as [AnyHashable]
        case .mapping(let pairs, _):
            return pairs.map { [plain($0.key), plain($0.value)] as [AnyHashable] } as [AnyHashable]
        }
    }

    func plain(_ node: Yams.Node?) -> AnyHashable {
        guard let node else { return "<null>" }
        switch node {
        case .scalar(let scalar): return scalar.string
        case .sequence(let sequence): return sequence.map { plain($0) } as [AnyHashable]
        case .mapping(let mapping): return mapping.map { [plain($0.key), plain($0.value)] as [AnyHashable] } as [AnyHashable]
        }
    }

    static let documents = [
        // The README's example.
        """
        delete:                 # input entries to remove (globs: * within a folder, ** across folders)
          - assets/www/legacy/**
        store:                  # write these uncompressed
          - "**/*.bin"
        deflate:                # compress these even where the default would store them
          - assets/www/data/*.json
        manifest:               # AndroidManifest.xml shortcuts, no XML needed
          debuggable: true      # lets Chrome's inspector attach to the app's WebView
          versionCode: 42
          versionName: "1.2-test"
          label: "My App (test)"
          usesCleartextTraffic: true
          extractNativeLibs: false
          minSdkVersion: 24
          targetSdkVersion: 34
        """,
        "---\ndelete: [a/*, \"b c/**\", 'it''s']\nstore:\n- \"*.bin\"  # a list at its key's indentation\n- x#y\nmanifest:\n  label: \"A: b # c \\u00e9\\t\"\n  versionName: 'x: y'\n",
        "# only a comment\n\n",
        "delete:\n    - one\n    -   two   \n\nmanifest:\n    debuggable: false\n",
        "delete: single/**\r\nmanifest:\r\n  label: plain text with spaces\r\n",
    ]

    @Test(arguments: documents)
    func readsWhatYamsReads(_ text: String) throws {
        #expect(plain(try SpecYAML.compose(yaml: text)) == plain(try Yams.compose(yaml: text)))
    }

    @Test func readsTheFields() throws {
        let spec = try PatchSpec(yaml: Self.documents[1], path: "apkpatch.yml")
        #expect(spec.delete.map(\.pattern) == ["a/*", "b c/**", "it's"])
        #expect(spec.store.map(\.pattern) == ["*.bin", "x#y"])
        #expect(spec.manifest.label == "A: b # c é\t")
        #expect(spec.manifest.versionName == "x: y")
        let readme = try PatchSpec(yaml: Self.documents[0], path: "apkpatch.yml")
        #expect(readme.manifest.versionCode == 42 && readme.manifest.debuggable == true && readme.manifest.extractNativeLibs == false)
        #expect(try PatchSpec(yaml: Self.documents[2], path: "p") == PatchSpec())
    }

    /// (document, what the message must contain)
    static let mistakes: [(String, [String])] = [
        ("delete:\n  - a\nstroe:\n  - b\n", ["line 3", "unknown key \"stroe\"", "did you mean \"store\"?"]),
        ("manifest:\n  debugable: true\n", ["line 2", "\"debugable\"", "did you mean \"debuggable\"?"]),
        ("manifest:\n  versioncode: 3\n", ["line 2", "did you mean \"versionCode\"?"]),
        ("colour: red\n", ["line 1", "unknown key \"colour\"", "known keys: delete, store, deflate, manifest"]),
        ("manifest:\n  label: x\n  versionCode: forty\n", ["line 3", "manifest.versionCode must be a whole number"]),
        ("manifest:\n  debuggable: yes please\n", ["line 2", "must be true or false"]),
        ("delete:\n\t- a\n", ["line 2", "tab"]),
        ("manifest: {debuggable: true}\n", ["line 1", "key: value"]),
        ("delete:\n  - a\n  - b\ndelete:\n  - c\n", ["line 4", "twice", "line 1"]),
        ("delete:\n  - \"a\n", ["line 2", "closing"]),
        ("delete:\n  - &anchor a\n", ["line 2", "quotes"]),
        ("manifest:\n  label: x\n    more\n", ["line 3", "indentation"]),
        ("delete:\n  - a\n - b\n", ["line 3"]),
        ("- a\n- b\n", ["line 1", "top level"]),
        // Twenty levels of keys, each under the one before: no spec nests so deep.
        ((0..<20).map { String(repeating: " ", count: $0) + "k\($0):" }.joined(separator: "\n") + "\n", ["line 17", "nested more than 16 levels"]),
    ]

    @Test(arguments: 0..<mistakes.count)
    func explainsAMistakeWithItsLine(_ index: Int) throws {
        let (text, expected) = Self.mistakes[index]
        do {
            _ = try PatchSpec(yaml: text, path: "patch/apkpatch.yml")
            Issue.record("accepted: \(text)")
        } catch let error as OverlayError {
            let message = "\(error)"
            #expect(message.hasPrefix("patch/apkpatch.yml: line "), "\(message)")
            for part in expected { #expect(message.contains(part), "\(message) lacks \(part)") }
        }
    }

    @Test func suggestsOnlyWhatIsClose() throws {
        do {
            _ = try PatchSpec(yaml: "permissions:\n  - x\n", path: "p")
            Issue.record("accepted")
        } catch {
            #expect(!"\(error)".contains("did you mean"), "\(error)")
        }
    }
}

/// The spec file as the patch directory holds it: what it may be, and what a hostile one costs.
@Suite(.removesTemporaryDirectories) struct PatchSpecFileTests {
    let patch: URL
    init() throws {
        patch = try TestSupport.makeTemporaryDirectory("patch-spec-file")
        try TestSupport.write("x\n", to: "assets/x.txt", in: patch)
    }

    func refusal(_ bytes: [UInt8]) throws -> String {
        try Data(bytes).write(to: patch.appendingPathComponent("apkpatch.yml"))
        do {
            _ = try PatchDirectory(root: patch.path)
            return "accepted"
        } catch {
            return "\(error)"
        }
    }

    /// A file larger than any spec is refused before it is read (a log saved under the name); one that is not
    /// UTF-8 is refused as such.
    @Test func anOversizedOrUndecodableSpecIsRefused() throws {
        let large = try refusal(Array("delete:\n".utf8) + Array(repeating: UInt8(ascii: "#"), count: PatchDirectory.specSizeLimit))
        #expect(large.contains("apkpatch.yml") && large.contains("more than the 1 MiB"), "\(large)")
        let latin1 = try refusal(Array("manifest:\n  label: caf".utf8) + [0xE9] + Array("\n".utf8))
        #expect(latin1.contains("apkpatch.yml") && latin1.contains("not UTF-8"), "\(latin1)")
    }

    /// An unknown key is compared with the known ones for a "did you mean": a key of most of a megabyte was
    /// compared character by character with each (2 s of CPU in a release build to refuse 3 MB). A key that long
    /// is no typo of a short one: it costs about what reading that many bytes costs.
    @Test func aHugeUnknownKeyCostsItsLength() throws {
        let size = PatchDirectory.specSizeLimit - 100
        let key = String(repeating: "k", count: size)
        let glob = "delete:\n  - " + String(repeating: "k", count: size) + "\n"
        let (message, keyCPU) = try Self.threadCPU { try refusal(Array("\(key): 1\n".utf8)) }
        #expect(message.contains("unknown key") && !message.contains("did you mean"), "\(message.prefix(300))")
        let (accepted, readingCPU) = try Self.threadCPU { try refusal(Array(glob.utf8)) }
        #expect(accepted == "accepted")
        #expect(keyCPU < readingCPU * 4 + 0.05, "refusing the key took \(keyCPU) s of CPU, reading a spec as long \(readingCPU) s")
    }

    /// The calling thread's CPU time around `body` (other threads' load does not count).
    static func threadCPU<T>(_ body: () throws -> T) rethrows -> (T, Double) {
        func now() -> Double {
            var time = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
            return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
        }
        let start = now()
        let result = try body()
        return (result, now() - start)
    }
}

/// Editors' droppings and temporary files are never packed and never wake watch; real names are kept.
@Suite(.removesTemporaryDirectories) struct IgnoredNamesTests {
    @Test(arguments: ["app.js~", ".app.js.swp", ".app.js.swx", ".app.js.swo", "4913", ".#app.js", "#app.js#", ".DS_Store",
                      "Thumbs.db", "sedAb12Cd", "sed0q9ZzY", ".goutputstream-X1YZ2Q", "index.html.tmp", "~$report.docx",
                      ".~lock.data.csv#", "app.js___jb_tmp___", "app.js___jb_old___", ".app.js.kate-swp", "data.json.crswap"])
    func ignored(_ name: String) {
        #expect(PatchDirectory.isIgnored(name))
    }

    @Test(arguments: ["app.js", "index.html", "sedation.js", "sed", "sedAb12C", "sedAb12Cd.js", "tmp", "template.html",
                      "#hash", "swp", "a~b", ".well-known", "seductive"])
    func kept(_ name: String) {
        #expect(!PatchDirectory.isIgnored(name))
    }

    /// Editors name their files by adding bytes to the file's name: for "\u{301}a.js" (a name that starts with a
    /// combining mark) vim's swap file is ".\u{301}a.js.swp", whose dot and mark are one Character, and a Prepend
    /// mark (U+0600) joins the dot of "a\u{600}.tmp". They are known by their bytes and left out of the patch.
    @Test(arguments: [".\u{301}a.js.swp", ".\u{301}a.js.kate-swp", ".#\u{301}a.js", "#\u{301}a.js#", "~$\u{301}a.docx",
                      ".~lock.\u{301}a.csv#", "a\u{600}.tmp", "a\u{600}.crswap"])
    func ignoredByTheirBytes(_ name: String) {
        #expect(PatchDirectory.isIgnored(name), "\(name.debugDescription)")
    }

    @Test func aPatchFolderLeavesOutDroppingsNamedWithMarks() throws {
        let root = try TestSupport.makeTemporaryDirectory("ignored-marks").path
        try FileManager.default.createDirectory(atPath: root + "/assets/cache.tmp", withIntermediateDirectories: true)
        for name in ["\u{301}a.js", ".\u{301}a.js.swp", "#\u{301}a.js#", "a\u{600}.tmp", "cache.tmp/\u{301}b.js"] {
            #expect(FileManager.default.createFile(atPath: root + "/assets/" + name, contents: Data("x\n".utf8)), "\(name)")
        }
        #expect(!PatchDirectory.isIgnored("\u{301}a.js") && !PatchDirectory.isIgnored("a\u{600}.js"))
        #expect(try PatchDirectory(root: root).files.keys == ["assets/\u{301}a.js"])
    }
}
