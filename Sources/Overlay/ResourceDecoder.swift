import APKCore
import BinaryXML
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ResourceTable
import Unpack

/// `apkpatch unpack --decode`: writes the APK's manifest and every XML resource as readable text (the way apktool shows
/// them) and its values per configuration as `res/values*/strings.xml`, `bools.xml`, `styles.xml`…, ready to be edited and put in a patch
/// directory, where the overlay compiles them back.
public enum ResourceDecoder {
    /// What was written, relative to the output directory.
    public struct Summary: Sendable, Equatable {
        public var files: [String] = []
        public init() {}
    }

    /// Decodes `AndroidManifest.xml`, every binary XML file under `res/` (layouts, drawables, `xml`…; not `raw`) and
    /// the values of every configuration (one file per type, apktool's layout), and what the table declares
    /// (`res/values/public.xml`, `res/values/overlayable.xml`) into `directory` (files are overwritten). Line
    /// numbers of the original source are kept by default, so compile errors and `aapt dump xmltree` line up with
    /// the decoded text.
    @discardableResult
    public static func decodeAll(archive: APKArchive, into directory: String, options: TextXMLOptions = TextXMLOptions()) throws -> Summary {
        try decodeAll(archive: archive, into: directory, options: options, foldsCase: CaseInsensitiveNames.isCaseInsensitive(directory:))
    }

    /// `decodeAll`, with `foldsCase` telling whether a directory's file system folds case (tests stand in one that does).
    package static func decodeAll(archive: APKArchive, into directory: String, options: TextXMLOptions = TextXMLOptions(),
                                  foldsCase: (String) -> Bool?) throws -> Summary {
        // Everything is decoded before the first file is written: a file that does not decode leaves the
        // directory as it was (it may be an unpacked APK the text is meant to go beside), not half decoded.
        var files: [(path: String, text: String)] = []
        let table = try archive.entry(named: "resources.arsc").map { try ResourceTable(bytes: try archive.uncompressedData(of: $0)) }
        for entry in archive.entries {
            let name = entry.name
            guard ResourcePatch.isCompiledXMLPath(name) else { continue }
            let bytes = try archive.uncompressedData(of: entry)
            // Text XML is left alone; aapt2's protobuf XML is not, so the parser's error says what the APK is.
            guard !ResourcePatch.isTextXML(bytes) || XMLTree.isProtobufXML(bytes) else { continue }
            do { files.append((name, try XMLTree(binaryXML: bytes).textXML(resources: table, options: options))) } catch let error as BinaryXMLError {
                throw BinaryXMLError(error.code, "\(name): \(error.message)")
            }
        }
        if let table {
            for (folder, text) in table.stringsXMLFiles() { files.append(("res/\(folder)/strings.xml", text)) }
            for (folder, fileName, text) in table.valuesFiles() + table.declarationFiles() { files.append(("res/\(folder)/\(fileName)", text)) }
        }
        var summary = Summary()
        if let kind = FileKind(atPath: directory), kind != .directory {
            throw FileError(path: directory, operation: "decode into", errno: ENOTDIR, detail: "it is a file, not a directory; choose another output directory")
        }
        // A name Android reads may still be no file's (a part over NAME_MAX): refused before the first write.
        for file in files {
            if let problem = EntryName.fileNameProblem(with: Array(file.path.utf8)) {
                throw UnpackError.unsafeEntryName(path: archive.label, name: file.path, reason: problem)
            }
        }
        // Decoded names that differ only in case (obfuscated res/a.xml and res/A.xml) are one file where case is
        // folded: refused there, as unpack refuses them, rather than one overwriting the other.
        if foldsCase(nearestExistingDirectory(of: directory)) == true, let collision = CaseInsensitiveNames.firstCollision(in: files.lazy.map(\.path)) {
            throw UnpackError.namesDifferOnlyInCase(path: archive.label, first: collision.first, second: collision.second,
                                                    components: (collision.firstComponent, collision.secondComponent), directory: directory)
        }
        // The directory is made even when nothing decodes (an APK of assets only): the command said it would be,
        // and `run --patch` given it next finds a patch directory that is empty, not missing.
        try UserFiles.makeDirectories(directory)
        for file in files {
            try write(Array(file.text.utf8), to: file.path, in: directory)
            summary.files.append(file.path)
        }
        return summary
    }

    /// `directory`, or the closest folder above it that exists (decode creates the rest): the file system the
    /// decoded files will be on.
    private static func nearestExistingDirectory(of directory: String) -> String {
        var path = directory.isEmpty ? "." : directory
        while FileKind(atPath: path) != .directory {
            let parent = path.deletingLastPathComponent
            if parent == path || parent.isEmpty { return "." }
            path = parent
        }
        return path
    }

    private static func write(_ bytes: [UInt8], to relativePath: String, in directory: String) throws {
        // Entry names were validated by APKArchive (no "..", no absolute paths), so joining is safe.
        try UserFiles.write(bytes, to: directory.appendingPathComponent(relativePath))
    }
}
