import APKCore
/// The declarative file at the top of a patch directory (`apkpatch.yml`):
///
///     delete:            # input entries to remove (globs)
///       - assets/www/old/**
///     store:             # new or replaced entries to write uncompressed
///       - "**/*.bin"
///     deflate:           # new or replaced entries to compress even if the default would store them
///       - assets/www/data/*.json
///     manifest:          # AndroidManifest.xml shortcuts
///       debuggable: true
///       versionCode: 42
///
/// Unknown keys are an error (a typo should not silently do nothing); the message suggests the nearest known key.
/// The file is read by ``SpecYAML`` (the YAML this file needs, with line numbers in every message).
public struct PatchSpec: Sendable, Equatable {
    public static let fileName = "apkpatch.yml"

    public var delete: [Glob] = []
    public var store: [Glob] = []
    public var deflate: [Glob] = []
    /// The `manifest:` shortcuts.
    public var manifest = ManifestEdits()
    /// The network-security preset: `networkSecurity: trustUserCertificates`, or the mapping form with
    /// `trustUserCertificates`, `keepPins`, `caCertificates` and `pin` (certificate paths relative to the patch
    /// directory, stored here as absolute paths).
    public var networkSecurity = NetworkSecuritySpec()

    public init() {}

    /// Parses the YAML text of a spec file; `path` is for messages.
    public init(yaml: String, path: String) throws {
        let node: YAMLNode?
        do { node = try SpecYAML.compose(yaml: yaml) } catch let error as SpecYAMLError {
            throw OverlayError.invalidSpec(path: path, reason: "\(error)")
        }
        guard let node else { return }  // an empty file is an empty spec
        guard let mapping = node.mapping else { throw OverlayError.invalidSpec(path: path, reason: "line \(node.mark?.line ?? 1): the top level must be keys (delete:, store:, deflate:, manifest:), each on its own line") }
        for (keyNode, value) in mapping {
            let key = keyNode.string ?? ""
            switch key {
            case "delete": delete = try Self.globs(value, key: key, path: path)
            case "store": store = try Self.globs(value, key: key, path: path)
            case "deflate": deflate = try Self.globs(value, key: key, path: path)
            case "manifest": manifest = try Self.manifest(value, path: path)
            case "networkSecurity": networkSecurity = try Self.networkSecurity(value, path: path)
            default:
                throw OverlayError.invalidSpec(path: path, reason: "line \(keyNode.mark?.line ?? 0): unknown key \(key.debugQuoted)"
                    + Self.suggestion(for: key, among: Self.topLevelKeys) + "; known keys: \(Self.topLevelKeys.joined(separator: ", "))")
            }
        }
    }

    private static func globs(_ node: YAMLNode, key: String, path: String) throws -> [Glob] {
        if let single = node.scalar { return [Glob(single.string)] }
        guard let sequence = node.sequence else {
            throw OverlayError.invalidSpec(path: path, reason: "line \(node.mark?.line ?? 0): \(key): expects a list of glob patterns (one `- pattern` per line)")
        }
        return try sequence.map { item in
            guard let scalar = item.scalar, !scalar.string.isEmpty else {
                throw OverlayError.invalidSpec(path: path, reason: "line \(item.mark?.line ?? 0): \(key): expected a glob pattern")
            }
            return Glob(scalar.string)
        }
    }

    private static func networkSecurity(_ node: YAMLNode, path: String) throws -> NetworkSecuritySpec {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        func absolute(_ file: String) -> String { file.isAbsolutePath ? file : directory + "/" + file }
        func fail(_ line: Int?, _ reason: String) -> OverlayError {
            OverlayError.invalidSpec(path: path, reason: "networkSecurity\(line.map { " (line \($0))" } ?? ""): \(reason)")
        }
        func paths(_ node: YAMLNode, _ key: String) throws -> [String] {
            if let scalar = node.scalar { return [absolute(scalar.string)] }
            guard let sequence = node.sequence else { throw fail(node.mark?.line, "\(key) expects a list of certificate files") }
            return try sequence.map { item in
                guard let file = item.string, !file.isEmpty else { throw fail(item.mark?.line, "\(key) expects certificate file paths") }
                return absolute(file)
            }
        }
        if let word = node.string, node.mapping == nil {
            guard word == "trustUserCertificates" else { throw fail(node.mark?.line, "'\(word.cappedForMessage)' is not a preset; write trustUserCertificates or a mapping") }
            return NetworkSecuritySpec(trustUserCertificates: true)
        }
        guard let mapping = node.mapping else { throw fail(node.mark?.line, "expects trustUserCertificates or a mapping (trustUserCertificates, keepPins, caCertificates, pin)") }
        var spec = NetworkSecuritySpec()
        for (keyNode, value) in mapping {
            let key = keyNode.string ?? ""
            switch key {
            case "trustUserCertificates", "keepPins":
                guard let flag = value.bool else { throw fail(value.mark?.line, "\(key) must be true or false") }
                if key == "keepPins" { spec.keepPins = flag } else { spec.trustUserCertificates = flag }
            case "caCertificates": spec.caCertificates = try paths(value, key)
            case "pin":
                guard let items = value.sequence else { throw fail(value.mark?.line, "pin expects a list of {domain, certificates, expiration}") }
                for item in items {
                    guard let pairs = item.mapping else { throw fail(item.mark?.line, "each pin needs a domain: and certificates:") }
                    func field(_ name: String) -> YAMLNode? { pairs.first { $0.key.string == name }?.value }
                    let fields = pairs.map(\.key)
                    guard let domain = field("domain")?.string, !domain.isEmpty else {
                        throw fail(item.mark?.line, "each pin needs a domain: and certificates:")
                    }
                    for key in fields where !["domain", "certificates", "expiration"].contains(key.string ?? "") {
                        throw fail(key.mark?.line, "unknown pin key \((key.string ?? "").debugQuoted); known: domain, certificates, expiration")
                    }
                    guard let certificates = field("certificates") else { throw fail(item.mark?.line, "pin for \(domain.cappedForMessage) needs certificates:") }
                    spec.pins.append(NetworkSecuritySpec.Pin(domain: domain, certificates: try paths(certificates, "certificates"),
                                                             expiration: field("expiration")?.string))
                }
            default:
                throw fail(keyNode.mark?.line, "unknown key \(key.debugQuoted); known: trustUserCertificates, keepPins, caCertificates, pin")
            }
        }
        if !spec.caCertificates.isEmpty { spec.trustUserCertificates = true }
        return spec
    }

    private static func manifest(_ node: YAMLNode, path: String) throws -> ManifestEdits {
        guard let mapping = node.mapping else { throw OverlayError.invalidSpec(path: path, reason: "line \(node.mark?.line ?? 0): manifest: expects shortcuts indented under it, such as `debuggable: true`") }
        var shortcuts = ManifestEdits()
        for (keyNode, value) in mapping {
            let key = keyNode.string ?? ""
            let line = value.mark?.line ?? 0
            func bool() throws -> Bool {
                guard let b = value.bool else { throw OverlayError.invalidSpec(path: path, reason: "line \(line): manifest.\(key) must be true or false") }
                return b
            }
            func int() throws -> Int {
                guard let i = value.int else { throw OverlayError.invalidSpec(path: path, reason: "line \(line): manifest.\(key) must be a whole number") }
                return i
            }
            func string() throws -> String {
                guard let s = value.string else { throw OverlayError.invalidSpec(path: path, reason: "line \(line): manifest.\(key) must be a string") }
                return s
            }
            switch key {
            case "debuggable": shortcuts.debuggable = try bool()
            case "versionCode": shortcuts.versionCode = try int()
            case "versionName": shortcuts.versionName = try string()
            case "label": shortcuts.label = try string()
            case "usesCleartextTraffic": shortcuts.usesCleartextTraffic = try bool()
            case "extractNativeLibs": shortcuts.extractNativeLibs = try bool()
            case "minSdkVersion": shortcuts.minSdkVersion = .level(try int())
            case "targetSdkVersion": shortcuts.targetSdkVersion = .level(try int())
            case "package": shortcuts.packageName = try string()
            default:
                throw OverlayError.invalidSpec(path: path, reason: "line \(keyNode.mark?.line ?? 0): manifest: unknown shortcut \(key.debugQuoted)"
                    + Self.suggestion(for: key, among: Self.manifestKeys) + "; known: \(Self.manifestKeys.joined(separator: ", "))")
            }
        }
        return shortcuts
    }

    static let topLevelKeys = ["delete", "store", "deflate", "manifest", "networkSecurity"]
    static let manifestKeys = ["debuggable", "versionCode", "versionName", "label", "usesCleartextTraffic",
                               "extractNativeLibs", "minSdkVersion", "targetSdkVersion", "package"]

    /// ` (did you mean "x"?)` for the known key nearest to a misspelt one, or nothing when none is close.
    static func suggestion(for key: String, among known: [String]) -> String {
        // The distance is at least the difference in length: a key too long or short for every known one is no
        // typo of any, and is not compared (a megabyte of key costs its length, not megabytes times keys).
        let length = key.count
        let near = known.filter { abs($0.count - length) <= max(2, $0.count / 3) }
        guard !near.isEmpty else { return "" }
        let lowered = key.lowercased()
        let scored = near.map { ($0, editDistance(lowered, $0.lowercased())) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= max(2, best.0.count / 3) else { return "" }
        return " (did you mean \"\(best.0)\"?)"
    }

    /// Levenshtein distance (insertions, deletions and substitutions of characters).
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        var previous = Array(0...b.count)
        var current = previous
        for i in 1...a.count {
            current[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
