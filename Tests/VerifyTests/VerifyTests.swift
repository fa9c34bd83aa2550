import APKCore
import Foundation
import OpenSSLWrapper
import SignatureSchemes
import TestSupport
import Testing
import Unpack
@testable import Verify

/// Our verifier against APKs signed by the real apksigner, with apksigner's own verdict as the oracle.
@Suite("Verify: APKs signed by apksigner", .removesTemporaryDirectories)
struct SignedByAPKSignerTests {
    static let keySchemeMatrix: [(TestKey, SchemeSet)] = TestKey.allCases.flatMap { key in SchemeSet.combinations.map { (key, $0) } }

    @Test("accepts every key type and scheme combination, with apksigner's signer certificate", arguments: keySchemeMatrix)
    func acceptsSignedAPK(key: TestKey, schemes: SchemeSet) throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-matrix")
        // v1 alone cannot satisfy targetSdk ≥ 30 (MIN_SIG_SCHEME_FOR_TARGET_SDK_NOT_MET, tested below).
        let apk = try VerifyFixtures.signedAPK(in: directory, key: key, schemes: schemes) { if !schemes.v2 && !schemes.v3 { $0.targetSdk = 29 } }
        let level = schemes.lowestVerifiableLevel
        let oracle = try VerifyFixtures.apksignerVerify(apk, minSdkVersion: level)
        #expect(oracle.verifies, "apksigner must accept its own output: \(oracle.output)")

        let report = try VerifyFixtures.verify(apk, minSdkVersion: level, signatureOnly: false)
        let signatureVerified = report.isSignatureVerified, verified = report.isVerified
        #expect(signatureVerified, "errors: \(report.signatureErrors)")
        #expect(verified, "zipaligned fixture must pass install checks: \(report.errors)")
        #expect(report.signers.map(\.sha256) == oracle.certificateSHA256)
        #expect(Set(report.verifiedSchemes.map(\.rawValue)) == oracle.schemes, "apksigner: \(oracle.schemes)")
        let certificate = try #require(report.signers.first)
        #expect(certificate.subjectDN == "CN=Verify Test \(key.rawValue), O=apkpatch, C=US")
        switch key {
        case .rsa2048: #expect(certificate.keyAlgorithm == "RSA" && certificate.keySize == 2048)
        case .rsa4096: #expect(certificate.keyAlgorithm == "RSA" && certificate.keySize == 4096)
        case .ecP256: #expect(certificate.keyAlgorithm == "EC" && certificate.keySize == 256)
        case .ecP384: #expect(certificate.keyAlgorithm == "EC" && certificate.keySize == 384)
        }
    }

    @Test("reads minSdkVersion from the manifest: v2-only with minSdk 21 needs v1 (JAR_SIG_NO_MANIFEST)")
    func v2OnlyBelowNougat() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-v2only")
        let apk = try VerifyFixtures.signedAPK(in: directory, schemes: SchemeSet(v1: false, v2: true, v3: false))
        let oracle = try VerifyFixtures.apksignerVerify(apk)
        #expect(!oracle.verifies)
        let report = try VerifyFixtures.verify(apk)
        #expect(report.minSdkVersion == 21)
        let signatureVerified = report.isSignatureVerified
        #expect(!signatureVerified)
        #expect(VerifyFixtures.codes(report.signatureErrors) == ["JAR_SIG_NO_MANIFEST"])
        // With the range starting at N, v2 alone is enough, as for apksigner.
        #expect(try VerifyFixtures.verify(apk, minSdkVersion: 24).isSignatureVerified)
        #expect(try VerifyFixtures.apksignerVerify(apk, minSdkVersion: 24).verifies)
    }

    @Test("an unsigned APK does not verify (JAR_SIG_NO_MANIFEST)")
    func unsigned() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-unsigned")
        let apk = try VerifyFixtures.unsignedAPK(in: directory)
        #expect(!(try VerifyFixtures.apksignerVerify(apk).verifies))
        let report = try VerifyFixtures.verify(apk)
        let verified = report.isVerified
        #expect(!verified)
        #expect(VerifyFixtures.codes(report.signatureErrors) == ["JAR_SIG_NO_MANIFEST"])
        #expect(report.verifiedSchemes.isEmpty && report.signers.isEmpty)
    }

    @Test("--verity-enabled signatures (VERITY_CHUNKED_SHA256 fs-verity tree digest) verify from P, and catch an edit")
    func verity() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-verity")
        let apk = try VerifyFixtures.signedAPK(in: directory, extra: ["--verity-enabled", "true"])
        for level in [21, 28, 33] {
            #expect(try VerifyFixtures.apksignerVerify(apk, minSdkVersion: level).verifies)
            let report = try VerifyFixtures.verify(apk, minSdkVersion: level)
            let verified = report.isSignatureVerified
            #expect(verified, "min \(level): \(report.signatureErrors)")
        }
        // The verity and the chunked digests both see an edit (CRC kept right).
        let edited = try VerifyFixtures.editingStoredEntry("assets/data.bin", in: try VerifyFixtures.read(apk))
        let path = directory.appendingPathComponent("edited.apk").path
        try VerifyFixtures.write(edited, to: path)
        let report = try VerifyFixtures.verify(path, minSdkVersion: 28)
        let errors = report.signatureErrors.filter { $0.code == .v3SigAPKDigestDidNotVerify }.map(\.message)
        #expect(errors.contains { $0.contains("VERITY_CHUNKED_SHA256") }, "\(report.signatureErrors)")
        #expect(!(try VerifyFixtures.apksignerVerify(path, minSdkVersion: 28).verifies))
    }

    @Test("v3 verified alone from P: v1 and v2 are not consulted when minSdk ≥ 28")
    func v3AloneFromPie() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-v3")
        let apk = try VerifyFixtures.signedAPK(in: directory)
        let report = try VerifyFixtures.verify(apk, minSdkVersion: 28)
        let signatureVerified = report.isSignatureVerified
        #expect(signatureVerified, "\(report.signatureErrors)")
        #expect(report.verifiedSchemes == [.v3])
        #expect(try VerifyFixtures.apksignerVerify(apk, minSdkVersion: 28).schemes == ["v3"])
    }

    @Test("findings print in apksigner's order: JAR signers' warnings before v2 signers' (v1, v2, v3 checked up to API 27); -v lines as apksigner 35's, and 31's but for the v3.1 line")
    func findingsInApksignerOrder() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-order")
        let apk = try VerifyFixtures.signedAPK(in: directory)
        // Below P the v3 block is not read, so the v1 and v2 stripping protections name an unknown scheme 3.
        for options in [["-v"], ["-v", "-Werr"], ["-v", "--print-certs"], ["-v", "--print-certs", "--min-sdk-version", "28"]] {
            let arguments = ["verify"] + options + (options.contains("--print-certs") ? [] : ["--max-sdk-version", "27"]) + [apk]
            let apksigner = try TestSupport.run("apksigner", arguments), ours = try TestSupport.apkpatch(arguments)
            if !options.contains("--print-certs") {
                #expect(apksigner.stdout.contains("WARNING: JAR signer") || apksigner.stderr.contains("WARNING: JAR signer"), "\(apksigner)")
            }
            // Debian's apksigner 31 has no v3.1 line; apksigner 35 (current build-tools) prints it for every APK.
            #expect(ours.status == apksigner.status && NewerApksigner.asApksigner31(ours.stdout) == apksigner.stdout && ours.stderr == apksigner.stderr,
                    "\(options)\nours: \(ours)\napksigner 31: \(apksigner)")
            let newer = try NewerApksigner.run(arguments)
            #expect(ours.status == newer.status && ours.stdout == newer.stdout && ours.stderr == newer.stderr, "\(options)\nours: \(ours)\napksigner 35: \(newer)")
            #expect(ours.stdout.contains("Verified using v3.1 scheme (APK Signature Scheme v3.1): false\n"), "\(ours)")
        }
    }
}

/// Tampered APKs: each must be rejected as apksigner rejects it.
@Suite("Verify: tampered APKs", .removesTemporaryDirectories)
struct TamperTests {
    func signed(_ label: String, schemes: SchemeSet = .all) throws -> (directory: URL, path: String, bytes: [UInt8]) {
        let directory = try TestSupport.makeTemporaryDirectory(label)
        let path = try VerifyFixtures.signedAPK(in: directory, schemes: schemes)
        return (directory, path, try VerifyFixtures.read(path))
    }

    func expectRejected(_ bytes: [UInt8], in directory: URL, minSdkVersion: Int? = nil, maxSdkVersion: Int? = nil, codes expected: Set<String>,
                        sourceLocation: SourceLocation = #_sourceLocation) throws {
        let path = directory.appendingPathComponent("tampered-\(UUID().uuidString).apk").path
        try VerifyFixtures.write(bytes, to: path)
        let oracle = try VerifyFixtures.apksignerVerify(path, minSdkVersion: minSdkVersion, maxSdkVersion: maxSdkVersion)
        #expect(!oracle.verifies, "apksigner accepted the tampered APK", sourceLocation: sourceLocation)
        let report = try VerifyFixtures.verify(path, minSdkVersion: minSdkVersion, maxSdkVersion: maxSdkVersion ?? Int(Int32.max))
        let signatureVerified = report.isSignatureVerified
        #expect(!signatureVerified, sourceLocation: sourceLocation)
        #expect(VerifyFixtures.codes(report.signatureErrors).isSuperset(of: expected),
                "expected \(expected), got \(report.signatureErrors)", sourceLocation: sourceLocation)
    }

    @Test("a flipped byte in an entry's data (CRC kept right): v2 digest mismatch")
    func entryData() throws {
        let apk = try signed("verify-tamper-entry")
        let edited = try VerifyFixtures.editingStoredEntry("assets/data.bin", in: apk.bytes)
        try expectRejected(edited, in: apk.directory, codes: ["V3_SIG_APK_DIGEST_DID_NOT_VERIFY"])
        try expectRejected(edited, in: apk.directory, minSdkVersion: 24, maxSdkVersion27: true, codes: ["V2_SIG_APK_DIGEST_DID_NOT_VERIFY"])
    }

    func expectRejected(_ bytes: [UInt8], in directory: URL, minSdkVersion: Int, maxSdkVersion27: Bool, codes expected: Set<String>) throws {
        let path = directory.appendingPathComponent("tampered-\(UUID().uuidString).apk").path
        try VerifyFixtures.write(bytes, to: path)
        #expect(!(try VerifyFixtures.apksignerVerify(path, minSdkVersion: minSdkVersion, maxSdkVersion: 27).verifies))
        let report = try VerifyFixtures.verify(path, minSdkVersion: minSdkVersion, maxSdkVersion: 27)
        let signatureVerified = report.isSignatureVerified
        #expect(!signatureVerified)
        #expect(VerifyFixtures.codes(report.signatureErrors).isSuperset(of: expected), "\(report.signatureErrors)")
    }

    @Test("a flipped byte in an entry's data with a stale CRC is rejected too")
    func entryDataStaleCRC() throws {
        let apk = try signed("verify-tamper-crc")
        var bytes = apk.bytes
        let entry = try #require(try VerifyFixtures.zip(bytes).entry(named: "assets/data.bin"))
        bytes[Int(entry.dataOffset) + 10] ^= 0x80
        try expectRejected(bytes, in: apk.directory, minSdkVersion: 21, codes: ["V3_SIG_APK_DIGEST_DID_NOT_VERIFY"])
        // v1 only: reading the entry checks its CRC before any digest (apksigner reports the digest mismatch).
        let v1 = try signed("verify-tamper-crc-v1", schemes: SchemeSet(v1: true, v2: false, v3: false))
        var v1Bytes = v1.bytes
        let v1Entry = try #require(try VerifyFixtures.zip(v1Bytes).entry(named: "assets/data.bin"))
        v1Bytes[Int(v1Entry.dataOffset) + 10] ^= 0x80
        try expectRejected(v1Bytes, in: v1.directory, maxSdkVersion: 29, codes: ["MALFORMED_APK"])
        try expectRejected(bytes, in: apk.directory, minSdkVersion: 24, maxSdkVersion27: true, codes: ["V2_SIG_APK_DIGEST_DID_NOT_VERIFY"])
    }

    @Test("v1 only: an entry edited behind the manifest's back (JAR_SIG_ZIP_ENTRY_DIGEST_DID_NOT_VERIFY)")
    func v1DigestMismatch() throws {
        let apk = try signed("verify-tamper-v1", schemes: SchemeSet(v1: true, v2: false, v3: false))
        let edited = try VerifyFixtures.editingStoredEntry("assets/data.bin", in: apk.bytes)
        try expectRejected(edited, in: apk.directory, codes: ["JAR_SIG_ZIP_ENTRY_DIGEST_DID_NOT_VERIFY"])
    }

    @Test("a flipped byte in the central directory")
    func centralDirectory() throws {
        let apk = try signed("verify-tamper-cd")
        var bytes = apk.bytes
        let archive = try VerifyFixtures.zip(bytes)
        // The first record's external file attributes: structure stays valid, only signatures notice.
        bytes[Int(archive.centralDirectoryOffset) + 38] ^= 0x01
        try expectRejected(bytes, in: apk.directory, codes: ["V3_SIG_APK_DIGEST_DID_NOT_VERIFY"])
    }

    @Test("a flipped byte in the signing block's v3 signature (V3_SIG_DID_NOT_VERIFY)")
    func signingBlockSignature() throws {
        let apk = try signed("verify-tamper-block")
        var block = try VerifyFixtures.signingBlock(of: apk.bytes)
        let index = try #require(block.pairs.firstIndex { $0.id == SigningBlock.ID.v3 })
        // The signature is near the end of the signer: the public key (last field) follows it, so flip a
        // byte a little before the public key's length prefix.
        var value = block.pairs[index].value
        let keyLength = try #require(Self.lastFieldLength(value))
        value[value.count - keyLength - 4 - 10] ^= 0x01
        block.pairs[index].value = value
        let edited = try VerifyFixtures.replacingSigningBlock(in: apk.bytes, with: block.encoded())
        try expectRejected(edited, in: apk.directory, codes: ["V3_SIG_DID_NOT_VERIFY"])
    }

    /// Length of the public key that ends a single-signer v2/v3 block.
    static func lastFieldLength(_ value: [UInt8]) -> Int? {
        var rest = value[...]
        guard let signers = try? LengthPrefixed.take(&rest, what: "signers") else { return nil }
        var signerList = signers
        guard var signer = try? LengthPrefixed.take(&signerList, what: "signer") else { return nil }
        _ = try? LengthPrefixed.take(&signer, what: "signed data")
        if signer.count > 8 + 4, value.count > 0 {
            // v3 has min/max SDK ints before the signatures; try both layouts.
            var v3 = signer
            v3 = v3.dropFirst(8)
            if let _ = try? LengthPrefixed.take(&v3, what: "signatures"), let key = try? LengthPrefixed.take(&v3, what: "key"), v3.isEmpty {
                return key.count
            }
        }
        _ = try? LengthPrefixed.take(&signer, what: "signatures")
        return (try? LengthPrefixed.take(&signer, what: "key"))?.count
    }

    @Test("a flipped byte in the signing block's v2 signed data (V2_SIG_DID_NOT_VERIFY), range below P")
    func signingBlockV2() throws {
        let apk = try signed("verify-tamper-v2block")
        var block = try VerifyFixtures.signingBlock(of: apk.bytes)
        let index = try #require(block.pairs.firstIndex { $0.id == SigningBlock.ID.v2 })
        // Inside the signed data: the first content digest's bytes start a few dozen bytes in.
        block.pairs[index].value[40] ^= 0x01
        let edited = try VerifyFixtures.replacingSigningBlock(in: apk.bytes, with: block.encoded())
        try expectRejected(edited, in: apk.directory, minSdkVersion: 24, maxSdkVersion27: true, codes: ["V2_SIG_DID_NOT_VERIFY"])
    }

    @Test("the signing block stripped while the .SF says X-Android-APK-Signed: 2, 3")
    func strippedBlock() throws {
        let apk = try signed("verify-tamper-strip")
        let stripped = try VerifyFixtures.replacingSigningBlock(in: apk.bytes, with: nil)
        try expectRejected(stripped, in: apk.directory, codes: ["JAR_SIG_MISSING_APK_SIG_REFERENCED"])
    }

    @Test("the v3 block dropped while v2 carries the stripping-protection attribute (V2_SIG_MISSING_APK_SIG_REFERENCED)")
    func strippedV3() throws {
        let apk = try signed("verify-tamper-strip-v3", schemes: SchemeSet(v1: false, v2: true, v3: true))
        var block = try VerifyFixtures.signingBlock(of: apk.bytes)
        block.pairs.removeAll { $0.id == SigningBlock.ID.v3 || $0.id == SigningBlock.ID.verityPadding }
        let edited = try VerifyFixtures.replacingSigningBlock(in: apk.bytes, with: block.encoded())
        try expectRejected(edited, in: apk.directory, minSdkVersion: 24, codes: ["V2_SIG_MISSING_APK_SIG_REFERENCED"])
    }

    @Test("unknown signing-block pairs are ignored, as on Android")
    func unknownPair() throws {
        let apk = try signed("verify-unknown-pair")
        var block = try VerifyFixtures.signingBlock(of: apk.bytes)
        block.pairs.removeAll { $0.id == SigningBlock.ID.verityPadding }
        block.pairs.append(SigningBlock.Pair(id: 0x1234_5678, value: Array("vendor data".utf8)))
        let edited = try VerifyFixtures.replacingSigningBlock(in: apk.bytes, with: block.encoded())
        let path = apk.directory.appendingPathComponent("unknown-pair.apk").path
        try VerifyFixtures.write(edited, to: path)
        #expect(try VerifyFixtures.apksignerVerify(path).verifies)
        let report = try VerifyFixtures.verify(path)
        let verified = report.isSignatureVerified
        #expect(verified, "\(report.signatureErrors)")
    }

    @Test("a v3.1 block: checked for T+ (a copy of the v3 signer verifies), ignored below T; garbage fails only for T+")
    func v31Block() throws {
        let apk = try signed("verify-v31")
        var block = try VerifyFixtures.signingBlock(of: apk.bytes)
        block.pairs.removeAll { $0.id == SigningBlock.ID.verityPadding }
        let v3 = try #require(block.value(for: SigningBlock.ID.v3))
        var copy = block
        copy.pairs.append(SigningBlock.Pair(id: SigningBlock.ID.v31, value: v3))
        let path = apk.directory.appendingPathComponent("v31.apk").path
        try VerifyFixtures.write(try VerifyFixtures.replacingSigningBlock(in: apk.bytes, with: copy.encoded()), to: path)
        let report = try VerifyFixtures.verify(path)
        let verified = report.isSignatureVerified
        #expect(verified, "\(report.signatureErrors)")
        #expect(report.verifiedSchemes.contains(.v31))
        // The v3.0 signer lacks the rotation-min-SDK stripping protection attribute: a warning, as in apksig.
        #expect(VerifyFixtures.codes(report.signatureWarnings).contains("V31_ROTATION_MIN_SDK_ATTR_MISSING"))

        var garbage = block
        garbage.pairs.append(SigningBlock.Pair(id: SigningBlock.ID.v31, value: [1, 2, 3]))
        let garbagePath = apk.directory.appendingPathComponent("v31-garbage.apk").path
        try VerifyFixtures.write(try VerifyFixtures.replacingSigningBlock(in: apk.bytes, with: garbage.encoded()), to: garbagePath)
        #expect(try VerifyFixtures.verify(garbagePath, maxSdkVersion: 32).isSignatureVerified)
        #expect(VerifyFixtures.codes(try VerifyFixtures.verify(garbagePath).signatureErrors) == ["V3_SIG_MALFORMED_SIGNERS"])

        // A v3.1 block without the v3.0 base block (apksigner 31 predates v3.1, so only our verdict is checked).
        var alone = copy
        alone.pairs.removeAll { $0.id == SigningBlock.ID.v3 }
        let alonePath = apk.directory.appendingPathComponent("v31-alone.apk").path
        try VerifyFixtures.write(try VerifyFixtures.replacingSigningBlock(in: apk.bytes, with: alone.encoded()), to: alonePath)
        #expect(VerifyFixtures.codes(try VerifyFixtures.verify(alonePath).signatureErrors) == ["V31_BLOCK_FOUND_WITHOUT_V3_BLOCK"])
    }

    @Test("crafted scheme blocks: no signers, malformed signer list", arguments: [
        (SigningBlock.ID.v2, [UInt8]([0, 0, 0, 0]), "V2_SIG_NO_SIGNERS"),
        (SigningBlock.ID.v2, [UInt8]([9, 0, 0, 0, 1]), "V2_SIG_MALFORMED_SIGNERS"),
        (SigningBlock.ID.v3, [UInt8]([0, 0, 0, 0]), "V3_SIG_NO_SIGNERS"),
        (SigningBlock.ID.v3, [UInt8]([9, 0, 0, 0, 1]), "V3_SIG_MALFORMED_SIGNERS"),
        (SigningBlock.ID.v3, [UInt8]([8, 0, 0, 0, 4, 0, 0, 0, 1, 2, 3, 4]), "V3_SIG_MALFORMED_SIGNER"),
    ])
    func craftedBlocks(id: UInt32, value: [UInt8], code: String) throws {
        let apk = try signed("verify-crafted", schemes: SchemeSet(v1: false, v2: id == SigningBlock.ID.v2, v3: id == SigningBlock.ID.v3))
        let block = SigningBlock(pairs: [SigningBlock.Pair(id: id, value: value)])
        let edited = try VerifyFixtures.replacingSigningBlock(in: apk.bytes, with: block.encoded())
        try expectRejected(edited, in: apk.directory, minSdkVersion: id == SigningBlock.ID.v2 ? 24 : 28, codes: [code])
    }

    @Test("two entries with the same name (JAR_SIG_DUPLICATE_ZIP_ENTRY)")
    func duplicateEntry() throws {
        let apk = try signed("verify-dup", schemes: SchemeSet(v1: true, v2: false, v3: false))
        var bytes = apk.bytes
        // Rename assets/b.txt to assets/a.txt in its local header and central directory record.
        let from = Array("assets/b.txt".utf8), to = Array("assets/a.txt".utf8)
        var i = 0
        while i + from.count <= bytes.count {
            if Array(bytes[i..<(i + from.count)]) == from { bytes.replaceSubrange(i..<(i + from.count), with: to) }
            i += 1
        }
        try expectRejected(bytes, in: apk.directory, codes: ["JAR_SIG_DUPLICATE_ZIP_ENTRY"])
    }

    @Test("a v1 signature block without its .SF (JAR_SIG_NO_SIGNATURES, JAR_SIG_MISSING_FILE warning)")
    func missingSignatureFile() throws {
        let apk = try signed("verify-nosf", schemes: SchemeSet(v1: true, v2: false, v3: false))
        var bytes = apk.bytes
        // Rename META-INF/SIGNER.SF to META-INF/SIGNER.SX (same length) everywhere.
        let from = Array("META-INF/SIGNER.SF".utf8), to = Array("META-INF/SIGNER.SX".utf8)
        var i = 0
        while i + from.count <= bytes.count {
            if Array(bytes[i..<(i + from.count)]) == from { bytes.replaceSubrange(i..<(i + from.count), with: to) }
            i += 1
        }
        let path = apk.directory.appendingPathComponent("nosf.apk").path
        try VerifyFixtures.write(bytes, to: path)
        #expect(!(try VerifyFixtures.apksignerVerify(path).verifies))
        let report = try VerifyFixtures.verify(path)
        #expect(VerifyFixtures.codes(report.signatureErrors) == ["JAR_SIG_NO_SIGNATURES"])
        #expect(VerifyFixtures.codes(report.signatureWarnings).contains("JAR_SIG_MISSING_FILE"))
    }

    /// `apkpatch verify` opens the last argument and starts its digests before parsing the rest (see
    /// `Verify.prepare`). When that argument is not the APK being verified, what it opened must not be used:
    /// here it is a tampered APK named like the option value that ends the command line.
    @Test("the CLI's early start on its last argument never verifies the wrong file")
    func earlyStartUsesOnlyTheVerifiedPath() throws {
        let apk = try signed("verify-early-start")
        let decoy = apk.directory.appendingPathComponent("33").path
        try VerifyFixtures.write(try VerifyFixtures.editingStoredEntry("assets/data.bin", in: apk.bytes), to: decoy)
        let good = try TestSupport.run(TestSupport.apkpatchBinary, ["verify", "--in", apk.path, "--max-sdk-version", "33"],
                                       currentDirectory: apk.directory.path)
        #expect(good.status == 0, "\(good)")
        let bad = try TestSupport.run(TestSupport.apkpatchBinary, ["verify", "--in", decoy, "--max-sdk-version", "33"],
                                      currentDirectory: apk.directory.path)
        #expect(bad.status == 1, "\(bad)")
        // Prepared and used: the tampered APK as the last argument fails, the good one passes.
        #expect(try TestSupport.apkpatch(["verify", decoy]).status == 1)
        #expect(try TestSupport.apkpatch(["verify", apk.path]).status == 0)
    }
}

/// Rules about which schemes must be present.
@Suite("Verify: scheme rules", .removesTemporaryDirectories)
struct SchemeRuleTests {
    @Test("targetSdk ≥ 30 with v1 only (MIN_SIG_SCHEME_FOR_TARGET_SDK_NOT_MET)")
    func v1OnlyTargetR() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-target30")
        let apk = try VerifyFixtures.signedAPK(in: directory, schemes: SchemeSet(v1: true, v2: false, v3: false)) { $0.targetSdk = 30 }
        #expect(!(try VerifyFixtures.apksignerVerify(apk).verifies))
        let report = try VerifyFixtures.verify(apk)
        #expect(VerifyFixtures.codes(report.signatureErrors) == ["MIN_SIG_SCHEME_FOR_TARGET_SDK_NOT_MET"])
        // Below R the rule does not apply.
        #expect(try VerifyFixtures.verify(apk, maxSdkVersion: 29).isSignatureVerified)
        #expect(try VerifyFixtures.apksignerVerify(apk, maxSdkVersion: 29).verifies)
    }

    @Test("targetSandboxVersion 2 needs a v2+ signature (NO_SIG_FOR_TARGET_SANDBOX_VERSION)")
    func targetSandboxVersion() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-sandbox")
        try TestSupport.write("""
            <?xml version="1.0" encoding="utf-8"?>
            <manifest xmlns:android="http://schemas.android.com/apk/res/android" package="com.example.sandbox" android:targetSandboxVersion="2">
                <uses-sdk android:minSdkVersion="21" android:targetSdkVersion="29" />
                <application android:label="sandbox" />
            </manifest>
            """, to: "AndroidManifest.xml", in: directory)
        let unsigned = directory.appendingPathComponent("sandbox.apk").path
        let aapt = try TestSupport.run("aapt", ["package", "-f", "-M", "AndroidManifest.xml", "-I", TestSupport.frameworkRes, "-F", unsigned],
                                       currentDirectory: directory.path)
        try #require(aapt.succeeded, "\(aapt)")
        let v1Only = try VerifyFixtures.sign(unsigned, key: .rsa2048, schemes: SchemeSet(v1: true, v2: false, v3: false),
                                             output: directory.appendingPathComponent("v1.apk").path)
        #expect(!(try VerifyFixtures.apksignerVerify(v1Only).verifies))
        #expect(VerifyFixtures.codes(try VerifyFixtures.verify(v1Only).signatureErrors) == ["NO_SIG_FOR_TARGET_SANDBOX_VERSION"])
        // Below O the attribute means nothing.
        #expect(try VerifyFixtures.verify(v1Only, maxSdkVersion: 25).isSignatureVerified)
        let withV2 = try VerifyFixtures.sign(unsigned, key: .rsa2048, schemes: .all, output: directory.appendingPathComponent("all.apk").path)
        #expect(try VerifyFixtures.verify(withV2).isSignatureVerified)
        #expect(try VerifyFixtures.apksignerVerify(withV2).verifies)
    }

    @Test("an extra file in META-INF is reported unprotected (JAR_SIG_UNPROTECTED_ZIP_ENTRY)")
    func unprotectedEntry() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-unprotected")
        let apk = try VerifyFixtures.signedAPK(in: directory, schemes: SchemeSet(v1: true, v2: false, v3: false)) {
            $0.rawFiles["META-INF/extra.txt"] = Array("not covered by the manifest\n".utf8)
            $0.targetSdk = 29
        }
        let report = try VerifyFixtures.verify(apk)
        let verified = report.isSignatureVerified
        #expect(verified, "\(report.signatureErrors)")
        #expect(VerifyFixtures.codes(report.signatureWarnings).contains("JAR_SIG_UNPROTECTED_ZIP_ENTRY"))
        #expect(try VerifyFixtures.apksignerVerify(apk).output.contains("META-INF/extra.txt not protected by signature"))
    }

    @Test("min SDK above max SDK is a usage error")
    func invalidRange() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-range")
        let apk = try VerifyFixtures.signedAPK(in: directory)
        #expect(throws: VerificationError.self) { try VerifyFixtures.verify(apk, minSdkVersion: 30, maxSdkVersion: 29) }
    }
}

/// Packaging checks beyond apksigner.
@Suite("Verify: install checks", .removesTemporaryDirectories)
struct InstallCheckTests {
    @Test("resources.arsc not 4-byte aligned with targetSdk ≥ 30 fails; --signature-only gives apksigner's verdict")
    func unalignedArsc() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-arsc")
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory) { $0.targetSdk = 30 }
        let archive = try VerifyFixtures.zip(try VerifyFixtures.read(unsigned))
        let arsc = try #require(archive.entry(named: "resources.arsc"))
        try #require(!arsc.isCompressed && arsc.dataOffset % 4 != 0, "fixture precondition: aapt leaves resources.arsc stored and unaligned")
        let apk = try VerifyFixtures.sign(unsigned, key: .rsa2048, schemes: .all, output: directory.appendingPathComponent("signed.apk").path)
        let report = try VerifyFixtures.verify(apk, signatureOnly: false)
        let signatureVerified = report.isSignatureVerified
        #expect(signatureVerified, "\(report.signatureErrors)")
        let verified = report.isVerified
        #expect(!verified)
        #expect(VerifyFixtures.codes(report.installErrors) == ["INSTALL_RESOURCES_ARSC_NOT_ALIGNED"])
        #expect(try VerifyFixtures.verify(apk, signatureOnly: true).isVerified)
        #expect(try VerifyFixtures.apksignerVerify(apk).verifies)
        // The library's text says what Android refuses; the command line adds the option that gives apksigner's verdict.
        #expect(!report.renderText(verbose: false, printCertificates: false).standardError.contains("--"))
        let cli = try TestSupport.apkpatch(["verify", apk])
        #expect(!cli.succeeded && cli.stderr.contains("would refuse this APK (use --signature-only for apksigner's verdict)"), "\(cli)")
    }

    @Test("no AndroidManifest.xml and no minSdkVersion given: the report says so, the command line names --min-sdk-version")
    func missingManifestNamesTheOption() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-no-manifest")
        try TestSupport.write("x", to: "assets/a.txt", in: directory)
        let apk = directory.appendingPathComponent("no-manifest.apk").path
        #expect(try TestSupport.run("zip", ["-q", apk, "assets/a.txt"], currentDirectory: directory.path).succeeded)
        let report = try VerifyFixtures.verify(apk, signatureOnly: false)
        #expect(VerifyFixtures.codes(report.signatureErrors) == ["MANIFEST_UNREADABLE"])
        #expect(report.signatureErrors.allSatisfy { !$0.message.contains("--") }, "\(report.signatureErrors)")
        let cli = try TestSupport.apkpatch(["verify", apk])
        #expect(!cli.succeeded && cli.stderr.contains("ERROR: Missing AndroidManifest.xml. Use --min-sdk-version to override"), "\(cli)")
        let json = try TestSupport.apkpatch(["verify", "--json", apk])
        #expect(json.stdout.contains("Missing AndroidManifest.xml. Use --min-sdk-version to override"), "\(json)")
    }

    @Test("resources.arsc compressed with targetSdk ≥ 30 fails")
    func compressedArsc() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-arsc-z")
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory) { $0.targetSdk = 30 }
        // Re-add resources.arsc compressed with zip (-9), then align and sign.
        let work = directory.appendingPathComponent("x")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        #expect(try TestSupport.run("unzip", ["-q", unsigned, "resources.arsc", "-d", work.path]).succeeded)
        #expect(try TestSupport.run("zip", ["-q", "-d", unsigned, "resources.arsc"]).succeeded)
        #expect(try TestSupport.run("zip", ["-q", "-9", unsigned, "resources.arsc"], currentDirectory: work.path).succeeded)
        let aligned = try VerifyFixtures.zipalign(unsigned, output: directory.appendingPathComponent("aligned.apk").path)
        let apk = try VerifyFixtures.sign(aligned, key: .rsa2048, schemes: .all, output: directory.appendingPathComponent("signed.apk").path)
        let arsc = try #require(try VerifyFixtures.zip(try VerifyFixtures.read(apk)).entry(named: "resources.arsc"))
        try #require(arsc.isCompressed)
        let report = try VerifyFixtures.verify(apk, signatureOnly: false)
        #expect(VerifyFixtures.codes(report.installErrors) == ["INSTALL_RESOURCES_ARSC_COMPRESSED"])
        #expect(report.isSignatureVerified && !report.isVerified)
    }

    @Test("extractNativeLibs=false: compressed .so fails, stored page-aligned passes with a 16 KiB warning when not 16 KiB aligned")
    func nativeLibraries() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-so")
        let configure: (inout FixtureAPK) -> Void = {
            $0.applicationAttributes = "android:extractNativeLibs=\"false\""
            $0.rawFiles["lib/arm64-v8a/libdemo.so"] = FixtureAPK.pseudoRandomBytes(count: 9000, seed: 3)
        }
        // aapt add compresses the .so.
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory, configure: configure)
        let aligned = try VerifyFixtures.zipalign(unsigned, output: directory.appendingPathComponent("aligned.apk").path)
        let apk = try VerifyFixtures.sign(aligned, key: .rsa2048, schemes: .all, output: directory.appendingPathComponent("signed.apk").path)
        let so = try #require(try VerifyFixtures.zip(try VerifyFixtures.read(apk)).entry(named: "lib/arm64-v8a/libdemo.so"))
        if so.isCompressed {
            let report = try VerifyFixtures.verify(apk, signatureOnly: false)
            #expect(VerifyFixtures.codes(report.installErrors) == ["INSTALL_NATIVE_LIBRARY_COMPRESSED"])
        }

        // Stored: rebuild with zip -0 for the library, then check page alignment both ways.
        let stored = directory.appendingPathComponent("stored.apk").path
        try FileManager.default.copyItem(atPath: unsigned, toPath: stored)
        let work = directory.appendingPathComponent("w")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        #expect(try TestSupport.run("unzip", ["-q", stored, "lib/arm64-v8a/libdemo.so", "-d", work.path]).succeeded)
        #expect(try TestSupport.run("zip", ["-q", "-d", stored, "lib/arm64-v8a/libdemo.so"]).succeeded)
        #expect(try TestSupport.run("zip", ["-q", "-0", stored, "lib/arm64-v8a/libdemo.so"], currentDirectory: work.path).succeeded)
        let unalignedSigned = try VerifyFixtures.sign(stored, key: .rsa2048, schemes: .all, output: directory.appendingPathComponent("stored-signed.apk").path)
        let unalignedEntry = try #require(try VerifyFixtures.zip(try VerifyFixtures.read(unalignedSigned)).entry(named: "lib/arm64-v8a/libdemo.so"))
        if unalignedEntry.dataOffset % 4096 != 0 {
            let report = try VerifyFixtures.verify(unalignedSigned, signatureOnly: false)
            #expect(VerifyFixtures.codes(report.installErrors).contains("INSTALL_NATIVE_LIBRARY_NOT_PAGE_ALIGNED"))
        }
        let pageAligned = try VerifyFixtures.zipalign(stored, output: directory.appendingPathComponent("stored-aligned.apk").path)
        let good = try VerifyFixtures.sign(pageAligned, key: .rsa2048, schemes: .all, output: directory.appendingPathComponent("good.apk").path)
        let goodEntry = try #require(try VerifyFixtures.zip(try VerifyFixtures.read(good)).entry(named: "lib/arm64-v8a/libdemo.so"))
        #expect(goodEntry.dataOffset % 4096 == 0)
        let report = try VerifyFixtures.verify(good, signatureOnly: false)
        #expect(report.installErrors.isEmpty, "\(report.installErrors)")
        #expect(report.isVerified)
        if goodEntry.dataOffset % 16384 != 0 {
            #expect(VerifyFixtures.codes(report.installWarnings) == ["INSTALL_NATIVE_LIBRARY_NOT_16K_ALIGNED"])
        }
    }
}

/// Units that need no APK.
@Suite("Verify: parsing units", .removesTemporaryDirectories)
struct ParsingUnitTests {
    @Test("JAR manifest sections keep their exact bytes; continuation lines join")
    func manifestSections() {
        let text = "Manifest-Version: 1.0\r\nCreated-By: x\r\n\r\nName: assets/a very long na\r\n me.txt\r\nSHA-256-Digest: abc=\r\n\r\nName: b\nSHA1-Digest: d\n\n"
        let manifest = JARManifest(bytes: Array(text.utf8))
        #expect(manifest.mainSection?.value(of: "manifest-version") == "1.0")
        #expect(manifest.individualSections.map(\.name) == ["assets/a very long name.txt", "b"])
        let first = manifest.individualSections[0]
        #expect(String(decoding: manifest.bytes(of: first), as: UTF8.self) == "Name: assets/a very long na\r\n me.txt\r\nSHA-256-Digest: abc=\r\n\r\n")
        #expect(String(decoding: manifest.bytes(of: manifest.mainSection!), as: UTF8.self) == "Manifest-Version: 1.0\r\nCreated-By: x\r\n\r\n")
    }

    @Test("the BER, PKCS #7, manifest and lineage parsers reject hostile bytes without trapping")
    func hostileParsing() throws {
        // Deep indefinite-length nesting, lengths past the end, oversized length fields.
        let deep: [UInt8] = (0..<2000).flatMap { _ -> [UInt8] in [0x30, 0x80] }
        #expect(throws: (any Error).self) { try PKCS7SignedData(berEncoded: deep) }
        #expect(throws: (any Error).self) { try PKCS7SignedData(berEncoded: [0x30, 0x84, 0xff, 0xff, 0xff, 0xff]) }
        #expect(throws: (any Error).self) { try PKCS7SignedData(berEncoded: [0x30, 0x89, 1, 2, 3, 4, 5, 6, 7, 8, 9]) }
        #expect(throws: (any Error).self) { try PKCS7SignedData(berEncoded: []) }
        for seed in UInt64(0)..<300 {
            let bytes = FixtureAPK.pseudoRandomBytes(count: Int(seed % 200) + 1, seed: seed)
            _ = try? PKCS7SignedData(berEncoded: [0x30, 0x80] + bytes)
            _ = try? PKCS7SignedData(berEncoded: bytes)
            _ = try? SigningCertificateLineage(attributeValue: [1, 0, 0, 0] + bytes)
            let lines: [UInt8] = bytes.map { byte -> UInt8 in byte % 4 == 0 ? 0x0a : (byte % 7 == 0 ? 0x0d : (byte % 5 == 0 ? 0x20 : byte)) }
            _ = JARManifest(bytes: lines)
            _ = try? VerificationCertificate(derEncoded: [0x30, 0x82] + bytes)
        }
    }

    @Test("Base64 as Java decodes it")
    func base64() {
        #expect(Base64.decode("aGVsbG8=") == Array("hello".utf8))
        #expect(Base64.decode("aGVsbG8") == Array("hello".utf8))
        #expect(Base64.decode("a GVs") == nil)
        #expect(Base64.encode(Array("hello".utf8)) == "aGVsbG8=")
    }

    @Test("API levels not covered by a JAR signature algorithm")
    func levelsNotIn() {
        #expect(JARSignatureAlgorithms.levels(14...30, notIn: JARSignatureAlgorithms.supportedLevels(digestOID: JARSignatureAlgorithms.digestSHA256, signatureOID: JARSignatureAlgorithms.rsa)) == [14...17])
        #expect(JARSignatureAlgorithms.levels(18...30, notIn: JARSignatureAlgorithms.supportedLevels(digestOID: JARSignatureAlgorithms.digestSHA256, signatureOID: JARSignatureAlgorithms.rsa)).isEmpty)
        #expect(JARSignatureAlgorithms.levels(5...30, notIn: []) == [5...30])
    }
}

/// The CLI, through the built binary.
@Suite("apkpatch verify CLI", .removesTemporaryDirectories)
struct VerifyCommandTests {
    @Test("exit 0 and apksigner's -v --print-certs lines for a good APK; exit 1 and DOES NOT VERIFY for an unsigned one; --json")
    func cli() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-cli")
        let apk = try VerifyFixtures.signedAPK(in: directory)
        let good = try TestSupport.apkpatch(["verify", "-v", "--print-certs", apk])
        #expect(good.status == 0, "\(good)")
        let oracle = try TestSupport.run("apksigner", ["verify", "-v", "--print-certs", apk])
        // Every line apksigner prints for a v1+v2+v3 APK, we print the same.
        for line in oracle.stdout.split(separator: "\n") { #expect(good.stdout.contains(line), "missing: \(line)") }

        let unsigned = try VerifyFixtures.unsignedAPK(in: directory, name: "plain.apk")
        let bad = try TestSupport.apkpatch(["verify", unsigned])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("DOES NOT VERIFY"))
        #expect(bad.stderr.contains("ERROR: Missing META-INF/MANIFEST.MF"))

        let json = try TestSupport.apkpatch(["verify", "--json", apk])
        #expect(json.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["verified"] as? Bool == true)
        #expect((object["verifiedSchemes"] as? [String]) == ["v1", "v2", "v3"])

        let range = try TestSupport.apkpatch(["verify", "--min-sdk-version", "30", "--max-sdk-version", "29", apk])
        #expect(range.status != 0)
        #expect(range.stderr.contains("--min-sdk-version"))
    }

    @Test("-Werr fails on warnings as apksigner does; --in names the APK")
    func warningsAsErrors() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-cli-werr")
        let apk = try VerifyFixtures.signedAPK(in: directory, schemes: SchemeSet(v1: true, v2: false, v3: false)) {
            $0.rawFiles["META-INF/extra.txt"] = Array("unprotected\n".utf8)
            $0.targetSdk = 29
        }
        let plain = try TestSupport.apkpatch(["verify", "--in", apk])
        #expect(plain.status == 0, "\(plain)")
        #expect(plain.stdout.contains("WARNING: META-INF/extra.txt not protected by signature"))
        let strict = try TestSupport.apkpatch(["verify", "-Werr", apk])
        #expect(strict.status == 1)
        #expect(strict.stderr.contains("WARNING: META-INF/extra.txt not protected by signature"))
        #expect(try TestSupport.run("apksigner", ["verify", "-Werr", apk]).status == 1)
        #expect(try TestSupport.apkpatch(["verify"]).status != 0)
    }

    @Test("--signature-only ignores install errors")
    func signatureOnly() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-cli-so")
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory) { $0.targetSdk = 30 }
        let apk = try VerifyFixtures.sign(unsigned, key: .rsa2048, schemes: .all, output: directory.appendingPathComponent("signed.apk").path)
        let strict = try TestSupport.apkpatch(["verify", apk])
        #expect(strict.status == 1)
        #expect(strict.stderr.contains("INSTALL_RESOURCES_ARSC_NOT_ALIGNED"))
        let lenient = try TestSupport.apkpatch(["verify", "--signature-only", apk])
        #expect(lenient.status == 0, "\(lenient)")
    }
}

/// Key rotation (v3 proof-of-rotation lineage) and signer consistency across schemes.
@Suite("Verify: signer consistency and rotation", .removesTemporaryDirectories)
struct SignerConsistencyTests {
    @Test("a rotated APK (apksigner rotate + --lineage) verifies with the new signer; v1/v2 keep the old one")
    func rotation() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-rotation")
        let lineage = directory.appendingPathComponent("lineage.bin").path
        let rotate = try TestSupport.run("apksigner", ["rotate", "--out", lineage,
                                                       "--old-signer", "--ks", try TestKey.rsa2048.keystore, "--ks-pass", "pass:\(TestKeys.password)",
                                                       "--new-signer", "--ks", try TestKey.ecP256.keystore, "--ks-pass", "pass:\(TestKeys.password)"])
        try #require(rotate.succeeded, "\(rotate)")
        let apk = try VerifyFixtures.signedAPK(in: directory, key: .rsa2048, schemes: .all,
                                               extra: ["--next-signer", "--ks", try TestKey.ecP256.keystore, "--ks-pass", "pass:\(TestKeys.password)", "--lineage", lineage])
        let oracle = try VerifyFixtures.apksignerVerify(apk)
        try #require(oracle.verifies, "\(oracle.output)")
        let report = try VerifyFixtures.verify(apk)
        let verified = report.isSignatureVerified
        #expect(verified, "\(report.signatureErrors)")
        #expect(report.signers.map(\.sha256) == oracle.certificateSHA256)
        #expect(report.signers.first?.keyAlgorithm == "EC")
        let v1Signer = report.schemes.first { $0.scheme == .v1 }?.signers.first?.certificate
        #expect(v1Signer?.keyAlgorithm == "RSA")
    }

    @Test("a v3 signer that differs from the v2 signer without a lineage (V3_SIG_PAST_SIGNERS_MISMATCH)")
    func pastSignersMismatch() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-past-signers")
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory)
        let aligned = try VerifyFixtures.zipalign(unsigned, output: directory.appendingPathComponent("aligned.apk").path)
        let schemes = SchemeSet(v1: false, v2: true, v3: true)
        let first = try VerifyFixtures.read(try VerifyFixtures.sign(aligned, key: .rsa2048, schemes: schemes, output: directory.appendingPathComponent("a.apk").path))
        let second = try VerifyFixtures.read(try VerifyFixtures.sign(aligned, key: .ecP256, schemes: schemes, output: directory.appendingPathComponent("b.apk").path))
        // Same entries, so the second APK's v3 block is valid for the first APK's contents.
        var block = try VerifyFixtures.signingBlock(of: first)
        let foreignV3 = try #require(try VerifyFixtures.signingBlock(of: second).value(for: SigningBlock.ID.v3))
        let index = try #require(block.pairs.firstIndex { $0.id == SigningBlock.ID.v3 })
        block.pairs[index].value = foreignV3
        block.pairs.removeAll { $0.id == SigningBlock.ID.verityPadding }
        let mixed = try VerifyFixtures.replacingSigningBlock(in: first, with: block.encoded())
        let path = directory.appendingPathComponent("mixed.apk").path
        try VerifyFixtures.write(mixed, to: path)
        #expect(!(try VerifyFixtures.apksignerVerify(path, minSdkVersion: 24).verifies))
        let report = try VerifyFixtures.verify(path, minSdkVersion: 24)
        #expect(VerifyFixtures.codes(report.signatureErrors) == ["V3_SIG_PAST_SIGNERS_MISMATCH"])
        // From P on only v3 is consulted, and it is valid on its own.
        #expect(try VerifyFixtures.verify(path, minSdkVersion: 28).isSignatureVerified)
        #expect(try VerifyFixtures.apksignerVerify(path, minSdkVersion: 28).verifies)
    }

    @Test("two signers (v1 and v2, --next-signer without a lineage): both listed, in apksigner's order")
    func twoSigners() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-two-signers")
        let apk = try VerifyFixtures.signedAPK(in: directory, key: .rsa2048, schemes: SchemeSet(v1: true, v2: true, v3: false),
                                               extra: ["--next-signer", "--ks", try TestKey.ecP256.keystore, "--ks-pass", "pass:\(TestKeys.password)", "--v1-signer-name", "SECOND"]) {
            $0.targetSdk = 29
        }
        let oracle = try VerifyFixtures.apksignerVerify(apk)
        try #require(oracle.verifies, "\(oracle.output)")
        #expect(oracle.certificateSHA256.count == 2)
        let report = try VerifyFixtures.verify(apk)
        let verified = report.isSignatureVerified
        #expect(verified, "\(report.signatureErrors)")
        #expect(report.signers.map(\.sha256) == oracle.certificateSHA256)
        #expect(report.schemes.first { $0.scheme == .v1 }?.signers.count == 2)
    }

    @Test("a DSA key (v1+v2+v3)")
    func dsa() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-dsa")
        let keystore = directory.appendingPathComponent("dsa.p12").path
        try TestSupport.makeKeyStore(at: keystore, password: TestKeys.password, alias: "signer", dname: "CN=DSA", keyAlgorithm: "DSA")
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory)
        let output = directory.appendingPathComponent("signed.apk").path
        let signed = try TestSupport.run("apksigner", ["sign", "--ks", keystore, "--ks-pass", "pass:\(TestKeys.password)", "--out", output, unsigned])
        try #require(signed.succeeded, "\(signed)")
        let oracle = try VerifyFixtures.apksignerVerify(output)
        let report = try VerifyFixtures.verify(output)
        let verified = report.isSignatureVerified
        #expect(verified == oracle.verifies, "\(report.signatureErrors) vs \(oracle.output)")
        #expect(report.signers.map(\.sha256) == oracle.certificateSHA256)
        #expect(Set(report.verifiedSchemes.map(\.rawValue)) == oracle.schemes)
    }
}

/// JAR signatures made by other tools: jarsigner, and OpenSSL CMS with signed attributes.
@Suite("Verify: JAR signatures from other signers", .removesTemporaryDirectories)
struct ForeignJARSignatureTests {
    /// A v1-only fixture (targetSdk 29 so v1 alone may satisfy the scheme rule), aligned, unsigned.
    func alignedFixture(_ label: String) throws -> (directory: URL, path: String) {
        let directory = try TestSupport.makeTemporaryDirectory(label)
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory) { $0.targetSdk = 29 }
        return (directory, try VerifyFixtures.zipalign(unsigned, output: directory.appendingPathComponent("aligned.apk").path))
    }

    @Test("jarsigner's SHA-256 signature verifies from API 18, not on 14-17 (JAR_SIG_UNSUPPORTED_SIG_ALG), as apksigner says")
    func jarsigner() throws {
        let fixture = try alignedFixture("verify-jarsigner")
        let signed = try TestSupport.run("jarsigner", ["-keystore", try TestKey.rsa2048.keystore, "-storepass", TestKeys.password, fixture.path, "signer"])
        try #require(signed.succeeded, "\(signed)")
        #expect(try VerifyFixtures.apksignerVerify(fixture.path).verifies)
        let report = try VerifyFixtures.verify(fixture.path)
        let verified = report.isSignatureVerified
        #expect(verified, "\(report.signatureErrors)")
        #expect(!(try VerifyFixtures.apksignerVerify(fixture.path, minSdkVersion: 14).verifies))
        let old = try VerifyFixtures.verify(fixture.path, minSdkVersion: 14)
        #expect(VerifyFixtures.codes(old.signatureErrors) == ["JAR_SIG_UNSUPPORTED_SIG_ALG"])
    }

    /// Replaces META-INF/SIGNER.RSA of a v1-only APK with `openssl cms -sign` over `signedFile` (with the
    /// default signed attributes: content type, signing time, message digest).
    func cmsSigned(_ label: String, signing signedFile: String) throws -> String {
        let fixture = try alignedFixture(label)
        let apk = try VerifyFixtures.sign(fixture.path, key: .rsa2048, schemes: SchemeSet(v1: true, v2: false, v3: false),
                                          output: fixture.directory.appendingPathComponent("v1.apk").path)
        let work = fixture.directory.appendingPathComponent("cms")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let pem = work.appendingPathComponent("key.pem").path
        try #require(try TestSupport.run("openssl", ["pkcs12", "-in", try TestKey.rsa2048.keystore, "-passin", "pass:\(TestKeys.password)", "-nodes", "-out", pem]).succeeded)
        try #require(try TestSupport.run("unzip", ["-q", "-o", apk, "META-INF/*", "-d", work.path]).succeeded)
        let block = work.appendingPathComponent("META-INF/SIGNER.RSA").path
        let cms = try TestSupport.run("openssl", ["cms", "-sign", "-binary", "-in", work.appendingPathComponent(signedFile).path, "-signer", pem,
                                                  "-md", "sha256", "-nosmimecap", "-outform", "DER", "-out", block])
        try #require(cms.succeeded, "\(cms)")
        try #require(try TestSupport.run("zip", ["-q", apk, "META-INF/SIGNER.RSA"], currentDirectory: work.path).succeeded)
        return apk
    }

    @Test("a SignerInfo with signed attributes verifies from API 19; below, Android's broken handling is refused (JAR_SIG_VERIFY_EXCEPTION)")
    func signedAttributes() throws {
        let apk = try cmsSigned("verify-cms", signing: "META-INF/SIGNER.SF")
        #expect(try VerifyFixtures.apksignerVerify(apk).verifies)
        let report = try VerifyFixtures.verify(apk)
        let verified = report.isSignatureVerified
        #expect(verified, "\(report.signatureErrors)")
        #expect(!(try VerifyFixtures.apksignerVerify(apk, minSdkVersion: 18).verifies))
        #expect(VerifyFixtures.codes(try VerifyFixtures.verify(apk, minSdkVersion: 18).signatureErrors) == ["JAR_SIG_VERIFY_EXCEPTION"])
    }

    @Test("signed attributes whose message digest is not the .SF's (JAR_SIG_DID_NOT_VERIFY)")
    func signedAttributesWrongDigest() throws {
        let apk = try cmsSigned("verify-cms-bad", signing: "META-INF/MANIFEST.MF")
        #expect(!(try VerifyFixtures.apksignerVerify(apk).verifies))
        #expect(VerifyFixtures.codes(try VerifyFixtures.verify(apk).signatureErrors) == ["JAR_SIG_DID_NOT_VERIFY"])
    }
}

/// JAR manifest and signature-file edits, re-signed with OpenSSL so that only the edit can fail the APK:
/// each case is checked against apksigner's verdict and must report apksig's issue.
@Suite("Verify: JAR manifest and .SF rules", .removesTemporaryDirectories)
struct JARFileRuleTests {
    enum Edit: String, CaseIterable, Sendable, CustomStringConvertible {
        case none, noSignatureVersion, noManifestDigest, badSectionDigest, badMainAttributesDigest, unknownSchemeID,
             strippedSchemeID, sfSectionMissing, sfSectionDuplicated, manifestNamesMissingEntry, manifestSectionDuplicated,
             manifestSectionUnnamed, manifestSectionMissing, invalidBase64, garbageSignatureBlock
        var description: String { rawValue }

        /// (errors, a warning that must be present, apksigner accepts)
        var expected: (errors: Set<String>, warning: String?, verifies: Bool) {
            switch self {
            case .none: return ([], nil, true)
            case .noSignatureVersion: return (["JAR_SIG_NO_SIGNATURES"], nil, false)
            case .noManifestDigest: return ([], "JAR_SIG_NO_MANIFEST_DIGEST_IN_SIG_FILE", true)
            case .badSectionDigest: return (["JAR_SIG_MANIFEST_SECTION_DIGEST_DID_NOT_VERIFY"], nil, false)
            case .badMainAttributesDigest: return (["JAR_SIG_MANIFEST_MAIN_SECTION_DIGEST_DID_NOT_VERIFY"], nil, false)
            case .unknownSchemeID: return ([], "JAR_SIG_UNKNOWN_APK_SIG_SCHEME_ID", true)
            case .strippedSchemeID: return (["JAR_SIG_MISSING_APK_SIG_REFERENCED"], nil, false)
            case .sfSectionMissing: return (["JAR_SIG_ZIP_ENTRY_NOT_SIGNED"], nil, false)
            case .sfSectionDuplicated: return (["JAR_SIG_NO_SIGNATURES"], nil, false)
            case .manifestNamesMissingEntry: return (["JAR_SIG_MISSING_ZIP_ENTRY_REFERENCED_IN_MANIFEST"], nil, false)
            case .manifestSectionDuplicated: return (["JAR_SIG_DUPLICATE_MANIFEST_SECTION"], nil, false)
            case .manifestSectionUnnamed: return (["JAR_SIG_UNNNAMED_MANIFEST_SECTION"], nil, false)
            case .manifestSectionMissing: return (["JAR_SIG_NO_ZIP_ENTRY_DIGEST_IN_MANIFEST"], nil, false)
            case .invalidBase64: return (["MALFORMED_APK"], nil, false)
            case .garbageSignatureBlock: return (["JAR_SIG_PARSE_EXCEPTION"], nil, false)
            }
        }

        static func section(_ name: String, in text: String) -> String? {
            guard let start = text.range(of: "Name: \(name)\r\n") else { return nil }
            guard let end = text.range(of: "\r\n\r\n", range: start.upperBound..<text.endIndex) else { return nil }
            return String(text[start.lowerBound..<end.upperBound])
        }

        func apply(manifest: inout String, signatureFile sf: inout String) {
            func dropManifestDigest() {
                sf = sf.split(separator: "\r\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("SHA-256-Digest-Manifest:") }.joined(separator: "\r\n")
            }
            switch self {
            case .none: break
            case .noSignatureVersion: sf = sf.replacingOccurrences(of: "Signature-Version: 1.0\r\n", with: "")
            case .noManifestDigest: dropManifestDigest()
            case .badSectionDigest:
                dropManifestDigest()
                let section = Self.section("assets/a.txt", in: sf)!
                sf = sf.replacingOccurrences(of: section, with: "Name: assets/a.txt\r\nSHA-256-Digest: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n")
            case .badMainAttributesDigest:
                sf = sf.replacingOccurrences(of: "Signature-Version: 1.0\r\n", with: "Signature-Version: 1.0\r\nSHA-256-Digest-Manifest-Main-Attributes: AAAA\r\n")
            case .unknownSchemeID:
                sf = sf.replacingOccurrences(of: "Signature-Version: 1.0\r\n", with: "Signature-Version: 1.0\r\nX-Android-APK-Signed: 99\r\n")
            case .strippedSchemeID:
                sf = sf.replacingOccurrences(of: "Signature-Version: 1.0\r\n", with: "Signature-Version: 1.0\r\nX-Android-APK-Signed: 2\r\n")
            case .sfSectionMissing:
                sf = sf.replacingOccurrences(of: Self.section("assets/a.txt", in: sf)!, with: "")
            case .sfSectionDuplicated:
                let section = Self.section("assets/a.txt", in: sf)!
                sf = sf.replacingOccurrences(of: section, with: section + section)
            case .manifestNamesMissingEntry:
                manifest += "Name: assets/none.txt\r\nSHA-256-Digest: AAAA\r\n\r\n"
            case .manifestSectionDuplicated:
                manifest += Self.section("assets/a.txt", in: manifest)!
            case .manifestSectionUnnamed:
                manifest += "Foo: bar\r\n\r\n"
            case .manifestSectionMissing:
                manifest = manifest.replacingOccurrences(of: Self.section("assets/a.txt", in: manifest)!, with: "")
                dropManifestDigest()
                sf = sf.replacingOccurrences(of: Self.section("assets/a.txt", in: sf)!, with: "")
            case .garbageSignatureBlock: break
            case .invalidBase64:
                dropManifestDigest()
                sf = sf.replacingOccurrences(of: "Signature-Version: 1.0\r\n", with: "Signature-Version: 1.0\r\nSHA-256-Digest-Manifest: !!not base64!!\r\n")
            }
        }
    }

    @Test("edited MANIFEST.MF / .SF, re-signed", arguments: Edit.allCases)
    func edited(_ edit: Edit) throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-jar-\(edit.rawValue)")
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory) { $0.targetSdk = 29 }
        let aligned = try VerifyFixtures.zipalign(unsigned, output: directory.appendingPathComponent("aligned.apk").path)
        let apk = try VerifyFixtures.sign(aligned, key: .rsa2048, schemes: SchemeSet(v1: true, v2: false, v3: false),
                                          output: directory.appendingPathComponent("v1.apk").path)
        let work = directory.appendingPathComponent("w")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        try #require(try TestSupport.run("unzip", ["-q", "-o", apk, "META-INF/*", "-d", work.path]).succeeded)
        let manifestURL = work.appendingPathComponent("META-INF/MANIFEST.MF"), sfURL = work.appendingPathComponent("META-INF/SIGNER.SF")
        var manifest = try String(contentsOf: manifestURL, encoding: .utf8)
        var sf = try String(contentsOf: sfURL, encoding: .utf8)
        edit.apply(manifest: &manifest, signatureFile: &sf)
        try manifest.write(to: manifestURL, atomically: true, encoding: .utf8)
        try sf.write(to: sfURL, atomically: true, encoding: .utf8)
        let pem = work.appendingPathComponent("key.pem").path
        try #require(try TestSupport.run("openssl", ["pkcs12", "-in", try TestKey.rsa2048.keystore, "-passin", "pass:\(TestKeys.password)", "-nodes", "-out", pem]).succeeded)
        let cms = try TestSupport.run("openssl", ["cms", "-sign", "-binary", "-noattr", "-in", sfURL.path, "-signer", pem, "-md", "sha256",
                                                  "-outform", "DER", "-out", work.appendingPathComponent("META-INF/SIGNER.RSA").path])
        try #require(cms.succeeded, "\(cms)")
        if edit == .garbageSignatureBlock {
            try VerifyFixtures.write([0x30, 0x03, 0x06, 0x01, 0x00], to: work.appendingPathComponent("META-INF/SIGNER.RSA").path)
        }
        try #require(try TestSupport.run("zip", ["-q", apk, "META-INF/MANIFEST.MF", "META-INF/SIGNER.SF", "META-INF/SIGNER.RSA"], currentDirectory: work.path).succeeded)

        let expected = edit.expected
        let oracle = try VerifyFixtures.apksignerVerify(apk)
        #expect(oracle.verifies == expected.verifies, "apksigner: \(oracle.output)")
        let report = try VerifyFixtures.verify(apk)
        let verified = report.isSignatureVerified
        #expect(verified == expected.verifies, "\(report.signatureErrors)")
        #expect(VerifyFixtures.codes(report.signatureErrors) == expected.errors, "\(report.signatureErrors)")
        if let warning = expected.warning {
            #expect(VerifyFixtures.codes(report.signatureWarnings).contains(warning), "\(report.signatureWarnings)")
        }
    }
}

/// Hostile inputs: no trap, and no byte outside the APK Signing Block can change without rejection.
@Suite("Verify: hostile inputs", .removesTemporaryDirectories)
struct HostileInputTests {
    /// Seeded positions (SplitMix64), printed on failure through the position in the message.
    static func positions(count: Int, below limit: Int, seed: UInt64) -> [Int] {
        let bytes = FixtureAPK.pseudoRandomBytes(count: count * 8, seed: seed)
        return (0..<count).map { i in
            let value = bytes[(i * 8)..<(i * 8 + 8)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return Int(value % UInt64(limit))
        }
    }

    @Test("every single-byte change outside the signing block is rejected (seed 42, 400 positions); changes inside never trap")
    func byteFlips() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-fuzz")
        let apk = try VerifyFixtures.signedAPK(in: directory)
        let original = try VerifyFixtures.read(apk)
        let archive = try VerifyFixtures.zip(original)
        let block = try VerifyFixtures.signingBlock(of: original)
        let blockRange = Int(block.offset)..<Int(archive.centralDirectoryOffset)
        for position in Self.positions(count: 400, below: original.count, seed: 42) {
            var bytes = original
            bytes[position] ^= 0x5a
            let report = try Verifier(options: VerificationOptions(checksInstallability: false))
                .verify(source: ByteArrayDataSource(bytes), label: "flip@\(position)")
            if !blockRange.contains(position) {
                let verified = report.isSignatureVerified
                #expect(!verified, "a change at offset \(position) (outside the signing block \(blockRange)) was accepted")
            }
        }
    }

    @Test("truncated APKs are rejected without trapping (seed 7, 100 lengths)")
    func truncations() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-trunc")
        let original = try VerifyFixtures.read(try VerifyFixtures.signedAPK(in: directory))
        for length in Self.positions(count: 100, below: original.count, seed: 7) + [0, 1, 21, 22, 100] {
            let report = try Verifier(options: VerificationOptions(checksInstallability: false))
                .verify(source: ByteArrayDataSource(Array(original.prefix(length))), label: "truncated@\(length)")
            let verified = report.isSignatureVerified
            #expect(!verified, "truncated to \(length) bytes and accepted")
            #expect(!report.signatureErrors.isEmpty)
        }
    }

    @Test("random bytes in the v2/v3 and v1 signature structures never trap", arguments: [UInt64(1), 2, 3])
    func garbageSignatures(seed: UInt64) throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-garbage")
        let original = try VerifyFixtures.read(try VerifyFixtures.signedAPK(in: directory))
        var block = try VerifyFixtures.signingBlock(of: original)
        block.pairs.removeAll { $0.id == SigningBlock.ID.verityPadding }
        for index in block.pairs.indices {
            var value = block.pairs[index].value
            for position in Self.positions(count: 20, below: value.count, seed: seed &+ UInt64(index)) { value[position] ^= 0xff }
            block.pairs[index].value = value
        }
        let edited = try VerifyFixtures.replacingSigningBlock(in: original, with: block.encoded())
        for range in [(nil as Int?, Int(Int32.max)), (24, 27), (28, Int(Int32.max))] {
            let report = try Verifier(options: VerificationOptions(minSdkVersion: range.0, maxSdkVersion: range.1, checksInstallability: false))
                .verify(source: ByteArrayDataSource(edited), label: "garbage")
            let verified = report.isSignatureVerified
            #expect(!verified)
        }
    }
}

/// APK Signature Scheme v2 signer blocks built by hand and signed with the OpenSSL CLI, so each malformation
/// sits behind a valid signature (apksig checks certificates, digests and attributes only after the
/// signature over signed-data verified). Every case is checked against apksigner's verdict.
@Suite("Verify: hand-built v2 signer blocks", .removesTemporaryDirectories)
struct CraftedV2SignerTests {
    enum Case: String, CaseIterable, Sendable, CustomStringConvertible {
        case valid, rsaPSS, rsaPSSWrongSalt, rsaPSSWithPKCS1Signature, unknownAttribute, noCertificates, publicKeyMismatch, algorithmMismatch, malformedCertificate,
             noSignatures, onlyUnknownAlgorithm, malformedPublicKey, malformedAttribute, twoSigners
        var description: String { rawValue }
        var expected: (errors: Set<String>, warning: String?, verifies: Bool) {
            switch self {
            case .valid, .twoSigners: return ([], nil, true)
            case .rsaPSS: return ([], nil, true)
            case .rsaPSSWrongSalt, .rsaPSSWithPKCS1Signature: return (["V2_SIG_DID_NOT_VERIFY"], nil, false)
            case .unknownAttribute: return ([], "V2_SIG_UNKNOWN_ADDITIONAL_ATTRIBUTE", true)
            case .noCertificates: return (["V2_SIG_NO_CERTIFICATES"], nil, false)
            case .publicKeyMismatch: return (["V2_SIG_PUBLIC_KEY_MISMATCH_BETWEEN_CERTIFICATE_AND_SIGNATURES_RECORD"], nil, false)
            case .algorithmMismatch: return (["V2_SIG_SIG_ALG_MISMATCH_BETWEEN_SIGNATURES_AND_DIGESTS_RECORDS"], nil, false)
            case .malformedCertificate: return (["V2_SIG_MALFORMED_CERTIFICATE"], nil, false)
            case .noSignatures: return (["V2_SIG_NO_SIGNATURES"], nil, false)
            case .onlyUnknownAlgorithm: return (["V2_SIG_NO_SUPPORTED_SIGNATURES"], "V2_SIG_UNKNOWN_SIG_ALGORITHM", false)
            case .malformedPublicKey: return (["V2_SIG_MALFORMED_PUBLIC_KEY"], nil, false)
            case .malformedAttribute: return (["V2_SIG_MALFORMED_ADDITIONAL_ATTRIBUTE"], nil, false)
            }
        }
    }

    static func lp(_ bytes: [UInt8]) -> [UInt8] { LengthPrefixed.encode(bytes) }
    static func u32(_ value: UInt32) -> [UInt8] { value.littleEndianBytes }

    @Test("hand-built v2 signer", arguments: Case.allCases)
    func crafted(_ testCase: Case) throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-v2-\(testCase.rawValue)")
        let apk = try VerifyFixtures.signedAPK(in: directory, schemes: SchemeSet(v1: false, v2: true, v3: false))
        let original = try VerifyFixtures.read(apk)
        let archive = try VerifyFixtures.zip(original)
        let blockStart = Int(try VerifyFixtures.signingBlock(of: original).offset)
        let source = ByteArrayDataSource(original)
        let digests = try ContentDigester.digests(entries: try source.slice(0..<Int64(blockStart)),
                                                  centralDirectory: try source.slice(archive.centralDirectoryOffset..<archive.endOfCentralDirectory.offset),
                                                  endOfCentralDirectory: Array(original[Int(archive.endOfCentralDirectory.offset)...]),
                                                  algorithms: [.chunkedSHA256])
        let contentDigest = try #require(digests[.chunkedSHA256])

        // Key material from the test keystores, through the OpenSSL CLI.
        func pem(_ key: TestKey) throws -> String {
            let path = directory.appendingPathComponent("\(key.rawValue).pem").path
            try #require(try TestSupport.run("openssl", ["pkcs12", "-in", try key.keystore, "-passin", "pass:\(TestKeys.password)", "-nodes", "-out", path]).succeeded)
            return path
        }
        func der(_ arguments: [String], _ name: String) throws -> [UInt8] {
            let path = directory.appendingPathComponent(name).path
            try #require(try TestSupport.run("openssl", arguments + ["-outform", "DER", "-out", path]).succeeded)
            return try VerifyFixtures.read(path)
        }
        let rsaPEM = try pem(.rsa2048), ecPEM = try pem(.ecP256)
        let rsaCertificate = try der(["x509", "-in", rsaPEM], "rsa.cer")
        let ecCertificate = try der(["x509", "-in", ecPEM], "ec.cer")
        let rsaPublicKey = try der(["pkey", "-in", rsaPEM, "-pubout"], "rsa.spki")
        func sign(_ data: [UInt8], pss: Bool = false, saltLength: Int = 32) throws -> [UInt8] {
            let input = directory.appendingPathComponent("signed-data-\(UUID().uuidString)").path
            let output = input + ".sig"
            try VerifyFixtures.write(data, to: input)
            var arguments = ["dgst", "-sha256", "-sign", rsaPEM, "-out", output]
            if pss { arguments += ["-sigopt", "rsa_padding_mode:pss", "-sigopt", "rsa_pss_saltlen:\(saltLength)", "-sigopt", "rsa_mgf1_md:sha256"] }
            let result = try TestSupport.run("openssl", arguments + [input])
            try #require(result.succeeded, "\(result)")
            return try VerifyFixtures.read(output)
        }

        // signer = LP(signed data) LP(signatures) LP(public key); signed data = LP(digests) LP(certificates) LP(attributes)
        func signer(algorithm: UInt32 = 0x0103, digestAlgorithm: UInt32? = nil, certificates: [[UInt8]]? = nil,
                    attributes: [[UInt8]] = [], publicKey: [UInt8]? = nil, signatureAlgorithms: [UInt32]? = nil, pss: Bool = false,
                    saltLength: Int = 32) throws -> [UInt8] {
            let digestsRecord = Self.lp(Self.u32(digestAlgorithm ?? algorithm) + Self.lp(contentDigest))
            let certificateRecords = (certificates ?? [rsaCertificate]).map(Self.lp).flatMap { $0 }
            let signedData = Self.lp(digestsRecord) + Self.lp(certificateRecords) + Self.lp(attributes.map(Self.lp).flatMap { $0 })
            let signature = try sign(signedData, pss: pss, saltLength: saltLength)
            let signatures = (signatureAlgorithms ?? [algorithm]).map { Self.lp(Self.u32($0) + Self.lp(signature)) }.flatMap { $0 }
            return Self.lp(signedData) + Self.lp(signatures) + Self.lp(publicKey ?? rsaPublicKey)
        }

        var signers: [[UInt8]]
        switch testCase {
        case .valid: signers = [try signer()]
        case .rsaPSS: signers = [try signer(algorithm: 0x0101, pss: true)]
        case .rsaPSSWrongSalt: signers = [try signer(algorithm: 0x0101, pss: true, saltLength: 20)]
        case .rsaPSSWithPKCS1Signature: signers = [try signer(algorithm: 0x0101)]
        case .unknownAttribute: signers = [try signer(attributes: [Self.u32(0x1234_5678) + [1, 2, 3]])]
        case .noCertificates: signers = [try signer(certificates: [])]
        case .publicKeyMismatch: signers = [try signer(certificates: [ecCertificate])]
        case .algorithmMismatch: signers = [try signer(digestAlgorithm: 0x0104)]
        case .malformedCertificate: signers = [try signer(certificates: [[0x30, 0x03, 0x02, 0x01, 0x01]])]
        case .noSignatures: signers = [try signer(signatureAlgorithms: [])]
        case .onlyUnknownAlgorithm: signers = [try signer(algorithm: 0x0999)]
        case .malformedPublicKey: signers = [try signer(publicKey: [0x30, 0x00])]
        case .malformedAttribute: signers = [try signer(attributes: [[1, 2]])]
        case .twoSigners: signers = [try signer(), try signer()]
        }
        let value = Self.lp(signers.map(Self.lp).flatMap { $0 })
        let block = SigningBlock(pairs: [SigningBlock.Pair(id: SigningBlock.ID.v2, value: value)])
        let path = directory.appendingPathComponent("crafted.apk").path
        try VerifyFixtures.write(try VerifyFixtures.replacingSigningBlock(in: original, with: block.encoded()), to: path)

        let expected = testCase.expected
        let oracle = try VerifyFixtures.apksignerVerify(path, minSdkVersion: 24)
        if testCase == .rsaPSS || testCase == .rsaPSSWrongSalt || testCase == .rsaPSSWithPKCS1Signature {
            // The JDK under apksigner has no "SHA256withRSA/PSS" (Android's Conscrypt does): the oracle cannot
            // judge PSS, so the PSS cases rest on OpenSSL, with the wrong-salt and PKCS#1 cases as controls.
            #expect(!oracle.verifies && oracle.output.contains("SHA256withRSA/PSS"), "apksigner: \(oracle.output)")
        } else {
            #expect(oracle.verifies == expected.verifies, "apksigner: \(oracle.output)")
        }
        let report = try VerifyFixtures.verify(path, minSdkVersion: 24)
        let verified = report.isSignatureVerified
        #expect(verified == expected.verifies, "\(report.signatureErrors)")
        #expect(VerifyFixtures.codes(report.signatureErrors) == expected.errors, "\(report.signatureErrors)")
        if let warning = expected.warning {
            #expect(VerifyFixtures.codes(report.signatureWarnings).contains(warning), "\(report.signatureWarnings)")
        }
    }
}

/// APK Signature Scheme v3 signer blocks built by hand (SDK ranges), signed with the OpenSSL CLI and checked
/// against apksigner, verifying for API 28+.
@Suite("Verify: hand-built v3 signer blocks", .removesTemporaryDirectories)
struct CraftedV3SignerTests {
    enum Case: String, CaseIterable, Sendable, CustomStringConvertible {
        case valid, invalidSdkVersions, minSdkMismatch, maxSdkMismatch, missingSdkVersions, gapBetweenSigners, continuousSigners
        var description: String { rawValue }
        var expected: (errors: Set<String>, verifies: Bool) {
            switch self {
            case .valid, .continuousSigners: return ([], true)
            case .invalidSdkVersions: return (["V3_SIG_INVALID_SDK_VERSIONS"], false)
            case .minSdkMismatch: return (["V3_MIN_SDK_VERSION_MISMATCH_BETWEEN_SIGNER_AND_SIGNED_DATA_RECORD"], false)
            case .maxSdkMismatch: return (["V3_MAX_SDK_VERSION_MISMATCH_BETWEEN_SIGNER_AND_SIGNED_DATA_RECORD"], false)
            case .missingSdkVersions: return (["V3_MISSING_SDK_VERSIONS"], false)
            case .gapBetweenSigners: return (["V3_INCONSISTENT_SDK_VERSIONS", "V3_MISSING_SDK_VERSIONS"], false)
            }
        }
    }

    static let maxLevel = UInt32(Int32.max)

    @Test("hand-built v3 signer", arguments: Case.allCases)
    func crafted(_ testCase: Case) throws {
        let lp = CraftedV2SignerTests.lp, u32 = CraftedV2SignerTests.u32
        let directory = try TestSupport.makeTemporaryDirectory("verify-v3-\(testCase.rawValue)")
        let apk = try VerifyFixtures.signedAPK(in: directory, schemes: SchemeSet(v1: false, v2: false, v3: true))
        let original = try VerifyFixtures.read(apk)
        let archive = try VerifyFixtures.zip(original)
        let blockStart = Int64(try VerifyFixtures.signingBlock(of: original).offset)
        let source = ByteArrayDataSource(original)
        let contentDigest = try #require(try ContentDigester.digests(
            entries: try source.slice(0..<blockStart),
            centralDirectory: try source.slice(archive.centralDirectoryOffset..<archive.endOfCentralDirectory.offset),
            endOfCentralDirectory: Array(original[Int(archive.endOfCentralDirectory.offset)...]), algorithms: [.chunkedSHA256])[.chunkedSHA256])
        let pem = directory.appendingPathComponent("rsa.pem").path
        try #require(try TestSupport.run("openssl", ["pkcs12", "-in", try TestKey.rsa2048.keystore, "-passin", "pass:\(TestKeys.password)", "-nodes", "-out", pem]).succeeded)
        func der(_ arguments: [String], _ name: String) throws -> [UInt8] {
            let path = directory.appendingPathComponent(name).path
            try #require(try TestSupport.run("openssl", arguments + ["-outform", "DER", "-out", path]).succeeded)
            return try VerifyFixtures.read(path)
        }
        let certificate = try der(["x509", "-in", pem], "rsa.cer")
        let publicKey = try der(["pkey", "-in", pem, "-pubout"], "rsa.spki")
        func signer(min: UInt32, max: UInt32, signedMin: UInt32? = nil, signedMax: UInt32? = nil) throws -> [UInt8] {
            let digests = lp(u32(0x0103) + lp(contentDigest))
            let signedData = lp(digests) + lp(lp(certificate)) + u32(signedMin ?? min) + u32(signedMax ?? max) + lp([])
            let input = directory.appendingPathComponent("sd-\(UUID().uuidString)").path
            try VerifyFixtures.write(signedData, to: input)
            try #require(try TestSupport.run("openssl", ["dgst", "-sha256", "-sign", pem, "-out", input + ".sig", input]).succeeded)
            let signature = try VerifyFixtures.read(input + ".sig")
            return lp(signedData) + u32(min) + u32(max) + lp(lp(u32(0x0103) + lp(signature))) + lp(publicKey)
        }
        let signers: [[UInt8]]
        switch testCase {
        case .valid: signers = [try signer(min: 24, max: Self.maxLevel)]
        case .invalidSdkVersions: signers = [try signer(min: 30, max: 29)]
        case .minSdkMismatch: signers = [try signer(min: 24, max: Self.maxLevel, signedMin: 25)]
        case .maxSdkMismatch: signers = [try signer(min: 24, max: Self.maxLevel, signedMax: 40)]
        case .missingSdkVersions: signers = [try signer(min: 29, max: Self.maxLevel)]
        case .gapBetweenSigners: signers = [try signer(min: 24, max: 30), try signer(min: 32, max: Self.maxLevel)]
        case .continuousSigners: signers = [try signer(min: 24, max: 30), try signer(min: 31, max: Self.maxLevel)]
        }
        let block = SigningBlock(pairs: [SigningBlock.Pair(id: SigningBlock.ID.v3, value: lp(signers.map(lp).flatMap { $0 }))])
        let path = directory.appendingPathComponent("crafted.apk").path
        try VerifyFixtures.write(try VerifyFixtures.replacingSigningBlock(in: original, with: block.encoded()), to: path)

        let expected = testCase.expected
        let oracle = try VerifyFixtures.apksignerVerify(path, minSdkVersion: 28)
        #expect(oracle.verifies == expected.verifies, "apksigner: \(oracle.output)")
        let report = try VerifyFixtures.verify(path, minSdkVersion: 28)
        let verified = report.isSignatureVerified
        #expect(verified == expected.verifies, "\(report.signatureErrors)")
        #expect(VerifyFixtures.codes(report.signatureErrors) == expected.errors, "\(report.signatureErrors)")
    }
}

@Suite("Verify: more key types, signed by apksigner", .removesTemporaryDirectories)
struct MoreKeyTypesTests {
    /// apksig's ApkVerifierTest signs with RSA 1024-16384, EC P-256/P-384/P-521 and DSA in v2 and v3 blocks
    /// (v2-only-with-*.apk, v3-only-with-*.apk). The key types the matrix above does not have: EC P-521 (apksig
    /// picks SHA-512 for it), DSA 2048 (SHA-256 with DSA), RSA 3072 and RSA 1024 (still accepted by verifiers).
    @Test("apksigner's v1+v2+v3 output with these keys verifies, and the same with a flipped byte does not",
          arguments: [("EC", 521), ("DSA", 2048), ("RSA", 3072), ("RSA", 1024)])
    func keyType(algorithm: String, size: Int) throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-\(algorithm)-\(size)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("key.p12").path
        try TestSupport.makeKeyStore(at: store, password: "key-types", alias: "k", dname: "CN=\(algorithm) \(size), C=US",
                                     keyAlgorithm: algorithm, keySize: size)
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory) { $0.minSdk = 24 }
        let aligned = try VerifyFixtures.zipalign(unsigned, output: directory.appendingPathComponent("aligned.apk").path)
        let signed = directory.appendingPathComponent("signed.apk").path
        let sign = try TestSupport.run("apksigner", ["sign", "--ks", store, "--ks-pass", "env:APKPATCH_TEST_KS_PASS", "--out", signed, aligned],
                                       environment: ["APKPATCH_TEST_KS_PASS": "key-types"])
        try #require(sign.succeeded, "\(sign)")
        let oracle = try VerifyFixtures.apksignerVerify(signed)
        #expect(oracle.verifies, "\(oracle.output)")
        let report = try VerifyFixtures.verify(signed)
        #expect(report.isSignatureVerified, "\(report.signatureErrors)")
        #expect(Set(report.verifiedSchemes.map(\.rawValue)) == oracle.schemes, "apksigner: \(oracle.schemes)")
        #expect(report.signers.map(\.sha256) == oracle.certificateSHA256)
        #expect(report.signers.first?.keySize == size)

        // A byte of an entry's data flipped: both refuse.
        var bytes = try VerifyFixtures.read(signed)
        let archive = try APKArchive(path: signed)
        let entry = try #require(archive.entry(named: "assets/data.bin"))
        bytes[Int(entry.dataOffset) + 100] ^= 0x01
        let tampered = directory.appendingPathComponent("tampered.apk").path
        try VerifyFixtures.write(bytes, to: tampered)
        #expect(!(try VerifyFixtures.apksignerVerify(tampered).verifies))
        #expect(!(try VerifyFixtures.verify(tampered).isSignatureVerified))
    }
}
