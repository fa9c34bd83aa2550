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
import Sign
import Unpack

/// Watch mode: re-patch, re-sign and (optionally) reinstall within moments of each edit in the patch directory.
///
/// The input APK is mapped once. Patch files are recompressed only when they change (`CompressionCache`),
/// replaced entries are placed after the unchanged ones so an edit changes only the tail of the output, and
/// the signer's cache (`SigningCache`) reuses the v1 digests of unchanged entries and the v2/v3 digests of
/// unchanged 1 MiB chunks: a rebuild costs in proportion to the changed bytes plus one copy of the rest.
/// A failed rebuild leaves the last good APK in place.
public final class WatchSession {
    public enum Event: Sendable {
        /// A build finished; `changed` is empty for the first build.
        case built(PipelineReport, changed: [String], milliseconds: Double)
        /// A split APK set was built (`SetWatchSession`); `rebuilt` names the APKs written again, the others
        /// were kept from the last build.
        case setBuilt(SetReport, changed: [String], rebuilt: [String], milliseconds: Double)
        case failed(String, changed: [String])
        case installed(Installer.Report)
        /// The install after a build failed. Reported once while it keeps failing the same way (each build
        /// retries); `willRetry` for a missing, offline or unauthorized device, which the next build may find.
        case installFailed(InstallError, willRetry: Bool)
        /// `--live`: the server listens and the development build is about to be built and installed.
        case liveStarted(LiveReloadStart)
        /// `--live`: a web-asset save reached the pages (`changed` relative to the web root), `milliseconds`
        /// after the save, to `pages` open pages.
        case reloaded(changed: [String], milliseconds: Double, pages: Int)
        /// `--live`: a change outside the web root: the development build is rebuilt and reinstalled.
        case outsideWebRoot([String])
        /// `--live`, at the end: the normal patched build written to the output path.
        case finalBuilt(PipelineReport)
        /// Something worth knowing that does not stop the session.
        case warning(String)
        case stopped
    }

    public let options: PipelineOptions
    public var quietPeriodMilliseconds: Int32 = 50
    /// Verifies every rebuild (the first build is always verified).
    public var verifiesEachBuild = false
    /// Serve the web root to the device and reload its pages on web-asset saves (`watch --live`).
    public var liveReload: LiveReloadOptions?
    /// How a failed build's error is told (`.failed`): a front end adds its own hints (the command line names
    /// the option that answers a signing or keystore error).
    public var describeError: @Sendable (any Error) -> String = { "\($0)" }
    let archive: APKArchive
    private let compressionCache = CompressionCache()
    private let signingCache = SigningCache()
    private let manifestCache = ManifestCache()
    let stopPipe: StopPipe
    private var changes: PatchChangeFilter
    private let storedEntryCache = StoredEntryCache()
    private var installReports = InstallReports()

    public init(options: PipelineOptions) throws {
        self.options = options
        try PatchPipeline.ensureDistinct(input: options.input, output: options.resolvedOutput)
        // A killed live session's development build (a stopped session removes it; a live one holds it locked).
        let development = URL(fileURLWithPath: Self.developmentBuildPath(beside: options.resolvedOutput))
        WorkingFiles.removeLeftovers(in: development.deletingLastPathComponent().path) { $0 == development.lastPathComponent }
        archive = try APKArchive(path: options.input, limits: .rewriting, readsAll: true)
        archive.source.discard(0..<archive.source.count)  // pages mapped around the local headers read while opening
        stopPipe = try StopPipe()
        changes = PatchChangeFilter(root: options.patchDirectory)
    }

    /// Makes `run` return after the current build (safe to call from a signal handler's pipe or another thread).
    public func stop() { stopPipe.signal() }

    /// The descriptor a signal handler writes one byte to, to stop the session.
    public var stopFileDescriptor: Int32 { stopPipe.write }

    /// Builds once, then rebuilds on every change until `stop()`; `maxBuilds` bounds the loop (tests).
    /// With `liveReload`, see `runLive`.
    public func run(maxBuilds: Int = .max, onEvent: (Event) -> Void) throws {
        if let liveReload {
            try runLive(liveReload, onEvent: onEvent)
            return
        }
        let watcher = try DirectoryWatcher(root: options.patchDirectory)
        build(changed: [], verifies: options.verifies, onEvent: onEvent)
        var builds = 1
        while builds < maxBuilds {
            guard let relevant = try waitForRelevantChanges(watcher) else { break }
            build(changed: relevant, verifies: options.verifies && (verifiesEachBuild || Self.changesNativeLibrary(relevant)), onEvent: onEvent)
            builds += 1
        }
        onEvent(.stopped)
    }

    /// Whether a save changed a native library (`.so`): that rebuild is verified even when the others are not,
    /// so that a library not ready for 16 KiB pages is told when it arrives, not only at the first build.
    static func changesNativeLibrary(_ changed: [String]) -> Bool { changed.contains { $0.javaHasSuffix(".so") } }

    /// The next burst of changes that matter, sorted; nil once `stop()` was called.
    func waitForRelevantChanges(_ watcher: DirectoryWatcher) throws -> [String]? {
        try changes.next(from: watcher, quietPeriodMilliseconds: quietPeriodMilliseconds, wakeFD: stopPipe.read)
    }

    /// Records which of `paths` exist now, for telling deleted patch files from temporary ones without a build.
    func notePatchFiles(_ paths: [String]) { changes.note(paths) }

    /// Patches, signs (and verifies) into `output`, then installs it when `installs` is set; `editor` replaces
    /// the overlay's content editor (the live build's). Returns the report, or nil after a failure (reported) or
    /// a save in flight.
    ///
    /// A patch file deleted or renamed between the scan and its read is an editor's save under way (vim renames
    /// the file to its backup before writing it again; JetBrains and GNOME rename a temporary file over it), not
    /// a failure. Nothing is reported: the save's own events start the next build, which takes `changed` too. The
    /// last build of a session (`isLast`), which no wait follows, scans the directory again at once instead.
    @discardableResult
    func build(changed: [String], verifies: Bool, output: String? = nil, editor: (any ContentEditor)? = nil,
               installs: Bool? = nil, isLast: Bool = false, onEvent: (Event) -> Void) -> PipelineReport? {
        var rescans = 0
        while true {
            do {
                return try attemptBuild(changed: changed, verifies: verifies, output: output, editor: editor, installs: installs, onEvent: onEvent)
            } catch OverlayError.vanished where !isLast {
                changes.interrupt(changed)
                return nil
            } catch OverlayError.vanished where rescans < Self.rescansForSaves {
                rescans += 1
            } catch {
                changes.lastBuildFailed = true
                onEvent(.failed(describeError(error), changed: changed))
                return nil
            }
        }
    }

    /// How often the last build scans the patch directory again when a save keeps renaming files under it.
    static let rescansForSaves = 3

    /// One try at `build`: throws what stopped it; a failed install is reported, not thrown.
    private func attemptBuild(changed: [String], verifies: Bool, output: String?, editor: (any ContentEditor)?,
                              installs: Bool?, onEvent: (Event) -> Void) throws -> PipelineReport {
        let start = DispatchTime.now().uptimeNanoseconds
        var clock = StageClock()
        let patch = try clock.measure("overlay") { try PatchDirectory(root: options.patchDirectory) }
        changes.lastFiles = Set(patch.files.keys.map { ExactName($0) })
        var overlay = Overlay(archive: archive, patch: patch)
        overlay.placesPatchedEntriesLast = true
        // Watch prints no overlay notes: each rebuild would compute them for nothing.
        overlay.notesNameCase = false
        if let editor { overlay.contentEditor = editor } else { overlay.contentEditor = ResourceContentEditor(extraEdits: options.manifestEdits, extraNetworkSecurity: options.networkSecurity) }
        let plan = try clock.measure("overlay") { try overlay.plan(cache: compressionCache) }
        var buildOptions = options
        buildOptions.verifies = verifies
        buildOptions.signer?.jarSignatureCompressionLevel = 0
        // Working builds: no .idsig (the install, if any, is a normal one).
        buildOptions.v4Signing = .off
        var report = try PatchPipeline.build(plan: plan, archive: archive, options: buildOptions,
                                             output: output ?? options.resolvedOutput, signingCache: signingCache,
                                             manifestCache: manifestCache, storedEntryCache: storedEntryCache, clock: &clock)
        var installOptions = buildOptions
        installOptions.installs = false
        try PatchPipeline.finishInstall(&report, options: installOptions, clock: &clock)
        report.timings = clock.timings
        let ms = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
        changes.lastBuildFailed = false
        onEvent(.built(report, changed: changed, milliseconds: ms))
        if installs ?? options.installs, let commands = report.installCommands {
            installReports.install(commands, onMessage: options.onInstallMessage, live: options.showsInstallMessagesLive, onEvent: onEvent)
        }
        return report
    }
}

/// The installs after watch mode's builds, reported as events: a failure once, not again while each build
/// retries and fails the same way (a device not connected yet), until an install succeeds or fails otherwise.
struct InstallReports {
    /// How the last install failed (nil after a success).
    private var lastFailure: InstallError.Code?
    /// The split APK set a failure keeps (a set session's output), said instead of one of its APKs.
    var keptSet: String?

    /// Install failures the next build's install may not meet: the device is missing or not ready yet.
    static let retriedCodes: Set<InstallError.Code> = [.noDevice, .deviceOffline, .deviceUnauthorized, .deviceNotFound]

    /// Runs `commands` (the install, its pushes, the launch) and reports the outcome; true when it all succeeded.
    @discardableResult
    mutating func install(_ commands: InstallCommands,
                          onMessage: @escaping @Sendable (Installer.Message) -> Void,
                          live: Bool = false, onEvent: (WatchSession.Event) -> Void) -> Bool {
        var installer = Installer()
        installer.onMessage = onMessage
        installer.holdsMessagesUntilSuccess = !live
        do {
            let installed = try installer.install(commands)
            lastFailure = nil
            onEvent(.installed(installed))
            return true
        } catch {
            failed(error, apkPath: commands.apkPath, onEvent: onEvent)
            return false
        }
    }

    /// Reports `error` (an `InstallError`, or what kept the install from starting), unless it repeats the last.
    mutating func failed(_ error: any Error, apkPath: String, onEvent: (WatchSession.Event) -> Void) {
        var failure = error as? InstallError ?? InstallError(code: .installFailed, advice: "\(error)", apkPath: apkPath)
        if let keptSet { failure = failure.keptAsSet(keptSet) }
        if failure.code != lastFailure { onEvent(.installFailed(failure, willRetry: Self.retriedCodes.contains(failure.code))) }
        lastFailure = failure.code
    }
}
