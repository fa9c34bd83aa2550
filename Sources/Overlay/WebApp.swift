import APKCore
import BinaryXML
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Repack
import Unpack

/// A hybrid app whose UI is web pages packaged in the APK (Cordova or Capacitor): where those pages are, and
/// how to point its WebView at a development server instead (`apkpatch watch --live`).
///
/// Capacitor is recognised by `assets/capacitor.config.json` and serves `assets/public/`; Cordova by
/// `res/xml/config.xml` and serves `assets/www/`. Capacitor apps carry a `res/xml/config.xml` too (for Cordova
/// plugins), so the Capacitor file decides first.
public struct WebApp: Sendable, Equatable {
    public enum Framework: String, Sendable { case cordova = "Cordova", capacitor = "Capacitor" }

    public static let cordovaConfig = "res/xml/config.xml"
    public static let capacitorConfig = "assets/capacitor.config.json"

    public let framework: Framework
    /// The entry-name prefix of the pages the WebView loads, with its slash: `assets/www/` or `assets/public/`.
    public let webRoot: String
    /// The page the app opens, relative to the web root (Cordova's `<content src>`; `index.html` by default).
    public let startPage: String
    /// The entry whose edit points the WebView at a server.
    public var configEntry: String { framework == .cordova ? Self.cordovaConfig : Self.capacitorConfig }

    /// Recognises the app in `archive`, or throws `WebAppError` saying why live reload cannot serve it.
    public init(archive: APKArchive) throws {
        if let config = archive.entry(named: Self.capacitorConfig) {
            let json = try Self.jsonObject(try archive.uncompressedData(of: config))
            if case .object(let server)? = json["server"], case .string(let url)? = server["url"], !url.isEmpty {
                throw WebAppError.loadsRemotePages(framework: .capacitor, url: url, setting: "server.url in \(Self.capacitorConfig)")
            }
            try self.init(framework: .capacitor, webRoot: "assets/public/", startPage: "index.html", archive: archive)
        } else if let config = archive.entry(named: Self.cordovaConfig) {
            let tree = try XMLTree(binaryXML: try archive.uncompressedData(of: config))
            guard let widget = tree.root, widget.name == "widget" else {
                throw WebAppError.notAWebApp("its \(Self.cordovaConfig) is not a Cordova configuration (no <widget> root)")
            }
            let source = widget.elements(named: "content").first?.attribute(id: nil, name: "src", namespace: nil)?.value.stringValue
            let start = source.map { $0.trimmingWhitespace() } ?? ""
            if start.contains("://") {
                throw WebAppError.loadsRemotePages(framework: .cordova, url: start, setting: "<content src> in \(Self.cordovaConfig)")
            }
            try self.init(framework: .cordova, webRoot: "assets/www/", startPage: start.isEmpty ? "index.html" : start, archive: archive)
        } else {
            throw WebAppError.notAWebApp("it has neither \(Self.cordovaConfig) (Cordova) nor \(Self.capacitorConfig) (Capacitor)")
        }
    }

    private init(framework: Framework, webRoot: String, startPage: String, archive: APKArchive) throws {
        // By the names' bytes: a Character would join a combining mark to the web root's slash.
        guard archive.entries.contains(where: { $0.name.javaHasPrefix(webRoot) }) else {
            throw WebAppError.notAWebApp("it looks like a \(framework.rawValue) app but has no \(webRoot) pages")
        }
        self.framework = framework
        self.webRoot = webRoot
        self.startPage = startPage.droppingJavaPrefix("/") ?? startPage
    }

    /// The URL the WebView opens on a server at `origin` (`http://localhost:8100`).
    public func startURL(origin: String) -> String { origin + "/" + startPage }

    /// The app's configuration edited to load its pages from `origin`:
    /// - Cordova: `<content src="ORIGIN/START">` and `<allow-navigation href="ORIGIN/*">` (Cordova keeps a WebView
    ///   and its plugin bridge only on allowed origins), written back as binary XML with the original's conventions;
    /// - Capacitor: `server.url` = origin and `server.cleartext` = true, the rest of the JSON kept.
    public func configPointing(_ config: [UInt8], at origin: String) throws -> [UInt8] {
        switch framework {
        case .cordova:
            var tree = try XMLTree(binaryXML: config)
            guard var widget = tree.root, widget.name == "widget" else {
                throw WebAppError.notAWebApp("its \(Self.cordovaConfig) is not a Cordova configuration (no <widget> root)")
            }
            let policy = tree.rawValuePolicy
            func attribute(_ name: String, _ value: String) throws -> XMLTree.Attribute {
                try XMLTree.compileAttribute(namespace: nil, name: name, value: value, context: Self.cordovaConfig, rawValues: policy)
            }
            let line = widget.lineNumber
            let source = try attribute("src", startURL(origin: origin))
            widget.withFirstChild(named: "content", creating: XMLTree.Element(namespace: widget.namespace, name: "content", lineNumber: line)) { $0.setAttribute(source) }
            let navigation = XMLTree.Element(namespace: widget.namespace, name: "allow-navigation", attributes: [try attribute("href", origin + "/*")], lineNumber: line)
            widget.children.append(.element(navigation))
            tree.root = widget
            return try tree.binaryXML()
        case .capacitor:
            var json = try Self.jsonObject(config)
            var server: [String: JSONValue] = [:]
            if case .object(let existing)? = json["server"] { server = existing }
            server["url"] = .string(origin)
            server["cleartext"] = .bool(true)
            json["server"] = .object(server)
            return try JSONValue.encode(json, pretty: true)
        }
    }

    private static func jsonObject(_ bytes: [UInt8]) throws -> [String: JSONValue] {
        guard let json = JSONValue.object(from: bytes) else {
            throw WebAppError.notAWebApp("its \(capacitorConfig) is not a JSON object")
        }
        return json
    }
}

/// Why an APK cannot be served live.
public enum WebAppError: Error, CustomStringConvertible, Equatable {
    case notAWebApp(String)
    case loadsRemotePages(framework: WebApp.Framework, url: String, setting: String)

    public var description: String {
        switch self {
        case .notAWebApp(let reason):
            return "live reload needs a Cordova or Capacitor app, and this APK is not one: \(reason). Watch without live reload to rebuild and reinstall on each save."
        case .loadsRemotePages(let framework, let url, let setting):
            return "this \(framework.rawValue) app loads its pages from \(url) (\(setting)), not from the APK: there are no packaged pages to serve live."
        }
    }
}

/// The content edit of a live-reload build (`watch --live`): the patch applied as usual, then the app's
/// configuration pointed at the development server, the manifest made debuggable (Chrome's inspector) and
/// cleartext HTTP allowed (the server is plain HTTP on the device's localhost, through `adb reverse`).
public struct LiveReloadEditor: ContentEditor {
    public let app: WebApp
    /// The server's origin as the device sees it (`http://localhost:8100`).
    public let origin: String

    public init(app: WebApp, origin: String) { self.app = app; self.origin = origin }

    /// What the resource editor it runs first makes.
    public func makesEntry(forPatchFileAt path: String, inAPK: Bool, content: [UInt8]) -> Bool {
        ResourceContentEditor().makesEntry(forPatchFileAt: path, inAPK: inAPK, content: content)
    }

    public func edit(entries: [OutputEntry], archive: APKArchive, patch: PatchDirectory, timestamp: DOSTimestamp,
                     summary: inout OverlaySummary) throws -> [OutputEntry] {
        var output = try ResourceContentEditor().edit(entries: entries, archive: archive, patch: patch, timestamp: timestamp, summary: &summary)
        func replace(_ name: String, _ edit: ([UInt8]) throws -> [UInt8]) throws {
            guard let index = output.firstIndex(where: { $0.entry.name == name }) else {
                throw WebAppError.notAWebApp("the patch deletes \(name)")
            }
            let edited = try edit(try output[index].uncompressedBytes())
            output[index] = try OutputEntry.making(name: name, content: edited, method: output[index].entry.method,
                                                   template: archive.entry(named: name) ?? output[index].entry, timestamp: timestamp)
            if !summary.edited.contains(name) { summary.edited.append(name) }
        }
        try replace(app.configEntry) { try app.configPointing($0, at: origin) }
        // Two booleans need no resource table (a large resources.arsc would cost its size in memory to parse).
        try replace("AndroidManifest.xml") {
            try ManifestPatch.applying(ManifestEdits(debuggable: true, usesCleartextTraffic: true), to: $0, resources: nil)
        }
        return output
    }
}
