import BinaryXML
import Foundation
import ResourceTable
import Testing
import TestSupport

/// Hostile binary XML and resource tables: every failure is a typed error that says what is wrong; nothing traps,
/// nothing hangs, nothing allocates without bound.
@Suite(.removesTemporaryDirectories) struct MalformedInputTests {
    static let fixture: (manifest: [UInt8], table: [UInt8]) = {
        let dir = try! TestSupport.makeTemporaryDirectory("binxml-hostile")
        defer { try? FileManager.default.removeItem(at: dir) }
        var fixture = FixtureAPK()
        fixture.strings = ["a": "A", "b": "B"]
        fixture.resources["values-fr/strings.xml"] = Array(#"<resources><string name="a">Ah</string></resources>"#.utf8)
        let apk = try! fixture.build(in: dir)
        return (try! Oracle.entry("AndroidManifest.xml", in: apk), try! Oracle.entry("resources.arsc", in: apk))
    }()

    static func le32(_ bytes: inout [UInt8], _ offset: Int, _ value: UInt32) {
        for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
    }

    /// Parses, and when that works exercises everything downstream; returns the error code, nil on success.
    @discardableResult
    static func exerciseXML(_ bytes: [UInt8]) -> BinaryXMLError.Code? {
        do {
            let tree = try XMLTree(binaryXML: bytes)
            _ = tree.textXML()
            _ = try? tree.binaryXML()
            _ = try? ManifestSummary(tree: tree)
            return nil
        } catch let error as BinaryXMLError {
            #expect(!error.message.isEmpty)
            return error.code
        } catch {
            Issue.record("untyped error \(type(of: error)): \(error)")
            return nil
        }
    }

    @discardableResult
    static func exerciseTable(_ bytes: [UInt8]) -> ResourceTableError.Code? {
        do {
            var table = try ResourceTable(bytes: bytes)
            _ = table.stringsXMLFiles()
            if let first = table.entries.first(where: { $0.type == "string" }) {
                try? table.setString(named: first.name, qualifiers: first.configuration.qualifiers, to: "changed")
                _ = try? table.encoded()
            }
            return nil
        } catch let error as ResourceTableError {
            #expect(!error.message.isEmpty)
            return error.code
        } catch {
            Issue.record("untyped error \(type(of: error)): \(error)")
            return nil
        }
    }

    /// aapt2's protobuf XML (`XmlNode { element { name: "manifest" } }`, what `--proto-format` writes) is named as
    /// such; text starting with a newline (the same first byte) is not taken for it.
    @Test func protobufXMLIsNamed() {
        let protobuf: [UInt8] = [0x0A, 0x0A, 0x1A, 0x08] + Array("manifest".utf8)
        #expect(XMLTree.isProtobufXML(protobuf))
        #expect(Self.exerciseXML(protobuf) == .protobufFormat)
        for text in ["\n<manifest/>", "\n\n<manifest/>", "\n", ""] { #expect(!XMLTree.isProtobufXML(Array(text.utf8)), "\(text.debugDescription)") }
        #expect(!XMLTree.isProtobufXML(Self.fixture.manifest))
    }

    @Test func everyTruncationIsAnError() {
        let (manifest, table) = Self.fixture
        for length in 0..<manifest.count {
            #expect(Self.exerciseXML(Array(manifest[0..<length])) != nil, "truncated to \(length) bytes parsed")
        }
        for length in stride(from: 0, to: table.count, by: 3) {
            #expect(Self.exerciseTable(Array(table[0..<length])) != nil, "truncated to \(length) bytes parsed")
        }
    }

    @Test func craftedStringPools() {
        let manifest = Self.fixture.manifest
        // String pool header at offset 8: count @16, styles @20, flags @24, stringsStart @28, stylesStart @32.
        var huge = manifest; Self.le32(&huge, 16, 0xFFFF_FFFF)
        #expect(Self.exerciseXML(huge) == .malformedStringPool)
        var hugeStyles = manifest; Self.le32(&hugeStyles, 20, 0x4000_0000)
        #expect(Self.exerciseXML(hugeStyles) == .malformedStringPool)
        var badStart = manifest; Self.le32(&badStart, 28, 0x7FFF_FFF0)
        #expect(Self.exerciseXML(badStart) == .malformedStringPool)
        var badOffset = manifest; Self.le32(&badOffset, 36, 0x00FF_FFFF)  // first string offset
        #expect(Self.exerciseXML(badOffset) == .malformedStringPool)
        var utf16 = manifest; utf16[25] ^= 0x01  // flip UTF-8 ↔ UTF-16: lengths now make no sense
        _ = Self.exerciseXML(utf16)
        var tinyChunk = manifest; Self.le32(&tinyChunk, 12, 4)  // pool size smaller than its header
        #expect(Self.exerciseXML(tinyChunk) == .malformedChunk)
        var notXML = manifest; notXML[0] = 0x02
        #expect(Self.exerciseXML(notXML) == .malformedChunk)
    }

    @Test func craftedNodes() throws {
        let manifest = Self.fixture.manifest
        let poolSize = Int(manifest[12]) | Int(manifest[13]) << 8 | Int(manifest[14]) << 16 | Int(manifest[15]) << 24
        let mapOffset = 8 + poolSize
        let mapSize = Int(manifest[mapOffset + 4]) | Int(manifest[mapOffset + 5]) << 8
        let firstNode = mapOffset + mapSize  // the first START_NAMESPACE
        // A string index far outside the pool in the namespace URI.
        var badIndex = manifest; Self.le32(&badIndex, firstNode + 20, 0x0FFF_FFFF)
        #expect(Self.exerciseXML(badIndex) == .badStringIndex)
        // Find the first START_ELEMENT and claim 65,535 attributes.
        var offset = firstNode
        while offset + 8 < manifest.count, !(manifest[offset] == 0x02 && manifest[offset + 1] == 0x01) {
            offset += Int(manifest[offset + 4]) | Int(manifest[offset + 5]) << 8
        }
        var manyAttributes = manifest; manyAttributes[offset + 28] = 0xFF; manyAttributes[offset + 29] = 0xFF
        #expect(Self.exerciseXML(manyAttributes) == .truncated)
        var zeroSize = manifest; Self.le32(&zeroSize, offset + 4, 0)
        #expect(Self.exerciseXML(zeroSize) == .malformedChunk)
        // A document that ends after its first start element: unclosed elements.
        let elementSize = Int(manifest[offset + 4]) | Int(manifest[offset + 5]) << 8
        var cut = Array(manifest[0..<(offset + elementSize)]); Self.le32(&cut, 4, UInt32(cut.count))
        #expect(Self.exerciseXML(cut) == .badNesting)
    }

    @Test func deepNestingIsRefused() throws {
        var element = XMLTree.Element(name: "leaf")
        for _ in 0..<1200 { element = XMLTree.Element(name: "n", children: [.element(element)]) }
        #expect(throws: BinaryXMLError.self) { try XMLTree(root: element).binaryXML() }
        let text = String(repeating: "<a>", count: 5000) + String(repeating: "</a>", count: 5000)
        #expect(throws: BinaryXMLError.self) { try XMLTree(textXML: text) }
    }

    @Test func hostileLineNumbersDoNotBlowUpText() throws {
        var root = XMLTree.Element(name: "manifest", lineNumber: 4_000_000_000)
        root.children = [.element(XMLTree.Element(name: "x", lineNumber: 4_000_000_001))]
        let text = XMLTree(root: root).textXML()
        #expect(text.utf8.count < 1000)
    }

    /// Seeded random corruption (SplitMix64; the seed is in the failure message).
    @Test(arguments: [UInt64(1), 2, 3])
    func randomCorruption(seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        func next() -> UInt64 { generator.next() }
        let (manifest, table) = Self.fixture
        for _ in 0..<700 {
            var bytes = manifest
            for _ in 0..<(1 + Int(next() % 4)) {
                let at = Int(next() % UInt64(bytes.count))
                if next() % 2 == 0 { bytes[at] = UInt8(truncatingIfNeeded: next()) }
                else if at + 4 <= bytes.count { Self.le32(&bytes, at & ~3, [0, 0xFFFF_FFFF, 0x7FFF_FFFF, 0x10000, UInt32(truncatingIfNeeded: next())][Int(next() % 5)]) }
            }
            Self.exerciseXML(bytes)
        }
        for _ in 0..<300 {
            var bytes = table
            for _ in 0..<(1 + Int(next() % 4)) {
                let at = Int(next() % UInt64(bytes.count))
                if next() % 2 == 0 { bytes[at] = UInt8(truncatingIfNeeded: next()) }
                else if at + 4 <= bytes.count { Self.le32(&bytes, at & ~3, [0, 0xFFFF_FFFF, 0x7FFF_FFFF, 0x10000, UInt32(truncatingIfNeeded: next())][Int(next() % 5)]) }
            }
            Self.exerciseTable(bytes)
        }
    }
}
