import APKCore

extension Overlay {
    /// Notes on patch files whose names match the APK's entries only up to case. Android reads entry names byte
    /// for byte, so a patch file `assets/Logo.png` beside the entry `assets/logo.png` adds a second entry rather
    /// than replacing the first; and where the patch directory's file system folds case (macOS, Windows, exFAT),
    /// of two entries whose names differ only in case (an obfuscator's `res/a.xml` and `res/A.xml`) at most one
    /// can be a file there, so the other cannot be patched from it. ASCII letters are compared (what entry names
    /// that differ only in case differ in); `foldsCase` tells whether a directory's file system folds case (tests
    /// stand in one that does), asked only when such a pair is patched.
    package static func caseNotes(entries: [ZipEntry], patch: PatchDirectory,
                                  foldsCase: (String) -> Bool? = CaseInsensitiveNames.isCaseInsensitive(directory:)) -> [String] {
        guard !patch.files.isEmpty else { return [] }
        var notes: [String] = []
        var unpatchable: [CaseInsensitiveNames.Variant] = []
        for variant in CaseInsensitiveNames.asciiCaseVariants(of: patch.files.keys.sorted(), among: entries.map(\.nameBytes)) {
            if variant.nameIsEntry {
                // Both patched (a case-sensitive patch directory holds both): nothing is lost.
                if patch.files[variant.entry] == nil { unpatchable.append(variant) }
                continue
            }
            let parts = variant.namePrefix == variant.name ? ""
                : " (folders \(variant.entryPrefix.lastPathComponent.debugQuoted) and \(variant.namePrefix.lastPathComponent.debugQuoted))"
            notes.append("patch file \(variant.name) adds a new entry: the APK's \(variant.entry) differs from it only in case\(parts), and Android reads entry names case-sensitively; rename the patch file to replace that entry")
        }
        if !unpatchable.isEmpty, foldsCase(patch.root) == true {
            for variant in unpatchable {
                notes.append("the APK's entries \(variant.name) and \(variant.entry) differ only in case, and the patch directory \(patch.root) is on a case-insensitive file system, where they are one file: \(variant.name) is patched, \(variant.entry) cannot be from this folder (move the patch directory to a case-sensitive file system to patch both)")
            }
        }
        return notes
    }
}
