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
import APKCore
import Sign

/// The signing-key options, named and meaning what they mean for `apksigner sign`, so a CI script can switch
/// programs by changing the name. Shared by `sign` and `run` through `@OptionGroup`.
struct SignerOptions: ParsableArguments {
    @Option(name: .customLong("ks"), help: ArgumentHelp("Keystore file (PKCS12, JKS or JCEKS) holding the signing key.", valueName: "path"))
    var keyStore: String?

    @Option(name: .customLong("ks-base64"),
            help: ArgumentHelp("The keystore itself, base64-encoded, read from env:NAME, file:PATH or stdin (for CI secrets; nothing is written to disk).",
                               valueName: "source"))
    var keyStoreBase64: String?

    @Option(name: .customLong("ks-key-alias"), help: ArgumentHelp("Alias of the key in the keystore (needed only when it holds several keys).", valueName: "alias"))
    var keyAlias: String?

    @Option(name: .customLong("ks-pass"),
            help: ArgumentHelp("Keystore password: pass:<password>, env:<NAME>, file:<PATH> (first line) or stdin. Prompts on a terminal when absent.",
                               valueName: "spec"))
    var keyStorePassword: String?

    @Option(name: .customLong("key-pass"),
            help: ArgumentHelp("Key password, same syntax as --ks-pass (default: the keystore password; PKCS12 stores have only one). With --key, the password of an encrypted PKCS#8 key.",
                               valueName: "spec"))
    var keyPassword: String?

    @Option(name: .customLong("pass-encoding"),
            help: ArgumentHelp("Also try the passwords encoded in this character encoding (a Java charset name: utf-8, ibm437, windows-1252, iso-8859-1...), for a keystore or key whose non-ASCII password keytool took in a console's encoding.",
                               valueName: "charset"))
    var passwordEncodingName: String?

    @Option(name: .customLong("ks-type"), help: ArgumentHelp("Keystore type: PKCS12, JKS or JCEKS (default: detected from the file).", valueName: "type"))
    var keyStoreType: String?

    @Option(name: .customLong("key"), help: ArgumentHelp("Private key file, PKCS#8 in DER or PEM (possibly encrypted; see --key-pass). Needs --cert.", valueName: "path"))
    var keyFile: String?

    @Option(name: .customLong("cert"), help: ArgumentHelp("Certificate (chain) for --key, X.509 in PEM or DER, signing certificate first.", valueName: "path"))
    var certificateFile: String?

    @Flag(name: .customLong("debug"),
          help: "Sign with the Android debug key (~/.android/debug.keystore, alias androiddebugkey, password android), creating it if absent.")
    var useDebugKey = false

    @Option(name: .customLong("debug-keystore"), help: ArgumentHelp("Debug keystore location for --debug (default: ~/.android/debug.keystore).", valueName: "path"))
    var debugKeyStore: String?

    /// Whether any key option was given (commands with a default key, such as `run`, check this first).
    var isKeySpecified: Bool { keyStore != nil || keyStoreBase64 != nil || keyFile != nil || useDebugKey || debugKeyStore != nil }

    func validate() throws {
        let choices = [keyStore != nil || keyStoreBase64 != nil, keyFile != nil, useDebugKey || debugKeyStore != nil].filter { $0 }.count
        if choices > 1 {
            throw ValidationError("choose one signing key: --ks (or --ks-base64), --key with --cert, or --debug")
        }
        if keyStore != nil && keyStoreBase64 != nil {
            throw ValidationError("--ks and --ks-base64 both name a keystore; give one")
        }
        if keyFile != nil && certificateFile == nil { throw ValidationError("--key needs --cert (the X.509 certificate of that key)") }
        if certificateFile != nil && keyFile == nil { throw ValidationError("--cert goes with --key (for a keystore use --ks)") }
        if keyStore == nil && keyStoreBase64 == nil {
            if keyAlias != nil { throw ValidationError("--ks-key-alias goes with --ks") }
            if keyStoreType != nil { throw ValidationError("--ks-type goes with --ks") }
            if keyStorePassword != nil && !(useDebugKey || debugKeyStore != nil) { throw ValidationError("--ks-pass goes with --ks") }
        }
        // Thrown from validate(), an error reaches the user through argument-parser, not main's hinting.
        if let keyStoreType { do { _ = try KeyStoreType(parsing: keyStoreType) } catch { throw HintedError.wrapping(error) } }
        if let keyStorePassword { _ = try Self.passwordSource(keyStorePassword, option: "--ks-pass") }
        _ = try passwordEncoding()
        if let keyPassword { _ = try Self.passwordSource(keyPassword, option: "--key-pass") }
        if let keyStoreBase64 {
            guard let source = try? PasswordSource(parsing: keyStoreBase64), source != .prompt, !Self.isLiteral(source) else {
                throw ValidationError("--ks-base64 takes env:NAME, file:PATH or stdin")
            }
        }
    }

    private static func isLiteral(_ source: PasswordSource) -> Bool { source.isLiteral }

    /// Parses the value of a password option. Errors name the option and never its value (it may be the
    /// password itself, pasted where a variable name belongs); `pass:` works, with one warning per run.
    static func passwordSource(_ spec: String, option: String) throws -> PasswordSource {
        let source: PasswordSource
        do { source = try PasswordSource(parsing: spec) } catch let error as KeyStoreError {
            throw KeyStoreError(error.code, "\(option): \(error.message)")
        }
        if source.isLiteral { LiteralPasswordWarning.warnOnce(option: option) }
        return source
    }

    /// `--pass-encoding`, checked: an encoding the C library does not know is a usage error naming it.
    func passwordEncoding() throws -> PasswordEncoding? { try Self.passwordEncoding(named: passwordEncodingName) }

    /// The encoding a `--pass-encoding` value names (nil for none); a usage error naming an unknown one.
    static func passwordEncoding(named name: String?) throws -> PasswordEncoding? {
        guard let name else { return nil }
        do { return try PasswordEncoding(named: name) } catch let error as KeyStoreError {
            throw ValidationError("--pass-encoding: \(error.message)")
        }
    }

    /// The key these options describe. Throws a `ValidationError` when none was given.
    func keySource() throws -> KeySource {
        let keyPasswordSource = try keyPassword.map { try Self.passwordSource($0, option: "--key-pass") }
        let encoding = try passwordEncoding()
        if let keyStore {
            return .keyStore(path: keyStore, type: keyStoreType, alias: keyAlias,
                             storePassword: try keyStorePassword.map { try Self.passwordSource($0, option: "--ks-pass") } ?? .prompt,
                             keyPassword: keyPasswordSource, passwordEncoding: encoding)
        }
        if let keyStoreBase64 {
            let bytes = try Self.decodeBase64Keystore(from: try PasswordSource(parsing: keyStoreBase64))
            return .keyStoreData(bytes: bytes, label: "--ks-base64 keystore", type: keyStoreType, alias: keyAlias,
                                 storePassword: try keyStorePassword.map { try Self.passwordSource($0, option: "--ks-pass") } ?? .prompt,
                                 keyPassword: keyPasswordSource, passwordEncoding: encoding)
        }
        if let keyFile, let certificateFile {
            return .keyAndCertificate(keyPath: keyFile, certificatePath: certificateFile, keyPassword: keyPasswordSource,
                                      passwordEncoding: encoding)
        }
        if useDebugKey || debugKeyStore != nil { return .debug(path: debugKeyStore) }
        throw ValidationError("no signing key given: use --ks KEYSTORE (with --ks-pass), --key KEY --cert CERT, or --debug")
    }

    /// Reads the base64 text (whole file for file:, all of stdin for stdin, the variable for env:) and
    /// decodes it, ignoring whitespace and line breaks.
    static func decodeBase64Keystore(from source: PasswordSource) throws -> [UInt8] {
        let text: String
        switch source {
        case .env(let name):
            guard let value = ProcessInfo.processInfo.environment[name] else {
                throw ValidationError("--ks-base64: the environment variable named after env: is not set (its name is not shown in case it is the secret)")
            }
            text = value
        case .file(let path):
            let data: [UInt8]
            do { data = try RegularFile.contents(of: path, limit: 64 << 20) } catch let error as FileError {
                throw ValidationError("--ks-base64: the file named after file: cannot be read (\(error.reason); its path is not shown in case it is the secret)")
            }
            text = String(decoding: data, as: UTF8.self)
        case .stdin:
            text = String(decoding: readStandardInput(), as: UTF8.self)
        case .pass, .prompt:
            throw ValidationError("--ks-base64 takes env:NAME, file:PATH or stdin")
        }
        let compact = text.filter { !$0.isWhitespace }
        guard let data = Data(base64Encoded: compact), !data.isEmpty else {
            throw ValidationError("--ks-base64: the value is not base64 (encode the keystore with `base64 -w0 release.p12`)")
        }
        return Array(data)
    }
}

/// The one warning about `pass:` a run prints, however many options use it and however often they are parsed.
enum LiteralPasswordWarning {
    nonisolated(unsafe) private static var hasWarned = false

    static func warnOnce(option: String) {
        guard !hasWarned else { return }
        hasWarned = true
        FileHandleOutput.standardError("WARNING: \(option) pass:… puts the password in your shell history and in the process list (ps); use env:NAME or file:PATH instead")
    }
}
