import APKCore
import Foundation
import Repack
import Sign
import Testing
import TestSupport
import Unpack

/// `apkpatch sign` through the built binary, with apksigner's option names, and the entries-based signing
/// path the pipeline uses.
@Suite(.removesTemporaryDirectories) struct SignCommandTests {
    static let shared: (directory: URL, rsa: TestKeys.Files) = TestSupport.sharedByTests {
        let directory = try! TestSupport.makeTemporaryDirectory("sign-cli-keys")
        return (directory, try! TestKeys.make(.rsa2048, in: directory, name: "cli"))
    }

    @Test("--key/--cert with --out, -v and --json; apksigner verifies")
    func keyAndCertificate() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let output = dir.appendingPathComponent("out.apk").path
        let keys = Self.shared.rsa
        let result = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out", output, "-v", input])
        #expect(result.succeeded, "\(result)")
        #expect(result.stdout.contains("Signed"), "\(result)")
        #expect(result.stdout.contains("schemes: v1, v2, v3"), "\(result)")
        let verify = try TestSupport.run("apksigner", ["verify", "-v", output])
        #expect(verify.succeeded, "\(verify)")

        let jsonOutput = dir.appendingPathComponent("json.apk").path
        let json = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out", jsonOutput, "--json", "--in", input])
        #expect(json.succeeded, "\(json)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["schemes"] as? [String] == ["v1", "v2", "v3"])
        #expect(object["minSdkVersion"] as? Int == 21)
        #expect(object["v1SignerName"] as? String == "CLI")
        #expect(object["signatureAlgorithms"] as? [String] == ["RSA_PKCS1_V1_5_WITH_SHA256"])
        #expect((object["signerCertificateSHA256"] as? String)?.count == 64)
        // Same input, same key: the two outputs are the same bytes.
        #expect(try TestSupport.readBytes(output) == (try TestSupport.readBytes(jsonOutput)))
    }

    /// Stale JAR signature files in any case are dropped by `sign` and by `run`, by apksig's
    /// `isJarEntryDigestNeededInManifest` rule (the file name in META-INF/ compared without regard to case):
    /// `META-INF/cert.sf`, `META-INF/CERT.RSA`, `META-INF/manifest.mf` and `META-INF/sig-x` go, while
    /// `meta-inf/manifest.mf` (another folder, as spelled) is an ordinary entry, kept and listed in the new
    /// MANIFEST.MF. apksigner verifies both outputs.
    @Test("stale lower-case JAR signature files: dropped by sign and run as apksig drops them")
    func staleLowerCaseSignatureFiles() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let stale = ["META-INF/cert.sf": "stale", "META-INF/CERT.RSA": "stale", "META-INF/manifest.mf": "Manifest-Version: 1.0\r\n",
                     "META-INF/sig-x": "stale", "meta-inf/manifest.mf": "Manifest-Version: 1.0\r\n"]
        let staging = dir.appendingPathComponent("stale")
        for (name, text) in stale { try TestSupport.write(text, to: name, in: staging) }
        let zipped = try TestSupport.run("zip", ["-q", input] + stale.keys.sorted(), currentDirectory: staging.path)
        try #require(zipped.succeeded, "\(zipped)")
        let keys = Self.shared.rsa
        let signed = dir.appendingPathComponent("signed.apk").path
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("console.log('patched');\n", to: "assets/www/js/patched.js", in: patch)
        let patched = dir.appendingPathComponent("patched.apk").path
        let sign = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--out", signed, input])
        #expect(sign.succeeded, "\(sign)")
        let run = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", patched, "--no-verify",
                                             "--key", keys.keyPK8, "--cert", keys.certificatePEM])
        #expect(run.succeeded, "\(run)")
        for output in [signed, patched] {
            let names = Set(try TestSupport.run("unzip", ["-Z1", output]).stdout.split(separator: "\n").map(String.init))
            for gone in ["META-INF/cert.sf", "META-INF/CERT.RSA", "META-INF/manifest.mf", "META-INF/sig-x"] {
                #expect(!names.contains(gone), "\(output): \(gone) kept")
            }
            #expect(names.contains("meta-inf/manifest.mf") && names.contains("META-INF/MANIFEST.MF"), "\(output): \(names.sorted())")
            let manifest = try TestSupport.run("unzip", ["-p", output, "META-INF/MANIFEST.MF"]).stdout
            #expect(manifest.contains("Name: meta-inf/manifest.mf"), "\(output)")
            #expect(!manifest.contains("Name: META-INF/"), "\(output)")
            let verify = try TestSupport.run("apksigner", ["verify", "-v", output])
            #expect(verify.succeeded, "\(output): \(verify)")
        }
    }

    /// `apkpatch sign` starts opening the last argument before parsing the rest (see `Sign.prepare`). When
    /// that argument is an option's value that happens to name another APK, that APK must not be signed.
    @Test("the CLI's early start on its last argument never signs the wrong file")
    func earlyStartUsesOnlyTheInputPath() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        // A different APK named like the value of the last option.
        var other = FixtureAPK.cordovaLike()
        other.rawFiles["assets/decoy.txt"] = Array("not the input".utf8)
        let decoy = try other.build(in: dir, name: "decoy.apk")
        try FileManager.default.moveItem(atPath: decoy, toPath: dir.appendingPathComponent("24").path)
        let keys = Self.shared.rsa
        let output = dir.appendingPathComponent("out.apk").path
        let result = try TestSupport.run(TestSupport.apkpatchBinary, ["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM,
                                                                     "--out", output, "--in", input, "--min-sdk-version", "24"],
                                         currentDirectory: dir.path)
        #expect(result.succeeded, "\(result)")
        let names = Set(try APKArchive(path: output).entries.map(\.name))
        #expect(!names.contains("assets/decoy.txt"))
        #expect(names.isSuperset(of: try APKArchive(path: input).entries.map(\.name).filter { !$0.hasPrefix("META-INF/") }))
        #expect(try TestSupport.run("apksigner", ["verify", output]).succeeded)
    }

    @Test("without --out the input is signed in place")
    func inPlace() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let before = try TestSupport.readBytes(input)
        let keys = Self.shared.rsa
        let result = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, input])
        #expect(result.succeeded, "\(result)")
        #expect(try TestSupport.readBytes(input) != before)
        #expect(try TestSupport.run("apksigner", ["verify", input]).succeeded)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
    }

    @Test("scheme switches and --min-sdk-version as apksigner spells them")
    func schemeSwitches() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let output = dir.appendingPathComponent("v2v3.apk").path
        let keys = Self.shared.rsa
        let result = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--v1-signing-enabled", "false",
                                               "--min-sdk-version", "24", "--out", output, input])
        #expect(result.succeeded, "\(result)")
        let verify = try TestSupport.run("apksigner", ["verify", "-v", "--min-sdk-version", "24", output])
        #expect(verify.succeeded, "\(verify)")
        #expect(verify.stdout.contains("Verified using v1 scheme (JAR signing): false"))
        #expect(try APKFacts(output).archive.entry(named: "META-INF/MANIFEST.MF") == nil)

        let none = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--v1-signing-enabled", "false",
                                             "--v2-signing-enabled", "false", "--v3-signing-enabled", "false", "--out", output, input])
        #expect(!none.succeeded)
        #expect(none.stderr.contains("enable at least one"), "\(none)")
    }

    /// apksigner's parser takes a boolean option's value only when the next argument is `true` or `false`, and
    /// otherwise means true; `--v1-signer-name` and `--debuggable-apk-permitted` mean what they mean there.
    @Test("valueless boolean options, --v1-signer-name and --debuggable-apk-permitted as apksigner reads them")
    func apksignerOptionForms() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let keys = Self.shared.rsa
        let key = ["--key", keys.keyPK8, "--cert", keys.certificatePEM]

        // `--v1-signing-enabled` right before the APK, and `--v3-signing-enabled=false`: v1 and v2 only.
        let ours = dir.appendingPathComponent("ours.apk").path
        let theirs = dir.appendingPathComponent("theirs.apk").path
        let options = ["--v3-signing-enabled=false", "--v1-signer-name", "my.cert-1", "--v2-signing-enabled", "--v1-signing-enabled"]
        let signed = try TestSupport.apkpatch(["sign"] + key + ["--out", ours] + options + [input])
        #expect(signed.succeeded, "\(signed)")
        let reference = try TestSupport.run("apksigner", ["sign"] + key + ["--out", theirs] + options + [input])
        #expect(reference.succeeded, "\(reference)")
        for path in [ours, theirs] {
            let verify = try TestSupport.run("apksigner", ["verify", "-v", path])
            #expect(verify.succeeded, "\(verify)")
            #expect(verify.stdout.contains("Verified using v1 scheme (JAR signing): true"), "\(verify)")
            #expect(verify.stdout.contains("Verified using v2 scheme (APK Signature Scheme v2): true"), "\(verify)")
            #expect(verify.stdout.contains("Verified using v3 scheme (APK Signature Scheme v3): false"), "\(verify)")
        }
        // The signer name is made safe as apksig does: upper case, [A-Z0-9_-], 8 characters.
        let names = { (path: String) in Set(try APKArchive(path: path).entries.map(\.name).filter { $0.hasPrefix("META-INF/") }) }
        #expect(try names(ours) == ["META-INF/MANIFEST.MF", "META-INF/MY_CERT-.SF", "META-INF/MY_CERT-.RSA"])
        #expect(try names(ours) == (try names(theirs)))

        // --debuggable-apk-permitted false: a debuggable APK is refused (nothing written), as by apksigner; a
        // valueless --debuggable-apk-permitted permits it; a non-debuggable APK is signed either way.
        var debuggable = FixtureAPK.cordovaLike()
        debuggable.applicationAttributes = #"android:debuggable="true""#
        let debuggableInput = try debuggable.build(in: dir, name: "debuggable.apk")
        let refused = dir.appendingPathComponent("refused.apk").path
        let refusal = try TestSupport.apkpatch(["sign"] + key + ["--debuggable-apk-permitted", "false", "--out", refused, debuggableInput])
        #expect(refusal.status == 1, "\(refusal)")
        #expect(refusal.stderr.contains("debuggable"), "\(refusal)")
        #expect(!FileManager.default.fileExists(atPath: refused))
        // A library page alignment whose padding may not fit the alignment extra field is refused before anything
        // is written (65535 trapped on the field's size at the wrong offset); the largest that fits is signed.
        let tooLarge = try TestSupport.apkpatch(["sign"] + key + ["--lib-page-alignment", "65531", "--out", refused, input])
        #expect(tooLarge.status == 1, "\(tooLarge)")
        #expect(tooLarge.stderr.contains("library page alignment 65531 does not fit"), "\(tooLarge)")
        #expect(!FileManager.default.fileExists(atPath: refused))
        let largest = try TestSupport.apkpatch(["sign"] + key + ["--lib-page-alignment", "65530", "--out", refused, input])
        #expect(largest.succeeded, "\(largest)")
        try? FileManager.default.removeItem(atPath: refused)
        let apksignerRefusal = try TestSupport.run("apksigner", ["sign"] + key + ["--debuggable-apk-permitted", "false", "--out", refused, debuggableInput])
        #expect(apksignerRefusal.stderr.contains("APK is debuggable"), "\(apksignerRefusal)")
        let permitted = try TestSupport.apkpatch(["sign"] + key + ["--out", refused, "--debuggable-apk-permitted", debuggableInput])
        #expect(permitted.succeeded, "\(permitted)")
        let plain = try TestSupport.apkpatch(["sign"] + key + ["--debuggable-apk-permitted", "false", "--out", ours, input])
        #expect(plain.succeeded, "\(plain)")

        // An apksigner option apkpatch lacks leaves its value behind as a second input: the error says so.
        let unknown = try TestSupport.apkpatch(["sign"] + key + ["--hybrid-min-sdk-version", "37", "--out", ours, input])
        #expect(!unknown.succeeded)
        #expect(unknown.stderr.contains("37") && unknown.stderr.contains("does not support that option"), "\(unknown)")
    }

    /// `apkpatch sign` starts loading a keystore before parsing its options (see `Sign.prepare`) and uses that
    /// load only when the parsed options name the same keystore, alias and password sources.
    @Test("the CLI's early start on the keystore: option spellings, a wrong password, options that overrule the guess")
    func earlyKeyStoreLoad() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let store = dir.appendingPathComponent("early.p12").path
        try TestSupport.makeKeyStore(at: store, password: "store-secret", alias: "early", dname: "CN=Early, C=US")
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let environment = ["APKPATCH_TEST_KS_PASS": "store-secret", "APKPATCH_TEST_WRONG": "not-it"]
        try TestSupport.write("store-secret\n", to: "pass.txt", in: dir)
        let passwordFile = dir.appendingPathComponent("pass.txt").path
        let cases: [(label: String, options: [String], succeeds: Bool)] = [
            ("equals", ["--ks=\(store)", "--ks-pass=env:APKPATCH_TEST_KS_PASS", "--ks-key-alias=early"], true),
            ("wrong", ["--ks", store, "--ks-pass", "env:APKPATCH_TEST_WRONG"], false),
            // Given twice, the parser takes the last value; the early start, in doubt, does not start.
            ("twice", ["--ks", store, "--ks-pass", "env:APKPATCH_TEST_WRONG", "--ks-pass", "env:APKPATCH_TEST_KS_PASS"], true),
            ("file", ["--ks", store, "--ks-pass", "file:\(passwordFile)"], true),
        ]
        for (label, options, succeeds) in cases {
            let output = dir.appendingPathComponent("\(label).apk").path
            let result = try TestSupport.apkpatch(["sign"] + options + ["--out", output, input], environment: environment)
            #expect(result.succeeded == succeeds, "\(label): \(result)")
            #expect(!result.stderr.contains("store-secret") && !result.stderr.contains("not-it"), "\(label)")
            if succeeds {
                #expect(try TestSupport.run("apksigner", ["verify", output]).succeeded, "\(label)")
            } else {
                #expect(result.stderr.contains("wrong password"), "\(label): \(result)")
                #expect(!FileManager.default.fileExists(atPath: output), "\(label)")
            }
        }
    }

    @Test("keystores made by keytool (PKCS12 and JKS); the alias names the v1 files", arguments: ["PKCS12", "JKS"])
    func keytoolStores(type: String) throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let store = dir.appendingPathComponent("release.\(type.lowercased())").path
        try TestSupport.makeKeyStore(at: store, password: "store-secret", alias: "my.release-key", dname: "CN=Release, O=Example, C=US", type: type)
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let output = dir.appendingPathComponent("signed.apk").path
        let result = try TestSupport.apkpatch(["sign", "--ks", store, "--ks-key-alias", "my.release-key", "--ks-pass", "env:APKPATCH_TEST_KS_PASS",
                                               "--out", output, input], environment: ["APKPATCH_TEST_KS_PASS": "store-secret"])
        #expect(result.succeeded, "\(result)")
        #expect(!result.stdout.contains("store-secret") && !result.stderr.contains("store-secret"))
        let verify = try TestSupport.run("apksigner", ["verify", "--print-certs", output])
        #expect(verify.succeeded, "\(verify)")
        #expect(verify.stdout.contains("CN=Release, O=Example, C=US"), "\(verify)")
        // getSafeSignerName("my.release-key") = "MY_RELEA".
        #expect(try APKFacts(output).archive.entry(named: "META-INF/MY_RELEA.SF") != nil)
    }

    @Test("by default (level 9) with apksigner's alignment options the output is apksigner's bytes; --jar-deflate-level 1 differs only there")
    func jarDeflateLevel() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let keys = Self.shared.rsa
        let theirs = dir.appendingPathComponent("apksigner.apk").path
        let apksigner = try TestSupport.run("apksigner", ["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM,
                                                          "--v4-signing-enabled", "false", "--out", theirs, input])
        #expect(apksigner.succeeded, "\(apksigner)")
        let common = ["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--alignment-preserved", "true", "--misaligned-apk-permitted", "true", "--lib-page-alignment", "4096"]
        let nine = dir.appendingPathComponent("nine.apk").path
        let result = try TestSupport.apkpatch(common + ["--out", nine, input])
        #expect(result.succeeded, "\(result)")
        #expect(try TestSupport.readBytes(nine) == (try TestSupport.readBytes(theirs)))
        let fast = dir.appendingPathComponent("fast.apk").path
        #expect(try TestSupport.apkpatch(common + ["--jar-deflate-level", "1", "--out", fast, input]).succeeded)
        #expect(try TestSupport.readBytes(fast) != (try TestSupport.readBytes(theirs)))
        #expect(try TestSupport.run("apksigner", ["verify", fast]).succeeded)
        // Same JAR signature contents, only compressed differently.
        for name in ["META-INF/MANIFEST.MF", "META-INF/CLI.SF"] {
            let a = try TestSupport.run("unzip", ["-p", fast, name]).stdout, b = try TestSupport.run("unzip", ["-p", theirs, name]).stdout
            #expect(!a.isEmpty && a == b, "\(name)")
        }
        let bad = try TestSupport.apkpatch(common + ["--jar-deflate-level", "10", "--out", fast, input])
        #expect(!bad.succeeded && bad.stderr.contains("--jar-deflate-level takes 0 to 9"), "\(bad)")
    }

    @Test("apksigcopier (F-Droid's reproducible-build check) compares and copies a default apkpatch signature as it does apksigner's")
    func apksigcopierCopiesTheSignature() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let unsigned = try FixtureAPK.cordovaLike().build(in: dir)
        let keys = Self.shared.rsa
        for (label, options) in [("apkpatch", ["--alignment-preserved", "true", "--misaligned-apk-permitted", "true"]), ("apkpatch-run", [])] {
            let signed = dir.appendingPathComponent("\(label).apk").path
            let sign: TestSupport.ProcessResult
            if label == "apkpatch-run" {
                // `run` signs what it repacks: compare against its own unsigned stage.
                let stages = dir.appendingPathComponent("stages").path, patch = dir.appendingPathComponent("patch")
                try FileManager.default.createDirectory(at: patch, withIntermediateDirectories: true)
                sign = try TestSupport.apkpatch(["run", unsigned, "--patch", patch.path, "--key", keys.keyPK8, "--cert", keys.certificatePEM,
                                                 "--keep-stages", stages, "--out", signed, "-q"])
            } else {
                sign = try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM] + options + ["--out", signed, unsigned])
            }
            #expect(sign.succeeded, "\(sign)")
            let reference = label == "apkpatch-run" ? dir.appendingPathComponent("stages/unsigned-aligned.apk").path : unsigned
            let compare = try TestSupport.run("apksigcopier", ["compare", signed, "--unsigned", reference])
            #expect(compare.succeeded, "\(label): \(compare)")
            let copied = dir.appendingPathComponent("\(label)-copied.apk").path
            let copy = try TestSupport.run("apksigcopier", ["copy", signed, reference, copied])
            #expect(copy.succeeded, "\(label): \(copy)")
            #expect(try TestSupport.readBytes(copied) == (try TestSupport.readBytes(signed)), "\(label): the copy is the signed APK")
            // The same in two steps, through the files F-Droid keeps in its metadata (the JAR files, the signing
            // block and its offset).
            let metadata = dir.appendingPathComponent("\(label)-metadata")
            try FileManager.default.createDirectory(at: metadata, withIntermediateDirectories: true)
            let extract = try TestSupport.run("apksigcopier", ["extract", signed, metadata.path])
            #expect(extract.succeeded, "\(label): \(extract)")
            let patched = dir.appendingPathComponent("\(label)-patched.apk").path
            let patch = try TestSupport.run("apksigcopier", ["patch", metadata.path, reference, patched])
            #expect(patch.succeeded, "\(label): \(patch)")
            #expect(try TestSupport.readBytes(patched) == (try TestSupport.readBytes(signed)), "\(label): extract and patch give the signed APK")
        }
        // F-Droid's direction: apksigcopier copies the developer's apksigner signature onto the unsigned rebuild, which
        // must then be the APK apkpatch signs with the same key. This pins the JAR signature files' bytes: the
        // checks above copy our own .SF, and apksigner's verify skips the .SF's per-entry digests when its
        // whole-manifest digest matches, so a wrong section digest would pass them.
        let theirs = dir.appendingPathComponent("apksigner35.apk").path
        let apksigner = try NewerApksigner.run(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--alignment-preserved", "true",
                                                "--out", theirs, unsigned])
        try #require(apksigner.succeeded, "apksigner 35 sign: \(apksigner)")
        let fromTheirs = dir.appendingPathComponent("apksigner35-copied.apk").path
        let copy = try TestSupport.run("apksigcopier", ["copy", theirs, unsigned, fromTheirs])
        try #require(copy.succeeded, "apksigcopier copy of apksigner 35's signature: \(copy)")
        let ours = dir.appendingPathComponent("apkpatch.apk").path
        for name in ["META-INF/MANIFEST.MF", "META-INF/CLI.SF"] {
            let a = try TestSupport.run("unzip", ["-p", ours, name]).stdout, b = try TestSupport.run("unzip", ["-p", fromTheirs, name]).stdout
            #expect(!a.isEmpty && a == b, "\(name): apkpatch's bytes are not apksigner 35's")
        }
        #expect(try TestSupport.readBytes(fromTheirs) == (try TestSupport.readBytes(ours)), "apksigner 35's signature copied onto the unsigned APK is not apkpatch's APK")
        // The cheap level is what apksigcopier cannot reproduce: the check above fails without level 9.
        let fast = dir.appendingPathComponent("fast.apk").path
        #expect(try TestSupport.apkpatch(["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM, "--alignment-preserved", "true",
                                          "--misaligned-apk-permitted", "true", "--jar-deflate-level", "1", "--out", fast, unsigned]).succeeded)
        let refused = try TestSupport.run("apksigcopier", ["compare", fast, "--unsigned", unsigned])
        #expect(!refused.succeeded && refused.stderr.contains("compresslevel"), "\(refused)")
    }

    @Test("signing the pipeline's entry list gives the same bytes as signing the archive")
    func entriesPathMatchesArchivePath() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let archive = try APKArchive(path: input)
        let key = Self.shared.rsa.key
        let fromArchive = dir.appendingPathComponent("archive.apk").path
        let fromEntries = dir.appendingPathComponent("entries.apk").path
        _ = try Signer(config: SignerConfig(key: key)).sign(archive, to: fromArchive)
        let entries = try Repacker.rawEntries(of: archive.zip)
        let cache = SigningCache()
        _ = try Signer(config: SignerConfig(key: key)).sign(entries: entries, to: fromEntries, cache: cache)
        #expect(try TestSupport.readBytes(fromArchive) == (try TestSupport.readBytes(fromEntries)))
        #expect(cache.count == entries.filter { !$0.entry.isDirectory }.count)
        // A second run with the warm cache gives the same bytes again.
        let again = dir.appendingPathComponent("again.apk").path
        _ = try Signer(config: SignerConfig(key: key)).sign(entries: entries, to: again, cache: cache)
        #expect(try TestSupport.readBytes(again) == (try TestSupport.readBytes(fromEntries)))
    }

    @Test("watch mode's recycled output: every run equals a fresh signing, unchanged leading records are skipped, the working files go with the cache")
    func recycledOutputMatchesFreshSigning() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let archive = try APKArchive(path: try FixtureAPK.cordovaLike().build(in: dir))
        let key = Self.shared.rsa.key
        // A stored 3 MiB asset first, so whole 1 MiB chunks lie before every change and their digests are reused.
        let big = (0..<((3 << 20) + 12345)).map { UInt8(truncatingIfNeeded: ($0 &* 2654435761) >> 11) }
        let base = [try OutputEntry.making(name: "assets/big.bin", content: big, method: .stored, timestamp: .apksigDefault)]
            + (try Repacker.rawEntries(of: archive.zip))
        func edited(_ text: String) throws -> [OutputEntry] {
            base + [try OutputEntry.making(name: "assets/www/js/edit.js", content: Array(text.utf8), method: .deflated, timestamp: .apksigDefault)]
        }
        let versions = [base, try edited("one"), try edited("two"), base, try edited("two"), try edited("three")]
        var cache: SigningCache? = SigningCache()
        let output = dir.appendingPathComponent("out.apk").path
        let reference = dir.appendingPathComponent("reference.apk").path
        for (run, entries) in versions.enumerated() {
            _ = try Signer(config: SignerConfig(key: key)).sign(entries: entries, to: output, cache: cache)
            _ = try Signer(config: SignerConfig(key: key)).sign(entries: entries, to: reference)
            #expect(try TestSupport.readBytes(output) == (try TestSupport.readBytes(reference)), "run \(run)")
            // Runs alternate between two files (the second starts as a copy of the first build); from the second
            // run on, each finds its file's leading records unchanged.
            if run >= 1 { #expect(cache!.lastSkippedBytes > 3 << 20, "run \(run): skipped \(cache!.lastSkippedBytes)") }
        }
        let verify = try TestSupport.run("apksigner", ["verify", output])
        #expect(verify.succeeded, "\(verify)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).contains { $0.contains(".apkpatch-") })
        cache = nil
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".apkpatch-") || $0.contains(".tmp-") }.isEmpty)
        #expect(try TestSupport.readBytes(output) == (try TestSupport.readBytes(reference)))
    }

    @Test("a failed signing leaves no output and the input untouched")
    func failureLeavesNothing() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let before = try TestSupport.readBytes(input)
        let output = dir.appendingPathComponent("out.apk").path
        let other = try TestKeys.make(.ecP256, in: dir, name: "ec")
        // EC key, v1 on, API 14: refused before anything is written.
        let result = try TestSupport.apkpatch(["sign", "--key", other.keyPK8, "--cert", other.certificatePEM, "--min-sdk-version", "14",
                                               "--out", output, input])
        #expect(!result.succeeded)
        #expect(result.stderr.contains("ECDSA JAR (v1) signatures need minSdkVersion 18"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: output))
        #expect(try TestSupport.readBytes(input) == before)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
    }
}
