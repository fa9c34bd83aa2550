import APKCore
import Align
import BinaryXML
import Repack
import Unpack

/// Plans one installable APK from a set, as APKEditor's merge does: the base's entries, then every split's
/// (native libraries, assets, resource files), the splits' `resources.arsc` configurations merged into the
/// base's table (`ResourceTableMerger`), and the base manifest without the split machinery. The result is a
/// list of entries for the signer, which stores nothing new compressed that Android needs stored
/// (`resources.arsc` is written stored) and page-aligns stored native libraries.
public enum SetMerge {
    /// `<manifest>`/`<application>` attributes that tie an APK to its splits (matched by name in the android
    /// namespace: `requiredSplitTypes` and `splitTypes` are newer than the framework table).
    static let splitAttributes: [(id: UInt32?, name: String)] = [
        (SplitManifest.isSplitRequiredAttribute, "isSplitRequired"), (nil, "requiredSplitTypes"), (nil, "splitTypes"),
    ]
    /// `<meta-data android:name>` values Play adds for split delivery and the source stamp, which describe the
    /// set, not the merged APK (a stamp would no longer verify).
    public static let splitMetaData: Set<String> = [
        "com.android.vending.splits.required", "com.android.vending.splits",
        "com.android.stamp.source", "com.android.stamp.type", "com.android.vending.derived.apk.id",
    ]

    /// What the merge did, for the summary.
    public struct Summary: Sendable {
        /// Entries copied from the splits.
        public var addedEntries: [String] = []
        /// Configurations (type chunks) merged into the base's resource table.
        public var mergedTables: Int = 0
        /// Manifest attributes and meta-data removed.
        public var removedFromManifest: [String] = []
        /// android:extractNativeLibs was set to true because a merged library is compressed.
        public var extractsNativeLibraries = false
    }

    /// The merged APK's entries (in the order to write them) and what was done.
    public static func plan(_ set: APKSet) throws -> (entries: [OutputEntry], summary: Summary) {
        for split in set.splits where split.manifest.isFeatureSplit || !(split.manifest.configForSplit ?? "").isEmpty {
            throw APKSetError.unsupported(split.label, "feature split \(split.splitName.debugQuoted) cannot be merged faithfully: its manifest's components, permissions and code (dex) would have to be moved into the base manifest and renumbered, which merging does not do. Keep the splits (sign or run the set), or remove the feature from the set")
        }
        var summary = Summary()
        let base = set.base.archive
        var names = Set(base.entries.map { ExactName($0.name) })  // by bytes: Android keeps twins apart
        var splitEntries: [OutputEntry] = []
        var tables: [(label: String, bytes: [UInt8])] = []
        for split in set.splits {
            for entry in split.archive.zip.entriesInFileOrder where !entry.isDirectory {
                if entry.name == "AndroidManifest.xml" || JarSignatureFiles.isSignatureFile(entry.name) { continue }
                if entry.name == "resources.arsc" {
                    tables.append((split.label, try split.archive.uncompressedData(of: entry)))
                    continue
                }
                guard names.insert(ExactName(entry.name)).inserted else {
                    throw APKSetError.unsupported(split.label, "entry \(entry.name.debugQuoted) is in the base or another split too; merging would have to choose one")
                }
                splitEntries.append(try OutputEntry.copying(entry, from: split.archive.source))
                summary.addedEntries.append(entry.name)
            }
        }
        // Android's rule for what must be stored where android:extractNativeLibs is false, by the names' bytes.
        let libraryCompressed = splitEntries.contains { PackagingRequirements.isNativeLibrary($0.entry.name) && $0.entry.method != .stored }
            || base.entries.contains { PackagingRequirements.isNativeLibrary($0.name) && $0.method != .stored }

        var entries: [OutputEntry] = []
        for entry in base.zip.entriesInFileOrder where !entry.isDirectory {
            let timestamp = DOSTimestamp(date: entry.lastModifiedDate, time: entry.lastModifiedTime)
            switch entry.name {
            case "AndroidManifest.xml":
                let (manifest, removed, extracts) = try strippedManifest(base.uncompressedData(of: entry), label: set.base.label,
                                                                          setsExtractNativeLibs: libraryCompressed)
                summary.removedFromManifest = removed
                summary.extractsNativeLibraries = extracts
                entries.append(try OutputEntry.making(name: entry.name, content: manifest, method: .deflated, template: entry, timestamp: timestamp))
            case "resources.arsc" where !tables.isEmpty:
                let merged: [UInt8]
                do { merged = try ResourceTableMerger.merge(base: base.uncompressedData(of: entry), splits: tables) } catch let failure as ResourceTableMerger.Failure {
                    throw APKSetError.unsupported(set.label, "the splits' resources do not merge into the base's: \(failure.message)")
                }
                summary.mergedTables = tables.count
                // Stored: Android maps resources.arsc (and refuses it compressed from targetSdk 30).
                entries.append(try OutputEntry.making(name: entry.name, content: merged, method: .stored, template: entry, timestamp: timestamp))
            default:
                entries.append(try OutputEntry.copying(entry, from: base.source))
            }
        }
        if !tables.isEmpty && base.entry(named: "resources.arsc") == nil {
            throw APKSetError.unsupported(set.base.label, "the splits carry resources but the base has no resources.arsc to merge them into")
        }
        return (entries + splitEntries, summary)
    }

    /// The base manifest without the split attributes and meta-data; with `setsExtractNativeLibs`, an
    /// `android:extractNativeLibs="false"` becomes true (a compressed library must be extracted to load).
    static func strippedManifest(_ bytes: [UInt8], label: String, setsExtractNativeLibs: Bool) throws -> ([UInt8], [String], Bool) {
        var tree: XMLTree
        do { tree = try XMLTree(binaryXML: bytes) } catch let error as BinaryXMLError {
            throw APKSetError.unreadable(label, "AndroidManifest.xml: \(error)")
        }
        var removed: [String] = []
        var extracts = false
        guard let rootIndex = tree.nodes.firstIndex(where: { if case .element(let e) = $0 { return e.name == "manifest" }; return false }),
              case .element(var manifest) = tree.nodes[rootIndex] else {
            throw APKSetError.unreadable(label, "AndroidManifest.xml has no <manifest> element")
        }
        for (id, name) in splitAttributes where manifest.removeAttribute(id: id, name: name) { removed.append("manifest@" + name) }
        manifest.withFirstChild(named: "application") { application in
            for (id, name) in splitAttributes where application.removeAttribute(id: id, name: name) { removed.append("application@" + name) }
            application.children.removeAll { node in
                guard case .element(let element) = node, element.name == "meta-data",
                      let value = element.attribute(id: AndroidAttribute.name, name: "name")?.value.stringValue,
                      splitMetaData.contains(value) else { return false }
                removed.append("meta-data " + value)
                return true
            }
            if setsExtractNativeLibs, application.attribute(id: AndroidAttribute.extractNativeLibs, name: "extractNativeLibs")?.value.booleanValue == false {
                application.setAttribute(XMLTree.Attribute(namespace: XMLTree.androidNamespace, name: "extractNativeLibs",
                                                           resourceID: AndroidAttribute.extractNativeLibs, rawValue: nil, value: .boolean(true)))
                extracts = true
            }
        }
        tree.nodes[rootIndex] = .element(manifest)
        do { return (try tree.binaryXML(), removed, extracts) } catch let error as BinaryXMLError {
            throw APKSetError.unreadable(label, "AndroidManifest.xml could not be written back: \(error)")
        }
    }
}
