/// Steps over one object written by Java's ObjectOutputStream (Java Object Serialization Specification, chapter 6:
/// the stream header, then one object), without making anything of it: a JCEKS secret-key entry is a serialized
/// SealedObject, written with a stream of its own, and the entries after it (and the integrity digest) are only
/// reached past its end. Class descriptions are kept, as the values of an object's fields are laid out by them.
/// Hostile input throws; nesting is bounded.
struct JavaSerializedObject {
    private final class ClassDescription {
        let name: String
        let flags: UInt8
        /// Each field's type code (B C D F I J S Z, or L and [ for objects), in the stream's order.
        let fieldTypes: [UInt8]
        let superclass: ClassDescription?
        init(name: String, flags: UInt8, fieldTypes: [UInt8], superclass: ClassDescription?) {
            self.name = name; self.flags = flags; self.fieldTypes = fieldTypes; self.superclass = superclass
        }
    }

    private enum Tag {
        static let null: UInt8 = 0x70, reference: UInt8 = 0x71, classDescription: UInt8 = 0x72, object: UInt8 = 0x73
        static let string: UInt8 = 0x74, array: UInt8 = 0x75, classObject: UInt8 = 0x76, blockData: UInt8 = 0x77
        static let endBlockData: UInt8 = 0x78, reset: UInt8 = 0x79, blockDataLong: UInt8 = 0x7a, longString: UInt8 = 0x7c
        static let proxyClassDescription: UInt8 = 0x7d, enumConstant: UInt8 = 0x7e
    }
    private static let writeMethod: UInt8 = 0x01, serializable: UInt8 = 0x02, externalizable: UInt8 = 0x04, blockDataMode: UInt8 = 0x08
    private static let baseHandle: UInt32 = 0x7e_0000
    private static let maximumDepth = 32

    /// What each handle stands for: a class description, or something nothing here looks into.
    private var handles: [ClassDescription?] = []

    /// Reads past the stream header and one object.
    static func skip(_ reader: inout BigEndianReader) throws {
        guard try reader.readUInt16() == 0xaced, try reader.readUInt16() == 5 else {
            throw KeyStoreError(.malformed, "a JCEKS secret-key entry is not a Java serialization stream")
        }
        var stream = JavaSerializedObject()
        _ = try stream.content(&reader, tag: try reader.readBytes(1)[0], depth: 0)
    }

    private static func malformed(_ what: String) -> KeyStoreError {
        KeyStoreError(.malformed, "a JCEKS secret-key entry cannot be read past: \(what)")
    }

    /// One content item after its tag; a class description when it is one (or refers to one).
    private mutating func content(_ reader: inout BigEndianReader, tag: UInt8, depth: Int) throws -> ClassDescription? {
        guard depth < Self.maximumDepth else { throw Self.malformed("objects nested too deeply") }
        switch tag {
        case Tag.null:
            return nil
        case Tag.reference:
            let handle = try reader.readUInt32()
            guard handle >= Self.baseHandle, Int(handle - Self.baseHandle) < handles.count else { throw Self.malformed("a reference to no object") }
            return handles[Int(handle - Self.baseHandle)]
        case Tag.classDescription:
            let name = try reader.readUTF()
            _ = try reader.readUInt64()   // serialVersionUID
            let handle = newHandle()
            let flags = try reader.readBytes(1)[0]
            var fieldTypes: [UInt8] = []
            for _ in 0..<(try reader.readUInt16()) {
                let type = try reader.readBytes(1)[0]
                _ = try reader.readUTF()
                switch type {
                case UInt8(ascii: "L"), UInt8(ascii: "["): _ = try content(&reader, tag: try reader.readBytes(1)[0], depth: depth + 1)
                case UInt8(ascii: "B"), UInt8(ascii: "C"), UInt8(ascii: "D"), UInt8(ascii: "F"), UInt8(ascii: "I"), UInt8(ascii: "J"),
                     UInt8(ascii: "S"), UInt8(ascii: "Z"): break
                default: throw Self.malformed("a field of unknown type")
                }
                fieldTypes.append(type)
            }
            try annotation(&reader, depth: depth)
            let superclass = try content(&reader, tag: try reader.readBytes(1)[0], depth: depth + 1)
            let description = ClassDescription(name: name, flags: flags, fieldTypes: fieldTypes, superclass: superclass)
            if handle < handles.count { handles[handle] = description }   // a reset inside may have emptied the table
            return description
        case Tag.proxyClassDescription:
            let handle = newHandle()
            for _ in 0..<(try reader.readUInt32()) { _ = try reader.readUTF() }
            try annotation(&reader, depth: depth)
            let superclass = try content(&reader, tag: try reader.readBytes(1)[0], depth: depth + 1)
            let description = ClassDescription(name: "", flags: Self.serializable, fieldTypes: [], superclass: superclass)
            if handle < handles.count { handles[handle] = description }   // a reset inside may have emptied the table
            return description
        case Tag.object:
            let description = try content(&reader, tag: try reader.readBytes(1)[0], depth: depth + 1)
            _ = newHandle()
            var hierarchy: [ClassDescription] = []
            var next = description
            while let current = next, hierarchy.count < Self.maximumDepth { hierarchy.insert(current, at: 0); next = current.superclass }
            for description in hierarchy {
                if description.flags & Self.externalizable != 0 {
                    guard description.flags & Self.blockDataMode != 0 else { throw Self.malformed("an old-style externalizable object") }
                    try annotation(&reader, depth: depth)
                    continue
                }
                for type in description.fieldTypes { try value(&reader, type: type, depth: depth) }
                if description.flags & Self.writeMethod != 0 { try annotation(&reader, depth: depth) }
            }
            return nil
        case Tag.string:
            _ = newHandle()
            _ = try reader.readBytes(Int(try reader.readUInt16()))
            return nil
        case Tag.longString:
            _ = newHandle()
            let length = try reader.readUInt64()
            guard length <= UInt64(Int32.max) else { throw Self.malformed("a string longer than the store") }
            _ = try reader.readBytes(Int(length))
            return nil
        case Tag.array:
            let description = try content(&reader, tag: try reader.readBytes(1)[0], depth: depth + 1)
            _ = newHandle()
            let count = Int(Int32(bitPattern: try reader.readUInt32()))
            guard count >= 0, let description, description.name.utf8.count >= 2, description.name.utf8.first == UInt8(ascii: "[") else {
                throw Self.malformed("an array without an array class")
            }
            let element = Array(description.name.utf8)[1]
            if let width = Self.width(of: element) {
                guard count <= Int(Int32.max) / 8 else { throw Self.malformed("an array longer than the store") }
                _ = try reader.readBytes(count * width)
            } else {
                for _ in 0..<count { try value(&reader, type: element, depth: depth) }
            }
            return nil
        case Tag.classObject:
            _ = try content(&reader, tag: try reader.readBytes(1)[0], depth: depth + 1)
            _ = newHandle()
            return nil
        case Tag.enumConstant:
            _ = try content(&reader, tag: try reader.readBytes(1)[0], depth: depth + 1)
            _ = newHandle()
            _ = try content(&reader, tag: try reader.readBytes(1)[0], depth: depth + 1)
            return nil
        case Tag.blockData:
            _ = try reader.readBytes(Int(try reader.readBytes(1)[0]))
            return nil
        case Tag.blockDataLong:
            let length = Int(Int32(bitPattern: try reader.readUInt32()))
            guard length >= 0 else { throw Self.malformed("block data of negative length") }
            _ = try reader.readBytes(length)
            return nil
        case Tag.reset:
            handles.removeAll()
            return nil
        default:
            throw Self.malformed("unknown tag 0x\(String(tag, radix: 16))")
        }
    }

    /// A field's or an array element's value.
    private mutating func value(_ reader: inout BigEndianReader, type: UInt8, depth: Int) throws {
        if let width = Self.width(of: type) {
            _ = try reader.readBytes(width)
        } else {
            _ = try content(&reader, tag: try reader.readBytes(1)[0], depth: depth + 1)
        }
    }

    /// Class and object annotations: content items up to TC_ENDBLOCKDATA.
    private mutating func annotation(_ reader: inout BigEndianReader, depth: Int) throws {
        while true {
            let tag = try reader.readBytes(1)[0]
            if tag == Tag.endBlockData { return }
            _ = try content(&reader, tag: tag, depth: depth + 1)
        }
    }

    private mutating func newHandle() -> Int {
        handles.append(nil)
        return handles.count - 1
    }

    /// The size of a primitive type code's value; nil for objects (L) and arrays ([).
    private static func width(of type: UInt8) -> Int? {
        switch type {
        case UInt8(ascii: "B"), UInt8(ascii: "Z"): 1
        case UInt8(ascii: "C"), UInt8(ascii: "S"): 2
        case UInt8(ascii: "F"), UInt8(ascii: "I"): 4
        case UInt8(ascii: "D"), UInt8(ascii: "J"): 8
        default: nil
        }
    }
}
