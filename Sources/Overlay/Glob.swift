import APKCore

/// A path glob over APK entry names: `*` matches within one path component, `**` across components
/// (`assets/www/**` is everything below, `**/*.mp3` any mp3), `?` one character, `[abc]` a set.
/// A pattern without a slash matches the last component anywhere (`*.ogg`), like .gitignore.
public struct Glob: Sendable, Hashable, CustomStringConvertible {
    public let pattern: String
    private let tokens: [UInt8]
    private let matchesBasename: Bool

    public init(_ pattern: String) {
        self.pattern = pattern
        var p = pattern
        // By bytes, as the names it matches: a Character would join a combining mark to the slash.
        if let relative = p.droppingJavaPrefix("/") { p = relative }
        matchesBasename = !p.utf8.contains(UInt8(ascii: "/"))
        tokens = Array(p.utf8)
    }

    public var description: String { pattern }

    public func matches(_ name: String) -> Bool {
        let subject: [UInt8]
        if matchesBasename, let slash = name.utf8.lastIndex(of: UInt8(ascii: "/")) {
            subject = Array(name.utf8[name.utf8.index(after: slash)...])
        } else {
            subject = Array(name.utf8)
        }
        return Self.match(tokens[...], subject[...])
    }

    private static func match(_ p: ArraySlice<UInt8>, _ s: ArraySlice<UInt8>) -> Bool {
        // Iterative with one backtrack point per star kind keeps hostile patterns linear-ish; names are short.
        var p = p, s = s
        while let c = p.first {
            switch c {
            case UInt8(ascii: "*"):
                let isDouble = p.dropFirst().first == UInt8(ascii: "*")
                var rest = p.dropFirst(isDouble ? 2 : 1)
                if isDouble && rest.first == UInt8(ascii: "/") {
                    // "**/" also matches zero directories.
                    if match(rest.dropFirst(), s) { return true }
                    rest = rest.dropFirst(0)
                }
                var candidate = s
                while true {
                    if match(rest, candidate) { return true }
                    guard let next = candidate.first else { return false }
                    if !isDouble && next == UInt8(ascii: "/") { return false }
                    candidate = candidate.dropFirst()
                }
            case UInt8(ascii: "?"):
                guard let next = s.first, next != UInt8(ascii: "/") else { return false }
                p = p.dropFirst(); s = s.dropFirst()
            case UInt8(ascii: "["):
                guard let close = p.dropFirst().firstIndex(of: UInt8(ascii: "]")), let next = s.first else { return false }
                var set = p[(p.startIndex + 1)..<close]
                let negate = set.first == UInt8(ascii: "!") || set.first == UInt8(ascii: "^")
                if negate { set = set.dropFirst() }
                var found = false
                var i = set.startIndex
                while i < set.endIndex {
                    if i + 2 < set.endIndex, set[i + 1] == UInt8(ascii: "-") {
                        if set[i] <= next && next <= set[i + 2] { found = true }
                        i += 3
                    } else {
                        if set[i] == next { found = true }
                        i += 1
                    }
                }
                guard found != negate else { return false }
                p = p[(close + 1)...]; s = s.dropFirst()
            default:
                guard s.first == c else { return false }
                p = p.dropFirst(); s = s.dropFirst()
            }
        }
        return s.isEmpty
    }
}
