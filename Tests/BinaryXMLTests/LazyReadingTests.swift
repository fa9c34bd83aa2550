import APKCore
import BinaryXML
import Foundation
import Testing
import TestSupport

/// `ManifestSummary(binaryXML:)` builds only the elements it reads and decodes only their strings (the rest is
/// checked, never decoded). It must accept, refuse (same code, same message) and summarise exactly as the full
/// parse followed by `ManifestSummary(tree:)` does, on real manifests and on corrupted ones.
@Suite(.removesTemporaryDirectories) struct LazyReadingTests {
    static func outcome(_ body: () throws -> ManifestSummary) -> String {
        do { return "summary \(try body())" } catch let error as BinaryXMLError {
            return "\(error.code.rawValue): \(error.message)"
        } catch { return "unexpected \(error)" }
    }

    static func fast(_ bytes: [UInt8]) -> String { outcome { try ManifestSummary(binaryXML: bytes) } }
    static func full(_ bytes: [UInt8]) -> String { outcome { try ManifestSummary(tree: XMLTree(binaryXML: bytes)) } }

    /// Corrupts `bytes` the ways that reach the reader's checks: random bytes, u32 fields set to string indices
    /// and sizes near the limits, fields copied from elsewhere (plausible indices), non-ASCII string bytes, cuts.
    static func mutated(_ bytes: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var b = bytes
        for _ in 0..<Int.random(in: 1...3, using: &rng) where b.count > 8 {
            let word = Int.random(in: 0..<(b.count / 4), using: &rng) * 4
            switch Int.random(in: 0..<6, using: &rng) {
            case 0: b[Int.random(in: 0..<b.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            case 1:
                let value: UInt32 = [0, 1, 0xFFFF_FFFF, UInt32(b.count), UInt32.random(in: 0..<64, using: &rng)].randomElement(using: &rng)!
                for k in 0..<4 { b[word + k] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(k))) }
            case 2:
                let from = Int.random(in: 0..<(b.count / 4), using: &rng) * 4
                for k in 0..<4 { b[word + k] = b[from + k] }
            case 3: b[word] = b[word] &+ (Bool.random(using: &rng) ? 1 : 255)
            case 4: b[Int.random(in: 0..<max(1, b.count / 3), using: &rng)] = [0x80, 0xC3, 0xD8, 0xDC, 0xFF].randomElement(using: &rng)!
            default: b.removeLast(Int.random(in: 1...b.count, using: &rng))
            }
        }
        return b
    }

    /// A manifest with what the summary looks for in awkward places: an alias before the launcher activity,
    /// MAIN and LAUNCHER in different filters of one activity, two `<uses-sdk>` and two `<application>`,
    /// text, comments and elements the summary skips (with children that share the names it reads).
    static let awkwardManifest = """
        <?xml version="1.0" encoding="utf-8"?>
        <manifest xmlns:android="http://schemas.android.com/apk/res/android" package="org.example.lazy"
            android:versionCode="77" android:versionName="7.7 β">
          <!-- first -->
          <uses-sdk android:minSdkVersion="24" android:targetSdkVersion="Tiramisu"/>
          <uses-sdk android:minSdkVersion="30"/>
          <permission android:name="org.example.P"><application android:label="not this one"/></permission>
          <application android:label="Lazy Ünïcode" android:debuggable="true" android:extractNativeLibs="false">
            <service android:name=".S"><intent-filter><action android:name="android.intent.action.MAIN"/></intent-filter></service>
            <activity android:name=".Split">
              <intent-filter><action android:name="android.intent.action.MAIN"/></intent-filter>
              <intent-filter><category android:name="android.intent.category.LAUNCHER"/></intent-filter>
            </activity>
            <activity-alias android:name="Alias" android:targetActivity=".Split">
              <intent-filter>
                <action android:name="android.intent.action.MAIN"/>
                <category android:name="android.intent.category.LAUNCHER"/>
              </intent-filter>
            </activity-alias>
            text in the application
          </application>
          <application android:debuggable="false"/>
        </manifest>
        """

    func seeds() throws -> [(name: String, bytes: [UInt8], mutations: Int)] {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-lazy")
        defer { try? FileManager.default.removeItem(at: dir) }
        let aaptManifest = try Oracle.entry("AndroidManifest.xml", in: try FixtureAPK().build(in: dir))
        let framework = try Oracle.entry("AndroidManifest.xml", in: TestSupport.frameworkRes)
        var awkward = try XMLTree(textXML: Self.awkwardManifest)
        let awkwardUTF8 = try awkward.binaryXML()
        awkward.usesUTF8Strings = false
        let awkwardUTF16 = try awkward.binaryXML()
        return [("aapt fixture", aaptManifest, 1500), ("framework-res", framework, 10),
                ("awkward UTF-8", awkwardUTF8, 1500), ("awkward UTF-16", awkwardUTF16, 1500)]
    }

    @Test func summaryOfRealManifestsMatchesTheFullTree() throws {
        for seed in try seeds() {
            #expect(Self.fast(seed.bytes) == Self.full(seed.bytes), "\(seed.name)")
            #expect(Self.fast(seed.bytes).hasPrefix("summary"), "\(seed.name)")
        }
        var awkward = try XMLTree(textXML: Self.awkwardManifest)
        for utf8 in [true, false] {
            awkward.usesUTF8Strings = utf8
            let summary = try ManifestSummary(binaryXML: try awkward.binaryXML())
            #expect(summary.minSdkVersion == .level(24))
            #expect(summary.targetSdkVersion == .codename("Tiramisu"))
            #expect(summary.label == "Lazy Ünïcode")
            #expect(summary.versionName == "7.7 β")
            #expect(summary.debuggable == true && summary.extractNativeLibs == false)
            // The alias is the first component with MAIN and LAUNCHER in one filter.
            #expect(summary.launcherActivity == "org.example.lazy.Alias")
        }
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func summaryOfCorruptedManifestsMatchesTheFullTree(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        var refused = 0, accepted = 0
        for input in try seeds() {
            for iteration in 0..<input.mutations {
                let bytes = Self.mutated(input.bytes, &rng)
                let fast = Self.fast(bytes), full = Self.full(bytes)
                #expect(fast == full, "\(input.name), seed \(seed), iteration \(iteration)")
                if fast.hasPrefix("summary") { accepted += 1 } else { refused += 1 }
            }
        }
        // Both outcomes must be exercised, or the comparison says little.
        #expect(accepted > 100 && refused > 100, "accepted \(accepted), refused \(refused)")
    }

    /// The pool decodes ASCII UTF-16 strings without the generic transcoder and everything else through it:
    /// both must give what `String(decoding:as:)` gives, lone surrogates (U+FFFD) included.
    @Test func utf16PoolDecodesLikeTheStandardLibrary() throws {
        let strings = ["", "plain", "Ünïcödé", "😀 emoji", "日本語", "tab\tand\u{7F}", String(repeating: "x", count: 40_000)]
        var encoded = try StringPool(strings: strings, isUTF8: false).encoded()
        // Replace the first unit of "plain" with a lone high surrogate and of "😀 emoji" with a lone low one.
        func unitsStart(of index: Int) -> Int {
            let offsetsStart = 28, stringsStart = Int(encoded[20]) | Int(encoded[21]) << 8 | Int(encoded[22]) << 16
            let at = offsetsStart + 4 * index
            let offset = Int(encoded[at]) | Int(encoded[at + 1]) << 8 | Int(encoded[at + 2]) << 16
            return stringsStart + offset + 2
        }
        encoded[unitsStart(of: 1)] = 0x00; encoded[unitsStart(of: 1) + 1] = 0xD8
        encoded[unitsStart(of: 3)] = 0x00; encoded[unitsStart(of: 3) + 1] = 0xDC
        var expected = strings
        expected[1] = String(decoding: [0xD800] + Array("plain".utf16.dropFirst()), as: UTF16.self)
        expected[3] = String(decoding: [0xDC00] + Array("😀 emoji".utf16.dropFirst()), as: UTF16.self)
        let pool = try encoded.withUnsafeBytes { raw in
            try StringPool(bytes: raw, chunk: try Chunk.read(in: raw, at: 0, limit: raw.count, what: "pool"))
        }
        #expect(pool.strings == expected)
        #expect(pool.strings[1].hasPrefix("\u{FFFD}"))
    }
}
