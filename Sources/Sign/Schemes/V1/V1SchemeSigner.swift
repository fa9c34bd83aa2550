import OpenSSLWrapper
import DigestLanes
import SignatureSchemes
import APKCore
#if canImport(Glibc)
import Glibc
#endif

/// JAR signing (APK Signature Scheme v1), as apksig's `internal/apk/v1/V1SchemeSigner` does it: the output
/// `META-INF/MANIFEST.MF` with one digest per entry, the signature file `<NAME>.SF` over the manifest and its
/// sections, and the PKCS #7 signature block `<NAME>.<RSA|EC|DSA>` over the `.SF` file.
enum V1SchemeSigner {
    static let manifestEntryName = "META-INF/MANIFEST.MF"

    /// The digest for the JAR signature and entry digests (`getSuggestedSignatureDigestAlgorithm`):
    /// RSA: SHA-1 below API 18, else SHA-256; DSA: SHA-1 below 21, else SHA-256; EC: SHA-256, and EC keys
    /// cannot sign JARs for API levels below 18.
    static func digestAlgorithm(for key: KeyAlgorithm, minSdkVersion: Int) throws -> DigestAlgorithm {
        switch key {
        case .rsa: return minSdkVersion < 18 ? .sha1 : .sha256
        case .dsa: return minSdkVersion < 21 ? .sha1 : .sha256
        case .ec:
            guard minSdkVersion >= 18 else { throw SignError.ecdsaJARSignatureNeedsAPI18(minSdkVersion: minSdkVersion) }
            return .sha256
        }
    }

    /// apksig's `getSafeSignerName`: upper-cased (US locale), at most 8 characters, anything outside
    /// [A-Z0-9_-] replaced by `_`.
    static func safeSignerName(_ name: String) throws -> String {
        guard !name.isEmpty else { throw SignError.emptySignerName }
        // Java's toUpperCase(Locale.US) works on UTF-16 units; for the names keystores use (ASCII aliases and
        // file names) uppercasing the characters gives the same result.
        let upper = Array(name.uppercased().utf16)
        var result = ""
        for unit in upper.prefix(8) {
            if (unit >= 0x41 && unit <= 0x5a) || (unit >= 0x30 && unit <= 0x39) || unit == 0x2d || unit == 0x5f {
                result.unicodeScalars.append(Unicode.Scalar(UInt8(unit)))
            } else {
                result.append("_")
            }
        }
        return result
    }

    /// `isJarEntryDigestNeededInManifest` (`JarSignatureFiles`). apksig also drops every entry for which
    /// this is false when it copies an APK.
    static func isDigestNeeded(_ name: String) -> Bool { JarSignatureFiles.isDigestNeededInManifest(name) }

    static func entryDigestAttributeName(_ digest: DigestAlgorithm) -> String {
        digest == .sha1 ? "SHA1-Digest" : "SHA-256-Digest"
    }

    static func manifestDigestAttributeName(_ digest: DigestAlgorithm) -> String {
        digest == .sha1 ? "SHA1-Digest-Manifest" : "SHA-256-Digest-Manifest"
    }

    /// The output manifest and where each individual section lies in it (the `.SF` file digests each).
    struct Manifest {
        var contents: [UInt8]
        /// Each section's range in `contents`, in the order of its entry names, sorted as Java sorts strings.
        var sectionRanges: [Range<Int>]
        /// Where each section's `Name:` attribute lines end (the .SF file repeats those lines byte for byte).
        var nameLineEnds: [Int]
        /// The sections with their entry names, read back from the `Name:` lines (a name holds no CR or LF, so
        /// every CRLF and space in the lines is a line split).
        var sections: [(name: String, bytes: [UInt8])] {
            zip(sectionRanges, nameLineEnds).map { range, nameEnd in
                var value: [UInt8] = []
                var index = range.lowerBound + JARManifestWriter.nameAttribute.count + 2
                while index < nameEnd - 2 {
                    if contents[index] == 0x0d { index += 3; continue }
                    value.append(contents[index])
                    index += 1
                }
                return (String(decoding: value, as: UTF8.self), Array(contents[range]))
            }
        }
    }

    /// `generateManifestFile`: the input manifest's main section (or just `Manifest-Version: 1.0`), then one
    /// section per entry, sorted by name, with the entry's digest in Base64. Written straight into one byte
    /// buffer: an APK can have tens of thousands of entries.
    static func makeManifest(digestAlgorithm: DigestAlgorithm, entryDigests: [(name: String, digest: [UInt8])],
                             inputManifest: [UInt8]?) throws -> Manifest {
        var template = try ManifestTemplate(digestAlgorithm: digestAlgorithm, names: entryDigests.map(\.name), inputManifest: inputManifest)
        return template.filled(with: entryDigests.map(\.digest))
    }

    /// The manifest (and the .SF file's sections) with every digest left blank: all of them but the digests
    /// is known before a byte is hashed, so the signer writes this while the entries are copied, and only the
    /// Base64 digests are written in once they are known.
    struct ManifestTemplate {
        private(set) var manifest: Manifest
        let digestAlgorithm: DigestAlgorithm
        /// Where entry i's Base64 digest goes in the manifest (entries in the order given).
        private let digestOffsets: [Int]
        /// Where section k's digest goes in the .SF file's sections (`signatureSections`).
        let signatureDigestOffsets: [Int]
        /// Where the manifest's main section ends and its individual sections start.
        private let mainSectionEnd: Int
        /// The whole .SF file but its digests, when the template was made knowing its main section's attributes
        /// (`SignatureFileHeader`): room for the main section, then `signatureSections` (and the extra CRLF the
        /// file's length may call for), so the signer fills it in place rather than assembling it once the
        /// digests are known. Written once, by `signatureFile(for:header:)`.
        private var preparedSignatureFile: (header: SignatureFileHeader, bytes: [UInt8])?

        /// The .SF file's sections, which are the manifest's byte for byte (its Name lines, then a digest line of
        /// the same attribute and length, then a blank line) with every digest to be written over
        /// (`writeSectionDigests`).
        var signatureSections: [UInt8] { Array(manifest.contents[mainSectionEnd...]) }

        init(digestAlgorithm: DigestAlgorithm, names: [String], inputManifest: [UInt8]?,
             signatureFileHeader: SignatureFileHeader? = nil) throws {
            self.digestAlgorithm = digestAlgorithm
            var main = JARManifestWriter()
            if let inputManifest {
                let section = try JARMainSection(manifest: inputManifest)
                guard let version = section.value(of: "Manifest-Version") else {
                    throw SignError.malformedInputManifest("its main section has no Manifest-Version attribute")
                }
                // apksig puts the main attributes in a TreeMap and removes exactly "Manifest-Version" (a differently
                // cased spelling stays and is written a second time, as apksig does).
                let others = section.attributes.filter { $0.name != "Manifest-Version" }.map { ($0.name, $0.value) }
                main.writeMainSection(first: ("Manifest-Version", version), others: others)
            } else {
                main.writeMainSection(first: ("Manifest-Version", "1.0"), others: [])
            }
            let attributeName = Array(entryDigestAttributeName(digestAlgorithm).utf8)
            // Base64 of a digest, and the attribute line's length: one line (SHA-256: 60 bytes of 70), so the
            // digest's place does not depend on its value.
            let blank = [UInt8](repeating: 0x41, count: (digestAlgorithm.outputSize + 2) / 3 * 4)
            precondition(attributeName.count + 2 + blank.count <= JARManifestWriter.maxLineLength)
            // What follows every Name line: the digest line, then the blank line that ends the section.
            let digestLines = attributeName + Array(": ".utf8) + blank + [0x0d, 0x0a, 0x0d, 0x0a]
            let sorted = try JavaSortedNames(names)
            let nameAttribute = JARManifestWriter.nameAttribute
            // Every byte of the manifest is known here: it is written straight into a buffer of its size.
            var size = main.count
            for index in sorted.order {
                size += JARManifestWriter.encodedSize(nameCount: nameAttribute.count, valueCount: sorted.length(of: index)) + digestLines.count
            }
            var ranges: [Range<Int>] = [], nameLineEnds: [Int] = []
            var offsets = [Int](repeating: 0, count: names.count)
            ranges.reserveCapacity(sorted.order.count)
            nameLineEnds.reserveCapacity(sorted.order.count)
            let contents = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
                let out = UnsafeMutableRawBufferPointer(buffer)
                var at = main.bytes.withUnsafeBytes { main in
                    out.copyMemory(from: main)
                    return main.count
                }
                sorted.bytes.withUnsafeBytes { pool in
                    nameAttribute.withUnsafeBytes { nameAttribute in
                        digestLines.withUnsafeBytes { digestLines in
                            for index in sorted.order {
                                let start = at
                                at = JARManifestWriter.write(name: nameAttribute, value: sorted.utf8(of: index, in: pool), into: out, at: at)
                                nameLineEnds.append(at)
                                offsets[index] = at + attributeName.count + 2
                                UnsafeMutableRawBufferPointer(rebasing: out[at..<(at + digestLines.count)]).copyMemory(from: digestLines)
                                at += digestLines.count
                                ranges.append(start..<at)
                            }
                        }
                    }
                }
                precondition(at == size)
                initialized = at
            }
            manifest = Manifest(contents: contents, sectionRanges: ranges, nameLineEnds: nameLineEnds)
            digestOffsets = offsets
            mainSectionEnd = main.count
            signatureDigestOffsets = nameLineEnds.map { $0 + attributeName.count + 2 - main.count }
            if let header = signatureFileHeader {
                // The main section's length does not depend on the manifest digest's value (Base64 of a fixed size).
                let room = header.encoded(manifestDigest: [UInt8](repeating: 0, count: digestAlgorithm.outputSize),
                                          digestAlgorithm: digestAlgorithm).count
                let sections = contents.count - main.count
                let bytes = [UInt8](unsafeUninitializedCapacity: room + sections + 2) { buffer, initialized in
                    let out = UnsafeMutableRawBufferPointer(buffer)
                    out[..<room].initializeMemory(as: UInt8.self, repeating: 0)
                    contents.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[room...]).copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[main.count...])) }
                    initialized = room + sections
                    if initialized % 1024 == 0 {
                        out[initialized] = 0x0d; out[initialized + 1] = 0x0a
                        initialized += 2
                    }
                }
                preparedSignatureFile = (header, bytes)
            }
        }

        /// The .SF file's sections for `manifest` with blank digests, and where each digest goes.
        static func signatureSections(of manifest: Manifest, digestAlgorithm: DigestAlgorithm) -> (bytes: [UInt8], digestOffsets: [Int]) {
            let attributeName = Array(entryDigestAttributeName(digestAlgorithm).utf8)
            let blank = [UInt8](repeating: 0x41, count: (digestAlgorithm.outputSize + 2) / 3 * 4)
            var signature = JARManifestWriter()
            signature.reserveCapacity(manifest.contents.count + 64)
            var offsets: [Int] = []
            offsets.reserveCapacity(manifest.sectionRanges.count)
            manifest.contents.withUnsafeBytes { contents in
                for index in manifest.sectionRanges.indices {
                    // The same Name lines as the manifest section.
                    signature.write(UnsafeRawBufferPointer(rebasing: contents[manifest.sectionRanges[index].lowerBound..<manifest.nameLineEnds[index]]))
                    offsets.append(signature.count + attributeName.count + 2)
                    signature.writeAttribute(name: attributeName, value: blank)
                    signature.writeSectionDelimiter()
                }
            }
            return (signature.bytes, offsets)
        }

        /// The .SF file for `manifest` (this template filled): `makeSignatureFile`'s bytes, written into the
        /// prepared file when the template has one for `header` (it is handed over: a second call assembles anew).
        mutating func signatureFile(for manifest: Manifest, header: SignatureFileHeader) -> [UInt8] {
            let algorithm = digestAlgorithm
            return signatureFile(for: manifest, header: header) { Digest.hash(manifest.contents, with: algorithm) }
        }

        /// `signatureFile(for:header:)` with the whole manifest's digest (in this template's algorithm) from
        /// `manifestDigest`, asked for after the sections' digests (another thread may be taking it).
        mutating func signatureFile(for manifest: Manifest, header: SignatureFileHeader,
                                    manifestDigest: () throws -> [UInt8]) rethrows -> [UInt8] {
            guard let prepared = preparedSignatureFile, prepared.header == header else {
                return makeSignatureFile(manifest: manifest, template: self, digestAlgorithm: digestAlgorithm,
                                         apkSchemeIDs: header.apkSchemeIDs, createdBy: header.createdBy, manifestDigest: try manifestDigest())
            }
            preparedSignatureFile = nil  // the buffer is now only `bytes`'s, so writing it copies nothing
            var bytes = prepared.bytes
            // The sections' digests first: the manifest's own may still be in the making.
            let sections = sectionDigests(of: manifest)
            let whole = try manifestDigest()
            let main = header.encoded(manifestDigest: whole, digestAlgorithm: digestAlgorithm)
            bytes.withUnsafeMutableBytes { out in
                out.copyBytes(from: main)
                writeSectionDigests(sections, into: UnsafeMutableRawBufferPointer(rebasing: out[main.count...]),
                                    offsets: signatureDigestOffsets, digestAlgorithm: digestAlgorithm)
            }
            return bytes
        }

        private func sectionDigests(of manifest: Manifest) -> [UInt8] {
            V1SchemeSigner.sectionDigests(of: manifest, digestAlgorithm: digestAlgorithm)
        }

        /// The manifest with entry i's digest `digests[i]`.
        mutating func filled(with digests: [[UInt8]]) -> Manifest {
            precondition(digests.count == digestOffsets.count)
            manifest.contents.withUnsafeMutableBytes { contents in
                for (index, digest) in digests.enumerated() {
                    precondition(digest.count == digestAlgorithm.outputSize)
                    Base64.write(digest, into: UnsafeMutableRawBufferPointer(rebasing: contents[digestOffsets[index]...]))
                }
            }
            return manifest
        }
    }

    /// Entry names in Java's `String` order (UTF-16 code units), with their UTF-8 bytes in one buffer. Names a
    /// manifest cannot hold (CR, LF, NUL) are refused. UTF-8 byte order is the same order unless a name has a
    /// character at U+E000 or above (UTF-8 lead byte 0xEE or more: there UTF-16's surrogates sort
    /// differently), so bytes are compared (memcmp) unless one does.
    struct JavaSortedNames {
        /// Every name's UTF-8 bytes, back to back.
        var bytes: [UInt8] = []
        /// Where each name (by input index) starts in `bytes`; one more entry for the end.
        var starts: [Int] = [0]
        /// Input indices in sorted order.
        var order: [Int] = []

        init(_ names: [String]) throws {
            starts.reserveCapacity(names.count + 1)
            bytes.reserveCapacity(names.reduce(0) { $0 + $1.utf8.count })
            var byteOrderHolds = true
            for name in names {
                let checked: Void? = try name.utf8.withContiguousStorageIfAvailable { utf8 in
                    try append(utf8, of: name, byteOrderHolds: &byteOrderHolds)
                }
                if checked == nil {
                    var contiguous = name
                    try contiguous.withUTF8 { try append($0, of: name, byteOrderHolds: &byteOrderHolds) }
                }
            }
            if !byteOrderHolds {
                let units = names.map { Array($0.utf16) }
                order = units.indices.sorted { units[$0].lexicographicallyPrecedes(units[$1]) }
                return
            }
            order = Array(names.indices)
            let starts = self.starts
            bytes.withUnsafeBytes { pool in
                func less(_ a: Int, _ b: Int) -> Bool {
                    let lengthA = starts[a + 1] - starts[a], lengthB = starts[b + 1] - starts[b]
                    let common = memcmp(pool.baseAddress! + starts[a], pool.baseAddress! + starts[b], min(lengthA, lengthB))
                    return common != 0 ? common < 0 : lengthA < lengthB
                }
                // Entries are often in name order already (aapt writes them so).
                if !zip(order, order.dropFirst()).allSatisfy({ !less($1, $0) }) { order.sort(by: less) }
            }
        }

        /// Appends `name`'s UTF-8 bytes `utf8`, refusing a name the manifest cannot list, and notes a byte that
        /// makes UTF-8 order differ from Java's.
        private mutating func append(_ utf8: UnsafeBufferPointer<UInt8>, of name: String, byteOrderHolds: inout Bool) throws {
            if Self.isSignatureBlockNamedEntry(utf8) { throw SignError.signatureBlockNamedEntry(name) }
            // Bytes below 0x20 (CR, LF and NUL among them) or from 0xEE up, looked for eight at a time.
            if ByteRangeScan.containsByte(in: UnsafeRawBufferPointer(utf8), outside: 0x20..<0xEE) {
                for byte in utf8 where byte < 0x20 || byte >= 0xEE {
                    if byte == 0x0d || byte == 0x0a || byte == 0 {
                        throw SignError.unsupportedEntryName(name, character: UInt32(byte))
                    }
                    if byte >= 0xEE { byteOrderHolds = false }
                }
            }
            bytes.append(contentsOf: utf8)
            starts.append(bytes.count)
        }

        /// Whether a listed entry is one a JAR verifier reads as a signature block all the same: apksig's
        /// V1SchemeVerifier and Android's StrictJarVerifier take every META-INF/ name ending in .RSA, .DSA or .EC
        /// (subfolders and `..` included, case as written), while the manifest lists those in subfolders.
        static func isSignatureBlockNamedEntry(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
            func has(_ affix: StaticString, atEnd: Bool) -> Bool {
                let count = affix.utf8CodeUnitCount
                guard name.count >= count, let base = name.baseAddress else { return false }
                return memcmp(base + (atEnd ? name.count - count : 0), affix.utf8Start, count) == 0
            }
            return has("META-INF/", atEnd: false) && (has(".RSA", atEnd: true) || has(".DSA", atEnd: true) || has(".EC", atEnd: true))
        }

        /// The UTF-8 bytes of name `index`, in `pool` (this value's `bytes`).
        func utf8(of index: Int, in pool: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: pool[starts[index]..<starts[index + 1]])
        }

        /// The length in UTF-8 bytes of name `index`.
        func length(of index: Int) -> Int { starts[index + 1] - starts[index] }
    }

    /// The attributes of a `.SF` file's main section other than the manifest digest: `Created-By` and the APK
    /// signature schemes (`X-Android-APK-Signed`, none without v2/v3).
    struct SignatureFileHeader: Equatable, Sendable {
        var apkSchemeIDs: [Int]
        var createdBy: String

        /// The main section: `Signature-Version: 1.0`, then `Created-By`, the manifest digest and
        /// `X-Android-APK-Signed`, sorted by name.
        func encoded(manifestDigest: [UInt8], digestAlgorithm: DigestAlgorithm) -> [UInt8] {
            var main: [(String, String)] = [("Created-By", createdBy)]
            if !apkSchemeIDs.isEmpty {
                main.append(("X-Android-APK-Signed", apkSchemeIDs.map(String.init).joined(separator: ", ")))
            }
            main.append((manifestDigestAttributeName(digestAlgorithm), Base64.encode(manifestDigest)))
            var writer = JARManifestWriter()
            writer.writeMainSection(first: ("Signature-Version", "1.0"), others: main)
            return writer.bytes
        }
    }

    /// `generateSignatureFile`: `Signature-Version: 1.0`, `Created-By`, the manifest digest and (when v2/v3
    /// are on) `X-Android-APK-Signed`, then a digest of each manifest section; an extra CRLF when the length
    /// is a multiple of 1024 (a workaround for Android ≤ 1.6's JAR parser).
    ///
    /// `template` is the manifest's (its blank .SF sections); without one they are made here.
    /// `manifestDigest`: the whole manifest's digest, when the caller has it already.
    static func makeSignatureFile(manifest: Manifest, template: ManifestTemplate? = nil, digestAlgorithm: DigestAlgorithm,
                                  apkSchemeIDs: [Int], createdBy: String, manifestDigest: [UInt8]? = nil) -> [UInt8] {
        let header = SignatureFileHeader(apkSchemeIDs: apkSchemeIDs, createdBy: createdBy)
        var bytes = header.encoded(manifestDigest: manifestDigest ?? Digest.hash(manifest.contents, with: digestAlgorithm),
                                   digestAlgorithm: digestAlgorithm)
        let sections = template.map { ($0.signatureSections, $0.signatureDigestOffsets) }
            ?? ManifestTemplate.signatureSections(of: manifest, digestAlgorithm: digestAlgorithm)
        let start = bytes.count
        bytes.append(contentsOf: sections.0)
        bytes.withUnsafeMutableBytes { out in
            writeSectionDigests(of: manifest, into: UnsafeMutableRawBufferPointer(rebasing: out[start...]),
                                offsets: sections.1, digestAlgorithm: digestAlgorithm)
        }
        if !bytes.isEmpty && bytes.count % 1024 == 0 { bytes += [0x0d, 0x0a] }
        return bytes
    }

    /// Writes the Base64 digest of each of `manifest`'s sections at its offset in `sections` (the .SF file's
    /// sections with blank digests).
    static func writeSectionDigests(of manifest: Manifest, into sections: UnsafeMutableRawBufferPointer, offsets: [Int],
                                    digestAlgorithm: DigestAlgorithm) {
        writeSectionDigests(sectionDigests(of: manifest, digestAlgorithm: digestAlgorithm), into: sections, offsets: offsets,
                            digestAlgorithm: digestAlgorithm)
    }

    /// The digest of each of `manifest`'s sections, one after another: thousands of short messages, on SHA-256 lanes.
    static func sectionDigests(of manifest: Manifest, digestAlgorithm: DigestAlgorithm) -> [UInt8] {
        digestAlgorithm == .sha256
            ? SHA256Lanes.hashEach(manifest.sectionRanges, of: manifest.contents)
            : Digest.hashEach(manifest.sectionRanges, of: manifest.contents, with: digestAlgorithm)
    }

    /// Writes `digests` (`sectionDigests(of:digestAlgorithm:)`) in Base64 at `offsets` in `sections`.
    static func writeSectionDigests(_ digests: [UInt8], into sections: UnsafeMutableRawBufferPointer, offsets: [Int],
                                    digestAlgorithm: DigestAlgorithm) {
        let size = digestAlgorithm.outputSize
        for (index, offset) in offsets.enumerated() {
            Base64.write(digests[(index * size)..<((index + 1) * size)], into: UnsafeMutableRawBufferPointer(rebasing: sections[offset...]))
        }
    }

    /// One JAR signer: the base name of its files, its key, and the digest its PKCS #7 signature uses (its own
    /// `digestAlgorithm(for:minSdkVersion:)`; the manifest's digests use the strongest of the signers').
    struct Signer: Sendable {
        var name: String
        var key: SignerKey
        var signatureDigest: DigestAlgorithm
    }

    /// The JAR signature entries in apksig's order (`signManifest`): `<NAME>.SF` and `<NAME>.<ALG>` for each
    /// signer, then `META-INF/MANIFEST.MF`. Every signer signs the same `.SF` file.
    static func signatureEntries(signers: [Signer], manifest: Manifest, signatureFile: [UInt8],
                                 whileSigning: ([UInt8]) throws -> Void = { _ in }) throws -> [(name: String, data: [UInt8])] {
        // The first signature is made on another thread while `whileSigning` (the signer deflates the .SF file)
        // runs. makeSignedData refuses a key that does not match certificates[0] (apksig verifies its signature too).
        @Sendable func sign(_ signer: Signer) throws -> [UInt8] {
            try PKCS7.makeSignedData(signing: signatureFile, key: signer.key.privateKey, certificates: signer.key.certificates,
                                     digest: signer.signatureDigest, dsaNonce: signer.key.dsaNonce)
        }
        guard let first = signers.first else { throw SignError.internalInconsistency("no JAR signer") }
        let firstSignature = BackgroundValue<[UInt8]> { try sign(first) }
        defer { firstSignature.wait() }
        try whileSigning(signatureFile)
        var entries: [(name: String, data: [UInt8])] = []
        for (index, signer) in signers.enumerated() {
            let block = index == 0 ? try firstSignature.get() : try sign(signer)
            entries.append(("META-INF/\(signer.name).SF", signatureFile))
            entries.append(("META-INF/\(signer.name).\(signer.key.privateKey.algorithm.rawValue)", block))
        }
        entries.append((manifestEntryName, manifest.contents))
        return entries
    }
}
