import APKCore
import Foundation
import Sign
import SignatureSchemes
import Testing
import TestSupport

/// v3.1 rotations against apksigner from build-tools 35 (Debian's later packages, `NewerApksigner`), which Debian
/// 12's apksigner 31 predates: the same inputs and options give the same APK and `.idsig` bytes, apksigner 35
/// verifies ours (v3.1 and v4 included) and prints what `apkpatch verify` prints, and `apkpatch verify` accepts
/// what apksigner 35 writes where its layout differs from current apksig's (which apkpatch's signer follows).
@Suite(.removesTemporaryDirectories) struct NewerApksignerTests {
    struct Setup: Sendable {
        let directory: URL
        let keys: [[String]]
        /// Lineages made by apksigner 35: key 0 → 1, key 0 → 1 → 2, and key 0 → 3 (RSA 4096, whose v3 signature
        /// signs the CHUNKED_SHA512 content digest where key 0's v2 signature signs CHUNKED_SHA256).
        let lineage01: String, lineage012: String, lineage03: String
        /// The fixture as aapt writes it, and zipaligned.
        let unaligned: String, aligned: String
    }

    /// Made once; a failure (apksigner 35 not fetched) fails each test with its reason.
    static let prepared = TestSupport.sharedByTests { Result { () throws -> Setup in
        let directory = try TestSupport.makeTemporaryDirectory("apksigner35")
        let keys = try [TestKeys.Kind.rsa2048, .rsa2048, .rsa2048, .rsa4096].enumerated().map { index, kind -> [String] in
            let files = try TestKeys.make(kind, in: directory, name: "key\(index)")
            return ["--key", files.keyPK8, "--cert", files.certificatePEM]
        }
        let lineage01 = directory.appendingPathComponent("L01").path, lineage012 = directory.appendingPathComponent("L012").path
        try NewerApksigner.check(NewerApksigner.run(["rotate", "--out", lineage01, "--old-signer"] + keys[0] + ["--new-signer"] + keys[1]))
        try NewerApksigner.check(NewerApksigner.run(["rotate", "--in", lineage01, "--out", lineage012, "--old-signer"] + keys[1] + ["--new-signer"] + keys[2]))
        let lineage03 = directory.appendingPathComponent("L03").path
        try NewerApksigner.check(NewerApksigner.run(["rotate", "--out", lineage03, "--old-signer"] + keys[0] + ["--new-signer"] + keys[3]))
        let unaligned = try FixtureAPK.cordovaLike().build(in: directory)
        let aligned = directory.appendingPathComponent("aligned.apk").path
        try NewerApksigner.check(TestSupport.run("zipalign", ["-f", "4", unaligned, aligned]))
        return Setup(directory: directory, keys: keys, lineage01: lineage01, lineage012: lineage012, lineage03: lineage03,
                     unaligned: unaligned, aligned: aligned)
    } }

    static func setup() throws -> Setup { try prepared.get() }

    /// One signing both tools do: its options (`K0` to `K3` stand for the keys' options, `L01`/`L012`/`L03` for the
    /// lineages), whether the APK gets a v3.1 block, and what `verify` takes besides.
    struct Case: Sendable, CustomTestStringConvertible {
        let label: String
        let options: [String]
        var aligned = true
        var hasV31 = true
        var verifyOptions: [String] = []
        var testDescription: String { label }
    }

    static let cases: [Case] = [
        Case(label: "rotation at 33 (default)", options: ["K0", "--next-signer", "K1", "--lineage", "L01"]),
        Case(label: "rotation at 33, unaligned input", options: ["K0", "--next-signer", "K1", "--lineage", "L01"], aligned: false),
        Case(label: "rotation at 33, signers in the other order", options: ["K1", "--next-signer", "K0", "--lineage", "L01"]),
        Case(label: "rotation targeting the development release", options: ["K0", "--next-signer", "K1", "--lineage", "L01", "--rotation-targets-dev-release"]),
        Case(label: "rotation at 35", options: ["K0", "--next-signer", "K1", "--lineage", "L01", "--rotation-min-sdk-version", "35"]),
        Case(label: "rotation at 28 (v3.0 only)", options: ["K0", "--next-signer", "K1", "--lineage", "L01", "--rotation-min-sdk-version", "28"], hasV31: false),
        Case(label: "v3 only", options: ["K0", "--next-signer", "K1", "--lineage", "L01", "--v1-signing-enabled", "false", "--v2-signing-enabled", "false",
                                         "--min-sdk-version", "28"], verifyOptions: ["--min-sdk-version", "28"]),
        Case(label: "a signer targeting 35", options: ["K0", "--signer-for-min-sdk-version", "35", "K1", "--signer-lineage", "L01"]),
        Case(label: "rotation and a signer targeting 36, minSdkVersion 33",
             options: ["K0", "--next-signer", "K1", "--lineage", "L01", "--signer-for-min-sdk-version", "36", "K2", "--signer-lineage", "L012",
                       "--min-sdk-version", "33"], verifyOptions: ["--min-sdk-version", "33"]),
        Case(label: "the newest key of three", options: ["K0", "--next-signer", "K2", "--lineage", "L012"]),
        Case(label: "rotation with verity", options: ["K0", "--next-signer", "K1", "--lineage", "L01", "--verity-enabled", "true"]),
        Case(label: "rotation with the file size aligned", options: ["K0", "--next-signer", "K1", "--lineage", "L01", "--align-file-size"]),
        Case(label: "one key, native libraries on 8 KiB pages", options: ["K0", "--lib-page-alignment", "8192"], hasV31: false),
        // Play's key upgrade: RSA 2048 to 4096, whose signature needs other content digests than the v2 block's.
        Case(label: "rotation to a key of another size class", options: ["K0", "--next-signer", "K3", "--lineage", "L03"]),
        Case(label: "rotation to a key of another size class at 28", options: ["K0", "--next-signer", "K3", "--lineage", "L03",
                                                                              "--rotation-min-sdk-version", "28"], hasV31: false),
    ]

    static func arguments(_ options: [String], _ setup: Setup) -> [String] {
        return options.flatMap { option -> [String] in
            switch option {
            case "K0": return setup.keys[0]
            case "K1": return setup.keys[1]
            case "K2": return setup.keys[2]
            case "K3": return setup.keys[3]
            case "L03": return [setup.lineage03]
            case "L01": return [setup.lineage01]
            case "L012": return [setup.lineage012]
            default: return [option]
            }
        }
    }

    /// apkpatch's `verify` text without what apksigner verify does not print (the lineage under -v).
    static func withoutLineage(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.contains(" in lineage ") && !$0.hasPrefix("Has ") }.joined(separator: "\n")
    }

    @Test("v3.1 rotations: apksigner 35's APK and .idsig byte for byte; apksigner 35 verifies ours as apkpatch verify prints it",
          arguments: cases)
    func rotationsMatchApksigner35(_ testCase: Case) throws {
        let setup = try Self.setup(), dir = try TestSupport.makeTemporaryDirectory()
        let input = testCase.aligned ? setup.aligned : setup.unaligned
        let ours = dir.appendingPathComponent("ours.apk").path, theirs = dir.appendingPathComponent("theirs.apk").path
        let options = Self.arguments(testCase.options, setup)
        let sign = try TestSupport.apkpatch(["sign"] + options + ["--out", ours, input])
        #expect(sign.succeeded, "\(sign)")
        try NewerApksigner.check(NewerApksigner.run(["sign"] + options + ["--out", theirs, input]))
        #expect(try TestSupport.readBytes(ours) == TestSupport.readBytes(theirs), "the APKs differ")
        #expect(try TestSupport.readBytes(ours + ".idsig") == TestSupport.readBytes(theirs + ".idsig"), "the .idsig files differ")

        let verifyArguments = ["verify", "-v", "--print-certs"] + testCase.verifyOptions + ["--v4-signature-file", ours + ".idsig", ours]
        let apksigner = try NewerApksigner.run(verifyArguments)
        #expect(apksigner.succeeded, "\(apksigner)")
        #expect(apksigner.stdout.contains("Verified using v3.1 scheme (APK Signature Scheme v3.1): \(testCase.hasV31)"), "\(apksigner.stdout)")
        #expect(apksigner.stdout.contains("Verified using v4 scheme (APK Signature Scheme v4): true"), "\(apksigner.stdout)")
        let verify = try TestSupport.apkpatch(verifyArguments)
        #expect(verify.succeeded, "\(verify)")
        #expect(Self.withoutLineage(verify.stdout) == apksigner.stdout, "\(verify.stdout)\n---\n\(apksigner.stdout)")
        // --json names the .idsig's signers: one per signing info, each the v3.0 or v3.1 signer apksigner 35 prints
        // (with that signer's SDK range when apksigner prints ranges: an APK with a v3.1 block).
        let json = try TestSupport.apkpatch(["verify", "--json"] + testCase.verifyOptions + ["--v4-signature-file", ours + ".idsig", ours])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        let v4 = try #require((object["schemes"] as? [[String: Any]])?.first { $0["scheme"] as? String == "v4" }, "\(json.stdout)")
        let v4Signers = (v4["signers"] as? [[String: Any]] ?? []).map { signer -> String in
            let sha256 = ((signer["certificates"] as? [[String: Any]])?.first?["sha256"] as? String) ?? "none"
            guard testCase.hasV31 else { return "Signer #1 certificate SHA-256 digest: \(sha256)" }
            return "minSdkVersion=\(signer["minSdkVersion"] as? Int ?? -1), maxSdkVersion=\(signer["maxSdkVersion"] as? Int ?? -1)) certificate SHA-256 digest: \(sha256)"
        }
        let printed = apksigner.stdout.split(separator: "\n").map { $0.replacingOccurrences(of: " (dev release=true)", with: "") }
        #expect(v4["verified"] as? Bool == true && v4Signers.count == (testCase.hasV31 ? 2 : 1)
                && v4Signers.allSatisfy { line in printed.contains { $0.hasSuffix(line) } }, "\(v4Signers)\n\(apksigner.stdout)")
        // Each tool reads the other's lineage out of the APK alike.
        if testCase.label == "rotation at 33 (default)" {
            let ourLineage = try TestSupport.apkpatch(["lineage", "--in", theirs, "--print-certs", "-v"])
            let theirLineage = try NewerApksigner.run(["lineage", "--in", ours, "--print-certs", "-v"])
            #expect(ourLineage.succeeded && theirLineage.succeeded && ourLineage.stdout == theirLineage.stdout, "\(ourLineage)\n\(theirLineage)")
        }
        // A rotated APK verifies from API 28 and from API 33 alike, with the same signers printed by both tools: the
        // rotation level's signer from there on, the original one below it.
        if ["rotation at 33 (default)", "rotation at 28 (v3.0 only)"].contains(testCase.label) {
            for level in ["28", "33"] {
                let atLevel = ["verify", "--print-certs", "--min-sdk-version", level, ours]
                let theirVerdict = try NewerApksigner.run(atLevel), ourVerdict = try TestSupport.apkpatch(atLevel)
                #expect(theirVerdict.succeeded && ourVerdict.succeeded && ourVerdict.stdout == theirVerdict.stdout,
                        "--min-sdk-version \(level):\napksigner 35: \(theirVerdict)\napkpatch: \(ourVerdict)")
            }
        }
    }

    @Test("rotate: apkpatch writes apksigner 35's lineage files byte for byte")
    func rotateMatchesApksigner35() throws {
        let setup = try Self.setup(), dir = try TestSupport.makeTemporaryDirectory()
        let keys = setup.keys
        let first = dir.appendingPathComponent("L01").path, second = dir.appendingPathComponent("L012").path
        #expect(try TestSupport.apkpatch(["rotate", "--out", first, "--old-signer"] + keys[0] + ["--new-signer"] + keys[1]).succeeded)
        #expect(try TestSupport.apkpatch(["rotate", "--in", first, "--out", second, "--old-signer"] + keys[1] + ["--new-signer"] + keys[2]).succeeded)
        #expect(try TestSupport.readBytes(first) == TestSupport.readBytes(setup.lineage01))
        #expect(try TestSupport.readBytes(second) == TestSupport.readBytes(setup.lineage012))
    }

    @Test("verify accepts apksigner 35's layouts that current apksig changed: the middle key of three in v3.0, a rotation at its development release 34")
    func verifyAcceptsApksigner35Layouts() throws {
        let setup = try Self.setup(), dir = try TestSupport.makeTemporaryDirectory()
        let input = setup.aligned
        // All three keys of a three-key lineage: apksigner 35 signs the v3.0 block with the middle key and no
        // lineage (current apksig and apkpatch: the original key). apksig accepts it on the v3.1 block's lineage,
        // which devices read from API 33 on; up to API 32 it does not verify, for apksigner 35 as for apkpatch.
        let three = Self.arguments(["K0", "--next-signer", "K1", "--next-signer", "K2", "--lineage", "L012"], setup)
        let theirs = dir.appendingPathComponent("three35.apk").path
        try NewerApksigner.check(NewerApksigner.run(["sign"] + three + ["--out", theirs, input]))
        let verify = try TestSupport.apkpatch(["verify", "--json", theirs])
        #expect(verify.succeeded && verify.stdout.contains("V30_SIG_PAST_SIGNERS_MISMATCH"), "\(verify)")
        #expect(try NewerApksigner.run(["verify", theirs]).succeeded)
        let below33 = try TestSupport.apkpatch(["verify", "--max-sdk-version", "32", theirs])
        #expect(below33.status == 1 && below33.stderr.contains("v3 signer differs from v1/v2 signer"), "\(below33)")
        #expect(try NewerApksigner.run(["verify", "--max-sdk-version", "32", theirs]).status == 1)
        // apkpatch's signing of the same options (the original key in v3.0) verifies over every range.
        let ours = dir.appendingPathComponent("three.apk").path
        #expect(try TestSupport.apkpatch(["sign"] + three + ["--out", ours, input]).succeeded)
        for range in [[], ["--max-sdk-version", "32"]] {
            let apksigner = try NewerApksigner.run(["verify"] + range + [ours])
            #expect(apksigner.succeeded, "\(range): \(apksigner)")
            let plain = try TestSupport.apkpatch(["verify", "--json"] + range + [ours])
            #expect(plain.succeeded && !plain.stdout.contains("V30_SIG_PAST_SIGNERS_MISMATCH"), "\(range): \(plain)")
        }

        // A rotation at 34, build-tools 35's development release: written for 33 with the development-release
        // flag (apksig's DEV_RELEASE has moved on since; apkpatch follows the current one). Both print it alike.
        let dev = dir.appendingPathComponent("dev35.apk").path
        try NewerApksigner.check(NewerApksigner.run(["sign"] + Self.arguments(["K0", "--next-signer", "K1", "--lineage", "L01", "--rotation-min-sdk-version", "34"], setup)
                                                    + ["--out", dev, input]))
        let apksigner = try NewerApksigner.run(["verify", "-v", "--print-certs", dev])
        let ourVerify = try TestSupport.apkpatch(["verify", "-v", "--print-certs", dev])
        #expect(apksigner.succeeded && apksigner.stdout.contains("(minSdkVersion=33 (dev release=true)"), "\(apksigner)")
        #expect(ourVerify.succeeded && Self.withoutLineage(ourVerify.stdout) == apksigner.stdout, "\(ourVerify)")
    }
}

extension NewerApksigner {
    /// Throws unless `result` succeeded (set-up steps).
    static func check(_ result: TestSupport.ProcessResult) throws {
        guard result.succeeded else { throw FixtureError(message: "failed:\n\(result)") }
    }
}
