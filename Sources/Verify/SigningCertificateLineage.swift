import OpenSSLWrapper
import SignatureSchemes

/// A v3 proof-of-rotation attribute (apksig `V3SigningCertificateLineage.readSigningCertificateLineage`),
/// parsed and verified in one pass:
///
///     uint32 version (1)
///     repeated length-prefixed node:
///         length-prefixed signed data: length-prefixed certificate, uint32 signature algorithm ID
///         uint32 flags
///         uint32 signature algorithm ID (the one the *next* node is signed with)
///         length-prefixed signature over the signed data, by the previous node's key
struct SigningCertificateLineage {
    enum Failure: Error {
        /// apksig: IOException or another exception → V3_SIG_MALFORMED_LINEAGE.
        case malformed(String)
        /// apksig: SecurityException → V3_SIG_POR_DID_NOT_VERIFY.
        case didNotVerify(String)
        /// apksig: IllegalArgumentException → V3_SIG_POR_CERT_MISMATCH: an unknown version, or an empty value
        /// (no node list, so `calculateMinSdkVersion` refuses it).
        case unknownVersion
    }

    struct Node {
        var certificate: VerificationCertificate
        var flags: UInt32
    }

    var nodes: [Node]

    init(attributeValue value: [UInt8]) throws {
        guard !value.isEmpty else { throw Failure.unknownVersion }
        var input = SchemeBuffer(value)
        var nodes: [Node] = []
        var lastCertificate: VerificationCertificate?
        var lastAlgorithmID: UInt32 = 0
        var number = 0
        do {
            let version = try input.getInt()
            guard version == 1 else { throw Failure.unknownVersion }
            while input.hasRemaining {
                number += 1
                var node = try input.lengthPrefixedSlice()
                var signedData = try node.lengthPrefixedSlice()
                let signedDataBytes = signedData.all
                let flags = UInt32(bitPattern: try node.getInt())
                let algorithmID = UInt32(bitPattern: try node.getInt())
                let signature = try node.lengthPrefixedBytes()
                if let previous = lastCertificate {
                    guard let algorithm = SignatureAlgorithm(id: lastAlgorithmID) else {
                        throw Failure.malformed("unknown signature algorithm 0x\(String(lastAlgorithmID, radix: 16)) in node #\(number)")
                    }
                    let verification = SigningBlockSchemeVerifier.verificationAlgorithm(algorithm)
                    let verified: Bool
                    do {
                        if SigningBlockSchemeVerifier.encodingProblem(signature, algorithm: verification, keyBits: previous.keyBitSize) != nil {
                            throw Failure.didNotVerify("malformed signature of certificate #\(number)")
                        }
                        verified = try previous.verify(signature: signature, data: signedDataBytes, algorithm: verification)
                    } catch let failure as Failure { throw failure } catch {
                        throw Failure.didNotVerify("\(error)")
                    }
                    guard verified else { throw Failure.didNotVerify("signature of certificate #\(number) did not verify") }
                }
                let encoded = try signedData.lengthPrefixedBytes()
                let signedAlgorithmID = UInt32(bitPattern: try signedData.getInt())
                if lastCertificate != nil && signedAlgorithmID != lastAlgorithmID {
                    throw Failure.didNotVerify("signing algorithm ID mismatch for certificate #\(number)")
                }
                let certificate: VerificationCertificate
                do { certificate = try VerificationCertificate(derEncoded: encoded) } catch {
                    throw Failure.didNotVerify("failed to decode certificate #\(number)")
                }
                if nodes.contains(where: { $0.certificate.derBytes == certificate.derBytes }) {
                    throw Failure.didNotVerify("duplicate certificate #\(number) in the lineage")
                }
                nodes.append(Node(certificate: certificate, flags: flags))
                lastCertificate = certificate
                lastAlgorithmID = algorithmID
            }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure.malformed("\(error)")
        }
        self.nodes = nodes
    }

    private init(nodes: [Node]) { self.nodes = nodes }

    /// The position of `certificate` in the lineage (0 = the original signer), or nil.
    func index(of certificate: VerificationCertificate) -> Int? {
        nodes.firstIndex { $0.certificate.derBytes == certificate.derBytes }
    }

    /// This lineage merged with `other` (apksig `SigningCertificateLineage.mergeLineageWith`, which
    /// `consolidateLineages` folds over a v3 block's lineages): the one whose first certificate appears in the
    /// other is the descendant; both must then name the same certificates wherever they overlap. Nil when
    /// they do not overlap or diverge (apksig's IllegalArgumentException → V3_INCONSISTENT_LINEAGES): the
    /// signers of different platform ranges would not be one signing history.
    func merged(with other: SigningCertificateLineage) -> SigningCertificateLineage? {
        guard let first = nodes.first, !other.nodes.isEmpty else { return nil }
        let (ancestor, descendant) = other.index(of: first.certificate) != nil ? (other, self) : (self, other)
        guard let start = ancestor.index(of: descendant.nodes[0].certificate) else { return nil }
        var merged = Array(ancestor.nodes[..<start])
        var a = start, d = 0
        while a < ancestor.nodes.count && d < descendant.nodes.count {
            guard ancestor.nodes[a].certificate.derBytes == descendant.nodes[d].certificate.derBytes else { return nil }
            merged.append(descendant.nodes[d])
            a += 1; d += 1
        }
        merged += ancestor.nodes[a...] + descendant.nodes[d...]
        return SigningCertificateLineage(nodes: merged)
    }
}

/// Whether `value` reads and chains as a v3 proof-of-rotation attribute, by the verifier's own parser. For the
/// fuzz targets: inside an APK, a signer's signature must verify before its lineage is read.
package func verifiesProofOfRotation(_ value: [UInt8]) -> Bool {
    (try? SigningCertificateLineage(attributeValue: value)) != nil
}
