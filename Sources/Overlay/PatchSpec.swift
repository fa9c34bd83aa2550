import Foundation
import Yams

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
/// Unknown keys are an error (a typo should not silently do nothing).
public struct PatchSpec: Sendable, Equatable {
    public static let fileName = "apkpatch.yml"

    public var delete: [Glob] = []
    public var store: [Glob] = []
    public var deflate: [Glob] = []
    public var manifest = ManifestShortcuts()

    public init() {}

    /// The manifest shortcuts, each optional.
    public struct ManifestShortcuts: Sendable, Equatable {
        public var debuggable: Bool?
        public var versionCode: Int?
        public var versionName: String?
        public var label: String?
        public var usesCleartextTraffic: Bool?
        public var extractNativeLibs: Bool?
        public var minSdkVersion: Int?
        public var targetSdkVersion: Int?
        public init() {}
        public var isEmpty: Bool { self == ManifestShortcuts() }
    }

    /// Parses the YAML text of a spec file; `path` is for messages.
    public init(yaml: String, path: String) throws {
        let node: Node?
        do { node = try Yams.compose(yaml: yaml) } catch {
            throw OverlayError.invalidSpec(path: path, reason: "not valid YAML: \(error)")
        }
        guard let node else { return }  // an empty file is an empty spec
        guard let mapping = node.mapping else { throw OverlayError.invalidSpec(path: path, reason: "the top level must be a mapping (keys delete:, store:, deflate:, manifest:)") }
        for (keyNode, value) in mapping {
            let key = keyNode.string ?? ""
            switch key {
            case "delete": delete = try Self.globs(value, key: key, path: path)
            case "store": store = try Self.globs(value, key: key, path: path)
            case "deflate": deflate = try Self.globs(value, key: key, path: path)
            case "manifest": manifest = try Self.manifest(value, path: path)
            default:
                throw OverlayError.invalidSpec(path: path, reason: "unknown key \(key.debugDescription) at line \(keyNode.mark?.line ?? 0); known keys: delete, store, deflate, manifest")
            }
        }
    }

    private static func globs(_ node: Node, key: String, path: String) throws -> [Glob] {
        if let single = node.scalar { return [Glob(single.string)] }
        guard let sequence = node.sequence else {
            throw OverlayError.invalidSpec(path: path, reason: "\(key): expects a list of glob patterns")
        }
        return try sequence.map { item in
            guard let scalar = item.scalar, !scalar.string.isEmpty else {
                throw OverlayError.invalidSpec(path: path, reason: "\(key): line \(item.mark?.line ?? 0): expected a glob pattern")
            }
            return Glob(scalar.string)
        }
    }

    private static func manifest(_ node: Node, path: String) throws -> ManifestShortcuts {
        guard let mapping = node.mapping else { throw OverlayError.invalidSpec(path: path, reason: "manifest: expects a mapping such as `debuggable: true`") }
        var shortcuts = ManifestShortcuts()
        for (keyNode, value) in mapping {
            let key = keyNode.string ?? ""
            let line = value.mark?.line ?? 0
            func bool() throws -> Bool {
                guard let b = value.bool else { throw OverlayError.invalidSpec(path: path, reason: "manifest.\(key) (line \(line)) must be true or false") }
                return b
            }
            func int() throws -> Int {
                guard let i = value.int else { throw OverlayError.invalidSpec(path: path, reason: "manifest.\(key) (line \(line)) must be a whole number") }
                return i
            }
            func string() throws -> String {
                guard let s = value.string else { throw OverlayError.invalidSpec(path: path, reason: "manifest.\(key) (line \(line)) must be a string") }
                return s
            }
            switch key {
            case "debuggable": shortcuts.debuggable = try bool()
            case "versionCode": shortcuts.versionCode = try int()
            case "versionName": shortcuts.versionName = try string()
            case "label": shortcuts.label = try string()
            case "usesCleartextTraffic": shortcuts.usesCleartextTraffic = try bool()
            case "extractNativeLibs": shortcuts.extractNativeLibs = try bool()
            case "minSdkVersion": shortcuts.minSdkVersion = try int()
            case "targetSdkVersion": shortcuts.targetSdkVersion = try int()
            default:
                throw OverlayError.invalidSpec(path: path, reason: "manifest: unknown shortcut \(key.debugDescription) at line \(keyNode.mark?.line ?? 0); known: debuggable, versionCode, versionName, label, usesCleartextTraffic, extractNativeLibs, minSdkVersion, targetSdkVersion")
            }
        }
        return shortcuts
    }
}
