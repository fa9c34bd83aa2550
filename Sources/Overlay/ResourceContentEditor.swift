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
/// - `res/values*/*.xml` change and add values in `resources.arsc` (they are not added as files).
/// `resources.arsc` keeps its compression method (normally stored, which Android 11+ requires).
public struct ResourceContentEditor: ContentEditor {
    /// Edits applied on top of the patch spec's `manifest:` shortcuts (these win when both set a value).
    public var extraEdits: ManifestEdits
    /// Network-security settings on top of the patch spec's `networkSecurity:` (command-line options).
    public var extraNetworkSecurity: NetworkSecuritySpec

    public init(extraEdits: ManifestEdits = ManifestEdits(), extraNetworkSecurity: NetworkSecuritySpec = NetworkSecuritySpec()) {
        self.extraEdits = extraEdits; self.extraNetworkSecurity = extraNetworkSecurity
    }

    /// Text XML where Android reads binary XML is compiled (`compiled`, below), and a values file the APK does
    /// not have is applied to resources.arsc and left out (`overrides`).
    public func makesEntry(forPatchFileAt path: String, inAPK: Bool, content: [UInt8]) -> Bool {
        if ResourcePatch.isValuesPath(path) { return !inAPK }
        return ResourcePatch.isCompiledXMLPath(path) && ResourcePatch.isTextXML(content)
    }

    public func edit(entries: [OutputEntry], archive: APKArchive, patch: PatchDirectory, timestamp: DOSTimestamp,
                     summary: inout OverlaySummary) throws -> [OutputEntry] {
        var edits = patch.spec.manifest
        merge(extraEdits, into: &edits)
        let overrides = patch.files.keys.filter(ResourcePatch.isValuesPath).sorted()
        let newFiles = try patch.files.keys.filter { $0.javaHasPrefix("res/") && archive.entry(named: $0) == nil && !ResourcePatch.isValuesPath($0) }.sorted()
            .map { (path: $0, resource: try ResourcePatch.resourceFile(at: $0)) }
        let compiled = patch.files.keys.filter { ResourcePatch.isCompiledXMLPath($0) }.sorted()
        let network = patch.spec.networkSecurity.merging(extraNetworkSecurity)
        if edits.isEmpty && overrides.isEmpty && compiled.isEmpty && newFiles.isEmpty && network.isEmpty { return entries }

        var table: ResourceTable?
        let arscEntry = archive.entry(named: "resources.arsc")
        // A table without a package (an app without resources), or no table at all, gets a package named as the
        // manifest's when the patch adds resources, as aapt2 names it.
        let manifestPackage = archive.entry(named: "AndroidManifest.xml").flatMap { try? ManifestSummary(binaryXML: archive.uncompressedData(of: $0)).packageName }
        if let arscEntry {
            do {
                table = try ResourceTable(bytes: try archive.uncompressedData(of: arscEntry), packageNameIfAbsent: manifestPackage ?? "")
            } catch let error as ResourceTableError where error.code == .malformed {
                // A table that does not parse is mostly one Android's loader refuses too: say so in the loader's
                // terms, and what to do, as signing the APK without resource edits does.
                guard let problem = try ResourceTableLoadCheck.problem(in: archive) else { throw error }
                throw ResourceTableError(.malformed, "resources.arsc: \(problem). Patched, the APK would not install or its app would fail, so nothing was written. \(problem.remedy)")
            }
        } else if try !(overrides.isEmpty && newFiles.isEmpty && network.isEmpty) || compiled.contains(where: { path in
            let content = try PatchDirectory.read(patch.files[path]!)
            return ResourcePatch.isTextXML(content) && !ResourcePatch.newIDNames(in: String(decoding: content, as: UTF8.self)).isEmpty
        }) {
            guard let manifestPackage, !manifestPackage.isEmpty else {
                let what = (overrides + newFiles.map(\.path)).first ?? (network.isEmpty ? "new ids" : "networkSecurity")
                throw ResourceTableError(.notFound, "the patch has \(what), which needs a resources.arsc; the APK has none, and no manifest package to name a new one after")
            }
            table = try ResourceTable.empty(packageName: manifestPackage)
        }
        if let packageID = table?.packageID {
            table!.avoidIDs { Self.referencedIDs(in: archive, patch: patch, packageID: packageID) }
        }
        var output = entries
        // By bytes, as entries are told apart: String's == would take "cafe\u{301}.xml" for "caf\u{E9}.xml". A
        // decoded app's patch replaces thousands of entries, so names are looked up in a table of `output`'s,
        // made again only after an entry is removed or added.
        var positions: (names: EntryNameTable, indices: [Int])?
        func index(of name: String) -> Int? {
            if positions == nil {
                var names = EntryNameTable(minimumCapacity: output.count), indices: [Int] = []
                for (i, entry) in output.enumerated() where names.insert(entry.entry.nameBytes) { indices.append(i) }
                positions = (names, indices)
            }
            var name = name
            return name.withUTF8 { positions!.names.index(of: UnsafeRawBufferPointer($0)) }.map { positions!.indices[$0] }
        }
        var edited = Set(summary.edited.map { Array($0.utf8) })
        func replace(_ name: String, with content: [UInt8]) throws {
            guard let i = index(of: name) else { return }
            let original = archive.entry(named: name)
            output[i] = try OutputEntry.making(name: name, content: content, method: output[i].entry.method, template: original ?? output[i].entry, timestamp: timestamp)
            if original != nil && edited.insert(Array(name.utf8)).inserted { summary.edited.append(name) }
        }
        func add(_ name: String, content: [UInt8]) throws {
            let method = CompressionPolicy(store: patch.spec.store, deflate: patch.spec.deflate).method(for: name, original: nil)
            if let i = index(of: name) { output.remove(at: i) }
            positions = nil
            output.append(try OutputEntry.making(name: name, content: content, method: method, template: nil, timestamp: timestamp))
            if !summary.added.contains(name) { summary.added.append(name); summary.added.sort() }
        }

        var updated = table
        // Values files first: `<public>` there may give a new file resource its ID, and new names (files' too)
        // get their IDs before any value is compiled, so anything may refer to anything the patch adds. A new
        // file lands at the path aapt2 gives it (res/drawable-hdpi-v4/…).
        if !overrides.isEmpty {
            try updated!.applyValuesFiles(try overrides.map { path in
                (String(path.split(separator: "/")[1]), path, String(decoding: try PatchDirectory.read(patch.files[path]!), as: UTF8.self))
            }, fileResources: newFiles.map { ($0.resource.type, $0.resource.name) })
        }
        var paths: [String: String] = [:]
        for file in newFiles {
            let resource = file.resource
            if let other = newFiles.first(where: { $0.path < file.path && $0.resource.type == resource.type && $0.resource.name == resource.name
                                                   && $0.resource.configuration == resource.configuration }) {
                throw ResourceTableError(.duplicate, "\(file.path): \(resource.type)/\(resource.name) is already given by \(other.path) (a configuration holds each name once; keep one of the files)")
            }
            if updated!.hasValue(type: resource.type, named: resource.name, in: resource.configuration),
               case .string(let existing)? = updated!.currentValue(type: resource.type, named: resource.name, qualifiers: resource.configuration.qualifiers),
               existing.hasPrefix("res/") {
                throw ResourceTableError(.duplicate, "\(file.path): \(resource.type)/\(resource.name) already is \(existing) in the APK (a configuration holds each name once; replace that file, at its path, instead)")
            }
            do {
                try updated!.addValue(.string(resource.entryPath), type: resource.type, named: resource.name, configuration: resource.configuration)
            } catch let error as ResourceTableError {
                throw ResourceTableError(error.code, "\(file.path): \(error.message)")
            }
            paths[file.path] = resource.entryPath
        }
        let overrideNames = Set(overrides.map { Array($0.utf8) })
        output.removeAll { entry in overrideNames.contains(entry.entry.nameBytes) && archive.entry(named: entry.entry.name) == nil }
        positions = nil
        summary.added.removeAll { overrideNames.contains(Array($0.utf8)) }  // by bytes, as the entries above

        var networkPlan: NetworkSecurityPlan?
        if !network.isEmpty {
            networkPlan = try NetworkSecurityPreset.plan(network, archive: archive, patch: patch, table: &updated!,
                                                          usesCleartextTraffic: edits.usesCleartextTraffic)
            for (path, content) in networkPlan!.files {
                if archive.entry(named: path) != nil { try replace(path, with: content) } else { try add(path, content: content) }
            }
            if let reference = networkPlan!.manifestReference { edits.networkSecurityConfig = reference }
            summary.notes += networkPlan!.notes
        }
        // Android 7+ follows the app's own network security config instead of the manifest's flag, so the edit
        // alone changes nothing there.
        if edits.usesCleartextTraffic != nil, edits.networkSecurityConfig == nil, let manifestEntry = archive.entry(named: "AndroidManifest.xml"),
           let manifest = try? XMLTree.parse(binaryXML: archive.uncompressedData(of: manifestEntry), keeping: { $0 == "manifest" && $1 == "application" }),
           manifest.root?.elements(named: "application").first?.attribute(id: AndroidAttribute.networkSecurityConfig, name: "networkSecurityConfig") != nil {
            summary.notes.append("usesCleartextTraffic: the app has a network security config (android:networkSecurityConfig), which Android 7 and later follow instead of this flag: set cleartextTrafficPermitted in that res/xml file (in the patch directory) as well")
        }

        func moveToEntryPath(_ path: String, content: [UInt8]) throws {
            guard let entryPath = paths[path] else { return }
            if entryPath != path {
                output.removeAll { $0.entry.name.sameUTF8(as: path) }
                positions = nil
                summary.added.removeAll { $0 == path }
            }
            try add(entryPath, content: content)
        }
        // `@+id/name` in text XML creates the id, as aapt does (the value aapt gives ids: boolean false).
        if updated != nil {
            for path in compiled {
                let content = try PatchDirectory.read(patch.files[path]!)
                guard ResourcePatch.isTextXML(content) else { continue }
                for name in ResourcePatch.newIDNames(in: String(decoding: content, as: UTF8.self)) where updated!.resourceID(type: "id", name: name) == nil {
                    try updated!.addValue(.typed(.intBoolean, 0), type: "id", named: name, configuration: try ResourceConfiguration(qualifiers: ""))
                }
            }
        }
        // A package rename also renames what res/ XML says about the package (authorities, intent target
        // packages, the res/OLD namespace), in the APK's files and the patch's alike.
        if let newName = edits.packageName, !PackageRename.isValidPackageName(newName) {
            throw BinaryXMLError(.badValue, "manifest.package '\(newName.cappedForMessage)' is not a package name (two or more dot-separated parts, each a letter followed by letters, digits or _)")
        }
        let renaming = edits.packageName.flatMap { newName in updated.map { (old: $0.packageName, new: newName) } }
        var renameNotes: [String] = []
        var renamedReferences = Set<UInt32>()
        func renamingPackage(in binary: [UInt8], path: String) -> [UInt8] {
            guard let renaming, path.javaHasPrefix("res/") else { return binary }
            let result = PackageRename.rename(xml: binary, path: path, from: renaming.old, to: renaming.new)
            renameNotes += result.notes
            renamedReferences.formUnion(result.stringReferences)
            return result.bytes ?? binary
        }
        var moved = Set<String>()
        for path in compiled {
            if path == "AndroidManifest.xml", !edits.isEmpty { continue }  // compiled below, together with the edits
            let content = try PatchDirectory.read(patch.files[path]!)
            guard ResourcePatch.isTextXML(content) else { continue }  // already binary: the overlay copied it as is
            let original = try archive.entry(named: path).map { try archive.uncompressedData(of: $0) }
            let binary = renamingPackage(in: try ResourcePatch.compilingXML(textXML: String(decoding: content, as: UTF8.self), path: path,
                                                                            original: original.flatMap { ResourcePatch.isTextXML($0) ? nil : $0 }, resources: updated),
                                         path: path)
            if paths[path] != nil { try moveToEntryPath(path, content: binary); moved.insert(path) } else { try replace(path, with: binary) }
        }
        for (path, entryPath) in paths.sorted(by: { $0.key < $1.key }) where entryPath != path && !moved.contains(path) {
            try moveToEntryPath(path, content: try PatchDirectory.read(patch.files[path]!))
        }
        if let renaming {
            // Every binary XML under res/, by the name's bytes (a Character would join a combining mark after the
            // slash to it, or a prepended mark to the dot).
            for entry in archive.entries where entry.name.javaHasPrefix("res/") && entry.name.javaHasSuffix(".xml") && patch.files[entry.name] == nil {
                let bytes = try archive.uncompressedData(of: entry)
                guard !ResourcePatch.isTextXML(bytes) else { continue }
                let renamed = renamingPackage(in: bytes, path: entry.name)
                if renamed != bytes { try replace(entry.name, with: renamed) }
            }
            if let manifest = archive.entry(named: "AndroidManifest.xml") {
                renamedReferences.formUnion(PackageRename.authorityReferences(inManifest: try archive.uncompressedData(of: manifest)))
            }
            let renamedStrings = try PackageRename.renameStrings(renamedReferences, in: &updated!, from: renaming.old, to: renaming.new)
            summary.notes += PackageRename.notes(on: updated!, oldName: renaming.old, excluding: renamedStrings) + renameNotes
            try updated!.renamePackage(to: renaming.new)
        }
        if let updated {
            let bytes = try updated.encoded()
            if let arscEntry {
                if bytes != (try archive.uncompressedData(of: arscEntry)) { try replace("resources.arsc", with: bytes) }
            } else if !updated.entries.isEmpty {
                try add("resources.arsc", content: bytes)
            }
        }

        if !edits.isEmpty {
            var manifest: [UInt8]
            let originalManifest = try archive.entry(named: "AndroidManifest.xml").map { try archive.uncompressedData(of: $0) }
            if let file = patch.files["AndroidManifest.xml"], case let content = try PatchDirectory.read(file), ResourcePatch.isTextXML(content) {
                manifest = try ResourcePatch.compilingXML(textXML: String(decoding: content, as: UTF8.self), path: "AndroidManifest.xml",
                                                          original: originalManifest, resources: updated)
            } else if let file = patch.files["AndroidManifest.xml"] {
                manifest = try PatchDirectory.read(file)
            } else if let originalManifest {
                manifest = originalManifest
            } else {
                throw BinaryXMLError(.missingContent, "the APK has no AndroidManifest.xml to apply the manifest: shortcuts to")
            }
            manifest = try ManifestPatch.applying(edits, to: manifest, resources: updated)
            if let newName = edits.packageName {
                var tree = try XMLTree(binaryXML: manifest)
                let (oldName, notes) = try PackageRename.rename(&tree, to: newName)
                manifest = try tree.binaryXML()
                if oldName != newName {
                    summary.notes.append("package renamed from \(oldName) to \(newName); classes*.dex is unchanged, so code that uses the old name as text (hard-coded authorities, package checks) still does")
                }
                summary.notes += notes
            }
            try replace("AndroidManifest.xml", with: manifest)
        }
        return output
    }

    /// The IDs of package `packageID` that the compiled XML of the APK (its manifest and `res/` files) and of the
    /// patch (binary XML files it holds) refer to: a new resource must not take one, or those references would find
    /// it. An XML file that does not parse refers to nothing here (what reads it fails either way).
    /// Files are told by the names' bytes: a Prepend mark (U+0600) joins the dot of ".xml" in a Character.
    static func referencedIDs(in archive: APKArchive, patch: PatchDirectory, packageID: UInt8) -> Set<UInt32> {
        var documents: [() throws -> [UInt8]] = archive.entries.filter { $0.name.javaHasSuffix(".xml") }.map { entry in { try archive.uncompressedData(of: entry) } }
        documents += patch.files.filter { $0.key.javaHasSuffix(".xml") }.map { file in { try PatchDirectory.read(file.value) } }
        var ids = Set<UInt32>()
        for document in documents {
            guard let bytes = try? document(), !ResourcePatch.isTextXML(bytes),
                  let found = try? XMLTree.referencedResourceIDs(binaryXML: bytes) else { continue }
            ids.formUnion(found.lazy.filter { $0 >> 24 == UInt32(packageID) })
        }
        return ids
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
        if let v = extra.networkSecurityConfig { edits.networkSecurityConfig = v }
        if let v = extra.packageName { edits.packageName = v }
    }
}
