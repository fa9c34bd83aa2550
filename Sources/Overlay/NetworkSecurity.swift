import APKCore
import BinaryXML
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import OpenSSLWrapper
import ResourceTable
import Unpack

/// What the network-security preset should do (`networkSecurity:` in apkpatch.yml, or the run options).
public struct NetworkSecuritySpec: Sendable, Equatable {
    /// Trust user-installed CAs (and `caCertificates`) beside the system ones, in the base config and every domain
    /// config: what an interception proxy (mitmproxy, Burp, Charles) needs on Android 7 and later.
    public var trustUserCertificates = false
    /// With `trustUserCertificates`, keep the config's `<pin-set>` elements (removed by default: they would reject
    /// the proxy's certificate).
    public var keepPins = false
    /// CA certificate files (PEM or DER, absolute paths) added as `res/raw` resources and trusted.
    public var caCertificates: [String] = []
    /// Certificate pins to add, for hardening a build.
    public var pins: [Pin] = []

    /// A `<domain-config>` with a `<pin-set>`: the SHA-256 digests of the certificates' SubjectPublicKeyInfo.
    public struct Pin: Sendable, Equatable {
        public var domain: String
        /// Certificate files (PEM or DER, absolute paths): at least two, one of them a backup.
        public var certificates: [String]
        /// `YYYY-MM-DD` after which Android stops enforcing the pins, or nil.
        public var expiration: String?
        public init(domain: String, certificates: [String], expiration: String? = nil) {
            self.domain = domain; self.certificates = certificates; self.expiration = expiration
        }
    }

    public init(trustUserCertificates: Bool = false, keepPins: Bool = false, caCertificates: [String] = [], pins: [Pin] = []) {
        self.trustUserCertificates = trustUserCertificates; self.keepPins = keepPins; self.caCertificates = caCertificates; self.pins = pins
    }

    public var isEmpty: Bool { !trustUserCertificates && caCertificates.isEmpty && pins.isEmpty }

    /// This spec with `other`'s settings added (the command line's on top of the patch spec's).
    public func merging(_ other: NetworkSecuritySpec) -> NetworkSecuritySpec {
        NetworkSecuritySpec(trustUserCertificates: trustUserCertificates || other.trustUserCertificates || !other.caCertificates.isEmpty,
                            keepPins: keepPins || other.keepPins, caCertificates: caCertificates + other.caCertificates, pins: pins + other.pins)
    }
}

/// What the preset changes: files to add or replace, the manifest reference to set, and notes for the summary.
public struct NetworkSecurityPlan: Sendable {
    public var files: [(path: String, content: [UInt8])] = []
    /// `@xml/…` for `android:networkSecurityConfig` when the manifest does not name the config yet.
    public var manifestReference: String?
    public var notes: [String] = []
}

/// The network-security preset: writes or extends the app's network security config
/// (https://developer.android.com/privacy-and-security/security-config).
public enum NetworkSecurityPreset {
    static let networkSecurityConfigAttribute: UInt32 = 0x0101_0527
    static let targetSdkVersionAttribute: UInt32 = 0x0101_0270
    static let usesCleartextTrafficAttribute: UInt32 = AndroidAttribute.usesCleartextTraffic
    static let defaultPath = "res/xml/network_security_config.xml"

    /// Plans the edit against the APK (its manifest and config file) and adds the resources it needs to `table`.
    /// `usesCleartextTraffic`: what the patch sets the manifest's flag to, if anything.
    public static func plan(_ spec: NetworkSecuritySpec, archive: APKArchive, patch: PatchDirectory, table: inout ResourceTable,
                            usesCleartextTraffic: Bool? = nil) throws -> NetworkSecurityPlan {
        var plan = NetworkSecurityPlan()
        guard let manifestEntry = archive.entry(named: "AndroidManifest.xml") else {
            throw BinaryXMLError(.missingContent, "the APK has no AndroidManifest.xml to point at a network security config")
        }
        let manifest = try XMLTree(binaryXML: try archive.uncompressedData(of: manifestEntry))
        let application = manifest.root?.elements(named: "application").first
        if let targetSDK = manifest.root?.elements(named: "uses-sdk").first?.attribute(id: targetSdkVersionAttribute, name: "targetSdkVersion")?.value,
           case .typed(_, let level) = targetSDK, level < 24, spec.trustUserCertificates {
            plan.notes.append("targetSdkVersion \(level) is below 24: Android already trusts user CAs for this app; the config matters only for its other settings")
        }

        // The config the manifest names (its file, at the path the table gives it), else a new one.
        var path = defaultPath
        var tree: XMLTree
        if case .typed(let type, let id)? = application?.attribute(id: networkSecurityConfigAttribute, name: "networkSecurityConfig")?.value,
           type == .reference, let name = table.resourceName(for: id) {
            guard let file = table.currentValue(type: name.type, named: name.name)?.stringValue else {
                throw ResourceTableError(.notFound, "android:networkSecurityConfig names \(name), which has no file in the default configuration")
            }
            path = file
            if let text = patch.files[path].map({ try? PatchDirectory.read($0) }) ?? nil, ResourcePatch.isTextXML(text) {
                throw OverlayError.unsupportedEdit("\(path) is both in the patch directory and changed by networkSecurity:; edit the file or use the preset, not both")
            }
            guard let entry = archive.entry(named: path) else { throw ResourceTableError(.notFound, "\(name) points at \(path), which is not in the APK") }
            tree = try XMLTree(binaryXML: try archive.uncompressedData(of: entry))
        } else {
            if table.resourceID(type: "xml", name: "network_security_config") != nil {
                path = table.currentValue(type: "xml", named: "network_security_config")?.stringValue ?? defaultPath
            } else {
                try table.addValue(.string(defaultPath), type: "xml", named: "network_security_config", configuration: try ResourceConfiguration(qualifiers: ""))
            }
            tree = XMLTree(root: XMLTree.Element(name: "network-security-config", lineNumber: 1))
            plan.manifestReference = "@xml/network_security_config"
        }
        let policy = tree.root?.elements.isEmpty == false ? tree.rawValuePolicy : XMLTree.RawValuePolicy.untypedAndStrings
        guard var root = tree.root, root.name == "network-security-config" else {
            throw BinaryXMLError(.missingContent, "\(path): the root element is not <network-security-config>")
        }
        var editor = ConfigEditor(table: table, policy: policy, path: path)
        // Android 7+ ignores android:usesCleartextTraffic once the app has a config, whose base-config defaults to
        // cleartext only below targetSdk 28: a new config states the flag the app (or the patch) sets, so the
        // app keeps the cleartext traffic it had.
        if plan.manifestReference != nil,
           let cleartext = usesCleartextTraffic ?? application.flatMap({ Self.booleanAttribute($0, id: usesCleartextTrafficAttribute, name: "usesCleartextTraffic", table: table) }) {
            var base = XMLTree.Element(name: "base-config", lineNumber: root.lineNumber)
            base.attributes = [try editor.attribute("cleartextTrafficPermitted", cleartext ? "true" : "false")]
            root.children.insert(.element(base), at: 0)
        }

        var anchors: [String] = []
        if spec.trustUserCertificates || !spec.caCertificates.isEmpty { anchors = ["system", "user"] }
        for (index, certificatePath) in spec.caCertificates.enumerated() {
            let bytes = try readCertificateFile(certificatePath)
            // The file goes into the APK as it is, for anyone who has the APK to read.
            if bytes.firstRange(of: Array("PRIVATE KEY-----".utf8)) != nil {
                throw OverlayError.unsupportedEdit("\(certificatePath) holds a private key beside the certificate, and the file would be shipped inside the APK for anyone to read (whoever has the proxy CA's key can intercept every device that trusts it): give the certificate alone (mitmproxy's mitmproxy-ca-cert.pem, not mitmproxy-ca.pem; or: openssl x509 -in \(certificatePath) -out ca-cert.pem)")
            }
            var name = URL(fileURLWithPath: certificatePath).deletingPathExtension().lastPathComponent.lowercased()
                .map { $0.isLetter || $0.isNumber ? $0 : "_" }.reduce(into: "") { $0.append($1) }
            if name.first?.isLetter != true { name = "ca_" + name }
            if name == "ca_" { name = "ca_\(index)" }
            let ext = URL(fileURLWithPath: certificatePath).pathExtension.lowercased()
            var rawPath = "res/raw/\(name)" + (ext.isEmpty ? "" : "." + ext)
            if let existing = table.currentValue(type: "raw", named: name)?.stringValue { rawPath = existing }
            else { try table.addValue(.string(rawPath), type: "raw", named: name, configuration: try ResourceConfiguration(qualifiers: "")) }
            plan.files.append((rawPath, bytes))
            anchors.append("@raw/\(name)")
        }
        editor.table = table

        var pinned: [String] = []
        if !anchors.isEmpty {
            if !root.elements.contains(where: { $0.name == "base-config" }) {
                root.children.insert(.element(XMLTree.Element(name: "base-config", lineNumber: root.lineNumber)), at: 0)
            }
            root.children = try root.children.map { node in
                guard case .element(var element) = node else { return node }
                try editor.trust(anchors, in: &element, removingPins: spec.trustUserCertificates && !spec.keepPins, pinned: &pinned)
                return .element(element)
            }
        }
        for pin in spec.pins {
            try editor.addPins(pin, to: &root)
        }
        if !pinned.isEmpty { plan.notes.append("certificate pins removed for: \(pinned.joined(separator: ", ")) (keepPins: true keeps them)") }
        tree.root = root
        plan.files.append((path, try tree.binaryXML()))
        table = editor.table
        return plan
    }

    /// A boolean attribute's value: written as true/false, or a reference to a bool resource (its default value).
    static func booleanAttribute(_ element: XMLTree.Element, id: UInt32, name: String, table: ResourceTable) -> Bool? {
        guard let value = element.attribute(id: id, name: name)?.value else { return nil }
        if let flag = value.booleanValue { return flag }
        guard case .typed(.reference, let reference) = value, let resource = table.resourceName(for: reference) else { return nil }
        return table.currentValue(type: resource.type, named: resource.name)?.booleanValue
    }

    static func readCertificateFile(_ path: String) throws -> [UInt8] {
        let bytes: [UInt8]
        // Read without blocking (a FIFO is refused) and bounded: a certificate is a few kilobytes.
        do { bytes = try RegularFile.contents(of: path, limit: 1 << 20) } catch let error as FileError {
            throw OverlayError.unsupportedEdit("certificate \(path) cannot be read: \(error.reason)")
        }
        guard (try? Certificate.parseAll(pemOrDER: bytes))?.isEmpty == false else {
            throw OverlayError.unsupportedEdit("\(path) is not an X.509 certificate in PEM or DER form (as `openssl x509 -outform der` writes it)")
        }
        return bytes
    }

    /// The pin Android checks: base64 of the SHA-256 of the certificate's SubjectPublicKeyInfo.
    static func spkiPin(of path: String) throws -> String {
        guard let certificate = try Certificate.parseAll(pemOrDER: try readCertificateFile(path)).first else {
            throw OverlayError.unsupportedEdit("\(path) holds no certificate")
        }
        let spki = try certificate.publicKey().subjectPublicKeyInfoDER
        return Data(Digest.hash(spki, with: .sha256)).base64EncodedString()
    }
}

/// Edits the elements of a network security config, compiling new attributes the way the file's producer did.
private struct ConfigEditor {
    var table: ResourceTable
    let policy: XMLTree.RawValuePolicy
    let path: String

    func attribute(_ name: String, _ value: String) throws -> XMLTree.Attribute {
        try XMLTree.compileAttribute(namespace: nil, name: name, value: value, resources: table, context: path, rawValues: policy)
    }

    func element(_ name: String, _ attributes: [(String, String)] = [], text: String? = nil, line: UInt32) throws -> XMLTree.Element {
        XMLTree.Element(name: name, attributes: try attributes.map { try attribute($0.0, $0.1) },
                        children: text.map { [.text(XMLTree.Text(text: $0, lineNumber: line))] } ?? [], lineNumber: line, endLineNumber: line)
    }

    /// Adds the trust anchors to `base-config` and every `domain-config` (nested ones too), removing pin sets.
    func trust(_ anchors: [String], in element: inout XMLTree.Element, removingPins: Bool, pinned: inout [String]) throws {
        guard element.name == "base-config" || element.name == "domain-config" else { return }
        if removingPins, element.children.contains(where: { if case .element(let e) = $0 { return e.name == "pin-set" }; return false }) {
            element.children.removeAll { if case .element(let e) = $0 { return e.name == "pin-set" }; return false }
            pinned += element.elements(named: "domain").map { $0.children.compactMap { if case .text(let t) = $0 { return String(t.text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()) }; return nil }.joined() }
        }
        if !element.elements.contains(where: { $0.name == "trust-anchors" }) {
            element.children.append(.element(try self.element("trust-anchors", line: element.lineNumber)))
        }
        for index in element.children.indices {
            guard case .element(var child) = element.children[index] else { continue }
            if child.name == "trust-anchors" {
                let present = Set(child.elements(named: "certificates").compactMap { certificates -> String? in
                    guard let src = certificates.attributes.first(where: { $0.name == "src" })?.value else { return nil }
                    if let text = src.stringValue { return text }
                    if case .typed(.reference, let id) = src, let name = table.resourceName(for: id) { return "@\(name.type)/\(name.name)" }
                    return nil
                })
                for anchor in anchors where !present.contains(anchor) {
                    child.children.append(.element(try self.element("certificates", [("src", anchor)], line: child.lineNumber)))
                }
            } else if child.name == "domain-config" {
                try trust(anchors, in: &child, removingPins: removingPins, pinned: &pinned)
            }
            element.children[index] = .element(child)
        }
    }

    /// A `<domain-config>` for the pin's domain (an existing one gets its pin set replaced).
    func addPins(_ pin: NetworkSecuritySpec.Pin, to root: inout XMLTree.Element) throws {
        guard pin.certificates.count >= 2 else {
            throw OverlayError.invalidSpec(path: "apkpatch.yml", reason: "networkSecurity.pin for \(pin.domain.cappedForMessage) has \(pin.certificates.count) certificate; Android's guidance is to pin a backup key too: give at least two certificates")
        }
        if let expiration = pin.expiration {
            let parts = expiration.split(separator: "-")
            guard parts.count == 3, parts[0].count == 4, parts.allSatisfy({ Int($0) != nil }) else {
                throw OverlayError.invalidSpec(path: "apkpatch.yml", reason: "networkSecurity.pin expiration '\(expiration.cappedForMessage)' is not a date like 2027-06-30")
            }
        }
        let line = root.lineNumber
        var pinSet = try element("pin-set", pin.expiration.map { [("expiration", $0)] } ?? [], line: line)
        for certificate in pin.certificates {
            pinSet.children.append(.element(try element("pin", [("digest", "SHA-256")], text: try NetworkSecurityPreset.spkiPin(of: certificate), line: line)))
        }
        func domains(of element: XMLTree.Element) -> [String] {
            element.elements(named: "domain").map { $0.children.compactMap { if case .text(let t) = $0 { return String(t.text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()) }; return nil }.joined() }
        }
        if let index = root.children.firstIndex(where: { if case .element(let e) = $0 { return e.name == "domain-config" && domains(of: e).contains(pin.domain) }; return false }),
           case .element(var config) = root.children[index] {
            config.children.removeAll { if case .element(let e) = $0 { return e.name == "pin-set" }; return false }
            config.children.append(.element(pinSet))
            root.children[index] = .element(config)
        } else {
            var config = try element("domain-config", line: line)
            config.children = [.element(try element("domain", [("includeSubdomains", "true")], text: pin.domain, line: line)), .element(pinSet)]
            root.children.append(.element(config))
        }
    }
}
