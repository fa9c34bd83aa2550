import APKCore
import OpenSSLWrapper
import SignatureSchemes
import ZlibWrapper

/// The JAR signature files in apksig's order (`<NAME>.SF`, `<NAME>.<ALG>`, `META-INF/MANIFEST.MF`), each
/// with its deflated form, made from the entries' v1 digests (`V1SchemeSigner` writes their text).
enum JARSignature {
    /// A JAR signature file, deflated, with the CRC-32 of its uncompressed bytes.
    struct File {
        var name: String
        var data: [UInt8]
        var compressed: [UInt8]
        var crc: UInt32
    }

    /// The files, each deflated at `level` (`deflateJARFile`). MANIFEST.MF is deflated while the .SF file is
    /// made, and the .SF file (the same for every signer) while it is signed.
    ///
    /// `template` is filled in place: a template of its own (not shared with another value) is written without
    /// a copy, and so is the .SF file it prepared (`ManifestTemplate(signatureFileHeader:)`).
    static func make(template: inout V1SchemeSigner.ManifestTemplate, digests: [[UInt8]], signers: [V1SchemeSigner.Signer],
                     apkSchemeIDs: [Int], createdBy: String, level: Int32 = 9) throws -> [File] {
        let manifest = template.filled(with: digests)
        let manifestContents = manifest.contents, digestAlgorithm = template.digestAlgorithm
        // The other core takes the whole manifest's digest, then deflates it, while this thread digests its
        // sections for the .SF file: the .SF's deflate, on this thread, then starts with MANIFEST.MF's.
        let manifestDigest = BackgroundValue(offered: { Digest.hash(manifestContents, with: digestAlgorithm) })
        let deflatedManifest = BackgroundValue<[UInt8]> { try deflateJARFile(manifestContents, level: level) }
        defer { manifestDigest.wait(); deflatedManifest.wait() }
        let signatureFile = try template.signatureFile(for: manifest, header: .init(apkSchemeIDs: apkSchemeIDs, createdBy: createdBy)) {
            try manifestDigest.get()
        }
        var deflatedSignatureFile: [UInt8] = []
        let files = try V1SchemeSigner.signatureEntries(signers: signers, manifest: manifest, signatureFile: signatureFile) { signatureFile in
            deflatedSignatureFile = try deflateJARFile(signatureFile, level: level)
        }
        var compressed: [[UInt8]] = []
        for index in stride(from: 0, to: files.count - 1, by: 2) {
            compressed.append(deflatedSignatureFile)
            compressed.append(try deflateJARFile(files[index + 1].data, level: level))
        }
        compressed.append(try deflatedManifest.get())
        return zip(files, compressed).map { File(name: $0.name, data: $0.data, compressed: $1, crc: CRC32.checksum($0.data)) }
    }

    /// zlib at level 9, as apksig (so the bytes are apksigner's); libdeflate, faster, at any other level.
    static func deflateJARFile(_ data: [UInt8], level: Int32) throws -> [UInt8] {
        guard level == 9 else { return try Deflate.compressFast(data, level: level) }
        // The deflate's tables in pool buffers, which the copy before it has paged in, rather than in memory of
        // their own that every signing would fault in anew. The manifest and the .SF are deflated at the same
        // time, while the section's last chunk holds a buffer too: the second buffer is a pool one only if one is
        // free. Otherwise the tables past the first megabyte take less than one of their own in small pages, where
        // a new slab would be two fresh megabytes in a huge page, whose first write can cost milliseconds under a
        // hypervisor that has taken the page back.
        let first = BufferPool.shared.take()
        let pooled = BufferPool.shared.takeIfFree()
        let second = pooled ?? UnsafeMutableRawBufferPointer.allocate(byteCount: BufferPool.bufferSize, alignment: 64)
        defer {
            BufferPool.shared.recycle(first)
            if let pooled { BufferPool.shared.recycle(pooled) } else { second.deallocate() }
        }
        return try Deflate.compress(data, level: 9, scratch: [first, second])
    }
}
