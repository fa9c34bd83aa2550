import Foundation
import Testing
import OpenSSLWrapper
import Sign
import TestSupport

/// Keystores in the forms apksigner (Java's KeyStore) opens, made at test time by openssl and keytool: old-style
/// PKCS#12 (RC2 and RC4, which OpenSSL 3 keeps in its legacy provider, 3DES, SHA-1 MACs), PBES2 with every PRF Java
/// writes, stores without a MAC or with unencrypted bags, two-password stores and JCEKS. `apkpatch sign` with each
/// store must write apksigner's bytes with the same store (RSA signatures are deterministic), and `keystore list`
/// must list it.
@Suite(.removesTemporaryDirectories) struct KeyStoreFormatTests {
    struct StoreCase: CustomStringConvertible, Sendable {
        enum Maker: Sendable {
            /// `openssl pkcs12 -export` of an RSA-2048 key with these options (passwords from the environment).
            case openssl([String])
            /// `openssl pkcs12 -export -twopass`: the store (MAC) password and the encryption password typed apart.
            case opensslTwoPass([String])
            /// `keytool -genkeypair` (RSA 2048) with these leading options (-J-D… properties, -storetype).
            case keytool([String], keyPassword: Bool)
        }
        let label: String
        let maker: Maker
        /// What `openssl pkcs12 -info` says about the store, to prove the fixture is what the label says.
        let shows: [String]
        /// apksigner opens it (Java refuses certificates encrypted with another password than the store's).
        var apksignerOpens = true
        /// A PKCS#12 store whose every key (MAC, safes, bags) PKCS12Decryption derives in one PasswordKDF call; the
        /// other PKCS#12 stores are read by OpenSSL's functions. JCEKS is neither.
        var readsWithDerivedKeys = false
        var description: String { label }

        var isJCEKS: Bool { if case .keytool(let arguments, _) = maker { arguments.contains("JCEKS") } else { false } }

        var keyPassword: String? {
            switch maker {
            case .opensslTwoPass: "enc-Pass-2"
            case .keytool(_, let keyPassword): keyPassword ? "key-Pass-3" : nil
            case .openssl: nil
            }
        }
    }

    static let storePassword = "st0re-Pass-1"

    static let cases: [StoreCase] = [
        StoreCase(label: "openssl -legacy (RC2-40 certificates, 3DES key, SHA-1 MAC)", maker: .openssl(["-legacy"]),
                  shows: ["pbeWithSHA1And40BitRC2-CBC", "pbeWithSHA1And3-KeyTripleDES-CBC", "MAC: sha1"], readsWithDerivedKeys: true),
        StoreCase(label: "RC4-128 key, RC2-128 certificates", maker: .openssl(["-legacy", "-keypbe", "PBE-SHA1-RC4-128", "-certpbe", "PBE-SHA1-RC2-128"]),
                  shows: ["pbeWithSHA1And128BitRC4", "pbeWithSHA1And128BitRC2-CBC"], readsWithDerivedKeys: true),
        StoreCase(label: "RC4-40 key, no MAC (-nomac leaves the certificates unencrypted)",
                  maker: .openssl(["-legacy", "-keypbe", "PBE-SHA1-RC4-40", "-certpbe", "PBE-SHA1-RC2-40", "-nomac"]),
                  shows: ["pbeWithSHA1And40BitRC4", "MAC is absent", "PKCS7 Data\nCertificate bag"], readsWithDerivedKeys: true),
        // Java reads neither 2-key 3DES, nor AES-192 in PBES2, nor a key bag that is not shrouded: we do.
        StoreCase(label: "2-key 3DES key, 3DES certificates, SHA-1 MAC", maker: .openssl(["-keypbe", "PBE-SHA1-2DES", "-certpbe", "PBE-SHA1-3DES", "-macalg", "sha1"]),
                  shows: ["pbeWithSHA1And2-KeyTripleDES-CBC", "pbeWithSHA1And3-KeyTripleDES-CBC", "MAC: sha1"], apksignerOpens: false,
                  readsWithDerivedKeys: true),
        StoreCase(label: "AES-192 key, AES-128 certificates", maker: .openssl(["-keypbe", "AES-192-CBC", "-certpbe", "AES-128-CBC"]),
                  shows: ["AES-192-CBC", "AES-128-CBC"], apksignerOpens: false, readsWithDerivedKeys: true),
        StoreCase(label: "AES-128 key, AES-256 certificates, SHA-512 MAC", maker: .openssl(["-keypbe", "AES-128-CBC", "-certpbe", "AES-256-CBC", "-macalg", "sha512"]),
                  shows: ["AES-128-CBC", "AES-256-CBC", "MAC: sha512"]),
        StoreCase(label: "no MAC, unencrypted certificates", maker: .openssl(["-nomac", "-certpbe", "NONE"]),
                  shows: ["PKCS7 Data\nCertificate bag"], readsWithDerivedKeys: true),
        StoreCase(label: "unencrypted key bag, SHA-384 MAC", maker: .openssl(["-keypbe", "NONE", "-macalg", "sha384"]),
                  shows: ["Key bag", "MAC: sha384"], apksignerOpens: false),
        StoreCase(label: "openssl -twopass, unencrypted certificates", maker: .opensslTwoPass(["-certpbe", "NONE"]), shows: [],
                  readsWithDerivedKeys: true),
        StoreCase(label: "openssl -twopass, certificates encrypted with the second password", maker: .opensslTwoPass([]), shows: [],
                  apksignerOpens: false),
        StoreCase(label: "keytool legacy PKCS12 (Java 8's algorithms)", maker: .keytool(["-J-Dkeystore.pkcs12.legacy", "-storetype", "PKCS12"], keyPassword: false),
                  shows: ["pbeWithSHA1And40BitRC2-CBC", "pbeWithSHA1And3-KeyTripleDES-CBC", "MAC: sha1"], readsWithDerivedKeys: true),
        StoreCase(label: "keytool HMAC-SHA1 AES-128 key, HMAC-SHA224 AES-256 certificates, SHA-384 MAC",
                  maker: .keytool(["-J-Dkeystore.pkcs12.keyProtectionAlgorithm=PBEWithHmacSHA1AndAES_128",
                                   "-J-Dkeystore.pkcs12.certProtectionAlgorithm=PBEWithHmacSHA224AndAES_256",
                                   "-J-Dkeystore.pkcs12.macAlgorithm=HmacPBESHA384", "-storetype", "PKCS12"], keyPassword: false),
                  shows: ["PRF hmacWithSHA1", "PRF hmacWithSHA224", "MAC: sha384"]),
        StoreCase(label: "keytool HMAC-SHA384 AES-256 key, HMAC-SHA512 AES-128 certificates, SHA-512 MAC",
                  maker: .keytool(["-J-Dkeystore.pkcs12.keyProtectionAlgorithm=PBEWithHmacSHA384AndAES_256",
                                   "-J-Dkeystore.pkcs12.certProtectionAlgorithm=PBEWithHmacSHA512AndAES_128",
                                   "-J-Dkeystore.pkcs12.macAlgorithm=HmacPBESHA512", "-storetype", "PKCS12"], keyPassword: false),
                  shows: ["PRF hmacWithSHA384", "PRF hmacWithSHA512", "MAC: sha512"]),
        StoreCase(label: "keytool RC4-128 key, RC2-128 certificates, SHA-224 MAC",
                  maker: .keytool(["-J-Dkeystore.pkcs12.keyProtectionAlgorithm=PBEWithSHA1AndRC4_128",
                                   "-J-Dkeystore.pkcs12.certProtectionAlgorithm=PBEWithSHA1AndRC2_128",
                                   "-J-Dkeystore.pkcs12.macAlgorithm=HmacPBESHA224", "-storetype", "PKCS12"], keyPassword: false),
                  shows: ["pbeWithSHA1And128BitRC4", "pbeWithSHA1And128BitRC2-CBC", "MAC: sha224"]),
        StoreCase(label: "keytool RC4-40 key, unencrypted certificates, no MAC",
                  maker: .keytool(["-J-Dkeystore.pkcs12.keyProtectionAlgorithm=PBEWithSHA1AndRC4_40",
                                   "-J-Dkeystore.pkcs12.certProtectionAlgorithm=NONE",
                                   "-J-Dkeystore.pkcs12.macAlgorithm=NONE", "-storetype", "PKCS12"], keyPassword: false),
                  shows: ["pbeWithSHA1And40BitRC4", "MAC is absent", "PKCS7 Data\nCertificate bag"], readsWithDerivedKeys: true),
        StoreCase(label: "keytool 3DES key, RC2-40 certificates, no MAC",
                  maker: .keytool(["-J-Dkeystore.pkcs12.keyProtectionAlgorithm=PBEWithSHA1AndDESede",
                                   "-J-Dkeystore.pkcs12.certProtectionAlgorithm=PBEWithSHA1AndRC2_40",
                                   "-J-Dkeystore.pkcs12.macAlgorithm=NONE", "-storetype", "PKCS12"], keyPassword: false),
                  shows: ["pbeWithSHA1And3-KeyTripleDES-CBC", "pbeWithSHA1And40BitRC2-CBC", "MAC is absent"], readsWithDerivedKeys: true),
        StoreCase(label: "keytool JCEKS", maker: .keytool(["-storetype", "JCEKS"], keyPassword: false), shows: []),
        StoreCase(label: "keytool JCEKS, key with its own password", maker: .keytool(["-storetype", "JCEKS"], keyPassword: true), shows: []),
    ]

    /// Makes the store of `storeCase` in `directory`; the passwords never go on a command line.
    static func make(_ storeCase: StoreCase, in directory: URL) throws -> String {
        let store = directory.appendingPathComponent("store").path
        let environment = ["APKPATCH_TEST_KS_PASS": storePassword, "APKPATCH_TEST_KEY_PASS": storeCase.keyPassword ?? storePassword]
        func openssl(_ arguments: [String], stdin: String? = nil) throws {
            let result = try TestSupport.run("openssl", arguments, environment: environment, stdin: stdin)
            guard result.succeeded else { throw FixtureError(message: "openssl \(arguments.first ?? "") failed:\n\(result)") }
        }
        switch storeCase.maker {
        case .openssl(let options), .opensslTwoPass(let options):
            let key = directory.appendingPathComponent("key.pem").path, certificate = directory.appendingPathComponent("cert.pem").path
            try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key])
            try openssl(["req", "-new", "-x509", "-key", key, "-subj", "/O=Example/CN=Old Release Key", "-days", "3650", "-out", certificate])
            let export = ["pkcs12", "-export", "-in", certificate, "-inkey", key, "-name", "release", "-out", store] + options
            if case .opensslTwoPass = storeCase.maker {
                // -twopass reads both passwords at a prompt (MAC first, then encryption), from standard input when
                // there is no terminal: setsid takes the terminal away.
                let result = try TestSupport.run("setsid", ["-w", "openssl"] + export + ["-twopass"],
                                                 stdin: "\(storePassword)\n\(storePassword)\n\(storeCase.keyPassword!)\n\(storeCase.keyPassword!)\n")
                guard result.succeeded else { throw FixtureError(message: "openssl pkcs12 -twopass failed:\n\(result)") }
            } else {
                try openssl(export + ["-passout", "env:APKPATCH_TEST_KS_PASS"])
            }
        case .keytool(let options, _):
            let result = try TestSupport.run("keytool", options + ["-genkeypair", "-keystore", store, "-alias", "release", "-keyalg", "RSA",
                                                                   "-keysize", "2048", "-validity", "3650", "-dname", "CN=Old Release Key, O=Example",
                                                                   "-storepass:env", "APKPATCH_TEST_KS_PASS", "-keypass:env", "APKPATCH_TEST_KEY_PASS"],
                                             environment: environment)
            guard result.succeeded else { throw FixtureError(message: "keytool -genkeypair failed:\n\(result)") }
        }
        return store
    }

    /// The password options, and --ks-type for JCEKS (apksigner takes a store of any other type than the JVM's
    /// default, PKCS12, only when told).
    static func passwordOptions(_ storeCase: StoreCase) -> [String] {
        var options = ["--ks-pass", "env:APKPATCH_TEST_KS_PASS"] + (storeCase.keyPassword == nil ? [] : ["--key-pass", "env:APKPATCH_TEST_KEY_PASS"])
        if case .keytool(let arguments, _) = storeCase.maker, arguments.contains("JCEKS") { options += ["--ks-type", "JCEKS"] }
        return options
    }

    static func environment(_ storeCase: StoreCase) -> [String: String] {
        ["APKPATCH_TEST_KS_PASS": storePassword, "APKPATCH_TEST_KEY_PASS": storeCase.keyPassword ?? ""]
    }

    @Test(arguments: cases)
    func signsAsApksignerDoesWithTheSameStore(_ storeCase: StoreCase) throws {
        let directory = try TestSupport.makeTemporaryDirectory("ks-format")
        let store = try Self.make(storeCase, in: directory)
        if !storeCase.shows.isEmpty {
            let info = try TestSupport.run("openssl", ["pkcs12", "-info", "-noout", "-legacy", "-in", store, "-passin", "env:APKPATCH_TEST_KS_PASS"],
                                           environment: Self.environment(storeCase))
            for text in storeCase.shows { #expect((info.stdout + info.stderr).contains(text), "\(storeCase): \(info)") }
        }
        if !storeCase.isJCEKS {
            // Read with every key derived together where the store's schemes allow it, and the same entries as
            // OpenSSL's own reading.
            let bytes = try TestSupport.readBytes(store)
            let password = Array(Self.storePassword.utf8), keyPassword = storeCase.keyPassword.map { Array($0.utf8) }
            let together = try PKCS12.read(bytes, password: password, keyPassword: keyPassword)
            let openSSL = try PKCS12.read(bytes, password: password, keyPassword: keyPassword, derivingTogether: false)
            #expect(together.decryption == (storeCase.readsWithDerivedKeys ? .derivedTogether : .openSSL), "\(storeCase)")
            #expect(try PasswordKDFTests.sameEntries(together.entries, openSSL.entries), "\(storeCase)")
        }
        let apk = try FixtureAPK().build(in: directory)
        let environment = Self.environment(storeCase)
        let ours = directory.appendingPathComponent("ours.apk").path, theirs = directory.appendingPathComponent("theirs.apk").path
        let sign = try TestSupport.apkpatch(["sign", "--ks", store] + Self.passwordOptions(storeCase)
                                            + ["--alignment-preserved", "true", "--misaligned-apk-permitted", "true", "--lib-page-alignment", "4096",
                                               "--v4-signing-enabled", "false", "--out", ours, apk], environment: environment)
        #expect(sign.succeeded, "\(storeCase): \(sign)")
        for secret in [Self.storePassword, storeCase.keyPassword].compactMap({ $0 }) {
            #expect(!sign.stdout.contains(secret) && !sign.stderr.contains(secret))
        }
        let verify = try TestSupport.run("apksigner", ["verify", "--print-certs", ours])
        #expect(verify.succeeded && verify.stdout.contains("CN=Old Release Key, O=Example"), "\(storeCase): \(verify)")

        let apksigner = try TestSupport.run("apksigner", ["sign", "--ks", store] + Self.passwordOptions(storeCase)
                                                         + ["--v4-signing-enabled", "false", "--out", theirs, apk], environment: environment)
        if storeCase.apksignerOpens {
            #expect(apksigner.succeeded, "\(storeCase): \(apksigner)")
            #expect(try TestSupport.readBytes(ours) == (try TestSupport.readBytes(theirs)), "\(storeCase)")
        } else {
            #expect(!apksigner.succeeded, "\(storeCase): apksigner opens it now: \(apksigner)")
        }

        // keystore list: the key entry and its certificate, as in the signed APK; a key with a password of its own
        // is listed with the store password alone.
        let list = try TestSupport.apkpatch(["keystore", "list", "--ks", store, "--ks-pass", "env:APKPATCH_TEST_KS_PASS", "--json"]
                                            + (storeCase.label.hasPrefix("openssl -twopass, certificates encrypted") ? ["--key-pass", "env:APKPATCH_TEST_KEY_PASS"] : []),
                                            environment: environment)
        #expect(list.succeeded, "\(storeCase): \(list)")
        let digest = verify.stdout.split(separator: "\n").first { $0.hasPrefix("Signer #1 certificate SHA-256 digest: ") }
            .map { String($0.split(separator: " ").last!) }
        #expect(digest != nil && list.stdout.contains(digest!) && list.stdout.contains("PrivateKeyEntry"), "\(storeCase): \(list)")
    }

    /// Each password that is wrong is named, in the library's terms and by `apkpatch sign`'s option, without
    /// being echoed.
    @Test(arguments: cases.filter { ["openssl -legacy (RC2-40 certificates, 3DES key, SHA-1 MAC)", "openssl -twopass, unencrypted certificates",
                                     "openssl -twopass, certificates encrypted with the second password", "keytool JCEKS, key with its own password",
                                     "keytool 3DES key, RC2-40 certificates, no MAC", "RC4-40 key, no MAC (-nomac leaves the certificates unencrypted)"].contains($0.label) })
    func wrongPasswordsAreNamed(_ storeCase: StoreCase) throws {
        let directory = try TestSupport.makeTemporaryDirectory("ks-format-wrong")
        let store = try Self.make(storeCase, in: directory)
        let wrong = "Wr0ng-Pass-XYZ"
        let wrongStore = try #require(throws: KeyStoreError.self) {
            try LoadedKeyStore(path: store, type: nil, storePassword: .pass(Secret(wrong)),
                               keyPassword: storeCase.keyPassword.map { .pass(Secret($0)) }).signerKey(alias: nil, keyPassword: storeCase.keyPassword.map { .pass(Secret($0)) })
        }
        #expect(wrongStore.code == .wrongStorePassword && wrongStore.subject == .storePassword, "\(storeCase): \(wrongStore)")
        #expect(!wrongStore.description.contains(wrong))

        let apk = try FixtureAPK().build(in: directory)
        let out = directory.appendingPathComponent("out.apk").path
        let environment = ["APKPATCH_TEST_KS_PASS": Self.storePassword, "APKPATCH_TEST_WRONG": wrong]
        let badStore = try TestSupport.apkpatch(["sign", "--ks", store, "--ks-pass", "env:APKPATCH_TEST_WRONG", "--out", out, apk], environment: environment)
        #expect(!badStore.succeeded && badStore.stderr.contains("wrong password") && badStore.stderr.contains("--ks-pass"), "\(storeCase): \(badStore)")
        #expect(!badStore.stderr.contains(wrong) && !badStore.stdout.contains(wrong))
        #expect(!FileManager.default.fileExists(atPath: out))

        guard storeCase.keyPassword != nil else { return }
        // The store password right, the key's own password missing or wrong: the key password is named.
        for keyOptions in [[], ["--key-pass", "env:APKPATCH_TEST_WRONG"]] {
            let badKey = try TestSupport.apkpatch(["sign", "--ks", store, "--ks-pass", "env:APKPATCH_TEST_KS_PASS"] + keyOptions + ["--out", out, apk],
                                                  environment: environment)
            #expect(!badKey.succeeded && badKey.stderr.contains("--key-pass") && !badKey.stderr.contains("--ks-pass"), "\(storeCase) \(keyOptions): \(badKey)")
            #expect(!badKey.stderr.contains(wrong) && !badKey.stderr.contains(Self.storePassword))
            #expect(!FileManager.default.fileExists(atPath: out))
        }
    }

    /// Key types and sizes apksigner signs with, in PKCS#12 (OpenSSL's legacy form) and JCEKS: EC and DSA
    /// signatures are randomised, so apksigner's verification with the certificate's digest is the proof.
    @Test(arguments: [("EC", 521, "JCEKS"), ("EC", 521, "PKCS12"), ("DSA", 2048, "JCEKS"), ("RSA", 1024, "JCEKS"), ("RSA", 8192, "PKCS12"),
                      ("EC", 384, "JCEKS")] as [(String, Int, String)])
    func keyTypesInEveryStore(algorithm: String, size: Int, type: String) throws {
        let directory = try TestSupport.makeTemporaryDirectory("ks-keytypes")
        let store = directory.appendingPathComponent("store").path
        var arguments = ["-genkeypair", "-keystore", store, "-storetype", type, "-alias", "release", "-keyalg", algorithm,
                         "-validity", "3650", "-dname", "CN=\(algorithm) \(size)", "-storepass:env", "APKPATCH_TEST_KS_PASS"]
        if type == "PKCS12" { arguments = ["-J-Dkeystore.pkcs12.legacy"] + arguments }
        arguments += algorithm == "EC" ? ["-groupname", size == 521 ? "secp521r1" : "secp384r1"] : ["-keysize", String(size)]
        if algorithm == "DSA" { arguments += ["-sigalg", "SHA256withDSA"] }
        let environment = ["APKPATCH_TEST_KS_PASS": Self.storePassword]
        let made = try TestSupport.run("keytool", arguments, environment: environment)
        #expect(made.succeeded, "\(made)")
        let key = try KeySource.keyStore(path: store, type: nil, alias: nil, storePassword: .pass(Secret(Self.storePassword)), keyPassword: nil).load()
        #expect(key.privateKey.algorithm.rawValue == algorithm && key.privateKey.bitSize == size)
        let exported = try KeytoolFixture.exportCertificate(keystore: store, type: type, alias: "release", storePassword: Self.storePassword)
        #expect(key.certificates.first?.derBytes == exported)

        let apk = try FixtureAPK().build(in: directory)
        let out = directory.appendingPathComponent("out.apk").path
        let sign = try TestSupport.apkpatch(["sign", "--ks", store, "--ks-pass", "env:APKPATCH_TEST_KS_PASS", "--out", out, apk], environment: environment)
        #expect(sign.succeeded, "\(sign)")
        let verify = try TestSupport.run("apksigner", ["verify", "-v", "--print-certs", out])
        #expect(verify.succeeded, "\(verify)")
        let digest = try #require(key.certificates.first).fingerprint(.sha256).hexString
        #expect(verify.stdout.contains("Signer #1 certificate SHA-256 digest: \(digest)"), "\(verify)")
    }

    /// A JCEKS store whose secret keys (serialized Java objects) sit before and after the signing key: each is
    /// stepped over, listed as keytool lists it, and the integrity digest still covers every byte.
    @Test func jceksSecretKeyEntriesAreSteppedOver() throws {
        let directory = try TestSupport.makeTemporaryDirectory("ks-jceks-secret")
        let store = directory.appendingPathComponent("mixed.jceks").path
        let environment = ["APKPATCH_TEST_KS_PASS": Self.storePassword]
        func keytool(_ arguments: [String]) throws {
            let result = try TestSupport.run("keytool", arguments + ["-keystore", store, "-storetype", "JCEKS", "-storepass:env", "APKPATCH_TEST_KS_PASS",
                                                                     "-keypass:env", "APKPATCH_TEST_KS_PASS"], environment: environment)
            #expect(result.succeeded, "\(arguments): \(result)")
        }
        try keytool(["-genseckey", "-alias", "aes-before", "-keyalg", "AES", "-keysize", "256"])
        try keytool(["-genseckey", "-alias", "hmac", "-keyalg", "HmacSHA256", "-keysize", "256"])
        try keytool(["-genkeypair", "-alias", "release", "-keyalg", "RSA", "-keysize", "2048", "-dname", "CN=Mixed", "-validity", "3650"])
        try keytool(["-genseckey", "-alias", "des-after", "-keyalg", "DESede"])
        let listed = try TestSupport.run("keytool", ["-list", "-keystore", store, "-storetype", "JCEKS", "-storepass:env", "APKPATCH_TEST_KS_PASS"],
                                         environment: environment)
        #expect(listed.stdout.contains("Your keystore contains 4 entries"), "\(listed)")

        let opened = try LoadedKeyStore(path: store, type: nil, storePassword: .pass(Secret(Self.storePassword)))
        #expect(opened.type == .jceks)
        #expect(Set(opened.entries.map(\.alias)) == ["aes-before", "hmac", "release", "des-after"])
        #expect(opened.entries.filter(\.isSecretKeyEntry).count == 3 && opened.keyAliases == ["release"])
        let key = try opened.signerKey(alias: nil, keyPassword: nil)
        #expect(key.certificates.first?.subjectDN == "CN=Mixed")

        let list = try TestSupport.apkpatch(["keystore", "list", "--ks", store, "--ks-pass", "env:APKPATCH_TEST_KS_PASS"], environment: environment)
        #expect(list.succeeded && list.stdout.components(separatedBy: "SecretKeyEntry").count == 4 && list.stdout.contains("Type: JCEKS"), "\(list)")

        // One byte changed inside a sealed key: the digest over the whole store no longer matches.
        let original = try TestSupport.readBytes(store)
        var bytes = original
        let sealed = try #require(bytes.indices.dropLast(40).first { bytes[$0] == 0xac && bytes[$0 + 1] == 0xed && bytes[$0 + 2] == 0x00 && bytes[$0 + 3] == 0x05 })
        bytes[sealed + 60] ^= 0x01
        let changed = try #require(throws: KeyStoreError.self) {
            try LoadedKeyStore(bytes: bytes, label: "changed", type: nil, storePassword: .pass(Secret(Self.storePassword)))
        }
        #expect(changed.code == .wrongStorePassword || changed.code == .malformed, "\(changed)")
        // Cut short anywhere inside: an error, never a trap.
        for length in stride(from: 8, to: original.count, by: 7) {
            #expect(throws: KeyStoreError.self) {
                try LoadedKeyStore(bytes: Array(original.prefix(length)), label: "cut", type: nil,
                                   storePassword: .pass(Secret(Self.storePassword)))
            }
        }
    }

    /// `--key` PKCS#8 files in every encryption `openssl pkcs8 -topk8` writes, DER and PEM; the legacy ones (PBES1
    /// with DES or RC2, PKCS#12's RC2 and RC4 PBE, PBES2 with DES-CBC or RC2-CBC) by our own code. apksigner reads DER only, and of that what
    /// Java's EncryptedPrivateKeyInfo knows: with those, the output is apksigner's bytes.
    @Test func encryptedPKCS8KeysInEveryForm() throws {
        let directory = try TestSupport.makeTemporaryDirectory("pkcs8-forms")
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        func openssl(_ arguments: [String]) throws {
            let result = try TestSupport.run("openssl", arguments, environment: ["APKPATCH_TEST_KEY_PASS": "pkcs8-Pass-4"])
            guard result.succeeded else { throw FixtureError(message: "openssl \(arguments.prefix(2)) failed:\n\(result)") }
        }
        try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path("key.pem")])
        try openssl(["req", "-new", "-x509", "-key", path("key.pem"), "-subj", "/CN=PKCS8 Key", "-days", "3650", "-out", path("cert.pem")])
        try openssl(["x509", "-in", path("cert.pem"), "-outform", "DER", "-out", path("cert.der")])
        let apk = try FixtureAPK().build(in: directory)
        let environment = ["APKPATCH_TEST_KEY_PASS": "pkcs8-Pass-4", "APKPATCH_TEST_WRONG": "Wr0ng-Pass-XYZ"]
        let forms: [(options: [String], apksignerReadsDER: Bool)] = [
            (["-v2", "aes-256-cbc"], false), (["-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA512"], false), (["-v2", "des3"], false),
            (["-scrypt"], false), (["-v1", "PBE-SHA1-3DES"], true), (["-v1", "PBE-SHA1-2DES"], false),
            (["-v1", "PBE-SHA1-RC2-40"], true), (["-v1", "PBE-SHA1-RC2-128"], true), (["-v1", "PBE-SHA1-RC4-40"], true),
            (["-v1", "PBE-SHA1-RC4-128"], true), (["-v1", "PBE-MD5-DES"], true), (["-v1", "PBE-SHA1-DES"], false),
            (["-v1", "PBE-MD5-RC2-64"], false), (["-v1", "PBE-SHA1-RC2-64"], false),
            (["-v2", "des-cbc"], false), (["-v2", "rc2-cbc"], false), (["-v2", "rc2-40-cbc", "-v2prf", "hmacWithSHA256"], false),
        ]
        for (index, form) in forms.enumerated() {
            for outputForm in ["DER", "PEM"] {
                let label = "\(form.options.joined(separator: " ")) \(outputForm)"
                let key = path("key-\(index).\(outputForm.lowercased())")
                try openssl(["pkcs8", "-topk8", "-in", path("key.pem"), "-passout", "env:APKPATCH_TEST_KEY_PASS", "-outform", outputForm,
                             "-out", key, "-provider", "legacy", "-provider", "default"] + form.options)
                let ours = path("ours-\(index)-\(outputForm).apk"), theirs = path("theirs-\(index)-\(outputForm).apk")
                let sign = try TestSupport.apkpatch(["sign", "--key", key, "--cert", path("cert.pem"), "--key-pass", "env:APKPATCH_TEST_KEY_PASS",
                                                     "--alignment-preserved", "true", "--misaligned-apk-permitted", "true", "--lib-page-alignment", "4096",
                                                     "--v4-signing-enabled", "false", "--out", ours, apk], environment: environment)
                #expect(sign.succeeded, "\(label): \(sign)")
                let verify = try TestSupport.run("apksigner", ["verify", "--print-certs", ours])
                #expect(verify.succeeded && verify.stdout.contains("CN=PKCS8 Key"), "\(label): \(verify)")
                if form.apksignerReadsDER && outputForm == "DER" {
                    let apksigner = try TestSupport.run("apksigner", ["sign", "--key", key, "--cert", path("cert.der"), "--key-pass", "env:APKPATCH_TEST_KEY_PASS",
                                                                     "--v4-signing-enabled", "false", "--out", theirs, apk], environment: environment)
                    #expect(apksigner.succeeded, "\(label): \(apksigner)")
                    #expect(try TestSupport.readBytes(ours) == (try TestSupport.readBytes(theirs)), "\(label)")
                }
                // A wrong password is named as the key's, never echoed.
                let wrong = try TestSupport.apkpatch(["sign", "--key", key, "--cert", path("cert.pem"), "--key-pass", "env:APKPATCH_TEST_WRONG",
                                                      "--out", path("wrong.apk"), apk], environment: environment)
                #expect(!wrong.succeeded && wrong.stderr.contains("--key-pass") && !wrong.stderr.contains("Wr0ng-Pass-XYZ"), "\(label): \(wrong)")
                #expect(!FileManager.default.fileExists(atPath: path("wrong.apk")))
            }
        }
    }

    /// CPasswordKDF's RC2 against RFC 2268's test vectors (effective key bits other than the key's own) and
    /// OpenSSL's legacy provider (the openssl command loads it) for PKCS#12's two key sizes; RC4 against OpenSSL's.
    @Test func rc2AndRC4MatchTheReferences() throws {
        func bytes(_ hex: String) -> [UInt8] {
            stride(from: 0, to: hex.count, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! }
        }
        // RFC 2268 section 5: key, effective bits, plaintext, ciphertext (one block: CBC with a zero IV).
        let vectors: [(String, Int, String, String)] = [
            ("0000000000000000", 63, "0000000000000000", "ebb773f993278eff"),
            ("ffffffffffffffff", 64, "ffffffffffffffff", "278b27e42e2f0d49"),
            ("3000000000000000", 64, "1000000000000001", "30649edf9be7d2c2"),
            ("88", 64, "0000000000000000", "61a8a244adacccf0"),
            ("88bca90e90875a", 64, "0000000000000000", "6ccf4308974c267f"),
            ("88bca90e90875a7f0f79c384627bafb2", 64, "0000000000000000", "1a807d272bbe5db1"),
            ("88bca90e90875a7f0f79c384627bafb2", 128, "0000000000000000", "2269552ab0f85ca6"),
            ("88bca90e90875a7f0f79c384627bafb216f80a6f85920584c42fceb0be255daf1e", 129, "0000000000000000", "5b78d3a43dfff1f1"),
        ]
        for (key, bits, plain, cipher) in vectors {
            #expect(LegacyCiphers.rc2CBCDecrypt(key: bytes(key), effectiveBits: bits, iv: [UInt8](repeating: 0, count: 8), bytes(cipher)) == bytes(plain),
                    "RFC 2268 \(key)/\(bits)")
        }
        let directory = try TestSupport.makeTemporaryDirectory("rc2")
        var random = SplitMix64(seed: 2268)
        for (name, keyLength) in [("rc2-40-cbc", 5), ("rc2-cbc", 16), ("rc4-40", 5), ("rc4", 16)] {
            for round in 0..<4 {
                let key = (0..<keyLength).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                let iv = (0..<8).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                let plaintext = (0..<(8 * (round * 5 + 1))).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                let input = directory.appendingPathComponent("plain").path, output = directory.appendingPathComponent("cipher").path
                try Data(plaintext).write(to: URL(fileURLWithPath: input))
                let hex = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
                var arguments = ["enc", "-e", "-\(name)", "-K", hex(key), "-nopad", "-provider", "legacy", "-provider", "default", "-in", input, "-out", output]
                if name.hasPrefix("rc2") { arguments += ["-iv", hex(iv)] }
                let result = try TestSupport.run("openssl", arguments)
                #expect(result.succeeded, "\(result)")
                let ciphertext = try TestSupport.readBytes(output)
                let decrypted = name.hasPrefix("rc2") ? LegacyCiphers.rc2CBCDecrypt(key: key, effectiveBits: keyLength * 8, iv: iv, ciphertext)
                    : LegacyCiphers.rc4(key: key, ciphertext)
                #expect(decrypted == plaintext, "\(name) round \(round)")
            }
        }
    }
}
