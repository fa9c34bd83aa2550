import APKCore
import ArgumentParser
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
import Install
import Sets
import Verify

/// `apkpatch verify`: a drop-in for `apksigner verify` that also checks what Android's installer enforces.
struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify an APK's signatures as Android does (a drop-in for apksigner verify), plus install checks.",
        discussion: """
        Exits 0 only when Android would accept the APK on every API level from --min-sdk-version (default: the \
        APK's minSdkVersion) to --max-sdk-version. Beyond apksigner, it also fails APKs Android's installer \
        refuses: resources.arsc compressed or unaligned when targetSdkVersion ≥ 30, and native libraries \
        compressed or not page-aligned when android:extractNativeLibs="false"; .so files not 16 KiB-aligned \
        give a warning. It also fails archives every other apkpatch command refuses, whatever signs them: bytes \
        no central-directory entry accounts for, bytes between the central directory and its end record, an end \
        record that miscounts the central directory. --signature-only gives apksigner's exact verdict. \
        --check-entries also reads every entry's data (deflate streams, sizes, CRC-32s), which neither apksigner \
        nor Android's installer checks.

        A split APK set (.apks, .xapk, .apkm, a directory of APKs, or several APK paths) verifies when every APK \
        verifies, one signer signed them all, and they are one app (one base, one package and versionCode).

        Examples:
          apkpatch verify -v --print-certs app.apk
          apkpatch verify --expect-certificate-sha256 "$RELEASE_CERT_SHA256" app.apk
          apkpatch verify --v4-signature-file app.apk.idsig app.apk
          apkpatch verify --json app.apks
        """
    )

    @Flag(name: [.customShort("v"), .customLong("verbose")], help: "Print the schemes that verified and the number of signers.")
    var verbose = false

    @Flag(name: .customLong("print-certs"), help: "Print each signer's certificate (DN, SHA-256, SHA-1 and MD5 digests; with -v also the key).")
    var printCerts = false

    @Flag(name: .customLong("print-certs-pem"), help: "As --print-certs, with each certificate in PEM as well.")
    var printCertsPEM = false

    @Option(name: .customLong("expect-certificate-sha256"),
            help: ArgumentHelp("Fail unless the APK (each APK of a set) is signed by the certificate with this SHA-256 digest (hex, as --print-certs prints it; `:` separators allowed). Repeat for an APK with several signers: each must sign it.", valueName: "hex"))
    var expectedCertificates: [String] = []

    @Option(name: .customLong("v4-signature-file"), help: ArgumentHelp("Also check this APK Signature Scheme v4 file (the .idsig apksigner and apkpatch sign write beside the APK).", valueName: "path"))
    var v4SignatureFile: String?

    @Flag(name: .customLong("allow-lineage-ancestor"),
          help: "With --expect-certificate-sha256: an older certificate of the APK's signing lineage (a rotated-away key) counts too.")
    var allowLineageAncestor = false

    @Option(name: .customLong("min-sdk-version"), help: "Lowest API level to verify for (default: the APK's minSdkVersion).")
    var minSdkVersion: Int?

    @Option(name: .customLong("max-sdk-version"), help: "Highest API level to verify for (default: all).")
    var maxSdkVersion: Int?

    @Flag(name: .customLong("signature-only"), help: "Check signatures only, as apksigner does (skip the install checks).")
    var signatureOnly = false

    @Flag(name: .customLong("check-entries"),
          help: "Also read every entry's data as a device reads it: a deflate stream that fails or never ends, or a size that is not the header's, fails verification (ENTRY_DATA_CORRUPT: the APK installs, but the device cannot read that entry); a wrong CRC-32 and bytes after a stream's end are warnings. apksigner and Android's installer check none of this. It inflates every compressed entry, so verify takes longer.")
    var checkEntries = false

    @Flag(name: .customLong("json"), help: "Print the report as JSON on standard output.")
    var json = false

    @Flag(name: .customLong("verify-source-stamp"),
          help: "Check the source stamp alone, as apksigner does: exit 0 only when the stamp verifies (the APK's own signatures are not verified).")
    var verifySourceStamp = false

    @Option(name: .customLong("stamp-cert-digest"),
            help: ArgumentHelp("With --verify-source-stamp: the SHA-256 digest (hex; keytool's AB:CD:… form too) of the stamp certificate the APK must name.", valueName: "hex"))
    var stampCertificateDigest: String?

    @Flag(name: .customLong("Werr", withSingleDash: true), help: "Treat signature warnings as errors (exit 1 when there are any).")
    var warningsAreErrors = false

    @Option(name: .customLong("in"), help: "The APK to verify (instead of the positional argument).")
    var input: String?

    @Argument(help: "The APK to verify (or a split APK set: .apks, .xapk, .apkm, a directory, several APKs).")
    var apks: [String] = []

    /// The APK path from --in or the positional argument.
    var apkPath: String { input ?? apks.first ?? "" }

    func validate() throws {
        if input == nil && apks.isEmpty { throw ValidationError("Missing the APK to verify: give it as the last argument or with --in") }
        if input != nil && !apks.isEmpty { throw ValidationError("Give the APK either with --in or as the last argument, not both") }
        if let minSdkVersion, minSdkVersion < 0 { throw ValidationError("--min-sdk-version must not be negative") }
        if let maxSdkVersion, maxSdkVersion < 0 { throw ValidationError("--max-sdk-version must not be negative") }
        for digest in expectedCertificates {
            let hex = VerificationReport.normalizedHex(digest)
            guard hex.count == 64, hex.allSatisfy(\.isHexDigit) else {
                throw ValidationError("--expect-certificate-sha256 takes a certificate's SHA-256 digest, 64 hex digits (as --print-certs prints it), not \(digest.cappedForMessage)")
            }
        }
        if stampCertificateDigest != nil && !verifySourceStamp {
            throw ValidationError("--stamp-cert-digest goes with --verify-source-stamp")
        }
        if verifySourceStamp {
            if !expectedCertificates.isEmpty || v4SignatureFile != nil || checkEntries {
                let option = !expectedCertificates.isEmpty ? "--expect-certificate-sha256" : v4SignatureFile != nil ? "--v4-signature-file" : "--check-entries"
                throw ValidationError("--verify-source-stamp checks the source stamp alone; \(option) checks the APK's own signatures or entries: verify without --verify-source-stamp for that")
            }
            if input == nil && apks.count > 1 { throw ValidationError("--verify-source-stamp checks one APK at a time") }
        }
        if allowLineageAncestor && expectedCertificates.isEmpty {
            throw ValidationError("--allow-lineage-ancestor goes with --expect-certificate-sha256")
        }
        if let minSdkVersion, let maxSdkVersion, minSdkVersion > maxSdkVersion {
            throw ValidationError("--min-sdk-version (\(minSdkVersion)) is greater than --max-sdk-version (\(maxSdkVersion))")
        }
    }

    /// The APK `main` opened before parsing the arguments (see `prepare`), if any.
    nonisolated(unsafe) static var prepared: PreparedInput?

    /// For `verify … app.apk`: opens the last argument and starts its content digests before the arguments
    /// are parsed (time that would leave the cores idle). `run` uses it only for that same path.
    static func prepare(_ arguments: [String]) {
        guard let path = APKPatch.trailingPath(of: arguments, command: "verify") else { return }
        prepared = PreparedInput.prepare(path: path)
    }

    func run() throws {
        let options = VerificationOptions(minSdkVersion: minSdkVersion, maxSdkVersion: maxSdkVersion ?? Int(Int32.max),
                                          checksInstallability: !signatureOnly, v4SignatureFile: v4SignatureFile, checksEntries: checkEntries)
        let paths = input.map { [$0] } ?? apks
        if verifySourceStamp {
            Self.prepared?.cancel()
            try runSourceStampOnly(options: options)
            return
        }
        if APKSet.isSet(paths: paths) {
            Self.prepared?.cancel()
            if v4SignatureFile != nil {
                throw ValidationError("--v4-signature-file takes a single APK's .idsig, not a set")
            }
            try SetCommands.verify(paths, options: options, json: json, verbose: verbose, printCertificates: printCerts, printPEM: printCertsPEM,
                                   expecting: expectation)
            return
        }
        let verifier = Verifier(options: options)
        var report: VerificationReport
        do {
            if let prepared = Self.prepared, prepared.path == apkPath {
                report = try verifier.verify(prepared)
            } else {
                Self.prepared?.cancel()
                report = try verifier.verify(path: apkPath)
            }
        } catch let error where json {
            // Nothing to verify (a missing path, a FIFO): --json still prints its one object, as for a set, the
            // APK failing with the reason.
            let unreadable = VerificationReport.unreadable(path: apkPath, reason: CLIHint.describe(error), options: options)
            print(try FileHandleOutput.json(unreadable.jsonRepresentation))
            throw ExitCode.failure
        }
        report = CLIHint.hinted(report)
        let expectedSignerMatched = expectation?.isMet(by: report)
        let fix = Self.installFix(for: report, path: apkPath)
        if json {
            var representation = report.jsonRepresentation
            representation.recordExpectedSigner(matched: expectedSignerMatched)
            representation.installFix = fix
            print(try FileHandleOutput.json(representation))
        } else {
            let text = report.renderText(verbose: verbose, printCertificates: printCerts, printPEM: printCertsPEM, warningsAsErrors: warningsAreErrors,
                                         installVerdictAdvice: CLIHint.installVerdict)
            if !text.standardOutput.isEmpty { print(text.standardOutput, terminator: "") }
            if !text.standardError.isEmpty { FileHandleOutput.standardError(text.standardError) }
            if let fix { FileHandleOutput.standardError("To fix: \(fix)\n") }
            if let expectation, expectedSignerMatched == false && report.isSignatureVerified {
                FileHandleOutput.standardError("ERROR: \(expectation.refusal(of: "the APK", report: report))\n")
            }
        }
        if !report.isVerified { throw ExitCode.failure }
        if expectedSignerMatched == false { throw ExitCode.failure }
        // apksigner -Werr: the verdict stands, but any warning makes the exit status 1.
        if warningsAreErrors && !report.signatureWarnings.isEmpty { throw ExitCode.failure }
    }

    /// `--verify-source-stamp`: apksigner's report of the stamp alone (no "Number of signers" line, the stamp's
    /// verdict as the APK's); `-Werr` as apksigner: the stamp's warnings go to standard error.
    private func runSourceStampOnly(options: VerificationOptions) throws {
        var stampOptions = options
        stampOptions.checksInstallability = false
        let report: VerificationReport
        do {
            report = try Verifier(options: stampOptions).verifySourceStampOnly(path: apkPath, expectedCertificateDigest: stampCertificateDigest.map { String($0.filter { $0 != ":" }) })
        } catch let error where json {
            let unreadable = VerificationReport.unreadable(path: apkPath, reason: CLIHint.describe(error), options: stampOptions)
            print(try FileHandleOutput.json(unreadable.jsonRepresentation))
            throw ExitCode.failure
        }
        if json {
            print(try FileHandleOutput.json(report.jsonRepresentation))
        } else {
            let text = report.renderText(verbose: verbose, printCertificates: printCerts, printPEM: printCertsPEM, warningsAsErrors: warningsAreErrors)
            if !text.standardOutput.isEmpty { print(text.standardOutput, terminator: "") }
            if !text.standardError.isEmpty { FileHandleOutput.standardError(text.standardError) }
        }
        if !report.isVerified { throw ExitCode.failure }
    }

    /// `--expect-certificate-sha256` and `--allow-lineage-ancestor`, when given.
    var expectation: ExpectedSigners? {
        expectedCertificates.isEmpty ? nil : ExpectedSigners(sha256Digests: expectedCertificates, allowingLineageAncestors: allowLineageAncestor)
    }

    /// The certificates `--expect-certificate-sha256` names: what a verified APK (each APK of a set) must be signed by.
    struct ExpectedSigners {
        var sha256Digests: [String]
        var allowingLineageAncestors: Bool

        func isMet(by report: VerificationReport) -> Bool {
            report.isSigned(byCertificatesWithSHA256: sha256Digests, allowingLineageAncestors: allowingLineageAncestors)
        }

        /// The error line for `subject` (e.g. "the APK") signed otherwise, naming what does sign it (a CI log then
        /// says which key was used without another run with --print-certs).
        func refusal(of subject: String, report: VerificationReport) -> String {
            let signers = report.signers.map { "\($0.subjectDN) (SHA-256 \($0.sha256))" }.joined(separator: ", ")
            return "\(subject) is not signed by the expected certificate (--expect-certificate-sha256 \(sha256Digests.joined(separator: ", ")))"
                + (signers.isEmpty ? "" : "; it is signed by \(signers)")
                + (allowingLineageAncestors || report.lineage.isEmpty ? "" : "; an older certificate of its lineage counts only with --allow-lineage-ancestor")
        }
    }

    /// The command that repairs what the install checks found, or nil. Storing an entry changes the bytes the
    /// signatures cover, so the fix always signs again (see ``InstallFix``).
    static func installFix(for report: VerificationReport, path: String) -> String? {
        let base = path.droppingJavaSuffix(".apk") ?? path
        return InstallFix(reports: [report]).advice(path: ShellWords.quote(path), fixed: ShellWords.quote(base + "-fixed.apk"),
                                                    aligned: ShellWords.quote(base + "-aligned.apk"),
                                                    stripped: ShellWords.quote(base + "-stripped.apk"))
    }

    /// The same for a set, from its APKs' reports: the fix runs on the whole set (`paths`, as given), and writes a
    /// set of the same kind (a .apks/.xapk/.apkm file, else a folder).
    static func installFix(forSet reports: [VerificationReport], paths: [String]) -> String? {
        let container = paths.count == 1 ? paths[0] : nil
        let fixed: String
        if let container, let dot = container.lastIndex(of: "."), [".apks", ".xapk", ".apkm"].contains(container[dot...].lowercased()) {
            fixed = String(container[..<dot]) + "-fixed" + container[dot...]
        } else {
            var first = paths.first ?? "app"
            while first.count > 1 && first.hasSuffix("/") { first.removeLast() }
            fixed = (first.lowercased().hasSuffix(".apk") ? String(first.dropLast(4)) : first) + "-fixed/"
        }
        return InstallFix(reports: reports).advice(path: paths.map(ShellWords.quote).joined(separator: " "), fixed: ShellWords.quote(fixed), aligned: nil,
                                                  stripped: nil)
    }
}

/// What repairs the install findings of an APK (or of a set's APKs), as the "To fix:" line and `--json`'s
/// `installFix` say it. Each advice names what really repairs its finding; the tests run each one on an APK
/// with the finding and verify the result.
struct InstallFix {
    /// An entry Android requires stored or aligned (resources.arsc for targetSdk 30+, native libraries with
    /// extractNativeLibs="false"): `run` stores and aligns it, then signs. `align` leaves compressed entries
    /// compressed, and `sign` refuses to store one.
    var needsStoring = false
    /// Bytes before the first local header (where Janus hides a DEX): every apkpatch command refuses such an
    /// archive, so the advice strips them first with `zip -J`, which also moves the offsets, on a copy.
    var stripsPrefix = false
    /// A stored library off a 16 KiB boundary: `sign` re-aligns stored .so files to 16 KiB.
    var needs16KPages = false
    /// Of those, the ones whose Android alignment field names a multiple `sign` keeps, as apksigner does (an
    /// earlier `--lib-page-alignment 4096` wrote it), with that multiple; `run` with no patch signs the same way.
    /// `align -P 16` drops the field (it pads as zipalign does), and `sign` then puts them on 16 KiB.
    var keptAlignments: [(entry: String, multiple: Int)] = []
    /// 64-bit libraries whose ELF LOAD segments are aligned below 16 KiB: no packaging changes `p_align`; the
    /// library must be linked again.
    var relinkedLibraries: [String] = []
    /// A resources.arsc Android's resource loader refuses: no packaging repairs the table, it must be built again.
    var rebuildsResourceTable = false
    /// A resources.arsc in an encoding Android reads only from a release above the manifest's minSdkVersion: the
    /// finding's encoding, which names the release and aapt2's option that writes it.
    var raisesMinSdkVersion: ResourceTableEncoding?

    init(reports: [VerificationReport]) {
        for report in reports {
            let codes = Set((report.installErrors + report.installWarnings).map(\.code))
            if codes.contains(.installResourcesArscMalformed) { rebuildsResourceTable = true }
            if codes.contains(.installBytesBeforeFirstEntry) { stripsPrefix = true }
            // The highest level any APK's table needs: one minSdkVersion serves the whole set.
            for encoding in report.installErrors.compactMap(\.resourceTableEncoding)
            where encoding.requiredMinSdkVersion > raisesMinSdkVersion?.requiredMinSdkVersion ?? 0 {
                raisesMinSdkVersion = encoding
            }
            if !codes.isDisjoint(with: [.installResourcesArscCompressed, .installResourcesArscNotAligned,
                                        .installNativeLibraryCompressed, .installNativeLibraryNotPageAligned]) {
                needsStoring = true
            }
            let offPages = Set(report.installWarnings.filter { $0.code == .installNativeLibraryNot16KAligned }.map(\.context))
            let relinked = Set(report.installWarnings.filter { $0.code == .installNativeLibraryELFNot16KAligned }.map(\.context))
            if !offPages.isEmpty { needs16KPages = true }
            for library in report.nativeLibraries {
                if offPages.contains(library.entry), let multiple = library.signingAlignment, multiple % 16384 != 0 {
                    keptAlignments.append((library.entry, multiple))
                }
                if relinked.contains(library.entry) && !relinkedLibraries.contains(library.entry) { relinkedLibraries.append(library.entry) }
            }
        }
    }

    /// The advice for the APK (or set) at `path` (quoted for a shell), writing the repaired one to `fixed` and,
    /// for one APK, intermediate ones to `aligned` and `stripped` (nil for a set: `align` and `zip -J` take one
    /// APK at a time); nil when nothing needs repairing.
    func advice(path: String, fixed: String, aligned: String?, stripped: String?) -> String? {
        // First: while the table is one Android refuses, nothing else makes the APK install.
        if rebuildsResourceTable {
            return "rebuild resources.arsc from the app's sources (its Gradle build, or aapt2 link) and sign again; no apkpatch command repairs a resource table Android refuses, and sign and run refuse to copy one"
        }
        if let encoding = raisesMinSdkVersion {
            let level = encoding.requiredMinSdkVersion, patch = "min-sdk-\(level)"
            return "if the app can leave devices below API \(level), raise its minSdkVersion: mkdir -p \(patch) && printf 'manifest:\\n  minSdkVersion: \(level)\\n' > \(patch)/apkpatch.yml && apkpatch run \(path) --patch \(patch) --out \(fixed) (add your signing options); otherwise rebuild resources.arsc without aapt2's \(encoding.aapt2Option) and sign again"
        }
        var command: String?
        let signing = "(add your signing options, e.g. --ks release.jks; without them the debug key signs)"
        if stripsPrefix, let stripped {
            command = "cp \(path) \(stripped) && zip -q -J \(stripped) && apkpatch run \(stripped) --out \(fixed) strips the bytes before the first entry, which every apkpatch command refuses, then stores and aligns what Android requires, signs and verifies \(signing)"
        } else if stripsPrefix {
            command = "zip -q -J on each APK that has bytes before its first entry (every apkpatch command refuses them), then apkpatch run \(path) --out \(fixed) stores and aligns what Android requires, signs and verifies \(signing)"
        } else if needsStoring {
            command = "apkpatch run \(path) --out \(fixed) stores and aligns what Android requires, then signs and verifies \(signing)"
        } else if !keptAlignments.isEmpty {
            let kept = keptAlignments.prefix(3).map { "\($0.entry) on \($0.multiple) bytes" }.joined(separator: ", ")
                + (keptAlignments.count > 3 ? " and \(keptAlignments.count - 3) more" : "")
            let why = "sign alone, like apksigner, keeps the alignment an earlier signing wrote into a library's alignment field (\(kept)), and align drops it"
            if let aligned {
                command = "apkpatch align -P 16 4 \(path) \(aligned) && apkpatch sign --out \(fixed) \(aligned) (with your signing options) places stored .so files on 16 KiB boundaries: \(why)"
            } else {
                command = "apkpatch sign --out \(fixed) \(path) (with your signing options), after apkpatch align -P 16 4 on each APK holding such a library, places stored .so files on 16 KiB boundaries: \(why)"
            }
        } else if needs16KPages {
            command = "apkpatch sign --out \(fixed) \(path) (with your signing options) places stored .so files on 16 KiB boundaries"
        }
        guard !relinkedLibraries.isEmpty else { return command }
        let names = relinkedLibraries.prefix(3).joined(separator: ", ") + (relinkedLibraries.count > 3 ? " and \(relinkedLibraries.count - 3) more" : "")
        let relink = "link \(names) again with -Wl,-z,max-page-size=16384 (NDK r28 and later do by default) and build the APK again: \(relinkedLibraries.count == 1 ? "its" : "their") ELF LOAD segments are aligned below 16 KiB, which no packaging command changes"
        return command.map { "\($0); also \(relink)" } ?? relink
    }
}
