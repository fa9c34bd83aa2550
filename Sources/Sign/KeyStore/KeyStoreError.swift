/// Why a signing key could not be loaded or a keystore not created. The message says what to do next and
/// never contains a password or key material (callers never pass one in, and `Secret` prints redacted).
public struct KeyStoreError: Error, CustomStringConvertible, Sendable, Equatable {
    /// Stable identifiers: tests and `--json` match on these, never on the text.
    public enum Code: String, Sendable {
        case invalidPasswordSpec = "INVALID_PASSWORD_SPEC"
        case passwordUnavailable = "PASSWORD_UNAVAILABLE"
        case fileUnreadable = "KEYSTORE_UNREADABLE"
        case unsupportedType = "KEYSTORE_TYPE_UNSUPPORTED"
        case malformed = "KEYSTORE_MALFORMED"
        case wrongStorePassword = "KEYSTORE_WRONG_PASSWORD"
        case wrongKeyPassword = "KEY_WRONG_PASSWORD"
        case aliasNotFound = "KEYSTORE_ALIAS_NOT_FOUND"
        case aliasRequired = "KEYSTORE_ALIAS_REQUIRED"
        case noPrivateKey = "KEYSTORE_NO_PRIVATE_KEY"
        case keyCertificateMismatch = "KEY_CERTIFICATE_MISMATCH"
        case invalidKey = "KEY_INVALID"
        case invalidCertificate = "CERTIFICATE_INVALID"
        case alreadyExists = "KEYSTORE_EXISTS"
        case invalidArgument = "KEYSTORE_INVALID_ARGUMENT"
        case creationFailed = "KEYSTORE_CREATION_FAILED"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
