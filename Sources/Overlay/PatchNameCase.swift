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

    /// Notes on patch files whose names are an entry's in another Unicode form: "cafe\u{301}.txt" (decomposed, as
    /// macOS tools often write names) beside the entry "caf\u{E9}.txt", or U+212A KELVIN SIGN for "K". Android
    /// reads entry names byte for byte, so such a file adds a second entry rather than replacing the first. Only
    /// names with a byte outside ASCII can have another form, or be another form of an ASCII name: without one
    /// among the patch files nothing is looked at.
    package static func normalizationNotes(entries: [ZipEntry], patch: PatchDirectory) -> [String] {
        let candidates = patch.files.keys.filter { !$0.utf8.allSatisfy { $0 < 0x80 } }
        guard !candidates.isEmpty else { return [] }
        let exact = Set(entries.map { ExactName($0.name) })
        // String's == is canonical equivalence: what a twin is.
        var byText: [String: String] = [:]
        for entry in entries where byText[entry.name] == nil { byText[entry.name] = entry.name }
        var notes: [String] = []
        for name in candidates where !exact.contains(ExactName(name)) {
            guard let entry = byText[name] else { continue }
            notes.append("patch file \(name.debugQuoted) adds a new entry: the APK's \(entry.debugQuoted) is the same text in another Unicode form (\(Self.scalars(name)) against \(Self.scalars(entry))), and Android reads entry names byte for byte; rename the patch file to the entry's exact spelling to replace it")
        }
        return notes
    }

    /// The code points of `name` outside ASCII ("U+0065 U+0301"), which tell two spellings apart in a message.
    private static func scalars(_ name: String) -> String {
        let others = name.unicodeScalars.filter { !$0.isASCII }.map { "U+" + String($0.value, radix: 16, uppercase: true).leftPadded(to: 4) }
        return others.isEmpty ? "ASCII only" : others.joined(separator: " ")
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
