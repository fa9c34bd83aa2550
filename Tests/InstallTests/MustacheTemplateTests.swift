import Testing
@testable import Install

/// The Mustache subset the templates use, against the mustache(5) spec's own cases (spec v1.3: interpolation,
/// sections, inverted, comments, partials, delimiters; standalone lines leave no blank line behind).
@Suite(.removesTemporaryDirectories) struct MustacheTemplateTests {
    func render(_ template: String, _ context: [String: Any], partials: [String: String] = [:]) throws -> String {
        let compiled = try partials.mapValues { try MustacheTemplate(string: $0) }
        return try MustacheTemplate(string: template).render(context, partials: compiled)
    }

    @Test func interpolation() throws {
        #expect(try render("Hello, {{subject}}!", ["subject": "world"]) == "Hello, world!")
        #expect(try render("{{x}} {{{x}}} {{& x}}", ["x": "& \" < >"]) == "&amp; &quot; &lt; &gt; & \" < > & \" < >")
        #expect(try render("[{{missing}}]", [:]) == "[]")
        #expect(try render("{{a.b}}", ["a": ["b": "deep"]]) == "deep")
    }

    @Test func sections() throws {
        #expect(try render("{{#t}}yes{{/t}}{{^t}}no{{/t}}", ["t": true]) == "yes")
        #expect(try render("{{#t}}yes{{/t}}{{^t}}no{{/t}}", ["t": false]) == "no")
        #expect(try render("{{#t}}yes{{/t}}{{^t}}no{{/t}}", [:]) == "no")
        #expect(try render("{{#s}}[{{s}}]{{/s}}", ["s": "v"]) == "[v]")
        #expect(try render("{{#list}}{{name}},{{/list}}", ["list": [["name": "a"], ["name": "b"]]]) == "a,b,")
        // Spec "Standalone Lines" and "Indented Inline Sections".
        #expect(try render("| This Is\n{{#boolean}}\n|\n{{/boolean}}\n| A Line\n", ["boolean": true]) == "| This Is\n|\n| A Line\n")
        #expect(try render(" {{#boolean}}YES{{/boolean}}\n {{#boolean}}GOOD{{/boolean}}\n", ["boolean": true]) == " YES\n GOOD\n")
        #expect(try render("|\r\n{{#boolean}}\r\n{{/boolean}}\r\n|", ["boolean": true]) == "|\r\n|")
        #expect(try render("  {{#boolean}}\n#{{/boolean}}\n/", ["boolean": true]) == "#\n/")
    }

    @Test func commentsDelimitersAndPartials() throws {
        #expect(try render("Begin.\n{{! Comment Block! }}\nEnd.\n", [:]) == "Begin.\nEnd.\n")
        #expect(try render("12345{{! Comment Block! }}67890", [:]) == "1234567890")
        #expect(try render("{{=<% %>=}}(<%text%>) {{x}}", ["text": "It worked!"]) == "(It worked!) {{x}}")
        #expect(try render("[\n{{=@ @=}}\n]\n", [:]) == "[\n]\n")
        #expect(try render("\\\n {{>partial}}\n/\n", ["content": "<\n->"], partials: ["partial": "|\n{{{content}}}\n|\n"])
                == "\\\n |\n <\n->\n |\n/\n")
        #expect(try render(">{{>missing}}<", [:]) == "><")
    }

    @Test(arguments: ["{{#a}}open", "{{/a}}", "{{#a}}{{/b}}", "{{unclosed", "{{=<% %>=}}<%#a%>"])
    func refusesBrokenTemplates(_ template: String) {
        #expect(throws: MustacheTemplate.SyntaxError.self) { try MustacheTemplate(string: template) }
    }
}
