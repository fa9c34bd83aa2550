import APKCore
import Foundation
import OpenSSLWrapper
import Sign
import TestSupport

/// Test keys made at test time with the real `openssl`, loaded through `KeySource` as the CLI loads them.
enum TestKeys {
    enum Kind: String, CaseIterable, Sendable {
        case rsa2048, rsa4096, ecP256, ecP384, dsa2048

        var genpkeyArguments: [String] {
            switch self {
            case .rsa2048: return ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
            case .rsa4096: return ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:4096"]
            case .ecP256: return ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]
            case .ecP384: return ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"]
            case .dsa2048: return []  // generated from parameters, see make(_:in:name:)
            }
        }
    }

    struct Files {
        let keyPK8: String
        let certificatePEM: String
        let key: SignerKey
    }

    /// Generates a key (PKCS#8 DER, as apksigner's --key takes it) and a self-signed certificate in `directory`.
    static func make(_ kind: Kind, in directory: URL, name: String = "release") throws -> Files {
        let pem = directory.appendingPathComponent("\(name).key.pem").path
        let pk8 = directory.appendingPathComponent("\(name).pk8").path
        let cert = directory.appendingPathComponent("\(name).x509.pem").path
        if kind == .dsa2048 {
            let parameters = directory.appendingPathComponent("\(name).dsaparam.pem").path
            try check(try TestSupport.run("openssl", ["genpkey", "-genparam", "-algorithm", "DSA", "-pkeyopt", "dsa_paramgen_bits:2048",
                                                      "-pkeyopt", "dsa_paramgen_q_bits:256", "-out", parameters]))
            try check(try TestSupport.run("openssl", ["genpkey", "-paramfile", parameters, "-out", pem]))
        } else {
            try check(try TestSupport.run("openssl", ["genpkey"] + kind.genpkeyArguments + ["-out", pem]))
        }
        try check(try TestSupport.run("openssl", ["pkcs8", "-topk8", "-nocrypt", "-in", pem, "-outform", "DER", "-out", pk8]))
        try check(try TestSupport.run("openssl", ["req", "-x509", "-new", "-key", pem, "-subj", "/CN=apkpatch test/O=Example/C=US",
                                                  "-days", "3650", "-out", cert]))
        let key = try KeySource.keyAndCertificate(keyPath: pk8, certificatePath: cert, keyPassword: nil).load()
        return Files(keyPK8: pk8, certificatePEM: cert, key: key)
    }

    static func check(_ result: TestSupport.ProcessResult) throws {
        guard result.succeeded else { throw FixtureError(message: "openssl failed:\n\(result)") }
    }
}

/// Raw facts about an APK, read with our own ZIP parser.
struct APKFacts {
    let archive: ZipArchive
    let source: MappedFile

    init(_ path: String) throws {
        source = try MappedFile(path: path)
        archive = try ZipArchive(source: source)
    }

    func rawData(_ name: String) throws -> [UInt8]? {
        guard let entry = archive.entry(named: name) else { return nil }
        return try source.bytes(in: entry.dataRange)
    }

    var signingBlock: SigningBlock? {
        get throws { try SigningBlock.locate(in: source, centralDirectoryOffset: archive.centralDirectoryOffset) }
    }
}
