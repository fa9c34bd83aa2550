#if canImport(Glibc)
import Glibc
#if canImport(CLinux)
import CLinux
#endif
#elseif canImport(Darwin)
import Darwin
#endif

/// A directory of outputs written into a hidden staging directory beside its destination and moved into place
/// only on `commit()`, as `OutputFile` does for one file: nobody sees a partial set of files at the
/// destination, and an uncommitted staging directory is removed by `deinit`.
///
/// The staging directory is held under a lock while this object lives (`WorkingFiles`). A killed run's is removed
/// when the run ends (`LeftoverWatch`, in the command line), and a new `OutputDirectory` removes those that killed
/// runs left for the same destination all the same (a run killed with its helper, or without one).
///
/// An existing destination is replaced only when it is a directory holding nothing but files whose names
/// `replaceable` accepts (an earlier output of the same command); anything else there is refused, so a
/// mistyped path never deletes a user's folder.
public final class OutputDirectory {
    public let destination: String
    /// Where the files are written until `commit()`.
    public let stagingPath: String
    private var committed = false
    /// Keeps the staging directory locked (`WorkingFiles`): a live run's, not a killed run's leftover.
    private let lockDescriptor: Int32
    /// The directory that holds the destination, and the name the staging directories' names start with.
    private let parent: String
    private let stagingPrefix: String
    /// The system calls that move directories (a test gives failing ones).
    let renames: Renames

    /// `renameat2(RENAME_EXCHANGE)` and `rename(2)`, each returning 0 or an errno.
    struct Renames: Sendable {
        var exchange: @Sendable (String, String) -> Int32
        var rename: @Sendable (String, String) -> Int32

        static let system = Renames(exchange: { from, to in
            #if canImport(CLinux)
            return apkpatch_rename_exchange(from, to) == 0 ? 0 : errno
            #else
            return ENOSYS
            #endif
        }, rename: { from, to in
            #if canImport(Glibc)
            return Glibc.rename(from, to) == 0 ? 0 : errno
            #else
            return Darwin.rename(from, to) == 0 ? 0 : errno
            #endif
        })
    }

    public convenience init(destination: String) throws {
        try self.init(destination: destination, renames: .system)
    }

    init(destination: String, renames: Renames) throws {
        self.renames = renames
        let trimmed = destination.hasSuffix("/") && destination.count > 1 ? String(destination.dropLast()) : destination
        self.destination = trimmed
        // Split at the last slash byte: a Character would join a combining mark after the slash to it.
        let (directory, base) = trimmed.folderAndName
        var template = Array("\(directory.isEmpty ? "/" : directory)/.\(base).tmp-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw FileError(path: directory, operation: "create a staging directory in", errno: errno)
        }
        stagingPath = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        parent = directory.isEmpty ? "/" : directory
        stagingPrefix = ".\(base).tmp-"
        lockDescriptor = open(stagingPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if lockDescriptor >= 0 { WorkingFiles.lock(lockDescriptor) }
        // Killed, this run leaves the staging directory: the helper removes it then (`LeftoverWatch`).
        LeftoverWatch.watch(stagingPath)
        let marker = stagingPrefix
        WorkingFiles.removeLeftovers(in: parent) { name in
            name.utf8.count == marker.utf8.count + 6 && WorkingFiles.hasRandomSuffix(name, after: marker, count: 6)
        }
    }

    deinit {
        if !committed { Self.removeTree(stagingPath) }
        if lockDescriptor >= 0 { close(lockDescriptor) }
    }

    /// The path of `name` inside the staging directory.
    public func path(for name: String) -> String { stagingPath + "/" + name }

    /// Moves the staging directory to the destination in one step. An existing destination directory whose
    /// files all pass `replaceable` is swapped out (`renameat2(RENAME_EXCHANGE)`) and removed: readers see the
    /// old output or the new one, never none. Where the file system cannot exchange (EINVAL, ENOSYS), the old
    /// output is renamed aside first and put back if the new one cannot take its place; any other failure
    /// leaves the old output as it was.
    public func commit(replaceable: (String) -> Bool) throws {
        // mkdtemp made the staging directory 0700; the output gets the mode mkdir would give it.
        chmod(stagingPath, FileCreationMask.applied(to: 0o777))
        var status = stat()
        if lstat(destination, &status) == 0 {
            guard (status.st_mode & S_IFMT) == S_IFDIR else {
                throw FileError(path: destination, operation: "replace", errno: ENOTDIR, detail: "it exists and is not a directory; choose another output path")
            }
            let names = Self.names(in: destination)
            if let foreign = names.first(where: { !replaceable($0) }) {
                throw FileError(path: destination, operation: "replace", errno: EEXIST,
                                detail: "it holds \(foreign), which this command did not write; choose an empty or new output directory")
            }
            let exchanged = renames.exchange(stagingPath, destination)
            if exchanged == 0 {
                committed = true
                Self.removeTree(stagingPath)  // now the previous output
                return
            }
            guard exchanged == EINVAL || exchanged == ENOSYS else {
                throw FileError(path: destination, operation: "swap the finished output into", errno: exchanged)
            }
            // No exchange on this file system: a moment without an output, but the old one is kept until the new
            // one has its name. The aside name is a staging directory's, so a run killed in between leaves
            // nothing that the next run does not remove.
            let aside = parent + "/" + stagingPrefix + WorkingFiles.randomSuffix(count: 6)
            LeftoverWatch.watch(aside)
            let movedAside = renames.rename(destination, aside)
            guard movedAside == 0 else { throw FileError(path: destination, operation: "move aside the previous output", errno: movedAside) }
            let renamed = renames.rename(stagingPath, destination)
            guard renamed == 0 else {
                _ = renames.rename(aside, destination)
                throw FileError(path: destination, operation: "rename the finished output to", errno: renamed)
            }
            committed = true
            Self.removeTree(aside)
            return
        }
        let renamed = renames.rename(stagingPath, destination)
        guard renamed == 0 else { throw FileError(path: destination, operation: "rename the finished output to", errno: renamed) }
        committed = true
    }

    static func names(in path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Removes a staging directory and the files in it (it holds only files this process wrote).
    static func removeTree(_ path: String) {
        for name in names(in: path) {
            let child = path + "/" + name
            var status = stat()
            if lstat(child, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR { removeTree(child) } else { unlink(child) }
        }
        rmdir(path)
    }
}
