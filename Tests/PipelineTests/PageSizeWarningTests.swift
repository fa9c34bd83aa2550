import Foundation
import Testing
import TestSupport

/// A native library not ready for 16 KiB pages (its ELF LOAD segments aligned to 4 KiB; no packaging fixes
/// that): `run`'s summary says so in one sentence naming the library once, and `watch` says it once a session,
/// not after every save. (Part of the serialized PipelineTests suite: its keystore.)
extension PipelineTests {
    /// An APK with a 64-bit library linked for 4 KiB pages (g++ `-z max-page-size=4096`).
    func apkWithLibraryFor4KiBPages(_ name: String) throws -> (apk: String, library: String) {
        let library = "lib/x86_64/libpages.so"
        let source = dir.appendingPathComponent("pages.cpp")
        try TestSupport.write("extern \"C\" int apkpatch_pages(int x) { return x * 3 + 2; }\n", to: "pages.cpp", in: dir)
        let linked = dir.appendingPathComponent("libpages-\(UUID().uuidString).so").path
        let gxx = try TestSupport.run("g++", ["-shared", "-fPIC", "-O2", "-Wl,-z,max-page-size=4096", "-o", linked, source.path])
        try #require(gxx.succeeded, "\(gxx)")
        var fixture = FixtureAPK()
        fixture.rawFiles[library] = try TestSupport.readBytes(linked)
        return (try fixture.build(in: dir, name: name), library)
    }

    @Test("run names a library not ready for 16 KiB pages once, in a sentence; watch says it once a session")
    func pageSizeWarningIsOneSentenceOncePerSession() throws {
        let (input, library) = try apkWithLibraryFor4KiBPages("pages-src.apk")
        let output = dir.appendingPathComponent("pages-out.apk").path
        let run = try TestSupport.apkpatch(["run", input, "--out", output] + signing, environment: environment)
        #expect(run.succeeded, "\(run)")
        let warnings = run.stdout.split(separator: "\n").filter { $0.contains("WARNING:") && $0.contains("LOAD segments") }
        #expect(warnings.count == 1, "\(run.stdout)")
        let line = String(warnings.first ?? "")
        #expect(line.components(separatedBy: library).count == 2, "the library is named once: \(line)")
        #expect(line.contains("WARNING: \(library): its LOAD segments are aligned to 4096 bytes, not to a multiple of 16 KiB, so devices with 16 KiB pages"), "\(line)")

        // watch verifying every save: the first build's warning, and not again while the library stays as it is.
        let patch = dir.appendingPathComponent("pages-patch-\(UUID().uuidString)")
        try TestSupport.write("one\n", to: "assets/note.txt", in: patch)
        let watched = dir.appendingPathComponent("pages-watch.apk").path
        let (process, lines) = try TestSupport.startApkpatch(["watch", input, "--patch", patch.path, "--out", watched, "--verify-each"] + signing,
                                                             environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        #expect(lines.waitFor { $0.contains("] built ") }, "\(lines.lines)")
        for (index, text) in ["two\n", "three\n"].enumerated() {
            try TestSupport.write(text, to: "assets/note.txt", in: patch)
            #expect(lines.waitFor(index + 1) { $0.contains("] rebuilt ") }, "rebuild \(index + 1): \(lines.lines)")
        }
        process.interrupt()
        #expect(lines.waitFor { $0.contains("stopped") }, "\(lines.lines)")
        process.waitUntilExit()
        let told = lines.lines.filter { $0.contains("WARNING: \(library): its LOAD segments") }
        #expect(told.count == 1, "\(lines.lines)")
    }

    /// watch verifies only its first build by default: a library not ready for 16 KiB pages that a later save
    /// brings in is told when it arrives (the save that changes a .so is verified), once.
    @Test("watch tells of a library not ready for 16 KiB pages that a save brings in, once")
    func pageSizeWarningForALibraryAddedWhileWatching() throws {
        let (withLibrary, library) = try apkWithLibraryFor4KiBPages("pages-lib.apk")
        let input = try FixtureAPK().build(in: dir, name: "pages-nolib.apk")
        let patch = dir.appendingPathComponent("pages-added-\(UUID().uuidString)")
        try TestSupport.write("one\n", to: "assets/note.txt", in: patch)
        let watched = dir.appendingPathComponent("pages-added.apk").path
        let (process, lines) = try TestSupport.startApkpatch(["watch", input, "--patch", patch.path, "--out", watched] + signing,
                                                             environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        #expect(lines.waitFor { $0.contains("] built ") }, "\(lines.lines)")
        let extracted = try TestSupport.run("unzip", ["-o", "-q", withLibrary, library, "-d", patch.path])
        #expect(extracted.succeeded, "\(extracted)")
        #expect(lines.waitFor { $0.contains("] rebuilt ") }, "\(lines.lines)")
        try TestSupport.write("two\n", to: "assets/note.txt", in: patch)
        #expect(lines.waitFor(2) { $0.contains("] rebuilt ") }, "\(lines.lines)")
        process.interrupt()
        #expect(lines.waitFor { $0.contains("stopped") }, "\(lines.lines)")
        process.waitUntilExit()
        #expect(lines.lines.filter { $0.contains("WARNING: \(library): its LOAD segments") }.count == 1, "\(lines.lines)")
    }
}
