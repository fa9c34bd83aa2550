import APKCore
import Glibc
import Dispatch
import Repack
import Unpack

/// Applies a patch directory to an input APK, producing the list of entries to write (`OverlayPlan`).
///
/// Input entries keep their file order: unchanged ones are raw copies, replaced ones are re-compressed with
/// their original method, deleted ones (`delete:` globs) vanish, and the old JAR signature files are dropped
/// because the output is re-signed (an APK Signing Block disappears with the rewrite). New files follow, in
/// name order, compressed by `CompressionPolicy`.
public struct Overlay {
    public let archive: APKArchive
    public let patch: PatchDirectory
    public var compressionLevel: Int32 = 6
    /// Rewrites of the manifest and resources (the binary-XML stage): by default `ResourceContentEditor`,
    /// which compiles text XML, applies `manifest:` shortcuts and string overrides.
    public var contentEditor: (any ContentEditor)?
    /// Moves replaced entries after the unchanged ones (watch mode): then an edit changes only the tail of
    /// the output, and the signer reuses the digests of every 1 MiB chunk before it.
    public var placesPatchedEntriesLast = false
    /// Notes patch files whose names match an entry only up to case (`caseNotes`); one pass over every entry name.
    public var notesNameCase = true

    public init(archive: APKArchive, patch: PatchDirectory) {
        self.archive = archive
        self.patch = patch
        contentEditor = ResourceContentEditor()
    }

    /// Builds the plan. `cache` lets watch mode reuse compressed bytes of patch files that did not change.
    public func plan(cache: CompressionCache? = nil) throws -> OverlayPlan {
        let spec = patch.spec
        let policy = CompressionPolicy(store: spec.store, deflate: spec.deflate)
        var summary = OverlaySummary()
        var slots: [Slot] = []
        var tail: [Slot] = []  // replaced entries, when they go last
        var kept: [ZipEntry] = []
        var seen = Set<ExactName>()  // by bytes: "caf\u{E9}" and "cafe\u{301}" are two entries
        var jarManifest: OutputEntry?
        for entry in archive.zip.entriesInFileOrder {
            seen.insert(ExactName(entry.name))
            if JarSignatureFiles.isSignatureFile(entry.name) {
                summary.droppedSignatureFiles.append(entry.name)
                if entry.name == "META-INF/MANIFEST.MF" { jarManifest = try OutputEntry.copying(entry, from: archive.source) }
                continue
            }
            if let file = patch.files[entry.name] {
                if placesPatchedEntriesLast { tail.append(.replace(entry, file)) } else { slots.append(.replace(entry, file)) }
                summary.replaced.append(entry.name)
                kept.append(entry)
                continue
            }
            if spec.delete.contains(where: { $0.matches(entry.name) }) {
                summary.deleted.append(entry.name)
                continue
            }
            slots.append(.keep(entry))
            kept.append(entry)
        }
        let timestamp = DOSTimestamp.newest(in: kept)
        for name in patch.files.keys where !seen.contains(ExactName(name)) {
            if JarSignatureFiles.isSignatureFile(name) {
                throw OverlayError.unsupportedEdit("patch file \(name) would add a JAR signature file; apkpatch signs the output itself, remove it from the patch directory")
            }
            if !placesPatchedEntriesLast { slots.append(.add(name, patch.files[name]!)) }
            summary.added.append(name)
        }
        if placesPatchedEntriesLast {
            // Replaced and new entries together, in name order, after everything unchanged.
            for name in patch.files.keys where !seen.contains(ExactName(name)) { tail.append(.add(name, patch.files[name]!)) }
            tail.sort { ExactName($0.name) < ExactName($1.name) }
            slots += tail
        }

        // Read and compress changed files on both cores; unchanged entries cost nothing here.
        let results = Parallel.Slots<Result<OutputEntry, any Error>?>(count: slots.count, repeating: nil)
        let work = slots.indices.filter { if case .keep = slots[$0] { return false } else { return true } }
        let level = compressionLevel
        let slotList = slots
        let editor = contentEditor
        try Parallel.forEach(work.count, concurrency: work.count) { i in
            let index = work[i]
            results[index] = Result {
                switch slotList[index] {
                case .keep: fatalError("unchanged entries are not in the work list")
                case .replace(let entry, let file):
                    let method = policy.method(for: entry.name, original: entry.method)
                    return try Self.makeEntry(name: entry.name, file: file, method: method, template: entry, timestamp: timestamp, level: level,
                                              cache: cache, editor: editor)
                case .add(let name, let file):
                    return try Self.makeEntry(name: name, file: file, method: policy.method(for: name, original: nil), template: nil, timestamp: timestamp,
                                              level: level, cache: cache, editor: editor)
                }
            }
        }
        var entries: [OutputEntry] = []
        entries.reserveCapacity(slots.count)
        for (index, slot) in slots.enumerated() {
            if case .keep(let entry) = slot {
                entries.append(try OutputEntry.copying(entry, from: archive.source))
            } else {
                entries.append(try results[index]!.get())
            }
        }
        if notesNameCase {
            summary.notes += Self.caseNotes(entries: archive.entries, patch: patch)
            summary.notes += Self.normalizationNotes(entries: archive.entries, patch: patch)
        }
        if let contentEditor {
            entries = try contentEditor.edit(entries: entries, archive: archive, patch: patch, timestamp: timestamp, summary: &summary)
        }
        return OverlayPlan(entries: entries, summary: summary, inputJarManifest: jarManifest)
    }

    private enum Slot {
        case keep(ZipEntry)
        case replace(ZipEntry, PatchDirectory.PatchFile)
        case add(String, PatchDirectory.PatchFile)

        var name: String {
            switch self {
            case .keep(let entry), .replace(let entry, _): return entry.name
            case .add(let name, _): return name
            }
        }
    }

    static func makeEntry(name: String, file: PatchDirectory.PatchFile, method: CompressionMethod, template: ZipEntry?,
                          timestamp: DOSTimestamp, level: Int32, cache: CompressionCache?, editor: (any ContentEditor)? = nil) throws -> OutputEntry {
        let key = CompressionCache.Key(name: name, file: file, method: method, template: template)
        if let cached = cache?[key] { return cached }
        let made: OutputEntry
        if file.size >= OutputEntry.streamingThreshold {
            // A large asset (video, model, .so) is streamed through temporary files, never held in memory.
            do {
                made = try OutputEntry.making(name: name, contentsOf: file.path, method: method, template: template, timestamp: timestamp,
                                              compressionLevel: level)
            } catch {
                // Gone since the scan, it is a save in flight rather than a file that cannot be read.
                var status = stat()
                if lstat(file.path, &status) != 0 && PatchDirectory.isVanished(errno) { throw OverlayError.vanished(path: file.path) }
                throw error
            }
        } else {
            let content = try PatchDirectory.read(file)
            if let editor, editor.makesEntry(forPatchFileAt: name, inAPK: template != nil, content: content) {
                // The editor replaces or drops this entry: deflate's stored blocks keep it a valid entry of its
                // method without compressing bytes nobody will write (a decoded app's thousands of text files).
                return try OutputEntry.making(name: name, content: content, method: method, template: template, timestamp: timestamp, compressionLevel: 0)
            }
            made = try OutputEntry.making(name: name, content: content, method: method, template: template, timestamp: timestamp, compressionLevel: level)
        }
        cache?[key] = made
        return made
    }
}

/// A hook for edits that rewrite entries' contents (binary manifest, resources.arsc).
public protocol ContentEditor: Sendable {
    func edit(entries: [OutputEntry], archive: APKArchive, patch: PatchDirectory, timestamp: DOSTimestamp,
              summary: inout OverlaySummary) throws -> [OutputEntry]

    /// Whether `edit` makes the entry of the patch file at `path` itself, whatever it is given for it: text XML
    /// it compiles, a values file it applies to resources.arsc and drops. The overlay then does not compress
    /// the file's bytes. `inAPK`: the APK has an entry of that name.
    func makesEntry(forPatchFileAt path: String, inAPK: Bool, content: [UInt8]) -> Bool
}

extension ContentEditor {
    public func makesEntry(forPatchFileAt path: String, inAPK: Bool, content: [UInt8]) -> Bool { false }
}

/// What an overlay will write.
public struct OverlayPlan: Sendable {
    public var entries: [OutputEntry]
    public var summary: OverlaySummary
    /// The input's `META-INF/MANIFEST.MF`, not among `entries`: a signer keeps its main section, as apksig does.
    public var inputJarManifest: OutputEntry?
}

/// Names of the entries an overlay touched.
public struct OverlaySummary: Sendable, Equatable {
    public var replaced: [String] = []
    public var added: [String] = []
    public var deleted: [String] = []
    public var droppedSignatureFiles: [String] = []
    public var edited: [String] = []
    /// What the user should know about the edits (e.g. certificate pins removed, a setting Android ignores).
    public var notes: [String] = []
    public init() {}
}

/// Which compression a new or replaced entry gets.
public struct CompressionPolicy: Sendable {
    public var store: [Glob]
    public var deflate: [Glob]

    /// Extensions aapt leaves uncompressed because the data already is (aapt's `kNoCompressExt`, plus webp/webm).
    public static let alreadyCompressed: Set<String> = [
        "jpg", "jpeg", "png", "gif", "webp", "wav", "mp2", "mp3", "ogg", "aac", "mpg", "mpeg", "mid", "midi",
        "smf", "jet", "rtttl", "imy", "xmf", "mp4", "m4a", "m4v", "3gp", "3gpp", "3g2", "3gpp2", "amr", "awb",
        "wma", "wmv", "webm", "mkv", "zip", "jar", "apk", "gz", "xz", "bz2", "7z", "br", "woff2",
    ]

    public init(store: [Glob] = [], deflate: [Glob] = []) { self.store = store; self.deflate = deflate }

    /// Replaced entries keep `original`; new ones are deflated unless they are already compressed or must be
    /// stored for Android (`resources.arsc` for targetSdk ≥ 30, `.so` for extractNativeLibs=false). Explicit
    /// `store:`/`deflate:` globs win over both.
    public func method(for name: String, original: CompressionMethod?) -> CompressionMethod {
        if store.contains(where: { $0.matches(name) }) { return .stored }
        if deflate.contains(where: { $0.matches(name) }) { return .deflated }
        if let original { return original }
        if Self.mustBeStored(name) { return .stored }
        let base = name.split(separator: "/").last.map(String.init) ?? name
        if let dot = base.lastIndex(of: "."), Self.alreadyCompressed.contains(base[base.index(after: dot)...].lowercased()) {
            return .stored
        }
        return .deflated
    }

    /// Entries Android needs uncompressed.
    public static func mustBeStored(_ name: String) -> Bool {
        name == "resources.arsc" || (name.javaHasPrefix("lib/") && name.javaHasSuffix(".so"))  // by bytes, as Android
    }
}

/// Compressed bytes of patch files, keyed by path, size, mtime and method: watch mode recompresses only
/// what changed.
public final class CompressionCache: @unchecked Sendable {
    public struct Key: Hashable, Sendable {
        /// By bytes: two patch files whose names String's == joins (same size and mtime) are two entries.
        let name: ExactName
        let file: PatchDirectory.PatchFile
        let method: CompressionMethod
        let templateOffset: Int64?
        init(name: String, file: PatchDirectory.PatchFile, method: CompressionMethod, template: ZipEntry?) {
            self.name = ExactName(name); self.file = file; self.method = method; self.templateOffset = template?.localHeaderOffset
        }
    }
    private var storage: [Key: OutputEntry] = [:]
    private let lock = Lock()
    public init() {}
    public subscript(key: Key) -> OutputEntry? {
        get { lock.withLock { storage[key] } }
        set { lock.withLock { storage[key] = newValue } }
    }
}

