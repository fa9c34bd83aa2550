import APKCore
import OpenSSLWrapper

/// A signature scheme the signer can produce.
public enum SignatureScheme: Int, Sendable, Hashable, CaseIterable, Comparable, CustomStringConvertible {
    /// JAR signing: `META-INF/MANIFEST.MF`, `<NAME>.SF`, `<NAME>.<RSA|EC|DSA>`. Needed below API 24.
    case v1 = 1
    /// APK Signature Scheme v2 (API 24+): a whole-file signature in the APK Signing Block.
    case v2 = 2
    /// APK Signature Scheme v3 (API 28+): v2 plus SDK ranges and key rotation.
    case v3 = 3

    public static func < (a: SignatureScheme, b: SignatureScheme) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "v\(rawValue)" }
}

/// What `Signer` needs besides the APK: the key, which schemes to produce, and apksigner's options.
///
/// Defaults are the `apksigner sign` CLI's (build-tools 35): all three schemes, minSdkVersion read from the
/// APK's manifest, `Created-By: 1.0 (Android)`, every stored entry re-aligned (4 bytes; `.so` files on
/// 16 KiB pages), the JAR signature files deflated at zlib's level 9.
public struct SignerConfig: Sendable {
    /// The signing key, its certificate chain and the signer name (v1 file names come from it). Reading it
    /// waits for a key still being loaded (`init(pendingKey:)`), and throws what loading it threw.
    public var key: SignerKey { get throws { try keySupply.get() } }
    /// The key, or its loading on another thread: the signer copies and digests the APK meanwhile, and
    /// waits only where it signs.
    public let keySupply: BackgroundValue<SignerKey>
    /// The schemes to sign with; at least one.
    public var schemes: Set<SignatureScheme>
    /// Overrides the APK's `minSdkVersion` (apksigner `--min-sdk-version`). It decides the v1 digest
    /// (SHA-1 below 18 for RSA) and must be ≥ 18 for EC keys with v1.
    public var minSdkVersion: Int?
    /// apksigner `--max-sdk-version`: accepted and reported; like apksigner, it does not change what is signed
    /// (the v3 signer always covers API 24 to `Int32.max`).
    public var maxSdkVersion: Int?
    /// The `.SF` file's `Created-By` value.
    public var createdBy: String
    /// apksigner `--alignment-preserved`: keep each entry's input alignment (build-tools ≤ 34 behaviour)
    /// instead of re-aligning every stored entry.
    public var alignmentPreserved: Bool
    /// With `alignmentPreserved`, whether to write an APK anyway when an entry Android requires aligned
    /// (`PackagingRequirements`: `resources.arsc` for targetSdk 30+, native libraries Android maps) would stay
    /// unaligned. False (the default) refuses before anything is written (`SignError.alignedEntriesRequired`):
    /// such an APK does not install. apksigner writes it; true does too, for a caller who asks for that.
    public var misalignedAPKPermitted = false
    /// Page alignment for stored `.so` files (apksigner `--lib-page-alignment`).
    public var libraryPageAlignment: Int
    /// apksigner `--v1-signer-name`: the base name of the v1 `.SF` and signature block files, instead of the
    /// key's alias or file name. Made safe the same way (upper case, 8 characters, `[A-Z0-9_-]`).
    public var v1SignerName: String?
    /// apksigner `--debuggable-apk-permitted`: false refuses an APK whose manifest says
    /// `android:debuggable="true"` (a production key should not sign one: anybody with adb can run code as
    /// that app). True by default, as in apksigner.
    public var debuggableAPKPermitted: Bool = true
    /// A key rotation: the v3 block is signed by its newer keys with the lineage (`key` signs v1 and v2).
    public var rotation: SignerRotation?
    /// More signers without a lineage (apksigner `--next-signer` without `--lineage`): v1 and v2 carry every
    /// signer, `key` first; v3 holds one signer, so it cannot be enabled with them (apksig refuses it too).
    public var additionalSigners: [SignerKey] = []
    /// apksigner `--verity-enabled`: v2 and v3 signers of RSA keys up to 3072 bits, EC P-256 and DSA keys add
    /// the verity variant of their algorithm (0x0421, 0x0423, 0x0425), which signs the fs-verity root hash.
    public var verityEnabled = false
    /// apksigner `--align-file-size`: zeros added to the ZIP comment make the signed APK's size a multiple of
    /// 4096 bytes (only with a v2/v3 signature, as apksig).
    public var alignsFileSize = false
    /// apksigner `--deterministic-dsa-signing`: every DSA signature (v1, v2, v3, v4) takes its k from RFC 6979
    /// instead of the random generator, so the same APK and DSA key give the same bytes, as RSA keys always do.
    /// RSA and EC keys are unaffected (apksig signs ECDSA with a random k either way).
    public var deterministicDSASigning = false
    /// A source stamp to add (apksigner `--stamp-signer`): the `stamp-cert-sha256` entry, covered by the
    /// signatures, and a stamp pair in the APK Signing Block over the digests they sign.
    public var sourceStamp: SourceStampConfig?
    /// How many entries/chunks are digested at once (defaults to the number of cores).
    public var concurrency: Int
    /// Deflate level of the JAR signature files (`--jar-deflate-level`). 9, as apksig: reproducible-build
    /// checks (F-Droid's apksigcopier) copy a signature onto an unsigned build by recompressing these files
    /// with zlib and refuse any level they cannot reproduce, so the default must be zlib's level 9 output.
    /// Levels below 9 use libdeflate (MANIFEST.MF and the .SF file are about a megabyte each for a large APK,
    /// which zlib's level 9 compresses slowly): for outputs nothing downstream re-reads, such as watch mode's
    /// working builds, which use 0 (deflate's stored blocks: no compression work).
    public var jarSignatureCompressionLevel: Int32 = SignerConfig.defaultJARSignatureCompressionLevel
    /// The v4 signature the caller will make of the output (`V4SchemeSigner.updateSignature`). On, the signer
    /// hashes the fs-verity leaves of the blocks it copies while it has them in hand (`SigningReport.verityLeaves`),
    /// so that the v4 tree reads only what follows them; off, nothing is spent on them. Asked for explicitly
    /// (`.on(reportsFailure: true)`), a v4 signature this configuration cannot give for the APK is refused
    /// before the output is published (`SignerConfig.checkV4Signature`), not found after it was written.
    public var v4Request: V4SigningRequest = .off
    /// Whether a v4 signature will be made of the output (`v4Request` on; setting true asks for one whose
    /// failure is not an error).
    public var preparesV4Signature: Bool {
        get { v4Request != .off }
        set { if newValue != preparesV4Signature { v4Request = newValue ? .on(reportsFailure: false) : .off } }
    }
    /// The signer makes the v4 signature itself (`SigningReport.v4Signature`), on a free core while it writes and
    /// publishes the APK, for a caller that writes it with `V4SchemeSigner.updateSignature(forAPKAt:...:made:)`.
    public var makesV4Signature = false
    public static let defaultJARSignatureCompressionLevel: Int32 = 9

    public init(key: SignerKey, schemes: Set<SignatureScheme> = [.v1, .v2, .v3], minSdkVersion: Int? = nil,
                maxSdkVersion: Int? = nil, createdBy: String = "1.0 (Android)", alignmentPreserved: Bool = false,
                libraryPageAlignment: Int = 16384, concurrency: Int = 0) {
        self.init(pendingKey: BackgroundValue(ready: key), schemes: schemes, minSdkVersion: minSdkVersion, maxSdkVersion: maxSdkVersion,
                  createdBy: createdBy, alignmentPreserved: alignmentPreserved, libraryPageAlignment: libraryPageAlignment,
                  concurrency: concurrency)
    }

    /// A configuration whose key is still being loaded (decrypting a keystore is PBKDF2 work). Whoever
    /// made `pendingKey` must `wait()` for it before the process exits, also on failure.
    public init(pendingKey: BackgroundValue<SignerKey>, schemes: Set<SignatureScheme> = [.v1, .v2, .v3], minSdkVersion: Int? = nil,
                maxSdkVersion: Int? = nil, createdBy: String = "1.0 (Android)", alignmentPreserved: Bool = false,
                libraryPageAlignment: Int = 16384, concurrency: Int = 0) {
        self.keySupply = pendingKey
        self.schemes = schemes
        self.minSdkVersion = minSdkVersion
        self.maxSdkVersion = maxSdkVersion
        self.createdBy = createdBy
        self.alignmentPreserved = alignmentPreserved
        self.libraryPageAlignment = libraryPageAlignment
        self.concurrency = concurrency
    }

    /// `key` set up to sign as this configuration says (`deterministicDSASigning`).
    func signing(_ key: SignerKey) -> SignerKey {
        var key = key
        key.dsaNonce = deterministicDSASigning ? .deterministic : .random
        return key
    }
}
