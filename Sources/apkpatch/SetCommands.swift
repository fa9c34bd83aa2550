import APKCore
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
import Pipeline
import Sets
import Sign
import Verify

/// `verify`, `sign` and `run` on a split APK set (.apks, .xapk, .apkm, a directory, several APKs).
enum SetCommands {
    /// The signing key of a set command, loading in the background unless a password is to be typed: the
    /// options' key, or the Android debug key when none is given (announced on stderr when `announcesDebugKey`).
    static func pendingKey(_ signer: SignerOptions, announcesDebugKey: Bool) throws -> BackgroundValue<SignerKey> {
        if !signer.isKeySpecified && announcesDebugKey {
            FileHandleOutput.standardError("No signing key given: signing with the Android debug key (~/.android/debug.keystore). Use --ks for a release key.")
        }
        let source = try signer.isKeySpecified ? signer.keySource() : .debug(path: nil)
        return source.isInteractive ? BackgroundValue(ready: try source.load()) : BackgroundValue { try source.load() }
    }

    /// The signer configuration of a set command: the key loading in the background (see `pendingKey`), or, with
    /// a key rotation, several signers or SDK-targeted signers, all of them loaded now and planned as `apkpatch
    /// sign` plans them for one APK, so that every APK of the set carries the same signers.
    static func signerConfig(_ signer: SignerOptions, schemes: SchemeOptions, announcesDebugKey: Bool,
                             key prepared: BackgroundValue<SignerKey>? = nil) throws -> SignerConfig {
        let key = try prepared ?? pendingKey(signer, announcesDebugKey: announcesDebugKey)
        guard schemes.hasSeveralSigners else { return schemes.config(pendingKey: key) }
        return try schemes.config(primary: try APKPatch.Sign.firstSigner(try key.get()), nextSigners: try APKPatch.Sign.loadNextSigners())
    }

    /// A set command's options from its command line (`run`, `watch`, `merge`): the key (the Android debug key
    /// when none is given, announced when `announcesDebugKey`), the schemes and v4 signing, the install flags and
    /// the device spec file.
    static func options(inputs: [String], out: String?, patch: String?, signer: SignerOptions, schemes: SchemeOptions,
                        installFlags: InstallFlags, deviceSpec: String?, verifies: Bool, announcesDebugKey: Bool) throws -> SetOptions {
        // Before the key starts loading and anything is built: a script that cannot be written, or a serial adb
        // cannot take, fails the command.
        if let script = installFlags.emitScript { try InstallCommands.checkScriptPath(script) }
        try InstallCommands.checkSerial(installFlags.serial)
        var options = SetOptions(inputs: inputs, output: out,
                                 signer: try signerConfig(signer, schemes: schemes, announcesDebugKey: announcesDebugKey))
        options.patchDirectory = patch
        options.verifies = verifies
        options.v4Signing = V4SigningRequest(option: schemes.v4)
        options.install = installFlags.options
        options.installs = installFlags.install
        options.installScript = installFlags.emitScript
        // Read without blocking (a FIFO is refused) and bounded: a device spec is a few lines of JSON.
        if let deviceSpec { options.deviceSpec = try DeviceSpec(json: try RegularFile.contents(of: deviceSpec, limit: 1 << 20), path: deviceSpec) }
        return options
    }

    /// "  time: open 1.2 ms, …" for the summaries.
    static func timeLine(_ timings: [StageTiming]) -> String {
        "  time: " + timings.map { "\($0.stage) \(fixed($0.milliseconds, digits: 1)) ms" }.joined(separator: ", ")
    }

    /// `apkpatch verify SET`: every APK verifies, one signer signed them all, and the set is one app; with
    /// `expecting`, every APK is signed by the expected certificates.
    static func verify(_ paths: [String], options: VerificationOptions, json: Bool, verbose: Bool, printCertificates: Bool,
                       printPEM: Bool = false, expecting expectation: Verify.ExpectedSigners? = nil) throws {
        var report: SetVerificationReport
        do {
            report = try SetPipeline.verify(paths: paths, options: options)
        } catch let error where json {
            // No set to report on (the container cannot be read, or its APKs are not one app): --json still
            // prints one object, the set failing with the reason.
            print(try FileHandleOutput.json(SetJSON(paths: paths, error: CLIHint.describe(error))))
            throw ExitCode.failure
        }
        for index in report.members.indices { report.members[index].verification = report.members[index].verification.map(CLIHint.hinted) }
        // Each APK's own answer, and the set's: all of them (an APK that could not be read is signed by no one).
        let memberMatches: [Bool?] = report.members.map { member in
            guard let expectation else { return nil }
            return member.verification.map(expectation.isMet(by:)) ?? false
        }
        let expectedSignerMatched = expectation.map { _ in memberMatches.allSatisfy { $0 == true } }
        if json {
            var representation = SetJSON(report)
            representation.expectedSignerMatched = expectedSignerMatched
            // Signed by other certificates, the set (and each such APK) does not verify: `verified` is the one
            // field a CI script needs to read.
            if expectedSignerMatched == false { representation.verified = false }
            for index in representation.apks.indices { representation.apks[index].report?.recordExpectedSigner(matched: memberMatches[index]) }
            print(try FileHandleOutput.json(representation))
        } else {
            for member in report.members {
                guard let verification = member.verification else { continue }
                print("\(member.name) (\(member.role)): \(verification.isVerified ? "Verifies" : "DOES NOT VERIFY")")
                let text = verification.renderText(verbose: verbose, printCertificates: false, installVerdictAdvice: CLIHint.installVerdict)
                for line in text.standardOutput.split(separator: "\n") where line != "Verifies" { print("  \(line)") }
                for line in text.standardError.split(separator: "\n") where line != "DOES NOT VERIFY" {
                    FileHandleOutput.standardError("\(member.name): \(line)")
                }
            }
            for error in report.errors { FileHandleOutput.standardError("ERROR: \(error)") }
            if printCertificates || printPEM, report.errors.isEmpty, let base = report.members.first?.verification {
                // The certificate lines as for one APK (with -v its lineage too, capabilities included), without the
                // scheme lines and warnings printed above for each APK.
                let certs = base.renderText(verbose: verbose, printCertificates: true, printPEM: printPEM).standardOutput
                    .split(separator: "\n").drop { !$0.hasPrefix("Signer") }.filter { !$0.hasPrefix("WARNING: ") }
                print("All \(report.members.count) APKs signed by:")
                for line in certs { print("  \(line)") }
            }
            let app = report.packageName.map { ", package \($0), versionCode \(report.versionCode ?? 0)" } ?? ""
            print("\(report.isVerified ? "Verifies" : "DOES NOT VERIFY"): set \(report.path), \(report.members.count) APKs\(app)")
            if let fix = Verify.installFix(forSet: report.members.compactMap(\.verification), paths: paths) {
                FileHandleOutput.standardError("To fix: \(fix)\n")
            }
            if let expectation {
                for (member, matched) in zip(report.members, memberMatches) where matched == false {
                    guard let verification = member.verification, verification.isSignatureVerified else { continue }
                    FileHandleOutput.standardError("ERROR: \(expectation.refusal(of: member.name, report: verification))\n")
                }
            }
        }
        if !report.isVerified { throw ExitCode.failure }
        if expectedSignerMatched == false { throw ExitCode.failure }
    }

    /// `apkpatch sign SET --out OUT` and `apkpatch run SET …`: prints the summary.
    static func run(_ options: SetOptions, json: Bool, quiet: Bool) throws {
        var report = try SetPipeline.run(options)
        if report.deviceUnread, let error = report.installError {
            report.installError = withoutDeviceAdvice(error)
        }
        if json {
            print(try FileHandleOutput.json(SetJSON(report)))
        } else if !quiet {
            printSetReport(report)
        }
        // The set stands (its summary is above); the exit status says the install did not happen.
        if let error = report.installError {
            if !json { FileHandleOutput.standardError(CLIHint.describe(error)) }
            throw ExitCode.failure
        }
    }

    /// `error` (the device could not be read to choose a set's APKs) with the option that chooses them without it.
    static func withoutDeviceAdvice(_ error: InstallError) -> InstallError {
        var advised = error
        advised.advice += (advised.advice.hasSuffix(".") ? " " : ". ")
            + "Or choose them without a device: --device-spec FILE takes a bundletool device spec (JSON with supportedAbis, supportedLocales, screenDensity, sdkVersion)."
        return advised
    }

    static func printSetReport(_ report: SetReport) {
        print("Wrote \(report.output) (\(report.form.rawValue), \(report.members.count) APKs, \(formatBytes(report.outputSize))): package \(report.packageName), versionCode \(report.versionCode)")
        for member in report.members {
            var line = "  \(member.name) (\(member.role))"
            if let s = member.summary {
                line += ": replaced \(s.replaced.count), added \(s.added.count), deleted \(s.deleted.count), edited \(s.edited.count)"
            }
            if let verification = member.verification { line += verification.isVerified ? ", verified" : ", DOES NOT VERIFY" }
            print(line)
            for warning in member.verification.map(verificationWarnings) ?? [] { print("    WARNING: \(warning)") }
        }
        if let signing = report.members.first?.signing {
            print("  signed: \(signing.schemes.map(\.description).joined(separator: ", ")) by \(signing.certificateSubject)")
            print("  signer certificate SHA-256: \(signing.certificateSHA256.hexString)")
        }
        let idsigs = report.members.filter(\.hasV4Signature).count
        if idsigs > 0 { print("  v4 signatures: \(idsigs) .idsig files beside the APKs") }
        print(timeLine(report.timings))
        if report.deviceUnread, let script = report.installScript {
            print("  install script: \(script) installs every APK of the set (\(report.installedAPKs.joined(separator: ", "))): the device could not be read to choose its splits")
            print("Not installed (the reason follows)")
        } else if let commands = report.installCommands {
            print("  for the device: \(report.installedAPKs.joined(separator: ", "))")
            if let install = report.install {
                print(installedLine(install, incremental: "adb install-multiple --incremental"))
            } else {
                print(installBlock(commands, failure: report.installError))
            }
        } else if report.installError != nil {
            print("Not installed (the reason follows)")  // the device could not be read
        }
    }
}

/// `apkpatch verify --json`, `run --json` and `sign --json` on a set (stable field names, documented in the
/// README): the set's fields, then the command's; a field that does not apply to the command is absent.
struct SetJSON: Encodable {
    /// verify: the set read.
    var path: String?
    /// run, sign: the set written.
    var output: String?
    var form: String
    /// Absent when verify could read no base.
    var packageName: String?
    var versionCode: Int64?
    var verified: Bool?
    var errors: [String]?
    /// verify with `--expect-certificate-sha256`: whether every APK is signed by the expected certificates.
    var expectedSignerMatched: Bool?
    var outputSize: Int64?
    var apks: [Member]
    var installCommand: String?
    var installedAPKs: [String]?
    /// --emit-script: the script written.
    var installScript: String?
    /// The script was written, but the device could not be read to choose the APKs for it: the script installs
    /// those a run without a device installs (`installedAPKs`). Absent otherwise.
    var installScriptWithoutDevice: Bool?
    /// With --install: whether the set was installed (nil without --install), also when a later step failed.
    var installed: Bool?
    /// With --install --launch: whether the app was started.
    var launched: Bool?
    /// With --install of an `.xapk` that carries expansion (OBB) files: each, where it goes, and whether it was
    /// pushed there.
    var expansionFiles: [ExpansionFileJSON]?
    var installError: InstallErrorJSON?
    var timingsMs: [String: Double]?

    struct Member: Encodable {
        var name: String
        /// `base` or the split's name; absent for a standalone APK.
        var split: String?
        /// true for a bundletool standalone APK (`standalones/` of a `.apks`); absent otherwise.
        var standalone: Bool?
        /// true for an asset pack's APK (`asset-slices/` of a `.apks`); absent otherwise.
        var assetPack: Bool?
        /// verify: why the APK could not be opened as a member of the set (it fails the set).
        var error: String?
        /// verify: the single-APK report.
        var report: VerificationReportJSON?
        var replaced: [String]?
        var added: [String]?
        var deleted: [String]?
        var edited: [String]?
        var schemes: [String]?
        var signerCertificateSHA256: String?
        var verified: Bool?
        var v4SignatureFile: String?
        init(_ member: SetMemberReport) {
            name = member.name
            error = member.readError
            split = member.isStandalone || member.readError != nil ? nil : member.splitName
            standalone = member.isStandalone ? true : nil
            assetPack = member.isAssetSlice ? true : nil
        }
    }

    private init(form: APKSet.Form, packageName: String?, versionCode: Int64?, members: [SetMemberReport]) {
        self.form = form.rawValue
        self.packageName = packageName
        self.versionCode = versionCode
        apks = members.map(Member.init)
    }

    /// verify: the set at `paths` could not be read as one, for `error`.
    init(paths: [String], error: String) {
        self.init(form: APKSet.form(of: paths), packageName: nil, versionCode: nil, members: [])
        path = APKSet.label(of: paths)
        verified = false
        errors = [error]
    }

    init(_ report: SetVerificationReport) {
        self.init(form: report.form, packageName: report.packageName, versionCode: report.versionCode, members: report.members)
        path = report.path
        verified = report.isVerified
        errors = report.errors
        for (index, member) in report.members.enumerated() { apks[index].report = member.verification?.jsonRepresentation }
    }

    init(_ report: SetReport) {
        self.init(form: report.form, packageName: report.packageName, versionCode: report.versionCode, members: report.members)
        output = report.output
        outputSize = report.outputSize
        for (index, member) in report.members.enumerated() {
            apks[index].replaced = member.summary?.replaced
            apks[index].added = member.summary?.added
            apks[index].deleted = member.summary?.deleted
            apks[index].edited = member.summary?.edited
            apks[index].schemes = member.signing?.schemes.map(\.description) ?? []
            apks[index].signerCertificateSHA256 = member.signing.map { $0.certificateSHA256.hexString }
            apks[index].verified = member.verification?.isVerified
            if member.hasV4Signature { apks[index].v4SignatureFile = report.output.appendingPathComponent(member.name) + ".idsig" }
        }
        installCommand = report.installCommands?.installLine
        installedAPKs = report.installCommands == nil ? nil : report.installedAPKs
        installScript = report.installScript
        installScriptWithoutDevice = report.deviceUnread && report.installScript != nil ? true : nil
        let steps = InstallStepsJSON(install: report.install, error: report.installError, commands: report.installCommands,
                                     expansions: report.expansions)
        installed = steps.installed
        launched = steps.launched
        expansionFiles = steps.expansionFiles
        installError = report.installError.map { InstallErrorJSON(CLIHint.hinted($0)) }
        timingsMs = Dictionary(uniqueKeysWithValues: report.timings.map { ($0.stage, $0.milliseconds) })
    }
}
