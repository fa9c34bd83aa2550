import APKCore
import Align
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
import Repack
import Unpack
import ZlibWrapper

/// Writes a set's new APKs in the form the set came in: a container keeps every other entry byte for byte
/// (bundletool's `toc.pb`, APKMirror's `info.json`, APKPure's OBB files and icon), in the same order and
/// under the same names; a directory or several APK paths give a directory. Nothing is visible at the
/// destination before everything is written (`OutputFile`, `OutputDirectory`).
public enum SetWriter {
    /// Version fields to write into an `.xapk`'s `manifest.json` when the base's changed.
    public struct VersionUpdate: Sendable, Equatable {
        public var versionCode: Int64
        public var versionName: String?
        public init(versionCode: Int64, versionName: String?) { self.versionCode = versionCode; self.versionName = versionName }
    }

    /// The file name of `member` in a directory output.
    public static func fileName(of member: APKSet.Member) -> String { member.name.lastPathComponent }

    /// The files of a directory output (APKs and their v4 signatures): what an earlier output may hold to be
    /// replaced. Named as a folder's APKs are taken (".apk" without regard to ASCII case, by bytes), so that an
    /// output of "de.Apk" or "x\u{600}.apk" can be replaced by the next.
    public static func isDirectoryOutputFile(_ name: String) -> Bool {
        name.hasSuffixIgnoringASCIICase(".apk") || name.hasSuffixIgnoringASCIICase(".apk.idsig")
    }

    /// Refuses two members that would have one file name in a directory output.
    public static func checkFileNames(_ set: APKSet) throws {
        guard !set.form.isContainer else { return }
        var seen: [String: String] = [:]
        for member in set.members {
            let name = fileName(of: member)
            if let other = seen[name] { throw APKSetError.duplicateFileName(name, [other, member.label]) }
            seen[name] = member.label
        }
    }

    /// Writes the container `set.container` with each APK's entry (`set.allAPKs`) replaced by the APK at `apkPaths[i]`
    /// (stored: Android reads APKs in place, and bundletool stores them), into `destination`. Returns its size.
    @discardableResult
    public static func writeContainer(_ set: APKSet, apkPaths: [String], to destination: String,
                                      versionUpdate: VersionUpdate? = nil) throws -> Int64 {
        guard let container = set.container else { preconditionFailure("writeContainer needs a container set") }
        // By the entries' bytes: keyed by String, one of two canonically equivalent names would get the other's APK.
        var replacement: [ExactName: String] = [:]
        for (member, path) in zip(set.allAPKs, apkPaths) { replacement[ExactName(member.name)] = path }
        var items: [OutputEntry] = []
        for entry in container.zip.entriesInFileOrder {
            if let path = replacement[ExactName(entry.name)] {
                items.append(try storedEntry(like: entry, contentsOf: path))
            } else if entry.name == "manifest.json" && set.form == .xapk, let versionUpdate,
                      let updated = try updatedXAPKManifest(container.uncompressedData(of: entry), versionUpdate) {
                items.append(try OutputEntry.making(name: entry.name, content: updated, method: entry.method, template: entry,
                                                    timestamp: DOSTimestamp(date: entry.lastModifiedDate, time: entry.lastModifiedTime)))
            } else {
                items.append(try OutputEntry.copying(entry, from: container.source))
            }
        }
        let alignment = AlignmentPolicy(defaultAlignment: 4, nativeLibraryAlignment: nil)
        return try Repacker.write(items, to: destination, alignment: alignment, comment: container.zip.endOfCentralDirectory.comment).size
    }

    /// Writes a directory output of the APK files at `apkPaths` (one per member, written elsewhere): each is
    /// hard-linked, or copied where the file system cannot link, into a staging directory that replaces
    /// `destination` at once. Returns the total size.
    @discardableResult
    public static func writeDirectory(_ set: APKSet, apkPaths: [String], to destination: String) throws -> Int64 {
        let staging = try OutputDirectory(destination: destination)
        var size: Int64 = 0
        for (member, path) in zip(set.members, apkPaths) {
            let target = staging.path(for: fileName(of: member))
            if link(path, target) != 0 {
                do { try FileManager.default.copyItem(atPath: path, toPath: target) } catch {
                    throw FileError(path: target, operation: "copy \(path) to", errno: EIO, detail: "\(error)")
                }
            }
            var status = stat()
            guard stat(target, &status) == 0 else { throw FileError(path: target, operation: "read the size of", errno: errno) }
            size += Int64(status.st_size)
        }
        try staging.commit(replaceable: isDirectoryOutputFile)
        return size
    }

    /// A stored entry for the APK file at `path`, keeping `template`'s name, time, attributes and comment.
    static func storedEntry(like template: ZipEntry, contentsOf path: String) throws -> OutputEntry {
        let data = try MappedFile(path: path)
        var crc = CRC32()
        try data.stream(0..<data.count, chunkSize: 1 << 20) { crc.update($0) }
        var entry = ZipEntry(nameBytes: template.nameBytes, method: .stored, crc32: crc.value, compressedSize: data.count,
                             uncompressedSize: data.count, lastModifiedTime: template.lastModifiedTime, lastModifiedDate: template.lastModifiedDate)
        entry.versionMadeBy = template.versionMadeBy
        entry.flags = template.flags & ZipFlags.utf8Names
        entry.internalAttributes = template.internalAttributes
        entry.externalAttributes = template.externalAttributes
        entry.comment = template.comment
        return OutputEntry(entry: entry, data: data)
    }

    /// APKPure's `manifest.json` with `version_code` and `version_name` set (each keeping its JSON type), or
    /// nil when they already hold those values.
    static func updatedXAPKManifest(_ bytes: [UInt8], _ update: VersionUpdate) throws -> [UInt8]? {
        guard var object = JSONValue.object(from: bytes) else {
            throw APKSetError.unreadable("manifest.json", "not a JSON object; the .xapk's version fields cannot be updated")
        }
        var changed = false
        switch object["version_code"] {
        case .string(let text)? where text != String(update.versionCode):
            object["version_code"] = .string(String(update.versionCode)); changed = true
        case .integer(let number)? where number != update.versionCode:
            object["version_code"] = .integer(Int64(update.versionCode)); changed = true
        case .number(let number)? where number != Double(update.versionCode):
            object["version_code"] = .integer(Int64(update.versionCode)); changed = true
        case nil:
            object["version_code"] = .string(String(update.versionCode)); changed = true
        default: break
        }
        if let name = update.versionName, object["version_name"]?.string != name {
            object["version_name"] = .string(name); changed = true
        }
        guard changed else { return nil }
        return try JSONValue.encode(object)
    }
}
