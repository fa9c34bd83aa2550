import OpenSSLWrapper

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

    /// `isJarEntryDigestNeededInManifest`: every file except directories and the JAR signature files directly
    /// in META-INF (MANIFEST.MF, *.SF, *.RSA, *.DSA, *.EC, SIG-*; case-insensitive). apksig also drops
    /// every entry for which this is false when it copies an APK.
    static func isDigestNeeded(_ name: String) -> Bool {
        if name.hasSuffix("/") { return false }
        guard name.hasPrefix("META-INF/") else { return true }
        let rest = name.dropFirst("META-INF/".count)
        if rest.contains("/") { return true }
        // Java's toLowerCase(Locale.US).
        let lower = rest.lowercased()
        if lower == "manifest.mf" || lower.hasSuffix(".sf") || lower.hasSuffix(".rsa") || lower.hasSuffix(".dsa")
            || lower.hasSuffix(".ec") || lower.hasPrefix("sig-") {
            return false
        }
        return true
    }

    static func entryDigestAttributeName(_ digest: DigestAlgorithm) -> String {
        digest == .sha1 ? "SHA1-Digest" : "SHA-256-Digest"
    }

    static func manifestDigestAttributeName(_ digest: DigestAlgorithm) -> String {
        digest == .sha1 ? "SHA1-Digest-Manifest" : "SHA-256-Digest-Manifest"
    }

    /// The output manifest and the bytes of each individual section (which the `.SF` file digests).
    struct Manifest {
        var contents: [UInt8]
        /// (entry name, section bytes), sorted by entry name as Java sorts strings.
        var sections: [(name: String, bytes: [UInt8])]
    }

    /// `generateManifestFile`: the input manifest's main section (or just `Manifest-Version: 1.0`), then one
    /// section per entry, sorted by name, with the entry's digest in Base64.
    static func makeManifest(digestAlgorithm: DigestAlgorithm, entryDigests: [(name: String, digest: [UInt8])],
                             inputManifest: [UInt8]?) throws -> Manifest {
        var writer = JARManifestWriter()
        if let inputManifest {
            let main = try JARMainSection(manifest: inputManifest)
            guard let version = main.value(of: "Manifest-Version") else {
                throw SignError.malformedInputManifest("its main section has no Manifest-Version attribute")
            }
            // apksig puts the main attributes in a TreeMap and removes exactly "Manifest-Version" (a differently
            // cased spelling stays and is written a second time, as apksig does).
            let others = main.attributes.filter { $0.name != "Manifest-Version" }.map { ($0.name, $0.value) }
            writer.writeMainSection(first: ("Manifest-Version", version), others: others)
        } else {
            writer.writeMainSection(first: ("Manifest-Version", "1.0"), others: [])
        }
        let attributeName = entryDigestAttributeName(digestAlgorithm)
        var sections: [(String, [UInt8])] = []
        sections.reserveCapacity(entryDigests.count)
        // Java sorts by UTF-16 code units; compare precomputed code units rather than String views.
        let sorted = entryDigests.map { ($0, Array($0.name.utf16)) }.sorted { $0.1.lexicographicallyPrecedes($1.1) }.map(\.0)
        for (name, digest) in sorted {
            if let bad = name.unicodeScalars.first(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) {
                throw SignError.unsupportedEntryName(name, character: bad.value)
            }
            var section = JARManifestWriter()
            section.writeIndividualSection(name: name, attributes: [(attributeName, base64(digest))])
            sections.append((name, section.bytes))
        }
        var contents = writer.bytes
        for section in sections { contents += section.1 }
        return Manifest(contents: contents, sections: sections)
    }

    /// `generateSignatureFile`: `Signature-Version: 1.0`, `Created-By`, the manifest digest and (when v2/v3
    /// are on) `X-Android-APK-Signed`, then a digest of each manifest section; an extra CRLF when the length
    /// is a multiple of 1024 (a workaround for Android ≤ 1.6's JAR parser).
    static func makeSignatureFile(manifest: Manifest, digestAlgorithm: DigestAlgorithm, apkSchemeIDs: [Int],
                                  createdBy: String) -> [UInt8] {
        var main: [(String, String)] = [("Created-By", createdBy)]
        if !apkSchemeIDs.isEmpty {
            main.append(("X-Android-APK-Signed", apkSchemeIDs.map(String.init).joined(separator: ", ")))
        }
        main.append((manifestDigestAttributeName(digestAlgorithm), base64(Digest.hash(manifest.contents, with: digestAlgorithm))))
        var writer = JARManifestWriter()
        writer.writeMainSection(first: ("Signature-Version", "1.0"), others: main)
        let attributeName = entryDigestAttributeName(digestAlgorithm)
        for section in manifest.sections {
            writer.writeIndividualSection(name: section.name,
                                          attributes: [(attributeName, base64(Digest.hash(section.bytes, with: digestAlgorithm)))])
        }
        if !writer.bytes.isEmpty && writer.bytes.count % 1024 == 0 { writer.writeSectionDelimiter() }
        return writer.bytes
    }

    /// The JAR signature entries in apksig's order: `<NAME>.SF`, `<NAME>.<ALG>`, then `META-INF/MANIFEST.MF`.
    static func signatureEntries(signerName: String, key: PrivateKey, certificates: [Certificate],
                                 digestAlgorithm: DigestAlgorithm, manifest: Manifest, apkSchemeIDs: [Int],
                                 createdBy: String) throws -> [(name: String, data: [UInt8])] {
        let signatureFile = makeSignatureFile(manifest: manifest, digestAlgorithm: digestAlgorithm,
                                              apkSchemeIDs: apkSchemeIDs, createdBy: createdBy)
        // makeSignedData refuses a key that does not match certificates[0] (apksig verifies its signature too).
        let block = try PKCS7.makeSignedData(signing: signatureFile, key: key, certificates: certificates, digest: digestAlgorithm)
        return [
            ("META-INF/\(signerName).SF", signatureFile),
            ("META-INF/\(signerName).\(key.algorithm.rawValue)", block),
            (manifestEntryName, manifest.contents),
        ]
    }
}

/// Standard Base64 with padding (Java's `Base64.getEncoder()`).
func base64(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    var out: [UInt8] = []
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var i = 0
    while i + 3 <= bytes.count {
        let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
        out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
        i += 3
    }
    let rest = bytes.count - i
    if rest == 1 {
        let n = UInt32(bytes[i]) << 16
        out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], 0x3d, 0x3d]
    } else if rest == 2 {
        let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
        out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], 0x3d]
    }
    return String(decoding: out, as: UTF8.self)
}
