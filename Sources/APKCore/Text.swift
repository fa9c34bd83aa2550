#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension StringProtocol {
    /// Without leading and trailing spaces, tabs and line breaks (`trimmingCharacters(in: .whitespacesAndNewlines)`,
    /// which FoundationEssentials does not have).
    package func trimmingWhitespace() -> String {
        var text = self[...]
        while let first = text.first, first.isWhitespace { text = text.dropFirst() }
        while let last = text.last, last.isWhitespace { text = text.dropLast() }
        return String(text)
    }
}

/// Writes all of `text` to a file descriptor (stderr's writes are unbuffered, so one line arrives in one write).
package func writeAll(_ descriptor: Int32, _ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written < 0 { if errno == EINTR { continue } else { return } }
        bytes = bytes.dropFirst(written)
    }
}
