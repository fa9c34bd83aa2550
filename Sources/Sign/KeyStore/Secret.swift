#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import APKCore
#if canImport(Glibc)
import Glibc
#endif

/// A password (or other secret) in memory. It never prints: `description`, `debugDescription` and reflection
/// (`dump`, string interpolation) all show `<redacted>`, so a secret that slips into an error or a log line
/// stays hidden.
public struct Secret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The secret as UTF-8 bytes (how OpenSSL takes PKCS#12 passwords).
    public let bytes: [UInt8]

    public init(_ text: String) { bytes = Array(text.utf8) }
    public init(bytes: [UInt8]) { self.bytes = bytes }

    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    public var isEmpty: Bool { bytes.isEmpty }

    /// The password as Java's `char[]` turned into bytes, high byte first: how the JKS format keys its
    /// integrity digest and key protection. Bytes that are not UTF-8 (a Latin-1 password file) are taken as
    /// ISO-8859-1, one char per byte, which is also what OpenSSL does with them for PKCS#12.
    var utf16BigEndian: [UInt8] {
        let units: [UInt16]
        if let text = String(validating: bytes, as: UTF8.self) { units = Array(text.utf16) }
        else { units = bytes.map { UInt16($0) } }
        return units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
    }

    /// The forms apksigner tries a password in, in its order, each once (`PasswordRetriever.addPasswords`): Java's
    /// keystores take a password as chars, and keytool has made stores with the password's encoded bytes taken one
    /// char each. So: the password encoded with `encoding` (`--pass-encoding`), its bytes as chars; the password
    /// itself; its UTF-8 bytes (the JVM's default charset) as chars. A password read as bytes (a file, standard
    /// input) is decoded as UTF-8 first (a malformed sequence becomes U+FFFD), and its bytes as read, one char each,
    /// come last. Each form is held as UTF-8, which every reader turns into the bytes its format takes (UTF-16 for
    /// JKS and the PKCS#12 KDF, UTF-8 for PBKDF2, as Java does). An ASCII password has one form.
    static func forms(of secret: Secret, isEncoded: Bool, encoding: PasswordEncoding?) -> [Secret] {
        var forms: [[UInt8]] = []
        func add(_ form: [UInt8]) { if !forms.contains(form) { forms.append(form) } }
        // Bytes taken one char each (castBytesToChars), as UTF-8.
        func chars(_ bytes: [UInt8]) -> [UInt8] {
            var text = String.UnicodeScalarView()
            text.append(contentsOf: bytes.map { Unicode.Scalar($0) })
            return Array(String(text).utf8)
        }
        let characters = Array(String(decoding: secret.bytes, as: UTF8.self).utf8)
        if let encoding { add(chars(encoding.encode(characters))) }
        add(characters)
        add(chars(characters))
        if isEncoded { add(chars(secret.bytes)) }
        return forms.map(Secret.init(bytes:))
    }
}

/// Where a password comes from, in apksigner's syntax (`--ks-pass`, `--key-pass`):
/// `pass:<password>` (visible in `ps` and shell history: avoid in CI), `env:<NAME>`, `file:<PATH>` (first
/// line), `stdin` (next line of standard input), or, when no option was given, a prompt on the terminal
/// with echo off (the next line of standard input when that is not a terminal, as apksigner reads it).
public enum PasswordSource: Sendable, Equatable {
    case pass(Secret)
    case env(String)
    case file(String)
    case stdin
    case prompt

    /// Parses apksigner's syntax. A spec without a known prefix is an error (apksigner's rule), and the
    /// error never repeats the spec, which might be a mistyped password.
    public init(parsing spec: String) throws {
        if spec.hasPrefix("pass:") { self = .pass(Secret(String(spec.dropFirst(5)))) }
        else if spec.hasPrefix("env:") {
            let name = String(spec.dropFirst(4))
            guard !name.isEmpty else { throw KeyStoreError(.invalidPasswordSpec, "env: needs a variable name, e.g. env:KS_PASS") }
            // A password pasted after env: is what this catches; the value is never repeated.
            guard Self.isEnvironmentVariableName(name) else {
                throw KeyStoreError(.invalidPasswordSpec, "what follows env: is not an environment variable name (letters, digits and '_', not starting with a digit), so it is not shown in case it is the password; write env:NAME and export NAME")
            }
            self = .env(name)
        } else if spec.hasPrefix("file:") {
            let path = String(spec.dropFirst(5))
            guard !path.isEmpty else { throw KeyStoreError(.invalidPasswordSpec, "file: needs a path, e.g. file:/run/secrets/ks_pass") }
            self = .file(path)
        } else if spec == "stdin" { self = .stdin }
        else {
            throw KeyStoreError(.invalidPasswordSpec,
                                "unsupported password spec (expected pass:<password>, env:<NAME>, file:<PATH> or stdin); the value is not shown in case it is a password")
        }
    }

    /// True when `name` can name an environment variable as a shell exports it: `[A-Za-z_][A-Za-z0-9_]*`.
    static func isEnvironmentVariableName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return name.utf8.allSatisfy { byte in
            byte == UInt8(ascii: "_") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        }
    }

    /// True for `pass:`, whose password is on the command line (shell history, `ps`).
    public var isLiteral: Bool {
        if case .pass = self { return true }
        return false
    }

    /// Reads the password. `prompt` is shown only for `.prompt` (on the terminal, echo off).
    public func resolve(prompt: String) throws -> Secret { try resolve(prompt: prompt, fileLine: 0) }

    /// `resolve(prompt:)`, taking line `fileLine` (0-based) of a `file:` source when the file has that many
    /// lines, else its first line. apksigner reads `--ks-pass file:F --key-pass file:F` as two lines of F.
    func resolve(prompt: String, fileLine: Int) throws -> Secret {
        try resolve(prompt: prompt, fileLine: fileLine, option: nil)
    }

    /// `resolve(prompt:fileLine:)` whose errors start with `option` (the caller's name for this password), so a
    /// user with two password options knows which failed.
    public func resolve(prompt: String, fileLine: Int, option: String?) throws -> Secret {
        do { return try resolveSource(prompt: prompt, fileLine: fileLine) } catch let error as KeyStoreError {
            guard let option else { throw error }
            throw KeyStoreError(error.code, "\(option): \(error.message)", subject: error.subject)
        }
    }

    /// The keystore's or the key's password, read as `resolve(prompt:fileLine:)` reads it, in the forms to try it in
    /// (`Secret.forms`). Errors start with which password it is and carry it as their subject (a front end adds its
    /// option for it).
    func resolveForms(prompt: String, fileLine: Int, for subject: KeyStoreError.Subject, encoding: PasswordEncoding?) throws -> [Secret] {
        var isEncoded = false
        let secret: Secret
        do { secret = try resolveSource(prompt: prompt, fileLine: fileLine, isEncoded: &isEncoded) } catch let error as KeyStoreError {
            let name = subject == .keyPassword ? "key password" : "keystore password"
            throw KeyStoreError(error.code, "\(name): \(error.message)", subject: subject)
        }
        return Secret.forms(of: secret, isEncoded: isEncoded, encoding: encoding)
    }

    /// The largest password file read (its first lines are the passwords).
    static let maxFileSize = 1 << 20

    private func resolveSource(prompt: String, fileLine: Int) throws -> Secret {
        var isEncoded = false
        return try resolveSource(prompt: prompt, fileLine: fileLine, isEncoded: &isEncoded)
    }

    /// The password; `isEncoded` is set when it was read as bytes (a file, standard input) rather than as characters
    /// (`pass:`, an environment variable, the terminal, which apksigner's console decodes).
    private func resolveSource(prompt: String, fileLine: Int, isEncoded: inout Bool) throws -> Secret {
        switch self {
        case .pass(let secret):
            return secret
        case .env(let name):
            guard let value = ProcessInfo.processInfo.environment[name] else {
                throw KeyStoreError(.passwordUnavailable, "the environment variable named after env: is not set (its name is not shown in case it is the password); export it, e.g. from a CI secret, or use file:PATH")
            }
            return Secret(value)
        case .file(let path):
            let data: [UInt8]
            do { data = try RegularFile.contents(of: path, limit: Self.maxFileSize) } catch let error as FileError {
                // The path is not shown in case it is the password (a secret pasted after file:).
                let advice = error.isNotRegularFile ? "give the path of a regular file holding the password"
                    : "check the path and its permissions"
                throw KeyStoreError(.passwordUnavailable, "the password file named after file: cannot be read (\(error.reason)); its path is not shown in case it is the password: \(advice)")
            }
            isEncoded = true
            return Secret(bytes: Self.line(fileLine, of: data) ?? Self.firstLine(data))
        case .stdin:
            guard let line = StandardInputLines.shared.nextLine() else {
                throw KeyStoreError(.passwordUnavailable, "standard input ended before a password line; pipe the password in (echo \"$PASS\" | …)")
            }
            isEncoded = true
            return Secret(bytes: line)
        case .prompt:
            // apksigner prompts on the console, or reads a line of standard input when that is not a terminal
            // (`echo "$PASS" | apksigner sign --ks …`, and keytool likewise): the same here.
            guard isatty(STDIN_FILENO) == 1 else {
                guard let line = StandardInputLines.shared.nextLine() else {
                    throw KeyStoreError(.passwordUnavailable, "no password given, standard input is not a terminal to prompt on and holds no password line; pass it with env:NAME, file:PATH or stdin (echo \"$PASS\" | …)")
                }
                isEncoded = true
                return Secret(bytes: line)
            }
            return try TerminalPrompt.readPassword(prompt: prompt)
        }
    }

    /// The bytes up to the first line terminator (apksigner reads passwords a line at a time; "\r\n" and
    /// "\n" both end a line).
    /// Line `index` (0-based) without its terminator, or nil if the bytes have no such (non-empty) line.
    static func line(_ index: Int, of bytes: [UInt8]) -> [UInt8]? {
        let lines = bytes.split(separator: 0x0a, omittingEmptySubsequences: false)
        guard index < lines.count else { return nil }
        var line = Array(lines[index])
        if line.last == 0x0d { line.removeLast() }
        return index > 0 && line.isEmpty ? nil : line
    }

    static func firstLine(_ bytes: [UInt8]) -> [UInt8] {
        var line = Array(bytes.prefix { $0 != 0x0a })
        if line.last == 0x0d { line.removeLast() }
        return line
    }
}

/// Standard input read line by line and shared, so `--ks-pass stdin --key-pass stdin` take consecutive
/// lines as apksigner does.
final class StandardInputLines: @unchecked Sendable {
    // @unchecked Sendable: all state is guarded by `lock`.
    static let shared = StandardInputLines()
    private let lock = Lock()

    func nextLine() -> [UInt8]? {
        lock.withLock { readLine() }
    }

    private func readLine() -> [UInt8]? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        var sawAny = false
        // One byte at a time so nothing beyond this line is consumed (the next reader gets the rest).
        while read(STDIN_FILENO, &byte, 1) == 1 {
            sawAny = true
            if byte == 0x0a { break }
            line.append(byte)
        }
        guard sawAny else { return nil }
        if line.last == 0x0d { line.removeLast() }
        return line
    }
}

/// A password prompt on the controlling terminal with echo off.
enum TerminalPrompt {
    static func readPassword(prompt: String) throws -> Secret {
        let descriptor = open("/dev/tty", O_RDWR | O_NOCTTY)
        guard descriptor >= 0 else {
            throw KeyStoreError(.passwordUnavailable,
                                "no password given and no terminal to prompt on; pass it with env:NAME, file:PATH or stdin")
        }
        defer { close(descriptor) }
        var original = termios()
        let hasTermios = tcgetattr(descriptor, &original) == 0
        if hasTermios {
            var silent = original
            silent.c_lflag &= ~tcflag_t(ECHO)
            silent.c_lflag |= tcflag_t(ECHONL)
            tcsetattr(descriptor, TCSAFLUSH, &silent)
        }
        defer { if hasTermios { tcsetattr(descriptor, TCSAFLUSH, &original) } }
        let promptBytes = Array(prompt.utf8)
        _ = promptBytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(descriptor, &byte, 1) == 1, byte != 0x0a { line.append(byte) }
        if line.last == 0x0d { line.removeLast() }
        return Secret(bytes: line)
    }
}
