import APKCore
import Overlay
import Sets

/// The patch of a bundletool standalone APK: a standalone is the base with the splits for one ABI and screen
/// density fused in (every language included), so it gets the base's patch and the files of every split patch
/// that reaches it. What cannot be carried over faithfully is refused with the reason, before anything is
/// written, rather than leaving the standalones patched differently from the splits.
enum StandalonePatch {
    /// The patch for `standalone`: the base's `base` (spec and files), plus each split patch's files that
    /// belong in it: a file the standalone holds under that name (a split's file fused in), and a new file or
    /// strings override of a split whose configuration the standalone serves (a language split: every
    /// standalone; an ABI split: standalones holding `lib/<abi>/`; a density split: standalones built for
    /// that density, or for none).
    static func combined(for standalone: APKSet.Member, in set: APKSet, base: PatchDirectory,
                         splits: [String: PatchDirectory]) throws -> PatchDirectory {
        for name in ["AndroidManifest.xml", "resources.arsc"] where base.files[name] != nil {
            throw refusal(standalone, "the patch replaces the base's whole \(name); a standalone APK's \(name) is the base's merged with its splits', which the file would overwrite. Give the changes as apkpatch.yml manifest edits or res/ files instead")
        }
        var files = base.files
        var origin = Dictionary(uniqueKeysWithValues: base.files.keys.map { (ExactName($0), "the base's patch") })
        let entries = Set(standalone.archive.entries.map { ExactName($0.name) })
        let densities = set.toc?.variants.flatMap(\.apks).first { $0.path == standalone.name }?.targeting.screenDensity.values ?? []
        for (name, patch) in splits.sorted(by: { $0.key < $1.key }) {
            guard !patch.files.isEmpty || patch.spec != PatchSpec() else { continue }
            let folder = "\(PatchDirectory.splitsFolder)/\(name)/"
            if patch.spec != PatchSpec() {
                throw refusal(standalone, "\(folder)\(PatchSpec.fileName) edits the split \(name.debugQuoted) itself; in a standalone APK that split's entries are fused with the base's under the base's manifest, where its edits would reach other entries. Move the edits to the top \(PatchSpec.fileName) (which patches the base and every standalone)")
            }
            let serves: Bool
            if let slice = set.assetSlices.first(where: { $0.splitName == name }) {
                // bundletool fuses install-time asset packs into the standalone APKs; packs delivered later
                // never reach a device that installs a standalone.
                serves = set.isInstallTime(slice)
            } else {
                let split = set.members.first { $0.splitName == name }
                let dimension = SplitSelection.dimension(of: name)
                guard let split, !split.manifest.isFeatureSplit, let dimension else {
                    throw refusal(standalone, "\(folder) patches \(name.debugQuoted), which is not a language, ABI or density split: a standalone APK fuses a feature split's code and resources under other names (its classes.dex becomes one of the base's classesN.dex), so its patch cannot be applied there")
                }
                switch dimension {
                case .language: serves = true
                case .abi(let abi):
                    // By bytes, as Android finds an ABI's libraries (NativeLibraryHelper's strncmp on "lib/<abi>/"):
                    // a Character would join a combining mark after the slash to it.
                    serves = entries.contains { $0.string.javaHasPrefix("lib/\(abi)/") }
                case .density(let dpi): serves = densities.isEmpty || densities.contains(dpi)
                }
            }
            for (entry, file) in patch.files {
                if entry.sameUTF8(as: "AndroidManifest.xml") || entry.sameUTF8(as: "resources.arsc") || (entry.javaHasPrefix("classes") && entry.javaHasSuffix(".dex")) {
                    throw refusal(standalone, "\(folder)\(entry) replaces the split's own \(entry); a standalone APK has one \(entry) for the base and all its splits, which the split's would overwrite")
                }
                let isOverride = ResourcePatch.isStringsOverride(path: entry)
                guard serves || (!isOverride && entries.contains(ExactName(entry))) else { continue }
                if let other = origin[ExactName(entry)] {
                    throw refusal(standalone, "\(entry) is patched by both \(other) and \(folder); a standalone APK holds one \(entry) for the base and its splits. Keep one of the two")
                }
                files[entry] = file
                origin[ExactName(entry)] = folder
            }
        }
        return PatchDirectory(root: base.root, spec: base.spec, files: files)
    }

    private static func refusal(_ standalone: APKSet.Member, _ reason: String) -> OverlayError {
        .unsupportedEdit("\(standalone.label) (a bundletool standalone APK): \(reason)")
    }
}
