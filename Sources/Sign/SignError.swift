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
    case duplicateEntry(String)
    case tooLarge(String)
    case invalidOption(String)
    /// The signer's own bookkeeping disagrees with itself (a bug, not something the caller can change).
    case internalInconsistency(String)
    case debuggableAPKNotPermitted
    case debuggableUndetermined(String)

    public var description: String {
        switch self {
        case .noSchemes:
            return "no signature scheme enabled: enable at least one of v1, v2 and v3"
        case .missingAndroidManifest:
            return "the APK has no AndroidManifest.xml, so its minSdkVersion is unknown. Use --min-sdk-version to override"
        case .unreadableMinSdkVersion(let reason):
            return "failed to determine the APK's minimum supported platform version (\(reason)). Use --min-sdk-version to override"
        case .codenameMinSdkVersion(let codename):
            return "the APK's minSdkVersion \"\(codename)\" is neither an API level nor a preview codename (those start with A-Z), so its platform version is unknown. Use --min-sdk-version to override"
        case .ecdsaJARSignatureNeedsAPI18(let level):
            return "ECDSA JAR (v1) signatures need minSdkVersion 18 or higher, but it is \(level): use an RSA key, raise --min-sdk-version, or turn v1 off with --v1-signing-enabled false"
        case .emptySignerName:
            return "the signer name is empty; v1 signature file names are made from it (give a key alias or a key file name)"
        case .noCertificate:
            return "the signer has no certificate: pass the certificate with --cert, or use a keystore entry that has one"
        case .keyDoesNotMatchCertificate(let subject):
            return "the private key does not match the certificate \(subject): pass the certificate that belongs to this key"
        case .malformedInputManifest(let reason):
            return "malformed META-INF/MANIFEST.MF in the input APK: \(reason). Fix or delete it before signing with v1"
        case .unsupportedEntryName(let name, let character):
            return "entry name \(name.debugDescription) contains character 0x\(String(character, radix: 16)), which a JAR manifest cannot express: rename the entry or sign without v1"
        case .duplicateEntry(let name):
            return "entry \(name.debugDescription) would appear twice in the signed APK"
        case .tooLarge(let reason):
            return "the signed APK would be too large: \(reason)"
        case .invalidOption(let reason):
            return reason
        case .internalInconsistency(let reason):
            return "internal error in the signer (\(reason)); please report it with the APK and the options used"
        case .debuggableAPKNotPermitted:
            return "the APK is debuggable (android:debuggable=\"true\" in AndroidManifest.xml) and --debuggable-apk-permitted is false: remove the attribute or sign with a debug key"
        case .debuggableUndetermined(let reason):
            return "cannot tell whether the APK is debuggable: \(reason)"
        }
    }
}
