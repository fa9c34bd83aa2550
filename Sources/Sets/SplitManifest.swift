import BinaryXML
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

/// What a set needs to know about one APK's manifest: which app it belongs to and which part of it it is.
///
/// Read as Android's `ApkLiteParseUtils.parseApkLite` reads it, from `<manifest>` only: `package`, `split` and
/// `configForSplit` without a namespace; `android:versionCode` (with `android:versionCodeMajor` as the high
/// 32 bits), `android:isFeatureSplit`, `android:isSplitRequired`, `android:requiredSplitTypes` and
/// `android:splitTypes` (comma-separated) in the android namespace.
public struct SplitManifest: Sendable, Equatable {
    public var packageName: String
    /// `versionCodeMajor << 32 | versionCode`, as the package manager compares them (0 when absent).
    public var versionCode: Int64
    public var versionName: String?
    /// `split`: nil for the base APK.
    public var splitName: String?
    /// `configForSplit`: the feature split a configuration split belongs to ("" or nil: the base).
    public var configForSplit: String?
    public var isFeatureSplit: Bool
    /// On the base: the app does not run without its splits.
    public var isSplitRequired: Bool
    public var requiredSplitTypes: [String]
    public var splitTypes: [String]
    public var isBase: Bool { splitName == nil }

    /// Framework attribute IDs (public, stable): `versionCodeMajor`, `isFeatureSplit`, `isSplitRequired`.
    /// `requiredSplitTypes` and `splitTypes` (API 33) are matched by name.
    static let versionCodeMajorAttribute: UInt32 = 0x0101_0576
    static let isFeatureSplitAttribute: UInt32 = 0x0101_055b
    static let isSplitRequiredAttribute: UInt32 = 0x0101_0591

    /// Reads the manifest from binary XML bytes.
    public init(binaryXML: [UInt8]) throws {
        try self.init(tree: XMLTree(binaryXML: binaryXML))
    }

    public init(tree: XMLTree) throws {
        // The root, package, versionCode and versionName as every other reader of the manifest sees them.
        let summary = try ManifestSummary(tree: tree)
        let manifest = tree.root!  // ManifestSummary checked it is <manifest>
        packageName = summary.packageName
        let minor = Int64(summary.versionCode ?? 0)
        let major = manifest.attribute(id: Self.versionCodeMajorAttribute, name: "versionCodeMajor").flatMap(Self.integer) ?? 0
        versionCode = (major << 32) | (minor & 0xFFFF_FFFF)
        versionName = summary.versionName
        let split = manifest.attribute(id: nil, name: "split", namespace: nil)?.value.stringValue
        splitName = (split?.isEmpty ?? true) ? nil : split
        configForSplit = manifest.attribute(id: nil, name: "configForSplit", namespace: nil)?.value.stringValue
        isFeatureSplit = manifest.attribute(id: Self.isFeatureSplitAttribute, name: "isFeatureSplit").flatMap(Self.boolean) ?? false
        isSplitRequired = manifest.attribute(id: Self.isSplitRequiredAttribute, name: "isSplitRequired").flatMap(Self.boolean) ?? false
        requiredSplitTypes = Self.list(manifest.attribute(id: nil, name: "requiredSplitTypes"))
        splitTypes = Self.list(manifest.attribute(id: nil, name: "splitTypes"))
    }

    private static func integer(_ attribute: XMLTree.Attribute) -> Int64? {
        if let n = attribute.value.integerValue { return Int64(UInt32(bitPattern: n)) }
        if let s = attribute.value.stringValue { return Int64(s) }
        return nil
    }

    private static func boolean(_ attribute: XMLTree.Attribute) -> Bool? {
        attribute.value.booleanValue ?? attribute.value.integerValue.map { $0 != 0 } ?? attribute.value.stringValue.map { $0 == "true" }
    }

    private static func list(_ attribute: XMLTree.Attribute?) -> [String] {
        guard let text = attribute?.value.stringValue else { return [] }
        return text.split(separator: ",").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
    }
}
