import APKCore
import Foundation
import Testing
import LiveReload
import Overlay
import TestSupport
import Unpack

/// `apkpatch watch --live` end to end through the binary, with the fake adb (no device here): what it asks adb
/// to do, what the server serves, the events a save sends, and what the installed and the final builds hold
/// (checked with apksigner, aapt dump xmltree and unzip).
@Suite(.serialized, .removesTemporaryDirectories) struct LiveWatchTests {
    static let cordovaConfig = """
    <?xml version='1.0' encoding='utf-8'?>
    <widget id="com.example.cordova" version="1.0.0" xmlns="http://www.w3.org/ns/widgets" xmlns:cdv="http://cordova.apache.org/ns/1.0">
        <feature name="Whitelist"><param name="android-package" value="org.apache.cordova.whitelist.WhitelistPlugin" /></feature>
        <name>Cordova Fixture</name>
        <content src="index.html" />
        <access origin="*" />
        <allow-intent href="http://*/*" />
        <preference name="loglevel" value="DEBUG" />
    </widget>

    """

    /// A running `watch --live` and what it printed.
    struct Session {
        let process: Process
        let lines: LineCollector
        let adb: FakeADB
        let work: URL
        let patch: URL
        let output: String
        var developmentBuild: String { (output as NSString).deletingLastPathComponent + "/.out.live.apk" }

        func stop() -> Bool {
            process.interrupt()  // SIGINT, as Ctrl-C
            let stopped = lines.waitFor { $0.contains("stopped") }
            process.waitUntilExit()
            return stopped && process.terminationStatus == 0
        }
    }

    func launch(apk: FixtureAPK, patchFiles: [String: String], extra: [String] = []) throws -> Session {
        let work = try TestSupport.makeTemporaryDirectory("live-watch")
        let input = try apk.build(in: work, name: "app.apk")
        let patch = work.appendingPathComponent("patch")
        try FileManager.default.createDirectory(at: patch, withIntermediateDirectories: true)
        for (path, text) in patchFiles { try TestSupport.write(text, to: path, in: patch) }
        let output = work.appendingPathComponent("out.apk").path
        let adb = try FakeADB()
        let (process, lines) = try TestSupport.startApkpatch(["watch", input, "--patch", patch.path, "--out", output, "--live", "--live-port", "0",
                                                               "--debug-keystore", work.appendingPathComponent("debug.p12").path] + extra,
                                                              environment: adb.environment())
        return Session(process: process, lines: lines, adb: adb, work: work, patch: patch, output: output)
    }

    /// An editor-style save: a temporary file renamed over the original.
    func save(_ text: String, to path: String, in patch: URL) throws {
        try TestSupport.write(text, to: path + ".tmp~", in: patch)
        guard rename(patch.appendingPathComponent(path + ".tmp~").path, patch.appendingPathComponent(path).path) == 0 else {
            throw FixtureError(message: "rename failed: \(String(cString: strerror(errno)))")
        }
    }

    func xmltree(_ apk: String, _ entry: String) throws -> String {
        let result = try TestSupport.run("aapt", ["dump", "xmltree", apk, entry])
        guard result.succeeded else { throw FixtureError(message: "aapt dump xmltree \(entry): \(result)") }
        return result.stdout
    }

    static func cordovaFixture() -> FixtureAPK {
        var apk = FixtureAPK.cordovaLike()
        apk.resources["xml/config.xml"] = Array(cordovaConfig.utf8)
        return apk
    }

    @Test func cordovaServesReloadsAndLeavesTheNormalBuild() throws {
        // res/values/ exists from the start (an ignored file keeps it): a save into a folder that appears at that moment
        // may come as two bursts, and so two rebuilds, on a loaded machine.
        let session = try launch(apk: Self.cordovaFixture(), patchFiles: ["assets/www/js/app.js": "console.log('patched');\n",
                                                                         "res/values/placeholder~": ""])
        defer { if session.process.isRunning { session.process.terminate() } }
        let lines = session.lines
        #expect(lines.waitFor { $0.contains("] installed") }, "\(lines.lines)")
        let started = try #require(lines.lines.first { $0.contains("Live reload (Cordova app)") }, "\(lines.lines)")
        let port = try #require(Int(String(started.split(separator: ":").last ?? "")), "\(started)")
        #expect(lines.lines.contains { $0.contains("when watch stops, \(session.output) is the normal patched build") }, "\(lines.lines)")
        #expect(!lines.lines.contains { $0.contains("network security config") }, "\(lines.lines)")

        // adb: the reverse first, then one install of the development build.
        let devBuild = session.developmentBuild
        #expect(try session.adb.invocations() == [["reverse", "tcp:\(port)", "tcp:\(port)"], ["install", "-r", devBuild]])

        // The installed build points at the server, is debuggable and allows cleartext; it is signed.
        #expect(try TestSupport.run("apksigner", ["verify", devBuild]).succeeded)
        let devConfig = try xmltree(devBuild, "res/xml/config.xml")
        #expect(devConfig.contains("src=\"http://localhost:\(port)/index.html\""), "\(devConfig)")
        #expect(devConfig.contains("allow-navigation") && devConfig.contains("href=\"http://localhost:\(port)/*\""), "\(devConfig)")
        #expect(devConfig.contains("origin=\"*\"") && devConfig.contains("Cordova Fixture"), "the rest is kept: \(devConfig)")
        let devManifest = try xmltree(devBuild, "AndroidManifest.xml")
        #expect(devManifest.contains("android:debuggable(0x0101000f)=(type 0x12)0xffffffff"), "\(devManifest)")
        #expect(devManifest.contains("android:usesCleartextTraffic(0x010104ec)=(type 0x12)0xffffffff"), "\(devManifest)")

        // The server: the patch wins over the APK, HTML alone gets the script, nothing outside the web root.
        let page = try LoopbackHTTP.request(port: port, "/index.html")
        #expect(page.status == 200 && page.text.contains("<h1>Hello</h1>") && page.text.contains(ReloadScript.tag), "\(page)")
        #expect(page.headers["cache-control"] == "no-store")
        let script = try LoopbackHTTP.request(port: port, "/js/app.js")
        #expect(script.text == "console.log('patched');\n" && !script.text.contains(ReloadScript.tag), "\(script)")
        #expect(script.headers["content-type"] == "text/javascript; charset=utf-8")
        let css = try LoopbackHTTP.request(port: port, "/css/app.css")
        #expect(css.body == FixtureAPK.cordovaLike().assets["www/css/app.css"] && css.headers["content-type"] == "text/css; charset=utf-8")
        #expect(try LoopbackHTTP.request(port: port, "/AndroidManifest.xml").status == 404)
        #expect(try LoopbackHTTP.request(port: port, "/res/xml/config.xml").status == 404)
        #expect(try LoopbackHTTP.request(port: port, "/../AndroidManifest.xml").status == 403)
        #expect(try LoopbackHTTP.request(port: port, "/%2e%2e/res/xml/config.xml").status == 403)

        // A save under the web root: an event, a line with the latency, the new bytes served, no reinstall.
        let events = try LoopbackHTTP.EventStream(port: port)
        defer { events.close() }
        #expect(events.waitFor(": apkpatch live reload"))
        try save("console.log('saved');\n", to: "assets/www/js/app.js", in: session.patch)
        #expect(events.waitFor("event: reload\ndata: {\"changed\":[\"js/app.js\"],\"stylesheetsOnly\":false}"), "\(events.text)")
        #expect(lines.waitFor { $0.contains("] reloaded assets/www/js/app.js in ") && $0.hasSuffix("ms (1 page)") }, "\(lines.lines)")
        #expect(try LoopbackHTTP.request(port: port, "/js/app.js").text == "console.log('saved');\n")
        try save("h1 { color: red; }\n", to: "assets/www/css/app.css", in: session.patch)
        #expect(events.waitFor("{\"changed\":[\"css/app.css\"],\"stylesheetsOnly\":true}"), "\(events.text)")
        // A page whose name starts with a combining mark is under the web root by its bytes (a Character joins
        // the mark to the slash): reloaded, not rebuilt and reinstalled.
        try save("console.log('mark');\n", to: "assets/www/\u{301}m.js", in: session.patch)
        #expect(lines.waitFor { $0.contains("] reloaded assets/www/\u{301}m.js in ") }, "\(lines.lines)")
        #expect(try session.adb.invocations().count == 2, "no reinstall for web assets")

        // A change outside the web root: said on one line, then rebuilt and reinstalled.
        try save("<resources><string name=\"app_name\">Live</string></resources>\n", to: "res/values/strings.xml", in: session.patch)
        #expect(lines.waitFor { $0.contains("res/values/strings.xml outside the web root: rebuilding and reinstalling") }, "\(lines.lines)")
        #expect(lines.waitFor(2) { $0.contains("] installed") }, "\(lines.lines)")
        #expect(try session.adb.invocations().last == ["install", "-r", devBuild])

        #expect(session.stop(), "\(lines.lines)")
        #expect(try session.adb.invocations().last == ["reverse", "--remove", "tcp:\(port)"])
        #expect(try session.adb.invocations().count == 4)
        // The final output is the normal patched build: signed, packaged pages, nothing of the development setup.
        #expect(try TestSupport.run("apksigner", ["verify", session.output]).succeeded)
        let config = try xmltree(session.output, "res/xml/config.xml")
        #expect(config.contains("src=\"index.html\"") && !config.contains("localhost") && !config.contains("allow-navigation"), "\(config)")
        let manifest = try xmltree(session.output, "AndroidManifest.xml")
        #expect(!manifest.contains("debuggable") && !manifest.contains("usesCleartextTraffic"), "\(manifest)")
        #expect(try TestSupport.run("unzip", ["-p", session.output, "assets/www/js/app.js"]).stdout == "console.log('saved');\n")
        #expect(try TestSupport.run("aapt", ["dump", "badging", session.output]).stdout.contains("application-label:'Live'"))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: session.work.path).filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty, "the development build and its working files are removed: \(leftovers)")
    }

    @Test func capacitorWithJSONLinesAndASerial() throws {
        var apk = FixtureAPK()
        apk.packageName = "com.example.capacitor"
        apk.assets["capacitor.config.json"] = Array("{\n  \"appId\": \"com.example.capacitor\",\n  \"appName\": \"Cap\",\n  \"webDir\": \"dist\",\n  \"android\": {\"allowMixedContent\": false}\n}\n".utf8)
        apk.assets["public/index.html"] = Array("<!DOCTYPE html><html><head><link rel=\"stylesheet\" href=\"style.css\"></head><body>packaged</body></html>".utf8)
        apk.assets["public/style.css"] = Array("body { margin: 0; }\n".utf8)
        apk.resources["xml/config.xml"] = Array(Self.cordovaConfig.utf8)  // Capacitor apps carry one for Cordova plugins
        let session = try launch(apk: apk, patchFiles: ["assets/public/index.html": "<html><head></head><body>from the patch</body></html>"],
                                 extra: ["--json", "--serial", "emulator-5554"])
        defer { if session.process.isRunning { session.process.terminate() } }
        let lines = session.lines
        #expect(lines.waitFor { $0.contains("\"event\":\"installed\"") }, "\(lines.lines)")
        let start = try #require(lines.lines.first { $0.contains("\"event\":\"liveStarted\"") })
        let startJSON = try #require(try JSONSerialization.jsonObject(with: Data(start.utf8)) as? [String: Any])
        #expect(startJSON["framework"] as? String == "Capacitor" && startJSON["webRoot"] as? String == "assets/public/")
        let port = try #require(startJSON["port"] as? Int)
        #expect(startJSON["startURL"] as? String == "http://localhost:\(port)/index.html")
        #expect(try session.adb.invocations() == [["-s", "emulator-5554", "reverse", "tcp:\(port)", "tcp:\(port)"],
                                                  ["-s", "emulator-5554", "install", "-r", session.developmentBuild]])

        #expect(try TestSupport.run("apksigner", ["verify", session.developmentBuild]).succeeded)
        let devConfig = try TestSupport.run("unzip", ["-p", session.developmentBuild, "assets/capacitor.config.json"]).stdout
        let devJSON = try #require(try JSONSerialization.jsonObject(with: Data(devConfig.utf8)) as? [String: Any])
        let server = try #require(devJSON["server"] as? [String: Any], "\(devConfig)")
        #expect(server["url"] as? String == "http://localhost:\(port)" && server["cleartext"] as? Bool == true, "\(devConfig)")
        #expect(devJSON["appId"] as? String == "com.example.capacitor" && devJSON["android"] != nil, "the rest is kept: \(devConfig)")
        #expect(try xmltree(session.developmentBuild, "AndroidManifest.xml").contains("android:debuggable(0x0101000f)=(type 0x12)0xffffffff"))

        let page = try LoopbackHTTP.request(port: port, "/")
        #expect(page.text == "<html><head>\(ReloadScript.tag)</head><body>from the patch</body></html>", "\(page)")
        let style = try LoopbackHTTP.request(port: port, "/style.css")
        #expect(style.text == "body { margin: 0; }\n")
        #expect(try LoopbackHTTP.request(port: port, "/capacitor.config.json").status == 404)

        let events = try LoopbackHTTP.EventStream(port: port)
        defer { events.close() }
        #expect(events.waitFor("retry: 1000"))
        try save("body { margin: 4px; }\n", to: "assets/public/style.css", in: session.patch)
        #expect(events.waitFor("{\"changed\":[\"style.css\"],\"stylesheetsOnly\":true}"), "\(events.text)")
        #expect(lines.waitFor { $0.contains("\"event\":\"reloaded\"") }, "\(lines.lines)")
        let reload = try #require(lines.lines.first { $0.contains("\"event\":\"reloaded\"") })
        let reloadJSON = try #require(try JSONSerialization.jsonObject(with: Data(reload.utf8)) as? [String: Any])
        #expect(reloadJSON["changed"] as? [String] == ["assets/public/style.css"] && reloadJSON["pages"] as? Int == 1, "\(reload)")
        #expect((reloadJSON["milliseconds"] as? Double ?? -1) >= 0, "\(reload)")

        #expect(session.stop(), "\(lines.lines)")
        #expect(try session.adb.invocations().last == ["-s", "emulator-5554", "reverse", "--remove", "tcp:\(port)"])
        #expect(lines.lines.contains { $0.contains("\"event\":\"finalBuilt\"") && $0.contains("\"output\":\"\(session.output)\"") }, "\(lines.lines)")
        #expect(try TestSupport.run("apksigner", ["verify", session.output]).succeeded)
        let finalConfig = try TestSupport.run("unzip", ["-p", session.output, "assets/capacitor.config.json"]).stdout
        #expect(!finalConfig.contains("server") && !finalConfig.contains("localhost"), "\(finalConfig)")
        #expect(!(try xmltree(session.output, "AndroidManifest.xml")).contains("debuggable"))
    }

    /// Android 7+ follows a network security config instead of usesCleartextTraffic: the user is told where to look.
    @Test func warnsWhenANetworkSecurityConfigDecidesCleartext() throws {
        var apk = Self.cordovaFixture()
        apk.applicationAttributes = "android:networkSecurityConfig=\"@xml/network_security_config\""
        apk.resources["xml/network_security_config.xml"] = Array("<network-security-config><base-config cleartextTrafficPermitted=\"false\" /></network-security-config>\n".utf8)
        let session = try launch(apk: apk, patchFiles: [:])
        defer { if session.process.isRunning { session.process.terminate() } }
        #expect(session.lines.waitFor { $0.contains("warning: the app has a network security config (android:networkSecurityConfig)") }, "\(session.lines.lines)")
        #expect(session.lines.waitFor { $0.contains("] installed") }, "\(session.lines.lines)")
        #expect(session.stop(), "\(session.lines.lines)")
    }

    /// A patch that does not build when watch stops: the warning says the output was not written and that the
    /// device keeps the development build (it said the output "does not hold the patch as it stands", of a file
    /// that did not exist).
    @Test func aFinalBuildThatFailsSaysWhatIsLeft() throws {
        let session = try launch(apk: Self.cordovaFixture(), patchFiles: ["res/values/strings.xml": "<resources><string name=\"app_name\">x</strin></resources>\n"])
        defer { if session.process.isRunning { session.process.terminate() } }
        #expect(session.lines.waitFor { $0.contains("no build written yet") }, "\(session.lines.lines)")
        #expect(session.stop(), "\(session.lines.lines)")
        let warning = session.lines.lines.first { $0.contains("warning: the normal patched build failed") } ?? ""
        #expect(warning.contains("</strin>") && warning.contains("\(session.output) was not written")
                && warning.contains("the device keeps the development build"), "\(session.lines.lines)")
        #expect(!FileManager.default.fileExists(atPath: session.output))
    }

    @Test func aBusyPortStopsBeforeAnythingIsInstalled() throws {
        let work = try TestSupport.makeTemporaryDirectory("live-busy")
        let archivePath = try Self.cordovaFixture().build(in: work, name: "app.apk")
        let other = DevServer(content: WebRootContent(archive: try APKArchive(path: archivePath), webRoot: "assets/www/", patchDirectory: work.path))
        defer { other.shutDown() }
        let port = try other.start(port: 0)
        try FileManager.default.createDirectory(at: work.appendingPathComponent("patch"), withIntermediateDirectories: true)
        let adb = try FakeADB()
        let result = try TestSupport.apkpatch(["watch", archivePath, "--patch", work.appendingPathComponent("patch").path, "--live",
                                               "--live-port", String(port), "--debug-keystore", work.appendingPathComponent("debug.p12").path],
                                              environment: adb.environment())
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.contains("port \(port) on 127.0.0.1 is already in use") && result.stderr.contains("--live-port"), "\(result)")
        #expect(try adb.invocations().isEmpty)
    }

    /// The web root's pages are found by the names' bytes: a Character joins a combining mark to the root's slash,
    /// so an app whose pages all start with one was refused as having no assets/public/ pages.
    @Test func pagesWhoseNamesStartWithAMarkAreTheWebRoots() throws {
        let dir = try TestSupport.makeTemporaryDirectory("webroot-marks")
        defer { try? FileManager.default.removeItem(at: dir) }
        var apk = FixtureAPK()
        apk.assets["capacitor.config.json"] = Array("{\"appId\": \"com.example.fixture\", \"webDir\": \"dist\"}\n".utf8)
        apk.rawFiles["assets/public/\u{301}index.html"] = Array("<html><head></head><body>x</body></html>".utf8)  // aapt refuses the name
        let app = try WebApp(archive: try APKArchive(path: try apk.build(in: dir)))
        #expect(app.framework == .capacitor && app.webRoot == "assets/public/")
    }

    @Test func refusesAnAppWithoutPackagedPagesAndSaysWhy() throws {
        let session = try launch(apk: FixtureAPK(), patchFiles: [:])
        session.process.waitUntilExit()
        #expect(session.process.terminationStatus != 0)
        // The pipe's last bytes may reach the collector after the exit.
        _ = session.lines.waitFor(seconds: 10) { $0.contains("(Capacitor)") }
        let text = session.lines.lines.joined(separator: "\n")
        #expect(text.contains("live reload needs a Cordova or Capacitor app") && text.contains("res/xml/config.xml (Cordova)")
                && text.contains("assets/capacitor.config.json (Capacitor)"), "\(text)")
        #expect(try session.adb.invocations().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: session.output))
    }
}
