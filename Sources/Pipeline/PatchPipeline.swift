import APKCore
import Align
import BinaryXML
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Install
import Overlay
import Repack
import Sign
import Unpack
import Verify

/// Options for one run of the pipeline.
public struct PipelineOptions: Sendable {
    public var input: String
    /// The patch directory; empty for none (`run` without `--patch`: the APK is repackaged as Android requires,
    /// signed and verified, its content unchanged).
    public var patchDirectory: String
    /// Output path; default `<input without .apk>-patched.apk` beside the input.
    public var output: String?
    /// Alignment when the output is not signed (the signer aligns signed output itself, by the same rules).
    public var alignment = AlignmentPolicy.android15
    /// Signs the output when set (what `apkpatch sign` would do); nil writes an unsigned, aligned APK. Its key
    /// may still be loading (`SignerConfig.init(pendingKey:)`): the APK is opened, patched, copied and
    /// digested meanwhile (decrypting a keystore is a costly PBKDF2), and `run` waits for it in any case.
    public var signer: SignerConfig?
    /// Network-security settings on top of the patch spec's (`run --trust-user-certs --ca-cert`).
    public var networkSecurity = NetworkSecuritySpec()
    /// Manifest edits on top of the patch spec's `manifest:` (`run --rename-package`).
    public var manifestEdits = ManifestEdits()
    /// Verifies the signed output by Android's rules, install checks included.
    public var verifies = true
    /// Writes the signed output's v4 signature (`<output>.idsig`), which makes `installs` use
    /// `adb install --incremental`; `.off` removes a stale one.
    public var v4Signing: V4SigningRequest = .off
    /// When set, each stage's output is also written there (unsigned.apk, …) for inspection.
    public var keepStagesDirectory: String?
    /// The adb command options; `installs` runs it.
    public var install = InstallOptions()
    public var installs = false
    /// Writes the install commands as a shell script here.
    public var installScript: String?
    /// Where adb's messages go while installing: by default its progress, not the error lines a failed
    /// install's `InstallError` reports with advice (`Installer.forwardProgressToStandardError`).
    public var onInstallMessage: @Sendable (Installer.Message) -> Void = Installer.forwardProgressToStandardError
    /// Passes adb's lines on as they come; by default they are passed on after a successful install only
    /// (`Installer.holdsMessagesUntilSuccess`), so a failure reads as the result and the advice alone.
    public var showsInstallMessagesLive = false
    /// Called as each stage starts (the CLI shows progress on a terminal).
    public var onStage: (@Sendable (String) -> Void)?

    public init(input: String, patchDirectory: String, output: String? = nil) {
        self.input = input
        self.patchDirectory = patchDirectory
        self.output = output
    }

    /// The output path this run writes: `--out`, else the input's name without ".apk" (by bytes: a Prepend mark
    /// joins the dot in a Character) and "-patched.apk".
    public var resolvedOutput: String {
        if let output { return output }
        return (input.droppingJavaSuffix(".apk") ?? input) + "-patched.apk"
    }
}

/// Timing of a stage, for the summary.
public struct StageTiming: Sendable, Codable {
    public var stage: String
    public var milliseconds: Double
}

/// What a pipeline run did.
public struct PipelineReport: Sendable {
    public var output: String
    public var summary: OverlaySummary
    public var outputSize: Int64
    public var entryCount: Int
    public var signing: SigningReport?
    public var verification: VerificationReport?
    /// The output's manifest, read from the plan (package name and launcher activity for the adb commands).
    public var manifest: ManifestSummary?
    /// The v4 signature written beside the output, if any.
    public var v4SignatureFile: String?
    public var installCommands: InstallCommands?
    public var install: Installer.Report?
    /// Why the install asked for failed (the APK was built and is kept); nil when it succeeded or was not asked.
    public var installError: InstallError?
    public var timings: [StageTiming]
    /// Entries stored uncompressed because Android would refuse the APK otherwise (`PackagingRepairs`).
    public var packagingRepairs: [PackagingRepair] = []
}

/// unpack → overlay → repack + align → sign → verify (→ install), with no intermediate files.
public enum PatchPipeline {
    public static func run(_ options: PipelineOptions) throws -> PipelineReport {
        defer { options.signer?.keySupply.wait() }  // also on failure: see BackgroundValue.wait
        let output = options.resolvedOutput
        try ensureDistinct(input: options.input, output: output)
        try options.signer?.checkV4Request(options.v4Signing)
        var clock = StageClock()
        clock.onStage = options.onStage
        let archive = try clock.measure("unpack") { try APKArchive(path: options.input, limits: .rewriting, readsAll: true) }
        let patch = try clock.measure("overlay") { options.patchDirectory.isEmpty ? PatchDirectory.empty : try PatchDirectory(root: options.patchDirectory) }
        var overlay = Overlay(archive: archive, patch: patch)
        overlay.contentEditor = ResourceContentEditor(extraEdits: options.manifestEdits, extraNetworkSecurity: options.networkSecurity)
        let plan = try clock.measure("overlay") { try overlay.plan() }
        // Opening touched every local header; the kernel mapped the pages around each one. Give them back.
        archive.source.discard(0..<archive.source.count)
        var report = try build(plan: plan, archive: archive, options: options, output: output, clock: &clock)
        try finishInstall(&report, options: options, clock: &clock)
        report.timings = clock.timings
        return report
    }

    /// Repack (and sign, and verify) a finished plan into `output`. Shared by one-shot and watch mode.
    static func build(plan: OverlayPlan, archive: APKArchive, options: PipelineOptions, output: String,
                      signingCache: SigningCache? = nil, manifestCache: ManifestCache? = nil,
                      storedEntryCache: StoredEntryCache? = nil, clock: inout StageClock) throws -> PipelineReport {
        let comment = archive.zip.endOfCentralDirectory.comment
        var report = PipelineReport(output: output, summary: plan.summary, outputSize: 0, entryCount: 0, timings: [])
        // The package and launcher activity name the launch command; an unreadable manifest only loses that.
        let manifestEntry = plan.entries.first { $0.entry.name == "AndroidManifest.xml" }
        report.manifest = manifestEntry.flatMap { entry in
            if let cached = manifestCache?.summary(for: entry.entry) { return cached }
            let summary = try? ManifestSummary(binaryXML: entry.uncompressedBytes())
            if let summary { manifestCache?.store(summary, for: entry.entry) }
            return summary
        }
        // The patched manifest decides (a patch may set targetSdkVersion or extractNativeLibs).
        var entries = plan.entries
        if let manifest = report.manifest {
            (entries, report.packagingRepairs) = try PackagingRepairs.apply(to: plan.entries, manifest: manifest, cache: storedEntryCache)
        }
        if let keep = options.keepStagesDirectory {
            try UserFiles.makeDirectories(keep)
            try Repacker.write(entries, to: keep.appendingPathComponent("unsigned-aligned.apk"),
                               alignment: options.alignment, comment: comment)
        }
        if var signer = options.signer {
            // Watch mode: the signer would parse the (unchanged, possibly large) manifest again for minSdkVersion.
            if manifestCache != nil, signer.minSdkVersion == nil, case .level(let level)? = report.manifest?.minSdkVersion {
                signer.minSdkVersion = level
            }
            // The signer hashes the v4 tree's leaves of what it writes while it has the bytes in hand, and refuses an
            // explicit v4 signature it cannot give before the output is published.
            signer.v4Request = options.v4Signing
            // The signer makes the v4 signature itself, on a free core while it writes the APK's last bytes, from
            // what it has in hand; not in watch mode (a signing cache), whose working builds recycle the last
            // output (it would be read back) and have no .idsig.
            signer.makesV4Signature = signingCache == nil
            // The signer writes, aligns and signs in one pass; the input's MANIFEST.MF main section is kept.
            let signed = entries + (plan.inputJarManifest.map { [$0] } ?? [])
            let signing = try clock.measure("repack+sign") { try Signer(config: signer).sign(entries: signed, comment: comment, to: output, cache: signingCache) }
            report.signing = signing
            report.outputSize = signing.outputSize
            report.entryCount = signing.entryCount
            // The v4 signature (the signer's, or one made from the leaves it hashed and the rest read back) is
            // written while the verifier reads the file: neither needs the other. Offered: a set's member is
            // built on a worker, which must not wait for work still queued.
            let v4Plan = Result { try signer.v4Signing(options.v4Signing, schemes: signing.schemes, apkMinSdkVersion: signing.minSdkVersion) }
            let leaves = signing.verityLeaves, made = signing.v4Signature
            let v4 = BackgroundValue<String?>(offered: {
                guard case .success(let v4) = v4Plan else { return nil }
                return try V4SchemeSigner.updateSignature(forAPKAt: output, key: v4.key, v31Key: v4.v31Key, request: v4.request, leaves: leaves,
                                                          made: made)
            })
            defer { v4.wait() }
            if options.verifies {
                let verification = try clock.measure("verify") { try Verifier(options: VerificationOptions()).verify(path: output) }
                report.verification = verification
                if !verification.isVerified {
                    throw PipelineError.verificationFailed(output, verification.errors.map(\.description))
                }
            }
            if options.v4Signing == .off {
                // Nothing is signed (a stale .idsig is only removed): no v4 stage to time or show.
                _ = try v4Plan.get()
                report.v4SignatureFile = try v4.get()
            } else {
                report.v4SignatureFile = try clock.measure("v4") {
                    _ = try v4Plan.get()
                    return try v4.get()
                }
            }
        } else {
            // An unsigned APK has no v4 signature: one a signed build left beside the output goes as this APK takes its place.
            let written = try clock.measure("repack") {
                try Repacker.write(entries, to: output, alignment: options.alignment, comment: comment,
                                   beforeCommit: { V4SchemeSigner.removeSignature(besideAPKAt: output) })
            }
            report.outputSize = written.size
            report.entryCount = written.entries.count
        }
        return report
    }

    /// Builds the adb commands for the output, writes the script, runs adb when asked. A failed install is
    /// reported in `report.installError`, not thrown: the APK was built, and the build's report stands.
    static func finishInstall(_ report: inout PipelineReport, options: PipelineOptions, pushes: [InstallCommands.Push] = [],
                              clock: inout StageClock) throws {
        let manifest = report.manifest
        var installOptions = options.install
        installOptions.incremental = report.v4SignatureFile != nil
        let commands = try InstallCommands(apkPaths: [report.output], packageName: manifest?.packageName,
                                           launcherActivity: manifest?.launcherActivity, options: installOptions, pushes: pushes,
                                           templates: try TemplateLibrary.locate())
        report.installCommands = commands
        if let script = options.installScript { try commands.writeScript(to: script) }
        if options.installs {
            var installer = Installer()
            installer.onMessage = options.onInstallMessage
            installer.holdsMessagesUntilSuccess = !options.showsInstallMessagesLive
            do {
                report.install = try clock.measure("install") { try installer.install(commands) }
            } catch let error as InstallError {
                report.installError = error
            }
        }
    }

    /// Refuses to write over the input (the input is never modified).
    public static func ensureDistinct(input: String, output: String) throws {
        let a = URL(fileURLWithPath: input).resolvingSymlinksInPath().standardizedFileURL.path
        let b = URL(fileURLWithPath: output).resolvingSymlinksInPath().standardizedFileURL.path
        if a == b { throw PipelineError.outputIsInput(output) }
    }
}

/// The manifest summary of the last build, reused while the manifest entry is unchanged (watch mode:
/// framework-res.apk's manifest is 222 KB of binary XML).
final class ManifestCache: @unchecked Sendable {
    private var key: (crc: UInt32, size: Int64, method: UInt16)?
    private var cached: ManifestSummary?
    func summary(for entry: ZipEntry) -> ManifestSummary? {
        guard let key, key.crc == entry.crc32, key.size == entry.uncompressedSize, key.method == entry.method.rawValue else { return nil }
        return cached
    }
    func store(_ summary: ManifestSummary, for entry: ZipEntry) {
        key = (entry.crc32, entry.uncompressedSize, entry.method.rawValue)
        cached = summary
    }
}

/// Accumulates time per stage.
struct StageClock {
    private(set) var timings: [StageTiming] = []
    /// Told when each stage starts (progress display).
    var onStage: (@Sendable (String) -> Void)?
    private var lastStage: String?
    mutating func measure<T>(_ stage: String, _ body: () throws -> T) rethrows -> T {
        if stage != lastStage { onStage?(stage); lastStage = stage }
        let start = DispatchTime.now().uptimeNanoseconds
        defer {
            let ms = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
            if let i = timings.firstIndex(where: { $0.stage == stage }) { timings[i].milliseconds += ms } else {
                timings.append(StageTiming(stage: stage, milliseconds: ms))
            }
        }
        return try body()
    }
}

public enum PipelineError: Error, CustomStringConvertible {
    case outputIsInput(String)
    case verificationFailed(String, [String])

    public var description: String {
        switch self {
        case .outputIsInput(let path):
            return "the output \(path) is the input APK; apkpatch never modifies its input: write the output to another path"
        case .verificationFailed(let path, let errors):
            return "\(path) was written but does not verify:\n" + errors.map { "  ERROR: \($0)" }.joined(separator: "\n")
        }
    }
}
