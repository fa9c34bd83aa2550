import APKCore
import OpenSSLWrapper
import SignatureSchemes

extension Verifier {
    /// Checks the APK's source stamp alone, as apksig's `ApkVerifier.verifySourceStamp(expectedCertDigest)` does
    /// (apksigner `verify --verify-source-stamp [--stamp-cert-digest HEX]`): the report verifies when the stamp
    /// does. The stamp is checked against the digests the signatures sign, read from the v3.0 and v2 blocks
    /// (their signatures over the signed data checked, the digests not compared with the APK's contents) and,
    /// where JAR signing counts, the SHA-256 of META-INF/MANIFEST.MF; the APK's own signatures are not verified.
    /// `expectedCertificateDigest`: the stamp certificate's SHA-256 digest the APK must name (hex, any case).
    /// Throws `VerificationError` only when the file cannot be read or the options are inconsistent.
    public func verifySourceStampOnly(path: String, expectedCertificateDigest: String?) throws -> VerificationReport {
        let source: MappedFile
        do { source = try MappedFile(path: path) } catch {
            throw VerificationError.cannotRead(path: path, reason: (error as? FileError)?.reason ?? "\(error)")
        }
        var report = VerificationReport(path: path, minSdkVersion: options.minSdkVersion ?? 1, maxSdkVersion: options.maxSdkVersion,
                                        isSignatureVerified: false, verifiedSchemes: [], schemes: [], signers: [],
                                        signatureErrors: [], signatureWarnings: [], installErrors: [], installWarnings: [],
                                        checkedInstallability: false)
        report.isSourceStampOnly = true
        if let min = options.minSdkVersion, min > options.maxSdkVersion {
            throw VerificationError.invalidOptions("minSdkVersion (\(min)) > maxSdkVersion (\(options.maxSdkVersion))")
        }
        let archive: APKArchive
        do {
            var limits = UnpackLimits()
            limits.checksEntryNames = false
            limits.readsLikeAndroid = true
            limits.readsZip64 = false
            limits.refusesUnaccountedBytes = false
            archive = try APKArchive(source: source, label: path, limits: limits)
        } catch {
            report.signatureErrors.append(.error(.malformedAPK, "", "Malformed APK: \(error)"))
            return report
        }
        guard let minSdkVersion = try signaturesMinSdkVersion(manifest: ManifestFacts(archive: archive), report: &report) else {
            return report
        }
        let maxSdkVersion = options.maxSdkVersion
        let zip = archive.zip
        let signingBlock: RawSigningBlock?
        do {
            if zip.centralDirectoryRange.upperBound == zip.endOfCentralDirectory.offset,
               let start = try SigningBlock.frameOffset(in: source, centralDirectoryOffset: zip.centralDirectoryOffset) {
                signingBlock = RawSigningBlock(bytes: try source.bytes(in: start..<zip.centralDirectoryOffset), offset: start)
            } else {
                signingBlock = nil
            }
        } catch {
            report.signatureErrors.append(.error(.malformedAPK, "", "\(error)"))
            return report
        }
        let stampBlock = signingBlock?.schemeBlock(id: SigningBlock.ID.sourceStamp)

        // The stamp certificate's digest the APK names, and the one expected.
        guard let stampEntry = archive.entry(named: SourceStamp.certificateDigestEntryName) else {
            report.signatureErrors.append(stampBlock != nil
                ? .error(.sourceStampSignatureBlockWithoutCertDigest, "", "A source stamp signature block was found without a corresponding certificate digest in the APK")
                : .error(.sourceStampCertDigestAndSigBlockMissing, "", "Neither the source stamp certificate digest file nor the signature block are present in the APK"))
            return report
        }
        do {
            let certificateDigest = try archive.uncompressedData(of: stampEntry)
            if let expected = expectedCertificateDigest, expected.lowercased() != certificateDigest.hexString {
                report.signatureErrors.append(.error(.sourceStampExpectedDigestMismatch, "",
                    "The source stamp certificate digest in the APK, \(certificateDigest.hexString), does not match the expected digest, \(expected)"))
                return report
            }

            // The digests the signatures sign: v3.0 from P, v2 where it counts, JAR signing where it counts.
            var schemeDigests: [UInt32: [UInt32: [UInt8]]] = [:]
            var found: Set<Int> = []
            func digests(of result: SchemeVerificationResult) -> [UInt32: [UInt8]] {
                var digests: [UInt32: [UInt8]] = [:]
                for signer in result.signers {
                    for digest in signer.contentDigests {
                        guard let algorithm = SignatureAlgorithm(id: digest.algorithmID) else { continue }
                        digests[algorithm.contentDigestAlgorithm.id] = digest.value
                    }
                }
                return digests
            }
            func failed(_ result: SchemeVerificationResult) -> Bool {
                guard result.containsErrors else { return false }
                report.signatureErrors += result.errors + result.signers.flatMap(\.errors)
                report.signatureWarnings += result.warnings + result.signers.flatMap(\.warnings)
                return true
            }
            if maxSdkVersion >= AndroidSDK.pie, let block = signingBlock?.schemeBlock(id: SigningBlock.ID.v3) {
                let result = SigningBlockSchemeVerifier(kind: .v3, minSdkVersion: max(minSdkVersion, AndroidSDK.pie), maxSdkVersion: maxSdkVersion)
                    .signersAsSigned(block: block)
                found.insert(3)
                if failed(result) { return report }
                schemeDigests[SourceStamp.Scheme.v3] = digests(of: result)
            }
            if maxSdkVersion >= AndroidSDK.nougat, minSdkVersion < AndroidSDK.pie || found.isEmpty,
               let block = signingBlock?.schemeBlock(id: SigningBlock.ID.v2) {
                var verifier = SigningBlockSchemeVerifier(kind: .v2, minSdkVersion: max(minSdkVersion, AndroidSDK.nougat), maxSdkVersion: maxSdkVersion)
                verifier.supportedSchemeNames = maxSdkVersion >= AndroidSDK.pie
                    ? [2: "APK Signature Scheme v2", 3: "APK Signature Scheme v3"] : [2: "APK Signature Scheme v2"]
                verifier.foundSchemeIDs = found
                let result = verifier.signersAsSigned(block: block)
                found.insert(2)
                if failed(result) { return report }
                schemeDigests[SourceStamp.Scheme.v2] = digests(of: result)
            }
            if minSdkVersion < AndroidSDK.nougat || found.isEmpty {
                var jar: [UInt32: [UInt8]] = [:]
                if let manifest = archive.entry(named: "META-INF/MANIFEST.MF") {
                    jar[SourceStamp.manifestDigestID] = VerificationDigest.sha256.hash(try archive.uncompressedData(of: manifest))
                }
                schemeDigests[SourceStamp.Scheme.jar] = jar
            }
            guard let stampBlock else {
                report.signatureErrors.append(.error(.sourceStampSigMissing, "", "No SourceStamp signature"))
                return report
            }
            let result = SourceStampVerifier(minSdkVersion: minSdkVersion, maxSdkVersion: maxSdkVersion)
                .verify(block: stampBlock, certificateDigest: certificateDigest, schemeDigests: schemeDigests)
            report.sourceStamp = SourceStampReport(isVerified: result.isVerified, certificate: result.certificate.map(CertificateInfo.init),
                                                   lineage: result.lineage.map(CertificateInfo.init), timestamp: result.timestamp,
                                                   errors: result.errors, warnings: result.warnings, infos: result.infos)
            report.isSignatureVerified = result.isVerified
        } catch {
            report.signatureErrors.append(.error(.malformedAPK, "", "Failed to read APK: \(error)"))
        }
        return report
    }
}
