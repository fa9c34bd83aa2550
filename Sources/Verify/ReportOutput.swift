import BinaryXML
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
import SignatureSchemes

/// Printing a report the way `apksigner verify [-v] [--print-certs]` does (`ApkSignerTool.verify`), with
/// the install checks under their own heading after it.
extension VerificationReport {
    /// The text apksigner would print: results and warnings on standard output, "DOES NOT VERIFY" and
    /// errors on standard error; after it, on standard error, the install checks' findings if there are any.
    /// With `warningsAsErrors` (apksigner's `-Werr`) signature warnings go to standard error.
    /// With `printPEM` (apksigner's `--print-certs-pem`) each certificate is followed by its PEM encoding.
    /// `installVerdictAdvice` follows "DOES NOT INSTALL": how the caller gets the signatures' verdict alone
    /// (a command line names its option).
    public func renderText(verbose: Bool, printCertificates: Bool, printPEM: Bool = false,
                           warningsAsErrors: Bool = false, installVerdictAdvice: String? = nil) -> (standardOutput: String, standardError: String) {
        var out = "", err = ""
        if isSignatureVerified {
            if verbose {
                out += "Verifies\n"
                // The v3.1 line as current build-tools' apksigner (33 on) prints it, for every APK; Debian's
                // apksigner 31 predates v3.1 and has no such line.
                for scheme: SignatureScheme in [.v1, .v2, .v3, .v31, .v4] {
                    out += "Verified using \(scheme.displayName): \(verifiedSchemes.contains(scheme))\n"
                }
                out += "Verified for SourceStamp: \(sourceStamp?.isVerified ?? false)\n"
                if !isSourceStampOnly { out += "Number of signers: \(signers.count)\n" }
            }
            if printCertificates || printPEM {
                if verifiedSchemes.contains(.v31) {
                    // apksigner (build-tools 33+) names each v3.1 signer, then each v3.0 signer, by its SDK range.
                    for scheme: SignatureScheme in [.v31, .v3] {
                        for signer in schemes.first(where: { $0.scheme == scheme })?.signers ?? [] {
                            guard let certificate = signer.certificate else { continue }
                            let dev = scheme == .v31 && signer.targetsDevRelease ? " (dev release=true)" : ""
                            let prefix = "Signer (minSdkVersion=\(signer.minSdkVersion ?? 0)\(dev), maxSdkVersion=\(signer.maxSdkVersion ?? Int(Int32.max)))"
                            out += Self.describe(certificate, prefix: prefix, verbose: verbose, pem: printPEM)
                        }
                    }
                } else {
                    for (index, certificate) in signers.enumerated() {
                        out += Self.describe(certificate, prefix: "Signer #\(index + 1)", verbose: verbose, pem: printPEM)
                    }
                }
                // apksigner names the stamp certificate after the signers (it has none to print when the block's
                // certificate did not parse).
                if let certificate = sourceStamp?.certificate {
                    out += Self.describe(certificate, prefix: "Source Stamp Signer", verbose: verbose, pem: printPEM)
                }
                // A rotated key's history, as `apksigner lineage --in APK --print-certs` prints it. apksigner verify
                // prints none; only with -v, so that scripts reading --print-certs see apksigner's lines alone.
                if verbose { out += Self.describeLineage(lineage, capabilities: lineageCapabilities, verbose: verbose, pem: printPEM) }
            }
        } else {
            err += "DOES NOT VERIFY\n"
        }
        for group in Self.inApksignerOrder(errors: signatureErrors, warnings: signatureWarnings) {
            for issue in group.errors { err += "ERROR: \(issue)\n" }
            for issue in group.warnings {
                if warningsAsErrors { err += "WARNING: \(issue)\n" } else { out += "WARNING: \(issue)\n" }
            }
        }
        // The stamp's findings come last, as apksigner prints them ("WARNING: SourceStamp: …"); info lines on
        // standard output whatever -Werr says.
        if let sourceStamp {
            for issue in sourceStamp.errors { err += "ERROR: \(issue)\n" }
            for issue in sourceStamp.warnings {
                if warningsAsErrors { err += "WARNING: \(issue)\n" } else { out += "WARNING: \(issue)\n" }
            }
            for issue in sourceStamp.infos { out += "INFO: \(issue)\n" }
        }

        // The archive checks, the install checks and the entry checks (`checksEntries`) speak only when they found
        // something, and on standard error: standard output stays exactly apksigner's, and nothing reads as "pass"
        // beside a verdict that failed.
        err += Self.findings("Archive checks", errors: archiveErrors, warnings: [])
        if isSignatureVerified && !archiveErrors.isEmpty {
            err += "DOES NOT VERIFY: the signatures verify, but ZIP readers disagree about this archive's layout\(installVerdictAdvice.map { " (\($0))" } ?? "")\n"
        }
        if checkedInstallability {
            err += Self.findings("Install checks", errors: installErrors, warnings: installWarnings)
            if isSignatureVerified && !installErrors.isEmpty {
                err += "DOES NOT INSTALL: the signatures verify, but Android's package manager would refuse this APK\(installVerdictAdvice.map { " (\($0))" } ?? "")\n"
            }
        }
        if checkedEntries {
            err += Self.findings("Entry checks", errors: entryErrors, warnings: entryWarnings)
            if isSignatureVerified && installErrors.isEmpty && !entryErrors.isEmpty {
                let entries = entryErrors.count == 1 ? "one of its entries" : "\(entryErrors.count) of its entries"
                err += "CORRUPT ENTRIES: the signatures verify and Android would install this APK, but reading \(entries) fails on the device; build it again from intact sources\n"
            }
        }
        return (out, err)
    }

    /// The lines of a group of checks beyond apksigner under its heading ("Install checks (beyond apksigner): 1
    /// error"), warnings first, each with its code; nothing when it found nothing.
    static func findings(_ heading: String, errors: [Issue], warnings: [Issue]) -> String {
        guard !errors.isEmpty || !warnings.isEmpty else { return "" }
        let counts = [(errors.count, "error"), (warnings.count, "warning")].filter { $0.0 > 0 }
            .map { "\($0.0) \($0.1)\($0.0 == 1 ? "" : "s")" }.joined(separator: ", ")
        var text = "\(heading) (beyond apksigner): \(counts)\n"
        for issue in warnings { text += "WARNING: [\(issue.code.rawValue)] \(issue)\n" }
        for issue in errors { text += "ERROR: [\(issue.code.rawValue)] \(issue)\n" }
        return text
    }

    /// The findings grouped as `ApkSignerTool.verify` prints them: the APK's own (no context) errors, then its
    /// warnings; then for each JAR signer, then each v2, v3 and v3.1 signer, that signer's errors and warnings.
    /// The verifier finds them in another order (block schemes before JAR signatures).
    static func inApksignerOrder(errors: [Issue], warnings: [Issue]) -> [(errors: [Issue], warnings: [Issue])] {
        func rank(_ context: String) -> Int {
            if context.isEmpty { return 0 }
            for (rank, prefix) in ["JAR signer ", "APK Signature Scheme v2 ", "APK Signature Scheme v3 ", "APK Signature Scheme v3.1 "].enumerated()
            where context.hasPrefix(prefix) { return rank + 1 }
            return 5
        }
        var contexts: [String] = []
        for issue in errors + warnings where !contexts.contains(issue.context) { contexts.append(issue.context) }
        let ordered = contexts.enumerated().sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }.map(\.element)
        return ordered.map { context in (errors.filter { $0.context == context }, warnings.filter { $0.context == context }) }
    }

    /// apksigner's `printCertificate`; `pem` adds the certificate in PEM, 64 Base64 characters a line.
    package static func describe(_ certificate: CertificateInfo, prefix: String, verbose: Bool, pem: Bool = false) -> String {
        var text = "\(prefix) certificate DN: \(certificate.subjectDN)\n"
        text += "\(prefix) certificate SHA-256 digest: \(certificate.sha256)\n"
        text += "\(prefix) certificate SHA-1 digest: \(certificate.sha1)\n"
        text += "\(prefix) certificate MD5 digest: \(certificate.md5)\n"
        if verbose {
            text += "\(prefix) key algorithm: \(certificate.keyAlgorithm)\n"
            text += "\(prefix) key size (bits): \(certificate.keySize)\n"
            text += "\(prefix) public key SHA-256 digest: \(certificate.publicKeySHA256)\n"
            text += "\(prefix) public key SHA-1 digest: \(certificate.publicKeySHA1)\n"
            text += "\(prefix) public key MD5 digest: \(certificate.publicKeyMD5)\n"
        }
        if pem {
            let base64 = Array(Base64.encode(certificate.derBytes).utf8)
            text += "-----BEGIN CERTIFICATE-----\n"
            for start in stride(from: 0, to: base64.count, by: 64) {
                text += String(decoding: base64[start..<min(start + 64, base64.count)], as: UTF8.self) + "\n"
            }
            text += "-----END CERTIFICATE-----\n"
        }
        return text
    }

    /// apksigner's `lineage --print-certs`: each certificate as `printCertificate` prints it ("Signer #N in
    /// lineage"), then its capabilities as `printCapabilities` does.
    package static func describeLineage(_ certificates: [CertificateInfo], capabilities: [LineageCapabilities],
                                        verbose: Bool, pem: Bool) -> String {
        var text = ""
        for (index, (certificate, granted)) in zip(certificates, capabilities).enumerated() {
            text += describe(certificate, prefix: "Signer #\(index + 1) in lineage", verbose: verbose, pem: pem)
            text += "Has installed data capability: \(granted.installedData)\n"
            text += "Has shared UID capability    : \(granted.sharedUid)\n"
            text += "Has permission capability    : \(granted.permission)\n"
            text += "Has rollback capability      : \(granted.rollback)\n"
            text += "Has auth capability          : \(granted.auth)\n"
        }
        return text
    }

    /// A machine-readable view of the report for `--json`.
    public var jsonRepresentation: VerificationReportJSON { VerificationReportJSON(self) }
}

/// The `--json` shape of a report: stable field names, issues with their codes.
public struct VerificationReportJSON: Encodable, Sendable {
    public struct IssueJSON: Encodable, Sendable {
        public let code: String
        public let severity: String
        public let context: String
        public let message: String
        /// INSTALL_RESOURCES_ARSC_ABOVE_MIN_SDK only (absent otherwise): the encoding and the minSdkVersion it needs.
        public let resourceTableEncoding: ResourceTableEncodingJSON?
        init(_ issue: Issue) {
            code = issue.code.rawValue; severity = issue.severity.rawValue; context = issue.context; message = issue.message
            resourceTableEncoding = issue.resourceTableEncoding.map(ResourceTableEncodingJSON.init)
        }
    }
    /// A resources.arsc encoding newer than the APK's minSdkVersion: `flag` (`FLAG_SPARSE`, `FLAG_OFFSET16`,
    /// `FLAG_COMPACT`), `requiredMinSdkVersion` (the lowest minSdkVersion whose devices all read it) and
    /// `aapt2Option` (what makes aapt2 write it, to build the table without).
    public struct ResourceTableEncodingJSON: Encodable, Sendable {
        public let flag: String
        public let requiredMinSdkVersion: Int
        public let aapt2Option: String
        init(_ encoding: ResourceTableEncoding) {
            flag = encoding.rawValue; requiredMinSdkVersion = encoding.requiredMinSdkVersion; aapt2Option = encoding.aapt2Option
        }
    }
    public struct CertificateJSON: Encodable, Sendable {
        public let subjectDN: String, issuerDN: String
        public let sha256: String, sha1: String, md5: String
        public let keyAlgorithm: String, keySize: Int
        public let publicKeySHA256: String, publicKeySHA1: String, publicKeyMD5: String
        /// Lineage certificates only: what the certificate lets its descendants do.
        public let capabilities: LineageCapabilities?
        init(_ c: CertificateInfo) { self.init(c, capabilities: nil) }
        init(_ c: CertificateInfo, capabilities: LineageCapabilities?) {
            subjectDN = c.subjectDN; issuerDN = c.issuerDN; sha256 = c.sha256; sha1 = c.sha1; md5 = c.md5
            keyAlgorithm = c.keyAlgorithm; keySize = c.keySize
            publicKeySHA256 = c.publicKeySHA256; publicKeySHA1 = c.publicKeySHA1; publicKeyMD5 = c.publicKeyMD5
            self.capabilities = capabilities
        }
    }
    public struct SignerJSON: Encodable, Sendable {
        public let name: String
        public let certificates: [CertificateJSON]
        public let minSdkVersion: Int?, maxSdkVersion: Int?
        public let errors: [IssueJSON], warnings: [IssueJSON]
        /// v3.1 signers only, when true: the signer also covers the development release before `minSdkVersion`.
        public let targetsDevRelease: Bool?
    }
    /// The source stamp (`SourceStampReport`): `verified`, the stamp `certificate`, its `lineage`, the
    /// `timestamp` (seconds since 1970) and the findings, warnings and infos with apksig's `SOURCE_STAMP_…` codes.
    public struct SourceStampJSON: Encodable, Sendable {
        public let verified: Bool
        public let certificate: CertificateJSON?
        public let lineage: [CertificateJSON]
        public let timestamp: Int64?
        public let errors: [IssueJSON], warnings: [IssueJSON], infos: [IssueJSON]
        init(_ stamp: SourceStampReport) {
            verified = stamp.isVerified
            certificate = stamp.certificate.map(CertificateJSON.init)
            lineage = stamp.lineage.map(CertificateJSON.init)
            timestamp = stamp.timestamp
            errors = stamp.errors.map(IssueJSON.init); warnings = stamp.warnings.map(IssueJSON.init); infos = stamp.infos.map(IssueJSON.init)
        }
    }
    public struct SchemeJSON: Encodable, Sendable {
        public let scheme: String
        public let verified: Bool
        public let signers: [SignerJSON]
    }

    public let path: String
    /// The verdict: the signatures verify, the install and archive checks pass and, with
    /// `--expect-certificate-sha256`, the expected certificates sign the APK (`expectedSignerMatched`), so that a
    /// script reading this one field never passes an APK signed by another key.
    public private(set) var verified: Bool
    /// Whether the signatures themselves verify (apksigner's verdict), whoever signed and whatever the install
    /// checks found.
    public let signatureVerified: Bool
    public let minSdkVersion: Int, maxSdkVersion: Int
    public let verifiedSchemes: [String]
    public let schemes: [SchemeJSON]
    public let signers: [CertificateJSON]
    public let errors: [IssueJSON]
    public let warnings: [IssueJSON]
    public let installChecked: Bool
    public let installErrors: [IssueJSON]
    public let installWarnings: [IssueJSON]
    /// With `--check-entries`: true, and what reading the entries' data found.
    public let entriesChecked: Bool
    public let entryErrors: [IssueJSON]
    public let entryWarnings: [IssueJSON]
    /// Layouts the other commands refuse (`ARCHIVE_…` codes); checked with the install checks.
    public let archiveErrors: [IssueJSON]
    /// The signing certificate lineage (rotated keys), original first, each with its `capabilities`; empty without one.
    public let lineage: [CertificateJSON]
    /// The source stamp, when the APK carries one (absent otherwise).
    public let sourceStamp: SourceStampJSON?
    /// True when the source stamp alone was checked (`verify --verify-source-stamp`); absent otherwise.
    public let sourceStampOnly: Bool?
    /// Each native library's 16 KiB-page readiness (ZIP offset, ELF `PT_LOAD` alignments), with install checks.
    public let nativeLibraries: [NativeLibraryReport]
    /// With `verify --expect-certificate-sha256`: whether the APK is signed by every expected certificate.
    public private(set) var expectedSignerMatched: Bool?
    /// The command that repairs what the install checks found (the caller's to fill in), if any.
    public var installFix: String?

    init(_ report: VerificationReport) {
        path = report.path
        verified = report.isVerified
        signatureVerified = report.isSignatureVerified
        minSdkVersion = report.minSdkVersion
        maxSdkVersion = report.maxSdkVersion
        verifiedSchemes = report.verifiedSchemes.sorted().map(\.rawValue)
        schemes = report.schemes.map { scheme in
            SchemeJSON(scheme: scheme.scheme.rawValue, verified: scheme.isVerified, signers: scheme.signers.map { signer in
                SignerJSON(name: signer.name, certificates: signer.certificates.map(CertificateJSON.init),
                           minSdkVersion: signer.minSdkVersion, maxSdkVersion: signer.maxSdkVersion,
                           errors: signer.errors.map(IssueJSON.init), warnings: signer.warnings.map(IssueJSON.init),
                           targetsDevRelease: signer.targetsDevRelease ? true : nil)
            })
        }
        signers = report.signers.map(CertificateJSON.init)
        errors = report.signatureErrors.map(IssueJSON.init)
        warnings = report.signatureWarnings.map(IssueJSON.init)
        installChecked = report.checkedInstallability
        installErrors = report.installErrors.map(IssueJSON.init)
        installWarnings = report.installWarnings.map(IssueJSON.init)
        entriesChecked = report.checkedEntries
        entryErrors = report.entryErrors.map(IssueJSON.init)
        entryWarnings = report.entryWarnings.map(IssueJSON.init)
        archiveErrors = report.archiveErrors.map(IssueJSON.init)
        lineage = zip(report.lineage, report.lineageCapabilities).map { CertificateJSON($0, capabilities: $1) }
        nativeLibraries = report.nativeLibraries
        sourceStamp = report.sourceStamp.map(SourceStampJSON.init)
        sourceStampOnly = report.isSourceStampOnly ? true : nil
    }

    /// Records the answer to `--expect-certificate-sha256` (nil: not asked). An APK signed by other
    /// certificates does not verify: `verified` becomes false, `signatureVerified` stays what it was.
    public mutating func recordExpectedSigner(matched: Bool?) {
        expectedSignerMatched = matched
        if matched == false { verified = false }
    }
}
