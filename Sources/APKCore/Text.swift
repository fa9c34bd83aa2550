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
    /// resource name from a values file, say). A run that can be a path is left whole (`couldBeAPath`): a message
    /// naming a file must name it all, and the file system bounds what a path holds.
    package var cappingLongRuns: String {
        var result = ""
        var run = ""
        func flush() { result += run.count > longRunLimit && !Self.couldBeAPath(run) ? run.cappedForMessage : run }
        for character in self {
            if character.isWhitespace {
                flush()
                run = ""
                result.append(character)
            } else {
                run.append(character)
            }
        }
        flush()
        return result
    }

    /// Whether `run` (a message's text between spaces, with the quotes or punctuation around it) can be a path or
    /// a piece of one: it holds a '/', no component is longer than a file name can be (NAME_MAX, 255 bytes) and
    /// the whole is no longer than a path can be (PATH_MAX, 4,096 bytes). A run without a '/' is a piece of one
    /// file name, under `longRunLimit` anyway; text from an archive or a values file is not bounded so.
    static func couldBeAPath(_ run: String) -> Bool {
        // The quotes, brackets and punctuation a message puts around a path are not part of its first or last name.
        let around: Set<UInt8> = Set("\"'`()[]{}<>,;:.!?".utf8)
        var bytes = run.utf8[...]
        while let first = bytes.first, around.contains(first) { bytes = bytes.dropFirst() }
        while let last = bytes.last, around.contains(last) { bytes = bytes.dropLast() }
        guard bytes.count <= pathLimit, bytes.contains(UInt8(ascii: "/")) else { return false }
        return bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).allSatisfy { $0.count <= nameLimit }
    }
}

/// The longest run of characters without a space that `cappingLongRuns` leaves whole, unless it can be a path.
package let longRunLimit = 256
/// A file name's and a path's most bytes on Linux (NAME_MAX, PATH_MAX): a run longer is not a path.
private let nameLimit = 255, pathLimit = 4096

/// Writes all of `text` to a file descriptor (stderr's writes are unbuffered, so one line arrives in one write).
package func writeAll(_ descriptor: Int32, _ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written < 0 { if errno == EINTR { continue } else { return } }
        bytes = bytes.dropFirst(written)
    }
}

extension UInt8 {
    /// The byte with an ASCII capital letter made small, every other byte as it is: how names are folded where a
    /// rule ignores ASCII case only (Java's `toLowerCase(Locale.US)` on the patterns it is used for, HTML tags).
    @inline(__always) package var asciiLowercased: UInt8 { self >= 0x41 && self <= 0x5A ? self | 0x20 : self }
}
