import Foundation
import Testing
@testable import Install
import TestSupport

/// The compiled-in templates are generated from Templates/ and must match it byte for byte.
@Suite(.removesTemporaryDirectories) struct EmbeddedTemplatesTests {
    static let generatedFile = TestSupport.packageRoot.appendingPathComponent("Sources/Install/EmbeddedTemplates.swift")

    @Test func embeddedTemplatesMatchTheTemplatesFolder() throws {
        let expected = try sourceTemplates().embeddedTemplatesSource()
        if ProcessInfo.processInfo.environment["APKPATCH_REGENERATE_EMBEDDED_TEMPLATES"] == "1" {
            try Data(expected.utf8).write(to: Self.generatedFile, options: .atomic)
        }
        let onDisk = try String(contentsOf: Self.generatedFile, encoding: .utf8)
        #expect(onDisk == expected, "Sources/Install/EmbeddedTemplates.swift is stale: run APKPATCH_REGENERATE_EMBEDDED_TEMPLATES=1 swift test --filter EmbeddedTemplates")
    }

    @Test func compiledInCopyHasEveryFileWithTheSameText() throws {
        let directory = try sourceTemplates()
        let embedded = TemplateLibrary.embedded
        for folder in TemplateLibrary.embeddedFolders {
            let paths = try directory.files(under: folder)
            #expect(!paths.isEmpty)
            #expect(try embedded.files(under: folder) == paths)
            for path in paths { #expect(try embedded.text(of: path) == directory.text(of: path), "\(path)") }
        }
    }

    @Test func embeddedCopyRendersTheSameCommands() throws {
        let options = InstallOptions(serial: "emulator-5554", allowDowngrade: true, launch: true)
        let fromDisk = try InstallCommands(apkPath: "out.apk", packageName: "com.example.app", launcherActivity: "com.example.app.Main",
                                           options: options, templates: sourceTemplates())
        let fromBinary = try InstallCommands(apkPath: "out.apk", packageName: "com.example.app", launcherActivity: "com.example.app.Main",
                                             options: options, templates: .embedded)
        #expect(fromDisk.text == fromBinary.text)
    }
}
