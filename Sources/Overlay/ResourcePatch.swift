import APKCore
import BinaryXML
import ResourceTable

/// Resource edits from a patch directory: text XML files compiled to binary, and `res/values*/strings.xml` overrides
/// applied to `resources.arsc`.
public enum ResourcePatch {
    /// Whether `bytes` are text (not Android binary XML, whose first chunk type is 0x0003).
    public static func isTextXML(_ bytes: [UInt8]) -> Bool {
        !(bytes.count >= 8 && bytes[0] == 0x03 && bytes[1] == 0x00 && bytes[2] == 0x08 && bytes[3] == 0x00)
    }

    /// Whether a patch path is a strings override (`res/values/strings.xml`, `res/values-fr/strings.xml`…), which
    /// changes resources.arsc instead of becoming a file in the APK.
    public static func isStringsOverride(path: String) -> Bool {
        let parts = path.componentsAtSlashBytes(keepingEmpty: true)
        return parts.count == 3 && parts[0].sameUTF8(as: "res") && isValuesFolder(parts[1]) && parts[2].sameUTF8(as: "strings.xml")
    }

    /// `values` or `values-…`, by bytes (the paths here are compared as the file system and aapt2 name them: a
    /// Character would join a combining mark to the slash, dash or dot before it).
    static func isValuesFolder(_ folder: String) -> Bool { folder.sameUTF8(as: "values") || folder.javaHasPrefix("values-") }

    /// Whether a patch path is an XML resource file that the APK stores compiled (`AndroidManifest.xml`, `res/**.xml`
    /// outside `res/values*`, `res/raw`).
    public static func isCompiledXMLPath(_ path: String) -> Bool {
        if path.sameUTF8(as: "AndroidManifest.xml") { return true }
        let parts = path.componentsAtSlashBytes()
        guard parts.count >= 3, parts[0].sameUTF8(as: "res"), path.javaHasSuffix(".xml") else { return false }
        return !(isValuesFolder(parts[1]) || parts[1].sameUTF8(as: "raw") || parts[1].javaHasPrefix("raw-"))
    }

    /// Compiles text XML (`AndroidManifest.xml`, `res/xml/…`) to binary XML. With the `original` binary file, the
    /// output keeps its string encoding (UTF-8/UTF-16) and raw-value convention; `resources` (the APK's table)
    /// resolves app references and attributes. Errors name `path` and the line.
    public static func compilingXML(textXML: String, path: String, original: [UInt8]?, resources: ResourceTable?) throws -> [UInt8] {
        let originalTree = try original.map { try XMLTree(binaryXML: $0) }
        let tree = try XMLTree(textXML: textXML, fileName: path, resources: resources,
                               usesUTF8Strings: originalTree?.usesUTF8Strings ?? true,
                               rawValues: originalTree?.rawValuePolicy ?? .untypedAndStrings)
        return try tree.binaryXML()
    }

    /// Applies strings overrides (`path` like `res/values-fr/strings.xml`, text) to `resourcesARSC`. Returns the new
    /// table bytes (the input itself when nothing changed) and the changed strings as `values-fr/greeting`.
    /// New names or configurations throw `ResourceTableError` (`.addingNotSupported`) naming the file and line.
    public static func applyingStringOverrides(_ files: [(path: String, text: String)], to resourcesARSC: [UInt8]) throws
        -> (bytes: [UInt8], changed: [String]) {
        var table = try ResourceTable(bytes: resourcesARSC)
        var changed: [String] = []
        for (path, text) in files.sorted(by: { $0.path < $1.path }) {
            guard isStringsOverride(path: path) else {
                throw ResourceTableError(.badValuesFile, "\(path) is not a res/values*/strings.xml file")
            }
            let directory = path.componentsAtSlashBytes(keepingEmpty: true)[1]
            changed += try table.applyStringsXML(text, directory: directory, fileName: path).map { "\(directory)/\($0)" }
        }
        return (try table.encoded(), changed)
    }
}

extension ResourcePatch {
    /// Resource types that live in files under `res/<type>[-qualifiers]/` (every type aapt2 accepts as a folder,
    /// `values` aside).
    public static let fileResourceTypes: Set<String> = [
        "anim", "animator", "color", "drawable", "font", "interpolator", "layout", "menu", "mipmap", "navigation",
        "raw", "transition", "xml",
    ]

    /// A file under `res/` that becomes a resource: its type, name, configuration and the entry path aapt2 gives it.
    public struct ResourceFile: Sendable, Equatable {
        public var type: String
        public var name: String
        public var configuration: ResourceConfiguration
        /// `res/<type>[-<qualifiers as aapt2 writes them>]/<file name>`, e.g. `res/drawable-hdpi-v4/icon.png`.
        public var entryPath: String
    }

    /// Whether `path` is in a `res/values*` folder.
    public static func isValuesPath(_ path: String) -> Bool {
        let parts = path.componentsAtSlashBytes()
        return parts.count == 3 && parts[0].sameUTF8(as: "res") && isValuesFolder(parts[1])
    }

    /// Reads a `res/<type>[-<qualifiers>]/<name>.<ext>` path (not `res/values*`). Throws `.unknownType` for a
    /// folder type Android does not know, `.unknownQualifier` for bad qualifiers, `.badValuesFile` for a file name
    /// that is not a resource name.
    public static func resourceFile(at path: String) throws -> ResourceFile {
        let parts = path.componentsAtSlashBytes(keepingEmpty: true)
        guard parts.count == 3, parts[0].sameUTF8(as: "res"), !parts[1].isEmpty, !parts[2].isEmpty else {
            throw ResourceTableError(.unknownType, "\(path): resource files go directly in a res/<type>[-<qualifiers>]/ folder (one level, e.g. res/xml/config.xml)")
        }
        let folder = parts[1]
        let type = String(decoding: folder.utf8.prefix { $0 != UInt8(ascii: "-") }, as: UTF8.self)
        guard fileResourceTypes.contains(type) else {
            throw ResourceTableError(.unknownType, "\(path): '\(type.cappedForMessage)' is not a resource type Android knows (folders: \(fileResourceTypes.sorted().joined(separator: ", ")), values)")
        }
        let qualifiers = folder.utf8.count > type.utf8.count ? String(decoding: folder.utf8.dropFirst(type.utf8.count + 1), as: UTF8.self) : ""
        let configuration: ResourceConfiguration
        do { configuration = try ResourceConfiguration(qualifiers: qualifiers) } catch let error as ResourceTableError {
            throw ResourceTableError(error.code, "\(path): \(error.message)")
        }
        let fileName = parts[2]
        var name = fileName
        if let nine = name.droppingJavaSuffix(".9.png") { name = nine }
        else if let dot = name.utf8.firstIndex(of: UInt8(ascii: ".")) { name = String(decoding: name.utf8[..<dot], as: UTF8.self) }
        guard let first = name.unicodeScalars.first, first == "_" || first.properties.isAlphabetic,
              name.unicodeScalars.allSatisfy({ $0 == "_" || $0 == "." || $0.properties.isAlphabetic || ("0"..."9").contains($0) }) else {
            throw ResourceTableError(.badValuesFile, "\(path): '\(name.cappedForMessage)' is not a valid resource name (letters, digits and _, starting with a letter or _)")
        }
        let directory = configuration.qualifiers.isEmpty ? type : type + "-" + configuration.qualifiers
        return ResourceFile(type: type, name: name, configuration: configuration, entryPath: "res/\(directory)/\(fileName)")
    }
}

extension ResourcePatch {
    /// The names of `@+id/name` references in text XML, in order of first appearance.
    public static func newIDNames(in text: String) -> [String] {
        var names: [String] = []
        var seen = Set<String>()
        let marker = Array("@+id/".utf8)
        let bytes = Array(text.utf8)
        var index = 0
        while index + marker.count <= bytes.count {
            guard bytes[index] == marker[0], Array(bytes[index..<(index + marker.count)]) == marker else { index += 1; continue }
            index += marker.count
            let start = index
            while index < bytes.count, bytes[index] < 0x80, let c = Optional(Character(Unicode.Scalar(bytes[index]))),
                  c.isLetter || c.isNumber || c == "_" || c == "." { index += 1 }
            let name = String(decoding: bytes[start..<index], as: UTF8.self)
            if !name.isEmpty, seen.insert(name).inserted { names.append(name) }
        }
        return names
    }
}
