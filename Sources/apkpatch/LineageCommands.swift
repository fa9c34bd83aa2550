import APKCore
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
import OpenSSLWrapper
import Sign
import Verify

/// One `--old-signer`/`--new-signer`/`--signer` group of apksigner's per-signer options: the key options of
/// `apkpatch sign` plus the `--set-*` capability options (a capability option without `true`/`false` means
/// true, as in apksigner).
struct LineageSignerArguments {
    static let capabilityOptions: [String: UInt32] = [
        "--set-installed-data": SignerCapabilities.installedData, "--set-shared-uid": SignerCapabilities.sharedUserID,
        "--set-permission": SignerCapabilities.permission, "--set-rollback": SignerCapabilities.rollback,
        "--set-auth": SignerCapabilities.auth,
    ]

    var keyOptions: SignerOptions
    var capabilities = SignerCapabilities()

    init(_ arguments: [String], label: String) throws {
        var keyArguments: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            let (name, inlineValue) = Self.split(argument)
            guard let flag = Self.capabilityOptions[name] else { keyArguments.append(argument); continue }
            var value = true
            if let inlineValue {
                guard let parsed = Bool(inlineValue) else { throw ValidationError("\(name) takes true or false, not \(inlineValue.cappedForMessage)") }
                value = parsed
            } else if index < arguments.count, let parsed = Bool(arguments[index]) {
                value = parsed
                index += 1
            }
            capabilities.set(flag, value)
        }
        if keyArguments.isEmpty { throw ValidationError("\(label) is given without a key: follow it with --ks KEYSTORE or --key KEY --cert CERT") }
        do { keyOptions = try SignerOptions.parse(keyArguments) } catch {
            throw ValidationError("\(label): \(SignerOptions.message(for: error))")
        }
    }

    func loadKey() throws -> SignerKey { try keyOptions.keySource().load() }

    /// `--name=value` → ("--name", "value"); anything else → (argument, nil).
    static func split(_ argument: String) -> (String, String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }

    /// Splits apksigner-style arguments into the general options and the signer groups that start at each
    /// of `markers` (a group ends where a general option or the next marker begins).
    static func groups(_ arguments: [String], markers: Set<String>, general: Set<String>) -> (general: [String], signers: [(String, [String])]) {
        var generalArguments: [String] = []
        var signers: [(String, [String])] = []
        var index = 0
        var current: (String, [String])?
        while index < arguments.count {
            let argument = arguments[index]
            let name = split(argument).0
            if markers.contains(argument) {
                if let current { signers.append(current) }
                current = (argument, [])
            } else if general.contains(name) || current == nil {
                if let finished = current { signers.append(finished); current = nil }
                generalArguments.append(argument)
                // A general option's value goes with it.
                if general.contains(name), !argument.contains("="), LineageCommandSupport.valued.contains(name), index + 1 < arguments.count {
                    index += 1
                    generalArguments.append(arguments[index])
                }
            } else {
                current?.1.append(argument)
            }
            index += 1
        }
        if let current { signers.append(current) }
        return (generalArguments, signers)
    }
}

enum LineageCommandSupport {
    /// General options that take a value.
    static let valued: Set<String> = ["--in", "--out", "--min-sdk-version"]

    /// Walks the general options of `rotate` or `lineage` (`command`): `handle` gets each option's name and a
    /// way to take its value (inline after `=`, or the next argument), and returns false for an option the
    /// command does not take.
    static func forEachOption(in general: [String], command: String,
                              _ handle: (_ name: String, _ value: () throws -> String) throws -> Bool) throws {
        var index = 0
        while index < general.count {
            let argument = general[index]
            let (name, inline) = LineageSignerArguments.split(argument)
            let known = try handle(name) {
                if let inline { return inline }
                index += 1
                guard index < general.count else { throw ValidationError("\(name) needs a value") }
                return general[index]
            }
            // The name alone: an inline value (--ks-pass=…, mistyped) may be a secret.
            guard known else { throw ValidationError("unsupported option: \(name.cappedForMessage) (see apkpatch \(command) --help)") }
            index += 1
        }
    }

    /// Writes a lineage file atomically (temporary file renamed into place).
    static func write(_ lineage: SigningCertificateLineage, to path: String) throws {
        let output = try OutputFile(destination: path)
        try output.write(lineage.fileBytes)
        try output.commit()
    }

    /// apksigner's `printCertificate` for each certificate, then `printCapabilities`.
    static func printCertificates(of lineage: SigningCertificateLineage, verbose: Bool, pem: Bool) throws {
        let certificates = try lineage.certificates.map { CertificateInfo(try VerificationCertificate(derEncoded: $0.derBytes)) }
        print(VerificationReport.describeLineage(certificates, capabilities: lineage.nodes.map { LineageCapabilities(flags: $0.flags) },
                                                 verbose: verbose, pem: pem), terminator: "")
    }
}

/// `apkpatch rotate`: `apksigner rotate`, writing the same lineage file.
struct Rotate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate",
        abstract: "Create or extend a signing certificate lineage (key rotation), as apksigner rotate does.",
        usage: """
        apkpatch rotate --out LINEAGE [--in LINEAGE|APK] [--min-sdk-version N] [-v] \
        --old-signer KEY-OPTIONS [--set-CAPABILITY [true|false]]... --new-signer KEY-OPTIONS [--set-CAPABILITY [true|false]]...
        """,
        discussion: """
        The old signer's key signs the new signer's certificate into the lineage; sign the APK with --lineage \
        LINEAGE and both keys (`apkpatch sign --ks old.p12 --next-signer --ks new.p12 --lineage LINEAGE`). With \
        --in, the old signer must be the lineage's newest certificate and the new one is appended. KEY-OPTIONS are \
        the key options of `apkpatch sign` (--ks, --ks-key-alias, --ks-pass, --key-pass, --pass-encoding, --ks-type, --key, --cert). \
        Capabilities granted to an older certificate (all but rollback by default): --set-installed-data, \
        --set-shared-uid, --set-permission, --set-rollback, --set-auth. The file is apksig's format: \
        apksigner reads it, and apkpatch reads apksigner's.

        Examples:
          apkpatch rotate --out lineage.bin \\
              --old-signer --ks old.p12 --ks-pass env:OLD_PASS \\
              --new-signer --ks new.p12 --ks-pass env:NEW_PASS
          apkpatch rotate --in lineage.bin --out lineage2.bin \\
              --old-signer --key new.pk8 --cert new.pem \\
              --new-signer --key newer.pk8 --cert newer.pem
        """
    )

    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The options above, in apksigner's order.", valueName: "options"))
    var arguments: [String] = []

    func run() throws {
        let (general, signers) = LineageSignerArguments.groups(arguments, markers: ["--old-signer", "--new-signer"],
                                                                 general: ["--in", "--out", "--min-sdk-version", "-v", "--verbose"])
        var input: String?, output: String?, minSdkVersion = 0, verbose = false
        try LineageCommandSupport.forEachOption(in: general, command: "rotate") { name, value in
            switch name {
            case "--in": input = try value()
            case "--out": output = try value()
            case "--min-sdk-version":
                let text = try value()
                guard let level = Int(text) else { throw ValidationError("--min-sdk-version takes an API level, not \(text.cappedForMessage)") }
                minSdkVersion = level
            case "-v", "--verbose": verbose = true
            default: return false
            }
            return true
        }
        guard let oldGroup = signers.last(where: { $0.0 == "--old-signer" }) else { throw ValidationError("signer parameters for the old signer are missing: give --old-signer --ks … (or --key … --cert …)") }
        guard let newGroup = signers.last(where: { $0.0 == "--new-signer" }) else { throw ValidationError("signer parameters for the new signer are missing: give --new-signer --ks … (or --key … --cert …)") }
        guard let output else { throw ValidationError("missing --out FILE, where the lineage is written") }
        let old = try LineageSignerArguments(oldGroup.1, label: "--old-signer")
        let new = try LineageSignerArguments(newGroup.1, label: "--new-signer")
        let oldKey = try old.loadKey(), newKey = try new.loadKey()
        let lineage: SigningCertificateLineage
        if let input {
            var existing = try SigningCertificateLineage(contentsOf: input)
            guard let oldCertificate = oldKey.certificates.first else { throw SignError.noCertificate }
            try existing.updateCapabilities(of: oldCertificate, with: old.capabilities)
            lineage = try existing.spawningDescendant(from: oldKey, to: newKey, capabilities: new.capabilities)
        } else {
            lineage = try SigningCertificateLineage.rotation(from: oldKey, capabilities: old.capabilities, to: newKey,
                                                             capabilities: new.capabilities, minSdkVersion: minSdkVersion)
        }
        try LineageCommandSupport.write(lineage, to: output)
        if verbose { print("Rotation entry generated.") }
    }
}

/// `apkpatch lineage`: `apksigner lineage`, printing and changing capabilities.
struct Lineage: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lineage",
        abstract: "Print a signing certificate lineage or change its signers' capabilities, as apksigner lineage does.",
        usage: """
        apkpatch lineage --in LINEAGE|APK [--print-certs] [--print-certs-pem] [-v] [--out LINEAGE] \
        [--signer KEY-OPTIONS --set-CAPABILITY [true|false]...]...
        """,
        discussion: """
        --in takes a lineage file (from apkpatch or apksigner rotate) or an APK signed with one. Each --signer \
        names a certificate of the lineage by its key (KEY-OPTIONS as for apkpatch sign) and sets its \
        capabilities: --set-installed-data, --set-shared-uid, --set-permission, --set-rollback, --set-auth. A \
        changed lineage is written to --out.

        Examples:
          apkpatch lineage --in lineage.bin --print-certs
          apkpatch lineage --in lineage.bin --out lineage2.bin \\
              --signer --ks old.p12 --ks-pass env:OLD_PASS --set-installed-data false
        """
    )

    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The options above, in apksigner's order.", valueName: "options"))
    var arguments: [String] = []

    func run() throws {
        let (general, signers) = LineageSignerArguments.groups(arguments, markers: ["--signer"],
                                                                 general: ["--in", "--out", "--print-certs", "--print-certs-pem", "-v", "--verbose"])
        var input: String?, output: String?, verbose = false, printCerts = false, printPEM = false
        try LineageCommandSupport.forEachOption(in: general, command: "lineage") { name, value in
            switch name {
            case "--in": input = try value()
            case "--out": output = try value()
            case "--print-certs": printCerts = true
            case "--print-certs-pem": printPEM = true; printCerts = true
            case "-v", "--verbose": verbose = true
            default: return false
            }
            return true
        }
        guard let input else { throw ValidationError("missing --in FILE: the lineage file (or an APK signed with one)") }
        var lineage = try SigningCertificateLineage(contentsOf: input)
        var updated = false
        for (number, group) in signers.enumerated() {
            let signer = try LineageSignerArguments(group.1, label: "--signer (signer #\(number + 1))")
            // Named as apksigner names it: the key alias, or the key file's name up to its first '.'.
            let key = try signer.loadKey(), label = key.name
            guard let certificate = key.certificates.first else { throw SignError.noCertificate }
            guard lineage.capabilities(of: certificate) != nil else {
                throw LineageError.notInLineage("\(certificate.subjectDN) of the signer \(label)")
            }
            if try lineage.updateCapabilities(of: certificate, with: signer.capabilities) {
                updated = true
                if verbose { print("Updated signer capabilities for \(label).") }
            } else if verbose {
                print("The provided signer capabilities for \(label) are unchanged.")
            }
        }
        if printCerts { try LineageCommandSupport.printCertificates(of: lineage, verbose: verbose, pem: printPEM) }
        if updated {
            guard let output else { throw ValidationError("the lineage was modified but no --out file was given to write it to") }
            try LineageCommandSupport.write(lineage, to: output)
            if verbose { print("Updated lineage saved to \(output).") }
        }
    }
}
