import Foundation
import Testing
import APKCore
import TestSupport
import ZlibWrapper

/// `Deflate.compress` from level 4 on runs CZlibDeflate's copy of zlib's deflate with its faster match search; its
/// bytes must be the system zlib's for every input (apksigner's JAR signature files, aapt's entries). Compared with
/// `Deflate.compressWithZlib` byte for byte: the JAR signature files and other entries of framework-res.apk and of
/// every APK of the real-world corpus, a JAR manifest and .SF file made of framework-res's 7,600 entry names, and
/// generated inputs of every shape around zlib's limits (the 32 KiB window and its 32,506-byte reach, 258-byte
/// matches, the hash chains' length limits, the input's last bytes).
@Suite(.removesTemporaryDirectories) struct ExactDeflateTests {
    /// Throws with the first differing byte unless both compressors write the same bytes for `input`.
    static func expectZlibBytes(_ input: [UInt8], level: Int32 = 9, _ label: String) throws {
        let ours = try Deflate.compress(input, level: level)
        let zlib = try input.withUnsafeBytes { try Deflate.compressWithZlib($0, level: level) }
        guard ours != zlib else { return }
        let first = zip(ours, zlib).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(ours.count, zlib.count)
        Issue.record("\(label) (\(input.count) bytes, level \(level)): \(ours.count) bytes against zlib's \(zlib.count), first difference at \(first)")
    }

    /// The entries worth compressing of one APK: its JAR signature files and the usual large ones.
    static func sampleEntries(of path: String) throws -> [(name: String, data: [UInt8])] {
        let archive = try APKArchive(path: path)
        return try archive.entries.filter { entry in
            let name = entry.name
            return (name.hasPrefix("META-INF/") && !name.hasSuffix("/")) || name == "AndroidManifest.xml"
                || name == "resources.arsc" || (name.hasPrefix("classes") && name.hasSuffix(".dex"))
        }.filter { $0.uncompressedSize <= 4 << 20 }.map { ($0.name, try archive.uncompressedData(of: $0)) }
    }

    @Test func realWorldCorpusEntries() throws {
        try RealWorldCorpus.requireFetched()
        var compared = 0
        for apk in RealWorldCorpus.apks {
            // Some are malformed on purpose (janus.apk's prefix): what APKArchive refuses is not compared.
            guard let entries = try? Self.sampleEntries(of: try apk.fetchedPath()) else { continue }
            for (name, data) in entries {
                try Self.expectZlibBytes(data, "\(apk.name): \(name)")
                compared += 1
            }
        }
        #expect(compared > 100)
    }

    /// framework-res.apk's AndroidManifest.xml and the first 6 MB of its resources.arsc, and a MANIFEST.MF and .SF
    /// file with its 7,600 names: what signing it deflates.
    @Test func frameworkResources() throws {
        let archive = try APKArchive(path: TestSupport.frameworkRes)
        for name in ["AndroidManifest.xml", "resources.arsc"] {
            let entry = try #require(archive.entry(named: name))
            try Self.expectZlibBytes(Array(try archive.uncompressedData(of: entry).prefix(6 << 20)), "framework-res.apk: \(name)")
        }
        var generator = SplitMix64(seed: 21)
        let names = archive.entries.map(\.name).sorted()
        #expect(names.count > 7000)
        var manifest = "Manifest-Version: 1.0\r\nBuilt-By: Generated-by-ADT\r\nCreated-By: Android Gradle 8.1.0\r\n\r\n"
        var signatureFile = "Signature-Version: 1.0\r\nCreated-By: 1.0 (Android)\r\nSHA-256-Digest-Manifest: \(Self.base64Digest(&generator))\r\nX-Android-APK-Signed: 2, 3\r\n\r\n"
        for name in names {
            manifest += "Name: \(name)\r\nSHA-256-Digest: \(Self.base64Digest(&generator))\r\n\r\n"
            signatureFile += "Name: \(name)\r\nSHA-256-Digest: \(Self.base64Digest(&generator))\r\n\r\n"
        }
        try Self.expectZlibBytes(Array(manifest.utf8), "framework-res MANIFEST.MF")
        try Self.expectZlibBytes(Array(signatureFile.utf8), "framework-res .SF")
        for level: Int32 in 4...8 { try Self.expectZlibBytes(Array(manifest.utf8), level: level, "framework-res MANIFEST.MF") }
    }

    static func base64Digest(_ generator: inout SplitMix64) -> String {
        let bytes = (0..<4).flatMap { _ in withUnsafeBytes(of: generator.next()) { Array($0) } }
        return Data(bytes).base64EncodedString()
    }

    /// Generated inputs of eight shapes, 0 bytes to 3 MB, at level 9 and a few at levels 4 to 8.
    @Test(arguments: 0..<8) func generatedInputs(shape: Int) throws {
        var generator = SplitMix64(seed: UInt64(shape) &* 7919 &+ 1)
        for round in 0..<40 {
            let size: Int
            switch round % 10 {
            case 0...2: size = Int(generator.next() % 600)
            case 3...6: size = Int(generator.next() % 70_000)
            case 7, 8: size = 32_000 + Int(generator.next() % 70_000)
            default: size = round == 9 ? 3_000_000 : Int(generator.next() % 400_000)
            }
            let input = Self.generate(shape: shape, count: size, &generator)
            try Self.expectZlibBytes(input, "shape \(shape) round \(round)")
            if round % 8 == 1 { try Self.expectZlibBytes(input, level: Int32(4 + round % 5), "shape \(shape) round \(round)") }
        }
    }

    /// Tables in lent memory that holds old bytes (the signer lends pool buffers the copy wrote): zlib's bytes
    /// whether the regions hold all the tables, some of them (the rest in memory of the deflate's own), or none.
    @Test func tablesInLentMemory() throws {
        var generator = SplitMix64(seed: 77)
        let inputs = [Self.generate(shape: 5, count: 900_000, &generator), Self.generate(shape: 3, count: 40_000, &generator),
                      Self.generate(shape: 1, count: 2_000, &generator)]
        for (count, size) in [(2, 1 << 20), (1, 1 << 20), (3, 200 << 10), (1, 100)] {
            let regions = (0..<count).map { _ in UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 64) }
            defer { for region in regions { region.deallocate() } }
            for (index, input) in inputs.enumerated() {
                for region in regions { for offset in region.indices { region[offset] = UInt8(truncatingIfNeeded: offset &* 131 &+ 7) } }
                let ours = try Deflate.compress(input, level: 9, scratch: regions)
                let zlib = try input.withUnsafeBytes { try Deflate.compressWithZlib($0, level: 9) }
                #expect(ours == zlib, "input \(index) (\(input.count) bytes) with \(count) lent region(s) of \(size) bytes")
            }
        }
    }

    /// Every size from 0 to 300 bytes, where the input's end cuts the hashes and the 258-byte matches.
    @Test func shortInputs() throws {
        var generator = SplitMix64(seed: 5)
        for size in 0...300 {
            for shape in [1, 2, 4] { try Self.expectZlibBytes(Self.generate(shape: shape, count: size, &generator), "shape \(shape)") }
        }
    }

    static let words = ["res/", "drawable-", "hdpi/", "xhdpi/", "ic_", "menu_", "btn_", "_normal", ".png", ".xml", "layout/",
                        "values-", "\r\n", "Name: ", "SHA-256-Digest: ", "=", "\r\n\r\n", "a", "b", "abc", "abcabc",
                        String(repeating: "z", count: 40), "0123456789"].map { Array($0.utf8) }
    static let base64Alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func generate(shape: Int, count: Int, _ generator: inout SplitMix64) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(count + 512)
        func random(_ bound: Int) -> Int { Int(generator.next() % UInt64(bound)) }
        switch shape {
        case 0:  // incompressible
            while out.count < count { out.append(UInt8(truncatingIfNeeded: generator.next())) }
        case 1:  // one byte: 258-byte matches at distance 1, chains at their length limit
            out = [UInt8](repeating: UInt8(random(256)), count: count)
        case 2:  // a random block repeated with a period of 1 to 300 bytes
            let period = 1 + random(300)
            while out.count < count { out.append(out.count < period ? UInt8(random(256)) : out[out.count - period]) }
        case 3:  // two to five letters: long chains, short matches
            let letters = 2 + random(4)
            while out.count < count { out.append(UInt8(97 + random(letters))) }
        case 4:  // words of manifests and paths
            while out.count < count {
                out += words[random(words.count)]
                if random(5) == 0 { out.append(base64Alphabet[random(64)]) }
            }
        case 5:  // a JAR manifest: sorted names in few directories, random digests
            out += Array("Manifest-Version: 1.0\r\nCreated-By: 1.0 (Android)\r\n\r\n".utf8)
            let directories = ["drawable", "layout", "anim", "color", "drawable-hdpi", "mipmap-xxhdpi", "values"]
            let groups = 1 + random(40)
            var index = 0
            while out.count < count {
                let directory = (index / groups) % directories.count
                let stem = ["ic", "btn", "abc", "list", "menu"][index % 5]
                let suffix = index % 3 == 0 ? "pressed_state_long_name_suffix" : "normal"
                out += Array("Name: res/\(directories[directory])-\(directory)/\(stem)_\(index)_\(suffix).png\r\nSHA-256-Digest: ".utf8)
                for _ in 0..<43 { out.append(base64Alphabet[random(64)]) }
                out += Array("=\r\n\r\n".utf8)
                index += 1
            }
        case 6:  // runs of one byte between random stretches
            while out.count < count {
                let length = random(600)
                if random(2) == 0 {
                    out += [UInt8](repeating: UInt8(random(256)), count: length)
                } else {
                    for _ in 0..<length { out.append(UInt8(random(256))) }
                }
            }
        default:  // copies from just inside, at and just past the window's reach, and from anywhere before
            while out.count < min(count, 300) { out.append(UInt8(random(256))) }
            while out.count < count {
                let length = 3 + random(300)
                let distance: Int
                switch random(4) {
                case 0: distance = 32_506 + random(8) - 4
                case 1: distance = 32_768 - random(300)
                default: distance = 1 + random(min(out.count, 40_000))
                }
                let from = out.count - min(distance, out.count)
                for offset in 0..<length { out.append(out[from + offset]) }
                if random(3) == 0 { out.append(UInt8(random(256))) }
            }
        }
        return Array(out.prefix(count))
    }
}
