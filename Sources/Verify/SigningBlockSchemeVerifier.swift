import APKCore
import OpenSSLWrapper
import SignatureSchemes

/// Reads the APK Signing Block's raw bytes and finds scheme blocks in it the way apksig does
/// (`ApkSigningBlockUtilsLite.findApkSignatureSchemeBlock`): pairs are walked in order and the first pair
/// with the ID wins; a malformed pair before it means "no such signature" (which then fails the APK through
/// the stripping protections or the scheme rules), never a trap.
struct RawSigningBlock {
    /// The whole block: leading size, pairs, trailing size, magic.
    let bytes: [UInt8]
    /// Where it starts in the APK.
    let offset: Int64

    func schemeBlock(id wanted: UInt32) -> [UInt8]? { SigningBlock.value(ofFirstPair: wanted, inBlock: bytes) }
}

/// A cursor over signer-block bytes with the semantics of the Java `ByteBuffer` reads apksig makes:
/// `getInt` fails with an underflow, the length-prefixed reads with a format error.
struct SchemeBuffer {
    enum Failure: Error { case underflow, format(String) }
    private let bytes: ArraySlice<UInt8>
    private var position: Int

    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes; position = bytes.startIndex }
    init(_ bytes: [UInt8]) { self.init(bytes[...]) }

    var hasRemaining: Bool { position < bytes.endIndex }
    var remaining: Int { bytes.endIndex - position }

    mutating func getInt() throws -> Int32 {
        guard remaining >= 4 else { throw Failure.underflow }
        let value = UInt32(bytes[position]) | UInt32(bytes[position + 1]) << 8 | UInt32(bytes[position + 2]) << 16 | UInt32(bytes[position + 3]) << 24
        position += 4
        return Int32(bitPattern: value)
    }

    mutating func lengthPrefixedSlice() throws -> SchemeBuffer {
        guard remaining >= 4 else { throw Failure.format("remaining buffer too short to contain length of length-prefixed field") }
        let length = try getInt()
        guard length >= 0 else { throw Failure.format("negative length") }
        guard Int(length) <= remaining else {
            throw Failure.format("length-prefixed field longer than remaining buffer. Field length: \(length), remaining: \(remaining)")
        }
        let slice = SchemeBuffer(bytes[position..<(position + Int(length))])
        position += Int(length)
        return slice
    }

    mutating func lengthPrefixedBytes() throws -> [UInt8] {
        let length = try getInt()
        guard length >= 0 else { throw Failure.format("negative length") }
        guard Int(length) <= remaining else {
            throw Failure.format("underflow while reading length-prefixed value. Length: \(length), available: \(remaining)")
        }
        let value = Array(bytes[position..<(position + Int(length))])
        position += Int(length)
        return value
    }

    mutating func rest() -> [UInt8] {
        let value = Array(bytes[position...])
        position = bytes.endIndex
        return value
    }

    var all: [UInt8] { Array(bytes) }
}

/// What one APK Signature Scheme v2/v3/v3.1 block says and whether it verifies.
struct SchemeVerificationResult {
    struct Signer {
        var index: Int
        var context: String
        var certificates: [VerificationCertificate] = []
        var minSdkVersion = 0
        var maxSdkVersion = Int(Int32.max)
        var signatureAlgorithmIDs: [UInt32] = []
        var contentDigests: [(algorithmID: UInt32, value: [UInt8])] = []
        var hasLineage = false
        /// v3.1: the signer targets the development release after `minSdkVersion` (attribute 0xc2a6b3ba).
        var targetsDevRelease = false
        var lineage: SigningCertificateLineage?
        var errors: [Issue] = []
        var warnings: [Issue] = []
        mutating func error(_ code: Issue.Code, _ message: String) { errors.append(.error(code, context, message)) }
        mutating func warning(_ code: Issue.Code, _ message: String) { warnings.append(.warning(code, context, message)) }
    }
    var isVerified = false
    var signers: [Signer] = []
    /// v3/v3.1: the signers' lineages merged into one (apksig `consolidateLineages`), nil without any.
    var lineage: SigningCertificateLineage?
    var errors: [Issue] = []
    var warnings: [Issue] = []
    var containsErrors: Bool { !errors.isEmpty || signers.contains { !$0.errors.isEmpty } }
}

/// Computes content digests once per algorithm and shares them between schemes (v3 and v2 usually sign the
/// same CHUNKED_SHA256 digest).
final class ContentDigestCache {
    let source: any DataSource
    let zip: ZipArchive
    let signingBlockOffset: Int64
    /// Digests started before the archive was parsed; used only if computed over this exact layout.
    let prefetch: ContentDigestPrefetch?
    private var cache: [ContentDigestAlgorithm: [UInt8]] = [:]

    init(source: any DataSource, zip: ZipArchive, signingBlockOffset: Int64, prefetch: ContentDigestPrefetch? = nil) {
        self.source = source; self.zip = zip; self.signingBlockOffset = signingBlockOffset; self.prefetch = prefetch
    }

    func digests(for algorithms: Set<ContentDigestAlgorithm>) throws -> [ContentDigestAlgorithm: [UInt8]] {
        if let prefetch, algorithms.contains(where: { cache[$0] == nil && prefetch.algorithms.contains($0) }) {
            let layout = ContentDigestPrefetch.Layout(signingBlockOffset: signingBlockOffset, centralDirectoryOffset: zip.centralDirectoryOffset,
                                                      endOfCentralDirectoryOffset: zip.endOfCentralDirectory.offset)
            if let computed = prefetch.digests(for: layout) {
                for algorithm in algorithms where cache[algorithm] == nil { cache[algorithm] = computed[algorithm] }
            }
        }
        let missing = algorithms.filter { cache[$0] == nil }
        if !missing.isEmpty {
            let eocdOffset = zip.endOfCentralDirectory.offset
            let entries = try source.slice(0..<signingBlockOffset)
            let centralDirectory = try source.slice(zip.centralDirectoryOffset..<eocdOffset)
            let eocd = try source.bytes(in: eocdOffset..<source.count)
            let chunked = missing.filter(\.isChunked)
            if !chunked.isEmpty {
                let computed = try ContentDigester.digests(entries: entries, centralDirectory: centralDirectory,
                                                           endOfCentralDirectory: eocd, algorithms: Set(chunked))
                cache.merge(computed) { $1 }
            }
            if missing.contains(.verityChunkedSHA256) {
                guard signingBlockOffset % 4096 == 0 else {
                    throw VerityError("APK Signing Block is not aligned on 4k boundary: \(signingBlockOffset)")
                }
                guard (zip.centralDirectoryOffset - signingBlockOffset) % 4096 == 0 else {
                    throw VerityError("APK Signing Block size is not multiple of page size: \(zip.centralDirectoryOffset - signingBlockOffset)")
                }
                let patched = try ContentDigester.endOfCentralDirectoryForDigesting(eocd, centralDirectoryOffset: signingBlockOffset)
                cache[.verityChunkedSHA256] = try VerityTree.contentDigest(of: [entries, centralDirectory, ByteArrayDataSource(patched)])
            }
        }
        return cache.filter { algorithms.contains($0.key) }
    }
}

struct VerityError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The APK Signature Scheme v2 and v3 (and v3.1) verifiers: apksig's `V2SchemeVerifier` and
/// `V3SchemeVerifier`, in the same order of checks, so that a malformed or tampered block fails with the same
/// issue apksig reports.
struct SigningBlockSchemeVerifier {
    enum Kind { case v2, v3, v31 }

    let kind: Kind
    /// The API range this scheme is verified for (already clamped to the scheme's first level).
    let minSdkVersion: Int
    let maxSdkVersion: Int
    /// v2 only: scheme IDs known in range and those already found (stripping-protection attribute).
    var supportedSchemeNames: [Int: String] = [:]
    var foundSchemeIDs: Set<Int> = []
    /// v3.0 only: the lowest minSdkVersion of the v3.1 signers, when a v3.1 block verified.
    var rotationMinSdkVersion: Int?

    static let maxSigners = 10

    private var schemeName: String {
        switch kind {
        case .v2: return "APK Signature Scheme v2"
        case .v3: return "APK Signature Scheme v3"
        case .v31: return "APK Signature Scheme v3.1"
        }
    }

    private func code(_ v2: Issue.Code, _ v3: Issue.Code) -> Issue.Code { kind == .v2 ? v2 : v3 }

    /// How apksigner names a signer in its findings: "APK Signature Scheme v2 signer #1"; a v3.1 signer with the
    /// SDK range its record states (apksigner 33 on: "APK Signature Scheme v3.1 signer #1(minSdkVersion=33,
    /// maxSdkVersion=2147483647)", 0 and 0 before the record's range is read), which CI scripts match.
    private func signerContext(index: Int, minSdkVersion: Int, maxSdkVersion: Int) -> String {
        let name = "\(schemeName) signer #\(index + 1)"
        return kind == .v31 ? "\(name)(minSdkVersion=\(minSdkVersion), maxSdkVersion=\(maxSdkVersion))" : name
    }

    func verify(block: [UInt8], digests: ContentDigestCache) -> SchemeVerificationResult {
        var result = SchemeVerificationResult()
        var contentDigestsToVerify: Set<ContentDigestAlgorithm> = []
        parseSigners(block, into: &result, contentDigestsToVerify: &contentDigestsToVerify)
        if result.containsErrors { return result }

        // Integrity of everything outside the signing block.
        let actual: [ContentDigestAlgorithm: [UInt8]]
        do { actual = try digests.digests(for: contentDigestsToVerify) } catch {
            result.errors.append(.error(.malformedAPK, "", "Failed to compute content digests: \(error)"))
            return result
        }
        for index in result.signers.indices {
            for expected in result.signers[index].contentDigests {
                guard let algorithm = SignatureAlgorithm(id: expected.algorithmID) else { continue }
                let contentAlgorithm = algorithm.contentDigestAlgorithm
                guard contentDigestsToVerify.contains(contentAlgorithm) else { continue }
                let value = actual[contentAlgorithm] ?? []
                if value != expected.value {
                    result.signers[index].error(code(.v2SigAPKDigestDidNotVerify, .v3SigAPKDigestDidNotVerify),
                                                "APK integrity check failed. \(contentAlgorithm) digest mismatch. Expected: <\(expected.value.hexString)>, actual: <\(value.hexString)>")
                }
            }
        }

        if kind != .v2 && !result.containsErrors { checkContinuousSdkTargeting(&result) }
        if !result.containsErrors { result.isVerified = true }
        return result
    }

    /// The signers as apksig's `ApkVerifier.getApkContentDigests` reads them to check a source stamp alone: each
    /// signer's signatures over its signed data checked, its content digests taken as signed, not compared
    /// with the APK's contents.
    func signersAsSigned(block: [UInt8]) -> SchemeVerificationResult {
        var result = SchemeVerificationResult()
        var contentDigestsToVerify: Set<ContentDigestAlgorithm> = []
        parseSigners(block, into: &result, contentDigestsToVerify: &contentDigestsToVerify)
        return result
    }

    /// v3: the signers must cover the requested API range without overlaps or holes.
    private func checkContinuousSdkTargeting(_ result: inout SchemeVerificationResult) {
        var byMax: [Int: SchemeVerificationResult.Signer] = [:]
        for signer in result.signers { byMax[signer.maxSdkVersion] = signer }
        var firstMin = 0, lastMax = 0, lastLineageSize = 0
        var lineages: [SigningCertificateLineage] = []
        for key in byMax.keys.sorted() {
            let signer = byMax[key]!
            if firstMin == 0 {
                firstMin = signer.minSdkVersion
            } else if signer.minSdkVersion != lastMax + 1 && !(signer.minSdkVersion == lastMax && signer.targetsDevRelease) {
                result.errors.append(.error(.v3InconsistentSdkVersions, "", "APK Signature Scheme v3 signers supported min/max SDK versions are not continuous."))
                break
            }
            lastMax = signer.maxSdkVersion
            // Lineages may only grow towards newer platforms.
            if let lineage = signer.lineage {
                if lineage.nodes.count < lastLineageSize {
                    result.errors.append(.error(.v3InconsistentLineages, "", "SigningCertificateLineages targeting different platform versions using APK Signature Scheme v3 are not all a part of the same overall lineage."))
                    break
                }
                lastLineageSize = lineage.nodes.count
                lineages.append(lineage)
            }
        }
        // v3.1 may start rotation at any level (v3.0 covers the levels before it): apksig's
        // `V3SchemeVerifier.Builder.build` sets a v3.1 verifier's minimum to its maximum.
        let requiredMin = kind == .v31 ? maxSdkVersion : minSdkVersion
        let requiredMax = rotationMinSdkVersion.map { $0 - 1 } ?? maxSdkVersion
        if firstMin > requiredMin || lastMax < requiredMax {
            result.errors.append(.error(.v3MissingSdkVersions, "", "APK Signature Scheme v3 signers supported min/max SDK versions do not cover the entire desired range.  Found min:  \(firstMin) max \(lastMax)"))
        }
        // All lineages must be parts of one signing history, whatever their sizes.
        var consolidated = lineages.first
        for lineage in lineages.dropFirst() {
            consolidated = consolidated?.merged(with: lineage)
            if consolidated == nil {
                result.errors.append(.error(.v3InconsistentLineages, "", "SigningCertificateLineages targeting different platform versions using APK Signature Scheme v3 are not all a part of the same overall lineage."))
                break
            }
        }
        result.lineage = consolidated
    }

    private func parseSigners(_ block: [UInt8], into result: inout SchemeVerificationResult, contentDigestsToVerify: inout Set<ContentDigestAlgorithm>) {
        var outer = SchemeBuffer(block)
        var signers: SchemeBuffer
        do { signers = try outer.lengthPrefixedSlice() } catch {
            result.errors.append(.error(code(.v2SigMalformedSigners, .v3SigMalformedSigners), "", "Malformed list of signers"))
            return
        }
        if !signers.hasRemaining {
            result.errors.append(.error(code(.v2SigNoSigners, .v3SigNoSigners), "", "No signers in \(schemeName) signature"))
            return
        }
        var count = 0
        while signers.hasRemaining {
            let index = count
            count += 1
            var signer = SchemeVerificationResult.Signer(index: index, context: signerContext(index: index, minSdkVersion: 0, maxSdkVersion: 0))
            do {
                var signerBlock = try signers.lengthPrefixedSlice()
                try parseSigner(&signerBlock, into: &signer, contentDigestsToVerify: &contentDigestsToVerify)
                result.signers.append(signer)
            } catch {
                signer.error(code(.v2SigMalformedSigner, .v3SigMalformedSigner), "Malformed signer block")
                result.signers.append(signer)
                return
            }
        }
        if kind == .v2 && count > Self.maxSigners {
            result.errors.append(.error(.v2SigMaxSignaturesExceeded, "", "APK Signature Scheme V2 only supports a maximum of \(Self.maxSigners) signers, found \(count)"))
        }
    }

    /// Parses and checks one signer; throws (→ MALFORMED_SIGNER) where apksig's parse throws.
    private func parseSigner(_ signerBlock: inout SchemeBuffer, into signer: inout SchemeVerificationResult.Signer,
                             contentDigestsToVerify: inout Set<ContentDigestAlgorithm>) throws {
        let signedDataBuffer = try signerBlock.lengthPrefixedSlice()
        let signedData = signedDataBuffer.all
        var parsedMin = 0, parsedMax = 0
        if kind != .v2 {
            parsedMin = Int(try signerBlock.getInt())
            parsedMax = Int(try signerBlock.getInt())
            signer.minSdkVersion = parsedMin
            signer.maxSdkVersion = parsedMax
            signer.context = signerContext(index: signer.index, minSdkVersion: parsedMin, maxSdkVersion: parsedMax)
            if parsedMin < 0 || parsedMin > parsedMax {
                signer.error(.v3SigInvalidSdkVersions, "Invalid SDK Version parameter(s) encountered in APK Signature scheme v3 signature: minSdkVersion \(parsedMin) maxSdkVersion: \(parsedMax)")
            }
        }
        var signatures = try signerBlock.lengthPrefixedSlice()
        let publicKeyBytes = try signerBlock.lengthPrefixedBytes()

        var supported: [(algorithm: SignatureAlgorithm, signature: [UInt8])] = []
        var signatureCount = 0
        while signatures.hasRemaining {
            signatureCount += 1
            do {
                var record = try signatures.lengthPrefixedSlice()
                let id = UInt32(bitPattern: try record.getInt())
                let bytes = try record.lengthPrefixedBytes()
                signer.signatureAlgorithmIDs.append(id)
                guard let algorithm = SignatureAlgorithm(id: id) else {
                    signer.warning(code(.v2SigUnknownSigAlgorithm, .v3SigUnknownSigAlgorithm), "Unknown signature algorithm: 0x\(String(id, radix: 16))")
                    continue
                }
                supported.append((algorithm, bytes))
            } catch {
                signer.error(code(.v2SigMalformedSignature, .v3SigMalformedSignature), "Malformed \(schemeName) signature record #\(signatureCount)")
                return
            }
        }
        if signer.signatureAlgorithmIDs.isEmpty {
            signer.error(code(.v2SigNoSignatures, .v3SigNoSignatures), "No signatures")
            return
        }
        // A v3 signer targeting a development release verifies from the level after its stated minimum.
        if kind != .v2 { signer.targetsDevRelease = Self.signedDataTargetsDevRelease(signedDataBuffer) }
        let range = kind == .v2 ? (minSdkVersion, maxSdkVersion)
                                : (signer.minSdkVersion + (signer.targetsDevRelease ? 1 : 0), signer.maxSdkVersion)
        guard let toVerify = Self.signaturesToVerify(supported, minSdkVersion: range.0, maxSdkVersion: range.1) else {
            signer.error(code(.v2SigNoSupportedSignatures, .v3SigNoSupportedSignatures), "No supported signatures")
            return
        }
        for (algorithm, signature) in toVerify {
            let keyType = Self.keyType(algorithm)
            let key: VerificationPublicKey
            do { key = try VerificationPublicKey(subjectPublicKeyInfoDER: publicKeyBytes, expectedType: keyType) } catch {
                signer.error(code(.v2SigMalformedPublicKey, .v3SigMalformedPublicKey), "Malformed public key: \(error)")
                return
            }
            let verificationAlgorithm = Self.verificationAlgorithm(algorithm)
            if let problem = Self.encodingProblem(signature, algorithm: verificationAlgorithm, keyBits: key.bitSize) {
                signer.error(code(.v2SigVerifyException, .v3SigVerifyException), "Failed to verify \(algorithm) signature: \(problem)")
                return
            }
            let verified: Bool
            do { verified = try key.verify(signature: signature, data: signedData, algorithm: verificationAlgorithm) } catch {
                signer.error(code(.v2SigVerifyException, .v3SigVerifyException), "Failed to verify \(algorithm) signature: \(error)")
                return
            }
            if !verified {
                if Self.isPKCS1SignatureWithOtherDigest(signature, data: signedData, key: key, expected: verificationAlgorithm) {
                    // Java's RSA verify throws ("Signature encoding error") when the DigestInfo names another digest.
                    signer.error(code(.v2SigVerifyException, .v3SigVerifyException), "Failed to verify \(algorithm) signature: Signature encoding error")
                } else {
                    signer.error(code(.v2SigDidNotVerify, .v3SigDidNotVerify), "\(algorithm) signature over signed-data did not verify")
                }
                return
            }
            contentDigestsToVerify.insert(algorithm.contentDigestAlgorithm)
        }

        // At least one signature over signed-data verified: now signed-data can be trusted and parsed.
        var data = signedDataBuffer
        var digests = try data.lengthPrefixedSlice()
        var certificates = try data.lengthPrefixedSlice()
        if kind != .v2 {
            let signedMin = Int(try data.getInt())
            if signedMin != parsedMin {
                signer.error(.v3MinSdkVersionMismatch, "minSdkVersion mismatch between signed data and signature record: <\(parsedMin)> vs <\(signedMin)>")
            }
            let signedMax = Int(try data.getInt())
            if signedMax != parsedMax {
                signer.error(.v3MaxSdkVersionMismatch, "maxSdkVersion mismatch between signed data and signature record: <\(parsedMax)> vs <\(signedMax)>")
            }
        }
        var attributes = try data.lengthPrefixedSlice()

        var certificateIndex = -1
        while certificates.hasRemaining {
            certificateIndex += 1
            let encoded = try certificates.lengthPrefixedBytes()
            do { signer.certificates.append(try VerificationCertificate(derEncoded: encoded)) } catch {
                signer.error(code(.v2SigMalformedCertificate, .v3SigMalformedCertificate), "Malformed certificate #\(certificateIndex + 1): \(error)")
                return
            }
        }
        guard let main = signer.certificates.first else {
            signer.error(code(.v2SigNoCertificates, .v3SigNoCertificates), "No certificates")
            return
        }
        var certificateKey = main.subjectPublicKeyInfoDER
        if certificateKey != publicKeyBytes, let positive = Self.rsaKeyWithPositiveModulus(certificateKey) { certificateKey = positive }
        if certificateKey != publicKeyBytes {
            signer.error(code(.v2SigPublicKeyMismatch, .v3SigPublicKeyMismatch),
                         "Public key mismatch between certificate and signature record: <\(certificateKey.hexString)> vs <\(publicKeyBytes.hexString)>")
            return
        }

        var digestCount = 0
        while digests.hasRemaining {
            digestCount += 1
            do {
                var record = try digests.lengthPrefixedSlice()
                let id = UInt32(bitPattern: try record.getInt())
                signer.contentDigests.append((id, try record.lengthPrefixedBytes()))
            } catch {
                signer.error(code(.v2SigMalformedDigest, .v3SigMalformedDigest), "Malformed \(schemeName) digest record #\(digestCount)")
                return
            }
        }
        let fromDigests = signer.contentDigests.map(\.algorithmID)
        if signer.signatureAlgorithmIDs != fromDigests {
            signer.error(code(.v2SigAlgorithmMismatch, .v3SigAlgorithmMismatch),
                         "Signature algorithms mismatch between signatures and digests records: \(Self.list(signer.signatureAlgorithmIDs)) vs \(Self.list(fromDigests))")
            return
        }

        var attributeCount = 0
        var expectedSchemes: Set<Int> = []
        var rotationAttributeFound = false
        while attributes.hasRemaining {
            attributeCount += 1
            do {
                var attribute = try attributes.lengthPrefixedSlice()
                let id = UInt32(bitPattern: try attribute.getInt())
                switch (kind, id) {
                case (.v2, AdditionalAttribute.ID.strippingProtection):
                    let scheme = Int(try attribute.getInt())
                    if supportedSchemeNames[scheme] != nil {
                        expectedSchemes.insert(scheme)
                    } else {
                        signer.warning(.v2SigUnknownAPKSigSchemeID, "APK Signature Scheme v2 signer: \(signer.index) references unknown APK signature scheme ID: \(scheme)")
                    }
                case (.v2, _):
                    signer.warning(.v2SigUnknownAdditionalAttribute, "Unknown additional attribute: ID 0x\(String(id, radix: 16))")
                case (_, AdditionalAttribute.ID.proofOfRotation):
                    signer.hasLineage = true
                    verifyLineage(attribute.rest(), signer: &signer)
                case (_, AdditionalAttribute.ID.rotationMinSdkVersion):
                    rotationAttributeFound = true
                    if maxSdkVersion >= AndroidSDK.tiramisu {
                        let value = Int(try attribute.getInt())
                        if let rotationMinSdkVersion {
                            if value != rotationMinSdkVersion {
                                signer.error(.v31RotationMinSdkMismatch, "The v3 signer indicates key rotation should be supported starting from SDK version \(value), but the v3.1 block targets \(rotationMinSdkVersion) for rotation")
                            }
                        } else {
                            signer.error(.v31BlockMissing, "The v3 signer indicates key rotation should be supported starting from SDK version \(value), but a v3.1 block was not found")
                        }
                    }
                case (_, AdditionalAttribute.ID.hybridMinSdkVersion):
                    // apksig reads the value first (too short: a malformed attribute), then checks it only where
                    // v3.2 exists. A v3.2 block is refused before this verifier runs (see `Verifier`), so here
                    // the block the attribute vouches for is missing: stripped.
                    let value = Int(try attribute.getInt())
                    if maxSdkVersion >= AndroidSDK.c {
                        signer.error(.v32BlockMissing, "The v\(kind == .v31 ? "3.1" : "3.0") signer indicates a v3.2 (hybrid) signature from SDK version \(value), but a v3.2 block was not found")
                    }
                case (_, AdditionalAttribute.ID.signerTargetsDevRelease):
                    if kind == .v3 {
                        signer.warning(.v31RotationTargetsDevReleaseAttrOnV3Signer, "The rotation-targets-dev-release attribute is only supported on v3.1 signers; this attribute will be ignored by the platform in a v3.0 signer")
                    }
                default:
                    signer.warning(.v3SigUnknownAdditionalAttribute, "Unknown additional attribute: ID 0x\(String(id, radix: 16))")
                }
            } catch {
                signer.error(code(.v2SigMalformedAdditionalAttribute, .v3SigMalformedAdditionalAttribute), "Malformed additional attribute #\(attributeCount)")
                return
            }
        }
        if kind == .v2 {
            for scheme in expectedSchemes.sorted() where !foundSchemeIDs.contains(scheme) {
                signer.error(.v2SigMissingAPKSigReferenced, "APK Signature Scheme v2 signature \(signer.index) indicates the APK is signed using \(supportedSchemeNames[scheme]!) but no such signature was found. Signature stripped?")
            }
        } else if let rotationMinSdkVersion, !rotationAttributeFound {
            signer.warning(.v31RotationMinSdkAttrMissing, "APK supports key rotation starting from SDK version \(rotationMinSdkVersion), but the v3 signer does not contain the attribute to detect if this signature is stripped")
        }
    }

    /// Checks a v3 proof-of-rotation attribute (apksig `SigningCertificateLineage.readFromV3AttributeValue`):
    /// every node after the first must be signed by the previous node's key, and the last node's
    /// certificate must be this signer's.
    private func verifyLineage(_ value: [UInt8], signer: inout SchemeVerificationResult.Signer) {
        do {
            let lineage = try SigningCertificateLineage(attributeValue: value)
            signer.lineage = lineage
            // The signer's certificate must be the lineage's last (apksig `getSubLineage` size check).
            guard let mine = signer.certificates.first, let index = lineage.index(of: mine), index == lineage.nodes.count - 1 else {
                signer.error(.v3SigPORCertMismatch, "APK signing certificate differs from the associated certificate found in the signer's SigningCertificateLineage.")
                return
            }
        } catch SigningCertificateLineage.Failure.didNotVerify {
            signer.error(.v3SigPORDidNotVerify, "SigningCertificateLineage attribute containd a proof-of-rotation record with signature(s) that did not verify.")
        } catch SigningCertificateLineage.Failure.unknownVersion {
            signer.error(.v3SigPORCertMismatch, "APK signing certificate differs from the associated certificate found in the signer's SigningCertificateLineage.")
        } catch {
            signer.error(.v3SigMalformedLineage, "Failed to parse the SigningCertificateLineage structure in the APK Signature Scheme v3 signature's additional attributes section.")
        }
    }

    /// Best-effort peek at a v3 signed-data's attributes for the dev-release attribute (apksig
    /// `signedDataTargetsDevRelease`): a malformed block simply does not target one.
    static func signedDataTargetsDevRelease(_ signedData: SchemeBuffer) -> Bool {
        var peek = signedData
        do {
            _ = try peek.lengthPrefixedSlice()
            _ = try peek.lengthPrefixedSlice()
            _ = try peek.getInt()
            _ = try peek.getInt()
            var attributes = try peek.lengthPrefixedSlice()
            while attributes.hasRemaining {
                var attribute = try attributes.lengthPrefixedSlice()
                if UInt32(bitPattern: try attribute.getInt()) == AdditionalAttribute.ID.signerTargetsDevRelease { return true }
            }
        } catch {}
        return false
    }

    /// apksig `ApkSigningBlockUtils.encodePublicKey`: an RSA certificate whose modulus is DER-encoded without
    /// its leading zero (so it reads as negative, v1v2v3-rsa-2048-negmod-in-cert.apk) is compared by the key
    /// with the zero restored, which is what signers write in the signature record. Nil when not such a key.
    static func rsaKeyWithPositiveModulus(_ spki: [UInt8]) -> [UInt8]? {
        let tlv = DER.tlv
        guard let outer = try? BERElement.parseSingle(spki[...]), outer.isUniversalSequence,
              let parts = try? outer.children(), parts.count == 2, parts[0].isUniversalSequence,
              parts[1].tagClass == 0, !parts[1].isConstructed, parts[1].tagNumber == 3, parts[1].contents.first == 0,
              let key = try? BERElement.parseSingle(parts[1].contents.dropFirst()), key.isUniversalSequence,
              let numbers = try? key.children(), numbers.count == 2,
              numbers.allSatisfy({ $0.tagClass == 0 && !$0.isConstructed && $0.tagNumber == 2 }),
              let top = numbers[0].contents.first, top & 0x80 != 0 else { return nil }
        let modulus = tlv(0x02, [0] + numbers[0].contents)
        let rsaKey = tlv(0x30, modulus + Array(numbers[1].encoded))
        return tlv(0x30, Array(parts[0].encoded) + tlv(0x03, [0] + rsaKey))
    }

    private static func list(_ ids: [UInt32]) -> String { "[" + ids.map { String(Int32(bitPattern: $0)) }.joined(separator: ", ") + "]" }

    static func keyType(_ algorithm: SignatureAlgorithm) -> VerificationSignatureAlgorithm.KeyType {
        switch algorithm.keyAlgorithm {
        case .rsa: return .rsa
        case .ec: return .ec
        case .dsa: return .dsa
        }
    }

    static func verificationAlgorithm(_ algorithm: SignatureAlgorithm) -> VerificationSignatureAlgorithm {
        let digest: VerificationDigest = algorithm.signatureDigestAlgorithm == .sha512 ? .sha512 : .sha256
        let padding: VerificationSignatureAlgorithm.Padding = algorithm.isRSAPSS ? .pss(saltLength: digest == .sha512 ? 64 : 32) : .pkcs1
        return VerificationSignatureAlgorithm(keyType: keyType(algorithm), digest: digest, padding: padding)
    }

    /// Java's `Signature.verify` throws (rather than returning false) for these.
    static func encodingProblem(_ signature: [UInt8], algorithm: VerificationSignatureAlgorithm, keyBits: Int) -> String? {
        switch algorithm.keyType {
        case .rsa:
            // Exactly the modulus length, as Java's RSA verify demands (it throws otherwise; Android's BoringSSL
            // refuses such a signature too), not merely no longer than it.
            let modulusBytes = (keyBits + 7) / 8
            return signature.count != modulusBytes ? "Signature length not correct: got \(signature.count) but was expecting \(modulusBytes)" : nil
        case .ec, .dsa:
            guard let sequence = try? BERElement.parseSingle(signature[...]), sequence.isUniversalSequence,
                  let parts = try? sequence.children(), parts.count == 2,
                  parts.allSatisfy({ $0.tagClass == 0 && !$0.isConstructed && $0.tagNumber == 2 && !$0.contents.isEmpty }) else {
                return "invalid encoding for signature"
            }
            return nil
        }
    }

    /// True when an RSA PKCS#1 v1.5 signature that failed to verify with the expected digest verifies with
    /// another one (its DigestInfo names another digest), which Java reports as an exception
    /// (apksig v2-only-with-rsa-pkcs1-sha256-2048-sig-does-not-verify.apk → V2_SIG_VERIFY_EXCEPTION). Only
    /// tried after a failure, so verifying good APKs costs nothing more.
    static func isPKCS1SignatureWithOtherDigest(_ signature: [UInt8], data: [UInt8], key: VerificationPublicKey,
                                                expected: VerificationSignatureAlgorithm) -> Bool {
        guard expected.keyType == .rsa, case .pkcs1 = expected.padding else { return false }
        return VerificationDigest.allCases.contains { digest in
            digest != expected.digest
                && (try? key.verify(signature: signature, data: data, algorithm: VerificationSignatureAlgorithm(keyType: .rsa, digest: digest))) == true
        }
    }

    /// apksig `getSignaturesToVerify`: for each API level in range, the strongest supported signature;
    /// nil when some level in range has none. `onlyRequiringJCASupport` counts an algorithm from the level whose
    /// JCA provider has it rather than from the level whose APK verifier accepts it (source stamps).
    static func signaturesToVerify(_ signatures: [(algorithm: SignatureAlgorithm, signature: [UInt8])], minSdkVersion: Int, maxSdkVersion: Int,
                                   onlyRequiringJCASupport: Bool = false) -> [(algorithm: SignatureAlgorithm, signature: [UInt8])]? {
        var best: [Int: (algorithm: SignatureAlgorithm, signature: [UInt8])] = [:]
        var minProvided = Int.max
        for candidate in signatures {
            let level = onlyRequiringJCASupport ? candidate.algorithm.jcaSignatureAlgorithmMinSdkVersion : candidate.algorithm.minSdkVersion
            if level > maxSdkVersion { continue }
            minProvided = min(minProvided, level)
            if let current = best[level], SignatureAlgorithm.compare(candidate.algorithm, current.algorithm) <= 0 { continue }
            best[level] = candidate
        }
        if minSdkVersion < minProvided || best.isEmpty { return nil }
        return best.values.sorted { $0.algorithm.id < $1.algorithm.id }
    }
}
