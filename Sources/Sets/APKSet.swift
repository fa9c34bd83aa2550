import APKCore
import BinaryXML
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

/// A split APK set: the base APK and its splits, as one app.
///
/// Given as a bundletool `.apks`, an APKPure `.xapk`, an APKMirror `.apkm`, a directory of APKs, or several
/// APK paths. A container is read with the rules every input APK gets (`APKArchive`: unsafe names,
/// duplicates, overlapping records, sizes and ratios of a zip bomb), and the APKs in it are never extracted:
/// a stored member is a slice of the container's mapping, a compressed one is inflated (bounded by its
/// declared size, CRC-checked) into an unlinked temporary file that is then mapped.
///
/// Opening a set checks it as the package manager does before anything else happens (`SetConsistency`):
/// exactly one base, one package, one versionCode, unique split names, the feature of every configuration
/// split present.
public struct APKSet: Sendable {
    /// How the set was given; an output keeps the input's form.
    public enum Form: String, Sendable, Codable {
        case apks, xapk, apkm, directory, files
        /// A container file (one ZIP holding the APKs).
        public var isContainer: Bool { self == .apks || self == .xapk || self == .apkm }
    }

    /// One APK of the set.
    public struct Member: Sendable {
        /// The entry name in the container, the file name in a directory, or the path given.
        public let name: String
        /// The file the APK was read from (directory and files forms).
        public let path: String?
        public let archive: APKArchive
        public let manifest: SplitManifest
        /// A bundletool standalone APK (`standalones/`), not the base or a split.
        public internal(set) var isStandalone = false
        /// An asset pack's APK (`asset-slices/` of a bundletool `.apks`): a split of the app holding assets.
        public internal(set) var isAssetSlice = false
        /// The name for messages: the container and the entry, or the path.
        public var label: String { archive.label }
        public var isBase: Bool { manifest.isBase }
        /// `base` for the base APK, else the split's name (the patch directory's `splits/<name>/`).
        public var splitName: String { manifest.splitName ?? "base" }
    }

    public let form: Form
    /// The path(s) given, for messages.
    public let label: String
    /// The container (`.apks`, `.xapk`, `.apkm`), whose other entries (toc.pb, manifest.json, info.json,
    /// icons, OBB files) an output keeps.
    public let container: APKArchive?
    /// The base first, then the splits by name. For a bundletool `.apks` with several split variants: the
    /// one of the lowest SDK version.
    public let members: [Member]
    /// bundletool's other split variants (`splits/base-master_2.apk`, …: the same splits again for devices
    /// from a higher SDK version, e.g. with uncompressed native libraries from API 23), each base first, in the
    /// order of their SDK versions. Each is the same app: the same package, versionCode and signer.
    public let otherSplitVariants: [[Member]]
    /// bundletool's standalone APKs (`standalones/` of a `.apks`), by name: complete APKs, each the base with
    /// the splits for one ABI and density fused in, for devices below Android 5.0 (API 21), which install one
    /// APK instead of the splits. Each is one more APK of the same app: same package, versionCode and signer.
    public let standalones: [Member]
    /// bundletool's asset packs' APKs (`asset-slices/` of a `.apks`), by name: splits of the same app
    /// (package, versionCode, signer) that `install-apks` installs with the splits when their pack is delivered
    /// at install time (`toc`'s `assetSlices`).
    public let assetSlices: [Member]
    /// bundletool's table of contents (`toc.pb`), read when the set has standalone APKs, asset packs or several
    /// split variants: which of them a device gets.
    public let toc: BundletoolTOC?

    /// Every APK the set holds: the split APKs (`members`, then the other split variants'), the standalones,
    /// then the asset packs' APKs.
    public var allAPKs: [Member] { members + otherSplitVariants.joined() + standalones + assetSlices }
    /// Where each split variant's APKs are in `allAPKs` (`members` first).
    public var splitVariantRanges: [Range<Int>] {
        var start = 0
        return ([members] + otherSplitVariants).map { variant in
            defer { start += variant.count }
            return start..<(start + variant.count)
        }
    }
    /// Where the standalones are in `allAPKs`.
    public var standaloneRange: Range<Int> { (splitVariantRanges.last?.upperBound ?? 0)..<(splitVariantRanges.last?.upperBound ?? 0) + standalones.count }
    /// Whether `slice` (one of `assetSlices`) belongs to a pack delivered at install time, per `toc`.
    public func isInstallTime(_ slice: Member) -> Bool {
        toc?.assetSlices.first { $0.path == slice.name }?.isInstallTime ?? false
    }
    /// Where the asset packs' APKs are in `allAPKs`.
    public var assetSliceRange: Range<Int> { standaloneRange.upperBound..<(standaloneRange.upperBound + assetSlices.count) }

    public var base: Member { members[0] }
    public var splits: ArraySlice<Member> { members.dropFirst() }

    /// The container file extensions a set comes in.
    public static let containerExtensions: [String: Form] = ["apks": .apks, "xapk": .xapk, "apkm": .apkm]

    /// Whether `paths` name a set rather than one APK: several paths, a directory, or a container file.
    public static func isSet(paths: [String]) -> Bool {
        if paths.count > 1 { return true }
        guard let path = paths.first else { return false }
        if FileKind(atPath: path) == .directory { return true }
        return containerForm(of: path) != nil
    }

    static func containerForm(of path: String) -> Form? {
        containerExtensions[path.pathExtension.lowercased()]
    }

    /// Opens the set at `paths` and checks its consistency. `memberLimits` are the rules for reading each
    /// APK (the signer's and verifier's readers are more lenient about names than extraction). With
    /// `unreadable`, an APK that cannot be opened (not a ZIP, truncated, refused by the reader, no readable
    /// manifest) is set aside there and the set is made of the others (`verify` reports each); without, it
    /// is thrown.
    public static func open(paths: [String], memberLimits: UnpackLimits = UnpackLimits(),
                            settingAside unreadable: UnreadableMembers? = nil) throws -> APKSet {
        guard let first = paths.first else { throw APKSetError.noAPKs("(no path given)") }
        let set: APKSet
        if paths.count > 1 {
            let members = try paths.compactMap { try openFile($0, name: $0, limits: memberLimits, settingAside: unreadable) }
            set = APKSet(form: .files, label: label(of: paths), container: nil, members: members)
        } else {
            guard let kind = FileKind(atPath: first) else {
                throw APKSetError.unreadable(first, "no such file or directory")
            }
            if kind == .directory {
                set = try openDirectory(first, limits: memberLimits, settingAside: unreadable)
            } else if let form = containerForm(of: first) {
                set = try openContainer(first, form: form, limits: memberLimits, settingAside: unreadable)
            } else {
                let member = try openFile(first, name: first.lastPathComponent, limits: memberLimits, settingAside: unreadable)
                set = APKSet(form: .files, label: first, container: nil, members: member.map { [$0] } ?? [])
            }
        }
        return try set.ordered()
    }

    /// The form of the set at `paths` (as `open` reads it), without opening it.
    public static func form(of paths: [String]) -> Form {
        guard paths.count == 1, let path = paths.first else { return .files }
        if FileKind(atPath: path) == .directory { return .directory }
        return containerForm(of: path) ?? .files
    }

    /// The set's name in messages (`label`), without opening it.
    public static func label(of paths: [String]) -> String { paths.joined(separator: ", ") }

    init(form: Form, label: String, container: APKArchive?, members: [Member], otherSplitVariants: [[Member]] = [],
         standalones: [Member] = [], assetSlices: [Member] = [], toc: BundletoolTOC? = nil) {
        self.form = form
        self.label = label
        self.container = container
        self.members = members
        self.otherSplitVariants = otherSplitVariants
        self.standalones = standalones
        self.assetSlices = assetSlices
        self.toc = toc
    }

    /// The same set with the base first and the splits by name, once `SetConsistency` has passed.
    private func ordered() throws -> APKSet {
        guard !members.isEmpty else { throw APKSetError.noAPKs(label) }
        func baseFirst(_ variant: [Member]) throws -> [Member] {
            try SetConsistency.check(variant.map { ($0.label, $0.manifest) })
            return variant.sorted { a, b in
                if a.isBase != b.isBase { return a.isBase }
                return a.splitName < b.splitName
            }
        }
        let sorted = try baseFirst(members)
        let base = (label: sorted[0].label, manifest: sorted[0].manifest)
        let others = try otherSplitVariants.map(baseFirst)
        try SetConsistency.checkSameApp(others.map { ($0[0].label, $0[0].manifest) }, base: base)
        try SetConsistency.checkStandalones(standalones.map { ($0.label, $0.manifest) }, base: base)
        try SetConsistency.checkAssetSlices(assetSlices.map { ($0.label, $0.manifest, isInstallTime($0)) }, base: base)
        return APKSet(form: form, label: label, container: container, members: sorted, otherSplitVariants: others,
                      standalones: standalones.sorted { $0.name < $1.name }, assetSlices: assetSlices.sorted { $0.name < $1.name }, toc: toc)
    }

    /// The APK at `path`; nil when it cannot be opened and `unreadable` takes it.
    private static func openFile(_ path: String, name: String, limits: UnpackLimits, settingAside unreadable: UnreadableMembers?) throws -> Member? {
        do {
            let archive = try APKArchive(path: path, limits: limits, readsAll: true)
            return Member(name: name, path: path, archive: archive, manifest: try readManifest(archive))
        } catch {
            guard let unreadable else { throw error }
            unreadable.members.append(UnreadableMember(name: name, label: path, path: path, source: nil, reason: "\(error)"))
            return nil
        }
    }

    private static func openDirectory(_ path: String, limits: UnpackLimits, settingAside unreadable: UnreadableMembers?) throws -> APKSet {
        let listing: DirectoryNames
        do { listing = try DirectoryNames(path) } catch { throw APKSetError.unreadable(path, error.reason) }
        // An APK whose name is not UTF-8 would be read under a name no file has.
        if let shown = listing.notUTF8.first(where: Self.isAPKFileName) {
            throw APKSetError.unreadable(path.appendingPathComponent(shown), "the file name is not valid UTF-8; rename the file")
        }
        let names = listing.names
        let apks = names.filter(Self.isAPKFileName).sorted()
        guard !apks.isEmpty else { throw APKSetError.noAPKs(path) }
        let members = try apks.compactMap { name in
            try openFile(path.appendingPathComponent(name), name: name, limits: limits, settingAside: unreadable)
        }
        return APKSet(form: .directory, label: path, container: nil, members: members)
    }

    /// The ZIP local file header signature, "PK\3\4": how every ZIP (and so every unencrypted container) starts.
    private static let zipMagic: [UInt8] = [0x50, 0x4b, 0x03, 0x04]

    private static func openContainer(_ path: String, form: Form, limits: UnpackLimits, settingAside unreadable: UnreadableMembers?) throws -> APKSet {
        let file: MappedFile
        do { file = try MappedFile(path: path) } catch let error as FileError {
            // Its description names the path already ("cannot read PATH: …"), as `unreadable` does.
            throw APKSetError.unreadable(path, error.reason)
        }
        file.readAhead()
        // APKMirror's newer .apkm files are a libsodium secret stream, not a ZIP (unapkm reads its header).
        if form == .apkm, try file.count < 4 || file.bytes(in: 0..<4) != zipMagic {
            throw APKSetError.encryptedAPKM(path)
        }
        let container = try APKArchive(source: file, label: path)
        // Every entry's data must be what the container records (CRC-32, a deflate stream that ends at the
        // declared size): a container output carries the set's other files (toc.pb, manifest.json, OBB files,
        // icons) on byte for byte, and a set whose files are not what it says they are is a damaged download.
        // The APKs are checked below, each as it is read.
        for entry in container.entries where !Self.isAPK(entry) && (!entry.isDirectory || entry.compressedSize > 0) {
            try container.withUncompressedChunks(of: entry) { _ in }
        }
        var members: [Member] = [], standalones: [Member] = [], assetSlices: [Member] = []
        // bundletool's .apks keeps the set under splits/; SAI's puts the APKs at the top, as .xapk and .apkm do.
        // Folders by the names' bytes, as bundletool's paths are Java Strings: a Character would join a combining
        // mark after the slash to it ("splits/\u{301}x.apk").
        let isBundletool = form == .apks && container.entries.contains { $0.name.javaHasPrefix(splitsFolder) }
        for entry in container.entries where Self.isAPK(entry) {
            let isStandalone = isBundletool && entry.name.javaHasPrefix(standalonesFolder)
            let isAssetSlice = isBundletool && entry.name.javaHasPrefix(assetSlicesFolder)
            if isBundletool && !entry.name.javaHasPrefix(splitsFolder) && !isStandalone && !isAssetSlice {
                // universal.apk, system/ and instant/ are other builds of the app beside the split set, each
                // installed in its own way (bundletool writes them in other --mode runs).
                throw APKSetError.unsupported(path, "\(entry.name.debugQuoted) is neither a split APK (splits/), a standalone APK (standalones/) nor an asset pack's (asset-slices/): a .apks from bundletool build-apks --mode=default holds only those (and a universal .apks only universal.apk). Take the split APKs out first (bundletool extract-apks, or unzip its splits/ folder) and give apkpatch that folder")
            }
            let label = "\(path)!/\(entry.name)"
            var source: (any DataSource)?
            let member: Member
            do {
                if entry.method == .stored {
                    try container.withUncompressedChunks(of: entry) { _ in }  // its CRC-32
                    source = try container.rawData(of: entry)
                } else {
                    let temporary = try TemporaryFile()
                    try container.withUncompressedChunks(of: entry) { try temporary.write($0) }
                    guard entry.uncompressedSize > 0 else { throw APKSetError.unreadable(label, "the APK is empty") }
                    source = try temporary.map()
                }
                let archive = try APKArchive(source: source!, label: label, limits: limits)
                member = Member(name: entry.name, path: nil, archive: archive, manifest: try readManifest(archive),
                                isStandalone: isStandalone, isAssetSlice: isAssetSlice)
            } catch {
                guard let unreadable else { throw error }
                unreadable.members.append(UnreadableMember(name: entry.name, label: label, path: nil, source: source, reason: "\(error)"))
                continue
            }
            if isStandalone { standalones.append(member) } else if isAssetSlice { assetSlices.append(member) } else { members.append(member) }
        }
        guard !members.isEmpty else { throw APKSetError.noAPKs(path) }
        // Standalones, asset packs (install-time or not), or several split variants (more than one base under
        // splits/), are told apart by toc.pb.
        let severalVariants = isBundletool && members.filter(\.isBase).count > 1
        guard !standalones.isEmpty || !assetSlices.isEmpty || severalVariants else {
            return APKSet(form: form, label: path, container: container, members: members)
        }
        let toc: BundletoolTOC
        do {
            toc = try readTableOfContents(container, path: path, standalones: standalones, assetSlices: assetSlices)
        } catch is APKSetError where standalones.isEmpty && assetSlices.isEmpty {
            // Several bases and no readable toc.pb: not bundletool's split variants, and refused as two bases.
            return APKSet(form: form, label: path, container: container, members: members)
        }
        try checkTableOfContents(toc, path: path, splits: members, standalones: standalones, assetSlices: assetSlices,
                                 setAside: Set((unreadable?.members ?? []).map { ExactName($0.name) }))
        var variants = [members]
        if severalVariants {
            // By bytes, as bundletool and the container name them: two names String's == joins are two APKs.
            let byName = Dictionary(uniqueKeysWithValues: members.map { (ExactName($0.name), $0) })
            variants = toc.splitVariants.map { $0.apks.compactMap { byName[ExactName($0.path)] } }.filter { !$0.isEmpty }
        }
        return APKSet(form: form, label: path, container: container, members: variants[0], otherSplitVariants: Array(variants.dropFirst()),
                      standalones: standalones, assetSlices: assetSlices, toc: toc)
    }

    /// Whether a container's `entry` is one of the set's APKs (by its name, as every set format names them).
    private static func isAPK(_ entry: ZipEntry) -> Bool { !entry.isDirectory && entry.name.hasSuffixIgnoringASCIICase(".apk") }

    /// Whether a file of a folder is one of the set's APKs: not hidden (a leading dot byte, as `ls` and the
    /// shell's `*` read it), ending in ".apk" without regard to ASCII case (adb's `install-multiple` takes the
    /// files whose names end so, by `EndsWithIgnoreCase`).
    private static func isAPKFileName(_ name: String) -> Bool {
        name.utf8.first != UInt8(ascii: ".") && name.hasSuffixIgnoringASCIICase(".apk")
    }

    /// bundletool's folder of the split APKs in a `.apks`.
    static let splitsFolder = "splits/"
    /// bundletool's folder of standalone APKs in a `.apks`.
    static let standalonesFolder = "standalones/"
    /// bundletool's folder of asset packs' APKs in a `.apks`.
    static let assetSlicesFolder = "asset-slices/"
    /// bundletool's table of contents in a `.apks`.
    public static let tocName = "toc.pb"

    /// The `.apks`'s `toc.pb`.
    private static func readTableOfContents(_ container: APKArchive, path: String, standalones: [Member], assetSlices: [Member]) throws -> BundletoolTOC {
        guard let entry = container.entry(named: tocName) else {
            let what = standalones.isEmpty ? "asset packs' APKs (\(assetSlicesFolder))" : "standalone APKs (\(standalonesFolder))"
            throw APKSetError.unsupported(path, "it holds \(what) but no \(tocName), bundletool's table of contents that says which device gets which of them; bundletool build-apks writes both")
        }
        return try BundletoolTOC(bytes: container.uncompressedData(of: entry), label: "\(path)!/\(tocName)")
    }

    /// `toc` must describe every standalone APK and place every split APK in one split variant (which device
    /// gets which), and list no APK the `.apks` does not hold.
    /// (`setAside`: the APKs that are there but could not be opened.)
    private static func checkTableOfContents(_ toc: BundletoolTOC, path: String, splits: [Member], standalones: [Member], assetSlices: [Member],
                                             setAside: Set<ExactName> = []) throws {
        // Paths and entry names by their bytes: the table names each APK as the container's entry does.
        let described = Set(toc.variants.flatMap(\.apks).filter(\.isStandalone).map { ExactName($0.path) })
        let describedSlices = Set(toc.assetSlices.map { ExactName($0.path) })
        let variantCount = Dictionary(toc.splitVariants.flatMap(\.apks).map { (ExactName($0.path), 1) }, uniquingKeysWith: +)
        let unplaced = standalones.first { !described.contains(ExactName($0.name)) } ?? assetSlices.first { !describedSlices.contains(ExactName($0.name)) }
            ?? splits.first { variantCount[ExactName($0.name)] != 1 }
        if let unplaced {
            let kind = unplaced.isStandalone ? "standalone" : unplaced.isAssetSlice ? "asset pack's" : "split"
            throw APKSetError.unsupported(path, "\(tocName) does not describe the \(kind) APK \(unplaced.name.debugQuoted)\(unplaced.isStandalone || unplaced.isAssetSlice ? "" : " in exactly one split variant"), so no device would be given it; the .apks was changed after bundletool wrote it. Rebuild it with bundletool build-apks")
        }
        let present = Set((splits + standalones + assetSlices).map { ExactName($0.name) }).union(setAside)
        if let absent = (described.union(variantCount.keys).union(describedSlices)).sorted().first(where: { !present.contains($0) })?.string {
            throw APKSetError.unsupported(path, "\(tocName) lists the APK \(absent.debugQuoted), which the .apks does not hold; the .apks was changed after bundletool wrote it. Rebuild it with bundletool build-apks")
        }
    }

    /// The member's manifest, or an error naming the APK.
    public static func readManifest(_ archive: APKArchive) throws -> SplitManifest {
        guard let entry = archive.entry(named: "AndroidManifest.xml") else {
            throw APKSetError.unreadable(archive.label, "it has no AndroidManifest.xml")
        }
        do {
            return try SplitManifest(binaryXML: archive.uncompressedData(of: entry))
        } catch let error as BinaryXMLError {
            throw APKSetError.unreadable(archive.label, "AndroidManifest.xml: \(error)")
        }
    }
}

/// An APK of a set that could not be opened as one, set aside by `APKSet.open(paths:memberLimits:settingAside:)`.
public struct UnreadableMember: Sendable {
    /// Its entry name in the container, its file name in a directory, or the path given.
    public let name: String
    /// The name for messages: the container and the entry, or the path.
    public let label: String
    /// The file it is (directory and files forms).
    public let path: String?
    /// A container entry's bytes, when they could be taken out.
    public let source: (any DataSource)?
    /// Why it could not be opened.
    public let reason: String
}

/// Where `APKSet.open` sets aside the APKs it cannot open (filled while it runs).
public final class UnreadableMembers: @unchecked Sendable {
    // @unchecked Sendable: filled by the one thread that opens the set, read after `open` returns or throws.
    public internal(set) var members: [UnreadableMember] = []
    public init() {}
}

/// The package manager's rules for the APKs of one install session (`PackageManagerService` /
/// `ApkLiteParseUtils.composePackageLiteFromApks`): checked on a set before anything is written, and again on
/// what was written.
public enum SetConsistency {
    /// Checks `members` (label and manifest of each); throws the first disagreement, naming the APK at fault.
    public static func check(_ members: [(label: String, manifest: SplitManifest)]) throws {
        let bases = members.filter { $0.manifest.isBase }
        guard let base = bases.first else { throw APKSetError.noBase(members.map(\.label)) }
        guard bases.count == 1 else { throw APKSetError.multipleBases(bases.map(\.label)) }
        // Split names as Android keys them (Java Strings in an ArrayMap): by their bytes.
        var seen: [ExactName: String] = [:]
        for member in members where !member.manifest.isBase {
            let m = member.manifest
            if m.packageName != base.manifest.packageName {
                throw APKSetError.packageMismatch(member: member.label, package: m.packageName, base: base.label, basePackage: base.manifest.packageName)
            }
            if m.versionCode != base.manifest.versionCode {
                throw APKSetError.versionCodeMismatch(member: member.label, versionCode: m.versionCode, base: base.label, baseVersionCode: base.manifest.versionCode)
            }
            let name = m.splitName ?? ""
            if let other = seen[ExactName(name)] { throw APKSetError.duplicateSplit(name, [other, member.label]) }
            seen[ExactName(name)] = member.label
        }
        let features = Set(members.filter { $0.manifest.isFeatureSplit }.compactMap { $0.manifest.splitName.map { ExactName($0) } })
        for member in members {
            if let feature = member.manifest.configForSplit, !feature.isEmpty, !features.contains(ExactName(feature)) {
                throw APKSetError.missingFeature(member: member.label, split: member.manifest.splitName ?? "", feature: feature)
            }
        }
        let provided = Set(members.flatMap(\.manifest.splitTypes))
        let missing = base.manifest.requiredSplitTypes.filter { !provided.contains($0) }
        if !missing.isEmpty { throw APKSetError.missingSplitTypes(base: base.label, types: missing) }
        if base.manifest.isSplitRequired && members.count == 1 { throw APKSetError.splitRequired(base.label) }
    }
}

extension SetConsistency {
    /// bundletool's standalone APKs beside a set: each a complete APK (no `split` attribute) of the base's
    /// package and versionCode, so that every device, whichever variant it gets, installs the same release.
    public static func checkStandalones(_ standalones: [(label: String, manifest: SplitManifest)], base: (label: String, manifest: SplitManifest)) throws {
        for standalone in standalones {
            if let split = standalone.manifest.splitName { throw APKSetError.standaloneIsSplit(standalone.label, split) }
        }
        try checkSameApp(standalones, base: base)
    }

    /// bundletool's asset packs' APKs: each a split (an asset pack is installed as one) of the base's package;
    /// an install-time pack's also of its versionCode (installed in the app's session: bundletool's
    /// AssetSlicesGenerator gives those the base's versionCode, and leaves other packs' as they were).
    public static func checkAssetSlices(_ slices: [(label: String, manifest: SplitManifest, isInstallTime: Bool)],
                                        base: (label: String, manifest: SplitManifest)) throws {
        if let whole = slices.first(where: { $0.manifest.isBase }) { throw APKSetError.assetSliceIsNotSplit(whole.label) }
        for slice in slices where slice.manifest.packageName != base.manifest.packageName {
            throw APKSetError.packageMismatch(member: slice.label, package: slice.manifest.packageName, base: base.label, basePackage: base.manifest.packageName)
        }
        try checkSameApp(slices.filter(\.isInstallTime).map { ($0.label, $0.manifest) }, base: base)
    }

    /// APKs of other variants of the set (standalones, other split variants' bases): the base's package and
    /// versionCode.
    public static func checkSameApp(_ apks: [(label: String, manifest: SplitManifest)], base: (label: String, manifest: SplitManifest)) throws {
        for standalone in apks {
            let m = standalone.manifest
            if m.packageName != base.manifest.packageName {
                throw APKSetError.packageMismatch(member: standalone.label, package: m.packageName, base: base.label, basePackage: base.manifest.packageName)
            }
            if m.versionCode != base.manifest.versionCode {
                throw APKSetError.versionCodeMismatch(member: standalone.label, versionCode: m.versionCode, base: base.label, baseVersionCode: base.manifest.versionCode)
            }
        }
    }
}

/// Why a set could not be read or is not one app.
public enum APKSetError: Error, CustomStringConvertible, Equatable {
    case unreadable(String, String)
    case noAPKs(String)
    case encryptedAPKM(String)
    case unsupported(String, String)
    case noBase([String])
    case multipleBases([String])
    case packageMismatch(member: String, package: String, base: String, basePackage: String)
    case versionCodeMismatch(member: String, versionCode: Int64, base: String, baseVersionCode: Int64)
    case duplicateSplit(String, [String])
    case missingFeature(member: String, split: String, feature: String)
    case missingSplitTypes(base: String, types: [String])
    case splitRequired(String)
    case signerMismatch(member: String, certificate: String, base: String, baseCertificate: String)
    case duplicateFileName(String, [String])
    case standaloneIsSplit(String, String)
    case assetSliceIsNotSplit(String)
    case noVariant(sdk: Int, abis: [String], density: Int?, minimumSDK: Int?)
    case ambiguousVariant([String])

    public var description: String {
        switch self {
        case .unreadable(let label, let reason):
            return "cannot read \(label): \(reason)"
        case .noAPKs(let label):
            return "\(label) holds no APK (no file or entry ending in .apk)"
        case .encryptedAPKM(let path):
            return "\(path) is an encrypted .apkm (APKMirror's newer format is not a ZIP): apkpatch cannot read it. Install it with APKMirror Installer, or get the app as an unencrypted .apkm, .apks, .xapk or folder of APKs"
        case .unsupported(let path, let what):
            return "\(path): \(what)"
        case .noBase(let labels):
            return "no base APK among \(labels.joined(separator: ", ")): every APK has a split attribute. Add the base APK (the one whose manifest has no split=\"…\") to the set"
        case .multipleBases(let labels):
            return "two base APKs in one set: \(labels.joined(separator: " and ")) (neither has a split attribute). A set holds one app's base and its splits; remove the APK that does not belong"
        case .packageMismatch(let member, let package, let base, let basePackage):
            return "\(member) belongs to package \(package), but the base \(base) is \(basePackage): all APKs of a set must be one app. Remove the APK that does not belong"
        case .versionCodeMismatch(let member, let code, let base, let baseCode):
            return "\(member) has versionCode \(code), but the base \(base) has \(baseCode): Android installs a set only when every APK has the same versionCode. Take all APKs from the same release"
        case .duplicateSplit(let name, let labels):
            return "split \(name.debugQuoted) appears twice: \(labels.joined(separator: " and ")). Keep one of them"
        case .missingFeature(let member, let split, let feature):
            return "\(member) (split \(split.debugQuoted)) is a configuration split for the feature split \(feature.debugQuoted), which is not in the set (INSTALL_FAILED_MISSING_SPLIT). Add the feature's APK or remove its configuration splits"
        case .missingSplitTypes(let base, let types):
            return "the base \(base) requires split types \(types.joined(separator: ", ")) (android:requiredSplitTypes) that no APK of the set provides (android:splitTypes): Android would refuse it with INSTALL_FAILED_MISSING_SPLIT. Add the missing splits"
        case .splitRequired(let base):
            return "the base \(base) declares android:isSplitRequired=\"true\" but the set holds no split: Android refuses it alone (INSTALL_FAILED_MISSING_SPLIT). Add its splits"
        case .signerMismatch(let member, let certificate, let base, let baseCertificate):
            return "\(member) is signed by certificate SHA-256 \(certificate), but the base \(base) by \(baseCertificate): Android refuses a set whose APKs are not signed by the same key (signatures are inconsistent). Re-sign every APK of the set with one key"
        case .duplicateFileName(let name, let labels):
            return "\(labels.joined(separator: " and ")) would both be written as \(name) in the output directory; rename one of them"
        case .standaloneIsSplit(let label, let split):
            return "\(label) is under standalones/ but is a split APK (split=\"\(split)\"): a standalone APK is a complete app. Put split APKs under splits/"
        case .assetSliceIsNotSplit(let label):
            return "\(label) is under asset-slices/ but has no split attribute: an asset pack's APK is a split of the app. Put the base APK under splits/"
        case .noVariant(let sdk, let abis, let density, let minimum):
            let device = (["SDK \(sdk)"] + (abis.isEmpty ? [] : ["ABIs " + abis.joined(separator: ",")]) + (density.map { ["\($0) dpi"] } ?? [])).joined(separator: ", ")
            return "no APK of the set fits the device (\(device)): bundletool's table of contents targets none of its variants at it\(minimum.map { " (the lowest SDK version any variant supports is \($0))" } ?? ""). Install on a device the app supports"
        case .ambiguousVariant(let paths):
            return "several standalone APKs fit the device (\(paths.joined(separator: ", "))): name its ABIs and screen density so that one is chosen (a device spec's supportedAbis and screenDensity)"
        }
    }
}
