import APKCore

extension XMLTree {
    /// Deepest element nesting accepted; real files stay far below, and it bounds recursion in the writer and decoder.
    static let maximumDepth = 1000
    static let noIndex: UInt32 = 0xFFFF_FFFF

    /// Parses a binary XML document (`AndroidManifest.xml`, `res/xml/*.xml`, layouts… as stored in an APK).
    ///
    /// The layout and every check are `XMLEventReader`'s; this builds the tree from its events.
    public init(binaryXML bytes: [UInt8]) throws {
        self = try Self.parse(binaryXML: bytes, keeping: nil)
    }

    /// Whether `bytes` hold aapt2's protobuf form of an XML file (`XmlNode` of aapt2's Resources.proto, written
    /// by `aapt2 link --proto-format` and `--static-lib`, and found in App Bundle modules) rather than binary
    /// XML: field 1 (`element`, length-delimited) whose length fits, opening with one of `XmlElement`'s
    /// length-delimited fields 1–5. A text file starting with a newline (also 0x0A) fails the second test.
    public static func isProtobufXML(_ bytes: some Collection<UInt8>) -> Bool {
        var iterator = bytes.makeIterator()
        guard iterator.next() == 0x0A else { return false }
        var length = 0, shift = 0, lengthBytes = 0
        while let byte = iterator.next(), shift < 35 {
            length |= Int(byte & 0x7F) << shift
            shift += 7
            lengthBytes += 1
            if byte & 0x80 == 0 {
                guard length > 0, 1 + lengthBytes + length <= bytes.count, let field = iterator.next() else { return false }
                return [0x0A, 0x12, 0x1A, 0x22, 0x2A].contains(field)
            }
        }
        return false
    }

    /// Parses `bytes` with every check of `init(binaryXML:)` (same errors, same order) but builds only part
    /// of the tree: a top-level element, and a child of a built element when `keep(parentName, childName)`
    /// says so; text and namespace declarations are dropped. Strings of skipped nodes are checked, never
    /// decoded, which is what makes reading a few facts from a large manifest cheap. Nil `keep` builds it all.
    package static func parse(binaryXML bytes: [UInt8], keeping keep: ((_ parentName: String, _ name: String) -> Bool)?) throws -> XMLTree {
        try bytes.withUnsafeBytes { raw in
            do { return try build(raw, keeping: keep) }
            catch let error as ShortReadError { throw BinaryXMLError(.truncated, "binary XML is truncated: \(error)") }
        }
    }

    private static func build(_ bytes: UnsafeRawBufferPointer, keeping keep: ((String, String) -> Bool)?) throws -> XMLTree {
        var reader = try XMLEventReader(bytes: bytes)
        var nodes: [Node] = []
        // Open elements; nil for one being skipped (with all it contains).
        var stack: [Element?] = []
        var pendingNamespaces: [Namespace] = []
        while let event = try reader.next() {
            switch event {
            case .startNamespace(let prefix, let uri, let line):
                guard keep == nil else { continue }
                pendingNamespaces.append(Namespace(prefix: reader.optionalString(prefix) ?? "", uri: reader.string(uri), lineNumber: line))
            case .startElement(let start):
                var parentName: String?
                if let parent = stack.last {
                    guard let parent else { stack.append(nil); continue }
                    parentName = parent.name
                }
                let name = reader.string(start.name)
                if let keep, let parentName, !keep(parentName, name) {
                    stack.append(nil); pendingNamespaces = []
                    continue
                }
                var attributes: [Attribute] = []
                attributes.reserveCapacity(start.attributeCount)
                for i in 0..<start.attributeCount {
                    let attribute = reader.attribute(i, of: start)
                    let value: ResourceValue = attribute.type == .string
                        ? .string(reader.string(attribute.data)) : .typed(attribute.type, attribute.data)
                    attributes.append(Attribute(namespace: reader.optionalString(attribute.namespace), name: reader.string(attribute.name),
                                                resourceID: reader.resourceID(ofName: attribute.name),
                                                rawValue: reader.optionalString(attribute.rawValue), value: value))
                }
                stack.append(Element(namespace: reader.optionalString(start.namespace), name: name, attributes: attributes,
                                     namespaceDeclarations: pendingNamespaces, lineNumber: start.lineNumber,
                                     comment: reader.optionalString(start.comment)))
                pendingNamespaces = []
            case .endElement(let line):
                // The reader has checked that this closes the innermost open element.
                guard let last = stack.popLast(), var element = last else { continue }
                element.endLineNumber = line
                if stack.isEmpty { nodes.append(.element(element)) } else { stack[stack.count - 1]?.children.append(.element(element)) }
            case .text(let text, let type, let data, let line, let comment):
                guard keep == nil else { continue }
                let typed: ResourceValue = type == .string ? .string(reader.string(data)) : .typed(type, data)
                let node = Node.text(Text(text: reader.string(text), typedValue: typed, lineNumber: line, comment: reader.optionalString(comment)))
                if stack.isEmpty { nodes.append(node) } else { stack[stack.count - 1]?.children.append(node) }
            }
        }
        return XMLTree(nodes: nodes, usesUTF8Strings: reader.pool?.isUTF8 ?? true)
    }
}
