import Foundation
@testable import Sign
import Testing
import TestSupport

/// A non-ASCII password is tried in the forms apksigner tries it in (`PasswordRetriever.addPasswords`): itself, its
/// UTF-8 bytes one char each (keytool reading it on a console whose encoding the JVM misjudged stores that form),
/// and with `--pass-encoding` its bytes in that encoding one char each. The password here is "été-2026" (keytool wants
/// six characters); its UTF-8 form is "Ã©tÃ©-2026", its IBM437 form "\u{82}t\u{82}-2026".
///
/// JKS stores are made by keytool and checked against apksigner, byte for byte. PKCS#12 stores are made by OpenSSL:
/// the JDK 17 that runs keytool and apksigner here refuses any non-ASCII PKCS#12 password ("getSecretKey failed:
/// Password is not ASCII", its PBE keys take printable ASCII only), so there apksigner cannot be the oracle; apkpatch
/// must sign with them exactly as it signs given the stored form itself.
@Suite(.removesTemporaryDirectories) struct PasswordFormsTests {
    static let password = "été-2026"
    static let utf8Form = "Ã©tÃ©-2026"
    static let ibm437Form = "\u{82}t\u{82}-2026"
    /// The stores, by the form they were made with: "unicode", "utf8", "ibm437".
    static let forms = ["unicode": password, "utf8": utf8Form, "ibm437": ibm437Form]

    /// One directory of stores and one input APK for the suite: keytool, OpenSSL and the fixture APK run once.
    struct Fixture {
        let dir: URL
        let input: String
        func store(_ form: String, _ type: String) -> String { dir.appendingPathComponent("\(form).\(type == "JKS" ? "jks" : "p12")").path }
    }

    static let shared: Result<Fixture, any Error> = Result(catching: {
        let dir = try TestSupport.makeTemporaryDirectory("password-forms")
        let fixture = Fixture(dir: dir, input: try FixtureAPK.cordovaLike().build(in: dir))
        let key = dir.appendingPathComponent("key.pem").path, certificate = dir.appendingPathComponent("cert.pem").path
        let request = try TestSupport.run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate,
                                                      "-subj", "/CN=Password Forms", "-days", "3650"])
        guard request.succeeded else { throw FixtureError(message: "openssl req failed:\n\(request)") }
        for (name, form) in forms {
            try TestSupport.makeKeyStore(at: fixture.store(name, "JKS"), password: form, dname: "CN=Password Forms \(name)", type: "JKS")
            let export = try TestSupport.run("openssl", ["pkcs12", "-export", "-inkey", key, "-in", certificate, "-name", "release",
                                                         "-out", fixture.store(name, "PKCS12"), "-passout", "env:KP"], environment: ["KP": form])
            guard export.succeeded else { throw FixtureError(message: "openssl pkcs12 -export failed:\n\(export)") }
        }
        return fixture
    })

    struct FixtureError: Error, CustomStringConvertible { let message: String; var description: String { message } }

    static func utf8(_ forms: [Secret]) -> [String] { forms.map { String(decoding: $0.bytes, as: UTF8.self) } }

    @Test("the forms and their order are apksigner's; an ASCII password has one")
    func formsInApksignersOrder() throws {
        #expect(Self.utf8(Secret.forms(of: Secret("android-2026"), isEncoded: false, encoding: nil)) == ["android-2026"])
        #expect(Self.utf8(Secret.forms(of: Secret("android-2026"), isEncoded: true, encoding: try PasswordEncoding(named: "ibm437"))) == ["android-2026"])
        #expect(Self.utf8(Secret.forms(of: Secret(Self.password), isEncoded: false, encoding: nil)) == [Self.password, Self.utf8Form])
        // The --pass-encoding form comes first (PasswordRetriever.addPasswords).
        #expect(Self.utf8(Secret.forms(of: Secret(Self.password), isEncoded: false, encoding: try PasswordEncoding(named: "IBM437")))
                == [Self.ibm437Form, Self.password, Self.utf8Form])
        // Read from a file: decoded as UTF-8, then the bytes as read, one char each (here the UTF-8 form again).
        #expect(Self.utf8(Secret.forms(of: Secret(Self.password), isEncoded: true, encoding: nil)) == [Self.password, Self.utf8Form])
        // Latin-1 bytes in a file: not UTF-8, so U+FFFD, and last the bytes as Latin-1 characters.
        let latin1 = Secret(bytes: [0xe9, 0x74, 0xe9])
        #expect(Self.utf8(Secret.forms(of: latin1, isEncoded: true, encoding: nil)) == ["\u{FFFD}t\u{FFFD}", "ï¿½tï¿½", "été"])
        // A character the encoding lacks becomes "?", as Java's encoder replaces it; Java's and Windows' names work.
        #expect(Self.utf8(Secret.forms(of: Secret("€uro-été"), isEncoded: false, encoding: try PasswordEncoding(named: "windows-1252")))
                == ["\u{80}uro-\u{E9}t\u{E9}", "€uro-été", "â\u{82}¬uro-Ã©tÃ©"])
        #expect(Self.utf8(Secret.forms(of: Secret("ж-été"), isEncoded: false, encoding: try PasswordEncoding(named: "iso-8859-1")))[0] == "?-\u{E9}t\u{E9}")
        #expect(Self.utf8(Secret.forms(of: Secret("été"), isEncoded: false, encoding: try PasswordEncoding(named: "cp65001"))) == ["Ã©tÃ©", "été"])
        #expect(throws: KeyStoreError.self) { try PasswordEncoding(named: "no-such-charset") }
        #expect(throws: KeyStoreError.self) { try PasswordEncoding(named: "utf-8//TRANSLIT") }
    }

    @Test("an ASCII password opens a store with one read; a non-ASCII one reads once per form until one opens", arguments: ["JKS", "PKCS12"])
    func readsPerForm(type: String) throws {
        let fixture = try Self.shared.get()
        let ascii = fixture.dir.appendingPathComponent("ascii-\(type).store").path
        try TestSupport.makeKeyStore(at: ascii, password: "android-2026", dname: "CN=ASCII", type: type)
        #expect(try LoadedKeyStore(path: ascii, type: nil, storePassword: .pass(Secret("android-2026")),
                                   passwordEncoding: try PasswordEncoding(named: "ibm437")).storePasswordAttempts == 1)
        #expect(try LoadedKeyStore(path: fixture.store("unicode", type), type: nil, storePassword: .pass(Secret(Self.password))).storePasswordAttempts == 1)
        #expect(try LoadedKeyStore(path: fixture.store("utf8", type), type: nil, storePassword: .pass(Secret(Self.password))).storePasswordAttempts == 2)
        #expect(try LoadedKeyStore(path: fixture.store("ibm437", type), type: nil, storePassword: .pass(Secret(Self.password)),
                                   passwordEncoding: try PasswordEncoding(named: "ibm437")).storePasswordAttempts == 1)
    }

    @Test("a wrong non-ASCII password fails, after every form, as a wrong password for the right subject", arguments: ["JKS", "PKCS12"])
    func wrongPasswordAfterEveryForm(type: String) throws {
        let fixture = try Self.shared.get()
        let store = fixture.store("unicode", type)
        do {
            _ = try LoadedKeyStore(path: store, type: nil, storePassword: .pass(Secret("été-2027")))
            Issue.record("a wrong store password opened \(store)")
        } catch let error as KeyStoreError {
            #expect(error.code == .wrongStorePassword && error.subject == .storePassword, "\(error)")
        }
        // The store password right, the key password given wrong: the key's password is named. (A PKCS#12 key that
        // does not decrypt with the key password given is tried with the store password, as keytool's stores have one.)
        if type == "JKS" { do {
            _ = try KeySource.keyStore(path: store, type: nil, alias: nil, storePassword: .pass(Secret(Self.password)),
                                       keyPassword: .pass(Secret("été-2027"))).load()
            Issue.record("a wrong key password decrypted the key in \(store)")
        } catch let error as KeyStoreError {
            #expect(error.code == .wrongKeyPassword && error.subject == .keyPassword, "\(error)")
        } }
        // Through the command: the wrong password is named by its option, and never shown.
        let output = fixture.dir.appendingPathComponent("wrong-\(type).apk").path
        let result = try TestSupport.apkpatch(["sign", "--ks", store, "--ks-pass", "env:P", "--out", output, fixture.input],
                                              environment: ["P": "été-2027"])
        #expect(result.status == 1 && result.stderr.contains("wrong password") && result.stderr.contains("--ks-pass"), "\(result)")
        #expect(!result.stderr.contains("été") && !result.stderr.contains("Ã©"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    /// apksigner's options for output bytes apkpatch writes by default with `apkpatch`'s alignment options below.
    static let apkpatchOptions = ["--alignment-preserved", "true", "--misaligned-apk-permitted", "true", "--lib-page-alignment", "4096",
                                  "--v4-signing-enabled", "false"]

    @Test("JKS stores keytool made with each form: apkpatch opens those apksigner opens, and writes apksigner's bytes",
          arguments: [("unicode", [String]()), ("utf8", []), ("ibm437", ["--pass-encoding", "ibm437"]), ("unicode", ["--pass-encoding", "cp437"])])
    func jksAsApksignerOpensIt(form: String, extra: [String]) throws {
        let fixture = try Self.shared.get()
        let store = fixture.store(form, "JKS")
        let ours = fixture.dir.appendingPathComponent("ours-\(form)-\(extra.count).apk").path
        let theirs = fixture.dir.appendingPathComponent("theirs-\(form)-\(extra.count).apk").path
        let apksigner = try TestSupport.run("apksigner", ["sign", "--ks", store, "--ks-pass", "env:P"] + extra + ["--v4-signing-enabled", "false", "--out", theirs, fixture.input],
                                            environment: ["P": Self.password])
        #expect(apksigner.succeeded, "\(apksigner)")
        let result = try TestSupport.apkpatch(["sign", "--ks", store, "--ks-pass", "env:P"] + extra + Self.apkpatchOptions + ["--out", ours, fixture.input],
                                              environment: ["P": Self.password])
        #expect(result.succeeded, "\(result)")
        #expect(try TestSupport.readBytes(ours) == (try TestSupport.readBytes(theirs)))
        // The key password given as well (apksigner tries its forms alike).
        let withKeyPassword = try TestSupport.apkpatch(["sign", "--ks", store, "--ks-pass", "env:P", "--key-pass", "env:P"] + extra + Self.apkpatchOptions
                                                       + ["--out", ours, fixture.input], environment: ["P": Self.password])
        #expect(withKeyPassword.succeeded, "\(withKeyPassword)")
        #expect(try TestSupport.readBytes(ours) == (try TestSupport.readBytes(theirs)))
    }

    @Test("the IBM437 form opens only with --pass-encoding ibm437, for apksigner and apkpatch alike")
    func ibm437FormNeedsTheEncoding() throws {
        let fixture = try Self.shared.get()
        for type in ["JKS", "PKCS12"] {
            let store = fixture.store("ibm437", type), output = fixture.dir.appendingPathComponent("ibm437-\(type).apk").path
            let result = try TestSupport.apkpatch(["sign", "--ks", store, "--ks-pass", "env:P", "--out", output, fixture.input], environment: ["P": Self.password])
            #expect(result.status == 1 && result.stderr.contains("wrong password"), "\(type): \(result)")
            #expect(!FileManager.default.fileExists(atPath: output))
        }
        let apksigner = try TestSupport.run("apksigner", ["sign", "--ks", fixture.store("ibm437", "JKS"), "--ks-pass", "env:P", "--v4-signing-enabled", "false",
                                                          "--out", fixture.dir.appendingPathComponent("ibm437-theirs.apk").path, fixture.input],
                                            environment: ["P": Self.password])
        #expect(!apksigner.succeeded, "\(apksigner)")
        // keystore list takes it too.
        for type in ["JKS", "PKCS12"] {
            let list = ["keystore", "list", "--ks", fixture.store("ibm437", type), "--ks-pass", "env:P"]
            let without = try TestSupport.apkpatch(list, environment: ["P": Self.password])
            #expect(without.status == 1 && without.stderr.contains("wrong password"), "\(without)")
            let with = try TestSupport.apkpatch(list + ["--pass-encoding", "cp437"], environment: ["P": Self.password])
            #expect(with.succeeded && with.stdout.contains("Alias: release"), "\(with)")
        }
    }

    @Test("--pass-encoding belongs to the signer it follows, as in apksigner: rotate's signers, sign's --next-signer")
    func encodingPerSigner() throws {
        let fixture = try Self.shared.get()
        let ascii = fixture.dir.appendingPathComponent("second.p12").path
        try TestSupport.makeKeyStore(at: ascii, password: "android-2026", alias: "second", dname: "CN=Second")
        let environment = ["P": Self.password, "Q": "android-2026"]
        let old = ["--old-signer", "--ks", fixture.store("ibm437", "JKS"), "--ks-pass", "env:P"], new = ["--new-signer", "--ks", ascii, "--ks-pass", "env:Q"]
        let encoding = ["--pass-encoding", "ibm437"]
        let ours = fixture.dir.appendingPathComponent("ours.lineage").path, theirs = fixture.dir.appendingPathComponent("theirs.lineage").path
        let rotate = try TestSupport.apkpatch(["rotate", "--out", ours] + old + encoding + new, environment: environment)
        #expect(rotate.succeeded, "\(rotate)")
        let apksignerRotate = try TestSupport.run("apksigner", ["rotate", "--out", theirs] + old + encoding + new, environment: environment)
        #expect(apksignerRotate.succeeded, "\(apksignerRotate)")
        #expect(try TestSupport.readBytes(ours) == (try TestSupport.readBytes(theirs)))
        // Given with the new signer, it does not apply to the old one: both tools fail.
        let elsewhere = fixture.dir.appendingPathComponent("elsewhere.lineage").path
        let misplaced = try TestSupport.apkpatch(["rotate", "--out", elsewhere] + old + new + encoding, environment: environment)
        #expect(misplaced.status == 1 && misplaced.stderr.contains("wrong password"), "\(misplaced)")
        #expect(!(try TestSupport.run("apksigner", ["rotate", "--out", elsewhere] + old + new + encoding, environment: environment)).succeeded)
        // sign: the second signer's group takes it.
        let signers = ["--ks", ascii, "--ks-pass", "env:Q", "--next-signer", "--ks", fixture.store("ibm437", "JKS"), "--ks-pass", "env:P"] + encoding
            + ["--v3-signing-enabled", "false"]
        let oursAPK = fixture.dir.appendingPathComponent("two-ours.apk").path, theirsAPK = fixture.dir.appendingPathComponent("two-theirs.apk").path
        let sign = try TestSupport.apkpatch(["sign"] + signers + Self.apkpatchOptions + ["--out", oursAPK, fixture.input], environment: environment)
        #expect(sign.succeeded, "\(sign)")
        let apksignerSign = try TestSupport.run("apksigner", ["sign"] + signers + ["--v4-signing-enabled", "false", "--out", theirsAPK, fixture.input],
                                                environment: environment)
        #expect(apksignerSign.succeeded, "\(apksignerSign)")
        #expect(try TestSupport.readBytes(oursAPK) == (try TestSupport.readBytes(theirsAPK)))
    }

    @Test("an encrypted PKCS#8 key (--key) whose password is a stored form opens with the password, as the plain key signs",
          arguments: [("utf8", [String]()), ("ibm437", ["--pass-encoding", "ibm437"])])
    func encryptedKeyFile(form: String, extra: [String]) throws {
        let fixture = try Self.shared.get()
        let key = fixture.dir.appendingPathComponent("key.pem").path, certificate = fixture.dir.appendingPathComponent("cert.pem").path
        let encrypted = fixture.dir.appendingPathComponent("key-\(form).pk8").path
        let conversion = try TestSupport.run("openssl", ["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-outform", "DER", "-in", key, "-out", encrypted,
                                                         "-passout", "env:KP"], environment: ["KP": Self.forms[form]!])
        #expect(conversion.succeeded, "\(conversion)")
        let ours = fixture.dir.appendingPathComponent("key-\(form).apk").path, plain = fixture.dir.appendingPathComponent("key-\(form)-plain.apk").path
        // One v1 signer name for both (it defaults to the key file's name).
        let result = try TestSupport.apkpatch(["sign", "--key", encrypted, "--cert", certificate, "--key-pass", "env:P"] + extra + Self.apkpatchOptions
                                              + ["--v1-signer-name", "KEY", "--out", ours, fixture.input], environment: ["P": Self.password])
        #expect(result.succeeded, "\(result)")
        #expect(try TestSupport.apkpatch(["sign", "--key", key, "--cert", certificate] + Self.apkpatchOptions
                                         + ["--v1-signer-name", "KEY", "--out", plain, fixture.input]).succeeded)
        #expect(try TestSupport.readBytes(ours) == (try TestSupport.readBytes(plain)))
        if !extra.isEmpty {
            let without = try TestSupport.apkpatch(["sign", "--key", encrypted, "--cert", certificate, "--key-pass", "env:P"] + Self.apkpatchOptions
                                                   + ["--out", ours + ".no", fixture.input], environment: ["P": Self.password])
            #expect(without.status == 1 && without.stderr.contains("wrong key password") && without.stderr.contains("--key-pass"), "\(without)")
        }
    }

    @Test("PKCS12 stores made with each form: apkpatch signs with the password as with the stored form itself",
          arguments: [("unicode", [String]()), ("utf8", []), ("ibm437", ["--pass-encoding", "IBM437"])])
    func pkcs12AsTheStoredForm(form: String, extra: [String]) throws {
        let fixture = try Self.shared.get()
        let store = fixture.store(form, "PKCS12")
        let ours = fixture.dir.appendingPathComponent("p12-\(form).apk").path, reference = fixture.dir.appendingPathComponent("p12-\(form)-stored.apk").path
        let result = try TestSupport.apkpatch(["sign", "--ks", store, "--ks-pass", "env:P"] + extra + Self.apkpatchOptions + ["--out", ours, fixture.input],
                                              environment: ["P": Self.password])
        #expect(result.succeeded, "\(result)")
        let stored = try TestSupport.apkpatch(["sign", "--ks", store, "--ks-pass", "env:P"] + Self.apkpatchOptions + ["--out", reference, fixture.input],
                                              environment: ["P": Self.forms[form]!])
        #expect(stored.succeeded, "\(stored)")
        #expect(try TestSupport.readBytes(ours) == (try TestSupport.readBytes(reference)))
        #expect(try TestSupport.run("apksigner", ["verify", ours]).succeeded)
        // From a password file (read as bytes, decoded as UTF-8) too.
        let file = fixture.dir.appendingPathComponent("pass-\(form).txt")
        try Data((Self.password + "\n").utf8).write(to: file)
        let fromFile = try TestSupport.apkpatch(["sign", "--ks", store, "--ks-pass", "file:" + file.path] + extra + Self.apkpatchOptions + ["--out", ours, fixture.input])
        #expect(fromFile.succeeded, "\(fromFile)")
        #expect(try TestSupport.readBytes(ours) == (try TestSupport.readBytes(reference)))
    }
}
