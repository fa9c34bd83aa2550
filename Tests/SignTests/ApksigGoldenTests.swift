import APKCore
import Foundation
import OpenSSLWrapper
import Sign
import SignatureSchemes
import Testing
import TestSupport

/// apksig's golden signer tests rebuilt: `ApkSignerTest.testAlignmentPreserved_Golden` (v1, v2, v3, v1v2, v2v3,
/// v1v2v3 and the v3 / v2v3 / v1v2v3 cases with a 2-signer lineage at `setMinSdkVersionForRotation(P)`, each on
/// unaligned, legacy-aligned and aligned input), the `golden-rsa-*` cases of `generateGoldenFiles` (default, min
/// SDK 1/18/24, `testVerityEnabled_Golden`), `testAlignFileSize_Golden` and `testSignApk_Pinlist`. apksig's
/// golden APKs are binary resources no index here holds, so the same kinds of input are made at test time (an
/// aapt APK, and from its entries an unaligned one with an entry whose 0xd935 extra field claims a 4096-byte
/// alignment its data does not have, zipalign's zero-padded "legacy" form and apksig's 0xd935-padded form), the
/// RSA keys with openssl (PKCS#1 v1.5 signatures are deterministic) and the lineage with `apksigner rotate`.
/// Each case is signed with the golden's options by Debian's apksigner 31.0.2 and by `apkpatch sign`, and the
/// APKs and `.idsig` files must be the same bytes. Where apksig changed after 31.0.2, the test applies exactly
/// that change to 31.0.2's output and still compares every byte (see `asCurrentApksig`).
///
/// Option notes: the goldens use `setAlignmentPreserved(true)`, which is apksigner 31's only behaviour, so
/// apkpatch gets `--alignment-preserved true`; 31.0.2 pages `.so` files at 4096 bytes (the legacy-aligned golden
/// asks `setLibraryPageAlignmentBytes(4096)`, the others leave apksig's current default of 16384, which 31.0.2
/// cannot do), so both sides use 4096 here; rotation is at API 28 (apkpatch's default is 33, apksigner 31's only
/// level is 28); `--v4-signing-enabled false` where the golden turns v4 off (v1 only).
@Suite(.removesTemporaryDirectories) struct ApksigGoldenTests {
    struct Fixture: Sendable {
        let directory: URL
        let first: TestKeys.Files, second: TestKeys.Files
        let lineage: String
        /// "golden-unaligned-in", "golden-legacy-aligned-in", "golden-aligned-in", "original" → path.
        let inputs: [String: String]
    }

    static let shared: Fixture = TestSupport.sharedByTests {
        do { return try makeFixture() } catch { fatalError("golden fixture: \(error)") }
    }

    static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8 & 0xff)] }

    static func makeFixture() throws -> Fixture {
        let dir = try TestSupport.makeTemporaryDirectory("apksig-golden")
        let first = try TestKeys.make(.rsa2048, in: dir, name: "rsa-2048"), second = try TestKeys.make(.rsa2048, in: dir, name: "second")
        let lineage = dir.appendingPathComponent("rsa-2048-lineage-2-signers").path
        let rotate = try TestSupport.run("apksigner", ["rotate", "--out", lineage, "--old-signer", "--key", first.keyPK8, "--cert", first.certificatePEM,
                                                       "--new-signer", "--key", second.keyPK8, "--cert", second.certificatePEM])
        guard rotate.succeeded else { throw FixtureError(message: "apksigner rotate: \(rotate)") }

        var apk = FixtureAPK.cordovaLike()
        apk.storedExtensions = ["png"]
        let original = try apk.build(in: dir, name: "original.apk")
        typealias Raw = ApksigSignerConformanceTests
        var entries = try Raw.entries(of: original)
        entries.append(try Raw.stored("assets/odd.bin", FixtureAPK.pseudoRandomBytes(count: 101, seed: 7)))
        entries.append(try Raw.stored("lib/x86_64/libgolden.so", FixtureAPK.pseudoRandomBytes(count: 5000, seed: 8)))
        // golden-unaligned-in's temp4.txt: an extra field declaring 4 KiB alignment its data does not have.
        var temp4 = try Raw.stored("temp4.txt", Array("temp4 ".utf8))
        temp4.localExtra = le16(0xd935) + le16(2) + le16(4096)
        entries.append(temp4)
        let unaligned = try Raw.write(entries, to: "golden-unaligned-in.apk", in: dir)
        let legacy = dir.appendingPathComponent("golden-legacy-aligned-in.apk").path
        let zipalign = try TestSupport.run("zipalign", ["-f", "-p", "4", unaligned, legacy])
        guard zipalign.succeeded else { throw FixtureError(message: "zipalign: \(zipalign)") }
        // signapk/apksigner's form: each stored entry's data aligned by a 0xd935 extra field (apksig
        // `createExtraFieldToAlignData`: id, size, uint16 alignment, zeros), 4096 for .so files, else 4.
        var offset = 0
        for index in entries.indices {
            if entries[index].localMethod == 0 {
                let alignment = String(decoding: entries[index].name, as: UTF8.self).hasSuffix(".so") ? 4096 : 4
                let start = offset + 30 + entries[index].name.count
                let padding = (alignment - (start + 6) % alignment) % alignment
                entries[index].localExtra = le16(0xd935) + le16(2 + padding) + le16(alignment) + [UInt8](repeating: 0, count: padding)
            }
            offset += 30 + entries[index].name.count + entries[index].localExtra.count + entries[index].data.count
        }
        let aligned = try Raw.write(entries, to: "golden-aligned-in.apk", in: dir)
        return Fixture(directory: dir, first: first, second: second, lineage: lineage,
                       inputs: ["golden-unaligned-in": unaligned, "golden-legacy-aligned-in": legacy, "golden-aligned-in": aligned, "original": original])
    }

    /// The stored entries' data offsets and local extra fields of the APK at `path`.
    static func storedLayout(_ path: String) throws -> [(name: String, dataOffset: Int, extra: [UInt8])] {
        let facts = try APKFacts(path)
        let bytes = try TestSupport.readBytes(path)
        return facts.archive.entries.filter { $0.method == .stored }.map { entry in
            let header = Int(entry.localHeaderOffset)
            let nameLength = Int(bytes[header + 26]) | Int(bytes[header + 27]) << 8
            let extraLength = Int(bytes[header + 28]) | Int(bytes[header + 29]) << 8
            return (entry.name, Int(entry.dataRange.lowerBound), Array(bytes[(header + 30 + nameLength)..<(header + 30 + nameLength + extraLength)]))
        }
    }

    @Test("the inputs are what the goldens' inputs are: misaligned, zipalign's zero padding, apksig's 0xd935 padding")
    func inputsHaveTheirForms() throws {
        let unaligned = try Self.storedLayout(try #require(Self.shared.inputs["golden-unaligned-in"]))
        #expect(unaligned.contains { $0.dataOffset % 4 != 0 }, "some stored entry is misaligned: \(unaligned.map { ($0.name, $0.dataOffset) })")
        let temp4 = try #require(unaligned.first { $0.name == "temp4.txt" })
        #expect(temp4.dataOffset % 4096 != 0 && temp4.extra == Self.le16(0xd935) + Self.le16(2) + Self.le16(4096))
        let legacy = try Self.storedLayout(try #require(Self.shared.inputs["golden-legacy-aligned-in"]))
        #expect(legacy.allSatisfy { $0.dataOffset % ($0.name.hasSuffix(".so") ? 4096 : 4) == 0 }, "\(legacy.map { ($0.name, $0.dataOffset) })")
        #expect(legacy.contains { !$0.extra.isEmpty && $0.extra.allSatisfy { $0 == 0 } }, "zipalign pads with zero bytes")
        let aligned = try Self.storedLayout(try #require(Self.shared.inputs["golden-aligned-in"]))
        #expect(aligned.allSatisfy { $0.dataOffset % ($0.name.hasSuffix(".so") ? 4096 : 4) == 0 && Array($0.extra.prefix(2)) == Self.le16(0xd935) })
    }

    /// One golden: its input, its name in apksig's `generateGoldenFiles`, the options, and whether it rotates.
    struct Case: Sendable, CustomTestStringConvertible {
        var input: String
        var golden: String
        var options: [String]
        var lineage = false

        var testDescription: String { golden }
        var schemes: (v1: Bool, v2: Bool, v3: Bool) {
            func flag(_ name: String) -> Bool? {
                guard let index = options.firstIndex(of: "--\(name)-signing-enabled") else { return nil }
                return options[index + 1] == "true"
            }
            return (flag("v1") ?? true, flag("v2") ?? true, flag("v3") ?? true)
        }
        /// apksigner verify's SDK range for what the schemes signed cover (the fixture's minSdkVersion is 21, its
        /// targetSdkVersion 33: from API 30 such an APK needs v2 or later, so v1 alone is checked up to 29).
        var verifyOptions: [String] {
            schemes.v1 ? (schemes.v2 || schemes.v3 ? [] : ["--max-sdk-version", "29"]) : ["--min-sdk-version", schemes.v2 ? "24" : "28"]
        }
    }

    static func schemes(_ v1: Bool, _ v2: Bool, _ v3: Bool) -> [String] {
        ["--v1-signing-enabled", "\(v1)", "--v2-signing-enabled", "\(v2)", "--v3-signing-enabled", "\(v3)"]
    }

    static let alignmentCases: [Case] = ["golden-unaligned-in", "golden-legacy-aligned-in", "golden-aligned-in"].flatMap { input -> [Case] in
        let name = input.replacingOccurrences(of: "-in", with: "")
        return [
            Case(input: input, golden: "\(name)-out", options: []),
            Case(input: input, golden: "\(name)-v1-out", options: schemes(true, false, false) + ["--v4-signing-enabled", "false"]),
            Case(input: input, golden: "\(name)-v2-out", options: schemes(false, true, false)),
            Case(input: input, golden: "\(name)-v3-out", options: schemes(false, false, true)),
            Case(input: input, golden: "\(name)-v1v2-out", options: schemes(true, true, false)),
            Case(input: input, golden: "\(name)-v2v3-out", options: schemes(false, true, true)),
            Case(input: input, golden: "\(name)-v1v2v3-out", options: schemes(true, true, true)),
            Case(input: input, golden: "\(name)-v3-lineage-out", options: schemes(false, false, true), lineage: true),
            Case(input: input, golden: "\(name)-v2v3-lineage-out", options: schemes(false, true, true), lineage: true),
            Case(input: input, golden: "\(name)-v1v2v3-lineage-out", options: schemes(true, true, true), lineage: true),
        ]
    }

    static let originalCases: [Case] = [
        Case(input: "original", golden: "golden-rsa-out", options: []),
        Case(input: "original", golden: "golden-rsa-minSdkVersion-1-out", options: ["--min-sdk-version", "1"]),
        Case(input: "original", golden: "golden-rsa-minSdkVersion-18-out", options: ["--min-sdk-version", "18"]),
        Case(input: "original", golden: "golden-rsa-minSdkVersion-24-out", options: ["--min-sdk-version", "24"]),
        Case(input: "original", golden: "golden-rsa-verity-out", options: schemes(true, true, true) + ["--verity-enabled", "true"]),
    ]

    /// apkpatch's options for apksigner 31's layout (apksig 0.9: alignment preserved, .so on 4 KiB pages, zlib 9).
    static let layout = ["--alignment-preserved", "true", "--misaligned-apk-permitted", "true", "--lib-page-alignment", "4096", "--jar-deflate-level", "9"]

    static func keyOptions(_ key: TestKeys.Files) -> [String] { ["--key", key.keyPK8, "--cert", key.certificatePEM] }

    static func signerOptions(lineage: Bool) -> [String] {
        lineage ? keyOptions(shared.first) + ["--next-signer"] + keyOptions(shared.second) + ["--lineage", shared.lineage] : keyOptions(shared.first)
    }

    static func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> String {
        let index = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
        return "sizes \(a.count) and \(b.count), first difference at byte \(index)"
    }

    /// The v3 pair's value range in the signing block of `bytes`.
    static func v3ValueRange(_ path: String) throws -> Range<Int> {
        let source = try MappedFile(path: path)
        let end = try ZipArchive.findEndOfCentralDirectory(in: source)
        let block = try #require(try SigningBlock.locate(in: source, centralDirectoryOffset: end.centralDirectoryOffset))
        let bytes = try TestSupport.readBytes(path)
        func le(_ at: Int, _ count: Int) -> Int { (0..<count).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
        var position = Int(block.offset) + 8
        while position + 12 <= Int(end.centralDirectoryOffset) - 24 {
            let length = le(position, 8)
            if le(position + 8, 4) == Int(SigningBlock.ID.v3) { return (position + 12)..<(position + 8 + length) }
            position += 8 + length
        }
        throw FixtureError(message: "no v3 pair in \(path)")
    }

    /// apksigner 31.0.2's rotated output as current apksig writes it. Since the v3.1 work, apksig's
    /// `DefaultApkSignerEngine.Builder.setTargetedSignerConfigs` makes the lineage's newest signer a targeted
    /// signer (`rotatedConfigBuilder.setLineageForMinSdkVersion(mSigningCertificateLineage, mRotationMinSdkVersion)`,
    /// so its minSdkVersion is 28 with `setMinSdkVersionForRotation(P)`), and `processV3Configs` keeps a targeted
    /// signer's level (`else if (config.minSdkVersion == 0) config.minSdkVersion = getMinSdkFromV3SignatureAlgorithms(...)`);
    /// 0.9's `processV3Configs` set every signer's minSdkVersion to its algorithms' minimum (`javap -c`: the
    /// `getMinSdkFromV3SignatureAlgorithms` call feeds `putfield minSdkVersion` unconditionally), 24 for RSA.
    /// So the v3 signer's two minSdkVersion fields (signer record and signed data) go from 24 to 28 and its
    /// signatures are made again over the new signed data; nothing else moves (same sizes: int32 fields, RSA
    /// signatures of the key's size). `key`: the rotated signer.
    static func asCurrentApksig(_ path: String, key: SignerKey, sourceLocation: SourceLocation = #_sourceLocation) throws -> [UInt8] {
        var bytes = try TestSupport.readBytes(path)
        let range = try v3ValueRange(path)
        let block = try SignatureSchemeBlock(decoding: Array(bytes[range]), version: .v3)
        try #require(block.signers.count == 1, sourceLocation: sourceLocation)
        var signer = block.signers[0]
        #expect(signer.minSdkVersion == 24 && signer.signedData.minSdkVersion == 24, "apksigner 31's rotated v3 signer starts at 24", sourceLocation: sourceLocation)
        #expect(signer.signedData.encoded(for: .v3) == signer.signedDataBytes, "31.0.2's signed data re-encodes to itself", sourceLocation: sourceLocation)
        signer.minSdkVersion = 28
        signer.signedData.minSdkVersion = 28
        signer.signedDataBytes = signer.signedData.encoded(for: .v3)
        signer.signatures = try signer.signatures.map { signature in
            let algorithm = try #require(signature.algorithm, sourceLocation: sourceLocation)
            return AlgorithmTaggedValue(algorithmID: signature.algorithmID,
                                        value: try key.privateKey.sign(signer.signedDataBytes, digest: algorithm.signatureDigestAlgorithm))
        }
        let value = SignatureSchemeBlock(version: .v3, signers: [signer]).encoded()
        try #require(value.count == range.count, sourceLocation: sourceLocation)
        bytes.replaceSubrange(range, with: value)
        return bytes
    }

    @Test("signed as apksig's goldens: apkpatch's APK and .idsig are apksigner 31.0.2's bytes (rotations: with apksig's later v3 signer range)",
          arguments: alignmentCases + originalCases)
    func golden(_ golden: Case) throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try #require(Self.shared.inputs[golden.input])
        let theirs = dir.appendingPathComponent("\(golden.golden)-apksigner.apk").path, ours = dir.appendingPathComponent("\(golden.golden).apk").path
        let signers = Self.signerOptions(lineage: golden.lineage)
        let apksigner = try TestSupport.run("apksigner", ["sign"] + signers + golden.options + ["--out", theirs, input])
        try #require(apksigner.succeeded, "apksigner: \(apksigner)")
        let rotation = golden.lineage ? ["--rotation-min-sdk-version", "28"] : []
        let apkpatch = try TestSupport.apkpatch(["sign"] + signers + Self.layout + rotation + golden.options + ["--out", ours, input])
        try #require(apkpatch.succeeded, "apkpatch: \(apkpatch)")

        let expected = golden.lineage ? try Self.asCurrentApksig(theirs, key: Self.shared.second.key) : try TestSupport.readBytes(theirs)
        let ourBytes = try TestSupport.readBytes(ours)
        #expect(ourBytes == expected, "\(golden.golden): \(Self.firstDifference(ourBytes, expected))")

        let theirIdsig = FileManager.default.fileExists(atPath: theirs + ".idsig"), ourIdsig = FileManager.default.fileExists(atPath: ours + ".idsig")
        #expect(theirIdsig == ourIdsig && ourIdsig == (golden.schemes.v2 || golden.schemes.v3), "\(golden.golden): .idsig \(ourIdsig) vs \(theirIdsig)")
        if ourIdsig && theirIdsig {
            let ourSignature = try TestSupport.readBytes(ours + ".idsig"), theirSignature = try TestSupport.readBytes(theirs + ".idsig")
            if golden.lineage {
                // The tree covers the signing block, whose v3 signer differs as above: 31.0.2's .idsig with the
                // expected APK's tree and root hash from `fsverity digest`, and its signature made again.
                let expectedPath = dir.appendingPathComponent("expected.apk").path
                try TestSupport.write(expected, to: "expected.apk", in: dir)
                let tree = dir.appendingPathComponent("tree.bin").path, descriptor = dir.appendingPathComponent("descriptor.bin").path
                let fsverity = try TestSupport.run("fsverity", ["digest", expectedPath, "--out-merkle-tree", tree, "--out-descriptor", descriptor])
                try #require(fsverity.succeeded, "\(fsverity)")
                var other = try V4Signature(encoded: theirSignature)
                other.tree = try TestSupport.readBytes(tree)
                other.rootHash = Array(try TestSupport.readBytes(descriptor)[16..<48])
                other.signature = try Self.shared.second.key.privateKey.sign(other.signedData(apkSize: Int64(expected.count)), digest: .sha256)
                #expect(ourSignature == other.encoded(), "\(golden.golden).idsig: \(Self.firstDifference(ourSignature, other.encoded()))")
                let verify = try TestSupport.run("apksigner", ["verify", "-v", "--min-sdk-version", "28", "--v4-signature-file", ours + ".idsig", ours])
                #expect(verify.succeeded && verify.stdout.contains("Verified using v4 scheme (APK Signature Scheme v4): true"), "\(golden.golden): \(verify)")
            } else {
                #expect(ourSignature == theirSignature, "\(golden.golden).idsig: \(Self.firstDifference(ourSignature, theirSignature))")
            }
        }

        // apksigner verifies apkpatch's output with the golden's schemes and signer (the rotated key from 28).
        let verify = try TestSupport.run("apksigner", ["verify", "-v", "--print-certs"] + golden.verifyOptions + [ours])
        #expect(verify.succeeded, "\(golden.golden): \(verify)")
        let (v1, v2, v3) = golden.schemes
        for (scheme, on, label) in [(1, v1, "JAR signing"), (2, v2, "APK Signature Scheme v2"), (3, v3, "APK Signature Scheme v3")] {
            #expect(verify.stdout.contains("Verified using v\(scheme) scheme (\(label)): \(on)"), "\(golden.golden): v\(scheme) \(on)\n\(verify.stdout)")
        }
        let signer = golden.lineage ? Self.shared.second : Self.shared.first
        #expect(verify.stdout.contains("Signer #1 certificate SHA-256 digest: \(signer.key.certificates[0].fingerprint(.sha256).hexString)"),
                "\(golden.golden): \(verify.stdout)")
        let ourVerify = try TestSupport.apkpatch(["verify", "--signature-only"] + golden.verifyOptions + [ours])
        #expect(ourVerify.succeeded, "\(golden.golden): \(ourVerify)")
    }

    /// `testAlignFileSize_Golden`: `setAlignFileSize(true)` pads the end record's comment with zeros so the APK's
    /// size is a multiple of 4096 (apksig `EocdRecord.createWithPaddedComment`). apksigner 31.0.2 has no such
    /// option, but it copies an input's comment into its output: signing the input with that many zero bytes
    /// already in its comment gives exactly the bytes `--align-file-size` must write.
    @Test("testAlignFileSize_Golden: --align-file-size is apksigner 31's output of the input carrying the padding as its comment")
    func alignFileSize() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try #require(Self.shared.inputs["original"])
        let signer = Self.keyOptions(Self.shared.first)
        let plain = dir.appendingPathComponent("plain.apk").path
        try #require(try TestSupport.run("apksigner", ["sign"] + signer + ["--out", plain, input]).succeeded)
        let padding = (4096 - (try TestSupport.readBytes(plain).count) % 4096) % 4096
        try #require(padding > 0, "the fixture must need padding for this test to mean anything")
        var padded = try TestSupport.readBytes(input)
        try #require(padded.count >= 22 && padded[padded.count - 2] == 0 && padded[padded.count - 1] == 0, "an input without a comment")
        padded[padded.count - 2] = UInt8(padding & 0xff)
        padded[padded.count - 1] = UInt8(padding >> 8)
        padded += [UInt8](repeating: 0, count: padding)
        try TestSupport.write(padded, to: "padded-in.apk", in: dir)
        let theirs = dir.appendingPathComponent("theirs.apk").path, ours = dir.appendingPathComponent("golden-file-size-aligned.apk").path
        let apksigner = try TestSupport.run("apksigner", ["sign"] + signer + ["--out", theirs, dir.appendingPathComponent("padded-in.apk").path])
        try #require(apksigner.succeeded, "\(apksigner)")
        let apkpatch = try TestSupport.apkpatch(["sign"] + signer + Self.layout + ["--align-file-size", "--out", ours, input])
        try #require(apkpatch.succeeded, "\(apkpatch)")
        let ourBytes = try TestSupport.readBytes(ours), theirBytes = try TestSupport.readBytes(theirs)
        #expect(ourBytes.count % 4096 == 0, "the golden's own assertion")
        #expect(ourBytes == theirBytes, Comment(rawValue: Self.firstDifference(ourBytes, theirBytes)))
        #expect(try TestSupport.readBytes(ours + ".idsig") == (try TestSupport.readBytes(theirs + ".idsig")))
        #expect(try TestSupport.run("apksigner", ["verify", ours]).succeeded)
    }

    /// `testSignApk_Pinlist` (v1, v2, v3, verity, pin hints): apksig writes `pinlist.meta` before the JAR
    /// signature since build-tools 33 (`ApkSigner.sign`, "Step 7.5. Generate pinlist.meta file if necessary.
    /// This has to be before the step 8 so that the file is signed."); 0.9 writes it after (`javap -c`:
    /// `outputJarEntries` is called before `Hints.encodeByteRangeList`), so with v1 the entries' order, the
    /// list's last range and the JAR manifest differ by design (checked entry by entry in `PinListTests`).
    /// Without v1 both write the list last, and the bytes must be the same.
    @Test("testSignApk_Pinlist without v1 (v2, v3, verity, pin hints): apksigner 31's bytes; pinlist.meta is there")
    func pinList() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        var apk = FixtureAPK.cordovaLike()
        apk.assets["com.android.hints.pins.txt"] = Array("classes.dex\nlib/.*\\.so 0 100\nassets/www/js/module[0-3]\\.js 10 50\n".utf8)
        let input = try apk.build(in: dir, name: "pinsapp-unsigned.apk")
        let options = Self.keyOptions(Self.shared.first) + Self.schemes(false, true, true) + ["--verity-enabled", "true"]
        let theirs = dir.appendingPathComponent("theirs.apk").path, ours = dir.appendingPathComponent("golden-pinsapp-signed.apk").path
        try #require(try TestSupport.run("apksigner", ["sign"] + options + ["--out", theirs, input]).succeeded)
        let apkpatch = try TestSupport.apkpatch(["sign"] + options + Self.layout + ["--out", ours, input])
        try #require(apkpatch.succeeded, "\(apkpatch)")
        let ourBytes = try TestSupport.readBytes(ours), theirBytes = try TestSupport.readBytes(theirs)
        #expect(ourBytes == theirBytes, Comment(rawValue: Self.firstDifference(ourBytes, theirBytes)))
        #expect(try TestSupport.readBytes(ours + ".idsig") == (try TestSupport.readBytes(theirs + ".idsig")))
        #expect(try APKFacts(ours).archive.entries.last?.name == "pinlist.meta", "the golden's own assertion: pinlist.meta is in the signed APK")
        #expect(try TestSupport.run("apksigner", ["verify", "--min-sdk-version", "24", ours]).succeeded)
    }
}

extension ApksigGoldenTests {
    /// ECDSA and DSA signatures are randomised (apksig's own golden test leaves them out: "non-deterministic
    /// which means output files always differ from golden files"), so for them apkpatch's output is held to
    /// apksigner 31's field by field: the same entries and data (all but the JAR signature block file), the same
    /// bytes up to that file, the same signed data (but the digests' values, which cover that file), algorithms
    /// and public keys in every v2/v3 signer (a rotated v3 signer's range as `asCurrentApksig` describes), the
    /// same v4 signer and algorithm, and both verify.
    @Test("EC P-256 rotation (v1v2v3-lineage) and DSA (v1v2v3): apksigner 31's output but for the random signature values",
          arguments: ["ec-lineage", "dsa"])
    func nonDeterministicKeys(_ kind: String) throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try #require(Self.shared.inputs["golden-aligned-in"])
        let rotated = kind == "ec-lineage"
        let first = try TestKeys.make(rotated ? .ecP256 : .dsa2048, in: dir, name: "first")
        var signers = Self.keyOptions(first)
        var signerKey = first
        if rotated {
            let second = try TestKeys.make(.ecP256, in: dir, name: "second")
            let lineage = dir.appendingPathComponent("lineage").path
            try #require(try TestSupport.run("apksigner", ["rotate", "--out", lineage, "--old-signer"] + Self.keyOptions(first)
                                             + ["--new-signer"] + Self.keyOptions(second)).succeeded)
            signers += ["--next-signer"] + Self.keyOptions(second) + ["--lineage", lineage]
            signerKey = second
        }
        let theirs = dir.appendingPathComponent("theirs.apk").path, ours = dir.appendingPathComponent("ours.apk").path
        let options = Self.schemes(true, true, true)
        try #require(try TestSupport.run("apksigner", ["sign"] + signers + options + ["--out", theirs, input]).succeeded)
        let apkpatch = try TestSupport.apkpatch(["sign"] + signers + Self.layout + (rotated ? ["--rotation-min-sdk-version", "28"] : []) + options + ["--out", ours, input])
        try #require(apkpatch.succeeded, "\(apkpatch)")

        let mine = try APKArchive(path: ours), other = try APKArchive(path: theirs)
        #expect(mine.entries.map(\.name) == other.entries.map(\.name))
        let blockFile = try #require(mine.entries.first { $0.name.hasPrefix("META-INF/") && ($0.name.hasSuffix(".EC") || $0.name.hasSuffix(".DSA")) })
        let theirBlockFile = try #require(other.entry(named: blockFile.name))
        #expect(blockFile.localHeaderOffset == theirBlockFile.localHeaderOffset)
        let ourBytes = try TestSupport.readBytes(ours), theirBytes = try TestSupport.readBytes(theirs)
        #expect(ourBytes[..<Int(blockFile.localHeaderOffset)] == theirBytes[..<Int(blockFile.localHeaderOffset)], "entries, MANIFEST.MF and .SF")
        for entry in mine.entries where entry.name != blockFile.name {
            let theirEntry = try #require(other.entry(named: entry.name))
            #expect(try mine.uncompressedData(of: entry) == (try other.uncompressedData(of: theirEntry)), "\(entry.name)")
        }
        let ourBlock = try #require(try APKFacts(ours).signingBlock), theirBlock = try #require(try APKFacts(theirs).signingBlock)
        for (id, version) in [(SigningBlock.ID.v2, SignatureSchemeVersion.v2), (SigningBlock.ID.v3, .v3)] {
            let ourSigners = try SignatureSchemeBlock(decoding: try #require(ourBlock.value(for: id)), version: version).signers
            var theirSigners = try SignatureSchemeBlock(decoding: try #require(theirBlock.value(for: id)), version: version).signers
            try #require(ourSigners.count == 1 && theirSigners.count == 1, "\(version)")
            if rotated && version == .v3 {
                #expect(theirSigners[0].minSdkVersion == 24 && theirSigners[0].signedData.minSdkVersion == 24)
                theirSigners[0].minSdkVersion = 28
                theirSigners[0].signedData.minSdkVersion = 28
                theirSigners[0].signedDataBytes = theirSigners[0].signedData.encoded(for: .v3)
            }
            // The content digests cover the JAR signature block file, whose signature is random: their algorithms.
            let (mine, other) = (ourSigners[0].signedData, theirSigners[0].signedData)
            #expect(mine.digests.map(\.algorithmID) == other.digests.map(\.algorithmID) && mine.certificates == other.certificates
                    && mine.minSdkVersion == other.minSdkVersion && mine.maxSdkVersion == other.maxSdkVersion
                    && mine.additionalAttributes == other.additionalAttributes, "\(version) signed data")
            #expect(ourSigners[0].minSdkVersion == theirSigners[0].minSdkVersion && ourSigners[0].maxSdkVersion == theirSigners[0].maxSdkVersion)
            #expect(ourSigners[0].publicKey == theirSigners[0].publicKey)
            #expect(ourSigners[0].signatures.map(\.algorithmID) == theirSigners[0].signatures.map(\.algorithmID), "\(version) algorithms")
        }
        let ourV4 = try V4Signature(encoded: try TestSupport.readBytes(ours + ".idsig")), theirV4 = try V4Signature(encoded: try TestSupport.readBytes(theirs + ".idsig"))
        #expect(ourV4.certificate == theirV4.certificate && ourV4.publicKey == theirV4.publicKey && ourV4.signatureAlgorithmID == theirV4.signatureAlgorithmID)
        let verify = try TestSupport.run("apksigner", ["verify", "-v", "--print-certs", "--v4-signature-file", ours + ".idsig"] + (rotated ? ["--min-sdk-version", "28"] : []) + [ours])
        #expect(verify.succeeded && verify.stdout.contains("Verified using v4 scheme (APK Signature Scheme v4): true")
                && verify.stdout.contains("Signer #1 certificate SHA-256 digest: \(signerKey.key.certificates[0].fingerprint(.sha256).hexString)"), "\(verify)")
        #expect(try TestSupport.apkpatch(["verify", "--signature-only", "--v4-signature-file", ours + ".idsig", ours]).succeeded)
    }
}
