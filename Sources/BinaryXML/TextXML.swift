/// How `XMLTree.textXML` lays out the text.
public struct TextXMLOptions: Sendable {
    /// Put each element on the line it had in the original source (from the binary's line numbers), padding with
    /// blank lines, so compiled line numbers, aapt dumps and error messages match the original. Otherwise compact.
    public var keepsLineNumbers: Bool = true
    public var indentation: String = "    "
    public init(keepsLineNumbers: Bool = true, indentation: String = "    ") {
        self.keepsLineNumbers = keepsLineNumbers; self.indentation = indentation
    }
}

extension XMLTree {
    /// The document as readable text XML, the way apktool shows it: `android:` attributes by name, references as
    /// `@string/app_name` / `@android:style/Theme` / `?android:attr/textColor`, enum and flag values by their
    /// symbols, typed values in Android's text forms (`true`, `0x10`, `16.0dip`, `50.0%`, `#ff00ff00`).
    ///
    /// Strings that would otherwise read back as another type are quoted or escaped the way aapt understands
    /// (`\@`, `\?`, `"12"`), so `XMLTree(textXML:)` gives back the same values. `resources` (the APK's own table)
    /// names app references; without it they print as `@0x7f…`.
    public func textXML(resources: (any ResourceResolver)? = nil, options: TextXMLOptions = TextXMLOptions()) -> String {
        var printer = TextPrinter(resources: resources, options: options, rawValues: rawValuePolicy)
        printer.out = "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
        for case .element(let e) in nodes { printer.collectStartLines(e) }
        for node in nodes {
            switch node {
            case .element(let e): printer.element(e, depth: 0, scope: [:], inline: false)
            case .text(let t): printer.out += XMLEscaping.text(t.text)
            }
        }
        printer.out += "\n"
        return printer.out
    }
}

private struct TextPrinter {
    let resources: (any ResourceResolver)?
    let options: TextXMLOptions
    var out = ""
    var line = 1
    var generatedPrefixes = 0
    static let maximumLineGap = 10_000

    /// The compiler's convention for the document (from `XMLTree.rawValuePolicy`): which attributes it types.
    let rawValues: XMLTree.RawValuePolicy
    let values: AttributeValueText
    /// Compiles each printed value back, to find the values whose binary form the text alone would not give back.
    let compiler: TextXMLCompiler

    init(resources: (any ResourceResolver)?, options: TextXMLOptions, rawValues: XMLTree.RawValuePolicy) {
        self.resources = resources; self.options = options; self.rawValues = rawValues
        values = AttributeValueText(resources: resources, rawValues: rawValues)
        compiler = TextXMLCompiler(fileName: "", resources: resources, rawValues: rawValues)
    }

    /// Start lines of all elements in document order, and how many start tags are printed: with them, a line break
    /// is taken only where the next element can still reach its own line.
    var startLines: [Int] = []
    var printedElements = 0
    var nextStartLine: Int? { printedElements < startLines.count ? startLines[printedElements] : nil }

    mutating func collectStartLines(_ element: XMLTree.Element, depth: Int = 0) {
        startLines.append(Int(element.lineNumber))
        guard depth < XMLTree.maximumDepth else { return }
        for case .element(let child) in element.children { collectStartLines(child, depth: depth + 1) }
    }

    /// Moves to the `target` line, indented by `depth`. Keeping line numbers, it pads with blank lines up to the
    /// target, stays on the current line when that is the target (or when breaking would push the next element past
    /// its line), and otherwise breaks the line for readability. Compact: always a new line.
    mutating func place(at target: UInt32, depth: Int, inline: Bool, isEndTag: Bool = false) {
        if inline { return }
        if options.keepsLineNumbers {
            let target = Int(target)
            let next = nextStartLine ?? Int.max
            if target > line, target - line <= Self.maximumLineGap, !isEndTag || next >= target {
                out += String(repeating: "\n", count: target - line)
                line = target
            } else if (target == line && !isEndTag) || next <= line {
                return
            } else {
                out += "\n"; line += 1
            }
        } else {
            out += "\n"; line += 1
        }
        out += String(repeating: options.indentation, count: depth)
    }

    mutating func element(_ element: XMLTree.Element, depth: Int, scope outer: [String: String], inline: Bool) {
        var scope = outer
        // A namespace node may repeat one around the same element (aapt1 wrote such files): XML cannot name an
        // attribute twice, and the repeat changes no name, so it is printed once.
        var declarations: [(String, String)] = []
        for namespace in element.namespaceDeclarations where !declarations.contains(where: { $0 == (namespace.prefix, namespace.uri) }) {
            declarations.append((namespace.prefix, namespace.uri))
        }
        for (prefix, uri) in declarations { scope[uri] = prefix }
        var undeclared: [String] = []
        func prefix(for uri: String, forAttribute: Bool = false) -> String {
            // Attributes never take the default namespace, so one declared as xmlns="…" needs a named prefix.
            if let p = scope[uri], !(forAttribute && p.isEmpty) { return p }
            // A namespace used but never declared (some obfuscators strip declarations): declare it here.
            let wellKnown = [XMLTree.androidNamespace: "android", XMLTree.autoNamespace: "app", XMLTree.toolsNamespace: "tools"]
            var p = wellKnown[uri] ?? "ns\(generatedPrefixes)"
            if wellKnown[uri] == nil { generatedPrefixes += 1 }
            if scope.values.contains(p) { p = "ns\(generatedPrefixes)"; generatedPrefixes += 1 }
            scope[uri] = p; declarations.append((p, uri))
            if uri != XMLTree.toolsNamespace { undeclared.append(p) }
            return p
        }
        func qualified(_ name: String, _ namespace: String?, isAttribute: Bool = false) -> String {
            guard let namespace else { return name }
            let p = prefix(for: namespace, forAttribute: isAttribute)
            return p.isEmpty ? name : p + ":" + name
        }
        let name = qualified(element.name, element.namespace)
        var attributeText = ""
        var recordedIDs: [(String, UInt32)] = [], recordedValues: [(String, ResourceValue.DataType, UInt32)] = []
        for attribute in element.attributes {
            let localName = attributeName(attribute)
            let qualifiedName = qualified(localName, attribute.namespace, isAttribute: true)
            // Where the compiler would not find this ID from the name (an unusual namespace URI, none, a private
            // attribute), the ID goes in tools:attributeIDs so the round trip keeps it.
            let resolved: UInt32?
            switch XMLTree.attributeResolution(namespace: attribute.namespace, name: localName, resources: resources) {
            case .resolved(let id): resolved = id
            case .noID: resolved = nil
            case .unknownApp, .unknownFramework: resolved = 0
            }
            let recordedID = resolved != attribute.resourceID ? attribute.resourceID ?? 0 : nil
            if let recordedID { recordedIDs.append((qualifiedName, recordedID)) }
            let text = values.text(of: attribute)
            // A typed value in a form no text compiles to (a boolean stored as 1, an enum stored as hex, as some
            // build tools write them): the exact value goes in tools:typedValues.
            if case .typed(let type, let data) = attribute.value,
               (try? compiler.attribute(namespace: attribute.namespace, name: localName, qualifiedName: qualifiedName, text: text,
                                        line: 0, recordedID: recordedID))?.value != attribute.value {
                recordedValues.append((qualifiedName, type, data))
            }
            attributeText += " " + qualifiedName + "=\"" + XMLEscaping.attribute(text) + "\""
        }
        if !recordedIDs.isEmpty {
            attributeText += " " + qualified(XMLTree.attributeIDsName, XMLTree.toolsNamespace, isAttribute: true) + "=\""
                + XMLEscaping.attribute(XMLTree.attributeIDsText(recordedIDs)) + "\""
        }
        if !recordedValues.isEmpty {
            attributeText += " " + qualified(XMLTree.typedValuesName, XMLTree.toolsNamespace, isAttribute: true) + "=\""
                + XMLEscaping.attribute(XMLTree.typedValuesText(recordedValues)) + "\""
        }
        if !undeclared.isEmpty {
            attributeText += " " + qualified(XMLTree.undeclaredNamespacesName, XMLTree.toolsNamespace, isAttribute: true) + "=\""
                + XMLEscaping.attribute(undeclared.joined(separator: " ")) + "\""
        }
        printedElements += 1
        place(at: element.lineNumber, depth: depth, inline: inline)
        // A line the layout cannot give the element (0 for the uses-sdk aapt adds; one behind the lines already
        // written) is recorded.
        if options.keepsLineNumbers, Int(element.lineNumber) != line {
            attributeText += " " + qualified(XMLTree.lineNumberName, XMLTree.toolsNamespace, isAttribute: true) + "=\"\(element.lineNumber)\""
        }
        out += "<" + name
        for (p, uri) in declarations { out += " xmlns" + (p.isEmpty ? "" : ":" + p) + "=\"" + XMLEscaping.attribute(uri) + "\"" }
        out += attributeText
        if element.children.isEmpty { out += "/>"; return }
        out += ">"
        // Mixed content: the compiler drops text of literal white space only and keeps the first character of a
        // text's trailing literal white space, so line padding may go between elements, or after text written to
        // end in literal white space.
        var paddable = !inline
        for child in element.children {
            switch child {
            case .element(let e):
                self.element(e, depth: depth + 1, scope: scope, inline: !paddable)
                paddable = !inline
            case .text(let t):
                let (text, endsInLiteralSpace) = XMLEscaping.textNode(t.text)
                out += text
                line += text.utf8.reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
                paddable = !inline && endsInLiteralSpace
            }
        }
        if paddable { place(at: element.endLineNumber, depth: depth, inline: false, isEndTag: true) }
        out += "</" + name + ">"
    }

    /// The attribute's name from its resource ID when the ID is known (as apktool does: obfuscators rename the
    /// name strings but must keep the IDs Android reads), else the name string.
    func attributeName(_ attribute: XMLTree.Attribute) -> String {
        guard let id = attribute.resourceID, attribute.namespace != nil else { return attribute.name }
        if let resources, UInt8(id >> 24) == resources.packageID, let name = resources.resourceName(for: id),
           name.type == "attr" || name.type == "^attr-private" { return name.name }
        if UInt8(id >> 24) == 0x01, let name = FrameworkResources.name(for: id), name.type == "attr" { return name.name }
        return attribute.name
    }
}

/// The text decoded XML gives an attribute's value: shared by the printer and the compiler, which applies a value
/// recorded in `tools:typedValues` only while the attribute still has exactly this text.
struct AttributeValueText {
    let resources: (any ResourceResolver)?
    let rawValues: XMLTree.RawValuePolicy

    func text(of attribute: XMLTree.Attribute) -> String {
        let info = attribute.resourceID.flatMap { XMLTree.attributeInfo(id: $0, resources: resources) }
        // What the compiler will try for this attribute: aapt2 types an attribute without an ID only as a reference.
        let typesOnlyReferences = rawValues == .stringsOnlyUntypedAsText || rawValues == .all
        let format: AttributeFormat = attribute.resourceID == nil && typesOnlyReferences ? [.reference, .string] : info?.format ?? .any
        let symbols = info?.symbols ?? []
        switch attribute.value {
        case .string(let s):
            return Self.escapeString(s, format: format, symbols: symbols)
        case .typed(let type, let data):
            switch type {
            case .reference, .dynamicReference, .attribute, .dynamicAttribute:
                let isAttribute = type == .attribute || type == .dynamicAttribute
                let text = reference(data, sigil: isAttribute ? "?" : "@")
                // The source text aapt kept ("@+id/x", "@*android:style/x", "@com.example:string/x"), when it
                // resolves to the same resource: the compiler keeps it as the raw text again.
                if let raw = attribute.rawValue, raw != text, raw.trimmingWhitespace().first == text.first, !raw.contains("\\"),
                   (try? TextXMLCompiler(fileName: "", resources: resources, rawValues: rawValues)
                       .compileValue(raw, format: .reference, symbols: [], attribute: "", line: 0).0) == attribute.value {
                    return raw
                }
                return text
            default:
                // The source text, when the value kept it and it compiles to the same value ("007", "0x0001", "1.50"):
                // an app may read the raw string, and aapt keeps it.
                if let raw = attribute.rawValue, let first = raw.trimmingWhitespace().first, first != "@", first != "?",
                   !raw.contains("\\"), !raw.contains("\""), ValueText.parseTyped(raw, format: format, symbols: symbols) == attribute.value {
                    return raw
                }
                return ValueText.text(of: type, data: data, attribute: info) ?? "0x" + String(data, radix: 16)
            }
        }
    }

    func reference(_ id: UInt32, sigil: String) -> String {
        if id == 0 { return sigil == "@" ? "@null" : "?0x00000000" }
        let package = UInt8(id >> 24)
        if let resources, package == resources.packageID, let name = resources.resourceName(for: id) {
            return sigil + name.type + "/" + name.name
        }
        if package == 0x01, let name = FrameworkResources.name(for: id) { return sigil + "android:" + name.type + "/" + name.name }
        let hex = String(id, radix: 16)
        return sigil + "0x" + String(repeating: "0", count: max(0, 8 - hex.count)) + hex
    }

    /// aapt-level escaping of a string value (before XML escaping): `AAPTEscaping.escape`, and a string that
    /// would parse as a typed value is wrapped in quotes.
    static func escapeString(_ s: String, format: AttributeFormat, symbols: [AttributeInfo.Symbol]) -> String {
        let body = AAPTEscaping.escape(s, apostrophes: false)
        return ValueText.parseTyped(s, format: format, symbols: symbols) != nil ? "\"" + body + "\"" : body
    }
}
