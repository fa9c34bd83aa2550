import Foundation
import TestSupport

/// A command run on each mutated input: its arguments (`@in` is the mutated file, `@S/NAME` a seed, other
/// relative paths are inside the case directory), what it writes when it succeeds, and what checks that output.
public struct FuzzCommand: Sendable {
    public enum Oracle: Sendable {
        case none
        /// A signed APK: libziparchive opens and extracts it, and (with the Java oracles) apksigner verifies it.
        case signedAPK
        /// zipalign -c 4 accepts it.
        case aligned
        /// Exit 0 from verify: apksigner (with the Java oracles) and libziparchive accept the input too.
        case verifyAgrees
        /// stdout is one JSON value (whatever the exit status).
        case json
        /// Exit 0 from keystore list: keytool -list opens the keystore too (Java oracles).
        case keytool
        /// Exit 0 from lineage --print-certs: apksigner lineage reads it too (Java oracles).
        case apksignerLineage
    }

    public var label: String
    public var arguments: [String]
    public var outputs: [String] = []
    public var oracle: Oracle = .none
    /// The exit statuses that are no finding (a refusal's 64 is ArgumentParser's usage error).
    public var allowedStatuses: Set<Int32> = [0, 1]

    public enum Mode: Sendable {
        /// Runs to its end.
        case oneShot
        /// `watch`: started, its patch directory (the argument of --patch, a copy of the seeds' patch directory
        /// unless the target made it) edited in hostile ways, then stopped by a signal (WatchRun).
        case watch
        /// Installs through the fake adb, which answers as the case's `HostileADB` says.
        case install
    }
    public var mode: Mode = .oneShot
}

/// What is mutated and what runs on it.
public struct FuzzTarget: Sendable {
    public var name: String
    /// The seed file (relative to the seeds directory).
    public var seed: String
    public var format: Scanner.Format
    /// When set, the seed is an archive and this entry's content is what is mutated (format `format`).
    public var entry: String? = nil
    /// Where the mutated file goes in the case directory; `patch/…` copies the seeds' patch directory first.
    public var input: String
    public var commands: [FuzzCommand]
    /// A folder of the seeds copied into the case before the mutated file is written into it (a set given as a
    /// folder of APKs, one of them mutated).
    public var folder: String? = nil
    /// The seed stays intact and one of `commands`, spoilt by `Refusals.spoil`, runs on it.
    public var spoilsArguments = false
    /// The seed stays intact and one of `commands` runs with the fake adb answering in a hostile way.
    public var hostileADB = false
}

public enum Targets {
    static let ks = ["--ks", "@S/ks.p12"] + Seeds.keyOptions

    static func apkCommands(patch: String = "@S/empty-patch") -> [FuzzCommand] {
        [
            FuzzCommand(label: "verify", arguments: ["verify", "@in"], oracle: .verifyAgrees),
            FuzzCommand(label: "verify --json", arguments: ["verify", "--json", "-v", "--print-certs", "@in"], oracle: .json),
            FuzzCommand(label: "unpack", arguments: ["unpack", "@in", "-o", "out-unpacked"], outputs: ["out-unpacked"]),
            FuzzCommand(label: "unpack --decode", arguments: ["unpack", "--decode", "@in", "-o", "out-unpacked-decoded"], outputs: ["out-unpacked-decoded"]),
            FuzzCommand(label: "decode", arguments: ["decode", "@in", "-o", "out-decoded"], outputs: ["out-decoded"]),
            FuzzCommand(label: "sign", arguments: ["sign"] + ks + ["--v4-signing-enabled", "true", "--out", "out-signed.apk", "@in"],
                        outputs: ["out-signed.apk"], oracle: .signedAPK),
            FuzzCommand(label: "run", arguments: ["run", "@in", "--patch", patch, "--out", "out-run.apk"] + ks, outputs: ["out-run.apk"], oracle: .signedAPK),
            FuzzCommand(label: "align", arguments: ["align", "-f", "-p", "4", "@in", "out-aligned.apk"], outputs: ["out-aligned.apk"], oracle: .aligned),
            FuzzCommand(label: "merge", arguments: ["merge", "@in", "--no-verify", "--out", "out-merged.apk"] + ks, outputs: ["out-merged.apk"], oracle: .signedAPK),
            FuzzCommand(label: "watch", arguments: ["watch", "@in", "--patch", "wpatch", "--out", "out-watch.apk"] + ks, outputs: ["out-watch.apk"],
                        oracle: .signedAPK, mode: .watch),
        ]
    }

    /// `ext` "" for a folder of APKs (`set`, the folder's path in the case), whose outputs are folders too.
    static func setCommands(extension ext: String, set: String = "@in") -> [FuzzCommand] {
        let suffix = ext.isEmpty ? "" : ".\(ext)"
        return [
            FuzzCommand(label: "verify (set)", arguments: ["verify", set]),
            FuzzCommand(label: "verify --json (set)", arguments: ["verify", "--json", set], oracle: .json),
            FuzzCommand(label: "sign (set)", arguments: ["sign"] + ks + ["--out", "out-signed\(suffix)", set], outputs: ["out-signed\(suffix)"]),
            FuzzCommand(label: "run (set)", arguments: ["run", set, "--patch", "@S/empty-patch", "--out", "out-run\(suffix)"] + ks, outputs: ["out-run\(suffix)"]),
            FuzzCommand(label: "merge (set)", arguments: ["merge", set, "--out", "out-merged.apk"] + ks, outputs: ["out-merged.apk"], oracle: .signedAPK),
            FuzzCommand(label: "watch (set)", arguments: ["watch", set, "--patch", "wpatch", "--out", "out-watch\(suffix)"] + ks, outputs: ["out-watch\(suffix)"],
                        mode: .watch),
        ]
    }

    static let runPatch = FuzzCommand(label: "run --patch", arguments: ["run", "@S/app.apk", "--patch", "patch", "--out", "out-run.apk"] + ks,
                                      outputs: ["out-run.apk"], oracle: .signedAPK)
    static let watchPatch = FuzzCommand(label: "watch --patch", arguments: ["watch", "@S/app.apk", "--patch", "patch", "--out", "out-watch.apk"] + ks,
                                        outputs: ["out-watch.apk"], oracle: .signedAPK, mode: .watch)

    /// Installs through the fake adb (`HostileADB`): one APK (adb install --incremental, then the fallback), a
    /// split set (the device probe, then install-multiple), a merged set, and watch's reinstalls.
    static let installs: [FuzzCommand] = [
        FuzzCommand(label: "run --install", arguments: ["run", "@in", "--patch", "@S/empty-patch", "--out", "out-install.apk", "--install"] + ks,
                    outputs: ["out-install.apk"], oracle: .signedAPK, mode: .install),
        FuzzCommand(label: "run --install (set)", arguments: ["run", "@S/set.apks", "--patch", "@S/empty-patch", "--out", "out-install.apks", "--install"] + ks,
                    outputs: ["out-install.apks"], mode: .install),
        FuzzCommand(label: "merge --install", arguments: ["merge", "@S/set.apks", "--out", "out-merged.apk", "--install"] + ks,
                    outputs: ["out-merged.apk"], oracle: .signedAPK, mode: .install),
        FuzzCommand(label: "watch --install", arguments: ["watch", "@in", "--patch", "wpatch", "--out", "out-watch.apk", "--install"] + ks,
                    outputs: ["out-watch.apk"], oracle: .signedAPK, mode: .watch),
    ]

    public static let all: [FuzzTarget] = {
        var targets: [FuzzTarget] = []
        for seed in ["app.apk", "v1.apk", "v2.apk", "v3.apk", "v4.apk", "rotated.apk"] {
            targets.append(FuzzTarget(name: "zip:\(seed)", seed: seed, format: .zip, input: "input.apk", commands: apkCommands()))
        }
        // Nested: the manifest, the resource table and compiled XML reach their parsers inside an intact archive.
        for entry in ["AndroidManifest.xml", "resources.arsc", "res/xml/config.xml", "res/layout/main.xml"] {
            targets.append(FuzzTarget(name: "chunks:\(entry)", seed: "app.apk", format: .chunks, entry: entry, input: "input.apk", commands: apkCommands()))
        }
        // The JAR signature files of a v1-only APK: the verifier's (and signer's, when it keeps the manifest) parsers.
        let v1 = [FuzzCommand(label: "verify", arguments: ["verify", "@in"], oracle: .verifyAgrees),
                  FuzzCommand(label: "verify --json", arguments: ["verify", "--json", "--print-certs", "@in"], oracle: .json),
                  FuzzCommand(label: "sign", arguments: ["sign"] + ks + ["--out", "out-signed.apk", "@in"], outputs: ["out-signed.apk"], oracle: .signedAPK)]
        targets.append(FuzzTarget(name: "der:K.RSA", seed: "v1.apk", format: .der, entry: "META-INF/K.RSA", input: "input.apk", commands: v1))
        targets.append(FuzzTarget(name: "text:K.SF", seed: "v1.apk", format: .text, entry: "META-INF/K.SF", input: "input.apk", commands: v1))
        targets.append(FuzzTarget(name: "text:MANIFEST.MF", seed: "v1.apk", format: .text, entry: "META-INF/MANIFEST.MF", input: "input.apk", commands: v1))
        // Split sets: the container, a member APK, the XAPK's manifest.json.
        targets.append(FuzzTarget(name: "zip:set.apks", seed: "set.apks", format: .zip, input: "input.apks", commands: setCommands(extension: "apks")))
        targets.append(FuzzTarget(name: "zip:set.xapk", seed: "set.xapk", format: .zip, input: "input.xapk", commands: setCommands(extension: "xapk")))
        targets.append(FuzzTarget(name: "zip:set.apkm", seed: "set.apkm", format: .zip, input: "input.apkm", commands: setCommands(extension: "apkm")))
        targets.append(FuzzTarget(name: "zip:set.apkm/base", seed: "set.apkm", format: .zip, entry: "base.apk", input: "input.apkm", commands: setCommands(extension: "apkm")))
        targets.append(FuzzTarget(name: "text:apkm info.json", seed: "set.apkm", format: .text, entry: "info.json", input: "input.apkm", commands: setCommands(extension: "apkm")))
        // A folder of APKs with one of them mutated.
        for member in ["base.apk", "split_config.fr.apk"] {
            targets.append(FuzzTarget(name: "zip:set-dir/\(member)", seed: "set-dir/\(member)", format: .zip, input: "set-dir/\(member)",
                                      commands: setCommands(extension: "", set: "set-dir"), folder: "set-dir"))
        }
        targets.append(FuzzTarget(name: "chunks:set-dir/base AndroidManifest.xml", seed: "set-dir/base.apk", format: .chunks, entry: "AndroidManifest.xml",
                                  input: "set-dir/base.apk", commands: setCommands(extension: "", set: "set-dir"), folder: "set-dir"))
        targets.append(FuzzTarget(name: "zip:set.apks/base", seed: "set.apks", format: .zip, entry: "splits/base-master.apk", input: "input.apks", commands: setCommands(extension: "apks")))
        targets.append(FuzzTarget(name: "zip:set.apks/fr", seed: "set.apks", format: .zip, entry: "splits/base-fr.apk", input: "input.apks", commands: setCommands(extension: "apks")))
        targets.append(FuzzTarget(name: "protobuf:set.apks toc.pb", seed: "set.apks", format: .protobuf, entry: "toc.pb", input: "input.apks", commands: setCommands(extension: "apks")))
        targets.append(FuzzTarget(name: "chunks:set.apks/fr resources.arsc", seed: "set.apks", format: .chunks, entry: "splits/base-fr.apk!resources.arsc", input: "input.apks",
                                  commands: setCommands(extension: "apks")))
        targets.append(FuzzTarget(name: "chunks:set.apks/base AndroidManifest.xml", seed: "set.apks", format: .chunks, entry: "splits/base-master.apk!AndroidManifest.xml",
                                  input: "input.apks", commands: setCommands(extension: "apks")))
        targets.append(FuzzTarget(name: "text:device-spec.json", seed: "device-spec.json", format: .text, input: "spec.json", commands: [
            FuzzCommand(label: "run (set) --device-spec", arguments: ["run", "@S/set.apks", "--patch", "@S/empty-patch", "--out", "out-run.apks", "--device-spec", "@in",
                                                                      "--emit-script", "install.sh"] + ks, outputs: ["out-run.apks", "install.sh"]),
        ]))
        targets.append(FuzzTarget(name: "text:xapk manifest.json", seed: "set.xapk", format: .text, entry: "manifest.json", input: "input.xapk", commands: setCommands(extension: "xapk")))
        // Keystores.
        for (seed, format) in [("ks.p12", Scanner.Format.der), ("ks.jks", .jks)] {
            targets.append(FuzzTarget(name: "\(format):\(seed)", seed: seed, format: format, input: "input.\(seed.split(separator: ".").last!)", commands: [
                FuzzCommand(label: "keystore list", arguments: ["keystore", "list", "--ks", "@in"] + Seeds.keyOptions, oracle: .keytool),
                FuzzCommand(label: "keystore list --json", arguments: ["keystore", "list", "--json", "--ks", "@in"] + Seeds.keyOptions, oracle: .json),
                FuzzCommand(label: "sign --ks", arguments: ["sign", "--ks", "@in"] + Seeds.keyOptions + ["--out", "out-signed.apk", "@S/app.apk"],
                            outputs: ["out-signed.apk"], oracle: .signedAPK),
            ]))
        }
        // Lineage, .idsig, a CA certificate.
        targets.append(FuzzTarget(name: "lp:lineage.bin", seed: "lineage.bin", format: .lengthPrefixed, input: "input.lineage", commands: [
            FuzzCommand(label: "lineage --print-certs", arguments: ["lineage", "--in", "@in", "--print-certs", "-v"], oracle: .apksignerLineage),
            FuzzCommand(label: "sign --lineage", arguments: ["sign", "--ks", "@S/ks.p12"] + Seeds.keyOptions + ["--next-signer", "--ks", "@S/ks2.p12"] + Seeds.keyOptions
                        + ["--lineage", "@in", "--out", "out-signed.apk", "@S/app.apk"], outputs: ["out-signed.apk"], oracle: .signedAPK),
        ]))
        targets.append(FuzzTarget(name: "lp:v4.apk.idsig", seed: "v4.apk.idsig", format: .lengthPrefixed, input: "input.idsig", commands: [
            FuzzCommand(label: "verify --v4-signature-file", arguments: ["verify", "--v4-signature-file", "@in", "@S/v4.apk"]),
            FuzzCommand(label: "verify --json --v4-signature-file", arguments: ["verify", "--json", "--v4-signature-file", "@in", "@S/v4.apk"], oracle: .json),
        ]))
        targets.append(FuzzTarget(name: "der:ca.der", seed: "ca.der", format: .der, input: "input.der", commands: [
            FuzzCommand(label: "run --ca-cert", arguments: ["run", "@S/app.apk", "--patch", "@S/empty-patch", "--trust-user-certs", "--ca-cert", "@in", "--out", "out-run.apk"] + ks,
                        outputs: ["out-run.apk"], oracle: .signedAPK),
        ]))
        // The patch directory's files, compiled by run.
        for file in ["apkpatch.yml", "AndroidManifest.xml", "res/values/strings.xml", "res/xml/config.xml", "res/layout/main.xml", "certs/proxy.pem"] {
            targets.append(FuzzTarget(name: "text:patch/\(file)", seed: "patch/\(file)", format: .text, input: "patch/\(file)", commands: [runPatch, watchPatch]))
        }
        // Refusals while the key is still being decrypted (see Refusals).
        targets.append(FuzzTarget(name: "adb:install", seed: "app.apk", format: .zip, input: "input.apk", commands: installs, hostileADB: true))
        targets.append(FuzzTarget(name: "refusal:slow.p12", seed: "slow.p12", format: .der, input: "input.p12", commands: Refusals.bases, spoilsArguments: true))
        return targets
    }()
}

/// One problem found: what ran, on what, and why it is a bug.
public struct Finding: Sendable {
    public var kind: String
    public var target: String
    public var command: String
    public var detail: String
    public var caseDirectory: String
    /// What groups repeats of one bug (kind, command, the first line of a trap message).
    public var signature: String
}

public struct CampaignOptions: Sendable {
    public var apkpatch: String
    public var work: URL
    public var seed: UInt64 = 1
    public var iterations = 100
    public var seconds: Double? = nil
    /// Commands run per mutated input (a random subset); nil runs all of the target's commands.
    public var commandsPerCase: Int? = nil
    public var timeout: Double = 30
    public var memoryBytes = 3 << 30
    public var maxRSSKiB = 768 << 10
    /// apksigner and keytool as oracles (a JVM start each: slow).
    public var javaOracles = true
    public var jobs = 1
    /// Only targets whose name contains one of these.
    public var targetFilter: [String] = []
    public var log: @Sendable (String) -> Void = { print($0) }

    public init(apkpatch: String, work: URL) { self.apkpatch = apkpatch; self.work = work }
}

public final class Campaign: @unchecked Sendable {
    public let options: CampaignOptions
    public let seeds: Seeds
    let targets: [FuzzTarget]
    let mutators: [Mutator]
    let repackers: [EntryRepacker?]
    /// Mutators of the seeds' patch files, for watch's edits.
    let patchMutators: [String: Mutator]
    /// The fake adb of the install cases (each case's replies come through its hook).
    let fakeADB: FakeADB
    let lock = NSLock()
    public private(set) var findings: [Finding] = []
    public private(set) var runs = 0
    public private(set) var cases = 0
    public private(set) var exitCounts: [String: [Int32: Int]] = [:]
    var seen: [String: Int] = [:]

    /// `seeds` reuses seeds built before (by another campaign); by default they are built into WORK/seeds.
    public init(options: CampaignOptions, seeds: Seeds? = nil) throws {
        self.options = options
        self.seeds = try seeds ?? Seeds(directory: options.work.appendingPathComponent("seeds"), apkpatch: options.apkpatch)
        targets = Targets.all.filter { t in options.targetFilter.isEmpty || options.targetFilter.contains { t.name.contains($0) } }
        var mutators: [Mutator] = [], repackers: [EntryRepacker?] = []
        for target in targets {
            let bytes = try self.seeds.bytes(target.seed)
            if let entry = target.entry {
                let repacker = try EntryRepacker(archive: bytes, entry: entry)
                repackers.append(repacker)
                mutators.append(Mutator(seed: repacker.innermost.content, format: target.format))
            } else {
                repackers.append(nil)
                mutators.append(Mutator(seed: bytes, format: target.format))
            }
        }
        self.mutators = mutators
        self.repackers = repackers
        var patchMutators: [String: Mutator] = [:]
        for file in ["apkpatch.yml", "AndroidManifest.xml", "res/values/strings.xml", "res/xml/config.xml", "res/layout/main.xml", "certs/proxy.pem"] {
            patchMutators[file] = Mutator(seed: try self.seeds.bytes("patch/\(file)"), format: .text)
        }
        self.patchMutators = patchMutators
        fakeADB = try FakeADB()
    }

    /// Runs the cases (`iterations`, or until `seconds` have passed); the findings are kept and logged.
    public func run() {
        let start = Date()
        let next = Counter()
        let workers = max(1, options.jobs)
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while true {
                let i = next.take()
                if let seconds = options.seconds { if Date().timeIntervalSince(start) > seconds { break } } else if i >= options.iterations { break }
                runCase(i)
                if i > 0 && i % 100 == 0 {
                    let found = lock.withLock { findings.count }
                    options.log("fuzz: \(i) cases, \(lock.withLock { runs }) runs, \(found) finding(s), \(Int(Date().timeIntervalSince(start))) s")
                }
            }
        }
    }

    final class Counter: @unchecked Sendable {
        private var value = 0
        private let lock = NSLock()
        func take() -> Int { lock.withLock { defer { value += 1 }; return value } }
    }

    /// The generator of case `index`: the case is the same for a given campaign seed, whatever ran before.
    public func generator(for index: Int) -> SplitMix64 {
        SplitMix64(seed: options.seed &* 0x2545_F491_4F6C_DD1D &+ UInt64(bitPattern: Int64(index)) &* 0x9E37_79B9_7F4A_7C15)
    }

    /// Every target's commands on its intact seed: the exit status of each (the seeds must be inputs the commands
    /// take, or the mutations would only test the first refusal), with any finding recorded as for a mutation.
    public func runControls() -> [(target: String, command: String, status: Int32)] {
        var statuses: [(String, String, Int32)] = []
        for (t, target) in targets.enumerated() {
            let before = lock.withLock { exitCounts }
            var commands = target.commands
            if target.spoilsArguments {
                // The command lines hold with any key: the fast one spares seconds per control; keystore list opens
                // the slow one.
                commands = commands.map { command in
                    var fast = command
                    if !command.arguments.starts(with: ["keystore"]) { fast.arguments = command.arguments.map { $0 == "@in" ? "@S/ks.p12" : $0 } }
                    return fast
                }
            }
            runCase(-1 - t, target: t, mutation: Mutator.Mutation(bytes: mutators[t].seed, steps: ["none (control)"]), commands: commands,
                    adb: target.hostileADB ? .plain : nil)
            let after = lock.withLock { exitCounts }
            for command in target.commands {
                let old = before[command.label] ?? [:], new = after[command.label] ?? [:]
                if let status = new.first(where: { $0.value > (old[$0.key] ?? 0) })?.key { statuses.append((target.name, command.label, status)) }
            }
        }
        return statuses
    }

    public func runCase(_ index: Int) {
        var rng = generator(for: index)
        let t = Int.random(in: 0..<targets.count, using: &rng)
        if targets[t].spoilsArguments {
            let spoilt = Refusals.spoil(targets[t].commands.randomElement(using: &rng)!, &rng)
            runCase(index, target: t, mutation: Mutator.Mutation(bytes: mutators[t].seed, steps: spoilt.steps), commands: [spoilt.command])
            return
        }
        if targets[t].hostileADB {
            var command = targets[t].commands.randomElement(using: &rng)!
            let adb = HostileADB.random(&rng)
            var steps = ["intact seed", adb.description]
            for flag in HostileADB.flags(for: command) where Int.random(in: 0..<4, using: &rng) == 0 {
                command.arguments += flag
                steps.append("with \(flag.joined(separator: " "))")
            }
            runCase(index, target: t, mutation: Mutator.Mutation(bytes: mutators[t].seed, steps: steps), commands: [command], adb: adb)
            return
        }
        let mutation = mutators[t].mutate(&rng)
        var commands = targets[t].commands
        if let k = options.commandsPerCase, k < commands.count { commands = Array(commands.shuffled(using: &rng).prefix(k)) }
        runCase(index, target: t, mutation: mutation, commands: commands)
    }

    func runCase(_ index: Int, target t: Int, mutation: Mutator.Mutation, commands: [FuzzCommand], adb: HostileADB? = nil) {
        let target = targets[t]
        let caseDir = options.work.appendingPathComponent(index < 0 ? "controls/\(-1 - index)" : "cases/\(index)")
        let fm = FileManager.default
        try? fm.removeItem(at: caseDir)
        do {
            try fm.createDirectory(at: caseDir.appendingPathComponent("tmp"), withIntermediateDirectories: true)
            if target.input.hasPrefix("patch/") { try fm.copyItem(at: seeds.directory.appendingPathComponent("patch"), to: caseDir.appendingPathComponent("patch")) }
            if let folder = target.folder { try fm.copyItem(at: seeds.directory.appendingPathComponent(folder), to: caseDir.appendingPathComponent(folder)) }
            let bytes = try repackers[t].map { try $0.repack(with: mutation.bytes) } ?? mutation.bytes
            try TestSupport.write(bytes, to: target.input, in: caseDir)
            var caseFindings: [Finding] = []
            for command in commands {
                caseFindings += check(command, target: target, input: bytes, in: caseDir, index: index, adb: adb)
            }
            if (try? TestSupport.readBytes(caseDir.appendingPathComponent(target.input).path)) != bytes {
                caseFindings.append(Finding(kind: "input modified", target: target.name, command: "-", detail: "", caseDirectory: caseDir.path, signature: "input modified"))
            }
            lock.withLock { cases += 1 }
            if caseFindings.isEmpty {
                try? fm.removeItem(at: caseDir)
            } else {
                record(caseFindings, mutation: mutation, target: target, index: index, caseDir: caseDir)
            }
        } catch {
            options.log("fuzz: case \(index) (\(target.name)) could not be set up: \(error)")
        }
    }

    func record(_ found: [Finding], mutation: Mutator.Mutation, target: FuzzTarget, index: Int, caseDir: URL) {
        var keep = false
        lock.withLock {
            for finding in found {
                seen[finding.signature, default: 0] += 1
                if seen[finding.signature] == 1 {
                    findings.append(finding)
                    keep = true
                    options.log("fuzz: FINDING case \(index) [\(target.name)] \(finding.command): \(finding.kind): \(finding.detail.prefix(400))")
                }
            }
        }
        let report = "seed \(options.seed) case \(index) target \(target.name)\nmutation: \(mutation.steps.joined(separator: "; "))\n\n"
            + found.map { "\($0.command): \($0.kind)\n\($0.detail)\n" }.joined(separator: "\n")
        try? report.write(to: caseDir.appendingPathComponent("FINDING.txt"), atomically: true, encoding: .utf8)
        // Repeats of a known signature are not kept (the first one is the reproducer).
        if !keep { try? FileManager.default.removeItem(at: caseDir) }
    }

    func expand(_ argument: String, input: String) -> String {
        if argument == "@in" { return input }
        if argument.hasPrefix("@S/") { return seeds.path(String(argument.dropFirst(3))) }
        return argument
    }

    /// "crashed" in any case, "Signal" as a word, or a shell's "Segmentation fault" ("Program crashed: Signal 11",
    /// "Thread 2 crashed:", "Fatal Signal").
    public static func isCrashReport(_ line: Substring) -> Bool {
        line.range(of: "crashed", options: .caseInsensitive) != nil || line.range(of: #"\bSignal\b"#, options: .regularExpression) != nil
            || line.contains("Segmentation fault")
    }

    public static func snapshot(_ directory: URL) -> Set<String> {
        guard let enumerator = FileManager.default.enumerator(atPath: directory.path) else { return [] }
        return Set(enumerator.compactMap { $0 as? String }.filter { !$0.hasPrefix(".fuzz-") && $0 != "FINDING.txt" })
    }

    func check(_ command: FuzzCommand, target: FuzzTarget, input: [UInt8], in caseDir: URL, index: Int, adb: HostileADB?) -> [Finding] {
        var arguments = command.arguments.map { expand($0, input: target.input) }
        var environment = ProcessInfo.processInfo.environment
        environment[Seeds.passwordVariable] = Seeds.password
        environment[Refusals.wrongPasswordVariable] = "wrong-password"
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment["TMPDIR"] = caseDir.appendingPathComponent("tmp").path
        // A command line left without a key signs with the debug key, created under HOME: not the user's.
        environment["HOME"] = options.work.appendingPathComponent("home").path
        // watch registers its working files here (a folder it keeps), apart from other cases' sessions.
        let runtime = caseDir.appendingPathComponent(".fuzz-runtime")
        try? FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        environment["XDG_RUNTIME_DIR"] = runtime.path
        if let adb {
            do { environment.merge(try adb.prepare(in: caseDir, adb: fakeADB)) { $1 } } catch {
                options.log("fuzz: the fake adb's reply could not be written: \(error)")
            }
        }
        // watch edits a copy of its patch directory (the case's mutated one, or the seeds'), made before the snapshot.
        var watchPatch: URL?
        if command.mode == .watch, let at = arguments.firstIndex(of: "--patch"), at + 1 < arguments.count {
            let given = caseDir.appendingPathComponent(arguments[at + 1])
            let copy = caseDir.appendingPathComponent("wpatch-run")
            try? FileManager.default.removeItem(at: copy)
            try? FileManager.default.copyItem(at: FileManager.default.fileExists(atPath: given.path) ? given : seeds.directory.appendingPathComponent("patch"), to: copy)
            arguments[at + 1] = "wpatch-run"
            watchPatch = copy
        }
        let before = Self.snapshot(caseDir)
        let result: BoundedRun
        var watch: WatchRun?
        if let watchPatch {
            var caseGenerator = generator(for: index)
            var rng = SplitMix64(seed: caseGenerator.next() ^ 0x7761_7463_6800)
            // The controls (negative indices) edit nothing but the probe's file.
            let edits = index < 0 ? [] : WatchEdit.script(&rng) { file, rng in self.patchMutators[file].map { $0.mutate(&rng).bytes } }
            let stop = [SIGINT, SIGTERM, SIGHUP].randomElement(using: &rng)!
            watch = WatchRun.run(options.apkpatch, arguments, in: caseDir.path, environment: environment, seconds: options.timeout,
                                 memoryBytes: options.memoryBytes, patch: watchPatch, edits: edits, stop: stop)
            result = watch!.result
        } else {
            result = BoundedRun.run(options.apkpatch, arguments, in: caseDir.path, environment: environment,
                                    seconds: options.timeout, memoryBytes: options.memoryBytes)
        }
        lock.withLock {
            runs += 1
            exitCounts[command.label, default: [:]][result.exited ? result.status : -(result.signal == 0 ? 999 : result.signal), default: 0] += 1
        }
        var found: [Finding] = []
        let invocation = "apkpatch " + arguments.joined(separator: " ") + (watch.map { "\n" + $0.log.joined(separator: "\n") } ?? "")
        func add(_ kind: String, _ detail: String, key: String = "") {
            found.append(Finding(kind: kind, target: target.name, command: command.label, detail: "\(invocation)\n\(result.summary)\n\(detail)",
                                 caseDirectory: caseDir.path, signature: "\(kind)|\(command.label)|\(key)"))
        }
        let output = result.stdout + result.stderr
        let trapLine = output.split(separator: "\n").first { $0.contains("Fatal error") || $0.contains("Stack dump") || $0.contains("Illegal instruction") }
        if let watch {
            if let busy = watch.busy { add("hang (busy \(busy))", result.stderr.suffix(2000).description) }
            if watch.unanswered { add("watch stopped answering edits", result.stderr.suffix(2000).description, key: watch.log.dropLast().last ?? "") }
            if watch.ignoredStop { add("watch did not stop on its signal", result.stderr.suffix(2000).description) }
        }
        if result.timedOut { if watch == nil { add("hang (timeout \(Int(options.timeout)) s)", result.stderr.suffix(2000).description) } }
        else if result.signal != 0 {
            add("crash (signal \(result.signal))", result.stderr.suffix(3000).description,
                key: trapLine.map { String($0).replacingOccurrences(of: #"[0-9]+"#, with: "N", options: .regularExpression) } ?? "")
        } else if result.status >= 128 {
            // What a shell reports for a child a signal ended (128 + N), or a process that died in its exit handlers
            // with the status already chosen.
            add("exit status \(result.status) (a death by signal \(result.status - 128))", result.stderr.suffix(2000).description)
        } else if let watch {
            // A session refused at the start exits 1 with its error; one that started ends only when told, with 0.
            if watch.exitedEarly && !(watch.events == 0 && result.status == 1) {
                add("watch ended by itself (exit \(result.status) after \(watch.events) build report(s))", result.stderr.suffix(2000).description)
            } else if !watch.exitedEarly && result.status != 0 {
                add("exit status \(result.status) after the stop signal", result.stderr.suffix(2000).description)
            }
        } else if !command.allowedStatuses.contains(result.status) {
            add("exit status \(result.status)", result.stderr.suffix(2000).description)
        }
        if result.exited, let trapLine { add("trap message", String(trapLine)) }
        // A crash report (Swift's backtracer, a shell's "Segmentation fault" line) after an error message: the
        // process died while exiting, on another thread's work, whatever status it meant to return.
        if let crashLine = result.stderr.split(separator: "\n").first(where: { Self.isCrashReport($0) }) {
            add("crash report in stderr", result.stderr.suffix(2000).description, key: String(crashLine.prefix(60)))
        }
        if result.maxRSSKiB > options.maxRSSKiB { add("peak RSS \(result.maxRSSKiB / 1024) MiB", "") }
        if result.exited && result.status == 1 {
            let lines = result.stderr.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            if lines.isEmpty && result.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { add("refusal without a message", "") }
        }
        // Foundation's errors printed as they are: Darwin's and corelibs' wording, FoundationEssentials' dumps.
        if output.contains("The operation could") || output.contains("Error Domain=") || output.contains("error 0.")
            || output.contains("CocoaError(") || output.contains("POSIXError(") {
            add("untyped error message", String(output.prefix(600)), key: String(output.prefix(60)))
        }
        // The keystore password is never printed (nor given to adb).
        let adbLog = (try? String(contentsOf: caseDir.appendingPathComponent(".fuzz-adb/argv.log"), encoding: .utf8)) ?? ""
        if output.contains(Seeds.password) || adbLog.contains(Seeds.password) { add("secret echoed", "the keystore password is in the output or adb's arguments") }

        // What may be there afterwards: the outputs after a success; after a failed install too (the APK is kept);
        // after a watch session, its last good build. An APK written with v4 on has its .idsig beside it.
        let outputs = command.outputs + command.outputs.filter { $0.hasSuffix(".apk") }.map { $0 + ".idsig" }
        let built = watch.map { _ in output.split(separator: "\n").contains { $0.contains("] built ") || $0.contains("] rebuilt ") } } ?? false
        let allowed: Set<String>
        switch command.mode {
        case .oneShot: allowed = result.exited && result.status == 0 ? Set(outputs) : []
        case .install: allowed = result.exited && [0, 1].contains(result.status) ? Set(outputs) : []
        case .watch: allowed = built ? Set(outputs) : []
        }
        var leftovers = Self.snapshot(caseDir).subtracting(before).filter { path in !allowed.contains { path == $0 || path.hasPrefix($0 + "/") } }
        if let watchPatch, let watch {
            // The session may not write into the patch directory; what the edits made there is theirs.
            leftovers = leftovers.filter { !$0.hasPrefix("wpatch-run/") && $0 != "wpatch-run" }
            leftovers.formUnion(Self.snapshot(watchPatch).subtracting(watch.patchFiles).map { "wpatch-run/" + $0 })
            let written = command.outputs.first.map { FileManager.default.fileExists(atPath: caseDir.appendingPathComponent($0).path) } ?? false
            if built && !written { add("watch reported a build and left no output", "") }
        }
        // A session that stopped has unregistered its working files (the register's folder stays).
        leftovers.formUnion(Self.snapshot(runtime).filter { $0.contains("/") }.map { ".fuzz-runtime/" + $0 })
        if !leftovers.isEmpty { add("leftover files", leftovers.sorted().prefix(10).joined(separator: "\n")) }
        let succeeded = result.exited && (result.status == 0 || (command.mode == .watch && built))
        if succeeded || (command.mode == .install && result.exited && result.status == 1) {
            let written = command.outputs.first.map { FileManager.default.fileExists(atPath: caseDir.appendingPathComponent($0).path) } ?? true
            if command.mode == .install && !written { add("install: no APK after the build", "") }
            if written {
                for problem in oracleProblems(command, caseDir: caseDir, inputPath: caseDir.appendingPathComponent(target.input).path, stdout: result.stdout) {
                    add("oracle: \(problem.kind)", problem.detail)
                }
            }
        } else if case .json = command.oracle, result.exited, !result.stdout.isEmpty {
            if (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) == nil { add("oracle: invalid JSON", String(result.stdout.prefix(500))) }
        }
        if let adb, command.mode == .install, result.exited {
            for problem in adb.problems(arguments: arguments, status: result.status, stdout: result.stdout, stderr: result.stderr, adbLog: adbLog) {
                add("install: \(problem)", "", key: String(problem.prefix(40)))
            }
        }
        for output in outputs { try? FileManager.default.removeItem(at: caseDir.appendingPathComponent(output)) }
        if let watchPatch { try? FileManager.default.removeItem(at: watchPatch) }
        return found
    }

    func oracleProblems(_ command: FuzzCommand, caseDir: URL, inputPath: String, stdout: String) -> [(kind: String, detail: String)] {
        var problems: [(String, String)] = []
        let out = command.outputs.first.map { caseDir.appendingPathComponent($0).path } ?? ""
        func tool(_ name: String, _ arguments: [String]) -> TestSupport.ProcessResult? {
            try? TestSupport.run(name, arguments, environment: [Seeds.passwordVariable: Seeds.password])
        }
        switch command.oracle {
        case .none: break
        case .signedAPK:
            if let r = try? TestSupport.libziparchiveCheck(out), !r.succeeded { problems.append(("libziparchive refuses the output", r.description)) }
            if options.javaOracles, let r = tool("apksigner", ["verify", out]), !r.succeeded { problems.append(("apksigner refuses the output", r.description)) }
        case .aligned:
            if let r = tool("zipalign", ["-c", "-p", "4", out]), !r.succeeded { problems.append(("zipalign -c refuses the output", r.description)) }
        case .verifyAgrees:
            if let r = try? TestSupport.libziparchiveCheck(inputPath), !r.succeeded { problems.append(("verify accepts what libziparchive refuses", r.description)) }
            if options.javaOracles, let r = tool("apksigner", ["verify", inputPath]), !r.succeeded { problems.append(("verify accepts what apksigner refuses", r.description)) }
        case .json:
            if (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) == nil { problems.append(("invalid JSON", String(stdout.prefix(500)))) }
        case .keytool:
            if options.javaOracles, let r = tool("keytool", ["-list", "-keystore", inputPath, "-storepass:env", Seeds.passwordVariable]), !r.succeeded {
                problems.append(("keystore list accepts what keytool refuses", r.description))
            }
        case .apksignerLineage:
            if options.javaOracles, let r = tool("apksigner", ["lineage", "--in", inputPath, "--print-certs"]), !r.succeeded {
                problems.append(("lineage accepts what apksigner refuses", r.description))
            }
        }
        return problems
    }

    /// Exit statuses per command (how many refusals, successes, deaths): proof the mutations reach the commands.
    public var statistics: String {
        lock.withLock {
            exitCounts.sorted { $0.key < $1.key }.map { label, counts in
                "\(label): " + counts.sorted { $0.key < $1.key }.map { "\($0.key == -999 ? "timeout" : $0.key < 0 ? "signal \(-$0.key)" : "exit \($0.key)")×\($0.value)" }.joined(separator: ", ")
            }.joined(separator: "\n")
        }
    }
}
