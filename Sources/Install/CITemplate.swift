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

/// The CI jobs in `Templates/ci/` that sign and verify an APK with apkpatch from repository secrets
/// (`apkpatch ci-template github|gitlab`).
///
/// The keystore comes from a base64 secret read by name (`--ks-base64 env:PREFIX_KEYSTORE_BASE64`) and the password
/// by name too (`--ks-pass env:PREFIX_KEYSTORE_PASSWORD`): nothing is written to disk, echoed, or put on a command line.
/// apkpatch itself is a pinned release: one archive, unpacked only if its SHA-256 is the one written into the job,
/// so no code that is not pinned runs where the secrets are.
public enum CITemplate: String, Sendable, CaseIterable {
    case github
    case gitlab

    /// The template file under `Templates/`.
    public var relativePath: String {
        switch self {
        case .github: return "ci/github-actions.yml"
        case .gitlab: return "ci/gitlab-ci.yml"
        }
    }

    /// Where the rendered file usually goes in a repository.
    public var suggestedDestination: String {
        switch self {
        case .github: return ".github/workflows/sign-apk.yml"
        case .gitlab: return ".gitlab-ci.yml"
        }
    }

    /// What to fill in.
    public struct Parameters: Sendable, Equatable {
        /// The unsigned APK the job signs (path in the CI workspace).
        public var unsignedAPK: String
        /// Where the signed APK goes.
        public var signedAPK: String
        /// Prefix of the secret names: `PREFIX_KEYSTORE_BASE64`, `PREFIX_KEYSTORE_PASSWORD`.
        public var secretPrefix: String
        /// The apkpatch release the job installs (`0.2.0`).
        public var version: String
        /// Where the job downloads that release's archive (`apkpatch-VERSION-linux-x86_64.tar.gz`); empty leaves it
        /// for the user to fill in, and the job fails saying so until then.
        public var releaseURL: String
        /// The archive's SHA-256 in hex (its `.sha256` file); empty, like `releaseURL`, fails the job until filled in.
        public var releaseSHA256: String
        /// The signing certificate lineage of a key rotation (a file in the repository, from `apkpatch rotate`): the
        /// job then signs with the keystore and, after `--next-signer`, the new key from `PREFIX_NEW_KEYSTORE_BASE64`
        /// and `PREFIX_NEW_KEYSTORE_PASSWORD`. Empty: one key (the job's `SIGNING_LINEAGE` can be set later).
        public var lineage: String
        /// `--rotation-min-sdk-version` for that rotation; nil leaves apkpatch's default (33).
        public var rotationMinSdkVersion: Int?
        /// The SHA-256 digests of the certificates the signed APK must carry (`verify --expect-certificate-sha256`);
        /// empty checks none. Colons and case as `--print-certs` or keytool print them are accepted.
        public var expectedCertificateSHA256: [String]
        /// Whether the job adds a source stamp (`sign --stamp-signer`) with the key from `PREFIX_STAMP_KEYSTORE_BASE64`
        /// and `PREFIX_STAMP_KEYSTORE_PASSWORD`, and checks it (`verify --verify-source-stamp`). False: the job's
        /// `SOURCE_STAMP` is empty (it can be set later).
        public var sourceStamp: Bool
        /// The stamp key's lineage file (`--stamp-lineage`), a path in the repository; empty: none.
        public var stampLineage: String
        /// The SHA-256 of the stamp certificate the APK must name (`--stamp-cert-digest`); empty: any stamp that verifies.
        /// Colons and case as keytool prints them are accepted.
        public var expectedStampCertificateSHA256: String

        public init(unsignedAPK: String = "app/build/outputs/apk/release/app-release-unsigned.apk",
                    signedAPK: String = "app-release-signed.apk", secretPrefix: String = "APKPATCH",
                    version: String = "", releaseURL: String = "", releaseSHA256: String = "",
                    lineage: String = "", rotationMinSdkVersion: Int? = nil, expectedCertificateSHA256: [String] = [],
                    sourceStamp: Bool = false, stampLineage: String = "", expectedStampCertificateSHA256: String = "") {
            self.unsignedAPK = unsignedAPK
            self.signedAPK = signedAPK
            self.secretPrefix = secretPrefix
            self.version = version
            self.releaseURL = releaseURL
            self.releaseSHA256 = releaseSHA256.lowercased()
            self.lineage = lineage
            self.rotationMinSdkVersion = rotationMinSdkVersion
            self.expectedCertificateSHA256 = expectedCertificateSHA256.map { String($0.lowercased().filter { $0 != ":" }) }
            self.sourceStamp = sourceStamp
            self.stampLineage = stampLineage
            self.expectedStampCertificateSHA256 = String(expectedStampCertificateSHA256.lowercased().filter { $0 != ":" })
        }

        /// The names of the secrets the job reads.
        public var keystoreSecretName: String { secretPrefix + "_KEYSTORE_BASE64" }
        public var passwordSecretName: String { secretPrefix + "_KEYSTORE_PASSWORD" }
        /// The new key's secrets, read only when the job signs a key rotation.
        public var newKeystoreSecretName: String { secretPrefix + "_NEW_KEYSTORE_BASE64" }
        public var newPasswordSecretName: String { secretPrefix + "_NEW_KEYSTORE_PASSWORD" }
        /// The stamp key's secrets, read only when the job adds a source stamp.
        public var stampKeystoreSecretName: String { secretPrefix + "_STAMP_KEYSTORE_BASE64" }
        public var stampPasswordSecretName: String { secretPrefix + "_STAMP_KEYSTORE_PASSWORD" }
    }

    /// The rendered job.
    /// - Throws: ``CITemplateError`` for a secret prefix that is not an environment variable name or an empty path;
    ///   ``TemplateError`` when the template is missing or broken.
    public func render(_ parameters: Parameters = Parameters(), templates: TemplateLibrary) throws -> String {
        let prefix = parameters.secretPrefix
        guard let first = prefix.unicodeScalars.first, first == "_" || ("A"..."Z").contains(first),
              prefix.unicodeScalars.allSatisfy({ $0 == "_" || ("A"..."Z").contains($0) || ("0"..."9").contains($0) }) else {
            throw CITemplateError.invalidSecretPrefix(prefix)
        }
        for path in [parameters.unsignedAPK, parameters.signedAPK] where path.isEmpty || path.contains("\n") {
            throw CITemplateError.invalidPath(path)
        }
        for path in [parameters.lineage, parameters.stampLineage] where path.contains(where: \.isNewline) { throw CITemplateError.invalidPath(path) }
        if let level = parameters.rotationMinSdkVersion, level < 1 { throw CITemplateError.invalidRotationMinSdkVersion(level) }
        let stampDigest = parameters.expectedStampCertificateSHA256
        for digest in parameters.expectedCertificateSHA256 + (stampDigest.isEmpty ? [] : [stampDigest])
        where digest.count != 64 || !digest.allSatisfy(\.isHexDigit) {
            throw CITemplateError.invalidCertificateSHA256(digest)
        }
        let sha256 = parameters.releaseSHA256
        guard sha256.isEmpty || sha256.count == 64 && sha256.allSatisfy({ $0.isHexDigit }) else {
            throw CITemplateError.invalidSHA256(sha256)
        }
        for value in [parameters.releaseURL, parameters.version] where value.contains(where: { $0.isNewline || $0 == " " }) {
            throw CITemplateError.invalidReleaseURL(value)
        }
        return try templates.render(relativePath, context: [
            "secretPrefix": prefix,
            // Paths go in as YAML double-quoted scalars (a JSON string is one), so no path can break the YAML.
            "unsignedAPKYAML": Self.yamlQuoted(parameters.unsignedAPK),
            "signedAPKYAML": Self.yamlQuoted(parameters.signedAPK),
            "versionYAML": Self.yamlQuoted(parameters.version),
            "releaseURLYAML": Self.yamlQuoted(parameters.releaseURL),
            "releaseSHA256YAML": Self.yamlQuoted(sha256),
            "signedIdsigYAML": Self.yamlQuoted(parameters.signedAPK + ".idsig"),
            "lineageYAML": Self.yamlQuoted(parameters.lineage),
            "rotationMinSdkVersionYAML": Self.yamlQuoted(parameters.rotationMinSdkVersion.map(String.init) ?? ""),
            "expectedCertificatesYAML": Self.yamlQuoted(parameters.expectedCertificateSHA256.joined(separator: " ")),
            "sourceStampYAML": Self.yamlQuoted(parameters.sourceStamp ? "true" : ""),
            "stampLineageYAML": Self.yamlQuoted(parameters.stampLineage),
            "expectedStampCertificateYAML": Self.yamlQuoted(stampDigest),
        ])
    }

    static func yamlQuoted(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\t": result += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    result += "\\x" + (hex.count < 2 ? "0" : "") + hex
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }
}

/// Parameters a CI template cannot use.
public enum CITemplateError: Error, CustomStringConvertible, Equatable {
    case invalidSecretPrefix(String)
    case invalidPath(String)
    case invalidSHA256(String)
    case invalidReleaseURL(String)
    case invalidRotationMinSdkVersion(Int)
    case invalidCertificateSHA256(String)

    public var description: String {
        switch self {
        case .invalidSecretPrefix(let prefix):
            return "secret prefix \"\(prefix)\" is not an environment variable name: use upper-case letters, digits and _ (e.g. APKPATCH or RELEASE)."
        case .invalidPath(let path):
            return "path \"\(path)\" cannot go into a CI file: give a non-empty path on one line."
        case .invalidSHA256(let value):
            return "\"\(value)\" is not a SHA-256: give the 64 hex digits of the release archive's .sha256 file."
        case .invalidReleaseURL(let value):
            return "\"\(value)\" cannot go into a CI file: a release URL or version is one word without spaces."
        case .invalidRotationMinSdkVersion(let level):
            return "rotation min SDK version \(level) is not an API level: give one such as 33 (the default: the new key signs from Android 13) or 28 (from Android 9)."
        case .invalidCertificateSHA256(let value):
            return "\"\(value)\" is not a certificate's SHA-256: give its 64 hex digits, as apkpatch keystore list prints them."
        }
    }
}
