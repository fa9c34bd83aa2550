import ArgumentParser
import Foundation
import Pipeline

/// The write end of the session's stop pipe, for the SIGINT/SIGTERM handler (a C function cannot capture).
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

            Examples:
              apkpatch watch app.apk --patch patch/
              apkpatch watch app.apk --patch patch/ --install --launch
            """
        )

        @Argument(help: "The APK to patch.") var apk: String
        @Option(name: .long, help: ArgumentHelp("The patch directory to watch.", valueName: "dir")) var patch: String
        @Option(name: .long, help: ArgumentHelp("Output APK (default: <app>-patched.apk beside the input).", valueName: "path")) var out: String?
        @OptionGroup(title: "Signing (as apkpatch sign)") var signer: SignerOptions
        @OptionGroup(title: "Schemes") var schemes: SchemeOptions
        @OptionGroup(title: "Install") var installFlags: InstallFlags
        @Flag(name: .customLong("verify-each"), help: "Verify every rebuild, not only the first.") var verifyEach = false
        @Option(name: .customLong("debounce-ms"), help: ArgumentHelp("Quiet time after the last change before rebuilding.", valueName: "ms"))
        var debounceMilliseconds: Int32 = 50

        func run() throws {
            let options = try makePipelineOptions(apk: apk, patch: patch, out: out, keepStages: nil, signer: signer, schemes: schemes,
                                                  installFlags: installFlags, noSign: false, noVerify: false, announcesDebugKey: true)
            let session = try WatchSession(options: options)
            session.quietPeriodMilliseconds = debounceMilliseconds
            session.verifiesEachBuild = verifyEach
            stopDescriptor = session.stopFileDescriptor
            // A parent may have spawned us with these signals blocked (threads of a test runner, say): unblock
            // them, or Ctrl-C and SIGTERM would stay pending forever.
            var unblock = sigset_t()
            sigemptyset(&unblock)
            for signal in [SIGINT, SIGTERM] {
                sigaddset(&unblock, signal)
                Glibc.signal(signal) { _ in var byte: UInt8 = 1; _ = Glibc.write(stopDescriptor, &byte, 1) }
            }
            pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
            print("Watching \(patch) → \(options.resolvedOutput) (Ctrl-C to stop)")
            try session.run { event in
                let time = Self.clock()
                switch event {
                case .built(let report, let changed, let ms):
                    if changed.isEmpty {
                        print(String(format: "[%@] built %@ in %.0f ms (%@, %d entries)", time, report.output, ms, formatBytes(report.outputSize), report.entryCount))
                        if let commands = report.installCommands { print("        install: \(commands.installLine)") }
                    } else {
                        let stages = report.timings.map { String(format: "%@ %.0f", $0.stage, $0.milliseconds) }.joined(separator: ", ")
                        print(String(format: "[%@] rebuilt in %.0f ms: %@ (%@ ms)", time, ms, Self.describe(changed), stages))
                    }
                case .failed(let message, let changed):
                    let what = changed.isEmpty ? "" : " after " + Self.describe(changed)
                    FileHandleOutput.standardError("[\(time)] error\(what): \(message)\n        keeping the last good APK at \(options.resolvedOutput)")
                case .installed:
                    print("[\(time)] installed")
                case .installFailed(let message):
                    FileHandleOutput.standardError("[\(time)] install failed: \(message)")
                case .stopped:
                    print("[\(time)] stopped")
                }
                fflush(nil)
            }
        }

        static func describe(_ changed: [String]) -> String {
            changed.count <= 3 ? changed.joined(separator: ", ") : changed.prefix(3).joined(separator: ", ") + " and \(changed.count - 3) more"
        }

        static func clock() -> String {
            var now = time(nil)
            var parts = tm()
            localtime_r(&now, &parts)
            return String(format: "%02d:%02d:%02d", parts.tm_hour, parts.tm_min, parts.tm_sec)
        }
    }
}
