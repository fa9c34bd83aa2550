import Foundation
import Testing
import OpenSSLWrapper
import Sign
import TestSupport

/// The keystore's key derivations (PasswordKDF) against OpenSSL's own, and PKCS#12 stores read with every key
/// derived together against the same stores read by OpenSSL's PKCS12 functions.
@Suite(.removesTemporaryDirectories) struct PasswordKDFTests {
    /// Seeded (TestSupport's SplitMix64): the same "random" cases on every run.
    struct Random {
        var generator: SplitMix64
        init(state: UInt64) { generator = SplitMix64(seed: state) }
        mutating func below(_ bound: Int) -> Int { Int.random(in: 0..<bound, using: &generator) }
        mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) } }
    }

    /// Passwords with the shapes that matter: empty, one HMAC block and more (PBKDF2 hashes a key over 64 bytes),
    /// non-ASCII UTF-8 with characters outside the BMP (surrogate pairs in the BMPString), and bytes that are not
    /// UTF-8 (OpenSSL then takes them one per character).
    static let passwords: [[UInt8]] = [
        [], Array("a".utf8), Array("st0re-Pass".utf8), Array("pässwörd€".utf8), Array("🔑 clé 🗝 ключ".utf8),
        [0xe4, 0x41, 0x42], [0xff], [0xc3], Array(repeating: 0x61, count: 64), Array(repeating: 0x62, count: 65),
        Array(String(repeating: "ü", count: 40).utf8),
    ]

    @Test(arguments: [PasswordKDF.Engine.fastest, .portable])
    func derivedKeysEqualOpenSSLs(engine: PasswordKDF.Engine) throws {
        var random = Random(state: 21)
        var requests: [PasswordKDF.Request] = []
        for index in 0..<60 {
            var password = index < Self.passwords.count ? Self.passwords[index] : random.bytes(random.below(90))
            let salt = random.bytes([0, 1, 8, 16, 20, 55, 56, 64, 65, 100][index % 10])
            let iterations = [1, 2, 3, 17, 1000, 2048][random.below(6)]
            if index % 2 == 0 {
                let length = [1, 16, 24, 31, 32, 33, 64, 100][random.below(8)]
                requests.append(PasswordKDF.Request(kind: .pbkdf2HMACSHA256, password: password, salt: salt, iterations: iterations, length: length))
            } else {
                if index % 7 == 0 { password = [] }
                let bmp = index % 5 == 0 ? nil : try #require(PasswordKDF.bmpString(utf8: password))
                requests.append(PasswordKDF.Request(kind: .pkcs12SHA256(id: UInt8(1 + index % 3)), password: bmp, salt: salt,
                                                    iterations: iterations, length: 1 + random.below(32)))
            }
        }
        // All together, as a keystore's derivations run, and one at a time.
        let together = try #require(PasswordKDF.derive(requests, engine: engine))
        for (index, request) in requests.enumerated() {
            let reference = try #require(PasswordKDF.deriveWithOpenSSL(request))
            #expect(together[index] == reference, "request \(index): \(request.kind), \(request.iterations) iterations, \(request.length) bytes")
            #expect(PasswordKDF.derive([request], engine: engine)?.first == reference)
        }
    }

    /// The PKCS#12 KDF on SHA-1 (older Java's keystores): random passwords, salts, iteration counts and lengths up
    /// to 64 bytes (four SHA-1 blocks, B.2 step 6C between them), derived together and one at a time, byte for
    /// byte OpenSSL's PKCS12_key_gen_uni with SHA-1 (which refuses an empty salt with no password: not compared).
    @Test(arguments: [PasswordKDF.Engine.fastest, .portable])
    func pkcs12SHA1KeysEqualOpenSSLs(engine: PasswordKDF.Engine) throws {
        var random = Random(state: 1_792)
        var requests: [PasswordKDF.Request] = []
        for index in 0..<48 {
            let password = index < Self.passwords.count ? Self.passwords[index] : random.bytes(random.below(90))
            let bmp = index % 9 == 4 ? nil : try #require(PasswordKDF.bmpString(utf8: password))
            let salt = random.bytes([0, 1, 8, 16, 20, 55, 56, 64, 65, 100][index % 10])
            if bmp == nil && salt.isEmpty { continue }
            let iterations = [1, 2, 3, 17, 1000, 2048, 50_000][random.below(7)]
            let length = [1, 5, 8, 16, 19, 20, 21, 24, 40, 41, 63, 64][random.below(12)]
            requests.append(PasswordKDF.Request(kind: .pkcs12SHA1(id: UInt8(1 + index % 3)), password: bmp, salt: salt,
                                                iterations: iterations, length: length))
        }
        let together = try #require(PasswordKDF.derive(requests, engine: engine))
        for (index, request) in requests.enumerated() {
            let reference = try #require(PasswordKDF.deriveWithOpenSSL(request), "OpenSSL declined request \(index)")
            #expect(together[index] == reference, "request \(index): \(request.kind), \(request.iterations) iterations, \(request.length) bytes")
            #expect(PasswordKDF.derive([request], engine: engine)?.first == reference)
        }
        // Beside SHA-256 derivations in one call, as a keystore mixing both would ask.
        let sha256 = PasswordKDF.Request(kind: .pkcs12SHA256(id: 3), password: [0, 0x61, 0, 0], salt: [9, 9], iterations: 100, length: 32)
        let mixed = try #require(PasswordKDF.derive([requests[0], sha256, requests[1]], engine: engine))
        #expect(mixed[0] == together[0] && mixed[2] == together[1] && mixed[1] == PasswordKDF.deriveWithOpenSSL(sha256))
        // The derivations a keytool -J-Dkeystore.pkcs12.legacy store asks for, together: the MAC key (id 3, 20
        // bytes, 100,000 iterations), the 3DES key and IV and the RC2-40 key and IV (50,000 iterations).
        let bmp = try #require(PasswordKDF.bmpString(utf8: Array("st0re-Pass".utf8)))
        let legacyStore = [(3, 20, 100_000), (1, 24, 50_000), (2, 8, 50_000), (1, 5, 50_000), (2, 8, 50_000)].enumerated().map { index, shape in
            PasswordKDF.Request(kind: .pkcs12SHA1(id: UInt8(shape.0)), password: bmp, salt: random.bytes(index == 0 ? 20 : 8),
                                iterations: shape.2, length: shape.1)
        }
        let legacyKeys = try #require(PasswordKDF.derive(legacyStore, engine: engine))
        for (index, request) in legacyStore.enumerated() {
            #expect(legacyKeys[index] == PasswordKDF.deriveWithOpenSSL(request), "legacy store request \(index)")
        }
        var tooLong = requests[0]
        tooLong.length = 65
        #expect(PasswordKDF.derive([tooLong], engine: engine) == nil)
    }

    @Test func pbkdf2KnownAnswers() throws {
        // RFC 7914 section 11 (PBKDF2-HMAC-SHA256).
        func hex(_ text: String) -> [UInt8] {
            let digits = Array(text.filter { !$0.isWhitespace })
            return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
        }
        let cases: [(String, String, Int, String)] = [
            ("passwd", "salt", 1, """
                55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783
                """),
            ("Password", "NaCl", 80000, """
                4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d
                """),
        ]
        for (password, salt, iterations, expected) in cases {
            let request = PasswordKDF.Request(kind: .pbkdf2HMACSHA256, password: Array(password.utf8), salt: Array(salt.utf8),
                                              iterations: iterations, length: 64)
            #expect(PasswordKDF.derive([request])?.first == hex(expected))
            #expect(PasswordKDF.derive([request], engine: .portable)?.first == hex(expected))
        }
    }

    @Test func pkcs12PasswordsBecomeOpenSSLsBMPStrings() throws {
        // "A€😀": U+0041, U+20AC, then U+1F600 as the surrogate pair D83D DE00, then the two terminating zeros.
        #expect(PasswordKDF.bmpString(utf8: Array("A€😀".utf8)) == [0x00, 0x41, 0x20, 0xac, 0xd8, 0x3d, 0xde, 0x00, 0x00, 0x00])
        #expect(PasswordKDF.bmpString(utf8: []) == [0x00, 0x00])
        // Not UTF-8: one byte per character.
        #expect(PasswordKDF.bmpString(utf8: [0xe4, 0x41]) == [0x00, 0xe4, 0x00, 0x41, 0x00, 0x00])
        var random = Random(state: 7)
        for password in Self.passwords + (0..<10).map({ _ in random.bytes(1 + random.below(40)) }) {
            let salt = random.bytes(8 + random.below(60))
            let bmp = try #require(PasswordKDF.bmpString(utf8: password))
            let ours = PasswordKDF.derive([PasswordKDF.Request(kind: .pkcs12SHA256(id: 3), password: bmp, salt: salt, iterations: 1000, length: 32)])
            let openSSL = PasswordKDF.derivePKCS12WithOpenSSL(utf8Password: password, salt: salt, id: 3, iterations: 1000, length: 32)
            #expect(ours?.first != nil && ours?.first == openSSL, "password bytes \(password)")
        }
    }

    @Test func requestsOutsideTheDerivationsAreDeclined() {
        let valid = PasswordKDF.Request(kind: .pkcs12SHA256(id: 3), password: [0, 0], salt: [1], iterations: 1, length: 32)
        var tooLong = valid
        tooLong.length = 33
        var noIterations = valid
        noIterations.iterations = 0
        #expect(PasswordKDF.derive([valid]) != nil)
        #expect(PasswordKDF.derive([valid, tooLong]) == nil)
        #expect(PasswordKDF.derive([noIterations, valid]) == nil)
    }

    // MARK: - Whole stores

    static func sameEntries(_ a: [PKCS12Entry], _ b: [PKCS12Entry]) throws -> Bool {
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b) {
            guard x.friendlyName == y.friendlyName, x.localKeyID == y.localKeyID, x.certificates == y.certificates,
                  try x.privateKey?.pkcs8DER() == y.privateKey?.pkcs8DER() else { return false }
        }
        return true
    }

    /// Reads `bytes` both ways; the two must agree, and `expected` says which way the default read went.
    static func expectBothReadsAgree(_ bytes: [UInt8], password: [UInt8], keyPassword: [UInt8]? = nil,
                                     expected: PKCS12.Decryption, _ label: String) throws -> [PKCS12Entry] {
        let together = try PKCS12.read(bytes, password: password, keyPassword: keyPassword)
        let openSSL = try PKCS12.read(bytes, password: password, keyPassword: keyPassword, derivingTogether: false)
        #expect(together.decryption == expected, "\(label)")
        #expect(openSSL.decryption == .openSSL)
        #expect(try sameEntries(together.entries, openSSL.entries), "\(label)")
        #expect(together.entries.contains { $0.privateKey != nil }, "\(label)")
        return together.entries
    }

    /// The error of each read, as text (it must not depend on the way).
    static func errorText(_ body: () throws -> Any) -> String? {
        do { _ = try body(); return nil } catch { return "\(type(of: error)): \(error)" }
    }

    @Test func keytoolStoreReadsWithDerivedKeysAndRefusesAWrongPassword() throws {
        let directory = try TestSupport.makeTemporaryDirectory("kdf")
        defer { try? FileManager.default.removeItem(at: directory) }
        // keytool takes only ASCII passwords for PKCS#12 ("Password is not ASCII"): the other stores carry the rest.
        for (password, algorithm, size) in [("st0re-Pass", "RSA", 2048), ("a much longer store password, well over sixty-four bytes: 0123456789", "EC", 256)] {
            let path = directory.appendingPathComponent("store-\(algorithm).p12").path
            try KeytoolFixture.generate(keystore: path, type: "PKCS12", alias: "upload", algorithm: algorithm, size: size,
                                        storePassword: password)
            let bytes = try TestSupport.readBytes(path)
            let entries = try Self.expectBothReadsAgree(bytes, password: Array(password.utf8), expected: .derivedTogether, "keytool \(algorithm)")
            #expect(entries.first?.certificates.first?.derBytes
                == (try KeytoolFixture.exportCertificate(keystore: path, type: "PKCS12", alias: "upload", storePassword: password)))
            // A wrong key password with the right store password: the key is tried with the key password, then with the
            // store password, which opens it (keytool seals a PKCS#12 store's key with the store's one password).
            _ = try Self.expectBothReadsAgree(bytes, password: Array(password.utf8), keyPassword: Array("not-it".utf8),
                                              expected: .derivedTogether, "keytool \(algorithm), wrong key password")

            for wrong in ["Wr0ng-Passw0rd", "", password + "x"] {
                let together = Self.errorText { try PKCS12.read(bytes, password: Array(wrong.utf8)) }
                let openSSL = Self.errorText { try PKCS12.read(bytes, password: Array(wrong.utf8), derivingTogether: false) }
                #expect(together != nil && together == openSSL, "wrong password \(wrong.count) characters")
                let error = try #require(throws: KeyStoreError.self) {
                    try LoadedKeyStore(bytes: bytes, label: "store.p12", type: nil, storePassword: .pass(Secret(wrong)))
                }
                #expect(error.code == .wrongStorePassword)
                #expect(error.description == "keystore store.p12 did not open: wrong password (PKCS12 MAC verify failure)")
            }
        }
    }

    @Test func opensslStoresReadWithDerivedKeysOrFallBackToOpenSSL() throws {
        let directory = try TestSupport.makeTemporaryDirectory("kdf")
        defer { try? FileManager.default.removeItem(at: directory) }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        func openssl(_ arguments: [String]) throws {
            let result = try TestSupport.run("openssl", arguments)
            guard result.succeeded else { throw FixtureError(message: "openssl \(arguments.prefix(2)) failed:\n\(result)") }
        }
        try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path("key.pem"), "-out", path("cert.pem"),
                     "-days", "365", "-subj", "/CN=OpenSSL export"])
        let password = "ö-pass-€"
        let cases: [(name: String, options: [String], expected: PKCS12.Decryption)] = [
            ("defaults", [], .derivedTogether),
            ("aes-128 key, aes-192 certificates", ["-keypbe", "AES-128-CBC", "-certpbe", "AES-192-CBC", "-iter", "5000"], .derivedTogether),
            ("no MAC", ["-nomac"], .derivedTogether),
            ("certificates in the clear", ["-certpbe", "NONE"], .derivedTogether),
            ("one iteration, MAC iterations absent", ["-noiter", "-nomaciter"], .derivedTogether),
            ("SHA-512 MAC", ["-macalg", "sha512"], .openSSL),
            ("SHA-1 MAC", ["-macalg", "sha1"], .derivedTogether),
            ("3DES PKCS#12 PBE", ["-keypbe", "PBE-SHA1-3DES", "-certpbe", "PBE-SHA1-3DES", "-macalg", "sha1"], .derivedTogether),
            ("-legacy: 3DES key, RC2-40 certificates, SHA-1 MAC", ["-legacy"], .derivedTogether),
            ("2-key 3DES key, RC4-128 certificates", ["-legacy", "-keypbe", "PBE-SHA1-2DES", "-certpbe", "PBE-SHA1-RC4-128", "-iter", "3000"], .derivedTogether),
            ("SHA-224 MAC, 3DES key", ["-keypbe", "PBE-SHA1-3DES", "-macalg", "sha224"], .openSSL),
        ]
        for (index, testCase) in cases.enumerated() {
            let store = path("store-\(index).p12")
            try openssl(["pkcs12", "-export", "-inkey", path("key.pem"), "-in", path("cert.pem"), "-name", "exported",
                         "-passout", "pass:\(password)", "-out", store] + testCase.options)
            let bytes = try TestSupport.readBytes(store)
            let entries = try Self.expectBothReadsAgree(bytes, password: Array(password.utf8), expected: testCase.expected, testCase.name)
            #expect(entries.first?.friendlyName == "exported", "\(testCase.name)")
            // A wrong password: the same error both ways, or (no MAC and no encrypted safe to refuse it) the same
            // listing with no key decrypted.
            func wrongOutcome(derivingTogether: Bool) -> String {
                do {
                    let entries = try PKCS12.read(bytes, password: Array("wrong".utf8), derivingTogether: derivingTogether).entries
                    return "read: " + entries.map { "\($0.friendlyName ?? "") key \($0.privateKey == nil ? "locked" : "open") \(String(describing: $0.keyError?.kind))" }
                        .joined(separator: ", ")
                } catch {
                    return "\(error)"
                }
            }
            let wrong = wrongOutcome(derivingTogether: true)
            #expect(!wrong.contains("key open") && wrong == wrongOutcome(derivingTogether: false), "\(testCase.name): \(wrong)")
        }
    }

    /// The MAC is checked, not only the decryption: a store whose plain bytes changed after the MAC was made
    /// (here the key's alias, which sits outside every encryption) still decrypts, and must be refused.
    @Test func storeChangedAfterItsMACIsRefused() throws {
        let key = try PrivateKey.generateEC(curve: "P-256")
        let certificate = try Certificate.makeSelfSigned(key: key, subject: "CN=MAC", notBefore: 1_767_225_600, validityDays: 30)
        let password = Array("mac-pass".utf8)
        var bytes = try PKCS12.make(key: key, certificates: [certificate], friendlyName: "release", password: password)
        let alias: [UInt8] = Array("release".utf8).flatMap { [0, $0] }   // BMPString
        let start = try #require((0...(bytes.count - alias.count)).first { Array(bytes[$0..<$0 + alias.count]) == alias })
        bytes[start + 1] = UInt8(ascii: "p")   // "pelease"
        let together = Self.errorText { try PKCS12.read(bytes, password: password) }
        let openSSL = Self.errorText { try PKCS12.read(bytes, password: password, derivingTogether: false) }
        #expect(openSSL?.contains("PKCS12_verify_mac") == true, "\(openSSL ?? "read")")
        #expect(together == openSSL)
    }

    @Test func storesMadeWithAnyPasswordReadWithDerivedKeys() throws {
        let key = try PrivateKey.generateEC(curve: "P-256")
        let certificate = try Certificate.makeSelfSigned(key: key, subject: "CN=KDF", notBefore: 1_767_225_600, validityDays: 30)
        var random = Random(state: 12)
        for password in Self.passwords + [random.bytes(30)] {
            let bytes = try PKCS12.make(key: key, certificates: [certificate], friendlyName: "k", password: password)
            _ = try Self.expectBothReadsAgree(bytes, password: password, expected: .derivedTogether, "password bytes \(password)")
            // Every single-byte change of the password is refused, the same way both times.
            var changed = password.isEmpty ? [0x61] : password
            changed[random.below(changed.count)] ^= 0x01
            let together = Self.errorText { try PKCS12.read(bytes, password: changed) }
            #expect(together != nil && together == Self.errorText { try PKCS12.read(bytes, password: changed, derivingTogether: false) })
        }
    }
}
