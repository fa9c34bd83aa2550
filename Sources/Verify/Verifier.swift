import APKCore
import BinaryXML
import Dispatch
import OpenSSLWrapper
import SignatureSchemes

/// Verifies an APK's signatures the way Android does over an API range (apksig's `ApkVerifier`), and,
/// beyond apksigner, the packaging rules Android's installer enforces.
///
/// The scheme order and fallbacks are Android's: on N+ the APK Signing Block is used when present (v3.1 on
/// T+, v3 on P+, v2 on N+ unless v3 covered the whole range), and JAR signatures are checked only when the
/// range reaches below N or no block signature was found. A block signature that is present but does not
/// verify is fatal; it is never "fallen back" from.
public struct Verifier: Sendable {
    public var options: VerificationOptions

    public init(options: VerificationOptions = VerificationOptions()) { self.options = options }

    /// Verifies the APK at `path`. Throws `VerificationError` only when the file cannot be read at all or
    /// the options are inconsistent; a malformed or badly signed APK gives a report with errors.
    public func verify(path: String) throws -> VerificationReport {
        let source: MappedFile
        do { source = try MappedFile(path: path) } catch {
            throw VerificationError.cannotRead(path: path, reason: (error as? FileError)?.reason ?? "\(error)")
        }
        source.readAhead()  // every byte is digested
        return try verify(source: source, label: path)
    }

    /// Verifies an APK opened with `PreparedInput.prepare`, using the content digests it has started.
    public func verify(_ prepared: PreparedInput) throws -> VerificationReport {
        try verify(source: prepared.source, label: prepared.path, digests: .prepared(prepared.prefetch))
    }

    /// Verifies APK bytes held in `source`.
    public func verify(source: any DataSource, label: String) throws -> VerificationReport {
        try verify(source: source, label: label, digests: .startHere)
    }

    /// Where the content digests come from: started by this verification, or by a `PreparedInput` (which may
    /// have found none to start).
    private enum DigestStart {
        case startHere
        case prepared(ContentDigestPrefetch?)
    }

    private func verify(source: any DataSource, label: String, digests start: DigestStart) throws -> VerificationReport {
        var report = VerificationReport(path: label, minSdkVersion: options.minSdkVersion ?? 1, maxSdkVersion: options.maxSdkVersion,
                                        isSignatureVerified: false, verifiedSchemes: [], schemes: [], signers: [],
                                        signatureErrors: [], signatureWarnings: [], installErrors: [], installWarnings: [],
                                        checkedInstallability: false)
        if let min = options.minSdkVersion, min < 0 {
            throw VerificationError.invalidOptions("minSdkVersion must not be negative: \(min)")
        }
        if let min = options.minSdkVersion, min > options.maxSdkVersion {
            throw VerificationError.invalidOptions("minSdkVersion (\(min)) > maxSdkVersion (\(options.maxSdkVersion))")
        }

        // The content digests start now on the other cores, while the archive and manifest are parsed
        // (speculatively: see ContentDigestPrefetch), unless a PreparedInput started them already. Nothing
        // of it runs on after this call returns.
        var prefetch: ContentDigestPrefetch?
        switch start {
        case .startHere: prefetch = options.maxSdkVersion >= AndroidSDK.nougat ? ContentDigestPrefetch.start(source: source) : nil
        case .prepared(let started): prefetch = started
        }
        if options.maxSdkVersion < AndroidSDK.nougat {
            prefetch?.cancel()  // no v2+ scheme is checked below API 24
            prefetch = nil
        }
        defer { prefetch?.cancel() }

        // The archive. Duplicate names are apksig's JAR_SIG_DUPLICATE_ZIP_ENTRY; other structural problems
        // make the APK unverifiable (apksig throws ApkFormatException).
        let archive: APKArchive
        do {
            var limits = UnpackLimits()
            limits.checksEntryNames = false  // names are an extraction concern; Android judges signatures
            limits.readsLikeAndroid = true  // compression methods and ZIP64 entry fields as Android reads them
            limits.readsZip64 = false  // a ZIP64 end record: Android 10 and older cannot open the APK
            limits.refusesUnaccountedBytes = false  // judged below by whether a signature covers them
            archive = try APKArchive(source: source, label: label, limits: limits)
        } catch {
            // Parse again only to classify the failure (APKArchive reports it as text).
            var zipLimits = ZipArchive.Limits()
            zipLimits.readsLikeAndroid = true
            zipLimits.refusesUnaccountedBytes = false
            do { _ = try ZipArchive(source: source, limits: zipLimits) } catch ZipFormatError.duplicateEntry(let name) {
                report.signatureErrors.append(.error(.jarSigDuplicateZipEntry, "", "Duplicate entry: \(name)"))
                return report
            } catch let error as ZipFormatError {
                if let issue = ArchiveChecks.issue(for: error) {
                    report.signatureErrors.append(issue)
                    return report
                }
            } catch {}
            report.signatureErrors.append(.error(.malformedAPK, "", "Malformed APK: \(error)"))
            return report
        }

        // AndroidManifest.xml: minSdkVersion when not given, targetSdkVersion for the scheme rule, and the
        // facts the install checks need.
        let manifest = ManifestFacts(archive: archive)
        guard let minSdkVersion = try signaturesMinSdkVersion(manifest: manifest, report: &report) else { return report }
        let maxSdkVersion = options.maxSdkVersion

        // The resource table's check reads the table here, while the content digests run on the other cores, not
        // after them, when it would add its pass to the verification's wall time.
        let resourceTable = options.checksInstallability ? InstallChecks.resourceTableIssue(archive: archive) : nil
        verifySignatures(archive: archive, manifest: manifest, minSdkVersion: minSdkVersion, maxSdkVersion: maxSdkVersion,
                         prefetch: prefetch, report: &report)
        if let path = options.v4SignatureFile {
            let v4: V4SchemeVerifier.Outcome
            do {
                v4 = try V4SchemeVerifier.verify(signatureFile: try MappedFile(path: path), apk: source,
                                                 centralDirectoryOffset: archive.zip.centralDirectoryOffset)
            } catch let error as FileError {
                // Its description names the path already ("cannot read PATH: …").
                throw VerificationError.cannotRead(path: path, reason: error.reason)
            } catch {
                throw VerificationError.cannotRead(path: path, reason: "\(error)")
            }
            report.schemes.append(SchemeReport(scheme: .v4, isVerified: v4.issues.isEmpty, signers: v4.signers))
            if v4.issues.isEmpty {
                report.verifiedSchemes.insert(.v4)
            } else {
                report.signatureErrors += v4.issues
                report.isSignatureVerified = false
            }
        }
        report.schemes.sort { $0.scheme < $1.scheme }

        if options.checksInstallability {
            report.checkedInstallability = true
            InstallChecks.run(archive: archive, manifest: manifest, resourceTable: resourceTable, report: &report)
            Self.checkArchiveStart(archive.zip, maxSdkVersion: maxSdkVersion, report: &report)
            ArchiveChecks.run(archive.zip, maxSdkVersion: maxSdkVersion, report: &report)
        }
        return report
    }

    // MARK: - Signatures

    /// The minSdkVersion the signatures are checked for: the option's, else the manifest's, recorded in `report`.
    /// Nil when the manifest cannot be read (the problem is recorded in `report`); throws when the manifest's level
    /// is above the option's maxSdkVersion, as apksigner does.
    func signaturesMinSdkVersion(manifest: ManifestFacts, report: inout VerificationReport) throws -> Int? {
        let minSdkVersion: Int
        if let given = options.minSdkVersion {
            minSdkVersion = given
        } else {
            switch manifest.minSdkVersion {
            case .success(let level):
                minSdkVersion = level
            case .failure(let problem):
                report.signatureErrors.append(.error(.manifestUnreadable, "", problem.message))
                return nil
            }
            if minSdkVersion > options.maxSdkVersion {
                throw VerificationError.invalidOptions("minSdkVersion from APK (\(minSdkVersion)) > maxSdkVersion (\(options.maxSdkVersion))")
            }
        }
        report.minSdkVersion = minSdkVersion
        return minSdkVersion
    }

    private func verifySignatures(archive: APKArchive, manifest: ManifestFacts, minSdkVersion: Int, maxSdkVersion: Int,
                                  prefetch: ContentDigestPrefetch?, report: inout VerificationReport) {
        let zip = archive.zip
        let source = archive.source
        var found: Set<Int> = []
        var schemeResults: [SignatureScheme: SchemeVerificationResult] = [:]

        let supportedSchemeNames: [Int: String]
        if maxSdkVersion >= AndroidSDK.pie {
            supportedSchemeNames = [2: "APK Signature Scheme v2", 3: "APK Signature Scheme v3"]
        } else if maxSdkVersion >= AndroidSDK.nougat {
            supportedSchemeNames = [2: "APK Signature Scheme v2"]
        } else {
            supportedSchemeNames = [:]
        }

        // The APK Signing Block, if any. As in apksig and Android (`findApkSigningBlock`), a block whose framing
        // is broken, or any block when the central directory does not end where the EOCD starts, is no block at
        // all: the APK falls back to its JAR signature (apksig v2-only-garbage-between-cd-and-eocd.apk,
        // v2-only-apk-sig-block-size-mismatch.apk → JAR_SIG_NO_MANIFEST).
        var signingBlock: RawSigningBlock?
        do {
            if zip.centralDirectoryRange.upperBound == zip.endOfCentralDirectory.offset,
               let start = try SigningBlock.frameOffset(in: source, centralDirectoryOffset: zip.centralDirectoryOffset) {
                signingBlock = RawSigningBlock(bytes: try source.bytes(in: start..<zip.centralDirectoryOffset), offset: start)
            }
        } catch {
            report.signatureErrors.append(.error(.malformedAPK, "", "\(error)"))
            return
        }
        let digests = ContentDigestCache(source: source, zip: zip, signingBlockOffset: signingBlock?.offset ?? zip.centralDirectoryOffset,
                                         prefetch: prefetch)

        func merge(_ scheme: SignatureScheme, _ result: SchemeVerificationResult) {
            schemeResults[scheme] = result
            report.signatureErrors += result.errors + result.signers.flatMap(\.errors)
            report.signatureWarnings += result.warnings + result.signers.flatMap(\.warnings)
            report.schemes.append(SchemeReport(scheme: scheme, isVerified: result.isVerified, signers: result.signers.map { signer in
                SignerReport(name: "#\(signer.index + 1)", certificates: signer.certificates.map(CertificateInfo.init),
                             minSdkVersion: scheme == .v2 ? nil : signer.minSdkVersion, maxSdkVersion: scheme == .v2 ? nil : signer.maxSdkVersion,
                             errors: signer.errors, warnings: signer.warnings, targetsDevRelease: signer.targetsDevRelease)
            }))
            if result.isVerified { report.verifiedSchemes.insert(scheme) }
        }
        var hasErrors: Bool { !report.signatureErrors.isEmpty }

        // Whether JAR signatures will be checked (below) depends only on which scheme blocks exist, so when
        // they will be, the check starts now on another thread, alongside the block schemes (which mostly wait
        // for the content digests). Its result is used only if `found` turns out as predicted here; a report
        // that stops before the JAR signatures never shows it.
        func makeV1Verifier(found: Set<Int>) -> V1SchemeVerifier {
            V1SchemeVerifier(archive: archive, entries: archive.entries.filter { !$0.name.javaHasSuffix("/") },
                             supportedSchemeNames: supportedSchemeNames, foundSchemeIDs: found,
                             minSdkVersion: minSdkVersion, maxSdkVersion: maxSdkVersion)
        }
        let predictedFound = Self.schemeIDsFound(in: signingBlock, minSdkVersion: minSdkVersion, maxSdkVersion: maxSdkVersion)
        let earlyV1: BackgroundValue<V1SchemeVerifier.Result>?
        if minSdkVersion < AndroidSDK.nougat || predictedFound.isEmpty {
            let verifier = makeV1Verifier(found: predictedFound)
            earlyV1 = BackgroundValue { verifier.verify() }
        } else {
            earlyV1 = nil
        }
        defer { earlyV1?.wait() }

        // The entries' data (`checksEntries`): without a JAR check, all of it, read on another thread beside the
        // block schemes' digests; with one, what it did not digest, once it is done. The report gets the findings
        // whatever the signatures' verdict, on every way out of this function.
        var jarDigested: Set<Int64> = []
        let entryScan: BackgroundValue<EntryDataScan.Findings>? = options.checksEntries && earlyV1 == nil
            ? BackgroundValue { EntryDataScan.findings(archive: archive, entries: archive.entries) } : nil
        defer {
            if options.checksEntries {
                let scanned: EntryDataScan.Findings? = entryScan.flatMap { scan in try? scan.get() }
                let findings = scanned
                    ?? EntryDataScan.findings(archive: archive, entries: archive.entries.filter { !jarDigested.contains($0.localHeaderOffset) })
                report.checkedEntries = true
                report.entryErrors = findings.errors
                report.entryWarnings = findings.warnings
            }
        }

        if maxSdkVersion >= AndroidSDK.nougat, let signingBlock {
            // Android 17 (API 37) verifies a v3.2 block (hybrid: a classical and an ML-DSA signature) and
            // rejects the APK if it does not verify. apkpatch cannot check ML-DSA (OpenSSL 3.0 has none), so
            // it does not call such an APK verified where v3.2 counts; below 37 the block is ignored, as there.
            if maxSdkVersion >= AndroidSDK.c, signingBlock.schemeBlock(id: SigningBlock.ID.v32) != nil {
                report.signatureErrors.append(.error(.v32Unsupported, "", "The APK has an APK Signature Scheme v3.2 block (hybrid ML-DSA signatures), which Android checks from SDK version \(AndroidSDK.c); apkpatch cannot verify ML-DSA signatures"))
                return
            }
            var rotationMinSdkVersion: Int?
            if maxSdkVersion >= AndroidSDK.tiramisu, let block = signingBlock.schemeBlock(id: SigningBlock.ID.v31) {
                let verifier = SigningBlockSchemeVerifier(kind: .v31, minSdkVersion: max(minSdkVersion, AndroidSDK.tiramisu), maxSdkVersion: maxSdkVersion)
                let result = verifier.verify(block: block, digests: digests)
                found.insert(31)
                rotationMinSdkVersion = result.signers.map(\.minSdkVersion).min()
                merge(.v31, result)
                if hasErrors { return }
            }
            if maxSdkVersion >= AndroidSDK.pie {
                if let block = signingBlock.schemeBlock(id: SigningBlock.ID.v3) {
                    var verifier = SigningBlockSchemeVerifier(kind: .v3, minSdkVersion: max(minSdkVersion, AndroidSDK.pie), maxSdkVersion: maxSdkVersion)
                    verifier.rotationMinSdkVersion = rotationMinSdkVersion.flatMap { $0 > 0 ? $0 : nil }
                    let result = verifier.verify(block: block, digests: digests)
                    found.insert(3)
                    merge(.v3, result)
                } else if found.contains(31) {
                    report.signatureErrors.append(.error(.v31BlockFoundWithoutV3Block, "", "The APK contains a v3.1 signing block without a v3.0 base block"))
                }
                if hasErrors { return }
            }
            if minSdkVersion < AndroidSDK.pie || found.isEmpty, let block = signingBlock.schemeBlock(id: SigningBlock.ID.v2) {
                var verifier = SigningBlockSchemeVerifier(kind: .v2, minSdkVersion: max(minSdkVersion, AndroidSDK.nougat), maxSdkVersion: maxSdkVersion)
                verifier.supportedSchemeNames = supportedSchemeNames
                verifier.foundSchemeIDs = found
                let result = verifier.verify(block: block, digests: digests)
                found.insert(2)
                merge(.v2, result)
                if hasErrors { return }
            }
        }

        // Android O+: a target sandbox version above 1 needs a v2+ signature. apksig reads the manifest
        // here even when --min-sdk-version was given, so an APK without one cannot verify for O+.
        if maxSdkVersion >= 26 && manifest.isMissing {
            report.signatureErrors.append(.error(.malformedAPK, "", "Missing AndroidManifest.xml"))
            return
        }
        if maxSdkVersion >= 26, let sandbox = manifest.targetSandboxVersion, sandbox > 1, found.isEmpty {
            report.signatureErrors.append(.error(.noSigForTargetSandboxVersion, "", "Missing APK Signature Scheme v2 signature required for target sandbox version \(sandbox)"))
        }

        // JAR signatures: below N they are all Android checks; from N on, only without a block signature.
        var v1Result: V1SchemeVerifier.Result?
        if minSdkVersion < AndroidSDK.nougat || found.isEmpty {
            let result: V1SchemeVerifier.Result
            if let earlyV1, found == predictedFound {
                // The work cannot fail (`verify()` reports, not throws), so `try?` never falls back.
                result = (try? earlyV1.get()) ?? makeV1Verifier(found: found).verify()
            } else {
                result = makeV1Verifier(found: found).verify()
            }
            v1Result = result
            jarDigested = result.digestedEntries
            report.signatureErrors += result.errors + result.signers.flatMap(\.errors)
            report.signatureWarnings += result.warnings + result.signers.flatMap(\.warnings)
            report.schemes.append(SchemeReport(scheme: .v1, isVerified: result.isVerified, signers: result.signers.map { signer in
                SignerReport(name: signer.name, certificates: signer.certificateChain.map(CertificateInfo.init), minSdkVersion: nil, maxSdkVersion: nil,
                             errors: signer.errors, warnings: signer.warnings)
            }))
            if result.isVerified { report.verifiedSchemes.insert(.v1) }
        }
        if hasErrors { return }

        // The source stamp, if the APK names one (apksig checks it here: after the schemes, before the signers of
        // the schemes are compared, which can still fail the APK after the stamp was judged).
        if let stampEntry = archive.entry(named: SourceStamp.certificateDigestEntryName) {
            do {
                report.sourceStamp = try verifySourceStamp(entry: stampEntry, block: signingBlock?.schemeBlock(id: SigningBlock.ID.sourceStamp),
                                                           archive: archive, schemeResults: schemeResults, checkedJAR: v1Result != nil,
                                                           minSdkVersion: minSdkVersion, maxSdkVersion: maxSdkVersion)
                if report.sourceStamp == nil {
                    report.signatureWarnings.append(.warning(.sourceStampSigMissing, "", "No SourceStamp signature"))
                }
            } catch {
                report.signatureErrors.append(.error(.malformedAPK, "", "Failed to read APK: \(error)"))
                return
            }
        }

        // Unknown entries in the signing block are tolerated (v3.1 on older ranges, source stamps, padding,
        // vendor blocks), as on Android.
        let v1Signers = v1Result.map { $0.isVerified ? $0.signers : [] } ?? []
        let v2Signers = schemeResults[.v2].map { $0.isVerified ? $0.signers : [] } ?? []
        let v3Signers = schemeResults[.v3].map { $0.isVerified ? $0.signers : [] } ?? []
        let v31Signers = schemeResults[.v31].map { $0.isVerified ? $0.signers : [] } ?? []

        // v1 and v2 must name the same signers.
        if report.verifiedSchemes.contains(.v1) && report.verifiedSchemes.contains(.v2) {
            let v1Certificates = v1Signers.map { $0.certificateChain.first?.derBytes ?? [] }
            let v2Certificates = v2Signers.map { $0.certificates.first?.derBytes ?? [] }
            if let missing = v1Signers.indices.first(where: { !v2Certificates.contains(v1Certificates[$0]) }) {
                report.signatureErrors.append(.error(.v2SigMissing, "JAR signer \(v1Signers[missing].name)", "No APK Signature Scheme v2 signature from this signer"))
            }
            if let missing = v2Signers.indices.first(where: { !v1Certificates.contains(v2Certificates[$0]) }) {
                report.signatureErrors.append(.error(.jarSigMissing, "APK Signature Scheme v2 signer #\(missing + 1)", "No JAR signature from this signer"))
            }
        }

        // v3 against the older schemes: the same signer, or an older one at the root of the v3 lineage.
        if report.verifiedSchemes.contains(.v3) && (report.verifiedSchemes.contains(.v1) || report.verifiedSchemes.contains(.v2)) {
            let oldCertificate: VerificationCertificate?
            if report.verifiedSchemes.contains(.v1) {
                if v1Signers.count != 1 {
                    report.signatureErrors.append(.error(.v3SigMultiplePastSigners, "", "Multiple signatures found for pre-v3 signing with an APK  Signature Scheme v3 signer.  Only one allowed."))
                }
                oldCertificate = v1Signers.first?.certificateChain.first
            } else {
                if v2Signers.count != 1 {
                    report.signatureErrors.append(.error(.v3SigMultiplePastSigners, "", "Multiple signatures found for pre-v3 signing with an APK  Signature Scheme v3 signer.  Only one allowed."))
                }
                oldCertificate = v2Signers.first?.certificates.first
            }
            // The lineage the v1/v2 signer must start: the v3.1 block's when it was verified (apksig's
            // `Result.mergeFrom` keeps it over the v3.0 block's), else the v3.0 block's.
            if let lineage = schemeResults[.v31]?.lineage ?? schemeResults[.v3]?.lineage {
                if oldCertificate.flatMap({ lineage.index(of: $0) }) != 0 {
                    report.signatureErrors.append(.error(.v3SigPastSignersMismatch, "", "v3 signer differs from v1/v2 signer without proper signing certificate lineage."))
                } else if schemeResults[.v3]?.lineage == nil, let old = oldCertificate,
                          let other = v3Signers.compactMap(\.certificates.first).first(where: { $0.derBytes != old.derBytes }) {
                    // apksigner 35 signs so (a lineage of three keys given with all three): the v3.0 signer is
                    // linked to the v1/v2 signer only by the v3.1 block's lineage, which Android reads from API 33.
                    report.signatureWarnings.append(.warning(.v30SigPastSignersMismatch, "", "the v3.0 block's signer (\(other.subjectDN)) is not the v1/v2 signer (\(old.subjectDN)) and has no lineage from it: only the v3.1 block's lineage links them, which Android reads from API 33 on, so for API 28 to 32 the APK does not verify (verifying up to API 32 shows it). Sign the v3.0 block with the original signer, as apkpatch's signer and current apksig do"))
                }
            } else {
                if v3Signers.count != 1 {
                    report.signatureErrors.append(.error(.v3SigMultipleSigners, "", "Multiple APK Signature Scheme v3 signatures found for a single  platform version."))
                }
                if oldCertificate?.derBytes != v3Signers.first?.certificates.first?.derBytes {
                    report.signatureErrors.append(.error(.v3SigPastSignersMismatch, "", "v3 signer differs from v1/v2 signer without proper signing certificate lineage."))
                }
            }
        }

        // Bytes of the entries section that no entry accounts for are covered by a v2+ signature (its digests
        // run over the whole section) but not by a JAR signature, which digests entries only. Where a device
        // checks only the JAR signature (no v2+ block verified, or Android 5-6 below API 24), such bytes are
        // unsigned. Before the first local header that is an error although apksig accepts it: a DEX prefix is
        // what Android 5.0-8.0 ran as the app's code (Janus, CVE-2017-13156). Elsewhere Android reads by the
        // central directory and never sees them (apksig accepts a JAR-signed APK with an unframeable block
        // before its central directory, v1-with-apk-sig-block-but-without-apk-sig-scheme-v2-block.apk): a warning.
        let onlyJARChecked = minSdkVersion < AndroidSDK.nougat
            || !(report.verifiedSchemes.contains(.v2) || report.verifiedSchemes.contains(.v3) || report.verifiedSchemes.contains(.v31))
        let checked = minSdkVersion < AndroidSDK.nougat ? "below API 24" : "here"
        var inside: [Range<Int64>] = []
        // A record at offset 0 that no entry names (a leftover of an earlier signing) is no prefix: Android
        // opens the APK (`checkArchiveStart`), and no release runs it as code (a DEX starts "dex\n").
        let hasPrefix = zip.firstLocalHeaderOffset > 0 && !zip.startsWithLocalHeader
        for range in zip.unaccountedRanges where onlyJARChecked {
            guard range.lowerBound == 0 && hasPrefix else { inside.append(range); continue }
            report.signatureErrors.append(.error(.jarSigUnprotectedBytes, "", "\(range.upperBound - range.lowerBound) bytes before the first local header belong to no entry, and the JAR signature, the only one checked \(checked), does not cover them: Android 5.0-8.0 would run a DEX file there as the app's code (Janus, CVE-2017-13156). Strip them (zip -J) and sign again"))
        }
        if let first = inside.first {
            let total = inside.reduce(Int64(0)) { $0 + $1.upperBound - $1.lowerBound }
            report.signatureWarnings.append(.warning(.jarSigUnprotectedBytes, "", "\(total) bytes in \(inside.count) range\(inside.count == 1 ? "" : "s") of the entries section (the first at offset \(first.lowerBound)) belong to no entry, and the JAR signature, the only one checked \(checked), does not cover them. Android reads entries by the central directory and ignores them, but a streaming ZIP reader sees what they hold"))
        }

        // Android R+: targetSdkVersion ≥ 30 needs a v2 or newer signature.
        if let targetSdkVersion = manifest.targetSdkVersion(minSdkVersion: minSdkVersion),
           targetSdkVersion >= AndroidSDK.r, maxSdkVersion >= targetSdkVersion,
           !report.verifiedSchemes.contains(.v2), !report.verifiedSchemes.contains(.v3), !report.verifiedSchemes.contains(.v31) {
            report.signatureErrors.append(.error(.minSigSchemeForTargetSdkNotMet, "", "Target SDK version \(targetSdkVersion) requires a minimum of signature scheme v2; the APK is not signed with this or a later signature scheme"))
        }
        if hasErrors { return }

        report.isSignatureVerified = true
        if let lineage = schemeResults[.v31]?.lineage ?? schemeResults[.v3]?.lineage {
            report.lineage = lineage.nodes.map { CertificateInfo($0.certificate) }
            report.lineageCapabilities = lineage.nodes.map { LineageCapabilities(flags: $0.flags) }
        }
        if let last = v31Signers.last ?? v3Signers.last {
            report.signers = last.certificates.prefix(1).map(CertificateInfo.init)
        } else if report.verifiedSchemes.contains(.v2) {
            report.signers = v2Signers.compactMap { $0.certificates.first.map(CertificateInfo.init) }
        } else {
            report.signers = v1Signers.compactMap { $0.certificateChain.first.map(CertificateInfo.init) }
        }
    }
}

extension Verifier {
    /// apksig's stamp check in `ApkVerifier.verify`: nil when the APK Signing Block has no stamp pair. The digests
    /// stamped are those of the schemes checked: each signer's content digests as the scheme verification read
    /// (and compared with the APK), and for JAR signing the SHA-256 of META-INF/MANIFEST.MF (no digest when
    /// there is none, which no stamp signature matches). Throws when an entry's data cannot be read.
    func verifySourceStamp(entry: ZipEntry, block: [UInt8]?, archive: APKArchive, schemeResults: [SignatureScheme: SchemeVerificationResult],
                           checkedJAR: Bool, minSdkVersion: Int, maxSdkVersion: Int) throws -> SourceStampReport? {
        let certificateDigest = try archive.uncompressedData(of: entry)
        guard let block else { return nil }
        var schemeDigests: [UInt32: [UInt32: [UInt8]]] = [:]
        for (scheme, id) in [(SignatureScheme.v2, SourceStamp.Scheme.v2), (.v3, SourceStamp.Scheme.v3), (.v31, SourceStamp.Scheme.v31)] {
            guard let result = schemeResults[scheme] else { continue }
            var digests: [UInt32: [UInt8]] = [:]
            for signer in result.signers {
                for digest in signer.contentDigests {
                    guard let algorithm = SignatureAlgorithm(id: digest.algorithmID) else { continue }
                    digests[algorithm.contentDigestAlgorithm.id] = digest.value
                }
            }
            schemeDigests[id] = digests
        }
        if checkedJAR {
            var digests: [UInt32: [UInt8]] = [:]
            if let manifest = archive.entry(named: "META-INF/MANIFEST.MF") {
                digests[SourceStamp.manifestDigestID] = VerificationDigest.sha256.hash(try archive.uncompressedData(of: manifest))
            }
            schemeDigests[SourceStamp.Scheme.jar] = digests
        }
        let verifier = SourceStampVerifier(minSdkVersion: max(minSdkVersion, AndroidSDK.r), maxSdkVersion: maxSdkVersion)
        let result = verifier.verify(block: block, certificateDigest: certificateDigest, schemeDigests: schemeDigests)
        return SourceStampReport(isVerified: result.isVerified, certificate: result.certificate.map(CertificateInfo.init),
                                 lineage: result.lineage.map(CertificateInfo.init), timestamp: result.timestamp,
                                 errors: result.errors, warnings: result.warnings, infos: result.infos)
    }

    /// Android 8.1 (API 27) and later open no APK whose first bytes are not a local file header, whatever the
    /// prefix holds (libziparchive's ParseZipArchive, the fix for Janus, A-64211847); apksig does not look.
    /// libziparchive checks only the signature at offset 0: a local record there that no entry names (a
    /// leftover of an earlier signing, `ZipArchive.staleSignerRecords`) opens, as it does here.
    static func checkArchiveStart(_ zip: ZipArchive, maxSdkVersion: Int, report: inout VerificationReport) {
        guard reportsBytesBeforeFirstEntry(zip, maxSdkVersion: maxSdkVersion) else { return }
        report.installErrors.append(.error(.installBytesBeforeFirstEntry, "",
            "\(zip.firstLocalHeaderOffset) bytes come before the first local header; Android 8.1 and later refuse to open an APK that does not start with one (\"Entry at offset zero has invalid LFH signature\"). Strip them (zip -J) and sign again"))
    }

    /// Whether `checkArchiveStart` reports bytes before the first local header.
    static func reportsBytesBeforeFirstEntry(_ zip: ZipArchive, maxSdkVersion: Int) -> Bool {
        zip.firstLocalHeaderOffset > 0 && maxSdkVersion >= oreoMR1 && !zip.startsWithLocalHeader
    }

    /// Android 8.1's API level.
    static let oreoMR1 = 27

    /// The scheme IDs `verifySignatures` has found when it reaches the JAR signatures: the v3.1 block on T+,
    /// the v3 block on P+, and the v2 block when the range starts below P or neither of those was found.
    static func schemeIDsFound(in signingBlock: RawSigningBlock?, minSdkVersion: Int, maxSdkVersion: Int) -> Set<Int> {
        var found: Set<Int> = []
        guard maxSdkVersion >= AndroidSDK.nougat, let signingBlock else { return found }
        if maxSdkVersion >= AndroidSDK.tiramisu && signingBlock.schemeBlock(id: SigningBlock.ID.v31) != nil { found.insert(31) }
        if maxSdkVersion >= AndroidSDK.pie && signingBlock.schemeBlock(id: SigningBlock.ID.v3) != nil { found.insert(3) }
        if (minSdkVersion < AndroidSDK.pie || found.isEmpty) && signingBlock.schemeBlock(id: SigningBlock.ID.v2) != nil { found.insert(2) }
        return found
    }
}

/// Why verification could not run at all.
public enum VerificationError: Error, CustomStringConvertible {
    case cannotRead(path: String, reason: String)
    case invalidOptions(String)

    public var description: String {
        switch self {
        case .cannotRead(let path, let reason): return "cannot read \(path): \(reason)"
        case .invalidOptions(let message): return "the SDK version range to verify for is not valid: \(message)"
        }
    }
}

/// What the verifier needs from AndroidManifest.xml, read once, the way apksig reads it
/// (`ApkUtils.getMinSdkVersionFromBinaryAndroidManifest` and friends): attributes are matched by resource
/// ID only (an attribute merely *named* minSdkVersion does not count, as on Android), `<uses-sdk>` must be a
/// child of the root element, and minSdkVersion is the highest over all `<uses-sdk>` elements (absent → 1).
struct ManifestFacts {
    struct ManifestProblem: Error { let message: String }

    static let missingMessage = "Missing AndroidManifest.xml"

    /// The parsed document, or why it could not be read.
    let tree: Result<XMLTree, ManifestProblem>

    init(archive: APKArchive) {
        guard let entry = archive.entry(named: "AndroidManifest.xml") else {
            tree = .failure(ManifestProblem(message: Self.missingMessage))
            return
        }
        do {
            // Only what the verifier reads is built; the checks (and errors) are those of the full parse.
            tree = .success(try XMLTree.manifestForVerification(binaryXML: try archive.uncompressedData(of: entry)))
        } catch {
            tree = .failure(ManifestProblem(message: "Failed to read AndroidManifest.xml: \(error)"))
        }
    }

    /// True when the APK has no AndroidManifest.xml entry at all.
    var isMissing: Bool {
        if case .failure(let problem) = tree { return problem.message == Self.missingMessage }
        return false
    }

    private var usesSDKElements: [XMLTree.Element] {
        guard case .success(let tree) = tree, let root = tree.root else { return [] }
        return root.elements.filter { $0.name == "uses-sdk" && ($0.namespace ?? "").isEmpty }
    }

    private static func attribute(_ element: XMLTree.Element, id: UInt32) -> XMLTree.Attribute? {
        element.attributes.first { $0.resourceID == id }
    }

    /// minSdkVersion as apksigner reads it: absent → 1; a preview codename cannot be verified for.
    var minSdkVersion: Result<Int, ManifestProblem> {
        if case .failure(let problem) = tree {
            return .failure(problem)
        }
        switch SDKVersion.minSdkVersion(of: usesSDKElements.map { Self.attribute($0, id: AndroidAttribute.minSdkVersion) }) {
        case .success(let level):
            return .success(level)
        case .failure(.unsupportedCodename(let text)):
            return .failure(ManifestProblem(message: "Unable to determine APK's minimum supported Android platform version: unsupported codename in AndroidManifest.xml's minSdkVersion: \(text.debugQuoted)"))
        case .failure(.unsupportedValueType):
            return .failure(ManifestProblem(message: "Unable to determine APK's minimum supported Android platform version: unsupported value type in AndroidManifest.xml's minSdkVersion"))
        }
    }

    /// targetSdkVersion as apksig's `getTargetSdkVersionFromBinaryAndroidManifest` reads it: the first
    /// `<uses-sdk>` that has the attribute decides; only a decimal or hexadecimal integer counts (a string,
    /// codename or not, a reference or a boolean cannot be coerced and falls back like a missing one), and
    /// the fallback is the manifest's minSdkVersion (not --min-sdk-version), or 1. Nil when the manifest is
    /// unreadable (apksig then skips the rule).
    func targetSdkVersion(minSdkVersion: Int) -> Int? {
        guard case .success = tree else { return nil }
        for usesSDK in usesSDKElements {
            guard let attribute = Self.attribute(usesSDK, id: AndroidAttribute.targetSdkVersion) else { continue }
            if case .typed(let type, let data) = attribute.value, type == .intDecimal || type == .intHex {
                return Int(Int32(bitPattern: data))
            }
            break
        }
        if case .success(let level) = self.minSdkVersion { return level }
        return 1
    }

    /// android:targetSandboxVersion on the root element; as for targetSdkVersion, apksig counts only a
    /// decimal or hex integer (anything else reads as the default, 1).
    var targetSandboxVersion: Int? {
        guard case .success(let tree) = tree, let root = tree.root,
              let attribute = Self.attribute(root, id: AndroidAttribute.targetSandboxVersion) else { return nil }
        guard case .typed(let type, let data) = attribute.value, type == .intDecimal || type == .intHex else { return nil }
        return Int(Int32(bitPattern: data))
    }

    /// android:extractNativeLibs on `<application>` (absent → nil, which Android reads as true).
    var extractNativeLibs: Bool? {
        guard case .success(let tree) = tree, let root = tree.root,
              let application = root.elements.first(where: { $0.name == "application" }),
              let attribute = Self.attribute(application, id: AndroidAttribute.extractNativeLibs) else { return nil }
        return attribute.value.booleanValue ?? attribute.value.integerValue.map { $0 != 0 } ?? attribute.value.stringValue.map { $0 == "true" }
    }
}

/// An APK opened for verification before anything else is known about the run: its content digests (the
/// bulk of verifying) start at once. The `apkpatch` executable prepares the path it sees last on a `verify`
/// command line before the rest of its arguments are parsed, so the digests use the cores that parsing
/// leaves idle. Give it to `Verifier.verify(_:)`, or `cancel()` it if the command turns out to be another.
public final class PreparedInput: Sendable {
    public let path: String
    let source: MappedFile
    let prefetch: ContentDigestPrefetch?

    /// Maps `path` and starts its content digests; nil when it cannot be mapped (the verifier reports why).
    public static func prepare(path: String) -> PreparedInput? {
        guard let source = try? MappedFile(path: path) else { return nil }
        source.readAhead()
        return PreparedInput(path: path, source: source, prefetch: ContentDigestPrefetch.start(source: source))
    }

    private init(path: String, source: MappedFile, prefetch: ContentDigestPrefetch?) {
        self.path = path
        self.source = source
        self.prefetch = prefetch
    }

    /// Stops the digests and waits for their workers.
    public func cancel() { prefetch?.cancel() }
}
