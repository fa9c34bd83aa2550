#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension TemplateLibrary {
    /// The Swift source of `EmbeddedTemplates.swift` for the templates in `self` (the source tree's `Templates/`).
    ///
    /// The compiled-in copy is generated, never hand-written: `InstallTests` fails when the file on disk differs from
    /// this, and rewrites it when `APKPATCH_REGENERATE_EMBEDDED_TEMPLATES=1`.
    package func embeddedTemplatesSource() throws -> String {
        var source = """
        // Generated from Templates/ by InstallTests; do not edit. Regenerate with
        //   APKPATCH_REGENERATE_EMBEDDED_TEMPLATES=1 swift test --filter EmbeddedTemplates
        // The fallback copy for a binary that cannot find its Templates folder (see TemplateLibrary).
        enum EmbeddedTemplates {
            static let files: [String: String] = [

        """
        for folder in Self.embeddedFolders {
            for path in try files(under: folder) {
                let text = try text(of: path)
                // A raw string literal with enough #s that nothing inside can end it or start an escape.
                var hashes = "#"
                while text.contains("\"\"\"" + hashes) || text.contains("\\" + hashes) { hashes += "#" }
                source += "        \(Self.swiftStringLiteral(path)): \(hashes)\"\"\"\n\(text)\n\"\"\"\(hashes),\n"
            }
        }
        source += "    ]\n}\n"
        return source
    }

    private static func swiftStringLiteral(_ string: String) -> String {
        "\"" + string.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\""
    }
}
