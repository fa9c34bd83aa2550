import Foundation
import Testing
import TestSupport

/// apksig's own golden signing outputs, the files themselves: apksig 35.0.2's `ApkSignerTest.generateGoldenFiles`
/// signed `golden-unaligned-in.apk`, `golden-legacy-aligned-in.apk`, `golden-aligned-in.apk`, `original.apk` and
/// `pinsapp-unsigned.apk` with its `rsa-2048` key (and `rsa-2048_2` with the `rsa-2048-lineage-2-signers`
/// lineage), and its `testAlignmentPreserved_Golden`, `testVerityEnabled_Golden`, `testAlignFileSize_Golden` and
/// pinlist tests sign them again and require the same bytes. `apkpatch sign` is given the same inputs, keys and
/// options and must write those bytes too, and `apkpatch verify --signature-only` must accept each golden from API
/// 28 on, as the test's `assertVerified(verify(out, AndroidSdkVersion.P))`. (SignTests'
/// ApksigGoldenTests rebuild the same cases from inputs made here, checked against Debian's apksigner; these are
/// the upstream files, fetched with the real-world corpus from apksig's source tarball.)
@Suite(.removesTemporaryDirectories) struct ApksigGoldenFilesTests {
    struct Case: Sendable, CustomStringConvertible {
        /// The golden file's name in apksig's test resources (the corpus names it `apksig35-` + this).
        let golden: String
        /// The corpus name of the input apksig signed.
        let input: String
        /// `sign` options beyond the key, what the golden's `ApkSigner.Builder` calls ask for.
        let options: [String]
        /// The second signer and the lineage, for the `-lineage-` goldens.
        let rotated: Bool

        var description: String { golden }
    }

    /// apksig's golden cases, as `testAlignmentPreserved_Golden` and the tests after it build them: alignment
    /// preserved always, library pages at 4096 bytes for the legacy-aligned input, rotation at API 28 (P).
    static let cases: [Case] = {
        var cases: [Case] = []
        let schemes: [(suffix: String, options: [String], rotated: Bool)] = [
            ("", [], false),
            ("-v1", ["--v2-signing-enabled", "false", "--v3-signing-enabled", "false", "--v4-signing-enabled", "false"], false),
            ("-v2", ["--v1-signing-enabled", "false", "--v3-signing-enabled", "false"], false),
            ("-v3", ["--v1-signing-enabled", "false", "--v2-signing-enabled", "false"], false),
            ("-v3-lineage", ["--v1-signing-enabled", "false", "--v2-signing-enabled", "false"], true),
            ("-v1v2", ["--v3-signing-enabled", "false"], false),
            ("-v2v3", ["--v1-signing-enabled", "false"], false),
            ("-v2v3-lineage", ["--v1-signing-enabled", "false"], true),
            ("-v1v2v3", [], false),
            ("-v1v2v3-lineage", [], true),
        ]
        for base in ["unaligned", "legacy-aligned", "aligned"] {
            let pages = base == "legacy-aligned" ? ["--lib-page-alignment", "4096"] : []
            for scheme in schemes {
                cases.append(Case(golden: "golden-\(base)\(scheme.suffix)-out.apk", input: "golden-\(base)-in.apk",
                                  options: scheme.options + pages, rotated: scheme.rotated))
            }
        }
        let original = "apksig35-original.apk"
        cases += [
            Case(golden: "golden-rsa-out.apk", input: original, options: [], rotated: false),
            Case(golden: "golden-rsa-minSdkVersion-1-out.apk", input: original, options: ["--min-sdk-version", "1"], rotated: false),
            Case(golden: "golden-rsa-minSdkVersion-18-out.apk", input: original, options: ["--min-sdk-version", "18"], rotated: false),
            Case(golden: "golden-rsa-minSdkVersion-24-out.apk", input: original, options: ["--min-sdk-version", "24"], rotated: false),
            Case(golden: "golden-rsa-verity-out.apk", input: original, options: ["--verity-enabled", "true"], rotated: false),
            Case(golden: "golden-file-size-aligned.apk", input: original, options: ["--align-file-size", "true"], rotated: false),
            Case(golden: "golden-pinsapp-signed.apk", input: "apksig35-pinsapp-unsigned.apk", options: ["--verity-enabled", "true"], rotated: false),
        ]
        return cases
    }()

    @Test(arguments: cases)
    func signsTheGoldenBytes(_ testCase: Case) throws {
        let golden = try RealWorldCorpus.file(named: "apksig35-" + testCase.golden).fetchedPath()
        let input = try RealWorldCorpus.file(named: testCase.input).fetchedPath()
        let key = { (name: String) in try RealWorldCorpus.file(named: "apksig35-" + name).fetchedPath() }
        // apksig names the JAR signature files after the key's resource name (`rsa-2048`); the corpus prefixes its files.
        var signers = ["--key", try key("rsa-2048.pk8"), "--cert", try key("rsa-2048.x509.pem"), "--v1-signer-name", "RSA-2048"]
        if testCase.rotated {
            signers += ["--next-signer", "--key", try key("rsa-2048_2.pk8"), "--cert", try key("rsa-2048_2.x509.pem"),
                        "--lineage", try key("rsa-2048-lineage-2-signers"), "--rotation-min-sdk-version", "28"]
        }
        let work = try TestSupport.makeTemporaryDirectory("apksig-golden-files")
        defer { try? FileManager.default.removeItem(at: work) }
        let output = work.appendingPathComponent("signed.apk").path
        let signed = try TestSupport.apkpatch(["sign"] + signers + testCase.options + ["--alignment-preserved", "true", "--out", output, input])
        try #require(signed.succeeded, "\(testCase): sign failed: \(signed)")
        let ours = try Data(contentsOf: URL(fileURLWithPath: output)), theirs = try Data(contentsOf: URL(fileURLWithPath: golden))
        if ours != theirs {
            let first = zip(ours, theirs).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(ours.count, theirs.count)
            Issue.record("\(testCase): apkpatch's \(ours.count) bytes are not apksig's golden \(theirs.count) bytes (first difference at offset \(first))")
        }
        // The signatures alone (apksig's test library is a 6-byte fake.so stored at 4 KiB, which verify's install
        // checks refuse for devices with 16 KiB pages), from API 28 as assertGolden verifies them (v2 and v3 alone
        // do not cover the input's minSdkVersion).
        let verify = try TestSupport.apkpatch(["verify", "--signature-only", "--min-sdk-version", "28", golden])
        #expect(verify.succeeded, "\(testCase): apkpatch verify refuses apksig's golden: \(verify)")
    }
}
