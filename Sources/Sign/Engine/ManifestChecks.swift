import Align
import APKCore
import BinaryXML

// What `Signer` reads from AndroidManifest.xml before the engine runs, as apksig's `ApkSigner` does.
extension Signer {
    /// apksigner `--debuggable-apk-permitted false` (apksig's `ApkUtils.getDebuggableFromBinaryAndroidManifest`):
    /// the first `<application>` decides; a boolean, string or integer value is debuggable when it reads
    /// "true", "TRUE" or "1" (so `android:debuggable="true"` stored as a string counts, and the integer 5 does
    /// not); a reference is refused, since its value depends on the device's configuration and the same APK
    /// could be debuggable on one device and not on another (ApkSignerTest testDebuggableApk).
    func checkDebuggable(_ manifest: () throws -> [UInt8]?) throws {
        guard !config.debuggableAPKPermitted else { return }
        guard let bytes = try manifest() else { throw SignError.missingAndroidManifest }
        let summary: ManifestSummary
        do { summary = try ManifestSummary(binaryXML: bytes) } catch {
            throw SignError.debuggableUndetermined("AndroidManifest.xml: \(error)")
        }
        if try Self.apksigDebuggable(summary.debuggableAttribute) { throw SignError.debuggableAPKNotPermitted }
    }

    /// `getDebuggableFromBinaryAndroidManifest` for the attribute's stored value.
    static func apksigDebuggable(_ attribute: XMLTree.Attribute?) throws -> Bool {
        guard let attribute else { return false }
        let text: String
        switch attribute.value {
        case .string(let string): text = string
        case .typed(.intBoolean, let data): text = data != 0 ? "true" : "false"
        case .typed(.intDecimal, let data), .typed(.intHex, let data): text = String(Int32(bitPattern: data))
        case .typed(.reference, let id), .typed(.dynamicReference, let id):
            throw SignError.debuggableUndetermined("android:debuggable refers to the resource 0x\(String(id, radix: 16)); only a literal true or false can be checked")
        case .typed(let type, _):
            throw SignError.debuggableUndetermined("android:debuggable has a value of type \(type); only boolean, string and integer values can be checked")
        }
        return text == "true" || text == "TRUE" || text == "1"
    }

    /// apksig's `getMinSdkVersionFromBinaryAndroidManifest` (`SDKVersion.minSdkVersion(of:)`), unless
    /// `--min-sdk-version` overrides it.
    func resolveMinSdkVersion(_ manifest: () throws -> [UInt8]?) throws -> (level: Int, overridden: Bool) {
        if let level = config.minSdkVersion { return (level, true) }
        guard let bytes = try manifest() else { throw SignError.missingAndroidManifest }
        let summary: ManifestSummary
        do { summary = try ManifestSummary(binaryXML: bytes) } catch {
            throw SignError.unreadableMinSdkVersion("AndroidManifest.xml: \(error)")
        }
        // Android reads such a manifest, but apksigner signs it only with --min-sdk-version, and its verify
        // refuses the output without one: refused here as apksigner refuses it.
        if let blocker = ManifestSummary.apksigMinSdkVersionBlocker(inBinaryXML: bytes) {
            throw SignError.unreadableMinSdkVersion("AndroidManifest.xml has \(blocker)")
        }
        switch SDKVersion.minSdkVersion(of: summary.usesSDKMinSdkVersionAttributes) {
        case .success(let level): return (level, false)
        case .failure(.unsupportedCodename(let codename)): throw SignError.codenameMinSdkVersion(codename)
        case .failure(.unsupportedValueType(let type)):
            throw SignError.unreadableMinSdkVersion("android:minSdkVersion has a value of type \(type), not an integer")
        }
    }

    /// Refuses, before anything is written, entries Android requires stored (`PackagingRequirements`) that are
    /// compressed: signed as they are, the APK would not install, and the signer copies entries as they are
    /// (re-compressing is the Repack stage's job: `run`). The manifest is read only when `resources.arsc` or a
    /// native library is compressed; an unreadable one leaves the rules out, as the verifier does. (Stored
    /// entries are re-aligned by default; with `alignmentPreserved` an unaligned one stays so, as apksigner
    /// leaves it: `PackagingRequirements.misalignedEntries` finds those.)
    /// The rules an input's preserved alignment must meet (`alignmentPreserved` without
    /// `misalignedAPKPermitted`; the section writer checks where each entry lands), or nil when there is
    /// nothing to check: no stored entry falls under a rule, or the manifest does not read (the verifier then
    /// leaves the rules out too).
    func preservedAlignmentRequirements(_ entries: [ZipEntry], manifest: () throws -> [UInt8]?) -> PackagingRequirements? {
        guard config.alignmentPreserved && !config.misalignedAPKPermitted,
              entries.contains(where: { !$0.isCompressed && ($0.name == "resources.arsc" || PackagingRequirements.isNativeLibrary($0.name)) }),
              let bytes = try? manifest(), let summary = try? ManifestSummary(binaryXML: bytes) else { return nil }
        let requirements = PackagingRequirements(manifest: summary)
        return requirements.isEmpty ? nil : requirements
    }

    func checkPackaging(_ entries: [ZipEntry], manifest: () throws -> [UInt8]?) throws {
        // Through the buffer, which reads each entry in place: only the few candidates are copied.
        var candidates: [ZipEntry] = []
        entries.withUnsafeBufferPointer { entries in
            for index in entries.indices where entries[index].isCompressed
                && (entries[index].name == "resources.arsc" || PackagingRequirements.isNativeLibrary(entries[index].name)) {
                candidates.append(entries[index])
            }
        }
        guard !candidates.isEmpty, let bytes = try? manifest(), let summary = try? ManifestSummary(binaryXML: bytes) else { return }
        let requirements = PackagingRequirements(manifest: summary)
        let violations = requirements.compressedViolations(in: candidates)
        if !violations.isEmpty {
            throw SignError.storedEntriesRequired(requirements.grouped(violations.map { ($0.entry.name, $0.rule) }))
        }
    }
}

extension PackagingRequirements {
    /// `violations` grouped by rule, in the order the rules first appear, each group with the rule's reason.
    func grouped<Entry>(_ violations: [(entry: Entry, rule: Rule)]) -> [SignError.RuleViolations<Entry>] {
        var rules: [Rule] = []
        var entries: [Rule: [Entry]] = [:]
        for (entry, rule) in violations {
            if entries[rule] == nil { rules.append(rule) }
            entries[rule, default: []].append(entry)
        }
        return rules.map { SignError.RuleViolations(entries: entries[$0] ?? [], reason: reason(for: $0)) }
    }
}
