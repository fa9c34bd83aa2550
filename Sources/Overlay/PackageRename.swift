import APKCore
import BinaryXML
import ResourceTable

/// Renaming an app's package so the copy installs beside the original (`manifest: package:`): Android tells apps
/// apart by the manifest's package, and two apps cannot share a content-provider authority or define the same
/// permission, so those move with it. The code keeps its Java packages: class names the manifest gives relative
/// to the package (`.MainActivity`) are written out in full first.
public enum PackageRename {
    /// The manifest attributes that name classes, by element.
    static let classAttributes: [String: [String]] = [
        "application": ["name", "backupAgent", "manageSpaceActivity"],
        "activity": ["name", "parentActivityName"], "activity-alias": ["name", "targetActivity", "parentActivityName"],
        "service": ["name"], "receiver": ["name"], "provider": ["name"], "instrumentation": ["name"],
    ]
    /// Elements whose `android:name` is a permission (defined or used), and attributes naming one on any element.
    static let permissionElements: Set<String> = ["permission", "permission-group", "permission-tree", "uses-permission", "uses-permission-sdk-23"]
    static let permissionAttributes = ["permission", "readPermission", "writePermission", "permissionGroup"]

    /// Whether `name` is a package name Android accepts: two or more dot-separated parts, each a letter followed by
    /// letters, digits or underscores.
    public static func isValidPackageName(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count >= 2 && parts.allSatisfy { part in
            guard let first = part.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else { return false }
            return part.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") }
        }
    }

    /// Renames the package of a parsed manifest to `newName`. Returns the old name and notes on what still names
    /// it and was left alone (it may be an external contract: an intent action, a process, meta-data).
    public static func rename(_ tree: inout XMLTree, to newName: String) throws -> (oldName: String, notes: [String]) {
        guard isValidPackageName(newName) else {
            throw BinaryXMLError(.badValue, "manifest.package '\(newName.cappedForMessage)' is not a package name (two or more dot-separated parts, each a letter followed by letters, digits or _)")
        }
        guard var manifest = tree.root, manifest.name == "manifest",
              let packageIndex = manifest.attributes.firstIndex(where: { $0.name == "package" && $0.namespace == nil }),
              let oldName = manifest.attributes[packageIndex].value.stringValue else {
            throw BinaryXMLError(.missingContent, "AndroidManifest.xml has no <manifest package> to rename")
        }
        guard oldName != newName else { return (oldName, []) }
        func set(_ attribute: inout XMLTree.Attribute, _ text: String) {
            attribute.value = .string(text)
            if attribute.rawValue != nil { attribute.rawValue = text }
        }
        set(&manifest.attributes[packageIndex], newName)
        func renamed(_ name: String) -> String? { renamedName(name, from: oldName, to: newName) }
        var notes: [String] = []
        func visit(_ element: inout XMLTree.Element, path: String) {
            let android = XMLTree.androidNamespace
            for index in element.attributes.indices where element.attributes[index].namespace == android {
                let attribute = element.attributes[index]
                guard let text = attribute.value.stringValue else { continue }
                let name = attribute.name
                if classAttributes[element.name]?.contains(name) == true {
                    // Relative class names resolve against the package: pin them to the old one, where the code is.
                    // The dot found as a byte, as PackageParser's charAt: a Character would join a combining mark to it.
                    if text.utf8.first == UInt8(ascii: ".") { set(&element.attributes[index], oldName + text) }
                    else if !text.utf8.contains(UInt8(ascii: ".")) { set(&element.attributes[index], oldName + "." + text) }
                    continue
                }
                if element.name == "provider", name == "authorities" {
                    if let new = renamedAuthorities(text, from: oldName, to: newName) { set(&element.attributes[index], new) }
                    continue
                }
                if (permissionElements.contains(element.name) && name == "name") || permissionAttributes.contains(name) {
                    if let new = renamed(text) { set(&element.attributes[index], new) }
                    continue
                }
                if element.name == "instrumentation", name == "targetPackage", text == oldName {
                    set(&element.attributes[index], newName)
                    continue
                }
                if text.contains(oldName) {
                    notes.append("AndroidManifest.xml \(path) android:\(name)=\"\(text)\" still names \(oldName) (left as is: it may be a contract with other apps or with the code)")
                }
            }
            for index in element.children.indices {
                guard case .element(var child) = element.children[index] else { continue }
                visit(&child, path: path + "/" + child.name)
                element.children[index] = .element(child)
            }
        }
        visit(&manifest, path: "manifest")
        tree.root = manifest
        return (oldName, notes)
    }

    /// `android:` attributes whose value is a content-provider authority (several, `;`-separated, for a provider):
    /// a provider's own, a sync adapter's, a searchable's suggestion provider's. They move with the provider.
    static let authorityAttributes: Set<String> = ["authorities", "contentAuthority", "searchSuggestAuthority"]

    /// `name` renamed when it is the old package or starts with `old.`, compared by bytes as Java's `equals` and
    /// `startsWith` compare (a Character would join a combining mark to the dot, and String's `==` takes U+212A
    /// KELVIN SIGN for "K"); nil otherwise.
    static func renamedName(_ name: String, from oldName: String, to newName: String) -> String? {
        if name.sameUTF8(as: oldName) { return newName }
        return name.droppingJavaPrefix(oldName + ".").map { newName + "." + $0 }
    }

    /// `text` with each `;`-separated authority that is the old package or starts with `old.` renamed; nil when
    /// none does.
    static func renamedAuthorities(_ text: String, from oldName: String, to newName: String) -> String? {
        var changed = false
        // Split at the semicolon bytes, as String.split(";") in PackageParser: a Character would join a combining
        // mark to the semicolon.
        let parts = text.utf8.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false).map { bytes -> String in
            let part = String(decoding: bytes, as: UTF8.self)
            guard let renamed = renamedName(part.trimmingWhitespace(), from: oldName, to: newName) else { return part }
            changed = true
            return renamed
        }
        return changed ? parts.joined(separator: ";") : nil
    }

    /// What renaming the package changed in a compiled XML resource (`res/xml/…`, layouts, menus…).
    public struct XMLRename: Sendable {
        /// The file's new bytes, nil when nothing in it changed.
        public var bytes: [UInt8]?
        /// String attributes that still contain the old package name (an authenticator's accountType, an intent
        /// action…), one note each: they may be a contract with the code or other apps.
        public var notes: [String] = []
        /// Resources the renamed attributes refer to (`android:contentAuthority="@string/authority"`): string
        /// resources to rename the same way.
        public var stringReferences: Set<UInt32> = []
    }

    /// Renames the package in a compiled XML resource where that is safe: authorities (`android:authorities`,
    /// `contentAuthority`, `searchSuggestAuthority`) starting with the old name, `<intent android:targetPackage>`
    /// naming it (app shortcuts, preference headers: the intent must open the copy), and the
    /// `http://schemas.android.com/apk/res/OLD` namespace (Android reads attributes by ID, so only the text changes).
    /// Other string attributes containing the old name are listed in `notes`. Unreadable XML is left alone.
    public static func rename(xml bytes: [UInt8], path: String, from oldName: String, to newName: String) -> XMLRename {
        var result = XMLRename()
        guard var tree = try? XMLTree(binaryXML: bytes), var root = tree.root else { return result }
        let oldURI = "http://schemas.android.com/apk/res/" + oldName, newURI = "http://schemas.android.com/apk/res/" + newName
        var changed = false
        func set(_ attribute: inout XMLTree.Attribute, _ text: String) {
            attribute.value = .string(text)
            if attribute.rawValue != nil { attribute.rawValue = text }
            changed = true
        }
        func visit(_ element: inout XMLTree.Element) {
            for index in element.namespaceDeclarations.indices where element.namespaceDeclarations[index].uri == oldURI {
                element.namespaceDeclarations[index].uri = newURI; changed = true
            }
            if element.namespace == oldURI { element.namespace = newURI; changed = true }
            for index in element.attributes.indices {
                if element.attributes[index].namespace == oldURI { element.attributes[index].namespace = newURI; changed = true }
                let attribute = element.attributes[index]
                let isAndroid = attribute.namespace == XMLTree.androidNamespace
                let isAuthority = isAndroid && authorityAttributes.contains(attribute.name)
                let isTargetPackage = isAndroid && element.name == "intent" && attribute.name == "targetPackage"
                guard let text = attribute.value.stringValue else {
                    if isAuthority || isTargetPackage, let id = attribute.value.referenceID { result.stringReferences.insert(id) }
                    continue
                }
                if isAuthority, let renamed = renamedAuthorities(text, from: oldName, to: newName) {
                    set(&element.attributes[index], renamed)
                } else if isTargetPackage, text == oldName {
                    set(&element.attributes[index], newName)
                } else if text.contains(oldName) {
                    result.notes.append("\(path) <\(element.name)> \(attribute.name)=\"\(text)\" still names \(oldName) (left as is)")
                }
            }
            // The reader refuses documents nested too deep, so this recursion is bounded.
            for index in element.children.indices {
                guard case .element(var child) = element.children[index] else { continue }
                visit(&child)
                element.children[index] = .element(child)
            }
        }
        visit(&root)
        guard changed else { return result }
        tree.root = root
        result.bytes = try? tree.binaryXML()
        return result
    }

    /// String resources the manifest's `<provider android:authorities>` refer to (`@string/authority`).
    public static func authorityReferences(inManifest bytes: [UInt8]) -> Set<UInt32> {
        guard let root = try? XMLTree(binaryXML: bytes).root else { return [] }
        var references = Set<UInt32>()
        func visit(_ element: XMLTree.Element) {
            if element.name == "provider", let id = element.attribute(id: nil, name: "authorities")?.value.referenceID { references.insert(id) }
            for child in element.elements { visit(child) }
        }
        visit(root)
        return references
    }

    /// Renames the string resources of this package among `references` (every configuration) whose authorities
    /// start with the old name, as the attributes referring to them would be. Returns their `type/name`s.
    public static func renameStrings(_ references: Set<UInt32>, in table: inout ResourceTable, from oldName: String, to newName: String) throws -> Set<String> {
        var renamed = Set<String>()
        for id in references.sorted() {
            guard let name = table.resourceName(for: id), name.type == "string" else { continue }
            for entry in table.entries where entry.id == id {
                guard let text = entry.value?.stringValue, let new = renamedAuthorities(text, from: oldName, to: newName) else { continue }
                try table.setValue(.string(new), type: "string", named: name.name, qualifiers: entry.configuration.qualifiers)
                renamed.insert("string/" + name.name)
            }
        }
        return renamed
    }

    /// Notes on string resources that contain the old package name (the app may build authorities or intents
    /// from them), one per resource; `excluding` those renamed.
    public static func notes(on table: ResourceTable, oldName: String, excluding: Set<String> = []) -> [String] {
        var seen = excluding
        var notes: [String] = []
        for entry in table.entries {
            guard case .string(let text)? = entry.value, text.utf8.contains(oldName.utf8), !text.javaHasPrefix("res/"),
                  seen.insert(entry.type + "/" + entry.name).inserted else { continue }
            notes.append("resource \(entry.type)/\(entry.name) (\(entry.configuration)) = \"\(text)\" still names \(oldName) (left as is)")
        }
        return notes
    }
}
