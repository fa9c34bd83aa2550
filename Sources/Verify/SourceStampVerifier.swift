import OpenSSLWrapper
import SignatureSchemes

/// What a source stamp (`SourceStampBlock`) says and whether it verifies: apksig's `SourceStampInfo`.
struct SourceStampResult {
    /// The stamp certificate as the block holds it, once it parsed (also when it is not the one the APK names).
    var certificate: VerificationCertificate?
    /// The stamp key's rotation history (proof-of-rotation attribute), original first; empty without one.
    var lineage: [VerificationCertificate] = []
    /// Epoch seconds when the stamp was signed (timestamp attribute), nil without a valid one.
    var timestamp: Int64?
    var errors: [Issue] = []
    var warnings: [Issue] = []
    /// apksig's info messages: signatures and attributes of kinds it does not know, skipped.
    var infos: [Issue] = []

    /// apksig's `isSourceStampVerified`: neither errors nor warnings.
    var isVerified: Bool { errors.isEmpty && warnings.isEmpty }
}

/// apksig's `V2SourceStampVerifier` and `SourceStampVerifier.verifyV2SourceStamp`: checks the stamp block against
/// the stamp certificate digest the APK holds and the digests its signatures were verified with. The block is read
/// field by field in apksig's order and each field is judged before the next is read, so a damaged stamp gets the
/// finding apksig gives it. Every finding is a warning of the stamp: a bad stamp does not fail the APK.
///
/// The stamp signs, per scheme the APK was verified with, the scheme's content digests as its signers state
/// them (which the scheme verification has just compared with the APK: nothing is read or hashed again), and
/// for JAR signing the SHA-256 of META-INF/MANIFEST.MF.
struct SourceStampVerifier {
    /// The API range verified for: apksig starts it at R (30), where Android began reading stamps.
    let minSdkVersion: Int
    let maxSdkVersion: Int

    static let context = "SourceStamp"

    /// - Parameters:
    ///   - block: the value of the stamp pair (`SigningBlock.ID.sourceStamp`).
    ///   - certificateDigest: the contents of the `stamp-cert-sha256` entry.
    ///   - schemeDigests: per stamped scheme ID (`SourceStamp.Scheme`), the content digests by digest ID.
    func verify(block: [UInt8], certificateDigest: [UInt8], schemeDigests: [UInt32: [UInt32: [UInt8]]]) -> SourceStampResult {
        var result = SourceStampResult()
        do {
            var outer = SchemeBuffer(block)
            var data = try outer.lengthPrefixedSlice()
            try verifyStamp(&data, certificateDigest: certificateDigest, schemeDigests: schemeDigests, result: &result)
        } catch {
            result.warnings.append(.warning(.sourceStampMalformedSignature, Self.context, "Malformed SourceStamp signature"))
        }
        return result
    }

    private func verifyStamp(_ data: inout SchemeBuffer, certificateDigest: [UInt8], schemeDigests: [UInt32: [UInt32: [UInt8]]],
                             result: inout SourceStampResult) throws {
        // The certificate, which must be the one the APK's stamp-cert-sha256 entry names.
        let encoded = try data.lengthPrefixedBytes()
        let certificate: VerificationCertificate
        do { certificate = try VerificationCertificate(derEncoded: encoded) } catch {
            warn(&result, .sourceStampMalformedCertificate, "Malformed certificate: \(error)")
            return
        }
        result.certificate = certificate
        let blockDigest = VerificationDigest.sha256.hash(encoded)
        if blockDigest != certificateDigest {
            warn(&result, .sourceStampCertificateMismatch,
                 "Certificate mismatch between SourceStamp block in APK signing block and SourceStamp file in APK: <\(blockDigest.hexString)> vs <\(certificateDigest.hexString)>")
            return
        }

        // The signatures over each scheme's digests: every scheme the APK was verified with must be stamped.
        var stamped = try data.lengthPrefixedSlice()
        var signaturesByScheme: [UInt32: SchemeBuffer] = [:]
        while stamped.hasRemaining {
            var scheme = try stamped.lengthPrefixedSlice()
            let id = UInt32(bitPattern: try scheme.getInt())
            signaturesByScheme[id] = try scheme.lengthPrefixedSlice()
        }
        for (scheme, digests) in schemeDigests.sorted(by: { $0.key < $1.key }) where scheme != SourceStamp.Scheme.v31 {
            guard let signatures = signaturesByScheme[scheme] else {
                warn(&result, .sourceStampNoSignature, "No signature")
                return
            }
            verifySignatures(signatures, over: SourceStamp.signedDigestBytes(digests), certificate: certificate, result: &result)
            if !result.isVerified { return }
        }

        // Attributes (optional), signed on their own.
        guard data.hasRemaining else { return }
        let attributes = try data.lengthPrefixedSlice()
        let signatures = try data.lengthPrefixedSlice()
        verifySignatures(signatures, over: attributes.all, certificate: certificate, result: &result)
        if !result.isVerified { return }
        var list = attributes
        var pairs = try list.lengthPrefixedSlice()
        var number = 0
        while pairs.hasRemaining {
            number += 1
            do {
                var attribute = try pairs.lengthPrefixedSlice()
                let id = UInt32(bitPattern: try attribute.getInt())
                let value = attribute.rest()
                switch id {
                case SourceStamp.AttributeID.proofOfRotation:
                    readLineage(value, certificate: certificate, result: &result)
                case SourceStamp.AttributeID.timestamp:
                    var reader = SchemeBuffer(value)
                    let low = UInt64(UInt32(bitPattern: try reader.getInt())), high = UInt64(UInt32(bitPattern: try reader.getInt()))
                    let timestamp = Int64(bitPattern: high << 32 | low)
                    if timestamp > 0 {
                        result.timestamp = timestamp
                    } else {
                        warn(&result, .sourceStampInvalidTimestamp, "The source stamp timestamp attribute has an invalid value: \(timestamp)")
                    }
                default:
                    result.infos.append(.info(.sourceStampUnknownAttribute, Self.context, "Unknown stamp attribute: ID 0x\(String(id, radix: 16))"))
                }
            } catch {
                warn(&result, .sourceStampMalformedAttribute, "Malformed stamp attribute #\(number)")
                return
            }
        }
    }

    /// apksig `verifySourceStampSignature`: of the signatures over `data`, the strongest one per API level in
    /// range (any algorithm Java can check there: the stamp is verified by the platform's JCA, not by the APK
    /// signature rules) must verify with the stamp certificate's key.
    private func verifySignatures(_ signatures: SchemeBuffer, over data: [UInt8], certificate: VerificationCertificate,
                                  result: inout SourceStampResult) {
        var signatures = signatures
        var supported: [(algorithm: SignatureAlgorithm, signature: [UInt8])] = []
        var count = 0
        while signatures.hasRemaining {
            count += 1
            do {
                var record = try signatures.lengthPrefixedSlice()
                let id = UInt32(bitPattern: try record.getInt())
                let bytes = try record.lengthPrefixedBytes()
                guard let algorithm = SignatureAlgorithm(id: id) else {
                    result.infos.append(.info(.sourceStampUnknownSigAlgorithm, Self.context, "Unknown signature algorithm: 0x\(String(id, radix: 16))"))
                    continue
                }
                supported.append((algorithm, bytes))
            } catch {
                warn(&result, .sourceStampMalformedSignature, "Malformed SourceStamp signature")
                return
            }
        }
        if supported.isEmpty {
            warn(&result, .sourceStampNoSignature, "No signature")
            return
        }
        guard let toVerify = SigningBlockSchemeVerifier.signaturesToVerify(supported, minSdkVersion: minSdkVersion, maxSdkVersion: maxSdkVersion,
                                                                            onlyRequiringJCASupport: true) else {
            // apksig's words, its exception's included: none of the algorithms is there at minSdkVersion.
            let names = supported.map { "\($0.algorithm)" }.joined(separator: ", ")
            let provided = supported.map(\.algorithm.jcaSignatureAlgorithmMinSdkVersion).filter { $0 <= maxSdkVersion }.min() ?? Int(Int32.max)
            warn(&result, .sourceStampNoSupportedSignature,
                 "Signature(s) {\(names)} not supported: com.android.apksig.internal.apk.NoApkSupportedSignaturesException: Minimum provided signature version \(provided) > minSdkVersion \(minSdkVersion)")
            return
        }
        for (algorithm, signature) in toVerify {
            let verification = SigningBlockSchemeVerifier.verificationAlgorithm(algorithm)
            do {
                let key = try VerificationPublicKey(subjectPublicKeyInfoDER: certificate.subjectPublicKeyInfoDER,
                                                    expectedType: SigningBlockSchemeVerifier.keyType(algorithm))
                if let problem = SigningBlockSchemeVerifier.encodingProblem(signature, algorithm: verification, keyBits: key.bitSize) {
                    warn(&result, .sourceStampVerifyException, "Failed to verify \(algorithm) signature: \(problem)")
                    return
                }
                guard try key.verify(signature: signature, data: data, algorithm: verification) else {
                    warn(&result, .sourceStampDidNotVerify, "\(algorithm) signature over signed-data did not verify")
                    return
                }
            } catch {
                warn(&result, .sourceStampVerifyException, "Failed to verify \(algorithm) signature: \(error)")
                return
            }
        }
    }

    /// apksig `readStampCertificateLineage` (`SourceStampCertificateLineage`: the v3 lineage format, every node
    /// signed by the one before it); its last certificate must be the stamp's.
    private func readLineage(_ value: [UInt8], certificate: VerificationCertificate, result: inout SourceStampResult) {
        // An empty value is no lineage at all (apksig reads it as null and then fails to take its last node).
        guard !value.isEmpty else {
            warn(&result, .sourceStampMalformedLineage, Self.malformedLineage)
            return
        }
        do {
            let lineage = try SigningCertificateLineage(attributeValue: value)
            result.lineage = lineage.nodes.map(\.certificate)
            guard lineage.nodes.last?.certificate.derBytes == certificate.derBytes else {
                warn(&result, .sourceStampPORCertMismatch, Self.porCertMismatch)
                return
            }
        } catch SigningCertificateLineage.Failure.didNotVerify {
            warn(&result, .sourceStampPORDidNotVerify, "Source stamp SigningCertificateLineage attribute contains a proof-of-rotation record with signature(s) that did not verify.")
        } catch SigningCertificateLineage.Failure.unknownVersion {
            warn(&result, .sourceStampPORCertMismatch, Self.porCertMismatch)
        } catch {
            warn(&result, .sourceStampMalformedLineage, Self.malformedLineage)
        }
    }

    private static let malformedLineage = "Failed to parse the SigningCertificateLineage structure in the source stamp attributes section."
    private static let porCertMismatch = "APK signing certificate differs from the associated certificate found in the signer's SigningCertificateLineage."

    private func warn(_ result: inout SourceStampResult, _ code: Issue.Code, _ message: String) {
        result.warnings.append(.warning(code, Self.context, message))
    }
}
