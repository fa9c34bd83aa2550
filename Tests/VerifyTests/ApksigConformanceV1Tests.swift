import APKCore
import BinaryXML
import Foundation
import OpenSSLWrapper
import SignatureSchemes
import TestSupport
import Testing
import Unpack
@testable import Verify

// Conformance of the JAR signature (v1) verifier and the SDK-range rules with apksig's
// src/test/java/com/android/apksig/ApkVerifierTest.java. Each test rebuilds the situation of one apksig test
// APK (named in the test's comment) and asserts apksig's verdict and issue; where Debian's apksigner (0.9)
// implements the same rule it is asked too, and must agree.

/// DER encoding for hand-built PKCS #7 blocks.
enum DERBuilder {
    static func tlv(_ tag: UInt8, _ content: [UInt8], lengthBytes: Int? = nil) -> [UInt8] {
        var out = [tag]
        let n = content.count
        if n < 0x80 && lengthBytes == nil {
            out.append(UInt8(n))
        } else {
            var length: [UInt8] = []
            var v = n
            while v > 0 { length.insert(UInt8(v & 0xff), at: 0); v >>= 8 }
            while length.count < (lengthBytes ?? 0) { length.insert(0, at: 0) }
            out.append(0x80 | UInt8(length.count))
            out += length
        }
        return out + content
    }
    static func seq(_ parts: [UInt8]...) -> [UInt8] { tlv(0x30, parts.flatMap { $0 }) }
    static func set(_ parts: [[UInt8]]) -> [UInt8] { tlv(0x31, parts.flatMap { $0 }) }
    static func int(_ value: UInt8) -> [UInt8] { tlv(0x02, [value]) }
    static func octets(_ bytes: [UInt8]) -> [UInt8] { tlv(0x04, bytes) }
    static func oid(_ dotted: String) -> [UInt8] {
        let arcs = dotted.split(separator: ".").map { UInt64($0)! }
        var body: [UInt8] = []
        for arc in [arcs[0] * 40 + arcs[1]] + arcs.dropFirst(2) {
            var chunk: [UInt8] = [UInt8(arc & 0x7f)]
            var v = arc >> 7
            while v > 0 { chunk.insert(UInt8(v & 0x7f) | 0x80, at: 0); v >>= 7 }
            body += chunk
        }
        return tlv(0x06, body)
    }
    static func algorithm(_ oid: String) -> [UInt8] { seq(self.oid(oid), [0x05, 0x00]) }
    static func attribute(_ type: String, _ values: [[UInt8]]) -> [UInt8] { seq(oid(type), set(values)) }

    /// IssuerAndSerialNumber of a certificate.
    static func issuerAndSerial(of certificate: [UInt8]) throws -> [UInt8] {
        let tbs = try BERElement.parseSingle(certificate[...]).children()[0].children()
        let first = tbs[0].isContextSpecific(0) ? 1 : 0
        return seq(Array(tbs[first + 2].encoded), Array(tbs[first].encoded))
    }

    struct SignerInfo {
        var certificate: [UInt8]
        var digestOID: String
        var signatureOID: String
        /// Encoded Attribute SEQUENCEs, in the order written (not sorted: Android does not re-encode them).
        var signedAttributes: [[UInt8]]?
        var signature: [UInt8]
    }

    /// ContentInfo(SignedData) with a detached id-data content, as JAR signature blocks are.
    static func signedData(certificates: [[UInt8]], signerInfos: [SignerInfo], contentType: String = PKCS7SignedData.dataOID) throws -> [UInt8] {
        let infos = try signerInfos.map { info -> [UInt8] in
            var body = int(1) + (try issuerAndSerial(of: info.certificate)) + algorithm(info.digestOID)
            if let attributes = info.signedAttributes { body += tlv(0xA0, attributes.flatMap { $0 }) }
            body += algorithm(info.signatureOID) + octets(info.signature)
            return tlv(0x30, body)
        }
        let digestAlgorithms = Array(Set(signerInfos.map(\.digestOID))).sorted().map { algorithm($0) }
        let signed = seq(int(1), set(digestAlgorithms), seq(oid(contentType)), tlv(0xA0, certificates.flatMap { $0 }), set(infos))
        return seq(oid(PKCS7SignedData.signedDataOID), tlv(0xA0, signed))
    }

    /// What a SignerInfo with these signed attributes signs: the attributes re-tagged as a SET.
    static func signedAttributesToSign(_ attributes: [[UInt8]]) -> [UInt8] { tlv(0x31, attributes.flatMap { $0 }) }
}

/// A private key (PEM file) and its certificate (DER).
struct LabKey: Sendable {
    var keyPath: String
    var certificate: [UInt8]

    /// Signs `data` with `openssl dgst` (PKCS #1 v1.5 for RSA, DER r/s for DSA and ECDSA).
    func sign(_ data: [UInt8], digest: String) throws -> [UInt8] {
        let directory = try TestSupport.makeTemporaryDirectory("v1-sign")
        let input = directory.appendingPathComponent("data").path, output = directory.appendingPathComponent("sig").path
        try VerifyFixtures.write(data, to: input)
        let result = try TestSupport.run("openssl", ["dgst", "-\(digest)", "-sign", keyPath, "-out", output, input])
        guard result.succeeded else { throw FixtureError(message: "openssl dgst failed:\n\(result)") }
        return try VerifyFixtures.read(output)
    }

    static func fromKeystore(_ key: TestKey, in directory: URL) throws -> LabKey {
        let keyPath = directory.appendingPathComponent("\(key.rawValue).key.pem").path
        let certPath = directory.appendingPathComponent("\(key.rawValue).crt.pem").path
        for (flag, path) in [("-nocerts", keyPath), ("-nokeys", certPath)] {
            let r = try TestSupport.run("openssl", ["pkcs12", "-in", try key.keystore, "-passin", "pass:\(TestKeys.password)", "-nodes", flag, "-out", path])
            guard r.succeeded else { throw FixtureError(message: "openssl pkcs12 failed:\n\(r)") }
        }
        let der = directory.appendingPathComponent("\(key.rawValue).crt.der").path
        let r = try TestSupport.run("openssl", ["x509", "-in", certPath, "-outform", "DER", "-out", der])
        guard r.succeeded else { throw FixtureError(message: "openssl x509 failed:\n\(r)") }
        return LabKey(keyPath: keyPath, certificate: try VerifyFixtures.read(der))
    }

    /// A fresh key with a self-signed certificate: `genpkey` arguments, e.g. RSA or DSA parameters.
    static func generate(_ name: String, in directory: URL, genpkey: [String]) throws -> LabKey {
        let keyPath = directory.appendingPathComponent("\(name).key.pem").path
        let der = directory.appendingPathComponent("\(name).crt.der").path
        var r = try TestSupport.run("openssl", ["genpkey"] + genpkey + ["-out", keyPath])
        guard r.succeeded else { throw FixtureError(message: "openssl genpkey failed:\n\(r)") }
        r = try TestSupport.run("openssl", ["req", "-x509", "-new", "-key", keyPath, "-subj", "/CN=Lab \(name)/O=apkpatch", "-days", "3650",
                                            "-sha256", "-outform", "DER", "-out", der])
        guard r.succeeded else { throw FixtureError(message: "openssl req failed:\n\(r)") }
        return LabKey(keyPath: keyPath, certificate: try VerifyFixtures.read(der))
    }

    /// DSA keys take seconds to make: one 1024-bit (q 160) and one 2048-bit (q 256) per run.
    static let dsa: Result<(small: LabKey, large: LabKey), Error> = TestSupport.sharedByTests { Result {
        let directory = try TestSupport.makeTemporaryDirectory("v1-dsa")
        let params = directory.appendingPathComponent("p1024.pem").path, params2 = directory.appendingPathComponent("p2048.pem").path
        for (path, bits, q) in [(params, "1024", "160"), (params2, "2048", "256")] {
            let r = try TestSupport.run("openssl", ["genpkey", "-genparam", "-algorithm", "DSA", "-pkeyopt", "dsa_paramgen_bits:\(bits)",
                                                    "-pkeyopt", "dsa_paramgen_q_bits:\(q)", "-out", path])
            guard r.succeeded else { throw FixtureError(message: "openssl genpkey -genparam failed:\n\(r)") }
        }
        return (try generate("dsa1024", in: directory, genpkey: ["-paramfile", params]),
                try generate("dsa2048", in: directory, genpkey: ["-paramfile", params2]))
    } }
}

/// A v1-only APK signed by apksigner (signer name SIGNER), whose JAR signature files each case replaces.
struct V1Lab {
    let directory: URL
    let base: String
    let manifest: [UInt8]
    let signatureFile: [UInt8]
    let rsa: LabKey

    init(_ label: String, minSdk: Int = 21, targetSdk: Int = 29, configure: (inout FixtureAPK) -> Void = { _ in }) throws {
        directory = try TestSupport.makeTemporaryDirectory(label)
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory) { $0.minSdk = minSdk; $0.targetSdk = targetSdk; configure(&$0) }
        let aligned = try VerifyFixtures.zipalign(unsigned, output: directory.appendingPathComponent("aligned.apk").path)
        base = try VerifyFixtures.sign(aligned, key: .rsa2048, schemes: SchemeSet(v1: true, v2: false, v3: false),
                                       output: directory.appendingPathComponent("base.apk").path)
        let archive = try APKArchive(path: base)
        manifest = try archive.uncompressedData(of: try #require(archive.entry(named: "META-INF/MANIFEST.MF")))
        signatureFile = try archive.uncompressedData(of: try #require(archive.entry(named: "META-INF/SIGNER.SF")))
        rsa = try LabKey.fromKeystore(.rsa2048, in: directory)
    }

    /// A copy of the base APK with MANIFEST.MF, SIGNER.SF and the signature block replaced (the block is
    /// stored as META-INF/`blockName`, the old SIGNER.RSA removed).
    func apk(_ name: String, manifest: [UInt8]? = nil, signatureFile: [UInt8]? = nil, block: [UInt8], blockName: String = "SIGNER.RSA") throws -> String {
        let unique = "\(name)-\(UUID().uuidString.prefix(8))"  // parameterized cases share a lab
        let work = directory.appendingPathComponent(unique)
        try FileManager.default.createDirectory(at: work.appendingPathComponent("META-INF"), withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("\(unique).apk").path
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: base, toPath: path)
        try VerifyFixtures.write(manifest ?? self.manifest, to: work.appendingPathComponent("META-INF/MANIFEST.MF").path)
        try VerifyFixtures.write(signatureFile ?? self.signatureFile, to: work.appendingPathComponent("META-INF/SIGNER.SF").path)
        try VerifyFixtures.write(block, to: work.appendingPathComponent("META-INF/\(blockName)").path)
        if blockName != "SIGNER.RSA" {
            let r = try TestSupport.run("zip", ["-q", "-d", path, "META-INF/SIGNER.RSA"])
            guard r.succeeded else { throw FixtureError(message: "zip -d failed:\n\(r)") }
        }
        let r = try TestSupport.run("zip", ["-q", path, "META-INF/MANIFEST.MF", "META-INF/SIGNER.SF", "META-INF/\(blockName)"], currentDirectory: work.path)
        guard r.succeeded else { throw FixtureError(message: "zip failed:\n\(r)") }
        return path
    }

    /// A block with one SignerInfo (no signed attributes) by `key` over `signatureFile`.
    func block(key: LabKey? = nil, digest: String = "sha256", digestOID: String = JARSignatureAlgorithms.digestSHA256,
               signatureOID: String = JARSignatureAlgorithms.rsa, over signatureFile: [UInt8]? = nil, extraCertificates: [[UInt8]] = []) throws -> [UInt8] {
        let key = key ?? rsa
        let signature = try key.sign(signatureFile ?? self.signatureFile, digest: digest)
        return try DERBuilder.signedData(certificates: extraCertificates + [key.certificate],
                                         signerInfos: [.init(certificate: key.certificate, digestOID: digestOID, signatureOID: signatureOID, signature: signature)])
    }
}

/// Our verdict, and apksigner's when `oracle`.
func expectVerdict(_ apk: String, min: Int? = nil, max: Int? = nil, verified: Bool, code: String? = nil, oracle: Bool = true,
                   _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let report = try VerifyFixtures.verify(apk, minSdkVersion: min, maxSdkVersion: max ?? Int(Int32.max))
    let ours = report.isSignatureVerified
    #expect(ours == verified, "\(comment) [min \(min.map(String.init) ?? "apk"), max \(max.map(String.init) ?? "∞")]: \(report.signatureErrors)", sourceLocation: sourceLocation)
    if let code {
        #expect(VerifyFixtures.codes(report.signatureErrors).contains(code), "\(comment): expected \(code), got \(report.signatureErrors)", sourceLocation: sourceLocation)
    }
    if oracle {
        let apksigner = try VerifyFixtures.apksignerVerify(apk, minSdkVersion: min, maxSdkVersion: max)
        #expect(apksigner.verifies == verified, "\(comment): apksigner says \(apksigner.output)", sourceLocation: sourceLocation)
    }
}

@Suite("apksig conformance: JAR signatures (v1)", .removesTemporaryDirectories)
struct ApksigConformanceV1Tests {
    typealias A = JARSignatureAlgorithms

    // MARK: - testV1OneSigner{MD5,SHA1,SHA224,SHA256,SHA384,SHA512}with{RSA,ECDSA,DSA}Accepted

    struct AlgorithmCase: CustomStringConvertible, Sendable {
        var key: String, digest: String, digestOID: String, signatureOID: String
        var oracle = true
        var description: String { "\(key) \(digest) \(signatureOID)" }
    }
    static let algorithmCases: [AlgorithmCase] = {
        var cases: [AlgorithmCase] = []
        let digests: [(String, String, String, String, String?)] = [
            // name, digest OID, XwithRSA, XwithECDSA, XwithDSA
            ("md5", A.digestMD5, A.md5WithRSA, "", nil), ("sha1", A.digestSHA1, A.sha1WithRSA, A.sha1WithECDSA, A.sha1WithDSA),
            ("sha224", A.digestSHA224, A.sha224WithRSA, A.sha224WithECDSA, A.sha224WithDSA),
            ("sha256", A.digestSHA256, A.sha256WithRSA, A.sha256WithECDSA, A.sha256WithDSA),
            ("sha384", A.digestSHA384, A.sha384WithRSA, A.sha384WithECDSA, nil), ("sha512", A.digestSHA512, A.sha512WithRSA, A.sha512WithECDSA, nil),
        ]
        for (name, digestOID, withRSA, withECDSA, withDSA) in digests {
            cases += [AlgorithmCase(key: "rsa", digest: name, digestOID: digestOID, signatureOID: A.rsa),
                      AlgorithmCase(key: "rsa", digest: name, digestOID: digestOID, signatureOID: withRSA)]
            if name != "md5" {
                cases += [AlgorithmCase(key: "ec", digest: name, digestOID: digestOID, signatureOID: A.ecPublicKey),
                          AlgorithmCase(key: "ec", digest: name, digestOID: digestOID, signatureOID: withECDSA)]
            }
            if let withDSA {
                cases += [AlgorithmCase(key: "dsa1024", digest: name, digestOID: digestOID, signatureOID: A.dsa),
                          AlgorithmCase(key: "dsa1024", digest: name, digestOID: digestOID, signatureOID: withDSA)]
                // The JDK refuses SHA-1/SHA-224 with keys too long for the digest (apksig skips those
                // tests then); Android accepts them: no oracle.
                cases += [AlgorithmCase(key: "dsa2048", digest: name, digestOID: digestOID, signatureOID: withDSA, oracle: name == "sha256")]
            }
        }
        return cases
    }()

    static let algorithmLab: Result<(V1Lab, LabKey), Error> = TestSupport.sharedByTests { Result {
        let lab = try V1Lab("v1-alg")
        return (lab, try LabKey.fromKeystore(.ecP256, in: lab.directory))
    } }

    @Test("v1-only-with-{rsa-pkcs1,ecdsa,dsa}-<digest>-<OID>: every digest and signature OID pair apksig accepts verifies (API 24+)",
          arguments: algorithmCases)
    func oneSigner(_ c: AlgorithmCase) throws {
        let (lab, ec) = try Self.algorithmLab.get()
        let key: LabKey
        switch c.key {
        case "rsa": key = lab.rsa
        case "ec": key = ec
        case "dsa1024": key = try LabKey.dsa.get().small
        default: key = try LabKey.dsa.get().large
        }
        let block = try lab.block(key: key, digest: c.digest, digestOID: c.digestOID, signatureOID: c.signatureOID)
        let apk = try lab.apk("alg", block: block, blockName: c.key == "rsa" ? "SIGNER.RSA" : c.key == "ec" ? "SIGNER.EC" : "SIGNER.DSA")
        // apksig's APKs declare a minSdkVersion at which their pair is supported; 24 covers every pair here.
        try expectVerdict(apk, min: 24, verified: true, oracle: c.oracle, "\(c)")
        let report = try VerifyFixtures.verify(apk, minSdkVersion: 24)
        #expect(report.signers.first?.sha256 == VerificationDigest.sha256.hash(key.certificate).hexString)
    }

    @Test("API levels outside a pair's support fail with JAR_SIG_UNSUPPORTED_SIG_ALG (apksig SUPPORTED_SIG_ALG_OIDS)")
    func unsupportedLevels() throws {
        let lab = try V1Lab("v1-alg-levels")
        // SHA-256 with the bare DSA OID: API 22+ only.
        let dsa = try LabKey.dsa.get().small
        let dsaAPK = try lab.apk("dsa", block: try lab.block(key: dsa, digest: "sha256", signatureOID: A.dsa), blockName: "SIGNER.DSA")
        try expectVerdict(dsaAPK, min: 21, verified: false, code: "JAR_SIG_UNSUPPORTED_SIG_ALG", "SHA-256/DSA on 21")
        try expectVerdict(dsaAPK, min: 22, verified: true, "SHA-256/DSA from 22")
        // MD5 with md5WithRSA: 0-8 and 21+, so 9-20 fail.
        let md5 = try lab.apk("md5", block: try lab.block(digest: "md5", digestOID: A.digestMD5, signatureOID: A.md5WithRSA))
        try expectVerdict(md5, min: 21, verified: true, "MD5withRSA on 21+")
        try expectVerdict(md5, min: 8, max: 9, verified: false, code: "JAR_SIG_UNSUPPORTED_SIG_ALG", "MD5withRSA on 9")
        // SHA-512 digest with sha384WithRSA: only 21.
        let odd = try lab.apk("odd", block: try lab.block(digest: "sha384", digestOID: A.digestSHA512, signatureOID: A.sha384WithRSA))
        try expectVerdict(odd, min: 21, max: 21, verified: true, "SHA-512 digest OID with SHA384withRSA on 21")
        try expectVerdict(odd, min: 21, max: 22, verified: false, code: "JAR_SIG_UNSUPPORTED_SIG_ALG", "... not on 22")
    }

    // MARK: - PKCS #7 quirks: testV1SignedAttrs*, testCorrectCertUsedFromPkcs7SignedDataCertsSet

    enum AttributeCase: String, CaseIterable, Sendable {
        case good, wrongOrder, missingContentType, wrongContentType, missingDigest, multipleGoodDigests, wrongDigest, wrongSignature,
             emptyDigestValues, duplicateDigestAttribute
    }

    /// One SignerInfo over the lab's .SF with signed attributes made wrong as `kind` says.
    static func attributeSignerInfo(_ kind: AttributeCase, lab: V1Lab) throws -> DERBuilder.SignerInfo {
        let sf = lab.signatureFile
        let digest = VerificationDigest.sha256.hash(sf)
        let contentType = DERBuilder.attribute(PKCS7SignedData.contentTypeAttributeOID, [DERBuilder.oid(PKCS7SignedData.dataOID)])
        let messageDigest = DERBuilder.attribute(PKCS7SignedData.messageDigestAttributeOID, [DERBuilder.octets(digest)])
        var attributes: [[UInt8]]
        switch kind {
        case .good, .wrongSignature: attributes = [contentType, messageDigest]
        case .wrongOrder: attributes = [messageDigest, contentType]
        case .missingContentType: attributes = [messageDigest]
        case .wrongContentType:
            attributes = [DERBuilder.attribute(PKCS7SignedData.contentTypeAttributeOID, [DERBuilder.oid("1.2.840.113549.1.7.5")]), messageDigest]
        case .missingDigest: attributes = [contentType]
        case .multipleGoodDigests:
            attributes = [contentType, DERBuilder.attribute(PKCS7SignedData.messageDigestAttributeOID, [DERBuilder.octets(digest), DERBuilder.octets(digest)])]
        case .wrongDigest:
            attributes = [contentType, DERBuilder.attribute(PKCS7SignedData.messageDigestAttributeOID, [DERBuilder.octets(VerificationDigest.sha256.hash(sf + [0x0a]))])]
        case .emptyDigestValues: attributes = [contentType, DERBuilder.attribute(PKCS7SignedData.messageDigestAttributeOID, [])]
        case .duplicateDigestAttribute: attributes = [contentType, messageDigest, messageDigest]
        }
        var signature = try lab.rsa.sign(DERBuilder.signedAttributesToSign(attributes), digest: "sha256")
        if kind == .wrongSignature { signature = try lab.rsa.sign(DERBuilder.signedAttributesToSign(attributes) + [0], digest: "sha256") }
        return .init(certificate: lab.rsa.certificate, digestOID: A.digestSHA256, signatureOID: A.rsa, signedAttributes: attributes, signature: signature)
    }

    /// apksig's expected verdicts: (below N: verified, issue), (N+: verified, issue).
    static func expected(_ kind: AttributeCase) -> (preN: (Bool, String?), fromN: (Bool, String?)) {
        switch kind {
        case .good, .wrongOrder: return ((true, nil), (true, nil))
        case .missingContentType: return ((true, nil), (false, "JAR_SIG_VERIFY_EXCEPTION"))
        case .wrongContentType: return ((true, nil), (false, "JAR_SIG_DID_NOT_VERIFY"))
        case .missingDigest, .emptyDigestValues: return ((false, "JAR_SIG_VERIFY_EXCEPTION"), (false, "JAR_SIG_VERIFY_EXCEPTION"))
        case .multipleGoodDigests, .duplicateDigestAttribute: return ((false, "JAR_SIG_PARSE_EXCEPTION"), (false, "JAR_SIG_PARSE_EXCEPTION"))
        case .wrongDigest, .wrongSignature: return ((false, "JAR_SIG_DID_NOT_VERIFY"), (false, "JAR_SIG_DID_NOT_VERIFY"))
        }
    }

    @Test("v1-only-with-signed-attrs-<case>.apk and ...-signerInfo1-<case>-signerInfo2-good.apk", arguments: AttributeCase.allCases)
    func signedAttributes(_ kind: AttributeCase) throws {
        let lab = try V1Lab("v1-attrs")
        let first = try Self.attributeSignerInfo(kind, lab: lab)
        let good = try Self.attributeSignerInfo(.good, lab: lab)
        let single = try lab.apk("one", block: try DERBuilder.signedData(certificates: [lab.rsa.certificate], signerInfos: [first]))
        let pair = try lab.apk("two", block: try DERBuilder.signedData(certificates: [lab.rsa.certificate], signerInfos: [first, good]))
        let expected = Self.expected(kind)
        // An empty value set and a duplicated attribute are not among apksig's APKs (and not in Debian's
        // apksigner 0.9's rules): apksig's SignedAttributes as documented.
        let oracle = kind != .emptyDigestValues && kind != .duplicateDigestAttribute
        // Single SignerInfo: before N (max 23) and from N (min 24).
        try expectVerdict(single, max: 23, verified: expected.preN.0, code: expected.preN.1, oracle: oracle, "\(kind), one SignerInfo, pre-N")
        try expectVerdict(single, min: 24, verified: expected.fromN.0, code: expected.fromN.1, oracle: oracle, "\(kind), one SignerInfo, N+")
        // Two SignerInfos: before N only the first is tried; from N the first that verifies counts, unless the
        // first throws (missing content type or digest, malformed attributes end the block).
        let pairFromN: (Bool, String?)
        switch kind {
        case .wrongContentType, .wrongDigest, .wrongSignature: pairFromN = (true, nil)
        default: pairFromN = expected.fromN
        }
        try expectVerdict(pair, max: 23, verified: expected.preN.0, code: expected.preN.1, oracle: oracle, "\(kind), two SignerInfos, pre-N")
        try expectVerdict(pair, min: 24, verified: pairFromN.0, code: pairFromN.1, oracle: oracle, "\(kind), two SignerInfos, N+")
        // The APK's own range (21+) spans both: the first SignerInfo decides for pre-N, and must verify on N+ too
        // (testV1SignedAttrsWrongContentType: "we reject such APKs").
        let whole = expected.preN.0 && expected.fromN.0
        try expectVerdict(pair, verified: whole, oracle: oracle, "\(kind), two SignerInfos, 21+")
        // Signed attributes are refused below KitKat (testV1SignedAttrs).
        if kind == .good {
            try expectVerdict(single, min: 18, verified: false, code: "JAR_SIG_VERIFY_EXCEPTION", "signed attributes on 18")
            try expectVerdict(pair, min: 19, verified: true, "signed attributes on 19")
        }
    }

    @Test("Java's initVerify comes first: a SignerInfo whose key does not suit its algorithm ends the block even with a bad digest")
    func keyTypeMismatchBeforeAttributes() throws {
        let lab = try V1Lab("v1-keytype")
        var first = try Self.attributeSignerInfo(.wrongDigest, lab: lab)
        first.signatureOID = A.sha256WithECDSA  // an RSA certificate: Signature.initVerify throws InvalidKeyException
        let good = try Self.attributeSignerInfo(.good, lab: lab)
        let apk = try lab.apk("mismatch", block: try DERBuilder.signedData(certificates: [lab.rsa.certificate], signerInfos: [first, good]))
        try expectVerdict(apk, min: 24, verified: false, code: "JAR_SIG_VERIFY_EXCEPTION", "key/algorithm mismatch before a wrong digest")
    }

    @Test("a DSA/ECDSA signature not in strict DER ends the block as the JDK's decoder does (JAR_SIG_VERIFY_EXCEPTION)")
    func nonDERECDSASignature() throws {
        let lab = try V1Lab("v1-ecdsa-der")
        let ec = try LabKey.fromKeystore(.ecP256, in: lab.directory)
        let good = try ec.sign(lab.signatureFile, digest: "sha256")
        try #require(good[0] == 0x30 && good[1] < 0x80)
        let longForm = [0x30, 0x81] + Array(good[1...])  // the SEQUENCE length in long form: BER, not DER
        func info(_ signature: [UInt8]) -> DERBuilder.SignerInfo {
            .init(certificate: ec.certificate, digestOID: A.digestSHA256, signatureOID: A.sha256WithECDSA, signature: signature)
        }
        let single = try lab.apk("ec-ber", block: try DERBuilder.signedData(certificates: [ec.certificate], signerInfos: [info(longForm)]), blockName: "SIGNER.EC")
        try expectVerdict(single, verified: false, code: "JAR_SIG_VERIFY_EXCEPTION", "ECDSA signature with a long-form length")
        let pair = try lab.apk("ec-ber-good", block: try DERBuilder.signedData(certificates: [ec.certificate], signerInfos: [info(longForm), info(good)]),
                               blockName: "SIGNER.EC")
        try expectVerdict(pair, min: 24, verified: false, code: "JAR_SIG_VERIFY_EXCEPTION", "non-DER SignerInfo, then a good one, N+")
        // The strict decoder itself.
        #expect(A.isStrictDERPairOfIntegers(good))
        #expect(!A.isStrictDERPairOfIntegers(longForm))
        #expect(!A.isStrictDERPairOfIntegers([0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01, 0x00]))  // trailing byte
        #expect(!A.isStrictDERPairOfIntegers([0x30, 0x07, 0x02, 0x02, 0x00, 0x01, 0x02, 0x01, 0x01]))  // redundant 0x00
        #expect(A.isStrictDERPairOfIntegers([0x30, 0x07, 0x02, 0x02, 0x00, 0x81, 0x02, 0x01, 0x01]))
        #expect(!A.isStrictDERPairOfIntegers([0x30, 0x80, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01, 0x00, 0x00]))  // indefinite
    }

    @Test("BER indefinite lengths in the PKCS #7 structure (as old jarsigner/BouncyCastle write them) verify; signed attributes so encoded are signed as encoded")
    func indefiniteLengths() throws {
        let lab = try V1Lab("v1-indefinite")
        func indefinite(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { [tag, 0x80] + content + [0, 0] }
        func block(attributes: [[UInt8]]?, indefiniteAttributes: Bool) throws -> [UInt8] {
            var info = DERBuilder.int(1) + (try DERBuilder.issuerAndSerial(of: lab.rsa.certificate)) + DERBuilder.algorithm(A.digestSHA256)
            let signature: [UInt8]
            if let attributes {
                let content = attributes.flatMap { $0 }
                let encoded = indefiniteAttributes ? indefinite(0xA0, content) : DERBuilder.tlv(0xA0, content)
                info += encoded
                signature = try lab.rsa.sign([0x31] + encoded.dropFirst(), digest: "sha256")
            } else {
                signature = try lab.rsa.sign(lab.signatureFile, digest: "sha256")
            }
            info += DERBuilder.algorithm(A.rsa) + DERBuilder.octets(signature)
            let signed = indefinite(0x30, DERBuilder.int(1) + DERBuilder.set([DERBuilder.algorithm(A.digestSHA256)])
                                    + indefinite(0x30, DERBuilder.oid(PKCS7SignedData.dataOID)) + indefinite(0xA0, lab.rsa.certificate)
                                    + indefinite(0x31, indefinite(0x30, info)))
            return indefinite(0x30, DERBuilder.oid(PKCS7SignedData.signedDataOID) + indefinite(0xA0, signed))
        }
        let plain = try lab.apk("indefinite", block: try block(attributes: nil, indefiniteAttributes: false))
        try expectVerdict(plain, verified: true, "indefinite lengths throughout")
        let attributes = [DERBuilder.attribute(PKCS7SignedData.contentTypeAttributeOID, [DERBuilder.oid(PKCS7SignedData.dataOID)]),
                          DERBuilder.attribute(PKCS7SignedData.messageDigestAttributeOID, [DERBuilder.octets(VerificationDigest.sha256.hash(lab.signatureFile))])]
        let signedAttributes = try lab.apk("indefinite-attrs", block: try block(attributes: attributes, indefiniteAttributes: true))
        try expectVerdict(signedAttributes, verified: true, "signed attributes with an indefinite length, signed as encoded")
    }

    @Test("v1-only-pkcs7-cert-bag-first-cert-not-used.apk: the signer's certificate is found by issuer and serial, not position")
    func certificateBag() throws {
        let lab = try V1Lab("v1-certbag")
        let other = try LabKey.generate("other", in: lab.directory, genpkey: ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"])
        let apk = try lab.apk("bag", block: try lab.block(extraCertificates: [other.certificate]))
        try expectVerdict(apk, verified: true, "unrelated certificate first in the bag")
        let report = try VerifyFixtures.verify(apk)
        #expect(report.signers.map(\.sha256) == [VerificationDigest.sha256.hash(lab.rsa.certificate).hexString])
        #expect(report.signers.map(\.sha256) == (try VerifyFixtures.apksignerVerify(apk).certificateSHA256))
    }

    /// The certificate with the encoding of one element changed (lengths recomputed): Android keeps such
    /// certificates' bytes as they are (apksig GuaranteedEncodedFormX509Certificate).
    static func reencoded(_ certificate: [UInt8], _ change: (inout [[UInt8]]) throws -> Void) throws -> [UInt8] {
        var parts = try BERElement.parseSingle(certificate[...]).children().map { Array($0.encoded) }
        try change(&parts)
        return DERBuilder.tlv(0x30, parts.flatMap { $0 })
    }

    @Test("v1-only-with-rsa-1024-cert-not-der{,2}.apk and the negative modulus of v1v2v3-rsa-2048-negmod-in-cert.apk: verified, certificate bytes kept")
    func nonDERCertificates() throws {
        let lab = try V1Lab("v1-nonder")
        let original = lab.rsa.certificate
        // not-der: the signature BIT STRING's length in three bytes instead of two.
        let longLength = try Self.reencoded(original) { parts in
            let bits = try BERElement.parseSingle(parts[2][...])
            parts[2] = DERBuilder.tlv(0x03, Array(bits.contents), lengthBytes: 3)
        }
        // not-der2: an extra leading 0x00 in the signature BIT STRING's value.
        let extraZero = try Self.reencoded(original) { parts in
            let bits = try BERElement.parseSingle(parts[2][...])
            parts[2] = DERBuilder.tlv(0x03, [0] + Array(bits.contents))
        }
        // negmod: the RSA modulus INTEGER without its leading 0x00 (so it reads as negative).
        let negativeModulus = try Self.reencoded(original) { parts in
            var tbs = try BERElement.parseSingle(parts[0][...]).children().map { Array($0.encoded) }
            let spkiIndex = try #require(tbs.firstIndex { bytes in
                (try? BERElement.parseSingle(bytes[...]).children().first?.children().first?.objectIdentifier()) == A.rsa })
            var spki = try BERElement.parseSingle(tbs[spkiIndex][...]).children().map { Array($0.encoded) }
            let key = try BERElement.parseSingle(spki[1][...]).contents.dropFirst()
            var numbers = try BERElement.parseSingle(key).children().map { Array($0.encoded) }
            let modulus = try BERElement.parseSingle(numbers[0][...]).contents
            try #require(modulus.first == 0)
            numbers[0] = DERBuilder.tlv(0x02, Array(modulus.dropFirst()))
            spki[1] = DERBuilder.tlv(0x03, [0] + DERBuilder.tlv(0x30, numbers.flatMap { $0 }))
            tbs[spkiIndex] = DERBuilder.tlv(0x30, spki.flatMap { $0 })
            parts[0] = DERBuilder.tlv(0x30, tbs.flatMap { $0 })
        }
        // A negative serial number (Java's BigInteger takes it; RFC 5280 forbids it).
        let negativeSerial = try Self.reencoded(original) { parts in
            var tbs = try BERElement.parseSingle(parts[0][...]).children().map { Array($0.encoded) }
            let serialIndex = tbs[0].first == 0xA0 ? 1 : 0
            tbs[serialIndex] = DERBuilder.tlv(0x02, [0xFF, 0x7E, 0x12, 0x34])
            parts[0] = DERBuilder.tlv(0x30, tbs.flatMap { $0 })
        }
        for (name, certificate) in [("cert-not-der", longLength), ("cert-not-der2", extraZero), ("negmod", negativeModulus),
                                    ("negative-serial", negativeSerial)] {
            #expect(certificate != original)
            let signature = try lab.rsa.sign(lab.signatureFile, digest: "sha256")
            let block = try DERBuilder.signedData(certificates: [certificate], signerInfos: [
                .init(certificate: certificate, digestOID: A.digestSHA256, signatureOID: A.rsa, signature: signature)])
            let apk = try lab.apk(name, block: block)
            // The JDK's SUN X.509 factory refuses redundant length bytes (apksig then skips its test): no oracle.
            try expectVerdict(apk, verified: true, oracle: false, "\(name)")
            let report = try VerifyFixtures.verify(apk)
            #expect(report.signers.map(\.sha256) == [VerificationDigest.sha256.hash(certificate).hexString], "\(name): certificate re-encoded")
        }
    }

    @Test("signing certificate extensions: keyUsage without digitalSignature/nonRepudiation and unknown critical extensions end the block; extensions Java knows are fine, critical or not")
    func certificateExtensions() throws {
        let lab = try V1Lab("v1-extensions")
        let cases: [(extensions: [String], verified: Bool)] = [
            (["keyUsage=critical,keyEncipherment"], false), (["keyUsage=nonRepudiation"], true), (["keyUsage=critical,digitalSignature"], true),
            (["1.2.3.4=critical,DER:05:00"], false), (["1.2.3.4=DER:05:00"], true),
            (["subjectKeyIdentifier=critical,hash"], true), (["basicConstraints=critical,CA:FALSE"], true),
            (["extendedKeyUsage=critical,codeSigning"], true), (["subjectAltName=critical,DNS:example.com"], true),
        ]
        for (index, c) in cases.enumerated() {
            let der = lab.directory.appendingPathComponent("ext\(index).der").path
            let r = try TestSupport.run("openssl", ["req", "-x509", "-new", "-key", lab.rsa.keyPath, "-subj", "/CN=Extensions \(index)", "-days", "365",
                                                    "-sha256", "-outform", "DER", "-out", der] + c.extensions.flatMap { ["-addext", $0] })
            try #require(r.succeeded, "\(r)")
            let key = LabKey(keyPath: lab.rsa.keyPath, certificate: try VerifyFixtures.read(der))
            let apk = try lab.apk("ext\(index)", block: try lab.block(key: key))
            try expectVerdict(apk, verified: c.verified, code: c.verified ? nil : "JAR_SIG_VERIFY_EXCEPTION", "\(c.extensions)")
        }
    }

    @Test("ECDSA keys on curves other than P-256, P-384, P-521 do not verify (JDK SunEC, as apksigner says)")
    func ecCurves() throws {
        let lab = try V1Lab("v1-curves")
        for (curve, verified) in [("secp256k1", false), ("secp224r1", false), ("brainpoolP256r1", false), ("prime256v1", true), ("secp521r1", true)] {
            let key = try LabKey.generate(curve, in: lab.directory, genpkey: ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:\(curve)",
                                                                          "-pkeyopt", "ec_param_enc:named_curve"])
            let apk = try lab.apk(curve, block: try lab.block(key: key, signatureOID: A.sha256WithECDSA), blockName: "SIGNER.EC")
            try expectVerdict(apk, verified: verified, code: verified ? nil : "JAR_SIG_VERIFY_EXCEPTION", "\(curve)")
        }
    }

    @Test("an RSA signature one byte short (leading zero dropped) ends the block as the JDK does (JAR_SIG_VERIFY_EXCEPTION)")
    func shortRSASignature() throws {
        let lab = try V1Lab("v1-short")
        // Vary the .SF's main section until its signature starts with a zero byte (1 in 256).
        var sf: [UInt8] = [], signature: [UInt8] = []
        let text = String(decoding: lab.signatureFile, as: UTF8.self)
        for nonce in 0..<4000 {
            sf = Array(text.replacingOccurrences(of: "Signature-Version: 1.0\r\n", with: "Signature-Version: 1.0\r\nX-Nonce: \(nonce)\r\n").utf8)
            signature = try lab.rsa.sign(sf, digest: "sha256")
            if signature.first == 0 { break }
        }
        try #require(signature.first == 0)
        let block = try DERBuilder.signedData(certificates: [lab.rsa.certificate], signerInfos: [
            .init(certificate: lab.rsa.certificate, digestOID: A.digestSHA256, signatureOID: A.rsa, signature: Array(signature.dropFirst()))])
        let apk = try lab.apk("short", signatureFile: sf, block: block)
        try expectVerdict(apk, verified: false, code: "JAR_SIG_VERIFY_EXCEPTION", "255-byte signature for a 2048-bit key")
        let full = try lab.apk("full", signatureFile: sf, block: try DERBuilder.signedData(certificates: [lab.rsa.certificate], signerInfos: [
            .init(certificate: lab.rsa.certificate, digestOID: A.digestSHA256, signatureOID: A.rsa, signature: signature)]))
        try expectVerdict(full, verified: true, "the same signature at full length")
        // OpenSSL alone rejects the short signature too, but as "did not verify", which on N+ moves on to the
        // next SignerInfo; the JDK's exception ends the block there.
        let good = try lab.rsa.sign(sf, digest: "sha256")
        let pair = try lab.apk("short-then-good", signatureFile: sf, block: try DERBuilder.signedData(certificates: [lab.rsa.certificate], signerInfos: [
            .init(certificate: lab.rsa.certificate, digestOID: A.digestSHA256, signatureOID: A.rsa, signature: Array(signature.dropFirst())),
            .init(certificate: lab.rsa.certificate, digestOID: A.digestSHA256, signatureOID: A.rsa, signature: good)]))
        try expectVerdict(pair, min: 24, verified: false, code: "JAR_SIG_VERIFY_EXCEPTION", "short signature, then a good SignerInfo, N+")
    }

    // MARK: - Manifests and .SF: testV1MultipleDigestAlgsInManifestAndSignatureFile, X-Android-APK-Signed

    /// MANIFEST.MF with SHA1-Digest and SHA-256-Digest per entry and the .SF with both per section (no
    /// whole-manifest digest), optionally with one digest wrong.
    static func dualDigestFiles(lab: V1Lab, archive: APKArchive, wrong: (algorithm: String, file: String)?, sfSHA1Only: Bool = false) throws -> (manifest: [UInt8], sf: [UInt8]) {
        func b64(_ bytes: [UInt8]) -> String { Base64.encode(bytes) }
        func flip(_ bytes: [UInt8]) -> [UInt8] { var b = bytes; b[0] ^= 1; return b }
        var manifest = "Manifest-Version: 1.0\r\nCreated-By: apkpatch tests\r\n\r\n"
        var sections: [(name: String, text: String)] = []
        for entry in archive.entries where !entry.name.hasPrefix("META-INF/") && !entry.name.hasSuffix("/") {
            let data = try archive.uncompressedData(of: entry)
            var sha1 = VerificationDigest.sha1.hash(data), sha256 = VerificationDigest.sha256.hash(data)
            if wrong?.file == "manifest" { if wrong?.algorithm == "SHA1" { sha1 = flip(sha1) } else { sha256 = flip(sha256) } }
            let text = "Name: \(entry.name)\r\nSHA1-Digest: \(b64(sha1))\r\nSHA-256-Digest: \(b64(sha256))\r\n\r\n"
            sections.append((entry.name, text))
            manifest += text
        }
        var sf = "Signature-Version: 1.0\r\nCreated-By: apkpatch tests\r\n\r\n"
        for section in sections {
            let bytes = Array(section.text.utf8)
            var sha1 = VerificationDigest.sha1.hash(bytes), sha256 = VerificationDigest.sha256.hash(bytes)
            if wrong?.file == "sf" { if wrong?.algorithm == "SHA1" { sha1 = flip(sha1) } else { sha256 = flip(sha256) } }
            sf += "Name: \(section.name)\r\nSHA1-Digest: \(b64(sha1))\r\n" + (sfSHA1Only ? "" : "SHA-256-Digest: \(b64(sha256))\r\n") + "\r\n"
        }
        return (Array(manifest.utf8), Array(sf.utf8))
    }

    @Test("v1-sha1-sha256-manifest-and-sf[-with-<sha1|sha256>-wrong-in-<manifest|sf>].apk: API 17 and lower check SHA-1, 18 and higher SHA-256")
    func dualDigests() throws {
        // minSdkVersion 14 as in apksig's APKs (the default verification range spans 17 and 18); SHA-1 with RSA,
        // which every level supports.
        let lab = try V1Lab("v1-dual", minSdk: 14)
        let archive = try APKArchive(path: lab.base)
        func make(_ name: String, wrong: (algorithm: String, file: String)?, sfSHA1Only: Bool = false) throws -> String {
            let files = try Self.dualDigestFiles(lab: lab, archive: archive, wrong: wrong, sfSHA1Only: sfSHA1Only)
            let block = try lab.block(digest: "sha1", digestOID: A.digestSHA1, signatureOID: A.rsa, over: files.sf)
            return try lab.apk(name, manifest: files.manifest, signatureFile: files.sf, block: block)
        }
        try expectVerdict(try make("sha1-sf", wrong: nil, sfSHA1Only: true), verified: true, "SHA-1 and SHA-256 in the manifest, SHA-1 in the .SF")
        try expectVerdict(try make("both", wrong: nil), verified: true, "both digests everywhere")
        let cases: [(String, String, String, failsFrom18: Bool)] = [
            ("sha1-wrong-in-manifest", "SHA1", "manifest", false), ("sha1-wrong-in-sf", "SHA1", "sf", false),
            ("sha256-wrong-in-manifest", "SHA-256", "manifest", true), ("sha256-wrong-in-sf", "SHA-256", "sf", true),
        ]
        for (name, algorithm, file, failsFrom18) in cases {
            let apk = try make(name, wrong: (algorithm, file))
            let code = file == "manifest" ? "JAR_SIG_ZIP_ENTRY_DIGEST_DID_NOT_VERIFY" : "JAR_SIG_MANIFEST_SECTION_DIGEST_DID_NOT_VERIFY"
            try expectVerdict(apk, verified: false, code: code, "\(name), 14+")
            try expectVerdict(apk, max: 17, verified: failsFrom18, code: failsFrom18 ? nil : code, "\(name), up to 17")
            try expectVerdict(apk, min: 18, verified: !failsFrom18, code: failsFrom18 ? code : nil, "\(name), 18+")
        }
    }

    @Test("X-Android-APK-Signed names compare as Java's equalsIgnoreCase: a dotless-i spelling still protects against stripping")
    func strippingAttributeNameCase() throws {
        let lab = try V1Lab("v1-strip-case")
        let text = String(decoding: lab.signatureFile, as: UTF8.self)
        for name in ["X-Android-APK-Signed", "x-android-apk-signed", "X-Android-APK-S\u{0131}gned"] {
            let sf = Array(text.replacingOccurrences(of: "Signature-Version: 1.0\r\n", with: "Signature-Version: 1.0\r\n\(name): 2\r\n").utf8)
            let apk = try lab.apk("strip", signatureFile: sf, block: try lab.block(over: sf))
            try expectVerdict(apk, verified: false, code: "JAR_SIG_MISSING_APK_SIG_REFERENCED", "\(name): 2 without a v2 signature")
            try expectVerdict(apk, max: 23, verified: true, "\(name): ignored before N")
        }
        // The scheme IDs are read with Integer.parseInt, which takes digits of any script; unknown IDs beside a
        // known one are ignored (v2-stripped-with-ignorable-signing-schemes.apk).
        for value in ["\u{0662}", "+2", " 3, \u{FF12} ", "2, 99", "1000, 2, 12345"] {
            let sf = Array(text.replacingOccurrences(of: "Signature-Version: 1.0\r\n", with: "Signature-Version: 1.0\r\nX-Android-APK-Signed: \(value)\r\n").utf8)
            let apk = try lab.apk("strip-digits", signatureFile: sf, block: try lab.block(over: sf))
            try expectVerdict(apk, verified: false, code: "JAR_SIG_MISSING_APK_SIG_REFERENCED", "X-Android-APK-Signed: \(value.debugDescription)")
        }
        #expect(V1SchemeVerifier.javaParseInt("-2147483648") == -2_147_483_648 && V1SchemeVerifier.javaParseInt("2147483648") == nil)
        #expect(V1SchemeVerifier.javaParseInt("2 ") == nil && V1SchemeVerifier.javaParseInt("-") == nil && V1SchemeVerifier.javaParseInt("\u{0663}") == 3)
        #expect(JARManifest.javaEqualsIgnoringCase("SHA-256-D\u{0131}gest", "SHA-256-Digest"))
        #expect(JARManifest.javaEqualsIgnoringCase("\u{212A}ey", "key"))
        #expect(!JARManifest.javaEqualsIgnoringCase("Stra\u{00DF}e", "STRASSE"))
    }

    @Test("v1-only-with-{cr,lf}-in-entry-name.apk: Android cannot name such entries in MANIFEST.MF (JAR_SIG_UNNNAMED_MANIFEST_SECTION)")
    func lineBreakInEntryName() throws {
        // apksigner refuses to sign such names; the manifest is written here as a JAR signer would write it.
        let lab = try V1Lab("v1-crlf")
        let archive = try APKArchive(path: lab.base)
        for separator in ["\r", "\n"] {
            let name = "assets/x\(separator)"
            let data = Array("line break\n".utf8)
            let manifest = lab.manifest + Array("Name: \(name)\r\nSHA-256-Digest: \(Base64.encode(VerificationDigest.sha256.hash(data)))\r\n\r\n".utf8)
            var builder = ZipBuilder()
            for entry in archive.entries where !entry.name.hasPrefix("META-INF/") {
                let bytes = try archive.uncompressedData(of: entry)
                builder.items.append(.init(rawName: entry.nameBytes, data: bytes, crc: VerifyFixtures.crc32(bytes[...])))
            }
            for (entryName, bytes) in [(name, data), ("META-INF/MANIFEST.MF", manifest), ("META-INF/SIGNER.SF", lab.signatureFile),
                                       ("META-INF/SIGNER.RSA", try lab.block())] {
                builder.items.append(.init(name: entryName, data: bytes, crc: VerifyFixtures.crc32(bytes[...])))
            }
            let path = lab.directory.appendingPathComponent("crlf-\(separator == "\r" ? "cr" : "lf").apk").path
            try VerifyFixtures.write(builder.build(), to: path)
            try expectVerdict(path, verified: false, code: "JAR_SIG_UNNNAMED_MANIFEST_SECTION", "entry name ending in \(separator.debugDescription)")
        }
    }

    @Test("entry and section names compare as Java Strings (unit for unit), not by Swift's canonical equivalence")
    func exactNames() throws {
        let lab = try V1Lab("v1-names")
        // aapt refuses non-ASCII asset names: the entries are added to the unsigned APK here, then apksigner signs.
        var unsigned = ZipBuilder()
        let base = try APKArchive(path: lab.base)
        for entry in base.entries where !entry.name.hasPrefix("META-INF/") {
            let bytes = try base.uncompressedData(of: entry)
            unsigned.items.append(.init(rawName: entry.nameBytes, data: bytes, crc: VerifyFixtures.crc32(bytes[...])))
        }
        for name in ["assets/Key.txt", "assets/caf\u{E9}.txt"] {
            let bytes = Array("\(name)\n".utf8)
            unsigned.items.append(.init(name: name, data: bytes, crc: VerifyFixtures.crc32(bytes[...])))
        }
        let unsignedPath = lab.directory.appendingPathComponent("names-unsigned.apk").path
        try VerifyFixtures.write(unsigned.build(), to: unsignedPath)
        let signed = try VerifyFixtures.sign(unsignedPath, key: .rsa2048, schemes: SchemeSet(v1: true, v2: false, v3: false),
                                             output: lab.directory.appendingPathComponent("names-signed.apk").path)
        let archive = try APKArchive(path: signed)
        /// The signed APK rebuilt (stored) with `rename` applied to the names and `extra` entries added.
        func rebuilt(_ label: String, rename: [String: String] = [:], extra: [(String, [UInt8])] = []) throws -> String {
            var builder = ZipBuilder()
            for entry in archive.entries {
                let bytes = try archive.uncompressedData(of: entry)
                builder.items.append(.init(name: rename[entry.name] ?? entry.name, data: bytes, crc: VerifyFixtures.crc32(bytes[...])))
            }
            for (name, bytes) in extra { builder.items.append(.init(name: name, data: bytes, crc: VerifyFixtures.crc32(bytes[...]))) }
            let path = lab.directory.appendingPathComponent("\(label).apk").path
            try VerifyFixtures.write(builder.build(), to: path)
            return path
        }
        try expectVerdict(try rebuilt("same"), verified: true, "rebuilt unchanged")
        // Renamed to a canonically equivalent spelling: K (U+212A KELVIN SIGN) for K; e + U+0301 for U+00E9.
        for (from, to) in [("assets/Key.txt", "assets/\u{212A}ey.txt"), ("assets/caf\u{E9}.txt", "assets/cafe\u{301}.txt")] {
            try #require(from == to && Array(from.utf8) != Array(to.utf8))
            let apk = try rebuilt("renamed", rename: [from: to])
            try expectVerdict(apk, verified: false, code: "JAR_SIG_MISSING_ZIP_ENTRY_REFERENCED_IN_MANIFEST", "\(from.debugDescription) renamed \(to.debugDescription)")
        }
        // A combining mark after "META-INF/": still under META-INF/ for Java (unprotected, not signed).
        let apk = try rebuilt("meta-inf", extra: [("META-INF/\u{301}x", Array("x".utf8))])
        try expectVerdict(apk, verified: true, "META-INF/ + U+0301")
        #expect(VerifyFixtures.codes(try VerifyFixtures.verify(apk).signatureWarnings).contains("JAR_SIG_UNPROTECTED_ZIP_ENTRY"))
    }

    @Test("v1-only-two-signers.apk: two JAR signers verify and both are listed")
    func twoSigners() throws {
        let directory = try TestSupport.makeTemporaryDirectory("v1-two")
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory) { $0.targetSdk = 29 }
        let apk = try VerifyFixtures.sign(unsigned, key: .rsa2048, schemes: SchemeSet(v1: true, v2: false, v3: false),
                                          output: directory.appendingPathComponent("two.apk").path,
                                          extra: ["--next-signer", "--ks", try TestKey.ecP256.keystore, "--ks-pass", "pass:\(TestKeys.password)",
                                                  "--v1-signer-name", "SECOND"])
        try expectVerdict(apk, verified: true, "two signers")
        #expect(try VerifyFixtures.verify(apk).signers.map(\.sha256) == (try VerifyFixtures.apksignerVerify(apk).certificateSHA256))
    }

    // MARK: - ZIP and signing-block rules around JAR signatures

    /// The central directory record of `name` (its offset in `bytes`).
    static func centralRecord(of name: String, in bytes: [UInt8]) throws -> Int {
        let archive = try VerifyFixtures.zip(bytes)
        var position = Int(archive.centralDirectoryOffset)
        for entry in archive.entries {
            let nameLength = Int(bytes[position + 28]) | Int(bytes[position + 29]) << 8
            let extraLength = Int(bytes[position + 30]) | Int(bytes[position + 31]) << 8
            let commentLength = Int(bytes[position + 32]) | Int(bytes[position + 33]) << 8
            if entry.name == name { return position }
            position += 46 + nameLength + extraLength + commentLength
        }
        throw FixtureError(message: "no entry \(name)")
    }

    @Test("weird-compression-method.apk / mismatched-compression-method.apk: any method but stored is deflate; the local header's method is ignored")
    func compressionMethods() throws {
        let lab = try V1Lab("v1-method")
        let bytes = try VerifyFixtures.read(lab.base)
        let entry = try #require(try VerifyFixtures.zip(bytes).entry(named: "META-INF/SIGNER.RSA"))
        try #require(entry.isCompressed)
        var weird = bytes
        weird[try Self.centralRecord(of: "META-INF/SIGNER.RSA", in: bytes) + 10] = 21
        weird[Int(entry.localHeaderOffset) + 8] = 21
        let weirdPath = lab.directory.appendingPathComponent("weird.apk").path
        try VerifyFixtures.write(weird, to: weirdPath)
        try expectVerdict(weirdPath, verified: true, "method 21, deflated data")
        var mismatched = bytes
        mismatched[Int(entry.localHeaderOffset) + 8] = 0
        let mismatchedPath = lab.directory.appendingPathComponent("mismatched.apk").path
        try VerifyFixtures.write(mismatched, to: mismatchedPath)
        try expectVerdict(mismatchedPath, verified: true, "stored in the local header, deflated in the central directory")
    }

    @Test("v1v2v3-with-zip64-records.apk: sizes and local header offsets in ZIP64 extra records verify (apksig since 2025)")
    func zip64Records() throws {
        // Debian's apksigner (0.9) predates ZIP64 records: apksig's documented verdict
        // (verify_apkWithZip64Records_verifiesSuccessfully), no oracle.
        let lab = try V1Lab("v1-zip64")
        let archive = try APKArchive(path: lab.base)
        var builder = ZipBuilder()
        for entry in archive.entries {
            let bytes = try archive.uncompressedData(of: entry)
            builder.items.append(.init(rawName: entry.nameBytes, data: bytes, crc: VerifyFixtures.crc32(bytes[...])))
        }
        let targets = Set(["assets/a.txt", "META-INF/SIGNER.RSA"].compactMap { name in archive.entries.firstIndex { $0.name == name } })
        try #require(targets.count == 2)
        func u64(_ v: Int64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        func build(missingRecord: Bool) -> [UInt8] {
            builder.build(mutateLocal: { index, entry in
                guard targets.contains(index) else { return }
                entry.localExtra = [0x01, 0x00, 16, 0x00] + u64(entry.uncompressedSize) + u64(entry.compressedSize)
                entry.compressedSize = 0xFFFF_FFFF; entry.uncompressedSize = 0xFFFF_FFFF
            }, mutateCentral: { index, entry in
                guard targets.contains(index) else { return }
                // Another record first, as apksig's ZipUtilsTest has it.
                entry.centralExtra = [0xcd, 0xab, 0x04, 0x00, 1, 2, 3, 4]
                if !missingRecord {
                    entry.centralExtra += [0x01, 0x00, 24, 0x00] + u64(entry.uncompressedSize) + u64(entry.compressedSize) + u64(entry.localHeaderOffset)
                }
                entry.compressedSize = 0xFFFF_FFFF; entry.uncompressedSize = 0xFFFF_FFFF; entry.localHeaderOffset = 0xFFFF_FFFF
            })
        }
        let path = lab.directory.appendingPathComponent("zip64.apk").path
        try VerifyFixtures.write(build(missingRecord: false), to: path)
        try expectVerdict(path, verified: true, oracle: false, "ZIP64 records on an asset and on the signature block")
        let broken = lab.directory.appendingPathComponent("zip64-missing.apk").path
        try VerifyFixtures.write(build(missingRecord: true), to: broken)
        try expectVerdict(broken, verified: false, code: "MALFORMED_APK", oracle: false, "0xFFFFFFFF sizes without a ZIP64 record")
    }

    @Test("v1-only-max-sized-eocd-comment.apk: a 65535-byte archive comment")
    func maxComment() throws {
        let lab = try V1Lab("v1-comment")
        var bytes = try VerifyFixtures.read(lab.base)
        let eocd = Int(try VerifyFixtures.zip(bytes).endOfCentralDirectory.offset)
        try #require(bytes.count == eocd + 22)
        bytes[eocd + 20] = 0xff; bytes[eocd + 21] = 0xff
        bytes += [UInt8](repeating: 0x41, count: 0xffff)
        let path = lab.directory.appendingPathComponent("comment.apk").path
        try VerifyFixtures.write(bytes, to: path)
        try expectVerdict(path, verified: true, "max-sized comment")
    }

    @Test("v2-only-apk-sig-block-size-mismatch / -garbage-between-cd-and-eocd / -wrong-apk-sig-block-magic: no signing block, so JAR_SIG_NO_MANIFEST")
    func signingBlockNotFound() throws {
        let directory = try TestSupport.makeTemporaryDirectory("v1-noblock")
        let v2 = try VerifyFixtures.signedAPK(in: directory, schemes: SchemeSet(v1: false, v2: true, v3: false))
        let bytes = try VerifyFixtures.read(v2)
        let archive = try VerifyFixtures.zip(bytes)
        let cdOffset = Int(archive.centralDirectoryOffset)
        let block = try VerifyFixtures.signingBlock(of: bytes)
        func write(_ name: String, _ out: [UInt8]) throws -> String {
            let path = directory.appendingPathComponent(name).path
            try VerifyFixtures.write(out, to: path)
            return path
        }
        var sizeMismatch = bytes
        sizeMismatch[Int(block.offset)] ^= 0x08  // the header's size no longer equals the footer's
        var magic = bytes
        magic[cdOffset - 1] ^= 0x01
        let eocd = Int(archive.endOfCentralDirectory.offset)
        let garbage = Array(bytes[..<eocd]) + Array("GARBAGE".utf8) + Array(bytes[eocd...])
        for (name, apk) in [("size-mismatch", try write("size.apk", sizeMismatch)), ("wrong-magic", try write("magic.apk", magic)),
                            ("garbage-between-cd-and-eocd", try write("garbage.apk", garbage))] {
            // The fixture's minSdk is 21: JAR signatures are needed anyway. From N the block alone would do,
            // but apksig does not find it, so the verdict is the same (apksigner 0.9 too).
            try expectVerdict(apk, verified: false, code: "JAR_SIG_NO_MANIFEST", "\(name)")
            try expectVerdict(apk, min: 24, verified: false, code: "JAR_SIG_NO_MANIFEST", "\(name), N+")
        }
        // The untouched APK verifies from N.
        try expectVerdict(v2, min: 24, verified: true, oracle: false, "v2-only original")
    }

    @Test("a broken signing block in front of a JAR signature without stripping protection: the JAR signature decides (apksig ignores the block)")
    func brokenBlockBeforeJARSignature() throws {
        // v1-with-apk-sig-block-but-without-apk-sig-scheme-v2-block.apk has an unknown block; here its framing is
        // broken too: apksig's findApkSigningBlock finds nothing and verifies the JAR signature.
        let lab = try V1Lab("v1-broken-block")
        var framed = SigningBlock(pairs: [SigningBlock.Pair(id: 0x1234_5678, value: [1, 2, 3, 4])], offset: 0).encoded(padToAlignment: false)
        framed[0] ^= 0x10  // header size differs from the footer's
        let bytes = try VerifyFixtures.replacingSigningBlock(in: try VerifyFixtures.read(lab.base), with: framed)
        let path = lab.directory.appendingPathComponent("broken.apk").path
        try VerifyFixtures.write(bytes, to: path)
        try expectVerdict(path, verified: true, "broken block, good JAR signature")
    }

    // MARK: - minSdkVersion and targetSdkVersion from AndroidManifest.xml

    /// A v1-only APK whose manifest has the given `<uses-sdk>` attributes verbatim.
    static func usesSDKFixture(_ label: String, usesSDK: String) throws -> String {
        let directory = try TestSupport.makeTemporaryDirectory(label)
        let work = directory.appendingPathComponent("src")
        try TestSupport.write("""
            <?xml version="1.0" encoding="utf-8"?>
            <manifest xmlns:android="http://schemas.android.com/apk/res/android" package="com.example.codename">
                <uses-sdk \(usesSDK) />
                <application android:label="x" />
            </manifest>
            """, to: "AndroidManifest.xml", in: work)
        try TestSupport.write("<resources/>\n", to: "res/values/strings.xml", in: work)
        let unsigned = directory.appendingPathComponent("unsigned.apk").path
        let r = try TestSupport.run("aapt", ["package", "-f", "-M", "AndroidManifest.xml", "-S", "res", "-I", TestSupport.frameworkRes, "-F", unsigned],
                                    currentDirectory: work.path)
        guard r.succeeded else { throw FixtureError(message: "aapt failed:\n\(r)") }
        return try VerifyFixtures.sign(unsigned, key: .rsa2048, schemes: SchemeSet(v1: true, v2: false, v3: false),
                                       output: directory.appendingPathComponent("signed.apk").path)
    }

    @Test("a preview codename minSdkVersion is the level before its release (apksig getMinSdkVersionForCodename): Tiramisu is 30")
    func codenameMinSdk() throws {
        let apk = try Self.usesSDKFixture("v1-codename", usesSDK: "android:minSdkVersion=\"Tiramisu\" android:targetSdkVersion=\"29\"")
        try expectVerdict(apk, verified: true, "minSdkVersion Tiramisu")
        #expect(try VerifyFixtures.verify(apk).minSdkVersion == 30)
        let table: [(String, Int?)] = [("Cupcake", 2), ("Froyo", 7), ("KitKat", 18), ("Oreo", 25), ("P", 26), ("UpsideDownCake", 31),
                                       ("Z", 36), ("A", 1), ("B", 1), ("Baklava", 34), ("tiramisu", nil), ("", nil), ("21", nil)]
        for (codename, level) in table {
            #expect(SDKVersion.apiLevel(forCodename: codename) == level, "\(codename)")
        }
    }

    @Test("a targetSdkVersion that is not an integer falls back to minSdkVersion (apksig getTargetSdkVersionFromBinaryAndroidManifest)")
    func codenameTargetSdk() throws {
        // A v1-only APK: were the codename read as a future level, MIN_SIG_SCHEME_FOR_TARGET_SDK_NOT_MET would fail it.
        let apk = try Self.usesSDKFixture("v1-codename-target", usesSDK: "android:minSdkVersion=\"21\" android:targetSdkVersion=\"Tiramisu\"")
        try expectVerdict(apk, verified: true, "targetSdkVersion Tiramisu, v1 only")
        // testTargetSdkNoUsesSdkElement-like: a codename minSdk stands in for a missing targetSdk.
        let noTarget = try Self.usesSDKFixture("v1-no-target", usesSDK: "android:minSdkVersion=\"Tiramisu\"")
        try expectVerdict(noTarget, verified: false, code: "MIN_SIG_SCHEME_FOR_TARGET_SDK_NOT_MET", "no targetSdk, minSdk Tiramisu (30)")
    }
}
