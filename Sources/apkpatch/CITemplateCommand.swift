import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Install

extension CITemplate: ExpressibleByArgument {}

extension APKPatch {
    /// `apkpatch ci-template github|gitlab`: a CI job that signs and verifies with apkpatch from repository secrets.
    struct CITemplateCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ci-template",
            abstract: "Print a GitHub Actions workflow or GitLab CI job that signs and verifies an APK with apkpatch.",
            discussion: """
            The job reads the keystore from a base64 secret (--ks-base64 env:PREFIX_KEYSTORE_BASE64) and its password \
            from another (--ks-pass env:PREFIX_KEYSTORE_PASSWORD): the keystore is never written to disk and no \
            secret is echoed or passed on a command line. Create the secrets with:
              base64 -w0 release.p12      # value of PREFIX_KEYSTORE_BASE64

            Examples:
              apkpatch ci-template github > .github/workflows/sign-apk.yml
              apkpatch ci-template gitlab --apk build/app-unsigned.apk --signed-apk app-signed.apk
            """
        )

        @Argument(help: ArgumentHelp("github or gitlab.", valueName: "provider")) var provider: CITemplate
        @Option(name: .long, help: ArgumentHelp("The unsigned APK the job signs.", valueName: "path"))
        var apk = CITemplate.Parameters().unsignedAPK
        @Option(name: .customLong("signed-apk"), help: ArgumentHelp("Where the job writes the signed APK.", valueName: "path"))
        var signedAPK = CITemplate.Parameters().signedAPK
        @Option(name: .customLong("secret-prefix"), help: ArgumentHelp("Prefix of the secret names (PREFIX_KEYSTORE_BASE64, PREFIX_KEYSTORE_PASSWORD).", valueName: "name"))
        var secretPrefix = CITemplate.Parameters().secretPrefix
        @Option(name: [.short, .customLong("output")], help: ArgumentHelp("Write to this file instead of stdout.", valueName: "path"))
        var output: String?

        func run() throws {
            let parameters = CITemplate.Parameters(unsignedAPK: apk, signedAPK: signedAPK, secretPrefix: secretPrefix)
            let text = try provider.render(parameters, templates: TemplateLibrary.locate())
            if let output {
                try Data(text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
                FileHandleOutput.standardError("Wrote \(output) (\(provider.rawValue); usually \(provider.suggestedDestination)).")
            } else {
                print(text, terminator: "")
            }
        }
    }
}
