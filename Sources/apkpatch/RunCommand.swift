import APKCore
import Align
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
import Overlay
import Pipeline
import Sets
import Sign
import Verify

extension APKPatch {
    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Patch an APK: unpack, overlay, repack, align, sign and verify in one pass.",
            discussion: """
            The patch directory mirrors APK paths: every file in it adds or replaces that entry. An optional \
            apkpatch.yml holds `delete:` globs, `store:`/`deflate:` globs and `manifest:` shortcuts. The input is \
            never modified; the output is written to a temporary file and renamed into place.

            Signing takes the options of `apkpatch sign` (apksigner's). Without any, the Android debug key is used \
            (~/.android/debug.keystore, created if absent), as Android's build tools do for debug builds.

            Examples:
              apkpatch run app.apk --patch patch/
              apkpatch run app.apk --patch patch/ --ks release.p12 \\
                  --ks-pass env:KS_PASS --out app-release.apk
              apkpatch run app.apk --patch patch/ --install --launch
              apkpatch run app.apk --out app-fixed.apk \\
                  # no patch: store what Android requires, sign, verify

            A split APK set (.apks, .xapk, .apkm, a directory of APKs, or several APKs) is patched as one app: the \
            patch directory patches the base, and its splits/<split-name>/ folders patch those splits; every APK is \
            re-signed with the one key and verified, and the output keeps the input's form.
              apkpatch run app.apks --patch patch/ --out app-patched.apks
              apkpatch run base.apk split_config.arm64_v8a.apk --patch patch/ \\
                  --out patched/
              apkpatch run app.apks --patch patch/ --install --launch \\
                  # adb install-multiple, with the splits the device needs
              apkpatch run app/ --patch patch/ --out patched/ \\
                  --device-spec pixel.json --emit-script install.sh
            """
        )

        @Argument(help: "The APK to patch (or a split APK set: .apks, .xapk, .apkm, a directory, several APKs).") var apks: [String]
        var apk: String { apks[0] }
        @Option(name: .long, help: ArgumentHelp("The patch directory (without one, the APK is repackaged as Android requires, signed and verified).", valueName: "dir")) var patch: String?
        @Option(name: .long, help: ArgumentHelp("Output APK (default: <app>-patched.apk beside the input).", valueName: "path")) var out: String?
        @Option(name: .long, help: ArgumentHelp("Also write each stage's output into this directory.", valueName: "dir")) var keepStages: String?
        @OptionGroup(title: "Signing (as apkpatch sign)") var signer: SignerOptions
        @OptionGroup(title: "Schemes") var schemes: SchemeOptions
        @Flag(name: .customLong("trust-user-certs"), help: "Trust user-installed CAs (for an interception proxy): writes or extends res/xml/network_security_config.xml, removing certificate pins.") var trustUserCerts = false
        @Option(name: .customLong("ca-cert"), help: ArgumentHelp("Also trust this CA certificate (PEM or DER), added as a res/raw resource; implies --trust-user-certs. Repeatable.", valueName: "cert")) var caCerts: [String] = []
        @Option(name: .customLong("rename-package"), help: ArgumentHelp("Rename the app's package (manifest and resources.arsc) so the copy installs beside the original, as manifest: package: in apkpatch.yml.", valueName: "name")) var renamePackage: String?
        @Flag(name: .customLong("no-sign"), help: "Write an unsigned, aligned APK.") var noSign = false
        @Flag(name: .customLong("no-verify"), help: "Skip verifying the signed output.") var noVerify = false
        @Flag(name: .long, help: "For a split APK set: merge the patched set into one APK (--out app.apk), as apkpatch merge.") var merge = false
        @OptionGroup(title: "Install") var installFlags: InstallFlags
        @Option(name: .long, help: ArgumentHelp("For a split APK set: install (or script) only the splits matching this bundletool device spec (JSON: supportedAbis, supportedLocales, screenDensity), instead of reading the device with adb.", valueName: "file"))
        var deviceSpec: String?
        @Flag(name: .long, help: "Print the summary as JSON.") var json = false
        @Flag(name: [.customShort("q"), .long], help: "Print nothing but errors (the exit status says whether it worked).") var quiet = false
        @Flag(name: [.customShort("v"), .long], help: "Also print the signing algorithms and every check's warnings.") var verbose = false

        func validate() throws {
            if quiet && verbose { throw ValidationError("--quiet and --verbose contradict each other; pick one") }
            if noSign && signer.isKeySpecified { throw ValidationError("--no-sign cannot be combined with signing options") }
            if noSign && installFlags.install { throw ValidationError("--install needs a signed APK; drop --no-sign") }
            if apks.isEmpty { throw ValidationError("missing the APK to patch (apkpatch run app.apk --patch DIR)") }
            if merge && !APKSet.isSet(paths: apks) { throw ValidationError("--merge merges a split APK set; \(apk) is one APK") }
            if deviceSpec != nil && !APKSet.isSet(paths: apks) { throw ValidationError("--device-spec chooses the splits of a split APK set; \(apk) is one APK") }
        }

        /// `--trust-user-certs` and `--ca-cert` (paths made absolute).
        private var networkSecurity: NetworkSecuritySpec {
            let directory = FileManager.default.currentDirectoryPath
            return NetworkSecuritySpec(trustUserCertificates: trustUserCerts || !caCerts.isEmpty,
                                       caCertificates: caCerts.map { $0.isAbsolutePath ? $0 : directory + "/" + $0 })
        }

        /// `run` on a split APK set.
        private func runSet() throws {
            // Both are about one APK's build: its stages, or an unsigned APK to sign later. A set's APKs install
            // only when all are signed with one key, so a set is always signed as a whole here.
            if keepStages != nil { throw ValidationError("--keep-stages writes the stages of one APK; for a split APK set, patch the APK to inspect alone (apkpatch run base.apk --patch DIR --keep-stages DIR)") }
            if noSign { throw ValidationError("--no-sign is not supported for a split APK set: its APKs install only when all are signed with one key, which run does; to inspect one unsigned, patch it alone (apkpatch run base.apk --patch DIR --no-sign)") }
            if merge && deviceSpec != nil {
                throw ValidationError("--device-spec chooses the splits to install, and a merged APK holds them all; drop --device-spec")
            }
            if merge && out == nil { throw ValidationError("--merge writes one APK: name it with --out app.apk") }
            var options = try SetCommands.options(inputs: apks, out: out, patch: patch, signer: signer, schemes: schemes, installFlags: installFlags,
                                                  deviceSpec: deviceSpec, verifies: !noVerify, announcesDebugKey: !json && !quiet)
            options.renamePackage = renamePackage
            options.networkSecurity = networkSecurity
            if merge {
                try SetCommands.merge(options, json: json, quiet: quiet)
                return
            }
            if !quiet && !json && isatty(STDERR_FILENO) == 1 {
                options.onStage = { (stage: String) in FileHandleOutput.standardError("… \(stage)") }
            }
            try SetCommands.run(options, json: json, quiet: quiet)
        }

        func run() throws {
            if APKSet.isSet(paths: apks) {
                try runSet()
                return
            }
            var options = try makePipelineOptions(apk: apk, patch: patch ?? "", out: out, keepStages: keepStages, signer: signer, schemes: schemes,
                                                  installFlags: installFlags, noSign: noSign, noVerify: noVerify, announcesDebugKey: !json && !quiet,
                                                  defersKeyLoading: true)
            options.networkSecurity = networkSecurity
            options.manifestEdits.packageName = renamePackage
            if !quiet && !json && isatty(STDERR_FILENO) == 1 {
                // Progress on a terminal only: logs and pipes get the summary alone.
                options.onStage = { (stage: String) in FileHandleOutput.standardError("… \(stage)") }
            }
            if verbose {
                options.onInstallMessage = Installer.forwardToStandardError
                options.showsInstallMessagesLive = true
            }
            let report = try AppBundleGiven.checking(apk) { try PatchPipeline.run(options) }
            if !quiet || json {
                try printRunReport(report, json: json)
                if verbose && !json, let signing = report.signing {
                    print("  signature algorithms: \(signing.signatureAlgorithms.map(\.description).joined(separator: ", "))\(signing.v1DigestAlgorithm.map { "; v1 digests \($0.rawValue)" } ?? "")")
                    print("  minSdkVersion \(signing.minSdkVersion), \(signing.realignedEntryCount) stored entries aligned")
                }
            }
            // The build stands (its summary is above); the exit status says the install did not happen.
            if let error = report.installError {
                if !json { FileHandleOutput.standardError(CLIHint.describe(error)) }
                throw ExitCode.failure
            }
        }

    }
}

/// Pipeline options from the command line, shared by `run` and `watch`.
///
/// With `defersKeyLoading`, a key that needs no typed or piped password is loaded on another thread while the
/// pipeline opens, patches and copies the APK (`SignerConfig.init(pendingKey:)`); `PatchPipeline.run` waits
/// for it whatever happens.
func makePipelineOptions(apk: String, patch: String, out: String?, keepStages: String?, signer: SignerOptions, schemes: SchemeOptions,
                         installFlags: InstallFlags, noSign: Bool, noVerify: Bool, announcesDebugKey: Bool,
                         defersKeyLoading: Bool = false) throws -> PipelineOptions {
    // Before the key starts loading and anything is built: a script that cannot be written, or a serial adb
    // cannot take, fails the command.
    if let script = installFlags.emitScript { try InstallCommands.checkScriptPath(script) }
    try InstallCommands.checkSerial(installFlags.serial)
    var options = PipelineOptions(input: apk, patchDirectory: patch, output: out)
    options.keepStagesDirectory = keepStages
    options.v4Signing = noSign ? .off : V4SigningRequest(option: schemes.v4)
    options.alignment = AlignmentPolicy(defaultAlignment: 4, nativeLibraryAlignment: schemes.libraryPageAlignment)
    if !noSign {
        if !signer.isKeySpecified && announcesDebugKey {
            FileHandleOutput.standardError("No signing key given: signing with the Android debug key (~/.android/debug.keystore). Use --ks for a release key.")
        }
        let source = try signer.isKeySpecified ? signer.keySource() : .debug(path: nil)
        if schemes.hasSeveralSigners {
            options.signer = try schemes.config(primary: try APKPatch.Sign.firstSigner(try source.load()), nextSigners: try APKPatch.Sign.loadNextSigners())
        } else if defersKeyLoading && !source.isInteractive {
            let schemes = schemes
            options.signer = schemes.config(pendingKey: BackgroundValue { try source.load() })
        } else {
            options.signer = schemes.config(key: try source.load())
        }
    }
    options.verifies = !noVerify
    options.install = installFlags.options
    options.installs = installFlags.install
    options.installScript = installFlags.emitScript
    return options
}

extension InstallFlags {
    var options: InstallOptions {
        InstallOptions(serial: serial, allowTestPackages: allowTest, allowDowngrade: allowDowngrade,
                       grantPermissions: grantPermissions, launch: launch)
    }
}

/// The end-of-run summary: entries touched, size, schemes, signer, time per stage, and the adb command.
func printRunReport(_ report: PipelineReport, json: Bool) throws {
    if json {
        print(try FileHandleOutput.json(RunSummary(report)))
        return
    }
    let s = report.summary
    print("Wrote \(report.output) (\(formatBytes(report.outputSize)), \(report.entryCount) entries)")
    // A file the patch directory replaces and the spec then edits (a text AndroidManifest.xml with manifest:
    // shortcuts) is one changed entry: listed once, as replaced, and counted once.
    let replaced = Set(s.replaced)
    let editedOnly = s.edited.filter { !replaced.contains($0) }
    let alsoEdited = Set(s.edited).intersection(replaced)
    print("  replaced \(s.replaced.count), added \(s.added.count), deleted \(s.deleted.count), edited \(editedOnly.count); dropped \(s.droppedSignatureFiles.count) old signature files")
    if !(s.replaced.isEmpty && s.added.isEmpty && s.deleted.isEmpty && editedOnly.isEmpty) {
        print("    (~ replaced by a patch file, + added, - deleted, * edited by apkpatch.yml or a values file)")
    }
    for name in s.replaced { print("    ~ \(name)\(alsoEdited.contains(name) ? ", then edited by apkpatch.yml" : "")") }
    for name in s.added { print("    + \(name)") }
    for name in s.deleted { print("    - \(name)") }
    for name in editedOnly { print("    * \(name)") }
    for note in s.notes { print("  note: \(note)") }
    for line in packagingRepairLines(report.packagingRepairs) { print("  \(line)") }
    if let signing = report.signing {
        print("  signed: \(signing.schemes.map(\.description).joined(separator: ", ")) by \(signing.certificateSubject)")
        print("  signer certificate SHA-256: \(signing.certificateSHA256.hexString)")
        for warning in signing.warnings { print("  WARNING: \(CLIHint.describe(warning))") }
        if let v4 = report.v4SignatureFile { print("  v4 signature: \(v4)") }
    } else {
        print("  not signed (--no-sign)")
    }
    if let verification = report.verification {
        print("  verified: \(verification.isVerified ? "yes" : "NO") (\(verification.verifiedSchemes.sorted().map(\.displayName).joined(separator: ", ")))")
        for warning in verificationWarnings(verification) { print("  WARNING: \(warning)") }
    }
    print("  time: " + report.timings.map { "\($0.stage) \(fixed($0.milliseconds, digits: 1)) ms" }.joined(separator: ", "))
    if let install = report.install {
        print(installedLine(install, incremental: "adb install --incremental"))
    } else if let commands = report.installCommands {
        print(installBlock(commands, failure: report.installError))
    }
}

/// The warnings a build's summary shows from its verification: what Android's package manager or a device
/// will make of it (a native library not ready for 16 KiB pages), then the signatures'.
func verificationWarnings(_ verification: VerificationReport) -> [String] {
    (verification.installWarnings + verification.signatureWarnings).map(\.description)
}

/// The summary's last lines after an install that succeeded: each file pushed, then "Installed (…) and started."
/// (`incremental` names the command when the install streamed).
func installedLine(_ install: Installer.Report, incremental: String) -> String {
    let pushed = install.pushed.map { "  expansion file pushed: \($0)\n" }.joined()
    return pushed + "Installed\(install.installedIncrementally ? " (\(incremental))" : "")\(install.launched ? " and started" : "")."
}

/// How to install (and start) an output by hand, after its summary: a heading sentence, then the one command
/// line, indented. `failure`: why the install tried did not finish (its message follows on stderr).
func installBlock(_ commands: InstallCommands, failure: InstallError?) -> String {
    let action = commands.launch == nil ? "install" : "install and start it"
    let heading: String
    switch failure?.code {
    case nil: heading = action.prefix(1).uppercased() + action.dropFirst() + " with:"
    case .launchFailed?:
        // Installed (and its files copied): starting it is all that is left.
        return "Installed, but not started (the reason follows); once fixed, start it with:\n  " + (commands.launchLine ?? commands.installLine)
    case .expansionPushFailed?: return "Installed, but an expansion file was not copied to the device (the reason follows)."
    default: heading = "Not installed (the reason follows); once fixed, \(action) with:"
    }
    return heading + "\n  " + (commands.text.hasSuffix("\n") ? String(commands.text.dropLast()) : commands.text)
}

/// "stored resources.arsc: Android 11+ requires it …" (or "aligned …" for an entry the input stored off its
/// boundary) for each repair; native libraries repaired the same way for one reason are one line, however
/// many there are.
func packagingRepairLines(_ repairs: [PackagingRepair]) -> [String] {
    var lines: [String] = []
    var groups: [(action: PackagingRepair.Action, reason: String, entries: [String])] = []
    for repair in repairs {
        if let index = groups.firstIndex(where: { $0.action == repair.action && $0.reason == repair.reason }) { groups[index].entries.append(repair.entry) }
        else { groups.append((repair.action, repair.reason, [repair.entry])) }
    }
    for group in groups {
        let what = group.entries.count <= 2 ? group.entries.joined(separator: " and ")
            : "\(group.entries.count) native libraries (\(group.entries[0]), …)"
        lines.append("\(group.action.rawValue) \(what): \(group.reason)")
    }
    return lines
}

/// The JSON form of a run's summary (stable field names, documented in the README).
struct RunSummary: Encodable {
    var output: String
    var outputSize: Int64
    var entries: Int
    var replaced: [String]
    var added: [String]
    var deleted: [String]
    var edited: [String]
    var droppedSignatureFiles: [String]
    var notes: [String]
    /// Entries stored uncompressed because Android requires it, each with the reason.
    var storedForAndroid: [PackagingRepair]
    /// Entries the input stored off the boundary Android requires, aligned in the output, each with the reason.
    var alignedForAndroid: [PackagingRepair]
    var schemes: [String]
    var signerCertificateSHA256: String?
    var signerSubject: String?
    var verified: Bool?
    var installCommand: String?
    /// With --install: whether the app was installed (nil without --install), also when starting it failed.
    var installed: Bool?
    /// With --install --launch: whether the app was started.
    var launched: Bool?
    /// Why the install (or starting the app) failed, with the advice.
    var installError: InstallErrorJSON?
    var v4SignatureFile: String?
    var timingsMs: [String: Double]

    init(_ report: PipelineReport) {
        output = report.output
        outputSize = report.outputSize
        entries = report.entryCount
        replaced = report.summary.replaced
        added = report.summary.added
        deleted = report.summary.deleted
        edited = report.summary.edited
        droppedSignatureFiles = report.summary.droppedSignatureFiles
        notes = report.summary.notes
        storedForAndroid = report.packagingRepairs.filter { $0.action == .stored }
        alignedForAndroid = report.packagingRepairs.filter { $0.action == .aligned }
        schemes = report.signing?.schemes.map(\.description) ?? []
        signerCertificateSHA256 = report.signing.map { $0.certificateSHA256.hexString }
        signerSubject = report.signing?.certificateSubject
        verified = report.verification?.isVerified
        installCommand = report.installCommands?.installLine
        let steps = InstallStepsJSON(install: report.install, error: report.installError, commands: report.installCommands)
        installed = steps.installed
        launched = steps.launched
        installError = report.installError.map { InstallErrorJSON(CLIHint.hinted($0)) }
        v4SignatureFile = report.v4SignatureFile
        timingsMs = Dictionary(uniqueKeysWithValues: report.timings.map { ($0.stage, $0.milliseconds) })
    }
}

/// `--json`'s account of `--install`, each step on its own, so that a failed later step does not read as a
/// failed install: `installed` (the APKs are on the device, also when copying a file or starting the app failed
/// after), `expansionFiles[].pushed` (each file copied, or not), `launched` (with `--launch`). All nil without
/// `--install`.
struct InstallStepsJSON {
    var installed: Bool?
    var launched: Bool?
    var expansionFiles: [ExpansionFileJSON]?

    init(install: Installer.Report?, error: InstallError?, commands: InstallCommands?, expansions: [XAPKExpansion] = []) {
        guard install != nil || error != nil else { return }
        installed = install != nil || error?.isAppInstalled == true
        if commands?.launch != nil { launched = install?.launched ?? false }
        let pushed = Set(install?.pushed ?? error?.pushedBeforeFailure ?? [])
        if !expansions.isEmpty {
            expansionFiles = expansions.map { ExpansionFileJSON(file: $0.file, devicePath: $0.devicePath, pushed: pushed.contains($0.devicePath)) }
        }
    }
}

/// An expansion (OBB) file in `--json`: the container entry, where it goes on the device, and whether it was
/// copied there.
struct ExpansionFileJSON: Encodable {
    var file: String
    var devicePath: String
    var pushed: Bool
}

/// A failed install in `--json`: the stable code, Android's failure name, adb's line, the advice, and the
/// whole message as the text output prints it.
struct InstallErrorJSON: Encodable {
    var code: String
    var failureCode: String?
    var adbMessage: String?
    var advice: String
    var message: String

    init(_ error: InstallError) {
        code = error.code.rawValue
        failureCode = error.failureCode
        adbMessage = error.adbMessage
        advice = error.advice
        message = error.description
    }
}
