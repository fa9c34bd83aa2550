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
import OpenSSLWrapper

/// A loaded signing key: what the v1/v2/v3 signers need.
public struct SignerKey: Sendable {
    /// The signer's name, input to apksig's `getSafeSignerName` for the v1 file names (`<NAME>.SF`): the key
    /// alias, or for `--key` the key file's name up to its first '.' (apksigner's rule).
    public let name: String
    public let privateKey: PrivateKey
    /// The chain, the signing certificate first.
    public let certificates: [Certificate]
    /// How its DSA signatures choose k: set by the configuration that signs with it
    /// (`SignerConfig.deterministicDSASigning`, apksig's per-signer `deterministicDsaSigning`).
    public internal(set) var dsaNonce: DSANonce = .random

    public init(name: String, privateKey: PrivateKey, certificates: [Certificate]) {
        self.name = name
        self.privateKey = privateKey
        self.certificates = certificates
    }

    /// A signature of `data` by the key (RSA PKCS#1 v1.5, ECDSA, or DSA as `dsaNonce` says), DER for EC and DSA.
    func sign(_ data: [UInt8], digest: DigestAlgorithm) throws -> [UInt8] {
        try privateKey.sign(data, digest: digest, dsaNonce: dsaNonce)
    }

    /// Signs a fixed message, checks the signature with the certificate's key and encodes that key, keeping
    /// nothing: OpenSSL looks up its implementations and sets up the key's RSA blinding on first use, a
    /// millisecond of work that would otherwise fall on the signing block's path (the last thing a signing
    /// does). `load()` calls it on the thread that loads the key, while the APK is being read. Failures are
    /// left to the real signatures to report.
    func prepareForSigning() {
        let message = [UInt8](repeating: 0, count: 32)
        guard let signature = try? privateKey.sign(message, digest: .sha256), let publicKey = try? certificates.first?.publicKey() else { return }
        _ = publicKey.verify(signature: signature, data: message, digest: .sha256)
        _ = publicKey.subjectPublicKeyInfoDER
    }
}

/// Where the signing key comes from, as the CLI options (`--ks`…, `--key`/`--cert`, `--debug`) describe it.
public enum KeySource: Sendable, Equatable {
    /// A PKCS#12, JKS or JCEKS keystore. `type` is "PKCS12", "JKS" or "JCEKS" (nil: detected from the file's magic).
    /// `alias` may be nil when the store holds exactly one key. `keyPassword` nil means "same as the store
    /// password" (always true for keytool's PKCS#12 stores). `passwordEncoding` adds a form to try each password
    /// in (`Secret.forms`).
    case keyStore(path: String, type: String?, alias: String?, storePassword: PasswordSource, keyPassword: PasswordSource?,
                  passwordEncoding: PasswordEncoding? = nil)
    /// A keystore already in memory (e.g. decoded from a CI secret by `--ks-base64`); `label` names it in
    /// messages instead of a path.
    case keyStoreData(bytes: [UInt8], label: String, type: String?, alias: String?, storePassword: PasswordSource,
                      keyPassword: PasswordSource?, passwordEncoding: PasswordEncoding? = nil)
    /// A PKCS#8 private key (DER or PEM, optionally encrypted) and an X.509 certificate chain (PEM or DER).
    case keyAndCertificate(keyPath: String, certificatePath: String, keyPassword: PasswordSource?, passwordEncoding: PasswordEncoding? = nil)
    /// The Android debug key: `path` or `~/.android/debug.keystore`, created if absent.
    case debug(path: String?)

    /// Loads the key. Errors say what to do next and never contain a password.
    public func load() throws -> SignerKey {
        let key = try loadKey()
        key.prepareForSigning()
        return key
    }

    private func loadKey() throws -> SignerKey {
        switch self {
        case let .keyStore(path, type, alias, storePassword, keyPassword, encoding):
            let store = try LoadedKeyStore(path: path, type: type, storePassword: storePassword, keyPassword: keyPassword,
                                           passwordEncoding: encoding)
            return try store.signerKey(alias: alias, keyPassword: keyPassword)
        case let .keyStoreData(bytes, label, type, alias, storePassword, keyPassword, encoding):
            let store = try LoadedKeyStore(bytes: bytes, label: label, type: type, storePassword: storePassword, keyPassword: keyPassword,
                                           passwordEncoding: encoding)
            return try store.signerKey(alias: alias, keyPassword: keyPassword)
        case let .keyAndCertificate(keyPath, certificatePath, keyPassword, encoding):
            return try Self.loadKeyAndCertificate(keyPath: keyPath, certificatePath: certificatePath, keyPassword: keyPassword,
                                                  passwordEncoding: encoding)
        case let .debug(path):
            let location = path ?? DebugKeyStore.defaultPath()
            try DebugKeyStore.createIfAbsent(at: location)
            let store = try LoadedKeyStore(path: location, type: nil, storePassword: .pass(DebugKeyStore.password))
            return try store.signerKey(alias: DebugKeyStore.alias, keyPassword: .pass(DebugKeyStore.password))
        }
    }

    static func loadKeyAndCertificate(keyPath: String, certificatePath: String, keyPassword: PasswordSource?,
                                      passwordEncoding: PasswordEncoding? = nil) throws -> SignerKey {
        let keyBytes = try readFile(keyPath, what: "private key")
        let certificateBytes = try readFile(certificatePath, what: "certificate")
        let certificates: [Certificate]
        do { certificates = try Certificate.parseAll(pemOrDER: certificateBytes) } catch {
            throw KeyStoreError(.invalidCertificate, "\(certificatePath) holds no readable X.509 certificate (\(error)); the certificate file must be PEM or DER")
        }
        let key = try parsePrivateKey(keyBytes, path: keyPath, password: keyPassword, encoding: passwordEncoding)
        guard let leaf = certificates.first, key.matches(leaf) else {
            throw KeyStoreError(.keyCertificateMismatch,
                                "the key in \(keyPath) does not match the first certificate in \(certificatePath) (\(certificates.first?.subjectDN ?? "")); put the signing certificate first")
        }
        // apksigner: the key file's name up to the first '.' (File.getName, indexOf('.')): found as bytes, where
        // Swift's Characters would join a combining mark to the slash or the dot before it.
        let fileName = keyPath.lastPathComponent
        let name = fileName.utf8.firstIndex(of: UInt8(ascii: ".")).map { String(fileName[..<$0]) } ?? fileName
        return SignerKey(name: name.isEmpty ? fileName : name, privateKey: key, certificates: certificates)
    }

    /// PKCS#8 DER or PEM (plain or encrypted), or the traditional PEM forms. An encrypted key is tried with each
    /// form of the password (`Secret.forms`), in apksigner's order.
    static func parsePrivateKey(_ bytes: [UInt8], path: String, password: PasswordSource?, encoding: PasswordEncoding? = nil) throws -> PrivateKey {
        let text = String(decoding: bytes, as: UTF8.self)
        let isPEM = text.contains("-----BEGIN")
        let isEncrypted = isPEM ? (text.contains("ENCRYPTED") ) : looksLikeEncryptedPKCS8(bytes)
        if isEncrypted {
            guard let password else {
                throw KeyStoreError(.passwordUnavailable, "\(path) is an encrypted private key and no password was given for it", subject: .keyPassword)
            }
            let forms = try password.resolveForms(prompt: "Private key password for \(path): ", fileLine: 0, for: .keyPassword, encoding: encoding)
            var firstFailure: (any Error)?
            for secret in forms {
                do {
                    return isPEM ? try PrivateKey(pemEncoded: text, password: secret.bytes)
                        : try PrivateKey(encryptedDEREncoded: bytes, password: secret.bytes)
                } catch let error as UnreadableKeyEncryption {
                    throw unreadableKey(path: path, scheme: error.scheme)
                } catch let error as OpenSSLError where error.function == PBEIterationLimit.function {
                    throw KeyStoreError(.malformed, "\(path) is refused: \(error.reasons.joined(separator: "; "))")
                } catch {
                    if firstFailure == nil { firstFailure = error }
                }
            }
            throw KeyStoreError(.wrongKeyPassword, "cannot decrypt \(path): wrong key password, or an unsupported encryption (\(firstFailure.map { "\($0)" } ?? "no password"))", subject: .keyPassword)
        }
        do {
            return isPEM ? try PrivateKey(pemEncoded: text) : try PrivateKey(derEncoded: bytes)
        } catch {
            throw KeyStoreError(.invalidKey, "\(path) is not a readable private key (\(error)); the key file must be PKCS#8 in DER or PEM")
        }
    }

    /// A key file under an encryption this build does not read: the OpenSSL command that re-encrypts it with
    /// PBES2 and AES (it asks for the old and the new password; nothing secret on its command line), or, for MD2,
    /// which no OpenSSL 3 reads, where to get it again.
    private static func unreadableKey(path: String, scheme: String) -> KeyStoreError {
        let advice = scheme.contains("MD2")
            ? "OpenSSL 3 does not read MD2 either: export the key again from the tool that holds it, encrypted with PBES2 and AES (openssl pkcs8 -topk8 -v2 aes-256-cbc)"
            : "re-encrypt it with PBES2 and AES (OpenSSL asks for the old and the new password): openssl pkcs8 -topk8 -provider legacy -provider default -v2 aes-256-cbc -in \(shellWord(path)) -out \(shellWord(convertedName(path, suffix: ".pk8")))"
        return KeyStoreError(.unsupportedEncryption, "\(path) is encrypted with \(scheme), which apkpatch does not read; \(advice)")
    }

    /// A keystore protected (wholly or a key in it) by a scheme this build does not read: the OpenSSL commands
    /// that write the same keys and certificates as a store of today's defaults, through a PEM file whose key
    /// stays encrypted (`openssl pkcs12 -export` reads its input twice, so it cannot take it from a pipe).
    static func unreadableStore(path: String, scheme: String) -> KeyStoreError {
        guard !scheme.contains("MD2") else {
            return KeyStoreError(.unsupportedEncryption, "keystore \(path) is protected with \(scheme), which apkpatch does not read; OpenSSL 3 does not read MD2 either: export the key again from the tool that holds it")
        }
        let pem = shellWord(convertedName(path, suffix: ".pem")), store = shellWord(convertedName(path, suffix: ".p12"))
        let pbmac1 = scheme.contains("PBMAC1")
        let commands = "openssl pkcs12 -in \(shellWord(path))\(pbmac1 ? "" : " -legacy") -out \(pem) && openssl pkcs12 -export -in \(pem) -out \(store) && rm \(pem)"
        let advice = pbmac1
            ? "OpenSSL 3.4 or later reads it and writes it again with a classic MAC (it asks for the passwords): \(commands)"
            : "convert it to a store of today's defaults (OpenSSL asks for the passwords): \(commands)"
        return KeyStoreError(.unsupportedEncryption, "keystore \(path) is protected with \(scheme), which apkpatch does not read; \(advice)")
    }

    /// `dir/key.pk8` → `dir/key-converted.pk8`: the name a converted copy is suggested under, beside the original.
    private static func convertedName(_ path: String, suffix: String) -> String {
        let directory = path.contains("/") ? String(path[...path.lastIndex(of: "/")!]) : ""
        let file = path.split(separator: "/").last.map(String.init) ?? path
        let stem = file.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? file
        return directory + (stem.isEmpty ? file : stem) + "-converted" + suffix
    }

    /// A path as one shell word in a suggested command: single-quoted when it holds anything but letters,
    /// digits and `_./-`.
    private static func shellWord(_ path: String) -> String {
        path.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_./-".contains($0)) } ? path
            : "'" + path.replacing("'", with: "'\\''") + "'"
    }

    /// EncryptedPrivateKeyInfo ::= SEQUENCE { AlgorithmIdentifier SEQUENCE, OCTET STRING }, whereas
    /// PrivateKeyInfo starts with INTEGER version.
    private static func looksLikeEncryptedPKCS8(_ bytes: [UInt8]) -> Bool {
        var reader = DERReader(bytes)
        guard let outer = try? reader.read(), outer.tag == DER.sequenceTag, let children = try? outer.children(),
              children.count == 2 else { return false }
        return children[0].tag == DER.sequenceTag && children[1].tag == DER.octetStringTag
    }

    /// The largest key, certificate or keystore file read: real ones are a few KiB.
    static let maxFileSize = 16 << 20

    static func readFile(_ path: String, what: String) throws -> [UInt8] {
        do {
            return try RegularFile.contents(of: path, limit: maxFileSize)
        } catch let error as FileError {
            if error.isNotRegularFile {
                throw KeyStoreError(.fileUnreadable, "cannot read \(what) \(path): \(error.reason); give the path of the \(what) file itself")
            }
            switch error.errno {
            case ENOENT, ENOTDIR: throw KeyStoreError(.fileUnreadable, "\(what) \(path) does not exist; check the path")
            case EACCES, EPERM: throw KeyStoreError(.fileUnreadable, "cannot read \(what) \(path): \(error.reason); check its permissions")
            default: throw KeyStoreError(.fileUnreadable, "cannot read \(what) \(path): \(error.reason)")
            }
        }
    }
}

/// The keystore formats we read.
public enum KeyStoreType: String, Sendable, CaseIterable {
    case pkcs12 = "PKCS12"
    case jks = "JKS"
    case jceks = "JCEKS"

    /// The format by magic: JKS starts 0xFEEDFEED, JCEKS 0xCECECECE, PKCS#12 is a DER SEQUENCE.
    public static func detect(_ bytes: [UInt8]) throws -> KeyStoreType {
        if bytes.starts(with: [0xfe, 0xed, 0xfe, 0xed]) { return .jks }
        if bytes.starts(with: [0xce, 0xce, 0xce, 0xce]) { return .jceks }
        if bytes.first == 0x30 { return .pkcs12 }
        throw KeyStoreError(.unsupportedType, "not a PKCS12, JKS or JCEKS keystore (unrecognised first bytes)")
    }

    /// `--ks-type` text (case-insensitive; "PKCS#12" and "P12" accepted).
    public init(parsing text: String) throws {
        switch text.uppercased() {
        case "PKCS12", "PKCS#12", "P12", "PFX": self = .pkcs12
        case "JKS": self = .jks
        case "JCEKS": self = .jceks
        default:
            throw KeyStoreError(.unsupportedType, "unsupported keystore type \(text); the types are PKCS12, JKS and JCEKS (or none, to detect it)", subject: .storeType)
        }
    }
}

/// One entry as `keystore list` shows it.
public struct KeyStoreEntryInfo: Sendable {
    public let alias: String
    /// True for a private-key entry, false for a trusted certificate or a secret key.
    public let isKeyEntry: Bool
    /// A JCEKS secret-key entry (a symmetric key, no certificate).
    public var isSecretKeyEntry = false
    public let certificates: [Certificate]
    /// JKS records when an entry was made (ms since 1970); PKCS#12 does not.
    public let creationMilliseconds: Int64?
}

/// A keystore file opened with its store password: the entries, and the keys on demand.
public struct LoadedKeyStore: Sendable {
    public let path: String
    public let type: KeyStoreType
    public let entries: [KeyStoreEntryInfo]
    /// The store password's forms (`Secret.forms`), the one that opened the store first.
    private let storePasswords: [Secret]
    private let passwordEncoding: PasswordEncoding?
    /// How many times the store was read with a password form until one opened it (an ASCII password has one form:
    /// one read, so one run of each key derivation).
    let storePasswordAttempts: Int
    /// 1 when the key password comes from the same file as the store password (its second line).
    private let keyPasswordFileLine: Int
    private let pkcs12Keys: [String: Result<PrivateKey, KeyStoreError>]   // by lower-cased alias
    private let jksProtectedKeys: [String: [UInt8]]      // by lower-cased alias

    /// Opens `path`. `type` nil: detected. Wrong-password errors say which password was wrong (their `subject`). `keyPassword` is
    /// used only for PKCS#12 keys (tried before the store password); JKS keys are unwrapped in `signerKey`. Each password
    /// is tried in the forms apksigner tries (`Secret.forms`, with `passwordEncoding`), in its order, until one opens.
    public init(path: String, type: String?, storePassword: PasswordSource, keyPassword: PasswordSource? = nil,
                passwordEncoding: PasswordEncoding? = nil) throws {
        try self.init(bytes: try KeySource.readFile(path, what: "keystore"), label: path, type: type,
                      storePassword: storePassword, keyPassword: keyPassword, passwordEncoding: passwordEncoding)
    }

    /// Opens a keystore held in memory; `label` stands for the path in messages.
    public init(bytes: [UInt8], label path: String, type: String?, storePassword: PasswordSource,
                keyPassword: PasswordSource? = nil, passwordEncoding: PasswordEncoding? = nil) throws {
        let detected = try KeyStoreType.detect(bytes)
        if let type {
            // Like Java's keystore.type.compat, a type that differs from the file's is tolerated: the magic decides.
            _ = try KeyStoreType(parsing: type)
        }
        let storeForms = try storePassword.resolveForms(prompt: "Keystore password for \(path): ", fileLine: 0, for: .storePassword,
                                                        encoding: passwordEncoding)
        if case .file(let storeFile) = storePassword, case .file(let keyFile)? = keyPassword,
           URL(fileURLWithPath: storeFile).standardizedFileURL == URL(fileURLWithPath: keyFile).standardizedFileURL {
            keyPasswordFileLine = 1
        } else {
            keyPasswordFileLine = 0
        }
        self.path = path
        self.type = detected
        self.passwordEncoding = passwordEncoding
        switch detected {
        case .pkcs12:
            let parsed: [PKCS12Entry]
            do {
                let keyForms = try keyPassword?.resolveForms(prompt: "Key password for \(path): ", fileLine: keyPasswordFileLine,
                                                             for: .keyPassword, encoding: passwordEncoding)
                let opened = try Self.parsePKCS12(bytes, storeForms: storeForms, keyForms: keyForms)
                parsed = opened.entries
                storePasswords = Self.first(opened.storeForm, of: storeForms)
                storePasswordAttempts = opened.attempts
            } catch let error as PKCS12Error {
                switch error.kind {
                case .wrongPassword:
                    throw KeyStoreError(.wrongStorePassword, "keystore \(path) did not open: wrong password (\(error.underlying.reasons.first ?? "PKCS12 MAC verify failure"))", subject: .storePassword)
                case .wrongKeyPassword, .wrongStoreOrKeyPassword:
                    throw Self.keyNotDecrypted(path: path, alias: nil, keyPasswordGiven: keyPassword != nil)
                case .wrongEncryptionPassword:
                    throw KeyStoreError(.wrongKeyPassword, keyPassword == nil
                        ? "keystore \(path): the store password is right, but its certificates are encrypted with another password (a store written by openssl pkcs12 -twopass); give that one as the key password"
                        : "keystore \(path): the store password is right, but its certificates did not decrypt with it or with the key password given (a store written by openssl pkcs12 -twopass has a separate encryption password)",
                        subject: .keyPassword)
                case .unsupported(let scheme):
                    throw KeySource.unreadableStore(path: path, scheme: scheme)
                case .iterationCountTooLarge:
                    throw KeyStoreError(.malformed, "keystore \(path) is refused: \(error.underlying.reasons.joined(separator: "; "))")
                case .malformed, .creationFailed:
                    throw KeyStoreError(.malformed, "keystore \(path) is not a readable PKCS12 file (\(error)); if it is JKS or another format, check the keystore type", subject: .storeType)
                }
            }
            var keys: [String: Result<PrivateKey, KeyStoreError>] = [:]
            var infos: [KeyStoreEntryInfo] = []
            for (index, entry) in parsed.enumerated() {
                let alias = entry.friendlyName ?? (parsed.count == 1 ? "1" : String(index + 1))
                infos.append(KeyStoreEntryInfo(alias: alias, isKeyEntry: entry.isKeyEntry, certificates: entry.certificates,
                                               creationMilliseconds: nil))
                if let key = entry.privateKey {
                    keys[alias.lowercased()] = .success(key)
                } else if let keyError = entry.keyError, case .unsupported(let scheme) = keyError.kind {
                    keys[alias.lowercased()] = .failure(KeySource.unreadableStore(path: path, scheme: scheme + " (key \"\(alias)\")"))
                } else if let keyError = entry.keyError {
                    // Listed all the same; signing with it says which password is wrong.
                    keys[alias.lowercased()] = .failure(keyError.kind == .wrongStoreOrKeyPassword
                        ? KeyStoreError(.wrongStorePassword, "keystore \(path): key \"\(alias)\" did not decrypt: a wrong password for the store, or the key has a password of its own (the store has no integrity MAC to tell which)", subject: .storePassword)
                        : Self.keyNotDecrypted(path: path, alias: alias, keyPasswordGiven: keyPassword != nil))
                }
            }
            entries = infos
            pkcs12Keys = keys
            jksProtectedKeys = [:]
        case .jks, .jceks:
            var opened: (store: JavaKeyStore, form: Int)?
            var attempts = 0
            for (index, form) in storeForms.enumerated() {
                attempts += 1
                do {
                    opened = (try JavaKeyStore(bytes: bytes, password: form), index)
                    break
                } catch let error as KeyStoreError where error.code == .wrongStorePassword {
                    continue
                }
            }
            guard let opened else {
                throw KeyStoreError(.wrongStorePassword, "keystore \(path) did not open: wrong password (\(detected.rawValue) integrity check failed)", subject: .storePassword)
            }
            let store = opened.store
            storePasswords = Self.first(opened.form, of: storeForms)
            storePasswordAttempts = attempts
            entries = store.entries.map {
                var info = KeyStoreEntryInfo(alias: $0.alias, isKeyEntry: $0.protectedKey != nil, certificates: $0.certificates,
                                             creationMilliseconds: $0.creationMilliseconds)
                info.isSecretKeyEntry = $0.isSecretKey
                return info
            }
            var protected: [String: [UInt8]] = [:]
            for entry in store.entries { if let key = entry.protectedKey { protected[entry.alias.lowercased()] = key } }
            jksProtectedKeys = protected
            pkcs12Keys = [:]
        }
    }

    /// `forms` with the one at `index` first.
    private static func first(_ index: Int, of forms: [Secret]) -> [Secret] {
        [forms[index]] + forms.enumerated().filter { $0.offset != index }.map(\.element)
    }

    /// Reads a PKCS#12 store with each store password form, in order, and for each with each key password form
    /// (none: the store password's), until the MAC verifies and every key decrypts, as apksigner loads the store
    /// with each form and then takes the key with each. A read that fails whatever the password (malformed, an
    /// unsupported scheme) ends the search. When no pair opens everything, the read that went furthest stands: a
    /// store whose MAC verified with a key that did not decrypt says so, rather than "wrong store password".
    private static func parsePKCS12(_ bytes: [UInt8], storeForms: [Secret], keyForms: [Secret]?) throws
        -> (entries: [PKCS12Entry], storeForm: Int, attempts: Int) {
        // How far a read got: a wrong MAC, then a key or safe that did not decrypt, then every key but some.
        func depth(_ kind: PKCS12Error.Kind) -> Int? {
            switch kind {
            case .wrongPassword: 0
            case .wrongStoreOrKeyPassword: 1
            case .wrongKeyPassword, .wrongEncryptionPassword: 2
            default: nil
            }
        }
        var best: (depth: Int, result: Result<(entries: [PKCS12Entry], storeForm: Int), PKCS12Error>)?
        var attempts = 0
        for (storeIndex, storeForm) in storeForms.enumerated() {
            for keyForm in keyForms.map({ $0.map(Optional.some) }) ?? [nil] {
                attempts += 1
                do {
                    let entries = try PKCS12.parse(bytes, password: storeForm.bytes, keyPassword: keyForm?.bytes)
                    guard entries.contains(where: { $0.keyError.flatMap { depth($0.kind) } != nil }) else { return (entries, storeIndex, attempts) }
                    if (best?.depth ?? -1) < 3 { best = (3, .success((entries, storeIndex))) }
                } catch let error as PKCS12Error {
                    guard let depth = depth(error.kind) else { throw error }
                    if (best?.depth ?? -1) < depth { best = (depth, .failure(error)) }
                    // A MAC that did not verify fails alike with every key password form.
                    if depth == 0 { break }
                }
            }
        }
        guard let best else { throw KeyStoreError(.passwordUnavailable, "no password to try") }
        let opened = try best.result.get()
        return (opened.entries, opened.storeForm, attempts)
    }

    /// A PKCS#12 key that decrypted with neither the key password nor the store password.
    private static func keyNotDecrypted(path: String, alias: String?, keyPasswordGiven: Bool) -> KeyStoreError {
        let key = alias.map { "key \"\($0)\"" } ?? "a key"
        return KeyStoreError(.wrongKeyPassword, keyPasswordGiven
            ? "keystore \(path): \(key) did not decrypt with the key password given or the store password"
            : "keystore \(path): \(key) did not decrypt with the store password, so it has a password of its own (keytool's PKCS12 stores use one password for both)",
            subject: .keyPassword)
    }

    /// The aliases of the private-key entries, in file order.
    public var keyAliases: [String] { entries.filter(\.isKeyEntry).map(\.alias) }

    /// The key under `alias` (case-insensitive, as Java's keystores match), or the only key when `alias` is
    /// nil. `keyPassword` nil: the store password.
    public func signerKey(alias requested: String?, keyPassword: PasswordSource?) throws -> SignerKey {
        let aliases = keyAliases
        let listed = aliases.map { "\"\($0)\"" }.joined(separator: ", ")
        guard !aliases.isEmpty else {
            throw KeyStoreError(.noPrivateKey, "keystore \(path) holds no private key (only trusted certificates); sign with a store made by keytool -genkeypair")
        }
        let alias: String
        if let requested {
            guard let match = aliases.first(where: { $0.lowercased() == requested.lowercased() }) else {
                throw KeyStoreError(.aliasNotFound, "keystore \(path) has no key entry \"\(requested)\"; its key aliases: \(listed)", subject: .keyAlias)
            }
            alias = match
        } else {
            guard aliases.count == 1 else {
                throw KeyStoreError(.aliasRequired, "keystore \(path) holds \(aliases.count) keys (\(listed)) and none was chosen", subject: .keyAlias)
            }
            alias = aliases[0]
        }
        guard let entry = entries.first(where: { $0.isKeyEntry && $0.alias == alias }), !entry.certificates.isEmpty else {
            throw KeyStoreError(.malformed, "key \"\(alias)\" in \(path) has no certificate")
        }
        let key: PrivateKey
        switch type {
        case .pkcs12:
            guard let found = pkcs12Keys[alias.lowercased()] else {
                throw KeyStoreError(.malformed, "key \"\(alias)\" in \(path) did not load")
            }
            key = try found.get()
        case .jks, .jceks:
            guard let protected = jksProtectedKeys[alias.lowercased()] else {
                throw KeyStoreError(.malformed, "key \"\(alias)\" in \(path) did not load")
            }
            // apksigner takes the key with each form of the key password, or without one with each form of the store's.
            let passwords = try keyPassword?.resolveForms(prompt: "Key \"\(alias)\" password: ", fileLine: keyPasswordFileLine, for: .keyPassword,
                                                          encoding: passwordEncoding) ?? storePasswords
            var recovered: [UInt8]?
            for password in passwords {
                do {
                    recovered = try JavaKeyStore.recoverKey(protected, password: password, alias: alias)
                    break
                } catch let error as KeyStoreError where error.code == .wrongKeyPassword {
                    continue
                }
            }
            guard let pkcs8 = recovered else {
                throw KeyStoreError(.wrongKeyPassword, keyPassword == nil
                    ? "key \"\(alias)\" in \(path) has a password of its own (not the store password)"
                    : "wrong password for key \"\(alias)\" in \(path)", subject: .keyPassword)
            }
            do { key = try PrivateKey(derEncoded: pkcs8) } catch {
                throw KeyStoreError(.invalidKey, "key \"\(alias)\" in \(path) is not a readable PKCS#8 key (\(error))")
            }
        }
        guard key.matches(entry.certificates[0]) else {
            throw KeyStoreError(.keyCertificateMismatch, "key \"\(alias)\" in \(path) does not match its certificate")
        }
        return SignerKey(name: requested ?? alias, privateKey: key, certificates: entry.certificates)
    }
}
