#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import APKCore
import OpenSSLWrapper
#if canImport(Glibc)
import Glibc
#endif

/// Creates a PKCS#12 keystore with one self-signed key, like `keytool -genkeypair -storetype PKCS12`:
/// readable by `keytool -list` and usable by `apksigner sign --ks`. The file is written with mode 0600,
/// atomically, and never over an existing file.
public struct KeyStoreCreator: Sendable {
    /// Key types keytool offers for APK signing.
    public enum KeySpec: Sendable, Equatable {
        case rsa(bits: Int)
        /// A named curve: "P-256", "P-384" or "P-521".
        case ec(curve: String)
    }

    public var path: String
    public var alias: String
    public var password: Secret
    public var distinguishedName: String
    public var key: KeySpec
    public var validityDays: Int
    /// Start of validity, seconds since 1970; nil: now.
    public var notBefore: Int64?

    public init(path: String, alias: String, password: Secret, distinguishedName: String,
                key: KeySpec = .rsa(bits: 2048), validityDays: Int = 10_000, notBefore: Int64? = nil) {
        self.path = path
        self.alias = alias
        self.password = password
        self.distinguishedName = distinguishedName
        self.key = key
        self.validityDays = validityDays
        self.notBefore = notBefore
    }

    /// Makes `KeySpec` from keytool-style `--key-alg` and `--key-size` (RSA default 2048; EC 256 or 384).
    public static func keySpec(algorithm: String, size: Int?) throws -> KeySpec {
        switch algorithm.uppercased() {
        case "RSA":
            let bits = size ?? 2048
            guard [2048, 3072, 4096, 8192].contains(bits) else {
                throw KeyStoreError(.invalidArgument, "RSA key size \(bits) is not supported; use 2048, 3072 or 4096")
            }
            return .rsa(bits: bits)
        case "EC", "ECDSA":
            switch size ?? 256 {
            case 256: return .ec(curve: "P-256")
            case 384: return .ec(curve: "P-384")
            case 521: return .ec(curve: "P-521")
            default: throw KeyStoreError(.invalidArgument, "EC key size \(size ?? 0) is not supported; use 256 (P-256) or 384 (P-384)")
            }
        default:
            throw KeyStoreError(.invalidArgument, "key algorithm \(algorithm) is not supported; use RSA or EC")
        }
    }

    /// Generates the key and certificate and writes the store. Returns the certificate.
    @discardableResult
    public func create() throws -> Certificate {
        guard !FileManager.default.fileExists(atPath: path) else {
            throw KeyStoreError(.alreadyExists, "\(path) already exists; refusing to overwrite a keystore (move it away or choose another path)")
        }
        guard !alias.isEmpty else { throw KeyStoreError(.invalidArgument, "the alias must not be empty") }
        guard password.bytes.count >= 6 else {
            // keytool's rule; Java's tools refuse shorter store passwords.
            throw KeyStoreError(.invalidArgument, "the keystore password must be at least 6 characters (keytool's rule)")
        }
        guard validityDays > 0 else { throw KeyStoreError(.invalidArgument, "validity must be at least 1 day") }
        do {
            let privateKey: PrivateKey
            switch key {
            case .rsa(let bits): privateKey = try PrivateKey.generateRSA(bits: bits)
            case .ec(let curve): privateKey = try PrivateKey.generateEC(curve: curve)
            }
            let start = notBefore ?? Int64(Date().timeIntervalSince1970)
            let certificate = try Certificate.makeSelfSigned(key: privateKey, subject: distinguishedName, notBefore: start,
                                                             validityDays: validityDays)
            let store = try PKCS12.make(key: privateKey, certificates: [certificate], friendlyName: alias, password: password.bytes)
            guard try ExclusiveFileWriter.write(store, to: path, mode: 0o600) else {
                throw KeyStoreError(.alreadyExists, "\(path) already exists; refusing to overwrite a keystore (move it away or choose another path)")
            }
            return certificate
        } catch let error as KeyStoreError {
            throw error
        } catch let error as OpenSSLError where error.function == "dname" {
            throw KeyStoreError(.invalidArgument, error.reasons.joined(separator: "; "))
        } catch {
            throw KeyStoreError(.creationFailed, "could not create keystore \(path): \(error)")
        }
    }
}

/// The Android debug keystore, as the Android build tools make it.
public enum DebugKeyStore {
    public static let alias = "androiddebugkey"
    public static let password = Secret("android")
    public static let distinguishedName = "CN=Android Debug,O=Android,C=US"
    /// 30 years, as the Android Gradle plugin's debug keystore.
    public static let validityDays = 30 * 365

    /// `$ANDROID_USER_HOME/debug.keystore`, else `$HOME/.android/debug.keystore` (the Android SDK's lookup).
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let userHome = environment["ANDROID_USER_HOME"], !userHome.isEmpty { return userHome + "/debug.keystore" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? FileManager.default.homeDirectoryForCurrentUser.path
        return home + "/.android/debug.keystore"
    }

    /// Creates the debug keystore at `path` unless a file is already there. Safe against concurrent
    /// creators: the first to link its file wins and the others use it.
    public static func createIfAbsent(at path: String) throws {
        guard !FileManager.default.fileExists(atPath: path) else { return }
        let directory = path.deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw KeyStoreError(.creationFailed, "cannot create \(directory) for the debug keystore (\(error)); choose another location for it or set HOME", subject: .debugKeyStoreLocation)
            }
        }
        let creator = KeyStoreCreator(path: path, alias: alias, password: password, distinguishedName: distinguishedName,
                                      key: .rsa(bits: 2048), validityDays: validityDays)
        do { try creator.create() } catch let error as KeyStoreError where error.code == .alreadyExists {
            return   // another process made it first: use theirs
        }
    }
}

/// Writes a new file atomically and without replacing an existing one: a temporary file in the same
/// directory (mode set before any byte is written), fsync, then link(2) to the destination, which fails if
/// the name exists. Readers never see a partial keystore.
enum ExclusiveFileWriter {
    /// Returns false (and leaves the existing file alone) when `path` already exists.
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t) throws -> Bool {
        let directory = path.deletingLastPathComponent
        let base = path.lastPathComponent
        let temporary = (directory.isEmpty ? "" : directory + "/") + ".\(base).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            throw KeyStoreError(.creationFailed, "cannot create a file in \(directory.isEmpty ? "." : directory): \(String(cString: strerror(errno)))")
        }
        var linked = false
        defer { if !linked { unlink(temporary) } }
        fchmod(descriptor, mode)   // the umask may have narrowed or (never) widened it
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, bytes.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                close(descriptor)
                throw KeyStoreError(.creationFailed, "cannot write \(path): \(reason)")
            }
            offset += written
        }
        let synced = fsync(descriptor)
        close(descriptor)
        guard synced == 0 else { throw KeyStoreError(.creationFailed, "cannot write \(path): \(String(cString: strerror(errno)))") }
        if link(temporary, path) == 0 {
            unlink(temporary)
            linked = true
            return true
        }
        if errno == EEXIST { return false }
        // Filesystems without hard links: fall back to rename after a last existence check.
        guard !FileManager.default.fileExists(atPath: path) else { return false }
        guard rename(temporary, path) == 0 else {
            throw KeyStoreError(.creationFailed, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        linked = true
        return true
    }
}
