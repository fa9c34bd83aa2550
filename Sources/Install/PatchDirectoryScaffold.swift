import APKCore
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
import APKCore

/// `apkpatch init DIR`: a new patch directory from `Templates/patch-dir/` (an `apkpatch.yml` whose examples are all
/// commented out, so the scaffold is a valid empty patch, and an empty `assets/www/` to drop web files into).
public enum PatchDirectoryScaffold {
    /// Files named this in the template only mark a folder to create; they are not copied, because every file in
    /// a patch directory becomes an APK entry.
    public static let folderMarker = ".keep"

    /// What ``create(at:templates:overwrite:)`` did.
    public struct Result: Sendable, Equatable {
        /// Files written, relative to the patch directory.
        public var files: [String]
        /// Folders created (or already present), relative to the patch directory.
        public var folders: [String]
    }

    /// Creates the scaffold at `directory` (made if missing). Existing files are kept unless `overwrite`.
    /// - Throws: ``ScaffoldError/fileExists(_:)`` for a file that exists (nothing is written then),
    ///   ``TemplateError`` for missing templates, or the file system's error.
    @discardableResult
    public static func create(at directory: String, templates: TemplateLibrary, overwrite: Bool = false) throws -> Result {
        let fileManager = FileManager.default
        let prefix = "patch-dir/"
        let paths = try templates.files(under: "patch-dir").filter { $0.hasPrefix(prefix) }
        var files: [(String, String)] = [], folders: [String] = []
        for path in paths {
            let relative = String(path.dropFirst(prefix.count))
            let name = relative.lastPathComponent
            if name == folderMarker {
                folders.append(relative.deletingLastPathComponent)
            } else {
                files.append((relative, try templates.text(of: path)))
            }
        }
        if FileKind(atPath: directory) == .other {
            throw ScaffoldError.notADirectory(directory)
        }
        if !overwrite {
            // Check everything before writing anything: no half-made scaffold.
            for (relative, _) in files where fileManager.fileExists(atPath: directory.appendingPathComponent(relative)) {
                throw ScaffoldError.fileExists(directory.appendingPathComponent(relative))
            }
        }
        try UserFiles.makeDirectories(directory)
        for folder in folders {
            try UserFiles.makeDirectories(directory.appendingPathComponent(folder))
        }
        for (relative, text) in files {
            try UserFiles.write(Array(text.utf8), to: directory.appendingPathComponent(relative))
        }
        return Result(files: files.map(\.0).sorted(), folders: folders.sorted())
    }
}

/// Why a scaffold was not created.
public enum ScaffoldError: Error, CustomStringConvertible, Equatable {
    case fileExists(String)
    case notADirectory(String)

    public var description: String {
        switch self {
        case .fileExists(let path): return "\(path) already exists; nothing was written. Choose a new directory, or have the scaffold's files overwritten"
        case .notADirectory(let path): return "\(path) is a file, not a directory; choose another path for the patch directory."
        }
    }
}
