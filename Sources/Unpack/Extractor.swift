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
import LibzipWrapper
import ZlibWrapper

/// Extracts an APK's entries into a directory with libzip (`apkpatch unpack`).
///
/// The archive is validated first (`APKArchive`: names, structure, limits), then extracted into a fresh
/// temporary directory beside the destination which is renamed into place only when every entry was written
/// and checked: a failure leaves no partial output.
public struct Extractor {
    public let archive: APKArchive

    /// Whether a directory's file system folds case (nil: cannot be told). Tests stand in a case-insensitive one.
    package var foldsCase: (String) -> Bool? = CaseInsensitiveNames.isCaseInsensitive(directory:)

    public init(archive: APKArchive) { self.archive = archive }

    /// What was extracted.
    public struct Summary: Sendable {
        public var files = 0
        public var directories = 0
        public var bytes: Int64 = 0
    }

    /// Extracts every entry (or those whose names `include` accepts) into `directory`, which must not exist
    /// or be empty.
    @discardableResult
    /// `finishing` runs on the staging directory after every entry is written and before it is renamed into
    /// place (e.g. to decode binary XML), so its output is part of the all-or-nothing result.
    public func extract(to directory: String, include: (String) -> Bool = { _ in true },
                        finishing: (String) throws -> Void = { _ in }) throws -> Summary {
        let fm = FileManager.default
        if let kind = FileKind(atPath: directory) {
            guard kind == .directory, (try? fm.contentsOfDirectory(atPath: directory))?.isEmpty == true else {
                throw UnpackError.outputExists(path: directory)
            }
            try? fm.removeItem(atPath: directory)
        }
        let destination = URL(fileURLWithPath: directory).standardizedFileURL
        let selected = archive.entries.filter { include($0.name) }
        try Self.checkPaths(of: selected, archive: archive.label)
        try fm.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        // A hidden staging directory beside the destination, removed if extraction fails; one a killed unpack
        // left is removed by the next unpack to the same destination (OutputDirectory).
        let output = try OutputDirectory(destination: destination.path)
        let staging = URL(fileURLWithPath: output.stagingPath)
        // Two entries whose names differ only in case are one file where case is folded (macOS, Windows, exFAT):
        // the second would silently overwrite the first, and a build from the folder would lose an entry. The
        // staging directory is asked, not the platform: its file system decides, and casefold is per folder.
        if foldsCase(output.stagingPath) == true, let collision = CaseInsensitiveNames.firstCollision(in: selected.lazy.map(\.name)) {
            throw UnpackError.namesDifferOnlyInCase(path: archive.label, first: collision.first, second: collision.second,
                                                    components: (collision.firstComponent, collision.secondComponent), directory: directory)
        }
        // The staging path is longer than the destination's, so what fits there fits after the rename.
        if let longest = selected.max(by: { $0.nameBytes.count < $1.nameBytes.count }),
           output.stagingPath.utf8.count + 1 + longest.nameBytes.count >= Int(PATH_MAX) {
            throw UnpackError.limitExceeded(path: archive.label, reason: "entry \(longest.name.debugQuoted) is \(longest.nameBytes.count) bytes long: extracted into \(directory), its path would be longer than the system allows (\(Int(PATH_MAX) - 1) bytes)")
        }

        // libzip's consistency check (`ZIP_CHECKCONS`) refuses records Android reads (a local header whose method
        // is not the central directory's, ZIP64 fields that fit standard ones, an extra field that runs past its
        // central record): such an archive is extracted by APKArchive's own reader, which checks each entry's
        // inflation, size and CRC-32 as libzip does. APKArchive has refused what Android refuses.
        var libzip: LibzipArchive?
        var indexByName: [[UInt8]: Int] = [:]
        if !archive.entries.contains(where: \.hasNonstandardRecords), let opened = try? LibzipArchive(path: archive.label) {
            libzip = opened
            for index in 0..<opened.entryCount {
                if let name = opened.name(at: index) { indexByName[name] = index }
            }
        }
        var summary = Summary()
        for entry in selected {
            let target = staging.appendingPathComponent(entry.name)
            // EntryName.problem has already refused traversal; this is a second, independent guard. By bytes:
            // Characters would join a name's leading combining mark to the slash and refuse the name.
            guard target.standardizedFileURL.path.javaHasPrefix(staging.path + "/") else {
                throw UnpackError.unsafeEntryName(path: archive.label, name: entry.name, reason: "it resolves outside the output directory")
            }
            if entry.isDirectory {
                try fm.createDirectory(at: target, withIntermediateDirectories: true)
                summary.directories += 1
                continue
            }
            try fm.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            let output = try OutputFile(destination: target.path)
            // A deflated entry goes through APKArchive's reader, which also requires the deflate stream to end
            // where the declared size does (libzip stops reading at the size, and would extract a stream that
            // never ends).
            if let libzip, entry.method == .stored {
                guard let index = indexByName[entry.nameBytes] else {
                    throw UnpackError.malformedArchive(path: archive.label, reason: "libzip does not list entry \(entry.name.debugQuoted)")
                }
                do {
                    try libzip.read(entryAt: index, limit: entry.uncompressedSize) { try output.write($0) }
                } catch let error as LibzipError {
                    // The CRC-32 the stored data has, for the message: computed only when libzip found it wrong.
                    var crc = CRC32()
                    if error.problem == .crcMismatch { try? archive.source.withBytes(in: entry.dataRange) { crc.update($0) } }
                    throw UnpackError.corruptEntry(path: archive.label, entry: entry.name, reason: Self.reason(error, entry: entry, crc: crc.value))
                }
            } else {
                try archive.withUncompressedChunks(of: entry) { try output.write($0) }
            }
            guard output.position == entry.uncompressedSize else {
                throw UnpackError.corruptEntry(path: archive.label, entry: entry.name,
                                               reason: "inflated to \(output.position) bytes, the archive declares \(entry.uncompressedSize)")
            }
            try output.commit()
            summary.files += 1
            summary.bytes += entry.uncompressedSize
        }
        try finishing(staging.path)
        do {
            // The destination is absent or an empty directory (checked above), which nothing needs to replace.
            try output.commit(replaceable: { _ in false })
        } catch {
            throw UnpackError.extractionFailed(path: directory, reason: "\(error)")
        }
        return summary
    }

    /// What libzip's failure to read `entry` means, in the words `APKArchive`'s reader uses for the same damage
    /// (`crc`: the CRC-32 of the data read, for a mismatch).
    static func reason(_ error: LibzipError, entry: ZipEntry, crc: UInt32) -> String {
        func hex(_ value: UInt32) -> String {
            let digits = String(value, radix: 16)
            return "0x" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
        }
        switch error.problem {
        case .crcMismatch:
            return "CRC-32 is \(hex(crc)), the archive says \(hex(entry.crc32))"
        case .compressedDataInvalid:
            return "its compressed data does not inflate"
        case .truncated:
            return "its data ends before the \(entry.uncompressedSize) bytes the archive declares"
        case .longerThanDeclared(let limit):
            return "it holds more than the \(limit) bytes the archive declares"
        case .encrypted:
            return "it is encrypted, which Android does not read in an APK"
        case .compressionNotSupported:
            return "its compression method (\(entry.method.rawValue)) is neither stored nor deflated, the two Android reads"
        case .inconsistent:
            return "its local header does not match its central directory record"
        case .readFailed(let reason):
            return "reading its data failed (\(reason))"
        case .other(let message):
            return "libzip could not read it (\(message))"
        }
    }

    /// Refuses, before anything is written, names that cannot all become files in one directory: a component
    /// longer than a file name can be (NAME_MAX), and a file that another entry needs as a folder ("a/b" and
    /// "a/b/c", or the folder entry "a/b/"). Android reads such an APK, whose names are never paths there.
    static func checkPaths(of entries: [ZipEntry], archive: String) throws {
        let slash = UInt8(ascii: "/")
        for entry in entries {
            if let problem = EntryName.fileNameProblem(with: entry.nameBytes) {
                throw UnpackError.unsafeEntryName(path: archive, name: entry.name, reason: problem)
            }
        }
        // Sorted, the names inside a folder "F/" follow F's own lower bound: one binary search per file, no set
        // of every folder prefix (a deep name has thousands).
        let names = entries.map(\.nameBytes).sorted { $0.lexicographicallyPrecedes($1) }
        for entry in entries where !entry.isDirectory {
            let folder = entry.nameBytes + [slash]
            var low = 0, high = names.count
            while low < high {
                let middle = (low + high) / 2
                if names[middle].lexicographicallyPrecedes(folder) { low = middle + 1 } else { high = middle }
            }
            if low < names.count, names[low].starts(with: folder) {
                let inside = String(decoding: names[low], as: UTF8.self)
                throw UnpackError.unsafeEntryName(path: archive, name: entry.name,
                                                  reason: "it is a file, and the entry \(inside.debugQuoted) needs a folder of that name")
            }
        }
    }
}
