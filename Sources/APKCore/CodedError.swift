/// An error that stops a stage, with a stable `code`: tests and `--json` match on the code, never on the text,
/// which is for people and may be reworded. Two such errors are equal when their codes are, so a test can
/// expect `ResourceTableError(.notFound, "")` whatever the message says.
public protocol CodedError: Error, Sendable, CustomStringConvertible, Equatable {
    associatedtype Code: Equatable & Sendable
    var code: Code { get }
}

extension CodedError {
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
}
