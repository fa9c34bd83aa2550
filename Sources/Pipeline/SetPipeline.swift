import APKCore
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
import Overlay
import Repack
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
    /// Renames the app's package in every APK, on top of the patch spec's `manifest: package:`.
    public var renamePackage: String?
    /// The base's network-security preset, on top of the patch spec's `networkSecurity:`.
    public var networkSecurity = NetworkSecuritySpec()
    public var signer: SignerConfig
    /// Verifies every APK written by Android's rules, install checks included.
    public var verifies = true
    /// Writes each APK's v4 signature beside it (`<apk>.idsig`) where the output has the APKs as files (a
    /// directory, or a merged APK); with every installed APK signed so, the install is incremental.
    public var v4Signing: V4SigningRequest = .off
    public var install = InstallOptions()
    public var installs = false
    public var installScript: String?
    /// The device to choose configuration splits for (bundletool's device spec); nil with `installs` reads the
    /// connected device with adb, nil without installs everything.
    public var deviceSpec: DeviceSpec?
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
        let ext = trimmed.pathExtension
        if !ext.isEmpty, APKSet.containerExtensions[ext.lowercased()] != nil {
            return trimmed.deletingPathExtension + "-patched." + ext
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
    /// Whether a v4 signature (`<apk>.idsig`) was written beside it.
    public var hasV4Signature = false
    /// A bundletool standalone APK (`standalones/` of a `.apks`) rather than the base or a split.
    public var isStandalone = false
    /// An asset pack's APK (`asset-slices/` of a `.apks`).
    public var isAssetSlice = false
    /// Why the APK could not be opened as a member of the set (verify); nil when it was.
    public var readError: String?
    /// `standalone`, `base` or the split's name, for messages; `unreadable` for an APK that could not be opened.
    public var role: String { readError != nil ? "unreadable" : isStandalone ? "standalone" : splitName }

    init(_ member: APKSet.Member) {
        name = member.name
        splitName = member.splitName
        isStandalone = member.isStandalone
        isAssetSlice = member.isAssetSlice
    }

    init(_ member: UnreadableMember) {
        name = member.name
        splitName = ""
        readError = member.reason
    }
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
    /// Why `install` did not happen, when adb ran and failed: the set was built, and its report stands.
    public var installError: InstallError?
    /// The names of the APKs the install commands install (those matching the device).
    public var installedAPKs: [String] = []
    /// The device the installed APKs were chosen for (the device spec, or what adb read from the device).
    public var deviceSpec: DeviceSpec?
    /// The install script written (`SetOptions.installScript`), if any.
    public var installScript: String?
    /// The expansion (OBB) files of an `.xapk` installed or scripted: copied to the device after its APKs
    /// (`install?.pushed` says which were).
    public var expansions: [XAPKExpansion] = []
    /// The device could not be read to choose the APKs it needs (`installError` says why). An install script
    /// (`installScript`) was written all the same: with the APKs a run without a device installs
    /// (`installedAPKs`), not the device's choice.
    public var deviceUnread = false
    public var timings: [StageTiming]
}

/// A set's verification: each APK's report and what the set as a whole gets wrong.
public struct SetVerificationReport: Sendable {
    public var path: String
    public var form: APKSet.Form
    /// The base's package and versionCode; nil when no base could be read.
    public var packageName: String?
    public var versionCode: Int64?
    /// The APKs of the set, then those that could not be opened (`readError`, and the verifier's report of
    /// the file on its own where there is one).
    public var members: [SetMemberReport]
    /// Set-level errors (APKs signed by different keys, APKs that could not be opened).
    public var errors: [String]
    public var isVerified: Bool { errors.isEmpty && members.allSatisfy { $0.verification?.isVerified == true } }
}

extension SetVerificationReport {
    /// Adds the APKs that could not be opened: each fails the set with its reason, and is verified on its own
    /// (as `apkpatch verify` reads one APK: its report says what is wrong with the archive) where its bytes are
    /// there to read.
    mutating func add(_ unreadable: [UnreadableMember], options: VerificationOptions) {
        let reports = unreadable.map { member -> VerificationReport? in
            if let source = member.source { return try? Verifier(options: options).verify(source: source, label: member.label) }
            return member.path.flatMap { try? Verifier(options: options).verify(path: $0) }
        }
        for (member, verification) in zip(unreadable, reports) {
            var report = SetMemberReport(member)
            report.verification = verification
            members.append(report)
            errors.append(member.reason)
        }
    }
}

/// Split APK sets: verify, re-sign, patch, as one app. Every APK is signed with the one key, all of them at
/// once, each verified; the written set is checked for consistency again before it appears at the output.
public enum SetPipeline {
    /// How set members are read: as the signer reads an APK (names are not paths here).
    static var memberLimits: UnpackLimits { Signer.inputLimits }

    /// Verifies every APK of the set at `paths` and that one signer signed them all. An APK that cannot be
    /// opened (not a ZIP, truncated, refused by the reader every other command reads it with) fails the set
    /// with its reason, beside the verifier's report of it on its own; the others are verified as a set when
    /// they are one. Throws only when there is no set to report on (the container cannot be read, or what
    /// could be read is not one app).
    public static func verify(paths: [String], options: VerificationOptions) throws -> SetVerificationReport {
        let unreadable = UnreadableMembers()
        let set: APKSet
        do {
            set = try APKSet.open(paths: paths, memberLimits: memberLimits, settingAside: unreadable)
        } catch {
            guard !unreadable.members.isEmpty else { throw error }
            // What could be read is not a set on its own (the base may be an APK that could not be opened).
            var report = SetVerificationReport(path: APKSet.label(of: paths), form: APKSet.form(of: paths), packageName: nil,
                                               versionCode: nil, members: [], errors: [])
            report.add(unreadable.members, options: options)
            switch error as? APKSetError {
            case .noAPKs?, .noBase?: break  // said by the reasons above
            default: report.errors.append("\(error)")
            }
            return report
        }
        // Each APK is judged by its own manifest, as apksigner judges it: a split without <uses-sdk> (aapt's
        // have none) is verified down to API 1, so it needs the JAR signature that signing it gives it.
        let all = set.allAPKs
        let reports = try concurrentMap(all) { member -> VerificationReport in
            try Verifier(options: options).verify(source: member.archive.source, label: member.label)
        }
        var report = SetVerificationReport(path: set.label, form: set.form, packageName: set.base.manifest.packageName,
                                           versionCode: set.base.manifest.versionCode, members: [], errors: [])
        for (index, verification) in reports.enumerated() {
            var member = SetMemberReport(all[index])
            member.verification = verification
            report.members.append(member)
        }
        report.errors = signerMismatches(zip(all.map(\.label), reports.map { $0.signers.map(\.sha256) }))
        report.add(unreadable.members, options: options)
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
        try options.signer.checkV4Request(options.v4Signing)
        let set = try clock.measure("open") { try APKSet.open(paths: options.inputs, memberLimits: memberLimits) }
        if set.form.isContainer, case .on(reportsFailure: true) = options.v4Signing { throw SetPipelineError.v4InContainer(set.form.rawValue) }
        try SetWriter.checkFileNames(set)
        // A device spec that no variant fits, or an .xapk's expansion file that would go elsewhere than the
        // app's expansion folder, is refused before anything is written.
        if let spec = options.deviceSpec { _ = try set.toc?.choice(for: spec) }
        let expansions = options.installs || options.installScript != nil ? try XAPKExpansion.list(in: set) : []
        let patches = try clock.measure("overlay") {
            try patchDirectory(options).map { try patchesByMember(set, patch: $0, standalones: true) }
        }

        // Each APK is signed into a staging directory beside the output: a directory output is that directory,
        // moved into place once complete; a container's APKs are copied from it into the container.
        let staging = try OutputDirectory(destination: output)
        let all = set.allAPKs
        let paths = all.enumerated().map { index, member in
            staging.path(for: set.form.isContainer ? "\(index).apk" : SetWriter.fileName(of: member))
        }
        // Each APK is signed for its own manifest's minSdkVersion, as apksigner signs it alone (a split without
        // <uses-sdk> gets SHA-1 JAR digests, so that apksigner verify accepts it on its own).
        // A folder's APKs get .idsig files, each made by the signer beside its APK's last writes (`build`).
        // A container has no place for them (bundletool, APKPure and APKMirror carry none).
        var v4Config = options.signer
        v4Config.v4Request = set.form.isContainer ? .off : options.v4Signing
        v4Config.makesV4Signature = true
        let signer = v4Config
        let members = try clock.measure("sign+verify") {
            try concurrentMap(Array(all.indices)) { index -> SetMemberReport in
                try build(all[index], patch: patches?[index], signer: signer,
                          verification: options.verifies ? VerificationOptions() : nil, to: paths[index])
            }
        }
        TestStopPoint.setStaged.reach()
        let written = try clock.measure("check") { try checkWritten(set, paths: paths, signers: members.map(\.signing)) }
        let baseWritten = written[0]
        var size: Int64 = 0
        try clock.measure("write") {
            if set.form.isContainer {
                size = try SetWriter.writeContainer(set, apkPaths: paths, to: output, versionUpdate: versionUpdate(set, base: baseWritten))
            } else {
                size = paths.reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: $1)[.size] as? Int64) ?? 0) }
                try staging.commit(replaceable: SetWriter.isDirectoryOutputFile)
            }
        }
        var report = SetReport(output: output, form: set.form, packageName: baseWritten.packageName, versionCode: baseWritten.versionCode,
                               outputSize: size, members: members, timings: [])
        // A directory's APKs are now at the output; a container's are still in the staging directory (until
        // this function returns), which is where adb reads them from.
        let installPaths = set.form.isContainer ? paths : all.map { output.appendingPathComponent(SetWriter.fileName(of: $0)) }
        // A renamed app reads its expansion files from its own folder.
        report.expansions = expansions.map { $0.renamed(from: set.base.manifest.packageName, to: report.packageName) }
        let pushes = expansionPushes(report.expansions, output: output, into: staging)
        do {
            try prepareInstall(&report, set: set, written: written, paths: installPaths, pushes: pushes, options: options, clock: &clock)
            if options.installs, let commands = report.installCommands {
                var installer = Installer()
                installer.onMessage = options.onInstallMessage
                installer.holdsMessagesUntilSuccess = true
                try clock.measure("install") { try takeOut(pushes, of: set) }
                report.install = try clock.measure("install") { try installer.install(commands) }
            }
        } catch let error as InstallError {
            // The device could not be read or the install failed: the set was written, and its report stands.
            report.installError = error.keptAsSet(output)
        }
        withExtendedLifetime(staging) {}  // a container's APKs stay in it until adb has read them
        report.timings = clock.timings
        return report
    }

    /// The pushes that copy `expansions` to the device: each from a copy in `staging` (see `takeOut`), kept in
    /// the container written at `output`, which what is shown takes it out of.
    static func expansionPushes(_ expansions: [XAPKExpansion], output: String, into staging: OutputDirectory) -> [InstallCommands.Push] {
        expansions.enumerated().map { index, expansion in
            InstallCommands.Push(local: staging.path(for: "expansion-\(index).obb"), keptIn: .init(path: output, entries: [expansion.file]),
                                 remote: expansion.devicePath)
        }
    }

    /// Writes the local copy of each of `pushes` (`expansionPushes`), taken out of the container `set` came in,
    /// for adb to read.
    static func takeOut(_ pushes: [InstallCommands.Push], of set: APKSet) throws {
        for push in pushes {
            guard let name = push.keptIn?.entries.first else { continue }
            guard let container = set.container, let entry = container.entry(named: name) else {
                throw APKSetError.unsupported(set.label, "manifest.json lists \(name.debugQuoted), which the .xapk does not hold")
            }
            let file = try OutputFile(destination: push.local)
            try container.withUncompressedChunks(of: entry) { try file.write($0) }
            try file.commit()
        }
    }

    /// What was written must still be one app (a patch may have changed a versionCode or package): the
    /// manifests of the APKs at `paths` (`set.allAPKs`' order), checked as a set, the standalones against its
    /// base, and one signer for all. Returns the manifests.
    static func checkWritten(_ set: APKSet, paths: [String], signers: [SigningReport?]) throws -> [SplitManifest] {
        let all = set.allAPKs
        let written = try zip(all, paths).map { member, path in
            (label: member.label, manifest: try APKSet.readManifest(APKArchive(path: path, limits: memberLimits)))
        }
        let variants = set.splitVariantRanges.map { Array(written[$0]) }
        for variant in variants { try SetConsistency.check(variant) }
        let base = variants[0][0]
        try SetConsistency.checkSameApp(variants.dropFirst().map { $0[0] }, base: base)
        try SetConsistency.checkStandalones(Array(written[set.standaloneRange]), base: base)
        try SetConsistency.checkAssetSlices(zip(written[set.assetSliceRange], set.assetSlices).map { ($0.label, $0.manifest, set.isInstallTime($1)) }, base: base)
        let mismatches = signerMismatches(zip(all.map(\.label), signers.map { $0.map { [hex($0.certificateSHA256)] } ?? [] }))
        if let first = mismatches.first { throw SetPipelineError.inconsistentOutput(first) }
        return written.map(\.manifest)
    }

    /// The version fields an `.xapk`'s manifest.json needs when the written base's differ from the input's.
    static func versionUpdate(_ set: APKSet, base: SplitManifest) -> SetWriter.VersionUpdate? {
        guard base.versionCode != set.base.manifest.versionCode || base.versionName != set.base.manifest.versionName else { return nil }
        return SetWriter.VersionUpdate(versionCode: base.versionCode, versionName: base.versionName)
    }

    /// Chooses the APKs for the device (read with adb when installing without a device spec), builds the
    /// `adb install-multiple` command (then `pushes`) into `report` and writes the script. A device that cannot be read is an
    /// `InstallError`, thrown after the script is written when one is asked for (`SetReport.deviceUnread`).
    static func prepareInstall(_ report: inout SetReport, set: APKSet, written: [SplitManifest], paths: [String],
                               pushes: [InstallCommands.Push] = [], options: SetOptions, clock: inout StageClock) throws {
        guard options.installs || options.installScript != nil else { return }
        let summary = try mergedManifest(paths[0])
        let templates = try TemplateLibrary.locate()
        let all = set.allAPKs
        // A container's APKs are installed from copies (`paths`) that do not outlast the run or the session: what
        // is shown takes them out of the container.
        func commands(for indices: [Int]) throws -> InstallCommands {
            try InstallCommands(apkPaths: indices.map { paths[$0] }, packageName: summary?.packageName ?? report.packageName,
                                launcherActivity: summary?.launcherActivity, options: options.install,
                                container: set.form.isContainer ? .init(path: report.output, entries: indices.map { all[$0].name }) : nil,
                                pushes: pushes, templates: templates)
        }
        var spec = options.deviceSpec
        var unreadDevice: InstallError?
        if spec == nil && options.installs {
            var installer = Installer()
            installer.onMessage = options.onInstallMessage
            do {
                let probe = try clock.measure("device") { try installer.shell(DeviceSpec.probeCommand, for: commands(for: Array(paths.indices))) }
                spec = DeviceSpec(probeOutput: probe)
            } catch let error as InstallError {
                report.deviceUnread = true
                guard options.installScript != nil else { throw error }
                // No install without the device; but the script is how the user installs later: it installs what a
                // run without a device installs, and the error is thrown once it is written.
                unreadDevice = error
            }
        }
        report.deviceSpec = spec
        // Without a device the (first variant's) splits are installed: a standalone APK or another split variant
        // is an alternative to them, never installed beside them.
        var chosen = Array(set.members.indices) + set.assetSliceRange.filter { set.isInstallTime(all[$0]) }
        if let spec {
            var variant = set.splitVariantRanges[0]
            let choice: BundletoolTOC.Choice?
            do {
                choice = try set.toc?.choice(for: spec)
            } catch let error as APKSetError {
                // The device adb read fits no variant (a device spec given is checked before anything is written):
                // the set is written, and this is why it cannot be installed there.
                throw InstallError(unfit: error, output: report.output)
            }
            switch choice {
            case .standalone(let name)?:
                if let index = set.standaloneRange.first(where: { all[$0].name.sameUTF8(as: name) }) { variant = index..<(index + 1) }
            case .splits(let names?)?:
                let names = Set(names.map { ExactName($0) })  // the container's entry names, by their bytes
                variant = set.splitVariantRanges.first { range in all[range].contains { names.contains(ExactName($0.name)) } } ?? variant
            case .splits(nil)?, nil:
                break
            }
            if set.standaloneRange.contains(variant.lowerBound) {
                chosen = [variant.lowerBound]
            } else if let toc = set.toc {
                // bundletool's table says what each split and asset slice targets, and which asset packs are
                // delivered at install time: matched as its install-apks matches them.
                let candidates = Array(variant) + Array(set.assetSliceRange)
                let names = Set(toc.matchingAPKs(candidates.map { all[$0].name }, for: spec).map { ExactName($0) })
                chosen = candidates.filter { names.contains(ExactName(all[$0].name)) }
            } else {
                chosen = SplitSelection.select(written[variant].map { ($0.splitName, $0.configForSplit) }, for: spec).map { variant.lowerBound + $0 }
            }
        }
        report.installedAPKs = chosen.map { all[$0].name }
        // adb streams an incremental install-multiple only with every APK's .idsig beside it.
        let incremental = !chosen.isEmpty && chosen.allSatisfy { report.members[$0].hasV4Signature }
        let installCommands = try commands(for: chosen).with { $0.incremental = incremental }
        report.installCommands = installCommands
        if let script = options.installScript {
            // A container's APKs are inside it: the script takes the chosen ones out (unzip) to install them.
            try installCommands.writeScript(to: script)
            report.installScript = script
        }
        if let unreadDevice { throw unreadDevice }
    }

    /// What a merge did.
    public struct MergeReport: Sendable {
        public var output: String
        public var packageName: String
        public var versionCode: Int64
        /// The APKs merged, base first.
        public var mergedAPKs: [String]
        public var merge: SetMerge.Summary
        public var signing: SigningReport
        public var verification: VerificationReport?
        /// The v4 signature written beside the merged APK, if any.
        public var v4SignatureFile: String?
        public var installCommands: InstallCommands?
        public var install: Installer.Report?
        /// Why `install` did not happen, when adb ran and failed: the APK was built, and its report stands.
        public var installError: InstallError?
        /// The expansion (OBB) files of an `.xapk` merged and installed or scripted: copied to the device after
        /// the merged APK (`install?.pushed` says which were).
        public var expansions: [XAPKExpansion] = []
        public var timings: [StageTiming]
    }

    /// Merges the set (patched first when `options.patchDirectory` is set) into one signed, verified APK at
    /// `options.output`.
    public static func merge(_ options: SetOptions) throws -> MergeReport {
        var clock = StageClock()
        clock.onStage = options.onStage
        defer { options.signer.keySupply.wait() }
        guard let output = options.output else { throw SetPipelineError.outputNeeded }
        for input in options.inputs { try PatchPipeline.ensureDistinct(input: input, output: output) }
        try options.signer.checkV4Request(options.v4Signing)
        var set = try clock.measure("open") { try APKSet.open(paths: options.inputs, memberLimits: memberLimits) }
        let names = set.members.map(\.name)
        // Read from the input (a patched set is opened again from its APKs, without the container): an expansion
        // file that would go elsewhere than the app's expansion folder is refused before anything is written.
        let input = set
        let expansions = options.installs || options.installScript != nil ? try XAPKExpansion.list(in: set) : []
        // Patched members are written unsigned beside the output, merged from there, and removed.
        var staging: OutputDirectory?
        if let patch = try patchDirectory(options) {
            let patches = try clock.measure("overlay") { try patchesByMember(set, patch: patch) }
            let directory = try OutputDirectory(destination: output)
            staging = directory
            let paths = set.members.indices.map { directory.path(for: "\($0).apk") }
            let members = set.members
            _ = try clock.measure("overlay") {
                try concurrentMap(Array(members.indices)) { index -> Void in
                    let member = members[index]
                    guard let patch = patches[index] else {
                        _ = try Repacker.write(Repacker.rawEntries(of: member.archive.zip), to: paths[index], alignment: .android15)
                        return
                    }
                    let plan = try Overlay(archive: member.archive, patch: patch).plan()
                    var options = PipelineOptions(input: member.label, patchDirectory: patch.root, output: paths[index])
                    options.signer = nil
                    var clock = StageClock()
                    _ = try PatchPipeline.build(plan: plan, archive: member.archive, options: options, output: paths[index], clock: &clock)
                }
            }
            set = try APKSet.open(paths: paths, memberLimits: memberLimits)
        }
        let (entries, summary) = try clock.measure("merge") { try SetMerge.plan(set) }
        var signer = options.signer
        signer.v4Request = options.v4Signing
        signer.makesV4Signature = true
        let signing = try clock.measure("sign") { try Signer(config: signer).sign(entries: entries, to: output) }
        withExtendedLifetime(staging) {}  // the unsigned patched members stay until the merged APK is written
        // The v4 signature (the signer's, or a hash tree over the whole file when it could not make one) is
        // written while the verifier reads the same file: neither needs the other.
        let (key, v31Key, request) = try options.signer.v4Signing(options.v4Signing, schemes: signing.schemes, apkMinSdkVersion: signing.minSdkVersion)
        let leaves = signing.verityLeaves, made = signing.v4Signature
        let v4 = BackgroundValue<String?>({ @Sendable in
            try V4SchemeSigner.updateSignature(forAPKAt: output, key: key, v31Key: v31Key, request: request, leaves: leaves, made: made)
        })
        defer { v4.wait() }
        var verification: VerificationReport?
        if options.verifies {
            let result = try clock.measure("verify") { try Verifier(options: VerificationOptions()).verify(path: output) }
            verification = result
            if !result.isVerified { throw PipelineError.verificationFailed(output, result.errors.map(\.description)) }
        }
        var report = MergeReport(output: output, packageName: set.base.manifest.packageName, versionCode: set.base.manifest.versionCode,
                                 mergedAPKs: names, merge: summary, signing: signing, verification: verification, timings: [])
        report.v4SignatureFile = try options.v4Signing == .off ? v4.get() : clock.measure("v4") { try v4.get() }
        if options.installs || options.installScript != nil {
            // The merged APK installs as any single APK does (adb install, incremental with its .idsig).
            var single = PipelineReport(output: output, summary: OverlaySummary(), outputSize: signing.outputSize, entryCount: signing.entryCount,
                                        signing: signing, verification: verification, manifest: try mergedManifest(output),
                                        v4SignatureFile: report.v4SignatureFile, timings: [])
            var pipeline = PipelineOptions(input: options.inputs[0], patchDirectory: options.patchDirectory ?? "", output: output)
            pipeline.install = options.install
            pipeline.installs = options.installs
            pipeline.installScript = options.installScript
            pipeline.onInstallMessage = options.onInstallMessage
            // The expansion files stay in the input container; their copies for adb are taken out beside the
            // output, and removed with the folder once installed.
            report.expansions = expansions.map { $0.renamed(from: input.base.manifest.packageName, to: report.packageName) }
            let copies = report.expansions.isEmpty ? nil : try OutputDirectory(destination: output + ".expansion-files")
            let pushes = copies.map { copies in
                report.expansions.enumerated().map { index, expansion in
                    InstallCommands.Push(local: copies.path(for: "expansion-\(index).obb"), keptIn: .init(path: input.container?.label ?? input.label, entries: [expansion.file]),
                                         remote: expansion.devicePath)
                }
            } ?? []
            if options.installs { try clock.measure("install") { try takeOut(pushes, of: input) } }
            try PatchPipeline.finishInstall(&single, options: pipeline, pushes: pushes, clock: &clock)
            withExtendedLifetime(copies) {}
            report.installCommands = single.installCommands
            report.install = single.install
            report.installError = single.installError
        }
        report.timings = clock.timings
        return report
    }

    /// The manifest summary of the APK at `path` (package and launcher activity for the adb commands); nil
    /// when it cannot be read (the commands then do without).
    static func mergedManifest(_ path: String) throws -> ManifestSummary? {
        let apk = try APKArchive(path: path, limits: memberLimits)
        guard let entry = apk.entry(named: "AndroidManifest.xml") else { return nil }
        return try? ManifestSummary(binaryXML: apk.uncompressedData(of: entry))
    }

    /// Patches (when `patch` is given), signs and verifies one APK of a set into `path`, with its v4 signature
    /// (`<path>.idsig`) when `signer.v4Request` asks for one. With `caches` (watch mode), patched entries go last
    /// and unchanged bytes are neither recompressed nor digested again.
    static func build(_ member: APKSet.Member, patch: PatchDirectory?, signer: SignerConfig, verification: VerificationOptions?,
                      to path: String, caches: MemberBuildCaches? = nil) throws -> SetMemberReport {
        var report = SetMemberReport(member)
        if let patch {
            var overlay = Overlay(archive: member.archive, patch: patch)
            overlay.placesPatchedEntriesLast = caches != nil
            let plan = try overlay.plan(cache: caches?.compression)
            var options = PipelineOptions(input: member.label, patchDirectory: patch.root, output: path)
            options.signer = signer
            options.v4Signing = signer.v4Request
            options.verifies = false  // below, for every member alike
            var clock = StageClock()
            let built = try PatchPipeline.build(plan: plan, archive: member.archive, options: options, output: path,
                                                signingCache: caches?.signing, manifestCache: caches?.manifest, clock: &clock)
            report.summary = plan.summary
            report.signing = built.signing
            report.hasV4Signature = built.v4SignatureFile != nil
        } else {
            var signer = signer
            signer.makesV4Signature = signer.makesV4Signature && caches == nil
            let signing = try Signer(config: signer).sign(member.archive, to: path, cache: caches?.signing)
            report.signing = signing
            // With a key rotation, v4 signs with the v3.0 and v3.1 blocks' keys, as for one APK.
            if signer.v4Request != .off {
                let v4 = try signer.v4Signing(signer.v4Request, schemes: signing.schemes, apkMinSdkVersion: signing.minSdkVersion)
                report.hasV4Signature = try V4SchemeSigner.updateSignature(forAPKAt: path, key: v4.key, v31Key: v4.v31Key, request: v4.request,
                                                                           leaves: signing.verityLeaves, made: signing.v4Signature) != nil
            }
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
    /// empty patch when the base's changes the versionCode (every APK of a set must have the base's). With
    /// `standalones`, then each standalone APK's (`StandalonePatch`) and the asset packs' APKs', in
    /// `set.allAPKs`' order.
    static func patchesByMember(_ set: APKSet, patch: PatchDirectory, standalones: Bool = false) throws -> [PatchDirectory?] {
        let root = patch.root
        let (base, splits) = try patch.splitPatches()
        let splitAPKs = set.allAPKs[0..<set.standaloneRange.lowerBound]
        let names = Set((splitAPKs + set.assetSlices).map(\.splitName))
        if let unknown = splits.keys.sorted().first(where: { !names.contains($0) }) {
            throw SetPipelineError.unknownSplit(unknown, set.splits.map(\.splitName))
        }
        // Android installs a set only when every APK has the base's versionCode and package.
        let versionCode = base.spec.manifest.versionCode, package = base.spec.manifest.packageName
        let standalonePatches: [PatchDirectory?] = try standalones
            ? set.standalones.map { try StandalonePatch.combined(for: $0, in: set, base: base, splits: splits) } : []
        func splitPatch(_ member: APKSet.Member) throws -> PatchDirectory? {
            if member.isBase { return base }
            var patch = splits[member.splitName]
            if let own = patch?.spec.manifest.packageName, own != package {
                throw OverlayError.unsupportedEdit("\(root.appendingPathComponent(PatchDirectory.splitsFolder + "/" + member.splitName + "/" + PatchSpec.fileName)): manifest.package renames one split; every APK of a set must have the base's package, so rename the app in the top \(PatchSpec.fileName)")
            }
            // A pack delivered after the install keeps its own versionCode (bundletool gives it none).
            let versionCode = !member.isAssetSlice || set.isInstallTime(member) ? versionCode : nil
            if versionCode != nil || package != nil {
                var spec = patch?.spec ?? PatchSpec()
                if spec.manifest.versionCode == nil { spec.manifest.versionCode = versionCode }
                spec.manifest.packageName = package
                patch = PatchDirectory(root: patch?.root ?? root, spec: spec, files: patch?.files ?? [:])
            }
            return patch
        }
        // An asset pack's APK is a split: patched by splits/<its split name>/ like the others.
        return try splitAPKs.map(splitPatch) + standalonePatches + (standalones ? set.assetSlices.map(splitPatch) : [])
    }

    /// The patch directory of `options` with `renamePackage` and `networkSecurity` on top of its spec (an empty
    /// patch when there is only those).
    static func patchDirectory(_ options: SetOptions) throws -> PatchDirectory? {
        let patch = try options.patchDirectory.map { try PatchDirectory(root: $0) }
        guard options.renamePackage != nil || !options.networkSecurity.isEmpty else { return patch }
        var spec = patch?.spec ?? PatchSpec()
        if let name = options.renamePackage { spec.manifest.packageName = name }
        spec.networkSecurity = spec.networkSecurity.merging(options.networkSecurity)
        return PatchDirectory(root: patch?.root ?? "", spec: spec, files: patch?.files ?? [:])
    }

    /// `body` over `items` on all cores (`Parallel`), results in order. Every item runs, and the first error in
    /// item order is thrown, so a set with several bad members reports the same one on every run.
    static func concurrentMap<T: Sendable, R>(_ items: [T], _ body: @Sendable (T) throws -> R) throws -> [R] {
        try Parallel.map(items.count) { index in Result { try body(items[index]) } }.map { try $0.get() }
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }
}

public enum SetPipelineError: Error, CustomStringConvertible {
    case outputNeeded
    case unknownSplit(String, [String])
    case inconsistentOutput(String)
    case notSupportedYet(String)
    case v4InContainer(String)

    public var description: String {
        switch self {
        case .outputNeeded:
            return "several APK paths give a directory of APKs: name the output directory"
        case .unknownSplit(let name, let splits):
            return "the patch directory's splits/\(name)/ names no split of the set (its splits: \(splits.isEmpty ? "none" : splits.joined(separator: ", "))); rename the folder after the split's name (its manifest's split attribute)"
        case .inconsistentOutput(let reason):
            return "the written set is not consistent, so it was not written: \(reason)"
        case .v4InContainer(let form):
            return "v4 signatures (.idsig files) are written beside APK files, and a .\(form) keeps its APKs inside it with no place for them; write the set to a directory for .idsig files, or leave v4 signing at its default"
        case .notSupportedYet(let what):
            return "\(what) is not supported yet"
        }
    }
}

extension InstallError {
    /// The install that cannot happen because the device fits none of the set's variants (`APKSetError.noVariant`,
    /// `.ambiguousVariant`), for the set written to `output`: a device older than every variant is OLDER_SDK.
    init(unfit error: APKSetError, output: String) {
        var code = Code.installFailed
        if case .noVariant(let sdk, _, _, let minimum?) = error, sdk < minimum { code = .olderSDK }
        let reason = "\(error)"
        self.init(code: code, advice: reason.prefix(1).uppercased() + reason.dropFirst(), apkPath: output)
    }
}
