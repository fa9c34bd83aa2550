import APKCore
import Foundation
import Sign
import SignatureSchemes
import Testing
import TestSupport

/// Several signers without a lineage (`apksigner sign --key A … --next-signer --key B … --v3-signing-enabled
/// false`): v1 and v2 carry every signer; v3 (one signer) must be off, as apksigner requires; checked against
/// Debian's apksigner 31.
@Suite(.removesTemporaryDirectories) struct SeveralSignersTests {
    static let shared: (directory: URL, keys: [TestKeys.Files]) = TestSupport.sharedByTests {
        let directory = try! TestSupport.makeTemporaryDirectory("several-signers")
        let kinds: [TestKeys.Kind] = [.rsa2048, .rsa4096, .ecP256]
        return (directory, kinds.enumerated().map { try! TestKeys.make($0.element, in: directory, name: "signer\($0.offset)") })
    }

    static func signer(_ index: Int) -> [String] {
        ["--key", shared.keys[index].keyPK8, "--cert", shared.keys[index].certificatePEM]
    }

    static func sha256(of key: Int) -> String { shared.keys[key].key.certificates[0].fingerprint(.sha256).hexString }

    @Test("two RSA signers: apksigner 31's bytes (JAR files per signer, one v2 block with both, no v3)")
    func twoSignersMatchApksigner() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let theirs = dir.appendingPathComponent("theirs.apk").path, ours = dir.appendingPathComponent("ours.apk").path
        let signers = Self.signer(0) + ["--next-signer"] + Self.signer(1) + ["--v3-signing-enabled", "false"]
        let apksigner = try TestSupport.run("apksigner", ["sign"] + signers + ["--out", theirs, input])
        #expect(apksigner.succeeded, "\(apksigner)")
        let sign = try TestSupport.apkpatch(["sign"] + signers + ["--alignment-preserved", "true", "--misaligned-apk-permitted", "true", "--lib-page-alignment", "4096", "--out", ours, input])
        #expect(sign.succeeded, "\(sign)")
        #expect(try TestSupport.readBytes(ours) == (try TestSupport.readBytes(theirs)), "apksigner's bytes")

        let names = try APKFacts(ours).archive.entries.map(\.name).filter { $0.hasPrefix("META-INF/") }
        #expect(names == ["META-INF/SIGNER0.SF", "META-INF/SIGNER0.RSA", "META-INF/SIGNER1.SF", "META-INF/SIGNER1.RSA", "META-INF/MANIFEST.MF"])
        let block = try #require(try APKFacts(ours).signingBlock)
        #expect(block.value(for: SigningBlock.ID.v3) == nil)
        let v2 = try SignatureSchemeBlock(decoding: try #require(block.value(for: SigningBlock.ID.v2)), version: .v2)
        #expect(v2.signers.map { $0.signatures.map(\.algorithmID) } == [[0x0103], [0x0104]], "each signer with its own algorithm (RSA 4096: SHA-512)")

        for tool in ["apksigner", "apkpatch"] {
            let arguments = ["verify", "-v", "--print-certs"] + (tool == "apkpatch" ? ["--signature-only"] : []) + [ours]
            let verify = tool == "apksigner" ? try TestSupport.run("apksigner", arguments) : try TestSupport.apkpatch(arguments)
            #expect(verify.succeeded, "\(tool): \(verify)")
            #expect(verify.stdout.contains("Verified using v3 scheme (APK Signature Scheme v3): false"), "\(tool): \(verify.stdout)")
            #expect(verify.stdout.contains("Number of signers: 2"), "\(tool): \(verify.stdout)")
            #expect(verify.stdout.contains("Signer #2 certificate SHA-256 digest: \(Self.sha256(of: 1))"), "\(tool): \(verify.stdout)")
        }
    }

    @Test("an EC signer beside an RSA one verifies with both tools; v3 with them, and clashing names, are refused")
    func mixedSignersAndRefusals() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let ours = dir.appendingPathComponent("ours.apk").path
        let sign = try TestSupport.apkpatch(["sign"] + Self.signer(2) + ["--next-signer"] + Self.signer(0) + ["--v3-signing-enabled", "false",
                                                                                                         "--min-sdk-version", "21", "--out", ours, input])
        #expect(sign.succeeded, "\(sign)")
        let verify = try TestSupport.run("apksigner", ["verify", "-v", "--print-certs", ours])
        #expect(verify.succeeded && verify.stdout.contains("Number of signers: 2")
                && verify.stdout.contains("Signer #1 certificate SHA-256 digest: \(Self.sha256(of: 2))"), "\(verify)")
        #expect(try TestSupport.apkpatch(["verify", "--signature-only", ours]).succeeded)

        // v3 holds one signer: on (by default or asked for) it is refused, as apksigner refuses it.
        for v3Option in [[], ["--v3-signing-enabled", "true"]] {
            let v3 = try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--next-signer"] + Self.signer(1) + v3Option + ["--out", ours, input])
            #expect(!v3.succeeded && v3.stderr.contains("holds one signer") && v3.stderr.contains("--v3-signing-enabled false"), "\(v3)")
        }

        // Two keys whose files have the same name make the same JAR file names.
        let other = try TestSupport.makeTemporaryDirectory()
        let twin = try TestKeys.make(.rsa2048, in: other, name: "signer0")
        let clash = try TestSupport.apkpatch(["sign"] + Self.signer(0) + ["--next-signer", "--key", twin.keyPK8, "--cert", twin.certificatePEM,
                                                                          "--v3-signing-enabled", "false", "--out", ours, input])
        #expect(!clash.succeeded && clash.stderr.contains("same name"), "\(clash)")
    }
}

/// `--align-file-size`: the ZIP comment grows so the signed APK's size is a multiple of 4096 (apksig
/// `EocdRecord.createWithPaddedComment`), and the signatures cover the padded end record.
@Suite(.removesTemporaryDirectories) struct AlignFileSizeTests {
    @Test("the signed APK's size rounds up to 4096 bytes through the comment, and verifies; without a signing block nothing changes")
    func alignFileSize() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let key = try TestKeys.make(.rsa2048, in: dir, name: "k")
        let signer = ["--key", key.keyPK8, "--cert", key.certificatePEM]
        let plain = dir.appendingPathComponent("plain.apk").path, aligned = dir.appendingPathComponent("aligned.apk").path
        #expect(try TestSupport.apkpatch(["sign"] + signer + ["--out", plain, input]).succeeded)
        let sign = try TestSupport.apkpatch(["sign"] + signer + ["--align-file-size", "--out", aligned, input])
        #expect(sign.succeeded, "\(sign)")
        let plainBytes = try TestSupport.readBytes(plain), alignedBytes = try TestSupport.readBytes(aligned)
        #expect(plainBytes.count % 4096 != 0, "the fixture must need padding for this test to mean anything")
        #expect(alignedBytes.count % 4096 == 0 && alignedBytes.count == (plainBytes.count + 4095) / 4096 * 4096)
        let end = try ZipArchive.findEndOfCentralDirectory(in: MappedFile(path: aligned))
        #expect(end.comment == [UInt8](repeating: 0, count: alignedBytes.count - plainBytes.count))
        // Everything before the signing block is the same; the signatures differ (they cover the end record).
        let block = try #require(try APKFacts(aligned).signingBlock)
        #expect(alignedBytes[..<Int(block.offset)] == plainBytes[..<Int(block.offset)])
        #expect(try APKFacts(plain).signingBlock?.value(for: SigningBlock.ID.v2) != block.value(for: SigningBlock.ID.v2))
        let verify = try TestSupport.run("apksigner", ["verify", "-v", aligned])
        #expect(verify.succeeded && verify.stdout.contains("Verified using v2 scheme (APK Signature Scheme v2): true"), "\(verify)")
        #expect(try TestSupport.apkpatch(["verify", "--signature-only", aligned]).succeeded)
        #expect(try TestSupport.run("zipalign", ["-c", "-p", "4", aligned]).succeeded)

        let v1Only = dir.appendingPathComponent("v1.apk").path
        #expect(try TestSupport.apkpatch(["sign"] + signer + ["--align-file-size", "--v2-signing-enabled", "false", "--v3-signing-enabled", "false",
                                                              "--v4-signing-enabled", "false", "--out", v1Only, input]).succeeded)
        #expect(try ZipArchive.findEndOfCentralDirectory(in: MappedFile(path: v1Only)).comment.isEmpty, "apksig pads only with a signing block")
    }
}

/// `--verity-enabled`: the verity variants of the v2/v3 algorithms over the fs-verity root hash (8-byte zero
/// salt) of the signed APK, as apksig computes it.
@Suite(.removesTemporaryDirectories) struct VeritySigningTests {
    @Test("--verity-enabled is apksigner 31's output byte for byte (RSA), and verifies with both tools (RSA, EC, with --align-file-size)")
    func verityMatchesApksigner() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let rsa = try TestKeys.make(.rsa2048, in: dir, name: "rsa")
        let signer = ["--key", rsa.keyPK8, "--cert", rsa.certificatePEM]
        let theirs = dir.appendingPathComponent("theirs.apk").path, ours = dir.appendingPathComponent("ours.apk").path
        let apksigner = try TestSupport.run("apksigner", ["sign"] + signer + ["--verity-enabled", "true", "--out", theirs, input])
        #expect(apksigner.succeeded, "\(apksigner)")
        let sign = try TestSupport.apkpatch(["sign"] + signer + ["--verity-enabled", "--alignment-preserved", "true", "--misaligned-apk-permitted", "true", "--lib-page-alignment", "4096", "--out", ours, input])
        #expect(sign.succeeded, "\(sign)")
        #expect(try TestSupport.readBytes(ours) == (try TestSupport.readBytes(theirs)), "apksigner's bytes")
        #expect(try TestSupport.readBytes(ours + ".idsig") == (try TestSupport.readBytes(theirs + ".idsig")), "apksigner's .idsig")
        let block = try #require(try APKFacts(ours).signingBlock)
        for (id, version) in [(SigningBlock.ID.v2, SignatureSchemeVersion.v2), (SigningBlock.ID.v3, .v3)] {
            let value = try #require(block.value(for: id))
            let signer = try #require(try SignatureSchemeBlock(decoding: value, version: version).signers.first)
            #expect(signer.signatures.map(\.algorithmID) == [0x0103, 0x0421], "\(version)")
        }

        let ec = try TestKeys.make(.ecP256, in: dir, name: "ec")
        let ecOut = dir.appendingPathComponent("ec.apk").path
        #expect(try TestSupport.apkpatch(["sign", "--key", ec.keyPK8, "--cert", ec.certificatePEM, "--verity-enabled", "--align-file-size", "--out", ecOut, input]).succeeded)
        #expect(try TestSupport.readBytes(ecOut).count % 4096 == 0)
        for path in [ours, ecOut] {
            let verify = try TestSupport.run("apksigner", ["verify", "-v", path])
            #expect(verify.succeeded && verify.stdout.contains("Verified using v3 scheme (APK Signature Scheme v3): true"), "\(verify)")
            let ourVerify = try TestSupport.apkpatch(["verify", "--signature-only", "-v", path])
            #expect(ourVerify.succeeded, "\(ourVerify)")
        }
        let ecBlock = try #require(try APKFacts(ecOut).signingBlock)
        let ecValue = try #require(ecBlock.value(for: SigningBlock.ID.v3))
        let ecSigner = try #require(try SignatureSchemeBlock(decoding: ecValue, version: .v3).signers.first)
        #expect(ecSigner.signatures.map(\.algorithmID) == [0x0201, 0x0423])
    }
}

/// `pinlist.meta` (apksig `Hints`): regenerated from `assets/com.android.hints.pins.txt` when the APK is signed.
@Suite(.removesTemporaryDirectories) struct PinListTests {
    @Test("pin hints give apksigner 31's entry ranges; pinlist.meta goes before the JAR signature, which lists it, as apksig now does")
    func pinListMatchesApksigner() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        var fixture = FixtureAPK.cordovaLike()
        fixture.assets["com.android.hints.pins.txt"] = Array("""
        classes.dex
        lib/.*\\.so 0 100
        # whole-line comment
        assets/www/js/module[0-3]\\.js 10 50 # trailing comment
        AndroidManifest.xml 100000 100001

        """.utf8)
        let input = try fixture.build(in: dir)
        let key = try TestKeys.make(.rsa2048, in: dir, name: "pin")
        let signer = ["--key", key.keyPK8, "--cert", key.certificatePEM]
        let theirs = dir.appendingPathComponent("theirs.apk").path, ours = dir.appendingPathComponent("ours.apk").path
        let apksigner = try TestSupport.run("apksigner", ["sign"] + signer + ["--out", theirs, input])
        #expect(apksigner.succeeded, "\(apksigner)")
        // apksigner's layout, with aapt's unaligned resources.arsc kept (apksigner writes it without a word).
        let layout = ["--alignment-preserved", "true", "--lib-page-alignment", "4096", "--misaligned-apk-permitted", "true"]
        let sign = try TestSupport.apkpatch(["sign"] + signer + layout + ["--out", ours, input])
        #expect(sign.succeeded, "\(sign)")
        func pinList(_ apk: String) throws -> [UInt8] {
            let out = apk + ".pins"
            #expect(try TestSupport.run("sh", ["-c", "unzip -p \"$0\" pinlist.meta > \"$1\"", apk, out]).succeeded)
            return try TestSupport.readBytes(out)
        }
        let ourList = try pinList(ours), theirList = try pinList(theirs)
        // The entries' ranges (data cut by the patterns, then the local header) are apksigner's; the last range,
        // "from the pin list on", starts where apksig now writes the list: before the JAR signature (apksigner 31
        // wrote it after, unsigned by v1).
        #expect(ourList.count == 13 * 8 && ourList.dropLast(8) == theirList.dropLast(8), "\(ourList) vs \(theirList)")
        let facts = try APKFacts(ours)
        let names = facts.archive.entries.map(\.name)
        let entry = try #require(facts.archive.entry(named: "pinlist.meta"))
        #expect(names.suffix(4) == ["pinlist.meta", "META-INF/PIN.SF", "META-INF/PIN.RSA", "META-INF/MANIFEST.MF"], "\(names)")
        let last = ourList.suffix(8).map(UInt32.init)
        #expect(last[0] << 24 | last[1] << 16 | last[2] << 8 | last[3] == UInt32(entry.localHeaderOffset))
        #expect(Array(ourList.suffix(4)) == [0x7f, 0xff, 0xff, 0xff])
        #expect(try TestSupport.run("unzip", ["-p", ours, "META-INF/MANIFEST.MF"]).stdout.contains("Name: pinlist.meta"))
        #expect(try TestSupport.run("apksigner", ["verify", ours]).succeeded)
        #expect(try TestSupport.apkpatch(["verify", "--signature-only", ours]).succeeded)

        // Signing the signed APK again: the old pinlist.meta goes, its record too (apksig copies the record's
        // bytes on as data between records), one new one is written.
        let again = dir.appendingPathComponent("again.apk").path
        #expect(try TestSupport.apkpatch(["sign"] + signer + layout + ["--out", again, ours]).succeeded)
        let listing = try TestSupport.run("unzip", ["-Z1", again]).stdout.split(separator: "\n")
        #expect(listing.filter { $0 == "pinlist.meta" }.count == 1, "\(listing)")
        #expect(try TestSupport.run("apksigner", ["verify", again]).succeeded)
    }
}
