import Foundation
import Testing
import OpenSSLWrapper
import Sign
import TestSupport

/// Keystores made by the real `keytool` at test time, loaded by `KeySource`, checked against
/// `keytool -exportcert`.
@Suite(.removesTemporaryDirectories) struct KeyStoreTests {
    struct KeyCase: CustomStringConvertible, Sendable {
        let storeType: String
        let algorithm: String
        let size: Int
        var description: String { "\(storeType) \(algorithm) \(size)" }
    }

    static let keyCases: [KeyCase] = ["PKCS12", "JKS"].flatMap { type in
        [("RSA", 2048), ("RSA", 4096), ("EC", 256), ("EC", 384), ("DSA", 2048)].map { KeyCase(storeType: type, algorithm: $0.0, size: $0.1) }
    }

    @Test(arguments: keyCases)
    func loadsKeytoolKeystore(_ keyCase: KeyCase) throws {
        let directory = try TestSupport.makeTemporaryDirectory("ks")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.\(keyCase.storeType.lowercased())").path
        try KeytoolFixture.generate(keystore: path, type: keyCase.storeType, alias: "Upload-Key", algorithm: keyCase.algorithm,
                                    size: keyCase.size, storePassword: "st0re-Pass")
        let exported = try KeytoolFixture.exportCertificate(keystore: path, type: keyCase.storeType, alias: "Upload-Key",
                                                            storePassword: "st0re-Pass")

        // No alias: the store holds exactly one key. No type: detected from the magic.
        let signer = try KeySource.keyStore(path: path, type: nil, alias: nil, storePassword: .pass(Secret("st0re-Pass")),
                                            keyPassword: nil).load()
        #expect(signer.certificates.first?.derBytes == exported)
        #expect(signer.name.lowercased() == "upload-key")
        #expect(signer.privateKey.algorithm.rawValue == keyCase.algorithm)
        #expect(signer.privateKey.bitSize == keyCase.size)
        let certificate = try #require(signer.certificates.first)
        #expect(certificate.subjectDN == "CN=Keytool Test, OU=QA, O=Example Corp, L=Berlin, C=DE")

        // With the explicit type and alias (in another case: Java matches aliases case-insensitively).
        let again = try KeySource.keyStore(path: path, type: keyCase.storeType, alias: "upload-key",
                                           storePassword: .pass(Secret("st0re-Pass")), keyPassword: nil).load()
        #expect(again.certificates == signer.certificates)

        // Sign/verify round trip through the certificate's public key.
        let message = Array("signed content".utf8)
        for digest in [DigestAlgorithm.sha256, .sha512] {
            let signature = try signer.privateKey.sign(message, digest: digest)
            let publicKey = try certificate.publicKey()
            #expect(publicKey.verify(signature: signature, data: message, digest: digest))
            #expect(!publicKey.verify(signature: signature, data: message + [0], digest: digest))
            #expect(publicKey.bitSize == keyCase.size)
        }
        // The public key round-trips through SubjectPublicKeyInfo.
        let spki = signer.privateKey.publicKey.subjectPublicKeyInfoDER
        let reparsed = try PublicKey(subjectPublicKeyInfoDER: spki)
        #expect(reparsed.algorithm == signer.privateKey.algorithm)
        #expect(reparsed.verify(signature: try signer.privateKey.sign(message, digest: .sha256), data: message, digest: .sha256))
        // PKCS#8 export re-imports to the same key.
        let reimported = try PrivateKey(derEncoded: try signer.privateKey.pkcs8DER())
        #expect(reimported.matches(certificate))
    }

    @Test(arguments: ["PKCS12", "JKS"])
    func wrongStorePasswordSaysWhatToDoWithoutThePassword(type: String) throws {
        let directory = try TestSupport.makeTemporaryDirectory("ks")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store").path
        try KeytoolFixture.generate(keystore: path, type: type, alias: "k", algorithm: "EC", size: 256, storePassword: "right-password")
        let wrong = "Wr0ng-Passw0rd-XYZ"
        let error = try #require(throws: KeyStoreError.self) {
            try KeySource.keyStore(path: path, type: nil, alias: nil, storePassword: .pass(Secret(wrong)), keyPassword: nil).load()
        }
        #expect(error.code == .wrongStorePassword)
        // Which password was wrong, in the library's terms; `apkpatch sign` adds --ks-pass (SignerOptionsTests).
        #expect(error.subject == .storePassword && !error.description.contains("--"))
        #expect(error.description.contains("wrong password"))
        #expect(!error.description.contains(wrong))
        #expect(!String(describing: error).contains(wrong))
        #expect(!String(reflecting: error).contains(wrong))
    }

    @Test func jksKeyWithItsOwnPasswordNeedsKeyPass() throws {
        let directory = try TestSupport.makeTemporaryDirectory("ks")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.jks").path
        try KeytoolFixture.generate(keystore: path, type: "JKS", alias: "release", algorithm: "RSA", size: 2048,
                                    storePassword: "store-secret", keyPassword: "key-secret-42")
        let missing = try #require(throws: KeyStoreError.self) {
            try KeySource.keyStore(path: path, type: "JKS", alias: "release", storePassword: .pass(Secret("store-secret")),
                                   keyPassword: nil).load()
        }
        #expect(missing.code == .wrongKeyPassword)
        #expect(missing.subject == .keyPassword && missing.description.contains("password of its own"))
        let wrong = try #require(throws: KeyStoreError.self) {
            try KeySource.keyStore(path: path, type: "JKS", alias: "release", storePassword: .pass(Secret("store-secret")),
                                   keyPassword: .pass(Secret("not-the-key-pw"))).load()
        }
        #expect(wrong.code == .wrongKeyPassword)
        #expect(!wrong.description.contains("not-the-key-pw"))
        let signer = try KeySource.keyStore(path: path, type: "JKS", alias: "release", storePassword: .pass(Secret("store-secret")),
                                            keyPassword: .pass(Secret("key-secret-42"))).load()
        let exported = try KeytoolFixture.exportCertificate(keystore: path, type: "JKS", alias: "release", storePassword: "store-secret")
        #expect(signer.certificates.first?.derBytes == exported)

        // apksigner: --ks-pass file:F --key-pass file:F reads the two lines of F.
        let both = directory.appendingPathComponent("passwords.txt").path
        try Data("store-secret\nkey-secret-42\n".utf8).write(to: URL(fileURLWithPath: both))
        let fromFile = try KeySource.keyStore(path: path, type: nil, alias: "release", storePassword: .file(both),
                                              keyPassword: .file(both)).load()
        #expect(fromFile.certificates.first?.derBytes == exported)
    }

    @Test(arguments: ["PKCS12", "JKS"])
    func aliasSelectionListsTheAliases(type: String) throws {
        let directory = try TestSupport.makeTemporaryDirectory("ks")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store").path
        try KeytoolFixture.generate(keystore: path, type: type, alias: "first", algorithm: "EC", size: 256, storePassword: "pw123456",
                                    dname: "CN=First")
        try KeytoolFixture.generate(keystore: path, type: type, alias: "second", algorithm: "RSA", size: 2048, storePassword: "pw123456",
                                    dname: "CN=Second")
        let ambiguous = try #require(throws: KeyStoreError.self) {
            try KeySource.keyStore(path: path, type: nil, alias: nil, storePassword: .pass(Secret("pw123456")), keyPassword: nil).load()
        }
        #expect(ambiguous.code == .aliasRequired)
        #expect(ambiguous.description.contains("\"first\"") && ambiguous.description.contains("\"second\""))
        #expect(ambiguous.subject == .keyAlias && !ambiguous.description.contains("--"))

        let unknown = try #require(throws: KeyStoreError.self) {
            try KeySource.keyStore(path: path, type: nil, alias: "third", storePassword: .pass(Secret("pw123456")), keyPassword: nil).load()
        }
        #expect(unknown.code == .aliasNotFound)
        #expect(unknown.description.contains("\"first\"") && unknown.description.contains("\"second\""))

        let second = try KeySource.keyStore(path: path, type: nil, alias: "SECOND", storePassword: .pass(Secret("pw123456")),
                                            keyPassword: nil).load()
        #expect(second.certificates.first?.subjectDN == "CN=Second")
        #expect(second.privateKey.algorithm == .rsa)
        let first = try KeySource.keyStore(path: path, type: nil, alias: "first", storePassword: .pass(Secret("pw123456")),
                                           keyPassword: nil).load()
        #expect(first.certificates.first?.subjectDN == "CN=First")
        #expect(first.certificates.first?.derBytes
            == (try KeytoolFixture.exportCertificate(keystore: path, type: type, alias: "first", storePassword: "pw123456")))
    }

    @Test func jksWithNonASCIIPassword() throws {
        // JKS keys its digest with Java chars (UTF-16): a UTF-8 password must be converted, not used raw.
        let directory = try TestSupport.makeTemporaryDirectory("ks")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.jks").path
        try KeytoolFixture.generate(keystore: path, type: "JKS", alias: "k", algorithm: "EC", size: 256, storePassword: "pässwörd€")
        let signer = try KeySource.keyStore(path: path, type: nil, alias: nil, storePassword: .pass(Secret("pässwörd€")), keyPassword: nil).load()
        #expect(signer.certificates.first?.derBytes
            == (try KeytoolFixture.exportCertificate(keystore: path, type: "JKS", alias: "k", storePassword: "pässwörd€")))
    }

    /// A key whose certificate was signed by a CA (keytool -certreq / -gencert / -importcert): the chain is
    /// loaded leaf first, and the v1 block over it is byte-identical to apksigner's (certificate SET order).
    @Test(arguments: ["PKCS12", "JKS"])
    func certificateChainAndTrustedEntries(type: String) throws {
        let directory = try TestSupport.makeTemporaryDirectory("chain")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("chain.store").path
        let csr = directory.appendingPathComponent("leaf.csr").path
        let reply = directory.appendingPathComponent("leaf.crt").path
        let common = ["-keystore", store, "-storetype", type, "-storepass", "chain-pw"]
        try KeytoolFixture.generate(keystore: store, type: type, alias: "ca", algorithm: "RSA", size: 2048, storePassword: "chain-pw",
                                    dname: "CN=Example Root CA, O=Example")
        try KeytoolFixture.generate(keystore: store, type: type, alias: "leaf", algorithm: "RSA", size: 2048, storePassword: "chain-pw",
                                    dname: "CN=Release, O=Example")
        for arguments in [["-certreq", "-alias", "leaf", "-file", csr], ["-gencert", "-alias", "ca", "-infile", csr, "-outfile", reply],
                          ["-importcert", "-alias", "leaf", "-file", reply, "-noprompt"],
                          ["-importcert", "-alias", "partner", "-file", reply, "-noprompt"]] {
            let result = try TestSupport.run("keytool", arguments + common)
            #expect(result.succeeded, "\(result)")
        }
        let leafDER = try KeytoolFixture.exportCertificate(keystore: store, type: type, alias: "leaf", storePassword: "chain-pw")
        let caDER = try KeytoolFixture.exportCertificate(keystore: store, type: type, alias: "ca", storePassword: "chain-pw")
        let signer = try KeySource.keyStore(path: store, type: nil, alias: "leaf", storePassword: .pass(Secret("chain-pw")), keyPassword: nil).load()
        #expect(signer.certificates.map(\.derBytes) == [leafDER, caDER])
        #expect(signer.certificates.first?.issuerDN == "CN=Example Root CA, O=Example")

        let opened = try LoadedKeyStore(path: store, type: type, storePassword: .pass(Secret("chain-pw")))
        #expect(Set(opened.keyAliases.map { $0.lowercased() }) == ["ca", "leaf"])
        let partner = try #require(opened.entries.first { $0.alias.lowercased() == "partner" })
        #expect(!partner.isKeyEntry)
        #expect(partner.certificates.map(\.derBytes) == [leafDER])
        let notAKey = try #require(throws: KeyStoreError.self) {
            try opened.signerKey(alias: "partner", keyPassword: nil)
        }
        #expect(notAKey.code == .aliasNotFound)

        // apksigner signs with the whole chain; our block over its .SF must be the same bytes.
        let apk = try FixtureAPK().build(in: directory)
        let signed = directory.appendingPathComponent("signed.apk").path
        let sign = try TestSupport.run("apksigner", ["sign", "--ks", store, "--ks-pass", "pass:chain-pw", "--ks-key-alias", "leaf",
                                                     "--min-sdk-version", "24", "--out", signed, apk])
        #expect(sign.succeeded, "\(sign)")
        let extract = directory.appendingPathComponent("x")
        _ = try TestSupport.run("unzip", ["-o", "-q", signed, "META-INF/*", "-d", extract.path])
        let sf = try TestSupport.readBytes(extract.appendingPathComponent("META-INF/LEAF.SF").path)
        let block = try TestSupport.readBytes(extract.appendingPathComponent("META-INF/LEAF.RSA").path)
        #expect(try PKCS7.makeSignedData(signing: sf, key: signer.privateKey, certificates: signer.certificates, digest: .sha256) == block)
    }

    /// `subjectDN` must print what apksigner prints (Java's X500Name: RDNs reversed, " + " in multi-valued
    /// RDNs, RFC 1779 quoting, Java's keywords) for names keytool writes.
    @Test(arguments: [
        "EMAILADDRESS=a@b.c, CN=x+OU=y, O=\"a;b\", C=US",
        "CN=Hash#Tag, O=Back\\\\slash, L=Quote\\\"d",
        "CN=Ünïcödé 日本, DC=example, DC=com, UID=jdoe",
        "CN=a  b, OU=\" lead\", SERIALNUMBER=123, T=Dr, STREET=Main St 1, ST=CA, DNQ=q",
    ])
    func subjectDNPrintsAsApksigner(dname: String) throws {
        let directory = try TestSupport.makeTemporaryDirectory("dn")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("dn.p12").path
        try KeytoolFixture.generate(keystore: store, type: "PKCS12", alias: "a", algorithm: "EC", size: 256, storePassword: "pw123456",
                                    dname: dname)
        let signer = try KeySource.keyStore(path: store, type: nil, alias: nil, storePassword: .pass(Secret("pw123456")), keyPassword: nil).load()
        let apk = try FixtureAPK().build(in: directory)
        let signed = directory.appendingPathComponent("signed.apk").path
        let sign = try TestSupport.run("apksigner", ["sign", "--ks", store, "--ks-pass", "pass:pw123456", "--out", signed, apk])
        #expect(sign.succeeded, "\(sign)")
        let verify = try TestSupport.run("apksigner", ["verify", "--print-certs", signed])
        let printed = verify.stdout.split(separator: "\n").first { $0.hasPrefix("Signer #1 certificate DN: ") }
            .map { String($0.dropFirst("Signer #1 certificate DN: ".count)) }
        #expect(printed != nil, "\(verify)")
        #expect(signer.certificates.first?.subjectDN == printed)
    }

    @Test func passwordSources() throws {
        let directory = try TestSupport.makeTemporaryDirectory("pw")
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try PasswordSource(parsing: "pass:abc:def") == .pass(Secret("abc:def")))
        #expect(try PasswordSource(parsing: "env:KS_PASS") == .env("KS_PASS"))
        #expect(try PasswordSource(parsing: "file:/tmp/x") == .file("/tmp/x"))
        #expect(try PasswordSource(parsing: "stdin") == .stdin)
        let bad = try #require(throws: KeyStoreError.self) { try PasswordSource(parsing: "hunter2-not-a-spec") }
        #expect(bad.code == .invalidPasswordSpec)
        #expect(!bad.description.contains("hunter2"))

        let variable = "APKPATCH_TEST_PW_\(UUID().uuidString.replacingOccurrences(of: "-", with: "_"))"
        setenv(variable, "from-the-environment", 1)
        defer { unsetenv(variable) }
        #expect(try PasswordSource.env(variable).resolve(prompt: "") == Secret("from-the-environment"))
        let unset = try #require(throws: KeyStoreError.self) { try PasswordSource.env(variable + "_UNSET").resolve(prompt: "") }
        #expect(unset.code == .passwordUnavailable)

        // file: takes the first line, without its terminator (CRLF too).
        let file = directory.appendingPathComponent("pw.txt").path
        try Data("first line pw\r\nsecond line\n".utf8).write(to: URL(fileURLWithPath: file))
        #expect(try PasswordSource.file(file).resolve(prompt: "") == Secret("first line pw"))
        let noFile = try #require(throws: KeyStoreError.self) { try PasswordSource.file(file + ".missing").resolve(prompt: "") }
        #expect(noFile.code == .passwordUnavailable)

        // Secrets never print.
        let secret = Secret("do-not-print-me")
        #expect(String(describing: secret) == "<redacted>")
        #expect("\(secret)" == "<redacted>")
        #expect(!String(reflecting: PasswordSource.pass(secret)).contains("do-not-print-me"))
        var dumped = ""
        dump(PasswordSource.pass(secret), to: &dumped)
        #expect(!dumped.contains("do-not-print-me"))
    }

    @Test func keystoreFromEnvAndFilePasswordSources() throws {
        let directory = try TestSupport.makeTemporaryDirectory("ks")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.p12").path
        try KeytoolFixture.generate(keystore: path, type: "PKCS12", alias: "ci", algorithm: "EC", size: 256, storePassword: "ci-secret-pw")
        let variable = "APKPATCH_TEST_KS_\(UUID().uuidString.replacingOccurrences(of: "-", with: "_"))"
        setenv(variable, "ci-secret-pw", 1)
        defer { unsetenv(variable) }
        let fromEnv = try KeySource.keyStore(path: path, type: nil, alias: nil, storePassword: try PasswordSource(parsing: "env:\(variable)"),
                                             keyPassword: nil).load()
        let passwordFile = directory.appendingPathComponent("pw").path
        try Data("ci-secret-pw\n".utf8).write(to: URL(fileURLWithPath: passwordFile))
        let fromFile = try KeySource.keyStore(path: path, type: nil, alias: nil, storePassword: try PasswordSource(parsing: "file:\(passwordFile)"),
                                              keyPassword: nil).load()
        #expect(fromEnv.certificates == fromFile.certificates)
    }

    @Test func createdKeystoreWorksWithKeytoolAndApksigner() throws {
        let directory = try TestSupport.makeTemporaryDirectory("create")
        defer { try? FileManager.default.removeItem(at: directory) }
        let apk = try FixtureAPK().build(in: directory)
        for (index, spec) in [KeyStoreCreator.KeySpec.rsa(bits: 2048), .ec(curve: "P-256"), .ec(curve: "P-384")].enumerated() {
            let path = directory.appendingPathComponent("made-\(index).p12").path
            let dname = "CN=Jane Doe, OU=Mobile, O=\"Example, Inc.\", L=Zürich, ST=ZH, C=CH"
            let certificate = try KeyStoreCreator(path: path, alias: "upload", password: Secret("creator-pw"),
                                                  distinguishedName: dname, key: spec, validityDays: 365).create()
            #expect(certificate.subjectDN == dname)
            let mode = try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)
            #expect(mode.intValue & 0o777 == 0o600)

            let list = try TestSupport.run("keytool", ["-list", "-v", "-keystore", path, "-storepass", "creator-pw"])
            #expect(list.succeeded, "\(list)")
            #expect(list.stdout.contains("Alias name: upload"), "\(list.stdout)")
            #expect(list.stdout.contains("PrivateKeyEntry"), "\(list.stdout)")
            #expect(list.stdout.uppercased().contains(certificate.fingerprint(.sha256).map { byte in
                String(byte, radix: 16, uppercase: true).count == 1 ? "0" + String(byte, radix: 16, uppercase: true) : String(byte, radix: 16, uppercase: true)
            }.joined(separator: ":")), "\(list.stdout)")
            let exported = try KeytoolFixture.exportCertificate(keystore: path, type: "PKCS12", alias: "upload", storePassword: "creator-pw")
            #expect(exported == certificate.derBytes)

            let signed = directory.appendingPathComponent("signed-\(index).apk").path
            let sign = try TestSupport.run("apksigner", ["sign", "--ks", path, "--ks-pass", "pass:creator-pw", "--out", signed, apk])
            #expect(sign.succeeded, "\(sign)")
            let verify = try TestSupport.run("apksigner", ["verify", "--print-certs", signed])
            #expect(verify.succeeded, "\(verify)")
            // Our subjectDN prints exactly as apksigner prints the DN.
            #expect(verify.stdout.contains("Signer #1 certificate DN: \(certificate.subjectDN)\n"), "\(verify.stdout)")
            #expect(verify.stdout.contains("Signer #1 certificate SHA-256 digest: \(certificate.fingerprint(.sha256).hexString)"))

            // And we load it back.
            let loaded = try KeySource.keyStore(path: path, type: "PKCS12", alias: "upload", storePassword: .pass(Secret("creator-pw")),
                                                keyPassword: nil).load()
            #expect(loaded.certificates == [certificate])

            // Never over an existing file.
            let again = try #require(throws: KeyStoreError.self) {
                try KeyStoreCreator(path: path, alias: "upload", password: Secret("creator-pw"), distinguishedName: "CN=X").create()
            }
            #expect(again.code == .alreadyExists)
            #expect(try TestSupport.readBytes(path) != [])
        }
        let badName = try #require(throws: KeyStoreError.self) {
            try KeyStoreCreator(path: directory.appendingPathComponent("bad.p12").path, alias: "a", password: Secret("123456"),
                                distinguishedName: "Jane Doe").create()
        }
        #expect(badName.code == .invalidArgument && badName.description.contains("CN="))
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("bad.p12").path))
        let short = try #require(throws: KeyStoreError.self) {
            try KeyStoreCreator(path: directory.appendingPathComponent("short.p12").path, alias: "a", password: Secret("12345"),
                                distinguishedName: "CN=X").create()
        }
        #expect(short.code == .invalidArgument)
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("short.p12").path))
    }

    @Test func debugKeystoreIsCreatedOnceWithMode0600() throws {
        let home = try TestSupport.makeTemporaryDirectory("home")
        defer { try? FileManager.default.removeItem(at: home) }
        #expect(DebugKeyStore.defaultPath(environment: ["HOME": home.path]) == home.path + "/.android/debug.keystore")
        #expect(DebugKeyStore.defaultPath(environment: ["HOME": home.path, "ANDROID_USER_HOME": "/x/y"]) == "/x/y/debug.keystore")
        let path = home.path + "/.android/debug.keystore"
        let first = try KeySource.debug(path: path).load()
        let mode = try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)
        #expect(mode.intValue & 0o777 == 0o600)
        #expect(first.name == "androiddebugkey")
        #expect(first.privateKey.algorithm == .rsa && first.privateKey.bitSize == 2048)
        let certificate = try #require(first.certificates.first)
        #expect(certificate.subjectDN == "CN=Android Debug, O=Android, C=US")
        #expect(certificate.notAfterSeconds - certificate.notBeforeSeconds == Int64(DebugKeyStore.validityDays) * 86_400)
        // The second use loads the same key rather than making a new one.
        let second = try KeySource.debug(path: path).load()
        #expect(second.certificates == first.certificates)
        // keytool reads it with Android's well-known alias and password.
        let list = try TestSupport.run("keytool", ["-list", "-keystore", path, "-storepass", "android", "-alias", "androiddebugkey"])
        #expect(list.succeeded, "\(list)")
        #expect(list.stdout.contains("PrivateKeyEntry"))
    }

    @Test func keyAndCertificateFiles() throws {
        let directory = try TestSupport.makeTemporaryDirectory("keycert")
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        func openssl(_ arguments: [String]) throws {
            let result = try TestSupport.run("openssl", arguments)
            #expect(result.succeeded, "\(result)")
        }
        try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path("key.pem")])
        try openssl(["pkcs8", "-topk8", "-nocrypt", "-in", path("key.pem"), "-outform", "DER", "-out", path("release.pk8")])
        try openssl(["pkcs8", "-topk8", "-in", path("key.pem"), "-v2", "aes-256-cbc", "-passout", "pass:key-file-pw",
                     "-out", path("encrypted.pem")])
        try openssl(["pkcs8", "-topk8", "-in", path("key.pem"), "-v2", "aes-256-cbc", "-passout", "pass:key-file-pw",
                     "-outform", "DER", "-out", path("encrypted.pk8")])
        try openssl(["req", "-new", "-x509", "-key", path("key.pem"), "-subj", "/C=US/O=Example/CN=Key File", "-days", "30",
                     "-out", path("cert.pem")])
        try openssl(["x509", "-in", path("cert.pem"), "-outform", "DER", "-out", path("cert.der")])
        let expected = try Certificate.parseAll(pemOrDER: try TestSupport.readBytes(path("cert.der")))
        #expect(expected.count == 1)

        let der = try KeySource.keyAndCertificate(keyPath: path("release.pk8"), certificatePath: path("cert.pem"), keyPassword: nil).load()
        #expect(der.name == "release")
        // The name's bytes, as apksigner reads the file name: up to the first '.', after the last '/', even where
        // a combining mark follows either.
        for (file, name) in [("a.\u{301}b.pk8", "a"), ("\u{301}k.pk8", "\u{301}k")] {
            try FileManager.default.copyItem(atPath: path("release.pk8"), toPath: path(file))
            let named = try KeySource.keyAndCertificate(keyPath: path(file), certificatePath: path("cert.pem"), keyPassword: nil).load()
            #expect(Array(named.name.utf8) == Array(name.utf8), "\(file.debugDescription): \(named.name.debugDescription)")
        }
        #expect(der.certificates == expected)
        #expect(der.certificates.first?.subjectDN == "CN=Key File, O=Example, C=US")
        let pem = try KeySource.keyAndCertificate(keyPath: path("key.pem"), certificatePath: path("cert.der"), keyPassword: nil).load()
        #expect(pem.privateKey.matches(expected[0]))
        for encrypted in ["encrypted.pem", "encrypted.pk8"] {
            let decrypted = try KeySource.keyAndCertificate(keyPath: path(encrypted), certificatePath: path("cert.pem"),
                                                            keyPassword: .pass(Secret("key-file-pw"))).load()
            #expect(decrypted.privateKey.matches(expected[0]))
            let needsPassword = try #require(throws: KeyStoreError.self) {
                try KeySource.keyAndCertificate(keyPath: path(encrypted), certificatePath: path("cert.pem"), keyPassword: nil).load()
            }
            #expect(needsPassword.code == .passwordUnavailable && needsPassword.subject == .keyPassword)
            let wrong = try #require(throws: KeyStoreError.self) {
                try KeySource.keyAndCertificate(keyPath: path(encrypted), certificatePath: path("cert.pem"),
                                                keyPassword: .pass(Secret("bad-key-file-pw"))).load()
            }
            #expect(wrong.code == .wrongKeyPassword && !wrong.description.contains("bad-key-file-pw"))
        }
        // A key that is not the certificate's.
        try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path("other.pem")])
        let mismatch = try #require(throws: KeyStoreError.self) {
            try KeySource.keyAndCertificate(keyPath: path("other.pem"), certificatePath: path("cert.pem"), keyPassword: nil).load()
        }
        #expect(mismatch.code == .keyCertificateMismatch)
    }

    @Test func hostileKeystoreBytesThrowInsteadOfTrapping() throws {
        let directory = try TestSupport.makeTemporaryDirectory("ks")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.jks").path
        try KeytoolFixture.generate(keystore: path, type: "JKS", alias: "k", algorithm: "EC", size: 256, storePassword: "pw123456")
        let bytes = try TestSupport.readBytes(path)
        // Every truncation of a real JKS file must fail cleanly.
        for length in stride(from: 0, to: bytes.count, by: 7) {
            let truncated = directory.appendingPathComponent("t.jks").path
            try Data(bytes.prefix(length)).write(to: URL(fileURLWithPath: truncated))
            #expect(throws: KeyStoreError.self) {
                try KeySource.keyStore(path: truncated, type: nil, alias: nil, storePassword: .pass(Secret("pw123456")), keyPassword: nil).load()
            }
        }
        // The same for a PKCS#12 store and for certificates (DER and PEM).
        let p12Path = directory.appendingPathComponent("store.p12").path
        try KeytoolFixture.generate(keystore: p12Path, type: "PKCS12", alias: "k", algorithm: "EC", size: 256, storePassword: "pw123456")
        let p12 = try TestSupport.readBytes(p12Path)
        for length in stride(from: 0, to: p12.count, by: 13) {
            #expect(throws: KeyStoreError.self) {
                try LoadedKeyStore(bytes: Array(p12.prefix(length)), label: "truncated", type: nil, storePassword: .pass(Secret("pw123456")))
            }
        }
        let certificate = try KeytoolFixture.exportCertificate(keystore: p12Path, type: "PKCS12", alias: "k", storePassword: "pw123456")
        for length in stride(from: 0, to: certificate.count, by: 5) {
            #expect(throws: (any Error).self) { try Certificate.parseAll(pemOrDER: Array(certificate.prefix(length))) }
        }
        #expect(throws: (any Error).self) { try Certificate(derEncoded: certificate + [0]) }
        // PEM with text around it (as `openssl x509 -text` prints), CRLF line ends, and two copies.
        let pem = "-----BEGIN CERTIFICATE-----\r\n" + Data(certificate).base64EncodedString(options: [.lineLength64Characters, .endLineWithCarriageReturn, .endLineWithLineFeed])
            + "\r\n-----END CERTIFICATE-----\r\n"
        let parsed = try Certificate.parseAll(pemOrDER: Array(("Certificate:\n    Data: ...\n" + pem + pem).utf8))
        #expect(parsed.map(\.derBytes) == [certificate, certificate])
        #expect(throws: (any Error).self) { try Certificate.parseAll(pemOrDER: Array("no certificate here".utf8)) }

        // A flipped byte breaks the integrity digest.
        var flipped = bytes
        flipped[40] ^= 0x01
        let flippedPath = directory.appendingPathComponent("f.jks").path
        try Data(flipped).write(to: URL(fileURLWithPath: flippedPath))
        #expect(throws: KeyStoreError.self) {
            try KeySource.keyStore(path: flippedPath, type: nil, alias: nil, storePassword: .pass(Secret("pw123456")), keyPassword: nil).load()
        }
    }
}
