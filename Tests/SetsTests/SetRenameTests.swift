import Foundation
import Testing
import TestSupport

/// Renaming the package of a split APK set: every APK's manifest and resource table name the new package (Android
/// installs a set only when all agree), whether asked with `--rename-package` or the spec, and merged too.
@Suite(.removesTemporaryDirectories) struct SetRenameTests {
    @Test func everyAPKOfTheSetIsRenamed() throws {
        let scratch = try TestSupport.makeTemporaryDirectory("set-rename")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let fixture = try SplitSetFixture(in: scratch)
        let input = try fixture.pack(.apks)
        let keystore = scratch.appendingPathComponent("debug.p12").path
        let output = scratch.appendingPathComponent("renamed.apks").path
        let result = try TestSupport.apkpatch(["run", input, "--rename-package", "com.example.setcopy", "--out", output, "--debug-keystore", keystore])
        #expect(result.succeeded, "\(result)")
        guard result.succeeded else { return }
        let apks = try SetOracles.apkFiles(of: output, form: .apks, scratch: scratch)
        #expect(apks.count == 4, "\(apks)")
        var tables = 0
        for (name, path) in apks {
            #expect(try SetOracles.badging(path).contains("package: name='com.example.setcopy'"), "\(name)")
            if try TestSupport.run("unzip", ["-l", path]).stdout.contains("resources.arsc") {
                tables += 1
                #expect(try TestSupport.run("aapt", ["dump", "resources", path]).stdout.contains("name=com.example.setcopy"), "\(name)")
            }
            #expect(try TestSupport.run("apksigner", ["verify", path]).succeeded, "\(name)")
        }
        #expect(tables >= 3, "base, fr and xhdpi carry resource tables")

        // The spec's manifest: package: does the same, here merged into one APK.
        let patch = scratch.appendingPathComponent("patch")
        try TestSupport.write("manifest:\n  package: com.example.setcopy\n", to: "apkpatch.yml", in: patch)
        let merged = scratch.appendingPathComponent("merged.apk").path
        let merge = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--merge", "--out", merged, "--debug-keystore", keystore])
        #expect(merge.succeeded, "\(merge)")
        #expect(try TestSupport.run("aapt", ["dump", "badging", merged]).stdout.contains("package: name='com.example.setcopy'"))
        #expect(try TestSupport.run("aapt", ["dump", "resources", merged]).stdout.contains("name=com.example.setcopy"))

        // One split renamed alone would not install with the others: refused, nothing written.
        try TestSupport.write("manifest:\n  package: com.other.split\n", to: "splits/config.fr/apkpatch.yml", in: patch)
        let refusedOut = scratch.appendingPathComponent("refused.apks").path
        let refused = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", refusedOut, "--debug-keystore", keystore])
        #expect(!refused.succeeded && refused.stderr.contains("splits/config.fr/apkpatch.yml: manifest.package renames one split"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: refusedOut))
    }
}
