import Testing
import LiveReload

/// The request policy alone: which targets name a web-root file, which are refused.
@Suite(.removesTemporaryDirectories) struct WebRequestTests {
    @Test(arguments: [
        ("/", WebRequest.file("index.html")),
        ("/index.html?v=3#top", .file("index.html")),
        ("/js/app.js", .file("js/app.js")),
        ("/docs/", .file("docs/index.html")),
        ("//js/./app.js", .file("js/app.js")),
        ("/img/a%20b.png", .file("img/a b.png")),
        ("/__apkpatch/events", .events),
        ("/__apkpatch/reload.js?x", .reloadScript),
    ])
    func mapsTargetsBelowTheWebRoot(target: String, expected: WebRequest) {
        #expect(WebRequest(target: target) == expected)
    }

    /// Nothing outside the web root can be named: `..` in any spelling is refused, not normalised.
    @Test(arguments: ["/../AndroidManifest.xml", "/js/../../classes.dex", "/%2e%2e/AndroidManifest.xml", "/%2E%2E/x",
                      "/js/..", "/a%5c..%5cb", "/a%00b", "/%zz", "/%c3%28", "js/app.js", "http://evil/x"])
    func refusesEscapesAndMalformedTargets(target: String) {
        guard case .refused = WebRequest(target: target) else {
            Issue.record("\(target) was not refused: \(WebRequest(target: target))")
            return
        }
    }

    /// The target is read by its bytes: a combining mark after a slash does not hide the `..` before it (a
    /// Character joins "/\u{301}", so `/../\u{301}x` split on Characters was one component, served from the web
    /// root's parent), nor does one after a NUL or a backslash hide those.
    @Test(arguments: ["/../\u{301}secret", "/..%2F%CC%81secret", "/%2e%2e/%cc%81x", "/js/..%2f%cc%81%2e%2e/x",
                      "/a%00%cc%81.css", "/a%5c%cc%81..", "/\u{301}..%2f..%2f\u{301}x/../y"])
    func refusesEscapesHiddenBehindCombiningMarks(target: String) {
        guard case .refused = WebRequest(target: target) else {
            Issue.record("\(target.debugDescription) was not refused: \(WebRequest(target: target))")
            return
        }
    }

    /// Names that merely hold marks stay names, split at the slash bytes.
    @Test func mapsNamesHoldingMarksByTheirBytes() {
        #expect(WebRequest(target: "/\u{301}/a%CC%81.js") == .file("\u{301}/a\u{301}.js"))
        #expect(WebRequest(target: "/docs/..%CC%81/x") == .file("docs/..\u{301}/x"))
        #expect(WebRequest(target: "/docs/%CC%81") == .file("docs/\u{301}"))
    }

    @Test func injectsTheScriptBeforeTheHeadsEndInAnyCase() {
        let tag = ReloadScript.tag
        #expect(String(decoding: ReloadScript.injecting(into: Array("<html><HEAD><title>t</title></HEAD><body>b</body></html>".utf8)), as: UTF8.self)
                == "<html><HEAD><title>t</title>\(tag)</HEAD><body>b</body></html>")
        #expect(String(decoding: ReloadScript.injecting(into: Array("<p>x</p></Body>".utf8)), as: UTF8.self) == "<p>x</p>\(tag)</Body>")
        #expect(String(decoding: ReloadScript.injecting(into: Array("<p>fragment</p>".utf8)), as: UTF8.self) == "<p>fragment</p>\(tag)")
        #expect(ReloadScript.javascript.contains(WebRequest.eventsPath))
    }

    @Test func contentTypesByExtension() {
        #expect(ContentType.forName("index.HTML") == "text/html; charset=utf-8")
        #expect(ContentType.forName("js/app.js") == "text/javascript; charset=utf-8")
        #expect(ContentType.forName("css/app.css") == "text/css; charset=utf-8")
        #expect(ContentType.forName("img/logo.png") == "image/png")
        #expect(ContentType.forName("fonts/x.woff2") == "font/woff2")
        #expect(ContentType.forName("app.wasm") == "application/wasm")
        #expect(ContentType.forName("LICENSE") == "application/octet-stream")
        #expect(ContentType.isHTML(ContentType.forName("a.htm")) && !ContentType.isHTML(ContentType.forName("a.js")))
    }

    @Test func stylesheetsOnlyWhenEveryChangeIsCSS() {
        #expect(ReloadEvent(changed: ["css/a.css", "css/B.CSS"]).stylesheetsOnly)
        #expect(!ReloadEvent(changed: ["css/a.css", "js/app.js"]).stylesheetsOnly)
        #expect(!ReloadEvent(changed: []).stylesheetsOnly)
    }
}
