import BinaryXML
import Foundation
import Testing
import TestSupport

/// Decoding and re-encoding every binary XML file of framework-res.apk and of aapt-built fixtures must give files
/// whose `aapt dump xmltree` equals the original's.
@Suite struct RoundTripTests {
    /// Extracts every binary XML entry (by content, not by name: res/raw may hold text XML) of `apk` with `unzip`.
    static func binaryXMLEntries(of apk: String) throws -> [(String, [UInt8])] {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-extract")
        defer { try? FileManager.default.removeItem(at: dir) }
        let result = try TestSupport.run("unzip", ["-q", "-o", apk, "AndroidManifest.xml", "res/*", "-d", dir.path])
        guard result.succeeded else { throw FixtureError(message: "unzip failed: \(result)") }
        var out: [(String, [UInt8])] = []
        let enumerator = FileManager.default.enumerator(atPath: dir.path)
        while let relative = enumerator?.nextObject() as? String {
            guard relative.hasSuffix(".xml") else { continue }
            let bytes = try TestSupport.readBytes(dir.appendingPathComponent(relative).path)
            if bytes.count >= 8, bytes[0] == 0x03, bytes[1] == 0x00 { out.append((relative, bytes)) }
        }
        return out.sorted { $0.0 < $1.0 }
    }

    /// Re-encodes each file with `transform`, puts the results into a copy of `apk` and compares both xmltree dumps.
    static func assertXMLTreeEqual(apk: String, files: [(String, [UInt8])], transform: (String, [UInt8]) throws -> [UInt8]) throws {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-roundtrip")
        defer { try? FileManager.default.removeItem(at: dir) }
        var replaced: [String: [UInt8]] = [:]
        for (name, bytes) in files { replaced[name] = try transform(name, bytes) }
        let copy = dir.appendingPathComponent("copy.apk").path
        try Oracle.replacing(replaced, in: apk, destination: copy)
        let names = files.map(\.0)
        // One aapt run per 200 files keeps the command line short and the diff readable.
        for start in stride(from: 0, to: names.count, by: 200) {
            let batch = Array(names[start..<min(start + 200, names.count)])
            let original = try Oracle.aapt(["dump", "xmltree", apk] + batch)
            let ours = try Oracle.aapt(["dump", "xmltree", copy] + batch)
            if original != ours {
                // Find the first differing file to report something readable.
                for name in batch {
                    let a = try Oracle.aapt(["dump", "xmltree", apk, name]), b = try Oracle.aapt(["dump", "xmltree", copy, name])
                    if a != b {
                        let al = a.split(separator: "\n", omittingEmptySubsequences: false), bl = b.split(separator: "\n", omittingEmptySubsequences: false)
                        let i = (0..<min(al.count, bl.count)).first { al[$0] != bl[$0] } ?? min(al.count, bl.count)
                        Issue.record("\(name): xmltree differs at line \(i + 1):\n original: \(i < al.count ? al[i] : "<end>")\n ours:     \(i < bl.count ? bl[i] : "<end>")")
                        break
                    }
                }
                return
            }
        }
    }

    @Test func frameworkResBinaryRoundTrip() throws {
        let files = try Self.binaryXMLEntries(of: TestSupport.frameworkRes)
        #expect(files.count > 1000)
        try Self.assertXMLTreeEqual(apk: TestSupport.frameworkRes, files: files) { _, bytes in
            try XMLTree(binaryXML: bytes).binaryXML()
        }
    }

    @Test func binaryRoundTripIsStable() throws {
        // Writing what we wrote gives the same bytes (the writer is deterministic).
        let manifest = try Oracle.entry("AndroidManifest.xml", in: TestSupport.frameworkRes)
        let once = try XMLTree(binaryXML: manifest).binaryXML()
        let twice = try XMLTree(binaryXML: once).binaryXML()
        #expect(once == twice)
        #expect(try XMLTree(binaryXML: once) == XMLTree(binaryXML: manifest))
    }
}
