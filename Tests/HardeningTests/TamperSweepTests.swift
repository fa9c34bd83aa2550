import APKCore
import Foundation
import Testing
import TestSupport
import Verify

/// Tamper sweep: flip one byte at a few hundred sampled positions of a signed APK and verify each copy.
///
/// With APK Signature Scheme v2/v3 every byte outside the APK Signing Block is integrity-protected: the
/// content digests cover section 1 (everything before the block: local headers and entry data), section 3 (the
/// central directory) and section 4 (the EOCD, comment included, with its central-directory offset taken as the
/// block's offset). Inside the block, the signed data is signed, the signatures are checked, the public key must
/// match the certificate, the lengths must parse, the v3 min/max SDK must repeat the signed ones, and the two
/// block-size fields must agree. What remains is the one part Android ignores:
///
/// - the value of the verity padding pair (ID 0x42726577): zero bytes that apksig's
///   `ApkSigningBlockUtils.generateApkSigningBlock` adds only to round the block to 4096 bytes, and that no
///   verifier reads (`getApkSignatureBlock`/`findApkSignatureSchemeBlock` skip pairs they do not look for).
///
/// So a flip there must verify and any other flip must fail. Every accepted flip is cross-checked with
/// `apksigner verify` (an accept where apksigner rejects would be a security bug), and a sample of rejected flips
/// too (so the sweep cannot pass by rejecting everything for the wrong reason). A sample also goes through the
/// `apkpatch verify --signature-only` CLI to check its exit status matches the library's verdict. (The verdict is the
/// signature verdict, as apksigner's: the aapt fixture compresses resources.arsc, which apkpatch's extra install
/// checks rightly refuse for targetSdkVersion 33 whatever the signature.)
@Suite(.serialized, .removesTemporaryDirectories) struct TamperSweepTests {
    /// One signed APK and what each of its bytes belongs to.
    struct Layout {
        var regions: [(name: String, range: Range<Int64>)] = []
        var verityPaddingValue: Range<Int64>?

        init(path: String) throws {
            let source = try MappedFile(path: path)
            let zip = try ZipArchive(source: source)
            for entry in zip.entries {
                regions.append(("local header of \(entry.name)", entry.localHeaderOffset..<entry.dataOffset))
                if entry.compressedSize > 0 { regions.append(("data of \(entry.name)", entry.dataRange)) }
            }
            let block = try #require(try SigningBlock.locate(in: source, centralDirectoryOffset: zip.centralDirectoryOffset),
                                     "the signed APK has no APK Signing Block")
            // Pairs start after the leading u64 size; each is u64 length, u32 ID, value.
            var offset = block.offset + 8
            for pair in block.pairs {
                let valueRange = (offset + 12)..<(offset + 12 + Int64(pair.value.count))
                regions.append(("signing block pair 0x\(String(pair.id, radix: 16)) header", offset..<valueRange.lowerBound))
                if pair.id == SigningBlock.ID.verityPadding {
                    verityPaddingValue = valueRange
                    regions.append(("verity padding value", valueRange))
                } else {
                    regions.append(("signing block pair 0x\(String(pair.id, radix: 16)) value", valueRange))
                }
                offset = valueRange.upperBound
            }
            regions.append(("signing block size fields and magic", block.offset..<(block.offset + 8)))
            regions.append(("signing block footer", offset..<zip.centralDirectoryOffset))
            regions.append(("central directory", zip.centralDirectoryRange))
            regions.append(("end of central directory", zip.centralDirectoryRange.upperBound..<source.count))
        }

        func region(of position: Int64) -> String {
            regions.first { $0.range.contains(position) }?.name ?? "between records"
        }

        /// A byte Android ignores (see the suite's comment).
        func isIgnored(_ position: Int64) -> Bool { verityPaddingValue?.contains(position) ?? false }

        /// About `perRegionKind` positions in each kind of region (entry data, local headers, signing block,
        /// verity padding, central directory, EOCD), chosen by a seeded generator so failures reproduce.
        func samplePositions(perRegionKind: Int, seed: UInt64) -> [Int64] {
            var generator = SplitMix64(seed: seed)
            let kinds: [String: [Range<Int64>]] = Dictionary(grouping: regions.filter { !$0.range.isEmpty }) { region in
                if region.name.hasPrefix("data of") { return "data" }
                if region.name.hasPrefix("local header") { return "local header" }
                if region.name.hasPrefix("signing block") { return "signing block" }
                return region.name
            }.mapValues { $0.map(\.range) }
            var positions = Set<Int64>()
            for (_, ranges) in kinds.sorted(by: { $0.key < $1.key }) {
                let total = ranges.reduce(Int64(0)) { $0 + $1.count64 }
                for _ in 0..<perRegionKind {
                    var pick = Int64(generator.next() % UInt64(total))
                    for range in ranges {
                        if pick < range.count64 { positions.insert(range.lowerBound + pick); break }
                        pick -= range.count64
                    }
                }
            }
            return positions.sorted()
        }
    }

    /// Keystore made by keytool, shared by both signers.
    static func makeKeyStore(in directory: URL) throws -> String {
        let path = directory.appendingPathComponent("release.p12").path
        try TestSupport.makeKeyStore(at: path, password: "android", dname: "CN=Tamper Sweep, O=apkpatch, C=US")
        return path
    }

    enum SigningTool: String, CaseIterable, CustomStringConvertible {
        case apksigner, apkpatch
        var description: String { rawValue }
    }

    static func signedFixture(with tool: SigningTool, in directory: URL) throws -> String {
        let unsigned = try FixtureAPK.cordovaLike().build(in: directory, name: "unsigned.apk")
        let keyStore = try makeKeyStore(in: directory)
        let output = directory.appendingPathComponent("signed-\(tool).apk").path
        let arguments = ["sign", "--ks", keyStore, "--ks-pass", "pass:android", "--ks-key-alias", "release", "--out", output, unsigned]
        let result = tool == .apksigner ? try TestSupport.run("apksigner", arguments) : try TestSupport.apkpatch(arguments)
        guard result.succeeded else { throw FixtureError(message: "\(tool) sign failed:\n\(result)") }
        let check = try TestSupport.run("apksigner", ["verify", output])
        guard check.succeeded else { throw FixtureError(message: "apksigner rejects the untampered APK:\n\(check)") }
        return output
    }

    @Test(arguments: SigningTool.allCases)
    func singleByteFlipsFailVerificationUnlessAndroidIgnoresTheByte(_ tool: SigningTool) throws {
        let directory = try TestSupport.makeTemporaryDirectory("tamper-\(tool)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let signed = try Self.signedFixture(with: tool, in: directory)
        let original = try TestSupport.readBytes(signed)
        let layout = try Layout(path: signed)
        #expect(layout.verityPaddingValue != nil, "expected a verity padding pair rounding the block to 4096 bytes")
        #expect(try Verifier().verify(path: signed).isSignatureVerified)

        let positions = layout.samplePositions(perRegionKind: 45, seed: tool == .apksigner ? 0x7a3e : 0x51c4)
        #expect(positions.count >= 200)
        let tampered = directory.appendingPathComponent("tampered.apk").path
        var wronglyAccepted: [String] = [], wronglyRejected: [String] = []
        var acceptedSample: [Int64] = [], rejectedSample: [Int64] = []
        for (index, position) in positions.enumerated() {
            var bytes = original
            bytes[Int(position)] ^= index % 2 == 0 ? 0x01 : 0x80
            try Data(bytes).write(to: URL(fileURLWithPath: tampered))
            let accepted = (try? Verifier().verify(path: tampered).isSignatureVerified) ?? false
            let what = "byte \(position) (\(layout.region(of: position)))"
            if accepted != layout.isIgnored(position) {
                if accepted { wronglyAccepted.append(what) } else { wronglyRejected.append(what) }
            }
            if accepted, acceptedSample.count < 6 { acceptedSample.append(position) }
            if !accepted, index % 23 == 0, rejectedSample.count < 10 { rejectedSample.append(position) }
            // The CLI must agree with the library (exit status 0 only when it verifies).
            if index % 25 == 0 {
                let cli = try TestSupport.apkpatch(["verify", "--signature-only", tampered])
                #expect(cli.succeeded == accepted, "apkpatch verify disagrees with Verifier on \(what): \(cli)")
            }
        }
        #expect(wronglyAccepted.isEmpty, "accepted after a flip Android would reject: \(wronglyAccepted)")
        #expect(wronglyRejected.isEmpty, "rejected after a flip of a byte Android ignores: \(wronglyRejected)")
        #expect(!acceptedSample.isEmpty, "the sample should include verity padding bytes")

        // Oracle: apksigner must agree with every sampled verdict.
        for (position, expected) in acceptedSample.map({ ($0, true) }) + rejectedSample.map({ ($0, false) }) {
            var bytes = original
            bytes[Int(position)] ^= 0x01
            try Data(bytes).write(to: URL(fileURLWithPath: tampered))
            let ours = (try? Verifier().verify(path: tampered).isSignatureVerified) ?? false
            let theirs = try TestSupport.run("apksigner", ["verify", tampered]).succeeded
            #expect(ours == expected && theirs == expected,
                    "byte \(position) (\(layout.region(of: position))): apkpatch \(ours), apksigner \(theirs), expected \(expected)")
        }
    }

    /// JAR signing (v1) alone protects much less: entry names and uncompressed contents through MANIFEST.MF and the
    /// .SF/.RSA files, but not ZIP metadata Android's v1 verifier never reads (timestamps, extra fields, "version
    /// made by", external attributes, the central directory's copies of them...). Which of those bytes are ignored
    /// is apksig's business, so here apksigner is the judge: every flip apkpatch accepts must be accepted by
    /// apksigner as well (checked for each one), and sampled rejected flips must be rejected by it too. Both run with
    /// --max-sdk-version 23, where v1 alone is enough (targetSdkVersion 33 otherwise demands v2).
    @Test func jarSignedOnlyFlipsAreAcceptedOnlyWhereApksignerAcceptsThem() throws {
        let directory = try TestSupport.makeTemporaryDirectory("tamper-v1")
        defer { try? FileManager.default.removeItem(at: directory) }
        let unsigned = try FixtureAPK.cordovaLike().build(in: directory, name: "unsigned.apk")
        let keyStore = try Self.makeKeyStore(in: directory)
        let signed = directory.appendingPathComponent("v1.apk").path
        let sign = try TestSupport.run("apksigner", ["sign", "--ks", keyStore, "--ks-pass", "pass:android", "--v2-signing-enabled", "false",
                                                     "--v3-signing-enabled", "false", "--out", signed, unsigned])
        try #require(sign.succeeded, "\(sign)")
        let options = VerificationOptions(maxSdkVersion: 23)
        #expect(try Verifier(options: options).verify(path: signed).isSignatureVerified)
        let original = try TestSupport.readBytes(signed)
        var generator = SplitMix64(seed: 0x7131)
        let positions = Set((0..<160).map { _ in Int(generator.next() % UInt64(original.count)) }).sorted()
        let tampered = directory.appendingPathComponent("tampered.apk").path
        var accepted: [Int] = [], rejectedSample: [Int] = []
        for (index, position) in positions.enumerated() {
            var bytes = original
            bytes[position] ^= 0x01
            try Data(bytes).write(to: URL(fileURLWithPath: tampered))
            if (try? Verifier(options: options).verify(path: tampered).isSignatureVerified) ?? false {
                accepted.append(position)
            } else if index % 20 == 0 {
                rejectedSample.append(position)
            }
        }
        #expect(accepted.count < positions.count / 2, "most single-byte flips must break a v1 signature (\(accepted.count) of \(positions.count) accepted)")
        for (position, expected) in accepted.prefix(30).map({ ($0, true) }) + rejectedSample.map({ ($0, false) }) {
            var bytes = original
            bytes[position] ^= 0x01
            try Data(bytes).write(to: URL(fileURLWithPath: tampered))
            let theirs = try TestSupport.run("apksigner", ["verify", "--max-sdk-version", "23", tampered]).succeeded
            #expect(theirs == expected, "byte \(position): apkpatch \(expected ? "accepts" : "rejects") it, apksigner \(theirs ? "accepts" : "rejects")")
        }
    }
}

