import OpenSSLWrapper
@testable import Sign
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
