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
import LiveReload
import Pipeline
import Sets

/// The write end of the session's stop pipe, for the SIGINT/SIGTERM/SIGHUP handler (a C function cannot capture).
nonisolated(unsafe) private var stopDescriptor: Int32 = -1

extension APKPatch {
    struct Watch: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "watch",
            abstract: "Rebuild, re-sign (and reinstall) the patched APK on every save in the patch directory.",
            discussion: """
            Builds once, then watches the patch directory (inotify, new folders included) and rebuilds after each \
            burst of edits: one line per rebuild with what changed and how long it took. Unchanged entries are \
            never recompressed or re-digested; edited files are placed at the end of the APK so most of it stays \
            byte-identical between builds. A failed rebuild prints the error and keeps the last good APK; Ctrl-C \
            stops cleanly. No half-written APK is ever visible at the output path.

            With --live (Cordova and Capacitor apps), web-asset saves reach the running app without a rebuild: \
            a development server on 127.0.0.1 serves the app's web root (assets/www/ or assets/public/) from the \
            APK overlaid with the patch directory, `adb reverse` lets the device reach it, and a development build \
            whose WebView loads its pages from the server is installed once (debuggable, cleartext to localhost). \
            Each save under the web root reloads the open pages (stylesheets alone are swapped in place); other \
            edits rebuild and reinstall the development build. When watch stops, the reverse is removed and --out \
            holds the normal patched build, which loads its pages from the APK.

            Examples:
              apkpatch watch app.apk --patch patch/
              apkpatch watch app.apk --patch patch/ --install --launch
              apkpatch watch app.apk --patch patch/ --live --launch
              apkpatch watch app.apk --patch patch/ --live --live-port 8200 \\
                  --serial emulator-5554 --json

            A split APK set (.apks, .xapk, .apkm, a directory of APKs, or several APKs) is watched as `apkpatch run` \
            patches it: the patch directory patches the base and its splits/<split-name>/ folders those splits. \
            Each rebuild patches and re-signs only the APKs whose patch changed, keeps the others from the last \
            build, checks the set as one app, and with --install reinstalls it (adb install-multiple, with the \
            splits the device needs, or those of --device-spec).
              apkpatch watch app.apks --patch patch/ --install --launch
              apkpatch watch base.apk split_config.arm64_v8a.apk --patch patch/ \\
                  --out patched/
            """
        )

        @Argument(help: "The APK to patch (or a split APK set: .apks, .xapk, .apkm, a directory, several APKs).") var apks: [String]
        var apk: String { apks[0] }
        @Option(name: .long, help: ArgumentHelp("The patch directory to watch.", valueName: "dir")) var patch: String
        @Option(name: .long, help: ArgumentHelp("Output APK (default: <app>-patched.apk beside the input).", valueName: "path")) var out: String?
        @OptionGroup(title: "Signing (as apkpatch sign)") var signer: SignerOptions
        @OptionGroup(title: "Schemes") var schemes: SchemeOptions
        @OptionGroup(title: "Install") var installFlags: InstallFlags
        @Flag(name: .customLong("verify-each"), help: "Verify every rebuild, not only the first.") var verifyEach = false
        @Option(name: .customLong("debounce-ms"), help: ArgumentHelp("Quiet time after the last change before rebuilding (default 50, 10 with --live).", valueName: "ms"))
        var debounceMilliseconds: Int32?
        @Flag(name: .long, help: "Live reload (Cordova, Capacitor): serve the web root to the device and reload its pages on each save.")
        var live = false
        @Option(name: .customLong("live-port"), help: ArgumentHelp("Port of the live-reload server, here and on the device (0: any free one).", valueName: "port"))
        var livePort: Int = 8100
        @Option(name: .long, help: ArgumentHelp("For a split APK set: install (or script) only the splits matching this bundletool device spec (JSON), instead of reading the device with adb.", valueName: "file"))
        var deviceSpec: String?
        @Option(name: .customLong("rename-package"), help: ArgumentHelp("Rename the app's package in every build, as apkpatch run --rename-package.", valueName: "name")) var renamePackage: String?
        @Flag(name: .long, help: "One JSON object per line for each event.") var json = false

        func validate() throws {
            if apks.isEmpty { throw ValidationError("missing the APK to watch (apkpatch watch app.apk --patch DIR)") }
            if deviceSpec != nil && !APKSet.isSet(paths: apks) { throw ValidationError("--device-spec chooses the splits of a split APK set; \(apk) is one APK") }
            if schemes.v4 == true {
                throw ValidationError("watch mode does not write v4 signatures (.idsig): its builds change every save; use apkpatch run or sign for one")
            }
            if !(0...65535).contains(livePort) { throw ValidationError("--live-port must be between 0 and 65535") }
            if livePort != 8100 && !live { throw ValidationError("--live-port needs --live") }
            if let debounceMilliseconds, debounceMilliseconds < 0 { throw ValidationError("--debounce-ms cannot be negative") }
        }

        func run() throws {
            if APKSet.isSet(paths: apks) {
                try watchSet()
                return
            }
            var options = try makePipelineOptions(apk: apk, patch: patch, out: out, keepStages: nil, signer: signer, schemes: schemes,
                                                  installFlags: installFlags, noSign: false, noVerify: false, announcesDebugKey: !json)
            options.manifestEdits.packageName = renamePackage
            let session = try WatchSession(options: options)
            // Live reload's latency is the debounce plus a few milliseconds: keep it short. A save that comes in
            // pieces costs at worst one more reload.
            session.quietPeriodMilliseconds = debounceMilliseconds ?? (live ? 10 : 50)
            session.verifiesEachBuild = verifyEach
            session.describeError = { CLIHint.describe($0) }
            if live { session.liveReload = LiveReloadOptions(port: livePort) }
            Self.stopOnSignals(writingTo: session.stopFileDescriptor)
            if !json { print("Watching \(patch) → \(options.resolvedOutput) (Ctrl-C to stop)") }
            let printer = WatchEventPrinter(json: json, output: options.resolvedOutput, isLive: live)
            do {
                try session.run { event in
                    printer.print(event)
                    fflush(nil)
                }
            } catch let error as DevServerError {
                throw CommandFailure("\(error): --live-port PORT chooses another")
            }
        }

        /// `watch` on a split APK set.
        private func watchSet() throws {
            if live { throw ValidationError("--live is not supported for a split APK set; watch it without --live (each save rebuilds and reinstalls the set)") }
            var options = try SetCommands.options(inputs: apks, out: out, patch: patch, signer: signer, schemes: schemes, installFlags: installFlags,
                                                  deviceSpec: deviceSpec, verifies: true, announcesDebugKey: !json)
            options.v4Signing = .off  // working builds, as for one APK
            options.renamePackage = renamePackage
            defer { options.signer.keySupply.wait() }
            let session = try SetWatchSession(options: options, patchDirectory: patch)
            session.quietPeriodMilliseconds = debounceMilliseconds ?? 50
            session.verifiesEachBuild = verifyEach
            session.describeError = { CLIHint.describe($0) }
            Self.stopOnSignals(writingTo: session.stopFileDescriptor)
            if !json { print("Watching \(patch) → \(session.output) (Ctrl-C to stop)") }
            let printer = WatchEventPrinter(json: json, output: session.output, isLive: false)
            try session.run { event in
                printer.print(event)
                fflush(nil)
            }
        }

        /// SIGINT, SIGTERM and SIGHUP (the terminal closed) write a byte to `descriptor` (the session's stop pipe), so
        /// the session ends cleanly and removes its working files.
        static func stopOnSignals(writingTo descriptor: Int32) {
            stopDescriptor = descriptor
            // A parent may have spawned us with these signals blocked (threads of a test runner, say): unblock
            // them, or Ctrl-C and SIGTERM would stay pending forever.
            var unblock = sigset_t()
            sigemptyset(&unblock)
            for signal in [SIGINT, SIGTERM, SIGHUP] {
                sigaddset(&unblock, signal)
                Glibc.signal(signal) { _ in var byte: UInt8 = 1; _ = Glibc.write(stopDescriptor, &byte, 1) }
            }
            pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
        }

        static func describe(_ changed: [String]) -> String {
            // The watcher's names for the patch directory itself and for a burst too large to tell apart.
            let names = changed.map { $0.isEmpty ? "the patch directory itself" : $0 == "*" ? "more files than inotify could report" : $0 }
            return names.count <= 3 ? names.joined(separator: ", ") : names.prefix(3).joined(separator: ", ") + " and \(names.count - 3) more"
        }

        static func clock() -> String {
            var now = time(nil)
            var parts = tm()
            localtime_r(&now, &parts)
            return [parts.tm_hour, parts.tm_min, parts.tm_sec].map { $0 < 10 ? "0\($0)" : "\($0)" }.joined(separator: ":")
        }
    }
}
