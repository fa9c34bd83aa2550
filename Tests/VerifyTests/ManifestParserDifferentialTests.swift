import Foundation
import OpenSSLWrapper
import SignatureSchemes
import TestSupport
import Testing
@testable import Verify

/// The JAR manifest parser reads lines as ranges of the input since it was made faster; these tests hold it to
/// the line-copying parser it replaced (kept below as the reference, byte for byte apksig's ManifestParser),
/// because a section that ends one byte elsewhere is a verification difference.
@Suite("Verify: JAR manifest parser against its reference", .removesTemporaryDirectories)
struct ManifestParserDifferentialTests {
    /// Manifests made of the bytes that steer the parser (CR, LF, space, ": ", a non-ASCII letter), seeded.
    static func hostileManifest(seed: UInt64) -> [UInt8] {
        let noise = FixtureAPK.pseudoRandomBytes(count: Int(seed % 400) + 1, seed: seed)
        let pieces: [[UInt8]] = [[0x0d], [0x0a], [0x0d, 0x0a], [0x20], [0x3a, 0x20], Array("Name".utf8), Array("SHA-256-Digest".utf8),
                                 [0x41], [0x7a], [0xe2, 0x84, 0xaa], [0xc5, 0xbf], [0xff], [0x0a, 0x0a], [0x0a, 0x20]]
        return noise.flatMap { pieces[Int($0) % pieces.count] }
    }

    @Test("sections, their byte ranges and attributes equal the reference parser's (2,000 seeded manifests)")
    func sectionsMatchReference() {
        var inputs: [[UInt8]] = (UInt64(0)..<2000).map { Self.hostileManifest(seed: $0) }
        inputs.append(Array("Manifest-Version: 1.0\r\n\r\nName: a\r\n b\r\n c\r\nSHA1-Digest: x\r\n\r\n\r\nName: d\n \n".utf8))
        inputs.append([])
        inputs.append([0x20])
        inputs.append(Array(" x\n y\n\nz".utf8))
        for (index, bytes) in inputs.enumerated() {
            let manifest = JARManifest(bytes: bytes)
            var reference = ReferenceManifestLineParser(bytes: bytes)
            var expected: [ReferenceSection] = []
            while let section = reference.readSection() { expected.append(section) }
            let actual = (manifest.mainSection.map { [$0] } ?? []) + manifest.individualSections
            #expect(actual.count == expected.count, "input #\(index)")
            for (a, e) in zip(actual, expected) {
                #expect(a.range == e.range, "input #\(index)")
                #expect(a.attributes == e.attributes, "input #\(index)")
            }
        }
    }

    @Test("attribute names compare as Java's equalsIgnoreCase (apksig ManifestParser), the ASCII fast path included")
    func namesCompareAsJavaEqualsIgnoreCase() {
        let names = ["Name", "NAME", "name", "Nam", "Names", "SHA-256-Digest", "sha-256-digest", "SHA-256-DIGEST", "SHA-256_Digest",
                     "X-Android-APK-Signed", "X-Android-AP\u{212A}-Signed", "x-android-apk-signed", "\u{17F}HA1-Digest", "SHA1-Digest",
                     "\u{131}", "I", "i", "\u{130}", "@", "`", "[", "{", "", " ", "Na\u{308}me", "N\u{E4}me", "NAME\u{0}", "Created-By"]
        // Every pair of different names that JDK 17's String.equalsIgnoreCase finds equal (from running it on
        // this list). Not lowercased() equality: that misses ſ/S, ı/I, İ/i and joins "Na\u{308}me" with "N\u{E4}me".
        let groups: [Set<String>] = [["Name", "NAME", "name"], ["SHA-256-Digest", "sha-256-digest", "SHA-256-DIGEST"],
                                     ["X-Android-APK-Signed", "X-Android-AP\u{212A}-Signed", "x-android-apk-signed"],
                                     ["\u{17F}HA1-Digest", "SHA1-Digest"], ["\u{131}", "I", "i", "\u{130}"]]
        for a in names {
            for b in names {
                let java = Array(a.utf16) == Array(b.utf16) || groups.contains { $0.contains(a) && $0.contains(b) }
                #expect(JARManifest.namesEqual(a, b) == java, "\(a.debugDescription) vs \(b.debugDescription)")
            }
        }
        let section = JARManifest(bytes: Array("Name: a\r\nsha1-DIGEST: v\r\nX-Android-AP\u{212A}-Signed: 2\r\n".utf8)).mainSection
        #expect(section?.value(of: "SHA1-Digest") == "v")
        #expect(section?.value(of: "X-Android-APK-Signed") == "2")
        #expect(section?.value(of: "SHA-256-Digest") == nil)
    }
}

/// A section as the reference parser reports it.
struct ReferenceSection {
    var range: Range<Int>
    var attributes: [JARManifest.Attribute]
}

/// The parser as it was before lines became ranges (copied unchanged apart from its name).
struct ReferenceManifestLineParser {
    let bytes: [UInt8]
    var offset = 0
    /// A line read ahead: nil (none), empty (end of section seen), or the start of the next attribute.
    var bufferedLine: [UInt8]?

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func readSection() -> ReferenceSection? {
        var start: Int
        var line: [UInt8]
        repeat {
            start = offset
            guard let attribute = readAttributeBytes() else { return nil }
            line = attribute
        } while line.isEmpty
        var attributes = [Self.parseAttribute(line)]
        while let next = readAttributeBytes(), !next.isEmpty {
            attributes.append(Self.parseAttribute(next))
        }
        return ReferenceSection(range: start..<offset, attributes: attributes)
    }

    static func parseAttribute(_ line: [UInt8]) -> JARManifest.Attribute {
        // Java decodes the whole line first and then searches; ": " is ASCII, so searching the bytes is the same.
        var index = 0
        while index + 1 < line.count {
            if line[index] == UInt8(ascii: ":") && line[index + 1] == UInt8(ascii: " ") {
                return JARManifest.Attribute(name: String(decoding: line[..<index], as: UTF8.self),
                                             value: String(decoding: line[(index + 2)...], as: UTF8.self))
            }
            index += 1
        }
        return JARManifest.Attribute(name: String(decoding: line, as: UTF8.self), value: "")
    }

    /// The next attribute (continuations joined), an empty array at the end of a section, nil at the end of input.
    mutating func readAttributeBytes() -> [UInt8]? {
        if let buffered = bufferedLine, buffered.isEmpty {
            bufferedLine = nil
            return []
        }
        guard let line = readLine() else {
            if let buffered = bufferedLine {
                bufferedLine = nil
                return buffered
            }
            return nil
        }
        if line.isEmpty {
            if let buffered = bufferedLine {
                bufferedLine = []
                return buffered
            }
            return []
        }
        var attribute: [UInt8]
        if let buffered = bufferedLine {
            if line[0] != UInt8(ascii: " ") {
                bufferedLine = line
                return buffered
            }
            attribute = buffered + line.dropFirst()
            bufferedLine = nil
        } else {
            attribute = line
        }
        while true {
            guard let next = readLine() else { return attribute }
            if next.isEmpty {
                bufferedLine = []
                return attribute
            }
            if next[0] == UInt8(ascii: " ") {
                attribute += next.dropFirst()
            } else {
                bufferedLine = next
                return attribute
            }
        }
    }

    /// The next line without its terminator, or nil at the end of input.
    mutating func readLine() -> [UInt8]? {
        guard offset < bytes.count else { return nil }
        let start = offset
        var lineEnd = bytes.count
        var next = bytes.count
        var i = start
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\r") {
                lineEnd = i
                next = (i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "\n")) ? i + 2 : i + 1
                break
            } else if b == UInt8(ascii: "\n") {
                lineEnd = i
                next = i + 1
                break
            }
            i += 1
        }
        offset = next
        return Array(bytes[start..<lineEnd])
    }
}
