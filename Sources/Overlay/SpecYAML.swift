import APKCore

/// The part of YAML that `apkpatch.yml` is written in, read with line numbers so that every complaint can
/// name its line: block mappings and block sequences nested by indentation (a list item may be a mapping:
/// `- domain: a.example` with its other keys lined up below), flow sequences (`[a, b]`),
/// plain, single- and double-quoted scalars, `#` comments and an optional `---`.
///
/// A general YAML library would parse more (anchors, tags, multi-line scalars, flow mappings), but it would
/// also link all of Foundation with its ICU data into the binary, several times the size of the rest, for
/// one small file; those constructs are refused here with a message saying what to write instead.
/// The accessors mirror Yams' `Node` (`mapping`, `sequence`, `scalar`, `string`, `bool`, `int`, `mark`), so
/// code that read Yams nodes reads these unchanged.
public indirect enum YAMLNode: Sendable, Equatable {
    case scalar(Scalar)
    case sequence([YAMLNode], Mark)
    case mapping([(key: YAMLNode, value: YAMLNode)], Mark)

    /// Where a node starts (1-based line, as editors count).
    public struct Mark: Sendable, Equatable {
        public var line: Int
        public var column: Int
    }

    public struct Scalar: Sendable, Equatable {
        public var string: String
        /// Quoted scalars are always strings: `"true"` is not a boolean.
        public var isQuoted: Bool
        public var mark: Mark
    }

    public static func == (lhs: YAMLNode, rhs: YAMLNode) -> Bool {
        switch (lhs, rhs) {
        case let (.scalar(a), .scalar(b)): return a == b
        case let (.sequence(a, ma), .sequence(b, mb)): return a == b && ma == mb
        case let (.mapping(a, ma), .mapping(b, mb)):
            return ma == mb && a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }

    public var mark: Mark? {
        switch self {
        case .scalar(let scalar): return scalar.mark
        case .sequence(_, let mark), .mapping(_, let mark): return mark
        }
    }
    public var scalar: Scalar? { if case .scalar(let scalar) = self { return scalar } else { return nil } }
    public var sequence: [YAMLNode]? { if case .sequence(let items, _) = self { return items } else { return nil } }
    public var mapping: [(key: YAMLNode, value: YAMLNode)]? { if case .mapping(let pairs, _) = self { return pairs } else { return nil } }
    /// A scalar's text; nil for collections and for null (`~`, `null`, nothing).
    public var string: String? {
        guard let scalar, scalar.isQuoted || !Self.nullWords.contains(scalar.string) else { return nil }
        return scalar.string
    }
    public var bool: Bool? {
        guard let scalar, !scalar.isQuoted else { return nil }
        switch scalar.string {
        case "true", "True", "TRUE": return true
        case "false", "False", "FALSE": return false
        default: return nil
        }
    }
    public var int: Int? {
        guard let scalar, !scalar.isQuoted else { return nil }
        let text = scalar.string.replacingUnderscores()
        if text.hasPrefix("0x") { return Int(text.dropFirst(2), radix: 16) }
        return Int(text)
    }
    static let nullWords: Set<String> = ["", "~", "null", "Null", "NULL"]
}

private extension String {
    func replacingUnderscores() -> String { String(filter { $0 != "_" }) }
}

/// Why a text is not the YAML `apkpatch.yml` is written in; `line` is 1-based.
public struct SpecYAMLError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var message: String
    public var description: String { "line \(line): \(message)" }
}

/// Reads the YAML subset described on ``YAMLNode``.
public enum SpecYAML {
    /// The document's root node, or nil for an empty document (only comments and blank lines).
    public static func compose(yaml: String) throws -> YAMLNode? {
        var lines: [Line] = []
        var number = 0
        // "\r\n" is one Character, which isNewline also matches.
        for raw in yaml.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            number += 1
            var text = Substring(raw)
            if number == 1, text.hasPrefix("\u{FEFF}") { text = text.dropFirst() }
            let content = try stripComment(text, line: number)
            let trimmed = content.drop { $0 == " " }
            if trimmed.isEmpty { continue }
            if content.prefix(while: { $0 == " " || $0 == "\t" }).contains("\t") {
                throw SpecYAMLError(line: number, message: "a tab in the indentation; YAML indents with spaces only")
            }
            let indent = content.count - trimmed.count
            let body = String(trimmed.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
            if indent == 0, body == "---" {
                if lines.isEmpty { continue }
                throw SpecYAMLError(line: number, message: "a second YAML document (---); \(PatchSpecFileName.name) holds one")
            }
            if indent == 0, body == "..." { break }
            lines.append(Line(number: number, indent: indent, text: body))
        }
        guard !lines.isEmpty else { return nil }
        var reader = Reader(lines: lines)
        let node = try reader.block(indent: lines[0].indent)
        if reader.index < lines.count {
            let line = lines[reader.index]
            throw SpecYAMLError(line: line.number, message: "this line does not continue the list or keys above it; align it with the key or list item it belongs to")
        }
        return node
    }

    struct Line {
        var number: Int
        var indent: Int
        var text: String
    }

    /// The line without its comment: `#` starts one at the start of a line or after a space, outside quotes.
    static func stripComment(_ text: Substring, line: Int) throws -> Substring {
        var quote: Character?
        var previous: Character = " "
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if let open = quote {
                if character == open {
                    // '' inside single quotes is an escaped quote, not the end.
                    let next = text.index(after: index)
                    if open == "'", next < text.endIndex, text[next] == "'" { index = text.index(after: next); previous = "'"; continue }
                    quote = nil
                } else if open == "\"", character == "\\" {
                    index = text.index(after: index)
                    if index == text.endIndex { break }
                }
            } else if character == "#", previous == " " || previous == "\t" {
                return text[..<index]
            } else if (character == "\"" || character == "'"), previous == " " || previous == "\t" || previous == "[" || previous == "," || previous == "-" || previous == ":" || index == text.startIndex {
                quote = character
            }
            previous = character
            index = text.index(after: index)
        }
        return text
    }

    /// How deep lists and keys may nest. The deepest spec (networkSecurity: pin: - certificates: - file) nests
    /// five levels; a file nested deeper is no spec, and each level costs the reader stack.
    static let nestingLimit = 16

    struct Reader {
        var lines: [Line]
        var index = 0
        var depth = 0

        /// The block whose lines are indented by exactly `indent`.
        mutating func block(indent: Int) throws -> YAMLNode {
            let first = lines[index]
            depth += 1
            defer { depth -= 1 }
            if depth > SpecYAML.nestingLimit {
                throw SpecYAMLError(line: first.number, message: "lists and keys nested more than \(SpecYAML.nestingLimit) levels deep; \(PatchSpecFileName.name) needs at most five")
            }
            if first.text == "-" || first.text.hasPrefix("- ") { return try sequence(indent: indent) }
            if splitKey(first.text) != nil { return try mapping(indent: indent) }
            // A lone scalar (a whole document or a value on the lines below its key).
            index += 1
            let node = try SpecYAML.scalarOrFlow(first.text, line: first.number, column: first.indent + 1)
            if index < lines.count, lines[index].indent > indent {
                throw SpecYAMLError(line: lines[index].number, message: "a value spread over several lines; write it on one line, in quotes if it contains : or #")
            }
            return node
        }

        mutating func sequence(indent: Int) throws -> YAMLNode {
            let mark = YAMLNode.Mark(line: lines[index].number, column: indent + 1)
            var items: [YAMLNode] = []
            while index < lines.count, lines[index].indent == indent {
                let line = lines[index]
                // A list at its key's indentation ends at the next key.
                guard line.text == "-" || line.text.hasPrefix("- ") else { break }
                let rest = String(line.text.dropFirst(1).drop { $0 == " " })
                index += 1
                if rest.isEmpty {
                    if index < lines.count, lines[index].indent > indent {
                        items.append(try block(indent: lines[index].indent))
                    } else {
                        items.append(.scalar(YAMLNode.Scalar(string: "", isQuoted: false, mark: YAMLNode.Mark(line: line.number, column: indent + 2))))
                    }
                    continue
                }
                if SpecYAML.splitKey(rest) != nil {
                    // `- key: value` starts a mapping whose keys line up with this first one (networkSecurity.pin).
                    let column = indent + (line.text.count - rest.count)
                    index -= 1
                    lines[index] = Line(number: line.number, indent: column, text: rest)
                    items.append(try mapping(indent: column))
                    continue
                }
                items.append(try SpecYAML.scalarOrFlow(rest, line: line.number, column: indent + 1 + (line.text.count - rest.count)))
                if index < lines.count, lines[index].indent > indent {
                    throw SpecYAMLError(line: lines[index].number, message: "unexpected indentation after a list item; a value goes on one line")
                }
            }
            return .sequence(items, mark)
        }

        mutating func mapping(indent: Int) throws -> YAMLNode {
            let mark = YAMLNode.Mark(line: lines[index].number, column: indent + 1)
            var pairs: [(key: YAMLNode, value: YAMLNode)] = []
            var seen: [String: Int] = [:]
            while index < lines.count, lines[index].indent == indent {
                let line = lines[index]
                guard let (keyText, valueText) = SpecYAML.splitKey(line.text) else {
                    if line.text.hasPrefix("- ") || line.text == "-" {
                        throw SpecYAMLError(line: line.number, message: "a list item at the indentation of the keys; indent it under its key")
                    }
                    throw SpecYAMLError(line: line.number, message: "expected `key: value` like the lines above it")
                }
                let key = try SpecYAML.scalarOrFlow(keyText, line: line.number, column: indent + 1)
                guard let keyString = key.scalar?.string else {
                    throw SpecYAMLError(line: line.number, message: "a key must be a plain name")
                }
                if let earlier = seen[keyString] {
                    throw SpecYAMLError(line: line.number, message: "\(keyString.cappedForMessage) appears twice (first at line \(earlier)); merge the two")
                }
                seen[keyString] = line.number
                index += 1
                let value: YAMLNode
                if !valueText.isEmpty {
                    value = try SpecYAML.scalarOrFlow(valueText, line: line.number, column: indent + 1 + (line.text.count - valueText.count))
                    if index < lines.count, lines[index].indent > indent {
                        throw SpecYAMLError(line: lines[index].number, message: "unexpected indentation: \(keyString.cappedForMessage) already has a value on line \(line.number)")
                    }
                } else if index < lines.count, lines[index].indent > indent {
                    value = try block(indent: lines[index].indent)
                } else if index < lines.count, lines[index].indent == indent, lines[index].text.hasPrefix("- ") || lines[index].text == "-" {
                    // YAML allows a list at its key's own indentation.
                    value = try sequence(indent: indent)
                } else {
                    value = .scalar(YAMLNode.Scalar(string: "", isQuoted: false, mark: YAMLNode.Mark(line: line.number, column: indent + line.text.count + 1)))
                }
                pairs.append((key, value))
            }
            return .mapping(pairs, mark)
        }
    }

    /// `key: value` or `key:` → (key, value); nil when the line is not a mapping entry.
    static func splitKey(_ text: String) -> (String, String)? {
        let characters = Array(text)
        var quote: Character?
        var index = 0
        if let first = characters.first, first == "\"" || first == "'" { quote = first; index = 1 }
        if let first = characters.first, first == "[" || first == "{" { return nil }
        while index < characters.count {
            let character = characters[index]
            if let open = quote {
                if character == open { quote = nil }
                else if open == "\"", character == "\\" { index += 1 }
            } else if character == ":", index + 1 == characters.count || characters[index + 1] == " " {
                let key = String(characters[..<index]).trimmingWhitespace()
                let value = String(characters[(index + 1)...]).trimmingWhitespace()
                return key.isEmpty ? nil : (key, value)
            }
            index += 1
        }
        return nil
    }

    static func scalarOrFlow(_ text: String, line: Int, column: Int) throws -> YAMLNode {
        let mark = YAMLNode.Mark(line: line, column: column)
        switch text.first {
        case "[":
            guard text.hasSuffix("]") else { throw SpecYAMLError(line: line, message: "a [ list without its closing ] on the same line") }
            let inner = text.dropFirst().dropLast()
            var items: [YAMLNode] = []
            for part in try splitFlow(String(inner), line: line) {
                items.append(try scalarOrFlow(part, line: line, column: column))
            }
            return .sequence(items, mark)
        case "{":
            throw SpecYAMLError(line: line, message: "{ } mappings are not used in \(PatchSpecFileName.name); write one `key: value` per line")
        case "&", "*", "!", "|", ">", "@", "`", "%":
            throw SpecYAMLError(line: line, message: "\(text.first!) starts a YAML feature (anchor, alias, tag or block scalar) not used in \(PatchSpecFileName.name); put the value in quotes")
        case "\"": return .scalar(YAMLNode.Scalar(string: try doubleQuoted(text, line: line), isQuoted: true, mark: mark))
        case "'":
            guard text.count >= 2, text.hasSuffix("'") else { throw SpecYAMLError(line: line, message: "a ' quoted value without its closing '") }
            let inner = String(text.dropFirst().dropLast())
            return .scalar(YAMLNode.Scalar(string: inner.replacingPairs(of: "'"), isQuoted: true, mark: mark))
        default:
            return .scalar(YAMLNode.Scalar(string: text, isQuoted: false, mark: mark))
        }
    }

    static func splitFlow(_ text: String, line: Int) throws -> [String] {
        var parts: [String] = []
        var current = ""
        var quote: Character?
        for character in text {
            if let open = quote {
                current.append(character)
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                quote = character
                current.append(character)
            } else if character == "[" || character == "{" {
                throw SpecYAMLError(line: line, message: "nested [ ] or { } are not used in \(PatchSpecFileName.name)")
            } else if character == "," {
                parts.append(current.trimmingWhitespace())
                current = ""
            } else {
                current.append(character)
            }
        }
        if quote != nil { throw SpecYAMLError(line: line, message: "a quoted value without its closing quote") }
        let last = current.trimmingWhitespace()
        if !last.isEmpty { parts.append(last) }
        if parts.contains(where: \.isEmpty) { throw SpecYAMLError(line: line, message: "an empty item in a [ ] list") }
        return parts
    }

    static func doubleQuoted(_ text: String, line: Int) throws -> String {
        var result = ""
        var characters = text.unicodeScalars.dropFirst()
        while let scalar = characters.popFirst() {
            switch scalar {
            case "\"":
                guard characters.isEmpty else { throw SpecYAMLError(line: line, message: "text after a closing quote") }
                return result
            case "\\":
                guard let escape = characters.popFirst() else { break }
                switch escape {
                case "n": result += "\n"
                case "t": result += "\t"
                case "\\", "\"", "/", " ": result.unicodeScalars.append(escape)
                case "0": result += "\0"
                case "x", "u", "U":
                    let digits = escape == "x" ? 2 : escape == "u" ? 4 : 8
                    let hex = String(String.UnicodeScalarView(characters.prefix(digits)))
                    guard hex.count == digits, let value = UInt32(hex, radix: 16), let decoded = Unicode.Scalar(value) else {
                        throw SpecYAMLError(line: line, message: "a bad \\\(escape) escape in a quoted value")
                    }
                    characters = characters.dropFirst(digits)
                    result.unicodeScalars.append(decoded)
                default:
                    throw SpecYAMLError(line: line, message: "unknown escape \\\(escape) in a \" quoted value; use ' quotes for backslashes")
                }
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        throw SpecYAMLError(line: line, message: "a \" quoted value without its closing \"")
    }
}

/// The spec file's name, for messages (``PatchSpec/fileName`` without reaching into the struct from here).
enum PatchSpecFileName { static let name = "apkpatch.yml" }

private extension String {
    /// `''` → `'` (single-quoted YAML).
    func replacingPairs(of quote: Character) -> String {
        var result = ""
        var skip = false
        for character in self {
            if skip { skip = false; continue }
            result.append(character)
            if character == quote { skip = true }
        }
        return result
    }
}
