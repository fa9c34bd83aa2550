#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import APKCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension PatchDirectory {
    /// The folder of a patch directory whose files patch one split of a split APK set rather than the base:
    /// `splits/<split-name>/…` mirrors that split (with its own optional `apkpatch.yml`).
    public static let splitsFolder = "splits"

    /// A patch directory made of `files` (entry name → file) and `spec`, rooted at `root` for messages.
    public init(root: String, spec: PatchSpec, files: PatchFiles) {
        self.root = root
        self.spec = spec
        self.files = files
    }

    /// For a split APK set: the base's patch (everything but `splits/`) and each split's, by split name.
    /// A split's `apkpatch.yml` is its spec; a split without one gets an empty spec.
    public func splitPatches() throws -> (base: PatchDirectory, splits: [String: PatchDirectory]) {
        let prefix = Self.splitsFolder + "/"
        var baseFiles = PatchFiles()
        var splitFiles: [String: PatchFiles] = [:]
        for (name, file) in files {
            // By bytes: a combining mark after a slash joins it in a Character, and the name is an entry name.
            guard name.javaHasPrefix(prefix) else { baseFiles[name] = file; continue }
            let rest = Substring(name.utf8.dropFirst(prefix.utf8.count))
            guard let slash = rest.utf8.firstIndex(of: UInt8(ascii: "/")) else {
                throw OverlayError.unsupportedEdit("\(file.path): files under \(Self.splitsFolder)/ belong in a folder named after the split they patch (\(Self.splitsFolder)/<split-name>/…, e.g. \(Self.splitsFolder)/config.arm64_v8a/lib/arm64-v8a/libfoo.so)")
            }
            splitFiles[String(rest[..<slash]), default: [:]][String(rest[rest.utf8.index(after: slash)...])] = file
        }
        var splits: [String: PatchDirectory] = [:]
        for (split, var files) in splitFiles {
            let root = self.root.appendingPathComponent(prefix + split)
            var spec = PatchSpec()
            if let specFile = files.removeValue(forKey: PatchSpec.fileName) {
                spec = try PatchSpec(yaml: try Self.readSpec(at: specFile.path), path: specFile.path)
            }
            splits[split] = PatchDirectory(root: root, spec: spec, files: files)
        }
        return (PatchDirectory(root: root, spec: spec, files: baseFiles), splits)
    }
}
