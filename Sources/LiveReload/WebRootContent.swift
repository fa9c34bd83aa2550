import APKCore
import Glibc
import Overlay
import Unpack

/// The files the development server serves: the app's web root as the patched APK would hold it, read at
/// request time, so a save in the patch directory is served at once without a rebuild.
///
/// A name is looked up in the patch directory first (`<patch>/assets/www/js/app.js`), then in the input
/// APK (`assets/www/js/app.js`, unless the patch's `delete:` globs remove it). Patch files are read with
/// read(2) (an editor may truncate one meanwhile; a mapping would fault), through no symbolic link, and
/// editor droppings (`.app.js.swp`, `app.js~`) are never served from it, as the overlay never packs them.
public final class WebRootContent: @unchecked Sendable {
    // @unchecked Sendable: `deleted` is behind `lock`; the rest is immutable.
    /// One file's bytes, and whether the patch directory supplied them.
    public struct File: Sendable {
        public let bytes: [UInt8]
        public let isFromPatch: Bool
    }

    public let archive: APKArchive
    /// Entry-name prefix of the web root, with its slash (`assets/www/`).
    public let webRoot: String
    public let patchDirectory: String
    private let lock = Lock()
    private var deleted: [Glob]

    public init(archive: APKArchive, webRoot: String, patchDirectory: String, deleted: [Glob] = []) {
        self.archive = archive
        self.webRoot = webRoot
        self.patchDirectory = patchDirectory
        self.deleted = deleted
    }

    /// Replaces the patch spec's `delete:` globs (after `apkpatch.yml` changed).
    public func setDeleted(_ globs: [Glob]) { lock.withLock { deleted = globs } }

    /// The file at `relative` below the web root, or nil when neither the patch nor the APK has it.
    public func file(_ relative: String) throws -> File? {
        let name = webRoot + relative
        // Split at the slash bytes: Characters would join a combining mark to the slash before it, and the folder
        // before it would not be checked as a real folder (a symbolic link there would be followed).
        let components = name.componentsAtSlashBytes()
        if !components.contains(where: PatchDirectory.isIgnored), let path = try patchFilePath(components) {
            do {
                return File(bytes: try PatchDirectory.read(path: path), isFromPatch: true)
            } catch OverlayError.vanished {
                // Deleted or renamed since the look (a save in flight): as if it had not been there. The save's own
                // events reload the page once it is over.
            }
        }
        if lock.withLock({ deleted.contains { $0.matches(name) } }) { return nil }
        guard let entry = archive.entry(named: name) else { return nil }
        return File(bytes: try archive.uncompressedData(of: entry), isFromPatch: false)
    }

    /// The patch file's path when every folder on the way is a real folder and the file a regular file.
    private func patchFilePath(_ components: [String]) throws -> String? {
        var path = patchDirectory
        for (index, component) in components.enumerated() {
            path += "/" + component
            var info = stat()
            guard lstat(path, &info) == 0 else {
                if errno == ENOENT || errno == ENOTDIR { return nil }
                throw OverlayError.unreadable(path: path, reason: String(cString: strerror(errno)))
            }
            let type = info.st_mode & S_IFMT
            if index == components.count - 1 { return type == S_IFREG ? path : nil }
            if type != S_IFDIR { return nil }
        }
        return nil
    }
}
