#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An entry name compared, hashed and ordered by its UTF-8 bytes, as Android and apksig compare entry names:
/// libziparchive finds and de-duplicates entries with memcmp over their names, apksig keys its maps by Java
/// Strings (UTF-16 code units, no normalization). Swift's String equality and hashing use canonical
/// equivalence ("K" and U+212A KELVIN SIGN, "\u{E9}" and "e\u{301}" are one String key), so a `Set<String>` or
/// `[String: X]` of entry names joins two entries Android keeps apart. Names of entries are valid UTF-8 (the
/// archive's open refuses others), so a String made from their bytes holds exactly those bytes.
public struct ExactName: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let string: String
    public init(_ string: String) { self.string = string }
    public init(stringLiteral value: String) { string = value }

    public var description: String { string }

    public static func == (a: ExactName, b: ExactName) -> Bool { a.string.sameUTF8(as: b.string) }

    public func hash(into hasher: inout Hasher) {
        let done: Void? = string.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if done == nil { for byte in string.utf8 { hasher.combine(byte) } }
    }

    /// UTF-8 byte order: a total order on distinct byte strings, where String's `<` holds neither of two
    /// canonically equivalent names before the other.
    public static func < (a: ExactName, b: ExactName) -> Bool { a.string.utf8.lexicographicallyPrecedes(b.string.utf8) }
}

extension String {
    /// Java's `startsWith`/`endsWith`, unit for unit. Swift's compare whole Characters: "META-INF/\u{301}x"
    /// (a combining mark after the slash) does not have the prefix "META-INF/" for Swift, and does for Java.
    package func javaHasPrefix(_ prefix: String) -> Bool { utf8Compare(prefix, atEnd: false) }
    package func javaHasSuffix(_ suffix: String) -> Bool { utf8Compare(suffix, atEnd: true) }

    /// What follows `prefix` when the string starts with it by bytes (`javaHasPrefix`), else nil. The cut falls
    /// where the prefix's bytes end, which is a scalar boundary of both.
    package func droppingJavaPrefix(_ prefix: String) -> String? {
        javaHasPrefix(prefix) ? String(decoding: utf8.dropFirst(prefix.utf8.count), as: UTF8.self) : nil
    }

    /// What precedes `suffix` when the string ends with it by bytes (`javaHasSuffix`), else nil.
    package func droppingJavaSuffix(_ suffix: String) -> String? {
        javaHasSuffix(suffix) ? String(decoding: utf8.dropLast(suffix.utf8.count), as: UTF8.self) : nil
    }

    /// Whether the name's bytes end with `lowercaseSuffix`'s, ASCII letters compared without case and every other
    /// byte as it is: adb's `EndsWithIgnoreCase` (strncasecmp in the C locale), where Swift's `lowercased()`
    /// folds other letters too and its `hasSuffix` compares Characters ("x\u{600}.apk" ends with ".apk" by bytes).
    package func hasSuffixIgnoringASCIICase(_ lowercaseSuffix: String) -> Bool {
        let suffix = lowercaseSuffix.utf8
        guard utf8.count >= suffix.count else { return false }
        return zip(utf8.suffix(suffix.count), suffix).allSatisfy { $0.asciiLowercased == $1 }
    }

    /// Byte-for-byte equality (memcmp over the contiguous UTF-8 of native strings; names are checked for
    /// every entry, so this stays off the Character machinery).
    package func sameUTF8(as other: String) -> Bool {
        let fast = utf8.withContiguousStorageIfAvailable { x in
            other.utf8.withContiguousStorageIfAvailable { y in x.count == y.count && (x.isEmpty || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0) }
        }
        return (fast ?? nil) ?? utf8.elementsEqual(other.utf8)
    }

    private func utf8Compare(_ part: String, atEnd: Bool) -> Bool {
        let fast = utf8.withContiguousStorageIfAvailable { x in
            part.utf8.withContiguousStorageIfAvailable { y -> Bool in
                guard y.count <= x.count else { return false }
                if y.isEmpty { return true }
                return memcmp(x.baseAddress! + (atEnd ? x.count - y.count : 0), y.baseAddress!, y.count) == 0
            }
        }
        if let result = fast ?? nil { return result }
        return atEnd ? (utf8.count >= part.utf8.count && utf8.reversed().starts(with: part.utf8.reversed())) : utf8.starts(with: part.utf8)
    }
}
