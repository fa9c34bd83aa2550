import Foundation
import Testing
import TestSupport

/// Every command on real APKs nobody here wrote (`RealWorldCorpus`: F-Droid's test APKs, Gradle builds from
/// uiautomator2, pocoui and airtest), judged by the tools Android developers trust:
/// - `verify` gives apksigner's verdict, errors, warnings and signer certificates, except where we are stricter by
///   design (`verifyDiffers`: each must say why, and `--signature-only` must then agree with apksigner);
/// - `sign` (re-signing v1/v2/v3-signed inputs too) writes what apksigner verifies with our certificate alone (and
///   apksigner 35 the v4 signature of its default `.idsig` file),
///   `zipalign -c -p 4` and libziparchive accept, with the input's badging, manifest and resource values; of an
///   unsigned input, with `--alignment-preserved true`, apksigner's own bytes, which `apksigcopier compare` copies;
/// - `run` with an empty patch (its `.idsig` too) and with one added asset: the same oracles, the same dumps, the
///   asset inside;
/// - `align` passes `zipalign -c -p 4` with the input's entries; `unpack` extracts what `unzip` extracts;
/// - inputs Android would refuse are refused (`refusedByWriters`, `refusedBySign`) or repaired (`run`), never
///   written as if fine.
@Suite(.removesTemporaryDirectories) struct RealWorldCorpusTests {
    typealias APK = RealWorldCorpus.APK

    /// Where our `verify` rejects what apksigner accepts, on purpose, and the words of ours that say why.
    static let verifyDiffers: [String: String] = [
        // v1-only, 1,032 bytes of DEX before the first entry: apksig does not look there (CVE-2017-13156).
        "janus.apk": "Janus",
        // targetSdk 30+ with resources.arsc compressed or off a 4-byte boundary: Android 11+ refuses to install
        // them (PackageParser), apksigner does not check packaging.
        "SystemWebView-repack.apk": "INSTALL_RESOURCES_ARSC_COMPRESSED",
        "org.sajeg.fallingblocks_3.apk": "INSTALL_RESOURCES_ARSC_COMPRESSED",
        "apk.embedded_1.apk": "INSTALL_RESOURCES_ARSC_NOT_ALIGNED",
        // An entry name with a NUL byte: libziparchive (Android) refuses the archive, apksig 0.9 reads it.
        "v1-only-with-nul-in-entry-name.apk": "NUL byte",
    ]

    /// Of `verifyDiffers`, the archives verify refuses to read at all: `--signature-only` refuses them too.
    static let unreadableArchives: Set<String> = ["janus.apk", "v1-only-with-nul-in-entry-name.apk"]

    /// Inputs whose entries the libziparchive oracle cannot all extract while Android installs them, and why.
    static let libziparchiveDiffers: [String: String] = [
        // Compression method 21 on META-INF/CERT.RSA, deflated: Android reads JAR signature files with StrictJarFile,
        // which inflates every method but STORED, as apksig does (its testWeirdZipCompressionMethod).
        "weird-compression-method.apk": "method 21",
    ]

    /// Inputs every rewriting command (`sign`, `run`, `align`, `unpack`) refuses, and the words that say why.
    static let refusedByWriters: [String: String] = [
        "janus.apk": "1032 bytes before the first local header",
    ]

    /// Inputs `sign` refuses, and the words that say why: Android 11+ would refuse the signed output (the message
    /// names the command that repairs them), or the archive is one apkpatch does not rewrite (apksig's test APKs).
    static let refusedBySign: [String: String] = [
        "SystemWebView-repack.apk": "apkpatch run",
        "org.sajeg.fallingblocks_3.apk": "apkpatch run",
        // A JAR manifest has no way to name "test.txt\r".
        "v1-only-with-cr-in-entry-name.apk": "which a JAR manifest cannot express",
        "v1-only-with-nul-in-entry-name.apk": "NUL byte",
        // Bytes a streaming reader sees and Android does not (issue 19's archive strictness).
        "v2-only-garbage-between-cd-and-eocd.apk": "lie between the central directory",
        "v2-only-truncated-cd.apk": "runs past the end of central directory record",
        // apksig 35.0.2's: a CD whose sizes are not the local header's, a truncated CD, bytes no entry holds
        // (a signing block cut off or zeroed), no manifest to read the minSdkVersion from, no entries at all (Android
        // opens no such archive), LF in a name.
        "incorrect-manifest-size.apk": "local header disagrees with the central directory",
        "v1v2v3-with-rsa-2048-lineage-3-signers-invalid-zip.apk": "runs past the end of central directory record",
        "v1v2v3-with-rsa-2048-lineage-3-signers-no-sig-block.apk": "belong to no entry of the central directory",
        "v2-only-apk-sig-block-size-mismatch.apk": "belong to no entry of the central directory",
        "v1-only-empty.apk": "has no AndroidManifest.xml",
        "v2-only-empty.apk": "empty archive",
        "v1-only-with-lf-in-entry-name.apk": "which a JAR manifest cannot express",
        // apktool's issue 1589: JAR signature files under META-INF/../../../../, which apksig and Android read as
        // one more signer no signature can make valid (apksigner signs it, and then refuses its own output).
        "issue1589.apk": "ends as a JAR signature block does",
    ]

    /// Inputs `run` refuses too (it signs as `sign` does), and the words that say why.
    static let refusedByRun: [String: String] = [
        "issue1589.apk": "ends as a JAR signature block does",
    ]

    /// Inputs `unpack` refuses (it writes a file for each entry), and the words that say why.
    static let refusedByUnpack: [String: String] = [
        // apktool's issues 1498 (../assets/…) and 1589 (META-INF/../../../../CERT.RSA).
        "issue1498.apk": "is unsafe to extract",
        "issue1589.apk": "is unsafe to extract",
    ]

    /// Steps whose failures are known, by APK, with the reason (none now: AGP zipflinger's 132-byte virtual entry at
    /// offset 0 is taken by the writers, ZipflingerVirtualEntryTests, and by verify, which classifies a local record
    /// at offset 0 as libziparchive does).
    static let knownIssues: [String: (steps: Set<Step>, reason: String)] = [:]

    enum Step: CaseIterable { case verify, sign, run, align, unpack }

    /// The archive of apksig 35.0.2's test APKs: apksigner 35 judges them, as they exercise what Debian's apksigner
    /// 31.0.2 predates (v3.1 blocks and their stripping protection, the cap of 10 signers per scheme).
    static let apksig35Archive = "android-platform-tools-apksig_35.0.2.orig.tar.gz"

    /// Same verdict as apksigner 35, other words, and why (a known difference of the error text).
    static let verifyWordingDiffers: [String: String] = [
        // apksig 35 does not check a v3.1 signer's content digests (ApkSigningBlockUtils.verifyIntegrity records a
        // mismatch for v2 and v3 results only), so the v3.1 block passes and the v3.0 signer's mismatch is reported,
        // with a stripping warning; apkpatch reports the v3.1 signer's mismatch, as Android's verifier does.
        "v31-2elem-lineage-incorrect-digest.apk": "apksig 35 skips the v3.1 signer's digest check and reports the v3.0 signer's mismatch",
    ]

    /// Unsigned inputs: what `apksigcopier compare` and apksigner's own output are checked on (scrcpy's server is
    /// an unsigned APK named .jar).
    static let unsigned = RealWorldCorpus.apks.filter { $0.name.contains("unsigned") || $0.name.hasPrefix("scrcpy-server") }

    @Test(arguments: RealWorldCorpus.apks)
    func verify(_ apk: APK) throws {
        let input = try apk.fetchedPath()
        try Self.step(.verify, of: apk) {
            let ours = try TestSupport.apkpatch(["verify", "-v", "--print-certs", input])
            let theirs = apk.archive == Self.apksig35Archive
                ? try NewerApksigner.run(["verify", "-v", "--print-certs", input], environment: ForeignCorpus.javaEnvironment)
                : try TestSupport.run("apksigner", ["verify", "-v", "--print-certs", input], environment: ForeignCorpus.javaEnvironment)
            #expect(ours.status == 0 || ours.status == 1, "\(apk): verify crashed: \(ours)")
            if let gap = Self.verifyWordingDiffers[apk.name] {
                #expect(ours.succeeded == theirs.succeeded, "\(apk): verify and apksigner verify disagree:\nours: \(ours)\napksigner: \(theirs)")
                withKnownIssue(Comment(rawValue: gap)) {
                    Self.expectSameVerdict(apk, ours, theirs)
                }
            } else if let reason = Self.verifyDiffers[apk.name] {
                #expect(!ours.succeeded && (ours.stdout + ours.stderr).contains(reason) && theirs.succeeded,
                        "\(apk): verify should reject (\(reason)) what apksigner accepts:\nours: \(ours)\napksigner: \(theirs)")
                let signatureOnly = try TestSupport.apkpatch(["verify", "--signature-only", "-v", "--print-certs", input])
                if Self.unreadableArchives.contains(apk.name) {
                    #expect(!signatureOnly.succeeded && signatureOnly.stderr.contains(reason), "\(apk): --signature-only: \(signatureOnly)")
                } else {
                    Self.expectSameVerdict(apk, signatureOnly, theirs)
                }
            } else {
                Self.expectSameVerdict(apk, ours, theirs)
            }
            // What Android's ZIP reader cannot open, verify cannot pass.
            if case .failure(let refusal) = try Dump.zipEntries(input), Self.libziparchiveDiffers[apk.name] == nil {
                #expect(!ours.succeeded, "\(apk): libziparchive refuses it, verify passes it: \(refusal)")
            }
            // The manifest read as aapt (Android's ResXMLTree) reads it: the minSdkVersion verify judges by.
            let badging = try TestSupport.run("aapt", ["dump", "badging", input])
            guard badging.succeeded else { return }
            let aaptMinSdk = badging.stdout.split(separator: "\n").first { $0.hasPrefix("sdkVersion:'") }
                .flatMap { Int($0.dropFirst(12).dropLast()) } ?? 1
            let json = try TestSupport.apkpatch(["verify", "--json", input])
            let report = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
            #expect(report?["minSdkVersion"] as? Int == aaptMinSdk, "\(apk): verify read minSdkVersion \(report?["minSdkVersion"] ?? "nothing"), aapt \(aaptMinSdk)")
        }
    }

    @Test(arguments: RealWorldCorpus.apks)
    func sign(_ apk: APK) throws {
        let input = try apk.fetchedPath(), key = try Self.key.get()
        let work = try TestSupport.makeTemporaryDirectory("realworld-sign")
        defer { try? FileManager.default.removeItem(at: work) }
        let checks = OutputChecks(name: apk.name, input: input, work: work)
        try Self.step(.sign, of: apk) {
            let output = checks.path("signed.apk")
            let result = try TestSupport.apkpatch(["sign"] + key.options + ["--out", output, input], environment: key.environment)
            if let reason = Self.refusedByWriters[apk.name] ?? Self.refusedBySign[apk.name] {
                #expect(result.status == 1 && result.stderr.contains(reason), "\(apk): sign should refuse (\(reason)): \(result)")
                #expect(!FileManager.default.fileExists(atPath: output), "\(apk): sign left \(output)")
                return
            }
            try #require(result.succeeded, "\(apk): sign failed: \(result)")
            // The v4 signature apksigner writes by default too, beside the APK, checked by apksigner 35.
            let apksigner = try checks.expectInstallable(output, label: "sign", v4SignatureFile: output + ".idsig")
            try checks.expectSameDumps(output, label: "sign")
            try Self.expectSignedByKeyAlone(output, apksigner: apksigner, apk: apk, key: key)
        }
    }

    @Test(arguments: RealWorldCorpus.apps)
    func run(_ apk: APK) throws {
        let input = try apk.fetchedPath(), key = try Self.key.get()
        let work = try TestSupport.makeTemporaryDirectory("realworld-run")
        defer { try? FileManager.default.removeItem(at: work) }
        let checks = OutputChecks(name: apk.name, input: input, work: work)
        let empty = checks.path("empty-patch"), asset = checks.path("asset-patch")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let added = "assets/realworld-corpus/added.txt", content = "added by the real-world corpus test \(apk.name)\n"
        try TestSupport.write(content, to: added, in: URL(fileURLWithPath: asset))
        try Self.step(.run, of: apk) {
            for (label, patch) in [("run", empty), ("run with an asset", asset)] {
                let output = checks.path("\(patch == empty ? "run" : "run-asset").apk")
                let result = try TestSupport.apkpatch(["run", input, "--patch", patch] + key.options + ["--out", output, "-q"],
                                                      environment: key.environment)
                if let reason = Self.refusedByWriters[apk.name] ?? Self.refusedByRun[apk.name] {
                    #expect(result.status == 1 && result.stderr.contains(reason), "\(apk): \(label) should refuse (\(reason)): \(result)")
                    #expect(!FileManager.default.fileExists(atPath: output), "\(apk): \(label) left \(output)")
                    continue
                }
                try #require(result.succeeded, "\(apk): \(label) failed: \(result)")
                // The empty patch's .idsig is checked by apksigner 35, the asset run's output by Debian's 31.
                let apksigner = try checks.expectInstallable(output, label: label, v4SignatureFile: patch == empty ? output + ".idsig" : nil)
                try checks.expectSameDumps(output, label: label)
                try Self.expectSignedByKeyAlone(output, apksigner: apksigner, apk: apk, key: key)
                // What Android would refuse is repaired: our verify (install checks included) passes the output.
                let verify = try TestSupport.apkpatch(["verify", output])
                #expect(verify.succeeded, "\(apk): verify of \(label)'s output: \(verify)")
                let names = try Self.contentNames(output), inputNames = try Self.contentNames(input)
                if patch == empty {
                    #expect(names == inputNames, "\(apk): \(label) changed the entries: \(names.symmetricDifference(inputNames).sorted())")
                } else {
                    #expect(names == inputNames.union([added]), "\(apk): \(label) changed the entries: \(names.symmetricDifference(inputNames.union([added])).sorted())")
                    let extracted = try TestSupport.run("unzip", ["-p", output, added])
                    #expect(extracted.stdout == content, "\(apk): \(label) wrote \(added) as \(extracted)")
                }
            }
        }
    }

    @Test(arguments: RealWorldCorpus.apps)
    func alignAndUnpack(_ apk: APK) throws {
        let input = try apk.fetchedPath()
        let work = try TestSupport.makeTemporaryDirectory("realworld-align")
        defer { try? FileManager.default.removeItem(at: work) }
        let checks = OutputChecks(name: apk.name, input: input, work: work)
        try Self.step(.align, of: apk) {
            let output = checks.path("aligned.apk")
            let result = try TestSupport.apkpatch(["align", "-p", "4", input, output])
            if let reason = Self.refusedByWriters[apk.name] {
                #expect(result.status != 0 && (result.stdout + result.stderr).contains(reason), "\(apk): align should refuse (\(reason)): \(result)")
                #expect(!FileManager.default.fileExists(atPath: output), "\(apk): align left \(output)")
                return
            }
            try #require(result.succeeded, "\(apk): align failed: \(result)")
            let zipalign = try TestSupport.run("zipalign", ["-c", "-p", "4", output])
            #expect(zipalign.succeeded, "\(apk): zipalign -c -p 4 of align's output: \(zipalign)")
            // The same entries with the same data as Android reads them; only offsets move. The central directory
            // follows the records' order, as apksig writes it (zipalign keeps the input's directory order instead).
            let read = { (path: String) in
                try Dump.zipEntries(path).get().map { [$0.name, "\($0.method)", "\($0.compressedSize)", $0.crc32] }.sorted { $0[0] < $1[0] }
            }
            #expect(try read(output) == read(input), "\(apk): align changed the entries libziparchive reads")
        }
        try Self.step(.unpack, of: apk) {
            if let reason = Self.refusedByWriters[apk.name] ?? Self.refusedByUnpack[apk.name] {
                let result = try TestSupport.apkpatch(["unpack", input, "-o", checks.path("unpacked")])
                #expect(result.status == 1 && result.stderr.contains(reason), "\(apk): unpack should refuse (\(reason)): \(result)")
                #expect(!FileManager.default.fileExists(atPath: checks.path("unpacked")), "\(apk): unpack left its folder")
                return
            }
            try checks.unpackMatchesUnzip()
        }
    }

    /// An unsigned input signed by `sign --alignment-preserved true` is byte for byte what apksigner (Debian's
    /// 31.0.2, whose default keeps alignment) writes with the same key, and `apksigcopier compare` (F-Droid's
    /// reproducible-build check) copies its signature onto the unsigned input.
    @Test(arguments: unsigned)
    func signatureCopies(_ apk: APK) throws {
        let input = try apk.fetchedPath(), key = try Self.key.get()
        let work = try TestSupport.makeTemporaryDirectory("realworld-copier")
        defer { try? FileManager.default.removeItem(at: work) }
        let ours = work.appendingPathComponent("ours.apk").path, theirs = work.appendingPathComponent("apksigner.apk").path
        let sign = try TestSupport.apkpatch(["sign"] + key.options + ["--alignment-preserved", "true", "--v4-signing-enabled", "false", "--out", ours, input],
                                            environment: key.environment)
        try #require(sign.succeeded, "\(apk): sign failed: \(sign)")
        let apksigner = try TestSupport.run("apksigner", ["sign"] + key.options + ["--v4-signing-enabled", "false", "--out", theirs, input],
                                            environment: key.environment.merging(ForeignCorpus.javaEnvironment) { $1 })
        try #require(apksigner.succeeded, "\(apk): apksigner sign failed: \(apksigner)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: ours)) == Data(contentsOf: URL(fileURLWithPath: theirs)),
                "\(apk): sign --alignment-preserved true wrote other bytes than apksigner sign")
        let compare = try TestSupport.run("apksigcopier", ["compare", ours, "--unsigned", input], environment: ForeignCorpus.javaEnvironment)
        #expect(compare.succeeded, "\(apk): apksigcopier compare of our output with the unsigned input: \(compare)")
    }

    // MARK: - Helpers

    /// Runs `body`, recording its failures as known when `knownIssues` lists this step for `apk`.
    static func step(_ step: Step, of apk: APK, _ body: () throws -> Void) throws {
        guard let known = knownIssues[apk.name], known.steps.contains(step) else { return try body() }
        withKnownIssue(Comment(rawValue: known.reason), isIntermittent: true) { try body() }
    }

    /// Same accept/reject, errors and warnings as apksigner, and when both accept, the same schemes and signer
    /// certificates.
    static func expectSameVerdict(_ apk: APK, _ ours: TestSupport.ProcessResult, _ theirs: TestSupport.ProcessResult,
                                  sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(ours.succeeded == theirs.succeeded, "\(apk): verify and apksigner verify disagree:\nours: \(ours)\napksigner: \(theirs)",
                sourceLocation: sourceLocation)
        // apksigner ends with a Java stack trace, and no ERROR line, on an archive it cannot read (apksig's
        // truncated central directory, a missing manifest): the verdicts alone compare.
        guard !theirs.stderr.contains("Exception in thread \"main\"") else {
            #expect(!messageLines(ours).isEmpty, "\(apk): verify rejects it without an ERROR line: \(ours)", sourceLocation: sourceLocation)
            return
        }
        #expect(messageLines(ours) == messageLines(theirs), "\(apk): verify and apksigner verify report other errors or warnings:\nours: \(messageLines(ours))\napksigner: \(messageLines(theirs))",
                sourceLocation: sourceLocation)
        guard ours.succeeded && theirs.succeeded else { return }
        #expect(certificateLines(ours.stdout) == certificateLines(theirs.stdout) && !certificateLines(theirs.stdout).isEmpty,
                "\(apk): signers differ:\nours: \(certificateLines(ours.stdout))\napksigner: \(certificateLines(theirs.stdout))", sourceLocation: sourceLocation)
    }

    /// The errors, warnings and infos (a source stamp's) of a verification, sorted, as apksigner words them; our
    /// install, archive and entry checks (which apksigner does not make; their lines carry their code in brackets) aside.
    static func messageLines(_ result: TestSupport.ProcessResult) -> [String] {
        (result.stdout + "\n" + result.stderr).split(separator: "\n").map(String.init)
            .filter { ["ERROR: ", "WARNING: ", "INFO: "].contains(where: $0.hasPrefix) && !["[INSTALL_", "[ARCHIVE_", "[ENTRY_"].contains(where: $0.contains) }.sorted()
    }

    /// `verify -v --print-certs` lines both tools print alike: the schemes verified, the source stamp's verdict, and
    /// each signer's certificate and the stamp's ("Source Stamp Signer"), not the lineage of a rotated key, which
    /// only apkpatch prints there, nor the v3.1 line, which Debian's apksigner 31 predates.
    static func certificateLines(_ output: String) -> [String] {
        NewerApksigner.asApksigner31(output).split(separator: "\n").map(String.init).filter {
            ($0.hasPrefix("Verified using v") || $0.hasPrefix("Verified for SourceStamp") || $0.hasPrefix("Number of signers")
                || $0.contains("certificate SHA-256 digest") || $0.contains("certificate DN")) && !$0.contains(" in lineage ")
        }
    }

    /// apksigner (its `verify -v --print-certs` of `output`) names exactly one signer, our key's certificate, and
    /// the output holds one JAR signature at most (a re-signed input keeps none of its old signature files).
    static func expectSignedByKeyAlone(_ output: String, apksigner result: TestSupport.ProcessResult, apk: APK, key: SigningKey) throws {
        let digests = result.stdout.split(separator: "\n").filter { $0.contains("certificate SHA-256 digest") }
            .map { String($0.split(separator: " ").last ?? "") }
        #expect(result.succeeded && digests == [key.certificateSHA256], "\(apk): signers of the output are \(digests), not our key alone: \(result)")
        let signatureFiles = try Dump.entryNames(output).filter { name in
            name.hasPrefix("META-INF/") && !name.dropFirst(9).contains("/") && [".SF", ".RSA", ".DSA", ".EC"].contains { name.hasSuffix($0) }
        }
        #expect(signatureFiles.count <= 2, "\(apk): old signature files stayed: \(signatureFiles)")
    }

    /// Entry names other than the JAR signature's (which signing writes anew) and directories (which signing drops).
    static func contentNames(_ apk: String) throws -> Set<String> {
        Set(try Dump.entryNames(apk).filter { name in
            !name.hasSuffix("/") && !(name.hasPrefix("META-INF/") && !name.dropFirst(9).contains("/")
                && [".SF", ".RSA", ".DSA", ".EC", "MANIFEST.MF"].contains { name.hasSuffix($0) })
        })
    }

    // MARK: - The signing key

    struct SigningKey: Sendable {
        let keyStore: String
        let certificateSHA256: String
        var environment: [String: String] { ["REALWORLD_KS_PASS": "realworld-pass"] }
        var options: [String] { ["--ks", keyStore, "--ks-pass", "env:REALWORLD_KS_PASS"] }
    }

    /// One RSA key made by keytool once per test process, and its certificate's SHA-256 from keytool's DER export.
    static let key: Result<SigningKey, FixtureError> = TestSupport.sharedByTests {
        do {
            let directory = try TestSupport.makeTemporaryDirectory("realworld-key")
            let keyStore = directory.appendingPathComponent("release.p12").path
            try TestSupport.makeKeyStore(at: keyStore, password: "realworld-pass", dname: "CN=Real-world corpus")
            let der = directory.appendingPathComponent("release.der").path
            let export = try TestSupport.run("keytool", ["-exportcert", "-keystore", keyStore, "-alias", "release", "-storepass:env", "KS", "-file", der],
                                             environment: ["KS": "realworld-pass"])
            guard export.succeeded else { return .failure(FixtureError(message: "keytool -exportcert failed: \(export)")) }
            let digest = try TestSupport.run("sha256sum", [der])
            guard digest.succeeded, let hex = digest.stdout.split(separator: " ").first else { return .failure(FixtureError(message: "sha256sum failed: \(digest)")) }
            return .success(SigningKey(keyStore: keyStore, certificateSHA256: String(hex)))
        } catch {
            return .failure(FixtureError(message: "making the signing key failed: \(error)"))
        }
    }
}
