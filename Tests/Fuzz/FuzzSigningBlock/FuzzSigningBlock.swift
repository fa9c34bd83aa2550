// Fuzzes the APK Signing Block codec (APKCore.SigningBlock.locate: the block is taken to end where the input
// ends, i.e. right before the central directory; and SigningBlock.value(ofFirstPair:inBlock:), the verifier's
// lookup over the same pair walk) and the v2/v3 signer-block decoder
// (SignatureSchemes.SignatureSchemeBlock), on the block's pairs and on the whole input.
// Seeds: signing blocks cut out of apksigner- and apkpatch-signed APKs, and their v2/v3 pair values.
import APKCore
import FuzzSupport
import SignatureSchemes

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let block = try? SigningBlock.locate(in: ByteArrayDataSource(bytes), centralDirectoryOffset: Int64(bytes.count)) {
        _ = block.encoded()
        for pair in block.pairs {
            for version in [SignatureSchemeVersion.v2, .v3] {
                if let decoded = try? SignatureSchemeBlock(decoding: pair.value, version: version) { _ = decoded.encoded() }
            }
        }
    }
    for version in [SignatureSchemeVersion.v2, .v3] {
        if let decoded = try? SignatureSchemeBlock(decoding: bytes, version: version) { _ = decoded.encoded() }
    }
    // The verifier's lookup of a scheme block: the same pair walk, ending quietly at a malformed pair.
    for id in [SigningBlock.ID.v2, SigningBlock.ID.v3, SigningBlock.ID.v31] { _ = SigningBlock.value(ofFirstPair: id, inBlock: bytes) }
    return 0
}

@main enum FuzzSigningBlockMain {
    static func main() { FuzzDriver.run { data, size in fuzz(UnsafeRawPointer(data ?? UnsafePointer(bitPattern: 1)!), data == nil ? 0 : size) } }
}
