import APKCore
import ArgumentParser
import Sign

/// apksigner's scheme, SDK and output options (all but the key's), shared by `sign`, `run`, `watch` and `merge`
/// so the pipeline mirrors `apkpatch sign`. Like apksigner, a boolean option given without a value means true,
/// but `--deterministic-dsa-signing` false (`APKPatch.apksignerBooleans`).
struct SchemeOptions: ParsableArguments {
    @Option(name: .customLong("v1-signing-enabled"), help: ArgumentHelp("Sign with JAR signing (v1): true or false.", valueName: "true|false"))
    var v1: Bool?
    @Option(name: .customLong("v2-signing-enabled"), help: ArgumentHelp("Sign with APK Signature Scheme v2: true or false.", valueName: "true|false"))
    var v2: Bool?
    @Option(name: .customLong("v3-signing-enabled"), help: ArgumentHelp("Sign with APK Signature Scheme v3: true or false.", valueName: "true|false"))
    var v3: Bool?
    @Option(name: .customLong("v4-signing-enabled"), help: ArgumentHelp("Write the v4 signature <out>.idsig (for adb install --incremental): true or false. Default on, as apksigner; a failure to make it (no v2/v3 signature) is an error only when this option is given.", valueName: "true|false"))
    var v4: Bool?
    @Option(name: .customLong("min-sdk-version"), help: ArgumentHelp("Lowest API level the signature must verify on (default: the manifest's minSdkVersion).", valueName: "level"))
    var minSdkVersion: Int?
    @Option(name: .customLong("max-sdk-version"), help: ArgumentHelp("Highest API level the signature must verify on.", valueName: "level"))
    var maxSdkVersion: Int?
    @Option(name: .customLong("alignment-preserved"), help: ArgumentHelp("Keep the input's entry alignment instead of re-aligning stored entries (apksigner ≥ 35 re-aligns).", valueName: "true|false"))
    var alignmentPreserved: Bool = false
    @Option(name: .customLong("misaligned-apk-permitted"), help: ArgumentHelp("With --alignment-preserved true, true writes the APK even when an entry Android requires aligned (resources.arsc for targetSdk 30+, native libraries with extractNativeLibs=false) stays unaligned, though it will not install; default false refuses and writes nothing.", valueName: "true|false"))
    var misalignedAPKPermitted: Bool = false
    @Option(name: .customLong("lib-page-alignment"), help: ArgumentHelp("Page alignment in bytes for stored .so files: 16384 (default; Android 15 devices with 16 KiB pages), 4096, or any up to 65530.", valueName: "bytes"))
    var libraryPageAlignment: Int = 16384
    @Option(name: .customLong("jar-deflate-level"), help: ArgumentHelp("Deflate level (0-9) of the v1 signature files (default 9, as apksigner: what apksigcopier and reproducible-build checks need; 1 is cheaper on a large APK whose signature nothing will copy).", valueName: "level"))
    var jarDeflateLevel: Int = Int(SignerConfig.defaultJARSignatureCompressionLevel)
    @Option(name: .customLong("v1-signer-name"), help: ArgumentHelp("Base name of the v1 signature files (META-INF/NAME.SF), instead of the key alias or key file name.", valueName: "name"))
    var v1SignerName: String?
    @Option(name: .customLong("debuggable-apk-permitted"), help: ArgumentHelp("false refuses to sign an APK whose manifest says android:debuggable=\"true\" (default true, as apksigner).", valueName: "true|false"))
    var debuggableAPKPermitted: Bool = true
    @Option(name: .customLong("deterministic-dsa-signing"), help: ArgumentHelp("DSA keys: sign with RFC 6979's deterministic k instead of a random one, so signing the same APK twice gives the same bytes (RSA signatures always are; EC ones never are). Without a value it means false, as in apksigner: write true.", valueName: "true|false"))
    var deterministicDSASigning: Bool = false

    @Option(name: .customLong("lineage"), help: ArgumentHelp("Signing certificate lineage (apkpatch rotate, apksigner rotate, or a rotated APK) for a key rotation; the signers follow with --next-signer.", valueName: "path"))
    var lineage: String?
    @Flag(name: .customLong("next-signer"), help: "Starts the next signer's key options (a rotation's newer key, or another v1/v2 signer).")
    var nextSigner = false
    @Option(name: .customLong("rotation-min-sdk-version"), help: ArgumentHelp("API level from which the rotated key signs (default 33: a v3.1 block; below 33: the v3.0 block from 28).", valueName: "level"))
    var rotationMinSdkVersion: String?
    @Option(name: .customLong("rotation-targets-dev-release"), help: ArgumentHelp("The rotation level is a release in development (which reports the previous level): true or false.", valueName: "true|false"))
    var rotationTargetsDevRelease: Bool?
    @Option(name: .customLong("signer-for-min-sdk-version"), help: ArgumentHelp("Starts a signer used from this API level on (its key options and --signer-lineage follow); before the first signer's key options, targets that signer.", valueName: "level"))
    var signerForMinSdkVersion: String?
    @Option(name: .customLong("verity-enabled"), help: ArgumentHelp("Add the verity variants of the v2/v3 signature algorithms: true or false.", valueName: "true|false"))
    var verityEnabled: Bool?
    @Option(name: .customLong("align-file-size"), help: ArgumentHelp("Pad the ZIP comment so the APK's size is a multiple of 4096 bytes.", valueName: "true|false"))
    var alignFileSize: Bool?
    // Source stamp options (`apkpatch sign --stamp-signer`; elsewhere, and without a stamp signer, they do nothing,
    // as apksigner says: "no effect if no source stamp signer config is provided"), so scripts passing them work.
    @Option(name: .customLong("force-stamp-overwrite"), help: .hidden) var forceStampOverwrite: Bool?
    @Option(name: .customLong("stamp-timestamp-enabled"), help: .hidden) var stampTimestampEnabled: Bool?

    // apksigner options apkpatch does not take: parsed so that using one says so plainly, instead of "unknown
    // option" or, worse, a value taken for the input APK.
    // apksigner's `--stamp-signer` is followed by the stamp signer's key options (`--stamp-signer --ks stamp.jks`):
    // taken whatever it looks like, so that the refusal, not a missing value, is what the user reads.
    @Option(name: .customLong("stamp-signer"), parsing: .unconditional, help: .hidden) var stampSigner: String?
    @Option(name: .customLong("stamp-lineage"), help: .hidden) var stampLineage: String?
    @Option(name: .customLong("append-signature"), help: .hidden) var appendSignature: Bool?
    @Option(name: .customLong("provider-class"), help: .hidden) var providerClass: String?
    @Option(name: .customLong("provider-arg"), help: .hidden) var providerArgument: String?
    @Option(name: .customLong("provider-pos"), help: .hidden) var providerPosition: String?
    @Flag(name: .customLong("next-provider"), help: .hidden) var nextProvider = false
    @Option(name: .customLong("ks-provider-name"), help: .hidden) var keyStoreProviderName: String?
    @Option(name: .customLong("ks-provider-class"), help: .hidden) var keyStoreProviderClass: String?
    @Option(name: .customLong("ks-provider-arg"), help: .hidden) var keyStoreProviderArgument: String?
    @Option(name: .customLong("kms-type"), help: .hidden) var kmsType: String?
    @Option(name: .customLong("kms-key-alias"), help: .hidden) var kmsKeyAlias: String?

    /// The apksigner option given that apkpatch does not take, and why.
    var refusedOption: (option: String, reason: String)? {
        if stampSigner != nil || (stampLineage != nil && !Self.signsSourceStamp) {
            return (stampSigner != nil ? "--stamp-signer" : "--stamp-lineage",
                    "source stamps are added by apkpatch sign: stamp this command's output with apkpatch sign --stamp-signer …")
        }
        if appendSignature == true { return ("--append-signature", "keeping other signers' signatures is not supported: sign with every signer at once (--next-signer)") }
        let jca: [(String, Bool)] = [("--provider-class", providerClass != nil), ("--provider-arg", providerArgument != nil), ("--provider-pos", providerPosition != nil),
                                     ("--next-provider", nextProvider), ("--ks-provider-name", keyStoreProviderName != nil),
                                     ("--ks-provider-class", keyStoreProviderClass != nil), ("--ks-provider-arg", keyStoreProviderArgument != nil)]
        if let option = jca.first(where: \.1)?.0 { return (option, "Java security providers do not apply: apkpatch reads PKCS#12 and JKS keystores and PKCS#8 keys itself") }
        if kmsType != nil || kmsKeyAlias != nil { return (kmsType != nil ? "--kms-type" : "--kms-key-alias", "cloud KMS keys are not supported: sign with a keystore or --key/--cert") }
        return nil
    }

    /// Set by `main` for `sign`, `run`, `watch` and `merge`, the commands that sign a key rotation or several signers
    /// (`--lineage`, `--next-signer`), with verity, and align the file size.
    nonisolated(unsafe) static var signsRotation = false

    /// Set by `main` for `sign`, the command that adds a source stamp (`--stamp-signer`, `--stamp-lineage`).
    nonisolated(unsafe) static var signsSourceStamp = false

    /// The first apksigner option given that this command does not take yet, if any.
    var unsupportedOption: String? {
        if !Self.signsRotation {
            if lineage != nil { return "--lineage" }
            if nextSigner { return "--next-signer" }
            if rotationMinSdkVersion != nil { return "--rotation-min-sdk-version" }
            if rotationTargetsDevRelease == true { return "--rotation-targets-dev-release" }
            if alignFileSize == true { return "--align-file-size" }
            if verityEnabled == true { return "--verity-enabled" }
            if signerForMinSdkVersion != nil { return "--signer-for-min-sdk-version" }
        }
        return nil
    }

    var schemes: Set<SignatureScheme> {
        var set: Set<SignatureScheme> = []
        if v1 ?? true { set.insert(.v1) }
        if v2 ?? true { set.insert(.v2) }
        if v3 ?? true { set.insert(.v3) }
        return set
    }

    func validate() throws {
        if let option = unsupportedOption {
            throw ValidationError("\(option) is not supported yet here: use apkpatch sign, run, watch or merge")
        }
        if let refused = refusedOption {
            throw ValidationError("\(refused.option): \(refused.reason)")
        }
        if let level = rotationMinSdkVersion, Int(level) == nil {
            throw ValidationError("--rotation-min-sdk-version takes an API level, not \(level.cappedForMessage)")
        }
        if (rotationMinSdkVersion != nil || rotationTargetsDevRelease == true) && lineage == nil {
            throw ValidationError("a rotation needs --lineage FILE (the lineage from apkpatch rotate or apksigner rotate) and the signers with --next-signer")
        }
        if let level = signerForMinSdkVersion, Int(level) == nil {
            throw ValidationError("--signer-for-min-sdk-version takes an API level, not \(level.cappedForMessage)")
        }
        if signerForMinSdkVersion != nil && v3 == false {
            throw ValidationError("--signer-for-min-sdk-version targets a signer in the v3 signature: it needs v3 signing")
        }
        if nextSigner && lineage == nil && signerForMinSdkVersion == nil && v3 != false {
            // apksigner refuses it too (its v3 is on unless turned off, and v3 holds one signer).
            throw ValidationError("APK Signature Scheme v3 holds one signer: several signers (--next-signer) need --lineage FILE to be in v3 as a key rotation, or --v3-signing-enabled false to sign with v1 and v2 only (which carry every signer)")
        }
        if lineage != nil && !(v3 ?? true) {
            throw ValidationError("--lineage needs v3 signing: a lineage is carried in the v3 signature")
        }
        if schemes.isEmpty { throw ValidationError("all signature schemes are disabled; enable at least one of --v1/--v2/--v3-signing-enabled") }
        if let min = minSdkVersion, min < 1 { throw ValidationError("--min-sdk-version must be at least 1") }
        if let min = minSdkVersion, let max = maxSdkVersion, max < min { throw ValidationError("--max-sdk-version (\(max)) is below --min-sdk-version (\(min))") }
        // apksigner takes any number of bytes; Android's alignment extra field pads up to 65530 (the signer says so).
        if libraryPageAlignment < 1 { throw ValidationError("--lib-page-alignment takes a number of bytes: 4096, or 16384 (the default)") }
        if !(0...9).contains(jarDeflateLevel) { throw ValidationError("--jar-deflate-level takes 0 to 9") }
        if let name = v1SignerName, name.isEmpty { throw ValidationError("--v1-signer-name must not be empty") }
    }

    func config(key: SignerKey) -> SignerConfig { config(pendingKey: BackgroundValue(ready: key)) }

    /// The configuration for `primary` and the signers after it: a key rotation with `--lineage` (ordered by the
    /// lineage, `--rotation-min-sdk-version` 33 by default, as apksigner) or with SDK-targeted signers
    /// (`--signer-for-min-sdk-version`), else several signers for v1 and v2 (v3, which holds one signer, must be
    /// off: `validate` sees to it).
    func config(primary: NextSigner, nextSigners: [NextSigner]) throws -> SignerConfig {
        let signers = [primary] + nextSigners
        let targeted = signers.compactMap { signer in
            signer.minSdkVersion.map { SignerRotation.TargetedSigner(key: signer.key, minSdkVersion: $0, lineage: signer.lineage) }
        }
        let untargeted = signers.filter { $0.minSdkVersion == nil }.map(\.key)
        guard lineage != nil || !targeted.isEmpty else {
            var config = config(key: primary.key)
            config.additionalSigners = Array(untargeted.dropFirst())
            return config
        }
        let plan = try SignerRotation.plan(keys: untargeted, lineage: try lineage.map { try SigningCertificateLineage(contentsOf: $0) },
                                           targeted: targeted,
                                           rotationMinSdkVersion: rotationMinSdkVersion.flatMap { Int($0) } ?? SignerRotation.defaultMinSdkVersion,
                                           targetsDevRelease: rotationTargetsDevRelease ?? false)
        var config = config(key: plan.oldest)
        config.rotation = plan.rotation
        return config
    }

    /// Whether signing needs the signers after `--next-signer` or `--signer-for-min-sdk-version`, or a lineage
    /// (then the key is loaded first).
    var hasSeveralSigners: Bool { lineage != nil || nextSigner || signerForMinSdkVersion != nil }

    /// With a key still being loaded on another thread (see `SignerConfig.init(pendingKey:)`).
    func config(pendingKey: BackgroundValue<SignerKey>) -> SignerConfig {
        var config = SignerConfig(pendingKey: pendingKey, schemes: schemes, minSdkVersion: minSdkVersion, maxSdkVersion: maxSdkVersion,
                                  alignmentPreserved: alignmentPreserved, libraryPageAlignment: libraryPageAlignment)
        config.jarSignatureCompressionLevel = Int32(jarDeflateLevel)
        config.v1SignerName = v1SignerName
        config.debuggableAPKPermitted = debuggableAPKPermitted
        config.misalignedAPKPermitted = misalignedAPKPermitted
        config.alignsFileSize = alignFileSize ?? false
        config.verityEnabled = verityEnabled ?? false
        config.deterministicDSASigning = deterministicDSASigning
        return config
    }
}

/// adb install options, shared by `run` and `watch`.
struct InstallFlags: ParsableArguments {
    @Flag(name: .long, help: "Install the output with adb (when adb is on PATH): adb install --incremental when the v4 signature <out>.idsig was written, a normal install otherwise or when adb or the device refuses --incremental.") var install = false
    @Option(name: .long, help: ArgumentHelp("Device serial for adb -s.", valueName: "serial")) var serial: String?
    @Flag(name: .long, help: "Start the app's launcher activity after installing.") var launch = false
    @Flag(name: .customLong("allow-test"), help: "Pass -t to adb install (test-only APKs).") var allowTest = false
    @Flag(name: .customLong("allow-downgrade"), help: "Pass -d to adb install (lower versionCode).") var allowDowngrade = false
    @Flag(name: .customLong("grant-permissions"), help: "Pass -g to adb install (grant runtime permissions).") var grantPermissions = false
    @Option(name: .customLong("emit-script"), help: ArgumentHelp("Write the adb commands as a shell script.", valueName: "path")) var emitScript: String?
}

/// A signer given after the first (`--next-signer` or `--signer-for-min-sdk-version N`), loaded.
struct NextSigner {
    var key: SignerKey
    /// `--signer-for-min-sdk-version`: the first API level the signer is used on (v3/v3.1).
    var minSdkVersion: Int?
    /// `--signer-lineage`: the lineage for a targeted signer.
    var lineage: SigningCertificateLineage?
}
