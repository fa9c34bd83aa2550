import APKCore
import Foundation
import OpenSSLWrapper
import SignatureSchemes
import TestSupport
import Testing
@testable import Verify

/// Conformance with apksig's own tests (`ApkVerifierTest.java`) for the APK Signing Block: its framing and
/// place in the ZIP layout, v3.1 rotation and v3 lineages. apksig's test APKs are rebuilt here: scheme blocks
/// are written by hand and signed with the OpenSSL CLI, so each case sits behind valid signatures. Where
/// Debian's apksigner (0.9) knows the feature it is the oracle; v3.1 is newer, and there the expected verdict
/// is apksig's, cited by test name.
enum BlockCraft {
    static func lp(_ bytes: [UInt8]) -> [UInt8] { LengthPrefixed.encode(bytes) }
    static func u32(_ value: UInt32) -> [UInt8] { value.littleEndianBytes }
    static func u64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    static func attribute(_ id: UInt32, _ value: [UInt8]) -> [UInt8] { u32(id) + value }
    static let anyLevel = UInt32(Int32.max)

    struct Key {
        let pem: String
        let certificate: [UInt8]
        let publicKey: [UInt8]
        /// RSA PKCS#1 v1.5 / ECDSA, both with SHA-256 (CHUNKED_SHA256).
        let algorithm: UInt32
    }

    /// An unsigned APK (the default fixture) and the tools to give it hand-made signing blocks.
    final class Workbench {
        let directory: URL
        /// The APK without a signing block (optionally with bytes between its central directory and EOCD).
        let base: [UInt8]
        let contentDigest: [UInt8]
        let centralDirectoryOffset: Int
        let endOfCentralDirectoryOffset: Int
        private var keys: [TestKey: Key] = [:]

        init(_ label: String, garbageBeforeEOCD: [UInt8] = [], configure: (inout FixtureAPK) -> Void = { _ in },
             rewrite: ([UInt8]) throws -> [UInt8] = { $0 }) throws {
            directory = try TestSupport.makeTemporaryDirectory("conformance-\(label)")
            var bytes = try rewrite(try VerifyFixtures.read(try VerifyFixtures.unsignedAPK(in: directory, configure: configure)))
            if !garbageBeforeEOCD.isEmpty {
                let eocd = Int(try VerifyFixtures.zip(bytes).endOfCentralDirectory.offset)
                bytes.insert(contentsOf: garbageBeforeEOCD, at: eocd)
            }
            base = bytes
            var limits = ZipArchive.Limits()
            limits.readsLikeAndroid = true
            limits.refusesUnaccountedBytes = false  // the garbage before the EOCD is what some fixtures are about
            let archive = try ZipArchive(source: ByteArrayDataSource(bytes), limits: limits)
            centralDirectoryOffset = Int(archive.centralDirectoryOffset)
            endOfCentralDirectoryOffset = Int(archive.endOfCentralDirectory.offset)
            let source = ByteArrayDataSource(bytes)
            contentDigest = try #require(try ContentDigester.digests(
                entries: try source.slice(0..<archive.centralDirectoryOffset),
                centralDirectory: try source.slice(archive.centralDirectoryOffset..<archive.endOfCentralDirectory.offset),
                endOfCentralDirectory: Array(bytes[Int(archive.endOfCentralDirectory.offset)...]), algorithms: [.chunkedSHA256])[.chunkedSHA256])
        }

        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

        func key(_ key: TestKey) throws -> Key {
            if let known = keys[key] { return known }
            let pem = path("\(key.rawValue).pem")
            try #require(try TestSupport.run("openssl", ["pkcs12", "-in", try key.keystore, "-passin", "pass:\(TestKeys.password)", "-nodes", "-out", pem]).succeeded)
            func der(_ arguments: [String], _ name: String) throws -> [UInt8] {
                try #require(try TestSupport.run("openssl", arguments + ["-outform", "DER", "-out", path(name)]).succeeded)
                return try VerifyFixtures.read(path(name))
            }
            let made = Key(pem: pem, certificate: try der(["x509", "-in", pem], "\(key.rawValue).cer"),
                           publicKey: try der(["pkey", "-in", pem, "-pubout"], "\(key.rawValue).spki"),
                           algorithm: key == .ecP256 || key == .ecP384 ? 0x0201 : 0x0103)
            keys[key] = made
            return made
        }

        func sign(_ data: [UInt8], with key: Key, digest: String = "-sha256") throws -> [UInt8] {
            let input = path("data-\(UUID().uuidString)")
            try VerifyFixtures.write(data, to: input)
            let result = try TestSupport.run("openssl", ["dgst", digest, "-sign", key.pem, "-out", input + ".sig", input])
            try #require(result.succeeded, "\(result)")
            return try VerifyFixtures.read(input + ".sig")
        }

        /// A v2 signer block over this APK's contents.
        func v2Signer(_ key: TestKey, attributes: [[UInt8]] = [], certificate: [UInt8]? = nil) throws -> [UInt8] {
            let key = try self.key(key)
            let signedData = lp(lp(u32(key.algorithm) + lp(contentDigest))) + lp(lp(certificate ?? key.certificate)) + lp(attributes.map(lp).flatMap { $0 })
            let signature = try sign(signedData, with: key)
            return lp(signedData) + lp(lp(u32(key.algorithm) + lp(signature))) + lp(key.publicKey)
        }

        /// A v3 / v3.1 signer block for API levels `min`...`max`.
        func v3Signer(_ key: TestKey, min: UInt32, max: UInt32 = anyLevel, attributes: [[UInt8]] = []) throws -> [UInt8] {
            let key = try self.key(key)
            let signedData = lp(lp(u32(key.algorithm) + lp(contentDigest))) + lp(lp(key.certificate)) + u32(min) + u32(max)
                + lp(attributes.map(lp).flatMap { $0 })
            let signature = try sign(signedData, with: key)
            return lp(signedData) + u32(min) + u32(max) + lp(lp(u32(key.algorithm) + lp(signature))) + lp(key.publicKey)
        }

        static func schemeBlock(_ signers: [[UInt8]]) -> [UInt8] { lp(signers.map(lp).flatMap { $0 }) }

        /// Writes the APK with a signing block made of `pairs` (apksig's layout, padded to 4096).
        @discardableResult
        func write(_ name: String, pairs: [(UInt32, [UInt8])]) throws -> String {
            let block = SigningBlock(pairs: pairs.map { SigningBlock.Pair(id: $0.0, value: $0.1) }).encoded()
            return try write(name, rawBlock: block)
        }

        /// Writes the APK with `rawBlock` (any bytes) between the entries and the central directory.
        @discardableResult
        func write(_ name: String, rawBlock: [UInt8]) throws -> String {
            let output = path(name)
            var bytes = Array(base[..<centralDirectoryOffset]) + rawBlock + Array(base[centralDirectoryOffset...])
            let offsetField = endOfCentralDirectoryOffset + rawBlock.count + 16
            bytes.replaceSubrange(offsetField..<(offsetField + 4), with: UInt32(centralDirectoryOffset + rawBlock.count).littleEndianBytes)
            try VerifyFixtures.write(bytes, to: output)
            return output
        }

        /// A proof-of-rotation attribute value for `keys` (oldest first), made by `apksigner rotate` and read
        /// out of its lineage file (magic 0x3eff39d1, version, uint32 length, then the v3 attribute value).
        func lineage(_ keys: [TestKey]) throws -> [UInt8] {
            var previous: String?
            var file = ""
            for index in 1..<keys.count {
                file = path("lineage-\(keys[...index].map(\.rawValue).joined(separator: "-")).bin")
                var arguments = ["rotate", "--out", file]
                if let previous { arguments += ["--in", previous] }
                arguments += ["--old-signer", "--ks", try keys[index - 1].keystore, "--ks-pass", "pass:\(TestKeys.password)",
                              "--new-signer", "--ks", try keys[index].keystore, "--ks-pass", "pass:\(TestKeys.password)"]
                let result = try TestSupport.run("apksigner", arguments)
                try #require(result.succeeded, "\(result)")
                previous = file
            }
            let bytes = try VerifyFixtures.read(file)
            try #require(bytes.count > 12 && Array(bytes[0..<4]) == u32(0x3eff_39d1), "unexpected lineage file layout")
            let length = Int(UInt32(bytes[8]) | UInt32(bytes[9]) << 8 | UInt32(bytes[10]) << 16 | UInt32(bytes[11]) << 24)
            try #require(length == bytes.count - 12, "unexpected lineage file layout")
            return Array(bytes[12...])
        }
    }

    static func codes(_ issues: [Verify.Issue]) -> Set<String> { VerifyFixtures.codes(issues) }
    static func sha256Hex(_ bytes: [UInt8]) -> String { VerificationDigest.sha256.hash(bytes).hexString }
}

@Suite("apksig conformance: APK Signing Block framing and ZIP layout", .removesTemporaryDirectories)
struct ApksigConformanceBlockFramingTests {
    typealias C = BlockCraft

    /// apksig testNoApkSignatureSchemeBlockRejected, v2-only-garbage-between-cd-and-eocd.apk: the central
    /// directory must end where the EOCD starts, else there is no APK Signing Block (`findApkSigningBlock`),
    /// even when the v2 signature covers the garbage. We used to verify such an APK by its v2 signature.
    @Test("bytes between the central directory and the EOCD hide the signing block (JAR_SIG_NO_MANIFEST)")
    func garbageBetweenCentralDirectoryAndEOCD() throws {
        let bench = try C.Workbench("garbage-cd-eocd", garbageBeforeEOCD: Array("GARBAGE".utf8))
        let apk = try bench.write("garbage.apk", pairs: [(SigningBlock.ID.v2, C.Workbench.schemeBlock([try bench.v2Signer(.rsa2048)]))])
        let oracle = try VerifyFixtures.apksignerVerify(apk, minSdkVersion: 24)
        #expect(!oracle.verifies, "\(oracle.output)")
        let report = try VerifyFixtures.verify(apk, minSdkVersion: 24)
        #expect(!report.isSignatureVerified)
        #expect(C.codes(report.signatureErrors) == ["JAR_SIG_NO_MANIFEST"], "\(report.signatureErrors)")

        // Control: the same signer over the same APK without the garbage verifies.
        let clean = try C.Workbench("garbage-control")
        let good = try clean.write("clean.apk", pairs: [(SigningBlock.ID.v2, C.Workbench.schemeBlock([try clean.v2Signer(.rsa2048)]))])
        #expect(try VerifyFixtures.apksignerVerify(good, minSdkVersion: 24).verifies)
        #expect(try VerifyFixtures.verify(good, minSdkVersion: 24).isSignatureVerified)
    }

    enum BrokenFrame: String, CaseIterable, CustomStringConvertible, Sendable {
        case headerSizeDiffers, bothSizesWrong, footerSizeTooSmall, footerSizeBeyondFile, wrongMagic
        var description: String { rawValue }
    }

    /// apksig v2-only-apk-sig-block-size-mismatch.apk, v3-only-with-rsa-pkcs1-sha512-4096-apk-sig-block-size-mismatch.apk,
    /// v2-only-wrong-apk-sig-block-magic.apk: a block whose framing is broken is not found (JAR_SIG_NO_MANIFEST
    /// for a v2-only APK), not a malformed APK.
    @Test("a signing block with broken framing is no signing block (JAR_SIG_NO_MANIFEST)", arguments: BrokenFrame.allCases)
    func brokenFraming(_ frame: BrokenFrame) throws {
        let bench = try C.Workbench("frame-\(frame.rawValue)")
        var block = SigningBlock(pairs: [SigningBlock.Pair(id: SigningBlock.ID.v2, value: C.Workbench.schemeBlock([try bench.v2Signer(.rsa2048)]))]).encoded()
        let footer = block.count - 24
        func setSize(at offset: Int, _ value: UInt64) { block.replaceSubrange(offset..<(offset + 8), with: C.u64(value)) }
        switch frame {
        case .headerSizeDiffers: setSize(at: 0, UInt64(block.count - 8 + 1))
        case .bothSizesWrong: setSize(at: 0, UInt64(block.count - 8 - 16)); setSize(at: footer, UInt64(block.count - 8 - 16))
        case .footerSizeTooSmall: setSize(at: footer, 23)
        case .footerSizeBeyondFile: setSize(at: footer, UInt64(Int32.max) - 100)
        case .wrongMagic: block[block.count - 1] ^= 0x01
        }
        let apk = try bench.write("broken.apk", rawBlock: block)
        let oracle = try VerifyFixtures.apksignerVerify(apk, minSdkVersion: 24)
        #expect(!oracle.verifies && oracle.output.contains("MANIFEST.MF"), "\(oracle.output)")
        let report = try VerifyFixtures.verify(apk, minSdkVersion: 24)
        #expect(C.codes(report.signatureErrors) == ["JAR_SIG_NO_MANIFEST"], "\(report.signatureErrors)")
    }

    /// apksig v1-with-apk-sig-block-but-without-apk-sig-scheme-v2-block.apk, and the same with a block Android
    /// cannot frame: a JAR-signed APK without stripping protection verifies by its JAR signature. We used to
    /// reject the broken block as a malformed APK.
    @Test("a v1-only APK with an unframeable block before its central directory verifies by JAR signature")
    func v1WithBrokenBlock() throws {
        let directory = try TestSupport.makeTemporaryDirectory("conformance-v1-broken-block")
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory) { $0.targetSdk = 29 }
        let signed = try VerifyFixtures.read(try VerifyFixtures.sign(unsigned, key: .rsa2048, schemes: SchemeSet(v1: true, v2: false, v3: false),
                                                                     output: directory.appendingPathComponent("v1.apk").path))
        for (name, mismatch) in [("framed", false), ("unframed", true)] {
            var block = SigningBlock(pairs: [SigningBlock.Pair(id: 0x1234_5678, value: [1, 2, 3, 4])]).encoded()
            if mismatch { block.replaceSubrange(0..<8, with: C.u64(12)) }
            let path = directory.appendingPathComponent("\(name).apk").path
            try VerifyFixtures.write(try VerifyFixtures.replacingSigningBlock(in: signed, with: block), to: path)
            let oracle = try VerifyFixtures.apksignerVerify(path)
            #expect(oracle.verifies, "\(name): \(oracle.output)")
            let report = try VerifyFixtures.verify(path)
            #expect(report.isSignatureVerified, "\(name): \(report.signatureErrors)")
            #expect(report.verifiedSchemes == [.v1])
        }
    }

    /// apksig `findApkSignatureSchemeBlock` walks pairs in order and returns the first with the ID: a malformed
    /// pair after the v2 pair is never reached (apksig testV2UnknownPairIgnoredInApkSigningBlock's
    /// neighbour). We used to parse every pair up front and reject the APK as malformed.
    @Test("a malformed pair after the v2 pair does not hide it; one before it does")
    func malformedPairOrder() throws {
        let bench = try C.Workbench("pair-order")
        let v2 = C.Workbench.schemeBlock([try bench.v2Signer(.rsa2048)])
        let goodPair = C.u64(UInt64(v2.count + 4)) + C.u32(SigningBlock.ID.v2) + v2
        let badPair = C.u64(1 << 40) + C.u32(0x1234_5678) + [0, 0, 0, 0]
        func frame(_ pairs: [UInt8]) -> [UInt8] {
            let size = UInt64(pairs.count + 8 + 16)
            return C.u64(size) + pairs + C.u64(size) + SigningBlock.magic
        }
        let after = try bench.write("after.apk", rawBlock: frame(goodPair + badPair))
        #expect(try VerifyFixtures.apksignerVerify(after, minSdkVersion: 24).verifies)
        let afterReport = try VerifyFixtures.verify(after, minSdkVersion: 24)
        #expect(afterReport.isSignatureVerified, "\(afterReport.signatureErrors)")

        let before = try bench.write("before.apk", rawBlock: frame(badPair + goodPair))
        #expect(!(try VerifyFixtures.apksignerVerify(before, minSdkVersion: 24).verifies))
        #expect(C.codes(try VerifyFixtures.verify(before, minSdkVersion: 24).signatureErrors) == ["JAR_SIG_NO_MANIFEST"])
    }
}

@Suite("apksig conformance: ZIP records as Android reads them", .removesTemporaryDirectories)
struct ApksigConformanceBlockZipTests {
    enum MethodCase: String, CaseIterable, CustomStringConvertible, Sendable {
        /// apksig testWeirdZipCompressionMethod (weird-compression-method.apk): the central directory says
        /// method 21 for the (deflated) signature block file; Android reads any method but stored as deflate.
        case weirdMethodInCentralDirectory
        /// apksig testZipCompressionMethodMismatchBetweenLfhAndCd (mismatched-compression-method.apk): the local
        /// header says stored, the central directory deflated; Android goes by the central directory.
        case storedInLocalHeaderOnly
        var description: String { rawValue }
    }

    /// Both used to be refused as malformed archives (a false reject of APKs Android installs).
    @Test("compression methods as Android reads them", arguments: MethodCase.allCases)
    func compressionMethods(_ testCase: MethodCase) throws {
        let directory = try TestSupport.makeTemporaryDirectory("conformance-\(testCase.rawValue)")
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory) { $0.targetSdk = 29 }
        var bytes = try VerifyFixtures.read(try VerifyFixtures.sign(unsigned, key: .rsa2048, schemes: SchemeSet(v1: true, v2: false, v3: false),
                                                                   output: directory.appendingPathComponent("v1.apk").path))
        let archive = try VerifyFixtures.zip(bytes)
        let entry = try #require(archive.entries.first { $0.name.hasPrefix("META-INF/") && $0.name.hasSuffix(".RSA") })
        #expect(entry.method == .deflated)
        switch testCase {
        case .weirdMethodInCentralDirectory:
            // The entry's central directory record: walk the records to the one with its local header offset.
            var position = Int(archive.centralDirectoryOffset)
            for _ in archive.entries {
                let offset = Int(bytes[position + 42]) | Int(bytes[position + 43]) << 8 | Int(bytes[position + 44]) << 16 | Int(bytes[position + 45]) << 24
                if offset == Int(entry.localHeaderOffset) { bytes[position + 10] = 21; bytes[position + 11] = 0 }
                let variable = (Int(bytes[position + 28]) | Int(bytes[position + 29]) << 8) + (Int(bytes[position + 30]) | Int(bytes[position + 31]) << 8)
                    + (Int(bytes[position + 32]) | Int(bytes[position + 33]) << 8)
                position += 46 + variable
            }
        case .storedInLocalHeaderOnly:
            bytes[Int(entry.localHeaderOffset) + 8] = 0
        }
        let path = directory.appendingPathComponent("edited.apk").path
        try VerifyFixtures.write(bytes, to: path)
        let oracle = try VerifyFixtures.apksignerVerify(path)
        #expect(oracle.verifies, "\(oracle.output)")
        let report = try VerifyFixtures.verify(path)
        #expect(report.isSignatureVerified, "\(report.signatureErrors)")
        #expect(report.verifiedSchemes == [.v1])
    }

    /// The archive rebuilt with `name`'s sizes (and, in the central directory, its local header offset) written as
    /// 0xFFFFFFFF and the real values in ZIP64 extended-information extra fields; `withExtra` false leaves the
    /// extra fields out.
    static func withZip64Entry(_ bytes: [UInt8], name: String, withExtra: Bool = true) throws -> [UInt8] {
        let archive = try VerifyFixtures.zip(bytes)
        func u64(_ value: Int64) -> [UInt8] { BlockCraft.u64(UInt64(value)) }
        var out: [UInt8] = []
        var offsets: [String: Int64] = [:]
        for entry in archive.entriesInFileOrder {
            offsets[entry.name] = Int64(out.count)
            if entry.name == name {
                var wide = entry
                wide.compressedSize = 0xffff_ffff
                wide.uncompressedSize = 0xffff_ffff
                out += wide.encodedLocalHeader(extra: withExtra ? [1, 0, 16, 0] + u64(entry.uncompressedSize) + u64(entry.compressedSize) : [])
            } else {
                out += entry.encodedLocalHeader(extra: entry.localExtra)
            }
            out += bytes[Int(entry.dataRange.lowerBound)..<Int(entry.dataRange.upperBound)]
        }
        let cdOffset = out.count
        for entry in archive.entries {
            let offset = offsets[entry.name]!
            if entry.name == name {
                var wide = entry
                wide.compressedSize = 0xffff_ffff
                wide.uncompressedSize = 0xffff_ffff
                wide.centralExtra = withExtra ? [1, 0, 24, 0] + u64(entry.uncompressedSize) + u64(entry.compressedSize) + u64(offset) : []
                out += wide.encodedCentralDirectoryRecord(localHeaderOffset: 0xffff_ffff)
            } else {
                out += entry.encodedCentralDirectoryRecord(localHeaderOffset: offset)
            }
        }
        out += EndOfCentralDirectory(entryCount: archive.entries.count, centralDirectorySize: Int64(out.count - cdOffset),
                                     centralDirectoryOffset: Int64(cdOffset)).encoded()
        return out
    }

    /// apksig verify_apkWithZip64Records_verifiesSuccessfully (v1v2v3-with-zip64-records.apk): sizes and the local
    /// header offset of 0xFFFFFFFF with the real values in ZIP64 extra fields are read, as apksig (2025) and
    /// libziparchive do. We refused every such APK as a ZIP64 archive. Without the extra field it is malformed.
    /// Debian's apksigner 0.9 predates this; the verdict is apksig's.
    @Test("ZIP64 extended-information fields in an entry's headers")
    func zip64EntryFields() throws {
        let bench = try BlockCraft.Workbench("zip64", rewrite: { try Self.withZip64Entry($0, name: "assets/data.bin") })
        let apk = try bench.write("zip64.apk", pairs: [(SigningBlock.ID.v2, BlockCraft.Workbench.schemeBlock([try bench.v2Signer(.rsa2048)])),
                                                      (SigningBlock.ID.v3, BlockCraft.Workbench.schemeBlock([try bench.v3Signer(.rsa2048, min: 28)]))])
        let bytes = try VerifyFixtures.read(apk)
        // Everything that rewrites APKs still refuses it.
        #expect(throws: ZipFormatError.self) { try ZipArchive(source: ByteArrayDataSource(bytes)) }
        let report = try VerifyFixtures.verify(apk, minSdkVersion: 24)
        #expect(report.isSignatureVerified, "\(report.signatureErrors)")
        #expect(report.verifiedSchemes == [.v2, .v3])

        // The central directory's ZIP64 field renamed away: 0xFFFFFFFF values with nothing to resolve them.
        let size = try #require(try VerifyFixtures.zip(try VerifyFixtures.read(try VerifyFixtures.unsignedAPK(in: bench.directory)))
            .entry(named: "assets/data.bin")).uncompressedSize
        let pattern: [UInt8] = [1, 0, 24, 0] + BlockCraft.u64(UInt64(size))
        let at = try #require((0...(bytes.count - pattern.count)).last { Array(bytes[$0..<($0 + pattern.count)]) == pattern })
        var broken = bytes
        broken[at] = 2
        let brokenPath = bench.path("broken.apk")
        try VerifyFixtures.write(broken, to: brokenPath)
        #expect(BlockCraft.codes(try VerifyFixtures.verify(brokenPath, minSdkVersion: 24).signatureErrors) == ["MALFORMED_APK"])
    }

    /// apksig's original-with-64k-files.apk: 65535 entries fit the EOCD's 16-bit count; without a ZIP64
    /// locator 0xFFFF is that count, not a ZIP64 marker. We refused such archives as ZIP64.
    @Test("an archive of exactly 65535 entries")
    func sixtyFourKEntries() throws {
        var data: [UInt8] = []
        var central: [UInt8] = []
        for index in 0..<0xffff {
            var entry = ZipEntry(nameBytes: Array("f\(index)".utf8), method: .stored, crc32: 0, compressedSize: 0, uncompressedSize: 0,
                                 lastModifiedTime: 0, lastModifiedDate: 0x3a21)
            entry.localHeaderOffset = Int64(data.count)
            central += entry.encodedCentralDirectoryRecord(localHeaderOffset: Int64(data.count))
            data += entry.encodedLocalHeader(extra: [])
        }
        let bytes = data + central + EndOfCentralDirectory(entryCount: 0xffff, centralDirectorySize: Int64(central.count),
                                                           centralDirectoryOffset: Int64(data.count)).encoded()
        let archive = try ZipArchive(source: ByteArrayDataSource(bytes))
        #expect(archive.entries.count == 0xffff)
        #expect(archive.entries.last?.name == "f65534")
    }

    /// apksig testMaxSizedZipEocdCommentAccepted (v2-only-max-sized-eocd-comment.apk): a 65535-byte EOCD
    /// comment, present when the APK was signed.
    @Test("a max-sized EOCD comment")
    func maxSizedComment() throws {
        let directory = try TestSupport.makeTemporaryDirectory("conformance-eocd-comment")
        var unsigned = try VerifyFixtures.read(try VerifyFixtures.unsignedAPK(in: directory))
        let eocd = Int(try VerifyFixtures.zip(unsigned).endOfCentralDirectory.offset)
        unsigned.removeSubrange((eocd + 20)...)
        unsigned += [0xff, 0xff] + (0..<0xffff).map { UInt8(ascii: "a") + UInt8($0 % 26) }
        let input = directory.appendingPathComponent("commented.apk").path
        try VerifyFixtures.write(unsigned, to: input)
        let apk = try VerifyFixtures.sign(input, key: .ecP256, schemes: SchemeSet(v1: false, v2: true, v3: false),
                                          output: directory.appendingPathComponent("signed.apk").path)
        #expect(try VerifyFixtures.zip(try VerifyFixtures.read(apk)).endOfCentralDirectory.comment.count == 0xffff)
        #expect(try VerifyFixtures.apksignerVerify(apk, minSdkVersion: 24).verifies)
        let report = try VerifyFixtures.verify(apk, minSdkVersion: 24)
        #expect(report.isSignatureVerified, "\(report.signatureErrors)")
    }
}

@Suite("apksig conformance: v3.1 rotation and v3 lineages", .removesTemporaryDirectories)
struct ApksigConformanceBlockRotationTests {
    typealias C = BlockCraft
    static let rotationMinSdk = AdditionalAttribute.ID.rotationMinSdkVersion
    static let proofOfRotation = AdditionalAttribute.ID.proofOfRotation
    static let devRelease = AdditionalAttribute.ID.signerTargetsDevRelease

    enum V31Case: String, CaseIterable, CustomStringConvertible, Sendable {
        /// verifyV31_rotationTarget34_containsExpectedSigners (v31-rsa-2048_2-tgt-10000-1-tgt-28.apk).
        case target10000
        /// verify31_minSdkVersionT_resultSuccessfullyVerified (v31-rsa-2048_2-tgt-33-1-tgt-28.apk, --min-sdk-version 33).
        case target33
        /// verifyV31_missingStrippingAttr_warningReported (v31-tgt-33-no-v3-attr.apk).
        case noV3Attribute
        /// verifyV31_strippingAttrMismatch_errorReportedOnSupportedVersions (v31-tgt-34-v3-attr-value-33.apk).
        case attributeMismatch
        /// verifyV31_missingV31Block_errorReportedOnSupportedVersions (v31-block-stripped-v3-attr-value-33.apk).
        case v31Stripped
        /// verifyV31_v31BlockWithoutV3Block_reportsError (v31-tgt-33-no-v3-block.apk).
        case noV3Block
        /// verifyV31_rotationTargetsDevRelease_resultReportsDevReleaseFlag (v31-rsa-2048_2-tgt-10000-dev-release.apk).
        case devRelease
        /// verifyV3_v3RotatedSignerTargetsDevRelease_warningReported (v3-rsa-2048_2-tgt-dev-release.apk).
        case devReleaseOnV3
        var description: String { rawValue }
    }

    /// v3.1 (block 0x1b93ad61) is newer than Debian's apksigner 0.9, so these assert apksig's verdicts from
    /// the tests named on each case. The original key (RSA) signs v3.0 up to the rotation level; the rotated key
    /// (EC P-256, lineage RSA → EC) signs v3.1 from it.
    @Test("v3.1 rotation, as apksig's ApkVerifierTest expects", arguments: V31Case.allCases)
    func v31(_ testCase: V31Case) throws {
        let bench = try C.Workbench("v31-\(testCase.rawValue)")
        let lineage = C.attribute(Self.proofOfRotation, try bench.lineage([.rsa2048, .ecP256]))
        func v3(max: UInt32, attribute: UInt32?, extra: [[UInt8]] = []) throws -> (UInt32, [UInt8]) {
            let attributes = (attribute.map { [C.attribute(Self.rotationMinSdk, C.u32($0))] } ?? []) + extra
            return (SigningBlock.ID.v3, C.Workbench.schemeBlock([try bench.v3Signer(.rsa2048, min: 28, max: max, attributes: attributes)]))
        }
        func v31(min: UInt32, extra: [[UInt8]] = []) throws -> (UInt32, [UInt8]) {
            (SigningBlock.ID.v31, C.Workbench.schemeBlock([try bench.v3Signer(.ecP256, min: min, attributes: [lineage] + extra)]))
        }
        // Each: the pairs, then (maxSdkVersion, expected verdict, expected errors, expected warning).
        typealias Expectation = (max: Int, verifies: Bool, errors: Set<String>, warning: String?)
        let pairs: [(UInt32, [UInt8])]
        var minSdk = 28
        let expectations: [Expectation]
        switch testCase {
        case .target10000:
            pairs = [try v31(min: 10000), try v3(max: 9999, attribute: 10000)]
            // apksig verifies a v3.1 block for [max, max] (`Builder.build` sets its minimum to its maximum), so
            // a v3.1 signer starting above --max-sdk-version is V3_MISSING_SDK_VERSIONS there, as here.
            expectations = [(Int(Int32.max), true, [], nil), (32, true, [], nil), (9999, false, ["V3_MISSING_SDK_VERSIONS"], nil)]
        case .target33:
            pairs = [try v31(min: 33), try v3(max: 32, attribute: 33)]
            minSdk = 33
            expectations = [(Int(Int32.max), true, [], nil)]
        case .noV3Attribute:
            pairs = [try v31(min: 33), try v3(max: 32, attribute: nil)]
            expectations = [(Int(Int32.max), true, [], "V31_ROTATION_MIN_SDK_ATTR_MISSING")]
        case .attributeMismatch:
            pairs = [try v31(min: 34), try v3(max: 33, attribute: 33)]
            expectations = [(Int(Int32.max), false, ["V31_ROTATION_MIN_SDK_MISMATCH"], nil), (32, true, [], nil)]
        case .v31Stripped:
            pairs = [try v3(max: 32, attribute: 33)]
            expectations = [(Int(Int32.max), false, ["V31_BLOCK_MISSING"], nil), (32, true, [], nil)]
        case .noV3Block:
            pairs = [try v31(min: 33)]
            minSdk = 33
            expectations = [(Int(Int32.max), false, ["V31_BLOCK_FOUND_WITHOUT_V3_BLOCK"], nil)]
        case .devRelease:
            pairs = [try v31(min: 10000, extra: [C.attribute(Self.devRelease, [])]), try v3(max: 9999, attribute: 10000)]
            expectations = [(Int(Int32.max), true, [], nil)]
        case .devReleaseOnV3:
            pairs = [try v3(max: C.anyLevel, attribute: nil, extra: [C.attribute(Self.devRelease, [])])]
            expectations = [(Int(Int32.max), true, [], "V31_ROTATION_TARGETS_DEV_RELEASE_ATTR_ON_V3_SIGNER")]
        }
        let apk = try bench.write("v31.apk", pairs: pairs)
        let rsa = try bench.key(.rsa2048).certificate, ec = try bench.key(.ecP256).certificate
        for expected in expectations {
            let report = try VerifyFixtures.verify(apk, minSdkVersion: minSdk, maxSdkVersion: expected.max)
            let label = "max \(expected.max)"
            #expect(report.isSignatureVerified == expected.verifies, "\(label): \(report.signatureErrors)")
            #expect(C.codes(report.signatureErrors) == expected.errors, "\(label): \(report.signatureErrors)")
            if let warning = expected.warning {
                #expect(C.codes(report.signatureWarnings).contains(warning), "\(label): \(report.signatureWarnings)")
            } else {
                #expect(report.signatureWarnings.isEmpty, "\(label): \(report.signatureWarnings)")
            }
            if expected.verifies {
                // The signer reported is the v3.1 one where v3.1 is checked (T+), else the v3.0 one.
                let v31Checked = expected.max >= 33 && pairs.contains { $0.0 == SigningBlock.ID.v31 }
                #expect(report.signers.first?.sha256 == C.sha256Hex(v31Checked ? ec : rsa), "\(label)")
            }
        }
    }

    enum LineageCase: String, CaseIterable, CustomStringConvertible, Sendable {
        /// Two v3 signers whose lineages are one history (RSA → EC P-256, then → EC P-384).
        case consistent
        /// Two v3 signers whose lineages share no certificate (RSA → P-256; P-384 → RSA 4096): apksig
        /// `consolidateLineages` → V3_INCONSISTENT_LINEAGES. We used to check only that sizes do not shrink.
        case unrelated
        /// The newer signer's lineage is shorter than the older one's (V3_INCONSISTENT_LINEAGES).
        case shrinking
        var description: String { rawValue }
    }

    /// Multi-signer v3 blocks (one signer per API range), judged by apksig's `V3SchemeVerifier.verify`
    /// (lineage sizes may not shrink; `SigningCertificateLineage.consolidateLineages` → `mergeLineageWith`).
    /// Debian's apksigner 0.9 cannot serve as oracle here: it reports none of these v3 blocks as verified.
    @Test("v3 signers for different API ranges must share one lineage", arguments: LineageCase.allCases)
    func v3Lineages(_ testCase: LineageCase) throws {
        let bench = try C.Workbench("v3-lineage-\(testCase.rawValue)")
        let first = C.attribute(Self.proofOfRotation, try bench.lineage([.rsa2048, .ecP256]))
        let signers: [[UInt8]]
        switch testCase {
        case .consistent:
            let longer = C.attribute(Self.proofOfRotation, try bench.lineage([.rsa2048, .ecP256, .ecP384]))
            signers = [try bench.v3Signer(.ecP256, min: 28, max: 30, attributes: [first]),
                       try bench.v3Signer(.ecP384, min: 31, attributes: [longer])]
        case .unrelated:
            let other = C.attribute(Self.proofOfRotation, try bench.lineage([.ecP384, .rsa4096]))
            signers = [try bench.v3Signer(.ecP256, min: 28, max: 30, attributes: [first]),
                       try bench.v3Signer(.rsa4096, min: 31, attributes: [other])]
        case .shrinking:
            let longer = C.attribute(Self.proofOfRotation, try bench.lineage([.rsa2048, .ecP256, .ecP384]))
            signers = [try bench.v3Signer(.ecP384, min: 28, max: 30, attributes: [longer]),
                       try bench.v3Signer(.ecP256, min: 31, attributes: [first])]
        }
        let apk = try bench.write("lineages.apk", pairs: [(SigningBlock.ID.v3, C.Workbench.schemeBlock(signers))])
        let verifies = testCase == .consistent
        let report = try VerifyFixtures.verify(apk, minSdkVersion: 28)
        #expect(report.isSignatureVerified == verifies, "\(report.signatureErrors)")
        #expect(C.codes(report.signatureErrors) == (verifies ? [] : ["V3_INCONSISTENT_LINEAGES"]), "\(report.signatureErrors)")
    }
}

@Suite("apksig conformance: v3 proof-of-rotation attribute", .removesTemporaryDirectories)
struct ApksigConformanceBlockProofOfRotationTests {
    typealias C = BlockCraft

    enum Case: String, CaseIterable, CustomStringConvertible, Sendable {
        case valid, signerIsNotLast, signerNotInLineage, badNodeSignature, truncated, unknownVersion, empty
        var description: String { rawValue }
        /// apksig `V3SchemeVerifier.parseSigner`: SecurityException → POR_DID_NOT_VERIFY,
        /// IllegalArgumentException (unknown version, empty value, certificate not in lineage) → POR_CERT_MISMATCH,
        /// any other failure (underflow) → MALFORMED_LINEAGE. We reported an empty value as MALFORMED_LINEAGE.
        var expectedErrors: Set<String> {
            switch self {
            case .valid: return []
            case .signerIsNotLast, .signerNotInLineage, .unknownVersion, .empty: return ["V3_SIG_POR_CERT_MISMATCH"]
            case .badNodeSignature: return ["V3_SIG_POR_DID_NOT_VERIFY"]
            case .truncated: return ["V3_SIG_MALFORMED_LINEAGE"]
            }
        }
    }

    @Test("proof-of-rotation attribute checks", arguments: Case.allCases)
    func proofOfRotation(_ testCase: Case) throws {
        let bench = try C.Workbench("por-\(testCase.rawValue)")
        var lineage = try bench.lineage([.rsa2048, .ecP256])
        var signer = TestKey.ecP256
        switch testCase {
        case .valid: break
        case .signerIsNotLast: signer = .rsa2048
        case .signerNotInLineage: signer = .ecP384
        case .badNodeSignature: lineage[lineage.count - 1] ^= 0x01  // the last bytes are node 2's signature
        case .truncated: lineage.removeLast()
        case .unknownVersion: lineage[0] = 2
        case .empty: lineage = []
        }
        let block = C.Workbench.schemeBlock([try bench.v3Signer(signer, min: 28, attributes: [C.attribute(AdditionalAttribute.ID.proofOfRotation, lineage)])])
        let apk = try bench.write("por.apk", pairs: [(SigningBlock.ID.v3, block)])
        let report = try VerifyFixtures.verify(apk, minSdkVersion: 28)
        #expect(report.isSignatureVerified == testCase.expectedErrors.isEmpty, "\(report.signatureErrors)")
        #expect(C.codes(report.signatureErrors) == testCase.expectedErrors, "\(report.signatureErrors)")
        // apksigner prints the issue's message; these are the messages of the expected issues.
        let oracle = try VerifyFixtures.apksignerVerify(apk, minSdkVersion: 28)
        #expect(oracle.verifies == testCase.expectedErrors.isEmpty, "\(oracle.output)")
        let message = ["V3_SIG_POR_CERT_MISMATCH": "differs from the associated certificate", "V3_SIG_POR_DID_NOT_VERIFY": "did not verify",
                       "V3_SIG_MALFORMED_LINEAGE": "Failed to parse the SigningCertificateLineage"]
        for code in testCase.expectedErrors { #expect(oracle.output.contains(message[code]!), "\(oracle.output)") }
    }
}

@Suite("apksig conformance: source stamps and platform ranges", .removesTemporaryDirectories)
struct ApksigConformanceBlockStampAndRangeTests {
    typealias C = BlockCraft

    /// apksig testSourceStampBlock_* (stamp-without-block.apk, stamp-certificate-mismatch.apk,
    /// stamp-malformed-signature.apk, stamp-apk-hash-mismatch-v2.apk): "A broken stamp should not block a
    /// signing scheme verified APK". A stamp-cert-sha256 entry with garbage source-stamp v1/v2 blocks, or with
    /// none, still verifies: a garbage stamp block is the stamp's SOURCE_STAMP_MALFORMED_SIGNATURE (the older
    /// v1 stamp block is not read), no block the APK's SOURCE_STAMP_SIG_MISSING warning. (Debian's apksigner
    /// 0.9 predates source stamps, so the verdict is apksig's; SourceStampTests compare with apksigner 35.)
    @Test("broken or missing source stamps never fail an APK", arguments: [false, true])
    func sourceStampTolerance(_ withBlocks: Bool) throws {
        let bench = try C.Workbench("stamp-\(withBlocks)") { $0.rawFiles["stamp-cert-sha256"] = Array(repeating: 0xab, count: 32) }
        var pairs: [(UInt32, [UInt8])] = [(SigningBlock.ID.v2, C.Workbench.schemeBlock([try bench.v2Signer(.rsa2048)]))]
        if withBlocks {
            pairs += [(SigningBlock.ID.sourceStamp, [0xde, 0xad]), (SigningBlock.ID.sourceStampV1, C.lp([1, 2, 3]) + [9])]
        }
        let apk = try bench.write("stamped.apk", pairs: pairs)
        let report = try VerifyFixtures.verify(apk, minSdkVersion: 24)
        #expect(report.isSignatureVerified, "\(report.signatureErrors)")
        #expect(report.signatureErrors.isEmpty, "\(report.signatureErrors)")
        if withBlocks {
            #expect(report.signatureWarnings.isEmpty && report.sourceStamp?.isVerified == false
                    && report.sourceStamp?.warnings.map(\.code) == [.sourceStampMalformedSignature], "\(report.signatureWarnings) \(String(describing: report.sourceStamp))")
        } else {
            #expect(report.signatureWarnings.map(\.code) == [.sourceStampSigMissing] && report.sourceStamp == nil, "\(report.signatureWarnings)")
        }
    }

    /// apksig testSignaturesIgnoredForMaxSDK (v1v2v3-with-rsa-2048-lineage-3-signers.apk): for a maximum
    /// below P the v3 block (and its v2 stripping-protection reference to it) is ignored; below N only the JAR
    /// signature counts. Checked against apksigner, which also names the signer for each range.
    @Test("a v1+v2+v3 APK with a three-signer lineage, verified for max SDK O, M and unbounded")
    func lineageForMaxSdk() throws {
        let bench = try C.Workbench("lineage-max-sdk") { $0.targetSdk = 29 }
        let lineageFile = bench.path("lineage.bin")
        for (index, pair) in [(TestKey.rsa2048, TestKey.ecP256), (.ecP256, .ecP384)].enumerated() {
            var arguments = ["rotate", "--out", lineageFile + "\(index)"]
            if index > 0 { arguments += ["--in", lineageFile + "\(index - 1)"] }
            arguments += ["--old-signer", "--ks", try pair.0.keystore, "--ks-pass", "pass:\(TestKeys.password)",
                          "--new-signer", "--ks", try pair.1.keystore, "--ks-pass", "pass:\(TestKeys.password)"]
            let result = try TestSupport.run("apksigner", arguments)
            try #require(result.succeeded, "\(result)")
        }
        let input = bench.path("unsigned.apk")
        try VerifyFixtures.write(bench.base, to: input)
        let apk = try VerifyFixtures.sign(input, key: .rsa2048, schemes: .all, output: bench.path("signed.apk"),
                                          extra: ["--next-signer", "--ks", try TestKey.ecP384.keystore, "--ks-pass", "pass:\(TestKeys.password)",
                                                  "--lineage", lineageFile + "1"])
        for max in [26, 23, Int(Int32.max)] {
            let oracle = try VerifyFixtures.apksignerVerify(apk, maxSdkVersion: max == Int(Int32.max) ? nil : max)
            try #require(oracle.verifies, "max \(max): \(oracle.output)")
            let report = try VerifyFixtures.verify(apk, maxSdkVersion: max)
            #expect(report.isSignatureVerified, "max \(max): \(report.signatureErrors)")
            #expect(report.signers.map(\.sha256) == oracle.certificateSHA256, "max \(max)")
            #expect(Set(report.verifiedSchemes.map(\.rawValue)) == oracle.schemes, "max \(max)")
        }
    }
}

@Suite("apksig conformance: certificate encodings", .removesTemporaryDirectories)
struct ApksigConformanceBlockCertificateTests {
    typealias C = BlockCraft

    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { DER.tlv(tag, content) }

    /// The certificate with its RSA modulus's leading zero byte dropped (a "negative" modulus); the certificate's
    /// own signature is left stale, which neither Android nor apksig checks.
    static func negativeModulus(_ certificate: [UInt8]) throws -> [UInt8] {
        let outer = try BERElement.parseSingle(certificate[...])
        var parts = try outer.children()
        var tbs = try parts[0].children()
        let spkiIndex = try #require(tbs.firstIndex { element in
            element.isUniversalSequence && ((try? element.children())?.last.map { $0.tagNumber == 3 && !$0.isConstructed } ?? false)
        })
        let spki = try tbs[spkiIndex].children()
        let key = try BERElement.parseSingle(spki[1].contents.dropFirst())
        let numbers = try key.children()
        try #require(numbers[0].contents.first == 0 && (numbers[0].contents.dropFirst().first ?? 0) & 0x80 != 0)
        let rsaKey = tlv(0x30, tlv(0x02, Array(numbers[0].contents.dropFirst())) + Array(numbers[1].encoded))
        let newSPKI = tlv(0x30, Array(spki[0].encoded) + tlv(0x03, [0] + rsaKey))
        let newTBS = tlv(0x30, tbs.indices.flatMap { $0 == spkiIndex ? newSPKI : Array(tbs[$0].encoded) })
        _ = parts.removeFirst(); tbs = []
        return tlv(0x30, newTBS + parts.flatMap { Array($0.encoded) })
    }

    /// apksig verifySignature_negativeModulusConscryptProvider (v1v2v3-rsa-2048-negmod-in-cert.apk): the
    /// certificate's modulus reads as negative, the signature record's key has it positive, and apksig's
    /// `encodePublicKey` makes them equal. We reported V2_SIG_PUBLIC_KEY_MISMATCH. (apksig only runs this with
    /// Conscrypt, which Debian's apksigner lacks, so the verdict is apksig's.)
    @Test("an RSA certificate with a negative-looking modulus matches its signer's key")
    func negativeModulusCertificate() throws {
        let bench = try C.Workbench("negmod")
        let rsa = try bench.key(.rsa2048)
        let negative = try Self.negativeModulus(rsa.certificate)
        #expect(negative.count == rsa.certificate.count - 1)
        let apk = try bench.write("negmod.apk", pairs: [(SigningBlock.ID.v2, C.Workbench.schemeBlock([try bench.v2Signer(.rsa2048, certificate: negative)]))])
        let report = try VerifyFixtures.verify(apk, minSdkVersion: 24)
        #expect(report.isSignatureVerified, "\(report.signatureErrors)")
        #expect(report.signers.first?.sha256 == C.sha256Hex(negative))
        // A different key in the certificate is still a mismatch.
        let other = try bench.write("other.apk", pairs: [(SigningBlock.ID.v2, C.Workbench.schemeBlock([try bench.v2Signer(.rsa2048, certificate: try bench.key(.rsa4096).certificate)]))])
        #expect(C.codes(try VerifyFixtures.verify(other, minSdkVersion: 24).signatureErrors) == ["V2_SIG_PUBLIC_KEY_MISMATCH_BETWEEN_CERTIFICATE_AND_SIGNATURES_RECORD"])
    }
}

@Suite("apksig conformance: RSA signature encodings", .removesTemporaryDirectories)
struct ApksigConformanceBlockRSASignatureTests {
    typealias C = BlockCraft

    /// A v2 signer (RSA 2048, id 0x0103) whose signature is `transform` of OpenSSL's over its signed data.
    static func signer(_ bench: C.Workbench, attribute: [UInt8], digest: String = "-sha256",
                       accept: ([UInt8]) -> Bool = { _ in true }, transform: ([UInt8]) -> [UInt8] = { $0 }) throws -> [UInt8]? {
        let key = try bench.key(.rsa2048)
        let signedData = C.lp(C.lp(C.u32(0x0103) + C.lp(bench.contentDigest))) + C.lp(C.lp(key.certificate))
            + C.lp(C.lp(C.attribute(0x1234_5678, attribute)))
        let signature = try bench.sign(signedData, with: key, digest: digest)
        guard accept(signature) else { return nil }
        return C.lp(signedData) + C.lp(C.lp(C.u32(0x0103) + C.lp(transform(signature)))) + C.lp(key.publicKey)
    }

    /// An RSA signature must be exactly as long as the modulus: Java's `Signature.verify` throws otherwise
    /// (V2_SIG_VERIFY_EXCEPTION) and Android's BoringSSL refuses it. We refused it too, but as
    /// V2_SIG_DID_NOT_VERIFY (OpenSSL's verdict), checking only for signatures longer than the modulus.
    @Test("an RSA signature one byte short (its leading zero dropped) is refused")
    func shortRSASignature() throws {
        let bench = try C.Workbench("rsa-short")
        var made: [UInt8]?
        for counter in UInt32(0)..<3000 where made == nil {
            made = try Self.signer(bench, attribute: C.u32(counter), accept: { $0.first == 0 }, transform: { Array($0.dropFirst()) })
        }
        let signer = try #require(made, "no signature with a leading zero byte in 3000 tries")
        let apk = try bench.write("short.apk", pairs: [(SigningBlock.ID.v2, C.Workbench.schemeBlock([signer]))])
        #expect(!(try VerifyFixtures.apksignerVerify(apk, minSdkVersion: 24).verifies))
        let report = try VerifyFixtures.verify(apk, minSdkVersion: 24)
        #expect(!report.isSignatureVerified)
        #expect(C.codes(report.signatureErrors) == ["V2_SIG_VERIFY_EXCEPTION"], "\(report.signatureErrors)")
    }

    /// apksig testV2SignatureDoesNotMatchSignedDataRejected, v2-only-with-rsa-pkcs1-sha256-2048-sig-does-not-verify.apk:
    /// "Signature claims to be RSA PKCS#1 v1.5 with SHA-256, but is actually using SHA-512" → V2_SIG_VERIFY_EXCEPTION
    /// (Java throws on the DigestInfo's other digest). We said V2_SIG_DID_NOT_VERIFY. Debian's apksigner runs on a
    /// newer JDK that returns false instead, so only its verdict is compared.
    @Test("an RSA PKCS#1 signature made with SHA-512 under the SHA-256 algorithm ID (V2_SIG_VERIFY_EXCEPTION)")
    func pkcs1WithOtherDigest() throws {
        let bench = try C.Workbench("rsa-sha512")
        let signer = try #require(try Self.signer(bench, attribute: [1], digest: "-sha512"))
        let apk = try bench.write("sha512.apk", pairs: [(SigningBlock.ID.v2, C.Workbench.schemeBlock([signer]))])
        #expect(!(try VerifyFixtures.apksignerVerify(apk, minSdkVersion: 24).verifies))
        let report = try VerifyFixtures.verify(apk, minSdkVersion: 24)
        #expect(C.codes(report.signatureErrors) == ["V2_SIG_VERIFY_EXCEPTION"], "\(report.signatureErrors)")
        // A signature that is simply wrong stays V2_SIG_DID_NOT_VERIFY.
        let wrong = try #require(try Self.signer(bench, attribute: [2], transform: { var s = $0; s[s.count / 2] ^= 1; return s }))
        let wrongAPK = try bench.write("wrong.apk", pairs: [(SigningBlock.ID.v2, C.Workbench.schemeBlock([wrong]))])
        #expect(C.codes(try VerifyFixtures.verify(wrongAPK, minSdkVersion: 24).signatureErrors) == ["V2_SIG_DID_NOT_VERIFY"])
    }
}

@Suite("apksig conformance: v3.2 hybrid blocks", .removesTemporaryDirectories)
struct ApksigConformanceV32Tests {
    typealias C = BlockCraft
    typealias Rotation = ApksigConformanceBlockRotationTests

    enum V32Case: String, CaseIterable, CustomStringConvertible, Sendable {
        /// v32-sig-stripped-v3-rsa-2048.apk: the v3.0 signer's hybrid attribute names a v3.2 block that is gone
        /// (apksig V3SchemeVerifier: V32_BLOCK_MISSING where the range reaches AndroidSdkVersion.C, 37).
        case strippedUnderV3
        /// v32-sig-stripped-v31-rsa-2048_2-v3-rsa-2048.apk: the same attribute on the v3.1 signer.
        case strippedUnderV31
        /// A v3.2 block present: Android 17 checks its ML-DSA signature, which apkpatch cannot.
        case present
        /// A hybrid attribute too short to hold its SDK version: malformed wherever it is read.
        case malformedAttribute
        var description: String { rawValue }
    }

    @Test("v3.2 stripping protection and blocks apkpatch cannot check", arguments: V32Case.allCases)
    func v32(_ testCase: V32Case) throws {
        let bench = try C.Workbench("v32-\(testCase.rawValue)")
        let hybrid = C.attribute(AdditionalAttribute.ID.hybridMinSdkVersion, C.u32(37))
        typealias Expectation = (max: Int, verifies: Bool, errors: Set<String>)
        let pairs: [(UInt32, [UInt8])]
        let expectations: [Expectation]
        switch testCase {
        case .strippedUnderV3:
            pairs = [(SigningBlock.ID.v3, C.Workbench.schemeBlock([try bench.v3Signer(.rsa2048, min: 28, attributes: [hybrid])]))]
            expectations = [(Int(Int32.max), false, ["V32_BLOCK_MISSING"]), (37, false, ["V32_BLOCK_MISSING"]), (36, true, [])]
        case .strippedUnderV31:
            let lineage = C.attribute(Rotation.proofOfRotation, try bench.lineage([.rsa2048, .ecP256]))
            pairs = [(SigningBlock.ID.v31, C.Workbench.schemeBlock([try bench.v3Signer(.ecP256, min: 33, attributes: [lineage, hybrid])])),
                     (SigningBlock.ID.v3, C.Workbench.schemeBlock([try bench.v3Signer(.rsa2048, min: 28, max: 32,
                                                                                      attributes: [C.attribute(Rotation.rotationMinSdk, C.u32(33))])]))]
            expectations = [(Int(Int32.max), false, ["V32_BLOCK_MISSING"]), (36, true, [])]
        case .present:
            pairs = [(SigningBlock.ID.v32, C.Workbench.schemeBlock([try bench.v3Signer(.rsa2048, min: 37)])),
                     (SigningBlock.ID.v3, C.Workbench.schemeBlock([try bench.v3Signer(.rsa2048, min: 28, attributes: [hybrid])]))]
            expectations = [(Int(Int32.max), false, ["V32_SIG_UNSUPPORTED"]), (36, true, [])]
        case .malformedAttribute:
            pairs = [(SigningBlock.ID.v3, C.Workbench.schemeBlock([try bench.v3Signer(.rsa2048, min: 28,
                                                                                      attributes: [C.attribute(AdditionalAttribute.ID.hybridMinSdkVersion, [37, 0])])]))]
            expectations = [(Int(Int32.max), false, ["V3_SIG_MALFORMED_ADDITIONAL_ATTRIBUTE"]),
                            (36, false, ["V3_SIG_MALFORMED_ADDITIONAL_ATTRIBUTE"])]
        }
        let apk = try bench.write("v32.apk", pairs: pairs)
        for expected in expectations {
            let report = try VerifyFixtures.verify(apk, minSdkVersion: 28, maxSdkVersion: expected.max)
            #expect(report.isSignatureVerified == expected.verifies, "max \(expected.max): \(report.signatureErrors)")
            #expect(C.codes(report.signatureErrors) == expected.errors, "max \(expected.max): \(report.signatureErrors)")
        }
        // The CLI, with apksigner's default range, refuses each of them.
        let cli = try TestSupport.apkpatch(["verify", "--min-sdk-version", "28", apk])
        #expect(!cli.succeeded, "\(cli)")
        if testCase == .present {
            // The report speaks of SDK versions; the command line names the option that verifies the rest.
            let report = try VerifyFixtures.verify(apk, minSdkVersion: 28, maxSdkVersion: Int(Int32.max))
            #expect(report.signatureErrors.allSatisfy { !$0.message.contains("--") }, "\(report.signatureErrors)")
            #expect(cli.stderr.contains("apkpatch cannot verify ML-DSA signatures. Pass --max-sdk-version 36 to verify everything else"), "\(cli)")
        }
    }
}

@Suite("apksig conformance: two signers in one block", .removesTemporaryDirectories)
struct ApksigConformanceTwoSignerTests {
    typealias C = BlockCraft

    enum SecondSigner: String, CaseIterable, CustomStringConvertible, Sendable {
        /// Both signers verify.
        case valid
        /// testV2TwoSignersRejectedWhenOneBroken (two-signers-second-signer-v2-broken.apk).
        case broken
        /// testV2TwoSignersRejectedWhenOneWithoutSignatures.
        case withoutSignatures
        /// testV2TwoSignersRejectedWhenOneWithoutSupportedSignatures.
        case withoutSupportedSignatures
        var description: String { rawValue }
    }

    /// Every signer of a v2 or v3 block must verify (apksig `V2SchemeVerifier.parseSigners`). Debian's
    /// apksigner is the oracle for v2; for v3 the expected issue is apksig's.
    @Test("a block whose second signer does not verify is rejected", arguments: SecondSigner.allCases, [SigningBlock.ID.v2, SigningBlock.ID.v3])
    func twoSigners(_ second: SecondSigner, scheme: UInt32) throws {
        let bench = try C.Workbench("two-\(second.rawValue)-\(scheme == SigningBlock.ID.v2 ? "v2" : "v3")")
        func signer(_ key: TestKey) throws -> [UInt8] {
            scheme == SigningBlock.ID.v2 ? try bench.v2Signer(key) : try bench.v3Signer(key, min: 24)
        }
        let first = try signer(.rsa2048)
        var other = try signer(.ecP256)
        // The signer: length-prefixed signed data, (v3) min and max SDK, length-prefixed signatures, public key.
        func u32(at offset: Int) -> Int { Int(other[offset]) | Int(other[offset + 1]) << 8 | Int(other[offset + 2]) << 16 | Int(other[offset + 3]) << 24 }
        let signaturesStart = 4 + u32(at: 0) + (scheme == SigningBlock.ID.v2 ? 0 : 8)
        let signaturesEnd = signaturesStart + 4 + u32(at: signaturesStart)
        let expectedCode: String?
        let prefix = scheme == SigningBlock.ID.v2 ? "V2" : "V3"
        switch second {
        case .valid:
            expectedCode = nil
        case .broken:
            other[signaturesEnd - 1] ^= 0x01
            expectedCode = "\(prefix)_SIG_VERIFY_EXCEPTION"  // a DER ECDSA signature with a flipped byte
        case .withoutSignatures:
            other.replaceSubrange(signaturesStart..<signaturesEnd, with: C.lp([]))
            expectedCode = "\(prefix)_SIG_NO_SIGNATURES"
        case .withoutSupportedSignatures:
            other.replaceSubrange(signaturesStart..<signaturesEnd, with: C.lp(C.lp(C.u32(0x0999) + C.lp([1, 2, 3]))))
            expectedCode = "\(prefix)_SIG_NO_SUPPORTED_SIGNATURES"
        }
        let apk = try bench.write("two.apk", pairs: [(scheme, C.Workbench.schemeBlock([first, other]))])
        let report = try VerifyFixtures.verify(apk, minSdkVersion: 24, maxSdkVersion: Int(Int32.max))
        #expect(report.isSignatureVerified == (expectedCode == nil), "\(report.signatureErrors)")
        if let expectedCode {
            let codes = C.codes(report.signatureErrors)
            // A flipped byte in a DER signature is either unparsable (exception) or a wrong signature.
            #expect(codes.contains(expectedCode) || (second == .broken && codes.contains("\(prefix)_SIG_DID_NOT_VERIFY")), "\(report.signatureErrors)")
        } else if scheme == SigningBlock.ID.v2 {
            // (Two v3 signers for the same API range: apksig keys its range check by maximum SDK, so it reports
            // the APK verified; which signer is listed is a report detail.)
            #expect(report.signers.count == 2)
        }
        if scheme == SigningBlock.ID.v2 {
            let oracle = try TestSupport.run("apksigner", ["verify", "--min-sdk-version", "24", apk])
            #expect(oracle.succeeded == report.isSignatureVerified, "apksigner: \(oracle)")
        }
    }
}

extension ApksigConformanceTwoSignerTests {
    /// testV2UnknownSignatureAlgorithmsIgnored / testV3UnknownSignatureAlgorithmsIgnored
    /// (v2-only-with-ignorable-unsupported-sig-algs.apk, v3-only-with-ignorable-unsupported-sig-algs.apk): a
    /// signature record with an algorithm nobody knows, beside one that verifies, is a warning, not an error.
    @Test("an unknown signature algorithm beside a known one is ignored", arguments: [SigningBlock.ID.v2, SigningBlock.ID.v3])
    func unknownAlgorithmBesideKnown(scheme: UInt32) throws {
        let bench = try C.Workbench("unknown-alg-\(scheme == SigningBlock.ID.v2 ? "v2" : "v3")")
        let key = try bench.key(.rsa2048)
        let unknown = C.u32(0x0999)
        let isV3 = scheme == SigningBlock.ID.v3
        let range = isV3 ? C.u32(24) + C.u32(C.anyLevel) : []
        let digests = C.lp(C.lp(unknown + C.lp([UInt8](repeating: 7, count: 32))) + C.lp(C.u32(key.algorithm) + C.lp(bench.contentDigest)))
        let signedData = digests + C.lp(C.lp(key.certificate)) + range + C.lp([])
        let signature = try bench.sign(signedData, with: key)
        let signatures = C.lp(C.lp(unknown + C.lp([1, 2, 3])) + C.lp(C.u32(key.algorithm) + C.lp(signature)))
        let signer = C.lp(signedData) + range + signatures + C.lp(key.publicKey)
        let apk = try bench.write("unknown.apk", pairs: [(scheme, C.Workbench.schemeBlock([signer]))])
        let report = try VerifyFixtures.verify(apk, minSdkVersion: 24, maxSdkVersion: Int(Int32.max))
        #expect(report.isSignatureVerified, "\(report.signatureErrors)")
        #expect(C.codes(report.signatureWarnings).contains(isV3 ? "V3_SIG_UNKNOWN_SIG_ALGORITHM" : "V2_SIG_UNKNOWN_SIG_ALGORITHM"), "\(report.signatureWarnings)")
        if !isV3 {
            let oracle = try TestSupport.run("apksigner", ["verify", "--min-sdk-version", "24", apk])
            #expect(oracle.succeeded, "apksigner: \(oracle)")
        }
    }
}

extension BlockCraft.Workbench {
    /// The APK's chunked SHA-512 content digest (for the SHA-512 signature algorithms).
    func contentDigest(sha512: Bool) throws -> [UInt8] {
        guard sha512 else { return contentDigest }
        let source = ByteArrayDataSource(base)
        return try #require(try ContentDigester.digests(
            entries: try source.slice(0..<Int64(centralDirectoryOffset)),
            centralDirectory: try source.slice(Int64(centralDirectoryOffset)..<Int64(endOfCentralDirectoryOffset)),
            endOfCentralDirectory: Array(base[endOfCentralDirectoryOffset...]), algorithms: [.chunkedSHA512])[.chunkedSHA512])
    }
}

extension ApksigConformanceTwoSignerTests {
    /// testV2OneSignerRSAPSSWithSHA256Accepted / ...SHA512 (v2-only-with-rsa-pss-sha256-%s.apk): RSASSA-PSS with MGF1
    /// over the same digest and a salt as long as the digest (apksig `SignatureAlgorithm.RSA_PSS_WITH_SHA*`);
    /// any other salt length does not verify. No oracle here: Debian's apksigner 0.9 asks the JDK for
    /// "SHA256withRSA/PSS", which OpenJDK 17 does not provide (NoSuchAlgorithmException), so the verdicts are
    /// apksig's (`getJcaSignatureAlgorithmAndParams`: MGF1 with the same digest, salt = digest length, trailer 1).
    @Test("RSA-PSS signatures in a v2 block: the salt as long as the digest verifies, another does not",
          arguments: [(0x0101, "-sha256", 32), (0x0102, "-sha512", 64), (0x0101, "-sha256", 20)])
    func rsaPSS(algorithm: Int, digest: String, salt: Int) throws {
        let bench = try C.Workbench("pss-\(algorithm)-\(salt)")
        let key = try bench.key(.rsa2048)
        let chunked = algorithm == 0x0102 ? try bench.contentDigest(sha512: true) : bench.contentDigest
        let signedData = C.lp(C.lp(C.u32(UInt32(algorithm)) + C.lp(chunked))) + C.lp(C.lp(key.certificate)) + C.lp([])
        let input = bench.path("pss-data"), output = bench.path("pss-sig")
        try VerifyFixtures.write(signedData, to: input)
        let signing = try TestSupport.run("openssl", ["dgst", digest, "-sign", key.pem, "-sigopt", "rsa_padding_mode:pss",
                                                      "-sigopt", "rsa_pss_saltlen:\(salt)", "-sigopt", "rsa_mgf1_md:\(digest.dropFirst())",
                                                      "-out", output, input])
        try #require(signing.succeeded, "\(signing)")
        let signature = try VerifyFixtures.read(output)
        let signer = C.lp(signedData) + C.lp(C.lp(C.u32(UInt32(algorithm)) + C.lp(signature))) + C.lp(key.publicKey)
        let apk = try bench.write("pss.apk", pairs: [(SigningBlock.ID.v2, C.Workbench.schemeBlock([signer]))])
        let report = try VerifyFixtures.verify(apk, minSdkVersion: 24, maxSdkVersion: Int(Int32.max))
        let expected = salt * 8 == (algorithm == 0x0102 ? 512 : 256)
        #expect(report.isSignatureVerified == expected, "\(report.signatureErrors)")
        if !expected { #expect(C.codes(report.signatureErrors) == ["V2_SIG_DID_NOT_VERIFY"], "\(report.signatureErrors)") }
    }
}
