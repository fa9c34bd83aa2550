#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Entry names that a case-insensitive file system cannot keep apart, and whether a directory is on one.
///
/// Android compares entry names byte for byte, so `res/a.xml` and `res/A.xml` are two entries (obfuscators make
/// such pairs). macOS's default APFS, Windows' NTFS, FAT and exFAT volumes, and ext4 or tmpfs folders with
/// casefold look names up without case: written there as files, the second entry overwrites the first, and the
/// folder `Assets/` is the folder `assets/`, so a patch directory or an unpacked copy stops describing the APK.
/// On a case-sensitive file system the same names are harmless.
package enum CaseInsensitiveNames {
    /// Two names that differ, yet name the same path where case is folded: equal in every component up to the
    /// first that differs only in case (or Unicode normalization, which APFS also ignores).
    package struct Collision: Sendable, Equatable {
        /// The earlier name, in the order given.
        package var first: String
        /// The later name, which would overwrite `first` or share its folder.
        package var second: String
        /// The components that differ only in case ("a.xml" and "A.xml", or the folders "assets" and "Assets").
        package var firstComponent: String
        package var secondComponent: String
    }

    /// The first pair of `names` that a case-insensitive file system would write to one path (a file over
    /// another, or two spellings of one folder); nil when there is none. Names are walked by their case-folded
    /// components, one dictionary look-up per component: no set of every folder prefix (a deep name has
    /// thousands of components). Folder entries ("res/") count by their components.
    package static func firstCollision(in names: some Sequence<String>) -> Collision? {
        var nodes: [FoldedComponent: ComponentNode] = [:]
        for name in names {
            var parent = 0
            for component in name.split(separator: "/") {
                let key = FoldedComponent(parent: parent, folded: component.lowercased())
                if let node = nodes[key] {
                    // Compared as bytes: Swift's String equality ignores Unicode normalization (as APFS does), so
                    // the lowercased key already joins NFC and NFD spellings; differing bytes here mean case or form.
                    if !node.exact.utf8.elementsEqual(component.utf8) {
                        return Collision(first: node.name, second: name, firstComponent: String(node.exact), secondComponent: String(component))
                    }
                    parent = node.id
                } else {
                    let id = nodes.count + 1
                    nodes[key] = ComponentNode(exact: component, id: id, name: name)
                    parent = id
                }
            }
        }
        return nil
    }

    private struct FoldedComponent: Hashable { var parent: Int; var folded: String }
    private struct ComponentNode { var exact: Substring; var id: Int; var name: String }

    /// A name, or one of its folders, that an entry spells differently only in ASCII letters' case.
    package struct Variant: Sendable, Equatable {
        /// One of the names looked for.
        package var name: String
        /// The entry that spells it (or its folder) otherwise.
        package var entry: String
        /// The leading part of `name` that the entry spells otherwise ("assets" for the folder, or all of `name`).
        package var namePrefix: String
        package var entryPrefix: String
        /// `name` is an entry too, and `entry` another whose whole name differs from it only in case.
        package var nameIsEntry: Bool
    }

    /// For each of a few `names`, the first entry among `entries` that spells it, or the shallowest of its folders
    /// that no entry spells exactly, differently in ASCII letters' case only; for a name that is itself an entry,
    /// the first other entry whose whole name differs from it only so. One pass over the entries' bytes with a
    /// hash of their case-folded prefixes and no allocation per entry: cheap enough for every build of watch mode
    /// (unlike `Index`, which folds Unicode case and costs a dictionary entry per component of every name).
    package static func asciiCaseVariants(of names: [String], among entries: [[UInt8]]) -> [Variant] {
        struct Prefix { var bytes: [UInt8]; var isWhole: Bool; var exact = false; var variant: Int? }
        var prefixes: [Prefix] = []
        var byExact: [[UInt8]: Int] = [:]
        var byHash: [UInt64: [Int]] = [:]
        var chains: [[Int]] = []  // per name, its prefixes shallowest first
        let slash = UInt8(ascii: "/")
        func register(_ bytes: [UInt8], isWhole: Bool, hash: UInt64) -> Int {
            let key = bytes + (isWhole ? [0] : [slash])
            if let index = byExact[key] { return index }
            prefixes.append(Prefix(bytes: bytes, isWhole: isWhole))
            byExact[key] = prefixes.count - 1
            byHash[hash ^ (isWhole ? 1 : 0), default: []].append(prefixes.count - 1)
            return prefixes.count - 1
        }
        for name in names {
            let bytes = Array(name.utf8)
            var chain: [Int] = []
            var hash = foldHashSeed
            for (offset, byte) in bytes.enumerated() {
                if byte == slash, offset > 0 {
                    chain.append(register(Array(bytes[..<offset]), isWhole: false, hash: hash))
                }
                hash = foldHash(hash, byte)
            }
            if bytes.last != slash { chain.append(register(bytes, isWhole: true, hash: hash)) }
            chains.append(chain)
        }
        func visit(_ entry: Int, _ bytes: ArraySlice<UInt8>, isWhole: Bool, hash: UInt64) {
            guard let candidates = byHash[hash ^ (isWhole ? 1 : 0)] else { return }
            for index in candidates where prefixes[index].bytes.count == bytes.count {
                let prefix = prefixes[index].bytes
                if prefix.elementsEqual(bytes) { prefixes[index].exact = true; continue }
                if prefixes[index].variant == nil, zip(prefix, bytes).allSatisfy({ $0.asciiLowercased == $1.asciiLowercased }) {
                    prefixes[index].variant = entry
                }
            }
        }
        guard !byHash.isEmpty else { return [] }
        // Only a prefix as long as a registered one can match: look up no other, and hash no byte past the longest.
        let longest = prefixes.map(\.bytes.count).max()!
        var folderLengths = [Bool](repeating: false, count: longest + 1), wholeLengths = folderLengths
        for prefix in prefixes {
            if prefix.isWhole { wholeLengths[prefix.bytes.count] = true } else { folderLengths[prefix.bytes.count] = true }
        }
        for (index, bytes) in entries.enumerated() {
            let end = bytes.withUnsafeBufferPointer { buffer -> UInt64? in
                var hash = foldHashSeed
                for offset in 0..<min(buffer.count, longest + 1) {
                    let byte = buffer[offset]
                    if byte == slash, offset > 0, folderLengths[offset] { visit(index, bytes[..<offset], isWhole: false, hash: hash) }
                    hash = foldHash(hash, byte)
                }
                return buffer.count <= longest && buffer.last != slash && wholeLengths[buffer.count] ? hash : nil
            }
            if let end { visit(index, bytes[...], isWhole: true, hash: end) }
        }
        var variants: [Variant] = []
        for (name, chain) in zip(names, chains) {
            guard let whole = chain.last, prefixes[whole].isWhole else { continue }
            func variant(_ index: Int) -> Variant {
                let entry = entries[prefixes[index].variant!]
                return Variant(name: name, entry: String(decoding: entry, as: UTF8.self),
                               namePrefix: String(decoding: prefixes[index].bytes, as: UTF8.self),
                               entryPrefix: String(decoding: entry[..<prefixes[index].bytes.count], as: UTF8.self),
                               nameIsEntry: prefixes[whole].exact)
            }
            if prefixes[whole].exact {
                if prefixes[whole].variant != nil { variants.append(variant(whole)) }
                continue
            }
            // A new name: the shallowest part no entry has exactly decides; below it nothing can match exactly.
            for index in chain where !prefixes[index].exact {
                if prefixes[index].variant != nil { variants.append(variant(index)) }
                break
            }
        }
        return variants
    }

    private static let foldHashSeed: UInt64 = 0xcbf2_9ce4_8422_2325
    /// FNV-1a over ASCII-case-folded bytes.
    @inline(__always) private static func foldHash(_ hash: UInt64, _ byte: UInt8) -> UInt64 {
        (hash ^ UInt64(byte.asciiLowercased)) &* 0x0100_0000_01b3
    }

    /// Whether names in `directory` are looked up without case: true on a case-insensitive file system (or a
    /// casefold folder), false on a case-sensitive one, nil when it cannot be told (the directory cannot be
    /// read, or holds no name to ask about and nothing can be created in it). A name listed there whose
    /// case-swapped spelling is not listed is looked up by that spelling: found, the lookup folded case. Only when
    /// no listed name has a letter does it create (and remove) an empty `.apkpatch-case-probe-XXXXXX` file.
    /// Existence is the test, not the inode: FUSE file systems (exFAT, NTFS-3G) give one file a new inode number
    /// per name it is looked up by.
    package static func isCaseInsensitive(directory: String) -> Bool? {
        guard let listing = try? DirectoryNames(directory) else { return nil }
        let listed = Set(listing.names)
        if let name = listing.names.first(where: { $0 != swappingCase($0) && !listed.contains(swappingCase($0)) }) {
            return exists(directory.appendingPathComponent(swappingCase(name)))
        }
        var template = Array(directory.appendingPathComponent(".apkpatch-case-probe-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { return nil }
        close(descriptor)
        let probe = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { unlink(probe) }
        return exists(directory.appendingPathComponent(swappingCase(probe.lastPathComponent)))
    }

    /// Whether something is at `path` (nil when the lookup fails for another reason than absence).
    private static func exists(_ path: String) -> Bool? {
        var info = stat()
        if lstat(path, &info) == 0 { return true }
        return errno == ENOENT || errno == ENOTDIR ? false : nil
    }

    /// `name` with every ASCII letter's case swapped ("a.XML" → "A.xml").
    static func swappingCase(_ name: String) -> String {
        String(decoding: name.utf8.map { ($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A ? $0 ^ 0x20 : $0 }, as: UTF8.self)
    }
}
