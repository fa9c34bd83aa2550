import BinaryXML
import ResourceTable

/// The manifest shortcuts of a patch (`manifest:` in the patch spec), each optional: nil leaves the value as is.
public struct ManifestEdits: Sendable, Equatable {
    /// `<application android:debuggable>`: lets Chrome's inspector attach to the app's WebView.
    public var debuggable: Bool?
    /// `<manifest android:versionCode>` (1 … 2,147,483,647).
    public var versionCode: Int?
    /// `<manifest android:versionName>`.
    public var versionName: String?
    /// `<application android:label>`, and the launcher activity's own label when it has one. Plain text, or a
    /// reference such as `@string/app_name`.
    public var label: String?
    /// `<application android:usesCleartextTraffic>`.
    public var usesCleartextTraffic: Bool?
    /// `<application android:extractNativeLibs>`.
    public var extractNativeLibs: Bool?
    /// `<uses-sdk android:minSdkVersion>` (created when missing).
    public var minSdkVersion: SDKVersion?
    /// `<uses-sdk android:targetSdkVersion>` (created when missing).
    public var targetSdkVersion: SDKVersion?
    /// `<application android:networkSecurityConfig>`, a reference such as `@xml/network_security_config`.
    public var networkSecurityConfig: String?
    /// A new `<manifest package>` (and resource-table package name) for a copy that installs beside the original;
    /// see `PackageRename`.
    public var packageName: String?

    public init(debuggable: Bool? = nil, versionCode: Int? = nil, versionName: String? = nil, label: String? = nil,
                usesCleartextTraffic: Bool? = nil, extractNativeLibs: Bool? = nil, minSdkVersion: SDKVersion? = nil,
                targetSdkVersion: SDKVersion? = nil, packageName: String? = nil) {
        self.debuggable = debuggable; self.versionCode = versionCode; self.versionName = versionName; self.label = label
        self.usesCleartextTraffic = usesCleartextTraffic; self.extractNativeLibs = extractNativeLibs
        self.minSdkVersion = minSdkVersion; self.targetSdkVersion = targetSdkVersion; self.packageName = packageName
    }

    public var isEmpty: Bool { self == ManifestEdits() }
}

/// Edits and compiles `AndroidManifest.xml` without aapt: shortcuts applied to the binary manifest, or a text
/// manifest from the patch directory compiled to binary.
public enum ManifestPatch {
    /// Applies `edits` to binary manifest bytes and returns the new binary manifest. The string pool keeps its
    /// encoding (UTF-8 or UTF-16); everything not edited stays as it was (`aapt dump xmltree` shows only the edits).
    /// `resources` (the APK's resources.arsc) resolves a label given as `@string/…`.
    public static func applying(_ edits: ManifestEdits, to binaryManifest: [UInt8], resources: ResourceTable?) throws -> [UInt8] {
        var tree = try XMLTree(binaryXML: binaryManifest)
        try apply(edits, to: &tree, resources: resources)
        return try tree.binaryXML()
    }

    /// Applies `edits` to a parsed manifest.
    public static func apply(_ edits: ManifestEdits, to tree: inout XMLTree, resources: ResourceTable?) throws {
        guard var manifest = tree.root, manifest.name == "manifest" else {
            throw BinaryXMLError(.missingContent, "AndroidManifest.xml: the root element is not <manifest>")
        }
        let android = XMLTree.androidNamespace
        func boolean(_ name: String, _ id: UInt32, _ value: Bool) -> XMLTree.Attribute {
            XMLTree.Attribute(namespace: android, name: name, resourceID: id, rawValue: nil, value: .boolean(value))
        }
        func sdk(_ name: String, _ id: UInt32, _ value: SDKVersion) -> XMLTree.Attribute {
            switch value {
            case .level(let n): return XMLTree.Attribute(namespace: android, name: name, resourceID: id, rawValue: nil, value: .integer(Int32(clamping: n)))
            case .codename(let s): return XMLTree.Attribute(namespace: android, name: name, resourceID: id, rawValue: s, value: .string(s))
            }
        }
        func compiled(_ name: String, _ text: String) throws -> XMLTree.Attribute {
            try XMLTree.compileAttribute(namespace: android, name: name, value: text, resources: resources, context: "manifest.\(name)")
        }
        if let versionCode = edits.versionCode {
            guard let code = Int32(exactly: versionCode), code > 0 else {
                throw BinaryXMLError(.badValue, "manifest.versionCode \(versionCode) is out of range: Android takes 1 … 2147483647")
            }
            manifest.setAttribute(XMLTree.Attribute(namespace: android, name: "versionCode", resourceID: AndroidAttribute.versionCode,
                                                    rawValue: nil, value: .integer(code)))
        }
        if let versionName = edits.versionName { manifest.setAttribute(try compiled("versionName", versionName)) }
        for (value, name) in [(edits.minSdkVersion, "minSdkVersion"), (edits.targetSdkVersion, "targetSdkVersion")] {
            guard let value else { continue }
            if case .level(let n) = value, n < 1 { throw BinaryXMLError(.badValue, "manifest.\(name) \(n) is not an API level (1 or more)") }
            let id = name == "minSdkVersion" ? AndroidAttribute.minSdkVersion : AndroidAttribute.targetSdkVersion
            let line = manifest.lineNumber
            manifest.withFirstChild(named: "uses-sdk", creating: XMLTree.Element(name: "uses-sdk", lineNumber: line)) { usesSDK in
                usesSDK.setAttribute(sdk(name, id, value))
            }
        }
        let applicationEdits: [(Bool?, String, UInt32)] = [
            (edits.debuggable, "debuggable", AndroidAttribute.debuggable),
            (edits.usesCleartextTraffic, "usesCleartextTraffic", AndroidAttribute.usesCleartextTraffic),
            (edits.extractNativeLibs, "extractNativeLibs", AndroidAttribute.extractNativeLibs),
        ]
        if edits.label != nil || edits.networkSecurityConfig != nil || applicationEdits.contains(where: { $0.0 != nil }) {
            let labelAttribute = try edits.label.map { try compiled("label", $0) }
            let networkSecurityConfig = try edits.networkSecurityConfig.map { try compiled("networkSecurityConfig", $0) }
            let found = manifest.withFirstChild(named: "application") { application in
                for (value, name, id) in applicationEdits { if let value { application.setAttribute(boolean(name, id, value)) } }
                if let networkSecurityConfig { application.setAttribute(networkSecurityConfig) }
                guard let labelAttribute else { return }
                application.setAttribute(labelAttribute)
                // A launcher activity's own label wins over the application's on the home screen: change it too.
                for index in application.children.indices {
                    guard case .element(var component) = application.children[index],
                          component.name == "activity" || component.name == "activity-alias",
                          component.attribute(id: AndroidAttribute.label, name: "label") != nil, isLauncher(component) else { continue }
                    component.setAttribute(labelAttribute)
                    application.children[index] = .element(component)
                }
            }
            if found == nil {
                throw BinaryXMLError(.missingContent, "AndroidManifest.xml has no <application> element to set debuggable/label/usesCleartextTraffic/extractNativeLibs on")
            }
        }
        tree.root = manifest
    }

    private static func isLauncher(_ component: XMLTree.Element) -> Bool {
        component.elements(named: "intent-filter").contains { filter in
            filter.elements(named: "action").contains { $0.attribute(id: AndroidAttribute.name, name: "name")?.value.stringValue == "android.intent.action.MAIN" }
                && filter.elements(named: "category").contains { $0.attribute(id: AndroidAttribute.name, name: "name")?.value.stringValue == "android.intent.category.LAUNCHER" }
        }
    }

    /// Compiles a text `AndroidManifest.xml` (e.g. from `apkpatch unpack --decode`, edited) to binary. With the
    /// `original` binary manifest, the output uses its string encoding and raw-value convention. Unresolvable names
    /// throw `BinaryXMLError` naming the line.
    public static func compiling(textXML: String, fileName: String = "AndroidManifest.xml", original: [UInt8]?,
                                 resources: ResourceTable?) throws -> [UInt8] {
        try ResourcePatch.compilingXML(textXML: textXML, path: fileName, original: original, resources: resources)
    }
}
