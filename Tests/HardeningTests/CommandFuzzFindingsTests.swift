import CommandFuzz
import Foundation
import Testing
import TestSupport

/// Regressions for what the command fuzzer (`make fuzz`, CommandFuzzTests) found, each input rebuilt at test time
/// from an aapt-built APK the way the fuzzer made it.
@Suite struct CommandFuzzFindingsTests {
    let dir: URL
    init() throws { dir = try TestSupport.makeTemporaryDirectory("command-fuzz-findings") }

    /// An APK whose compiled XML resource `entry` is replaced by `content` (stored, CRC-32 right), as the fuzzer's
    /// nested mutations re-pack it.
    func apk(replacing entry: String, with edit: ([UInt8]) -> [UInt8]) throws -> String {
        var fixture = FixtureAPK()
        fixture.resources = [
            "xml/config.xml": Array("<widget id=\"x\"><content src=\"index.html\"/></widget>".utf8),
            "layout/main.xml": Array("<LinearLayout xmlns:android=\"http://schemas.android.com/apk/res/android\" android:orientation=\"vertical\"/>".utf8),
        ]
        let built = try fixture.build(in: dir, name: "built.apk")
        let repacker = try EntryRepacker(archive: TestSupport.readBytes(built), entry: entry)
        let path = dir.appendingPathComponent("damaged.apk").path
        try Data(repacker.repack(with: edit(repacker.content))).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Found: `decode` wrote the manifest and the layout, then failed on res/xml/config.xml (60 bytes cut from
    /// its middle) and left them: a half-decoded directory. Now nothing is written unless every file decodes.
    @Test func decodeWritesNothingWhenAFileDoesNotDecode() throws {
        let input = try apk(replacing: "res/xml/config.xml") { bytes in
            var cut = bytes
            cut.removeSubrange((bytes.count / 2)..<min(bytes.count, bytes.count / 2 + 60))
            return cut
        }
        let output = dir.appendingPathComponent("decoded")
        let result = try boundedApkpatch(["decode", input, "-o", output.path])
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("res/xml/config.xml"), "the error names the file: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: output.path), "partial output: \(snapshot(output).sorted())")
        // Into an existing directory (an unpacked APK): left as it was.
        try TestSupport.write("kept", to: "assets/kept.txt", in: output)
        let again = try boundedApkpatch(["decode", input, "-o", output.path])
        #expect(again.status == 1, "\(again)")
        #expect(snapshot(output) == ["assets", "assets/kept.txt"], "\(snapshot(output).sorted())")
    }
}
