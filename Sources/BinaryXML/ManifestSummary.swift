/// An Android API level as a manifest states it: a number, or a preview codename such as "Tiramisu".
public enum SDKVersion: Sendable, Hashable, CustomStringConvertible {
    case level(Int)
    case codename(String)

    /// Parses manifest text: digits give a level, anything else is a codename.
    public init(text: String) {
        if let n = Int(text.trimmingCharacters(in: " ")) { self = .level(n) } else { self = .codename(text) }
    }

    /// The level, when this is a released API level.
    public var level: Int? { if case .level(let n) = self { return n }; return nil }

    /// Why `minSdkVersion(of:)` could not decide.
    public enum Problem: Error, Equatable {
        /// A string that is no preview codename apksig knows (it must start with A-Z).
        case unsupportedCodename(String)
        /// A value that is neither an integer nor a string (a reference, a boolean, …).
        case unsupportedValueType(String)
    }

    /// apksig's `ApkUtils.getMinSdkVersionFromBinaryAndroidManifest`, for signer and verifier alike, given the
    /// `android:minSdkVersion` attribute of each `<uses-sdk>` (nil where one has none): the largest of them,
    /// 1 for none; an integer is the level, a string a preview codename (`apiLevel(forCodename:)`), even
    /// when it is digits.
    public static func minSdkVersion(of attributes: [XMLTree.Attribute?]) -> Result<Int, Problem> {
        var result = 1
        for attribute in attributes {
            var level = 1
            switch attribute?.value {
            case nil: break
            case .typed(.intDecimal, let data)?, .typed(.intHex, let data)?: level = Int(Int32(bitPattern: data))
            case .string(let text)?:
                guard let codenameLevel = apiLevel(forCodename: text) else { return .failure(.unsupportedCodename(text)) }
                level = codenameLevel
            case .typed(let type, _)?: return .failure(.unsupportedValueType("\(type)"))
            }
            result = max(result, level)
        }
        return .success(result)
    }

    /// The API level apksig assigns a preview codename (`ApkUtils.getMinSdkVersionForCodename`), for signer and
    /// verifier alike: one below the release it became, judged by its first UTF-16 unit as Java's `charAt(0)`
    /// (known letters from a table, one level per letter after 'O' = 25; 'A' and 'B' were never released: 1),
    /// except "Baklava", which came after VanillaIceCream (35) and is 34. Nil unless it starts with A-Z.
    public static func apiLevel(forCodename codename: String) -> Int? {
        if codename == "Baklava" { return 34 }
        guard let first = codename.utf16.first, first >= 0x41, first <= 0x5A else { return nil }
        let known: [(letter: UInt16, level: Int)] = [(0x43, 2), (0x44, 3), (0x45, 4), (0x46, 7), (0x47, 8), (0x48, 10), (0x49, 13),
                                                    (0x4A, 15), (0x4B, 18), (0x4C, 20), (0x4D, 22), (0x4E, 23), (0x4F, 25)]  // C … O
        guard let older = known.last(where: { $0.letter <= first }) else { return 1 }
        return older.level + Int(first - older.letter)
    }

    public var description: String {
        switch self {
        case .level(let n): return String(n)
        case .codename(let s): return s
        }
    }
}

private extension String {
    func trimmingCharacters(in set: Character) -> String {
        var s = Substring(self)
        while s.first == set { s.removeFirst() }
        while s.last == set { s.removeLast() }
        return String(s)
    }
}

/// Framework attribute IDs used by the manifest tooling (public IDs from `framework-res.apk`, stable across releases).
public enum AndroidAttribute {
    public static let label: UInt32 = 0x0101_0001
    public static let icon: UInt32 = 0x0101_0002
    public static let name: UInt32 = 0x0101_0003
    public static let enabled: UInt32 = 0x0101_000e
    public static let debuggable: UInt32 = 0x0101_000f
    public static let minSdkVersion: UInt32 = 0x0101_020c
    public static let versionCode: UInt32 = 0x0101_021b
    public static let versionName: UInt32 = 0x0101_021c
    public static let targetSdkVersion: UInt32 = 0x0101_0270
    public static let maxSdkVersion: UInt32 = 0x0101_0271
    public static let extractNativeLibs: UInt32 = 0x0101_04ea
    public static let usesCleartextTraffic: UInt32 = 0x0101_04ec
    public static let networkSecurityConfig: UInt32 = 0x0101_0527
    public static let targetSandboxVersion: UInt32 = 0x0101_054c
}

/// The facts other stages need from a binary `AndroidManifest.xml`, read the way `aapt dump badging` reports them.
///
/// Attributes are matched by resource ID when the document's resource map gives one, by `android:` name otherwise.
/// Values that are references (e.g. `versionName="@string/version"`) cannot be resolved without the resource
/// table and read as nil.
public struct ManifestSummary: Sendable, Equatable {
    /// `<manifest package>`.
    public var packageName: String
    public var versionCode: Int?
    public var versionName: String?
    /// `<uses-sdk android:minSdkVersion>`; nil when absent, which Android reads as 1.
    public var minSdkVersion: SDKVersion?
    /// `<uses-sdk android:targetSdkVersion>`; nil when absent (Android then uses minSdkVersion).
    public var targetSdkVersion: SDKVersion?
    /// `<application android:debuggable>`.
    public var debuggable: Bool?
    /// `<application android:debuggable>` as stored, found by resource ID only, for readers with rules of their
    /// own (the signer reads it as apksig does).
    public var debuggableAttribute: XMLTree.Attribute?
    /// The `android:minSdkVersion` attribute (by resource ID) of every `<uses-sdk>` in `<manifest>`, in order (nil
    /// for one without):
    /// apksig takes the largest of them (`ApkUtils.getMinSdkVersionFromBinaryAndroidManifest`).
    public var usesSDKMinSdkVersionAttributes: [XMLTree.Attribute?] = []
    /// `<application android:extractNativeLibs>`.
    public var extractNativeLibs: Bool?
    /// Fully qualified class name of the first activity (or activity-alias) with a MAIN action and LAUNCHER category.
    public var launcherActivity: String?
    /// `<application android:label>` when it is plain text; see `labelResourceID` for a reference.
    public var label: String?
    /// The resource `<application android:label>` refers to (e.g. `@string/app_name`), if it is a reference.
    public var labelResourceID: UInt32?
    /// The resource `android:versionName` refers to, if it is a reference.
    public var versionNameResourceID: UInt32?

    /// Reads the summary from binary manifest bytes; throws `BinaryXMLError` for malformed input or a missing package.
    ///
    /// The whole document is checked exactly as `XMLTree(binaryXML:)` checks it (and refused with the same
    /// errors), but only the elements the summary reads are built and only their strings decoded: a fraction of
    /// the cost of the full tree on a large manifest such as framework-res's.
    public init(binaryXML: [UInt8]) throws {
        try self.init(tree: XMLTree.parse(binaryXML: binaryXML, keeping: Self.isRead(parentName:name:)))
    }

    /// Whether `init(tree:)` looks at a child element called `name` of a (built) element called `parentName`:
    /// `<manifest>`'s `<uses-sdk>` and `<application>`, the application's activities and aliases, their
    /// intent filters, and the filters' actions and categories.
    private static func isRead(parentName: String, name: String) -> Bool {
        switch parentName {
        case "manifest": return name == "uses-sdk" || name == "application"
        case "application": return name == "activity" || name == "activity-alias"
        case "activity", "activity-alias": return name == "intent-filter"
        case "intent-filter": return name == "action" || name == "category"
        default: return false
        }
    }

    /// Reads the summary from a parsed manifest.
    public init(tree: XMLTree) throws {
        guard let manifest = tree.root, manifest.name == "manifest" else {
            throw BinaryXMLError(.missingContent, "not an AndroidManifest.xml: the root element is <\(tree.root?.name ?? "")>, expected <manifest>")
        }
        guard let package = manifest.attribute(id: nil, name: "package", namespace: nil)?.value.stringValue, !package.isEmpty else {
            throw BinaryXMLError(.missingContent, "AndroidManifest.xml has no package attribute on <manifest>")
        }
        packageName = package
        versionCode = manifest.attribute(id: AndroidAttribute.versionCode, name: "versionCode").flatMap(Self.integer)
        let versionNameAttribute = manifest.attribute(id: AndroidAttribute.versionName, name: "versionName")
        versionName = versionNameAttribute.flatMap(Self.text)
        versionNameResourceID = versionNameAttribute?.value.referenceID
        let usesSDKs = manifest.elements(named: "uses-sdk")
        let usesSDK = usesSDKs.first
        // By resource ID only, as apksig and the package manager look attributes up.
        usesSDKMinSdkVersionAttributes = usesSDKs.map { $0.attributes.first { $0.resourceID == AndroidAttribute.minSdkVersion } }
        minSdkVersion = usesSDK?.attribute(id: AndroidAttribute.minSdkVersion, name: "minSdkVersion").flatMap(Self.sdkVersion)
        targetSdkVersion = usesSDK?.attribute(id: AndroidAttribute.targetSdkVersion, name: "targetSdkVersion").flatMap(Self.sdkVersion)
        let application = manifest.elements(named: "application").first
        let debuggableAttribute = application?.attribute(id: AndroidAttribute.debuggable, name: "debuggable")
        debuggable = debuggableAttribute?.value.booleanValue
        self.debuggableAttribute = application?.attributes.first { $0.resourceID == AndroidAttribute.debuggable }
        extractNativeLibs = application?.attribute(id: AndroidAttribute.extractNativeLibs, name: "extractNativeLibs")?.value.booleanValue
        launcherActivity = application.flatMap { Self.launcher(in: $0, package: package) }
        let labelAttribute = application?.attribute(id: AndroidAttribute.label, name: "label")
        label = labelAttribute?.value.stringValue
        labelResourceID = labelAttribute?.value.referenceID
    }

    /// Expands a manifest class name the way PackageParser does: ".Foo" and "Foo" are relative to the package. The
    /// dot is a byte, as its charAt and indexOf find it: a Character would join a combining mark to it
    /// (".\u{301}Main"), or a Prepend mark before it ("w\u{600}.Main").
    public static func qualifiedClassName(_ name: String, package: String) -> String {
        if name.utf8.first == UInt8(ascii: ".") { return package + name }
        if !name.utf8.contains(UInt8(ascii: ".")) { return package + "." + name }
        return name
    }

    private static func integer(_ attribute: XMLTree.Attribute) -> Int? {
        if let n = attribute.value.integerValue { return Int(n) }
        if let s = attribute.value.stringValue { return Int(s) }
        return nil
    }

    private static func text(_ attribute: XMLTree.Attribute) -> String? {
        if let s = attribute.value.stringValue { return s }
        if case .typed(let type, _) = attribute.value, type.isInteger, let raw = attribute.rawValue { return raw }
        if let n = attribute.value.integerValue, attribute.value.referenceID == nil { return String(n) }
        return nil
    }

    private static func sdkVersion(_ attribute: XMLTree.Attribute) -> SDKVersion? {
        if let n = attribute.value.integerValue { return .level(Int(n)) }
        if let s = attribute.value.stringValue { return SDKVersion(text: s) }
        return nil
    }

    private static func launcher(in application: XMLTree.Element, package: String) -> String? {
        for component in application.elements where component.name == "activity" || component.name == "activity-alias" {
            for filter in component.elements(named: "intent-filter") {
                let actions = filter.elements(named: "action").compactMap { $0.attribute(id: AndroidAttribute.name, name: "name")?.value.stringValue }
                let categories = filter.elements(named: "category").compactMap { $0.attribute(id: AndroidAttribute.name, name: "name")?.value.stringValue }
                if actions.contains("android.intent.action.MAIN"), categories.contains("android.intent.category.LAUNCHER"),
                   let name = component.attribute(id: AndroidAttribute.name, name: "name")?.value.stringValue {
                    return qualifiedClassName(name, package: package)
                }
            }
        }
        return nil
    }
}
