import BinaryXML
import Foundation
import ResourceTable
import Testing
import TestSupport

/// `decode` writes what the table declares beyond values (`res/values/public.xml`, `res/values/overlayable.xml`),
/// so decode -> edit -> run keeps the public flags and overlayable policies, and aapt2 itself, given the decoded
/// text, builds the same table. Read back with `aapt2 dump resources` and Android's own loader (libandroidfw's
/// `LoadedArsc`, `Tests/Oracles/arsc-check.cc`, which prints typeSpec/entry flags and overlayables).
@Suite(.removesTemporaryDirectories) struct DeclarationsDecodingTests {
    static let values = """
        <resources>
            <bool name="dark">false</bool>
            <bool name="other">false</bool>
            <color name="accent">#ff0000ff</color>
            <string name="hello">Hello</string>
            <string name="quiet">private</string>
            <integer name="g1">1</integer>
            <integer name="g2">2</integer>
            <public type="string" name="hello" id="0x7f040005" />
            <public type="bool" name="dark" />
            <public-group type="integer" first-id="0x7f030010">
                <public name="g1" />
                <public name="g2" />
            </public-group>
            <overlayable name="Theme" actor="overlay://theme">
                <policy type="public|system"><item type="bool" name="dark" /><item type="color" name="accent" /></policy>
                <policy type="signature"><item type="bool" name="other" /></policy>
            </overlayable>
            <overlayable name="Extra">
                <policy type="product|vendor|odm"><item type="string" name="quiet" /></policy>
            </overlayable>
        </resources>
        """
    static let manifest = #"<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="com.probe"><application/></manifest>"#

    /// aapt2's build of the values files under `res` (a directory holding `values*/` folders).
    static func aapt2Build(res: URL, in dir: URL) throws -> String {
        let work = dir.appendingPathComponent("aapt2-\(UUID().uuidString)")
        try TestSupport.write(manifest, to: "AndroidManifest.xml", in: work)
        let flat = work.appendingPathComponent("res.zip").path
        let compile = try TestSupport.run("aapt2", ["compile", "--dir", res.path, "-o", flat])
        guard compile.succeeded else { throw FixtureError(message: "aapt2 compile failed: \(compile)") }
        let apk = dir.appendingPathComponent("aapt2-\(UUID().uuidString).apk").path
        let link = try TestSupport.run("aapt2", ["link", "-o", apk, "-I", TestSupport.frameworkRes, "--manifest", work.path + "/AndroidManifest.xml", flat])
        guard link.succeeded else { throw FixtureError(message: "aapt2 link failed: \(link)") }
        return apk
    }

    @Test func decodeWritesPublicAndOverlayableDeclarationsBack() throws {
        let dir = try TestSupport.makeTemporaryDirectory("declarations-decoded")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try StyledStringsTests.aapt2APK(values: Self.values, in: dir)
        let decoded = dir.appendingPathComponent("decoded")
        let decode = try TestSupport.apkpatch(["decode", apk, "-o", decoded.path])
        #expect(decode.succeeded, "\(decode)")
        let publics = try String(contentsOf: decoded.appendingPathComponent("res/values/public.xml"), encoding: .utf8)
        #expect(publics == """
            <?xml version="1.0" encoding="utf-8"?>
            <resources>
                <public type="bool" name="dark" id="0x7f010000" />
                <public type="integer" name="g1" id="0x7f030010" />
                <public type="integer" name="g2" id="0x7f030011" />
                <public type="string" name="hello" id="0x7f040005" />
            </resources>

            """, "\(publics)")
        let overlayables = try String(contentsOf: decoded.appendingPathComponent("res/values/overlayable.xml"), encoding: .utf8)
        #expect(overlayables == """
            <?xml version="1.0" encoding="utf-8"?>
            <resources>
                <overlayable name="Extra">
                    <policy type="vendor|product|odm">
                        <item type="string" name="quiet" />
                    </policy>
                </overlayable>
                <overlayable name="Theme" actor="overlay://theme">
                    <policy type="public|system">
                        <item type="bool" name="dark" />
                        <item type="color" name="accent" />
                    </policy>
                    <policy type="signature">
                        <item type="bool" name="other" />
                    </policy>
                </overlayable>
            </resources>

            """, "\(overlayables)")

        // Given back unchanged, the table is the input's, byte for byte.
        let same = dir.appendingPathComponent("same.apk").path
        let run = try TestSupport.apkpatch(["run", apk, "--patch", decoded.path, "--out", same, "--no-sign", "-q"])
        #expect(run.succeeded, "\(run)")
        #expect(try Oracle.entry("resources.arsc", in: same) == Oracle.entry("resources.arsc", in: apk))

        // aapt2 reads the decoded text as the table it came from: same IDs, public flags and overlayables.
        let rebuilt = try Self.aapt2Build(res: decoded.appendingPathComponent("res"), in: dir)
        #expect(try StyledStringsTests.aapt2Dump(rebuilt) == StyledStringsTests.aapt2Dump(apk))
        let original = try DeclarationsWritingTests.loaded(apk, in: dir)
        #expect(try DeclarationsWritingTests.loaded(rebuilt, in: dir) == original)
        #expect(original.contains("overlayable-item 0x7f040000 Extra actor= policy=0x0000002c"), "\(original)")
        #expect(original.contains("resource 0x7f030011 spec=0x40000000 entries=0x0002"), "\(original)")

        // Edited after decoding (a new string declared public with an ID and overlayable, another declared public):
        // the same table aapt2 builds from the edited text.
        try TestSupport.write(try String(contentsOf: decoded.appendingPathComponent("res/values/strings.xml"), encoding: .utf8)
            .replacingOccurrences(of: "</resources>", with: "    <string name=\"added\">Added</string>\n</resources>"),
                              to: "res/values/strings.xml", in: decoded)
        try TestSupport.write(publics.replacingOccurrences(of: "</resources>", with: """
                <public type="string" name="added" id="0x7f040006" />
                <public type="color" name="accent" id="0x7f020000" />
            </resources>
            """), to: "res/values/public.xml", in: decoded)
        try TestSupport.write(overlayables.replacingOccurrences(of: #"<item type="string" name="quiet" />"#,
                                                                with: #"<item type="string" name="quiet" /><item type="string" name="added" />"#),
                              to: "res/values/overlayable.xml", in: decoded)
        let edited = dir.appendingPathComponent("edited.apk").path
        let editRun = try TestSupport.apkpatch(["run", apk, "--patch", decoded.path, "--out", edited, "--no-sign", "-q"])
        #expect(editRun.succeeded, "\(editRun)")
        guard editRun.succeeded else { return }
        let reference = try Self.aapt2Build(res: decoded.appendingPathComponent("res"), in: dir)
        #expect(try StyledStringsTests.aapt2Dump(edited) == StyledStringsTests.aapt2Dump(reference))
        let ours = try DeclarationsWritingTests.loaded(edited, in: dir)
        #expect(ours == (try DeclarationsWritingTests.loaded(reference, in: dir)))
        #expect(ours.contains("overlayable-item 0x7f040006 Extra actor= policy=0x0000002c") && ours.contains("resource 0x7f020000 spec=0x40000000 entries=0x0002"),
                "\(ours)")
    }

    /// aapt (v1) builds `<public>` too; its tables go through decode -> run unchanged, and the decoded
    /// public.xml names exactly the resources aapt made public.
    @Test func aaptBuiltPublicResources() throws {
        let dir = try TestSupport.makeTemporaryDirectory("declarations-aapt")
        defer { try? FileManager.default.removeItem(at: dir) }
        var fixture = FixtureAPK()
        fixture.resources["values/values.xml"] = Array(#"<resources><bool name="on">true</bool><bool name="off">false</bool><color name="tint">#ff00ff00</color></resources>"#.utf8)
        // aapt wants an ID in each <public>: the ones aapt gives without public.xml, off's moved to a hole.
        let plain = ValuesDeclarationsTests.ids(try Oracle.aapt(["dump", "resources", try fixture.build(in: dir)]))
        let off = try #require(plain["bool/off"]) & 0xFFFF_0000 | 0x5, tint = try #require(plain["color/tint"])
        let hex = ValuesDeclarationsTests.hex
        fixture.resources["values/public.xml"] = Array(#"<resources><public type="bool" name="off" id="\#(hex(off))" /><public type="color" name="tint" id="\#(hex(tint))" /></resources>"#.utf8)
        let apk = try fixture.build(in: dir)
        let dump = try Oracle.aapt(["dump", "--values", "resources", apk])
        let ids = ValuesDeclarationsTests.ids(dump)
        #expect(ids["bool/off"] == off && ids["color/tint"] == tint, "\(dump)")
        let publicNames = dump.split(separator: "\n").filter { $0.contains("spec resource") && $0.hasSuffix("flags=0x40000000") }
            .compactMap { Oracle.capture(#"resource 0x[0-9a-f]{8} [^:]+:([^:]+):"#, in: String($0)) }
        #expect(Set(publicNames) == ["bool/off", "color/tint"], "\(dump)")
        let decoded = dir.appendingPathComponent("decoded")
        #expect(try TestSupport.apkpatch(["decode", apk, "-o", decoded.path]).succeeded)
        let same = dir.appendingPathComponent("same.apk").path
        let run = try TestSupport.apkpatch(["run", apk, "--patch", decoded.path, "--out", same, "--no-sign", "-q"])
        #expect(run.succeeded, "\(run)")
        #expect(try Oracle.entry("resources.arsc", in: same) == Oracle.entry("resources.arsc", in: apk))
        let publics = try String(contentsOf: decoded.appendingPathComponent("res/values/public.xml"), encoding: .utf8)
        let lines = publics.split(separator: "\n").filter { $0.contains("<public ") }.map { $0.trimmingCharacters(in: .whitespaces) }
        let expected = [(off, #"<public type="bool" name="off" id="\#(hex(off))" />"#), (tint, #"<public type="color" name="tint" id="\#(hex(tint))" />"#)]
        #expect(lines == expected.sorted { $0.0 < $1.0 }.map(\.1), "\(publics)")
        #expect(!FileManager.default.fileExists(atPath: decoded.appendingPathComponent("res/values/overlayable.xml").path))
    }

    /// Policy bits no name stands for (a newer Android's) are written as a number and read back as those bits;
    /// a resource only the typeSpec marks public is declared, and re-declaring it changes nothing.
    @Test func unnamedPolicyBitsAndSpecOnlyPublicRoundTrip() throws {
        let dir = try TestSupport.makeTemporaryDirectory("declarations-bits")
        defer { try? FileManager.default.removeItem(at: dir) }
        let apk = try StyledStringsTests.aapt2APK(values: Self.values, in: dir)
        var bytes = try Oracle.entry("resources.arsc", in: apk)
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        func u32(_ at: Int) -> UInt32 { UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24 }
        // Adds 0x400 to the flags of every overlayable policy chunk, and clears FLAG_PUBLIC from bool/dark's entry
        // (its typeSpec keeps SPEC_PUBLIC).
        var offset = u16(2)
        while u16(offset) != 0x0200 { offset += Int(u32(offset + 4)) }
        let packageEnd = offset + Int(u32(offset + 4))
        offset += u16(offset + 2)
        var patchedPolicies = 0, clearedEntries = 0
        while offset < packageEnd {
            let size = Int(u32(offset + 4))
            if u16(offset) == 0x0204 {
                var inner = offset + u16(offset + 2)
                while inner < offset + size {
                    bytes[inner + 9] |= 0x04
                    patchedPolicies += 1
                    inner += Int(u32(inner + 4))
                }
            }
            if u16(offset) == 0x0201, bytes[offset + 8] == 1 {  // the bool type's only configuration: entry 0 is dark
                let entriesStart = offset + Int(u32(offset + 16))
                let first = u32(offset + u16(offset + 2))
                #expect(first == 0)
                #expect(bytes[entriesStart + 2] & 0x02 != 0)
                bytes[entriesStart + 2] &= ~0x02
                clearedEntries += 1
            }
            offset += size
        }
        #expect(patchedPolicies == 3 && clearedEntries == 1)
        let table = try ResourceTable(bytes: bytes)
        let files = table.declarationFiles()
        let overlayables = try #require(files.first { $0.fileName == "overlayable.xml" }?.text)
        #expect(overlayables.contains(#"<policy type="vendor|product|odm|0x400">"#) && overlayables.contains(#"<policy type="public|system|0x400">"#)
                && overlayables.contains(#"<policy type="signature|0x400">"#), "\(overlayables)")
        let publics = try #require(files.first { $0.fileName == "public.xml" }?.text)
        #expect(publics.contains(#"<public type="bool" name="dark" id="0x7f010000" />"#), "\(publics)")
        var again = table
        try again.applyValuesFiles(files)
        #expect(try again.encoded() == bytes)
        // The number is the flags aapt2 would not name: written into a new policy, they are those bits.
        var extended = table
        try extended.applyValuesFiles([("values", "o.xml", #"<resources><overlayable name="Extra"><policy type="0x400|odm"><item type="bool" name="g"/></policy></overlayable><bool name="g">true</bool></resources>"#)])
        let reread = try ResourceTable(bytes: try extended.encoded())
        let text = try #require(reread.declarationFiles().first { $0.fileName == "overlayable.xml" }?.text)
        #expect(text.contains("<policy type=\"odm|0x400\">\n            <item type=\"bool\" name=\"g\" />"), "\(text)")
    }
}
