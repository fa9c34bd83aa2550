import APKCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import OpenSSLWrapper
import SignatureSchemes

/// What an app still grants its older signing certificates after rotating away from them (apksig
/// `SigningCertificateLineage.SignerCapabilities`): one bit each, all but rollback on by default.
public struct SignerCapabilities: Sendable, Hashable {
    /// Accept the data of an installed app signed with this certificate (needed to rotate on a device).
    public static let installedData: UInt32 = 1
    /// Share a user ID with apps still signed with this certificate.
    public static let sharedUserID: UInt32 = 2
    /// Grant signature permissions to apps signed with this certificate.
    public static let permission: UInt32 = 4
    /// Allow updates back to an APK signed with this certificate (undoes the point of rotating).
    public static let rollback: UInt32 = 8
    /// Keep authenticator-module access gated on this certificate.
    public static let auth: UInt32 = 16
    /// apksig `calculateDefaultFlags`.
    public static let defaultFlags: UInt32 = installedData | sharedUserID | permission | auth

    /// The capability bits.
    public private(set) var flags: UInt32
    /// The bits set explicitly (apksig `mCallerConfiguredFlags`): only these change an existing node.
    public private(set) var configuredFlags: UInt32 = 0

    public init(flags: UInt32 = SignerCapabilities.defaultFlags) { self.flags = flags }

    /// Sets or clears `flag` and remembers that it was chosen.
    public mutating func set(_ flag: UInt32, _ enabled: Bool) {
        configuredFlags |= flag
        flags = enabled ? flags | flag : flags & ~flag
    }

    /// `existing` with the explicitly set bits of `self` applied (apksig `setCallerConfiguredCapabilities`).
    public func applied(to existing: UInt32) -> UInt32 { (existing & ~configuredFlags) | (flags & configuredFlags) }

    public func has(_ flag: UInt32) -> Bool { flags & flag != 0 }
}

/// Why a lineage could not be read, made or changed.
public enum LineageError: Error, CustomStringConvertible, Equatable {
    /// Not a lineage file or APK, or its structure is broken.
    case malformed(String)
    /// A node's signature does not verify with its parent's key: the lineage does not chain.
    case didNotVerify(String)
    /// The APK has no v3/v3.1 signer with a lineage.
    case noLineage(String)
    /// The key to extend the lineage with is not its newest certificate's.
    case parentIsNotNewest(String)
    /// The certificate is not in the lineage.
    case notInLineage(String)
    /// The new certificate is already in the lineage.
    case alreadyInLineage(String)

    public var description: String {
        switch self {
        case .malformed(let reason): return "malformed signing certificate lineage: \(reason)"
        case .didNotVerify(let reason): return "the signing certificate lineage does not verify: \(reason)"
        case .noLineage(let reason): return reason
        case .parentIsNotNewest(let subject):
            return "the old signer (\(subject)) is not the newest certificate of the lineage: rotate from the lineage's last signer"
        case .notInLineage(let subject): return "the certificate \(subject) is not in the signing certificate lineage"
        case .alreadyInLineage(let subject): return "the certificate \(subject) is already in the signing certificate lineage"
        }
    }
}

/// A history of signing certificates, each attesting to the next (apksig `SigningCertificateLineage`): what
/// `apksigner rotate` writes, `apksigner lineage` reads and edits, and `--lineage` signs with. Read and
/// written byte for byte as apksig does, so files move between the two tools.
public struct SigningCertificateLineage: Sendable, Equatable {
    /// The nodes, the original signing certificate first, as stored.
    public private(set) var nodes: [SigningCertificateNode]
    /// The nodes' certificates, parsed.
    public let certificates: [Certificate]
    /// The lowest API level the lineage is meant for (apksig `mMinSdkVersion`: at least 28, where lineages
    /// began). Only choosing the algorithm of the next rotation reads it.
    public let minSdkVersion: Int

    /// Checks that each node is signed by its parent's key with the algorithm the parent names (apksig
    /// `V3SigningCertificateLineage.readSigningCertificateLineage`).
    public init(nodes: [SigningCertificateNode], minSdkVersion: Int? = nil) throws {
        guard !nodes.isEmpty else { throw LineageError.malformed("no certificates") }
        var certificates: [Certificate] = []
        for (index, node) in nodes.enumerated() {
            let certificate: Certificate
            do { certificate = try Certificate(derEncoded: node.certificateDER) } catch {
                throw LineageError.malformed("certificate #\(index + 1) does not decode: \(error)")
            }
            if certificates.contains(certificate) { throw LineageError.malformed("certificate #\(index + 1) appears twice") }
            if let parent = certificates.last {
                let parentNode = nodes[index - 1]
                guard parentNode.signatureAlgorithmID == node.parentSignatureAlgorithmID else {
                    throw LineageError.didNotVerify("signing algorithm ID mismatch for certificate #\(index + 1)")
                }
                guard let algorithm = SignatureAlgorithm(id: node.parentSignatureAlgorithmID), !algorithm.isRSAPSS else {
                    throw LineageError.didNotVerify("certificate #\(index + 1) is signed with unsupported algorithm 0x\(String(node.parentSignatureAlgorithmID, radix: 16))")
                }
                let key: PublicKey
                do { key = try parent.publicKey() } catch { throw LineageError.malformed("certificate #\(index): \(error)") }
                guard key.verify(signature: node.signature, data: node.signedData, digest: algorithm.signatureDigestAlgorithm) else {
                    throw LineageError.didNotVerify("the signature of certificate #\(index + 1) (\(certificate.subjectDN)) by certificate #\(index) does not verify")
                }
            }
            certificates.append(certificate)
        }
        self.nodes = nodes
        self.certificates = certificates
        // apksig `calculateMinSdkVersion` for a lineage read; the builder's value for a new one.
        self.minSdkVersion = minSdkVersion ?? nodes.reduce(AndroidSDK.pie) { level, node in
            max(level, SignatureAlgorithm(id: node.signatureAlgorithmID)?.minSdkVersion ?? level)
        }
    }

    /// A lineage file's contents (`apksigner rotate --out`).
    public init(fileBytes: [UInt8]) throws {
        do { try self.init(nodes: SigningCertificateLineageFile.decode(fileBytes[...])) } catch let error as SchemeBlockFormatError {
            throw LineageError.malformed(error.message)
        }
    }

    /// A v3 proof-of-rotation attribute's value.
    public init(attributeValue: [UInt8]) throws {
        do { try self.init(nodes: V3SigningCertificateLineage.decode(attributeValue[...])) } catch let error as SchemeBlockFormatError {
            throw LineageError.malformed(error.message)
        }
    }

    /// A lineage file, or the lineage of a signed APK (its v3.1 and v3 signers' lineages, consolidated), as
    /// apksigner's `--in` and `--lineage` take either.
    public init(contentsOf path: String) throws {
        let source = try MappedFile(path: path)
        let head = try source.bytes(in: 0..<min(source.count, Int64(SigningCertificateLineageFile.headerSize)))
        if SigningCertificateLineageFile.hasMagic(head[...]) {
            // Only the header and the lineage it declares are read: a damaged length or a huge file is no huge copy.
            let size: Int
            do { size = try SigningCertificateLineageFile.fileSize(header: head[...]) } catch let error as SchemeBlockFormatError {
                throw LineageError.malformed("\(path): \(error.message)")
            }
            try self.init(fileBytes: try source.bytes(in: 0..<min(source.count, Int64(size))))
        } else if head.starts(with: [0x50, 0x4b, 0x03, 0x04]) {
            try self.init(apk: source, path: path)
        } else {
            throw LineageError.malformed("\(path) is neither a lineage file nor an APK")
        }
    }

    /// apksig `readFromApkDataSource`: every v3.1 and v3 signer's proof-of-rotation attribute; the longest
    /// lineage, which the others must begin (`consolidateLineages`).
    init(apk source: any DataSource, path: String) throws {
        let archive: ZipArchive
        do { archive = try ZipArchive(source: source) } catch { throw LineageError.malformed("\(path): \(error)") }
        guard let block = try SigningBlock.locate(in: source, centralDirectoryOffset: archive.centralDirectoryOffset) else {
            throw LineageError.noLineage("\(path) has no APK Signing Block, so no v3 signature and no lineage")
        }
        var lineages: [[SigningCertificateNode]] = []
        var sawV3 = false
        for id in [SigningBlock.ID.v31, SigningBlock.ID.v3] {
            guard let value = block.value(for: id) else { continue }
            sawV3 = true
            let parsed: SignatureSchemeBlock
            do { parsed = try SignatureSchemeBlock(decoding: value, version: .v3) } catch {
                throw LineageError.malformed("\(path): \(error)")
            }
            for signer in parsed.signers {
                for attribute in signer.signedData.additionalAttributes where attribute.id == AdditionalAttribute.ID.proofOfRotation {
                    if let nodes = try? V3SigningCertificateLineage.decode(attribute.value[...]) { lineages.append(nodes) }
                }
            }
        }
        guard sawV3 else { throw LineageError.noLineage("\(path) does not contain a valid V3 nor V3.1 signature block") }
        guard let longest = lineages.max(by: { $0.count < $1.count }) else {
            throw LineageError.noLineage("\(path) does not contain a valid lineage (it was signed without key rotation)")
        }
        for lineage in lineages where Array(longest.prefix(lineage.count)) != lineage {
            throw LineageError.malformed("\(path): inconsistent lineages; not all lineages are subsets of each other")
        }
        try self.init(nodes: longest)
    }

    /// The lineage file (apksig `writeToFile`).
    public var fileBytes: [UInt8] { SigningCertificateLineageFile.encode(nodes) }

    /// The v3 proof-of-rotation attribute's value (apksig `encodeSigningCertificateLineage`).
    public var attributeValue: [UInt8] { V3SigningCertificateLineage.encode(nodes) }

    /// The capabilities granted to `certificate`, nil when it is not in the lineage.
    public func capabilities(of certificate: Certificate) -> SignerCapabilities? {
        certificates.firstIndex(of: certificate).map { SignerCapabilities(flags: nodes[$0].flags) }
    }

    /// The lineage up to and including `certificate` (apksig `getSubLineage`).
    public func subLineage(through certificate: Certificate) throws -> SigningCertificateLineage {
        guard let index = certificates.firstIndex(of: certificate) else { throw LineageError.notInLineage(certificate.subjectDN) }
        return try SigningCertificateLineage(nodes: Array(nodes[...index]), minSdkVersion: minSdkVersion)
    }

    /// Applies the explicitly set capabilities to `certificate`'s node; returns whether its flags changed
    /// (apksig `updateSignerCapabilities`).
    @discardableResult
    public mutating func updateCapabilities(of certificate: Certificate, with capabilities: SignerCapabilities) throws -> Bool {
        guard let index = certificates.firstIndex(of: certificate) else { throw LineageError.notInLineage(certificate.subjectDN) }
        let updated = capabilities.applied(to: nodes[index].flags)
        defer { nodes[index].flags = updated }
        return updated != nodes[index].flags
    }

    /// A new two-certificate lineage: `original` vouches for `new` (apksig `SigningCertificateLineage.Builder`;
    /// `minSdkVersion` below 28 counts as 28).
    public static func rotation(from original: SignerKey, capabilities originalCapabilities: SignerCapabilities = SignerCapabilities(),
                                to new: SignerKey, capabilities newCapabilities: SignerCapabilities = SignerCapabilities(),
                                minSdkVersion: Int = AndroidSDK.pie) throws -> SigningCertificateLineage {
        guard let first = original.certificates.first else { throw SignError.noCertificate }
        let root = SigningCertificateNode(certificateDER: first.derBytes, parentSignatureAlgorithmID: 0, signatureAlgorithmID: 0,
                                          signature: [], flags: originalCapabilities.flags)
        let lineage = try SigningCertificateLineage(nodes: [root], minSdkVersion: max(minSdkVersion, AndroidSDK.pie))
        return try lineage.spawningDescendant(from: original, to: new, capabilities: newCapabilities)
    }

    /// This lineage extended by `child`, signed by `parent`, which must hold the newest certificate's key
    /// (apksig `spawnDescendant`).
    public func spawningDescendant(from parent: SignerKey, to child: SignerKey,
                                   capabilities: SignerCapabilities = SignerCapabilities()) throws -> SigningCertificateLineage {
        guard let parentCertificate = parent.certificates.first, let childCertificate = child.certificates.first else {
            throw SignError.noCertificate
        }
        guard parentCertificate == certificates.last else { throw LineageError.parentIsNotNewest(parentCertificate.subjectDN) }
        if certificates.contains(childCertificate) { throw LineageError.alreadyInLineage(childCertificate.subjectDN) }
        let parentKey = try parentCertificate.publicKey()
        // apksig `getSignatureAlgorithm`: the first algorithm V3SchemeSigner suggests for the parent's key.
        guard let algorithm = SignatureAlgorithm.suggested(for: SignatureKeyAlgorithm(parentKey.algorithm), keySize: parentKey.bitSize).first else {
            throw SignError.noCertificate
        }
        let signedData = SigningCertificateNode.signedData(certificateDER: childCertificate.derBytes, parentSignatureAlgorithmID: algorithm.id)
        let signature = try parent.privateKey.sign(signedData, digest: algorithm.signatureDigestAlgorithm)
        guard parentKey.verify(signature: signature, data: signedData, digest: algorithm.signatureDigestAlgorithm) else {
            throw SignError.keyDoesNotMatchCertificate(parentCertificate.subjectDN)
        }
        var extended = nodes
        extended[extended.count - 1].signatureAlgorithmID = algorithm.id
        extended.append(SigningCertificateNode(certificateDER: childCertificate.derBytes, parentSignatureAlgorithmID: algorithm.id,
                                               signatureAlgorithmID: 0, signature: signature, flags: capabilities.flags))
        return try SigningCertificateLineage(nodes: extended, minSdkVersion: minSdkVersion)
    }
}
