import BinaryXML

/// Why an APK could not be signed. Each message says what to change.
public enum SignError: Error, CustomStringConvertible, Equatable {
    case noSchemes
    case missingAndroidManifest
    case unreadableMinSdkVersion(String)
    case codenameMinSdkVersion(String)
    case ecdsaJARSignatureNeedsAPI18(minSdkVersion: Int)
    case emptySignerName
    case noCertificate
    case keyDoesNotMatchCertificate(String)
    case malformedInputManifest(String)
    case unsupportedEntryName(String, character: UInt32)
    /// A content entry deeper under META-INF/ whose name ends as a signature block's (.RSA, .DSA, .EC): JAR
    /// verifiers (apksig, Android's StrictJarVerifier) read it as one more signer's signature, which no signing
    /// can make valid.
    case signatureBlockNamedEntry(String)
    case duplicateEntry(String)
    /// An entry read whole into memory (the manifest) declares more bytes than `limit`.
    case entryTooLargeToRead(String, size: Int64, limit: Int64)
    case tooLarge(String)
    /// The entries and the three JAR signature files pass the 65,535 a ZIP holds without ZIP64.
    case tooManyEntriesForJARSignature(entries: Int, over: Int)
    case invalidOption(String)
    /// The signer's own bookkeeping disagrees with itself (a bug, not something the caller can change).
    case internalInconsistency(String)
    case debuggableAPKNotPermitted
    case debuggableUndetermined(String)
    /// Entries Android requires stored are compressed (`PackagingRequirements`): signed as they are, the APK
    /// would not install. One group per rule broken, each with its reason.
    case storedEntriesRequired([RuleViolations<String>])
    /// An entry copied raw from the input whose data does not match its header: a CRC-32 other than the
    /// declared one, or a deflate stream that fails, does not end, ends before the entry's data does, or inflates
    /// to another size.
    case corruptEntry(String, reason: String)
    /// With `SignerConfig.alignmentPreserved`, entries Android requires aligned (`PackagingRequirements`) would
    /// stay where they are, unaligned: signed so, the APK would not install. One group per rule broken, each
    /// with its reason.
    case alignedEntriesRequired([RuleViolations<MisalignedEntry>])
    /// The `resources.arsc` to write is one Android's resource loader refuses or reads only in part
    /// (`ResourceTableLoadCheck`): signed, the APK would not install, or its app would fail.
    case resourceTableRefused(ResourceTableProblem)
    /// A source stamp key that is not RSA: apksig signs stamps with RSA PKCS#1 v1.5 SHA-256 only.
    case sourceStampKeyNotRSA(algorithm: String)
    /// The input's `stamp-cert-sha256` names another stamp certificate than the one to stamp with.
    case otherSourceStamp

    /// An entry whose data would start at `dataOffset` in the output, not a multiple of `alignment`.
    public struct MisalignedEntry: Sendable, Hashable {
        public let name: String
        public let dataOffset: Int64
        public let alignment: Int
    }

    /// The entries that break one packaging rule, and why Android holds them to it: an APK can break both
    /// rules (resources.arsc for its targetSdkVersion, native libraries for extractNativeLibs), each with
    /// its own reason.
    public struct RuleViolations<Entry: Sendable & Hashable>: Sendable, Hashable {
        public let entries: [Entry]
        public let reason: String

        public init(entries: [Entry], reason: String) {
            self.entries = entries
            self.reason = reason
        }
    }

    public var description: String {
        switch self {
        case .noSchemes:
            return "no signature scheme enabled: enable at least one of v1, v2 and v3"
        case .missingAndroidManifest:
            return "the APK has no AndroidManifest.xml, so its minSdkVersion is unknown: give the minSdkVersion to sign for"
        case .unreadableMinSdkVersion(let reason):
            return "failed to determine the APK's minimum supported platform version (\(reason)): give the minSdkVersion to sign for"
        case .codenameMinSdkVersion(let codename):
            return "the APK's minSdkVersion \"\(codename)\" is neither an API level nor a preview codename (those start with A-Z), so its platform version is unknown: give the minSdkVersion to sign for"
        case .ecdsaJARSignatureNeedsAPI18(let level):
            return "ECDSA JAR (v1) signatures need minSdkVersion 18 or higher, but it is \(level): use an RSA key, raise the minSdkVersion, or sign without v1"
        case .emptySignerName:
            return "the signer name is empty; v1 signature file names are made from it (give a key alias or a key file name)"
        case .noCertificate:
            return "the signer has no certificate: give the key's certificate, or use a keystore entry that has one"
        case .keyDoesNotMatchCertificate(let subject):
            return "the private key does not match the certificate \(subject): pass the certificate that belongs to this key"
        case .malformedInputManifest(let reason):
            return "malformed META-INF/MANIFEST.MF in the input APK: \(reason). Fix or delete it before signing with v1"
        case .unsupportedEntryName(let name, let character):
            return "entry name \(name.debugDescription) contains character 0x\(String(character, radix: 16)), which a JAR manifest cannot express: rename the entry or sign without v1"
        case .signatureBlockNamedEntry(let name):
            return "entry \(name.debugDescription) lies under META-INF/ and ends as a JAR signature block does, so Android and apksigner would read it as the signature of another signer that nothing can make valid: remove or rename the entry, or sign without v1"
        case .duplicateEntry(let name):
            return "entry \(name.debugDescription) would appear twice in the signed APK"
        case .entryTooLargeToRead(let name, let size, let limit):
            return "entry \(name.debugDescription) declares \(size) bytes uncompressed, over the \(limit >> 20) MiB limit for an entry read into memory (a zip bomb or a corrupt header)"
        case .tooLarge(let reason):
            return "the signed APK would be too large: \(reason)"
        case .tooManyEntriesForJARSignature(let entries, let over):
            return "the signed APK would be too large: its \(entries) entries and the 3 JAR signature files pass the 65,535 entries a ZIP holds without ZIP64, which older Android versions cannot read: sign without v1 (for minSdkVersion 24 and up) or remove \(over) entries"
        case .invalidOption(let reason):
            return reason
        case .internalInconsistency(let reason):
            return "internal error in the signer (\(reason)); please report it with the APK and the options used"
        case .debuggableAPKNotPermitted:
            return "the APK is debuggable (android:debuggable=\"true\" in AndroidManifest.xml) and debuggable APKs are not permitted: remove the attribute or sign with a debug key"
        case .debuggableUndetermined(let reason):
            return "cannot tell whether the APK is debuggable: \(reason)"
        case .storedEntriesRequired(let groups):
            let broken = groups.map { group in
                let names = group.entries
                let listed = names.count <= 3 ? names.joined(separator: ", ") : names.prefix(3).joined(separator: ", ") + " and \(names.count - 3) more"
                return "\(listed) \(names.count == 1 ? "is" : "are") compressed, but \(group.reason)"
            }
            let count = groups.reduce(0) { $0 + $1.entries.count }
            return broken.joined(separator: "; ") + ": signed as it is, the APK would not install, so nothing was written. Store \(count == 1 ? "it" : "them") uncompressed, then sign"
        case .alignedEntriesRequired(let groups):
            let broken = groups.map { group in
                let entries = group.entries
                let described = entries.prefix(3).map { "\($0.name) (data at offset \($0.dataOffset), not a multiple of \($0.alignment))" }
                let listed = described.joined(separator: ", ") + (entries.count > 3 ? " and \(entries.count - 3) more" : "")
                return "\(listed) would stay unaligned because the input's alignment is preserved, but \(group.reason)"
            }
            return broken.joined(separator: "; ") + ": signed so, the APK would not install, so nothing was written. Let the signer re-align stored entries (its default), or ask explicitly to keep the input's alignment anyway"
        case .corruptEntry(let name, let reason):
            return "entry \(name.debugDescription) of the input is corrupt: \(reason). Signing copies entries as they are and would sign the damage in: rebuild the APK, or replace the entry"
        case .sourceStampKeyNotRSA(let algorithm):
            return "the source stamp key is \(algorithm), but source stamps are signed with RSA (PKCS#1 v1.5, SHA-256) only, which is all Android's stamp verifier and apksig use: give an RSA key for the stamp"
        case .otherSourceStamp:
            return "the APK already carries a source stamp entry (stamp-cert-sha256) naming another stamp certificate than this stamp key's, so nothing was written: stamp with that certificate's key, or ask to replace the existing stamp"
        case .resourceTableRefused(let problem):
            return "resources.arsc: \(problem). Signed, the APK would not install or its app would fail, so nothing was written. \(problem.remedy), then sign"
        }
    }
}
