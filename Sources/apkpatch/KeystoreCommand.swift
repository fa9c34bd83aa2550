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
import Install
import Sign

/// `apkpatch keystore`: create and inspect signing keystores (keytool's -genkeypair and -list, for the
/// formats APK signing uses).
struct Keystore: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keystore",
        abstract: "Create a signing keystore or list what one holds.",
        discussion: """
        Examples:
          apkpatch keystore create --ks release.p12 --alias upload \\
              --ks-pass env:KS_PASS --dname "CN=Jane Doe, O=Example, C=US"
          apkpatch keystore list --ks release.p12 --ks-pass env:KS_PASS
          apkpatch keystore list --ks old.jks --ks-pass file:ks-pass.txt --json
        """,
        subcommands: [Create.self, List.self]
    )

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract: "Create a PKCS12 keystore with one new key and self-signed certificate (like keytool -genkeypair).",
            discussion: """
            The file is written with mode 0600 and never replaces an existing file. keytool -list and \
            apksigner sign --ks read it.

            Example:
              apkpatch keystore create --ks release.p12 --alias upload \\
                  --ks-pass env:KS_PASS --dname "CN=Jane Doe, O=Example, C=DE" --key-alg EC
            """
        )

        @Option(name: .customLong("ks"), help: ArgumentHelp("Keystore file to create.", valueName: "path"))
        var keyStore: String

        @Option(name: .customLong("alias"), help: "Alias of the new key.")
        var alias = "mykey"

        @Option(name: .customLong("ks-pass"),
                help: ArgumentHelp("Keystore password (at least 6 characters): pass:<password>, env:<NAME>, file:<PATH> or stdin. Prompts twice on a terminal when absent.",
                                   valueName: "spec"))
        var keyStorePassword: String?

        @Option(name: .customLong("dname"), help: ArgumentHelp("Distinguished name, keytool syntax: \"CN=Name, OU=Unit, O=Org, L=City, ST=State, C=US\".", valueName: "dn"))
        var distinguishedName: String

        @Option(name: .customLong("key-alg"), help: "Key algorithm: RSA or EC.")
        var keyAlgorithm = "RSA"

        @Option(name: .customLong("key-size"), help: "RSA: 2048, 3072 or 4096 (default 2048). EC: 256 or 384 (default 256).")
        var keySize: Int?

        @Option(name: .customLong("validity-days"), help: "Days the certificate is valid (Google Play wants validity past 2033; the default is about 27 years).")
        var validityDays = 10_000

        @Flag(name: .customLong("json"), help: "Print the new entry as JSON.")
        var json = false

        func run() throws {
            let spec = try KeyStoreCreator.keySpec(algorithm: keyAlgorithm, size: keySize)
            let password: Secret
            if let keyStorePassword {
                password = try SignerOptions.passwordSource(keyStorePassword, option: "--ks-pass").resolve(prompt: "", fileLine: 0, option: "--ks-pass")
            } else {
                password = try PasswordSource.prompt.resolve(prompt: "Keystore password: ")
                let again = try PasswordSource.prompt.resolve(prompt: "Re-enter keystore password: ")
                guard again == password else { throw ValidationError("the two passwords differ; nothing was created") }
            }
            let certificate = try KeyStoreCreator(path: keyStore, alias: alias, password: password, distinguishedName: distinguishedName,
                                                  key: spec, validityDays: validityDays).create()
            let entry = EntryReport(alias: alias, isKeyEntry: true, creationMilliseconds: nil, certificates: [certificate])
            if json {
                print(try FileHandleOutput.json(KeystoreReport(path: keyStore, type: KeyStoreType.pkcs12.rawValue, entries: [entry])))
                FileHandleOutput.standardError(Self.backUpReminder(for: keyStore))
            } else {
                print("Created \(keyStore) (PKCS12, mode 0600) with key \"\(alias)\"")
                entry.printText()
                print("")
                print(Self.backUpReminder(for: keyStore))
            }
        }

        /// What to do with a new keystore before anything else: keep a copy, and how to hand it to CI.
        static func backUpReminder(for path: String) -> String {
            let quoted = ShellWords.quote(path)
            return """
            Back up \(path) and its password now, somewhere other than this machine: an app signed with this key can \
            only be updated with it, and neither can be recovered if lost.
            For a CI secret, store the keystore as one line of base64 (then sign with --ks-base64 env:NAME):
              base64 -w0 \(quoted)
            """
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List a keystore's entries: alias, certificate DN, SHA-256 fingerprint, validity (PKCS12, JKS and JCEKS).",
            discussion: """
            Example:
              apkpatch keystore list --ks release.p12 --ks-pass env:KS_PASS --json
            """
        )

        @Option(name: .customLong("ks"), help: ArgumentHelp("Keystore file (PKCS12, JKS or JCEKS).", valueName: "path"))
        var keyStore: String

        @Option(name: .customLong("ks-pass"),
                help: ArgumentHelp("Keystore password: pass:<password>, env:<NAME>, file:<PATH> or stdin. Prompts on a terminal when absent.",
                                   valueName: "spec"))
        var keyStorePassword: String?

        @Option(name: .customLong("key-pass"),
                help: ArgumentHelp("Only for a PKCS12 store whose certificates are encrypted with a password other than the store's (openssl pkcs12 -twopass): that password, in the same forms as --ks-pass.",
                                   valueName: "spec"))
        var keyPassword: String?

        @Option(name: .customLong("ks-type"), help: ArgumentHelp("PKCS12, JKS or JCEKS (default: detected).", valueName: "type"))
        var keyStoreType: String?

        @Option(name: .customLong("pass-encoding"),
                help: ArgumentHelp("Also try the passwords encoded in this character encoding, as sign does (a Java charset name: utf-8, ibm437, windows-1252...).",
                                   valueName: "charset"))
        var passwordEncodingName: String?

        @Flag(name: .customLong("json"), help: "Print JSON (stable field names) instead of text.")
        var json = false

        func run() throws {
            let source = try keyStorePassword.map { try SignerOptions.passwordSource($0, option: "--ks-pass") } ?? .prompt
            let keySource = try keyPassword.map { try SignerOptions.passwordSource($0, option: "--key-pass") }
            let store = try LoadedKeyStore(path: keyStore, type: keyStoreType, storePassword: source, keyPassword: keySource,
                                           passwordEncoding: try SignerOptions.passwordEncoding(named: passwordEncodingName))
            let entries = store.entries.map {
                EntryReport(alias: $0.alias, isKeyEntry: $0.isKeyEntry, isSecretKeyEntry: $0.isSecretKeyEntry,
                            creationMilliseconds: $0.creationMilliseconds, certificates: $0.certificates)
            }
            if json {
                print(try FileHandleOutput.json(KeystoreReport(path: keyStore, type: store.type.rawValue, entries: entries)))
                return
            }
            print("Keystore: \(keyStore)")
            print("Type: \(store.type.rawValue)")
            print("Entries: \(entries.count)")
            for entry in entries {
                print("")
                entry.printText()
            }
        }
    }
}

/// `keystore list --json` output. Field names are stable (documented in the README).
struct KeystoreReport: Encodable {
    let path: String
    let type: String
    let entries: [EntryReport]
}

struct EntryReport: Encodable {
    let alias: String
    /// "PrivateKeyEntry", "trustedCertEntry" or (JCEKS) "SecretKeyEntry", keytool's words.
    let entryType: String
    /// ISO 8601, JKS only.
    let created: String?
    let certificates: [CertificateReport]

    init(alias: String, isKeyEntry: Bool, isSecretKeyEntry: Bool = false, creationMilliseconds: Int64?, certificates: [Certificate]) {
        self.alias = alias
        entryType = isKeyEntry ? "PrivateKeyEntry" : isSecretKeyEntry ? "SecretKeyEntry" : "trustedCertEntry"
        created = creationMilliseconds.map { Date(timeIntervalSince1970: Double($0) / 1000).formatted(.iso8601) }
        self.certificates = certificates.map { CertificateReport($0) }
    }

    func printText() {
        print("Alias: \(alias)")
        print("  Entry type: \(entryType)")
        if let created { print("  Created: \(created)") }
        if certificates.count > 1 { print("  Certificate chain length: \(certificates.count)") }
        for (index, certificate) in certificates.enumerated() {
            let indent = certificates.count > 1 ? "    " : "  "
            if certificates.count > 1 { print("  Certificate[\(index + 1)]:") }
            print("\(indent)Owner: \(certificate.subject)")
            print("\(indent)Issuer: \(certificate.issuer)")
            print("\(indent)Serial number: \(certificate.serialNumber)")
            print("\(indent)Valid from: \(certificate.notBefore) until: \(certificate.notAfter)\(certificate.validityNote.map { "  [\($0)]" } ?? "")")
            print("\(indent)Key: \(certificate.keyAlgorithm) \(certificate.keySize)-bit")
            print("\(indent)SHA-256: \(certificate.sha256)")
            print("\(indent)SHA-1: \(certificate.sha1)")
        }
    }
}

struct CertificateReport: Encodable {
    /// Subject DN as apksigner prints it ("CN=..., O=..., C=US").
    let subject: String
    let issuer: String
    /// Lower-case hex.
    let serialNumber: String
    let notBefore: String
    let notAfter: String
    /// Lower-case hex without separators, as `apksigner verify --print-certs` prints digests.
    let sha256: String
    let sha1: String
    let keyAlgorithm: String
    let keySize: Int
    /// The validity has ended.
    let isExpired: Bool
    /// Valid past 2033-10-22, as Google Play requires of a new app's signing certificate.
    let meetsPlayMinimumValidity: Bool

    /// The mark `keystore list` puts after the validity, when there is something to say.
    var validityNote: String? {
        if isExpired { return "EXPIRED" }
        if !meetsPlayMinimumValidity { return "expires before 2033-10-22: Google Play refuses it for new apps" }
        return nil
    }

    init(_ certificate: Certificate, now: Int64 = Int64(Date().timeIntervalSince1970)) {
        let warnings = SigningWarning.certificateValidity(notAfter: certificate.notAfterSeconds, notAfter: certificate.notAfter, now: now)
        isExpired = warnings.contains { if case .certificateExpired = $0 { return true } else { return false } }
        meetsPlayMinimumValidity = warnings.isEmpty
        subject = certificate.subjectDN
        issuer = certificate.issuerDN
        // As keytool prints it: the magnitude, without the DER sign octet.
        let serial = certificate.serialNumberDER
        serialNumber = (serial.count > 1 && serial[0] == 0 ? Array(serial.dropFirst()) : serial).hexString
        notBefore = certificate.notBefore
        notAfter = certificate.notAfter
        sha256 = certificate.fingerprint(.sha256).hexString
        sha1 = certificate.fingerprint(.sha1).hexString
        let key = try? certificate.publicKey()
        keyAlgorithm = key?.algorithm.rawValue ?? "unknown"
        keySize = key?.bitSize ?? 0
    }
}
