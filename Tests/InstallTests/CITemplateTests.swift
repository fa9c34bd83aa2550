import Foundation
import Testing
import Install
import TestSupport
import Yams

/// Parses YAML with Yams (the library apkpatch itself reads apkpatch.yml with): the rendered files must be valid YAML.
/// Mappings come back as `[String: Any]` (non-string keys such as GitHub's `on`, a YAML 1.1 boolean, are stringified),
/// null as `NSNull`.
func parseYAML(_ text: String) throws -> Any {
    func normalize(_ value: Any?) -> Any {
        switch value {
        case nil: return NSNull()
        case let mapping as [AnyHashable: Any]:
            var result: [String: Any] = [:]
            for (key, item) in mapping { result["\(key.base)"] = normalize(item) }
            return result
        case let mapping as [String: Any]: return mapping.mapValues { normalize($0) }
        case let sequence as [Any]: return sequence.map { normalize($0) }
        case let value?: return value
        }
    }
    do {
        return normalize(try Yams.load(yaml: text))
    } catch {
        throw FixtureError(message: "not valid YAML: \(error)\n\(text)")
    }
}

/// A PKCS#12 keystore made by keytool (the oracle for "a keystore users already have").
func makeKeystore(in directory: URL, password: String) throws -> URL {
    let keystore = directory.appendingPathComponent("release.p12")
    try TestSupport.makeKeyStore(at: keystore.path, password: password, dname: "CN=CI Release, O=Example, C=US")
    return keystore
}

@Suite struct CITemplateTests {
    @Test(arguments: CITemplate.allCases)
    func rendersValidYAMLThatSignsFromSecrets(provider: CITemplate) throws {
        let text = try provider.render(templates: sourceTemplates())
        #expect(!text.contains("<%"), "unrendered tag")
        #expect(!text.contains("{{="), "delimiter switch left in output")
        let document = try #require(try parseYAML(text) as? [String: Any])
        let commands: String
        switch provider {
        case .github:
            let job = try #require((document["jobs"] as? [String: Any])?["sign"] as? [String: Any])
            let steps = try #require(job["steps"] as? [[String: Any]])
            let sign = try #require(steps.first { $0["id"] as? String == "sign" })
            let env = try #require(sign["env"] as? [String: String])
            #expect(env["APKPATCH_KEYSTORE_BASE64"] == "${{ secrets.APKPATCH_KEYSTORE_BASE64 }}")
            #expect(env["APKPATCH_KEYSTORE_PASSWORD"] == "${{ secrets.APKPATCH_KEYSTORE_PASSWORD }}")
            #expect((job["env"] as? [String: String])?["UNSIGNED_APK"] == "app/build/outputs/apk/release/app-release-unsigned.apk")
            commands = steps.compactMap { $0["run"] as? String }.joined(separator: "\n")
        case .gitlab:
            let job = try #require(document["sign-apk"] as? [String: Any])
            commands = try #require(job["script"] as? [String]).joined(separator: "\n")
            #expect((job["variables"] as? [String: String])?["SIGNED_APK"] == "app-release-signed.apk")
        }
        #expect(commands.contains("--ks-base64 env:APKPATCH_KEYSTORE_BASE64"))
        #expect(commands.contains("--ks-pass env:APKPATCH_KEYSTORE_PASSWORD"))
        #expect(commands.contains("apkpatch verify"))
        // Secrets are only ever named, never expanded on a command line or echoed.
        #expect(!commands.contains("$APKPATCH_KEYSTORE"))
        #expect(!commands.contains("${APKPATCH_KEYSTORE"))
        #expect(!commands.contains("set -x"))
    }

    @Test(arguments: CITemplate.allCases)
    func parametersSurviveAwkwardPaths(provider: CITemplate) throws {
        let parameters = CITemplate.Parameters(unsignedAPK: "out dir/it's \"unsigned\" #1.apk", signedAPK: "signed: ok.apk", secretPrefix: "RELEASE_2")
        let text = try provider.render(parameters, templates: sourceTemplates())
        let document = try #require(try parseYAML(text) as? [String: Any])
        let variables: [String: String]?
        switch provider {
        case .github: variables = ((document["jobs"] as? [String: Any])?["sign"] as? [String: Any])?["env"] as? [String: String]
        case .gitlab: variables = (document["sign-apk"] as? [String: Any])?["variables"] as? [String: String]
        }
        #expect(variables?["UNSIGNED_APK"] == parameters.unsignedAPK)
        #expect(variables?["SIGNED_APK"] == parameters.signedAPK)
        #expect(text.contains("--ks-base64 env:RELEASE_2_KEYSTORE_BASE64"))
        #expect(!text.contains("APKPATCH_KEYSTORE"))
    }

    @Test func rejectsBadParameters() throws {
        #expect(throws: CITemplateError.invalidSecretPrefix("my-secret")) {
            try CITemplate.github.render(.init(secretPrefix: "my-secret"), templates: sourceTemplates())
        }
        #expect(throws: CITemplateError.invalidSecretPrefix("")) {
            try CITemplate.gitlab.render(.init(secretPrefix: ""), templates: sourceTemplates())
        }
        #expect(throws: CITemplateError.invalidPath("")) {
            try CITemplate.gitlab.render(.init(unsignedAPK: ""), templates: sourceTemplates())
        }
    }

    /// Issue 6's proof: the GitHub workflow's shell steps, run here with the secrets as environment variables (as
    /// GitHub passes them), produce an APK that apksigner verifies, and no secret shows up in the output.
    @Test(arguments: CITemplate.allCases)
    func shellStepsSignLocally(provider: CITemplate) throws {
        let work = try TestSupport.makeTemporaryDirectory("ci-local")
        let password = "ci-Secret-pw-4711"
        let keystore = try makeKeystore(in: work, password: password)
        let keystoreBase64 = try Data(contentsOf: keystore).base64EncodedString()
        let parameters = CITemplate.Parameters(unsignedAPK: "build/app unsigned.apk", signedAPK: "dist/app-signed.apk")
        try FileManager.default.createDirectory(at: work.appendingPathComponent("dist"), withIntermediateDirectories: true)
        _ = try FixtureAPK.cordovaLike().build(in: work.appendingPathComponent("build"), name: "app unsigned.apk")
        let document = try #require(try parseYAML(try provider.render(parameters, templates: sourceTemplates())) as? [String: Any])

        let secrets = ["APKPATCH_KEYSTORE_BASE64": keystoreBase64, "APKPATCH_KEYSTORE_PASSWORD": password]
        var environment = ProcessInfo.processInfo.environment
        let binDirectory = URL(fileURLWithPath: TestSupport.apkpatchBinary).deletingLastPathComponent().path
        environment["PATH"] = binDirectory + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        // (step name, script, extra environment)
        var steps: [(String, String, [String: String])] = []
        switch provider {
        case .github:
            let job = try #require((document["jobs"] as? [String: Any])?["sign"] as? [String: Any])
            for (key, value) in try #require(job["env"] as? [String: String]) { environment[key] = value }
            for step in try #require(job["steps"] as? [[String: Any]]) {
                // Installing apkpatch is the one step that differs: here it is the binary under test.
                guard let run = step["run"] as? String, step["id"] as? String != "install-apkpatch" else { continue }
                var stepEnvironment: [String: String] = [:]
                for (key, value) in step["env"] as? [String: String] ?? [:] {
                    // GitHub substitutes ${{ secrets.NAME }} before the step runs.
                    let name = value.replacingOccurrences(of: "${{ secrets.", with: "").replacingOccurrences(of: " }}", with: "")
                    stepEnvironment[key] = secrets[name] ?? value
                }
                steps.append((step["name"] as? String ?? "step", run, stepEnvironment))
            }
        case .gitlab:
            let job = try #require(document["sign-apk"] as? [String: Any])
            for (key, value) in try #require(job["variables"] as? [String: String]) { environment[key] = value }
            // GitLab puts masked CI/CD variables straight into the job environment.
            for (index, line) in try #require(job["script"] as? [String]).enumerated() { steps.append(("script[\(index)]", line, secrets)) }
        }
        #expect(steps.count == 2)
        var transcript = ""
        for (name, script, stepEnvironment) in steps {
            let result = try TestSupport.run("/bin/bash", ["-e", "-c", script], environment: environment.merging(stepEnvironment) { $1 },
                                             currentDirectory: work.path)
            transcript += result.stdout + result.stderr
            #expect(result.succeeded, "\(provider) \(name):\n\(result)")
        }
        let signed = work.appendingPathComponent("dist/app-signed.apk").path
        let verify = try TestSupport.run("apksigner", ["verify", "--print-certs", signed])
        #expect(verify.succeeded, "\(verify)")
        #expect(verify.stdout.contains("CN=CI Release"))
        #expect(!transcript.contains(password))
        #expect(!transcript.contains(String(keystoreBase64.prefix(24))))
    }
}
