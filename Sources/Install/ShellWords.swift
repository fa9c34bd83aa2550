/// POSIX shell quoting and word splitting, for the adb commands apkpatch prints, runs and writes into scripts.
///
/// The templates in `Templates/adb/` receive every value already quoted by ``quote(_:)`` and render whole command
/// lines; ``split(_:)`` turns such a line back into argv. Keeping both directions here is what lets the rendered
/// template be the single source of the adb flags: what the user sees is exactly what we run.
public enum ShellWords {
    /// Characters that never need quoting in a POSIX shell word.
    private static let safeCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")

    /// `word` as one POSIX shell word: unchanged when it only has safe characters, otherwise in single quotes
    /// (a `'` inside becomes `'\''`). The empty string becomes `''`.
    public static func quote(_ word: String) -> String {
        if !word.isEmpty, word.allSatisfy({ safeCharacters.contains($0) }) { return word }
        return "'" + word.replacing("'", with: "'\\''") + "'"
    }

    /// `words` quoted one by one and joined with spaces.
    public static func join(_ words: [String]) -> String { words.map(quote).joined(separator: " ") }

    /// Splits one command line into words as a POSIX shell would (without expansions): blanks separate words,
    /// single quotes keep everything literally, double quotes keep everything except `\"`, `\\`, `\$` and `` \` ``,
    /// and a backslash outside quotes escapes the next character.
    /// - Throws: ``ShellWordsError`` for an unterminated quote or a trailing backslash.
    public static func split(_ line: String) throws -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var iterator = Array(line).makeIterator()
        while let character = iterator.next() {
            switch character {
            case " ", "\t", "\n":
                if inWord { words.append(current); current = ""; inWord = false }
            case "'":
                inWord = true
                var closed = false
                while let next = iterator.next() {
                    if next == "'" { closed = true; break }
                    current.append(next)
                }
                guard closed else { throw ShellWordsError.unterminatedQuote(line: line) }
            case "\"":
                inWord = true
                var closed = false
                while let next = iterator.next() {
                    if next == "\"" { closed = true; break }
                    if next == "\\" {
                        guard let escaped = iterator.next() else { break }
                        if !"\"\\$`".contains(escaped) { current.append("\\") }
                        current.append(escaped)
                    } else {
                        current.append(next)
                    }
                }
                guard closed else { throw ShellWordsError.unterminatedQuote(line: line) }
            case "\\":
                guard let escaped = iterator.next() else { throw ShellWordsError.trailingBackslash(line: line) }
                inWord = true
                current.append(escaped)
            default:
                inWord = true
                current.append(character)
            }
        }
        if inWord { words.append(current) }
        return words
    }
}

/// A command line that ``ShellWords/split(_:)`` cannot split.
public enum ShellWordsError: Error, CustomStringConvertible, Equatable {
    case unterminatedQuote(line: String)
    case trailingBackslash(line: String)

    public var description: String {
        switch self {
        case .unterminatedQuote(let line): return "unterminated quote in command line: \(line) (check the adb template in Templates/adb/)"
        case .trailingBackslash(let line): return "command line ends with a backslash: \(line) (check the adb template in Templates/adb/)"
        }
    }
}
