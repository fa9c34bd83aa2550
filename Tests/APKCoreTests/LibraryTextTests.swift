import Foundation
import Testing
import TestSupport

/// The libraries say what is wrong in their own terms (a minSdkVersion, a lineage, a device serial); only the
/// command line (Sources/apkpatch) names its options, as hints it adds to their errors and reports.
@Suite(.removesTemporaryDirectories) struct LibraryTextTests {
    /// Every long option of every apkpatch command, from ArgumentParser's description of the command tree.
    static func commandLineOptions() throws -> Set<String> {
        let dump = try TestSupport.apkpatch(["--experimental-dump-help"])
        #expect(dump.succeeded, "\(dump)")
        var names: Set<String> = []
        func walk(_ value: Any) {
            if let object = value as? [String: Any] {
                if object["kind"] as? String == "long", let name = object["name"] as? String { names.insert("--" + name) }
                object.values.forEach(walk)
            } else if let array = value as? [Any] {
                array.forEach(walk)
            }
        }
        walk(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)))
        return names
    }

    /// The string literals of a Swift line that is not a comment (enough for one-line literals; the embedded
    /// templates, which are shell and YAML for other tools, are left out by the caller).
    static func literals(in line: Substring) -> [String] {
        guard !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") else { return [] }
        var result: [String] = [], current = "", inside = false, escaped = false
        for character in line {
            if inside {
                if escaped { escaped = false; current.append(character); continue }
                if character == "\\" { escaped = true; current.append(character); continue }
                if character == "\"" { result.append(current); current = ""; inside = false; continue }
                current.append(character)
            } else if character == "\"" {
                inside = true
            }
        }
        return result
    }

    /// Another tool's command line quoted in a message (`adb devices`, bundletool's flags) is not one of ours.
    static func withoutOtherTools(_ text: String) -> String {
        var text = text.replacingOccurrences(of: "`[^`]*`", with: "", options: .regularExpression)
        text = text.replacingOccurrences(of: "bundletool [a-z-]+ [^)]*\\)", with: ")", options: .regularExpression)
        text = text.replacingOccurrences(of: "bundletool --mode=[a-z]+", with: "", options: .regularExpression)
        return text
    }

    @Test func librariesNameNoCommandLineOption() throws {
        let options = try Self.commandLineOptions()
        #expect(options.contains("--min-sdk-version") && options.contains("--next-signer") && options.contains("--serial"), "\(options.sorted())")
        let sources = TestSupport.packageRoot.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") && !$0.hasPrefix("apkpatch/") && !$0.hasSuffix("EmbeddedTemplates.swift") }
        #expect(files.count > 100)
        var found: [String] = []
        for file in files.sorted() {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                for literal in Self.literals(in: line) {
                    let checked = Self.withoutOtherTools(literal)
                    let named = options.filter { option in
                        checked.range(of: NSRegularExpression.escapedPattern(for: option) + "(?![a-z0-9-])", options: .regularExpression) != nil
                    }
                    if !named.isEmpty { found.append("Sources/\(file):\(number + 1): \(named.sorted()) in \(literal)") }
                }
            }
        }
        #expect(found.isEmpty, "library text naming command-line options:\n\(found.joined(separator: "\n"))")
    }
}
