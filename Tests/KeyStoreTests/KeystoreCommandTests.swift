import Foundation
import Testing
import TestSupport

/// `apkpatch keystore create|list` through the built binary, checked with keytool and apksigner.
@Suite(.removesTemporaryDirectories) struct KeystoreCommandTests {
    struct ListJSON: Decodable {
        struct Entry: Decodable {
            struct CertificateJSON: Decodable {
                let subject: String, issuer: String, serialNumber: String, notBefore: String, notAfter: String
                let sha256: String, sha1: String, keyAlgorithm: String, keySize: Int
            }
            let alias: String
            let entryType: String
            let created: String?
            let certificates: [CertificateJSON]
        }
        let path: String
        let type: String
        let entries: [Entry]
    }

    /// keytool prints "SHA256: AB:CD:…"; return the lower-case hex without colons.
    static func keytoolSHA256(_ output: String) -> [String] {
        output.split(separator: "\n").compactMap { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("SHA256: ") else { return nil }
            return trimmed.dropFirst("SHA256: ".count).replacingOccurrences(of: ":", with: "").lowercased()
        }
    }

    @Test func createThenListRoundTripWithKeytoolAndApksigner() throws {
        let directory = try TestSupport.makeTemporaryDirectory("kscli")
        defer { try? FileManager.default.removeItem(at: directory) }
        let password = "Cli-Known-Secret-314"
        let environment = ["APKPATCH_TEST_KS_PASS": password]
        for (index, (algorithm, size)) in [("RSA", "4096"), ("EC", "384")].enumerated() {
            let path = directory.appendingPathComponent("release-\(index).p12").path
            let create = try TestSupport.apkpatch(["keystore", "create", "--ks", path, "--alias", "upload", "--ks-pass", "env:APKPATCH_TEST_KS_PASS",
                                                   "--dname", "CN=CLI User, O=Example, C=US", "--key-alg", algorithm, "--key-size", size,
                                                   "--validity-days", "9000"], environment: environment)
            #expect(create.succeeded, "\(create)")
            #expect(!create.stdout.contains(password) && !create.stderr.contains(password))
            let mode = try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)
            #expect(mode.intValue & 0o777 == 0o600)

            let list = try TestSupport.apkpatch(["keystore", "list", "--ks", path, "--ks-pass", "env:APKPATCH_TEST_KS_PASS", "--json"],
                                                environment: environment)
            #expect(list.succeeded, "\(list)")
            let report = try JSONDecoder().decode(ListJSON.self, from: Data(list.stdout.utf8))
            #expect(report.type == "PKCS12")
            #expect(report.entries.count == 1)
            let entry = try #require(report.entries.first)
            #expect(entry.alias == "upload")
            #expect(entry.entryType == "PrivateKeyEntry")
            let certificate = try #require(entry.certificates.first)
            #expect(certificate.subject == "CN=CLI User, O=Example, C=US")
            #expect(certificate.keyAlgorithm == algorithm)
            #expect(String(certificate.keySize) == size)

            let keytool = try TestSupport.run("keytool", ["-list", "-v", "-keystore", path, "-storepass", password])
            #expect(keytool.succeeded, "\(keytool)")
            #expect(keytool.stdout.contains("Alias name: upload"))
            #expect(Self.keytoolSHA256(keytool.stdout) == [certificate.sha256])

            let apk = try FixtureAPK().build(in: directory, name: "in-\(index).apk")
            let signed = directory.appendingPathComponent("signed-\(index).apk").path
            let sign = try TestSupport.run("apksigner", ["sign", "--ks", path, "--ks-pass", "env:APKPATCH_TEST_KS_PASS", "--out", signed, apk],
                                           environment: environment)
            #expect(sign.succeeded, "\(sign)")
            let verify = try TestSupport.run("apksigner", ["verify", "--print-certs", signed])
            #expect(verify.succeeded, "\(verify)")
            #expect(verify.stdout.contains("Signer #1 certificate SHA-256 digest: \(certificate.sha256)"), "\(verify.stdout)")
            #expect(verify.stdout.contains("Signer #1 certificate DN: \(certificate.subject)\n"), "\(verify.stdout)")

            // Refuses to overwrite; the file is unchanged.
            let before = try TestSupport.readBytes(path)
            let again = try TestSupport.apkpatch(["keystore", "create", "--ks", path, "--ks-pass", "env:APKPATCH_TEST_KS_PASS", "--dname", "CN=X"],
                                                 environment: environment)
            #expect(!again.succeeded)
            #expect(again.stderr.contains("already exists"), "\(again)")
            #expect(try TestSupport.readBytes(path) == before)
        }
    }

    @Test func listsKeytoolJKSWithSeveralEntries() throws {
        let directory = try TestSupport.makeTemporaryDirectory("kscli")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("legacy.jks").path
        try KeytoolFixture.generate(keystore: path, type: "JKS", alias: "alpha", algorithm: "RSA", size: 2048, storePassword: "jks-pass-1",
                                    dname: "CN=Alpha, O=Example, C=GB")
        try KeytoolFixture.generate(keystore: path, type: "JKS", alias: "beta", algorithm: "EC", size: 256, storePassword: "jks-pass-1",
                                    dname: "CN=Beta, O=Example, C=GB")
        let passwordFile = directory.appendingPathComponent("pass.txt").path
        try Data("jks-pass-1\n".utf8).write(to: URL(fileURLWithPath: passwordFile))
        let list = try TestSupport.apkpatch(["keystore", "list", "--ks", path, "--ks-pass", "file:\(passwordFile)", "--json"])
        #expect(list.succeeded, "\(list)")
        let report = try JSONDecoder().decode(ListJSON.self, from: Data(list.stdout.utf8))
        #expect(report.type == "JKS")
        #expect(Set(report.entries.map(\.alias)) == ["alpha", "beta"])
        #expect(report.entries.allSatisfy { $0.created != nil && $0.entryType == "PrivateKeyEntry" })
        let keytool = try TestSupport.run("keytool", ["-list", "-v", "-keystore", path, "-storepass", "jks-pass-1"])
        #expect(Set(Self.keytoolSHA256(keytool.stdout)) == Set(report.entries.compactMap { $0.certificates.first?.sha256 }))
        let beta = try #require(report.entries.first { $0.alias == "beta" })
        #expect(beta.certificates.first?.subject == "CN=Beta, O=Example, C=GB")

        let text = try TestSupport.apkpatch(["keystore", "list", "--ks", path, "--ks-pass", "file:\(passwordFile)"])
        #expect(text.succeeded, "\(text)")
        #expect(text.stdout.contains("Alias: alpha") && text.stdout.contains("Owner: CN=Alpha, O=Example, C=GB"), "\(text.stdout)")
        #expect(text.stdout.contains("Type: JKS"))
    }

    @Test(arguments: ["PKCS12", "JKS"])
    func wrongPasswordFailsWithoutPrintingIt(type: String) throws {
        let directory = try TestSupport.makeTemporaryDirectory("kscli")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store").path
        try KeytoolFixture.generate(keystore: path, type: type, alias: "k", algorithm: "EC", size: 256, storePassword: "the-right-one")
        let wrong = "Leaky-Wrong-Password-777"
        for spec in ["pass:\(wrong)", "env:APKPATCH_TEST_WRONG"] {
            let result = try TestSupport.apkpatch(["keystore", "list", "--ks", path, "--ks-pass", spec],
                                                  environment: ["APKPATCH_TEST_WRONG": wrong])
            #expect(!result.succeeded)
            #expect(result.stderr.contains("wrong password"), "\(result)")
            #expect(result.stderr.contains("--ks-pass"), "\(result)")
            #expect(!result.stdout.contains(wrong) && !result.stderr.contains(wrong), "\(result)")
        }
        let badSpec = try TestSupport.apkpatch(["keystore", "list", "--ks", path, "--ks-pass", wrong])
        #expect(!badSpec.succeeded)
        #expect(!badSpec.stdout.contains(wrong) && !badSpec.stderr.contains(wrong), "\(badSpec)")
    }
}
