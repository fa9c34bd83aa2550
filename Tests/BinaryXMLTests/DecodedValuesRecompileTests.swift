import APKCore
import Foundation
@testable import ResourceTable
import Testing
import TestSupport

/// Every value `decode` writes compiles back to the very value the table holds, checked by compiling all of them
/// and not only those whose text changed: an edit of one item recompiles its whole style, array or plurals from the
/// decoded text, so an item whose text is not exact would change silently beside the edit. Over the real-world
/// corpus, framework-res and fixtures built by aapt and aapt2.
@Suite(.removesTemporaryDirectories) struct DecodedValuesRecompileTests {
    /// The resources (`values-fr/bool/name`) whose decoded text compiles to something else than the table holds.
    static func recompiledDifferently(_ tableBytes: [UInt8]) throws -> [String] {
        let table = try ResourceTable(bytes: tableBytes)
        var files = table.valuesFiles() + table.declarationFiles()
        for (folder, text) in table.stringsXMLFiles() { files.append((folder, "strings.xml", text)) }
        var forced = table
        forced.recompilesUnchangedText = true
        return try forced.applyValuesFiles(files.map { ($0.directory, "res/\($0.directory)/\($0.fileName)", $0.text) })
    }

    static func table(of apk: String) throws -> [UInt8]? {
        let archive = try APKArchive(path: apk)
        return try archive.entry(named: "resources.arsc").map { try archive.uncompressedData(of: $0) }
    }

    /// Values known to come back otherwise, with the reason (RealWorldResourceTests.knownLosses says more).
    static let knownDifferences: [String: String] = [:]

    /// Archives refused before their resources are read (RealWorldResourceTests.refusedArchives and
    /// refusedDecodes): janus.apk, and apktool's two APKs with entry names that climb out with `..`.
    static let refusedArchives: Set<String> = ["janus.apk", "issue1498.apk", "issue1589.apk"]

    @Test(arguments: RealWorldCorpus.apps.filter { !refusedArchives.contains($0.name) })
    func realWorldValuesRecompileToThemselves(_ apk: RealWorldCorpus.APK) throws {
        guard let bytes = try Self.table(of: try apk.fetchedPath()) else { return }
        let different = try Self.recompiledDifferently(bytes)
        if let reason = Self.knownDifferences[apk.name] {
            withKnownIssue(Comment(rawValue: reason)) {
                #expect(different.isEmpty, "\(apk): \(different.count) values recompile differently: \(different.prefix(20))")
            }
        } else {
            #expect(different.isEmpty, "\(apk): \(different.count) values recompile differently: \(different.prefix(20))")
        }
    }

    @Test func frameworkValuesRecompileToThemselves() throws {
        let bytes = try #require(try Self.table(of: TestSupport.frameworkRes))
        let different = try Self.recompiledDifferently(bytes)
        #expect(different.isEmpty, "\(different.count) values recompile differently: \(different.prefix(40))")
    }

    @Test func fixtureValuesRecompileToThemselves() throws {
        let dir = try TestSupport.makeTemporaryDirectory("values-recompile")
        defer { try? FileManager.default.removeItem(at: dir) }
        for apk in [try ValuesResourcesTests.fixture().build(in: dir), try StyledStringsTests.fixture().build(in: dir),
                    try StyledStringsTests.aapt2APK(values: DeclarationsDecodingTests.values, in: dir)] {
            let bytes = try #require(try Self.table(of: apk))
            let different = try Self.recompiledDifferently(bytes)
            #expect(different.isEmpty, "\(apk): \(different)")
        }
    }
}

