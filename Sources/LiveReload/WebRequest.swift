/// What a request to the development server asks for, decided from its target alone (no I/O).
///
/// Every file name is taken relative to the app's web root, so nothing outside it can even be named; a path
/// with a `..` component (also percent-encoded), a backslash or a NUL is refused rather than normalised, since
/// no page of the app asks for one.
public enum WebRequest: Equatable, Sendable {
    /// A file below the web root (`js/app.js`); a folder (`/`, `/docs/`) means its `index.html`.
    case file(String)
    /// The server-sent-events stream of reloads.
    case events
    /// The script injected into HTML pages.
    case reloadScript
    /// A path the server will not map to a file, and why.
    case refused(String)

    /// The server's own routes, under a prefix no app uses.
    public static let eventsPath = "/__apkpatch/events"
    public static let reloadScriptPath = "/__apkpatch/reload.js"

    /// Classifies a request target (`/js/app.js?v=2`). Read by its bytes, as the file system reads the name: a
    /// Character would join a combining mark to the slash, dot, backslash or NUL before it, and
    /// `/../\u{301}x` would hide its `..` component inside one that is not.
    public init(target: String) {
        var path = Substring(target).utf8[...]
        if let end = path.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) { path = path[..<end] }
        guard path.first == UInt8(ascii: "/") else { self = .refused("the path does not start with /"); return }
        if path.elementsEqual(Self.eventsPath.utf8) { self = .events; return }
        if path.elementsEqual(Self.reloadScriptPath.utf8) { self = .reloadScript; return }
        guard let decoded = Self.percentDecoded(path) else { self = .refused("the path's percent-encoding is not valid UTF-8"); return }
        if decoded.contains(UInt8(ascii: "\\")) || decoded.contains(0) { self = .refused("the path contains a backslash or NUL"); return }
        var components: [ArraySlice<UInt8>] = []
        for component in decoded.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            if component.elementsEqual("..".utf8) { self = .refused("the path climbs out of the web root (..)"); return }
            if !component.elementsEqual(".".utf8) { components.append(component) }
        }
        if decoded.last == UInt8(ascii: "/") || components.isEmpty { components.append(ArraySlice("index.html".utf8)) }
        // Valid UTF-8 split at ASCII slashes: every component is valid UTF-8 too.
        self = .file(String(decoding: Array(components.joined(separator: [UInt8(ascii: "/")])), as: UTF8.self))
    }

    /// The path's bytes with percent-escapes decoded; nil unless they are UTF-8.
    private static func percentDecoded(_ text: Substring.UTF8View.SubSequence) -> [UInt8]? {
        var bytes: [UInt8] = []
        var utf8 = text
        while let byte = utf8.popFirst() {
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            guard utf8.count >= 2, let high = hexValue(utf8.popFirst()!), let low = hexValue(utf8.popFirst()!) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self) == nil ? nil : bytes
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
