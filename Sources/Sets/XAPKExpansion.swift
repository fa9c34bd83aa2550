import APKCore

/// An expansion (OBB) file an APKPure `.xapk` carries, and where on the device an XAPK installer puts it.
///
/// APKPure's `manifest.json` lists them as `"expansions": [{"file": ENTRY, "install_location": "EXTERNAL_STORAGE",
/// "install_path": "Android/obb/<package>/main.<versionCode>.<package>.obb"}]`: after installing the APKs, the
/// installer copies each entry to `install_path` on the shared storage, where the app (Google Play's expansion
/// file convention, `Environment.getExternalStorageDirectory()/Android/obb/<package>/`) looks for it.
public struct XAPKExpansion: Sendable, Equatable {
    /// The container entry holding the file.
    public let file: String
    /// Where it goes, relative to the shared storage.
    public let installPath: String
    /// The path `adb push` writes (`/sdcard` is the shared storage's path on every Android release adb serves).
    public var devicePath: String { "/sdcard/" + installPath }

    public init(file: String, installPath: String) {
        self.file = file
        self.installPath = installPath
    }

    /// The same file for the app renamed from `old` to `new` (`--rename-package`, `manifest: package:`): the
    /// renamed app looks in its own folder, `Android/obb/<new>/`, for `<main|patch>.<version>.<new>.obb` (the
    /// names Google Play's expansion files have, `Helpers.getExpansionAPKFileName`).
    /// By bytes, as `list(in:)` reads the path.
    public func renamed(from old: String, to new: String) -> XAPKExpansion {
        let oldFolder = "Android/obb/\(old)/", oldEnding = ".\(old).obb"
        guard old != new, var name = installPath.droppingJavaPrefix(oldFolder) else { return self }
        if let stem = name.droppingJavaSuffix(oldEnding) { name = stem + ".\(new).obb" }
        return XAPKExpansion(file: file, installPath: "Android/obb/\(new)/" + name)
    }

    /// The only `install_location` APKPure writes: the shared ("external") storage.
    static let externalStorage = "EXTERNAL_STORAGE"

    /// The expansion files `set`'s `manifest.json` lists (none for a set that is not an `.xapk`, or lists none).
    /// Each must be an entry of the container and go to the app's own expansion folder,
    /// `Android/obb/<package>/`: the one place Android keeps an app's expansion files, and so the only place a
    /// patch tool has business writing to on the device (a manifest naming another would have it overwrite the
    /// user's files).
    public static func list(in set: APKSet) throws -> [XAPKExpansion] {
        guard set.form == .xapk, let container = set.container, let manifest = container.entry(named: "manifest.json") else { return [] }
        let label = "\(set.label)!/manifest.json"
        guard let object = JSONValue.object(from: try container.uncompressedData(of: manifest)) else {
            throw APKSetError.unreadable(label, "not a JSON object, so its expansion (OBB) files cannot be listed; fix it, or build the set without installing it and install its APKs yourself")
        }
        guard let listed = object["expansions"], listed != .null else { return [] }
        guard case .array(let items) = listed else {
            throw APKSetError.unsupported(label, "\"expansions\" is not a list; APKPure writes [{\"file\": …, \"install_location\": \"EXTERNAL_STORAGE\", \"install_path\": …}]")
        }
        let folder = "Android/obb/\(set.base.manifest.packageName)/"
        return try items.enumerated().map { index, item in
            let field = "expansions[\(index)]"
            guard let file = item["file"]?.string, let path = item["install_path"]?.string else {
                throw APKSetError.unsupported(label, "\(field) needs the strings \"file\" (the entry) and \"install_path\" (where it goes on the device)")
            }
            if let location = item["install_location"], location.string != externalStorage {
                throw APKSetError.unsupported(label, "\(field).install_location is not \"\(externalStorage)\", the only place apkpatch pushes expansion files to")
            }
            guard let entry = container.entry(named: file), !entry.isDirectory else {
                throw APKSetError.unsupported(label, "\(field).file \(file.debugQuoted) is no file of the .xapk")
            }
            // By bytes, as the device's file system reads the path: a Character would join a Prepend mark (U+0600)
            // to the slash after it, hiding the ".." of "a\u{600}/..", or a combining mark to the slash before it.
            let components = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map { Substring($0) }
            guard path.javaHasPrefix(folder), components.count > 3, !components.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }),
                  !path.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) else {
                throw APKSetError.unsupported(label, "\(field).install_path \(path.debugQuoted) is not a file in \(folder), the app's expansion folder: apkpatch pushes expansion files only there. Fix manifest.json, or build the set without installing it, install its APKs and copy the file yourself")
            }
            return XAPKExpansion(file: file, installPath: path)
        }
    }
}
