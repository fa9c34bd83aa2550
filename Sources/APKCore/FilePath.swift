/// Path arithmetic on strings, as `NSString`'s path methods do it (`NSString` is not in FoundationEssentials).
/// Slashes are found as bytes: a path's names are bytes, and Swift's Characters join a combining mark to the slash
/// before it ("out/\u{301}x.apk" would be one component).
extension StringProtocol {
    /// `self` and `component` joined by one `/`.
    package func appendingPathComponent(_ component: String) -> String { String(self).joiningPathComponent(component) }

    /// The last component, trailing slashes ignored ("/" for the root).
    package var lastPathComponent: String { String(self).lastComponent }

    /// All but the last component ("" for a lone name, "/" for a name in the root).
    package var deletingLastPathComponent: String { String(self).allButLastComponent }
}

extension String {
    private static var slash: UInt8 { UInt8(ascii: "/") }

    fileprivate func joiningPathComponent(_ component: String) -> String {
        if isEmpty { return component }
        if component.isEmpty { return self }
        let base = utf8.last == Self.slash ? self : self + "/"
        guard let start = component.utf8.firstIndex(where: { $0 != Self.slash }) else { return base }
        return base + component[start...]
    }

    fileprivate var lastComponent: String {
        let trimmed = trimmingTrailingSlashes
        if trimmed.isEmpty { return utf8.first == Self.slash ? "/" : "" }
        guard let slash = trimmed.utf8.lastIndex(of: Self.slash) else { return String(trimmed) }
        return String(trimmed[trimmed.utf8.index(after: slash)...])
    }

    fileprivate var allButLastComponent: String {
        let trimmed = trimmingTrailingSlashes
        guard let slash = trimmed.utf8.lastIndex(of: Self.slash) else { return utf8.first == Self.slash ? "/" : "" }
        let parent = trimmed[..<slash]
        guard let end = parent.utf8.lastIndex(where: { $0 != Self.slash }) else { return "/" }
        return String(parent[..<parent.utf8.index(after: end)])  // by bytes: `...end` would step a Character
    }

    private var trimmingTrailingSlashes: Substring {
        guard let last = utf8.lastIndex(where: { $0 != Self.slash }) else { return self[startIndex..<startIndex] }
        return self[..<utf8.index(after: last)]
    }
}

extension String {
    /// An output path's folder (what comes before its last slash, "." when it has none) and its last component
    /// (trailing slashes ignored): where a temporary file goes beside it, and the name it is made from.
    package var folderAndName: (folder: String, name: String) {
        let slash = UInt8(ascii: "/")
        let folder = utf8.lastIndex(of: slash).map { String(self[..<$0]) } ?? "."
        let name = utf8.split(separator: slash).last.map { String(Substring($0)) } ?? self
        return (folder, name)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What is at a path, symbolic links followed (`FileManager.fileExists(atPath:isDirectory:)` without its
/// `ObjCBool`, which FoundationEssentials does not have).
package enum FileKind: Sendable, Equatable {
    case directory
    case other

    /// Nil when nothing is there (or it cannot be reached).
    package init?(atPath path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        self = (status.st_mode & S_IFMT) == S_IFDIR ? .directory : .other
    }
}

extension StringProtocol {
    /// The path's components split at its slash bytes (empty ones kept with `keepingEmpty`): a Character would join a
    /// combining mark to the slash before it ("res/\u{301}xml/a.xml" would be two components).
    package func componentsAtSlashBytes(keepingEmpty: Bool = false) -> [String] {
        utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: !keepingEmpty).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether the path starts at the root: its first byte is a slash (a Character would join a combining mark
    /// to it, "/\u{301}x").
    package var isAbsolutePath: Bool { utf8.first == UInt8(ascii: "/") }

    /// The last component's extension without its dot ("" when it has none; a leading dot is not one). The dot is
    /// found as a byte: a Prepend mark (U+0600) joins it in a Character ("x\u{600}.apks").
    package var pathExtension: String {
        let last = lastPathComponent
        guard let dot = last.utf8.lastIndex(of: UInt8(ascii: ".")), dot != last.utf8.startIndex else { return "" }
        return String(last[last.utf8.index(after: dot)...])
    }

    /// The path without the last component's extension and its dot.
    package var deletingPathExtension: String {
        let pathExtension = self.pathExtension
        guard !pathExtension.isEmpty else { return String(self) }
        var bytes = Substring(self).utf8[...]
        while bytes.last == UInt8(ascii: "/") && bytes.count > 1 { bytes = bytes.dropLast() }
        return String(decoding: bytes.dropLast(pathExtension.utf8.count + 1), as: UTF8.self)
    }
}

/// Writing files the user named, with errors that say what is wrong in their terms (FoundationEssentials' own
/// errors print as a `CocoaError(...)` dump).
package enum UserFiles {
    /// `mkdir -p path`: each missing folder is made; a `FileError` names the first that cannot be (a file in the
    /// way, no permission).
    package static func makeDirectories(_ path: String) throws {
        // Thousands of files go into a few hundred folders (decode): one look at the folder, not a failed mkdir
        // for each of its parents.
        if FileKind(atPath: path) == .directory { return }
        var current = path.utf8.first == UInt8(ascii: "/") ? "/" : ""
        for component in path.utf8.split(separator: UInt8(ascii: "/")).map({ Substring($0) }) {
            current += (current.isEmpty || current.utf8.last == UInt8(ascii: "/") ? "" : "/") + component
            if mkdir(current, 0o777) == 0 { continue }
            let code = errno
            if code == EEXIST {
                if FileKind(atPath: current) == .directory { continue }
                throw FileError(path: current, operation: "make the folder", errno: ENOTDIR, detail: "a file of that name is in the way")
            }
            throw FileError(path: current, operation: "make the folder", errno: code)
        }
    }

    /// Writes `bytes` to `path` atomically (`OutputFile`: a temporary file renamed into place), making its folder.
    package static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws {
        let folder = path.deletingLastPathComponent
        if !folder.isEmpty { try makeDirectories(folder) }
        let file = try OutputFile(destination: path, mode: mode)
        try file.write(bytes)
        try file.commit()
    }
}

/// The names in a folder read as bytes (`readdir`), so that a name that is not valid UTF-8 is told apart instead of
/// decoded with replacement characters into a name no file has (FileManager's listing does that).
package struct DirectoryNames {
    /// Every name but "." and ".." that is valid UTF-8, in the order `readdir` gives them.
    package var names: [String] = []
    /// The others, shown with each byte that is not UTF-8 as `\xHH` (as `ls -b` shows it): a replacement
    /// character would name no file, and the user has to find this one to rename it.
    package var notUTF8: [String] = []

    /// Reads `directory`; throws its `errno` when it cannot be read.
    package init(_ directory: String) throws(FileError) {
        guard let stream = opendir(directory) else { throw FileError(path: directory, operation: "read the folder", errno: errno) }
        defer { closedir(stream) }
        while let entry = readdir(stream) {
            let bytes: [UInt8] = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            if bytes == [UInt8(ascii: ".")] || bytes == [UInt8(ascii: "."), UInt8(ascii: ".")] { continue }
            if let name = String(validating: bytes, as: UTF8.self) { names.append(name) } else { notUTF8.append(Self.escaped(bytes)) }
        }
    }

    /// `bytes` as text: valid UTF-8 as it is, every other byte as `\xHH`.
    static func escaped(_ bytes: [UInt8]) -> String {
        var shown = ""
        var iterator = bytes.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                shown += String(decoding: encoded, as: UTF8.self)
                offset += encoded.count
            case .error(let length):
                for byte in bytes[offset..<offset + length] { shown += "\\x" + String(byte, radix: 16, uppercase: true) }
                offset += length
            case .emptyInput:
                return shown
            }
        }
    }
}
