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
import Install
import LiveReload
import Overlay
import Unpack

/// Settings of a live-reload session (`watch --live`).
public struct LiveReloadOptions: Sendable {
    /// The port of the development server, on this computer and (through `adb reverse`) on the device; 0 picks
    /// a free one.
    public var port: Int
    public init(port: Int = 8100) { self.port = port }
}

/// What a live-reload session set up, for its first line.
public struct LiveReloadStart: Sendable {
    public let framework: WebApp.Framework
    /// The entry-name prefix served (`assets/www/`).
    public let webRoot: String
    /// The page the installed development build opens (`http://localhost:8100/index.html`).
    public let startURL: String
    public let port: Int
    /// The development build (installed on the device; removed when the session stops).
    public let developmentBuild: String
    /// The normal patched build the session leaves behind when it stops.
    public let output: String
}

extension WatchSession {
    /// Live reload: serves the app's web root (the APK overlaid with the patch directory) on 127.0.0.1, lets the
    /// device reach it (`adb reverse`), installs once a development build whose WebView loads its pages from it,
    /// then turns each web-asset save into a reload event for the open pages: no rebuild, no reinstall. A change
    /// outside the web root rebuilds and reinstalls the development build. When the session stops, the reverse
    /// is removed and the output path gets the normal patched build, so nothing of this setup leaks into an APK
    /// someone installs later.
    func runLive(_ live: LiveReloadOptions, onEvent: (Event) -> Void) throws {
        let app = try WebApp(archive: archive)
        let watcher = try DirectoryWatcher(root: options.patchDirectory)
        let spec = try PatchDirectory(root: options.patchDirectory).spec
        let content = WebRootContent(archive: archive, webRoot: app.webRoot, patchDirectory: options.patchDirectory, deleted: spec.delete)
        let server = DevServer(content: content)
        defer { server.shutDown() }
        let port = try server.start(port: live.port)
        let origin = "http://localhost:\(port)"
        let developmentBuild = Self.developmentBuildPath(beside: options.resolvedOutput)
        defer { unlink(developmentBuild) }

        var installer = Installer()
        installer.onMessage = options.onInstallMessage
        let reverse = try PortReverse(port: port, serial: options.install.serial)
        try installer.run(reverse.setUp)
        var isReversed = true
        func removeReverse() {
            guard isReversed else { return }
            isReversed = false
            do { try installer.run(reverse.removal) } catch { onEvent(.warning("\(error)")) }
        }
        defer { removeReverse() }
        onEvent(.liveStarted(LiveReloadStart(framework: app.framework, webRoot: app.webRoot, startURL: app.startURL(origin: origin),
                                             port: port, developmentBuild: developmentBuild, output: options.resolvedOutput)))
        if let warning = Self.cleartextWarning(archive: archive) { onEvent(.warning(warning)) }

        let editor = LiveReloadEditor(app: app, origin: origin)
        build(changed: [], verifies: options.verifies, output: developmentBuild, editor: editor, installs: true, onEvent: onEvent)
        while let changed = try waitForRelevantChanges(watcher) {
            // By bytes: a page whose name starts with a combining mark is under the web root all the same (a
            // Character would join the mark to the slash).
            let pages = changed.filter { $0.javaHasPrefix(app.webRoot) }
            if pages.count == changed.count {
                notePatchFiles(pages)
                let sent = server.broadcast(ReloadEvent(changed: pages.compactMap { $0.droppingJavaPrefix(app.webRoot) }))
                let milliseconds = Double(DirectoryWatcher.monotonicNanoseconds() &- watcher.burstStart) / 1e6
                onEvent(.reloaded(changed: pages, milliseconds: milliseconds, pages: sent))
                continue
            }
            onEvent(.outsideWebRoot(changed.filter { !$0.javaHasPrefix(app.webRoot) }))
            if let spec = try? PatchDirectory(root: options.patchDirectory).spec { content.setDeleted(spec.delete) }
            build(changed: changed, verifies: options.verifies && verifiesEachBuild, output: developmentBuild, editor: editor,
                  installs: true, onEvent: onEvent)
        }
        server.shutDown()
        removeReverse()
        // The build anyone may install later: the patch as it stands, pointing at the packaged pages.
        let output = options.resolvedOutput
        let hadOutput = FileKind(atPath: output) != nil
        if let report = build(changed: [], verifies: options.verifies, installs: false, isLast: true, onEvent: { event in
            switch event {
            case .built: return
            case .failed(let message, _):
                // Without it the device keeps the development build, whose pages came from the server just stopped.
                let state = hadOutput ? "still holds an earlier build, not the patch as it stands" : "was not written"
                onEvent(.warning("the normal patched build failed (\(message)), so \(output) \(state), and the device keeps the development build, whose pages came from the server that has now stopped: fix the patch and build it again"))
            default: onEvent(event)
            }
        }) {
            onEvent(.finalBuilt(report))
        }
        onEvent(.stopped)
    }

    /// `.<name>.live.apk` beside the output: hidden, and removed when the session stops.
    static func developmentBuildPath(beside output: String) -> String {
        let url = URL(fileURLWithPath: output)
        let name = url.deletingPathExtension().lastPathComponent
        return url.deletingLastPathComponent().appendingPathComponent(".\(name).live.apk").path
    }

    /// Android (7 and later) ignores `usesCleartextTraffic` when the app has a network security config: then
    /// that file decides whether the WebView may load `http://localhost`.
    static func cleartextWarning(archive: APKArchive) -> String? {
        guard let entry = archive.entry(named: "AndroidManifest.xml"),
              let tree = try? XMLTree.parse(binaryXML: archive.uncompressedData(of: entry), keeping: { $0 == "manifest" && $1 == "application" }),
              let application = tree.root?.elements(named: "application").first,
              application.attribute(id: AndroidAttribute.networkSecurityConfig, name: "networkSecurityConfig") != nil
        else { return nil }
        return "the app has a network security config (android:networkSecurityConfig), which Android 7+ obeys instead of usesCleartextTraffic: if the pages stay blank, permit cleartext to localhost there (<domain-config cleartextTrafficPermitted=\"true\"><domain>localhost</domain></domain-config> in its res/xml file, in the patch directory)"
    }
}
