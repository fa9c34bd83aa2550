#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import APKCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import BinaryXML

/// `res/values*/strings.xml` as text: writing the string values of one configuration the way apktool does, and
/// reading an edited file back with aapt's rules for string values.
public enum StringsXML {
    /// One `<string name="…">` of a strings.xml file.
    public struct Item: Sendable, Equatable {
        public var name: String
        public var value: String
        /// Line in the file (for messages); 0 when not read from a file.
        public var line: Int
        /// Whether `value` is a reference written as text (`@string/app_name`, `?attr/x`), not a string.
        public var isReference: Bool
        /// The spans when the value is a styled string.
        public var spans: [StyledString.Span]
        public init(name: String, value: String, line: Int = 0, isReference: Bool = false, spans: [StyledString.Span] = []) {
            self.name = name; self.value = value; self.line = line; self.isReference = isReference; self.spans = spans
        }
    }

    /// The text of a strings.xml with `items` in order. A styled string is written with its markup (`<b>…</b>`);
    /// one whose spans have no markup form (they overlap) gets a comment and its plain text, which is left alone
    /// when applied unchanged.
    public static func encode(_ items: [Item]) -> String {
        var out = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<resources>\n"
        for item in items {
            let name = XMLEscaping.attribute(item.name)
            if !item.spans.isEmpty {
                if let markup = StyledString(text: item.value, spans: item.spans).markup {
                    out += "    <string name=\"\(name)\">\(markup)</string>\n"
                    continue
                }
                out += "    <!-- \(item.name) has style spans without a markup form (overlapping, or not named like elements), shown here as plain text -->\n"
            }
            let text = item.isReference ? item.value : escapeValue(item.value)
            out += "    <string name=\"\(name)\">\(XMLEscaping.text(text))</string>\n"
        }
        out += "</resources>\n"
        return out
    }

    /// aapt-level escaping so `parse` returns `value` exactly: backslashes, quotes and apostrophes, newlines and tabs,
    /// a leading `@`/`?`; text whose spaces aapt would collapse (leading, trailing or repeated) goes in double quotes.
    public static func escapeValue(_ value: String) -> String {
        let body = AAPTEscaping.escape(value, apostrophes: true)
        return needsQuotes(value) ? "\"" + body + "\"" : body
    }

    /// Whether `value` needs double quotes to keep its white space: white space at either end, two spaces in a
    /// row, or white space that collecting turns into a space (anything but space, newline and tab; those two are
    /// escaped). By Characters, as a reader of the text sees them; an all-ASCII value, most of an app's, by its
    /// bytes, which there are the same answer (only "\r\n" is one Character of two ASCII scalars, and white
    /// space either way).
    package static func needsQuotes(_ value: String) -> Bool {
        let ascii = value.utf8.withContiguousStorageIfAvailable { bytes -> Bool? in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            guard let first = bytes.first, let last = bytes.last else { return false }
            if AAPTEscaping.isWhitespace(Unicode.Scalar(first)) || AAPTEscaping.isWhitespace(Unicode.Scalar(last)) { return true }
            var previous: UInt8 = 0
            for byte in bytes {
                if (byte == 0x20 && previous == 0x20) || (0x0B...0x0D).contains(byte) { return true }
                previous = byte
            }
            return false
        }
        if let ascii = ascii ?? nil { return ascii }
        // Two spaces as Characters are two spaces as bytes first: the Character search runs only where the bytes are.
        var previous: UInt8 = 0
        let twoSpaceBytes = value.utf8.contains { byte in defer { previous = byte }; return byte == 0x20 && previous == 0x20 }
        return value.first?.isWhitespace == true || value.last?.isWhitespace == true || (twoSpaceBytes && value.contains("  "))
            || value.unicodeScalars.contains { $0 != " " && $0 != "\n" && $0 != "\t" && AAPTEscaping.isWhitespace($0) }
    }

    /// Reads the `<string>` items of a strings.xml. Values follow aapt's `collectString`: white space runs collapse
    /// to one space and the ends are trimmed (except inside double quotes), backslash escapes (`\n`, `\t`, `\'`,
    /// `\"`, `\@`, `\uXXXX`…) are applied. `<xliff:g>` wrappers keep their text. Other markup, `<plurals>`,
    /// `<string-array>` and non-string resources throw: apkpatch changes plain string values only.
    public static func parse(_ text: String, fileName: String) throws -> [Item] {
        var parser = TextXMLParser(text: text, fileName: fileName)
        let root: TextXMLParser.Element
        do { root = try parser.parse() } catch let error as BinaryXMLError {
            throw ResourceTableError(.badValuesFile, error.message)
        }
        guard root.qualifiedName == "resources" else {
            throw ResourceTableError(.badValuesFile, "\(fileName):\(root.line): the root element is <\(root.qualifiedName)>, expected <resources>")
        }
        var items: [Item] = []
        for case .element(let element) in root.children {
            guard element.qualifiedName == "string" else {
                throw ResourceTableError(.badValuesFile, "\(fileName):\(element.line): <\(element.qualifiedName)> is not supported in overrides; only <string> values can be changed")
            }
            guard let name = element.attributes.first(where: { $0.qualifiedName == "name" })?.value, !name.isEmpty else {
                throw ResourceTableError(.badValuesFile, "\(fileName):\(element.line): <string> without a name attribute: name the string it changes (<string name=\"app_name\">)")
            }
            if let markup = element.children.first(where: { if case .element(let e) = $0 { return !e.qualifiedName.contains(":") }; return false }),
               case .element(let e) = markup {
                throw ResourceTableError(.badValuesFile, "\(fileName):\(e.line): markup <\(e.qualifiedName)> makes a styled string; apply it as a values file (applyValuesFiles)")
            }
            let raw = ValuesXML.rawText(of: element)
            // An unescaped leading @ or ? makes the value a reference, as in aapt.
            let trimmed = raw.trimmingWhitespace()
            if trimmed.hasPrefix("@") || trimmed.hasPrefix("?") {
                items.append(Item(name: name, value: trimmed, line: element.line, isReference: true))
            } else {
                items.append(Item(name: name, value: try value(of: raw, fileName: fileName, line: element.line), line: element.line))
            }
        }
        return items
    }

    /// aapt's `collectString` with white space not preserved.
    static func value(of raw: String, fileName: String, line: Int) throws -> String {
        do { return try AAPTEscaping.unescape(raw, collapsingWhitespace: true) } catch {
            throw ResourceTableError(.badValuesFile, "\(fileName):\(line): \(error)")
        }
    }
}

extension ResourceTable {
    /// The strings.xml text of every configuration that has string resources: (folder name, e.g. "values-fr", text).
    public func stringsXMLFiles() -> [(directory: String, text: String)] {
        stringConfigurations.map { configuration in
            let items = (stringEntriesByConfiguration.first { $0.0 == configuration }?.1 ?? []).map { entries[$0] }.sorted { $0.id < $1.id }
                .compactMap { entry -> StringsXML.Item? in
                    guard let value = entry.value else { return nil }
                    if let text = value.stringValue { return StringsXML.Item(name: entry.name, value: text, spans: entry.spans) }
                    return referenceText(value).map { StringsXML.Item(name: entry.name, value: $0, isReference: true) }
                }
            return (configuration.valuesDirectoryName, StringsXML.encode(items))
        }
    }

    /// Applies a strings.xml file for the configuration of folder `directory` ("values", "values-fr", …): every
    /// existing item whose value differs is changed, a new name (or a configuration the table lacks) is added.
    /// Returns the names changed or added. A name given twice throws `.duplicate`, a reference to nothing
    /// `.badValuesFile`, bad qualifiers `.unknownQualifier` (with the file and line). See `applyValuesFiles`.
    @discardableResult
    public mutating func applyStringsXML(_ text: String, directory: String, fileName: String) throws -> [String] {
        try applyValuesFiles([(directory, fileName, text)]).map { String($0.split(separator: "/").last ?? "") }
    }
}

extension ManifestSummary {
    /// Fills `label` and `versionName` from the default-configuration strings they refer to (what `aapt dump
    /// badging` prints as application-label and versionName).
    public mutating func resolveReferences(in table: ResourceTable) {
        func defaultString(_ id: UInt32?) -> String? {
            guard let id, let name = table.resourceName(for: id), name.type == "string" else { return nil }
            return table.string(named: name.name)
        }
        if label == nil, let resolved = defaultString(labelResourceID) { label = resolved }
        if versionName == nil, let resolved = defaultString(versionNameResourceID) { versionName = resolved }
    }
}
