import APKCore
import Foundation
import OpenSSLWrapper
import Sign
import SignatureSchemes
import Testing
import TestSupport

/// The v4 signature (`.idsig`) of an APK whose key rotation is in a v3.1 block: apksig's `V4SchemeSigner` with a
/// v4.1 config writes the v3.0 signer's signing info, then a signing info block (ID 0x1b93ad61) of the v3.1
/// signer over the v3.1 block's digest. No apksigner on the machine writes one (Debian's 31 predates v3.1), so the
/// file is read here with a parser of its own (apksig `V4Signature.readFrom`, `SigningInfos.fromByteArray`), its
/// tree checked against `fsverity digest --out-merkle-tree`, each signature with `openssl dgst -verify`, and
/// Debian's apksigner checks the first signing info against the v3.0 block it knows.
@Suite(.removesTemporaryDirectories) struct V4RotationTests {
    static let shared: (directory: URL, keys: [TestKeys.Files]) = TestSupport.sharedByTests {
        let directory = try! TestSupport.makeTemporaryDirectory("v4-rotation-keys")
        return (directory, (1...3).map { try! TestKeys.make(.rsa2048, in: directory, name: "key\($0)") })
    }

    static func signer(_ index: Int) -> [String] {
        ["--key", shared.keys[index].keyPK8, "--cert", shared.keys[index].certificatePEM]
    }

    static func der(of key: Int) -> [UInt8] { shared.keys[key].key.certificates[0].derBytes }
    static func sha256(of key: Int) -> String { shared.keys[key].key.certificates[0].fingerprint(.sha256).hexString }

    /// One signing info as apksig lays it out, read independently of `V4Signature`.
    struct RawSigningInfo: Equatable {
        var apkDigest: [UInt8], certificate: [UInt8], additionalData: [UInt8], publicKey: [UInt8], algorithm: UInt32, signature: [UInt8]
    }

    /// An `.idsig` read field by field: little-endian int32 lengths, as apksig's `V4Signature` writes them.
    struct RawIdsig {
        var version: UInt32, hashAlgorithm: UInt32, log2BlockSize: UInt8, salt: [UInt8], rootHash: [UInt8]
        var first: RawSigningInfo
        var blocks: [(id: UInt32, info: RawSigningInfo)]
        var tree: [UInt8]

        init(_ bytes: [UInt8]) throws {
            var at = 0
            func u32() throws -> UInt32 {
                guard at + 4 <= bytes.count else { throw FixtureError(message: "truncated at \(at)") }
                defer { at += 4 }
                return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << (8 * $1) }
            }
            func field() throws -> [UInt8] {
                let length = Int(try u32())
                guard at + length <= bytes.count else { throw FixtureError(message: "field of \(length) at \(at) overruns") }
                defer { at += length }
                return Array(bytes[at..<at + length])
            }
            func info(until end: Int) throws -> RawSigningInfo {
                let value = RawSigningInfo(apkDigest: try field(), certificate: try field(), additionalData: try field(), publicKey: try field(),
                                           algorithm: try u32(), signature: try field())
                guard at <= end else { throw FixtureError(message: "signing info overruns its container") }
                return value
            }
            version = try u32()
            let hashingLength = Int(try u32()), hashingEnd = at + hashingLength
            hashAlgorithm = try u32()
            log2BlockSize = bytes[at]; at += 1
            salt = try field(); rootHash = try field()
            guard at == hashingEnd else { throw FixtureError(message: "hashing info has \(hashingEnd - at) extra bytes") }
            let signingLength = Int(try u32()), signingEnd = at + signingLength
            first = try info(until: signingEnd)
            blocks = []
            while at < signingEnd {
                let id = try u32()
                let length = Int(try u32()), end = at + length
                blocks.append((id, try info(until: end)))
                guard at == end else { throw FixtureError(message: "signing info block has \(end - at) extra bytes") }
            }
            guard at == signingEnd else { throw FixtureError(message: "signing infos overrun") }
            tree = try field()
            guard at == bytes.count else { throw FixtureError(message: "\(bytes.count - at) bytes after the tree") }
        }

        /// apksig `V4Signature.getSignedData` for `info`, built here from the fields.
        func signedData(apkSize: Int, for info: RawSigningInfo) -> [UInt8] {
            func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
            func prefixed(_ value: [UInt8]) -> [UInt8] { le32(value.count) + value }
            let body = (0..<8).map { UInt8(truncatingIfNeeded: apkSize >> (8 * $0)) } + le32(Int(hashAlgorithm)) + [log2BlockSize]
                + prefixed(salt) + prefixed(rootHash) + prefixed(info.apkDigest) + prefixed(info.certificate) + prefixed(info.additionalData)
            return le32(4 + body.count) + body
        }
    }

    static func signingBlock(_ path: String) throws -> SigningBlock {
        let source = try MappedFile(path: path)
        let end = try ZipArchive.findEndOfCentralDirectory(in: source)
        return try #require(try SigningBlock.locate(in: source, centralDirectoryOffset: end.centralDirectoryOffset))
    }

    /// The single signer of the block `id` and its best content digest (SHA-256 chunks for RSA 2048).
    static func blockSigner(_ path: String, _ id: UInt32) throws -> (certificate: [UInt8], digest: [UInt8]) {
        let value = try #require(try signingBlock(path).value(for: id))
        let signers = try SignatureSchemeBlock(decoding: value, version: .v3).signers
        try #require(signers.count == 1)
        let digest = try #require(signers[0].signedData.digests.first { $0.algorithmID == 0x0103 })
        return (try #require(signers[0].signedData.certificates.first), digest.value)
    }

    /// Checks `apk`'s `.idsig` with tools other than apkpatch: the layout, fs-verity's tree and root, OpenSSL on
    /// each signature; the first signing info is `first`'s over the v3.0 digest, the block (when `v31`) `v31`'s.
    static func checkIdsig(_ apk: String, first: Int, v31: Int?, in dir: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let idsig = try RawIdsig(try TestSupport.readBytes(apk + ".idsig"))
        #expect(idsig.version == 2 && idsig.hashAlgorithm == 1 && idsig.log2BlockSize == 12 && idsig.salt.isEmpty, sourceLocation: sourceLocation)
        let tree = dir.appendingPathComponent("tree.bin").path, descriptor = dir.appendingPathComponent("descriptor.bin").path
        let fsverity = try TestSupport.run("fsverity", ["digest", apk, "--out-merkle-tree", tree, "--out-descriptor", descriptor])
        try #require(fsverity.succeeded, "\(fsverity)", sourceLocation: sourceLocation)
        #expect(idsig.tree == (try TestSupport.readBytes(tree)), "the Merkle tree is fs-verity's", sourceLocation: sourceLocation)
        #expect(Array(try TestSupport.readBytes(descriptor)[16..<48]) == idsig.rootHash, "the root hash is fs-verity's", sourceLocation: sourceLocation)

        let v30 = try blockSigner(apk, SigningBlock.ID.v3)
        #expect(idsig.first.certificate == der(of: first) && v30.certificate == der(of: first), "first signing info: the v3.0 signer", sourceLocation: sourceLocation)
        #expect(idsig.first.apkDigest == v30.digest, sourceLocation: sourceLocation)
        var expected = [(RawSigningInfo, Int)]([(idsig.first, first)])
        if let v31 {
            try #require(idsig.blocks.count == 1, "one signing info block", sourceLocation: sourceLocation)
            #expect(idsig.blocks[0].id == 0x1b93_ad61, "the v3.1 block's ID", sourceLocation: sourceLocation)
            let block = try blockSigner(apk, SigningBlock.ID.v31)
            #expect(idsig.blocks[0].info.certificate == der(of: v31) && block.certificate == der(of: v31), "block: the v3.1 signer", sourceLocation: sourceLocation)
            #expect(idsig.blocks[0].info.apkDigest == block.digest, sourceLocation: sourceLocation)
            expected.append((idsig.blocks[0].info, v31))
        } else {
            #expect(idsig.blocks.isEmpty, sourceLocation: sourceLocation)
        }
        let size = try TestSupport.readBytes(apk).count
        for (index, (info, key)) in expected.enumerated() {
            #expect(info.algorithm == 0x0103 && info.additionalData.isEmpty, sourceLocation: sourceLocation)
            try TestSupport.write(idsig.signedData(apkSize: size, for: info), to: "signed\(index).bin", in: dir)
            try TestSupport.write(info.signature, to: "signature\(index).bin", in: dir)
            try TestSupport.write(info.publicKey, to: "public\(index).der", in: dir)
            #expect(info.publicKey == (try shared.keys[key].key.certificates[0].publicKey().subjectPublicKeyInfoDER), sourceLocation: sourceLocation)
            let openssl = try TestSupport.run("openssl", ["dgst", "-sha256", "-keyform", "DER", "-verify", dir.appendingPathComponent("public\(index).der").path,
                                                          "-signature", dir.appendingPathComponent("signature\(index).bin").path,
                                                          dir.appendingPathComponent("signed\(index).bin").path])
            #expect(openssl.succeeded && openssl.stdout.contains("Verified OK"), "signing info \(index): \(openssl)", sourceLocation: sourceLocation)
        }
        let verify = try TestSupport.apkpatch(["verify", "--signature-only", "-v", "--v4-signature-file", apk + ".idsig", apk])
        #expect(verify.succeeded && verify.stdout.contains("Verified using v4 scheme (APK Signature Scheme v4): true"), "\(verify)", sourceLocation: sourceLocation)
    }

    static func lineage(through last: Int, in dir: URL) throws -> String {
        var path = ""
        for index in 1...last {
            let next = dir.appendingPathComponent("lineage\(index)").path
            let rotate = try TestSupport.run("apksigner", ["rotate", "--out", next] + (index == 1 ? [] : ["--in", path])
                                             + ["--old-signer"] + signer(index - 1) + ["--new-signer"] + signer(index))
            try #require(rotate.succeeded, "\(rotate)")
            path = next
        }
        return path
    }

    @Test("a v3.1 rotation gets its .idsig: the v3.0 signer's signing info, then the v3.1 signer's block; fsverity, OpenSSL and both verifiers agree")
    func v31RotationIdsig() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let lineage = try Self.lineage(through: 2, in: dir)
        let rotated = dir.appendingPathComponent("rotated.apk").path
        // Asked for explicitly (and by default below): written, not refused.
        let sign = try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--next-signer"] + Self.signer(2) + ["--lineage", lineage,
                                                                                                         "--v4-signing-enabled", "true", "--out", rotated, input])
        try #require(sign.succeeded, "\(sign)")
        try Self.checkIdsig(rotated, first: 0, v31: 2, in: dir)

        // Debian's apksigner (31) reads the first signing info and checks it against the v3.0 block it knows.
        let theirs = try TestSupport.run("apksigner", ["verify", "-v", "--max-sdk-version", "32", "--v4-signature-file", rotated + ".idsig", rotated])
        #expect(theirs.succeeded && theirs.stdout.contains("Verified using v4 scheme (APK Signature Scheme v4): true"), "\(theirs)")

        // The default (v4 not given) writes the same file, and our reader reads back what was written.
        let quiet = dir.appendingPathComponent("quiet.apk").path
        #expect(try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--next-signer"] + Self.signer(2) + ["--lineage", lineage, "--out", quiet, input]).succeeded)
        #expect(try TestSupport.readBytes(quiet + ".idsig") == (try TestSupport.readBytes(rotated + ".idsig")), "RSA signatures are deterministic")
        let parsed = try V4Signature(encoded: try TestSupport.readBytes(rotated + ".idsig"))
        #expect(parsed.encoded() == (try TestSupport.readBytes(rotated + ".idsig")))
        #expect(parsed.signingInfoBlocks.map(\.blockID) == [SigningBlock.ID.v31])
    }

    /// The signer makes the v4 signature beside its last writes; when it could not, the caller makes it from the
    /// file (`SignerConfig.updateV4Signature`), which must take the v3.1 block's signer too, or the `.idsig` of a
    /// rotated APK would lack the signing info that devices from API 33 look up.
    @Test("a v3.1 rotation's .idsig made from the written file is the one the signer makes, the v3.1 signer's block included")
    func v31IdsigFromTheFile() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let lineage = try SigningCertificateLineage(contentsOf: try Self.lineage(through: 1, in: dir))
        let plan = try SignerRotation.plan(keys: [Self.shared.keys[0].key, Self.shared.keys[1].key], lineage: lineage)
        var outputs: [String] = []
        for signerMakesIt in [true, false] {
            var config = SignerConfig(key: plan.oldest)
            config.rotation = plan.rotation
            config.v4Request = .on(reportsFailure: true)
            config.makesV4Signature = signerMakesIt
            let output = dir.appendingPathComponent("signer-makes-it-\(signerMakesIt).apk").path
            let report = try Signer(config: config).sign(try APKArchive(path: input, limits: Signer.inputLimits, readsAll: true), to: output)
            #expect((report.v4Signature != nil) == signerMakesIt)
            #expect(try config.updateV4Signature(forAPKAt: output, report: report, request: config.v4Request) == output + ".idsig")
            outputs.append(output)
        }
        #expect(try TestSupport.readBytes(outputs[0]) == (try TestSupport.readBytes(outputs[1])))
        #expect(try TestSupport.readBytes(outputs[0] + ".idsig") == (try TestSupport.readBytes(outputs[1] + ".idsig")))
        try Self.checkIdsig(outputs[1], first: 0, v31: 1, in: dir)
    }

    @Test("verify rejects a v3.1 rotation's .idsig without its block, with another block ID, another signer or a bad signature")
    func tamperedV31Idsig() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let lineage = try Self.lineage(through: 1, in: dir)
        let rotated = dir.appendingPathComponent("rotated.apk").path
        try #require(try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage, "--out", rotated, input]).succeeded)
        let original = try V4Signature(encoded: try TestSupport.readBytes(rotated + ".idsig"))
        let size = Int64(try TestSupport.readBytes(rotated).count)
        // Each finding's code, and its text starting as apksig 35's (`ApkVerifier.Issue`) does, which scripts grep.
        func check(_ signature: V4Signature, code: String, text: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            try TestSupport.write(signature.encoded(), to: "bad.idsig", in: dir)
            let json = try TestSupport.apkpatch(["verify", "--signature-only", "--json", "--v4-signature-file", dir.appendingPathComponent("bad.idsig").path, rotated])
            #expect(!json.succeeded && json.stdout.contains("\"\(code)\""), "\(code): \(json)", sourceLocation: sourceLocation)
            let plain = try TestSupport.apkpatch(["verify", "--signature-only", "--v4-signature-file", dir.appendingPathComponent("bad.idsig").path, rotated])
            #expect(plain.stderr.contains("ERROR: APK Signature Scheme v4") && plain.stderr.contains(": \(text)"), "\(code): \(plain)", sourceLocation: sourceLocation)
        }
        var missing = original
        missing.signingInfoBlocks = []
        try check(missing, code: "V41_SIG_NEEDS_TWO_SIGNERS", text: "V4.1 signature requires two signers")
        var renamed = original
        renamed.signingInfoBlocks[0].blockID = SigningBlock.ID.v3
        try check(renamed, code: "V4_SIG_MALFORMED_SIGNERS", text: "V4 signature has malformed signer block")
        var flipped = original
        flipped.signingInfoBlocks[0].signingInfo.signature[7] ^= 1
        try check(flipped, code: "V4_SIG_DID_NOT_VERIFY", text: "RSA_PKCS1_V1_5_WITH_SHA256 signature over signed-data did not verify")
        // The v3.1 info re-signed by the old key (so its signature verifies): not the v3.1 block's signer.
        var swapped = original
        let old = Self.shared.keys[0].key
        swapped.signingInfoBlocks[0].signingInfo.certificate = old.certificates[0].derBytes
        swapped.signingInfoBlocks[0].signingInfo.publicKey = try old.certificates[0].publicKey().subjectPublicKeyInfoDER
        swapped.signingInfoBlocks[0].signingInfo.signature = try old.privateKey.sign(swapped.signedData(apkSize: size, for: swapped.signingInfoBlocks[0].signingInfo),
                                                                                     digest: .sha256)
        try check(swapped, code: "V4_SIG_V2_V3_SIGNERS_MISMATCH", text: "V4 signature and V2/V3 signature have mismatched certificates")
        // The v3.1 info's digest changed and re-signed: the digests differ, named as apksig names them.
        var digest = original
        digest.signingInfoBlocks[0].signingInfo.apkDigest[0] ^= 1
        let rotatedKey = Self.shared.keys[1].key
        digest.signingInfoBlocks[0].signingInfo.signature = try rotatedKey.privateKey.sign(digest.signedData(apkSize: size, for: digest.signingInfoBlocks[0].signingInfo),
                                                                                           digest: .sha256)
        try check(digest, code: "V4_SIG_V2_V3_DIGESTS_MISMATCH", text: "V4 signature and V3 signature have mismatched digests, V3 digest: ")

        // Two signing infos for an APK without a v3.1 block.
        let plain = dir.appendingPathComponent("plain.apk").path
        try #require(try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--out", plain, input]).succeeded)
        var extra = try V4Signature(encoded: try TestSupport.readBytes(plain + ".idsig"))
        extra.signingInfoBlocks = [V4Signature.SigningInfoBlock(blockID: SigningBlock.ID.v31, signingInfo: extra.signingInfo)]
        try TestSupport.write(extra.encoded(), to: "extra.idsig", in: dir)
        let json = try TestSupport.apkpatch(["verify", "--signature-only", "--json", "--v4-signature-file", dir.appendingPathComponent("extra.idsig").path, plain])
        #expect(!json.succeeded && json.stdout.contains("\"V4_SIG_MULTIPLE_SIGNERS\"") && json.stdout.contains("V4 signature only supports one signer"), "\(json)")
    }

    @Test("rotation at 28 and a signer targeting 34: v3.0's key then v3.1's; two v3.1 signers get no .idsig (an error when asked)")
    func targetedSignersIdsig() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let lineage = try Self.lineage(through: 2, in: dir)
        let both = dir.appendingPathComponent("both.apk").path
        let sign = try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage, "--rotation-min-sdk-version", "28",
                                            "--signer-for-min-sdk-version", "34"] + Self.signer(2) + ["--signer-lineage", lineage, "--out", both, input])
        try #require(sign.succeeded, "\(sign)")
        try Self.checkIdsig(both, first: 1, v31: 2, in: dir)

        // Keys 1 and 2 both in the v3.1 block (33 and 34): apksig makes no v4 signature of it.
        let two = dir.appendingPathComponent("two.apk").path
        try TestSupport.write([1, 2, 3], to: "two.apk.idsig", in: dir)
        let targeted = Self.signer(0) + ["--signer-for-min-sdk-version", "33"] + Self.signer(1) + ["--signer-lineage", lineage,
                                                                                                  "--signer-for-min-sdk-version", "34"] + Self.signer(2) + ["--signer-lineage", lineage]
        let quiet = try TestSupport.apkpatch(["sign"] + targeted + ["--out", two, input])
        #expect(quiet.succeeded, "\(quiet)")
        #expect(try Self.signingBlock(two).value(for: SigningBlock.ID.v31).map { try SignatureSchemeBlock(decoding: $0, version: .v3).signers.count } == 2)
        #expect(!FileManager.default.fileExists(atPath: two + ".idsig"), "no .idsig, and the stale one is gone")
        let loud = try TestSupport.apkpatch(["sign"] + targeted + ["--v4-signing-enabled", "true", "--out", two, input])
        #expect(!loud.succeeded && loud.stderr.contains("the v3.1 block has 2"), "\(loud)")
        #expect(!FileManager.default.fileExists(atPath: two + ".idsig"))
    }

    @Test("run writes the v3.1 rotation's .idsig (split sets: SetRotationTests)")
    func runIdsig() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let lineage = try Self.lineage(through: 1, in: dir)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("console.log('patched');\n", to: "assets/www/js/patched.js", in: patch)
        let rotation = Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage]
        let run = dir.appendingPathComponent("run.apk").path
        let result = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", run] + rotation)
        try #require(result.succeeded, "\(result)")
        try Self.checkIdsig(run, first: 0, v31: 1, in: dir)
    }
}
