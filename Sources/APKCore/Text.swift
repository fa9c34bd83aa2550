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

extension StringProtocol {
    /// This text as an error message quotes it: at most `messageQuoteLimit` characters, then "…". Keys, names
    /// and values come from the user's files, options and archives; a pasted blob, or a key that runs on for a
    /// whole file, must not fill the terminal (or a CI log) and bury what the message says.
    package var cappedForMessage: String {
        let head = prefix(messageQuoteLimit + 1)
        return head.count <= messageQuoteLimit ? String(self) : String(head.dropLast()) + "…"
    }
}

/// The most characters of a user's text that an error message quotes (`cappedForMessage`).
package let messageQuoteLimit = 80

extension String {
    /// The message with every run of more than `longRunLimit` characters without a space or line break cut as
    /// `cappedForMessage` cuts: the command line's last guard for errors that quote a user's text in full (a
    /// resource name from a values file, say), which no path or digest is long enough to meet.
    package var cappingLongRuns: String {
        var result = ""
        var run = ""
        for character in self {
            if character.isWhitespace {
                result += run.count > longRunLimit ? run.cappedForMessage : run
                run = ""
                result.append(character)
            } else {
                run.append(character)
            }
        }
        return result + (run.count > longRunLimit ? run.cappedForMessage : run)
    }
}

/// The longest run of characters without a space that `cappingLongRuns` leaves whole.
package let longRunLimit = 256

/// Writes all of `text` to a file descriptor (stderr's writes are unbuffered, so one line arrives in one write).
package func writeAll(_ descriptor: Int32, _ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written < 0 { if errno == EINTR { continue } else { return } }
        bytes = bytes.dropFirst(written)
    }
}
