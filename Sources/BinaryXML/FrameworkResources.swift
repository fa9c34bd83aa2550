/// The format flags of an attribute (`ResTable_map` `TYPE_*`): which kinds of text value it accepts.
public struct AttributeFormat: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let reference = AttributeFormat(rawValue: 1 << 0)
    public static let string = AttributeFormat(rawValue: 1 << 1)
    public static let integer = AttributeFormat(rawValue: 1 << 2)
    public static let boolean = AttributeFormat(rawValue: 1 << 3)
    public static let color = AttributeFormat(rawValue: 1 << 4)
    public static let float = AttributeFormat(rawValue: 1 << 5)
    public static let dimension = AttributeFormat(rawValue: 1 << 6)
    public static let fraction = AttributeFormat(rawValue: 1 << 7)
    public static let any = AttributeFormat(rawValue: 0xFFFF)
    public static let enumeration = AttributeFormat(rawValue: 1 << 16)
    public static let flags = AttributeFormat(rawValue: 1 << 17)
}

/// What the decoder and compiler need to know about one attribute resource.
public struct AttributeInfo: Sendable, Hashable {
    public var id: UInt32
    public var name: String
    public var format: AttributeFormat
    /// Enum or flag symbols in table order (e.g. "portrait" = 1).
    public var symbols: [Symbol]
    public struct Symbol: Sendable, Hashable {
        public var name: String
        public var value: UInt32
        public init(name: String, value: UInt32) { self.name = name; self.value = value }
    }
    public init(id: UInt32, name: String, format: AttributeFormat, symbols: [Symbol] = []) {
        self.id = id; self.name = name; self.format = format; self.symbols = symbols
    }
}

/// A resource name: `type/name`, optionally in another package (`android:style/Theme`).
public struct ResourceName: Sendable, Hashable, CustomStringConvertible {
    public var package: String?
    public var type: String
    public var name: String
    public init(package: String? = nil, type: String, name: String) { self.package = package; self.type = type; self.name = name }
    public var description: String { (package.map { $0 + ":" } ?? "") + type + "/" + name }
}

/// Resolves an app's own resources (its `resources.arsc`) for decoding and compiling XML. `ResourceTable`
/// conforms; BinaryXML cannot depend on it, so the table is passed in through this protocol.
public protocol ResourceResolver: Sendable {
    /// The package name of the table (e.g. "com.example.app"; "android" for framework-res itself).
    var packageName: String { get }
    /// The package ID (0x7f for apps, 0x01 for the framework).
    var packageID: UInt8 { get }
    /// `type/name` of the resource `id` in this package, or nil.
    func resourceName(for id: UInt32) -> ResourceName?
    /// The ID of `type/name` in this package, or nil.
    func resourceID(type: String, name: String) -> UInt32?
    /// Format and symbols of an attribute resource of this package, or nil.
    func attribute(id: UInt32) -> AttributeInfo?
    /// The body of `<macro name="…">` as written (escapes kept, trimmed), with macros it uses substituted, and
    /// whether it holds markup; nil when no such macro is known.
    func macro(named name: String) -> (text: String, isStyled: Bool)?
    /// The build-time package IDs of the shared libraries the table links against (its `ResTable_lib_entry`s):
    /// references into them are dynamic, mapped by Android to the IDs the libraries get at load time.
    var libraryPackageIDs: Set<UInt8> { get }
}

extension ResourceResolver {
    public func macro(named name: String) -> (text: String, isStyled: Bool)? { nil }
    public var libraryPackageIDs: Set<UInt8> { [] }
}

/// The public resources of Android's framework (package `android`, ID 0x01), generated from framework-res.apk by
/// `Sources/FrameworkTable/generate-framework-resources.py` into `FrameworkResources+Data.swift`.
public enum FrameworkResources {
    private struct Table: Sendable {
        var names: [UInt32: ResourceName] = [:]
        var ids: [String: UInt32] = [:]     // "type/name" → ID
        var attributes: [UInt32: AttributeInfo] = [:]
    }

    /// Parsed once, on first use (about 2,500 lines).
    private static let table: Table = {
        var table = Table()
        for line in data.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 2, let id = UInt32(fields[0], radix: 16) else { continue }
            let typeName = fields[1].split(separator: "/", maxSplits: 1)
            guard typeName.count == 2 else { continue }
            let name = ResourceName(package: "android", type: String(typeName[0]), name: String(typeName[1]))
            table.names[id] = name
            table.ids[String(fields[1])] = id
            if name.type == "attr", fields.count >= 3, let format = UInt32(fields[2], radix: 16) {
                let symbols = fields.dropFirst(3).compactMap { field -> AttributeInfo.Symbol? in
                    let parts = field.split(separator: "=")
                    guard parts.count == 2, let value = UInt32(parts[1], radix: 16) else { return nil }
                    return AttributeInfo.Symbol(name: String(parts[0]), value: value)
                }
                table.attributes[id] = AttributeInfo(id: id, name: name.name, format: AttributeFormat(rawValue: format), symbols: symbols)
            }
        }
        return table
    }()

    /// The public name of framework resource `id` (package "android"), or nil when it is not public.
    public static func name(for id: UInt32) -> ResourceName? { table.names[id] }

    /// The ID of public framework resource `type/name`.
    public static func id(type: String, name: String) -> UInt32? { table.ids[type + "/" + name] }

    /// Format and symbols of public framework attribute `id`.
    public static func attribute(id: UInt32) -> AttributeInfo? { table.attributes[id] }

    /// Format and symbols of public framework attribute `android:name`.
    public static func attribute(named name: String) -> AttributeInfo? {
        id(type: "attr", name: name).flatMap { table.attributes[$0] }
    }

    /// Number of public resources in the table.
    public static var count: Int { table.names.count }

    /// Every public resource ID in the table, ascending.
    public static var allIDs: [UInt32] { table.names.keys.sorted() }
}
