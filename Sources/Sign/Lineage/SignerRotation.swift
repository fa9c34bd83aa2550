import APKCore
import OpenSSLWrapper
import SignatureSchemes

/// Signing with rotated keys and SDK-targeted signers (apksig `DefaultApkSignerEngine` with a
/// `SigningCertificateLineage` and signer configs set up by `setLineageForMinSdkVersion`): v1 and v2 are signed
/// by the original signer (`SignerConfig.key`), which is what devices before API 28 know; the targeted signers,
/// each with its proof of rotation, take over from their minimum SDK version on. From API 33 on that is a v3.1
/// block, beside a v3.0 block the original signer signs for the levels before (apksigner's default
/// `--rotation-min-sdk-version 33`); a signer targeting a level below 33 goes in the v3.0 block from 28.
public struct SignerRotation: Sendable {
    /// A signer used from `minSdkVersion` on, with the lineage up to its certificate (nil: none, as apksig
    /// allows for a signer given with `--signer-for-min-sdk-version` and no lineage).
    public struct TargetedSigner: Sendable {
        public var key: SignerKey
        public var minSdkVersion: Int
        public var lineage: SigningCertificateLineage?
        public var targetsDevRelease = false

        public init(key: SignerKey, minSdkVersion: Int, lineage: SigningCertificateLineage?) {
            self.key = key
            self.minSdkVersion = minSdkVersion
            self.lineage = lineage
        }
    }

    /// The targeted signers, lowest level first (apksig `setTargetedSignerConfigs`): those given with a level,
    /// and the keys after the original one in the lineage, at the rotation level.
    public var targetedSigners: [TargetedSigner]
    /// Whether the oldest signer given is untargeted: the lineage's original signer, or the one key given
    /// without a level. Otherwise it is the first targeted signer.
    public var oldestIsUntargeted: Bool
    /// Whether the oldest signer is the original of the signing history, as v1 and v2 need (they know no
    /// rotation; apksig refuses them otherwise).
    public var oldestIsOriginal: Bool

    /// apksigner's default rotation-min-sdk-version: the newest signer from API 33 on, in a v3.1 block.
    public static let defaultMinSdkVersion = AndroidSDK.tiramisu

    /// apksig's `setLineageForMinSdkVersion`: levels below 28 are refused, levels below 33 (which know no v3.1
    /// block) mean 28.
    static func targetLevel(_ level: Int) throws -> Int {
        guard level >= AndroidSDK.pie else {
            throw RotationError.targetBelowV3(level: level)
        }
        return level < AndroidSDK.tiramisu ? AndroidSDK.pie : level
    }

    /// A stable sort by level, as Java's.
    private static func byLevel(_ signers: [TargetedSigner]) -> [TargetedSigner] {
        signers.enumerated().sorted { ($0.element.minSdkVersion, $0.offset) < ($1.element.minSdkVersion, $1.offset) }.map(\.element)
    }

    /// Plans the signers as apksig's `DefaultApkSignerEngine.Builder` does: `keys` are the untargeted signers
    /// (ordered by `lineage`, whose original one signs v1 and v2 and the others target the rotation level),
    /// `targeted` the signers given with their own level. Checks what apksig checks: keys in the lineage, a
    /// rotation level below the first targeted one, no two signers at one level, the development-release flag
    /// only from 33, lineages that belong to one history.
    public static func plan(keys: [SignerKey], lineage: SigningCertificateLineage?, targeted: [TargetedSigner] = [],
                            rotationMinSdkVersion: Int = defaultMinSdkVersion,
                            targetsDevRelease: Bool = false) throws -> (oldest: SignerKey, rotation: SignerRotation) {
        let level = rotationMinSdkVersion < AndroidSDK.tiramisu ? AndroidSDK.pie : rotationMinSdkVersion
        var targeted = byLevel(try targeted.map { signer -> TargetedSigner in
            var signer = signer
            signer.minSdkVersion = try targetLevel(signer.minSdkVersion)
            if let own = signer.lineage {
                guard let certificate = signer.key.certificates.first, own.certificates.contains(certificate) else {
                    throw RotationError.targetedSignerNotInItsLineage(level: signer.minSdkVersion)
                }
                signer.lineage = try own.subLineage(through: certificate)
            }
            return signer
        })
        var untargeted = keys
        var oldestIsOriginal = true
        if let lineage {
            if let first = targeted.first, level >= first.minSdkVersion {
                throw RotationError.rotationNotBelowTargeted(rotation: level, firstTargeted: first.minSdkVersion)
            }
            var ordered: [(index: Int, key: SignerKey)] = []
            for key in keys {
                guard let certificate = key.certificates.first else { throw SignError.noCertificate }
                guard let index = lineage.certificates.firstIndex(of: certificate) else {
                    throw RotationError.signerNotInLineage(subject: certificate.subjectDN)
                }
                guard !ordered.contains(where: { $0.index == index }) else {
                    throw RotationError.signerGivenTwice(subject: certificate.subjectDN)
                }
                ordered.append((index, key))
            }
            ordered.sort { $0.index < $1.index }
            oldestIsOriginal = ordered.first?.index == 0
            untargeted = oldestIsOriginal ? ordered.prefix(1).map(\.key) : []
            var rotated = try ordered.dropFirst(oldestIsOriginal ? 1 : 0).map {
                TargetedSigner(key: $0.key, minSdkVersion: level, lineage: try lineage.subLineage(through: $0.key.certificates[0]))
            }
            if targetsDevRelease {
                guard level >= AndroidSDK.tiramisu, !rotated.isEmpty else {
                    throw RotationError.developmentReleaseBelowV31(rotation: level)
                }
                rotated[rotated.count - 1].targetsDevRelease = true
            }
            targeted = byLevel(targeted + rotated)
        } else if targetsDevRelease {
            throw RotationError.developmentReleaseWithoutLineage
        }
        guard !targeted.isEmpty else {
            throw RotationError.noNewerSigner
        }
        guard untargeted.count <= 1 else {
            throw RotationError.untargetedSignersWithoutLineage
        }
        // No two signers at one level but the rotation's, and lineages that share one history (apksig
        // `mergeTargetedSigningConfigLineages`, where a signer given without a lineage is a history of its own
        // certificate alone).
        var previous = 0
        var history: [Certificate]? = lineage?.certificates
        for signer in targeted {
            if signer.minSdkVersion == previous && previous != level {
                throw RotationError.signersAtSameLevel(previous)
            }
            previous = signer.minSdkVersion
            guard let own = signer.lineage?.certificates ?? signer.key.certificates.first.map({ [$0] }) else { throw SignError.noCertificate }
            if let current = history {
                let (short, long) = own.count <= current.count ? (own, current) : (current, own)
                guard Array(long.prefix(short.count)) == short else {
                    throw RotationError.lineageOutsideHistory(level: signer.minSdkVersion)
                }
                history = long
            } else {
                history = own
            }
        }
        // The oldest signer (the untargeted one, else the lowest targeted one) signs v1 and v2 when it starts the
        // merged signing history (apksig: the merged lineage's sub-lineage up to it has one signer). An untargeted
        // signer outside that history has nothing linking it to the targeted ones: apksig fails on it ("Certificate
        // not found in SigningCertificateLineage"), and its v3 blocks would not verify.
        let oldest = untargeted.first ?? targeted[0].key
        if let history, let certificate = oldest.certificates.first {
            if !untargeted.isEmpty && !history.contains(certificate) {
                throw RotationError.signerOutsideHistory(subject: certificate.subjectDN, level: targeted[0].minSdkVersion)
            }
            if certificate != history.first { oldestIsOriginal = false }
        }
        return (oldest, SignerRotation(targetedSigners: targeted, oldestIsUntargeted: !untargeted.isEmpty,
                                       oldestIsOriginal: oldestIsOriginal))
    }

    /// The v3.1 and v3.0 blocks, in the signing block's order, for an APK whose minSdkVersion is
    /// `apkMinSdkVersion`, with `oldest` (the v1/v2 signer, whose algorithms are `algorithms`). Each newer signer
    /// signs with its own key's algorithms, over their content digests (`SigningEngine.digestPlan` computes them).
    func v3Blocks(oldest: SignerKey, algorithms: [SignatureAlgorithm], apkMinSdkVersion: Int,
                  verityEnabled: Bool = false) throws -> [SchemeBlockSpec] {
        let all = candidates(oldest: oldest)
        var specs: [SchemeSignerSpec] = []
        for (index, candidate) in all.enumerated() {
            guard let certificate = candidate.key.certificates.first else { throw SignError.noCertificate }
            let publicKey = try certificate.publicKey()
            let own = index == 0 && oldestIsUntargeted ? algorithms
                : SignatureAlgorithm.suggested(for: SignatureKeyAlgorithm(publicKey.algorithm), keySize: publicKey.bitSize, verityEnabled: verityEnabled)
            specs.append(SchemeSignerSpec(key: candidate.key, algorithms: own))
        }
        let layout = try Self.layout(all.map { ($0.minSdkVersion, $0.targetsDevRelease) },
                                     untargetedMinimum: SchemeBlockSigner.v3MinSdkVersion(algorithms: algorithms), apkMinSdkVersion: apkMinSdkVersion)
        let v31Level = layout.filter(\.inV31).map(\.minSdkVersion).min()
        var v31: [SchemeSignerSpec] = [], v30: [SchemeSignerSpec] = []
        for placed in layout {
            var spec = specs[placed.index]
            spec.minSdkVersion = Int32(placed.minSdkVersion)
            spec.maxSdkVersion = Int32(placed.maxSdkVersion)
            // apksig `V3SchemeSigner.generateAdditionalAttributes`: lineage, development release (v3.1 only),
            // the v3.1 level (v3.0 only).
            if let lineage = all[placed.index].lineage {
                spec.attributes.append(AdditionalAttribute(id: AdditionalAttribute.ID.proofOfRotation, value: lineage.attributeValue))
            }
            if placed.inV31 {
                if placed.targetsDevRelease { spec.attributes.append(.signerTargetsDevRelease) }
                v31.append(spec)
            } else {
                if let v31Level { spec.attributes.append(.rotationMinSdkVersion(v31Level)) }
                v30.append(spec)
            }
        }
        var blocks: [SchemeBlockSpec] = []
        if !v31.isEmpty { blocks.append(SchemeBlockSpec(id: SigningBlock.ID.v31, version: .v3, signers: v31)) }
        blocks.append(SchemeBlockSpec(id: SigningBlock.ID.v3, version: .v3, signers: v30))
        return blocks
    }

    /// The keys of the v3.0 and v3.1 blocks' signers (as `v3Blocks` lays them out) for an APK whose
    /// minSdkVersion is `apkMinSdkVersion`: what its v4 signature is signed with. `oldest`: the v1/v2 signer.
    public func blockSigners(oldest: SignerKey, apkMinSdkVersion: Int) -> (v30: [SignerKey], v31: [SignerKey]) {
        let all = candidates(oldest: oldest)
        guard let layout = v4Layout(apkMinSdkVersion: apkMinSdkVersion) else { return ([], []) }
        return (layout.filter { !$0.inV31 }.map { all[$0.index].key }, layout.filter(\.inV31).map { all[$0.index].key })
    }

    /// Why an APK whose minSdkVersion is `apkMinSdkVersion` can have no v4 signature, if it cannot: a v4
    /// signature holds one signing info per block, so neither its v3.0 nor its v3.1 block may have several
    /// signers (which of them do depends on the APK's level, as `v3Blocks` lays them out). Needs no key. Nil
    /// too when no layout covers the APK: signing refuses it with the reason.
    func v4Refusal(apkMinSdkVersion: Int) -> V4SigningError? {
        guard let layout = v4Layout(apkMinSdkVersion: apkMinSdkVersion) else { return nil }
        let v31 = layout.filter(\.inV31).count, v30 = layout.count - v31
        guard v30 == 1 && v31 <= 1 else { return .severalSigners(block: v30 == 1 ? "v3.1" : "v3.0", count: max(v30, v31)) }
        return nil
    }

    /// `layout` of the v3 signers, keys aside: every key type's v3 algorithms start at API 24, which is all the
    /// layout needs of them here. Nil when no layout covers the APK.
    private func v4Layout(apkMinSdkVersion: Int)
        -> [(index: Int, minSdkVersion: Int, maxSdkVersion: Int, inV31: Bool, targetsDevRelease: Bool)]? {
        let levels = (oldestIsUntargeted ? [(minSdkVersion: 0, targetsDevRelease: false)] : [])
            + targetedSigners.map { (minSdkVersion: $0.minSdkVersion, targetsDevRelease: $0.targetsDevRelease) }
        return try? Self.layout(levels, untargetedMinimum: AndroidSDK.nougat, apkMinSdkVersion: apkMinSdkVersion)
    }

    /// One v3 signer before its range is settled: untargeted (level 0) or targeted.
    private struct Candidate {
        var key: SignerKey
        var minSdkVersion: Int
        var lineage: SigningCertificateLineage?
        var targetsDevRelease: Bool
    }

    /// The original signer (untargeted, when given) then the targeted ones, lowest level first.
    private func candidates(oldest: SignerKey) -> [Candidate] {
        (oldestIsUntargeted ? [Candidate(key: oldest, minSdkVersion: 0, lineage: nil, targetsDevRelease: false)] : [])
            + targetedSigners.map { Candidate(key: $0.key, minSdkVersion: $0.minSdkVersion, lineage: $0.lineage, targetsDevRelease: $0.targetsDevRelease) }
    }

    /// Where each signer goes (apksig `processV3Configs`, then `processV31SignerConfigs`), from the signers'
    /// levels (0: untargeted, which starts at `untargetedMinimum`, its algorithms' minimum) and development-release
    /// flags, oldest first. Newest first, each signer covers up to the level before the next newer one (up to it,
    /// when that one targets the development release); a signer left with no level is dropped, and the walk stops
    /// once the APK's levels from 28 are covered. A signer targeting the release in development
    /// (`AndroidSDK.developmentRelease`) is written with the production level and the development-release flag.
    /// Signers from 33 on above the lowest go to the v3.1 block.
    static func layout(_ signers: [(minSdkVersion: Int, targetsDevRelease: Bool)], untargetedMinimum: Int,
                       apkMinSdkVersion: Int) throws
        -> [(index: Int, minSdkVersion: Int, maxSdkVersion: Int, inV31: Bool, targetsDevRelease: Bool)] {
        let required = max(AndroidSDK.pie, apkMinSdkVersion)
        if let first = signers.first, first.minSdkVersion > required {
            throw RotationError.levelsNotCovered(from: first.minSdkVersion, required: required)
        }
        var processed: [(index: Int, min: Int, max: Int, dev: Bool)] = []
        var currentMin = Int.max
        for index in signers.indices.reversed() {
            let signer = signers[index]
            var minimum = signer.minSdkVersion == 0 ? untargetedMinimum : signer.minSdkVersion
            var targetsDevRelease = signer.targetsDevRelease
            let maximum: Int
            if index == signers.count - 1 {
                maximum = Int(Int32.max)
            } else if let previous = processed.last, previous.dev {
                maximum = previous.min
            } else {
                maximum = currentMin - 1
                if maximum < minimum { continue }
            }
            if minimum == AndroidSDK.developmentRelease {
                minimum = AndroidSDK.productionRelease
                targetsDevRelease = true
            }
            processed.append((index, minimum, maximum, targetsDevRelease))
            currentMin = minimum
            if targetsDevRelease ? currentMin < required : currentMin <= required { break }
        }
        if currentMin > AndroidSDK.pie && currentMin > apkMinSdkVersion {
            throw RotationError.apkLevelsNotCovered
        }
        let lowest = processed.map(\.min).min() ?? AndroidSDK.pie
        return processed.map { signer in
            let inV31 = processed.count > 1 && signer.min >= AndroidSDK.tiramisu && (signer.min > lowest || signer.dev)
            return (signer.index, signer.min, signer.max, inV31, signer.dev)
        }
    }
}

extension SignerConfig {
    /// Refuses, before anything is written, a v4 signature that `request` must report the failure of (an
    /// explicit `--v4-signing-enabled true`) and that this configuration cannot give whatever the APK: v4 signs
    /// the content digest of the v3 (else v2) block's one signer, so it needs one of those schemes, and a v2
    /// block with several signers and no v3 block has none to take. apksigner finds out only after writing
    /// the APK, which is then left beside the error. The cases that depend on the APK's minSdkVersion or on
    /// the keys are refused by `Signer` before it publishes the output (`checkV4Signature`).
    public func checkV4Request(_ request: V4SigningRequest) throws {
        guard request == .on(reportsFailure: true) else { return }
        if schemes.isDisjoint(with: [.v2, .v3]) { throw V4SigningError.noV2V3Signature }
        if !schemes.contains(.v3) && !additionalSigners.isEmpty {
            throw V4SigningError.severalSigners(block: "v2", count: 1 + additionalSigners.count)
        }
    }

    /// `checkV4Request` for `v4Request` and an APK whose minSdkVersion is `apkMinSdkVersion`: also a rotation
    /// whose v3.0 or v3.1 block holds several signers at that level. Needs no key: `Signer` calls it before
    /// it writes anything.
    func checkV4Signature(apkMinSdkVersion: Int) throws {
        try checkV4Request(v4Request)
        guard v4Request == .on(reportsFailure: true), let rotation, schemes.contains(.v3) else { return }
        if let refusal = rotation.v4Refusal(apkMinSdkVersion: apkMinSdkVersion) { throw refusal }
    }

    /// The rest of `checkV4Signature`, once the keys are loaded (`Signer` calls it before it publishes the
    /// output): the keys the v4 signature takes must each have one certificate, and their signing infos fit
    /// what Android keeps (`V4SchemeSigner.checkKeys`).
    func checkV4Keys(apkMinSdkVersion: Int) throws {
        guard v4Request == .on(reportsFailure: true) else { return }
        let v4 = try v4Signing(v4Request, schemes: schemes.sorted(), apkMinSdkVersion: apkMinSdkVersion)
        try V4SchemeSigner.checkKeys([v4.key] + (v4.v31Key.map { [$0] } ?? []))
    }

    /// The keys the v4 signature of an APK signed with this configuration takes (apksig
    /// `createV4SignerConfig`): the v3.0 block's signer (a rotation's newest key, or the original one beside a
    /// v3.1 block), else `key`; and the v3.1 block's signer, when the APK has that block. A v4 signature holds
    /// one signing info per block, so a block with several signers has none: `request` is then turned off, or
    /// fails when it reports failures (as an explicit `--v4-signing-enabled true` does), as in apksig.
    public func v4Signing(_ request: V4SigningRequest, schemes signed: [SignatureScheme],
                          apkMinSdkVersion: Int) throws -> (key: SignerKey, v31Key: SignerKey?, request: V4SigningRequest) {
        guard let rotation, signed.contains(.v3) else { return (signing(try key), nil, request) }
        if let refusal = rotation.v4Refusal(apkMinSdkVersion: apkMinSdkVersion) {
            if request == .on(reportsFailure: true) { throw refusal }
            return (signing(try key), nil, .off)
        }
        let blocks = rotation.blockSigners(oldest: try key, apkMinSdkVersion: apkMinSdkVersion)
        guard let v30 = blocks.v30.first else { throw RotationError.apkLevelsNotCovered }
        return (signing(v30), blocks.v31.first.map(signing), request)
    }

    /// Writes the v4 signature of the APK at `apkPath`, which this configuration signed as `report` says, beside it
    /// (`V4SchemeSigner.updateSignature`), or removes a stale one when `request` gives none: the signer's own
    /// (`report.v4Signature`), else one made from the file with the keys `v4Signing` picks, the v3.1 block's
    /// signer included. `apkpatch sign` ends this way for one APK and for each APK of a batch, so that both write
    /// the same `.idsig`. Returns its path, nil when none was written.
    public func updateV4Signature(forAPKAt apkPath: String, report: SigningReport, request: V4SigningRequest,
                                  concurrency: Int = 0) throws -> String? {
        let v4 = try v4Signing(request, schemes: report.schemes, apkMinSdkVersion: report.minSdkVersion)
        return try V4SchemeSigner.updateSignature(forAPKAt: apkPath, key: v4.key, v31Key: v4.v31Key, request: v4.request,
                                                  concurrency: concurrency, leaves: report.verityLeaves, made: report.v4Signature)
    }
}
