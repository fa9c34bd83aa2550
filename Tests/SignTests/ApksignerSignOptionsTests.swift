import APKCore
import Foundation
import Sign
import SignatureSchemes
import Testing
import TestSupport
import Unpack

/// apksigner sign options beyond the common ones: `--deterministic-dsa-signing` (RFC 6979), a rotation or
/// signer targeting the release in development (apksig's DEV_RELEASE), `--signer-for-min-sdk-version` before
/// the first signer's key options, and `pinlist.meta` in `run` and `watch`.
@Suite(.removesTemporaryDirectories) struct ApksignerSignOptionsTests {
    // The keys and signing-block readers of the rotation tests.
    static func signer(_ index: Int) -> [String] { RotationV31Tests.signer(index) }
    static func der(of key: Int) -> [UInt8] { RotationV31Tests.der(of: key) }
    static func signingBlock(_ path: String) throws -> SigningBlock { try RotationV31Tests.signingBlock(path) }

    static func signers(_ block: SigningBlock, _ id: UInt32, _ version: SignatureSchemeVersion = .v3) throws -> [SignatureSchemeSigner] {
        guard version == .v2 else { return try RotationV31Tests.signers(block, id) }
        return try SignatureSchemeBlock(decoding: try #require(block.value(for: id)), version: .v2).signers
    }

    /// A lineage from key 0 to key 1 made with `apkpatch rotate`.
    static func lineage(in dir: URL) throws -> String { try RotationV31Tests.lineage(through: 1, in: dir) }

    @Test("--deterministic-dsa-signing: the same APK and DSA key give the same bytes (APK and .idsig), accepted by apksigner and OpenSSL")
    func deterministicDSA() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let dsa = try TestKeys.make(.dsa2048, in: dir, name: "dsa")
        let signer = ["--key", dsa.keyPK8, "--cert", dsa.certificatePEM]
        var warnings: [String: String] = [:]
        func sign(_ name: String, _ options: [String]) throws -> String {
            let out = dir.appendingPathComponent(name).path
            let result = try TestSupport.apkpatch(["sign"] + signer + options + ["--out", out, input])
            #expect(result.succeeded, "\(name): \(result)")
            warnings[name] = result.stderr
            return out
        }
        let first = try sign("first.apk", ["--deterministic-dsa-signing", "true"])
        let second = try sign("second.apk", ["--deterministic-dsa-signing=true"])
        #expect(try TestSupport.readBytes(first) == (try TestSupport.readBytes(second)), "deterministic: byte-identical APKs")
        #expect(try TestSupport.readBytes(first + ".idsig") == (try TestSupport.readBytes(second + ".idsig")), "and v4 signatures")
        // The default stays Java's SHA256withDSA: a random k, other signatures each time.
        let random1 = try sign("random1.apk", []), random2 = try sign("random2.apk", ["--deterministic-dsa-signing", "false"])
        #expect(try TestSupport.readBytes(random1) != (try TestSupport.readBytes(random2)))
        // Valueless it is false, as apksigner reads it (`getOptionalBooleanValue(false)`, unlike its other
        // boolean options): random signatures, and a warning saying so. The APK after it is not taken for a value.
        let bare1 = try sign("bare1.apk", ["--deterministic-dsa-signing"]), bare2 = try sign("bare2.apk", ["--deterministic-dsa-signing"])
        #expect(try TestSupport.readBytes(bare1) != (try TestSupport.readBytes(bare2)), "valueless means false: random k")
        #expect(warnings["bare1.apk"]?.contains("--deterministic-dsa-signing without a value means false") == true, "\(warnings)")
        #expect(warnings["first.apk"]?.contains("without a value") == false, "\(warnings)")
        // Below API 21 the JAR signature is SHA1withDetDSA: deterministic too.
        let old1 = try sign("old1.apk", ["--deterministic-dsa-signing", "true", "--min-sdk-version", "14"])
        let old2 = try sign("old2.apk", ["--deterministic-dsa-signing", "true", "--min-sdk-version", "14"])
        #expect(try TestSupport.readBytes(old1) == (try TestSupport.readBytes(old2)))

        for (path, level) in [(first, "21"), (old1, "14")] {
            let verify = try TestSupport.run("apksigner", ["verify", "-v", "--min-sdk-version", level, path])
            #expect(verify.succeeded && verify.stdout.contains("Verified using v2 scheme (APK Signature Scheme v2): true")
                    && verify.stdout.contains("Verified using v3 scheme (APK Signature Scheme v3): true"), "\(verify)")
            #expect(try TestSupport.apkpatch(["verify", "--signature-only", "--v4-signature-file", path + ".idsig", path]).succeeded)
        }

        // OpenSSL checks the v2 and v3 signatures (DSA with SHA-256 over the signed data) with the certificate's key.
        let publicKey = dir.appendingPathComponent("dsa.pub.pem").path
        #expect(try TestSupport.run("openssl", ["x509", "-in", dsa.certificatePEM, "-pubkey", "-noout", "-out", publicKey]).succeeded)
        let block = try Self.signingBlock(first)
        for (id, version) in [(SigningBlock.ID.v2, SignatureSchemeVersion.v2), (SigningBlock.ID.v3, .v3)] {
            let signer = try #require(try Self.signers(block, id, version).first)
            #expect(signer.signatures.map(\.algorithmID) == [0x0301], "\(version)")
            let data = dir.appendingPathComponent("signed-data-\(version)").path, signature = dir.appendingPathComponent("signature-\(version)").path
            try Data(signer.signedDataBytes).write(to: URL(fileURLWithPath: data))
            try Data(try #require(signer.signatures.first).value).write(to: URL(fileURLWithPath: signature))
            let verify = try TestSupport.run("openssl", ["dgst", "-sha256", "-verify", publicKey, "-signature", signature, data])
            #expect(verify.succeeded && verify.stdout.contains("Verified OK"), "\(version): \(verify)")
        }

        // Bouncy Castle's SHA256withDetDSA / SHA1withDetDSA (what apksig signs with for this option) gives the
        // same signatures over the same bytes with the same key: the v2 block's, and the JAR signature block's
        // over the .SF file (SHA-1 below API 21).
        let program = dir.appendingPathComponent("DetDSA.java").path
        try Data(Self.bouncyCastleSigner.utf8).write(to: URL(fileURLWithPath: program))
        func bouncyCastle(_ data: [UInt8], digest: String) throws -> [UInt8] {
            let input = dir.appendingPathComponent("bc-in").path, output = dir.appendingPathComponent("bc-out").path
            try Data(data).write(to: URL(fileURLWithPath: input))
            let run = try TestSupport.run("java", ["-cp", "/usr/share/java/bcprov.jar", program, dsa.keyPK8, input, digest, output])
            #expect(run.succeeded, "\(run)")
            return try TestSupport.readBytes(output)
        }
        let v2Signer = try #require(try Self.signers(block, SigningBlock.ID.v2, .v2).first)
        #expect(try bouncyCastle(v2Signer.signedDataBytes, digest: "SHA256") == v2Signer.signatures.first?.value)
        for (path, digest) in [(first, "SHA256"), (old1, "SHA1")] {
            let archive = try APKArchive(path: path)
            let signatureFile = try archive.uncompressedData(of: try #require(archive.entry(named: "META-INF/DSA.SF")))
            let signatureBlock = try archive.uncompressedData(of: try #require(archive.entry(named: "META-INF/DSA.DSA")))
            let expected = try bouncyCastle(signatureFile, digest: digest)
            #expect(signatureBlock.count > expected.count && signatureBlock.suffix(expected.count) == expected[...], "\(digest): the SignerInfo's signature")
        }

        // run takes the option too.
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("console.log('patched');\n", to: "assets/www/js/patched.js", in: patch)
        var runs: [[UInt8]] = []
        for name in ["run1.apk", "run2.apk"] {
            let out = dir.appendingPathComponent(name).path
            let run = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", out] + signer + ["--deterministic-dsa-signing", "true"])
            #expect(run.succeeded, "\(run)")
            runs.append(try TestSupport.readBytes(out))
        }
        #expect(runs[0] == runs[1])
    }

    /// Signs a file with Bouncy Castle's deterministic DSA: `java -cp bcprov.jar DetDSA.java KEY.pk8 IN SHA256|SHA1 OUT`.
    static let bouncyCastleSigner = """
    import java.nio.file.*;
    import java.security.*;
    import java.security.spec.PKCS8EncodedKeySpec;

    public class DetDSA {
        public static void main(String[] args) throws Exception {
            Security.addProvider(new org.bouncycastle.jce.provider.BouncyCastleProvider());
            PrivateKey key = KeyFactory.getInstance("DSA").generatePrivate(new PKCS8EncodedKeySpec(Files.readAllBytes(Path.of(args[0]))));
            Signature signature = Signature.getInstance(args[2] + "withDetDSA", "BC");
            signature.initSign(key);
            signature.update(Files.readAllBytes(Path.of(args[1])));
            Files.write(Path.of(args[3]), signature.sign());
        }
    }
    """

    @Test("a rotation or signer targeting the release in development (apksig's DEV_RELEASE) is written for the production level with the development-release attribute")
    func developmentRelease() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let lineage = try Self.lineage(in: dir)
        let layout = ["--v4-signing-enabled", "false"]
        func sign(_ name: String, _ arguments: [String]) throws -> String {
            let out = dir.appendingPathComponent(name).path
            let result = try TestSupport.apkpatch(["sign"] + arguments + layout + ["--out", out, input])
            #expect(result.succeeded, "\(name): \(result)")
            return out
        }
        let development = String(AndroidSDK.developmentRelease), production = AndroidSDK.productionRelease
        let rotation = try sign("rotation.apk", Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage, "--rotation-min-sdk-version", development])
        let block = try Self.signingBlock(rotation)
        let v31 = try Self.signers(block, SigningBlock.ID.v31), v30 = try Self.signers(block, SigningBlock.ID.v3)
        #expect(v31.map(\.signedData.certificates) == [[Self.der(of: 1)]])
        #expect(v31.first?.minSdkVersion == Int32(production) && v31.first?.maxSdkVersion == Int32.max)
        #expect(v31.first?.signedData.additionalAttributes.map(\.id) == [AdditionalAttribute.ID.proofOfRotation, 0xc2a6_b3ba])
        #expect(v30.map(\.signedData.certificates) == [[Self.der(of: 0)]])
        #expect(v30.first?.maxSdkVersion == Int32(production), "the old key also covers the production release of that level")
        #expect(v30.first?.signedData.additionalAttributes == [AdditionalAttribute(id: 0x559f_8b02, value: [UInt8(production), 0, 0, 0])])
        let verify = try TestSupport.apkpatch(["verify", "--signature-only", "--print-certs", rotation])
        #expect(verify.succeeded && verify.stdout.contains("Signer (minSdkVersion=\(production) (dev release=true), maxSdkVersion=2147483647)"), "\(verify)")
        #expect(try TestSupport.run("apksigner", ["verify", "--max-sdk-version", "32", rotation]).succeeded)

        // The same bytes as naming the production level with --rotation-targets-dev-release, and as a signer
        // targeting the development release.
        let explicit = try sign("explicit.apk", Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage, "--rotation-min-sdk-version",
                                                                                                       String(production), "--rotation-targets-dev-release"])
        #expect(try TestSupport.readBytes(explicit) == (try TestSupport.readBytes(rotation)))
        let targeted = try sign("targeted.apk", Self.signer(0) + ["--signer-for-min-sdk-version", development] + Self.signer(1) + ["--signer-lineage", lineage])
        #expect(try TestSupport.readBytes(targeted) == (try TestSupport.readBytes(rotation)))
        // One level above the production release is not the development release: no attribute.
        let production1 = try sign("later.apk", Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage, "--rotation-min-sdk-version", String(production)])
        let plain = try Self.signers(try Self.signingBlock(production1), SigningBlock.ID.v31)
        #expect(plain.first?.minSdkVersion == Int32(production) && plain.first?.signedData.additionalAttributes.map(\.id) == [AdditionalAttribute.ID.proofOfRotation])
    }

    @Test("--signer-for-min-sdk-version before any key option targets the first signer, as apksigner parses it")
    func firstSignerTargeted() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let lineage = try Self.lineage(in: dir)
        let layout = ["--v4-signing-enabled", "false"]
        func sign(_ name: String, _ arguments: [String]) throws -> (TestSupport.ProcessResult, String) {
            let out = dir.appendingPathComponent(name).path
            return (try TestSupport.apkpatch(["sign"] + arguments + layout + ["--out", out, input]), out)
        }
        // The new key targeted first, the original after --next-signer: the default rotation, byte for byte.
        let (rotation, rotationPath) = try sign("rotation.apk", Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage])
        #expect(rotation.succeeded, "\(rotation)")
        for (label, arguments) in [("level then lineage", ["--signer-for-min-sdk-version", "33"] + Self.signer(1) + ["--signer-lineage", lineage]),
                                   ("lineage first", ["--signer-lineage", lineage, "--signer-for-min-sdk-version", "33"] + Self.signer(1))] {
            let (first, firstPath) = try sign("first-\(label.count).apk", arguments + ["--next-signer"] + Self.signer(0))
            #expect(first.succeeded, "\(label): \(first)")
            #expect(try TestSupport.readBytes(firstPath) == (try TestSupport.readBytes(rotationPath)), "\(label)")
        }

        // One targeted signer alone, for an APK from API 33: the v3 signer covers 33 on; v1 and v2 are its too
        // (no lineage: it starts its own signing history, as apksig makes it).
        let (alone, alonePath) = try sign("alone.apk", ["--signer-for-min-sdk-version", "33"] + Self.signer(1) + ["--min-sdk-version", "33"])
        #expect(alone.succeeded, "\(alone)")
        let block = try Self.signingBlock(alonePath)
        #expect(block.value(for: SigningBlock.ID.v31) == nil)
        let v30 = try Self.signers(block, SigningBlock.ID.v3)
        #expect(v30.map(\.signedData.certificates) == [[Self.der(of: 1)]] && v30.first?.minSdkVersion == 33 && v30.first?.signedData.additionalAttributes == [])
        #expect(try Self.signers(block, SigningBlock.ID.v2, .v2).map(\.signedData.certificates) == [[Self.der(of: 1)]])
        let verify = try TestSupport.run("apksigner", ["verify", "-v", "--min-sdk-version", "33", alonePath])
        #expect(verify.succeeded, "\(verify)")

        // Refused as apksig refuses: a targeted signer alone that leaves API 28…32 uncovered, and a lineage for an
        // untargeted first signer.
        let (gap, _) = try sign("gap.apk", ["--signer-for-min-sdk-version", "33"] + Self.signer(1))
        #expect(!gap.succeeded && gap.stderr.contains("do not cover API 28"), "\(gap)")
        let (stray, _) = try sign("stray.apk", Self.signer(0) + ["--signer-lineage", lineage])
        #expect(!stray.succeeded && stray.stderr.contains("--signer-lineage goes with a signer given a level"), "\(stray)")
    }

    @Test("sign --help names v4 among the default schemes and the .idsig file it writes, as apksigner signs by default")
    func helpNamesTheDefaultV4Signature() throws {
        // A user moving from apksigner must learn from the overview, not from a stray file, that sign writes
        // <out>.idsig beside the APK unless --v4-signing-enabled false.
        let help = try TestSupport.apkpatch(["sign", "--help"], environment: ["COLUMNS": "400"])
        #expect(help.succeeded, "\(help)")
        let lines = help.stdout.split(separator: "\n").map(String.init)
        let overview = try #require(lines.first { $0.hasPrefix("OVERVIEW:") })
        #expect(overview.contains("v4"), "\(overview)")
        let defaults = try #require(lines.first { $0.hasPrefix("Schemes default to") })
        #expect(defaults.contains("v4") && defaults.contains("<out>.idsig"), "\(defaults)")
        let list = try TestSupport.apkpatch(["--help"], environment: ["COLUMNS": "400"])
        #expect(list.stdout.split(separator: "\n").contains { $0.contains("sign ") && $0.contains("v1, v2, v3 and v4") }, "\(list.stdout)")
    }

    @Test("apksigner options apkpatch does not take say why; the stamp options that do nothing without a stamp signer are accepted")
    func otherApksignerOptions() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let plain = dir.appendingPathComponent("plain.apk").path, stamped = dir.appendingPathComponent("stamped.apk").path
        #expect(try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--out", plain, input]).succeeded)
        let noOps = try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--force-stamp-overwrite", "--stamp-timestamp-enabled", "false", "--out", stamped, input])
        #expect(noOps.succeeded, "\(noOps)")
        #expect(try TestSupport.readBytes(stamped) == (try TestSupport.readBytes(plain)))

        let output = dir.appendingPathComponent("refused.apk").path
        for (options, reason) in [(["--stamp-signer", "x"], "--stamp-signer needs the stamp key's options"),
                                  (["--append-signature"], "other signers' signatures"),
                                  (["--pass-encoding", "x-no-such-charset"], "--pass-encoding: unsupported password character encoding x-no-such-charset"), (["--ks-provider-name", "SunPKCS11"], "Java security providers"),
                                  (["--next-signer"] + Self.signer(1) + ["--ks-provider-class", "x"], "Java security providers"),
                                  (["--kms-type", "aws"], "KMS")] {
            let result = try TestSupport.apkpatch(["sign"] + Self.signer(0) + options + ["--out", output, input])
            #expect(!result.succeeded && result.stderr.contains(reason), "\(options): \(result)")
            #expect(!FileManager.default.fileExists(atPath: output))
        }
        // `--v4-signing-enabled only` (in apksigner's online documentation; apksigner 35 refuses it) names the value,
        // for sign and run, rather than taking `only` for an input APK.
        for command in [["sign"] + Self.signer(0), ["run"]] {
            let only = try TestSupport.apkpatch(command + ["--v4-signing-enabled", "only", "--out", output, input])
            #expect(only.status == 64 && only.stderr.contains("The value 'only' is invalid for '--v4-signing-enabled"), "\(only)")
            #expect(!FileManager.default.fileExists(atPath: output))
        }
        let newer = try NewerApksigner.run(["sign"] + Self.signer(0) + ["--v4-signing-enabled", "only", "--out", output, input])
        #expect(!newer.succeeded, "\(newer)")
        // A boolean spelt otherwise is refused as the option's value, not taken for a second input APK.
        for (option, value) in [("--alignment-preserved", "yes"), ("--v1-signing-enabled", "False"), ("--verity-enabled", "1")] {
            let result = try TestSupport.apkpatch(["sign"] + Self.signer(0) + [option, value, "--out", output, input])
            #expect(result.status == 64 && result.stderr.contains("The value '\(value)' is invalid for '\(option)"), "\(option) \(value): \(result)")
            #expect(!FileManager.default.fileExists(atPath: output))
        }
    }

    /// The pin list's ranges, as (start, length) pairs.
    static func pinRanges(_ apk: String) throws -> [[UInt32]] {
        let out = apk + ".pins"
        #expect(try TestSupport.run("sh", ["-c", "unzip -p \"$0\" pinlist.meta > \"$1\"", apk, out]).succeeded)
        let bytes = try TestSupport.readBytes(out).map(UInt32.init)
        return stride(from: 0, to: bytes.count - 7, by: 8).map { at in
            [bytes[at] << 24 | bytes[at + 1] << 16 | bytes[at + 2] << 8 | bytes[at + 3],
             bytes[at + 4] << 24 | bytes[at + 5] << 16 | bytes[at + 6] << 8 | bytes[at + 7]]
        }
    }

    /// Checks `apk`'s pin list against the one Debian's apksigner 31 writes when re-signing the APK (it keeps
    /// the entries where they are and drops the old list and JAR signature, which come after them): the
    /// entries' ranges are the same, and the last range runs from the APK's own pin list on.
    static func checkPinList(_ apk: String, in dir: URL, _ label: String) throws {
        let resigned = dir.appendingPathComponent("resigned-\(label).apk").path
        let sign = try TestSupport.run("apksigner", ["sign"] + signer(0) + ["--out", resigned, apk])
        #expect(sign.succeeded, "\(label): \(sign)")
        let ours = try pinRanges(apk), expected = try pinRanges(resigned)
        #expect(ours.count > 2 && ours.dropLast() == expected.dropLast(), "\(label): \(ours) vs \(expected)")
        let list = try #require(try APKFacts(apk).archive.entry(named: "pinlist.meta"), "\(label)")
        #expect(ours.last == [UInt32(list.localHeaderOffset), UInt32(Int32.max)], "\(label): from the list to the end (clamped, as apksig)")
        #expect(try TestSupport.run("unzip", ["-p", apk, "META-INF/MANIFEST.MF"]).stdout.contains("Name: pinlist.meta"), "\(label)")
        #expect(try TestSupport.run("apksigner", ["verify", apk]).succeeded, "\(label)")
        let names = try APKFacts(apk).archive.entries.map(\.name)
        #expect(names.filter { $0 == "pinlist.meta" }.count == 1, "\(label): \(names)")
    }

    static func pinnedFixture() -> FixtureAPK {
        var fixture = FixtureAPK.cordovaLike()
        fixture.assets["com.android.hints.pins.txt"] = Array("""
        classes.dex
        lib/.*\\.so 0 100
        assets/www/js/module[0-3]\\.js 10 50

        """.utf8)
        return fixture
    }

    @Test("run writes pinlist.meta from the pin hints as sign does, for its own layout; an input's old list is replaced")
    func runWritesPinList() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try Self.pinnedFixture().build(in: dir)
        let patch = dir.appendingPathComponent("patch")
        // A bigger file before the pinned ones moves them, and a pinned one changes size.
        try TestSupport.write(String(repeating: "// patched\n", count: 500), to: "assets/www/index.html", in: patch)
        try TestSupport.write(String(repeating: "var pinned = 1;\n", count: 3), to: "assets/www/js/module1.js", in: patch)
        let out = dir.appendingPathComponent("run.apk").path
        let run = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", out] + Self.signer(0))
        #expect(run.succeeded, "\(run)")
        try Self.checkPinList(out, in: dir, "run")

        // An input that already holds a pin list (a signed APK): run writes its own, once.
        let signed = dir.appendingPathComponent("signed.apk").path
        #expect(try TestSupport.apkpatch(["sign"] + Self.signer(1) + ["--out", signed, input]).succeeded)
        let again = dir.appendingPathComponent("again.apk").path
        let rerun = try TestSupport.apkpatch(["run", signed, "--patch", patch.path, "--out", again] + Self.signer(0))
        #expect(rerun.succeeded, "\(rerun)")
        try Self.checkPinList(again, in: dir, "rerun")
    }

    @Test("watch writes pinlist.meta for each build, recycling its output")
    func watchWritesPinList() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try Self.pinnedFixture().build(in: dir)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("<p>v1</p>\n", to: "assets/www/index.html", in: patch)
        let output = dir.appendingPathComponent("watched.apk").path
        let (process, lines) = try TestSupport.startApkpatch(["watch", input, "--patch", patch.path, "--out", output] + Self.signer(0))
        defer { if process.isRunning { process.terminate() } }
        #expect(lines.waitFor { $0.contains("] built ") }, "first build: \(lines.lines)")
        try Self.checkPinList(output, in: dir, "build1")
        let before = try Self.pinRanges(output)
        // A longer file before the pinned entries: the second build's ranges move with them.
        try TestSupport.write(String(repeating: "<p>v2</p>\n", count: 400), to: "assets/www/index.html", in: patch)
        #expect(lines.waitFor { $0.contains("rebuilt") }, "\(lines.lines)")
        try Self.checkPinList(output, in: dir, "build2")
        #expect(try Self.pinRanges(output) != before)
        process.interrupt()
    }
}
