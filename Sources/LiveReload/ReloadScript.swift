import APKCore

/// The script the development server adds to every HTML page: it listens on the server-sent-events stream
/// and reloads the page when a web asset is saved, or, when only stylesheets changed, swaps those
/// stylesheets in place (the page keeps its state).
///
/// It is a separate file (`/__apkpatch/reload.js`) referenced by a `<script src>` rather than inline: apps'
/// Content-Security-Policy commonly allows `'self'` scripts and not inline ones. ES5, for old WebViews.
public enum ReloadScript {
    /// The tag inserted into pages.
    public static let tag = "<script src=\"\(WebRequest.reloadScriptPath)\"></script>"

    public static let javascript = """
    (function () {
      if (window.__apkpatchLiveReload || typeof EventSource === 'undefined') { return; }
      window.__apkpatchLiveReload = true;
      function swapStylesheets(changed) {
        var links = document.querySelectorAll('link[rel~="stylesheet"][href]');
        var swapped = 0;
        for (var i = 0; i < links.length; i++) {
          var url = new URL(links[i].href, location.href);
          var path = decodeURIComponent(url.pathname).replace(/^\\//, '');
          for (var j = 0; j < changed.length; j++) {
            if (path === changed[j]) {
              url.searchParams.set('apkpatch-reload', String(Date.now()));
              links[i].href = url.toString();
              swapped++;
            }
          }
        }
        return swapped > 0;
      }
      var source = new EventSource('\(WebRequest.eventsPath)');
      source.addEventListener('reload', function (event) {
        var data = {};
        try { data = JSON.parse(event.data); } catch (e) {}
        if (data.stylesheetsOnly && swapStylesheets(data.changed || [])) { return; }
        location.reload();
      });
    })();

    """

    /// `html` with the tag before `</head>`, else before `</body>`, else at the end (matched without regard
    /// to case; the page's bytes are otherwise untouched, whatever their encoding).
    public static func injecting(into html: [UInt8]) -> [UInt8] {
        let tag = Array(tag.utf8)
        for marker in ["</head", "</body"] {
            if let index = firstIndex(of: Array(marker.utf8), in: html) {
                return Array(html[..<index]) + tag + Array(html[index...])
            }
        }
        return html + tag
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        outer: for start in 0...(haystack.count - needle.count) {
            for offset in 0..<needle.count where haystack[start + offset].asciiLowercased != needle[offset] { continue outer }
            return start
        }
        return nil
    }
}
