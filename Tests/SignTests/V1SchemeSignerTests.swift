import OpenSSLWrapper
@testable import Sign
import SignatureSchemes
import Testing

/// apksig's JAR-signing rules that the oracle tests cannot reach directly.
@Suite(.removesTemporaryDirectories) struct V1SchemeSignerTests {
    @Test("an extra CRLF when the .SF length is a multiple of 1024 (Android 1.6 JAR parser workaround)")
    func signatureFileLengthQuirk() throws {
        var hit = false
        for length in 1...1200 {
            let name = "assets/" + String(repeating: "x", count: length)
            let manifest = try V1SchemeSigner.makeManifest(digestAlgorithm: .sha256, entryDigests: [(name, [UInt8](repeating: 7, count: 32))],
                                                           inputManifest: nil)
            let plain = V1SchemeSigner.makeSignatureFile(manifest: manifest, digestAlgorithm: .sha256, apkSchemeIDs: [2, 3],
                                                         createdBy: "1.0 (Android)")
            // The lengths step through every value near 2048, so one of them lands on the boundary and gets
            // the extra CRLF.
            if plain.count % 1024 == 2 { hit = true }
            #expect(plain.count % 1024 != 0, "length \(length): .SF of \(plain.count) bytes")
        }
        #expect(hit, "no name length produced a 1024-multiple .SF; widen the search")
    }

    @Test("manifest lines wrap at 70 bytes with a space continuation; sections sort by UTF-16 units as Java")
    func manifestFormat() throws {
        let long = "assets/" + String(repeating: "y", count: 100)
        let names = ["b", "a", "\u{1F600}.txt", "\u{FF5E}.txt", long]
        let manifest = try V1SchemeSigner.makeManifest(digestAlgorithm: .sha1, entryDigests: names.map { ($0, [UInt8](repeating: 1, count: 20)) },
                                                       inputManifest: Array("Manifest-Version: 1.0\r\nCreated-By: test\r\n\r\n".utf8))
        let text = String(decoding: manifest.contents, as: UTF8.self)
        #expect(text.hasPrefix("Manifest-Version: 1.0\r\nCreated-By: test\r\n\r\nName: a\r\nSHA1-Digest: AQEBAQEBAQEBAQEBAQEBAQEBAQE=\r\n\r\n"))
        // U+1F600 is a surrogate pair (0xD83D...) and sorts before U+FF5E in Java, after it in Unicode scalar order.
        #expect(manifest.sections.map(\.name) == ["a", long, "b", "\u{1F600}.txt", "\u{FF5E}.txt"])
        for line in text.split(separator: "\r\n", omittingEmptySubsequences: false) {
            #expect(line.utf8.count <= 70, "\(line)")
        }
        #expect(text.contains("Name: " + String(long.prefix(64)) + "\r\n " + String(long.dropFirst(64))))
        #expect(throws: SignError.self) {
            _ = try V1SchemeSigner.makeManifest(digestAlgorithm: .sha1, entryDigests: [("bad\nname", [0])], inputManifest: nil)
        }
    }

    @Test("the template's manifest and prepared .SF file are the ones written line by line, at every line split")
    func templateMatchesLineWriter() throws {
        // Name lengths across the first and later line splits (64 bytes of name fit the first line, 69 each
        // continuation), both digests, with and without an input main section; digests differ per entry.
        let lengths = Array(1...150) + [200, 201, 202, 203, 272, 273, 274, 1_000]
        for digest in [DigestAlgorithm.sha256, .sha1] {
            for input in [nil, Array("Manifest-Version: 1.0\r\nCreated-By: test\r\n\r\n".utf8)] {
                // Two-byte characters in half of them move the splits within a character, as apksig splits by bytes.
                let names = lengths.reversed().map { "r/" + String(repeating: $0 % 2 == 0 ? "\u{E9}" : "z", count: $0) }
                let digests = names.indices.map { index in (0..<digest.outputSize).map { UInt8(truncatingIfNeeded: index &* 31 &+ $0) } }
                let header = V1SchemeSigner.SignatureFileHeader(apkSchemeIDs: [2, 3], createdBy: "1.0 (Android)")
                var template = try V1SchemeSigner.ManifestTemplate(digestAlgorithm: digest, names: names, inputManifest: input,
                                                                  signatureFileHeader: header)
                let manifest = template.filled(with: digests)
                // The line writer's manifest, entry by entry in Java's order.
                var writer = JARManifestWriter()
                if input == nil {
                    writer.writeMainSection(first: ("Manifest-Version", "1.0"), others: [])
                } else {
                    writer.writeMainSection(first: ("Manifest-Version", "1.0"), others: [("Created-By", "test")])
                }
                let attribute = digest == .sha1 ? "SHA1-Digest" : "SHA-256-Digest"
                for (name, value) in zip(names, digests).sorted(by: { JARManifestWriter.javaLess($0.0, $1.0) }) {
                    writer.writeIndividualSection(name: name, attributes: [(attribute, Base64.encode(value))])
                }
                // Compared whole, reported in a line (the files are tens of kilobytes).
                let sameManifest = manifest.contents == writer.bytes
                #expect(sameManifest, "manifest: \(digest), input manifest \(input != nil)")
                #expect(manifest.sections.map(\.name) == names.sorted(by: JARManifestWriter.javaLess))
                let prepared = template.signatureFile(for: manifest, header: header)
                let assembled = V1SchemeSigner.makeSignatureFile(manifest: manifest, digestAlgorithm: digest, apkSchemeIDs: [2, 3],
                                                                 createdBy: "1.0 (Android)")
                let sameSignatureFile = prepared == assembled
                #expect(sameSignatureFile, ".SF: \(digest), input manifest \(input != nil)")
            }
        }
    }

    @Test("entry names a manifest cannot list are refused, the first in entry order")
    func unlistableNames() throws {
        func refusal(_ names: [String]) -> SignError? {
            do {
                _ = try V1SchemeSigner.makeManifest(digestAlgorithm: .sha256, entryDigests: names.map { ($0, [UInt8](repeating: 0, count: 32)) },
                                                    inputManifest: nil)
                return nil
            } catch { return error as? SignError }
        }
        for name in ["META-INF/sub/A.RSA", "META-INF/x.EC", "META-INF/a/../b.DSA", "META-INF/.RSA"] {
            #expect(refusal(["a", name]) == .signatureBlockNamedEntry(name), "\(name)")
        }
        for name in ["META-INF/x.RSA.txt", "META-INF/a.rsa", "meta-inf/a.RSA", "x/META-INF/a.RSA", "META-INF.RSA", "\u{E9}/META-INF/a.EC"] {
            #expect(refusal(["a", name]) == nil, "\(name)")
        }
        for (name, byte) in [("a\rb", 0x0d), ("a\nb", 0x0a), ("a\u{0}b", 0)] as [(String, UInt32)] {
            #expect(refusal(["ok", name, "META-INF/z.EC"]) == .unsupportedEntryName(name, character: byte), "\(name.debugDescription)")
        }
        #expect(refusal(["META-INF/z.EC", "a\nb"]) == .signatureBlockNamedEntry("META-INF/z.EC"))
        // Other control characters and bytes from 0xEE up are listed (the latter change the sort order only).
        #expect(refusal(["a\tb", "\u{FFFD}", "\u{1F600}"]) == nil)
    }

    @Test("signer names as apksig's getSafeSignerName; digest choice by key and minSdkVersion")
    func namesAndDigests() throws {
        #expect(try V1SchemeSigner.safeSignerName("androiddebugkey") == "ANDROIDD")
        #expect(try V1SchemeSigner.safeSignerName("my.key-1") == "MY_KEY-1")
        #expect(try V1SchemeSigner.safeSignerName("a b") == "A_B")
        #expect(throws: SignError.emptySignerName) { _ = try V1SchemeSigner.safeSignerName("") }
        #expect(try V1SchemeSigner.digestAlgorithm(for: .rsa, minSdkVersion: 17) == .sha1)
        #expect(try V1SchemeSigner.digestAlgorithm(for: .rsa, minSdkVersion: 18) == .sha256)
        #expect(try V1SchemeSigner.digestAlgorithm(for: .dsa, minSdkVersion: 20) == .sha1)
        #expect(try V1SchemeSigner.digestAlgorithm(for: .dsa, minSdkVersion: 21) == .sha256)
        #expect(throws: SignError.ecdsaJARSignatureNeedsAPI18(minSdkVersion: 17)) {
            _ = try V1SchemeSigner.digestAlgorithm(for: .ec, minSdkVersion: 17)
        }
        for name in ["META-INF/MANIFEST.MF", "META-INF/CERT.SF", "META-INF/cert.rsa", "META-INF/A.DSA", "META-INF/B.EC", "META-INF/SIG-x", "dir/"] {
            #expect(!V1SchemeSigner.isDigestNeeded(name), "\(name)")
        }
        for name in ["META-INF/services/x", "META-INF/other.txt", "classes.dex", "META-INF/MANIFEST.MF.bak"] {
            #expect(V1SchemeSigner.isDigestNeeded(name), "\(name)")
        }
    }

    @Test("the input manifest's main section is read as java.util.jar.Manifest reads it")
    func mainSectionParsing() throws {
        let main = try JARMainSection(manifest: Array("Manifest-Version: 1.0\nCreated-By: a\n  continued\ncreated-by: b\n\nName: x\n".utf8))
        #expect(main.attributes.map(\.name) == ["Manifest-Version", "Created-By"])
        #expect(main.value(of: "CREATED-BY") == "b")
        #expect(throws: SignError.self) { _ = try JARMainSection(manifest: Array("Manifest-Version: 1.0".utf8)) }
        #expect(throws: SignError.self) { _ = try JARMainSection(manifest: Array("Manifest-Version:1.0\n".utf8)) }
        #expect(throws: SignError.self) { _ = try JARMainSection(manifest: Array("Bad Name: 1\n".utf8)) }
    }
}
