import TestSupport

/// Refusals while a key is still being decrypted: valid command lines of the signing commands, given a keystore
/// that is slow to open (Seeds.slowKeyStoreIterations of PBKDF2: seconds in `make fuzz`) or a fast one, then
/// spoilt by bad options, bad values, bad keys or options that contradict each other. The commands start loading
/// the key on another thread before they parse or check the rest, so the refusal comes while that thread still
/// works: the process must still exit with its error (status 1, or 64 for a usage error), never a signal or a
/// crash report at exit.
public enum Refusals {
    /// The keystore is the case's input (`@in`, an intact copy of the slow seed).
    static let slowKey = ["--ks", "@in", "--ks-pass", "env:\(Seeds.passwordVariable)"]

    /// Command lines that succeed on the intact seeds (the controls prove it), so what refuses is the spoiling.
    public static let bases: [FuzzCommand] = [
        FuzzCommand(label: "refusal: sign", arguments: ["sign"] + slowKey + ["--out", "out.apk", "@S/app.apk"], outputs: ["out.apk"]),
        FuzzCommand(label: "refusal: sign (set)", arguments: ["sign"] + slowKey + ["--out", "out.apks", "@S/set.apks"], outputs: ["out.apks"]),
        FuzzCommand(label: "refusal: sign (rotation)", arguments: ["sign"] + slowKey + ["--next-signer", "--ks", "@S/ks2.p12"] + Seeds.keyOptions
                    + ["--lineage", "@S/lineage.bin", "--out", "out.apk", "@S/app.apk"], outputs: ["out.apk"]),
        FuzzCommand(label: "refusal: run", arguments: ["run", "@S/app.apk", "--patch", "@S/empty-patch", "--out", "out.apk"] + slowKey, outputs: ["out.apk"]),
        FuzzCommand(label: "refusal: run (set)", arguments: ["run", "@S/set.apks", "--patch", "@S/empty-patch", "--out", "out.apks"] + slowKey,
                    outputs: ["out.apks"]),
        FuzzCommand(label: "refusal: merge", arguments: ["merge", "@S/set.apks", "--out", "out.apk"] + slowKey, outputs: ["out.apk"]),
        FuzzCommand(label: "refusal: rotate", arguments: ["rotate", "--out", "out.lineage", "--old-signer"] + slowKey
                    + ["--new-signer", "--ks", "@S/ks2.p12"] + Seeds.keyOptions, outputs: ["out.lineage"]),
        FuzzCommand(label: "refusal: keystore list", arguments: ["keystore", "list"] + slowKey),
    ]

    /// What spoils a command line: options that do not exist or lack their value, values out of range, keys
    /// that do not open, files that are missing or of the wrong kind, and combinations a command refuses.
    static let spoilers: [[String]] = [
        ["--no-such-option"], ["--out"], ["--ks-pass"], ["--min-sdk-version", "x"], ["--min-sdk-version", "-1"],
        ["--max-sdk-version", "1", "--min-sdk-version", "30"], ["--lib-page-alignment", "0"], ["--jar-deflate-level", "10"],
        ["--v4-signing-enabled", "maybe"], ["--rotation-min-sdk-version", "x"], ["--signer-for-min-sdk-version", "abc"],
        ["--v1-signing-enabled", "false", "--v2-signing-enabled", "false", "--v3-signing-enabled", "false"],
        ["--verity-enabled", "true", "--v2-signing-enabled", "false", "--v3-signing-enabled", "false"],
        ["--quiet", "--verbose"], ["--json", "--quiet"], ["--no-sign"], ["--merge"], ["--keep-stages", "stages"],
        ["--device-spec", "missing.json"], ["--out-dir", "outdir"], ["--in", "@S/app.apk"], ["--rename-package", "1.bad"],
        ["--patch", "missing-patch"], ["--ca-cert", "missing.pem"], ["--ca-cert", "@S/app.apk"], ["--lineage", "missing.lineage"],
        ["--lineage", "@S/app.apk"], ["--next-signer"], ["--next-signer", "--ks", "@S/app.apk"] + Seeds.keyOptions,
        ["--out", "missing-dir/out.apk"], ["--out", "."], ["--emit-script", "missing-dir/install.sh"], ["--emit-script", "."],
        ["--keep-stages", "@S/app.apk"], ["--device-spec", "."], ["--ca-cert", "."],
        // Keys: wrong password, unset or invalid variable names, unreadable files, a wrong alias or type,
        // something that is no keystore, a key without its certificate.
        ["--ks-pass", "env:\(wrongPasswordVariable)"], ["--key-pass", "env:\(wrongPasswordVariable)"], ["--ks-pass", "env:FUZZ_UNSET"],
        ["--ks-pass", "env:1-invalid name"], ["--ks-pass", "file:missing-password.txt"], ["--ks-pass", "pass:"],
        ["--ks-key-alias", "no-such-alias"], ["--ks-type", "JKS"], ["--ks-type", "BKS"], ["--ks", "@S/app.apk"], ["--ks", "@S/ks.jks"],
        ["--ks", "missing.p12"], ["--ks-base64", "env:FUZZ_UNSET"], ["--key", "@S/ca.der"], ["--cert", "@S/ca.der"],
        ["--key", "@S/ca.key", "--cert", "@S/ca.pem"],
    ]

    public static let wrongPasswordVariable = "FUZZ_WRONG_PASS"

    /// 1–2 spoilers, each inserted after the command's name, before its last argument (which `sign` reads as the
    /// APK ahead of parsing) or at the end; or an argument dropped. Half the cases take the fast keystore instead
    /// of the slow one: the refusal then lands while the loading fetches OpenSSL's algorithms and parses the
    /// store, which is where exiting under it crashed most (PBKDF2's loop alone rarely did).
    public static func spoil(_ base: FuzzCommand, _ rng: inout SplitMix64) -> (command: FuzzCommand, steps: [String]) {
        var arguments = base.arguments
        var steps: [String] = []
        if Bool.random(using: &rng), let at = arguments.firstIndex(of: "@in") {
            arguments[at] = "@S/ks.p12"
            steps.append("fast keystore")
        }
        let wordCount = base.arguments.first == "keystore" ? 2 : 1
        for _ in 0..<Int.random(in: 1...2, using: &rng) {
            if Int.random(in: 0..<8, using: &rng) == 0, arguments.count > wordCount + 1 {
                let at = Int.random(in: wordCount..<arguments.count, using: &rng)
                steps.append("drop \(arguments[at].debugDescription)")
                arguments.remove(at: at)
                continue
            }
            let spoiler = spoilers.randomElement(using: &rng)!
            let at = [wordCount, arguments.count - 1, arguments.count].randomElement(using: &rng)!
            arguments.insert(contentsOf: spoiler, at: at)
            steps.append("insert \(spoiler.joined(separator: " ")) at \(at)")
        }
        var command = base
        command.arguments = arguments
        // A spoiler may name what it writes; it may not be there after a refusal.
        command.outputs += ["stages", "outdir"]
        command.allowedStatuses = [0, 1, 64]
        return (command, steps)
    }
}
