extension XMLTree {
    /// Compiles text XML (an `AndroidManifest.xml` or `res/xml/*.xml` as a person edits it) into a document that
    /// `binaryXML()` encodes, the way aapt does:
    /// - `android:` attribute names resolve to their public framework IDs (the generated `FrameworkResources`);
    ///   attributes in the app's namespace (`res-auto`) and `@type/name` references resolve through `resources`,
    ///   the APK's own resource table; `@android:type/name` through the framework table.
    /// - values take the first type the attribute's format allows (reference, color, integer, float/dimension/
    ///   fraction, boolean, enum, flags, string), as `ResTable::stringToValue` tries them.
    /// - text of white space only is dropped, white space at the ends of other text compacted (`compacted`);
    /// - attributes with IDs are sorted by ID (Android's attribute lookup relies on it), the others follow in
    ///   document order.
    /// A name that cannot be resolved throws `BinaryXMLError` (`.unresolvedName`) naming the file and line.
    public init(textXML text: String, fileName: String = "AndroidManifest.xml", resources: (any ResourceResolver)? = nil,
                usesUTF8Strings: Bool = true, rawValues: RawValuePolicy = .untypedAndStrings) throws {
        var parser = TextXMLParser(text: text, fileName: fileName)
        let root = try parser.parse()
        let compiler = TextXMLCompiler(fileName: fileName, resources: resources, rawValues: rawValues)
        self.init(root: try compiler.element(root, scope: ["xml": "http://www.w3.org/XML/1998/namespace"], defaultNamespace: nil),
                  usesUTF8Strings: usesUTF8Strings)
    }

    /// Compiles one attribute value for the attribute `namespace:name` (e.g. for the manifest shortcuts), with the
    /// same rules as text XML. Returns the resource ID of the attribute name (if any) and the attribute.
    public static func compileAttribute(namespace: String?, name: String, value: String, resources: (any ResourceResolver)? = nil,
                                        context: String = "attribute", rawValues: RawValuePolicy = .untypedAndStrings) throws -> Attribute {
        let compiler = TextXMLCompiler(fileName: context, resources: resources, rawValues: rawValues)
        return try compiler.attribute(namespace: namespace, name: name, qualifiedName: name, text: value, line: 0)
    }
}

extension XMLTree {
    /// Which attributes keep their source text as the "raw value" beside the typed value, and which are typed.
    public enum RawValuePolicy: Sendable {
        /// aapt (v1): strings, and every attribute without a resource ID (`package`, `platformBuildVersionCode`…),
        /// which is typed when its text reads as a value ("007" → integer 7, raw "007").
        case untypedAndStrings
        /// Platform builds: strings only; attributes without an ID are typed too ("true" → boolean, no raw text).
        case stringsOnly
        /// aapt2 (`XmlReferenceLinker`): strings only, and an attribute without an ID is compiled only when it is a
        /// reference; any other text ("007") stays a string.
        case stringsOnlyUntypedAsText
        /// aapt2 with `--keep-raw-values`: as `stringsOnlyUntypedAsText`, and every attribute keeps its source text
        /// ("match_parent", "@dimen/pad", "24dp") beside its typed value.
        case all
        /// The manifest aapt2 `--keep-raw-values` writes: every attribute keeps its text, and an attribute without
        /// an ID is typed when its text reads as a value (the `platformBuildVersionCode` aapt2 adds).
        case allTypingUntyped

        /// Whether every attribute keeps its source text.
        var keepsAllText: Bool { self == .all || self == .allTypingUntyped }
    }

    /// The policy the producer of this document used (for writing an edited copy the same way): an attribute with
    /// an ID whose typed value kept its text is aapt2's `--keep-raw-values` (no other producer keeps those); else
    /// judged from the attributes without IDs: typed with raw text is aapt's, typed without it a platform build's,
    /// never typed aapt2's.
    public var rawValuePolicy: RawValuePolicy {
        var typedWithRaw = false, typedWithoutRaw = false, keepsAll = false, referenceWithRaw = false
        func visit(_ element: Element, depth: Int) {
            for a in element.attributes where a.resourceID != nil && a.rawValue != nil {
                if case .typed = a.value { keepsAll = true }
            }
            for a in element.attributes where a.resourceID == nil {
                guard case .typed(let type, _) = a.value else { continue }
                guard type != .reference, type != .attribute, type != .dynamicReference, type != .dynamicAttribute else {
                    // aapt keeps the text of a reference without an ID (`style="@style/x"`); aapt2 and platform
                    // builds do not.
                    if a.rawValue != nil { referenceWithRaw = true }
                    continue
                }
                if a.rawValue != nil { typedWithRaw = true } else { typedWithoutRaw = true }
            }
            guard depth < XMLTree.maximumDepth else { return }
            for child in element.elements { visit(child, depth: depth + 1) }
        }
        if let root { visit(root, depth: 0) }
        if keepsAll { return typedWithRaw ? .allTypingUntyped : .all }
        return typedWithRaw || referenceWithRaw ? .untypedAndStrings : typedWithoutRaw ? .stringsOnly : .stringsOnlyUntypedAsText
    }
}

extension XMLTree {
    /// The macro a reference names (`@macro/name`, `@*macro/name`, `@package:macro/name`), nil for other text.
    package static func macroReference(_ text: String) -> (package: String?, name: String)? {
        guard text.hasPrefix("@") else { return nil }
        var body = text.dropFirst()
        if body.hasPrefix("*") { body = body.dropFirst() }
        guard let slash = body.firstIndex(of: "/") else { return nil }
        var type = body[..<slash], package: String?
        if let colon = type.firstIndex(of: ":") { package = String(type[..<colon]); type = type[type.index(after: colon)...] }
        let name = body[body.index(after: slash)...]
        guard type == "macro", !name.isEmpty else { return nil }
        return (package, String(name))
    }

    /// Why `@package:macro/name` of another package cannot be compiled: aapt2 looks macros up in the table it
    /// builds, which holds the app's own only (APKs, the framework's included, do not store theirs).
    package static func foreignMacro(_ package: String, _ name: String) -> String {
        "macro/\(name) of package \(package) cannot be used: macros are compiled away, not stored in APKs (the framework's neither), so only a <macro> of the patch's own values files can be (aapt2 too fails to find another package's); write its value, or define the macro in res/values/"
    }
}

struct TextXMLCompiler {
    let fileName: String
    let resources: (any ResourceResolver)?
    var rawValues: XMLTree.RawValuePolicy = .untypedAndStrings
    /// The package each namespace prefix in scope stands for in references (`@lib:string/x` with
    /// `xmlns:lib="http://schemas.android.com/apk/res/com.lib"`), "" for the app's own (`res-auto`), as aapt2's
    /// `ResolvePackage` reads them; a prefix not declared so is a package name as written.
    var packageAliases: [String: String] = [:]

    /// The package a reference written `@package:type/name` names: nil for the app's own.
    func referencedPackage(_ written: String) -> String? {
        let package = packageAliases[written] ?? written
        return package.isEmpty ? nil : package
    }

    /// The package an `xmlns` URI gives its prefix in references, nil when it is not a package namespace.
    static func package(ofNamespace uri: String) -> String? {
        if uri == XMLTree.autoNamespace { return "" }
        for prefix in ["http://schemas.android.com/apk/res/", "http://schemas.android.com/apk/prv/res/"] where uri.hasPrefix(prefix) {
            let package = String(uri.dropFirst(prefix.count))
            return package.isEmpty ? nil : package
        }
        return nil
    }

    func fail(_ code: BinaryXMLError.Code = .unresolvedName, _ line: Int, _ message: String) -> BinaryXMLError {
        BinaryXMLError(code, line > 0 ? "\(fileName):\(line): \(message)" : "\(fileName): \(message)")
    }

    func element(_ source: TextXMLParser.Element, scope outer: [String: String], defaultNamespace outerDefault: String?) throws -> XMLTree.Element {
        var scope = outer
        var defaultNamespace = outerDefault
        var declarations: [XMLTree.Namespace] = []
        for attribute in source.attributes {
            if attribute.qualifiedName == "xmlns" {
                defaultNamespace = attribute.value.isEmpty ? nil : attribute.value
            } else if attribute.qualifiedName.hasPrefix("xmlns:") {
                let prefix = String(attribute.qualifiedName.dropFirst(6))
                scope[prefix] = attribute.value
                // tools: is for the build tools only; aapt drops it (and its attributes, below).
                if attribute.value != XMLTree.toolsNamespace {
                    declarations.append(XMLTree.Namespace(prefix: prefix, uri: attribute.value, lineNumber: UInt32(source.line)))
                }
            }
        }
        func split(_ qualified: String, line: Int, isElement: Bool) throws -> (String?, String) {
            guard let colon = qualified.firstIndex(of: ":") else { return (isElement ? defaultNamespace : nil, qualified) }
            let prefix = String(qualified[..<colon]), local = String(qualified[qualified.index(after: colon)...])
            guard let uri = scope[prefix] else {
                throw fail(.unresolvedName, line, "namespace prefix '\(prefix)' in \(qualified) is not declared (add xmlns:\(prefix)=\"…\" to the root element)")
            }
            return (uri, local)
        }
        for attribute in source.attributes where attribute.qualifiedName.hasSuffix(":" + XMLTree.undeclaredNamespacesName) {
            guard try split(attribute.qualifiedName, line: attribute.line, isElement: false).0 == XMLTree.toolsNamespace else { continue }
            let undeclared = Set(attribute.value.split(separator: " ").map(String.init))
            declarations.removeAll { undeclared.contains($0.prefix) }
        }
        var compiler = self
        for (prefix, uri) in scope { if let package = Self.package(ofNamespace: uri) { compiler.packageAliases[prefix] = package } }
        let (namespace, name) = try split(source.qualifiedName, line: source.line, isElement: true)
        var attributes: [XMLTree.Attribute] = []
        var recordedIDs: [String: UInt32] = [:]
        var recordedValues: [String: ResourceValue] = [:]
        var lineNumber = UInt32(source.line)
        for attribute in source.attributes where attribute.qualifiedName.hasSuffix(":" + XMLTree.attributeIDsName)
            || attribute.qualifiedName.hasSuffix(":" + XMLTree.typedValuesName) || attribute.qualifiedName.hasSuffix(":" + XMLTree.lineNumberName) {
            guard try split(attribute.qualifiedName, line: attribute.line, isElement: false).0 == XMLTree.toolsNamespace else { continue }
            let fail = { (reason: String) in self.fail(.badValue, attribute.line, "\(attribute.qualifiedName)=\"\(attribute.value)\": \(reason)") }
            if attribute.qualifiedName.hasSuffix(":" + XMLTree.lineNumberName) {
                guard let recorded = UInt32(attribute.value) else { throw fail("not a line number (a decimal number, the element's line in the original file)") }
                lineNumber = recorded
            } else if attribute.qualifiedName.hasSuffix(":" + XMLTree.attributeIDsName) {
                recordedIDs = try XMLTree.parseAttributeIDs(attribute.value, fail: fail)
            } else {
                recordedValues = try XMLTree.parseTypedValues(attribute.value, fail: fail)
            }
        }
        for attribute in source.attributes where attribute.qualifiedName != "xmlns" && !attribute.qualifiedName.hasPrefix("xmlns:") {
            let (attributeNamespace, attributeName) = try split(attribute.qualifiedName, line: attribute.line, isElement: false)
            if attributeNamespace == XMLTree.toolsNamespace { continue }
            attributes.append(try compiler.attribute(namespace: attributeNamespace, name: attributeName, qualifiedName: attribute.qualifiedName,
                                                 text: attribute.value, line: attribute.line, recordedID: recordedIDs[attribute.qualifiedName],
                                                 recordedValue: recordedValues[attribute.qualifiedName]))
        }
        // Attributes with IDs first, by ID (stable); then the rest in document order.
        let sorted = attributes.enumerated().sorted { a, b in
            switch (a.element.resourceID, b.element.resourceID) {
            case let (x?, y?): return x != y ? x < y : a.offset < b.offset
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return a.offset < b.offset
            }
        }.map(\.element)
        var children: [XMLTree.Node] = []
        for child in source.children {
            if case .text(let text, _, let space) = child, space.leading == text.unicodeScalars.count { continue }
            switch child {
            case .element(let e): children.append(.element(try element(e, scope: scope, defaultNamespace: defaultNamespace)))
            case .text(let text, let line, let space):
                children.append(.text(XMLTree.Text(text: Self.compacted(text, space), lineNumber: UInt32(line))))
            }
        }
        return XMLTree.Element(namespace: namespace, name: name, attributes: sorted, children: children, namespaceDeclarations: declarations,
                               lineNumber: lineNumber, endLineNumber: UInt32(source.endLine))
    }

    /// Character data as aapt compiles it (`XMLNode::removeWhitespace`): a text of literal white space only is
    /// dropped (the caller's part), and a run of literal white space at either end is compacted to the one
    /// character next to the text (aapt2 makes that a space); white space inside is kept. White space written as
    /// character references is kept as it is, so decoded text (`XMLEscaping.textNode`) gives back any text node.
    static func compacted(_ text: String, _ space: TextXMLParser.LiteralSpace) -> String {
        guard space.leading > 1 || space.trailing > 1 else { return text }
        let scalars = text.unicodeScalars
        let start = scalars.index(scalars.startIndex, offsetBy: max(0, space.leading - 1))
        let end = scalars.index(scalars.endIndex, offsetBy: -max(0, space.trailing - 1))
        return String(scalars[start..<end])
    }

    /// Resolves the attribute name to an ID and format (or takes the ID the decoder recorded in
    /// `tools:attributeIDs`), then compiles its value; the value the decoder recorded in `tools:typedValues` replaces
    /// it while the text is still the one decoded from it.
    func attribute(namespace: String?, name: String, qualifiedName: String, text: String, line: Int,
                   recordedID: UInt32? = nil, recordedValue: ResourceValue? = nil) throws -> XMLTree.Attribute {
        let written = text
        // `@macro/name` (a macro of the patch's values files) is compiled as if its body were written here, for
        // this attribute's format, as aapt2's ReferenceLinker substitutes it.
        var text = written
        if let (package, macroName) = XMLTree.macroReference(written.trimmingWhitespace()) {
            if let package, let other = referencedPackage(package), other != resources?.packageName {
                throw fail(.unresolvedName, line, "\(qualifiedName)=\"\(written)\": \(XMLTree.foreignMacro(other, macroName))")
            }
            guard let macro = resources?.macro(named: macroName) else {
                throw fail(.unresolvedName, line, "\(qualifiedName)=\"\(written)\": no <macro name=\"\(macroName)\"> in the patch's values files (macros are not stored in the APK, so only the patch's own can be used)")
            }
            guard !macro.isStyled else {
                throw fail(.badValue, line, "\(qualifiedName)=\"\(written)\": macro/\(macroName) holds markup, which an XML attribute cannot keep (its strings have no spans); use a macro without markup, or a @string with it")
            }
            text = macro.text
        }
        var resourceID: UInt32?
        var info: AttributeInfo?
        if let recordedID {
            // 0 records an attribute that has no ID although its namespace would give it one.
            resourceID = recordedID == 0 ? nil : recordedID
            info = resourceID.flatMap { XMLTree.attributeInfo(id: $0, resources: resources) }
        } else {
            switch XMLTree.attributeResolution(namespace: namespace, name: name, resources: resources) {
            case .resolved(let id):
                resourceID = id; info = XMLTree.attributeInfo(id: id, resources: resources)
            case .noID: break
            case .unknownFramework:
                throw fail(.unresolvedName, line, "unknown attribute \(qualifiedName): android has no public attribute '\(name)' (check the spelling)")
            case .unknownApp:
                throw fail(.unresolvedName, line, "unknown attribute \(qualifiedName): the APK's resource table has no attr/\(name)")
            }
        }
        // A typed value kept for an unchanged text first: its text may be one no attribute format accepts (an enum
        // stored as a number no symbol has).
        if let recordedValue {
            let raw = (resourceID == nil && rawValues == .untypedAndStrings) || rawValues.keepsAllText ? text : nil
            let recorded = XMLTree.Attribute(namespace: namespace, name: name, resourceID: resourceID, rawValue: raw, value: recordedValue)
            if AttributeValueText(resources: resources, rawValues: rawValues).text(of: recorded) == text { return recorded }
        }
        let value: ResourceValue
        var raw: String?
        if resourceID == nil, rawValues == .stringsOnlyUntypedAsText || rawValues == .all {
            // aapt2 (XmlReferenceLinker) compiles an attribute outside any package namespace only when it is a
            // reference; anything else, "007" included, stays the string it was written as.
            (value, raw) = try compileValue(text, format: [.reference, .string], symbols: [], attribute: qualifiedName, line: line)
        } else {
            (value, raw) = try compileValue(text, format: info?.format ?? .any, symbols: info?.symbols ?? [], attribute: qualifiedName, line: line)
            if raw == nil, resourceID == nil, rawValues == .untypedAndStrings { raw = text }
        }
        if rawValues.keepsAllText, raw == nil || text != written { raw = written }
        return XMLTree.Attribute(namespace: namespace, name: name, resourceID: resourceID, rawValue: raw, value: value)
    }

    func compileValue(_ text: String, format: AttributeFormat, symbols: [AttributeInfo.Symbol], attribute: String, line: Int) throws -> (ResourceValue, String?) {
        let trimmed = text.trimmingWhitespace()
        if trimmed.hasPrefix("@"), trimmed != "@" { return (try reference(trimmed, line: line, attribute: attribute), nil) }
        if Self.isAttributeReference(trimmed) {
            return (referenceValue(try attributeReference(trimmed, line: line, attribute: attribute), isAttribute: true), nil)
        }
        if let typed = ValueText.parseTyped(text, format: format, symbols: symbols) { return (typed, nil) }
        if format.contains(.string) || format == .any || format.isEmpty {
            // aapt's string processing for attribute values: `collectString` with white space kept.
            let s: String
            do { s = try AAPTEscaping.unescape(text, collapsingWhitespace: false) } catch {
                throw fail(.badValue, line, "\(attribute)=\"\(text)\": \(error)")
            }
            return (.string(s), s)
        }
        var expected: [String] = []
        for (flag, word) in [(AttributeFormat.reference, "reference"), (.string, "string"), (.integer, "integer"), (.boolean, "boolean"),
                             (.color, "color"), (.float, "float"), (.dimension, "dimension"), (.fraction, "fraction"),
                             (.enumeration, "enum"), (.flags, "flags")] where format.contains(flag) { expected.append(word) }
        var message = "\(attribute)=\"\(text)\" is not a valid value: the attribute takes \(expected.joined(separator: "|"))"
        if !symbols.isEmpty { message += " (one of: " + symbols.map(\.name).joined(separator: ", ") + ")" }
        throw fail(.badValue, line, message)
    }

    /// `@null`, `@empty`, `@0x7f010001`, `@[+][*][package:]type/name`.
    func reference(_ text: String, line: Int, attribute: String) throws -> ResourceValue {
        if text == "@null" { return .reference(0) }
        if text == "@empty" { return .typed(.null, 1) }
        var body = text.dropFirst()
        if body.hasPrefix("0x"), let id = UInt32(body.dropFirst(2), radix: 16) { return referenceValue(id) }
        let creates = body.hasPrefix("+")
        if creates { body = body.dropFirst() }
        if body.hasPrefix("*") { body = body.dropFirst() }
        var package: String?
        if let colon = body.firstIndex(of: ":"), let slash = body.firstIndex(of: "/"), colon < slash {
            package = referencedPackage(String(body[..<colon])); body = body[body.index(after: colon)...]
        }
        guard let slash = body.firstIndex(of: "/") else {
            throw fail(.badValue, line, "\(attribute)=\"\(text)\": a reference is @type/name or @package:type/name")
        }
        let type = String(body[..<slash]), name = String(body[body.index(after: slash)...])
        // aapt takes @+android:id/x for an id the framework already has; a new one cannot be created there.
        if creates, package == "android", resources?.packageName != "android", FrameworkResources.id(type: type, name: name) == nil {
            throw fail(.unresolvedName, line, "\(text): new ids can only be created in the app's own package, not in android's; write @+id/\(name) for a new id of the app")
        }
        return referenceValue(try resolve(package: package, type: type, name: name, text: text, line: line))
    }

    /// A reference to `id`, dynamic where Android assigns the package its ID at load time and maps it in dynamic
    /// references only (`DynamicRefTable::lookupResourceValue` leaves a plain reference as written): package 0, a
    /// shared library's own resources (`aapt2 link --shared-lib`, aapt2's `Reference::Flatten`), and a package
    /// the table's shared-library entries name, a client's references into a library (which aapt writes dynamic).
    func referenceValue(_ id: UInt32, isAttribute: Bool = false) -> ResourceValue {
        let package = UInt8(id >> 24)
        let isDynamic = id != 0 && (package == 0 || resources?.libraryPackageIDs.contains(package) == true)
        return .typed(isAttribute ? (isDynamic ? .dynamicAttribute : .attribute) : (isDynamic ? .dynamicReference : .reference), id)
    }

    /// Whether `text` (trimmed) is written as an attribute reference. As in aapt2's `ParseAttributeReference`, a
    /// `?` with no name after it is not one: such text is a string where the attribute takes strings (Google's
    /// Leanback sample has `android:searchSuggestSelection=" ?"`, a SQL parameter).
    static func isAttributeReference(_ text: String) -> Bool {
        guard text.hasPrefix("?") else { return false }
        var body = Substring(text).dropFirst()
        if body.hasPrefix("*") { body = body.dropFirst() }
        if let colon = body.firstIndex(of: ":") { body = body[body.index(after: colon)...] }
        if let slash = body.firstIndex(of: "/") { body = body[body.index(after: slash)...] }
        return !body.isEmpty
    }

    /// `?android:attr/name`, `?android:name`, `?attr/name`, `?name`, `?0x…`.
    func attributeReference(_ text: String, line: Int, attribute: String) throws -> UInt32 {
        var body = text.dropFirst()
        if body.hasPrefix("0x"), let id = UInt32(body.dropFirst(2), radix: 16) { return id }
        if body.hasPrefix("*") { body = body.dropFirst() }
        var package: String?
        if let colon = body.firstIndex(of: ":") { package = referencedPackage(String(body[..<colon])); body = body[body.index(after: colon)...] }
        var type = "attr", name = String(body)
        if let slash = body.firstIndex(of: "/") { type = String(body[..<slash]); name = String(body[body.index(after: slash)...]) }
        return try resolve(package: package, type: type, name: name, text: text, line: line)
    }

    func resolve(package: String?, type: String, name: String, text: String, line: Int) throws -> UInt32 {
        let ownPackage = resources?.packageName
        if package == "android" && ownPackage != "android" {
            if let id = FrameworkResources.id(type: type, name: name) { return id }
            throw fail(.unresolvedName, line, "\(text): android has no public resource \(type)/\(name)")
        }
        if let package, package != ownPackage, package != "android" {
            throw fail(.unresolvedName, line, "\(text): package '\(package)' is neither android nor this APK (\(ownPackage ?? "no resource table"))")
        }
        guard let resources else {
            throw fail(.unresolvedName, line, "\(text): app references need the APK's resources.arsc, which is not available here")
        }
        if let id = resources.resourceID(type: type, name: name) { return id }
        // aapt files the attrs framework-res does not make public under ^attr-private; its own XML still finds them
        // as `?attr/name` (LineageOS's preference layouts keep that raw text).
        if type == "attr", let id = resources.resourceID(type: "^attr-private", name: name) { return id }
        throw fail(.unresolvedName, line, "\(text): the APK has no resource \(type)/\(name), and the patch does not add one")
    }

}

extension XMLTree {
    /// The tools-namespace attribute in which decoded text records attribute IDs that the names alone would not
    /// give back (a framework attribute under an unusual namespace URI or none, a private one): Android reads
    /// attributes by ID, so a round trip must keep them. aapt and apktool ignore tools attributes.
    public static let attributeIDsName = "attributeIDs"

    /// The tools-namespace attribute listing the prefixes (space-separated) that text XML declares only because it
    /// must: the binary document used those namespaces without declaring them (aapt2 `--no-xml-namespaces`,
    /// obfuscators), and a round trip must not add the declarations.
    public static let undeclaredNamespacesName = "undeclaredNamespaces"

    /// The tools-namespace attribute in which decoded text records typed values that their text would compile to
    /// another binary form (`android:isGame=0x12:0x00000001`: a boolean stored as 1, where aapt writes true as
    /// 0xffffffff; an enum stored as hex): some build tools write such forms, and aapt dumps show them.
    public static let typedValuesName = "typedValues"

    /// The tools-namespace attribute in which decoded text records an element's line number where the text cannot
    /// put the element on that line (0 for the uses-sdk aapt adds to a manifest; lines that go backwards): aapt
    /// dumps show them, Android ignores them.
    public static let lineNumberName = "lineNumber"

    /// How the compiler resolves an attribute's name to a resource ID.
    enum AttributeResolution: Equatable {
        case resolved(UInt32)
        /// Not in a package namespace: the attribute has no ID (aapt gives none either).
        case noID
        case unknownFramework
        case unknownApp
    }

    /// aapt's rule: `android:` names resolve in the framework's public table (or in the table itself when it is the
    /// framework's own), `res-auto` and `http://schemas.android.com/apk/res/<package>` names in the app's table.
    static func attributeResolution(namespace: String?, name: String, resources: (any ResourceResolver)?) -> AttributeResolution {
        if namespace == androidNamespace {
            if let resources, resources.packageName == "android",
               let id = resources.resourceID(type: "attr", name: name) ?? resources.resourceID(type: "^attr-private", name: name) {
                return .resolved(id)
            }
            return FrameworkResources.id(type: "attr", name: name).map { .resolved($0) } ?? .unknownFramework
        }
        if let namespace, namespace == autoNamespace || namespace.hasPrefix("http://schemas.android.com/apk/res/") {
            return resources?.resourceID(type: "attr", name: name).map { .resolved($0) } ?? .unknownApp
        }
        return .noID
    }

    /// Format and symbols of attribute `id`, from the app's table for its own package, else the framework's.
    static func attributeInfo(id: UInt32, resources: (any ResourceResolver)?) -> AttributeInfo? {
        if let resources, UInt8(id >> 24) == resources.packageID, let info = resources.attribute(id: id) { return info }
        return FrameworkResources.attribute(id: id)
    }

    /// `name=0x01010003 ns0:label=0x01010001`: qualified attribute name → ID.
    static func parseAttributeIDs(_ text: String, fail: (String) -> BinaryXMLError) throws -> [String: UInt32] {
        var ids: [String: UInt32] = [:]
        for item in text.split(whereSeparator: \.isWhitespace) {
            let parts = item.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[1].hasPrefix("0x"), let id = UInt32(parts[1].dropFirst(2), radix: 16) else {
                throw fail("'\(item)' is not name=0xID (an attribute's resource ID in hex, 0x0 for none)")
            }
            ids[String(parts[0])] = id
        }
        return ids
    }

    /// `android:isGame=0x12:0x00000001`: qualified attribute name → data type and data.
    static func parseTypedValues(_ text: String, fail: (String) -> BinaryXMLError) throws -> [String: ResourceValue] {
        var values: [String: ResourceValue] = [:]
        for item in text.split(whereSeparator: \.isWhitespace) {
            let parts = item.split(separator: "=", maxSplits: 1)
            let typed = parts.count == 2 ? parts[1].split(separator: ":") : []
            guard typed.count == 2, typed.allSatisfy({ $0.hasPrefix("0x") }), let type = UInt8(typed[0].dropFirst(2), radix: 16),
                  let data = UInt32(typed[1].dropFirst(2), radix: 16), type != ResourceValue.DataType.string.rawValue else {
                throw fail("'\(item)' is not name=0xTYPE:0xDATA (an attribute's typed value: data type and data in hex)")
            }
            values[String(parts[0])] = .typed(ResourceValue.DataType(rawValue: type), data)
        }
        return values
    }

    static func typedValuesText(_ values: [(String, ResourceValue.DataType, UInt32)]) -> String {
        values.map { name, type, data in
            let hex = String(data, radix: 16)
            return name + "=0x" + String(type.rawValue, radix: 16) + ":0x" + String(repeating: "0", count: max(0, 8 - hex.count)) + hex
        }.joined(separator: " ")
    }

    static func attributeIDsText(_ ids: [(String, UInt32)]) -> String {
        ids.map { name, id in
            let hex = String(id, radix: 16)
            return name + "=0x" + String(repeating: "0", count: max(0, 8 - hex.count)) + hex
        }.joined(separator: " ")
    }
}
