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

@Suite(.removesTemporaryDirectories) struct CITemplateTests {
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
        // Secrets are only ever named, never expanded on a command line or echoed; their presence is tested with
        // ${NAME:+set}, which expands to "set", never to the value.
        let withoutPresenceTests = commands.replacingOccurrences(of: "${APKPATCH_KEYSTORE_BASE64:+set}", with: "")
            .replacingOccurrences(of: "${APKPATCH_KEYSTORE_PASSWORD:+set}", with: "")
        #expect(!withoutPresenceTests.contains("$APKPATCH_KEYSTORE"))
        #expect(!withoutPresenceTests.contains("${APKPATCH_KEYSTORE"))
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

    /// The jobs' shell steps, run here as the runner runs them (the secrets as environment variables, as GitHub and
    /// GitLab pass them), install apkpatch from a local release archive after checking its SHA-256, and produce an APK
    /// that apksigner verifies; no secret shows up in the output. PATH holds no apkpatch but the one installed.
    @Test(arguments: CITemplate.allCases)
    func shellStepsInstallSignAndVerify(provider: CITemplate) throws {
        let work = try TestSupport.makeTemporaryDirectory("ci-local")
        let password = "ci-Secret-pw-4711"
        let keystore = try makeKeystore(in: work, password: password)
        let keystoreBase64 = try Data(contentsOf: keystore).base64EncodedString()
        let release = try LocalRelease.make(in: work)
        let parameters = CITemplate.Parameters(unsignedAPK: "build/app unsigned.apk", signedAPK: "dist/app-signed.apk",
                                               version: "0.0.0", releaseURL: release.url, releaseSHA256: release.sha256)
        try FileManager.default.createDirectory(at: work.appendingPathComponent("dist"), withIntermediateDirectories: true)
        _ = try FixtureAPK.cordovaLike().build(in: work.appendingPathComponent("build"), name: "app unsigned.apk")
        let secrets = ["APKPATCH_KEYSTORE_BASE64": keystoreBase64, "APKPATCH_KEYSTORE_PASSWORD": password]
        let run = try CIJob(provider, parameters: parameters, work: work).run(secrets: secrets)
        #expect(run.failure == nil, "\(provider): \(run.failure.map { "\($0.step):\n\($0.result)" } ?? "")")
        #expect(run.steps == (provider == .github ? 3 : 1))  // GitLab runs before_script and script in one shell
        let signed = work.appendingPathComponent("dist/app-signed.apk").path
        let verify = try TestSupport.run("apksigner", ["verify", "--print-certs", signed])
        #expect(verify.succeeded, "\(verify)")
        #expect(verify.stdout.contains("CN=CI Release"))
        #expect(!run.transcript.contains(password))
        #expect(!run.transcript.contains(String(keystoreBase64.prefix(24))))
    }

    /// A missing secret stops the job before apkpatch runs, naming the secret and where to set it.
    @Test(arguments: CITemplate.allCases)
    func missingSecretFailsWithItsName(provider: CITemplate) throws {
        let work = try TestSupport.makeTemporaryDirectory("ci-local")
        let release = try LocalRelease.make(in: work)
        let parameters = CITemplate.Parameters(version: "0.0.0", releaseURL: release.url, releaseSHA256: release.sha256)
        // GitHub passes a secret that does not exist as an empty string.
        let run = try CIJob(provider, parameters: parameters, work: work).run(secrets: ["APKPATCH_KEYSTORE_BASE64": "", "APKPATCH_KEYSTORE_PASSWORD": "x"])
        let failure = try #require(run.failure)
        #expect(failure.result.stderr.contains("APKPATCH_KEYSTORE_BASE64") && !failure.result.stderr.contains("PASSWORD"), "\(failure.result)")
        #expect(failure.result.stderr.contains(provider == .github ? "Settings > Secrets and variables > Actions" : "Settings > CI/CD > Variables"))
    }

    /// An archive whose SHA-256 is not the pinned one is never unpacked or run.
    @Test(arguments: CITemplate.allCases)
    func changedReleaseIsRefused(provider: CITemplate) throws {
        let work = try TestSupport.makeTemporaryDirectory("ci-local")
        let release = try LocalRelease.make(in: work)
        let wrong = String(release.sha256.reversed())
        let parameters = CITemplate.Parameters(version: "0.0.0", releaseURL: release.url, releaseSHA256: wrong)
        let run = try CIJob(provider, parameters: parameters, work: work).run(secrets: ["APKPATCH_KEYSTORE_BASE64": "a", "APKPATCH_KEYSTORE_PASSWORD": "b"])
        let failure = try #require(run.failure)
        #expect(failure.result.stdout.contains("FAILED") || failure.result.stderr.contains("FAILED"), "\(failure.result)")
        #expect(!run.transcript.contains("(commit "), "apkpatch ran:\n\(run.transcript)")
        // Unfilled, the job says what to fill in.
        let unfilled = try CIJob(provider, parameters: CITemplate.Parameters(), work: work).run(secrets: [:])
        #expect(unfilled.failure?.result.stderr.contains("APKPATCH_RELEASE_SHA256") == true, "\(String(describing: unfilled.failure?.result))")
    }
}

/// A rendered CI job's shell steps, run as the runner runs them: GitHub's `bash --noprofile --norc -eo pipefail` per
/// step with the job's and the step's env: (`${{ secrets.NAME }}` substituted as GitHub substitutes it), RUNNER_TEMP and
/// GITHUB_PATH honoured between steps; GitLab's before_script and script in one shell with the variables and the CI/CD
/// variables in its environment, less the lines that set up the image (apt-get), which the runner image has done.
struct CIJob {
    let steps: [(name: String, script: String, environment: [String: String])]
    let jobEnvironment: [String: String]
    let work: URL
    let usesGitHubPath: Bool

    init(_ provider: CITemplate, parameters: CITemplate.Parameters, work: URL) throws {
        let document = try #require(try parseYAML(try provider.render(parameters, templates: sourceTemplates())) as? [String: Any])
        self.work = work
        var steps: [(String, String, [String: String])] = []
        switch provider {
        case .github:
            let job = try #require((document["jobs"] as? [String: Any])?["sign"] as? [String: Any])
            jobEnvironment = try #require(job["env"] as? [String: String])
            for step in try #require(job["steps"] as? [[String: Any]]) {
                guard let run = step["run"] as? String else { continue }
                steps.append((step["name"] as? String ?? "step", run, step["env"] as? [String: String] ?? [:]))
            }
            usesGitHubPath = true
        case .gitlab:
            let job = try #require(document["sign-apk"] as? [String: Any])
            jobEnvironment = try #require(job["variables"] as? [String: String])
            let lines = (job["before_script"] as? [String] ?? []) + (try #require(job["script"] as? [String]))
            let script = lines.filter { !$0.hasPrefix("apt-get") }.joined(separator: "\n")
            steps.append(("before_script + script", script, [:]))
            usesGitHubPath = false
        }
        self.steps = steps
    }

    struct Outcome {
        var transcript = ""
        var steps = 0
        var failure: (step: String, result: TestSupport.ProcessResult)?
    }

    func run(secrets: [String: String]) throws -> Outcome {
        let runnerTemp = work.appendingPathComponent("runner-temp-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: runnerTemp, withIntermediateDirectories: true)
        let githubPath = runnerTemp.appendingPathComponent("github_path")
        FileManager.default.createFile(atPath: githubPath.path, contents: nil)
        // Only system tools on PATH: the apkpatch that signs is the one the job installed.
        var path = "/usr/bin:/bin"
        var outcome = Outcome()
        for step in steps {
            var environment = jobEnvironment
            environment["PATH"] = path
            environment["HOME"] = work.path
            environment["RUNNER_TEMP"] = runnerTemp.path
            environment["TMPDIR"] = runnerTemp.path
            environment["GITHUB_PATH"] = githubPath.path
            environment["GITHUB_OUTPUT"] = runnerTemp.appendingPathComponent("github_output").path
            if usesGitHubPath {
                for (key, value) in step.environment {
                    let name = value.replacingOccurrences(of: "${{ secrets.", with: "").replacingOccurrences(of: " }}", with: "")
                    environment[key] = value.hasPrefix("${{ secrets.") ? secrets[name] ?? "" : value
                }
            } else {
                environment.merge(secrets) { $1 }
            }
            let result = try TestSupport.run("/usr/bin/env", ["-i"] + environment.map { "\($0)=\($1)" }
                                             + ["/bin/bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step.script],
                                             currentDirectory: work.path)
            outcome.transcript += result.stdout + result.stderr
            outcome.steps += 1
            if !result.succeeded {
                outcome.failure = (step.name, result)
                return outcome
            }
            let added = (try? String(contentsOf: githubPath, encoding: .utf8))?.split(separator: "\n").reversed().joined(separator: ":") ?? ""
            if !added.isEmpty { path = added + ":/usr/bin:/bin" }
        }
        return outcome
    }
}
