import APKCore

/// The Mustache the files under `Templates/` are written in (mustache(5), spec v1.3 without lambdas):
/// variables (`{{x}}` HTML-escaped, `{{{x}}}` and `{{& x}}` raw), sections (`{{#x}}…{{/x}}`) and inverted sections
/// (`{{^x}}…{{/x}}`), comments (`{{! … }}`), partials (`{{> name}}`, indented as the tag is) and delimiter changes
/// (`{{=<% %>=}}`), with the spec's standalone-line rule: a line holding only a section, comment, partial or
/// delimiter tag leaves no blank line behind.
///
/// A template library would do the same and more, but it imports all of Foundation, whose ICU data would make up
/// most of the binary; these templates need only the above.
struct MustacheTemplate {
    indirect enum Part {
        case text(String)
        case variable(String, escaped: Bool)
        case section(String, inverted: Bool, [Part])
        case partial(String, indentation: String)
    }

    let parts: [Part]
    /// The text, for a standalone partial, which is indented line by line before it is parsed.
    let source: String

    init(string: String) throws {
        var parser = Parser(text: Array(string))
        parts = try parser.parse()
        source = string
    }

    /// Values may be `String`, `Bool`, numbers, `[String: Any]` (a section renders with it in scope) or arrays of those
    /// (a section renders once per element); a missing key renders as nothing and is false.
    func render(_ context: [String: Any], partials: [String: MustacheTemplate]) -> String {
        var output = ""
        Self.render(parts, stack: [context], partials: partials, into: &output)
        return output
    }

    private static func lookup(_ name: String, in stack: [Any]) -> Any? {
        if name == "." { return stack.last }
        let path = name.split(separator: ".").map(String.init)
        for frame in stack.reversed() {
            guard let dictionary = frame as? [String: Any], var value = dictionary[path[0]] else { continue }
            for key in path.dropFirst() {
                guard let next = (value as? [String: Any])?[key] else { return nil }
                value = next
            }
            return value
        }
        return nil
    }

    private static func isFalsey(_ value: Any?) -> Bool {
        switch value {
        case nil: return true
        case let bool as Bool: return !bool
        case let array as [Any]: return array.isEmpty
        case let string as String: return string.isEmpty
        default: return false
        }
    }

    private static func render(_ parts: [Part], stack: [Any], partials: [String: MustacheTemplate], into output: inout String) {
        for part in parts {
            switch part {
            case .text(let text):
                output += text
            case .variable(let name, let escaped):
                guard let value = lookup(name, in: stack) else { continue }
                let text = "\(value)"
                output += escaped ? htmlEscaped(text) : text
            case .section(let name, let inverted, let body):
                let value = lookup(name, in: stack)
                if inverted {
                    if isFalsey(value) { render(body, stack: stack, partials: partials, into: &output) }
                } else if !isFalsey(value) {
                    if let array = value as? [Any] {
                        for element in array { render(body, stack: stack + [element], partials: partials, into: &output) }
                    } else {
                        render(body, stack: stack + [value!], partials: partials, into: &output)
                    }
                }
            case .partial(let name, let indentation):
                guard var partial = partials[name] else { continue }
                if !indentation.isEmpty {
                    // Every line of a standalone partial's template (not of the values it inserts) gets the tag's
                    // indentation; the partial parsed once already, so the indented text parses too.
                    var indented = ""
                    var atLineStart = true
                    for character in partial.source {
                        if atLineStart { indented += indentation }
                        indented.append(character)
                        atLineStart = character.isNewline
                    }
                    if let reparsed = try? MustacheTemplate(string: indented) { partial = reparsed }
                }
                render(partial.parts, stack: stack, partials: partials, into: &output)
            }
        }
    }

    private static func htmlEscaped(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            default: result.append(character)
            }
        }
        return result
    }

    /// A Mustache syntax error; `line` is 1-based.
    struct SyntaxError: Error, CustomStringConvertible {
        var line: Int
        var message: String
        var description: String { "line \(line): \(message)" }
    }

    private struct Parser {
        let text: [Character]
        var index = 0
        var open: [Character] = ["{", "{"]
        var close: [Character] = ["}", "}"]

        init(text: [Character]) { self.text = text }

        func line(at position: Int) -> Int { text[..<min(position, text.count)].filter(\.isNewline).count + 1 }

        func matches(_ token: [Character], at position: Int) -> Bool {
            position + token.count <= text.count && Array(text[position..<position + token.count]) == token
        }

        func find(_ token: [Character], from position: Int) -> Int? {
            var position = position
            while position + token.count <= text.count {
                if matches(token, at: position) { return position }
                position += 1
            }
            return nil
        }

        /// Parses up to the end, or up to the `{{/name}}` closing `section`.
        mutating func parse(section: String? = nil, sectionLine: Int = 0) throws -> [Part] {
            var parts: [Part] = []
            var pending = ""
            func flush() { if !pending.isEmpty { parts.append(.text(pending)); pending = "" } }
            while index < text.count {
                guard matches(open, at: index) else {
                    pending.append(text[index])
                    index += 1
                    continue
                }
                let tagStart = index
                var contentStart = index + open.count
                var kind: Character = " "
                var closing = close
                if contentStart < text.count, "!#^/>=&{".contains(text[contentStart]) {
                    kind = text[contentStart]
                    contentStart += 1
                }
                if kind == "{" { closing = ["}"] + close }
                if kind == "=" { closing = ["="] + close }
                guard let contentEnd = find(closing, from: contentStart) else {
                    throw SyntaxError(line: line(at: tagStart), message: "tag \(String(open)) not closed with \(String(closing))")
                }
                let content = String(text[contentStart..<contentEnd]).trimmingWhitespace()
                let tagEnd = contentEnd + closing.count

                // Standalone: only whitespace around the tag on its line, and a tag kind that prints nothing itself.
                var lineStart = tagStart
                while lineStart > 0, text[lineStart - 1] == " " || text[lineStart - 1] == "\t" { lineStart -= 1 }
                let startsLine = lineStart == 0 || text[lineStart - 1].isNewline
                var lineEnd = tagEnd
                while lineEnd < text.count, text[lineEnd] == " " || text[lineEnd] == "\t" { lineEnd += 1 }
                // "\r\n" is one Character, which isNewline also matches.
                let endsLine = lineEnd == text.count || text[lineEnd].isNewline
                let standalone = "!#^/>=".contains(kind) && startsLine && endsLine
                var indentation = ""
                if standalone {
                    // Drop the whitespace before the tag from the pending text, and the line break after it.
                    indentation = String(text[lineStart..<tagStart])
                    pending.removeLast(tagStart - lineStart)
                    index = lineEnd
                    if index < text.count, text[index].isNewline { index += 1 }
                } else {
                    index = tagEnd
                }

                switch kind {
                case "!":
                    continue
                case "=":
                    let delimiters = content.split(separator: " ", omittingEmptySubsequences: true)
                    guard delimiters.count == 2 else {
                        throw SyntaxError(line: line(at: tagStart), message: "a delimiter change needs two delimiters, as in {{=<% %>=}}")
                    }
                    open = Array(delimiters[0])
                    close = Array(delimiters[1])
                case "#", "^":
                    flush()
                    let body = try parse(section: content, sectionLine: line(at: tagStart))
                    parts.append(.section(content, inverted: kind == "^", body))
                case "/":
                    guard content == section else {
                        throw SyntaxError(line: line(at: tagStart), message: section.map { "{{/\(content)}} closes nothing: the open section is \($0)" }
                                          ?? "{{/\(content)}} closes a section that was never opened")
                    }
                    flush()
                    return parts
                case ">":
                    flush()
                    parts.append(.partial(content, indentation: standalone ? indentation : ""))
                case "&", "{":
                    flush()
                    parts.append(.variable(content, escaped: false))
                default:
                    flush()
                    parts.append(.variable(content, escaped: true))
                }
            }
            if let section {
                throw SyntaxError(line: sectionLine, message: "section \(section) is never closed")
            }
            flush()
            return parts
        }
    }
}
