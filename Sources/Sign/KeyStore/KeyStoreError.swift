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
        case unsupportedEncryption = "KEY_ENCRYPTION_UNSUPPORTED"
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

    /// What the error is about when a front end has its own name for it (the command line's --ks-pass,
    /// --key-pass, --ks-key-alias, --ks-type, --debug-keystore): the message says what is wrong in the library's
    /// terms, and the front end adds which of its options answers it.
    public enum Subject: Sendable, Equatable {
        case storePassword, keyPassword, keyAlias, storeType, debugKeyStoreLocation
    }

    public let code: Code
    public let message: String
    public let subject: Subject?

    public init(_ code: Code, _ message: String, subject: Subject? = nil) {
        self.code = code
        self.message = message
        self.subject = subject
    }

    public var description: String { message }
}
