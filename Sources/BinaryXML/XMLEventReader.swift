import APKCore

/// A pull parser over a binary XML document that checks everything and decodes nothing it is not asked for.
///
/// Every chunk header, node extension, string index, attribute array and the nesting of start and end
/// elements is checked as the node is read, in document order, with the errors `XMLTree(binaryXML:)` has
/// always thrown. Nodes come back as string indices; `string(_:)` decodes one (and remembers it), so a
/// caller that needs a few facts from a large document (`ManifestSummary`) decodes a few strings instead
/// of the whole pool. Errors from truncated reads surface as `ShortReadError`; the caller wraps them.
///
/// Layout (`ResourceTypes.h`): a `RES_XML_TYPE` chunk holding a string pool, an optional resource map (u32
/// resource IDs; entry `i` belongs to string `i`) and node chunks. Each node has a `ResXMLTree_node` header
/// (chunk header, lineNumber u32, comment string index u32) and an extension: namespace (prefix, uri), start
/// element (ns, name, attributeStart u16, attributeSize u16, attributeCount u16, id/class/style indices u16 each,
/// then the attributes: ns, name, rawValue, `Res_value`), end element (ns, name) or CDATA (data, `Res_value`).
struct XMLEventReader {
    /// A start element whose attribute array has been checked to lie inside its chunk.
    struct StartElement {
        var namespace: UInt32
        var name: UInt32
        var lineNumber: UInt32
        var comment: UInt32
        /// Absolute offset of attribute 0; attribute `i` is `attributeSize` bytes further on per index.
        var attributesOffset: Int
        var attributeSize: Int
        var attributeCount: Int
    }

    /// One `ResXMLTree_attribute`, its string indices checked against the pool.
    struct RawAttribute {
        var namespace: UInt32
        var name: UInt32
        var rawValue: UInt32
        var type: ResourceValue.DataType
        var data: UInt32
    }

    enum Event {
        case startNamespace(prefix: UInt32, uri: UInt32, lineNumber: UInt32)
        case startElement(StartElement)
        /// Checked to close the innermost open element.
        case endElement(lineNumber: UInt32)
        case text(text: UInt32, type: ResourceValue.DataType, data: UInt32, lineNumber: UInt32, comment: UInt32)
    }

    static let noIndex: UInt32 = 0xFFFF_FFFF

    let bytes: UnsafeRawBufferPointer
    /// The document's first string pool, once read (a second one is ignored, as Android ignores it).
    private(set) var pool: StringPoolView?
    /// Resource IDs of attribute names so far (map chunks append, as the full parse always did).
    private(set) var resourceMap: [UInt32] = []
    /// Open elements: namespace and name indices.
    private var open: [(namespace: UInt32, name: UInt32)] = []
    private var hasTopLevelElement = false
    private var offset: Int
    private let documentEnd: Int
    private var decoded: [String?] = []

    /// Number of open elements (0 while reading top-level nodes).
    var depth: Int { open.count }

    /// Reads the document chunk header of `bytes`.
    init(bytes: UnsafeRawBufferPointer) throws {
        if XMLTree.isProtobufXML(bytes) {
            throw BinaryXMLError(.protobufFormat, "a protobuf XML document (aapt2's --proto-format, the form of App Bundle modules and static libraries), not the binary XML an installable APK holds: build an APK from it (bundletool build-apks, or aapt2 link without --proto-format)")
        }
        let document = try Chunk.read(in: bytes, at: 0, limit: bytes.count, what: "binary XML document")
        guard document.type == ChunkType.xml else {
            throw BinaryXMLError(.malformedChunk, "not a binary XML document: first chunk has type 0x\(String(document.type, radix: 16)), expected 0x0003 (a text XML file or another format?)")
        }
        self.bytes = bytes
        self.offset = document.headerEnd
        self.documentEnd = document.end
    }

    /// String `index`, which an event has handed out (so it is inside the pool).
    mutating func string(_ index: UInt32) -> String {
        guard let pool, let i = Int(exactly: index), i < pool.count else { return "" }
        if decoded.isEmpty { decoded = Array(repeating: nil, count: pool.count) }
        if let string = decoded[i] { return string }
        let string = pool.string(at: i)
        decoded[i] = string
        return string
    }

    /// String `index`, or nil for the "no string" index.
    mutating func optionalString(_ index: UInt32) -> String? { index == Self.noIndex ? nil : string(index) }

    /// Attribute `index` of `element`.
    func attribute(_ index: Int, of element: StartElement) -> RawAttribute {
        let at = element.attributesOffset + index * element.attributeSize
        func u32(_ field: Int) -> UInt32 { UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: at + field, as: UInt32.self)) }
        // ns u32, name u32, rawValue u32, then Res_value: size u16, res0 u8, dataType u8, data u32.
        return RawAttribute(namespace: u32(0), name: u32(4), rawValue: u32(8),
                            type: ResourceValue.DataType(rawValue: bytes[at + 15]), data: u32(16))
    }

    /// The resource ID the resource map gives attribute name `nameIndex`, if any.
    func resourceID(ofName nameIndex: UInt32) -> UInt32? {
        guard let i = Int(exactly: nameIndex), i < resourceMap.count, resourceMap[i] != 0 else { return nil }
        return resourceMap[i]
    }

    /// The next node, or nil at the end of a well-formed document.
    mutating func next() throws -> Event? {
        while offset < documentEnd {
            let chunk = try Chunk.read(in: bytes, at: offset, limit: documentEnd, what: "XML chunk")
            offset = chunk.end
            switch chunk.type {
            case ChunkType.stringPool:
                guard pool == nil else { continue }
                pool = try StringPoolView(bytes: bytes, chunk: chunk)
            case ChunkType.xmlResourceMap:
                let count = (chunk.size - chunk.headerSize) / 4
                var reader = LittleEndianReader(bytes, offset: chunk.headerEnd)
                resourceMap.reserveCapacity(resourceMap.count + count)
                for _ in 0..<count { resourceMap.append(try reader.u32()) }
            case ChunkType.xmlStartNamespace, ChunkType.xmlEndNamespace, ChunkType.xmlStartElement,
                 ChunkType.xmlEndElement, ChunkType.xmlCDATA:
                if let event = try node(chunk) { return event }
            default:
                continue  // unknown chunks are skipped, as Android's ResXMLParser does
            }
        }
        if let innermost = open.last {
            throw BinaryXMLError(.badNesting, "binary XML ends with <\(peek(innermost.name))> still open (truncated file?)")
        }
        guard hasTopLevelElement else { throw BinaryXMLError(.missingContent, "binary XML has no elements") }
        return nil
    }

    private func place(_ chunk: Chunk) -> String { "XML node at offset \(chunk.offset)" }

    /// Throws unless `index` names a string of the pool.
    private func check(_ index: UInt32, _ context: @autoclosure () -> String) throws {
        guard let pool else { throw BinaryXMLError(.malformedChunk, "\(context()): node before the string pool") }
        guard let i = Int(exactly: index), i < pool.count else {
            throw BinaryXMLError(.badStringIndex, "\(context()): string index \(index) is outside the string pool (\(pool.count) strings)")
        }
    }

    /// `check`, except that the "no string" index is fine.
    private func checkOptional(_ index: UInt32, _ context: @autoclosure () -> String) throws {
        if index != Self.noIndex { try check(index, context()) }
    }

    /// Whether two checked (optional) string indices name equal strings, as `String ==` compares them.
    private mutating func sameString(_ a: UInt32, _ b: UInt32) -> Bool {
        if a == b { return true }
        if a == Self.noIndex || b == Self.noIndex { return false }
        return string(a) == string(b)
    }

    /// Reads one node chunk; nil for an end-namespace node, which carries nothing the tree keeps.
    private mutating func node(_ chunk: Chunk) throws -> Event? {
        guard chunk.headerSize >= 16 else {
            throw BinaryXMLError(.malformedChunk, "\(place(chunk)): node header of \(chunk.headerSize) bytes is shorter than 16")
        }
        var header = LittleEndianReader(bytes, offset: chunk.offset + 8)
        let line = try header.u32()
        let comment = try header.u32()
        try checkOptional(comment, place(chunk) + " comment")
        // The extension must lie inside the chunk; read it through a reader limited to the chunk.
        let chunkBytes = UnsafeRawBufferPointer(rebasing: bytes[0..<chunk.end])
        var ext = LittleEndianReader(chunkBytes, offset: chunk.headerEnd)
        switch chunk.type {
        case ChunkType.xmlStartNamespace:
            let prefix = try ext.u32()
            try checkOptional(prefix, place(chunk) + " namespace prefix")
            let uri = try ext.u32()
            try check(uri, place(chunk) + " namespace URI")
            return .startNamespace(prefix: prefix, uri: uri, lineNumber: line)
        case ChunkType.xmlEndNamespace:
            return nil  // implied by the element structure; the writer emits them again
        case ChunkType.xmlStartElement:
            guard open.count < XMLTree.maximumDepth else {
                throw BinaryXMLError(.badNesting, "\(place(chunk)): elements nest deeper than \(XMLTree.maximumDepth) levels")
            }
            let extStart = ext.offset
            let namespace = try ext.u32()
            try checkOptional(namespace, place(chunk) + " element namespace")
            let name = try ext.u32()
            try check(name, place(chunk) + " element name")
            let attributeStart = Int(try ext.u16())
            let attributeSize = Int(try ext.u16())
            let attributeCount = Int(try ext.u16())
            guard attributeSize >= 20 || attributeCount == 0 else {
                throw BinaryXMLError(.malformedChunk, "\(place(chunk)) <\(peek(name))>: attribute size \(attributeSize) is smaller than 20")
            }
            guard extStart + attributeStart + attributeCount * attributeSize <= chunk.end else {
                throw BinaryXMLError(.truncated, "\(place(chunk)) <\(peek(name))>: \(attributeCount) attributes do not fit in the \(chunk.size)-byte chunk")
            }
            let element = StartElement(namespace: namespace, name: name, lineNumber: line, comment: comment,
                                       attributesOffset: extStart + attributeStart, attributeSize: attributeSize,
                                       attributeCount: attributeCount)
            for i in 0..<attributeCount {
                let attribute = self.attribute(i, of: element)
                try checkOptional(attribute.namespace, attributeContext(chunk, name, i) + " namespace")
                try check(attribute.name, attributeContext(chunk, name, i) + " name")
                try checkOptional(attribute.rawValue, attributeContext(chunk, name, i) + " raw value")
                if attribute.type == .string { try check(attribute.data, attributeContext(chunk, name, i) + " string value") }
            }
            open.append((namespace, name))
            return .startElement(element)
        case ChunkType.xmlEndElement:
            let namespace = try ext.u32()
            try checkOptional(namespace, place(chunk) + " end element namespace")
            let name = try ext.u32()
            try check(name, place(chunk) + " end element name")
            guard let start = open.last else {
                throw BinaryXMLError(.badNesting, "\(place(chunk)): </\(peek(name))> without a matching start element")
            }
            guard sameString(start.name, name), sameString(start.namespace, namespace) else {
                throw BinaryXMLError(.badNesting, "\(place(chunk)): </\(peek(name))> closes <\(peek(start.name))>")
            }
            open.removeLast()
            if open.isEmpty { hasTopLevelElement = true }
            return .endElement(lineNumber: line)
        default:  // CDATA
            let text = try ext.u32()
            try check(text, place(chunk) + " text")
            _ = try ext.u16(); _ = try ext.u8()
            let type = ResourceValue.DataType(rawValue: try ext.u8())
            let data = try ext.u32()
            if type == .string { try check(data, place(chunk) + " text value") }
            return .text(text: text, type: type, data: data, lineNumber: line, comment: comment)
        }
    }

    /// Names attribute `index` of element `name` in errors (only built when one is thrown).
    private func attributeContext(_ chunk: Chunk, _ name: UInt32, _ index: Int) -> String {
        "\(place(chunk)) <\(peek(name))> attribute #\(index)"
    }

    /// String `index` for an error message: decoded without being remembered.
    private func peek(_ index: UInt32) -> String {
        guard let pool, let i = Int(exactly: index) else { return "" }
        return pool.string(at: i)
    }
}
