import APKCore
import Foundation
import Testing
import TestSupport

/// Outputs that install, in watch mode: `watch` builds through the same packaging rules as `run`, so its first
/// build and every rebuild store and align what Android requires and say so. (Part of the serialized
/// PipelineTests suite: its keystore and PackagingRepairTests' fixture helpers.)
extension PipelineTests {
    @Test("watch stores and aligns a compressed resources.arsc (targetSdk 30) and .so (extractNativeLibs=false) in every build, and says so")
    func watchStoresWhatAndroidRequires() throws {
        let library = "lib/arm64-v8a/libdemo.so"
        let input = try build("watch-src.apk", compressing: ["resources.arsc", library]) { fixture in
            fixture.targetSdk = 30
            fixture.applicationAttributes = "android:extractNativeLibs=\"false\""
            fixture.rawFiles[library] = Array(repeating: 0x61, count: 20_000)
        }
        #expect(try method(of: "resources.arsc", in: input) == .deflated)
        #expect(try method(of: library, in: input) == .deflated)

        let patch = dir.appendingPathComponent("watch-patch-\(UUID().uuidString)")
        try TestSupport.write("<p>v1</p>\n", to: "assets/www/index.html", in: patch)
        let output = dir.appendingPathComponent("watch-stored.apk").path
        let (process, lines) = try TestSupport.startApkpatch(
            ["watch", input, "--patch", patch.path, "--out", output] + signing,
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }

        /// Both entries stored, resources.arsc on 4 bytes and the library on a 16 KiB page, and the APK installs.
        func expectStoredAndAligned() throws {
            let archive = try APKArchive(path: output)
            let table = try #require(archive.entry(named: "resources.arsc"))
            #expect(table.method == .stored && table.dataOffset % 4 == 0, "resources.arsc at \(table.dataOffset), \(table.method)")
            let native = try #require(archive.entry(named: library))
            #expect(native.method == .stored && native.dataOffset % 16384 == 0, "\(library) at \(native.dataOffset), \(native.method)")
            try expectInstallable(output)
        }

        #expect(lines.waitFor { $0.contains("] built ") }, "first build: \(lines.lines)")
        #expect(lines.lines.contains { $0.contains("stored resources.arsc: Android 11+ requires it for targetSdk 30+") }, "\(lines.lines)")
        #expect(lines.lines.contains { $0.contains("stored \(library): android:extractNativeLibs=\"false\"") }, "\(lines.lines)")
        try expectStoredAndAligned()

        try TestSupport.write("<p>v2</p>\n", to: "assets/www/index.html", in: patch)
        #expect(lines.waitFor { $0.contains("rebuilt") && $0.contains("index.html") }, "rebuild: \(lines.lines)")
        #expect(try TestSupport.run("unzip", ["-p", output, "assets/www/index.html"]).stdout == "<p>v2</p>\n")
        try expectStoredAndAligned()

        process.interrupt()
        #expect(lines.waitFor { $0.contains("stopped") }, "\(lines.lines)")
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
