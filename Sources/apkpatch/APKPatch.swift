import APKCore
import ArgumentParser
internal import CBuildInfo
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

/// `apkpatch --version`: the release and the commit it was built from (CBuildInfo, filled in by make).
let buildVersion = "apkpatch \(String(cString: apkpatch_build_version())) (commit \(String(cString: apkpatch_build_commit())))"

/// The `apkpatch` command: one subcommand per pipeline stage, plus `run` and `watch` for the whole pipeline.
@main
struct APKPatch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apkpatch",
        abstract: "Patch, align, sign, verify and install Android APKs in one fast, safe pass.",
        discussion: """
        Replaces the apktool d → edit → apktool b → zipalign → apksigner sign → apksigner verify → adb install \
        chain. `apkpatch run app.apk --patch DIR` applies a patch directory (files laid out like the APK, plus an \
        optional apkpatch.yml) and writes a signed, aligned, verified APK.

        Exit status:
          0   success (verify: the APK verifies and would install)
          1   failure: the command could not do its work, or verify found that
              the APK does not verify or would not install
          2   usage error in align (the status zipalign gives)
          64  usage error in any other command: unknown option, missing or
              bad value (EX_USAGE)

        Shell completions: apkpatch completions bash|zsh|fish.
        """,
        version: buildVersion,
        subcommands: [
            Run.self,
            Watch.self,
            Unpack.self,
            Decode.self,
            Align.self,
            Sign.self,
            Merge.self,
            Verify.self,
            Rotate.self,
            Lineage.self,
            Keystore.self,
            Init.self,
            CITemplateCommand.self,
            Completions.self,
        ]
    )

    /// The last argument of `apkpatch <command> … <last>` when it is not an option: the APK path, for the
    /// commands that start work on it before the arguments are parsed (`Verify.prepare`, `Sign.prepare`).
    static func trailingPath(of arguments: [String], command: String) -> String? {
        guard arguments.count >= 2, arguments[0] == command, let last = arguments.last, !last.hasPrefix("-") else { return nil }
        return last
    }

    /// apksigner's boolean options, which take `true` or `false` or nothing, and what nothing means there (the
    /// default `ApkSignerTool.sign` passes to `OptionsParser.getOptionalBooleanValue`): `--v1-signing-enabled
    /// app.apk` is apksigner's `--v1-signing-enabled true app.apk`, but a valueless `--deterministic-dsa-signing`
    /// is false.
    static let apksignerBooleans: [String: Bool] = [
        "--v1-signing-enabled": true, "--v2-signing-enabled": true, "--v3-signing-enabled": true, "--v4-signing-enabled": true,
        "--alignment-preserved": true, "--debuggable-apk-permitted": true, "--misaligned-apk-permitted": true,
        "--verity-enabled": true, "--align-file-size": true, "--deterministic-dsa-signing": false,
        "--rotation-targets-dev-release": true, "--force-stamp-overwrite": true, "--stamp-timestamp-enabled": true,
        "--append-signature": true,
    ]

    /// Words meant as a boolean option's value: lower-case `true` and `false` are apksigner's, the others are refused.
    static let booleanSpellings: Set<String> = ["true", "false", "yes", "no", "on", "off", "1", "0"]

    /// `arguments` with the value apksigner implies written out after each valueless boolean option of the
    /// commands that take apksigner's options, so the parser sees `--option true` (or `false`); and the
    /// options whose implied value is false, which a reader would take for true.
    static func withApksignerBooleanValues(_ arguments: [String]) -> (arguments: [String], impliedFalse: [String]) {
        guard let command = arguments.first, ["sign", "run", "watch", "merge"].contains(command) else { return (arguments, []) }
        var result: [String] = [], impliedFalse: [String] = []
        result.reserveCapacity(arguments.count + 2)
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            result.append(argument)
            index += 1
            if argument == "--" { result += arguments[index...]; break }
            // `--v4-signing-enabled only`, as apksigner's online documentation has it, stays a value for the parser
            // to refuse (apksigner refuses it too): read as `true only`, `only` would be taken for an input APK.
            if argument == "--v4-signing-enabled", index < arguments.count, arguments[index] == "only" { continue }
            // So does a boolean spelt another way (`True`, `yes`, `1`), which apksigner too takes for an input APK:
            // the parser then names the option and the values it takes.
            if apksignerBooleans[argument] != nil, index < arguments.count, booleanSpellings.contains(arguments[index].lowercased()) { continue }
            if let implied = apksignerBooleans[argument], index == arguments.count || !["true", "false"].contains(arguments[index]) {
                result.append(String(implied))
                if !implied { impliedFalse.append(argument) }
            }
        }
        return (result, impliedFalse)
    }

    /// zipalign exits 2 on a usage error; keep that for `apkpatch align` so scripts can switch programs.
    static func main() {
        if CommandLine.arguments.count == 2 && CommandLine.arguments[1] == LeftoverWatch.helperArgument { LeftoverWatch.runHelper() }
        // A killed command's staging directories go when it does (this program, started again, removes them).
        if access("/proc/self/exe", X_OK) == 0 { LeftoverWatch.helper = ("/proc/self/exe", [LeftoverWatch.helperArgument]) }
        var (arguments, impliedFalse) = withApksignerBooleanValues(Array(CommandLine.arguments.dropFirst()))
        for option in impliedFalse {
            FileHandleOutput.standardError("WARNING: \(option) without a value means false, as in apksigner: write \(option) true to turn it on")
        }
        if let command = arguments.first, ["sign", "run", "watch", "merge"].contains(command) {
            SchemeOptions.signsRotation = true
            if command == "sign" {
                SchemeOptions.signsSourceStamp = true
                (arguments, Sign.stampSigners) = Sign.separateStampSigners(arguments)
            }
            (arguments, Sign.nextSigners, Sign.firstSignerTarget) = Sign.separateNextSigners(arguments)
        }
        // A watch session runs for hours and builds again and again: one malloc arena for all its threads, set
        // before any other thread allocates (see MallocArenas).
        if arguments.first == "watch" { MallocArenas.useOneForAllThreads() }
        // The one-shot commands that spread work over the cores: their worker threads' arenas start large enough
        // (see MallocArenas.growInSteps).
        if let command = arguments.first, ["verify", "sign", "align", "run", "merge"].contains(command) {
            MallocArenas.growInSteps(of: 16 << 20)
        }
        // Commands that spread work over the cores start the worker threads now, while nothing else runs (see
        // WorkerPool: a thread first started later, beside a busy main thread, can wait milliseconds to run).
        if let command = arguments.first, ["verify", "sign", "align", "run", "watch", "merge"].contains(command) {
            WorkerPool.warmUp()
            // And keeps their busy threads on different cores (see CoreBalance).
            CoreBalance.enable()
        }
        // Commands that read passwords and private keys never leave them in a core file.
        if let command = arguments.first, ["sign", "run", "watch", "merge", "rotate", "lineage", "keystore"].contains(command) {
            CoreDumps.disable()
        }
        // A replaced output's removal overlaps the process's teardown (exit waits for it).
        BackgroundRemoval.isEnabled = true
        // What a signing leaves to free goes on another thread while the command goes on (the v4 signature).
        BackgroundRelease.shared.isEnabled = true
        // An input truncated under its mapping fails cleanly, without partial output (see BusErrorGuard).
        BusErrorGuard.install()
        Verify.prepare(arguments)
        Sign.prepare(arguments)
        do {
            try Sign.checkFirstSignerTarget()
            var command = try parseAsRoot(arguments)
            do { try command.run() } catch let error as ValidationError {
                throw RunValidationError(message: error.message, command: type(of: command))
            }
            // Done: skip the libraries' exit handlers (OpenSSL frees every cache it built, one by one) once stdout
            // is flushed and the replaced outputs are removed.
            fflush(nil)
            BackgroundRemoval.waitForAll()
            _exit(0)
        } catch {
            // No work may outlive the process's exit handlers (see BackgroundValue.waitForAll).
            BackgroundValue<Void>.waitForAll()
            if let error = error as? RunValidationError {
                FileHandleOutput.standardError(error.fullMessage.cappingLongRuns)
                Glibc.exit(arguments.first == "align" ? 2 : ExitCode.validationFailure.rawValue)
            }
            if arguments.first == "align", !(error is ExitCode), exitCode(for: error) == .validationFailure {
                FileHandleOutput.standardError(fullMessage(for: error).cappingLongRuns)
                Glibc.exit(2)
            }
            exitReporting(error)
        }
    }

    /// A usage error a subcommand's `run()` found (a combination of options its `validate()` cannot judge, such as
    /// one a split APK set does not take). ArgumentParser knows which subcommand runs only while it parses, so it
    /// would word such an error with the top command's usage (`Usage: apkpatch <subcommand>`); this gives the
    /// subcommand's, as a usage error found while parsing gets.
    struct RunValidationError: Error {
        let message: String
        let command: ParsableCommand.Type

        var fullMessage: String {
            let usage = APKPatch.usageString(for: command).split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\n       ")
            let name = (APKPatch.commandNames(to: command) ?? [APKPatch._commandName]).joined(separator: " ")
            return "Error: \(message)\nUsage: \(usage)\n  See '\(name) --help' for more information."
        }
    }

    /// The names from this command down to `target` (`["apkpatch", "keystore", "create"]`), nil when `target` is
    /// not in `root`'s tree.
    static func commandNames(to target: ParsableCommand.Type, under root: ParsableCommand.Type = APKPatch.self) -> [String]? {
        if ObjectIdentifier(root) == ObjectIdentifier(target) { return [root._commandName] }
        for subcommand in root.configuration.subcommands {
            if let names = commandNames(to: target, under: subcommand) { return [root._commandName] + names }
        }
        return nil
    }

    /// Exits as `exit(withError:)` does for `error`, but with the message written to stderr in one piece:
    /// ArgumentParser writes it a byte per write(2) on unbuffered stderr, seconds of system time for a message
    /// that echoes a long argument. Help, version and completion text (status 0) still go to stdout through
    /// ArgumentParser. A usage error (64, ArgumentParser's own or a ValidationError) is worded by ArgumentParser
    /// with a user's long text cut; any other error is hinted (`HintedError`).
    static func exitReporting(_ error: any Error) -> Never {
        let code = exitCode(for: error)
        guard code != .success else { exit(withError: error) }
        let message = code == .validationFailure ? fullMessage(for: error).cappingLongRuns : fullMessage(for: HintedError.wrapping(error))
        // The text and the newline ArgumentParser's `print(_:to:)` would write.
        if !message.isEmpty { writeAll(2, message + "\n") }
        Glibc.exit(code.rawValue)
    }
}
