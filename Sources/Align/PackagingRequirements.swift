import APKCore
import BinaryXML

/// How Android's package manager requires an APK to store some entries, beyond what the ZIP format and the
/// signatures ask: the one rule set that `verify` checks, `run` and `watch` repair, and `sign` enforces.
///
/// - `resources.arsc` stored (uncompressed), its data on a 4-byte boundary, when targetSdkVersion ≥ 30:
///   `ParsingPackageUtils.parseBaseApk` fails the install with -124 (INSTALL_PARSE_FAILED_RESOURCES_ARSC_COMPRESSED,
///   "Targeting R+ (version 30 and above) requires the resources.arsc of installed APKs to be stored uncompressed
///   and aligned on a 4-byte boundary") when `AssetManager.containsAllocatedTable()`, i.e. when libandroidfw could
///   not map the table in place and had to allocate a copy.
/// - every `lib/…/*.so` stored, its data on a page boundary, when `android:extractNativeLibs="false"`:
///   `NativeLibraryHelper`'s `copyFileIfChanged` (com_android_internal_content_NativeLibraryHelper.cpp) returns
///   INSTALL_FAILED_INVALID_APK for a library that is "compressed" or "not page-aligned" (`offset % PAGE_SIZE`,
///   4096 on most devices, 16384 on devices with 16 KiB pages).
public struct PackagingRequirements: Sendable, Hashable {
    /// The targetSdkVersion the package manager sees.
    public var targetSdkVersion: Int
    /// `android:extractNativeLibs` (absent: true).
    public var extractsNativeLibraries: Bool

    /// What one entry must be.
    public enum Rule: Sendable, Hashable {
        /// `resources.arsc` for targetSdkVersion ≥ 30: stored, on `resourceTableAlignment`.
        case resourceTable
        /// A native library with extractNativeLibs="false": stored, on a page boundary.
        case nativeLibrary
    }

    /// The alignment Android needs for `resources.arsc`.
    public static let resourceTableAlignment = 4
    /// The smallest page size Android maps native libraries with; 16 KiB-page devices need 16384.
    public static let minimumPageSize = 4096
    /// The first API level (Android 11, R) whose package manager refuses a compressed or unaligned `resources.arsc`.
    public static let resourceTableRuleSdkVersion = 30
    /// The API level Android gives a targetSdkVersion that is a preview codename (`Build.VERSION_CODES.CUR_DEVELOPMENT`).
    public static let previewSdkVersion = 10_000

    public init(targetSdkVersion: Int, extractsNativeLibraries: Bool) {
        self.targetSdkVersion = targetSdkVersion
        self.extractsNativeLibraries = extractsNativeLibraries
    }

    /// The requirements of the APK whose manifest is `manifest`, read as the package manager reads it
    /// (`ParsingPackageUtils.parseUsesSdk`): a missing targetSdkVersion is the minSdkVersion (or 1), a preview
    /// codename is the development API level.
    public init(manifest: ManifestSummary) {
        func level(_ version: SDKVersion?) -> Int? {
            switch version {
            case .level(let n)?: return n
            case .codename?: return Self.previewSdkVersion
            case nil: return nil
            }
        }
        self.init(targetSdkVersion: level(manifest.targetSdkVersion) ?? level(manifest.minSdkVersion) ?? 1,
                  extractsNativeLibraries: manifest.extractNativeLibs ?? true)
    }

    /// True for the names Android's native-library code looks at: `.so` files under `lib/`, told by the name's
    /// bytes as libziparchive's prefix and suffix iteration tells them (Swift's Characters would join a combining
    /// mark after `lib/` to the slash).
    public static func isNativeLibrary(_ name: String) -> Bool {
        // The last byte first: most names end in another letter, and the signer asks this of every entry.
        name.utf8.last == UInt8(ascii: "o") && name.javaHasPrefix("lib/") && name.javaHasSuffix(".so")
    }

    /// The rule `name` falls under, or nil when Android accepts it however it is stored.
    public func rule(for name: String) -> Rule? {
        if name == "resources.arsc" && targetSdkVersion >= Self.resourceTableRuleSdkVersion { return .resourceTable }
        if !extractsNativeLibraries && Self.isNativeLibrary(name) { return .nativeLibrary }
        return nil
    }

    /// Whether any entry must be stored (false for most APKs: nothing to look at).
    public var isEmpty: Bool { targetSdkVersion < Self.resourceTableRuleSdkVersion && extractsNativeLibraries }

    /// Why `rule` applies, as a clause for a sentence ("Android 11+ requires it for targetSdk 30+").
    public func reason(for rule: Rule) -> String {
        switch rule {
        case .resourceTable: return "Android 11+ requires it for targetSdk 30+ (this APK targets \(targetSdkVersion))"
        case .nativeLibrary: return "android:extractNativeLibs=\"false\" makes Android map native libraries from the APK"
        }
    }

    /// The stored entries of `entries` whose data does not start where the rules require (4 bytes for
    /// `resources.arsc`, a page for native libraries), in order.
    public func misalignedEntries(in entries: [ZipEntry]) -> [(entry: ZipEntry, rule: Rule)] {
        guard !isEmpty else { return [] }
        return entries.compactMap { entry in
            guard !entry.isCompressed, let rule = rule(for: entry.name) else { return nil }
            return entry.dataOffset % Int64(Self.alignment(for: rule)) == 0 ? nil : (entry, rule)
        }
    }

    /// The boundary `rule` requires an entry's data on: 4 bytes for `resources.arsc`, the smallest page for
    /// native libraries.
    public static func alignment(for rule: Rule) -> Int {
        rule == .resourceTable ? resourceTableAlignment : minimumPageSize
    }

    /// The entries of `entries` stored against the rules (compressed where they must be stored), in order.
    public func compressedViolations(in entries: [ZipEntry]) -> [(entry: ZipEntry, rule: Rule)] {
        guard !isEmpty else { return [] }
        return entries.compactMap { entry in
            guard entry.isCompressed, let rule = rule(for: entry.name) else { return nil }
            return (entry, rule)
        }
    }
}
