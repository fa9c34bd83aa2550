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
import Unpack

/// A patch directory: files laid out like the APK (every file adds or replaces the entry at its relative
/// path) plus the optional `apkpatch.yml`.
///
/// Files are read with read(2), never mapped: in watch mode an editor may truncate a file while we read it,
/// which would be a SIGBUS through a mapping. Symbolic links are refused (they could point anywhere), and so
/// are names that would not be safe entry names. Editor droppings and temporary files (``isIgnored(_:)``, `.git/`)
/// are ignored.
public struct PatchDirectory: Sendable {
    public let root: String
    public let spec: PatchSpec
    /// Entry name → file path, for every file in the directory, by the name's bytes.
    public let files: PatchFiles

    public struct PatchFile: Sendable, Hashable {
        public let path: String
        public let size: Int64
        /// Modification time in nanoseconds; with the size, what watch mode compares to skip unchanged files.
        public let modificationTime: Int64
    }

    /// No patch: no files, the default spec (an overlay with it keeps the APK's content as it is).
    public static let empty = PatchDirectory(root: "", spec: PatchSpec(), files: [:])

    public init(root: String) throws {
        self.root = root
        guard FileKind(atPath: root) == .directory else {
            throw OverlayError.patchDirectoryMissing(root)
        }
        let specPath = root.appendingPathComponent(PatchSpec.fileName)
        var info = stat()
        if lstat(specPath, &info) == 0 {
            spec = try PatchSpec(yaml: try Self.readSpec(at: specPath), path: specPath)
        } else {
            spec = PatchSpec()
        }
        var files = PatchFiles()
        try Self.scan(directory: root, prefix: "", into: &files)
        self.files = files
    }

    /// The most bytes `apkpatch.yml` may hold: it lists globs and a few keys, so no real one comes near, and a
    /// larger file (a log or a download saved under the name) is refused before it is read.
    public static let specSizeLimit = 1 << 20

    /// The text of the spec file at `path`: a regular file (a FIFO there must not block the build, a device must
    /// not be read), at most `specSizeLimit` bytes, in UTF-8.
    static func readSpec(at path: String) throws -> String {
        let bytes: [UInt8]
        do { bytes = try RegularFile.contents(of: path, limit: specSizeLimit) } catch let error as FileError {
            if error.errno == EFBIG {
                throw OverlayError.invalidSpec(path: path, reason: "\(error.reason); it holds globs and a few keys: list files with a glob (assets/**) rather than one by one")
            }
            if Self.isVanished(error.errno) { throw OverlayError.vanished(path: path) }
            throw OverlayError.unreadable(path: path, reason: error.reason)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw OverlayError.invalidSpec(path: path, reason: "the file is not UTF-8 text; save it as UTF-8")
        }
        return text
    }

    /// True for files an editor leaves behind that must never become entries (nor wake watch): backups (`app.js~`),
    /// swap and lock files (vim's `.app.js.swp`/`.swx`/`.swo` and `4913` probe, Emacs' `.#app.js` and `#app.js#`,
    /// Kate's `.app.js.kate-swp`, LibreOffice's `.~lock.x#`, Office's `~$x.docx`), the temporary files editors and
    /// tools write before renaming over the real one (`sed -i`'s `sedXXXXXX`, GNOME's `.goutputstream-XXXXXX`,
    /// JetBrains' `x___jb_tmp___`, `*.tmp`, Chrome's `*.crswap`), and desktop metadata.
    ///
    /// Matched by bytes, as editors make these names by adding bytes to the file's: for a file "\u{301}a.js", vim
    /// writes ".\u{301}a.js.swp", whose dot and mark are one Character (and a prepended mark, U+0600, joins the
    /// dot of ".tmp"), so Swift's `hasPrefix(".")` would take the swap file for a patch file.
    public static func isIgnored(_ component: String) -> Bool {
        let starts = component.javaHasPrefix, ends = component.javaHasSuffix
        if component == ".DS_Store" || component == "Thumbs.db" || component == "4913" || component == ".git"
            || ends("~") || starts(".#") || starts("~$") || starts(".~lock.") || starts(".apkpatch-") || starts(".goutputstream-")
            || ends(".tmp") || ends(".crswap") || ends("___jb_tmp___") || ends("___jb_old___") {
            return true
        }
        if starts("."), [".swp", ".swx", ".swo", ".kate-swp"].contains(where: ends) { return true }
        if component.utf8.count > 2, starts("#"), ends("#") { return true }
        // sed -i writes sedXXXXXX (six random letters and digits) beside the file, then renames it over. Words such
        // as "seductive" are kept: a random suffix almost always has a digit or a capital (one in 200 has neither,
        // and watch still drops that one for its short life).
        let suffix = component.utf8.dropFirst(3)
        if component.utf8.count == 9, starts("sed"),
           suffix.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) }),
           suffix.contains(where: { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) }) {
            return true
        }
        return false
    }

    private static func scan(directory: String, prefix: String, into files: inout PatchFiles) throws {
        for name in try names(in: directory).sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            if isIgnored(name) || (prefix.isEmpty && name == PatchSpec.fileName) { continue }
            let path = directory.appendingPathComponent(name)
            let entryName = prefix + name
            var info = stat()
            guard lstat(path, &info) == 0 else {
                // Deleted between listing and stat (an editor's temp file): not an error.
                if errno == ENOENT { continue }
                throw OverlayError.unreadable(path: path, reason: String(cString: strerror(errno)))
            }
            switch info.st_mode & S_IFMT {
            case S_IFLNK:
                throw OverlayError.symlinkRefused(path)
            case S_IFDIR:
                try scan(directory: path, prefix: entryName + "/", into: &files)
            case S_IFREG:
                if let problem = EntryName.problem(with: Array(entryName.utf8)) {
                    throw OverlayError.unsafeName(path: path, reason: problem)
                }
                let mtime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
                files[entryName] = PatchFile(path: path, size: Int64(info.st_size), modificationTime: mtime)
            default:
                throw OverlayError.unsupportedFileType(path)
            }
        }
    }

    /// The names in `directory`, read as bytes (`readdir`): a name that is not valid UTF-8 is refused, not
    /// decoded with replacement characters into an entry name the user never chose.
    static func names(in directory: String) throws -> [String] {
        let listing: DirectoryNames
        do { listing = try DirectoryNames(directory) } catch {
            if isVanished(error.errno) { throw OverlayError.vanished(path: directory) }
            throw OverlayError.unreadable(path: directory, reason: error.reason)
        }
        if let shown = listing.notUTF8.first {
            throw OverlayError.unsafeName(path: directory.appendingPathComponent(shown),
                                          reason: "the file name is not valid UTF-8 (APK entry names are UTF-8); rename the file")
        }
        return listing.names
    }

    /// Reads a patch file's bytes with read(2).
    public static func read(_ file: PatchFile) throws -> [UInt8] { try read(path: file.path, expectedSize: file.size) }

    /// Reads the file at `path` with read(2), not following a symbolic link there; `expectedSize` sizes the buffer.
    public static func read(path: String, expectedSize: Int64 = 0) throws -> [UInt8] {
        // Swapped for a FIFO since the scan, the file must not block the build.
        let fd: Int32
        do { fd = try RegularFile.open(path, flags: O_NOFOLLOW).descriptor } catch let error as FileError {
            if isVanished(error.errno) { throw OverlayError.vanished(path: path) }
            throw OverlayError.unreadable(path: path, reason: error.reason)
        }
        defer { close(fd) }
        var out: [UInt8] = []
        out.reserveCapacity(Int(clamping: expectedSize))
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw OverlayError.unreadable(path: path, reason: String(cString: strerror(errno)))
            }
            if n == 0 { break }
            out.append(contentsOf: buffer[0..<n])
        }
        return out
    }

    /// Whether `errno`, from opening a path the scan listed, says the path is no longer there: deleted, renamed
    /// away, or a folder on the way replaced (an editor's save, a `git checkout`). Every other error (permission
    /// denied, I/O error, a FIFO swapped in) is one to report.
    static func isVanished(_ errno: Int32) -> Bool { errno == ENOENT || errno == ENOTDIR }
}

/// Why a patch could not be applied.
public enum OverlayError: Error, CustomStringConvertible {
    case patchDirectoryMissing(String)
    case invalidSpec(path: String, reason: String)
    case unreadable(path: String, reason: String)
    /// A file or folder the scan listed was gone when read: deleted or renamed since, as an editor's save does
    /// for a moment (vim renames the file to its backup, JetBrains and GNOME rename a temporary file over it).
    /// Watch mode takes it as a save in flight and builds again once the save is over.
    case vanished(path: String)
    case symlinkRefused(String)
    case unsafeName(path: String, reason: String)
    case unsupportedFileType(String)
    case unsupportedEdit(String)
    case editFailed(String)

    public var description: String {
        switch self {
        case .patchDirectoryMissing(let path):
            return "patch directory \(path) does not exist or is not a directory; create it with `apkpatch init \(path)`"
        case .invalidSpec(let path, let reason):
            return "\(path): \(reason)"
        case .unreadable(let path, let reason):
            return "cannot read \(path): \(reason)"
        case .vanished(let path):
            return "cannot read \(path): it was deleted or renamed while the patch directory was read (a save in progress?); run the command again once the files are saved"
        case .symlinkRefused(let path):
            return "\(path) is a symbolic link; patch directories may contain only regular files (copy the file in instead)"
        case .unsafeName(let path, let reason):
            return "\(path) cannot become an APK entry: \(reason)"
        case .unsupportedFileType(let path):
            return "\(path) is not a regular file or directory (device, socket or FIFO); remove it from the patch directory"
        case .unsupportedEdit(let reason):
            return reason
        case .editFailed(let reason):
            return reason
        }
    }
}

/// A patch directory's files by entry name, keyed by the name's bytes: a Linux folder (whose names are bytes)
/// can hold "caf\u{E9}.txt" and "cafe\u{301}.txt" side by side, and Android keeps the two entries apart, where a
/// `[String: PatchFile]` (canonical equivalence) would keep one file of the two. Names are walked in UTF-8
/// byte order.
public struct PatchFiles: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    public typealias PatchFile = PatchDirectory.PatchFile
    private var byName: [ExactName: PatchFile] = [:]

    public init() {}
    public init(dictionaryLiteral elements: (String, PatchFile)...) {
        for (name, file) in elements { byName[ExactName(name)] = file }
    }

    /// The file for the entry named `name`, byte for byte.
    public subscript(name: String) -> PatchFile? {
        get { byName[ExactName(name)] }
        set { byName[ExactName(name)] = newValue }
    }

    public var count: Int { byName.count }
    public var isEmpty: Bool { byName.isEmpty }
    /// The entry names, in UTF-8 byte order.
    public var keys: [String] { byName.keys.sorted().map(\.string) }

    @discardableResult
    public mutating func removeValue(forKey name: String) -> PatchFile? { byName.removeValue(forKey: ExactName(name)) }

    /// Name and file pairs, in the names' UTF-8 byte order.
    public func makeIterator() -> IndexingIterator<[(key: String, value: PatchFile)]> {
        byName.sorted { $0.key < $1.key }.map { (key: $0.key.string, value: $0.value) }.makeIterator()
    }
}
