import APKCore
import Align
import Foundation
import Repack
import Testing
import TestSupport

/// The table of entry names the central-directory reader and the ZIP writer use to refuse a name given twice.
@Suite(.removesTemporaryDirectories) struct EntryNameTableTests {
    /// Against `Set<[UInt8]>` on names built to collide in every way but the bytes: repeats, prefixes of each
    /// other, the empty name, lengths 0 to 40, and enough of them to grow the table from its smallest size many times.
    @Test(arguments: [UInt64(1), 0xD935])
    func agreesWithASetOfByteArrays(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var table = EntryNameTable()
        var reference = Set<[UInt8]>()
        for step in 0..<6_000 {
            let length = Int(random.next() % 41)
            // A small alphabet makes repeats common; every 7th name repeats a prefix of an earlier one.
            var name = (0..<length).map { _ in UInt8(ascii: "a") + UInt8(random.next() % 3) }
            if step % 7 == 0, let earlier = reference.randomElement(using: &random) { name = Array(earlier.prefix(Int(random.next() % 41))) }
            let inserted = table.insert(name)
            #expect(inserted == reference.insert(name).inserted, "seed \(seed), step \(step): \(String(decoding: name, as: UTF8.self).debugDescription)")
        }
        #expect(table.count == reference.count)
    }

    /// Repacker (align, run) refuses to write one name twice, and leaves no output.
    @Test func theWriterRefusesANameWrittenTwice() throws {
        let dir = try TestSupport.makeTemporaryDirectory("entry-names")
        let output = dir.appendingPathComponent("twice.apk").path
        let entries = try ["assets/a.txt", "assets/b.txt", "assets/a.txt"].map {
            try OutputEntry.making(name: $0, content: Array("x\n".utf8), method: .deflated, timestamp: .apksigDefault)
        }
        #expect {
            try Repacker.write(entries, to: output, alignment: AlignmentPolicy())
        } throws: { error in
            "\(error)" == #"entry "assets/a.txt" would be written twice"#
        }
        #expect(!FileManager.default.fileExists(atPath: output))
        let distinct = try Repacker.write(Array(entries.prefix(2)), to: output, alignment: AlignmentPolicy())
        #expect(distinct.entries.map(\.name) == ["assets/a.txt", "assets/b.txt"])
    }
}
