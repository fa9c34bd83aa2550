import APKCore

/// Why a binary XML document, a string pool or a text XML file could not be read or written.
///
/// Every parse failure names the chunk and the offset, so a corrupt APK can be reported precisely instead
/// of trapping. Compare by `code` (`CodedError`); the message is for people.
public struct BinaryXMLError: CodedError {
    /// Stable identifiers for the kinds of failure.
    public enum Code: String, Sendable {
        /// The bytes end before a chunk, header or value does.
        case truncated = "TRUNCATED"
        /// A chunk header is inconsistent (size smaller than its header, beyond its parent, wrong type).
        case malformedChunk = "MALFORMED_CHUNK"
        /// A string pool is inconsistent (offsets or lengths outside the pool, counts that cannot fit).
        case malformedStringPool = "MALFORMED_STRING_POOL"
        /// A string index points outside the string pool.
        case badStringIndex = "BAD_STRING_INDEX"
        /// Elements are not properly nested (end without start, unclosed elements).
        case badNesting = "BAD_NESTING"
        /// A text XML file could not be parsed.
        case textSyntax = "TEXT_SYNTAX"
        /// A name in text XML (attribute, reference, prefix) could not be resolved.
        case unresolvedName = "UNRESOLVED_NAME"
        /// A value in text XML does not fit the attribute's format.
        case badValue = "BAD_VALUE"
        /// A document does not have what the caller needs (e.g. a manifest without a package).
        case missingContent = "MISSING_CONTENT"
        /// A value is too large to encode (string longer than the format allows, too many strings).
        case tooLarge = "TOO_LARGE"
        /// The document is aapt2's protobuf XML (App Bundle modules, static libraries), not binary XML.
        case protobufFormat = "PROTOBUF_FORMAT"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
