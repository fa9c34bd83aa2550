import Foundation
import Testing
import TestSupport

/// No false positives of the resource-table checks (`ResourceTableLoadCheck`): every distinct `resources.arsc` of
/// the real-world corpus (sparse and shared-library tables, aapt1 and aapt2 builds, tables without a package,
/// vendors' framework-res.apk) and Debian's framework-res.apk loads with Android's own loaders
/// (`Tests/Oracles/arsc-check.cc --strict`) and `verify` reports nothing about it, neither a rule the loader
/// breaks nor an encoding newer than the APK's minSdkVersion. `RealWorldCorpusTests` then holds
/// verify's verdict to apksigner's and signs every APK, so a table refused there would fail those too.
@Suite(.removesTemporaryDirectories) struct ResourceTableSweepTests {
    /// One APK per distinct table (the corpus holds the same app signed in several ways), and framework-res.apk.
    static let inputs: [String] = {
        var seen = Set<String>()
        var paths: [String] = []
        for apk in RealWorldCorpus.apks where apk.isFetched {
            let digest = (try? TestSupport.run("sh", ["-c", "unzip -p \"$1\" resources.arsc 2>/dev/null | sha256sum", "sh", apk.path]))?.stdout ?? apk.path
            if seen.insert(digest).inserted { paths.append(apk.path) }
        }
        return paths + [TestSupport.frameworkRes]
    }()

    @Test(arguments: inputs)
    func tableLoads(_ path: String) throws {
        let work = try TestSupport.makeTemporaryDirectory("arsc-sweep")
        defer { try? FileManager.default.removeItem(at: work) }
        let table = work.appendingPathComponent("resources.arsc").path
        let extracted = try TestSupport.run("sh", ["-c", "unzip -p \"$1\" resources.arsc > \"$2\"", "sh", path, table])
        let size = (try? FileManager.default.attributesOfItem(atPath: table)[.size] as? Int) ?? 0
        if extracted.succeeded && size > 0 {
            let strict = try TestSupport.libandroidfwTable(table, strict: true)
            #expect(strict.succeeded && strict.stdout == "OK\n", "\(path): libandroidfw refuses its table: \(strict)")
        }
        let json = try TestSupport.apkpatch(["verify", "--json", path])
        let report = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        let findings = ((report?["installErrors"] as? [[String: Any]]) ?? []).filter {
            ["INSTALL_RESOURCES_ARSC_MALFORMED", "INSTALL_RESOURCES_ARSC_ABOVE_MIN_SDK"].contains($0["code"] as? String)
        }
        #expect(report != nil && findings.isEmpty, "\(path): \(findings.isEmpty ? json.description : "\(findings)")")
    }
}
