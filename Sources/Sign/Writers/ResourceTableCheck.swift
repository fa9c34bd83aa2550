import APKCore
import BinaryXML
import OpenSSLWrapper
import ZlibWrapper

/// The resource table's check on an input APK, which runs beside the copy (`Signer`). A deflated table is inflated
/// once: the check walks it as it inflates (`ResourceTableLoadCheck.problem(inflating:of:minSdkVersion:inflated:)`,
/// in bounded memory), and the same bytes give the entry's v1 digest and EntryIntegrity's checks, which the
/// section copy then leaves to it (`SectionCopy.inflatedElsewhere`). A stored table is read in place; the copy
/// digests it.
struct ResourceTableCheck: Sendable {
    var problem: ResourceTableProblem?
    /// The deflated table's v1 digest, with the algorithm `Inflation` named; nil otherwise.
    var digest: [UInt8]?

    /// What the check takes over from the copy: the table's index among the kept entries, and the v1 digest it
    /// takes of it (nil: none, as without v1). The copy leaves the table to it only when the signing's v1 digest is
    /// that one: a key that calls for another (found once it has loaded) has the copy inflate it as any entry.
    struct Inflation: Sendable, Equatable {
        var item: Int
        var algorithm: DigestAlgorithm?
    }

    /// Checks `archive`'s table; a deflated one is inflated once, its v1 digest taken with `digest`.
    static func run(on archive: APKArchive, digest algorithm: DigestAlgorithm?) throws -> ResourceTableCheck {
        guard let entry = archive.entry(named: ResourceTableLoadCheck.entryName), entry.isCompressed else {
            return ResourceTableCheck(problem: try ResourceTableLoadCheck.problem(in: archive))
        }
        let hasher = algorithm.map { Digest($0) }
        var crc = CRC32()
        let checks = EntryIntegrity.isEnabled
        let found = try EntryIntegrity.inflating(entry) {
            try archive.source.withBytes(in: entry.dataRange) { raw in
                try ResourceTableLoadCheck.problem(inflating: raw, of: entry, minSdkVersion: { ResourceTableLoadCheck.declaredMinSdkVersion(of: archive) }) { bytes in
                    if checks { crc.update(bytes) }
                    hasher?.update(bytes)
                }
            }
        }
        archive.source.discard(entry.dataRange)
        if checks {
            try EntryIntegrity.checkStreamEnd(found.streamEnd, of: entry)
            try EntryIntegrity.check(crc.value, of: entry)
        }
        return ResourceTableCheck(problem: found.problem, digest: hasher?.finish())
    }
}
