import APKCore
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
import Sets
import Sign
import Verify

/// What watch mode keeps per APK between builds, so that a rebuild costs in proportion to what changed.
final class MemberBuildCaches: @unchecked Sendable {
    let compression = CompressionCache()
    let signing = SigningCache()
    let manifest = ManifestCache()
}

/// Watch mode on a split APK set: rebuilds the set after each burst of edits in the patch directory and
/// (optionally) reinstalls it with `adb install-multiple`.
///
/// Each APK's last good build is kept in a hidden directory beside the output, with the patch it was built
/// from (files, sizes and modification times, and the spec). A rebuild patches and signs again only the APKs
/// whose patch changed: an edit under `splits/<name>/` rebuilds that split, any other the base, and a new
/// versionCode every APK. The output is then assembled from the kept and new APKs and checked as one app
/// before it replaces the last one (a container is written anew, its unchanged APKs copied byte for byte; a
/// directory gets hard links to them). A failed rebuild leaves the last good set in place.
public final class SetWatchSession {
    public let options: SetOptions
    public let patchDirectory: String
    public var quietPeriodMilliseconds: Int32 = 50
    /// Verifies every rebuilt APK, not only those of the first build.
    public var verifiesEachBuild = false
    /// How a failed build's error is told (`.failed`), as `WatchSession.describeError`.
    public var describeError: @Sendable (any Error) -> String = { "\($0)" }
    public let output: String
    let set: APKSet
    /// The last good build of each APK (`0.apk`, `1.apk`, … in the set's order), until the session ends.
    private let builds: OutputDirectory
    private var members: [MemberState]
    private var changes: PatchChangeFilter
    private var installReports = InstallReports()
    /// The device read with adb by the first install, reused for the later ones.
    private var deviceSpec: DeviceSpec?
    /// An `.xapk`'s expansion (OBB) files, copied to the device by the first install that succeeds: a patch
    /// changes the APKs, not them, and they may be gigabytes.
    private let expansions: [XAPKExpansion]
    private var expansionsPushed = false
    /// Whether the expansion files were taken out of the container for adb (once a session: they do not change).
    private var expansionsTakenOut = false
    let stopPipe: StopPipe

    /// The patch an APK was built from: equal patches give the same APK.
    struct PatchFingerprint: Equatable {
        var spec: PatchSpec?
        var files: PatchFiles
        init(_ patch: PatchDirectory?) {
            spec = patch?.spec
            files = patch?.files ?? [:]
        }
    }

    final class MemberState: @unchecked Sendable {
        let caches = MemberBuildCaches()
        /// The patch of the APK in `builds`, nil when there is none (or it may not match any patch).
        var builtFrom: PatchFingerprint?
        var report: SetMemberReport?
    }

    public init(options: SetOptions, patchDirectory: String) throws {
        self.options = options
        self.patchDirectory = patchDirectory
        output = try options.resolvedOutput()
        for input in options.inputs { try PatchPipeline.ensureDistinct(input: input, output: output) }
        set = try APKSet.open(paths: options.inputs, memberLimits: SetPipeline.memberLimits)
        try SetWriter.checkFileNames(set)
        expansions = options.installs || options.installScript != nil ? try XAPKExpansion.list(in: set) : []
        // Beside the output, not in it (`--out patched/` names the directory itself).
        let trimmed = output.count > 1 && output.hasSuffix("/") ? String(output.dropLast()) : output
        builds = try OutputDirectory(destination: trimmed + ".builds")
        members = set.allAPKs.map { _ in MemberState() }
        changes = PatchChangeFilter(root: patchDirectory)
        installReports.keptSet = output
        deviceSpec = options.deviceSpec
        stopPipe = try StopPipe()
    }

    /// Makes `run` return after the current build (safe to call from another thread).
    public func stop() { stopPipe.signal() }

    /// The descriptor a signal handler writes one byte to, to stop the session.
    public var stopFileDescriptor: Int32 { stopPipe.write }

    /// Builds once, then rebuilds on every change until `stop()`; `maxBuilds` bounds the loop (tests).
    public func run(maxBuilds: Int = .max, onEvent: (WatchSession.Event) -> Void) throws {
        let watcher = try DirectoryWatcher(root: patchDirectory)
        build(changed: [], verifies: options.verifies, onEvent: onEvent)
        var builds = 1
        while builds < maxBuilds {
            guard let changed = try changes.next(from: watcher, quietPeriodMilliseconds: quietPeriodMilliseconds, wakeFD: stopPipe.read) else { break }
            build(changed: changed, verifies: options.verifies && (verifiesEachBuild || WatchSession.changesNativeLibrary(changed)), onEvent: onEvent)
            builds += 1
        }
        onEvent(.stopped)
    }

    /// Rebuilds the APKs whose patch changed, writes the set, installs it when asked. Reports a failure as an
    /// event and keeps the last good set; a patch file gone when read is a save in flight, as in `WatchSession.build`.
    func build(changed: [String], verifies: Bool, onEvent: (WatchSession.Event) -> Void) {
        let start = DispatchTime.now().uptimeNanoseconds
        var clock = StageClock()
        do {
            var setOptions = options
            setOptions.patchDirectory = patchDirectory
            let patch = try clock.measure("overlay") { try SetPipeline.patchDirectory(setOptions)! }
            changes.lastFiles = Set(patch.files.keys.map { ExactName($0) })
            // A standalone APK's patch is the base's with the split patches that reach it: it is rebuilt when any of them changes.
            let patches = try clock.measure("overlay") { try SetPipeline.patchesByMember(set, patch: patch, standalones: true) }
            let fingerprints = patches.map(PatchFingerprint.init)
            let all = set.allAPKs
            let paths = all.indices.map { builds.path(for: "\($0).apk") }
            let stale = all.indices.filter { members[$0].builtFrom != fingerprints[$0] || members[$0].report == nil }
            var signer = options.signer
            signer.jarSignatureCompressionLevel = 0  // working builds: stored JAR signature files
            let verification = verifies ? VerificationOptions() : nil
            let states = members
            let buildSigner = signer
            let results = try clock.measure("sign+verify") {
                try SetPipeline.concurrentMap(stale) { index -> Result<SetMemberReport, any Error> in
                    let state = states[index]
                    state.builtFrom = nil  // whatever happens, the file may no longer be the last build's
                    let result = Result {
                        try SetPipeline.build(all[index], patch: patches[index], signer: buildSigner, verification: verification,
                                              to: paths[index], caches: state.caches)
                    }
                    if case .success(let report) = result {
                        state.builtFrom = fingerprints[index]
                        state.report = report
                    }
                    return result
                }
            }
            for result in results { _ = try result.get() }
            let reports = members.map { $0.report! }
            let written = try clock.measure("check") { try SetPipeline.checkWritten(set, paths: paths, signers: reports.map(\.signing)) }
            let size = try clock.measure("write") { () -> Int64 in
                if set.form.isContainer {
                    return try SetWriter.writeContainer(set, apkPaths: paths, to: output,
                                                        versionUpdate: SetPipeline.versionUpdate(set, base: written[0]))
                }
                return try SetWriter.writeDirectory(set, apkPaths: paths, to: output)
            }
            var report = SetReport(output: output, form: set.form, packageName: written[0].packageName, versionCode: written[0].versionCode,
                                   outputSize: size, members: reports, timings: [])
            changes.lastBuildFailed = false
            // A container's APKs are installed from the kept builds (until the session ends), a directory's from it.
            let installPaths = set.form.isContainer ? paths : all.map { output.appendingPathComponent(SetWriter.fileName(of: $0)) }
            var installOptions = options
            installOptions.deviceSpec = deviceSpec
            var installError: (any Error)?
            // Shown and scripted with every build; copied by the first install that succeeds only.
            report.expansions = expansions.map { $0.renamed(from: set.base.manifest.packageName, to: report.packageName) }
            let pushes = SetPipeline.expansionPushes(report.expansions, output: output, into: builds)
            do {
                try SetPipeline.prepareInstall(&report, set: set, written: written, paths: installPaths, pushes: pushes,
                                               options: installOptions, clock: &clock)
                deviceSpec = report.deviceSpec
            } catch {
                installError = error
            }
            report.timings = clock.timings
            let ms = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
            onEvent(.setBuilt(report, changed: changed, rebuilt: stale.map { all[$0].name }, milliseconds: ms))
            if let installError {
                installReports.failed(installError, apkPath: output, onEvent: onEvent)
            } else if options.installs, let commands = report.installCommands {
                do {
                    if !expansionsTakenOut && !pushes.isEmpty {
                        try SetPipeline.takeOut(pushes, of: set)
                        expansionsTakenOut = true
                    }
                    let installed = expansionsPushed ? try commands.withoutPushes() : commands
                    if installReports.install(installed, onMessage: options.onInstallMessage, onEvent: onEvent) {
                        expansionsPushed = true
                    }
                } catch {
                    installReports.failed(error, apkPath: output, onEvent: onEvent)
                }
            }
        } catch OverlayError.vanished {
            // A save in flight (WatchSession.build): its own events start the next build, which takes `changed` too.
            changes.interrupt(changed)
        } catch {
            changes.lastBuildFailed = true
            onEvent(.failed(describeError(error), changed: changed))
        }
    }
}
