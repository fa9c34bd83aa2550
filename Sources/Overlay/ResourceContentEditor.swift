import APKCore
import BinaryXML
import Repack
import ResourceTable
import Unpack

/// The binary-XML stage of an overlay (`Overlay.contentEditor`): turns what a patch directory says about the
/// manifest and resources into compiled entries.
/// - `AndroidManifest.xml` in the patch as text is compiled to binary (the original's encoding and conventions);
/// - the spec's `manifest:` shortcuts (and `extraEdits`) are applied to the (original or compiled) manifest;
/// - text `res/**.xml` files (not `res/values*`, `res/raw*`) are compiled to binary;
/// - `res/values*/strings.xml` change existing strings in `resources.arsc` (they are not added as files).
/// `resources.arsc` keeps its compression method (normally stored, which Android 11+ requires).
public struct ResourceContentEditor: ContentEditor {
    /// Edits applied on top of the patch spec's `manifest:` shortcuts (these win when both set a value).
    public var extraEdits: ManifestEdits

    public init(extraEdits: ManifestEdits = ManifestEdits()) { self.extraEdits = extraEdits }

    public func edit(entries: [OutputEntry], archive: APKArchive, patch: PatchDirectory, timestamp: DOSTimestamp,
                     summary: inout OverlaySummary) throws -> [OutputEntry] {
        var edits = ManifestEdits(patch.spec.manifest)
        merge(extraEdits, into: &edits)
        let overrides = patch.files.keys.filter(ResourcePatch.isStringsOverride).sorted()
        let compiled = patch.files.keys.filter { ResourcePatch.isCompiledXMLPath($0) }.sorted()
        if edits.isEmpty && overrides.isEmpty && compiled.isEmpty { return entries }

        var table: ResourceTable?
        if let arsc = archive.entry(named: "resources.arsc") { table = try ResourceTable(bytes: try archive.uncompressedData(of: arsc)) }
        var output = entries
        func index(of name: String) -> Int? { output.firstIndex { $0.entry.name == name } }
        func replace(_ name: String, with content: [UInt8]) throws {
            guard let i = index(of: name) else { return }
            let template = archive.entry(named: name) ?? output[i].entry
            output[i] = try OutputEntry.making(name: name, content: content, method: output[i].entry.method, template: template, timestamp: timestamp)
            if !summary.edited.contains(name) { summary.edited.append(name) }
        }

        // Strings first: a compiled manifest may refer to them by name either way (names do not change).
        if !overrides.isEmpty {
            guard let arscEntry = archive.entry(named: "resources.arsc"), let original = table else {
                throw ResourceTableError(.notFound, "the patch has \(overrides.joined(separator: ", ")) but the APK has no resources.arsc to apply them to")
            }
            let files = try overrides.map { path in (path: path, text: String(decoding: try PatchDirectory.read(patch.files[path]!), as: UTF8.self)) }
            var updated = original
            for file in files {
                try updated.applyStringsXML(file.text, directory: String(file.path.split(separator: "/")[1]), fileName: file.path)
            }
            output.removeAll { overrides.contains($0.entry.name) && archive.entry(named: $0.entry.name) == nil }
            summary.added.removeAll { overrides.contains($0) }
            let bytes = try updated.encoded()
            if bytes != (try archive.uncompressedData(of: arscEntry)) { try replace("resources.arsc", with: bytes) }
            table = updated
        }

        for path in compiled {
            if path == "AndroidManifest.xml", !edits.isEmpty { continue }  // compiled below, together with the edits
            let content = try PatchDirectory.read(patch.files[path]!)
            guard ResourcePatch.isTextXML(content) else { continue }  // already binary: the overlay copied it as is
            let original = try archive.entry(named: path).map { try archive.uncompressedData(of: $0) }
            let binary = try ResourcePatch.compilingXML(textXML: String(decoding: content, as: UTF8.self), path: path,
                                                        original: original.flatMap { ResourcePatch.isTextXML($0) ? nil : $0 }, resources: table)
            try replace(path, with: binary)
        }

        if !edits.isEmpty {
            var manifest: [UInt8]
            let originalManifest = try archive.entry(named: "AndroidManifest.xml").map { try archive.uncompressedData(of: $0) }
            if let file = patch.files["AndroidManifest.xml"], case let content = try PatchDirectory.read(file), ResourcePatch.isTextXML(content) {
                manifest = try ResourcePatch.compilingXML(textXML: String(decoding: content, as: UTF8.self), path: "AndroidManifest.xml",
                                                          original: originalManifest, resources: table)
            } else if let file = patch.files["AndroidManifest.xml"] {
                manifest = try PatchDirectory.read(file)
            } else if let originalManifest {
                manifest = originalManifest
            } else {
                throw BinaryXMLError(.missingContent, "the APK has no AndroidManifest.xml to apply the manifest: shortcuts to")
            }
            manifest = try ManifestPatch.applying(edits, to: manifest, resources: table)
            try replace("AndroidManifest.xml", with: manifest)
        }
        return output
    }

    private func merge(_ extra: ManifestEdits, into edits: inout ManifestEdits) {
        if let v = extra.debuggable { edits.debuggable = v }
        if let v = extra.versionCode { edits.versionCode = v }
        if let v = extra.versionName { edits.versionName = v }
        if let v = extra.label { edits.label = v }
        if let v = extra.usesCleartextTraffic { edits.usesCleartextTraffic = v }
        if let v = extra.extractNativeLibs { edits.extractNativeLibs = v }
        if let v = extra.minSdkVersion { edits.minSdkVersion = v }
        if let v = extra.targetSdkVersion { edits.targetSdkVersion = v }
    }
}
