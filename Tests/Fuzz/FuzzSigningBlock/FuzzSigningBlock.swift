// Fuzzes the APK Signing Block codec (APKCore.SigningBlock.locate: the block is taken to end where the input
// ends, i.e. right before the central directory; and SigningBlock.value(ofFirstPair:inBlock:), the verifier's
// lookup over the same pair walk) and the v2/v3 signer-block decoder
// (SignatureSchemes.SignatureSchemeBlock), on the block's pairs and on the whole input; the signing files read
// beside an APK: the lineage file (`lineage --in`, `sign --lineage`: SigningCertificateLineageFile, then Sign's
// SigningCertificateLineage, which parses the certificates and checks each node's signature), the v3 signers'
// proof-of-rotation attributes found in the pairs (through Sign's parser and the verifier's, which a fuzzed APK
// reaches only past a valid signature), and the v4 `.idsig` file (V4Signature, then the verifier's checks of it,
// against an empty APK).
// Seeds: signing blocks cut out of apksigner- and apkpatch-signed APKs (rotated and stamped ones too), their
// v2/v3/v3.1 pair values, lineage files from `apksigner rotate` and `apkpatch rotate`, and `.idsig` files.
import APKCore
import FuzzSupport
import Sign
import SignatureSchemes
import Verify

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let block = try? SigningBlock.locate(in: ByteArrayDataSource(bytes), centralDirectoryOffset: Int64(bytes.count)) {
        _ = block.encoded()
        for pair in block.pairs {
            for version in [SignatureSchemeVersion.v2, .v3] {
                if let decoded = try? SignatureSchemeBlock(decoding: pair.value, version: version) {
                    _ = decoded.encoded()
                    for signer in decoded.signers {
                        for attribute in signer.signedData.additionalAttributes where attribute.id == AdditionalAttribute.ID.proofOfRotation {
                            lineage(attributeValue: Array(attribute.value))
                        }
                    }
                }
            }
            if pair.id == SigningBlock.ID.sourceStamp, let stamp = try? SourceStampBlock(decoding: pair.value) { _ = stamp }
        }
    }
    if SigningCertificateLineageFile.hasMagic(bytes[...]) {
        if let lineage = try? SigningCertificateLineage(fileBytes: bytes) { _ = lineage.fileBytes; _ = lineage.certificates.map(\.subjectDN) }
    } else {
        lineage(attributeValue: bytes)
    }
    if let signature = try? V4Signature(encoded: bytes) {
        _ = signature.encoded()
        _ = signature.signedData(apkSize: Int64(count))
        _ = V4SchemeVerifier.verify(signatureBytes: bytes, apk: ByteArrayDataSource([]), centralDirectoryOffset: 0)
    }
    for version in [SignatureSchemeVersion.v2, .v3] {
        if let decoded = try? SignatureSchemeBlock(decoding: bytes, version: version) { _ = decoded.encoded() }
    }
    // The verifier's lookup of a scheme block: the same pair walk, ending quietly at a malformed pair.
    for id in [SigningBlock.ID.v2, SigningBlock.ID.v3, SigningBlock.ID.v31] { _ = SigningBlock.value(ofFirstPair: id, inBlock: bytes) }
    return 0
}

/// A proof-of-rotation value through the structural decoder, then through the parser that checks it.
func lineage(attributeValue value: [UInt8]) {
    guard (try? V3SigningCertificateLineage.decode(value[...])) != nil else { return }
    if let lineage = try? SigningCertificateLineage(attributeValue: value) { _ = lineage.attributeValue }
    _ = verifiesProofOfRotation(value)
}

@main enum FuzzSigningBlockMain {
    static func main() { FuzzDriver.run { data, size in fuzz(UnsafeRawPointer(data ?? UnsafePointer(bitPattern: 1)!), data == nil ? 0 : size) } }
}
