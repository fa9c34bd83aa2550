import APKCore
import Foundation
import TestSupport
import Testing
@testable import Verify

/// Keys made once per test run with the real `keytool`, one PKCS#12 keystore per key type.
enum TestKey: String, CaseIterable, CustomStringConvertible, Sendable {
    case rsa2048, rsa4096, ecP256, ecP384

    var description: String { rawValue }

    var keytoolArguments: [String] {
        switch self {
        case .rsa2048: return ["-keyalg", "RSA", "-keysize", "2048"]
        case .rsa4096: return ["-keyalg", "RSA", "-keysize", "4096"]
        case .ecP256: return ["-keyalg", "EC", "-groupname", "secp256r1"]
        case .ecP384: return ["-keyalg", "EC", "-groupname", "secp384r1"]
        }
    }

    /// The keystore path (created on first use).
    var keystore: String {
        get throws { try TestKeys.shared.get()[self]! }
    }
}

enum TestKeys {
    static let password = "android"
    static let shared: Result<[TestKey: String], Error> = TestSupport.sharedByTests { Result {
        let directory = try TestSupport.makeTemporaryDirectory("verify-keys")
        var paths: [TestKey: String] = [:]
        for key in TestKey.allCases {
            let path = directory.appendingPathComponent("\(key.rawValue).p12").path
            let result = try TestSupport.run("keytool", ["-genkeypair", "-keystore", path, "-storetype", "PKCS12",
                                                         "-storepass", password, "-keypass", password, "-alias", "signer",
                                                         "-dname", "CN=Verify Test \(key.rawValue), O=apkpatch, C=US", "-validity", "3650"] + key.keytoolArguments)
            guard result.succeeded else { throw FixtureError(message: "keytool failed:\n\(result)") }
            paths[key] = path
        }
        return paths
    } }
}

/// Which schemes `apksigner sign` writes.
struct SchemeSet: CustomStringConvertible, Sendable {
    var v1: Bool, v2: Bool, v3: Bool
    var description: String { [v1 ? "v1" : nil, v2 ? "v2" : nil, v3 ? "v3" : nil].compactMap { $0 }.joined(separator: "+") }
    /// The lowest API level a signature with only these schemes can verify on.
    var lowestVerifiableLevel: Int { v1 ? 21 : (v2 ? 24 : 28) }

    static let all = SchemeSet(v1: true, v2: true, v3: true)
    static let combinations: [SchemeSet] = [
        SchemeSet(v1: true, v2: false, v3: false), SchemeSet(v1: false, v2: true, v3: false), SchemeSet(v1: false, v2: false, v3: true),
        SchemeSet(v1: true, v2: true, v3: false), SchemeSet(v1: false, v2: true, v3: true), SchemeSet(v1: true, v2: true, v3: true),
    ]
}

enum VerifyFixtures {
    /// Builds the default fixture (minSdk 21, targetSdk 33) with an extra stored asset, into `directory`.
    static func unsignedAPK(in directory: URL, name: String = "unsigned.apk", configure: (inout FixtureAPK) -> Void = { _ in }) throws -> String {
        var fixture = FixtureAPK()
        fixture.assets["a.txt"] = Array("hello from a\n".utf8)
        fixture.assets["b.txt"] = Array("hello from b\n".utf8)
        fixture.assets["data.bin"] = FixtureAPK.pseudoRandomBytes(count: 5000, seed: 7)
        fixture.storedExtensions = ["bin"]
        configure(&fixture)
        return try fixture.build(in: directory, name: name)
    }

    /// Signs `input` with the real apksigner.
    @discardableResult
    static func sign(_ input: String, key: TestKey, schemes: SchemeSet, output: String, extra: [String] = []) throws -> String {
        let result = try TestSupport.run("apksigner", ["sign", "--ks", try key.keystore, "--ks-pass", "pass:\(TestKeys.password)",
                                                       "--v1-signing-enabled", "\(schemes.v1)", "--v2-signing-enabled", "\(schemes.v2)",
                                                       "--v3-signing-enabled", "\(schemes.v3)", "--v4-signing-enabled", "false",
                                                       "--out", output] + extra + [input])
        guard result.succeeded else { throw FixtureError(message: "apksigner sign failed:\n\(result)") }
        return output
    }

    /// zipalign -p -f 4, so install checks pass.
    static func zipalign(_ input: String, output: String) throws -> String {
        let result = try TestSupport.run("zipalign", ["-p", "-f", "4", input, output])
        guard result.succeeded else { throw FixtureError(message: "zipalign failed:\n\(result)") }
        return output
    }

    /// A signed (v1+v2+v3 unless told otherwise), aligned fixture.
    static func signedAPK(in directory: URL, key: TestKey = .rsa2048, schemes: SchemeSet = .all, extra: [String] = [],
                          configure: (inout FixtureAPK) -> Void = { _ in }) throws -> String {
        let unsigned = try unsignedAPK(in: directory, configure: configure)
        let aligned = try zipalign(unsigned, output: directory.appendingPathComponent("aligned.apk").path)
        return try sign(aligned, key: key, schemes: schemes, output: directory.appendingPathComponent("signed.apk").path, extra: extra)
    }

    struct OracleVerdict {
        var verifies: Bool
        var schemes: Set<String>
        var certificateSHA256: [String]
        var output: String
    }

    /// `apksigner verify -v --print-certs`.
    static func apksignerVerify(_ path: String, minSdkVersion: Int? = nil, maxSdkVersion: Int? = nil) throws -> OracleVerdict {
        var arguments = ["verify", "-v", "--print-certs"]
        if let minSdkVersion { arguments += ["--min-sdk-version", String(minSdkVersion)] }
        if let maxSdkVersion { arguments += ["--max-sdk-version", String(maxSdkVersion)] }
        let result = try TestSupport.run("apksigner", arguments + [path])
        var schemes: Set<String> = []
        var digests: [String] = []
        for line in result.stdout.split(separator: "\n") {
            if line.hasPrefix("Verified using v"), line.hasSuffix(": true") {
                let version = line.dropFirst("Verified using ".count).prefix { $0 != " " }
                schemes.insert(String(version))
            }
            if line.hasPrefix("Signer #"), line.contains("certificate SHA-256 digest: ") {
                digests.append(String(line.split(separator: " ").last!))
            }
        }
        return OracleVerdict(verifies: result.succeeded, schemes: schemes, certificateSHA256: digests, output: result.description)
    }

    static func verify(_ path: String, minSdkVersion: Int? = nil, maxSdkVersion: Int = Int(Int32.max), signatureOnly: Bool = true) throws -> VerificationReport {
        try Verifier(options: VerificationOptions(minSdkVersion: minSdkVersion, maxSdkVersion: maxSdkVersion, checksInstallability: !signatureOnly)).verify(path: path)
    }

    // MARK: - Byte surgery

    static func read(_ path: String) throws -> [UInt8] { try TestSupport.readBytes(path) }
    static func write(_ bytes: [UInt8], to path: String) throws { try Data(bytes).write(to: URL(fileURLWithPath: path)) }

    static func zip(_ bytes: [UInt8]) throws -> ZipArchive { try ZipArchive(source: ByteArrayDataSource(bytes)) }

    /// The same APK with its APK Signing Block replaced by `block` (nil removes it): entries, block, central
    /// directory, EOCD with the central directory offset patched.
    static func replacingSigningBlock(in bytes: [UInt8], with block: [UInt8]?) throws -> [UInt8] {
        let archive = try zip(bytes)
        let cdStart = Int(archive.centralDirectoryOffset)
        let blockStart = Int(try SigningBlock.locate(in: ByteArrayDataSource(bytes), centralDirectoryOffset: archive.centralDirectoryOffset)?.offset ?? archive.centralDirectoryOffset)
        var out = Array(bytes[..<blockStart])
        if let block { out += block }
        let newCDStart = out.count
        out += bytes[cdStart...]
        let eocd = out.count - (bytes.count - Int(archive.endOfCentralDirectory.offset))
        let offset = UInt32(newCDStart).littleEndianBytes
        for i in 0..<4 { out[eocd + 16 + i] = offset[i] }
        return out
    }

    /// The signing block's pairs.
    static func signingBlock(of bytes: [UInt8]) throws -> SigningBlock {
        let archive = try zip(bytes)
        return try #require(try SigningBlock.locate(in: ByteArrayDataSource(bytes), centralDirectoryOffset: archive.centralDirectoryOffset))
    }

    /// ZIP's CRC-32 (for keeping an edited entry's CRC right, so only the signature can notice the edit).
    static func crc32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xffff_ffff
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc >> 1) ^ (0xedb8_8320 & (0 &- (crc & 1))) }
        }
        return ~crc
    }

    /// Changes the first byte of stored entry `name`'s data and fixes both CRC fields.
    static func editingStoredEntry(_ name: String, in bytes: [UInt8]) throws -> [UInt8] {
        var out = bytes
        let archive = try zip(bytes)
        let entry = try #require(archive.entry(named: name))
        #expect(!entry.isCompressed, "\(name) must be stored for this edit")
        out[Int(entry.dataOffset)] ^= 0x01
        let crc = crc32(out[Int(entry.dataRange.lowerBound)..<Int(entry.dataRange.upperBound)]).littleEndianBytes
        for i in 0..<4 { out[Int(entry.localHeaderOffset) + 14 + i] = crc[i] }
        // Find this entry's central directory record by its local header offset.
        var position = Int(archive.centralDirectoryOffset)
        for _ in archive.entries {
            let nameLength = Int(out[position + 28]) | Int(out[position + 29]) << 8
            let extraLength = Int(out[position + 30]) | Int(out[position + 31]) << 8
            let commentLength = Int(out[position + 32]) | Int(out[position + 33]) << 8
            let offset = Int(out[position + 42]) | Int(out[position + 43]) << 8 | Int(out[position + 44]) << 16 | Int(out[position + 45]) << 24
            if offset == Int(entry.localHeaderOffset) {
                for i in 0..<4 { out[position + 16 + i] = crc[i] }
            }
            position += 46 + nameLength + extraLength + commentLength
        }
        return out
    }

    static func codes(_ issues: [Verify.Issue]) -> Set<String> { Set(issues.map(\.code.rawValue)) }
}
