import APKCore
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import OpenSSLWrapper
import SignatureSchemes

/// JAR signature (APK v1 scheme) verification, following apksig's `internal/apk/v1/V1SchemeVerifier.java`
/// step by step, because Android's behaviour differs from the JAR specification in ways that decide
/// acceptance: which SignerInfos are tried (only the first before N), which digest attributes are used per
/// API level (Digest-Algorithms before JB MR2, strongest of SHA-512/384/256/1 after), when the whole-manifest
/// digest replaces per-section digests, and the `X-Android-APK-Signed` anti-stripping attribute (N+).
struct V1SchemeVerifier {
    static let manifestName = "META-INF/MANIFEST.MF"
    static let maxSigners = 10

    struct Signer {
        var name: String              // e.g. "CERT.RSA"
        var blockEntry: ZipEntry
        var signatureFileEntry: ZipEntry
        var signatureFileBytes: [UInt8] = []
        var signatureFileEntryNames: Set<ExactName> = []
        var isIgnored = false
        var certificateChain: [VerificationCertificate] = []
        var errors: [Issue] = []
        var warnings: [Issue] = []
        var context: String { "JAR signer \(name)" }

        mutating func error(_ code: Issue.Code, _ message: String) { errors.append(.error(code, context, message)) }
        mutating func warning(_ code: Issue.Code, _ message: String) { warnings.append(.warning(code, context, message)) }
    }

    struct Result {
        var isVerified = false
        var signers: [Signer] = []
        var ignoredSigners: [Signer] = []
        var errors: [Issue] = []
        var warnings: [Issue] = []
        /// The local header offsets of the entries whose data was read whole for their digests (their size,
        /// CRC-32 and deflate stream checked on the way, each failure reported here).
        var digestedEntries: Set<Int64> = []
        var containsErrors: Bool { !errors.isEmpty || signers.contains { !$0.errors.isEmpty } }
    }

    let archive: APKArchive
    /// Non-directory entries in central-directory order (apksig `parseZipCentralDirectory`).
    let entries: [ZipEntry]
    /// Scheme IDs the platforms in range know, with their names (apksig `getSupportedSchemeNames`).
    let supportedSchemeNames: [Int: String]
    let foundSchemeIDs: Set<Int>
    let minSdkVersion: Int
    let maxSdkVersion: Int

    func verify() -> Result {
        var result = Result()
        let entryNames = Set(entries.map { ExactName($0.name) })

        var manifestEntry: ZipEntry?
        var signatureFiles: [ExactName: ZipEntry] = [:]
        var blockEntries: [ZipEntry] = []
        for entry in entries where entry.name.javaHasPrefix("META-INF/") {
            if manifestEntry == nil && ExactName(entry.name) == ExactName(Self.manifestName) { manifestEntry = entry; continue }
            if entry.name.javaHasSuffix(".SF") { signatureFiles[ExactName(entry.name)] = entry; continue }
            if entry.name.javaHasSuffix(".RSA") || entry.name.javaHasSuffix(".DSA") || entry.name.javaHasSuffix(".EC") {
                blockEntries.append(entry)
            }
        }
        guard let manifestEntry else {
            result.errors.append(.error(.jarSigNoManifest, "", "Missing META-INF/MANIFEST.MF"))
            return result
        }
        let manifestBytes: [UInt8]
        do { manifestBytes = try archive.uncompressedData(of: manifestEntry) } catch {
            result.errors.append(.error(.malformedAPK, "", "Malformed ZIP entry: \(manifestEntry.name): \(error)"))
            return result
        }
        let manifest = JARManifest(bytes: manifestBytes)
        var sectionsByName: [ExactName: JARManifest.Section] = [:]
        for (number, section) in manifest.individualSections.enumerated() {
            guard let name = section.name else {
                result.errors.append(.error(.jarSigUnnamedManifestSection, "", "Malformed META-INF/MANIFEST.MF: invidual section #\(number + 1) does not have a name"))
                continue
            }
            if sectionsByName[ExactName(name)] != nil {
                result.errors.append(.error(.jarSigDuplicateManifestSection, "", "Duplicate section in META-INF/MANIFEST.MF: \(name)"))
                continue
            }
            sectionsByName[ExactName(name)] = section
            if !entryNames.contains(ExactName(name)) {
                result.errors.append(.error(.jarSigMissingZipEntryReferencedInManifest, "", "\(name) entry referenced by META-INF/MANIFEST.MF not found in the APK"))
            }
        }
        if result.containsErrors { return result }

        var signers: [Signer] = []
        for block in blockEntries {
            guard let dot = block.name.lastIndex(of: ".") else { continue }
            let signatureFileName = String(block.name[..<dot]) + ".SF"
            guard let signatureFile = signatureFiles[ExactName(signatureFileName)] else {
                result.warnings.append(.warning(.jarSigMissingFile, "", "Partial JAR signature. Found: \(block.name), missing: \(signatureFileName)"))
                continue
            }
            signers.append(Signer(name: String(decoding: block.name.utf8.dropFirst("META-INF/".utf8.count), as: UTF8.self), blockEntry: block,
                                  signatureFileEntry: signatureFile))
        }
        if signers.isEmpty {
            result.errors.append(.error(.jarSigNoSignatures, "", "No JAR signatures"))
            return result
        }
        if signers.count > Self.maxSigners {
            result.errors.append(.error(.jarSigMaxSignaturesExceeded, "", "APK Signature Scheme v1 only supports a maximum of \(Self.maxSigners) signers, found \(signers.count)"))
            return result
        }

        // Each signature block against its .SF; any error stops verification, as on Android.
        for index in signers.indices {
            verifyBlockAgainstSignatureFile(&signers[index], result: &result)
            if !signers[index].errors.isEmpty { result.signers.append(signers[index]) }
        }
        if result.containsErrors { return result }

        // Each .SF against the manifest.
        var remaining: [Signer] = []
        for var signer in signers {
            verifySignatureFileAgainstManifest(&signer, manifest: manifest, sectionsByName: sectionsByName)
            if signer.isIgnored {
                result.ignoredSigners.append(signer)
            } else if !signer.errors.isEmpty {
                result.signers.append(signer)
            } else {
                remaining.append(signer)
            }
        }
        if result.containsErrors { return result }
        signers = remaining
        if signers.isEmpty {
            result.errors.append(.error(.jarSigNoSignatures, "", "No JAR signatures"))
            return result
        }

        let apkSignerNames = verifyEntries(signers: signers, sectionsByName: sectionsByName, result: &result)
        if result.containsErrors { return result }

        var signatureEntryNames: Set<ExactName> = [ExactName(manifestEntry.name)]
        for signer in signers where apkSignerNames.contains(ExactName(signer.name)) {
            signatureEntryNames.insert(ExactName(signer.blockEntry.name))
            signatureEntryNames.insert(ExactName(signer.signatureFileEntry.name))
        }
        for entry in entries where entry.name.javaHasPrefix("META-INF/") && !entry.name.javaHasSuffix("/") && !signatureEntryNames.contains(ExactName(entry.name)) {
            result.warnings.append(.warning(.jarSigUnprotectedZipEntry, "", "\(entry.name) not protected by signature. Unauthorized modifications to this JAR entry will not be detected. Delete or move the entry outside of META-INF/."))
        }
        for signer in signers {
            if apkSignerNames.contains(ExactName(signer.name)) { result.signers.append(signer) } else { result.ignoredSigners.append(signer) }
        }
        result.isVerified = true
        return result
    }

    // MARK: - Signature block against .SF

    private func verifyBlockAgainstSignatureFile(_ signer: inout Signer, result: inout Result) {
        let blockBytes: [UInt8]
        do {
            blockBytes = try archive.uncompressedData(of: signer.blockEntry)
            signer.signatureFileBytes = try archive.uncompressedData(of: signer.signatureFileEntry)
        } catch {
            signer.error(.malformedAPK, "Malformed ZIP entry: \(error)")
            return
        }
        let blockName = signer.blockEntry.name, fileName = signer.signatureFileEntry.name
        let signedData: PKCS7SignedData
        do { signedData = try PKCS7SignedData(berEncoded: blockBytes) } catch {
            signer.error(.jarSigParseException, "Failed to parse JAR signature \(blockName): \(error)")
            return
        }
        if signedData.signerInfos.isEmpty {
            signer.error(.jarSigNoSigners, "JAR signature \(blockName) contains no signers")
            return
        }
        // Before N, Android verifies only the first SignerInfo; from N on, the first that verifies.
        let candidates = minSdkVersion < AndroidSDK.nougat ? [signedData.signerInfos[0]] : signedData.signerInfos
        var certificates: [VerificationCertificate]?
        var verifiedCertificate: VerificationCertificate?
        for info in candidates {
            if certificates == nil {
                do { certificates = try signedData.certificates.map { try VerificationCertificate(derEncoded: $0) } } catch {
                    signer.error(.jarSigParseException, "Failed to parse JAR signature \(blockName): \(error)")
                    return
                }
            }
            do {
                let certificate = try verifySignerInfo(info, signedData: signedData, certificates: certificates!,
                                                       signatureFile: signer.signatureFileBytes, signer: &signer)
                if !signer.errors.isEmpty { return }
                if let certificate, verifiedCertificate == nil { verifiedCertificate = certificate }
            } catch let error as SignerInfoFailure {
                switch error {
                case .parse(let reason): signer.error(.jarSigParseException, "Failed to parse JAR signature \(blockName): \(reason)")
                case .verify(let reason): signer.error(.jarSigVerifyException, "Failed to verify JAR signature \(blockName) against \(fileName): \(reason)")
                }
                return
            } catch {
                signer.error(.jarSigVerifyException, "Failed to verify JAR signature \(blockName) against \(fileName): \(error)")
                return
            }
        }
        guard let leaf = verifiedCertificate else {
            signer.error(.jarSigDidNotVerify, "JAR signature \(blockName) did not verify against \(fileName)")
            return
        }
        signer.certificateChain = Self.chain(from: leaf, in: certificates ?? [])
    }

    enum SignerInfoFailure: Error { case parse(String), verify(String) }

    /// Returns the signing certificate when `info` verifies against the .SF, nil when it does not; adds an
    /// error for an algorithm unsupported in range; throws `.parse`/`.verify` as apksig's exceptions.
    private func verifySignerInfo(_ info: PKCS7SignerInfo, signedData: PKCS7SignedData, certificates: [VerificationCertificate],
                                  signatureFile: [UInt8], signer: inout Signer) throws -> VerificationCertificate? {
        let digestOID = info.digestAlgorithm.oid, signatureOID = info.signatureAlgorithm.oid
        let supported = JARSignatureAlgorithms.supportedLevels(digestOID: digestOID, signatureOID: signatureOID)
        let unsupported = JARSignatureAlgorithms.levels(minSdkVersion...maxSdkVersion, notIn: supported)
        if !unsupported.isEmpty {
            let digestName = JARSignatureAlgorithms.friendlyNames[digestOID] ?? digestOID
            let signatureName = JARSignatureAlgorithms.friendlyNames[signatureOID] ?? signatureOID
            let levels = unsupported.map { range -> String in
                if range.lowerBound == range.upperBound { return String(range.lowerBound) }
                if range.upperBound == Int(Int32.max) { return "\(range.lowerBound)+" }
                return "\(range.lowerBound)-\(range.upperBound)"
            }.joined(separator: ", ")
            signer.error(.jarSigUnsupportedSigAlg, "JAR signature \(signer.blockEntry.name) uses digest algorithm \(digestName) and signature algorithm \(signatureName) which is not supported on API Level(s) \(levels) for which this APK is being verified")
            return nil
        }
        guard let issuer = info.issuerNameDER, let serial = info.serialNumber,
              let certificate = certificates.first(where: { VerificationCertificate.sameInteger($0.serialNumberBytes, serial) && $0.issuerMatches(nameDER: issuer) }) else {
            throw SignerInfoFailure.verify("Signing certificate referenced in SignerInfo not found in SignedData")
        }
        if certificate.hasUnsupportedCriticalExtension {
            throw SignerInfoFailure.verify("Signing certificate has unsupported critical extensions")
        }
        if !certificate.isAllowedForDigitalSignatures {
            throw SignerInfoFailure.verify("Signing certificate not authorized for use in digital signatures: keyUsage extension missing digitalSignature and nonRepudiation")
        }
        let algorithm = try JARSignatureAlgorithms.verificationAlgorithm(digestOID: digestOID, signatureOID: signatureOID)
        // Java's Signature.initVerify comes before the signed attributes: a key that does not suit the
        // algorithm ends the whole block (InvalidKeyException), even where the attributes would only skip
        // this SignerInfo.
        if certificate.keyAlgorithm != algorithm.keyType.rawValue {
            throw SignerInfoFailure.verify("\(algorithm) cannot be verified with a \(certificate.keyAlgorithm) key")
        }
        // initVerify also refuses an EC key on a curve the JDK's SunEC lacks (since JDK 16 it has P-256,
        // P-384 and P-521 only; Android's BoringSSL has no other curve but P-224). OpenSSL would verify
        // secp256k1 or brainpool signatures that neither apksigner nor Android accepts.
        if let curve = certificate.ecCurveName, !["prime256v1", "secp384r1", "secp521r1"].contains(curve) {
            throw SignerInfoFailure.verify("Unsupported EC curve: \(curve.isEmpty ? "explicit parameters" : curve)")
        }
        var data: [UInt8]
        if let signedAttributes = info.signedAttributesEncoded {
            if minSdkVersion < 19 {
                throw SignerInfoFailure.verify("APKs with Signed Attributes broken on platforms with API Level < 19")
            }
            let attributes: [(type: String, values: [BERElement])]
            do { attributes = try info.signedAttributes() } catch {
                throw SignerInfoFailure.verify("Failed to parse signed attributes: \(error)")
            }
            var byType: [String: [BERElement]] = [:]
            for attribute in attributes {
                if byType.updateValue(attribute.values, forKey: attribute.type) != nil {
                    throw SignerInfoFailure.parse("Duplicate signed attribute: \(attribute.type)")
                }
            }
            // apksig SignedAttributes.getSingleValue: an empty value set is as good as no attribute.
            func single(_ oid: String) throws -> BERElement? {
                guard let values = byType[oid], !values.isEmpty else { return nil }
                guard values.count == 1 else { throw SignerInfoFailure.parse("Attribute \(oid) has multiple values") }
                return values[0]
            }
            if maxSdkVersion >= AndroidSDK.nougat {
                guard let contentType = try single(PKCS7SignedData.contentTypeAttributeOID) else {
                    throw SignerInfoFailure.verify("No Content Type in signed attributes")
                }
                let value: String
                do { value = try contentType.objectIdentifier() } catch { throw SignerInfoFailure.parse("\(error)") }
                if value != signedData.encapsulatedContentType { return nil }
            }
            guard let messageDigest = try single(PKCS7SignedData.messageDigestAttributeOID) else {
                throw SignerInfoFailure.verify("No content digest in signed attributes")
            }
            let expected: [UInt8]
            do { expected = try messageDigest.octetString() } catch { throw SignerInfoFailure.parse("\(error)") }
            guard let digest = JARSignatureAlgorithms.digests[digestOID] else {
                throw SignerInfoFailure.verify("Unsupported digest algorithm: \(digestOID)")
            }
            if digest.hash(signatureFile) != expected { return nil }
            // Android signs over the attributes as encoded, with only the tag changed to UNIVERSAL SET.
            data = signedAttributes
            data[0] = 0x31
        } else {
            data = signatureFile
        }
        try JARSignatureAlgorithms.checkSignatureEncoding(info.signature, algorithm: algorithm, certificate: certificate)
        let verified: Bool
        do { verified = try certificate.verify(signature: info.signature, data: data, algorithm: algorithm) } catch {
            throw SignerInfoFailure.verify("\(error)")
        }
        return verified ? certificate : nil
    }

    /// The leaf followed by its issuers found by subject/issuer name (apksig `getCertificateChain`).
    static func chain(from leaf: VerificationCertificate, in certificates: [VerificationCertificate]) -> [VerificationCertificate] {
        var unused = certificates
        if let index = unused.firstIndex(where: { $0 === leaf }) { unused.remove(at: index) }
        var chain = [leaf]
        var root = leaf
        while root.subjectDN != root.issuerDN {
            guard let index = unused.firstIndex(where: { $0.subjectDN == root.issuerDN }) else { break }
            root = unused.remove(at: index)
            chain.append(root)
        }
        return chain
    }

    // MARK: - .SF against MANIFEST.MF

    private func verifySignatureFileAgainstManifest(_ signer: inout Signer, manifest: JARManifest,
                                                    sectionsByName: [ExactName: JARManifest.Section]) {
        let signatureFile = JARManifest(bytes: signer.signatureFileBytes)
        let fileName = signer.signatureFileEntry.name
        guard let main = signatureFile.mainSection, main.value(of: "Signature-Version") != nil else {
            signer.error(.jarSigMissingVersionAttrInSigFile, "Malformed \(fileName): missing Signature-Version attribute")
            signer.isIgnored = true
            return
        }
        if maxSdkVersion >= AndroidSDK.nougat {
            checkForStrippedSignatures(main, signer: &signer)
            if !signer.errors.isEmpty { return }
        }
        let createdBySigntool = main.value(of: "Created-By")?.contains("signtool") ?? false
        let manifestDigestVerified = verifyManifestDigest(main, createdBySigntool: createdBySigntool, manifest: manifest, signer: &signer)
        if !createdBySigntool {
            let expected = digestsToVerify(main, suffix: "-Digest-Manifest-Main-Attributes", signer: &signer)
            if let mainSection = manifest.mainSection {
                for (algorithm, digest) in expected {
                    let actual = algorithm.hash(manifest.bytes(of: mainSection))
                    if actual != digest {
                        signer.error(.jarSigManifestMainSectionDigestDidNotVerify, "\(algorithm.rawValue) digest of META-INF/MANIFEST.MF main section does not match the digest specified in \(fileName). Expected: <\(Base64.encode(digest))>, actual: <\(Base64.encode(actual))>")
                    }
                }
            } else if !expected.isEmpty {
                signer.error(.jarSigManifestMainSectionDigestDidNotVerify, "META-INF/MANIFEST.MF has no main section, but \(fileName) specifies its digest")
            }
        }
        if !signer.errors.isEmpty { return }

        var names: Set<ExactName> = []
        for (number, section) in signatureFile.individualSections.enumerated() {
            guard let name = section.name else {
                signer.error(.jarSigUnnamedSigFileSection, "Malformed \(fileName): invidual section #\(number + 1) does not have a name")
                signer.isIgnored = true
                return
            }
            guard names.insert(ExactName(name)).inserted else {
                signer.error(.jarSigDuplicateSigFileSection, "Duplicate section in \(fileName): \(name)")
                signer.isIgnored = true
                return
            }
            if manifestDigestVerified { continue }
            guard let manifestSection = sectionsByName[ExactName(name)] else {
                signer.error(.jarSigNoZipEntryDigestInSigFile, "No digest for \(name) in \(fileName)")
                signer.isIgnored = true
                continue
            }
            let expected = digestsToVerify(section, suffix: "-Digest", signer: &signer)
            if expected.isEmpty {
                signer.error(.jarSigNoZipEntryDigestInSigFile, "No digest for \(name) in \(fileName)")
                continue
            }
            var range = manifestSection.range
            if createdBySigntool, range.count >= 2, manifest.bytes[range.upperBound - 1] == 0x0a, manifest.bytes[range.upperBound - 2] == 0x0a {
                range = range.lowerBound..<(range.upperBound - 1)
            }
            for (algorithm, digest) in expected {
                let actual = algorithm.hash(manifest.bytes[range])
                if actual != digest {
                    signer.error(.jarSigManifestSectionDigestDidNotVerify, "\(algorithm.rawValue) digest of META-INF/MANIFEST.MF section for \(name) does not match the digest specified in \(fileName). Expected: <\(Base64.encode(digest))>, actual: <\(Base64.encode(actual))>")
                }
            }
        }
        signer.signatureFileEntryNames = names
    }

    private func verifyManifestDigest(_ main: JARManifest.Section, createdBySigntool: Bool, manifest: JARManifest, signer: inout Signer) -> Bool {
        let fileName = signer.signatureFileEntry.name
        let expected = digestsToVerify(main, suffix: createdBySigntool ? "-Digest" : "-Digest-Manifest", signer: &signer)
        if expected.isEmpty {
            signer.warning(.jarSigNoManifestDigestInSigFile, "\(fileName) does not specify digest of META-INF/MANIFEST.MF. This slows down verification.")
            return false
        }
        var verified = true
        for (algorithm, digest) in expected {
            let actual = algorithm.hash(manifest.bytes)
            if actual != digest {
                signer.warning(.jarSigZipEntryDigestDidNotVerify, "\(algorithm.rawValue) digest of META-INF/MANIFEST.MF does not match the digest specified in \(fileName). Expected: <\(Base64.encode(digest))>, actual: <\(Base64.encode(actual))>")
                verified = false
            }
        }
        return verified
    }

    private func checkForStrippedSignatures(_ main: JARManifest.Section, signer: inout Signer) {
        let fileName = signer.signatureFileEntry.name
        guard let value = main.value(of: "X-Android-APK-Signed") else {
            if !foundSchemeIDs.isEmpty {
                signer.warning(.jarSigNoAPKSigStripProtection, "APK is signed using APK Signature Scheme v2 but these signatures may be stripped without being detected because \(fileName) does not contain anti-stripping protections.")
            }
            return
        }
        if supportedSchemeNames.isEmpty { return }
        var expected: Set<Int> = []
        for token in value.split(separator: ",") {
            let text = token.trimmingJavaWhitespace()
            if text.isEmpty { continue }
            guard let id = Self.javaParseInt(text) else { continue }
            if supportedSchemeNames[id] != nil {
                expected.insert(id)
            } else {
                signer.warning(.jarSigUnknownAPKSigSchemeID, "JAR signature \(fileName) references unknown APK signature scheme ID: \(id)")
            }
        }
        for id in expected.sorted() where !foundSchemeIDs.contains(id) {
            signer.error(.jarSigMissingAPKSigReferenced, "JAR signature \(fileName) indicates the APK is signed using \(supportedSchemeNames[id]!) but no such signature was found. Signature stripped?")
        }
    }

    /// Java's `Integer.parseInt(text)`: an optional sign, then decimal digits of any script (Character.digit
    /// accepts every Unicode Nd digit: "\u{0662}" is 2), within Int32; nil where it throws.
    static func javaParseInt(_ text: String) -> Int? {
        var scalars = Substring(text).unicodeScalars[...]
        var negative = false
        if let sign = scalars.first, sign == "+" || sign == "-" { negative = sign == "-"; scalars = scalars.dropFirst() }
        guard !scalars.isEmpty else { return nil }
        var value = 0
        for scalar in scalars {
            guard scalar.properties.numericType == .decimal, let digit = scalar.properties.numericValue else { return nil }
            value = value * 10 + Int(digit)
            guard value <= Int(Int32.max) + 1 else { return nil }
        }
        value = negative ? -value : value
        return value <= Int(Int32.max) ? value : nil
    }

    // MARK: - Entries against the manifest

    /// Returns the names of the signers that sign every entry (all entries must name the same set).
    private func verifyEntries(signers: [Signer], sectionsByName: [ExactName: JARManifest.Section], result: inout Result) -> Set<ExactName> {
        var firstSigners: [String]?
        var firstName = ""
        var scratch = Signer(name: "", blockEntry: signers[0].blockEntry, signatureFileEntry: signers[0].signatureFileEntry)
        var jobs: [DigestJob] = []
        for entry in entries.sorted(by: { $0.localHeaderOffset < $1.localHeaderOffset }) {
            let name = entry.name
            if name.javaHasPrefix("META-INF/") || name.javaHasSuffix("/") { continue }
            let key = ExactName(name)
            guard let section = sectionsByName[key] else {
                result.errors.append(.error(.jarSigNoZipEntryDigestInManifest, "", "No digest for \(name) in META-INF/MANIFEST.MF"))
                continue
            }
            let entrySigners = signers.filter { $0.signatureFileEntryNames.contains(key) }.map(\.name)
            if entrySigners.isEmpty {
                result.errors.append(.error(.jarSigZipEntryNotSigned, "", "\(name) entry not signed"))
                continue
            }
            if let first = firstSigners {
                if !first.elementsEqual(entrySigners, by: { ExactName($0) == ExactName($1) }) {
                    result.errors.append(.error(.jarSigZipEntrySignersMismatch, "", "Entries \(firstName) and \(name) are signed with different sets of signers : <\(first.joined(separator: ", "))> vs <\(entrySigners.joined(separator: ", "))>"))
                    continue
                }
            } else {
                firstSigners = entrySigners
                firstName = name
            }
            let expected = digestsToVerify(section, suffix: "-Digest", signer: &scratch)
            result.errors.append(contentsOf: scratch.errors.map { .error($0.code, "", $0.message) })
            scratch.errors.removeAll()
            if expected.isEmpty {
                result.errors.append(.error(.jarSigNoZipEntryDigestInManifest, "", "No digest for \(name) in META-INF/MANIFEST.MF"))
                continue
            }
            jobs.append(DigestJob(entry: entry, expected: expected))
        }

        // The entries' data, digested on all cores (each job writes only its own slot).
        // Largest entries first, so that one big entry (resources.arsc) does not finish alone on one core.
        let archive = self.archive
        let jobList = jobs
        let order = jobs.indices.sorted { jobs[$0].entry.uncompressedSize > jobs[$1].entry.uncompressedSize }
        let outcomes = Parallel.Slots<DigestOutcome?>(count: jobs.count, repeating: nil)
        let work: @Sendable (Int) -> Void = { position in
            let index = order[position]
            let job = jobList[index]
            let hashers = job.expected.map { $0.algorithm.makeHasher() }
            // A large entry gives its mapped pages back (a stored one as it is read), so that the resident set
            // does not grow by the whole APK; small entries are not worth a system call each.
            let isLarge = job.entry.compressedSize >= 1 << 20
            var position = job.entry.dataRange.lowerBound
            do {
                let trailing = try archive.withUncompressedChunks(of: job.entry) { chunk in
                    for hasher in hashers { hasher.update(chunk) }
                    if isLarge && !job.entry.isCompressed {
                        archive.source.discard(position..<(position + Int64(chunk.count)))
                        position += Int64(chunk.count)
                    }
                }
                outcomes[index] = .digests(hashers.map { $0.finish() }, trailing: trailing)
            } catch {
                outcomes[index] = .failed("\(error)")
            }
            if isLarge && job.entry.isCompressed { archive.source.discard(job.entry.dataRange) }
        }
        try? Parallel.forEach(jobs.count, concurrency: jobs.count, work)
        result.digestedEntries.formUnion(jobs.map(\.entry.localHeaderOffset))
        for (index, job) in jobs.enumerated() {
            let name = job.entry.name
            switch outcomes[index] {
            case .failed(let reason):
                result.errors.append(.error(.malformedAPK, "", "Failed to read entry \(name): \(reason)"))
            case .digests(let actual, let trailing):
                if trailing > 0 {
                    // apksig and Android accept the entry; only writers that copy it raw refuse it (`sign`, `run`).
                    result.warnings.append(EntryDataScan.bytesAfterStream(job.entry, trailing: trailing))
                }
                for (slot, (algorithm, digest)) in job.expected.enumerated() where actual[slot] != digest {
                    result.errors.append(.error(.jarSigZipEntryDigestDidNotVerify, "", "\(algorithm.rawValue) digest of \(name) does not match the digest specified in META-INF/MANIFEST.MF. Expected: <\(Base64.encode(digest))>, actual: <\(Base64.encode(actual[slot]))>"))
                }
            case nil:
                result.errors.append(.error(.malformedAPK, "", "Failed to read entry \(name)"))
            }
        }
        guard let firstSigners else {
            result.errors.append(.error(.jarSigNoSignedZipEntries, "", "No JAR entries covered by JAR signatures"))
            return []
        }
        return Set(firstSigners.map { ExactName($0) })
    }

    // MARK: - Digest attributes

    private static let canonicalDigestNames: [String: VerificationDigest] = [
        "MD5": .md5, "SHA": .sha1, "SHA1": .sha1, "SHA-1": .sha1, "SHA-256": .sha256, "SHA-384": .sha384, "SHA-512": .sha512,
    ]
    /// API level from which each digest is supported in MANIFEST.MF/.SF (apksig
    /// `MIN_SDK_VESION_FROM_WHICH_DIGEST_SUPPORTED_IN_MANIFEST`).
    private static func minSdkSupporting(_ digest: VerificationDigest) -> Int {
        switch digest {
        case .md5, .sha1, .sha256: return 0
        case .sha384, .sha512: return 9
        case .sha224: return Int.max
        }
    }

    /// The digests Android checks for `section` over the API range (apksig `getDigestsToVerify`). A digest
    /// value that is not valid Base64 (apksig throws on it) adds a MALFORMED_APK error to `signer`.
    private func digestsToVerify(_ section: JARManifest.Section, suffix: String, signer: inout Signer) -> [(algorithm: VerificationDigest, digest: [UInt8])] {
        var result: [(algorithm: VerificationDigest, digest: [UInt8])] = []
        func decode(_ text: String, _ attribute: String) -> [UInt8] {
            if let bytes = Base64.decode(text) { return bytes }
            signer.errors.append(.error(.malformedAPK, signer.context, "\(attribute) is not valid Base64: \(text.debugQuoted)"))
            return []
        }
        if minSdkVersion < AndroidSDK.jellyBeanMR2 {
            let algorithms = section.value(of: "Digest-Algorithms") ?? "SHA SHA1"
            for (token, attribute) in Self.digestAlgorithmTokens(algorithms, suffix: suffix) {
                guard let value = section.value(of: attribute) else { continue }
                guard let digest = Self.canonicalDigestNames[token.uppercased()], Self.minSdkSupporting(digest) <= minSdkVersion else { continue }
                result.append((digest, decode(value, attribute)))
                break
            }
            if result.isEmpty { return result }
        }
        if maxSdkVersion >= AndroidSDK.jellyBeanMR2 {
            for (digest, attribute) in Self.strongestFirstAttributes(suffix: suffix) {
                guard let value = section.value(of: attribute) else { continue }
                let bytes = decode(value, attribute)
                if let existing = result.first(where: { $0.algorithm == digest }), existing.digest == bytes { break }
                result.append((digest, bytes))
                break
            }
        }
        return result
    }

    /// The attribute names JB MR2+ looks for, strongest digest first (`SHA-512<suffix>` … `SHA1<suffix>`).
    private static func strongestFirstAttributes(suffix: String) -> [(VerificationDigest, String)] {
        // Built once per suffix: a manifest asks this for every entry.
        switch suffix {
        case "-Digest": return strongestFirstEntryAttributes
        default: return makeStrongestFirstAttributes(suffix: suffix)
        }
    }
    private static let strongestFirstEntryAttributes = makeStrongestFirstAttributes(suffix: "-Digest")
    private static func makeStrongestFirstAttributes(suffix: String) -> [(VerificationDigest, String)] {
        [VerificationDigest.sha512, .sha384, .sha256, .sha1].map { ($0, ($0 == .sha1 ? "SHA1" : $0.rawValue) + suffix) }
    }

    /// The tokens of a Digest-Algorithms value as Java's `StringTokenizer` splits them (on space, tab, LF, CR,
    /// form feed), each with its `<token><suffix>` attribute name. The value is "SHA SHA1" for nearly every
    /// entry (the attribute is absent), so that split is made once.
    private static func digestAlgorithmTokens(_ algorithms: String, suffix: String) -> [(token: Substring, attribute: String)] {
        if algorithms == "SHA SHA1" && suffix == "-Digest" { return defaultEntryDigestAlgorithmTokens }
        return algorithms.split(whereSeparator: { " \t\n\r\u{0C}".contains($0) }).map { ($0, String($0 + suffix)) }
    }
    private static let defaultEntryDigestAlgorithmTokens: [(token: Substring, attribute: String)] =
        "SHA SHA1".split(whereSeparator: { " \t\n\r\u{0C}".contains($0) }).map { ($0, String($0 + "-Digest")) }
}

extension Substring {
    /// Trims what Java's `String.trim()` trims (code points ≤ U+0020).
    func trimmingJavaWhitespace() -> String {
        var s = self
        while let c = s.unicodeScalars.first, c.value <= 0x20 { s = s.dropFirst() }
        while let c = s.unicodeScalars.last, c.value <= 0x20 { s = s.dropLast() }
        return String(s)
    }
}


/// One entry to digest and the digests the manifest expects for it.
private struct DigestJob: Sendable {
    var entry: ZipEntry
    var expected: [(algorithm: VerificationDigest, digest: [UInt8])]
}

/// What digesting one job's entry gave.
private enum DigestOutcome { case digests([[UInt8]], trailing: Int64), failed(String) }
