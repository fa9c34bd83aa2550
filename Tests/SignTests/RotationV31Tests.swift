import APKCore
import Foundation
import Sign
import SignatureSchemes
import Testing
import TestSupport

/// Key rotation in a v3.1 block (apksigner's default `--rotation-min-sdk-version 33`), laid out as apksig's
/// `DefaultApkSignerEngine` does (`processV3Configs`, `processV31SignerConfigs`, `V3SchemeSigner`): read back
/// field by field, v1/v2 compared with Debian's apksigner 31 (which predates v3.1) byte for byte, the result
/// checked by `apkpatch verify` and by apksigner 31 on the v3.0 block.
@Suite(.removesTemporaryDirectories) struct RotationV31Tests {
    static let shared: (directory: URL, keys: [TestKeys.Files]) = TestSupport.sharedByTests {
        let directory = try! TestSupport.makeTemporaryDirectory("v31-keys")
        return (directory, (1...3).map { try! TestKeys.make(.rsa2048, in: directory, name: "key\($0)") })
    }

    static func signer(_ index: Int) -> [String] {
        ["--key", shared.keys[index].keyPK8, "--cert", shared.keys[index].certificatePEM]
    }

    static func sha256(of key: Int) -> String { shared.keys[key].key.certificates[0].fingerprint(.sha256).hexString }
    static func der(of key: Int) -> [UInt8] { shared.keys[key].key.certificates[0].derBytes }

    /// A lineage through keys 0…`last` made with `apkpatch rotate`.
    static func lineage(through last: Int, in dir: URL) throws -> String {
        var path = ""
        for index in 1...last {
            let next = dir.appendingPathComponent("lineage\(index)").path
            let input = index == 1 ? [] : ["--in", path]
            let rotate = try TestSupport.apkpatch(["rotate", "--out", next] + input + ["--old-signer"] + signer(index - 1) + ["--new-signer"] + signer(index))
            #expect(rotate.succeeded, "\(rotate)")
            path = next
        }
        return path
    }

    /// The APK's signing block, and where it starts.
    static func signingBlock(_ path: String) throws -> SigningBlock {
        let source = try MappedFile(path: path)
        let end = try ZipArchive.findEndOfCentralDirectory(in: source)
        return try #require(try SigningBlock.locate(in: source, centralDirectoryOffset: end.centralDirectoryOffset))
    }

    static func signers(_ block: SigningBlock, _ id: UInt32) throws -> [SignatureSchemeSigner] {
        let value = try #require(block.value(for: id), "no pair 0x\(String(id, radix: 16))")
        return try SignatureSchemeBlock(decoding: value, version: .v3).signers
    }

    @Test("the default rotation is a v3.1 block for the new key from API 33 and a v3.0 block for the old key up to 32 naming it")
    func defaultRotationWritesV31() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let lineage = try Self.lineage(through: 1, in: dir)
        let ours = dir.appendingPathComponent("ours.apk").path
        let sign = try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--next-signer"] + Self.signer(1)
                                            + ["--lineage", lineage, "--alignment-preserved", "true", "--misaligned-apk-permitted", "true", "--lib-page-alignment", "4096", "--out", ours, input])
        #expect(sign.succeeded, "\(sign)")

        let block = try Self.signingBlock(ours)
        #expect(block.pairs.map(\.id) == [SigningBlock.ID.v2, SigningBlock.ID.v31, SigningBlock.ID.v3, SigningBlock.ID.verityPadding],
                "apksig's order: v2, v3.1, v3.0")
        let v31 = try Self.signers(block, SigningBlock.ID.v31)
        #expect(v31.count == 1 && v31[0].signedData.certificates == [Self.der(of: 1)])
        #expect(v31[0].minSdkVersion == 33 && v31[0].maxSdkVersion == Int32.max)
        #expect(v31[0].signedData.minSdkVersion == 33 && v31[0].signedData.maxSdkVersion == Int32.max)
        let lineageValue = try SigningCertificateLineage(contentsOf: lineage).attributeValue
        #expect(v31[0].signedData.additionalAttributes == [AdditionalAttribute(id: AdditionalAttribute.ID.proofOfRotation, value: lineageValue)])
        let v30 = try Self.signers(block, SigningBlock.ID.v3)
        #expect(v30.count == 1 && v30[0].signedData.certificates == [Self.der(of: 0)])
        #expect(v30[0].minSdkVersion == 24 && v30[0].maxSdkVersion == 32)
        // The stripping protection: the v3.1 block's level, a little-endian int32, and no lineage in v3.0.
        #expect(v30[0].signedData.additionalAttributes == [AdditionalAttribute(id: 0x559f_8b02, value: [33, 0, 0, 0])])
        // The v4 signature: the v3.0 signer's signing info and the v3.1 signer's block (V4RotationTests).
        #expect(try V4Signature(encoded: try TestSupport.readBytes(ours + ".idsig")).signingInfoBlocks.map(\.signingInfo.certificate) == [Self.der(of: 1)])

        // v1, v2 and the central directory are the old key's, exactly as apksigner 31 signs them.
        let theirs = dir.appendingPathComponent("theirs.apk").path
        let apksigner = try TestSupport.run("apksigner", ["sign"] + Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage, "--out", theirs, input])
        #expect(apksigner.succeeded, "\(apksigner)")
        let theirBlock = try Self.signingBlock(theirs)
        let ourBytes = try TestSupport.readBytes(ours), theirBytes = try TestSupport.readBytes(theirs)
        #expect(block.offset == theirBlock.offset)
        #expect(ourBytes[..<Int(block.offset)] == theirBytes[..<Int(theirBlock.offset)], "entries and JAR signature")
        #expect(block.value(for: SigningBlock.ID.v2) == theirBlock.value(for: SigningBlock.ID.v2), "v2 block")
        let ourEnd = try ZipArchive.findEndOfCentralDirectory(in: MappedFile(path: ours))
        let theirEnd = try ZipArchive.findEndOfCentralDirectory(in: MappedFile(path: theirs))
        #expect(ourBytes[Int(ourEnd.centralDirectoryOffset)..<Int(ourEnd.offset)] == theirBytes[Int(theirEnd.centralDirectoryOffset)..<Int(theirEnd.offset)],
                "central directory")

        // apkpatch verify: the v3.1 signer, then the v3.0 one, as apksigner 33+ prints them.
        let verify = try TestSupport.apkpatch(["verify", "--signature-only", "-v", "--print-certs", ours])
        #expect(verify.succeeded, "\(verify)")
        #expect(verify.stdout.contains("Verified using v3.1 scheme (APK Signature Scheme v3.1): true"), "\(verify.stdout)")
        let newLine = "Signer (minSdkVersion=33, maxSdkVersion=2147483647) certificate SHA-256 digest: \(Self.sha256(of: 1))\n"
        let oldLine = "Signer (minSdkVersion=24, maxSdkVersion=32) certificate SHA-256 digest: \(Self.sha256(of: 0))\n"
        let newRange = try #require(verify.stdout.range(of: newLine), "\(verify.stdout)")
        let oldRange = try #require(verify.stdout.range(of: oldLine), "\(verify.stdout)")
        #expect(newRange.lowerBound < oldRange.lowerBound)
        #expect(try TestSupport.apkpatch(["verify", "--signature-only", "--expect-certificate-sha256", Self.sha256(of: 1), ours]).succeeded)
        // Below 33 only the v3.0 block counts: the old key.
        let old = try TestSupport.apkpatch(["verify", "--signature-only", "--print-certs", "--max-sdk-version", "32", ours])
        #expect(old.succeeded && old.stdout.contains("Signer #1 certificate SHA-256 digest: \(Self.sha256(of: 0))"), "\(old)")
        // The lineage read back from the APK (v3.1 and v3.0 consolidated), as from the file.
        #expect(try TestSupport.apkpatch(["lineage", "--in", ours, "--print-certs"]).stdout
                == (try TestSupport.apkpatch(["lineage", "--in", lineage, "--print-certs"]).stdout))

        // Debian's apksigner 31 knows no v3.1 block: the v3.0 block, the old key's up to API 32, verifies there.
        for level in ["28", "32"] {
            let theirVerify = try TestSupport.run("apksigner", ["verify", "-v", "--print-certs", "--min-sdk-version", level, "--max-sdk-version", "32", ours])
            #expect(theirVerify.succeeded && theirVerify.stdout.contains("Verified using v3 scheme (APK Signature Scheme v3): true")
                    && theirVerify.stdout.contains("Signer #1 certificate SHA-256 digest: \(Self.sha256(of: 0))"), "\(level): \(theirVerify)")
        }
    }

    @Test("a v3.1 block stripped while the v3.0 signer names it does not verify")
    func strippedV31IsRefused() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let lineage = try Self.lineage(through: 1, in: dir)
        let signed = dir.appendingPathComponent("signed.apk").path
        #expect(try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage, "--out", signed, input]).succeeded)
        let block = try Self.signingBlock(signed)
        var bytes = try TestSupport.readBytes(signed)
        // Renaming the v3.1 pair's ID hides the block without moving a byte: the content digests still match.
        var position = Int(block.offset) + 8
        var renamed = false
        while position + 12 <= bytes.count {
            let length = Int(bytes[position..<position + 8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
            let id = UInt32(bytes[position + 8]) | UInt32(bytes[position + 9]) << 8 | UInt32(bytes[position + 10]) << 16 | UInt32(bytes[position + 11]) << 24
            if id == SigningBlock.ID.v31 {
                bytes[position + 8] ^= 0x5a
                renamed = true
                break
            }
            position += 8 + length
        }
        #expect(renamed)
        try TestSupport.write(bytes, to: "stripped.apk", in: dir)
        let stripped = dir.appendingPathComponent("stripped.apk").path
        let verify = try TestSupport.apkpatch(["verify", "--signature-only", "--json", stripped])
        #expect(!verify.succeeded, "\(verify)")
        #expect(verify.stdout.contains("V31_BLOCK_MISSING"), "\(verify.stdout)")
        // Up to API 32 the v3.1 block is not looked for: the rest still verifies there.
        #expect(try TestSupport.apkpatch(["verify", "--signature-only", "--max-sdk-version", "32", stripped]).succeeded)
    }

    @Test("--rotation-targets-dev-release, a three-key lineage, rotation from 28, and what is refused")
    func rotationForms() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let lineage2 = try Self.lineage(through: 1, in: dir)
        func sign(_ name: String, _ arguments: [String]) throws -> (TestSupport.ProcessResult, String) {
            let out = dir.appendingPathComponent(name).path
            return (try TestSupport.apkpatch(["sign"] + arguments + ["--out", out, input]), out)
        }

        // The development release: the new key also runs on the release still reporting 32 + 1, the old key's
        // range reaches 33, and only the v3.1 signer carries the attribute.
        let (dev, devPath) = try sign("dev.apk", Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage2, "--rotation-targets-dev-release", "true"])
        #expect(dev.succeeded, "\(dev)")
        let devBlock = try Self.signingBlock(devPath)
        let devV31 = try Self.signers(devBlock, SigningBlock.ID.v31)
        #expect(devV31.first?.signedData.additionalAttributes.map(\.id) == [AdditionalAttribute.ID.proofOfRotation, 0xc2a6_b3ba])
        #expect(devV31.first?.signedData.additionalAttributes.last?.value == [])
        let devV30 = try Self.signers(devBlock, SigningBlock.ID.v3)
        #expect(devV30.first?.maxSdkVersion == 33 && devV30.first?.signedData.additionalAttributes == [AdditionalAttribute(id: 0x559f_8b02, value: [33, 0, 0, 0])])
        let devVerify = try TestSupport.apkpatch(["verify", "--signature-only", "--print-certs", devPath])
        #expect(devVerify.succeeded && devVerify.stdout.contains("Signer (minSdkVersion=33 (dev release=true), maxSdkVersion=2147483647) certificate DN:"), "\(devVerify)")

        // A later rotation level: v3.1 from 34, v3.0 up to 33.
        let (later, laterPath) = try sign("later.apk", Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage2, "--rotation-min-sdk-version", "34"])
        #expect(later.succeeded, "\(later)")
        let laterBlock = try Self.signingBlock(laterPath)
        #expect(try Self.signers(laterBlock, SigningBlock.ID.v31).first?.minSdkVersion == 34)
        let laterV30 = try Self.signers(laterBlock, SigningBlock.ID.v3)
        #expect(laterV30.first?.maxSdkVersion == 33 && laterV30.first?.signedData.additionalAttributes.last?.value == [34, 0, 0, 0])
        #expect(try TestSupport.apkpatch(["verify", "--signature-only", laterPath]).succeeded)

        // Three keys: the middle one is hidden by the newest (apksig drops a signer whose range is empty).
        let lineage3 = try Self.lineage(through: 2, in: dir)
        let (three, threePath) = try sign("three.apk", Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--next-signer"] + Self.signer(2) + ["--lineage", lineage3])
        #expect(three.succeeded, "\(three)")
        let threeBlock = try Self.signingBlock(threePath)
        #expect(try Self.signers(threeBlock, SigningBlock.ID.v31).map(\.signedData.certificates) == [[Self.der(of: 2)]])
        #expect(try Self.signers(threeBlock, SigningBlock.ID.v3).map(\.signedData.certificates) == [[Self.der(of: 0)]])
        #expect(try TestSupport.apkpatch(["verify", "--signature-only", "--expect-certificate-sha256", Self.sha256(of: 2), threePath]).succeeded)

        // From API 28 the newest key is in the v3.0 block alone, from 28 (apksig's SDK-targeted signer), and
        // apksigner 31 verifies it with the new key.
        let (p28, p28Path) = try sign("p28.apk", Self.signer(0) + ["--next-signer"] + Self.signer(2) + ["--lineage", lineage3, "--rotation-min-sdk-version", "28"])
        #expect(p28.succeeded, "\(p28)")
        let p28Block = try Self.signingBlock(p28Path)
        #expect(p28Block.value(for: SigningBlock.ID.v31) == nil)
        let p28Signers = try Self.signers(p28Block, SigningBlock.ID.v3)
        #expect(p28Signers.map(\.signedData.certificates) == [[Self.der(of: 2)]] && p28Signers.first?.minSdkVersion == 28)
        let p28Verify = try TestSupport.run("apksigner", ["verify", "-v", "--print-certs", p28Path])
        #expect(p28Verify.succeeded && p28Verify.stdout.contains("Signer #1 certificate SHA-256 digest: \(Self.sha256(of: 2))"), "\(p28Verify)")

        // An APK whose minSdkVersion is at the rotation level needs no v3.0 signer for older levels.
        let (high, highPath) = try sign("high.apk", Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage2, "--min-sdk-version", "33"])
        #expect(high.succeeded, "\(high)")
        let highBlock = try Self.signingBlock(highPath)
        #expect(highBlock.value(for: SigningBlock.ID.v31) == nil)
        #expect(try Self.signers(highBlock, SigningBlock.ID.v3).map { [$0.minSdkVersion] + [$0.signedData.certificates == [Self.der(of: 1)] ? 1 : 0] } == [[33, 1]])
        #expect(FileManager.default.fileExists(atPath: highPath + ".idsig"), "v3.0 only: the v4 signature is written as before")

        // Refused: the development release below 33, v1 without the original key. (An explicit v4 signature of
        // a v3.1 rotation is made: V4RotationTests.)
        let (devLow, _) = try sign("x.apk", Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage2, "--rotation-min-sdk-version", "28", "--rotation-targets-dev-release"])
        #expect(!devLow.succeeded && devLow.stderr.contains("development release") && devLow.stderr.contains("(--rotation-min-sdk-version 33 or later)"), "\(devLow)")
        let (noOriginal, _) = try sign("y.apk", Self.signer(1) + ["--next-signer"] + Self.signer(2) + ["--lineage", lineage3])
        #expect(!noOriginal.succeeded && noOriginal.stderr.contains("original signer"), "\(noOriginal)")
        let (v3Only, v3OnlyPath) = try sign("z.apk", Self.signer(1) + ["--next-signer"] + Self.signer(2) + ["--lineage", lineage3, "--v1-signing-enabled", "false",
                                                                                                          "--v2-signing-enabled", "false", "--rotation-min-sdk-version", "28"])
        #expect(v3Only.succeeded, "\(v3Only)")
        #expect(try Self.signers(try Self.signingBlock(v3OnlyPath), SigningBlock.ID.v3).map(\.signedData.certificates) == [[Self.der(of: 2)]])
    }

    @Test("run signs a rotation (v3.1 by default) and several signers as sign does, and verifies its output")
    func runSignsRotations() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let lineage = try Self.lineage(through: 1, in: dir)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("console.log('patched');\n", to: "assets/www/js/patched.js", in: patch)
        let rotated = dir.appendingPathComponent("rotated.apk").path
        let run = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", rotated] + Self.signer(0) + ["--next-signer"] + Self.signer(1)
                                           + ["--lineage", lineage])
        #expect(run.succeeded, "\(run)")
        let block = try Self.signingBlock(rotated)
        #expect(try Self.signers(block, SigningBlock.ID.v31).map(\.signedData.certificates) == [[Self.der(of: 1)]])
        #expect(try Self.signers(block, SigningBlock.ID.v3).map(\.signedData.certificates) == [[Self.der(of: 0)]])
        #expect(try TestSupport.apkpatch(["verify", "--signature-only", "--v4-signature-file", rotated + ".idsig", rotated]).succeeded)
        let verify = try TestSupport.run("apksigner", ["verify", "--max-sdk-version", "32", "--print-certs", rotated])
        #expect(verify.succeeded && verify.stdout.contains(Self.sha256(of: 0)), "\(verify)")

        // At API 28 the v4 signature is the new key's.
        let p28 = dir.appendingPathComponent("p28.apk").path
        let run28 = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", p28] + Self.signer(0) + ["--next-signer"] + Self.signer(1)
                                             + ["--lineage", lineage, "--rotation-min-sdk-version", "28"])
        #expect(run28.succeeded, "\(run28)")
        #expect(try TestSupport.apkpatch(["verify", "--signature-only", "--v4-signature-file", p28 + ".idsig", "--expect-certificate-sha256", Self.sha256(of: 1), p28]).succeeded)

        let two = dir.appendingPathComponent("two.apk").path
        let runTwo = try TestSupport.apkpatch(["run", input, "--patch", patch.path, "--out", two] + Self.signer(0) + ["--next-signer"] + Self.signer(2)
                                              + ["--v3-signing-enabled", "false"])
        #expect(runTwo.succeeded, "\(runTwo)")
        let verifyTwo = try TestSupport.run("apksigner", ["verify", "-v", "--print-certs", two])
        #expect(verifyTwo.succeeded && verifyTwo.stdout.contains("Number of signers: 2") && verifyTwo.stdout.contains(Self.sha256(of: 2)), "\(verifyTwo)")
    }

    @Test("watch signs each build with the rotation (v3.1), recycling its output")
    func watchSignsRotations() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let lineage = try Self.lineage(through: 1, in: dir)
        let patch = dir.appendingPathComponent("patch")
        try TestSupport.write("<p>v1</p>\n", to: "assets/www/index.html", in: patch)
        let output = dir.appendingPathComponent("watched.apk").path
        let (process, lines) = try TestSupport.startApkpatch(["watch", input, "--patch", patch.path, "--out", output] + Self.signer(0)
                                                              + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage])
        defer { if process.isRunning { process.terminate() } }
        #expect(lines.waitFor { $0.contains("] built ") }, "first build: \(lines.lines)")
        for round in 1...2 {
            let block = try Self.signingBlock(output)
            #expect(try Self.signers(block, SigningBlock.ID.v31).map(\.signedData.certificates) == [[Self.der(of: 1)]], "build \(round)")
            #expect(try Self.signers(block, SigningBlock.ID.v3).map(\.signedData.certificates) == [[Self.der(of: 0)]], "build \(round)")
            #expect(try TestSupport.apkpatch(["verify", "--signature-only", "--expect-certificate-sha256", Self.sha256(of: 1), output]).succeeded, "build \(round)")
            #expect(try TestSupport.run("apksigner", ["verify", "--max-sdk-version", "32", output]).succeeded, "build \(round)")
            if round == 1 {
                try TestSupport.write("<p>v2</p>\n", to: "assets/www/index.html", in: patch)
                #expect(lines.waitFor { $0.contains("rebuilt") }, "\(lines.lines)")
                #expect(try TestSupport.run("unzip", ["-p", output, "assets/www/index.html"]).stdout == "<p>v2</p>\n")
            }
        }
        process.interrupt()
    }

    @Test("--signer-for-min-sdk-version: a targeted signer is laid out as the rotation would; with a rotation, each at its level")
    func targetedSigners() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let lineage2 = try Self.lineage(through: 1, in: dir)
        let layout = ["--alignment-preserved", "true", "--misaligned-apk-permitted", "true", "--lib-page-alignment", "4096", "--v4-signing-enabled", "false"]
        func sign(_ name: String, _ arguments: [String]) throws -> (TestSupport.ProcessResult, String) {
            let out = dir.appendingPathComponent(name).path
            return (try TestSupport.apkpatch(["sign"] + arguments + layout + ["--out", out, input]), out)
        }
        // A signer targeting 33 with the lineage is what the default rotation makes, byte for byte.
        let (rotation, rotationPath) = try sign("rotation.apk", Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage2])
        #expect(rotation.succeeded, "\(rotation)")
        let (targeted, targetedPath) = try sign("targeted.apk", Self.signer(0) + ["--signer-for-min-sdk-version", "33"] + Self.signer(1) + ["--signer-lineage", lineage2])
        #expect(targeted.succeeded, "\(targeted)")
        #expect(try TestSupport.readBytes(targetedPath) == (try TestSupport.readBytes(rotationPath)))

        // A rotation from 28 (key 1) and a signer targeting 34 (key 2): v3.0 holds key 1 for 28…33 with its
        // lineage and the v3.1 level, v3.1 key 2 from 34.
        let lineage3 = try Self.lineage(through: 2, in: dir)
        let (both, bothPath) = try sign("both.apk", Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage3, "--rotation-min-sdk-version", "28",
                                                                                                          "--signer-for-min-sdk-version", "34"] + Self.signer(2) + ["--signer-lineage", lineage3])
        #expect(both.succeeded, "\(both)")
        let block = try Self.signingBlock(bothPath)
        let v31 = try Self.signers(block, SigningBlock.ID.v31), v30 = try Self.signers(block, SigningBlock.ID.v3)
        #expect(v31.map(\.signedData.certificates) == [[Self.der(of: 2)]] && v31.first?.minSdkVersion == 34 && v31.first?.maxSdkVersion == Int32.max)
        #expect(v30.map(\.signedData.certificates) == [[Self.der(of: 1)]] && v30.first?.minSdkVersion == 28 && v30.first?.maxSdkVersion == 33)
        let lineage01 = try SigningCertificateLineage(contentsOf: lineage3).subLineage(through: Self.shared.keys[1].key.certificates[0])
        #expect(v30.first?.signedData.additionalAttributes == [AdditionalAttribute(id: AdditionalAttribute.ID.proofOfRotation, value: lineage01.attributeValue),
                                                              AdditionalAttribute(id: 0x559f_8b02, value: [34, 0, 0, 0])])
        let verify = try TestSupport.apkpatch(["verify", "--signature-only", "--print-certs", bothPath])
        #expect(verify.succeeded && verify.stdout.contains("Signer (minSdkVersion=28, maxSdkVersion=33) certificate SHA-256 digest: \(Self.sha256(of: 1))"), "\(verify)")
        let theirs = try TestSupport.run("apksigner", ["verify", "--print-certs", "--max-sdk-version", "33", bothPath])
        #expect(theirs.succeeded && theirs.stdout.contains(Self.sha256(of: 1)), "\(theirs)")

        // Refused as apksig refuses: two signers at one level, a rotation level not below a targeted one.
        let (twice, _) = try sign("x.apk", Self.signer(0) + ["--signer-for-min-sdk-version", "34"] + Self.signer(1) + ["--signer-lineage", lineage3,
                                                                                                                    "--signer-for-min-sdk-version", "34"] + Self.signer(2) + ["--signer-lineage", lineage3])
        #expect(!twice.succeeded && twice.stderr.contains("several signers target API 34") && twice.stderr.contains("(one --signer-for-min-sdk-version per level)"), "\(twice)")
        let (late, _) = try sign("y.apk", Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--lineage", lineage3, "--signer-for-min-sdk-version", "33"]
                                 + Self.signer(2) + ["--signer-lineage", lineage3])
        #expect(!late.succeeded && late.stderr.contains("must be below the first targeted SDK version") && late.stderr.contains("(lower --rotation-min-sdk-version"), "\(late)")
        // A targeted signer given without a lineage beside another first signer: nothing links the two, so the v3
        // signers would not verify ("v3 signer differs from v1/v2 signer without proper signing certificate
        // lineage"); apksig fails on it ("Certificate not found in SigningCertificateLineage"). Nothing is written.
        let (unlinked, unlinkedPath) = try sign("z.apk", Self.signer(0) + ["--signer-for-min-sdk-version", "30"] + Self.signer(1))
        #expect(!unlinked.succeeded && unlinked.stderr.contains("is not in the signing history of the signer targeting API 28")
                && unlinked.stderr.contains("(give it with --signer-lineage FILE"), "\(unlinked)")
        #expect(!FileManager.default.fileExists(atPath: unlinkedPath))
    }

    @Test("the planner's refusals are typed, carry their values and name no command-line option (the CLI adds them)")
    func planRefusalsAreTyped() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let keys = Self.shared.keys.map(\.key)
        let lineage = try SigningCertificateLineage(contentsOf: Self.lineage(through: 1, in: dir))
        let stranger = keys[2].certificates[0].subjectDN
        let cases: [(RotationError, () throws -> Void)] = [
            (.signerNotInLineage(subject: stranger), { _ = try SignerRotation.plan(keys: [keys[0], keys[2]], lineage: lineage) }),
            (.noNewerSigner, { _ = try SignerRotation.plan(keys: [keys[0]], lineage: lineage) }),
            (.signerGivenTwice(subject: keys[0].certificates[0].subjectDN), { _ = try SignerRotation.plan(keys: [keys[0], keys[0]], lineage: lineage) }),
            (.developmentReleaseBelowV31(rotation: 28),
             { _ = try SignerRotation.plan(keys: [keys[0], keys[1]], lineage: lineage, rotationMinSdkVersion: 28, targetsDevRelease: true) }),
            (.developmentReleaseWithoutLineage, { _ = try SignerRotation.plan(keys: [keys[0]], lineage: nil, targetsDevRelease: true) }),
            (.targetBelowV3(level: 27),
             { _ = try SignerRotation.plan(keys: [keys[0]], lineage: nil, targeted: [.init(key: keys[1], minSdkVersion: 27, lineage: nil)]) }),
            (.rotationNotBelowTargeted(rotation: 33, firstTargeted: 33),
             { _ = try SignerRotation.plan(keys: [keys[0], keys[1]], lineage: lineage, targeted: [.init(key: keys[2], minSdkVersion: 33, lineage: nil)]) }),
            (.untargetedSignersWithoutLineage,
             { _ = try SignerRotation.plan(keys: [keys[0], keys[1]], lineage: nil, targeted: [.init(key: keys[2], minSdkVersion: 33, lineage: nil)]) }),
            (.signerOutsideHistory(subject: keys[0].certificates[0].subjectDN, level: 33),
             { _ = try SignerRotation.plan(keys: [keys[0]], lineage: nil, targeted: [.init(key: keys[1], minSdkVersion: 33, lineage: nil)]) }),
        ]
        for (expected, plan) in cases {
            #expect(throws: expected, "\(expected)") { try plan() }
            #expect(!expected.description.contains("--"), "\(expected)")
        }
    }
}
