import APKCore
import ArgumentParser
internal import CBuildInfo
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
            The job installs one pinned apkpatch release: it downloads --release-url and unpacks it only if its \
            SHA-256 is --release-sha256 (the release's .sha256 file), so nothing unpinned runs next to the secrets. \
            It reads the keystore from a base64 secret (--ks-base64 env:PREFIX_KEYSTORE_BASE64) and its password \
            from another (--ks-pass env:PREFIX_KEYSTORE_PASSWORD): the keystore is never written to disk and no \
            secret is echoed or passed on a command line; a missing secret fails the job with its name. Create \
            the keystore secret with:
              base64 -w0 release.p12

            For a key rotation, --lineage names the lineage file in the repository (apkpatch rotate writes it): \
            the job signs with both keys, the new one from PREFIX_NEW_KEYSTORE_BASE64 and \
            PREFIX_NEW_KEYSTORE_PASSWORD. With --expect-certificate-sha256 the job fails unless the signed APK \
            carries that certificate. The job keeps the v4 signature (<signed APK>.idsig) beside the APK. Each of \
            these is a variable of the job (SIGNING_LINEAGE, ROTATION_MIN_SDK_VERSION, \
            EXPECTED_CERTIFICATE_SHA256) that can be filled in later.

            With --source-stamp the job also adds a source stamp (sign --stamp-signer) with an RSA key from \
            PREFIX_STAMP_KEYSTORE_BASE64 and PREFIX_STAMP_KEYSTORE_PASSWORD, read by name like the signing key, and \
            fails unless verify --verify-source-stamp accepts it (naming the stamp certificate with \
            --expect-stamp-certificate-sha256; --stamp-lineage for a rotated stamp key). Job variables: \
            SOURCE_STAMP, STAMP_LINEAGE, EXPECTED_STAMP_CERTIFICATE_SHA256.

            Examples:
              sha=$(cut -d' ' -f1 apkpatch-0.2.0-linux-x86_64.tar.gz.sha256)
              apkpatch ci-template github --release-sha256 "$sha" \\
                  --release-url https://example.com/apkpatch-0.2.0-linux-x86_64.tar.gz \\
                  > .github/workflows/sign-apk.yml
              apkpatch ci-template gitlab --apk build/app-unsigned.apk \\
                  --release-url URL --release-sha256 HEX >> .gitlab-ci.yml
            """
        )

        @Argument(help: ArgumentHelp("github or gitlab.", valueName: "provider")) var provider: CITemplate
        @Option(name: .long, help: ArgumentHelp("The unsigned APK the job signs.", valueName: "path"))
        var apk = CITemplate.Parameters().unsignedAPK
        @Option(name: .customLong("signed-apk"), help: ArgumentHelp("Where the job writes the signed APK.", valueName: "path"))
        var signedAPK = CITemplate.Parameters().signedAPK
        @Option(name: .customLong("secret-prefix"), help: ArgumentHelp("Prefix of the secret names (PREFIX_KEYSTORE_BASE64, PREFIX_KEYSTORE_PASSWORD).", valueName: "name"))
        var secretPrefix = CITemplate.Parameters().secretPrefix
        @Option(name: .customLong("release-version"), help: ArgumentHelp("The apkpatch version the job installs (default: this one's).", valueName: "version"))
        var releaseVersion: String?
        @Option(name: .customLong("release-url"), help: ArgumentHelp("URL of the apkpatch release archive the job installs.", valueName: "url"))
        var releaseURL = ""
        @Option(name: .customLong("release-sha256"), help: ArgumentHelp("SHA-256 of that archive (64 hex digits, from its .sha256 file).", valueName: "hex"))
        var releaseSHA256 = ""
        @Option(name: .customLong("lineage"), help: ArgumentHelp("The key rotation's lineage file, as a path in the repository (the job then also reads the new key's secrets).", valueName: "path"))
        var lineage = ""
        @Option(name: .customLong("rotation-min-sdk-version"), help: ArgumentHelp("API level from which the rotation's new key signs (default 33).", valueName: "level"))
        var rotationMinSdkVersion: Int?
        @Option(name: .customLong("expect-certificate-sha256"), help: ArgumentHelp("SHA-256 of a certificate the signed APK must carry (repeatable); the job fails otherwise.", valueName: "hex"))
        var expectedCertificates: [String] = []
        @Flag(name: .customLong("source-stamp"), help: "Also add a source stamp from the stamp key's secrets (PREFIX_STAMP_KEYSTORE_BASE64, PREFIX_STAMP_KEYSTORE_PASSWORD) and check it.")
        var sourceStamp = false
        @Option(name: .customLong("stamp-lineage"), help: ArgumentHelp("With --source-stamp: the stamp key's lineage file, as a path in the repository.", valueName: "path"))
        var stampLineage = ""
        @Option(name: .customLong("expect-stamp-certificate-sha256"), help: ArgumentHelp("With --source-stamp: SHA-256 of the stamp certificate the signed APK must name; the job fails otherwise.", valueName: "hex"))
        var expectedStampCertificate = ""
        @Option(name: [.short, .customLong("output")], help: ArgumentHelp("Write to this file instead of stdout.", valueName: "path"))
        var output: String?

        func validate() throws {
            if rotationMinSdkVersion != nil && lineage.isEmpty {
                throw ValidationError("--rotation-min-sdk-version goes with --lineage (the key rotation it times)")
            }
            if !sourceStamp, let option = [("--stamp-lineage", stampLineage), ("--expect-stamp-certificate-sha256", expectedStampCertificate)]
                .first(where: { !$0.1.isEmpty })?.0 {
                throw ValidationError("\(option) goes with --source-stamp (the stamp it is about)")
            }
        }

        func run() throws {
            let version = releaseVersion ?? String(cString: apkpatch_build_version())
            let parameters = CITemplate.Parameters(unsignedAPK: apk, signedAPK: signedAPK, secretPrefix: secretPrefix,
                                                   version: version, releaseURL: releaseURL, releaseSHA256: releaseSHA256,
                                                   lineage: lineage, rotationMinSdkVersion: rotationMinSdkVersion,
                                                   expectedCertificateSHA256: expectedCertificates, sourceStamp: sourceStamp,
                                                   stampLineage: stampLineage, expectedStampCertificateSHA256: expectedStampCertificate)
            let text = try provider.render(parameters, templates: TemplateLibrary.locate())
            if let output {
                try UserFiles.write(Array(text.utf8), to: output)
                FileHandleOutput.standardError("Wrote \(output) (\(provider.rawValue); usually \(provider.suggestedDestination)).")
            } else {
                print(text, terminator: "")
            }
            if releaseURL.isEmpty || releaseSHA256.isEmpty {
                FileHandleOutput.standardError("Note: without --release-url and --release-sha256 the job fails until you fill in APKPATCH_RELEASE_URL and APKPATCH_RELEASE_SHA256 (a release archive and its checksum).")
            }
        }
    }
}
