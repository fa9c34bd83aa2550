import SignatureSchemes

/// Why the signers of a key rotation or of SDK-targeted signing could not be planned (what apksig's
/// `DefaultApkSignerEngine.Builder` refuses). Each case carries the values involved; the message says what to
/// change in signing terms, and a command line adds which of its options changes it.
public enum RotationError: Error, CustomStringConvertible, Equatable {
    /// A signer targets a level below API 28, where APK Signature Scheme v3 begins.
    case targetBelowV3(level: Int)
    /// The lineage given for the signer targeting `level` does not contain that signer's certificate.
    case targetedSignerNotInItsLineage(level: Int)
    /// The rotation's level is not below the lowest level a targeted signer starts at.
    case rotationNotBelowTargeted(rotation: Int, firstTargeted: Int)
    /// A key given for the rotation is not in the lineage.
    case signerNotInLineage(subject: String)
    /// A key of the lineage is given twice.
    case signerGivenTwice(subject: String)
    /// The newest signer targets the development release from a level below 33 (no v3.1 block there).
    case developmentReleaseBelowV31(rotation: Int)
    /// Targeting the development release without a lineage.
    case developmentReleaseWithoutLineage
    /// A rotation with no signer after the oldest.
    case noNewerSigner
    /// Several signers with no level and no lineage to order them.
    case untargetedSignersWithoutLineage
    /// Two targeted signers start at the same level.
    case signersAtSameLevel(Int)
    /// The lineage of the signer targeting `level` is not part of the other signers' signing history.
    case lineageOutsideHistory(level: Int)
    /// The untargeted signer (`subject`) is not in the signing history of the signers targeting `level` and
    /// later: a targeted signer given without a lineage, or with one that does not start from that signer.
    case signerOutsideHistory(subject: String, level: Int)
    /// The lowest signer starts at `from`, above `required` (28, or the APK's minSdkVersion when higher).
    case levelsNotCovered(from: Int, required: Int)
    /// The signers leave Android versions the APK supports without a v3 signer.
    case apkLevelsNotCovered

    public var description: String {
        switch self {
        case .targetBelowV3(let level):
            return "a signer can target API \(AndroidSDK.pie) (APK Signature Scheme v3) or later, not \(level)"
        case .targetedSignerNotInItsLineage(let level):
            return "the lineage given for the signer targeting API \(level) does not contain its certificate"
        case .rotationNotBelowTargeted(let rotation, let first):
            return "the rotation's minimum SDK version, \(rotation), must be below the first targeted SDK version, \(first)"
        case .signerNotInLineage(let subject):
            return "the signer \(subject) is not in the lineage: sign with the lineage's keys"
        case .signerGivenTwice(let subject):
            return "the signer \(subject) is given twice: give each key of the lineage once"
        case .developmentReleaseBelowV31:
            return "a rotation can target a development release only from API \(AndroidSDK.tiramisu) on (a v3.1 block): raise the rotation's minimum SDK version to \(AndroidSDK.tiramisu) or later"
        case .developmentReleaseWithoutLineage:
            return "a rotation targeting a development release needs a lineage"
        case .noNewerSigner:
            return "a rotation needs the old signer and a newer one: give the lineage's original key, then the newer ones"
        case .untargetedSignersWithoutLineage:
            return "several signers without a level need a lineage to order them"
        case .signersAtSameLevel(let level):
            return "several signers target API \(level): give each level one signer"
        case .lineageOutsideHistory(let level):
            return "the lineage of the signer targeting API \(level) is not in the signing history of the others"
        case .signerOutsideHistory(let subject, let level):
            return "the first signer, \(subject), is not in the signing history of the signer targeting API \(level): that signer needs a lineage rotating from the first signer's key to its own"
        case .levelsNotCovered(let from, let required):
            return "the signers (from API \(from)) do not cover API \(required) and later: give the lineage's original signer too, or a lower level"
        case .apkLevelsNotCovered:
            return "the signers' keys do not cover every Android version the APK supports: give the lineage's original signer"
        }
    }
}
