import Foundation
import Testing
import OpenSSLWrapper
import Sign
import TestSupport

/// PKCS#12 stores whose integrity MAC is RFC 9579's PBMAC1, and keys and stores under encryptions this build does
/// not read. PBMAC1's producers (OpenSSL 3.4+ `pkcs12 -export -pbmac1_pbkdf2`; JDKs from 26 on) are not on
/// Debian 12, and Java 25's keytool writes no PBMAC1 (its `keystore.pkcs12.macAlgorithm=PBEWithHmacSHA256` fails),
/// so the stores are built here as RFC 9579 and OpenSSL 3.4's PKCS12_set_pbmac1_pbkdf2 build them: an `openssl
/// pkcs12 -export` store whose MacData is replaced by a PBMAC1 one, its key from `openssl kdf PBKDF2` over the
/// password's UTF-8 bytes and its MAC from `openssl mac HMAC` over the authenticated safe's octets.
@Suite(.removesTemporaryDirectories) struct KeyStoreRFC9579Tests {
    static let password = "st0re-Pass-1"

    struct PBMAC1Case: CustomStringConvertible, Sendable {
        let label: String
        /// PBKDF2's PRF and the MAC's digest, as openssl names them; nil PRF: the field is left out (HMAC-SHA-1).
        let prf: String?
        let mac: String
        let keyLength: Int?
        let iterations: Int
        /// Read with the other keys of the store on CPasswordKDF (a SHA-256 PRF), else with OpenSSL's PBKDF2.
        let derivedTogether: Bool
        var description: String { label }
    }

    static let cases: [PBMAC1Case] = [
        PBMAC1Case(label: "OpenSSL 3.4's -pbmac1_pbkdf2 defaults (HMAC-SHA-256 PRF and MAC, 32-byte key)", prf: "SHA256", mac: "SHA256",
                   keyLength: 32, iterations: 2048, derivedTogether: true),
        PBMAC1Case(label: "-macalg sha512 (HMAC-SHA-512 PRF and MAC, 64-byte key)", prf: "SHA512", mac: "SHA512", keyLength: 64,
                   iterations: 2048, derivedTogether: false),
        PBMAC1Case(label: "RFC 9579 A.2's shape (HMAC-SHA-256 PRF, HMAC-SHA-512 MAC, 32-byte key)", prf: "SHA256", mac: "SHA512",
                   keyLength: 32, iterations: 4096, derivedTogether: true),
        PBMAC1Case(label: "no PRF field (HMAC-SHA-1), HMAC-SHA-256 MAC, 20-byte key", prf: nil, mac: "SHA256", keyLength: 20,
                   iterations: 1000, derivedTogether: false),
    ]

    private static let hmacOIDs = ["SHA1": "1.2.840.113549.2.7", "SHA256": "1.2.840.113549.2.9", "SHA512": "1.2.840.113549.2.11"]

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
    static func bytes(hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    /// An `openssl pkcs12 -export` store (RSA 2048, today's defaults) and the key and certificate it holds.
    static func classicStore(in directory: URL) throws -> String {
        func openssl(_ arguments: [String]) throws {
            let result = try TestSupport.run("openssl", arguments, environment: ["APKPATCH_TEST_KS_PASS": password])
            guard result.succeeded else { throw FixtureError(message: "openssl \(arguments.first ?? "") failed:\n\(result)") }
        }
        let key = directory.appendingPathComponent("key.pem").path, certificate = directory.appendingPathComponent("cert.pem").path
        let store = directory.appendingPathComponent("classic.p12").path
        try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key])
        try openssl(["req", "-new", "-x509", "-key", key, "-subj", "/O=Example/CN=PBMAC1 Key", "-days", "3650", "-out", certificate])
        try openssl(["pkcs12", "-export", "-in", certificate, "-inkey", key, "-name", "release", "-out", store, "-passout", "env:APKPATCH_TEST_KS_PASS"])
        return store
    }

    /// `classic` with its MacData replaced by a PBMAC1 one built as `pbmac1Case` says, over `password`.
    static func pbmac1Store(from classic: String, _ pbmac1Case: PBMAC1Case, password: String = password, in directory: URL,
                            name: String) throws -> String {
        let der = try TestSupport.readBytes(classic)
        var reader = DERReader(der)
        let pfx = try reader.read()
        let parts = try pfx.children()
        // authSafe ContentInfo { data, [0] { OCTET STRING } }: the MAC covers the OCTET STRING's contents.
        let authSafe = try parts[1].children()
        let octets = try authSafe[1].children()[0].contents
        let content = directory.appendingPathComponent("\(name).authsafe")
        try Data(octets).write(to: content)

        let salt = (0..<16).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ name.utf8.count) }
        let keyLength = pbmac1Case.keyLength ?? 32
        let kdf = try TestSupport.run("openssl", ["kdf", "-keylen", String(keyLength), "-kdfopt", "digest:\(pbmac1Case.prf ?? "SHA1")",
                                                  "-kdfopt", "hexpass:\(hex(Array(password.utf8)))", "-kdfopt", "hexsalt:\(hex(salt))",
                                                  "-kdfopt", "iter:\(pbmac1Case.iterations)", "PBKDF2"])
        guard kdf.succeeded else { throw FixtureError(message: "openssl kdf failed:\n\(kdf)") }
        let key = kdf.stdout.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: ":", with: "")
        let mac = try TestSupport.run("openssl", ["mac", "-digest", pbmac1Case.mac, "-macopt", "hexkey:\(key)", "-in", content.path, "HMAC"])
        guard mac.succeeded else { throw FixtureError(message: "openssl mac failed:\n\(mac)") }
        let macBytes = bytes(hex: mac.stdout.trimmingCharacters(in: .whitespacesAndNewlines))

        func hmac(_ digest: String) -> [UInt8] { DER.sequence([DER.objectIdentifier(hmacOIDs[digest]!), DER.null]) }
        var kdfParameters = [DER.octetString(salt), DER.integer(pbmac1Case.iterations)]
        if let length = pbmac1Case.keyLength { kdfParameters.append(DER.integer(length)) }
        if let prf = pbmac1Case.prf { kdfParameters.append(hmac(prf)) }
        let algorithm = DER.sequence([
            DER.objectIdentifier("1.2.840.113549.1.5.14"),
            DER.sequence([DER.sequence([DER.objectIdentifier("1.2.840.113549.1.5.12"), DER.sequence(kdfParameters)]), hmac(pbmac1Case.mac)]),
        ])
        // MacData { DigestInfo { PBMAC1, MAC }, macSalt, iterations }: RFC 9579 leaves the last two unused; OpenSSL
        // 3.4 writes the PBKDF2 salt and iteration count there.
        let macData = DER.sequence([DER.sequence([algorithm, DER.octetString(macBytes)]), DER.octetString(salt), DER.integer(pbmac1Case.iterations)])
        let store = directory.appendingPathComponent("\(name).p12")
        try Data(DER.sequence([Array(parts[0].encoded), Array(parts[1].encoded), macData])).write(to: store)
        return store.path
    }

    @Test(arguments: cases)
    func pbmac1StoresSignAsTheSameKeyWithAClassicMAC(_ pbmac1Case: PBMAC1Case) throws {
        let directory = try TestSupport.makeTemporaryDirectory("pbmac1")
        let classic = try Self.classicStore(in: directory)
        let store = try Self.pbmac1Store(from: classic, pbmac1Case, in: directory, name: "pbmac1")
        // What OpenSSL 3.0 makes of it: PBMAC1 with PBKDF2 and the HMAC asked for, and no MAC it can check.
        let parsed = try TestSupport.run("openssl", ["asn1parse", "-inform", "DER", "-in", store])
        #expect(parsed.stdout.contains(":PBMAC1") && parsed.stdout.contains(":PBKDF2"), "\(parsed)")
        #expect(parsed.stdout.contains(":hmacWith\(pbmac1Case.mac)"), "\(parsed)")
        let openssl30 = try TestSupport.run("openssl", ["pkcs12", "-info", "-noout", "-in", store, "-passin", "env:APKPATCH_TEST_KS_PASS"],
                                            environment: ["APKPATCH_TEST_KS_PASS": Self.password])
        #expect(!openssl30.succeeded, "OpenSSL 3.0 reads PBMAC1 now: \(openssl30)")

        let read = try PKCS12.read(TestSupport.readBytes(store), password: Array(Self.password.utf8))
        #expect(read.decryption == (pbmac1Case.derivedTogether ? .derivedTogether : .openSSL), "\(pbmac1Case)")
        #expect(read.entries.count == 1 && read.entries[0].privateKey != nil && read.entries[0].friendlyName == "release")
        let reference = try PKCS12.read(TestSupport.readBytes(store), password: Array(Self.password.utf8), derivingTogether: false)
        #expect(reference.entries.first?.certificates.first?.derBytes == read.entries.first?.certificates.first?.derBytes)

        // The APK: apksigner's bytes with the classic store (the same RSA key; its signatures are deterministic).
        let apk = try FixtureAPK().build(in: directory)
        let environment = ["APKPATCH_TEST_KS_PASS": Self.password]
        let ours = directory.appendingPathComponent("ours.apk").path, theirs = directory.appendingPathComponent("theirs.apk").path
        let options = ["--ks-pass", "env:APKPATCH_TEST_KS_PASS", "--alignment-preserved", "true", "--misaligned-apk-permitted", "true",
                       "--lib-page-alignment", "4096", "--v4-signing-enabled", "false"]
        let sign = try TestSupport.apkpatch(["sign", "--ks", store] + options + ["--out", ours, apk], environment: environment)
        #expect(sign.succeeded, "\(pbmac1Case): \(sign)")
        let apksigner = try TestSupport.run("apksigner", ["sign", "--ks", classic, "--ks-pass", "env:APKPATCH_TEST_KS_PASS",
                                                         "--v4-signing-enabled", "false", "--out", theirs, apk], environment: environment)
        #expect(apksigner.succeeded, "\(apksigner)")
        #expect(try TestSupport.readBytes(ours) == (try TestSupport.readBytes(theirs)), "\(pbmac1Case)")
        let list = try TestSupport.apkpatch(["keystore", "list", "--ks", store, "--ks-pass", "env:APKPATCH_TEST_KS_PASS"], environment: environment)
        #expect(list.succeeded && list.stdout.contains("release"), "\(list)")

        // A wrong password, and a MAC changed by one bit: the store password is named, never echoed.
        let wrong = try TestSupport.apkpatch(["sign", "--ks", store, "--ks-pass", "env:APKPATCH_TEST_WRONG", "--out", ours + ".wrong", apk],
                                             environment: ["APKPATCH_TEST_WRONG": "Wr0ng-Pass-XYZ"])
        #expect(!wrong.succeeded && wrong.stderr.contains("wrong password") && wrong.stderr.contains("--ks-pass")
                && !wrong.stderr.contains("Wr0ng-Pass-XYZ"), "\(wrong)")
        var tampered = try TestSupport.readBytes(store)
        let macStart = try #require(Self.macOffset(tampered))
        tampered[macStart] ^= 0x01
        let tamperedPath = directory.appendingPathComponent("tampered.p12").path
        try Data(tampered).write(to: URL(fileURLWithPath: tamperedPath))
        let tamperedSign = try TestSupport.apkpatch(["sign", "--ks", tamperedPath] + options + ["--out", ours + ".tampered", apk], environment: environment)
        #expect(!tamperedSign.succeeded && tamperedSign.stderr.contains("wrong password"), "\(tamperedSign)")
        #expect(!FileManager.default.fileExists(atPath: ours + ".wrong") && !FileManager.default.fileExists(atPath: ours + ".tampered"))
    }

    /// The first byte of the MAC value (MacData's DigestInfo OCTET STRING).
    static func macOffset(_ der: [UInt8]) -> Int? {
        var reader = DERReader(der)
        guard let pfx = try? reader.read(), let parts = try? pfx.children(), parts.count == 3,
              let macData = try? parts[2].children(), let digestInfo = try? macData[0].children() else { return nil }
        return digestInfo[1].contents.startIndex
    }

    /// RFC 9579 requires PBKDF2's key length: without it the store is refused, not taken for a wrong password, and
    /// the message says what reads it.
    @Test func pbmac1WithoutAKeyLengthIsRefusedInWords() throws {
        let directory = try TestSupport.makeTemporaryDirectory("pbmac1-nolength")
        let classic = try Self.classicStore(in: directory)
        let store = try Self.pbmac1Store(from: classic, PBMAC1Case(label: "no key length", prf: "SHA256", mac: "SHA256", keyLength: nil,
                                                                   iterations: 2048, derivedTogether: false), in: directory, name: "nolength")
        let apk = try FixtureAPK().build(in: directory)
        let out = directory.appendingPathComponent("out.apk").path
        let sign = try TestSupport.apkpatch(["sign", "--ks", store, "--ks-pass", "env:APKPATCH_TEST_KS_PASS", "--out", out, apk],
                                            environment: ["APKPATCH_TEST_KS_PASS": Self.password])
        #expect(!sign.succeeded && sign.stderr.contains("PBMAC1") && sign.stderr.contains("OpenSSL 3.4") && !sign.stderr.contains("wrong password"),
                "\(sign)")
        #expect(!sign.stderr.contains(Self.password) && !FileManager.default.fileExists(atPath: out))
    }

    static func openssl(_ arguments: [String], environment: [String: String]) throws {
        let result = try TestSupport.run("openssl", arguments, environment: environment)
        guard result.succeeded else { throw FixtureError(message: "openssl \(arguments.prefix(2)) failed:\n\(result)") }
    }

    /// An RSA key (key.pem) and its certificate (cert.pem, `subject`) in `directory`, and a fixture APK there.
    static func keyCertificateAndAPK(in directory: URL, subject: String, environment: [String: String]) throws -> String {
        let key = directory.appendingPathComponent("key.pem").path
        try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key], environment: environment)
        try openssl(["req", "-new", "-x509", "-key", key, "-subj", subject, "-days", "3650", "-out", directory.appendingPathComponent("cert.pem").path],
                    environment: environment)
        return try FixtureAPK().build(in: directory)
    }

    /// The ciphers of OpenSSL 3's legacy provider this build has no code for (Blowfish, CAST5, SEED), as
    /// `openssl pkcs8 -topk8 -v2 CIPHER` writes them: refused naming the scheme and the command that re-encrypts
    /// the key, and that command, run as given (passwords from the environment), makes a key that signs. MD2's
    /// PBES1 (no OpenSSL 3 has MD2, so the bytes are made here) is refused with other advice.
    @Test func keysUnderCiphersNotReadHereAreRefusedWithTheFix() throws {
        let directory = try TestSupport.makeTemporaryDirectory("pkcs8-unread")
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let environment = ["APKPATCH_TEST_KEY_PASS": "pkcs8-Pass-4"]
        func openssl(_ arguments: [String]) throws { try Self.openssl(arguments, environment: environment) }
        let apk = try Self.keyCertificateAndAPK(in: directory, subject: "/CN=Legacy Cipher Key", environment: environment)
        // Debian's OpenSSL has no IDEA (nor RC5): those are named from their OIDs alike.
        for (cipher, name) in [("bf-cbc", "Blowfish-CBC"), ("cast5-cbc", "CAST5-CBC"), ("seed-cbc", "SEED-CBC")] {
            for form in ["DER", "PEM"] {
                let key = path("key-\(cipher).\(form.lowercased())")
                try openssl(["pkcs8", "-topk8", "-in", path("key.pem"), "-passout", "env:APKPATCH_TEST_KEY_PASS", "-outform", form, "-out", key,
                             "-provider", "legacy", "-provider", "default", "-v2", cipher])
                let out = path("out-\(cipher)-\(form).apk")
                let refused = try TestSupport.apkpatch(["sign", "--key", key, "--cert", path("cert.pem"), "--key-pass", "env:APKPATCH_TEST_KEY_PASS",
                                                        "--out", out, apk], environment: environment)
                #expect(!refused.succeeded && refused.stderr.contains("encrypted with PBES2 with \(name), which apkpatch does not read"),
                        "\(cipher) \(form): \(refused)")
                #expect(!refused.stderr.contains("pkcs8-Pass-4") && !FileManager.default.fileExists(atPath: out))
                // The command in the message, with the passwords it would ask for given from the environment.
                let line = try #require(refused.stderr.split(separator: "\n").first { $0.contains("openssl pkcs8") })
                let command = line[line.range(of: "openssl pkcs8")!.lowerBound...].split(separator: " ").map(String.init)
                let converted = try #require(command.last)
                #expect(converted == path("key-\(cipher)-converted.pk8"), "\(line)")
                try openssl(Array(command.dropFirst()) + ["-passin", "env:APKPATCH_TEST_KEY_PASS", "-passout", "env:APKPATCH_TEST_KEY_PASS"])
                let sign = try TestSupport.apkpatch(["sign", "--key", converted, "--cert", path("cert.pem"), "--key-pass", "env:APKPATCH_TEST_KEY_PASS",
                                                     "--out", out, apk], environment: environment)
                #expect(sign.succeeded, "\(cipher) \(form) converted: \(sign)")
                let verify = try TestSupport.run("apksigner", ["verify", "--print-certs", out])
                #expect(verify.succeeded && verify.stdout.contains("CN=Legacy Cipher Key"), "\(verify)")
                try? FileManager.default.removeItem(atPath: out)
            }
        }

        // pbeWithMD2AndDES-CBC { salt, 2048 } over 32 bytes: what such a file looks like.
        let md2 = DER.sequence([DER.sequence([DER.objectIdentifier("1.2.840.113549.1.5.1"),
                                              DER.sequence([DER.octetString(Array(repeating: 7, count: 8)), DER.integer(2048)])]),
                                DER.octetString(Array(repeating: 0x5a, count: 32))])
        try Data(md2).write(to: URL(fileURLWithPath: path("md2.der")))
        let md2Sign = try TestSupport.apkpatch(["sign", "--key", path("md2.der"), "--cert", path("cert.pem"), "--key-pass", "env:APKPATCH_TEST_KEY_PASS",
                                                "--out", path("md2.apk"), apk], environment: environment)
        #expect(!md2Sign.succeeded && md2Sign.stderr.contains("PBES1 with MD2 and DES-CBC") && md2Sign.stderr.contains("OpenSSL 3 does not read MD2"),
                "\(md2Sign)")
    }

    /// Stores whose certificates or key OpenSSL encrypted with a legacy-provider cipher: refused naming it (the
    /// key's alias when only the key is), listed when only the key is, and the conversion in the message, run as
    /// given, writes a store that signs.
    @Test func storesUnderCiphersNotReadHereAreRefusedWithTheFix() throws {
        let directory = try TestSupport.makeTemporaryDirectory("pkcs12-unread")
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        let environment = ["APKPATCH_TEST_KS_PASS": Self.password]
        func openssl(_ arguments: [String]) throws { try Self.openssl(arguments, environment: environment) }
        let apk = try Self.keyCertificateAndAPK(in: directory, subject: "/CN=Legacy Store Key", environment: environment)
        for (options, shows, keyOnly) in [(["-certpbe", "BF-CBC"], "PBES2 with Blowfish-CBC, which", false),
                                          (["-keypbe", "CAST5-CBC"], "PBES2 with CAST5-CBC (key \"release\"), which", true)] {
            let store = path("store-\(keyOnly ? "key" : "certs").p12")
            try openssl(["pkcs12", "-export", "-in", path("cert.pem"), "-inkey", path("key.pem"), "-name", "release", "-out", store,
                         "-passout", "env:APKPATCH_TEST_KS_PASS", "-provider", "legacy", "-provider", "default"] + options)
            let out = path("out.apk")
            let refused = try TestSupport.apkpatch(["sign", "--ks", store, "--ks-pass", "env:APKPATCH_TEST_KS_PASS", "--out", out, apk], environment: environment)
            #expect(!refused.succeeded && refused.stderr.contains("keystore \(store) is protected with \(shows) apkpatch does not read"), "\(options): \(refused)")
            #expect(!refused.stderr.contains(Self.password) && !FileManager.default.fileExists(atPath: out))
            let list = try TestSupport.apkpatch(["keystore", "list", "--ks", store, "--ks-pass", "env:APKPATCH_TEST_KS_PASS"], environment: environment)
            #expect(list.succeeded == keyOnly, "\(options): \(list)")

            // The commands in the message, with the passwords they ask for given from the environment.
            let line = try #require(refused.stderr.split(separator: "\n").first { $0.contains("openssl pkcs12 -in") })
            let commands = String(line[line.range(of: "openssl pkcs12 -in")!.lowerBound...]).components(separatedBy: " && ")
            let converted = path("store-\(keyOnly ? "key" : "certs")-converted.p12"), pem = path("store-\(keyOnly ? "key" : "certs")-converted.pem")
            #expect(commands == ["openssl pkcs12 -in \(store) -legacy -out \(pem)", "openssl pkcs12 -export -in \(pem) -out \(converted)", "rm \(pem)"],
                    "\(line)")
            let passwords = " -passin env:APKPATCH_TEST_KS_PASS -passout env:APKPATCH_TEST_KS_PASS"
            let run = try TestSupport.run("bash", ["-c", commands[0] + passwords + " && " + commands[1] + passwords + " && " + commands[2]],
                                          environment: environment)
            #expect(run.succeeded, "\(run)")
            #expect(!FileManager.default.fileExists(atPath: pem))
            let sign = try TestSupport.apkpatch(["sign", "--ks", converted, "--ks-pass", "env:APKPATCH_TEST_KS_PASS", "--out", out, apk], environment: environment)
            #expect(sign.succeeded, "\(options) converted: \(sign)")
            let verify = try TestSupport.run("apksigner", ["verify", "--print-certs", out])
            #expect(verify.succeeded && verify.stdout.contains("CN=Legacy Store Key"), "\(verify)")
            try? FileManager.default.removeItem(atPath: out)
        }
    }
}
