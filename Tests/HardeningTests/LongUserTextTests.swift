import Foundation
import Testing
import TestSupport

/// Text the user wrote (keys and values of apkpatch.yml, patch file names, option values) is quoted in errors cut
/// to 80 characters and "…": a key that runs on for a whole pasted blob must not fill the terminal or a CI log.
@Suite(.removesTemporaryDirectories) struct LongUserTextTests {
    let dir: URL
    let input: String

    init() throws {
        dir = try TestSupport.makeTemporaryDirectory("long-user-text")
        input = try FixtureAPK().build(in: dir, name: "app.apk")
    }

    /// A run with a patch directory holding `files`: it fails, and its message quotes `long` cut to 80 characters.
    func expectCut(_ long: String, quotedAfter lead: String = "", files: [String: String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let patch = dir.appendingPathComponent("patch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: patch, withIntermediateDirectories: true)
        for (path, content) in files { try TestSupport.write(content, to: path, in: patch) }
        let out = dir.appendingPathComponent("out-\(UUID().uuidString).apk").path
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", out, "--debug-keystore", dir.appendingPathComponent("debug.p12").path])
        try expectCut(long, quotedAfter: lead, in: result, sourceLocation: sourceLocation)
        #expect(!FileManager.default.fileExists(atPath: out), sourceLocation: sourceLocation)
    }

    /// `result` failed and quotes `long` (after `lead`: a quote, say) cut to 80 characters and "…", and nowhere more of it.
    func expectCut(_ long: String, quotedAfter lead: String = "", in result: TestSupport.ProcessResult, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(result.status == 1 || result.status == 64, "\(result)", sourceLocation: sourceLocation)
        // A quote cuts the text itself; the last guard (a long run without spaces) cuts the run it is in.
        let needle = lead == "string/" ? String((lead + long).prefix(80)) + "…" : lead + String(long.prefix(80)) + "…"
        #expect(result.stderr.contains(needle),
                "the first 80 characters, then …: \(result.stderr.prefix(600))", sourceLocation: sourceLocation)
        #expect(!result.stderr.contains(lead + String(long.prefix(81))), "no more of it: \(result.stderr.count) characters", sourceLocation: sourceLocation)
        #expect(result.stderr.count < 1000, "\(result.stderr.count) characters of error", sourceLocation: sourceLocation)
    }

    /// About 2,000 letters and digits that never repeat (a cut in the wrong place shows).
    static let long = (0..<400).map { "k\($0)x" }.joined()

    @Test func specKeysAndValuesAreCut() throws {
        let long = Self.long
        try expectCut(long, files: ["apkpatch.yml": "\(long): true\n"])
        try expectCut(long, files: ["apkpatch.yml": "delete:\n  - a\n\(long): 1\n\(long): 2\n"])
        try expectCut(long, files: ["apkpatch.yml": "manifest:\n  \(long): true\n"])
        try expectCut(long, files: ["apkpatch.yml": "manifest:\n  package: \(long)\n"])
        try expectCut(long, files: ["apkpatch.yml": "networkSecurity: \(long)\n"])
        try expectCut(long, files: ["apkpatch.yml": "networkSecurity:\n  \(long): true\n"])
        try expectCut(long, files: ["apkpatch.yml": "networkSecurity:\n  pin:\n    - domain: example.com\n      \(long): x\n"])
    }

    @Test func patchNamesAreCut() throws {
        // A file name holds at most 255 bytes: the path names the file whole; the name quoted in it is cut.
        let type = String(Self.long.prefix(200))
        try expectCut(type, quotedAfter: "'", files: ["res/\(type)/x.xml": "<x/>\n"])
        let name = String(Self.long.prefix(240)).replacingOccurrences(of: "x", with: "-")
        try expectCut(name, quotedAfter: "'", files: ["res/xml/\(name).xml": "<x/>\n"])
        // A values resource name has no such bound: any run of 257 characters or more in an error is cut.
        let values = "<resources><string name=\"\(Self.long)\">x</string></resources>\n"
        try expectCut(Self.long, quotedAfter: "string/", files: ["res/values/a.xml": values, "res/values/b.xml": values])
    }

    @Test func optionValuesAreCut() throws {
        let digest = String(repeating: "ab", count: 1000)
        try expectCut(digest, in: try TestSupport.apkpatch(["verify", "--expect-certificate-sha256", digest, input]))
    }

    /// A path in an error is named whole, however long: only text no file system bounds is cut. The folders are
    /// three names of 200 characters (a run of over 600 characters without a space, each name under NAME_MAX).
    @Test func pathsAreNamedWhole() throws {
        let deep = (0..<3).reduce(dir) { url, i in url.appendingPathComponent(String(repeating: "\(i)", count: 200)) }
        try FileManager.default.createDirectory(at: deep, withIntermediateDirectories: true)
        let missing = deep.appendingPathComponent("missing.apk").path
        let verify = try TestSupport.apkpatch(["verify", missing])
        #expect(verify.status == 1, "\(verify)")
        #expect(verify.stderr.contains(missing), "the whole path: \(verify.stderr)")
        // A patch file whose folder name is refused: its path is whole, the name quoted after it is cut.
        let patch = deep.appendingPathComponent("patch")
        let type = String(Self.long.prefix(200))
        try TestSupport.write("<x/>\n", to: "res/\(type)/x.xml", in: patch)
        let out = deep.appendingPathComponent("out.apk").path
        let run = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", out, "--debug-keystore", dir.appendingPathComponent("debug.p12").path])
        try expectCut(type, quotedAfter: "'", in: run)
        #expect(run.stderr.contains("res/\(type)/x.xml: "), "the whole path in the patch: \(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
