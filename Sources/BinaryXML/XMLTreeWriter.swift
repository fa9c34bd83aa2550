import APKCore

extension XMLTree {
    /// Encodes the document as binary XML, the way aapt lays it out: a `RES_XML_TYPE` chunk holding the string pool
    /// (UTF-8 or UTF-16 as `usesUTF8Strings` says), the resource map, then one node chunk per namespace start/end,
    /// element start/end and text.
    ///
    /// Attribute names that carry a resource ID take the first string indices, in the same order as the resource map
    /// (Android finds an attribute's ID by its name's string index); every other string follows, deduplicated.
    /// A UTF-8 pool falls back to UTF-16 when a string is longer than UTF-8 pools allow (32,767 bytes).
    public func binaryXML() throws -> [UInt8] {
        var strings = StringTable()
        // Pass 1: attribute names with IDs, so they get indices 0..<k matching the resource map.
        func collect(_ element: Element, depth: Int) throws {
            guard depth < Self.maximumDepth else { throw BinaryXMLError(.badNesting, "elements nest deeper than \(Self.maximumDepth) levels") }
            for attribute in element.attributes { if let id = attribute.resourceID { strings.mappedName(attribute.name, id: id) } }
            for case .element(let child) in element.children { try collect(child, depth: depth + 1) }
        }
        for case .element(let element) in nodes { try collect(element, depth: 0) }

        var body = LittleEndianWriter()
        func node(_ type: UInt16, line: UInt32, comment: String?, _ ext: (inout LittleEndianWriter) -> Void) throws {
            let sizeOffset = body.writeChunkHeader(type: type, headerSize: 16)
            body.write(line)
            body.write(comment.map { strings.index($0) } ?? Self.noIndex)
            ext(&body)
            try body.finishChunk(sizeOffset: sizeOffset)
        }
        func optional(_ s: String?) -> UInt32 { s.map { strings.index($0) } ?? Self.noIndex }
        func write(_ element: Element) throws {
            for ns in element.namespaceDeclarations {
                let prefix = ns.prefix.isEmpty ? Self.noIndex : strings.index(ns.prefix), uri = strings.index(ns.uri)
                try node(ChunkType.xmlStartNamespace, line: ns.lineNumber, comment: nil) { $0.write(prefix); $0.write(uri) }
            }
            guard element.attributes.count <= Int(UInt16.max) else {
                throw BinaryXMLError(.tooLarge, "<\(element.name)> has \(element.attributes.count) attributes; binary XML allows 65,535")
            }
            // Resolve every string first: `node`'s closure cannot also mutate `strings`.
            let ns = optional(element.namespace), name = strings.index(element.name)
            let attributes: [(UInt32, UInt32, UInt32, UInt8, UInt32)] = element.attributes.map { a in
                let nameIndex = a.resourceID.map { strings.mappedName(a.name, id: $0) } ?? strings.index(a.name)
                let (type, data): (UInt8, UInt32)
                switch a.value {
                case .string(let s): (type, data) = (ResourceValue.DataType.string.rawValue, strings.index(s))
                case .typed(let t, let d): (type, data) = (t.rawValue, d)
                }
                return (optional(a.namespace), nameIndex, optional(a.rawValue), type, data)
            }
            // id/class/style indices are 1-based positions of the plain `id`, `class` and `style` attributes.
            func position(of special: String) -> UInt16 {
                element.attributes.firstIndex { $0.namespace == nil && $0.name == special }.map { UInt16(clamping: $0 + 1) } ?? 0
            }
            let idIndex = position(of: "id"), classIndex = position(of: "class"), styleIndex = position(of: "style")
            try node(ChunkType.xmlStartElement, line: element.lineNumber, comment: element.comment) { w in
                w.write(ns); w.write(name)
                w.write(UInt16(20)); w.write(UInt16(20)); w.write(UInt16(attributes.count))
                w.write(idIndex); w.write(classIndex); w.write(styleIndex)
                for (attributeNamespace, attributeName, raw, type, data) in attributes {
                    w.write(attributeNamespace); w.write(attributeName); w.write(raw)
                    w.write(UInt16(8)); w.write(UInt8(0)); w.write(type); w.write(data)
                }
            }
            for child in element.children {
                switch child {
                case .element(let e): try write(e)
                case .text(let t): try writeText(t)
                }
            }
            try node(ChunkType.xmlEndElement, line: element.endLineNumber, comment: nil) { $0.write(ns); $0.write(name) }
            for namespace in element.namespaceDeclarations.reversed() {
                let prefix = namespace.prefix.isEmpty ? Self.noIndex : strings.index(namespace.prefix), uri = strings.index(namespace.uri)
                try node(ChunkType.xmlEndNamespace, line: element.endLineNumber, comment: nil) { $0.write(prefix); $0.write(uri) }
            }
        }
        func writeText(_ text: Text) throws {
            let index = strings.index(text.text)
            let (type, data): (UInt8, UInt32)
            switch text.typedValue {
            case .string(let s): (type, data) = (ResourceValue.DataType.string.rawValue, strings.index(s))
            case .typed(let t, let d): (type, data) = (t.rawValue, d)
            }
            try node(ChunkType.xmlCDATA, line: text.lineNumber, comment: text.comment) { w in
                w.write(index); w.write(UInt16(8)); w.write(UInt8(0)); w.write(type); w.write(data)
            }
        }
        for top in nodes {
            switch top {
            case .element(let e): try write(e)
            case .text(let t): try writeText(t)
            }
        }

        var pool = StringPool(strings: strings.strings, isUTF8: usesUTF8Strings)
        let poolBytes: [UInt8]
        do { poolBytes = try pool.encoded() } catch let error as BinaryXMLError where error.code == .tooLarge && pool.isUTF8 {
            pool.isUTF8 = false
            poolBytes = try pool.encoded()
        }
        var out = LittleEndianWriter(capacity: 8 + poolBytes.count + 8 + 4 * strings.resourceIDs.count + body.count)
        let sizeOffset = out.writeChunkHeader(type: ChunkType.xml, headerSize: 8)
        out.write(bytes: poolBytes)
        if !strings.resourceIDs.isEmpty {
            let mapSize = out.writeChunkHeader(type: ChunkType.xmlResourceMap, headerSize: 8)
            for id in strings.resourceIDs { out.write(id) }
            try out.finishChunk(sizeOffset: mapSize)
        }
        out.write(bytes: body.bytes)
        try out.finishChunk(sizeOffset: sizeOffset)
        return out.bytes
    }
}

/// Assigns string pool indices: resource-mapped attribute names first (one per name + ID), then everything else.
private struct StringTable {
    var strings: [String] = []
    var resourceIDs: [UInt32] = []
    private var mapped: [MappedKey: UInt32] = [:]
    private var plain: [String: UInt32] = [:]
    private struct MappedKey: Hashable { let name: String; let id: UInt32 }

    /// Index of an attribute name bound to resource `id`; must all be added before any plain string.
    @discardableResult
    mutating func mappedName(_ name: String, id: UInt32) -> UInt32 {
        let key = MappedKey(name: name, id: id)
        if let index = mapped[key] { return index }
        precondition(plain.isEmpty, "mapped attribute names must be interned before other strings")
        let index = UInt32(strings.count)
        strings.append(name); resourceIDs.append(id); mapped[key] = index
        return index
    }

    /// Index of a string that is not a mapped attribute name. It never reuses a mapped index for attribute names:
    /// a plain name there would pick up that ID.
    mutating func index(_ string: String) -> UInt32 {
        if let index = plain[string] { return index }
        let index = UInt32(strings.count)
        strings.append(string); plain[string] = index
        return index
    }
}
