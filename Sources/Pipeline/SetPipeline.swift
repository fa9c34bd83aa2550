import APKCore
import Dispatch
import Foundation
import Install
import Overlay
import Sets
import Sign
import Unpack
import Verify

/// Options for signing or patching a split APK set.
public struct SetOptions: Sendable {
    /// The set: one `.apks`/`.xapk`/`.apkm` file or directory, or several APK paths.
    public var inputs: [String]
    /// Output path: a container file for a container input, else a directory.
    public var output: String?
    /// A patch directory (`splits/<split-name>/` patches that split); nil re-signs only.
    public var patchDirectory: String?
    public var signer: SignerConfig
    /// Verifies every APK written by Android's rules, install checks included.
    public var verifies = true
    public var install = InstallOptions()
    public var installs = false
    public var installScript: String?
    public var onInstallMessage: @Sendable (Installer.Message) -> Void = Installer.forwardToStandardError
    public var onStage: (@Sendable (String) -> Void)?

    public init(inputs: [String], output: String?, signer: SignerConfig) {
        self.inputs = inputs
        self.output = output
        self.signer = signer
    }

    /// The output this run writes: `--out`, else `<input>-patched` beside a container or directory input.
    public func resolvedOutput() throws -> String {
        if let output { return output }
        guard inputs.count == 1, let input = inputs.first else { throw SetPipelineError.outputNeeded }
        let trimmed = input.hasSuffix("/") && input.count > 1 ? String(input.dropLast()) : input
        let ext = (trimmed as NSString).pathExtension
        if !ext.isEmpty, APKSet.containerExtensions[ext.lowercased()] != nil {
            return (trimmed as NSString).deletingPathExtension + "-patched." + ext
        }
        return trimmed + "-patched"
    }
}

/// What happened to one APK of a set.
public struct SetMemberReport: Sendable {
    /// Its entry name in the container, or its file name.
    public var name: String
    /// `base`, or the split's name.
    public var splitName: String
    /// What the patch changed in it (nil when it was only re-signed).
    public var summary: OverlaySummary?
    public var signing: SigningReport?
    public var verification: VerificationReport?
}

/// What a set run did.
public struct SetReport: Sendable {
    public var output: String
    public var form: APKSet.Form
    public var packageName: String
    public var versionCode: Int64
    public var outputSize: Int64
    public var members: [SetMemberReport]
    public var installCommands: InstallCommands?
    public var install: Installer.Report?
    public var timings: [StageTiming]
}

/// A set's verification: each APK's report and what the set as a whole gets wrong.
public struct SetVerificationReport: Sendable {
    public var path: String
    public var form: APKSet.Form
    public var packageName: String
    public var versionCode: Int64
    public var members: [SetMemberReport]
    /// Set-level errors (APKs signed by different keys).
    public var errors: [String]
    public var isVerified: Bool { errors.isEmpty && members.allSatisfy { $0.verification?.isVerified == true } }
}

/// Split APK sets: verify, re-sign, patch, as one app. Every APK is signed with the one key, all of them at
/// once, each verified; the written set is checked for consistency again before it appears at the output.
public enum SetPipeline {
    /// How set members are read: as the signer reads an APK (names are not paths here).
    static var memberLimits: UnpackLimits { Signer.inputLimits }

    /// Verifies every APK of the set at `paths` and that one signer signed them all.
    public static func verify(paths: [String], options: VerificationOptions) throws -> SetVerificationReport {
        let set = try APKSet.open(paths: paths, memberLimits: memberLimits)
        // Each APK is judged by its own manifest, as apksigner judges it: a split without <uses-sdk> (aapt's
        // have none) is verified down to API 1, so it needs the JAR signature that signing it gives it.
        let reports = try concurrentMap(Array(set.members)) { member -> VerificationReport in
            try Verifier(options: options).verify(source: member.archive.source, label: member.label)
        }
        var report = SetVerificationReport(path: set.label, form: set.form, packageName: set.base.manifest.packageName,
                                           versionCode: set.base.manifest.versionCode, members: [], errors: [])
        for (member, verification) in zip(set.members, reports) {
            report.members.append(SetMemberReport(name: member.name, splitName: member.splitName, verification: verification))
        }
        report.errors = signerMismatches(zip(set.members.map(\.label), reports.map { $0.signers.map(\.sha256) }))
        return report
    }

    /// The set-level error for each APK whose signers differ from the base's (the first).
    static func signerMismatches<S: Sequence>(_ signers: S) -> [String] where S.Element == (String, [String]) {
        let all = Array(signers)
        guard let base = all.first else { return [] }
        return all.dropFirst().compactMap { label, certificates in
            guard Set(certificates) != Set(base.1) else { return nil }
            return APKSetError.signerMismatch(member: label, certificate: certificates.joined(separator: ", "), base: base.0,
                                              baseCertificate: base.1.joined(separator: ", ")).description
        }
    }

    /// Re-signs (and, with a patch directory, patches) every APK of the set and writes the set in its form.
    public static func run(_ options: SetOptions) throws -> SetReport {
        var clock = StageClock()
        clock.onStage = options.onStage
        defer { options.signer.keySupply.wait() }  // also on failure: see BackgroundValue.wait
        let output = try options.resolvedOutput()
        for input in options.inputs { try PatchPipeline.ensureDistinct(input: input, output: output) }
        let set = try clock.measure("open") { try APKSet.open(paths: options.inputs, memberLimits: memberLimits) }
        try SetWriter.checkFileNames(set)
        let patches = try clock.measure("overlay") { try options.patchDirectory.map { try patchesByMember(set, root: $0) } }

        // Each APK is signed into a staging directory beside the output: a directory output is that directory,
        // moved into place once complete; a container's APKs are copied from it into the container.
        let staging = try OutputDirectory(destination: output)
        let paths = set.members.enumerated().map { index, member in
            staging.path(for: set.form.isContainer ? "\(index).apk" : SetWriter.fileName(of: member))
        }
        // Each APK is signed for its own manifest's minSdkVersion, as apksigner signs it alone (a split without
        // <uses-sdk> gets SHA-1 JAR digests, so that apksigner verify accepts it on its own).
        let members = try clock.measure("sign+verify") {
            try concurrentMap(Array(set.members.indices)) { index -> SetMemberReport in
                try build(set.members[index], patch: patches?[index], signer: options.signer,
                          verification: options.verifies ? VerificationOptions() : nil, to: paths[index])
            }
        }
        // What was written must still be one app (a patch may have changed a versionCode or package).
        let written = try clock.measure("check") { () -> [(label: String, manifest: SplitManifest)] in
            let written = try zip(set.members, paths).map { member, path in
                (label: member.label, manifest: try APKSet.readManifest(APKArchive(path: path, limits: memberLimits)))
            }
            try SetConsistency.check(written)
            let mismatches = signerMismatches(zip(set.members.map(\.label), members.map { $0.signing.map { [hex($0.certificateSHA256)] } ?? [] }))
            if let first = mismatches.first { throw SetPipelineError.inconsistentOutput(first) }
            return written
        }
        let baseWritten = written[0].manifest
        var size: Int64 = 0
        try clock.measure("write") {
            if set.form.isContainer {
                let update = baseWritten.versionCode != set.base.manifest.versionCode || baseWritten.versionName != set.base.manifest.versionName
                    ? SetWriter.VersionUpdate(versionCode: baseWritten.versionCode, versionName: baseWritten.versionName) : nil
                size = try SetWriter.writeContainer(set, apkPaths: paths, to: output, versionUpdate: update)
            } else {
                size = paths.reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: $1)[.size] as? Int64) ?? 0) }
                try staging.commit { $0.hasSuffix(".apk") }
            }
        }
        var report = SetReport(output: output, form: set.form, packageName: baseWritten.packageName, versionCode: baseWritten.versionCode,
                               outputSize: size, members: members, timings: [])
        report.timings = clock.timings
        if options.installs || options.installScript != nil {
            throw SetPipelineError.notSupportedYet("installing a split APK set (adb install-multiple)")
        }
        return report
    }

    /// Patches (when `patch` is given), signs and verifies one APK of a set into `path`.
    static func build(_ member: APKSet.Member, patch: PatchDirectory?, signer: SignerConfig, verification: VerificationOptions?,
                      to path: String) throws -> SetMemberReport {
        var report = SetMemberReport(name: member.name, splitName: member.splitName)
        if let patch {
            let plan = try Overlay(archive: member.archive, patch: patch).plan()
            var options = PipelineOptions(input: member.label, patchDirectory: patch.root, output: path)
            options.signer = signer
            options.verifies = false  // below, for every member alike
            var clock = StageClock()
            let built = try PatchPipeline.build(plan: plan, archive: member.archive, options: options, output: path, clock: &clock)
            report.summary = plan.summary
            report.signing = built.signing
        } else {
            report.signing = try Signer(config: signer).sign(member.archive, to: path)
        }
        if let verification {
            let result = try Verifier(options: verification).verify(path: path)
            report.verification = result
            if !result.isVerified {
                throw PipelineError.verificationFailed("\(member.label) (written as \(path))", result.errors.map(\.description))
            }
        }
        return report
    }

    /// Each member's patch directory: the base's, each split's `splits/<name>/`, and for a split without one an
    /// empty patch when the base's changes the versionCode (every APK of a set must have the base's).
    static func patchesByMember(_ set: APKSet, root: String) throws -> [PatchDirectory?] {
        let (base, splits) = try PatchDirectory(root: root).splitPatches()
        let names = Set(set.members.map(\.splitName))
        if let unknown = splits.keys.sorted().first(where: { !names.contains($0) }) {
            throw SetPipelineError.unknownSplit(unknown, set.splits.map(\.splitName))
        }
        let versionCode = base.spec.manifest.versionCode
        return set.members.map { member in
            if member.isBase { return base }
            var patch = splits[member.splitName]
            if let versionCode {
                var spec = patch?.spec ?? PatchSpec()
                if spec.manifest.versionCode == nil { spec.manifest.versionCode = versionCode }
                patch = PatchDirectory(root: patch?.root ?? root, spec: spec, files: patch?.files ?? [:])
            }
            return patch
        }
    }

    /// `body` over `items` on all cores, results in order; the first error (in order) is thrown.
    static func concurrentMap<T: Sendable, R>(_ items: [T], _ body: (T) throws -> R) throws -> [R] {
        let results = UnsafeMutableBufferPointer<Result<R, any Error>?>.allocate(capacity: items.count)
        results.initialize(repeating: nil)
        defer { results.deinitialize(); results.deallocate() }
        nonisolated(unsafe) let slots = results
        withoutActuallyEscaping(body) { body in
            nonisolated(unsafe) let body = body
            DispatchQueue.concurrentPerform(iterations: items.count) { index in
                slots[index] = Result { try body(items[index]) }
            }
        }
        return try results.map { try $0!.get() }
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}

public enum SetPipelineError: Error, CustomStringConvertible {
    case outputNeeded
    case unknownSplit(String, [String])
    case inconsistentOutput(String)
    case notSupportedYet(String)

    public var description: String {
        switch self {
        case .outputNeeded:
            return "several APK paths give a directory of APKs: name the output directory"
        case .unknownSplit(let name, let splits):
            return "the patch directory's splits/\(name)/ names no split of the set (its splits: \(splits.isEmpty ? "none" : splits.joined(separator: ", "))); rename the folder after the split's name (its manifest's split attribute)"
        case .inconsistentOutput(let reason):
            return "the written set is not consistent, so it was not written: \(reason)"
        case .notSupportedYet(let what):
            return "\(what) is not supported yet"
        }
    }
}
