import APKCore

/// Why a `resources.arsc` could not be read, queried or changed. Compare by `code` (`CodedError`).
public struct ResourceTableError: CodedError {
    public enum Code: String, Sendable {
        /// The table is truncated or a chunk, offset or count is inconsistent.
        case malformed = "MALFORMED_TABLE"
        /// A requested resource or configuration does not exist.
        case notFound = "RESOURCE_NOT_FOUND"
        /// The change needs a new resource or configuration; apkpatch edits existing values only.
        case addingNotSupported = "ADDING_RESOURCES_NOT_SUPPORTED"
        /// The resource exists but is not a plain string value (styled, array, reference…).
        case notAString = "NOT_A_STRING"
        /// A strings.xml override file could not be read.
        case badValuesFile = "BAD_VALUES_FILE"
        /// A name is given twice in one configuration.
        case duplicate = "DUPLICATE_RESOURCE"
        /// A folder's qualifiers are not ones Android knows, or not in its order.
        case unknownQualifier = "UNKNOWN_QUALIFIER"
        /// A `res/` folder names a resource type Android does not know.
        case unknownType = "UNKNOWN_RESOURCE_TYPE"
        /// A style or attr edit whose meaning is not unambiguous (a renumbered enum symbol, an attr of unknown format).
        case ambiguousEdit = "AMBIGUOUS_RESOURCE_EDIT"
    }
    public let code: Code
    public let message: String
    public init(_ code: Code, _ message: String) { self.code = code; self.message = message }
    public var description: String { message }
}
