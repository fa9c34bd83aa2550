/// The `Content-Type` of a web-root file, by extension: what WebView needs to run scripts (`text/javascript`,
/// and `application/wasm` for streaming compilation), apply stylesheets and show media.
public enum ContentType {
    private static let types: [String: String] = [
        "html": "text/html; charset=utf-8", "htm": "text/html; charset=utf-8",
        "js": "text/javascript; charset=utf-8", "mjs": "text/javascript; charset=utf-8",
        "css": "text/css; charset=utf-8", "json": "application/json", "map": "application/json",
        "webmanifest": "application/manifest+json", "xml": "application/xml", "txt": "text/plain; charset=utf-8",
        "svg": "image/svg+xml", "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif",
        "webp": "image/webp", "avif": "image/avif", "ico": "image/x-icon", "bmp": "image/bmp",
        "woff": "font/woff", "woff2": "font/woff2", "ttf": "font/ttf", "otf": "font/otf", "eot": "application/vnd.ms-fontobject",
        "mp3": "audio/mpeg", "wav": "audio/wav", "ogg": "audio/ogg", "m4a": "audio/mp4", "aac": "audio/aac",
        "mp4": "video/mp4", "webm": "video/webm", "m4v": "video/mp4",
        "wasm": "application/wasm", "pdf": "application/pdf", "zip": "application/zip",
    ]

    /// The type for `name` (a path; only its extension counts); `application/octet-stream` when unknown.
    public static func forName(_ name: String) -> String {
        let base = name.split(separator: "/").last ?? Substring(name)
        guard let dot = base.lastIndex(of: ".") else { return "application/octet-stream" }
        return types[base[base.index(after: dot)...].lowercased()] ?? "application/octet-stream"
    }

    /// Whether a response of this type is an HTML page (the only kind the reload script goes into).
    public static func isHTML(_ type: String) -> Bool { type.hasPrefix("text/html") }
}
