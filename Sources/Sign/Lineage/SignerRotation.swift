import APKCore
import OpenSSLWrapper
import SignatureSchemes

/// Signing with a rotated key (apksig `DefaultApkSignerEngine` with a `SigningCertificateLineage`): v1 and v2
/// are signed by the lineage's original signer (`SignerConfig.key`), which is what devices before API 28 know;
/// the newer signers, each with its proof of rotation, take over from `minSdkVersion` on. From API 33 on that
/// is a v3.1 block, beside a v3.0 block the original signer signs for the levels before (apksigner's default
/// `--rotation-min-sdk-version 33`); a rotation from API 28 puts the newest signer in the v3.0 block.
public struct SignerRotation: Sendable {
    /// A signer after the original, with the lineage up to its certificate.
    public struct RotatedSigner: Sendable {
        public var key: SignerKey
        public var lineage: SigningCertificateLineage
    }

    /// The signers given after the oldest, in lineage order: each one targets `minSdkVersion` (apksig
    /// `setTargetedSignerConfigs`), and the v3 layout keeps those the newest does not hide.
    public var rotatedSigners: [RotatedSigner]
    /// Whether the oldest signer given is the lineage's first certificate. Otherwise it is one more targeted
    /// signer, and v1 and v2 (which need the original) cannot be signed.
    public var oldestIsOriginal: Bool
    /// The oldest signer's sub-lineage (used when it is not the original).
    var oldestLineage: SigningCertificateLineage
    /// The first API level the newer signers are used on: apksig's rotation-min-sdk-version, where levels below
    /// 33 (which know no v3.1 block) mean 28 (`DefaultApkSignerEngine.Builder.setMinSdkVersionForRotation`).
    public var minSdkVersion: Int
    /// apksigner `--rotation-targets-dev-release`: the newest signer also covers the development release that
    /// still reports the level before `minSdkVersion`.
    public var targetsDevRelease: Bool

    /// The newest signer: it signs the v3.1 block (or the v3.0 block when it alone covers the APK), and v4.
    public var newestKey: SignerKey { rotatedSigners.last!.key }
    /// The lineage up to the newest signer, carried in its proof-of-rotation attribute.
    public var lineage: SigningCertificateLineage { rotatedSigners.last!.lineage }

    /// apksigner's default rotation-min-sdk-version: the newest signer from API 33 on, in a v3.1 block.
    public static let defaultMinSdkVersion = AndroidSDK.tiramisu

    /// Orders `keys` by `lineage` (apksig `sortSignerConfigs`) and checks what apksig checks: every key's
    /// certificate is in the lineage, there are at least two, and the development-release flag goes with a
    /// v3.1 rotation. `oldest` is then the v1/v2 signer.
    public static func plan(keys: [SignerKey], lineage: SigningCertificateLineage, rotationMinSdkVersion: Int,
                            targetsDevRelease: Bool = false) throws -> (oldest: SignerKey, rotation: SignerRotation) {
        let level = rotationMinSdkVersion < AndroidSDK.tiramisu ? AndroidSDK.pie : rotationMinSdkVersion
        if targetsDevRelease && level < AndroidSDK.tiramisu {
            throw SignError.invalidOption("a rotation can target a development release only from API \(AndroidSDK.tiramisu) on (a v3.1 block): raise the rotation's minimum SDK version to 33 or later")
        }
        var ordered: [(index: Int, key: SignerKey)] = []
        for key in keys {
            guard let certificate = key.certificates.first else { throw SignError.noCertificate }
            guard let index = lineage.certificates.firstIndex(of: certificate) else {
                throw SignError.invalidOption("the signer \(certificate.subjectDN) is not in the lineage: sign with the lineage's keys (apkpatch lineage --in FILE --print-certs lists them)")
            }
            guard !ordered.contains(where: { $0.index == index }) else {
                throw SignError.invalidOption("the signer \(certificate.subjectDN) is given twice: give each key of the lineage once")
            }
            ordered.append((index, key))
        }
        ordered.sort { $0.index < $1.index }
        guard ordered.count >= 2, let first = ordered.first else {
            throw SignError.invalidOption("a rotation needs the old signer and the new one: give the lineage's original key, then the newer ones with --next-signer")
        }
        let rotated = try ordered.dropFirst().map { RotatedSigner(key: $0.key, lineage: try lineage.subLineage(through: $0.key.certificates[0])) }
        let rotation = SignerRotation(rotatedSigners: rotated, oldestIsOriginal: first.index == 0,
                                      oldestLineage: try lineage.subLineage(through: first.key.certificates[0]),
                                      minSdkVersion: level, targetsDevRelease: targetsDevRelease)
        return (first.key, rotation)
    }

    /// One v3 signer while apksig's `processV3Configs` settles the layout.
    private struct Candidate {
        var spec: SchemeSignerSpec
        var lineage: SigningCertificateLineage?
        var targetsDevRelease = false
    }

    /// The v3.1 and v3.0 blocks, in the signing block's order, for an APK whose minSdkVersion is
    /// `apkMinSdkVersion`, with `oldest` (the v1/v2 signer, whose `algorithms` decided the content digests):
    /// apksig's `processV3Configs` and `processV31SignerConfigs`. Every signer must need no other content
    /// digest than the oldest (another key type or size class would).
    func v3Blocks(oldest: SignerKey, algorithms: [SignatureAlgorithm], apkMinSdkVersion: Int,
                  verityEnabled: Bool = false) throws -> [SchemeBlockSpec] {
        let layout = try self.layout(oldest: oldest, algorithms: algorithms, apkMinSdkVersion: apkMinSdkVersion, verityEnabled: verityEnabled)
        var blocks: [SchemeBlockSpec] = []
        if !layout.v31.isEmpty {
            blocks.append(SchemeBlockSpec(id: SigningBlock.ID.v31, version: .v3, signers: layout.v31))
        }
        blocks.append(SchemeBlockSpec(id: SigningBlock.ID.v3, version: .v3, signers: layout.v30))
        return blocks
    }

    /// Whether the signature has a v3.1 block for an APK whose minSdkVersion is `apkMinSdkVersion`: not when the
    /// newest signer alone covers every level the APK runs on from 28 (then it goes in the v3.0 block).
    public func usesV31Block(apkMinSdkVersion: Int) -> Bool {
        let required = max(AndroidSDK.pie, apkMinSdkVersion)
        return !(targetsDevRelease ? minSdkVersion < required : minSdkVersion <= required)
    }

    private func layout(oldest: SignerKey, algorithms: [SignatureAlgorithm], apkMinSdkVersion: Int,
                        verityEnabled: Bool) throws -> (v31: [SchemeSignerSpec], v30: [SchemeSignerSpec]) {
        let digests = Set(algorithms.map(\.contentDigestAlgorithm))
        func candidate(_ key: SignerKey, lineage: SigningCertificateLineage?, targetsDevRelease: Bool = false) throws -> Candidate {
            guard let certificate = key.certificates.first else { throw SignError.noCertificate }
            let publicKey = try certificate.publicKey()
            let own = SignatureAlgorithm.suggested(for: SignatureKeyAlgorithm(publicKey.algorithm), keySize: publicKey.bitSize,
                                                   verityEnabled: verityEnabled)
            guard Set(own.map(\.contentDigestAlgorithm)).isSubset(of: digests) else {
                throw SignError.invalidOption("rotating to a key that needs other content digests than the old one (\(own.map(\.description).joined(separator: ", ")) after \(algorithms.map(\.description).joined(separator: ", "))) is not supported yet: rotate to a key of the same type and size class")
            }
            // Targeted signers start at the rotation level (at least 28, which every algorithm serves); the
            // original starts where its algorithms do.
            let minimum = lineage == nil ? SchemeBlockSigner.v3MinSdkVersion(algorithms: own) : minSdkVersion
            return Candidate(spec: SchemeSignerSpec(key: key, algorithms: own, minSdkVersion: Int32(minimum)),
                             lineage: lineage, targetsDevRelease: targetsDevRelease)
        }
        // Oldest first: the original signer (untargeted), then the targeted ones; the newest may target the
        // development release.
        var raw = [try candidate(oldest, lineage: oldestIsOriginal ? nil : oldestLineage)]
        for (index, signer) in rotatedSigners.enumerated() {
            raw.append(try candidate(signer.key, lineage: signer.lineage,
                                     targetsDevRelease: targetsDevRelease && index == rotatedSigners.count - 1))
        }
        let required = max(AndroidSDK.pie, apkMinSdkVersion)
        if !oldestIsOriginal && minSdkVersion > required {
            throw SignError.invalidOption("without the lineage's original signer, the newer signers (from API \(minSdkVersion)) do not cover API \(required) and later: give the original signer too, or a lower rotation minimum SDK version")
        }
        // Newest first: each signer covers up to the level before the next newer one, and the walk stops when
        // the APK's levels are covered (apksig `processV3Configs`).
        var processed: [Candidate] = []
        var currentMin = Int.max
        for index in raw.indices.reversed() {
            var signer = raw[index]
            if index == raw.count - 1 {
                signer.spec.maxSdkVersion = Int32.max
            } else if let previous = processed.last, previous.targetsDevRelease {
                signer.spec.maxSdkVersion = previous.spec.minSdkVersion
            } else {
                signer.spec.maxSdkVersion = Int32(currentMin - 1)
                if signer.spec.maxSdkVersion < signer.spec.minSdkVersion { continue }
            }
            processed.append(signer)
            currentMin = Int(signer.spec.minSdkVersion)
            if signer.targetsDevRelease ? currentMin < required : currentMin <= required { break }
        }
        if currentMin > AndroidSDK.pie && currentMin > apkMinSdkVersion {
            throw SignError.invalidOption("the signers' keys do not cover every Android version the APK supports: give the lineage's original signer")
        }
        // Signers starting at API 33 or later above the lowest go to the v3.1 block (apksig
        // `processV31SignerConfigs`); the v3.0 signers name the v3.1 block's level so that stripping it shows.
        var v31: [Candidate] = [], v30: [Candidate] = []
        let lowest = processed.map { Int($0.spec.minSdkVersion) }.min() ?? AndroidSDK.pie
        for signer in processed {
            let minimum = Int(signer.spec.minSdkVersion)
            if processed.count > 1 && minimum >= AndroidSDK.tiramisu && (minimum > lowest || signer.targetsDevRelease) {
                v31.append(signer)
            } else {
                v30.append(signer)
            }
        }
        let v31Level = v31.map { Int($0.spec.minSdkVersion) }.min()
        func finished(_ signer: Candidate, inV31: Bool) -> SchemeSignerSpec {
            var spec = signer.spec
            if let lineage = signer.lineage {
                spec.attributes.append(AdditionalAttribute(id: AdditionalAttribute.ID.proofOfRotation, value: lineage.attributeValue))
            }
            if inV31 && signer.targetsDevRelease { spec.attributes.append(.signerTargetsDevRelease) }
            if !inV31, let v31Level { spec.attributes.append(.rotationMinSdkVersion(v31Level)) }
            return spec
        }
        return (v31.map { finished($0, inV31: true) }, v30.map { finished($0, inV31: false) })
    }
}

extension SignerConfig {
    /// The key the v4 signature of an APK signed with this configuration takes (the v3 signer's: a rotation's
    /// newest key, else `key`), and the request adjusted for what apkpatch cannot make yet: a v4 signature of an
    /// APK with a v3.1 block carries a signing info per block (apksig's v4 signing info blocks), so none is
    /// made for one (an error when `request` reports failures, as an explicit `--v4-signing-enabled true` does).
    public func v4Signing(_ request: V4SigningRequest, schemes signed: [SignatureScheme],
                          apkMinSdkVersion: Int) throws -> (key: SignerKey, request: V4SigningRequest) {
        guard let rotation, signed.contains(.v3) else { return (try key, request) }
        if rotation.usesV31Block(apkMinSdkVersion: apkMinSdkVersion) {
            if request == .on(reportsFailure: true) { throw V4SigningError.v31Rotation }
            return (rotation.newestKey, .off)
        }
        return (rotation.newestKey, request)
    }
}
