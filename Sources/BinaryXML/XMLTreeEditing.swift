extension XMLTree.Element {
    /// Sets `attribute`, replacing the one with the same resource ID (or, without one, the same namespace and name).
    /// A new attribute with an ID goes where Android expects it: attributes with IDs ascending, before those without.
    public mutating func setAttribute(_ attribute: XMLTree.Attribute) {
        if let index = attributeIndex(id: attribute.resourceID, name: attribute.name, namespace: attribute.namespace) {
            attributes[index] = attribute
            return
        }
        guard let id = attribute.resourceID else { attributes.append(attribute); return }
        let position = attributes.firstIndex { other in other.resourceID.map { $0 > id } ?? true } ?? attributes.count
        attributes.insert(attribute, at: position)
    }

    /// Removes the attribute found like `attribute(id:name:namespace:)`; returns whether there was one.
    @discardableResult
    public mutating func removeAttribute(id: UInt32?, name: String, namespace: String? = XMLTree.androidNamespace) -> Bool {
        guard let index = attributeIndex(id: id, name: name, namespace: namespace) else { return false }
        attributes.remove(at: index)
        return true
    }

    /// Runs `body` on the first child element named `name`; when there is none and `creating` is given, inserts it
    /// first (at `insertionIndex`, default: before the first child element) and runs `body` on it. Returns nil when
    /// there was no such child and nothing was created.
    @discardableResult
    public mutating func withFirstChild<R>(named name: String, creating: XMLTree.Element? = nil, insertionIndex: Int? = nil,
                                           _ body: (inout XMLTree.Element) throws -> R) rethrows -> R? {
        if let index = children.firstIndex(where: { if case .element(let e) = $0 { return e.name == name }; return false }),
           case .element(var child) = children[index] {
            let result = try body(&child)
            children[index] = .element(child)
            return result
        }
        guard var child = creating else { return nil }
        let result = try body(&child)
        let index = insertionIndex ?? children.firstIndex { if case .element = $0 { return true }; return false } ?? children.count
        children.insert(.element(child), at: min(max(0, index), children.count))
        return result
    }

    /// Runs `body` on every descendant element (depth first), this element excluded.
    public mutating func forEachDescendant(_ body: (inout XMLTree.Element) throws -> Void) rethrows {
        for index in children.indices {
            guard case .element(var child) = children[index] else { continue }
            try body(&child)
            try child.forEachDescendant(body)
            children[index] = .element(child)
        }
    }
}
