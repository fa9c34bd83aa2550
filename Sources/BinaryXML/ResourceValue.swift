/// A typed value (`Res_value`: size u16 = 8, res0 u8, dataType u8, data u32) as it appears in binary XML
/// attributes and resource table entries. Strings are kept as text; every other type keeps its raw `data`.
public enum ResourceValue: Sendable, Hashable {
    case string(String)
    case typed(DataType, UInt32)

    /// `Res_value::dataType`.
    public struct DataType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let null = DataType(rawValue: 0x00)
        public static let reference = DataType(rawValue: 0x01)
        public static let attribute = DataType(rawValue: 0x02)
        public static let string = DataType(rawValue: 0x03)
        public static let float = DataType(rawValue: 0x04)
        public static let dimension = DataType(rawValue: 0x05)
        public static let fraction = DataType(rawValue: 0x06)
        public static let dynamicReference = DataType(rawValue: 0x07)
        public static let dynamicAttribute = DataType(rawValue: 0x08)
        public static let intDecimal = DataType(rawValue: 0x10)
        public static let intHex = DataType(rawValue: 0x11)
        public static let intBoolean = DataType(rawValue: 0x12)
        public static let intColorARGB8 = DataType(rawValue: 0x1c)
        public static let intColorRGB8 = DataType(rawValue: 0x1d)
        public static let intColorARGB4 = DataType(rawValue: 0x1e)
        public static let intColorRGB4 = DataType(rawValue: 0x1f)
        public var isColor: Bool { rawValue >= 0x1c && rawValue <= 0x1f }
        public var isInteger: Bool { rawValue >= 0x10 && rawValue <= 0x1f }
        public var description: String { "0x" + String(rawValue, radix: 16) }
    }

    public static func boolean(_ value: Bool) -> ResourceValue { .typed(.intBoolean, value ? 0xFFFF_FFFF : 0) }
    public static func integer(_ value: Int32) -> ResourceValue { .typed(.intDecimal, UInt32(bitPattern: value)) }
    public static func reference(_ id: UInt32) -> ResourceValue { .typed(.reference, id) }

    /// The string, when this is a string value.
    public var stringValue: String? { if case .string(let s) = self { return s }; return nil }

    /// The value as a Bool when it is a boolean (any non-zero data is true, as Android reads it).
    public var booleanValue: Bool? {
        if case .typed(.intBoolean, let data) = self { return data != 0 }
        return nil
    }

    /// The value as an integer when it has an integer type (decimal, hex, boolean or color).
    public var integerValue: Int32? {
        if case .typed(let type, let data) = self, type.isInteger { return Int32(bitPattern: data) }
        return nil
    }

    /// The resource ID when this is a reference (`@…`).
    public var referenceID: UInt32? {
        if case .typed(let type, let data) = self, type == .reference || type == .dynamicReference { return data }
        return nil
    }
}
