import APKCore
import Foundation
import OpenSSLWrapper
import Sign
import SignatureSchemes
import Testing
import TestSupport
import Unpack

/// Signing checked against the real oracles: apksigner verify, apkverifier, zipalign, and apksigner's own
/// output byte for byte.
@Suite(.removesTemporaryDirectories) struct SignerTests {
    /// One RSA key for the suite (generating RSA keys is the slow part).
    static let shared: (directory: URL, rsa: TestKeys.Files) = TestSupport.sharedByTests {
        let directory = try! TestSupport.makeTemporaryDirectory("sign-keys")
        return (directory, try! TestKeys.make(.rsa2048, in: directory))
    }

    func sign(_ input: String, to output: String, key: SignerKey, schemes: Set<SignatureScheme> = [.v1, .v2, .v3],
              minSdk: Int? = nil, alignmentPreserved: Bool = false) throws -> SigningReport {
        let config = SignerConfig(key: key, schemes: schemes, minSdkVersion: minSdk, alignmentPreserved: alignmentPreserved)
        return try Signer(config: config).sign(try APKArchive(path: input), to: output)
    }

    func apksignerVerify(_ path: String, minSdk: Int) throws -> TestSupport.ProcessResult {
        try TestSupport.run("apksigner", ["verify", "-v", "--min-sdk-version", String(minSdk), path])
    }

    @Test("signed with v1+v2+v3, apksigner verifies at each API level", arguments: [14, 21, 24, 28, 33])
    func apksignerVerifiesAtLevel(level: Int) throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let output = dir.appendingPathComponent("signed.apk").path
        // The APK's minSdk is 21; for 14 the v1 digests must be SHA-1, which --min-sdk-version 14 selects.
        let report = try sign(input, to: output, key: Self.shared.rsa.key, minSdk: level)
        #expect(report.v1DigestAlgorithm == (level < 18 ? .sha1 : .sha256))
        #expect(report.signatureAlgorithms == [.rsaPKCS1v15WithSHA256])
        let result = try apksignerVerify(output, minSdk: level)
        #expect(result.succeeded, "\(result)")
        // apksigner checks (and reports true for) the schemes the API range needs: v1 below 24, v2 below 28.
        #expect(result.stdout.contains("Verified using v1 scheme (JAR signing): \(level < 24)"), "\(result)")
        #expect(result.stdout.contains("Verified using v2 scheme (APK Signature Scheme v2): \(level < 28)"), "\(result)")
        #expect(result.stdout.contains("Verified using v3 scheme (APK Signature Scheme v3): true"), "\(result)")
        let verifier = try TestSupport.run("apkverifier", [output])
        #expect(verifier.succeeded, "\(verifier)")
        #expect(verifier.stdout.contains("Verification scheme used: v3"), "\(verifier)")
    }

    @Test("minSdkVersion comes from the manifest; entries keep their bytes; output is zipaligned")
    func manifestMinSdkAndEntriesPreserved() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        var fixture = FixtureAPK.cordovaLike()
        fixture.minSdk = 16
        let input = try fixture.build(in: dir)
        let output = dir.appendingPathComponent("signed.apk").path
        let report = try sign(input, to: output, key: Self.shared.rsa.key)
        #expect(report.minSdkVersion == 16)
        #expect(!report.minSdkVersionOverridden)
        #expect(report.v1DigestAlgorithm == .sha1)
        #expect(report.v1SignerName == "RELEASE")
        let verify = try apksignerVerify(output, minSdk: 16)
        #expect(verify.succeeded, "\(verify)")
        let align = try TestSupport.run("zipalign", ["-c", "-p", "4", output])
        #expect(align.succeeded, "\(align)")

        let before = try APKFacts(input), after = try APKFacts(output)
        for entry in before.archive.entries where !entry.isDirectory {
            let raw = try after.rawData(entry.name)
            #expect(raw == (try before.rawData(entry.name)), "entry \(entry.name) changed")
            #expect(after.archive.entry(named: entry.name)?.crc32 == entry.crc32)
        }
        let names = after.archive.entries.map(\.name)
        #expect(Array(names.suffix(3)) == ["META-INF/RELEASE.SF", "META-INF/RELEASE.RSA", "META-INF/MANIFEST.MF"])
        // The signing block starts on a 4096-byte boundary and holds v2 then v3.
        let block = try #require(try after.signingBlock)
        #expect(block.offset % 4096 == 0)
        #expect(block.pairs.map(\.id).prefix(2) == [SigningBlock.ID.v2, SigningBlock.ID.v3])
    }

    @Test("by default every stored entry is re-aligned with a 0xd935 field: 4 bytes, .so files on 16 KiB pages")
    func defaultAlignment() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        var fixture = FixtureAPK.cordovaLike()
        fixture.storedExtensions = ["so", "png"]
        let input = try fixture.build(in: dir)
        let output = dir.appendingPathComponent("signed.apk").path
        let report = try sign(input, to: output, key: Self.shared.rsa.key)
        let before = try APKFacts(input), after = try APKFacts(output)
        var stored = 0
        for entry in after.archive.entries where !entry.name.hasPrefix("META-INF/") {
            let original = try #require(before.archive.entry(named: entry.name))
            if entry.method == .stored {
                stored += 1
                let multiple = entry.name.hasSuffix(".so") ? 16384 : 4
                #expect(entry.dataOffset % Int64(multiple) == 0, "\(entry.name) at \(entry.dataOffset)")
                #expect(ExtraField.alignmentMultiple(in: entry.localExtra) == multiple, "\(entry.name)")
            } else {
                #expect(entry.localExtra == original.localExtra, "compressed \(entry.name) must be copied as is")
            }
        }
        #expect(stored > 0)
        #expect(report.realignedEntryCount == stored)
        #expect(try apksignerVerify(output, minSdk: 21).succeeded)
    }

    @Test("the same input and RSA key give byte-identical output")
    func deterministic() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let a = dir.appendingPathComponent("a.apk").path, b = dir.appendingPathComponent("b.apk").path
        _ = try sign(input, to: a, key: Self.shared.rsa.key)
        _ = try sign(input, to: b, key: Self.shared.rsa.key)
        #expect(try TestSupport.readBytes(a) == (try TestSupport.readBytes(b)))
    }

    /// Inputs that exercise apksig's rules: SHA-1 JAR digests, a MANIFEST.MF main section to keep (with a
    /// value longer than a manifest line), a directory entry to drop, re-signing an already signed APK,
    /// a zipaligned APK, and v1/v2-only outputs.
    enum Variant: String, CaseIterable, Sendable {
        case plain, minSdk16, inputManifest, directoryEntry, resign, zipaligned, v1Only, v2Only, frameworkRes, reversedCentralDirectory
        case stampEntry
        /// Entries whose names are equal Swift Strings but different bytes: "caf\u{E9}" and "cafe\u{301}", KELVIN
        /// SIGN and "K" (two manifest sections each, in Java's order).
        case equivalentNames
    }

    @Test("byte-identical to apksigner's own output (alignment preserved, as the installed apksigner does)",
          arguments: Variant.allCases)
    func matchesApksignerByteForByte(variant: Variant) throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        var fixture = FixtureAPK.cordovaLike()
        if variant == .minSdk16 { fixture.minSdk = 16 }
        if variant == .v1Only { fixture.targetSdk = 29 }
        if variant == .inputManifest {
            fixture.rawFiles["META-INF/MANIFEST.MF"] = Array(("Manifest-Version: 1.0\r\nCreated-By: 1.8.0_45 (Oracle Corporation)\r\n"
                + "Built-By: a-build-user-with-a-rather-long-name-that-makes-this-line-longer-than-seventy-bytes\r\n"
                + "X-Zeta: last\r\nAnt-Version: Apache Ant 1.9\r\n\r\nName: classes.dex\r\nSHA-256-Digest: AAAA\r\n\r\n").utf8)
        }
        var input = variant == .frameworkRes ? TestSupport.frameworkRes : try fixture.build(in: dir)
        let keys = Self.shared.rsa
        // What apksigner signs: the input, or for a stale source-stamp entry the same APK without it. apksig drops
        // that entry but copies its record on as bytes between records; we drop the record too (a local record
        // no central directory entry names is an extra local entry to a strict reader), which makes our output
        // apksigner's output of the APK without the entry.
        var theirInput: String?
        if variant == .directoryEntry || variant == .stampEntry {
            // A directory entry (dropped), or a source-stamp entry (dropped, its record too).
            let python = """
            import shutil, sys, zipfile
            if sys.argv[2] == 'dir':
                with zipfile.ZipFile(sys.argv[1], 'a') as z:
                    z.writestr(zipfile.ZipInfo('assets/www/'), b'')
            else:
                shutil.copy(sys.argv[1], sys.argv[3])
                for path, stamp in [(sys.argv[1], True), (sys.argv[3], False)]:
                    with zipfile.ZipFile(path, 'a') as z:
                        if stamp:
                            z.writestr(zipfile.ZipInfo('stamp-cert-sha256', (2024, 1, 1, 0, 0, 0)), b'0' * 32)
                        # Deflated: never re-aligned, so the shift the dropped record makes leaves it as it is.
                        z.writestr(zipfile.ZipInfo('assets/after-stamp.txt', (2024, 1, 1, 0, 0, 0)), b'after', zipfile.ZIP_DEFLATED)
            """
            let stampless = dir.appendingPathComponent("stampless.apk").path
            let result = try TestSupport.run("python3", ["-c", python, input, variant == .directoryEntry ? "dir" : "stamp", stampless])
            #expect(result.succeeded, "\(result)")
            if variant == .stampEntry { theirInput = stampless }
        }
        if variant == .equivalentNames {
            let python = """
            import sys, zipfile
            with zipfile.ZipFile(sys.argv[1], 'a') as z:
                for name in ['assets/caf\\u00e9.txt', 'assets/cafe\\u0301.txt', 'assets/Key.txt', 'assets/\\u212aey.txt']:
                    z.writestr(zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0)), name.encode('utf-8'), zipfile.ZIP_DEFLATED)
            """
            let result = try TestSupport.run("python3", ["-c", python, input])
            #expect(result.succeeded, "\(result)")
            #expect(try APKFacts(input).archive.entries.filter { $0.name.hasPrefix("assets/") && $0.name.hasSuffix(".txt") }.count == 4)
        }
        if variant == .reversedCentralDirectory {
            // The central directory lists the entries in the reverse of their order in the file.
            let python = """
            import sys, zipfile
            z = zipfile.ZipFile(sys.argv[1], 'a')
            z.filelist.reverse()
            z._didModify = True
            z.close()
            """
            let result = try TestSupport.run("python3", ["-c", python, input])
            #expect(result.succeeded, "\(result)")
            let names = try APKFacts(input).archive.entries.map(\.name)
            #expect(names.first == "lib/arm64-v8a/libnative.so", "\(names)")
        }
        if variant == .resign {
            let first = dir.appendingPathComponent("first.apk").path
            let other = try TestKeys.make(.rsa2048, in: dir, name: "previous")
            let result = try TestSupport.run("apksigner", ["sign", "--key", other.keyPK8, "--cert", other.certificatePEM,
                                                           "--v4-signing-enabled", "false", "--out", first, input])
            #expect(result.succeeded, "\(result)")
            input = first
        }
        if variant == .zipaligned {
            let aligned = dir.appendingPathComponent("aligned.apk").path
            let result = try TestSupport.run("zipalign", ["-f", "-p", "4", input, aligned])
            #expect(result.succeeded, "\(result)")
            input = aligned
        }
        var schemes: Set<SignatureScheme> = [.v1, .v2, .v3]
        var flags: [String] = []
        if variant == .v1Only { schemes = [.v1]; flags = ["--v2-signing-enabled", "false", "--v3-signing-enabled", "false"] }
        if variant == .v2Only { schemes = [.v2]; flags = ["--v1-signing-enabled", "false", "--v3-signing-enabled", "false"] }
        let ours = dir.appendingPathComponent("ours.apk").path
        let theirs = dir.appendingPathComponent("theirs.apk").path
        let result = try TestSupport.run("apksigner", ["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM,
                                                       "--v4-signing-enabled", "false"] + flags + ["--out", theirs, theirInput ?? input])
        #expect(result.succeeded, "\(result)")
        // The installed apksigner (build-tools < 35) preserves alignment and page-aligns .so files to 4 KiB.
        // apksig deflates the JAR signature files at level 9 (apkpatch's default is 1).
        var config = SignerConfig(key: keys.key, schemes: schemes, alignmentPreserved: true, libraryPageAlignment: 4096)
        config.jarSignatureCompressionLevel = 9
        // apksigner writes an APK whose resources.arsc stays unaligned (aapt's layout) without a word; we write
        // it only when asked.
        config.misalignedAPKPermitted = true
        _ = try Signer(config: config).sign(try APKArchive(path: input), to: ours)
        let a = try TestSupport.readBytes(ours), b = try TestSupport.readBytes(theirs)
        let identical = a == b
        #expect(identical, "\(variant): \(a.count) vs \(b.count) bytes, first difference at \(zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, b.count))")
        if !identical {
            for name in ["META-INF/MANIFEST.MF", "META-INF/RELEASE.SF"] {
                let mine = try APKArchive(path: ours), apksigner = try APKArchive(path: theirs)
                if let x = mine.entry(named: name), let y = apksigner.entry(named: name) {
                    let p = String(decoding: try mine.uncompressedData(of: x), as: UTF8.self)
                    let q = String(decoding: try apksigner.uncompressedData(of: y), as: UTF8.self)
                    if p != q { Issue.record("\(name) differs:\n--- ours\n\(p.prefix(600))\n--- apksigner\n\(q.prefix(600))") }
                }
            }
        }
        if variant == .inputManifest {
            let manifest = try APKArchive(path: ours)
            let text = String(decoding: try manifest.uncompressedData(of: try #require(manifest.entry(named: "META-INF/MANIFEST.MF"))), as: UTF8.self)
            #expect(text.hasPrefix("Manifest-Version: 1.0\r\nAnt-Version: Apache Ant 1.9\r\nBuilt-By: "), "\(text.prefix(200))")
        }
    }

    @Test("scheme combinations verify where apksigner accepts them",
          arguments: [([SignatureScheme.v1], 14), ([.v2], 24), ([.v3], 28), ([.v1, .v2], 21), ([.v2, .v3], 24)])
    func schemeCombinations(schemes: [SignatureScheme], level: Int) throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        var fixture = FixtureAPK.cordovaLike()
        // targetSdk 30+ needs v2 or newer (MIN_SIG_SCHEME_FOR_TARGET_SDK_NOT_MET); keep v1-only legal.
        fixture.targetSdk = 29
        let input = try fixture.build(in: dir)
        let output = dir.appendingPathComponent("signed.apk").path
        let report = try sign(input, to: output, key: Self.shared.rsa.key, schemes: Set(schemes), minSdk: level)
        #expect(report.schemes == schemes.sorted())
        let verify = try apksignerVerify(output, minSdk: level)
        #expect(verify.succeeded, "\(verify)")
        let names = ["", "v1 scheme (JAR signing)", "v2 scheme (APK Signature Scheme v2)", "v3 scheme (APK Signature Scheme v3)"]
        for scheme in SignatureScheme.allCases where !schemes.contains(scheme) {
            #expect(verify.stdout.contains("Verified using \(names[scheme.rawValue]): false"), "\(verify)")
        }
        let newest = try #require(schemes.max())
        #expect(verify.stdout.contains("Verified using \(names[newest.rawValue]): true"), "\(verify)")
        let facts = try APKFacts(output)
        #expect((facts.archive.entry(named: "META-INF/MANIFEST.MF") != nil) == schemes.contains(.v1))
        let block = try facts.signingBlock
        #expect((block != nil) == (schemes.contains(.v2) || schemes.contains(.v3)))
        if schemes == [.v2] {
            // No stripping-protection attribute without v3.
            let value = try #require(block?.value(for: SigningBlock.ID.v2))
            let decoded = try SignatureSchemeBlock(decoding: value, version: .v2)
            #expect(decoded.signers.first?.signedData.additionalAttributes == [])
        }
        if schemes.contains(.v1) {
            let sf = try APKArchive(path: output)
            let text = String(decoding: try sf.uncompressedData(of: try #require(sf.entry(named: "META-INF/RELEASE.SF"))), as: UTF8.self)
            let ids = [2, 3].filter { schemes.contains(SignatureScheme(rawValue: $0)!) }.map(String.init).joined(separator: ", ")
            #expect(text.contains("X-Android-APK-Signed: \(ids)") == !ids.isEmpty, "\(text.prefix(300))")
            #expect(text.hasPrefix("Signature-Version: 1.0\r\nCreated-By: 1.0 (Android)\r\n"))
        }
    }

    @Test("EC, DSA and RSA 4096 keys", arguments: [TestKeys.Kind.ecP256, .ecP384, .rsa4096, .dsa2048])
    func otherKeys(kind: TestKeys.Kind) throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let keys = try TestKeys.make(kind, in: dir, name: "other")
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let output = dir.appendingPathComponent("signed.apk").path
        let report = try sign(input, to: output, key: keys.key)
        let expected: SignatureAlgorithm = switch kind {
        case .ecP256: .ecdsaWithSHA256
        case .ecP384: .ecdsaWithSHA512
        case .rsa4096: .rsaPKCS1v15WithSHA512
        case .rsa2048: .rsaPKCS1v15WithSHA256
        case .dsa2048: .dsaWithSHA256
        }
        #expect(report.signatureAlgorithms == [expected])
        for level in [21, 24, 28, 33] {
            let verify = try apksignerVerify(output, minSdk: level)
            #expect(verify.succeeded, "API \(level): \(verify)")
        }
        let verifier = try TestSupport.run("apkverifier", [output])
        #expect(verifier.succeeded, "\(verifier)")
        let names = try APKFacts(output).archive.entries.map(\.name)
        let ext = kind == .rsa4096 ? "RSA" : kind == .dsa2048 ? "DSA" : "EC"
        #expect(names.contains("META-INF/OTHER.\(ext)"))

        // The same key still loading when signing starts (as `apkpatch sign --ks` decrypts a keystore): the
        // signer digests with the digests most keys call for, and RSA 4096 and P-384 make it start again
        // with SHA-512. Either way the output is what a ready key gives: the same entries, MANIFEST.MF and
        // .SF bytes (EC and DSA signatures are randomized, so the signatures themselves differ).
        let key = keys.key
        let ready = dir.appendingPathComponent("ready.apk").path
        let readyReport = try Signer(config: SignerConfig(key: key, minSdkVersion: 24)).sign(try APKArchive(path: input), to: ready)
        let pending = BackgroundValue<SignerKey> { usleep(100_000); return key }
        let late = dir.appendingPathComponent("late.apk").path
        let lateReport = try Signer(config: SignerConfig(pendingKey: pending, minSdkVersion: 24)).sign(try APKArchive(path: input), to: late)
        #expect(lateReport.signatureAlgorithms == readyReport.signatureAlgorithms)
        #expect(try apksignerVerify(late, minSdk: 24).succeeded)
        let (a, b) = (try APKFacts(ready), try APKFacts(late))
        let firstNew = try #require(a.archive.entry(named: "META-INF/OTHER.SF")).localHeaderOffset
        #expect(try #require(b.archive.entry(named: "META-INF/OTHER.SF")).localHeaderOffset == firstNew)
        #expect(try a.source.bytes(in: 0..<firstNew) == b.source.bytes(in: 0..<firstNew))
        for name in ["META-INF/OTHER.SF", "META-INF/MANIFEST.MF"] {
            #expect(try a.rawData(name) == b.rawData(name), "\(name)")
        }
        if kind == .rsa4096 {
            #expect(try Data(contentsOf: URL(fileURLWithPath: late)) == Data(contentsOf: URL(fileURLWithPath: ready)))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".tmp-") }.isEmpty)
    }

    @Test("a key that fails to load fails the signing, and no output is left")
    func pendingKeyFailure() throws {
        struct NoKey: Error {}
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let output = dir.appendingPathComponent("signed.apk").path
        let pending = BackgroundValue<SignerKey> { usleep(50_000); throw NoKey() }
        #expect(throws: NoKey.self) {
            try Signer(config: SignerConfig(pendingKey: pending, minSdkVersion: 24)).sign(try APKArchive(path: input), to: output)
        }
        #expect(!FileManager.default.fileExists(atPath: output))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".tmp-") }.isEmpty)
    }

    @Test("DSA JAR signatures use SHA-1 below API 21, and apksigner accepts them at API 14")
    func dsaBelow21() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let keys = try TestKeys.make(.dsa2048, in: dir, name: "dsa")
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let output = dir.appendingPathComponent("signed.apk").path
        let report = try sign(input, to: output, key: keys.key, minSdk: 14)
        #expect(report.v1DigestAlgorithm == .sha1)
        let verify = try apksignerVerify(output, minSdk: 14)
        #expect(verify.succeeded, "\(verify)")
    }

    @Test("EC keys cannot make v1 signatures below API 18")
    func ecBelow18Fails() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let keys = try TestKeys.make(.ecP256, in: dir)
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let output = dir.appendingPathComponent("signed.apk").path
        #expect(throws: SignError.ecdsaJARSignatureNeedsAPI18(minSdkVersion: 14)) {
            _ = try sign(input, to: output, key: keys.key, minSdk: 14)
        }
        #expect(!FileManager.default.fileExists(atPath: output), "a failed signing must leave no output")
        // Without v1 the same key is fine (with a warning below API 24, where v1 is what Android reads).
        let report = try sign(input, to: output, key: keys.key, schemes: [.v2, .v3], minSdk: 14)
        #expect(report.warnings == [.noJARSignatureBelowAPI24(minSdkVersion: 14)])
        #expect(try apksignerVerify(output, minSdk: 24).succeeded)
    }

    /// apksig maps a codename starting with A-Z to an API level by its first letter ('Z' = 25 + 11), as
    /// apksigner signs such APKs (ApkUtilsTest testGetMinSdkVersionForValidCodename); any other needs
    /// --min-sdk-version (testGetMinSdkVersionForUnexpectedCodename).
    @Test("a codename minSdkVersion maps to a level by its first letter; one apksig cannot map needs --min-sdk-version",
          arguments: [("Zebra", 36 as Int?), ("zebra", nil)])
    func codenameMinSdk(codename: String, level: Int?) throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let manifest = """
        <?xml version="1.0" encoding="utf-8"?>
        <manifest xmlns:android="http://schemas.android.com/apk/res/android" package="com.example.codename">
            <uses-sdk android:minSdkVersion="\(codename)" android:targetSdkVersion="\(codename)" />
            <application android:label="x" />
        </manifest>
        """
        try TestSupport.write(manifest, to: "AndroidManifest.xml", in: dir)
        try TestSupport.write("<resources/>\n", to: "res/values/strings.xml", in: dir)
        let input = dir.appendingPathComponent("codename.apk").path
        let aapt = try TestSupport.run("aapt", ["package", "-f", "-M", "AndroidManifest.xml", "-S", "res", "-I", TestSupport.frameworkRes,
                                                "-F", input], currentDirectory: dir.path)
        #expect(aapt.succeeded, "\(aapt)")
        let output = dir.appendingPathComponent("signed.apk").path
        if let level {
            let report = try sign(input, to: output, key: Self.shared.rsa.key)
            #expect(report.minSdkVersion == level)
            #expect(try apksignerVerify(output, minSdk: 24).succeeded)
            return
        }
        #expect(throws: SignError.codenameMinSdkVersion(codename)) {
            _ = try sign(input, to: output, key: Self.shared.rsa.key)
        }
        // The library says what to give; the command line names its option for it.
        #expect(!SignError.codenameMinSdkVersion(codename).description.contains("--"))
        let cli = try TestSupport.apkpatch(["sign", "--debug", "--debug-keystore", dir.appendingPathComponent("debug.keystore").path,
                                            "--out", output, input])
        #expect(!cli.succeeded && cli.stderr.contains("\"\(codename)\"") && cli.stderr.contains("(give it with --min-sdk-version)"), "\(cli)")
        _ = try sign(input, to: output, key: Self.shared.rsa.key, minSdk: 24)
        #expect(try apksignerVerify(output, minSdk: 24).succeeded)
    }

    @Test("re-signing an apksigner-signed APK replaces its signature")
    func resign() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let first = dir.appendingPathComponent("first.apk").path
        let keys = Self.shared.rsa
        let signed = try TestSupport.run("apksigner", ["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM,
                                                       "--v4-signing-enabled", "false", "--out", first, input])
        #expect(signed.succeeded, "\(signed)")
        let other = try TestKeys.make(.ecP256, in: dir, name: "second")
        let output = dir.appendingPathComponent("second.apk").path
        _ = try sign(first, to: output, key: other.key)
        let verify = try TestSupport.run("apksigner", ["verify", "-v", "--print-certs", output])
        #expect(verify.succeeded, "\(verify)")
        #expect(verify.stdout.contains("Number of signers: 1"))
        let names = try APKFacts(output).archive.entries.map(\.name)
        #expect(!names.contains("META-INF/RELEASE.SF"))
        #expect(names.contains("META-INF/SECOND.SF"))
    }

    @Test("framework-res.apk (45 MB, 7,600 entries) signs and verifies")
    func frameworkRes() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let output = dir.appendingPathComponent("framework-res-signed.apk").path
        let report = try sign(TestSupport.frameworkRes, to: output, key: Self.shared.rsa.key)
        #expect(report.minSdkVersion == 29)
        let verify = try apksignerVerify(output, minSdk: 29)
        #expect(verify.succeeded, "\(verify)")
        let verifier = try TestSupport.run("apkverifier", [output])
        #expect(verifier.succeeded, "\(verifier)")
        let align = try TestSupport.run("zipalign", ["-c", "-p", "4", output])
        #expect(align.succeeded, "\(align.stdout.suffix(500))")
    }

    @Test("content digests match apksigner's for its own signed APK")
    func contentDigestsMatchApksigner() throws {
        let dir = try TestSupport.makeTemporaryDirectory()
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let signed = dir.appendingPathComponent("theirs.apk").path
        let keys = Self.shared.rsa
        let result = try TestSupport.run("apksigner", ["sign", "--key", keys.keyPK8, "--cert", keys.certificatePEM,
                                                       "--v4-signing-enabled", "false", "--out", signed, input])
        #expect(result.succeeded, "\(result)")
        let facts = try APKFacts(signed)
        let block = try #require(try facts.signingBlock)
        let eocd = try facts.source.bytes(in: facts.archive.endOfCentralDirectory.offset..<facts.source.count)
        for concurrency in [1, 2] {
            let digests = try ContentDigester.digests(entries: try facts.source.slice(0..<block.offset),
                                                      centralDirectory: try facts.source.slice(facts.archive.centralDirectoryRange),
                                                      endOfCentralDirectory: eocd, algorithms: [.chunkedSHA256], concurrency: concurrency)
            for (id, version) in [(SigningBlock.ID.v2, SignatureSchemeVersion.v2), (SigningBlock.ID.v3, .v3)] {
                let decoded = try SignatureSchemeBlock(decoding: try #require(block.value(for: id)), version: version)
                #expect(decoded.encoded() == block.value(for: id))
                #expect(decoded.signers.first?.signedData.digests.first?.value == digests[.chunkedSHA256])
            }
        }
    }
}
