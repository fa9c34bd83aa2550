import APKCore
import SignatureSchemes
import Testing
import TestSupport

/// The v2/v3 signer-block codec: exact round trips, and hostile input that throws instead of trapping.
@Suite(.removesTemporaryDirectories) struct SchemeBlockCodecTests {
    static func sampleBlock(_ version: SignatureSchemeVersion) -> SignatureSchemeBlock {
        var data = SignatureSchemeSignedData(digests: [AlgorithmTaggedValue(algorithm: .rsaPKCS1v15WithSHA256, value: Array(repeating: 0xaa, count: 32))],
                                             certificates: [Array(repeating: 0x30, count: 50)])
        if version == .v2 { data.additionalAttributes = [.strippingProtection(scheme: 3)] } else { data.minSdkVersion = 24 }
        let signer = SignatureSchemeSigner(signedData: data, version: version,
                                           signatures: [AlgorithmTaggedValue(algorithm: .rsaPKCS1v15WithSHA256, value: Array(repeating: 0x55, count: 256))],
                                           publicKey: Array(repeating: 0x04, count: 70))
        return SignatureSchemeBlock(version: version, signers: [signer])
    }

    @Test("encode/decode round trip for v2 and v3", arguments: [SignatureSchemeVersion.v2, .v3])
    func roundTrip(version: SignatureSchemeVersion) throws {
        let block = Self.sampleBlock(version)
        let bytes = block.encoded()
        let decoded = try SignatureSchemeBlock(decoding: bytes, version: version)
        #expect(decoded == block)
        #expect(decoded.encoded() == bytes)
        let signer = try #require(decoded.signers.first)
        if version == .v2 {
            #expect(signer.signedData.additionalAttributes.first?.id == 0xbeef_f00d)
            #expect(signer.signedData.additionalAttributes.first?.uint32Value == 3)
            // apksig appends an empty length-prefixed element to v2 signed data.
            #expect(signer.signedDataBytes.suffix(4) == [0, 0, 0, 0])
        } else {
            #expect(signer.minSdkVersion == 24 && signer.maxSdkVersion == Int32.max)
        }
    }

    @Test("truncated or corrupted blocks throw, never trap", arguments: [SignatureSchemeVersion.v2, .v3])
    func hostileInput(version: SignatureSchemeVersion) {
        let bytes = Self.sampleBlock(version).encoded()
        for cut in 0..<bytes.count {
            _ = try? SignatureSchemeBlock(decoding: Array(bytes[0..<cut]), version: version)
        }
        var state: UInt64 = 0x2545_f491_4f6c_dd1d
        for _ in 0..<3000 {
            var corrupted = bytes
            for _ in 0..<3 {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                corrupted[Int(state >> 33) % corrupted.count] = UInt8(truncatingIfNeeded: state >> 17)
            }
            _ = try? SignatureSchemeBlock(decoding: corrupted, version: version)
        }
        #expect(throws: (any Error).self) { try SignatureSchemeBlock(decoding: [0xff, 0xff, 0xff, 0x7f], version: version) }
    }

    @Test("signature algorithms: IDs, digests and apksig's suggestions")
    func algorithms() {
        #expect(SignatureAlgorithm(id: 0x0103) == .rsaPKCS1v15WithSHA256)
        #expect(SignatureAlgorithm(id: 0x9999) == nil)
        #expect(SignatureAlgorithm.rsaPSSWithSHA512.contentDigestAlgorithm == .chunkedSHA512)
        #expect(SignatureAlgorithm.verityECDSAWithSHA256.contentDigestAlgorithm == .verityChunkedSHA256)
        #expect(SignatureAlgorithm.suggested(for: .rsa, keySize: 3072) == [.rsaPKCS1v15WithSHA256])
        #expect(SignatureAlgorithm.suggested(for: .rsa, keySize: 4096) == [.rsaPKCS1v15WithSHA512])
        #expect(SignatureAlgorithm.suggested(for: .ec, keySize: 256, verityEnabled: true) == [.ecdsaWithSHA256, .verityECDSAWithSHA256])
        #expect(SignatureAlgorithm.suggested(for: .ec, keySize: 384) == [.ecdsaWithSHA512])
        #expect(SignatureAlgorithm.compare(.rsaPKCS1v15WithSHA512, .rsaPKCS1v15WithSHA256) > 0)
        #expect(SignatureAlgorithm.compare(.verityRSAPKCS1v15WithSHA256, .rsaPKCS1v15WithSHA256) > 0)
        #expect(SignatureAlgorithm.compare(.rsaPSSWithSHA256, .rsaPKCS1v15WithSHA256) == 0)
        #expect(SignatureAlgorithm.rsaPSSWithSHA256.jcaSignatureAlgorithm == "SHA256withRSA/PSS")
    }
}
