import APKCore

extension XMLTree {
    /// Deepest element nesting accepted; real files stay far below, and it bounds recursion in the writer and decoder.
    static let maximumDepth = 1000
    static let noIndex: UInt32 = 0xFFFF_FFFF

    /// Parses a binary XML document (`AndroidManifest.xml`, `res/xml/*.xml`, layouts… as stored in an APK).
    ///
    /// Layout (`ResourceTypes.h`): a `RES_XML_TYPE` chunk holding a string pool, an optional resource map (u32
    /// resource IDs; entry `i` belongs to string `i`) and node chunks. Each node has a `ResXMLTree_node` header
    /// (chunk header, lineNumber u32, comment string index u32) and an extension: namespace (prefix, uri), start
    /// element (ns, name, attributeStart u16, attributeSize u16, attributeCount u16, id/class/style indices u16 each,
    /// then the attributes: ns, name, rawValue, `Res_value`), end element (ns, name) or CDATA (data, `Res_value`).
    public init(binaryXML bytes: [UInt8]) throws {
        self = try bytes.withUnsafeBytes { raw in
            do { return try XMLTree(parsing: raw) }
            catch let error as ShortReadError { throw BinaryXMLError(.truncated, "binary XML is truncated: \(error)") }
        }
    }

    private init(parsing bytes: UnsafeRawBufferPointer) throws {
        let document = try Chunk.read(in: bytes, at: 0, limit: bytes.count, what: "binary XML document")
        guard document.type == ChunkType.xml else {
            throw BinaryXMLError(.malformedChunk, "not a binary XML document: first chunk has type 0x\(String(document.type, radix: 16)), expected 0x0003 (a text XML file or another format?)")
        }
        var pool: StringPool?
        var resourceMap: [UInt32] = []
        var nodes: [Node] = []
        var stack: [Element] = []
        var pendingNamespaces: [Namespace] = []
        var offset = document.headerEnd

        func string(_ index: UInt32, _ context: @autoclosure () -> String) throws -> String {
            guard let pool else { throw BinaryXMLError(.malformedChunk, "\(context()): node before the string pool") }
            return try pool.string(at: index, context: context())
        }
        func optionalString(_ index: UInt32, _ context: @autoclosure () -> String) throws -> String? {
            index == Self.noIndex ? nil : try string(index, context())
        }

        while offset < document.end {
            let chunk = try Chunk.read(in: bytes, at: offset, limit: document.end, what: "XML chunk")
            defer { offset = chunk.end }
            switch chunk.type {
            case ChunkType.stringPool:
                guard pool == nil else { continue }  // a second pool is never used by Android either
                pool = try StringPool(bytes: bytes, chunk: chunk)
            case ChunkType.xmlResourceMap:
                let count = (chunk.size - chunk.headerSize) / 4
                var reader = LittleEndianReader(bytes, offset: chunk.headerEnd)
                resourceMap.reserveCapacity(count)
                for _ in 0..<count { resourceMap.append(try reader.read()) }
            case ChunkType.xmlStartNamespace, ChunkType.xmlEndNamespace, ChunkType.xmlStartElement,
                 ChunkType.xmlEndElement, ChunkType.xmlCDATA:
                let place = "XML node at offset \(chunk.offset)"
                guard chunk.headerSize >= 16 else {
                    throw BinaryXMLError(.malformedChunk, "\(place): node header of \(chunk.headerSize) bytes is shorter than 16")
                }
                var header = LittleEndianReader(bytes, offset: chunk.offset + 8)
                let line: UInt32 = try header.read()
                let comment = try optionalString(try header.read(), place + " comment")
                // The extension must lie inside the chunk; read it through a reader limited to the chunk.
                let chunkBytes = UnsafeRawBufferPointer(rebasing: bytes[0..<chunk.end])
                var ext = LittleEndianReader(chunkBytes, offset: chunk.headerEnd)
                switch chunk.type {
                case ChunkType.xmlStartNamespace:
                    let prefix = try optionalString(try ext.read(), place + " namespace prefix") ?? ""
                    let uri = try string(try ext.read(), place + " namespace URI")
                    pendingNamespaces.append(Namespace(prefix: prefix, uri: uri, lineNumber: line))
                case ChunkType.xmlEndNamespace:
                    break  // implied by the element structure; the writer emits them again
                case ChunkType.xmlStartElement:
                    guard stack.count < Self.maximumDepth else {
                        throw BinaryXMLError(.badNesting, "\(place): elements nest deeper than \(Self.maximumDepth) levels")
                    }
                    let extStart = ext.offset
                    let ns = try optionalString(try ext.read(), place + " element namespace")
                    let name = try string(try ext.read(), place + " element name")
                    let attributeStart = Int(try ext.read(UInt16.self))
                    let attributeSize = Int(try ext.read(UInt16.self))
                    let attributeCount = Int(try ext.read(UInt16.self))
                    guard attributeSize >= 20 || attributeCount == 0 else {
                        throw BinaryXMLError(.malformedChunk, "\(place) <\(name)>: attribute size \(attributeSize) is smaller than 20")
                    }
                    guard extStart + attributeStart + attributeCount * attributeSize <= chunk.end else {
                        throw BinaryXMLError(.truncated, "\(place) <\(name)>: \(attributeCount) attributes do not fit in the \(chunk.size)-byte chunk")
                    }
                    var attributes: [Attribute] = []
                    attributes.reserveCapacity(attributeCount)
                    for i in 0..<attributeCount {
                        var a = LittleEndianReader(chunkBytes, offset: extStart + attributeStart + i * attributeSize)
                        let what = "\(place) <\(name)> attribute #\(i)"
                        let attributeNamespace = try optionalString(try a.read(), what + " namespace")
                        let nameIndex: UInt32 = try a.read()
                        let attributeName = try string(nameIndex, what + " name")
                        let raw = try optionalString(try a.read(), what + " raw value")
                        _ = try a.read(UInt16.self)  // Res_value.size
                        _ = try a.read(UInt8.self)   // res0
                        let type = ResourceValue.DataType(rawValue: try a.read())
                        let data: UInt32 = try a.read()
                        let value: ResourceValue = type == .string
                            ? .string(try string(data, what + " string value")) : .typed(type, data)
                        var resourceID: UInt32?
                        if let idx = Int(exactly: nameIndex), idx < resourceMap.count, resourceMap[idx] != 0 { resourceID = resourceMap[idx] }
                        attributes.append(Attribute(namespace: attributeNamespace, name: attributeName, resourceID: resourceID, rawValue: raw, value: value))
                    }
                    stack.append(Element(namespace: ns, name: name, attributes: attributes, namespaceDeclarations: pendingNamespaces,
                                         lineNumber: line, comment: comment))
                    pendingNamespaces = []
                case ChunkType.xmlEndElement:
                    let ns = try optionalString(try ext.read(), place + " end element namespace")
                    let name = try string(try ext.read(), place + " end element name")
                    guard var element = stack.popLast() else {
                        throw BinaryXMLError(.badNesting, "\(place): </\(name)> without a matching start element")
                    }
                    guard element.name == name, element.namespace == ns else {
                        throw BinaryXMLError(.badNesting, "\(place): </\(name)> closes <\(element.name)>")
                    }
                    element.endLineNumber = line
                    if stack.isEmpty { nodes.append(.element(element)) } else { stack[stack.count - 1].children.append(.element(element)) }
                default:  // CDATA
                    let text = try string(try ext.read(), place + " text")
                    _ = try ext.read(UInt16.self); _ = try ext.read(UInt8.self)
                    let type = ResourceValue.DataType(rawValue: try ext.read())
                    let data: UInt32 = try ext.read()
                    let typed: ResourceValue = type == .string ? .string(try string(data, place + " text value")) : .typed(type, data)
                    let node = Node.text(Text(text: text, typedValue: typed, lineNumber: line, comment: comment))
                    if stack.isEmpty { nodes.append(node) } else { stack[stack.count - 1].children.append(node) }
                }
            default:
                continue  // unknown chunks are skipped, as Android's ResXMLParser does
            }
        }
        guard stack.isEmpty else {
            throw BinaryXMLError(.badNesting, "binary XML ends with <\(stack[stack.count - 1].name)> still open (truncated file?)")
        }
        guard nodes.contains(where: { if case .element = $0 { return true }; return false }) else {
            throw BinaryXMLError(.missingContent, "binary XML has no elements")
        }
        self.nodes = nodes
        self.usesUTF8Strings = pool?.isUTF8 ?? true
    }
}
