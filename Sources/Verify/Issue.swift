import BinaryXML

/// A verification finding: an error (the APK does not verify) or a warning. Findings are data, not thrown
/// errors, as in apksig's `ApkVerifier.IssueWithParams`.
public struct Issue: Sendable, Hashable, CustomStringConvertible {
    /// Stable identifier: tests and `--json` consumers match on it, never on the message. Where the
    /// condition is apksig's, the raw value is apksig's `ApkVerifier.Issue` constant name verbatim.
    public let code: Code
    public let severity: Severity
    /// Where it was found: "" for the APK as a whole, "JAR signer CERT.RSA", "APK Signature Scheme v2
    /// signer #1", or an entry name for install checks.
    public let context: String
    /// What is wrong (and, where we can say, what to do).
    public let message: String
    /// INSTALL_RESOURCES_ARSC_ABOVE_MIN_SDK only: the table's encoding that devices below its
    /// `requiredMinSdkVersion` cannot read, which advice and `--json` take from here, not from the message.
    public let resourceTableEncoding: ResourceTableEncoding?

    /// `info` is apksig's info message (`IssueWithParams` in `getInfoMessages()`): something the verifier
    /// skipped that does not make the finding fail, such as a stamp signature by an algorithm it does not know.
    public enum Severity: String, Sendable, Hashable, Codable { case error, warning, info }

    public init(code: Code, severity: Severity, context: String = "", message: String, resourceTableEncoding: ResourceTableEncoding? = nil) {
        self.code = code; self.severity = severity; self.context = context; self.message = message
        self.resourceTableEncoding = resourceTableEncoding
    }

    static func error(_ code: Code, _ context: String = "", _ message: String) -> Issue {
        Issue(code: code, severity: .error, context: context, message: message)
    }
    static func warning(_ code: Code, _ context: String = "", _ message: String) -> Issue {
        Issue(code: code, severity: .warning, context: context, message: message)
    }
    static func info(_ code: Code, _ context: String = "", _ message: String) -> Issue {
        Issue(code: code, severity: .info, context: context, message: message)
    }

    /// "context: message", as apksigner prints after "ERROR: " / "WARNING: ".
    public var description: String { context.isEmpty ? message : "\(context): \(message)" }

    /// Stable issue codes. apksig's names are kept verbatim; codes apksig does not have start with
    /// `INSTALL_` (packaging rules Android's installer enforces) or name the failure plainly.
    public enum Code: String, Sendable, Hashable, CaseIterable, Codable {
        // The APK as a whole.
        case malformedAPK = "MALFORMED_APK"
        /// The path names no APK to read: missing, unreadable, or not a regular file (a FIFO, a device).
        case apkUnreadable = "APK_UNREADABLE"
        /// No minSdkVersion to verify for: AndroidManifest.xml is missing or unreadable, or its minSdkVersion is
        /// not a level (the caller can give one instead).
        case manifestUnreadable = "MANIFEST_UNREADABLE"
        case minSigSchemeForTargetSdkNotMet = "MIN_SIG_SCHEME_FOR_TARGET_SDK_NOT_MET"
        case noSigForTargetSandboxVersion = "NO_SIG_FOR_TARGET_SANDBOX_VERSION"

        // JAR signing (v1).
        case jarSigNoSignatures = "JAR_SIG_NO_SIGNATURES"
        case jarSigMaxSignaturesExceeded = "JAR_SIG_MAX_SIGNATURES_EXCEEDED"
        case jarSigNoSignedZipEntries = "JAR_SIG_NO_SIGNED_ZIP_ENTRIES"
        case jarSigDuplicateZipEntry = "JAR_SIG_DUPLICATE_ZIP_ENTRY"
        case jarSigDuplicateManifestSection = "JAR_SIG_DUPLICATE_MANIFEST_SECTION"
        case jarSigUnnamedManifestSection = "JAR_SIG_UNNNAMED_MANIFEST_SECTION"
        case jarSigUnnamedSigFileSection = "JAR_SIG_UNNNAMED_SIG_FILE_SECTION"
        case jarSigNoManifest = "JAR_SIG_NO_MANIFEST"
        case jarSigMissingZipEntryReferencedInManifest = "JAR_SIG_MISSING_ZIP_ENTRY_REFERENCED_IN_MANIFEST"
        case jarSigNoZipEntryDigestInManifest = "JAR_SIG_NO_ZIP_ENTRY_DIGEST_IN_MANIFEST"
        case jarSigNoZipEntryDigestInSigFile = "JAR_SIG_NO_ZIP_ENTRY_DIGEST_IN_SIG_FILE"
        case jarSigZipEntryNotSigned = "JAR_SIG_ZIP_ENTRY_NOT_SIGNED"
        case jarSigZipEntrySignersMismatch = "JAR_SIG_ZIP_ENTRY_SIGNERS_MISMATCH"
        case jarSigZipEntryDigestDidNotVerify = "JAR_SIG_ZIP_ENTRY_DIGEST_DID_NOT_VERIFY"
        case jarSigManifestMainSectionDigestDidNotVerify = "JAR_SIG_MANIFEST_MAIN_SECTION_DIGEST_DID_NOT_VERIFY"
        case jarSigManifestSectionDigestDidNotVerify = "JAR_SIG_MANIFEST_SECTION_DIGEST_DID_NOT_VERIFY"
        case jarSigNoManifestDigestInSigFile = "JAR_SIG_NO_MANIFEST_DIGEST_IN_SIG_FILE"
        case jarSigNoAPKSigStripProtection = "JAR_SIG_NO_APK_SIG_STRIP_PROTECTION"
        case jarSigMissingFile = "JAR_SIG_MISSING_FILE"
        case jarSigVerifyException = "JAR_SIG_VERIFY_EXCEPTION"
        case jarSigUnsupportedSigAlg = "JAR_SIG_UNSUPPORTED_SIG_ALG"
        case jarSigParseException = "JAR_SIG_PARSE_EXCEPTION"
        case jarSigDidNotVerify = "JAR_SIG_DID_NOT_VERIFY"
        case jarSigNoSigners = "JAR_SIG_NO_SIGNERS"
        case jarSigDuplicateSigFileSection = "JAR_SIG_DUPLICATE_SIG_FILE_SECTION"
        case jarSigMissingVersionAttrInSigFile = "JAR_SIG_MISSING_VERSION_ATTR_IN_SIG_FILE"
        case jarSigUnknownAPKSigSchemeID = "JAR_SIG_UNKNOWN_APK_SIG_SCHEME_ID"
        case jarSigMissingAPKSigReferenced = "JAR_SIG_MISSING_APK_SIG_REFERENCED"
        case jarSigUnprotectedZipEntry = "JAR_SIG_UNPROTECTED_ZIP_ENTRY"
        case jarSigMissing = "JAR_SIG_MISSING"
        /// Not apksig's: bytes of the entries section no entry accounts for, where only the JAR signature is
        /// checked (it does not cover them). An error before the first local header (Janus, CVE-2017-13156),
        /// a warning elsewhere (no central-directory reader, Android's included, sees them).
        case jarSigUnprotectedBytes = "JAR_SIG_UNPROTECTED_BYTES"

        // APK Signature Scheme v2.
        case v2SigMissing = "V2_SIG_MISSING"
        case v2SigMalformedSigners = "V2_SIG_MALFORMED_SIGNERS"
        case v2SigMalformedSigner = "V2_SIG_MALFORMED_SIGNER"
        case v2SigMalformedPublicKey = "V2_SIG_MALFORMED_PUBLIC_KEY"
        case v2SigMalformedCertificate = "V2_SIG_MALFORMED_CERTIFICATE"
        case v2SigMalformedSignature = "V2_SIG_MALFORMED_SIGNATURE"
        case v2SigMalformedDigest = "V2_SIG_MALFORMED_DIGEST"
        case v2SigMalformedAdditionalAttribute = "V2_SIG_MALFORMED_ADDITIONAL_ATTRIBUTE"
        case v2SigUnknownAPKSigSchemeID = "V2_SIG_UNKNOWN_APK_SIG_SCHEME_ID"
        case v2SigMissingAPKSigReferenced = "V2_SIG_MISSING_APK_SIG_REFERENCED"
        case v2SigMaxSignaturesExceeded = "V2_SIG_MAX_SIGNATURES_EXCEEDED"
        case v2SigNoSigners = "V2_SIG_NO_SIGNERS"
        case v2SigUnknownSigAlgorithm = "V2_SIG_UNKNOWN_SIG_ALGORITHM"
        case v2SigUnknownAdditionalAttribute = "V2_SIG_UNKNOWN_ADDITIONAL_ATTRIBUTE"
        case v2SigVerifyException = "V2_SIG_VERIFY_EXCEPTION"
        case v2SigDidNotVerify = "V2_SIG_DID_NOT_VERIFY"
        case v2SigNoSignatures = "V2_SIG_NO_SIGNATURES"
        case v2SigNoSupportedSignatures = "V2_SIG_NO_SUPPORTED_SIGNATURES"
        case v2SigNoCertificates = "V2_SIG_NO_CERTIFICATES"
        case v2SigPublicKeyMismatch = "V2_SIG_PUBLIC_KEY_MISMATCH_BETWEEN_CERTIFICATE_AND_SIGNATURES_RECORD"
        case v2SigAlgorithmMismatch = "V2_SIG_SIG_ALG_MISMATCH_BETWEEN_SIGNATURES_AND_DIGESTS_RECORDS"
        case v2SigAPKDigestDidNotVerify = "V2_SIG_APK_DIGEST_DID_NOT_VERIFY"

        // APK Signature Scheme v3 and v3.1.
        case v3SigMalformedSigners = "V3_SIG_MALFORMED_SIGNERS"
        case v3SigMalformedSigner = "V3_SIG_MALFORMED_SIGNER"
        case v3SigMalformedPublicKey = "V3_SIG_MALFORMED_PUBLIC_KEY"
        case v3SigMalformedCertificate = "V3_SIG_MALFORMED_CERTIFICATE"
        case v3SigMalformedSignature = "V3_SIG_MALFORMED_SIGNATURE"
        case v3SigMalformedDigest = "V3_SIG_MALFORMED_DIGEST"
        case v3SigMalformedAdditionalAttribute = "V3_SIG_MALFORMED_ADDITIONAL_ATTRIBUTE"
        case v3SigNoSigners = "V3_SIG_NO_SIGNERS"
        case v3SigMultipleSigners = "V3_SIG_MULTIPLE_SIGNERS"
        case v3SigMultiplePastSigners = "V3_SIG_MULTIPLE_PAST_SIGNERS"
        case v3SigPastSignersMismatch = "V3_SIG_PAST_SIGNERS_MISMATCH"
        case v3SigUnknownSigAlgorithm = "V3_SIG_UNKNOWN_SIG_ALGORITHM"
        case v3SigUnknownAdditionalAttribute = "V3_SIG_UNKNOWN_ADDITIONAL_ATTRIBUTE"
        case v3SigVerifyException = "V3_SIG_VERIFY_EXCEPTION"
        case v3SigInvalidSdkVersions = "V3_SIG_INVALID_SDK_VERSIONS"
        case v3SigDidNotVerify = "V3_SIG_DID_NOT_VERIFY"
        case v3SigNoSignatures = "V3_SIG_NO_SIGNATURES"
        case v3SigNoSupportedSignatures = "V3_SIG_NO_SUPPORTED_SIGNATURES"
        case v3SigNoCertificates = "V3_SIG_NO_CERTIFICATES"
        case v3MinSdkVersionMismatch = "V3_MIN_SDK_VERSION_MISMATCH_BETWEEN_SIGNER_AND_SIGNED_DATA_RECORD"
        case v3MaxSdkVersionMismatch = "V3_MAX_SDK_VERSION_MISMATCH_BETWEEN_SIGNER_AND_SIGNED_DATA_RECORD"
        case v3SigPublicKeyMismatch = "V3_SIG_PUBLIC_KEY_MISMATCH_BETWEEN_CERTIFICATE_AND_SIGNATURES_RECORD"
        case v3SigAlgorithmMismatch = "V3_SIG_SIG_ALG_MISMATCH_BETWEEN_SIGNATURES_AND_DIGESTS_RECORDS"
        case v3SigAPKDigestDidNotVerify = "V3_SIG_APK_DIGEST_DID_NOT_VERIFY"
        case v3SigPORDidNotVerify = "V3_SIG_POR_DID_NOT_VERIFY"
        case v3SigMalformedLineage = "V3_SIG_MALFORMED_LINEAGE"
        case v3SigPORCertMismatch = "V3_SIG_POR_CERT_MISMATCH"
        case v3InconsistentSdkVersions = "V3_INCONSISTENT_SDK_VERSIONS"
        case v3MissingSdkVersions = "V3_MISSING_SDK_VERSIONS"
        case v3InconsistentLineages = "V3_INCONSISTENT_LINEAGES"
        case v31BlockMissing = "V31_BLOCK_MISSING"
        case v31RotationMinSdkMismatch = "V31_ROTATION_MIN_SDK_MISMATCH"
        case v31RotationMinSdkAttrMissing = "V31_ROTATION_MIN_SDK_ATTR_MISSING"
        case v31BlockFoundWithoutV3Block = "V31_BLOCK_FOUND_WITHOUT_V3_BLOCK"
        case v31RotationTargetsDevReleaseAttrOnV3Signer = "V31_ROTATION_TARGETS_DEV_RELEASE_ATTR_ON_V3_SIGNER"
        case v32BlockMissing = "V32_BLOCK_MISSING"
        /// Not apksig's: a v3.2 block apkpatch cannot check (no ML-DSA in OpenSSL 3.0), where Android would
        /// (a maximum SDK version below 37 verifies the rest).
        case v32Unsupported = "V32_SIG_UNSUPPORTED"
        /// Not apksig's (a warning): a v3.0 signer that is not the v1/v2 signer and has no lineage from it, beside
        /// a v3.1 block whose lineage links them; apksig accepts it on that lineage, which only API 33+ reads.
        case v30SigPastSignersMismatch = "V30_SIG_PAST_SIGNERS_MISMATCH"

        // APK Signature Scheme v4 (the .idsig file given with --v4-signature-file).
        case v4SigMalformedSigners = "V4_SIG_MALFORMED_SIGNERS"
        case v4SigUnknownSigAlgorithm = "V4_SIG_UNKNOWN_SIG_ALGORITHM"
        case v4SigDidNotVerify = "V4_SIG_DID_NOT_VERIFY"
        case v4SigMalformedCertificate = "V4_SIG_MALFORMED_CERTIFICATE"
        case v4SigPublicKeyMismatch = "V4_SIG_PUBLIC_KEY_MISMATCH_BETWEEN_CERTIFICATE_AND_SIGNATURES_RECORD"
        case v4SigV2V3SignersMismatch = "V4_SIG_V2_V3_SIGNERS_MISMATCH"
        case v4SigV2V3DigestsMismatch = "V4_SIG_V2_V3_DIGESTS_MISMATCH"
        case v4SigAPKRootDidNotVerify = "V4_SIG_APK_ROOT_DID_NOT_VERIFY"
        case v4SigAPKTreeDidNotVerify = "V4_SIG_APK_TREE_DID_NOT_VERIFY"
        case v4SigMultipleSigners = "V4_SIG_MULTIPLE_SIGNERS"
        case v41SigNeedsTwoSigners = "V41_SIG_NEEDS_TWO_SIGNERS"

        // Source stamps (`SourceStampVerifier`). apksig reports a stamp's problems as warnings of the stamp
        // (`SOURCE_STAMP_SIG_MISSING` as one of the APK): a bad stamp never fails the APK's verification.
        case sourceStampSigMissing = "SOURCE_STAMP_SIG_MISSING"
        case sourceStampMalformedCertificate = "SOURCE_STAMP_MALFORMED_CERTIFICATE"
        case sourceStampMalformedSignature = "SOURCE_STAMP_MALFORMED_SIGNATURE"
        case sourceStampUnknownSigAlgorithm = "SOURCE_STAMP_UNKNOWN_SIG_ALGORITHM"
        case sourceStampVerifyException = "SOURCE_STAMP_VERIFY_EXCEPTION"
        case sourceStampDidNotVerify = "SOURCE_STAMP_DID_NOT_VERIFY"
        case sourceStampNoSignature = "SOURCE_STAMP_NO_SIGNATURE"
        case sourceStampNoSupportedSignature = "SOURCE_STAMP_NO_SUPPORTED_SIGNATURE"
        case sourceStampCertificateMismatch = "SOURCE_STAMP_CERTIFICATE_MISMATCH_BETWEEN_SIGNATURE_BLOCK_AND_APK"
        case sourceStampMalformedAttribute = "SOURCE_STAMP_MALFORMED_ATTRIBUTE"
        case sourceStampUnknownAttribute = "SOURCE_STAMP_UNKNOWN_ATTRIBUTE"
        case sourceStampMalformedLineage = "SOURCE_STAMP_MALFORMED_LINEAGE"
        case sourceStampPORCertMismatch = "SOURCE_STAMP_POR_CERT_MISMATCH"
        case sourceStampPORDidNotVerify = "SOURCE_STAMP_POR_DID_NOT_VERIFY"
        case sourceStampInvalidTimestamp = "SOURCE_STAMP_INVALID_TIMESTAMP"
        // Checking the stamp alone (`Verifier.verifySourceStampOnly`, apksigner `--verify-source-stamp`): errors.
        case sourceStampCertDigestAndSigBlockMissing = "SOURCE_STAMP_CERT_DIGEST_AND_SIG_BLOCK_MISSING"
        case sourceStampSignatureBlockWithoutCertDigest = "SOURCE_STAMP_SIGNATURE_BLOCK_WITHOUT_CERT_DIGEST"
        case sourceStampExpectedDigestMismatch = "SOURCE_STAMP_EXPECTED_DIGEST_MISMATCH"

        // Install checks beyond apksigner (what makes Android's installer refuse an APK apksigner accepts).
        case installResourcesArscCompressed = "INSTALL_RESOURCES_ARSC_COMPRESSED"
        case installResourcesArscNotAligned = "INSTALL_RESOURCES_ARSC_NOT_ALIGNED"
        /// A `resources.arsc` that Android's resource loader refuses, or reads only in part
        /// (`ResourceTableLoadCheck`, which names the libandroidfw check).
        case installResourcesArscMalformed = "INSTALL_RESOURCES_ARSC_MALFORMED"
        /// A well-formed `resources.arsc` in an encoding (sparse types, compact entries, 16-bit offsets) that
        /// Android reads only from a release above the manifest's minSdkVersion.
        case installResourcesArscAboveMinSdk = "INSTALL_RESOURCES_ARSC_ABOVE_MIN_SDK"
        case installNativeLibraryCompressed = "INSTALL_NATIVE_LIBRARY_COMPRESSED"
        case installNativeLibraryNotPageAligned = "INSTALL_NATIVE_LIBRARY_NOT_PAGE_ALIGNED"
        case installNativeLibraryNot16KAligned = "INSTALL_NATIVE_LIBRARY_NOT_16K_ALIGNED"
        /// Bytes before the first local header: Android 8.1+ does not open the APK (libziparchive).
        case installBytesBeforeFirstEntry = "INSTALL_BYTES_BEFORE_FIRST_ENTRY"
        /// A 64-bit native library with a `PT_LOAD` segment aligned to less than 16 KiB (`p_align`).
        case installNativeLibraryELFNot16KAligned = "INSTALL_NATIVE_LIBRARY_ELF_NOT_16K_ALIGNED"

        // The archive's layout, beyond apksigner (`ArchiveChecks`): what every other command refuses to read.
        /// Bytes in the entries section that no entry of the central directory accounts for.
        case archiveUnaccountedBytes = "ARCHIVE_UNACCOUNTED_BYTES"
        /// Bytes between the central directory and the end of central directory record.
        case archiveBytesBeforeEndRecord = "ARCHIVE_BYTES_BEFORE_END_RECORD"
        /// An entry count in the end record that disagrees with the central directory's records.
        case archiveEntryCountMismatch = "ARCHIVE_ENTRY_COUNT_MISMATCH"
        /// More than one end of central directory record that ends the file.
        case archiveSecondEndRecord = "ARCHIVE_SECOND_END_RECORD"

        /// Compressed bytes after the end of an entry's deflate stream (found where the entry is inflated for
        /// its JAR digest): no reader sees them, apksig and Android accept them, apkpatch's writers refuse them.
        case entryBytesAfterDeflateStream = "ENTRY_BYTES_AFTER_DEFLATE_STREAM"
        /// An entry whose data cannot be read (a deflate stream that fails or does not end, another size than the
        /// header's), found by `verify --check-entries` where the JAR check does not read it: the APK verifies
        /// and installs, and reading the entry fails on the device.
        case entryDataCorrupt = "ENTRY_DATA_CORRUPT"
        /// An entry whose data has another CRC-32 than its header's (`verify --check-entries`): Android reads it
        /// without comparing, readers that check refuse it.
        case entryCRC32Mismatch = "ENTRY_CRC32_MISMATCH"

        /// True for the packaging checks that apksigner does not make (`--signature-only` skips them).
        public var isInstallCheck: Bool { rawValue.hasPrefix("INSTALL_") }
    }
}
