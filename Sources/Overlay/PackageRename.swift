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
            throw BinaryXMLError(.badValue, "manifest.package '\(newName)' is not a package name (two or more dot-separated parts, each a letter followed by letters, digits or _)")
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
        func renamed(_ name: String) -> String? {
            name == oldName ? newName : name.hasPrefix(oldName + ".") ? newName + name.dropFirst(oldName.count) : nil
        }
        var notes: [String] = []
        func visit(_ element: inout XMLTree.Element, path: String) {
            let android = XMLTree.androidNamespace
            for index in element.attributes.indices where element.attributes[index].namespace == android {
                let attribute = element.attributes[index]
                guard let text = attribute.value.stringValue else { continue }
                let name = attribute.name
                if classAttributes[element.name]?.contains(name) == true {
                    // Relative class names resolve against the package: pin them to the old one, where the code is.
                    if text.hasPrefix(".") { set(&element.attributes[index], oldName + text) }
                    else if !text.contains(".") { set(&element.attributes[index], oldName + "." + text) }
                    continue
                }
                if element.name == "provider", name == "authorities" {
                    let parts = text.split(separator: ";", omittingEmptySubsequences: false).map { part in
                        renamed(part.trimmingWhitespace()) ?? String(part)
                    }
                    set(&element.attributes[index], parts.joined(separator: ";"))
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

    /// Notes on the string attributes of a compiled XML resource (`res/xml/syncadapter.xml`'s contentAuthority, an
    /// authenticator's accountType…) that contain the old package name, one per attribute.
    public static func notes(onXML bytes: [UInt8], path: String, oldName: String) -> [String] {
        guard let root = try? XMLTree(binaryXML: bytes).root else { return [] }
        var notes: [String] = []
        func visit(_ element: XMLTree.Element) {
            for attribute in element.attributes {
                guard let text = attribute.value.stringValue, text.contains(oldName) else { continue }
                notes.append("\(path) <\(element.name)> \(attribute.name)=\"\(text)\" still names \(oldName) (left as is)")
            }
            // The reader refuses documents nested too deep, so this recursion is bounded.
            for child in element.elements { visit(child) }
        }
        visit(root)
        return notes
    }

    /// Notes on string resources that contain the old package name (the app may build authorities or intents
    /// from them), one per resource.
    public static func notes(on table: ResourceTable, oldName: String) -> [String] {
        var seen = Set<String>()
        var notes: [String] = []
        for entry in table.entries {
            guard case .string(let text)? = entry.value, text.contains(oldName), !text.hasPrefix("res/"),
                  seen.insert(entry.type + "/" + entry.name).inserted else { continue }
            notes.append("resource \(entry.type)/\(entry.name) (\(entry.configuration)) = \"\(text)\" still names \(oldName) (left as is)")
        }
        return notes
    }
}
