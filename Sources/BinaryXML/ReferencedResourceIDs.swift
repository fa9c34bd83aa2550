import APKCore

extension XMLTree {
    /// The resource IDs a binary XML document refers to: attribute and text values that are references or theme
    /// attributes (plain or dynamic, `@…` and `?…`) and the IDs its resource map gives attribute names. What a new
    /// resource must not take when resources are added to the APK: compiled XML keeps the raw IDs it was built
    /// against, and a new resource with one of them would be what the reference finds.
    ///
    /// The document is read as `XMLTree(binaryXML:)` reads it (same checks, same errors), without decoding strings.
    public static func referencedResourceIDs(binaryXML bytes: [UInt8]) throws -> Set<UInt32> {
        try bytes.withUnsafeBytes { buffer in
            var reader = try XMLEventReader(bytes: buffer)
            var ids = Set<UInt32>()
            func note(_ type: ResourceValue.DataType, _ data: UInt32) {
                switch type {
                case .reference, .attribute, .dynamicReference, .dynamicAttribute: if data != 0 { ids.insert(data) }
                default: break
                }
            }
            while let event = try reader.next() {
                switch event {
                case .startElement(let element):
                    for index in 0..<element.attributeCount {
                        let attribute = reader.attribute(index, of: element)
                        note(attribute.type, attribute.data)
                    }
                case .text(_, let type, let data, _, _): note(type, data)
                case .startNamespace, .endElement: break
                }
            }
            ids.formUnion(reader.resourceMap.lazy.filter { $0 != 0 })
            return ids
        }
    }
}
