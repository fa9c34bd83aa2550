import Foundation
import Testing
import APKCore
import LiveReload
import Overlay
import TestSupport
import Unpack

/// The server in process, over an aapt-built APK and a patch directory.
@Suite(.removesTemporaryDirectories) struct DevServerTests {
    struct Setup {
        let work: URL
        let patch: URL
        let server: DevServer
        let port: Int
    }

    func start(deleted: [Glob] = []) throws -> Setup {
        let work = try TestSupport.makeTemporaryDirectory("dev-server")
        let apk = try FixtureAPK.cordovaLike().build(in: work, name: "app.apk")
        let patch = work.appendingPathComponent("patch")
        try TestSupport.write("console.log('from the patch');\n", to: "assets/www/js/app.js", in: patch)
        let archive = try APKArchive(path: apk)
        let server = DevServer(content: WebRootContent(archive: archive, webRoot: "assets/www/", patchDirectory: patch.path, deleted: deleted))
        let port = try server.start(port: 0)
        return Setup(work: work, patch: patch, server: server, port: port)
    }

    @Test func servesTheOverlaidWebRootUncachedWithTypes() throws {
        let setup = try start()
        defer { setup.server.shutDown() }
        let page = try LoopbackHTTP.request(port: setup.port, "/")
        #expect(page.status == 200, "\(page)")
        #expect(page.headers["content-type"] == "text/html; charset=utf-8")
        #expect(page.headers["cache-control"] == "no-store")
        #expect(page.text.contains("<h1>Hello</h1>") && page.text.contains(ReloadScript.tag + "</head>"), "\(page.text)")
        #expect(page.headers["content-length"] == String(page.body.count))

        let patched = try LoopbackHTTP.request(port: setup.port, "/js/app.js")
        #expect(patched.text == "console.log('from the patch');\n")
        #expect(patched.headers["content-type"] == "text/javascript; charset=utf-8")
        let packaged = try LoopbackHTTP.request(port: setup.port, "/js/module3.js")
        #expect(packaged.body == FixtureAPK.cordovaLike().assets["www/js/module3.js"])
        #expect(!packaged.text.contains(ReloadScript.tag))
        let image = try LoopbackHTTP.request(port: setup.port, "/img/logo.png")
        #expect(image.body == FixtureAPK.cordovaLike().assets["www/img/logo.png"] && image.headers["content-type"] == "image/png")
        let head = try LoopbackHTTP.request(port: setup.port, "/css/app.css", method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty && head.headers["content-length"] != "0", "\(head)")
        let script = try LoopbackHTTP.request(port: setup.port, "/__apkpatch/reload.js")
        #expect(script.text == ReloadScript.javascript && script.headers["content-type"]?.hasPrefix("text/javascript") == true)
    }

    @Test func refusesWhatIsOutsideTheWebRoot() throws {
        let setup = try start()
        defer { setup.server.shutDown() }
        #expect(try LoopbackHTTP.request(port: setup.port, "/AndroidManifest.xml").status == 404)  // the APK has it, not below assets/www/
        #expect(try LoopbackHTTP.request(port: setup.port, "/classes.dex").status == 404)
        #expect(try LoopbackHTTP.request(port: setup.port, "/missing.js").status == 404)
        #expect(try LoopbackHTTP.request(port: setup.port, "/../AndroidManifest.xml").status == 403)
        #expect(try LoopbackHTTP.request(port: setup.port, "/js/%2e%2e/%2e%2e/AndroidManifest.xml").status == 403)
        #expect(try LoopbackHTTP.request(port: setup.port, "/", method: "POST").status == 405)
    }

    /// A symbolic link in the patch directory is never followed, and an editor's swap file is never served.
    @Test func neverFollowsLinksOrServesEditorDroppings() throws {
        let setup = try start()
        defer { setup.server.shutDown() }
        try FileManager.default.createSymbolicLink(atPath: setup.patch.appendingPathComponent("assets/www/secret.txt").path, withDestinationPath: "/etc/hostname")
        try FileManager.default.createSymbolicLink(atPath: setup.patch.appendingPathComponent("assets/www/etc").path, withDestinationPath: "/etc")
        try TestSupport.write("swap\n", to: "assets/www/js/.module1.js.swp", in: setup.patch)
        #expect(try LoopbackHTTP.request(port: setup.port, "/secret.txt").status == 404)
        #expect(try LoopbackHTTP.request(port: setup.port, "/etc/hostname").status == 404)
        #expect(try LoopbackHTTP.request(port: setup.port, "/js/.module1.js.swp").status == 404)
    }

    /// A folder on the way is checked even when the name after it starts with a combining mark (which Swift's
    /// Characters join to the slash): a linked folder is not followed to the file behind it.
    @Test func neverFollowsALinkedFolderBeforeACombiningMark() throws {
        let setup = try start()
        defer { setup.server.shutDown() }
        let name = "\u{301}secret.txt"
        try TestSupport.write("outside\n", to: "outside/" + name, in: setup.work)
        try FileManager.default.createSymbolicLink(atPath: setup.patch.appendingPathComponent("assets/www/out").path,
                                                   withDestinationPath: setup.work.appendingPathComponent("outside").path)
        #expect(FileManager.default.contents(atPath: setup.patch.appendingPathComponent("assets/www/out/" + name).path) != nil, "the link leads there")
        #expect(try setup.server.content.file("out/" + name) == nil)
    }

    @Test func deletedEntriesAreNotServed() throws {
        let setup = try start(deleted: [Glob("assets/www/js/module*.js")])
        defer { setup.server.shutDown() }
        #expect(try LoopbackHTTP.request(port: setup.port, "/js/module1.js").status == 404)
        #expect(try LoopbackHTTP.request(port: setup.port, "/css/app.css").status == 200)
        setup.server.content.setDeleted([])
        #expect(try LoopbackHTTP.request(port: setup.port, "/js/module1.js").status == 200)
    }

    @Test func broadcastsReloadsToEverySubscriber() throws {
        let setup = try start()
        defer { setup.server.shutDown() }
        let first = try LoopbackHTTP.EventStream(port: setup.port)
        let second = try LoopbackHTTP.EventStream(port: setup.port)
        #expect(first.waitFor(": apkpatch live reload") && second.waitFor("retry: 1000"))
        let deadline = Date().addingTimeInterval(10)
        while setup.server.subscriberCount < 2 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(setup.server.broadcast(ReloadEvent(changed: ["css/app.css"])) == 2)
        let expected = "event: reload\ndata: {\"changed\":[\"css/app.css\"],\"stylesheetsOnly\":true}\n\n"
        #expect(first.waitFor(expected) && second.waitFor(expected), "\(first.text)")
        first.close()
        while setup.server.subscriberCount > 1 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(setup.server.broadcast(ReloadEvent(changed: ["js/app.js"])) == 1)
        #expect(second.waitFor("\"changed\":[\"js/app.js\"]"))
    }

    @Test func aBusyPortIsAnErrorThatSaysSo() throws {
        let setup = try start()
        defer { setup.server.shutDown() }
        let other = DevServer(content: setup.server.content)
        defer { other.shutDown() }
        #expect(throws: DevServerError.portInUse(host: "127.0.0.1", port: setup.port)) { try other.start(port: setup.port) }
    }
}
