import APKCore
import Foundation
import SignatureSchemes
import TestSupport
import Testing
@testable import Verify

/// The verifier computes work ahead of the checks that need it (the v2/v3 content digests before the archive
/// is parsed, the JAR signature check beside the block schemes). These tests hold that work to what the
/// sequential path computes, since reports must never depend on it.
@Suite("Verify: work started ahead of its checks", .removesTemporaryDirectories)
struct WorkAheadTests {
    @Test("prefetched content digests equal ContentDigester's over the validated layout, and no other layout gets them",
          arguments: [TestKey.rsa2048, .rsa4096, .ecP256])
    func prefetchedDigestsMatch(key: TestKey) throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-prefetch")
        let bytes = try VerifyFixtures.read(try VerifyFixtures.signedAPK(in: directory, key: key))
        let source = ByteArrayDataSource(bytes)
        let prefetch = try #require(ContentDigestPrefetch.start(source: source))

        let zip = try ZipArchive(source: source)
        let block = try #require(try SigningBlock.locate(in: source, centralDirectoryOffset: zip.centralDirectoryOffset))
        let layout = ContentDigestPrefetch.Layout(signingBlockOffset: block.offset, centralDirectoryOffset: zip.centralDirectoryOffset,
                                                  endOfCentralDirectoryOffset: zip.endOfCentralDirectory.offset)
        #expect(prefetch.layout == layout)
        // apksigner signs RSA keys above 3072 bits with SHA-512, the others with SHA-256.
        #expect(prefetch.algorithms == (key == .rsa4096 ? [.chunkedSHA512] : [.chunkedSHA256]))

        let expected = try ContentDigester.digests(entries: try source.slice(0..<layout.signingBlockOffset),
                                                   centralDirectory: try source.slice(layout.centralDirectoryOffset..<layout.endOfCentralDirectoryOffset),
                                                   endOfCentralDirectory: try source.bytes(in: layout.endOfCentralDirectoryOffset..<source.count),
                                                   algorithms: prefetch.algorithms)
        #expect(prefetch.digests(for: layout) == expected)
        var moved = layout
        moved.signingBlockOffset -= 4096
        #expect(prefetch.digests(for: moved) == nil)
        moved = layout
        moved.endOfCentralDirectoryOffset += 1
        #expect(prefetch.digests(for: moved) == nil)
        prefetch.cancel()
        #expect(prefetch.digests(for: layout) == expected, "a finished prefetch keeps its result")
    }

    @Test("no prefetch without a signing block or with an oversized one; a stopped prefetch offers nothing it did not finish")
    func prefetchWithoutBlockOrStopped() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-prefetch-none")
        let v1Only = try VerifyFixtures.read(try VerifyFixtures.signedAPK(in: directory, schemes: SchemeSet(v1: true, v2: false, v3: false)))
        #expect(ContentDigestPrefetch.start(source: ByteArrayDataSource(v1Only)) == nil)
        #expect(ContentDigestPrefetch.start(source: ByteArrayDataSource([])) == nil)
        #expect(ContentDigestPrefetch.start(source: ByteArrayDataSource(Array(repeating: 0x50, count: 100))) == nil)

        let signed = try VerifyFixtures.read(try VerifyFixtures.signedAPK(in: directory))
        // A footer claiming a block over the quick look's limit: left to the validated path.
        var huge = signed
        let footer = Int(try VerifyFixtures.zip(signed).centralDirectoryOffset) - 24
        let claimed = (ContentDigestPrefetch.maxSigningBlockSize + 1).littleEndian
        withUnsafeBytes(of: claimed) { for (i, byte) in $0.enumerated() { huge[footer + i] = byte } }
        #expect(ContentDigestPrefetch.start(source: ByteArrayDataSource(huge)) == nil)

        let prefetch = try #require(ContentDigestPrefetch.start(source: ByteArrayDataSource(signed)))
        prefetch.cancel()
        // Either it finished before the stop (and then it is the real digest) or it offers nothing.
        if let digests = prefetch.digests(for: prefetch.layout) {
            let zip = try ZipArchive(source: ByteArrayDataSource(signed))
            let source = ByteArrayDataSource(signed)
            let expected = try ContentDigester.digests(entries: try source.slice(0..<prefetch.layout.signingBlockOffset),
                                                       centralDirectory: try source.slice(zip.centralDirectoryRange),
                                                       endOfCentralDirectory: try source.bytes(in: zip.endOfCentralDirectory.offset..<source.count),
                                                       algorithms: prefetch.algorithms)
            #expect(digests == expected)
        }
    }

    /// (minSdkVersion, maxSdkVersion) ranges that pick different block schemes; nil min is the manifest's (21).
    static let ranges: [(Int?, Int)] = [(nil, Int(Int32.max)), (24, Int(Int32.max)), (28, Int(Int32.max)), (21, 27), (24, 27), (33, Int(Int32.max)), (21, 23)]

    @Test("the scheme IDs predicted for starting the JAR signature check early are those the verifier then found",
          arguments: SchemeSet.combinations)
    func predictedSchemesAreFound(schemes: SchemeSet) throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-predicted")
        let path = try VerifyFixtures.signedAPK(in: directory, schemes: schemes) { if !schemes.v2 && !schemes.v3 { $0.targetSdk = 29 } }
        let bytes = try VerifyFixtures.read(path)
        let zip = try VerifyFixtures.zip(bytes)
        let source = ByteArrayDataSource(bytes)
        let block = try SigningBlock.locate(in: source, centralDirectoryOffset: zip.centralDirectoryOffset).map {
            RawSigningBlock(bytes: try source.bytes(in: $0.offset..<zip.centralDirectoryOffset), offset: $0.offset)
        }
        var compared = 0
        for (minSdkVersion, maxSdkVersion) in Self.ranges {
            let report = try VerifyFixtures.verify(path, minSdkVersion: minSdkVersion, maxSdkVersion: maxSdkVersion)
            guard report.isSignatureVerified else { continue }  // a failed scheme stops before the others are found
            let found = Set(report.schemes.compactMap { scheme -> Int? in
                switch scheme.scheme {
                case .v2: return 2
                case .v3: return 3
                case .v31: return 31
                default: return nil
                }
            })
            let predicted = Verifier.schemeIDsFound(in: block, minSdkVersion: minSdkVersion ?? 21, maxSdkVersion: maxSdkVersion)
            #expect(predicted == found, "range \(minSdkVersion ?? 21)...\(maxSdkVersion)")
            compared += 1
        }
        #expect(compared > 0, "some range must verify for \(schemes)")
    }
}
