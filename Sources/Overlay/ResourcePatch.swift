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
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        return parts.count == 3 && parts[0] == "res" && (parts[1] == "values" || parts[1].hasPrefix("values-")) && parts[2] == "strings.xml"
    }

    /// Whether a patch path is an XML resource file that the APK stores compiled (`AndroidManifest.xml`, `res/**.xml`
    /// outside `res/values*`, `res/raw`).
    public static func isCompiledXMLPath(_ path: String) -> Bool {
        if path == "AndroidManifest.xml" { return true }
        let parts = path.split(separator: "/")
        guard parts.count >= 3, parts[0] == "res", path.hasSuffix(".xml") else { return false }
        return !(parts[1] == "values" || parts[1].hasPrefix("values-") || parts[1] == "raw" || parts[1].hasPrefix("raw-"))
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
            let directory = String(path.split(separator: "/")[1])
            changed += try table.applyStringsXML(text, directory: directory, fileName: path).map { "\(directory)/\($0)" }
        }
        return (try table.encoded(), changed)
    }
}
