import APKCore
import BinaryXML

extension ValuesXML {
    /// An element of a values file that declares something about resources instead of giving one a value:
    /// what aapt2's `ResourceParser` reads from `<public>`, `<public-group>`, `<macro>`, `<overlayable>`,
    /// `<java-symbol>` and `<symbol>`.
    enum Declaration {
        /// `<public type name [id]>`: the resource is part of the package's API, with this ID when given.
        case publicID(type: String, name: String, id: UInt32?, place: String)
        /// `<macro name>value</macro>`: text substituted where `@macro/name` is written (aapt2 does this while
        /// compiling; macros are not stored in the table).
        case macro(name: String, node: Node, place: String)
        /// `<overlayable name [actor]>` with `<policy type>` blocks of `<item type name>`: the resources runtime
        /// resource overlays may change, stored in `RES_TABLE_OVERLAYABLE_TYPE` chunks.
        case overlayable(Overlayable)
        /// `<java-symbol>`, `<symbol>`: which framework resources its Java code sees; nothing in the table.
        case symbol

        struct Overlayable {
            var name: String
            var actor: String
            var policies: [(flags: UInt32, items: [(type: String, name: String, place: String)])]
            var place: String
        }

        /// `ResTable_overlayable_policy_header::PolicyFlags` by the names aapt2 reads in `<policy type>`.
        static let policyFlags: [(String, UInt32)] = [
            ("public", 0x1), ("system", 0x2), ("vendor", 0x4), ("product", 0x8), ("signature", 0x10), ("odm", 0x20),
            ("oem", 0x40), ("actor", 0x80), ("config_signature", 0x100),
        ]

        /// `policy` flags as written in `<policy type>`: `public|system`; bits no name stands for (a newer
        /// Android's policies) as one hexadecimal number, which reads back as those bits.
        static func policyText(_ flags: UInt32) -> String {
            var parts = policyFlags.filter { flags & $0.1 != 0 }.map(\.0)
            let unnamed = flags & ~policyFlags.reduce(0) { $0 | $1.1 }
            if unnamed != 0 || parts.isEmpty { parts.append("0x" + String(unnamed, radix: 16)) }
            return parts.joined(separator: "|")
        }

        /// The flags of one part of `<policy type>`: a policy name, or a hexadecimal number (`policyText`'s form).
        static func policyFlag(_ part: Substring) -> UInt32? {
            let text = part.trimmingWhitespace()
            if let named = policyFlags.first(where: { $0.0 == text })?.1 { return named }
            guard text.hasPrefix("0x") else { return nil }
            return UInt32(text.dropFirst(2), radix: 16)
        }

        /// The `<public>` declarations a `<public-group type first-id>` makes: its `<public name>` children get
        /// consecutive IDs from first-id on, as aapt2 gives them.
        static func publicGroup(_ node: Node, fileName: String) throws -> [Declaration] {
            let place = "\(fileName):\(node.line)"
            guard let type = node.attribute("type"), !type.isEmpty, let first = node.attribute("first-id"), !first.isEmpty else {
                throw ResourceTableError(.badValuesFile, "\(place): <public-group> needs type and first-id attributes")
            }
            guard resourceTypes.contains(type) else {
                throw ResourceTableError(.unknownType, "\(place): '\(type)' is not a resource type Android knows (\(resourceTypes.sorted().joined(separator: ", ")))")
            }
            var id = try resourceID(first, at: place)
            let typeBits = id & 0xFFFF_0000
            var declarations: [Declaration] = []
            for child in node.children {
                let childPlace = "\(fileName):\(child.line)"
                guard child.tag == "public" else {
                    throw ResourceTableError(.badValuesFile, "\(childPlace): a <public-group> holds <public name=\"…\"/> elements, not <\(child.tag)>")
                }
                for ignored in ["type", "id"] where child.attribute(ignored) != nil {
                    throw ResourceTableError(.badValuesFile, "\(childPlace): \(ignored)=\"…\" is not allowed inside a <public-group> (the group gives it)")
                }
                guard let name = child.attribute("name"), !name.isEmpty else {
                    throw ResourceTableError(.badValuesFile, "\(childPlace): <public> needs a name attribute")
                }
                guard id & 0xFFFF_0000 == typeBits else {
                    throw ResourceTableError(.badValuesFile, "\(childPlace): the group runs past its type's last ID (\(ResourceTable.hex(typeBits | 0xFFFF)))")
                }
                declarations.append(.publicID(type: type, name: name, id: id, place: childPlace))
                id &+= 1
            }
            return declarations
        }

        /// A shared library's IDs have package 0 (the loader assigns it), so only the type byte must be set, as
        /// aapt2's ResourceId::is_valid.
        static func resourceID(_ text: String, at place: String) throws -> UInt32 {
            guard text.hasPrefix("0x") || text.hasPrefix("0X"), let id = UInt32(text.dropFirst(2), radix: 16), id & 0x00FF_0000 != 0 else {
                throw ResourceTableError(.badValuesFile, "\(place): '\(text)' is not a resource ID (0xPPTTEEEE, e.g. 0x7f010000)")
            }
            return id
        }

        /// The declaration `node` makes, or nil when it is a resource.
        init?(_ node: Node, fileName: String, configuration: ResourceConfiguration) throws {
            let place = "\(fileName):\(node.line)"
            func needed(_ attribute: String, of node: Node, at place: String) throws -> String {
                guard let value = node.attribute(attribute), !value.isEmpty else {
                    throw ResourceTableError(.badValuesFile, "\(place): <\(node.tag)> needs a \(attribute) attribute")
                }
                return value
            }
            func knownType(_ type: String, at place: String) throws -> String {
                guard resourceTypes.contains(type) else {
                    throw ResourceTableError(.unknownType, "\(place): '\(type)' is not a resource type Android knows (\(resourceTypes.sorted().joined(separator: ", ")))")
                }
                return type
            }
            switch node.tag {
            case "java-symbol", "symbol":
                _ = try knownType(try needed("type", of: node, at: place), at: place)
                _ = try needed("name", of: node, at: place)
                self = .symbol
            case "public":
                let type = try knownType(try needed("type", of: node, at: place), at: place)
                let name = try needed("name", of: node, at: place)
                self = .publicID(type: type, name: name, id: try node.attribute("id").map { try Self.resourceID($0, at: place) }, place: place)
            case "macro":
                guard configuration.qualifiers.isEmpty else {
                    throw ResourceTableError(.badValuesFile, "\(place): <macro> is only allowed in res/values/, not in a configuration (as in aapt2)")
                }
                self = .macro(name: try needed("name", of: node, at: place), node: node, place: place)
            case "overlayable":
                var overlayable = Overlayable(name: try needed("name", of: node, at: place), actor: node.attribute("actor") ?? "", policies: [], place: place)
                if !overlayable.actor.isEmpty, !overlayable.actor.hasPrefix("overlay://") {
                    throw ResourceTableError(.badValuesFile, "\(place): actor=\"\(overlayable.actor)\" is not an overlay:// URI")
                }
                for policy in node.children {
                    let policyPlace = "\(fileName):\(policy.line)"
                    guard policy.tag == "policy" else {
                        throw ResourceTableError(.badValuesFile, "\(policyPlace): <\(policy.tag)> in an <overlayable> goes inside a <policy type=\"…\"> block")
                    }
                    var flags: UInt32 = 0
                    for part in try needed("type", of: policy, at: policyPlace).split(separator: "|") {
                        guard let flag = Self.policyFlag(part) else {
                            throw ResourceTableError(.badValuesFile, "\(policyPlace): '\(part)' is not a policy (\(Self.policyFlags.map(\.0).joined(separator: ", ")))")
                        }
                        flags |= flag
                    }
                    var items: [(type: String, name: String, place: String)] = []
                    for item in policy.children {
                        let itemPlace = "\(fileName):\(item.line)"
                        guard item.tag == "item" else {
                            throw ResourceTableError(.badValuesFile, "\(itemPlace): a <policy> holds <item type=\"…\" name=\"…\"/> elements, not <\(item.tag)>")
                        }
                        items.append((try knownType(try needed("type", of: item, at: itemPlace), at: itemPlace), try needed("name", of: item, at: itemPlace), itemPlace))
                    }
                    overlayable.policies.append((flags, items))
                }
                self = .overlayable(overlayable)
            case "staging-public-group", "staging-public-group-final":
                throw ResourceTableError(.ambiguousEdit, "\(place): <\(node.tag)> stages framework API IDs (framework-res only); give each resource its own <public type=\"…\" name=\"…\" id=\"…\"/> or a <public-group> instead")
            default:
                return nil
            }
        }
    }

    /// Replaces each value written `@macro/name` (`@*macro/name`, `@package:macro/name` with the app's package;
    /// in any resource of the files, nested items included) by the macro's value, as aapt2 does; macros may refer
    /// to macros. Throws for a macro defined twice, one that refers to itself, a reference to a macro the files do
    /// not define, and one of another package (macros are not in APKs).
    /// Returns each macro's body with the macros it uses substituted (for compiling `@macro/name` in XML files).
    @discardableResult
    static func substituteMacros(in items: inout [Item], _ declarations: [Declaration], packageName: String) throws -> [String: (text: String, isStyled: Bool)] {
        var macros: [String: (node: Node, place: String)] = [:]
        for case .macro(let name, let node, let place) in declarations {
            if let first = macros[name] { throw ResourceTableError(.duplicate, "\(place): macro/\(name) is already defined at \(first.place)") }
            macros[name] = (node, place)
        }
        // The place is written out only for a node that refers to a macro: a decoded app's values have a hundred
        // thousand nodes, and few or none do.
        func macroName(_ node: Node, fileName: Substring) throws -> String? {
            guard node.styled == nil, let text = node.text, let (package, name) = XMLTree.macroReference(text) else { return nil }
            if let package, package != packageName {
                throw ResourceTableError(.badValuesFile, "\(fileName):\(node.line): \(text): \(XMLTree.foreignMacro(package, name))")
            }
            return name
        }
        func resolve(_ node: inout Node, fileName: Substring, expanding: [String]) throws {
            if let name = try macroName(node, fileName: fileName) {
                let place = "\(fileName):\(node.line)"
                guard let macro = macros[name] else {
                    throw ResourceTableError(.badValuesFile, "\(place): @macro/\(name): no <macro name=\"\(name)\"> in the patch's values files (macros are not stored in the APK, so only the patch's own can be used)")
                }
                guard !expanding.contains(name) else {
                    throw ResourceTableError(.badValuesFile, "\(macro.place): macro/\(name) refers to itself (\((expanding + [name]).joined(separator: " -> ")))")
                }
                var body = macro.node
                try resolve(&body, fileName: macro.place[..<(macro.place.lastIndex(of: ":") ?? macro.place.endIndex)], expanding: expanding + [name])
                node.text = body.text
                node.styled = body.styled
            }
            for index in node.children.indices { try resolve(&node.children[index], fileName: fileName, expanding: expanding) }
        }
        for index in items.indices { try resolve(&items[index].node, fileName: Substring(items[index].fileName), expanding: []) }
        var bodies: [String: (text: String, isStyled: Bool)] = [:]
        for (name, macro) in macros {
            var body = macro.node
            body.tag = "macro-body"  // resolved as a value that refers to the macro would be
            body.text = "@macro/" + name
            body.styled = nil
            try resolve(&body, fileName: macro.place[..<(macro.place.lastIndex(of: ":") ?? macro.place.endIndex)], expanding: [])
            bodies[name] = (body.text ?? "", body.styled != nil)
        }
        return bodies
    }
}

extension ResourceTable {
    /// Gives the new names `<public>` declares with an ID exactly that ID. A declaration that matches the table
    /// (the name exists, with this ID or none given) changes nothing. Throws `.ambiguousEdit` for an ID that
    /// differs from the resource's (IDs of existing resources never change: compiled code holds them) or that is
    /// taken or outside the type, `.badValuesFile` for a name nothing defines.
    mutating func reservePublicIDs(_ declarations: [ValuesXML.Declaration], items: [ValuesXML.Item], files: [(type: String, name: String)]) throws {
        // The names the files define, made only when a <public> names one the table lacks (a decoded app's
        // public.xml names only the table's own, and its values are tens of thousands of names).
        var defined: Set<String>?
        var seen: [String: String] = [:]
        for case .publicID(let type, let name, let id, let place) in declarations {
            let key = type + "/" + name
            if let first = seen[key] { throw ResourceTableError(.duplicate, "\(place): <public> for \(key) is already given at \(first)") }
            seen[key] = place
            if let existing = ids[key] {
                guard let id, id != existing else { continue }
                throw ResourceTableError(.ambiguousEdit, "\(place): <public> gives \(key) the ID \(Self.hex(id)), but it has \(Self.hex(existing)); the IDs of existing resources never change (compiled code holds them), so use \(Self.hex(existing)) or leave the id out")
            }
            if defined == nil { defined = Set(items.map { $0.type + "/" + $0.name } + files.map { $0.type + "/" + $0.name }) }
            guard defined?.contains(key) == true else {
                throw ResourceTableError(.badValuesFile, "\(place): <public> declares \(key), which neither the APK nor the patch's values files define")
            }
            guard let id else { continue }  // a new name without an ID takes the next free one, as the others
            do { try reserveID(type: type, named: name, id: id) } catch let error as ResourceTableError {
                throw ResourceTableError(error.code, "\(place): \(error.message)")
            }
        }
    }

    /// Whether the table marks `id` public: `SPEC_PUBLIC` in its typeSpec flags or `FLAG_PUBLIC` in one of its
    /// entries (aapt2 sets both; a table with only one of them is left as it is).
    func isPublic(_ id: UInt32) -> Bool {
        layout.specPublic.contains(id) || additions.publicIDs.contains(id) || entriesByID[id]?.contains { entries[$0].flags & 0x0002 != 0 } == true
    }

    /// What the package declares beyond values, as the values files aapt2 reads it from (folder, file name, text):
    /// `public.xml` with a `<public type name id>` for each public resource, by ID (as apktool writes them), and
    /// `overlayable.xml` with the package's overlayables, their policies and items, in table order. Both in
    /// `values`; a file is left out when the table has nothing for it. Given back unchanged they change
    /// nothing. Resources these files cannot name are left out, and stay as they are in the table: private types
    /// (`^attr-private`), types aapt2 does not know, and a second resource with a name another one already has.
    public func declarationFiles() -> [(directory: String, fileName: String, text: String)] {
        func nameable(_ id: UInt32) -> ResourceName? {
            guard UInt8(id >> 24) == packageID, let name = names[id], ValuesXML.resourceTypes.contains(name.type),
                  ids[name.type + "/" + name.name] == id else { return nil }
            return name
        }
        var files: [(directory: String, fileName: String, text: String)] = []
        var publicIDs = layout.specPublic
        for entry in entries where entry.flags & 0x0002 != 0 { publicIDs.insert(entry.id) }
        let publics = publicIDs.sorted().compactMap { id in
            nameable(id).map { ValuesXML.Node(tag: "public", attributes: [("type", $0.type), ("name", $0.name), ("id", Self.hex(id))]) }
        }
        if !publics.isEmpty { files.append(("values", "public.xml", ValuesXML.encode(publics))) }
        var declared: Set<UInt32> = []
        var overlayables: [ValuesXML.Node] = []
        for overlayable in layout.overlayables {
            var attributes = [("name", overlayable.name)]
            if !overlayable.actor.isEmpty { attributes.append(("actor", overlayable.actor)) }
            var policies: [ValuesXML.Node] = []
            for policy in overlayable.policies {
                // A resource belongs to one overlayable and one policy: a table that lists one twice keeps the first.
                let items = policy.ids.compactMap { id -> ValuesXML.Node? in
                    guard let name = nameable(id), declared.insert(id).inserted else { return nil }
                    return ValuesXML.Node(tag: "item", attributes: [("type", name.type), ("name", name.name)])
                }
                guard !items.isEmpty else { continue }
                policies.append(ValuesXML.Node(tag: "policy", attributes: [("type", ValuesXML.Declaration.policyText(policy.flags))], children: items))
            }
            overlayables.append(ValuesXML.Node(tag: "overlayable", attributes: attributes, children: policies))
        }
        if !overlayables.isEmpty { files.append(("values", "overlayable.xml", ValuesXML.encode(overlayables))) }
        return files
    }

    /// Marks what `<public>` declares public as aapt2 writes public resources (`SPEC_PUBLIC` in the typeSpec,
    /// `FLAG_PUBLIC` in each entry), unless it already is. Call once every name has its ID.
    mutating func markPublic(_ declarations: [ValuesXML.Declaration]) {
        for case .publicID(let type, let name, _, _) in declarations {
            guard let id = ids[type + "/" + name], !isPublic(id) else { continue }
            additions.publicIDs.insert(id)
            let typeID = UInt8((id >> 16) & 0xFF)
            if additions.entryCounts[typeID] == nil { additions.entryCounts[typeID] = layout.entryCounts[typeID] ?? 0 }
        }
    }

    /// Adds the overlayable declarations to the package's, as aapt2 records them: each item's resource joins
    /// the overlayable (created, or the APK's of that name and actor) under its policy's flags. A resource the
    /// APK already declares the same way changes nothing. Throws `.badValuesFile` for an item nothing defines or
    /// a name too long for the chunk, `.duplicate` for an item declared twice in the patch, `.ambiguousEdit` for
    /// an overlayable whose actor differs from the APK's or a resource that is already overlayable elsewhere (a
    /// resource belongs to one overlayable and one policy).
    mutating func applyOverlayables(_ declarations: [ValuesXML.Declaration]) throws {
        var model = additions.overlayables ?? layout.overlayables
        var changed = false
        var owner: [UInt32: (name: String, flags: UInt32)] = [:]
        for overlayable in model { for policy in overlayable.policies { for id in policy.ids { owner[id] = (overlayable.name, policy.flags) } } }
        var declared: [UInt32: String] = [:]
        for case .overlayable(let overlayable) in declarations {
            for (what, text) in [("name", overlayable.name), ("actor", overlayable.actor)] where text.utf16.count >= 256 {
                throw ResourceTableError(.badValuesFile, "\(overlayable.place): the overlayable's \(what) is \(text.utf16.count) characters long; the RES_TABLE_OVERLAYABLE chunk holds at most 255")
            }
            var index = model.firstIndex { $0.name == overlayable.name }
            if let index, model[index].actor != overlayable.actor {
                throw ResourceTableError(.ambiguousEdit, "\(overlayable.place): the APK's overlayable \"\(overlayable.name)\" has actor \"\(model[index].actor)\", not \"\(overlayable.actor)\"; an overlayable has one actor, so give the APK's or use another name")
            }
            for policy in overlayable.policies {
                for item in policy.items {
                    let key = item.type + "/" + item.name
                    guard let id = ids[key] else {
                        throw ResourceTableError(.badValuesFile, "\(item.place): <overlayable> names \(key), which neither the APK nor the patch's values files define")
                    }
                    if let first = declared[id] { throw ResourceTableError(.duplicate, "\(item.place): \(key) is already declared overlayable at \(first)") }
                    declared[id] = item.place
                    if let current = owner[id] {
                        guard current.name == overlayable.name, current.flags == policy.flags else {
                            throw ResourceTableError(.ambiguousEdit, "\(item.place): \(key) is already overlayable in the APK's \"\(current.name)\" under policy \(ValuesXML.Declaration.policyText(current.flags)); a resource belongs to one overlayable and one policy (as aapt2 requires), so declare it that way or leave it out")
                        }
                        continue
                    }
                    owner[id] = (overlayable.name, policy.flags)
                    if index == nil {
                        model.append(Overlayable(name: overlayable.name, actor: overlayable.actor, policies: []))
                        index = model.count - 1
                    }
                    if let slot = model[index!].policies.firstIndex(where: { $0.flags == policy.flags }) { model[index!].policies[slot].ids.append(id) }
                    else { model[index!].policies.append((policy.flags, [id])) }
                    changed = true
                }
            }
        }
        if changed { additions.overlayables = model }
    }

    static func hex(_ id: UInt32) -> String {
        let digits = String(id, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }
}
