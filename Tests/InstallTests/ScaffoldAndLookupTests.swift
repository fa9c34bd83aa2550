import Foundation
import Testing
import Install
import Overlay
import TestSupport

@Suite(.removesTemporaryDirectories) struct PatchDirectoryScaffoldTests {
    @Test func createsTheScaffoldFromTheTemplates() throws {
        let directory = try TestSupport.makeTemporaryDirectory("scaffold").appendingPathComponent("patch")
        let result = try PatchDirectoryScaffold.create(at: directory.path, templates: sourceTemplates())
        #expect(result.files == ["apkpatch.yml"])
        #expect(result.folders == ["assets/www"])
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("assets/www").path, isDirectory: &isDirectory) && isDirectory.boolValue)
        // The folder marker is not copied: every file in a patch dir would become an APK entry.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("assets/www").path).isEmpty)
        let yml = try String(contentsOf: directory.appendingPathComponent("apkpatch.yml"), encoding: .utf8)
        for key in ["delete:", "store:", "deflate:", "manifest:", "debuggable:", "versionCode:", "versionName:", "label:",
                    "usesCleartextTraffic:", "extractNativeLibs:", "minSdkVersion:", "targetSdkVersion:", "package:", "networkSecurity:"] {
            #expect(yml.contains("# \(key)") || yml.contains("#   \(key)"), "\(key) example missing")
        }
        // All examples are commented out: apkpatch's own parser reads the scaffold as an empty patch.
        #expect(try PatchSpec(yaml: yml, path: "apkpatch.yml") == PatchSpec())
        // Uncommenting the examples (dropping "# " from each example line below the marker) gives a spec
        // that the parser accepts with every documented shortcut set.
        let examples = try #require(yml.range(of: "Everything below is an example")).upperBound
        let uncommented = yml[examples...].split(separator: "\n", omittingEmptySubsequences: false).dropFirst().map { line -> String in
            let body = line.dropFirst(2)
            let isExample = line.hasPrefix("# ") && (body.hasPrefix("  ") || body.range(of: #"^[a-zA-Z]+:"#, options: .regularExpression) != nil)
            return isExample ? String(body) : (line.hasPrefix("#") ? "" : String(line))
        }.joined(separator: "\n")
        let spec = try PatchSpec(yaml: uncommented, path: "apkpatch.yml (uncommented)")
        #expect(!spec.delete.isEmpty && !spec.store.isEmpty && !spec.deflate.isEmpty)
        let manifest = spec.manifest
        #expect(manifest.debuggable == true)
        #expect(manifest.versionCode == 42)
        #expect(manifest.versionName == "1.2.3-patched")
        #expect(manifest.label == "My App (patched)")
        #expect(manifest.usesCleartextTraffic == true)
        #expect(manifest.extractNativeLibs == false)
        #expect(manifest.minSdkVersion == .level(24))
        #expect(manifest.targetSdkVersion == .level(34))
        #expect(manifest.packageName == "com.example.copy")
        #expect(spec.networkSecurity.trustUserCertificates)
    }

    @Test func refusesToOverwriteUnlessAsked() throws {
        let directory = try TestSupport.makeTemporaryDirectory("scaffold")
        try TestSupport.write("delete: [\"x\"]\n", to: "apkpatch.yml", in: directory)
        #expect(throws: ScaffoldError.fileExists(directory.appendingPathComponent("apkpatch.yml").path)) {
            try PatchDirectoryScaffold.create(at: directory.path, templates: sourceTemplates())
        }
        #expect(try String(contentsOf: directory.appendingPathComponent("apkpatch.yml"), encoding: .utf8) == "delete: [\"x\"]\n")
        try PatchDirectoryScaffold.create(at: directory.path, templates: sourceTemplates(), overwrite: true)
        #expect(try String(contentsOf: directory.appendingPathComponent("apkpatch.yml"), encoding: .utf8).hasPrefix("# apkpatch patch directory."))
    }

    @Test func embeddedCopyMakesTheSameScaffold() throws {
        let a = try TestSupport.makeTemporaryDirectory("scaffold-a"), b = try TestSupport.makeTemporaryDirectory("scaffold-b")
        #expect(try PatchDirectoryScaffold.create(at: a.path, templates: sourceTemplates()) == PatchDirectoryScaffold.create(at: b.path, templates: .embedded))
        #expect(try Data(contentsOf: a.appendingPathComponent("apkpatch.yml")) == Data(contentsOf: b.appendingPathComponent("apkpatch.yml")))
    }
}

@Suite(.removesTemporaryDirectories) struct TemplateLookupTests {
    var cleanEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["APKPATCH_TEMPLATES"] = nil
        return environment
    }

    @Test func environmentOverrideWins() throws {
        let source = try sourceTemplates()
        var environment = cleanEnvironment
        environment["APKPATCH_TEMPLATES"] = TestSupport.packageRoot.appendingPathComponent("Templates").path
        #expect(try TemplateLibrary.locate(environment: environment, executablePath: "/nonexistent/bin/apkpatch").origin == source.origin)
        environment["APKPATCH_TEMPLATES"] = "/nonexistent/templates"
        #expect(throws: TemplateError.notATemplatesDirectory("/nonexistent/templates")) {
            try TemplateLibrary.locate(environment: environment, executablePath: "/nonexistent/bin/apkpatch")
        }
    }

    @Test func installedLayoutIsFound() throws {
        let prefix = try TestSupport.makeTemporaryDirectory("prefix")
        let share = prefix.appendingPathComponent("share/apkpatch/Templates")
        try FileManager.default.createDirectory(at: share.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: TestSupport.packageRoot.appendingPathComponent("Templates").path, toPath: share.path)
        let library = try TemplateLibrary.locate(environment: cleanEnvironment, executablePath: prefix.appendingPathComponent("bin/apkpatch").path)
        #expect(library.origin == .directory(share.path))
    }

    @Test func sourceTreeIsFoundFromABuildDirectory() throws {
        let executable = TestSupport.packageRoot.appendingPathComponent(".build-lookup-test/x86_64-unknown-linux-gnu/debug/apkpatch").path
        let library = try TemplateLibrary.locate(environment: cleanEnvironment, executablePath: executable)
        #expect(library.origin == .directory(TestSupport.packageRoot.appendingPathComponent("Templates").path))
    }

    @Test func fallsBackToTheBuiltInCopy() throws {
        let nowhere = try TestSupport.makeTemporaryDirectory("nowhere")
        let library = try TemplateLibrary.locate(environment: cleanEnvironment, executablePath: nowhere.appendingPathComponent("bin/apkpatch").path)
        #expect(library.origin == .embedded)
        #expect(try library.text(of: "ci/gitlab-ci.yml") == sourceTemplates().text(of: "ci/gitlab-ci.yml"))
    }

    @Test func brokenTemplateIsAClearError() throws {
        let root = try TestSupport.makeTemporaryDirectory("broken-templates")
        try TestSupport.write("{{#launch}}unterminated\n", to: "adb/install-command.mustache", in: root)
        let library = try TemplateLibrary(directory: root.path)
        #expect { try InstallCommands(apkPath: "a.apk", packageName: "p", templates: library) } throws: { error in
            guard case .invalid(let path, _, _)? = error as? TemplateError else { return false }
            return path == "adb/install-command.mustache"
        }
        #expect { try library.text(of: "ci/github-actions.yml") } throws: { error in
            (error as? TemplateError).map { "\($0)".contains("APKPATCH_TEMPLATES") } ?? false
        }
    }
}

/// The commands through the built binary.
@Suite(.removesTemporaryDirectories) struct InitAndCITemplateCommandTests {
    @Test func initScaffoldsAndRunAcceptsIt() throws {
        let work = try TestSupport.makeTemporaryDirectory("init-cli")
        let patch = work.appendingPathComponent("my patch").path
        let created = try TestSupport.apkpatch(["init", patch])
        #expect(created.succeeded, "\(created)")
        #expect(created.stdout.contains("apkpatch.yml"))
        #expect(FileManager.default.fileExists(atPath: patch + "/apkpatch.yml"))
        let again = try TestSupport.apkpatch(["init", patch])
        #expect(again.status != 0)
        #expect(again.stderr.contains("already exists") && again.stderr.contains("(pass --force)"), "\(again)")
        // The scaffold is a valid empty patch for the pipeline, once a web file is dropped in.
        try TestSupport.write("<html>patched</html>\n", to: "assets/www/index.html", in: URL(fileURLWithPath: patch))
        let apk = try FixtureAPK.cordovaLike().build(in: work)
        let out = work.appendingPathComponent("out.apk").path
        let run = try TestSupport.apkpatch(["run", apk, "--patch", patch, "--out", out, "--debug", "--debug-keystore", work.appendingPathComponent("debug.keystore").path])
        #expect(run.succeeded, "\(run)")
        #expect(try TestSupport.run("unzip", ["-p", out, "assets/www/index.html"]).stdout == "<html>patched</html>\n")
    }

    /// An installed binary finds PREFIX/share/apkpatch/Templates (a marked copy proves which one it read).
    @Test func installedBinaryUsesItsShareDirectory() throws {
        let prefix = try TestSupport.makeTemporaryDirectory("prefix-cli")
        let share = prefix.appendingPathComponent("share/apkpatch/Templates")
        try FileManager.default.createDirectory(at: share.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: TestSupport.packageRoot.appendingPathComponent("Templates").path, toPath: share.path)
        let gitlab = share.appendingPathComponent("ci/gitlab-ci.yml")
        try Data((try String(contentsOf: gitlab, encoding: .utf8) + "# installed copy\n").utf8).write(to: gitlab)
        try FileManager.default.createDirectory(at: prefix.appendingPathComponent("bin"), withIntermediateDirectories: true)
        let binary = prefix.appendingPathComponent("bin/apkpatch").path
        try FileManager.default.copyItem(atPath: TestSupport.apkpatchBinary, toPath: binary)
        var environment = ProcessInfo.processInfo.environment
        environment["APKPATCH_TEMPLATES"] = nil
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["ci-template", "gitlab"]
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(output.hasSuffix("# installed copy\n"))
        #expect(output.contains("--ks-base64 env:APKPATCH_KEYSTORE_BASE64"))
    }

    @Test func ciTemplatePrintsOrWrites() throws {
        let github = try TestSupport.apkpatch(["ci-template", "github", "--apk", "a.apk", "--signed-apk", "b.apk", "--release-version", "1.2.3"])
        #expect(github.succeeded, "\(github)")
        #expect(github.stdout == (try CITemplate.github.render(.init(unsignedAPK: "a.apk", signedAPK: "b.apk", version: "1.2.3"), templates: sourceTemplates())))
        let file = try TestSupport.makeTemporaryDirectory("ci-out").appendingPathComponent("sign.yml").path
        let written = try TestSupport.apkpatch(["ci-template", "gitlab", "-o", file, "--release-version", "1.2.3"])
        #expect(written.succeeded, "\(written)")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == CITemplate.gitlab.render(.init(version: "1.2.3"), templates: sourceTemplates()))
        let bad = try TestSupport.apkpatch(["ci-template", "jenkins"])
        #expect(bad.status != 0)
    }
}
