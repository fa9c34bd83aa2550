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
import Pipeline
import Sets
import Sign

extension APKPatch {
    /// `apkpatch merge SET --out app.apk`: one installable APK from a split APK set.
    struct Merge: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "merge",
            abstract: "Merge a split APK set (.apks, .xapk, .apkm, a directory, several APKs) into one signed APK.",
            discussion: """
            As APKEditor's merge: the splits' entries (native libraries, assets, resource files) are copied into the \
            base, their resources.arsc configurations (densities, languages) merged into the base's table, and the \
            manifest's split machinery removed (isSplitRequired, requiredSplitTypes, splitTypes, the \
            com.android.vending.splits(.required), com.android.stamp.* and com.android.vending.derived.apk.id \
            meta-data). resources.arsc is stored; stored native libraries are page-aligned, and extractNativeLibs \
            becomes true when a compressed one is merged. The APK is signed (as apkpatch sign; the Android debug key \
            by default) and verified. A feature split is refused with the reason.

            Examples:
              apkpatch merge app.apks --out app.apk
              apkpatch merge app.xapk --out app.apk --ks release.p12 --ks-pass env:KS_PASS
              apkpatch run app.apks --patch patch/ --merge --out app.apk --install --launch
            """
        )

        @Argument(help: "The set: a .apks, .xapk or .apkm, a directory of APKs, or several APKs.") var inputs: [String]
        @Option(name: .long, help: ArgumentHelp("The merged APK to write.", valueName: "path")) var out: String
        @OptionGroup(title: "Signing (as apkpatch sign)") var signer: SignerOptions
        @OptionGroup(title: "Schemes") var schemes: SchemeOptions
        @OptionGroup(title: "Install") var installFlags: InstallFlags
        @Flag(name: .customLong("no-verify"), help: "Skip verifying the merged APK.") var noVerify = false
        @Flag(name: .long, help: "Print the summary as JSON.") var json = false
        @Flag(name: [.customShort("q"), .long], help: "Print nothing but errors.") var quiet = false

        func run() throws {
            let options = try SetCommands.options(inputs: inputs, out: out, patch: nil, signer: signer, schemes: schemes, installFlags: installFlags,
                                                  deviceSpec: nil, verifies: !noVerify, announcesDebugKey: !json && !quiet)
            try SetCommands.merge(options, json: json, quiet: quiet)
        }
    }
}

extension SetCommands {
    /// `merge` and `run --merge`.
    static func merge(_ options: SetOptions, json: Bool, quiet: Bool) throws {
        let report = try SetPipeline.merge(options)
        if json {
            print(try FileHandleOutput.json(MergeJSON(report)))
        } else if !quiet {
            printMergeReport(report)
        }
        // The merged APK stands (its summary is above); the exit status says the install did not happen.
        if let error = report.installError {
            if !json { FileHandleOutput.standardError(CLIHint.describe(error)) }
            throw ExitCode.failure
        }
    }

    static func printMergeReport(_ report: SetPipeline.MergeReport) {
        print("Wrote \(report.output) (\(formatBytes(report.signing.outputSize)), \(report.signing.entryCount) entries): \(report.mergedAPKs.count) APKs merged, package \(report.packageName), versionCode \(report.versionCode)")
        print("  \(report.merge.addedEntries.count) entries from the splits, \(report.merge.mergedTables) resource tables merged")
        if !report.merge.removedFromManifest.isEmpty { print("  removed from the manifest: \(report.merge.removedFromManifest.joined(separator: ", "))") }
        if report.merge.extractsNativeLibraries { print("  android:extractNativeLibs set to true (a merged native library is compressed)") }
        print("  signed: \(report.signing.schemes.map(\.description).joined(separator: ", ")) by \(report.signing.certificateSubject)")
        if let verification = report.verification { print("  verified: \(verification.isVerified ? "yes" : "NO")") }
        if let v4 = report.v4SignatureFile { print("  v4 signature: \(v4)") }
        print(timeLine(report.timings))
        if let install = report.install {
            print(installedLine(install, incremental: "adb install --incremental"))
        } else if let commands = report.installCommands {
            print(installBlock(commands, failure: report.installError))
        }
    }
}

/// `apkpatch merge --json` (stable field names, documented in the README).
struct MergeJSON: Encodable {
    var output: String
    var outputSize: Int64
    var entries: Int
    var packageName: String
    var versionCode: Int64
    var mergedAPKs: [String]
    var addedEntries: [String]
    var mergedResourceTables: Int
    var removedFromManifest: [String]
    var extractNativeLibsSet: Bool
    var schemes: [String]
    var signerCertificateSHA256: String
    var verified: Bool?
    var v4SignatureFile: String?
    var installCommand: String?
    /// With --install: whether the merged APK was installed (nil without --install), also when a later step failed.
    var installed: Bool?
    /// With --install --launch: whether the app was started.
    var launched: Bool?
    /// With --install of an `.xapk` that carries expansion (OBB) files: each, where it goes, whether it was pushed.
    var expansionFiles: [ExpansionFileJSON]?
    var installError: InstallErrorJSON?
    var timingsMs: [String: Double]

    init(_ report: SetPipeline.MergeReport) {
        output = report.output
        outputSize = report.signing.outputSize
        entries = report.signing.entryCount
        packageName = report.packageName
        versionCode = report.versionCode
        mergedAPKs = report.mergedAPKs
        addedEntries = report.merge.addedEntries
        mergedResourceTables = report.merge.mergedTables
        removedFromManifest = report.merge.removedFromManifest
        extractNativeLibsSet = report.merge.extractsNativeLibraries
        schemes = report.signing.schemes.map(\.description)
        signerCertificateSHA256 = report.signing.certificateSHA256.hexString
        verified = report.verification?.isVerified
        v4SignatureFile = report.v4SignatureFile
        installCommand = report.installCommands?.installLine
        let steps = InstallStepsJSON(install: report.install, error: report.installError, commands: report.installCommands,
                                     expansions: report.expansions)
        installed = steps.installed
        launched = steps.launched
        expansionFiles = steps.expansionFiles
        installError = report.installError.map { InstallErrorJSON(CLIHint.hinted($0)) }
        timingsMs = Dictionary(uniqueKeysWithValues: report.timings.map { ($0.stage, $0.milliseconds) })
    }
}
