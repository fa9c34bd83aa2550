import APKCore

/// An Android XML document (binary `ResXMLTree` or compiled from text) as a tree of elements.
///
/// Namespaces are URIs on elements and attributes; the prefixes live in each element's `namespaceDeclarations`
/// (what `ResXMLTree_namespaceExt` chunks declared just before it). Resource IDs of attribute names
/// (the resource map) are on each attribute. Parsing never traps on hostile input: every chunk, count, offset and
/// string index is checked, and errors say where.
public struct XMLTree: Sendable, Equatable {
    /// A namespace declaration (`xmlns:prefix="uri"`).
    public struct Namespace: Sendable, Equatable {
        public var prefix: String
        public var uri: String
        public var lineNumber: UInt32
        public init(prefix: String, uri: String, lineNumber: UInt32 = 0) { self.prefix = prefix; self.uri = uri; self.lineNumber = lineNumber }
    }

    /// One attribute (`ResXMLTree_attribute`).
    public struct Attribute: Sendable, Equatable {
        /// Namespace URI, or nil for none (e.g. `package`).
        public var namespace: String?
        public var name: String
        /// The framework or app attribute ID from the resource map (e.g. 0x0101020c for minSdkVersion); nil if none.
        public var resourceID: UInt32?
        /// The original text, which aapt keeps for string values ("Raw" in `aapt dump xmltree`).
        public var rawValue: String?
        public var value: ResourceValue

        public init(namespace: String?, name: String, resourceID: UInt32?, rawValue: String?, value: ResourceValue) {
            self.namespace = namespace; self.name = name; self.resourceID = resourceID; self.rawValue = rawValue; self.value = value
        }
    }

    /// A child of an element: an element or character data.
    public indirect enum Node: Sendable, Equatable {
        case element(Element)
        case text(Text)
    }

    /// Character data (`ResXMLTree_cdataExt`).
    public struct Text: Sendable, Equatable {
        public var text: String
        /// The typed value aapt stores beside the text (normally `.typed(.null, 0)`).
        public var typedValue: ResourceValue
        public var lineNumber: UInt32
        public var comment: String?
        public init(text: String, typedValue: ResourceValue = .typed(.null, 0), lineNumber: UInt32 = 0, comment: String? = nil) {
            self.text = text; self.typedValue = typedValue; self.lineNumber = lineNumber; self.comment = comment
        }
    }

    /// An element with its attributes and children.
    public struct Element: Sendable, Equatable {
        public var namespace: String?
        public var name: String
        public var attributes: [Attribute]
        public var children: [Node]
        /// Namespaces declared on this element.
        public var namespaceDeclarations: [Namespace]
        public var lineNumber: UInt32
        public var endLineNumber: UInt32
        public var comment: String?

        public init(namespace: String? = nil, name: String, attributes: [Attribute] = [], children: [Node] = [],
                    namespaceDeclarations: [Namespace] = [], lineNumber: UInt32 = 0, endLineNumber: UInt32? = nil, comment: String? = nil) {
            self.namespace = namespace; self.name = name; self.attributes = attributes; self.children = children
            self.namespaceDeclarations = namespaceDeclarations; self.lineNumber = lineNumber
            self.endLineNumber = endLineNumber ?? lineNumber; self.comment = comment
        }

        /// Child elements, in order.
        public var elements: [Element] {
            children.compactMap { if case .element(let e) = $0 { return e }; return nil }
        }

        /// Child elements named `name`.
        public func elements(named name: String) -> [Element] { elements.filter { $0.name == name } }

        /// The attribute with resource ID `id`, if the resource map gives one; otherwise (or when `id` is nil)
        /// the one with this `name` in `namespace`.
        public func attribute(id: UInt32?, name: String, namespace: String? = XMLTree.androidNamespace) -> Attribute? {
            if let id, let byID = attributes.first(where: { $0.resourceID == id }) { return byID }
            return attributes.first { $0.name == name && $0.namespace == namespace && ($0.resourceID == nil || id == nil || $0.resourceID == id) }
        }

        /// Index of the attribute found like `attribute(id:name:namespace:)`.
        public func attributeIndex(id: UInt32?, name: String, namespace: String? = XMLTree.androidNamespace) -> Int? {
            if let id, let i = attributes.firstIndex(where: { $0.resourceID == id }) { return i }
            return attributes.firstIndex { $0.name == name && $0.namespace == namespace && ($0.resourceID == nil || id == nil || $0.resourceID == id) }
        }
    }

    /// The `android:` namespace URI.
    public static let androidNamespace = "http://schemas.android.com/apk/res/android"
    /// The build tools' namespace (`xmlns:tools`): dropped when compiling, as aapt does.
    public static let toolsNamespace = "http://schemas.android.com/tools"
    /// The namespace of app-defined attributes (`xmlns:app`).
    public static let autoNamespace = "http://schemas.android.com/apk/res-auto"

    /// Top-level nodes; a well-formed document has exactly one element.
    public var nodes: [Node]
    /// Whether the string pool is UTF-8 (aapt2 and newer aapt) or UTF-16 (older aapt, AOSP platform builds).
    public var usesUTF8Strings: Bool

    public init(root: Element, usesUTF8Strings: Bool = true) {
        self.nodes = [.element(root)]; self.usesUTF8Strings = usesUTF8Strings
    }

    public init(nodes: [Node], usesUTF8Strings: Bool) {
        self.nodes = nodes; self.usesUTF8Strings = usesUTF8Strings
    }

    /// The first top-level element.
    public var root: Element? {
        get { for node in nodes { if case .element(let e) = node { return e } }; return nil }
        set {
            guard let newValue else { return }
            if let i = nodes.firstIndex(where: { if case .element = $0 { return true }; return false }) { nodes[i] = .element(newValue) }
            else { nodes.append(.element(newValue)) }
        }
    }
}
