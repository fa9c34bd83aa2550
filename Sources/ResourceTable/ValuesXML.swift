import APKCore
import BinaryXML

/// `res/values*/*.xml` as text, both ways, for every value type: what `decode` writes (apktool's layout: one file
/// per type, `bools.xml`, `colors.xml`, `plurals.xml`, `arrays.xml`, `styles.xml`, `attrs.xml`, `ids.xml`…, with
/// references by name) and what `run` applies from a patch directory (any file name; each element says its type).
///
/// A resource whose text is the same as what the table holds is left alone, so decoding then applying unchanged
/// files changes nothing; a changed or new one is compiled the way aapt compiles values.
public enum ValuesXML {
    /// One element of a values file, as text: the unit that is compared (unchanged or not) and compiled.
    struct Node: Sendable {
        var tag: String
        /// (name, value) pairs in document order.
        var attributes: [(String, String)] = []
        /// Character data with aapt's escapes still in it (`\n`, `\'`, quotes), trimmed; nil when there are children.
        var text: String?
        var children: [Node] = []
        var line = 0
        /// The value when the element holds markup (`<b>`, `<font …>`): a styled string. `text` then holds the
        /// escaped plain text (what is written when the spans have no markup form).
        var styled: StyledString?

        func attribute(_ name: String) -> String? { attributes.first { $0.0 == name }?.1 }

        /// Same tag, attributes (in any order), text (or styled value) and children: what "unchanged" means.
        func isSame(as other: Node) -> Bool {
            if styled != nil || other.styled != nil {
                guard let mine = styled, let theirs = other.styled, mine.isSame(as: theirs) else { return false }
            } else if (text ?? "") != (other.text ?? "") {
                return false
            }
            guard tag == other.tag, children.count == other.children.count, attributes.count == other.attributes.count else { return false }
            let mine = attributes.sorted { $0.0 < $1.0 }, theirs = other.attributes.sorted { $0.0 < $1.0 }
            guard zip(mine, theirs).allSatisfy({ $0.0 == $1.0 && $0.1 == $1.1 }) else { return false }
            return zip(children, other.children).allSatisfy { $0.isSame(as: $1) }
        }
    }

    /// Resource types Android knows (aapt2's `ResourceType`), for `<item type="…">`.
    public static let resourceTypes: Set<String> = [
        "anim", "animator", "array", "attr", "bool", "color", "dimen", "drawable", "font", "fraction", "id", "integer",
        "interpolator", "layout", "menu", "mipmap", "navigation", "plurals", "raw", "string", "style", "transition", "xml",
    ]

    /// Value types with an element of their own, and the formats their text may take.
    static let simpleElements: [String: AttributeFormat] = [
        "bool": [.reference, .boolean], "integer": [.reference, .integer], "color": [.reference, .color],
        "dimen": [.reference, .dimension], "fraction": [.reference, .fraction],
    ]
    static let formatNames: [(String, AttributeFormat)] = [
        ("reference", .reference), ("string", .string), ("integer", .integer), ("boolean", .boolean), ("color", .color),
        ("float", .float), ("dimension", .dimension), ("fraction", .fraction), ("enum", .enumeration), ("flags", .flags),
    ]
    /// `ResTable_map` names of a plurals bag (`ATTR_OTHER` … `ATTR_MANY`), of an attr's format, range and of
    /// array items (`Res_MAKEARRAY`).
    static let quantities: [(String, UInt32)] = [
        ("other", 0x0100_0004), ("zero", 0x0100_0005), ("one", 0x0100_0006), ("two", 0x0100_0007), ("few", 0x0100_0008), ("many", 0x0100_0009),
    ]
    static let attrType: UInt32 = 0x0100_0000, attrMin: UInt32 = 0x0100_0001, attrMax: UInt32 = 0x0100_0002
    static let arrayItem: UInt32 = 0x0200_0000
    /// aapt2 keys array items `ATTR_MIN + index` instead (its TableFlattener); Android reads either in order.
    static let aapt2ArrayItem: UInt32 = 0x0100_0001

    /// The file apktool writes a type's values to: `strings.xml`, `bools.xml`, `plurals.xml`, `arrays.xml`…
    public static func fileName(forType type: String) -> String { type + (type.hasSuffix("s") ? "" : "s") + ".xml" }

    static func formatText(_ format: AttributeFormat) -> String {
        formatNames.filter { format.contains($0.1) && $0.1 != .enumeration && $0.1 != .flags }.map(\.0).joined(separator: "|")
    }

    static func format(named text: String) -> AttributeFormat? {
        var format: AttributeFormat = []
        for part in text.split(separator: "|") {
            guard let known = formatNames.first(where: { $0.0 == part.trimmingWhitespace() }) else { return nil }
            format.insert(known.1)
        }
        return format
    }

    // MARK: writing

    static func encode(_ nodes: [Node]) -> String {
        var out = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<resources>\n"
        func write(_ node: Node, indent: String) {
            out += indent + "<" + node.tag
            for (name, value) in node.attributes { out += " \(name)=\"\(XMLEscaping.attribute(value))\"" }
            if let markup = node.styled?.markup {
                out += ">" + markup + "</" + node.tag + ">\n"
            } else if let text = node.text, !text.isEmpty {
                out += ">" + XMLEscaping.text(text) + "</" + node.tag + ">\n"
            } else if node.children.isEmpty {
                out += " />\n"
            } else {
                out += ">\n"
                for child in node.children { write(child, indent: indent + "    ") }
                out += indent + "</" + node.tag + ">\n"
            }
        }
        for node in nodes { write(node, indent: "    ") }
        return out + "</resources>\n"
    }

    // MARK: reading

    /// One resource given by a values file.
    struct Item {
        var type: String
        var name: String
        var node: Node
        var fileName: String
        var configuration: ResourceConfiguration
        var place: String { "\(fileName):\(node.line)" }
    }

    static func node(from element: TextXMLParser.Element, fileName: String) throws -> Node {
        var node = Node(tag: element.qualifiedName, attributes: element.attributes.map { ($0.qualifiedName, $0.value) }, line: element.line)
        // Markup inside a value (<b>, <xliff:g>) is part of the value; in other elements, children are elements.
        if ["item", "string", "macro"].contains(element.qualifiedName) {
            if let styled = try StyledString.parse(element, fileName: fileName) {
                node.styled = styled
                node.text = StringsXML.escapeValue(styled.text)
            } else {
                node.text = rawText(of: element).trimmingWhitespace()
            }
            return node
        }
        var text = ""
        for child in element.children {
            switch child {
            case .text(let t, _, _): text += t
            case .element(let e): node.children.append(try self.node(from: e, fileName: fileName))
            }
        }
        if node.children.isEmpty { node.text = text.trimmingWhitespace() }
        return node
    }

    /// The character data of a value without spans, and of the namespaced elements in it (`<xliff:g>`), which
    /// keep their text as in aapt.
    static func rawText(of element: TextXMLParser.Element) -> String {
        var text = ""
        for child in element.children {
            switch child {
            case .text(let t, _, _): text += t
            case .element(let e): text += rawText(of: e)
            }
        }
        return text
    }

    /// Reads the resources of one values file, and its declarations (`<public>`, `<macro>`, `<overlayable>`).
    static func items(_ text: String, fileName: String, configuration: ResourceConfiguration) throws -> (items: [Item], declarations: [Declaration]) {
        var parser = TextXMLParser(text: text, fileName: fileName)
        let root: TextXMLParser.Element
        do { root = try parser.parse() } catch let error as BinaryXMLError { throw ResourceTableError(.badValuesFile, error.message) }
        guard root.qualifiedName == "resources" else {
            throw ResourceTableError(.badValuesFile, "\(fileName):\(root.line): the root element is <\(root.qualifiedName)>, expected <resources>")
        }
        var items: [Item] = []
        var declarations: [Declaration] = []
        for case .element(let element) in root.children {
            let node = try Self.node(from: element, fileName: fileName)
            let place = "\(fileName):\(node.line)"
            if ["eat-comment", "skip"].contains(node.tag) { continue }
            if node.tag == "public-group" {
                declarations += try Declaration.publicGroup(node, fileName: fileName)
                continue
            }
            if let declaration = try Declaration(node, fileName: fileName, configuration: configuration) {
                declarations.append(declaration)
                continue
            }
            if node.tag == "declare-styleable" {
                // A styleable is not stored in the table; the attrs it defines (those with a format) are.
                for child in node.children where child.tag == "attr" && (child.attribute("format") != nil || !child.children.isEmpty) {
                    guard let name = child.attribute("name"), !name.hasPrefix("android:") else { continue }
                    items.append(Item(type: "attr", name: name, node: child, fileName: fileName, configuration: configuration))
                }
                continue
            }
            guard let name = node.attribute("name"), !name.isEmpty else {
                throw ResourceTableError(.badValuesFile, "\(place): <\(node.tag)> without a name attribute")
            }
            let type: String
            switch node.tag {
            case "item":
                guard let given = node.attribute("type") else {
                    throw ResourceTableError(.badValuesFile, "\(place): <item name=\"\(name)\"> needs a type attribute (e.g. type=\"id\")")
                }
                type = given
            case "string", "bool", "integer", "color", "dimen", "fraction", "plurals", "style", "attr": type = node.tag
            case "string-array", "integer-array", "array": type = "array"
            default:
                throw ResourceTableError(.badValuesFile, "\(place): <\(node.tag)> is not a value Android knows (string, bool, integer, color, dimen, fraction, item, plurals, string-array, integer-array, array, style, attr, declare-styleable)")
            }
            guard resourceTypes.contains(type) else {
                throw ResourceTableError(.unknownType, "\(place): '\(type)' is not a resource type Android knows (\(resourceTypes.sorted().joined(separator: ", ")))")
            }
            items.append(Item(type: type, name: name, node: node, fileName: fileName, configuration: configuration))
        }
        return (items, declarations)
    }
}

extension ResourceTable {
    // MARK: decoding

    /// A value as text: a reference by name, a typed value as aapt reads it back, a string with aapt's escapes.
    func valueText(_ value: ResourceValue, attribute: AttributeInfo? = nil) -> String? {
        if let reference = referenceText(value) { return reference }
        switch value {
        case .string(let text): return StringsXML.escapeValue(text)
        case .typed(let type, let data): return ValueText.text(of: type, data: data, attribute: attribute)
        }
    }

    /// The name a style item or attr symbol key is written with: `android:name` for the framework's, the bare name
    /// for this package's.
    func keyName(_ id: UInt32) -> String? {
        if UInt8(id >> 24) == packageID, let name = names[id] { return name.name }
        if id >> 24 == 0x01, let name = FrameworkResources.name(for: id) { return "android:" + name.name }
        return nil
    }

    /// Format and symbols of attribute `id` (this package's, private ones of framework-res included, or the
    /// framework's public ones).
    func attributeInfo(_ id: UInt32) -> AttributeInfo? {
        guard UInt8(id >> 24) == packageID else { return FrameworkResources.attribute(id: id) }
        return entriesByID[id]?.first { entries[$0].type == "attr" || entries[$0].type == "^attr-private" }.map { attributeInfo(of: entries[$0]) }
    }

    /// The element `entry` is written as, or nil when it is not a values resource (a file, a string: strings.xml
    /// has those) or has a value without a text form.
    func valuesNode(for entry: Entry) -> ValuesXML.Node? {
        let nameAttribute = ("name", entry.name)
        if let value = entry.value {
            if case .string(let path) = value, entry.type != "string", path.hasPrefix("res/") { return nil }
            if entry.type == "string" { return nil }
            if entry.type == "id", value == .typed(.intBoolean, 0) || value == .string("") {
                return ValuesXML.Node(tag: "item", attributes: [("type", "id"), nameAttribute], text: "")
            }
            guard let text = valueText(value) else { return nil }
            if let natural = ValuesXML.simpleElements[entry.type], fits(value, natural) {
                return ValuesXML.Node(tag: entry.type, attributes: [nameAttribute], text: text)
            }
            var attributes = [("type", entry.type), nameAttribute]
            if let format = formatName(of: value) { attributes.append(("format", format)) }
            return ValuesXML.Node(tag: "item", attributes: attributes, text: text)
        }
        switch entry.type {
        case "plurals":
            var children: [ValuesXML.Node] = []
            for (key, value) in entry.bag {
                guard let quantity = ValuesXML.quantities.first(where: { $0.1 == key })?.0, let text = valueText(value) else { return nil }
                children.append(ValuesXML.Node(tag: "item", attributes: [("quantity", quantity)], text: text, styled: styled(value, entry.bagSpans[key])))
            }
            return ValuesXML.Node(tag: "plurals", attributes: [nameAttribute], children: children)
        case "array":
            let values = entry.bag.map(\.1)
            guard [ValuesXML.arrayItem, ValuesXML.aapt2ArrayItem].contains(where: { base in
                entry.bag.enumerated().allSatisfy { $0.element.0 == base + UInt32($0.offset) }
            }) else { return nil }
            let tag = !values.isEmpty && values.allSatisfy({ $0.stringValue != nil }) ? "string-array"
                : !values.isEmpty && values.allSatisfy({ if case .typed(.intDecimal, _) = $0 { return true }; return false }) ? "integer-array" : "array"
            var children: [ValuesXML.Node] = []
            for (key, value) in entry.bag {
                guard let text = valueText(value) else { return nil }
                children.append(ValuesXML.Node(tag: "item", text: text, styled: styled(value, entry.bagSpans[key])))
            }
            return ValuesXML.Node(tag: tag, attributes: [nameAttribute], children: children)
        case "style":
            var attributes = [nameAttribute]
            if entry.parent != 0 {
                guard let parent = referenceText(.reference(entry.parent)) else { return nil }
                attributes.append(("parent", parent))
            } else if entry.name.contains(".") {
                attributes.append(("parent", ""))  // no implicit parent from the dotted name
            }
            var children: [ValuesXML.Node] = []
            for (key, value) in entry.bag {
                guard let name = keyName(key), let text = valueText(value, attribute: attributeInfo(key)) else { return nil }
                children.append(ValuesXML.Node(tag: "item", attributes: [("name", name)], text: text))
            }
            return ValuesXML.Node(tag: "style", attributes: attributes, children: children)
        case "attr":
            var attributes = [nameAttribute]
            var format = AttributeFormat.any
            var children: [ValuesXML.Node] = []
            for (key, value) in entry.bag {
                guard case .typed(let dataType, let data) = value else { return nil }
                switch key {
                case ValuesXML.attrType: format = AttributeFormat(rawValue: data)
                case ValuesXML.attrMin: attributes.append(("min", String(Int32(bitPattern: data))))
                case ValuesXML.attrMax: attributes.append(("max", String(Int32(bitPattern: data))))
                case 0x0100_0003: attributes.append(("localization", data == 1 ? "suggested" : String(data)))
                default:
                    guard let name = keyName(key) else { return nil }
                    // The value keeps its notation: aapt types "0x10" as hex and "16" as decimal, whichever the symbol.
                    let hex = String(data, radix: 16)
                    children.append(ValuesXML.Node(tag: format.contains(.flags) ? "flag" : "enum", attributes: [("name", name),
                        ("value", dataType == .intHex ? "0x" + String(repeating: "0", count: max(0, 8 - hex.count)) + hex : String(Int32(bitPattern: data)))]))
                }
            }
            let text = ValuesXML.formatText(format)
            if format != .any, !text.isEmpty { attributes.insert(("format", text), at: 1) }
            return ValuesXML.Node(tag: "attr", attributes: attributes, children: children)
        default:
            return nil
        }
    }

    /// A bag item's styled string when its spans have a markup form (others are written, and compared, as plain
    /// text).
    private func styled(_ value: ResourceValue, _ spans: [StyledString.Span]?) -> StyledString? {
        guard let spans, let text = value.stringValue else { return nil }
        let styled = StyledString(text: text, spans: spans)
        return styled.markup == nil ? nil : styled
    }

    private func fits(_ value: ResourceValue, _ format: AttributeFormat) -> Bool {
        guard case .typed(let type, _) = value else { return format.contains(.string) }
        switch type {
        case .reference, .dynamicReference, .attribute, .dynamicAttribute, .null: return true
        case .intBoolean: return format.contains(.boolean)
        case .intDecimal, .intHex: return format.contains(.integer)
        case .float: return format.contains(.float)
        case .dimension: return format.contains(.dimension)
        case .fraction: return format.contains(.fraction)
        default: return type.isColor && format.contains(.color)
        }
    }

    private func formatName(of value: ResourceValue) -> String? {
        guard case .typed(let type, _) = value else { return "string" }
        switch type {
        case .intBoolean: return "boolean"
        case .intDecimal, .intHex: return "integer"
        case .float: return "float"
        case .dimension: return "dimension"
        case .fraction: return "fraction"
        default: return type.isColor ? "color" : nil
        }
    }

    /// The values files of every configuration except strings (see `stringsXMLFiles`), apktool-style: (folder,
    /// file name, text). Resources without a text form (private types such as `^attr-private`) are left out.
    public func valuesFiles() -> [(directory: String, fileName: String, text: String)] {
        var byFile: [String: [(UInt32, ValuesXML.Node)]] = [:]
        var order: [String] = []
        for entry in entries where !entry.type.hasPrefix("^") {
            guard let node = valuesNode(for: entry) else { continue }
            let key = entry.configuration.valuesDirectoryName + "/" + ValuesXML.fileName(forType: entry.type)
            if byFile[key] == nil { order.append(key) }
            byFile[key, default: []].append((entry.id, node))
        }
        return order.sorted().map { key -> (directory: String, fileName: String, text: String) in
            let slash = key.firstIndex(of: "/")!
            let nodes = byFile[key]!.sorted { $0.0 < $1.0 }.map(\.1)
            return (String(key[..<slash]), String(key[key.index(after: slash)...]), ValuesXML.encode(nodes))
        }
    }

    // MARK: applying

    /// Applies values files (`directory` like "values-fr", the file's name for messages, its text) as one set:
    /// a resource whose text matches the table is left alone, a changed one is changed, a new name gets the next
    /// free ID of its type (a new type, a new configuration as needed). Names may refer to resources any of the
    /// files add, and the file resources the patch adds (`files`: their names get IDs here, after `<public>` ones,
    /// so a `<public>` may give one its ID; their values are the caller's to add). Returns what changed, as
    /// `values-fr/bool/name`.
    /// Throws `ResourceTableError` naming the file and line: `.duplicate` for a name given twice in one
    /// configuration, `.unknownType`/`.unknownQualifier`, `.badValuesFile` for malformed XML, values that do not
    /// parse or references to nothing, `.ambiguousEdit` for style and attr changes with more than one meaning.
    @discardableResult
    public mutating func applyValuesFiles(_ files: [(directory: String, fileName: String, text: String)],
                                          fileResources: [(type: String, name: String)] = []) throws -> [String] {
        var items: [ValuesXML.Item] = []
        var declarations: [ValuesXML.Declaration] = []
        var configurations: [String: ResourceConfiguration] = [:]
        for entry in entries where configurations[entry.configuration.qualifiers] == nil { configurations[entry.configuration.qualifiers] = entry.configuration }
        let fileConfigurations = files.map { (directory, fileName, _) in
            Result { () throws -> ResourceConfiguration in
                guard directory == "values" || directory.hasPrefix("values-") else {
                    throw ResourceTableError(.badValuesFile, "\(fileName): values files live in res/values*/ folders, not \(directory)")
                }
                let given = directory == "values" ? "" : String(directory.dropFirst("values-".count))
                // A configuration the table has under exactly these qualifiers, else the one aapt2 would compile.
                if let existing = configurations[given] { return existing }
                do { return try ResourceConfiguration(qualifiers: given) } catch let error as ResourceTableError {
                    throw ResourceTableError(error.code, "\(fileName): \(error.message)")
                }
            }
        }
        // Each file parses on its own (a decoded app has thousands): on all cores, the first failure in file order
        // thrown after, as one file after another would.
        let parsed = Parallel.Slots<Result<(items: [ValuesXML.Item], declarations: [ValuesXML.Declaration]), any Error>?>(count: files.count, repeating: nil)
        try Parallel.forEach(files.count) { index in
            guard case .success(let configuration) = fileConfigurations[index] else { return }
            parsed[index] = Result { try ValuesXML.items(files[index].text, fileName: files[index].fileName, configuration: configuration) }
        }
        for index in files.indices {
            _ = try fileConfigurations[index].get()
            let read = try parsed[index]!.get()
            items += read.items
            declarations += read.declarations
        }
        macros = try ValuesXML.substituteMacros(in: &items, declarations, packageName: packageName)
        // Positions, not items: a decoded app's values are tens of thousands of items, each a tree, and the
        // table would copy each one in and move it at every growth.
        var seen: [String: Int] = [:]
        seen.reserveCapacity(items.count)
        for index in items.indices {
            let key = items[index].configuration.qualifiers + "\u{0}" + items[index].type + "/" + items[index].name
            if let first = seen.updateValue(index, forKey: key) {
                let item = items[index]
                throw ResourceTableError(.duplicate, "\(item.place): \(item.type)/\(item.name) is already defined at \(items[first].place) (a configuration holds each name once)")
            }
        }
        // Every new name gets its ID first, so any value can refer to any name the files add; IDs that
        // <public> gives come before the others.
        try reservePublicIDs(declarations, items: items, files: fileResources)
        for file in fileResources { try reserveID(type: file.type, named: file.name) }
        for index in items.indices {
            do { try reserveID(type: items[index].type, named: items[index].name) } catch let error as ResourceTableError {
                throw ResourceTableError(error.code, "\(items[index].place): \(error.message)")
            }
        }
        // Attrs before the values that use their formats (styles); strings and simple values before bags.
        func rank(_ type: String) -> Int { type == "attr" ? 0 : type == "style" ? 3 : ["plurals", "array"].contains(type) ? 2 : 1 }
        var changed: [String] = []
        // Positions sorted, not the items: a decoded app's values are tens of thousands of items, each a tree.
        let ranks = items.map { rank($0.type) }
        for index in items.indices.sorted(by: { (ranks[$0], $0) < (ranks[$1], $1) }) {
            do {
                if try apply(items[index]) {
                    changed.append(items[index].configuration.valuesDirectoryName + "/" + items[index].type + "/" + items[index].name)
                }
            } catch let error as ResourceTableError where !error.message.hasPrefix(items[index].fileName) {
                throw ResourceTableError(error.code, "\(items[index].place): \(error.message)")
            }
        }
        markPublic(declarations)
        try applyOverlayables(declarations)
        return changed
    }

    /// Applies one resource; false when the table already holds exactly this.
    private mutating func apply(_ item: ValuesXML.Item) throws -> Bool {
        let configuration = item.configuration
        let id = ids[item.type + "/" + item.name]!
        let existing = entryIndex(of: id, in: configuration).map { entries[$0] }
        let node = item.node
        if item.type == "string" {
            return try applyString(item, existing: existing)
        }
        if !recompilesUnchangedText, let existing, let current = valuesNode(for: existing), current.isSame(as: node) { return false }
        switch node.tag {
        case "plurals":
            var bag: [(UInt32, ResourceValue)] = []
            var spans: [UInt32: [StyledString.Span]] = [:]
            for child in node.children {
                guard child.tag == "item", let quantity = child.attribute("quantity"), let key = ValuesXML.quantities.first(where: { $0.0 == quantity })?.1 else {
                    throw ResourceTableError(.badValuesFile, "\(item.fileName):\(child.line): a plurals item is <item quantity=\"zero|one|two|few|many|other\">")
                }
                guard !bag.contains(where: { $0.0 == key }) else {
                    throw ResourceTableError(.duplicate, "\(item.fileName):\(child.line): quantity \(quantity) is given twice in plurals/\(item.name)")
                }
                bag.append((key, try compile(child, format: [.reference, .string], item: item)))
                if let styled = child.styled { spans[key] = styled.spans }
            }
            return try putBagIfChanged(bag, spans: spans, parent: 0, item: item, existing: existing)
        case "string-array", "integer-array", "array":
            let format: AttributeFormat = node.tag == "string-array" ? [.reference, .string] : node.tag == "integer-array" ? [.reference, .integer] : .any
            var bag: [(UInt32, ResourceValue)] = []
            var spans: [UInt32: [StyledString.Span]] = [:]
            for (index, child) in node.children.enumerated() {
                guard child.tag == "item" else {
                    throw ResourceTableError(.badValuesFile, "\(item.fileName):\(child.line): <\(node.tag)> holds <item> elements, not <\(child.tag)>")
                }
                let key = arrayKeyBase(of: item) + UInt32(index)
                bag.append((key, try compile(child, format: format, item: item)))
                if let styled = child.styled { spans[key] = styled.spans }
            }
            return try putBagIfChanged(bag, spans: spans, parent: 0, item: item, existing: existing)
        case "style":
            let (bag, parent) = try styleBag(item)
            return try putBagIfChanged(bag, parent: parent, item: item, existing: existing)
        case "attr":
            return try putBagIfChanged(try attrBag(item, existing: existing), parent: 0, item: item, existing: existing)
        default:
            guard node.children.isEmpty else {
                throw ResourceTableError(.badValuesFile, "\(item.place): <\(node.tag) name=\"\(item.name)\"> holds a value, not elements")
            }
            var format = ValuesXML.simpleElements[node.tag] ?? ValuesXML.simpleElements[item.type] ?? .any
            if let given = node.attribute("format") {
                guard let parsed = ValuesXML.format(named: given) else {
                    throw ResourceTableError(.badValuesFile, "\(item.place): format=\"\(given)\" is not one of \(ValuesXML.formatNames.map(\.0).joined(separator: ", "))")
                }
                format = parsed.union(.reference)
            }
            let value: ResourceValue
            // An id's value is nothing: aapt2 writes false, aapt an empty string; an existing one keeps its form.
            if item.type == "id", (node.text ?? "").isEmpty { value = existing?.value == .string("") ? .string("") : .typed(.intBoolean, 0) }
            else { value = try compile(node, format: format, item: item) }
            let spans = node.styled?.spans ?? []
            if let existing, existing.value == value, StyledString.isSame(existing.spans, spans) { return false }
            if let existing, existing.dataOffset != nil || existing.value != nil {
                if existing.dataOffset != nil {
                    try setValue(value, spans: spans, type: item.type, named: item.name, qualifiers: configuration.qualifiers)
                } else {
                    throw ResourceTableError(.ambiguousEdit, "\(item.type)/\(item.name) is a bag in \(configuration); replacing it by a simple value is not supported")
                }
            } else {
                try addValue(value, spans: spans, type: item.type, named: item.name, configuration: configuration)
            }
        }
        return true
    }

    /// The key of an array's first item as the table writes them: as this array has them in any configuration,
    /// else as the table's other arrays do (aapt's `Res_MAKEARRAY(0)` or aapt2's `ATTR_MIN`), aapt's when it has none.
    private func arrayKeyBase(of item: ValuesXML.Item) -> UInt32 {
        func base(_ entry: Entry) -> UInt32? {
            guard entry.type == "array", entry.value == nil, let first = entry.bag.first?.0 else { return nil }
            return first == ValuesXML.aapt2ArrayItem ? ValuesXML.aapt2ArrayItem : ValuesXML.arrayItem
        }
        for index in ids[item.type + "/" + item.name].flatMap({ entriesByID[$0] }) ?? [] { if let found = base(entries[index]) { return found } }
        return entries.lazy.compactMap(base).first ?? ValuesXML.arrayItem
    }

    /// Puts the bag unless the entry already holds exactly these items (in any order, string items with the same
    /// spans) and parent.
    private mutating func putBagIfChanged(_ bag: [(UInt32, ResourceValue)], spans: [UInt32: [StyledString.Span]] = [:], parent: UInt32,
                                          item: ValuesXML.Item, existing: Entry?) throws -> Bool {
        if let existing, existing.value == nil, existing.parent == parent, existing.bag.count == bag.count {
            let old = existing.bag.sorted { $0.0 < $1.0 }, new = bag.sorted { $0.0 < $1.0 }
            func sameSpans(_ key: UInt32, _ value: ResourceValue) -> Bool {
                guard let text = value.stringValue else { return true }
                let old = StyledString(text: text, spans: existing.bagSpans[key] ?? [])
                // Spans without a markup form were decoded as plain text: that text given back changes nothing.
                if spans[key] == nil, !old.spans.isEmpty, old.markup == nil { return true }
                return old.isSame(as: StyledString(text: text, spans: spans[key] ?? []))
            }
            if zip(old, new).allSatisfy({ $0.0 == $1.0 && $0.1 == $1.1 && sameSpans($1.0, $1.1) }) { return false }
        }
        var spans = spans
        if let existing, existing.value == nil {
            // An item given back as it was keeps its spans as they were (aapt's attribute order in their tags).
            for (key, value) in bag {
                guard let new = spans[key], let old = existing.bagSpans[key], existing.bag.first(where: { $0.0 == key })?.1 == value,
                      StyledString.isSame(old, new) else { continue }
                spans[key] = old
            }
            // Spans without a markup form were decoded as plain text: an item given back with that text keeps
            // them; one whose text changed would lose them, which is refused.
            for (key, value) in bag where spans[key] == nil {
                guard let old = existing.bagSpans[key], let oldValue = existing.bag.first(where: { $0.0 == key })?.1,
                      let oldText = oldValue.stringValue, StyledString(text: oldText, spans: old).markup == nil else { continue }
                guard value.stringValue == oldText else {
                    let label = item.type == "plurals" ? "quantity " + (ValuesXML.quantities.first { $0.1 == key }?.0 ?? "?")
                        : "item \(key &- arrayKeyBase(of: item) + 1)"
                    throw ResourceTableError(.ambiguousEdit, "\(item.place): \(item.type)/\(item.name) \(label) has style spans with no markup form (\(StyledString.describe(old))), which changing its text would drop; keep its text as decoded, or write the spans you want as markup")
                }
                spans[key] = old
            }
        }
        try putBag(bag, spans: spans, parent: parent, type: item.type, named: item.name, configuration: item.configuration)
        return true
    }

    private mutating func applyString(_ item: ValuesXML.Item, existing: Entry?) throws -> Bool {
        let text = item.node.text ?? ""
        let value: ResourceValue
        let spans = item.node.styled?.spans ?? []
        if let styled = item.node.styled { value = .string(styled.text) }
        else if text.hasPrefix("@") || text.hasPrefix("?") { value = try compile(item.node, format: [.reference, .string], item: item) }
        else { value = .string(try StringsXML.value(of: text, fileName: item.fileName, line: item.node.line)) }
        if let existing {
            if existing.value == value {
                guard let text = value.stringValue else { return false }
                // Spans without a markup form were decoded as plain text: that text given back changes nothing.
                if spans.isEmpty, let old = existing.styledValue, old.markup == nil { return false }
                if StyledString(text: text, spans: existing.spans).isSame(as: StyledString(text: text, spans: spans)) { return false }
            }
            if spans.isEmpty, let old = existing.styledValue, old.markup == nil {
                throw ResourceTableError(.ambiguousEdit, "\(item.place): string/\(item.name) has style spans with no markup form (\(StyledString.describe(old.spans))), which changing its text would drop; keep its text as decoded, or write the spans you want as markup")
            }
            try setValue(value, spans: spans, type: "string", named: item.name, qualifiers: item.configuration.qualifiers)
        } else {
            try addValue(value, spans: spans, type: "string", named: item.name, configuration: item.configuration)
        }
        return true
    }

    /// The value of one element's text: a reference (`@type/name`, `?attr`), a typed value the format allows, or
    /// (when the format takes strings) a string with aapt's white space and escape rules.
    private func compile(_ node: ValuesXML.Node, format: AttributeFormat, symbols: [AttributeInfo.Symbol] = [], item: ValuesXML.Item) throws -> ResourceValue {
        let text = node.text ?? ""
        let place = "\(item.fileName):\(node.line)"
        if let styled = node.styled {
            // Markup makes a styled string, whatever the text looks like (as in aapt2).
            guard format.contains(.string) || format == .any else {
                throw ResourceTableError(.badValuesFile, "\(place): \(item.type)/\(item.name) takes \(ValuesXML.formatText(format)), not text with markup")
            }
            return .string(styled.text)
        }
        if text.hasPrefix("@") || text.hasPrefix("?") {
            do {
                return try XMLTree.compileAttribute(namespace: nil, name: item.type + "/" + item.name, value: text, resources: self,
                                                    context: place, rawValues: .untypedAndStrings).value
            } catch let error as BinaryXMLError { throw ResourceTableError(.badValuesFile, error.message) }
        }
        if let typed = ValueText.parseTyped(text, format: format, symbols: symbols) { return typed }
        if format.contains(.string) || format == .any {
            return .string(try StringsXML.value(of: text, fileName: item.fileName, line: node.line))
        }
        let expected = ValuesXML.formatNames.filter { format.contains($0.1) }.map(\.0).joined(separator: "|")
        var message = "\(place): '\(text)' is not a valid value for \(item.type)/\(item.name) (it takes \(expected))"
        if !symbols.isEmpty { message += " (one of: " + symbols.map(\.name).joined(separator: ", ") + ")" }
        throw ResourceTableError(.badValuesFile, message)
    }

    /// The attribute a style item names: `android:x` (the framework's public one), `x` or `app:x` (this package's).
    private func styleItemAttribute(_ name: String) -> UInt32? {
        if name.hasPrefix("android:") {
            let local = String(name.dropFirst("android:".count))
            if packageName == "android" { return ids["attr/" + local] ?? ids["^attr-private/" + local] }
            return FrameworkResources.id(type: "attr", name: local)
        }
        let local = name.hasPrefix("app:") ? String(name.dropFirst(4)) : name
        return ids["attr/" + local] ?? ids["^attr-private/" + local]
    }

    private mutating func styleBag(_ item: ValuesXML.Item) throws -> ([(UInt32, ResourceValue)], UInt32) {
        var parent: UInt32 = 0
        if let given = item.node.attribute("parent") {
            if !given.isEmpty {
                let reference = given.hasPrefix("@") ? given
                    : given.hasPrefix("android:") ? "@android:style/" + given.dropFirst("android:".count) : "@style/" + given
                let resolved = try compile(ValuesXML.Node(tag: "parent", text: reference, line: item.node.line), format: .reference, item: item)
                guard let id = resolved.referenceID else {
                    throw ResourceTableError(.badValuesFile, "\(item.place): parent=\"\(given)\" is not a style reference")
                }
                parent = id
            }
        } else if let dot = item.name.lastIndex(of: "."), let implicit = ids["style/" + item.name[..<dot]] {
            parent = implicit  // aapt's implicit parent: Theme.Mine.Dark inherits Theme.Mine when it exists
        }
        var bag: [(UInt32, ResourceValue)] = []
        for child in item.node.children {
            guard child.tag == "item", let name = child.attribute("name") else {
                throw ResourceTableError(.badValuesFile, "\(item.fileName):\(child.line): a style holds <item name=\"attribute\">value</item> elements")
            }
            guard let attribute = styleItemAttribute(name) else {
                throw ResourceTableError(.badValuesFile, "\(item.fileName):\(child.line): style/\(item.name): '\(name)' is not an attribute (android:name for the framework's, name for the app's attr resources)")
            }
            let text = child.text ?? ""
            // A table may hold one attribute twice with one value (framework-res's Theme.Holo does): kept as it is.
            if let first = bag.firstIndex(where: { $0.0 == attribute }), item.node.children.filter({ $0.attribute("name") == name }).contains(where: { ($0.text ?? "") != text }) {
                throw ResourceTableError(.duplicate, "\(item.fileName):\(child.line): style/\(item.name) sets \(name) twice, to different values (item \(first + 1) and this one)")
            }
            let value: ResourceValue
            if let info = attributeInfo(attribute) {
                value = try compile(child, format: info.format, symbols: info.symbols, item: item)
            } else if text.hasPrefix("@") || text.hasPrefix("?") {
                value = try compile(child, format: .reference, item: item)
            } else {
                throw ResourceTableError(.ambiguousEdit, "\(item.fileName):\(child.line): style/\(item.name): the format of \(name) is not known here, so '\(text)' could be typed several ways; refer to a resource (@dimen/…, @color/…) instead")
            }
            bag.append((attribute, value))
        }
        return (bag, parent)
    }

    private mutating func attrBag(_ item: ValuesXML.Item, existing: Entry?) throws -> [(UInt32, ResourceValue)] {
        let node = item.node
        var format: AttributeFormat = []
        if let given = node.attribute("format") {
            guard let parsed = ValuesXML.format(named: given) else {
                throw ResourceTableError(.badValuesFile, "\(item.place): format=\"\(given)\" is not one of \(ValuesXML.formatNames.map(\.0).joined(separator: ", "))")
            }
            format = parsed
        }
        let hasEnums = node.children.contains { $0.tag == "enum" }, hasFlags = node.children.contains { $0.tag == "flag" }
        guard !(hasEnums && hasFlags) else { throw ResourceTableError(.badValuesFile, "\(item.place): attr/\(item.name) mixes <enum> and <flag>") }
        if hasEnums { format.insert(.enumeration) }
        if hasFlags { format.insert(.flags) }
        if format.isEmpty { format = .any }
        var bag: [(UInt32, ResourceValue)] = [(ValuesXML.attrType, .typed(.intDecimal, format.rawValue))]
        for (key, attribute) in [(ValuesXML.attrMin, "min"), (ValuesXML.attrMax, "max")] {
            guard let text = node.attribute(attribute) else { continue }
            guard let value = Int32(text) else { throw ResourceTableError(.badValuesFile, "\(item.place): \(attribute)=\"\(text)\" is not an integer") }
            bag.append((key, .integer(value)))
        }
        if let text = node.attribute("localization") {
            guard text == "suggested" else { throw ResourceTableError(.badValuesFile, "\(item.place): localization=\"\(text)\" is not a value Android knows (suggested)") }
            bag.append((0x0100_0003, .integer(1)))  // ATTR_L10N = L10N_SUGGESTED
        }
        var symbols: [(name: String, value: UInt32, isHex: Bool, line: Int)] = []
        for child in node.children {
            guard child.tag == "enum" || child.tag == "flag", let name = child.attribute("name"), let text = child.attribute("value") else {
                throw ResourceTableError(.badValuesFile, "\(item.fileName):\(child.line): an attr holds <enum name=\"…\" value=\"…\"/> or <flag name=\"…\" value=\"…\"/> elements")
            }
            let parsed: UInt32?
            let isHex = text.hasPrefix("0x") || text.hasPrefix("0X")
            if isHex { parsed = UInt32(text.dropFirst(2), radix: 16) } else { parsed = Int32(text).map { UInt32(bitPattern: $0) } }
            guard let value = parsed else { throw ResourceTableError(.badValuesFile, "\(item.fileName):\(child.line): value=\"\(text)\" is not an integer") }
            guard !symbols.contains(where: { $0.name == name }) else {
                throw ResourceTableError(.duplicate, "\(item.fileName):\(child.line): attr/\(item.name) has \(name) twice")
            }
            symbols.append((name, value, isHex, child.line))
        }
        // Layouts and styles compiled against the attr hold the numbers of its symbols and values of its formats:
        // an edit that changes what those mean cannot be made unambiguously, only one that adds to the attr.
        if let existing, existing.value == nil, let old = attribute(id: existing.id) {
            for symbol in old.symbols {
                guard let new = symbols.first(where: { $0.name == symbol.name }) else {
                    throw ResourceTableError(.ambiguousEdit, "\(item.place): attr/\(item.name) drops \(symbol.name) (value \(symbol.value)); layouts and styles compiled against it still hold that number, so removing or renumbering a symbol is refused (add new ones instead)")
                }
                guard new.value == symbol.value else {
                    throw ResourceTableError(.ambiguousEdit, "\(item.fileName):\(new.line): attr/\(item.name) changes \(symbol.name) from \(symbol.value) to \(new.value); layouts and styles compiled against it still hold the old number, so renumbering a symbol is refused (add a new one instead)")
                }
            }
            let dropped = old.format.subtracting(format)
            guard old.format == .any || dropped.isEmpty else {
                throw ResourceTableError(.ambiguousEdit, "\(item.place): attr/\(item.name) drops format \(ValuesXML.formatText(dropped)); values compiled as that kind would no longer match it, so narrowing a format is refused")
            }
        }
        for symbol in symbols {
            // aapt gives each symbol name an id resource of the package.
            let key: UInt32
            if symbol.name.hasPrefix("android:"), let framework = FrameworkResources.id(type: "id", name: String(symbol.name.dropFirst(8))) {
                key = framework
            } else if let id = ids["id/" + symbol.name] {
                key = id
            } else {
                key = try addValue(.typed(.intBoolean, 0), type: "id", named: symbol.name, configuration: try ResourceConfiguration(qualifiers: ""))
            }
            bag.append((key, .typed(symbol.isHex ? .intHex : .intDecimal, symbol.value)))
        }
        return bag
    }
}
