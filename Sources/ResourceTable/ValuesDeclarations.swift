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
            func resourceID(_ text: String, at place: String) throws -> UInt32 {
                guard text.hasPrefix("0x") || text.hasPrefix("0X"), let id = UInt32(text.dropFirst(2), radix: 16), id >> 24 != 0 else {
                    throw ResourceTableError(.badValuesFile, "\(place): '\(text)' is not a resource ID (0xPPTTEEEE, e.g. 0x7f010000)")
                }
                return id
            }
            switch node.tag {
            case "java-symbol", "symbol":
                _ = try knownType(try needed("type", of: node, at: place), at: place)
                _ = try needed("name", of: node, at: place)
                self = .symbol
            case "public":
                let type = try knownType(try needed("type", of: node, at: place), at: place)
                let name = try needed("name", of: node, at: place)
                self = .publicID(type: type, name: name, id: try node.attribute("id").map { try resourceID($0, at: place) }, place: place)
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
                        guard let flag = Self.policyFlags.first(where: { $0.0 == part.trimmingWhitespace() })?.1 else {
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
            case "public-group", "staging-public-group", "staging-public-group-final":
                throw ResourceTableError(.ambiguousEdit, "\(place): <\(node.tag)> assigns blocks of IDs as framework-res is built; give each resource its own <public type=\"…\" name=\"…\" id=\"…\"/> instead")
            default:
                return nil
            }
        }
    }

    /// Replaces each value written `@macro/name` (in any resource of the files, nested items included) by the
    /// macro's value, as aapt2 does; macros may refer to macros. Throws for a macro defined twice, one that refers
    /// to itself, and a reference to a macro the files do not define (macros are not in the APK).
    static func substituteMacros(in items: inout [Item], _ declarations: [Declaration]) throws {
        var macros: [String: (node: Node, place: String)] = [:]
        for case .macro(let name, let node, let place) in declarations {
            if let first = macros[name] { throw ResourceTableError(.duplicate, "\(place): macro/\(name) is already defined at \(first.place)") }
            macros[name] = (node, place)
        }
        func macroName(_ node: Node) -> String? {
            guard node.styled == nil, let text = node.text, text.hasPrefix("@macro/") else { return nil }
            return String(text.dropFirst("@macro/".count))
        }
        func resolve(_ node: inout Node, fileName: Substring, expanding: [String]) throws {
            let place = "\(fileName):\(node.line)"
            if let name = macroName(node) {
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
    }
}

extension ResourceTable {
    /// Gives the new names `<public>` declares with an ID exactly that ID. A declaration that matches the table
    /// (the name exists, with this ID or none given) changes nothing. Throws `.ambiguousEdit` for an ID that
    /// differs from the resource's (IDs of existing resources never change: compiled code holds them) or that is
    /// taken or outside the type, `.badValuesFile` for a name nothing defines.
    mutating func reservePublicIDs(_ declarations: [ValuesXML.Declaration], items: [ValuesXML.Item]) throws {
        let defined = Set(items.map { $0.type + "/" + $0.name })
        var seen: [String: String] = [:]
        for case .publicID(let type, let name, let id, let place) in declarations {
            let key = type + "/" + name
            if let first = seen[key] { throw ResourceTableError(.duplicate, "\(place): <public> for \(key) is already given at \(first)") }
            seen[key] = place
            if let existing = ids[key] {
                guard let id, id != existing else { continue }
                throw ResourceTableError(.ambiguousEdit, "\(place): <public> gives \(key) the ID \(Self.hex(id)), but it has \(Self.hex(existing)); the IDs of existing resources never change (compiled code holds them), so use \(Self.hex(existing)) or leave the id out")
            }
            guard defined.contains(key) else {
                throw ResourceTableError(.badValuesFile, "\(place): <public> declares \(key), which neither the APK nor the patch's values files define")
            }
            guard let id else { continue }  // a new name without an ID takes the next free one, as the others
            do { try reserveID(type: type, named: name, id: id) } catch let error as ResourceTableError {
                throw ResourceTableError(error.code, "\(place): \(error.message)")
            }
        }
    }

    /// Overlayable declarations must already be in the table, as they are: writing new `RES_TABLE_OVERLAYABLE`
    /// chunks is not supported. Throws `.ambiguousEdit` naming the first item that is not declared yet.
    func checkOverlayables(_ declarations: [ValuesXML.Declaration]) throws {
        for case .overlayable(let overlayable) in declarations {
            let existing = layout.overlayables.first { $0.name == overlayable.name }
            func refuse(_ what: String, at place: String) -> ResourceTableError {
                ResourceTableError(.ambiguousEdit, "\(place): \(what); apkpatch does not write overlayable declarations (the RES_TABLE_OVERLAYABLE chunk runtime resource overlays check), only keeps the APK's: remove the element, or this part of it")
            }
            guard let existing else { throw refuse("the APK declares no <overlayable name=\"\(overlayable.name)\">", at: overlayable.place) }
            guard existing.actor == overlayable.actor else {
                throw refuse("the APK's overlayable \"\(overlayable.name)\" has actor \"\(existing.actor)\", not \"\(overlayable.actor)\"", at: overlayable.place)
            }
            for policy in overlayable.policies {
                for item in policy.items {
                    let key = item.type + "/" + item.name
                    guard let id = ids[key] else {
                        throw ResourceTableError(.badValuesFile, "\(item.place): <overlayable> names \(key), which neither the APK nor the patch's values files define")
                    }
                    guard existing.policies.contains(where: { $0.flags == policy.flags && $0.ids.contains(id) }) else {
                        throw refuse("\(key) is not overlayable under this policy in the APK", at: item.place)
                    }
                }
            }
        }
    }

    static func hex(_ id: UInt32) -> String {
        let digits = String(id, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }
}
