import APKCore
import Align
import ArgumentParser
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
import BinaryXML
import Pipeline
import Sets
import Sign
import Unpack

extension APKPatch {
    /// A drop-in for `apksigner sign`: the same option names and meanings, so a CI script switches programs by
    /// changing the name.
    struct Sign: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign",
            abstract: "Sign an APK with schemes v1, v2, v3 and v4, as apksigner sign does.",
            usage: """
            apkpatch sign --ks release.jks [--ks-key-alias alias] [--ks-pass spec] [--out signed.apk] app.apk
            apkpatch sign --key key.pk8 --cert cert.x509.pem [--out signed.apk] app.apk
            apkpatch sign --ks release.jks --ks-pass env:KS_PASS --out-dir signed/ a.apk b.apk ...
            apkpatch sign --ks release.jks --ks-pass env:KS_PASS --out app-signed.apks app.apks
            """,
            discussion: """
            Schemes default to v1, v2, v3 and v4, as in apksigner: v4 is the file <out>.idsig beside the APK, which adb install --incremental reads (turn a scheme off with --v1-signing-enabled false and friends). Algorithms follow the APK's minSdkVersion (from AndroidManifest.xml, or --min-sdk-version): JAR digests are SHA-1 below API 18 for RSA keys, SHA-256 otherwise. Stored entries are re-aligned (4 bytes, .so files on 16 KiB pages) unless --alignment-preserved true. Without --out the input is signed in place; either way the output appears only once complete. The same input and RSA key give byte-identical output.

            Examples:
              apkpatch sign --ks release.jks --ks-pass env:KS_PASS \\
                  --out app-signed.apk app.apk
              apkpatch sign --key key.pk8 --cert cert.pem --v1-signing-enabled false \\
                  --min-sdk-version 24 app.apk
              apkpatch sign --ks release.p12 --ks-pass env:KS_PASS \\
                  --out-dir signed/ --json build/*.apk
              apkpatch sign --ks old.p12 --ks-pass env:OLD_PASS --next-signer \\
                  --ks new.p12 --ks-pass env:NEW_PASS --lineage lineage.bin \\
                  --out-dir signed/ build/*.apk

            A source stamp (apksigner's --stamp-signer) follows --stamp-signer with the stamp key's options (--ks, \
            --ks-pass, --ks-key-alias, --key-pass, --ks-type, or --key and --cert; an RSA key), with --stamp-lineage \
            FILE for a rotated stamp key, --stamp-timestamp-enabled false to leave out the time, and \
            --force-stamp-overwrite true to replace another stamp's stamp-cert-sha256 entry.
              apkpatch sign --ks release.p12 --ks-pass env:KS_PASS \\
                  --stamp-signer --ks stamp.p12 --ks-pass env:STAMP_PASS --out app-signed.apk app.apk

            A split APK set (.apks, .xapk, .apkm, a directory of APKs, or several APKs with --out) is signed as one \
            app: every APK with the one key, in parallel, each verified; --out is then a file of the same kind for \
            a .apks/.xapk/.apkm, else a directory.
              apkpatch sign --ks release.p12 --ks-pass env:KS_PASS \\
                  --out app-signed.xapk app.xapk
              apkpatch sign --debug --out signed/ base.apk \\
                  split_config.arm64_v8a.apk split_config.xhdpi.apk
            """
        )

        @OptionGroup(title: "Signing key") var signer: SignerOptions
        @OptionGroup(title: "Schemes") var schemes: SchemeOptions
        @Option(name: .customLong("out"), help: ArgumentHelp("Where to write the signed APK (default: sign the input in place).", valueName: "path"))
        var output: String?
        @Option(name: .customLong("in"), help: ArgumentHelp("The APK to sign (or give it as the last argument).", valueName: "path"))
        var inputOption: String?
        @Flag(name: [.customShort("v"), .customLong("verbose")], help: "Print what was signed and how.") var verbose = false
        @Flag(name: .long, help: "Print the signing report as JSON.") var json = false
        @Flag(name: [.customShort("q"), .long], help: "Print nothing but errors.") var quiet = false
        @Option(name: .customLong("out-dir"), help: ArgumentHelp("Sign several APKs in parallel, writing each to this directory under its own name, each as --out would (every signer, rotation and scheme option applies to each).", valueName: "dir"))
        var outputDirectory: String?
        @Argument(help: "The APK to sign (several with --out-dir).") var inputs: [String] = []

        func validate() throws {
            // An apksigner option apkpatch does not take is named first: its arguments may look like inputs.
            if let refused = schemes.refusedOption { throw ValidationError("\(refused.option): \(refused.reason)") }
            try Self.checkStampSigners(lineage: schemes.stampLineage)
            if inputOption != nil && !inputs.isEmpty { throw ValidationError("give the input APK once: either --in or as the last argument") }
            if inputOption == nil && inputs.isEmpty { throw ValidationError("missing the input APK (apkpatch sign [options] app.apk)") }
            if outputDirectory != nil && output != nil { throw ValidationError("--out names one output; with --out-dir each APK keeps its name in that directory") }
            // Several existing .apk files with --out are a split APK set (signed into the directory --out).
            let isSet = output != nil && inputs.allSatisfy { $0.hasSuffixIgnoringASCIICase(".apk") && FileManager.default.fileExists(atPath: $0) }
            if outputDirectory == nil && !isSet && inputs.count > 1 {
                // An option apkpatch does not know leaves its value behind as an input: say so, as that is the
                // usual cause (apksigner options such as --ks-provider-name or --kms-type).
                throw ValidationError("several input APKs (\(inputs.joined(separator: ", "))) need --out-dir DIR; if one of them is an option's value, apkpatch sign does not support that option (see apkpatch sign --help)")
            }
            if let dir = outputDirectory {
                let names = (inputs + [inputOption].compactMap { $0 }).map { $0.lastPathComponent }
                if Set(names).count != names.count { throw ValidationError("two inputs have the same file name; they would overwrite each other in \(dir)") }
            }
            if !signer.isKeySpecified { throw ValidationError("no signing key: give --ks, --key with --cert, or --debug") }
        }

        /// The APK `main` started opening before the arguments were parsed (see `prepare`), if any.
        nonisolated(unsafe) static var prepared: (path: String, archive: BackgroundValue<APKArchive>)?

        /// The keystore `main` started loading before the arguments were parsed (see `prepare`), if any.
        nonisolated(unsafe) static var preparedKey: (source: KeySource, key: BackgroundValue<SignerKey>)?

        /// For `sign … app.apk`: starts opening the last argument (parsing its ~7,600 headers) while the rest
        /// of the arguments are parsed on the main thread. `run` uses it only for that same input path. A
        /// keystore whose passwords need no terminal starts loading too (three PBKDF2 derivations, on a core
        /// that is otherwise idle while the arguments are parsed); `run` uses it only when the
        /// parsed options name the very same key source.
        static func prepare(_ arguments: [String]) {
            // The archive first: `run` waits for it before anything else, and for the key only at the end.
            if let path = APKPatch.trailingPath(of: arguments, command: "sign"), !arguments.contains(where: { $0.hasPrefix("--out-dir") }) {
                prepared = (path, BackgroundValue { try APKArchive(path: path, limits: Signer.inputLimits, readsAll: true) })
            }
            if let source = SignerOptions.keyStoreSource(in: arguments, command: "sign") {
                preparedKey = (source, BackgroundValue { try source.load() })
            }
        }

        /// The signers after the first, as given after each `--next-signer` or `--signer-for-min-sdk-version N`
        /// (apksigner's syntax for several signers), taken out of the arguments before parsing (see
        /// `separateNextSigners`).
        nonisolated(unsafe) static var nextSigners: [NextSignerGroup] = []

        /// One signer's options after `--next-signer` or `--signer-for-min-sdk-version N` (then `minSdkVersion`).
        struct NextSignerGroup: Equatable {
            var minSdkVersion: Int?
            var options: [String] = []
        }

        /// The first signer's own level and lineage: apksigner gives a `--signer-for-min-sdk-version N` that comes
        /// before any of the first signer's key options to that signer (its `SignerParams` is still empty, so the
        /// option starts no new signer), and a `--signer-lineage` given among those options with it.
        struct FirstSignerTarget: Equatable {
            var minSdkVersion: Int?
            var lineagePath: String?
        }

        /// Set with `nextSigners` (see `separateNextSigners`).
        nonisolated(unsafe) static var firstSignerTarget = FirstSignerTarget()

        /// `arguments` without the signer groups, and the groups: each holds the per-signer options (key options,
        /// `--v1-signer-name`, `--signer-lineage`, with their values) that follow its marker. The markers stay
        /// (`--signer-for-min-sdk-version` with its value), so that the scheme options can check what goes with
        /// them; a marker followed by no key options starts no signer, as in apksigner. A level given before the
        /// first signer's key options targets the first signer (`FirstSignerTarget`, whose `--signer-lineage` is
        /// taken out too); its key options stay in the arguments.
        static func separateNextSigners(_ arguments: [String]) -> (arguments: [String], next: [NextSignerGroup], first: FirstSignerTarget) {
            let valued: Set<String> = ["--ks", "--ks-key-alias", "--ks-pass", "--key-pass", "--ks-type", "--key", "--cert", "--ks-base64",
                                       "--pass-encoding", "--v1-signer-name", "--signer-lineage"]
            var rest: [String] = [], groups: [NextSignerGroup] = [], first = FirstSignerTarget()
            // Still among the first signer's options, and whether one of its key options (apksigner's
            // `SignerParams.isEmpty`: not the level or the lineage) came yet.
            var inFirstSigner = true, firstSignerHasKeyOption = false
            var index = 0
            func value(of argument: String, named name: String) -> String {
                if argument.contains("=") { return String(argument.dropFirst(name.count + 1)) }
                guard index < arguments.count else { return "" }
                index += 1
                return arguments[index - 1]
            }
            while index < arguments.count {
                let argument = arguments[index]
                index += 1
                let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
                var group = NextSignerGroup()
                if argument == "--next-signer" {
                    rest.append(argument)
                    inFirstSigner = false
                } else if name == "--signer-for-min-sdk-version" {
                    rest.append(argument)
                    let level = value(of: argument, named: name)
                    if !argument.contains("=") { rest.append(level) }
                    if inFirstSigner && !firstSignerHasKeyOption {
                        first.minSdkVersion = Int(level) ?? 0
                        continue
                    }
                    inFirstSigner = false
                    group.minSdkVersion = Int(level) ?? 0
                } else if inFirstSigner && name == "--signer-lineage" {
                    first.lineagePath = value(of: argument, named: name)
                    continue
                } else {
                    if inFirstSigner && valued.contains(name) { firstSignerHasKeyOption = true }
                    rest.append(argument)
                    continue
                }
                while index < arguments.count {
                    let option = arguments[index].split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
                    guard valued.contains(option) else { break }
                    group.options.append(arguments[index])
                    index += 1
                    if !arguments[index - 1].contains("="), index < arguments.count {
                        group.options.append(arguments[index])
                        index += 1
                    }
                }
                if !group.options.isEmpty { groups.append(group) }
            }
            return (rest, groups, first)
        }

        /// The key options given after each `--stamp-signer` (apksigner's syntax: `--stamp-signer --ks stamp.p12
        /// --ks-pass env:STAMP_PASS`), taken out of the arguments before parsing (`separateStampSigners`).
        nonisolated(unsafe) static var stampSigners: [[String]] = []

        /// `arguments` without each `--stamp-signer` and the key options that follow it (with their values), and
        /// those options, one group per `--stamp-signer`. Taken out before `separateNextSigners`, so that a stamp
        /// key's `--ks` is never read as a signer's.
        static func separateStampSigners(_ arguments: [String]) -> (arguments: [String], stamps: [[String]]) {
            let valued: Set<String> = ["--ks", "--ks-key-alias", "--ks-pass", "--key-pass", "--ks-type", "--key", "--cert", "--ks-base64",
                                       "--pass-encoding"]
            var rest: [String] = [], stamps: [[String]] = []
            var index = 0
            while index < arguments.count {
                let argument = arguments[index]
                index += 1
                if argument == "--" { rest += arguments[(index - 1)...]; break }
                guard argument == "--stamp-signer" else { rest.append(argument); continue }
                var group: [String] = []
                while index < arguments.count {
                    let option = arguments[index].split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
                    guard valued.contains(option) else { break }
                    group.append(arguments[index])
                    index += 1
                    if !arguments[index - 1].contains("="), index < arguments.count {
                        group.append(arguments[index])
                        index += 1
                    }
                }
                stamps.append(group)
            }
            return (rest, stamps)
        }

        /// One `--stamp-signer` at most, followed by key options; `--stamp-lineage` only with it. Checked first: an
        /// option value left behind by a bare `--stamp-signer` would be taken for an input APK.
        static func checkStampSigners(lineage: String?) throws {
            if stampSigners.isEmpty && lineage != nil {
                throw ValidationError("--stamp-lineage goes with --stamp-signer (the stamp key whose history it is)")
            }
            if stampSigners.count > 1 { throw ValidationError("--stamp-signer is given \(stampSigners.count) times: an APK carries one source stamp") }
            if stampSigners.first?.isEmpty == true {
                throw ValidationError("--stamp-signer needs the stamp key's options right after it: --ks STAMP.p12 --ks-pass env:NAME (or --key KEY --cert CERT)")
            }
        }

        /// The source stamp `--stamp-signer` and its companions ask for, its key loaded; nil without one.
        func sourceStamp() throws -> SourceStampConfig? {
            try Self.checkStampSigners(lineage: schemes.stampLineage)
            guard let options = Self.stampSigners.first else { return nil }
            let keyOptions: SignerOptions
            do { keyOptions = try SignerOptions.parse(options) } catch {
                throw ValidationError("--stamp-signer: \(SignerOptions.message(for: error))")
            }
            return SourceStampConfig(key: try keyOptions.keySource().load(),
                                     lineage: try schemes.stampLineage.map { try SigningCertificateLineage(contentsOf: $0) },
                                     includesTimestamp: schemes.stampTimestampEnabled ?? true,
                                     replacesOtherStamp: schemes.forceStampOverwrite ?? false)
        }

        /// A `--signer-lineage` among the first signer's options needs its level (apksigner ignores it then).
        static func checkFirstSignerTarget() throws {
            if firstSignerTarget.lineagePath != nil && firstSignerTarget.minSdkVersion == nil {
                throw ValidationError("--signer-lineage goes with a signer given a level: put --signer-for-min-sdk-version N before the signer's key options")
            }
        }

        /// The first signer, `key`, with the level and lineage given to it (`firstSignerTarget`).
        static func firstSigner(_ key: SignerKey) throws -> NextSigner {
            let target = firstSignerTarget
            return NextSigner(key: key, minSdkVersion: target.minSdkVersion,
                              lineage: try target.lineagePath.map { try SigningCertificateLineage(contentsOf: $0) })
        }

        /// The signers after the first, loaded: a group's own `--v1-signer-name` (a per-signer option in
        /// apksigner) names that signer's JAR files, `--signer-lineage` gives a targeted signer's lineage.
        static func loadNextSigners() throws -> [NextSigner] {
            try nextSigners.map { group in
                var options: [String] = [], name: String?, lineagePath: String?
                var index = 0
                while index < group.options.count {
                    let (option, inline) = LineageSignerArguments.split(group.options[index])
                    if option == "--v1-signer-name" || option == "--signer-lineage" {
                        let value = inline ?? (index + 1 < group.options.count ? group.options[index + 1] : "")
                        if option == "--v1-signer-name" { name = value } else { lineagePath = value }
                        index += inline == nil ? 2 : 1
                    } else {
                        options.append(group.options[index])
                        index += 1
                    }
                }
                var key = try SignerOptions.parse(options).keySource().load()
                if let name { key = SignerKey(name: name, privateKey: key.privateKey, certificates: key.certificates) }
                return NextSigner(key: key, minSdkVersion: group.minSdkVersion,
                                  lineage: try lineagePath.map { try SigningCertificateLineage(contentsOf: $0) })
            }
        }

        func run() throws {
            let source = try signer.keySource()
            let stamp = try sourceStamp()
            let allInputs = inputs + [inputOption].compactMap { $0 }
            if outputDirectory == nil && APKSet.isSet(paths: allInputs) {
                Self.prepared = nil
                guard let output else {
                    throw ValidationError("signing a split APK set needs --out: a file of the same kind for a .apks, .xapk or .apkm, a directory for a directory or several APKs")
                }
                let key = Self.preparedKey.flatMap { $0.source == source ? $0.key : nil }
                var options = SetOptions(inputs: allInputs, output: output,
                                         signer: try SetCommands.signerConfig(signer, schemes: schemes, announcesDebugKey: false, key: key))
                options.signer.sourceStamp = stamp
                options.v4Signing = V4SigningRequest(option: schemes.v4)
                try SetCommands.run(options, json: json, quiet: quiet || !verbose && !json)
                return
            }
            if let outputDirectory {
                let key = try Self.preparedKey.flatMap { $0.source == source ? try $0.key.get() : nil } ?? source.load()
                try signBatch(allInputs, into: outputDirectory, key: key, stamp: stamp)
                return
            }
            let inputPath = inputOption ?? inputs[0]
            let destination = output ?? inputPath
            // Decrypting a keystore (PBKDF2, costly by design) overlaps opening, copying and digesting the APK, unless a
            // password is to be typed or piped in (then it comes first, before anything else can fail or print).
            let pendingKey: BackgroundValue<SignerKey>
            if let prepared = Self.preparedKey, prepared.source == source {
                pendingKey = prepared.key
            } else {
                pendingKey = source.isInteractive ? BackgroundValue(ready: try source.load()) : BackgroundValue { try source.load() }
            }
            defer { pendingKey.wait() }  // also on failure: see BackgroundValue.wait
            let archive: APKArchive
            do {
                if let prepared = Self.prepared, prepared.path == inputPath, let opened = try? prepared.archive.get() {
                    archive = opened
                } else {
                    archive = try APKArchive(path: inputPath, limits: Signer.inputLimits, readsAll: true)
                }
            } catch {
                _ = try pendingKey.get()  // a wrong password is reported first, as before the APK is read
                throw error
            }
            var config = schemes.hasSeveralSigners
                ? try schemes.config(primary: try Self.firstSigner(try pendingKey.get()), nextSigners: try Self.loadNextSigners())
                : schemes.config(pendingKey: pendingKey)
            config.sourceStamp = stamp
            let v4Request = V4SigningRequest(option: schemes.v4)
            try config.checkV4Request(v4Request)
            config.v4Request = v4Request
            config.makesV4Signature = true
            // One APK, then the process ends (`APKPatch.main`'s `_exit`): its entries and buffers are left to the exit.
            BackgroundRelease.shared.leavesToExit = true
            let report = try AppBundleGiven.checking(inputPath) { try Signer(config: config).sign(archive, to: destination) }
            let v4Signature = try config.updateV4Signature(forAPKAt: destination, report: report, request: v4Request)
            if !quiet { for warning in report.warnings { FileHandleOutput.standardError("WARNING: \(CLIHint.describe(warning))") } }
            let packagingWarnings = config.alignmentPreserved && config.misalignedAPKPermitted ? Self.preservedMisalignment(destination) : []
            if !quiet { for warning in packagingWarnings { FileHandleOutput.standardError("WARNING: \(warning)") } }
            if json {
                var summary = SignSummary(report)
                summary.warnings += packagingWarnings
                summary.v4SignatureFile = v4Signature
                print(try FileHandleOutput.json(summary))
            } else if verbose && !quiet {
                printVerbose(report, v4Signature: v4Signature)
            }
        }

        private func printVerbose(_ report: SigningReport, v4Signature: String?) {
            print("Signed \(report.outputPath) (\(formatBytes(report.outputSize)), \(report.entryCount) entries)")
            print("  schemes: \(report.schemes.map(\.description).joined(separator: ", "))")
            print("  minSdkVersion: \(report.minSdkVersion)\(report.minSdkVersionOverridden ? " (--min-sdk-version)" : " (from AndroidManifest.xml)")")
            if let digest = report.v1DigestAlgorithm, let name = report.v1SignerName {
                print("  v1: META-INF/\(name).SF, \(digest.rawValue) digests")
            }
            if !report.signatureAlgorithms.isEmpty {
                print("  v2/v3: \(report.signatureAlgorithms.map(\.description).joined(separator: ", ")), signing block \(report.signingBlockSize) bytes")
            }
            print("  re-aligned entries: \(report.realignedEntryCount)")
            print("  signer: \(report.certificateSubject)")
            print("  signer certificate SHA-256: \(report.certificateSHA256.hexString)")
            if let stamp = report.sourceStampCertificateSHA256 { print("  source stamp certificate SHA-256: \(stamp.hexString)") }
            if let v4Signature { print("  v4: \(v4Signature)") }
            print("Signed")
        }

        /// Signs every input into `directory`, as many at once as there are cores. One failure does not stop
        /// the others; the exit status says whether all succeeded and the summary lists each. Each output is
        /// the one `sign --out` writes for that input with the same options: every signer's key is loaded once
        /// and shared by the batch, and several signers or a key rotation are planned as for one APK (options
        /// that cannot be signed stop the batch before anything is written; what depends on an APK, such as
        /// its minSdkVersion, fails that APK alone).
        private func signBatch(_ paths: [String], into directory: String, key: SignerKey, stamp: SourceStampConfig?) throws {
            var config = schemes.hasSeveralSigners
                ? try schemes.config(primary: try Self.firstSigner(key), nextSigners: try Self.loadNextSigners())
                : schemes.config(key: key)
            config.sourceStamp = stamp
            let cores = ProcessorCount.active
            config.concurrency = paths.count > 1 ? max(1, cores / min(paths.count, cores)) : 0
            let v4Request = V4SigningRequest(option: schemes.v4), v4Concurrency = config.concurrency
            try config.checkV4Request(v4Request)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            config.v4Request = v4Request
            config.makesV4Signature = true
            let results = BatchResults(count: paths.count)
            let showsProgress = !quiet && !json && isatty(STDERR_FILENO) == 1
            let signer = Signer(config: config)
            let signerConfig = config
            // Each signing's failure is its item's; nothing is thrown past one APK.
            try Parallel.forEach(paths.count) { index in
                let path = paths[index]
                let destination = directory.appendingPathComponent(path.lastPathComponent)
                let result = Result { () throws -> BatchResults.Signed in
                    try PatchPipeline.ensureDistinct(input: path, output: destination)
                    let report = try AppBundleGiven.checking(path) {
                        try signer.sign(try APKArchive(path: path, limits: Signer.inputLimits, readsAll: true), to: destination)
                    }
                    let v4Signature = try signerConfig.updateV4Signature(forAPKAt: destination, report: report, request: v4Request,
                                                                         concurrency: v4Concurrency)
                    let packagingWarnings = signerConfig.alignmentPreserved && signerConfig.misalignedAPKPermitted
                        ? Self.preservedMisalignment(destination) : []
                    return (report, v4Signature, packagingWarnings)
                }
                let done = results.set(index, input: path, output: destination, result: result)
                if showsProgress {
                    FileHandleOutput.standardError("[\(done)/\(paths.count)] \((try? result.get()) == nil ? "FAILED" : "signed") \(path)")
                }
            }
            let items = results.items
            let failed = items.filter { $0.error != nil }.count
            if json {
                print(try FileHandleOutput.json(BatchSummary(results: items, succeeded: items.count - failed, failed: failed)))
            } else {
                for item in items {
                    if let error = item.error {
                        FileHandleOutput.standardError("FAILED \(item.input): \(error)")
                    } else if !quiet {
                        print("signed \(item.input) → \(item.output)")
                        for warning in item.report?.warnings ?? [] { FileHandleOutput.standardError("WARNING: \(item.input): \(warning)") }
                    }
                }
                if !quiet || failed > 0 { print("\(items.count - failed) of \(items.count) APKs signed\(failed > 0 ? ", \(failed) failed" : "")") }
            }
            if failed > 0 { throw ExitCode.failure }
        }
    }
}

/// Results of a batch, filled by concurrent workers.
final class BatchResults: @unchecked Sendable {
    private let lock = Lock()
    private var slots: [BatchItem?]
    private var finished = 0
    init(count: Int) { slots = Array(repeating: nil, count: count) }
    /// One signed APK: its report, the v4 signature written beside it, if any, and what `sign` warns of
    /// besides the report's warnings (`preservedMisalignment`).
    typealias Signed = (report: SigningReport, v4Signature: String?, packagingWarnings: [String])
    /// Records one result; returns how many are done.
    func set(_ index: Int, input: String, output: String, result: Result<Signed, any Error>) -> Int {
        let item: BatchItem
        switch result {
        case .success(let signed):
            var summary = SignSummary(signed.report)
            summary.v4SignatureFile = signed.v4Signature
            summary.warnings += signed.packagingWarnings
            item = BatchItem(input: input, output: output, error: nil, report: summary)
        case .failure(let error): item = BatchItem(input: input, output: output, error: CLIHint.describe(error), report: nil)
        }
        return lock.withLock {
            slots[index] = item
            finished += 1
            return finished
        }
    }
    var items: [BatchItem] { lock.withLock { slots.compactMap { $0 } } }
}

/// One input of a batch, for the summary and `--json`.
struct BatchItem: Encodable {
    var input: String
    var output: String
    var error: String?
    var report: SignSummary?
}

/// `apkpatch sign --out-dir … --json`: every input with its report or its error.
struct BatchSummary: Encodable {
    var results: [BatchItem]
    var succeeded: Int
    var failed: Int
}

/// The JSON form of a signing report (stable field names).
struct SignSummary: Encodable {
    var output: String
    var outputSize: Int64
    var entries: Int
    var schemes: [String]
    var minSdkVersion: Int
    var minSdkVersionOverridden: Bool
    var v1DigestAlgorithm: String?
    var v1SignerName: String?
    var signatureAlgorithms: [String]
    var signingBlockSize: Int
    var realignedEntries: Int
    var signerSubject: String
    var signerCertificateSHA256: String
    var warnings: [String]
    /// The v4 signature written beside the APK (`<output>.idsig`), if any.
    var v4SignatureFile: String?
    /// With a source stamp: the SHA-256 digest of its certificate (absent otherwise).
    var sourceStampCertificateSHA256: String?

    init(_ report: SigningReport) {
        output = report.outputPath
        outputSize = report.outputSize
        entries = report.entryCount
        schemes = report.schemes.map(\.description)
        minSdkVersion = report.minSdkVersion
        minSdkVersionOverridden = report.minSdkVersionOverridden
        v1DigestAlgorithm = report.v1DigestAlgorithm?.rawValue
        v1SignerName = report.v1SignerName
        signatureAlgorithms = report.signatureAlgorithms.map(\.description)
        signingBlockSize = report.signingBlockSize
        realignedEntries = report.realignedEntryCount
        signerSubject = report.certificateSubject
        signerCertificateSHA256 = report.certificateSHA256.hexString
        warnings = report.warnings.map(CLIHint.describe)
        sourceStampCertificateSHA256 = report.sourceStampCertificateSHA256?.hexString
    }
}

extension SignerOptions {
    /// The keystore that `arguments` (`COMMAND --ks … --ks-pass …`, unparsed) name, when its passwords need
    /// neither the terminal nor standard input; nil when in doubt (an option given twice, another kind of
    /// key). Only a guess made before parsing: whoever uses it compares it with the parsed options' source.
    static func keyStoreSource(in arguments: [String], command: String) -> KeySource? {
        guard arguments.first == command else { return nil }
        let valued: Set<String> = ["--ks", "--ks-pass", "--key-pass", "--ks-key-alias", "--ks-type",
                                   "--ks-base64", "--key", "--cert", "--debug-keystore", "--pass-encoding"]
        var values: [String: [String]] = [:]
        var index = 1
        while index < arguments.count, arguments[index] != "--" {
            var name = arguments[index], value: String?
            if name.hasPrefix("--"), let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if name == "--debug" { return nil }
            if valued.contains(name) {
                if value == nil {
                    index += 1
                    guard index < arguments.count else { return nil }
                    value = arguments[index]
                }
                values[name, default: []].append(value!)
            }
            index += 1
        }
        guard let path = values["--ks"], path.count == 1, let storeSpec = values["--ks-pass"], storeSpec.count == 1,
              ["--ks-base64", "--key", "--cert", "--debug-keystore"].allSatisfy({ values[$0] == nil }),
              ["--key-pass", "--ks-key-alias", "--ks-type", "--pass-encoding"].allSatisfy({ (values[$0]?.count ?? 0) <= 1 }),
              let storePassword = try? PasswordSource(parsing: storeSpec[0]) else { return nil }
        var keyPassword: PasswordSource?
        if let spec = values["--key-pass"]?.first {
            guard let parsed = try? PasswordSource(parsing: spec) else { return nil }
            keyPassword = parsed
        }
        var encoding: PasswordEncoding?
        if let name = values["--pass-encoding"]?.first {
            guard let parsed = try? PasswordEncoding(named: name) else { return nil }
            encoding = parsed
        }
        let source = KeySource.keyStore(path: path[0], type: values["--ks-type"]?.first, alias: values["--ks-key-alias"]?.first,
                                        storePassword: storePassword, keyPassword: keyPassword, passwordEncoding: encoding)
        return source.isInteractive ? nil : source
    }
}

extension KeySource {
    /// Whether loading reads a password from the terminal or standard input.
    var isInteractive: Bool {
        func reads(_ source: PasswordSource?) -> Bool { source == .stdin || source == .prompt }
        switch self {
        case .keyStore(_, _, _, let store, let key, _), .keyStoreData(_, _, _, _, let store, let key, _):
            return reads(store) || reads(key)
        case .keyAndCertificate(_, _, let key, _):
            return reads(key)
        case .debug:
            return false
        }
    }
}

extension APKPatch.Sign {
    /// With `--alignment-preserved true --misaligned-apk-permitted true` an entry stays unaligned when it was, as
    /// apksigner leaves it, even one Android requires aligned (resources.arsc for targetSdk 30+, native
    /// libraries it maps; without the permission the signer refuses): the signed APK then does not install, so
    /// say so. Read from the output's central directory, only in that mode.
    static func preservedMisalignment(_ path: String) -> [String] {
        guard let archive = try? APKArchive(path: path, limits: Signer.inputLimits),
              let manifest = archive.entry(named: "AndroidManifest.xml"),
              let summary = try? ManifestSummary(binaryXML: archive.uncompressedData(of: manifest)) else { return [] }
        let requirements = PackagingRequirements(manifest: summary)
        return requirements.misalignedEntries(in: archive.entries).map { item in
            "\(item.entry.name) starts at offset \(item.entry.dataOffset), not aligned as Android requires (\(requirements.reason(for: item.rule))), and --alignment-preserved true kept it there as --misaligned-apk-permitted true asked: the signed APK will not install. Sign without --alignment-preserved true to re-align it"
        }
    }
}
