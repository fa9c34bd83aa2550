import Foundation
import Testing
import OpenSSLWrapper
import TestSupport

/// The v1 signature block must be what apksig writes: the strongest check is byte equality with the
/// `.RSA` file apksigner itself produced over the same `.SF` with the same key (RSA PKCS#1 v1.5 is
/// deterministic).
@Suite(.removesTemporaryDirectories) struct PKCS7Tests {
    @Test func signatureBlockIsByteIdenticalToApksignersForRSA() throws {
        let directory = try TestSupport.makeTemporaryDirectory("pkcs7")
        defer { try? FileManager.default.removeItem(at: directory) }
        let keystore = directory.appendingPathComponent("ks.p12").path
        try KeytoolFixture.generate(keystore: keystore, type: "PKCS12", alias: "release", algorithm: "RSA", size: 2048,
                                    storePassword: "store-pw-1")
        let apk = try FixtureAPK().build(in: directory)
        let signed = directory.appendingPathComponent("signed.apk").path
        let sign = try TestSupport.run("apksigner", ["sign", "--ks", keystore, "--ks-pass", "pass:store-pw-1",
                                                     "--min-sdk-version", "14", "--out", signed, apk])
        #expect(sign.succeeded, "\(sign)")

        let extract = directory.appendingPathComponent("x")
        let unzip = try TestSupport.run("unzip", ["-o", "-q", signed, "META-INF/*", "-d", extract.path])
        #expect(unzip.succeeded, "\(unzip)")
        let sf = try TestSupport.readBytes(extract.appendingPathComponent("META-INF/RELEASE.SF").path)
        let block = try TestSupport.readBytes(extract.appendingPathComponent("META-INF/RELEASE.RSA").path)

        let (key, certificates) = try KeytoolFixture.exportKeyAndCertificates(keystore: keystore, password: "store-pw-1",
                                                                              in: directory)
        // minSdk 14 with RSA → SHA-1 (apksig: SHA-256 needs API 18).
        let ours = try PKCS7.makeSignedData(signing: sf, key: key, certificates: certificates, digest: .sha1)
        #expect(ours == block)

        let ours256 = try PKCS7.makeSignedData(signing: sf, key: key, certificates: certificates, digest: .sha256)
        #expect(ours256 != ours)
        #expect(try PKCS7.makeSignedData(signing: sf, key: key, certificates: certificates, digest: .sha256) == ours256)
    }

    /// EC and DSA signatures are randomised, so compare apksigner's block and ours with the SignerInfo's
    /// signature value blanked: every other byte (OIDs, NULL parameters, certificate set, issuer and serial)
    /// must match; and our signature must verify.
    @Test(arguments: [("EC", 256, 21, DigestAlgorithm.sha256), ("EC", 384, 24, .sha256), ("DSA", 1024, 14, .sha1),
                      ("DSA", 2048, 24, .sha256), ("RSA", 4096, 24, .sha256)])
    func signatureBlockMatchesApksignersApartFromTheSignature(algorithm: String, size: Int, minSdk: Int, digest: DigestAlgorithm) throws {
        let directory = try TestSupport.makeTemporaryDirectory("pkcs7")
        defer { try? FileManager.default.removeItem(at: directory) }
        let keystore = directory.appendingPathComponent("ks.p12").path
        try KeytoolFixture.generate(keystore: keystore, type: "PKCS12", alias: "signer", algorithm: algorithm, size: size,
                                    storePassword: "store-pw-2")
        let apk = try FixtureAPK().build(in: directory)
        let signed = directory.appendingPathComponent("signed.apk").path
        let sign = try TestSupport.run("apksigner", ["sign", "--ks", keystore, "--ks-pass", "pass:store-pw-2",
                                                     "--min-sdk-version", String(minSdk), "--out", signed, apk])
        #expect(sign.succeeded, "\(sign)")
        let extract = directory.appendingPathComponent("x")
        let unzip = try TestSupport.run("unzip", ["-o", "-q", signed, "META-INF/*", "-d", extract.path])
        #expect(unzip.succeeded, "\(unzip)")
        let sf = try TestSupport.readBytes(extract.appendingPathComponent("META-INF/SIGNER.SF").path)
        let theirs = try TestSupport.readBytes(extract.appendingPathComponent("META-INF/SIGNER.\(algorithm)").path)

        let (key, certificates) = try KeytoolFixture.exportKeyAndCertificates(keystore: keystore, password: "store-pw-2", in: directory)
        #expect(key.algorithm.rawValue == algorithm)
        let ours = try PKCS7.makeSignedData(signing: sf, key: key, certificates: certificates, digest: digest)
        #expect(try DERWalk.blankingSignerSignature(ours) == (try DERWalk.blankingSignerSignature(theirs)))
        #expect(try certificates[0].publicKey().verify(signature: try Self.signerInfoSignature(ours), data: sf, digest: digest))
        #expect(try certificates[0].publicKey().verify(signature: try Self.signerInfoSignature(theirs), data: sf, digest: digest))
    }

    @Test(arguments: [("RSA", 2048), ("EC", 256), ("EC", 384)])
    func signedDataHasNoSignedAttributesAndVerifiesWithOpenSSL(algorithm: String, size: Int) throws {
        let directory = try TestSupport.makeTemporaryDirectory("pkcs7")
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = algorithm == "RSA" ? try PrivateKey.generateRSA(bits: size) : try PrivateKey.generateEC(curve: "P-\(size)")
        let certificate = try Certificate.makeSelfSigned(key: key, subject: "CN=Block Test, O=Example, C=DE",
                                                         notBefore: 1_700_000_000, validityDays: 365)
        let content = Array("Signature-Version: 1.0\r\nCreated-By: test\r\n\r\n".utf8)
        let block = try PKCS7.makeSignedData(signing: content, key: key, certificates: [certificate], digest: .sha256)
        let blockPath = directory.appendingPathComponent("CERT.\(algorithm)").path
        let contentPath = directory.appendingPathComponent("CERT.SF").path
        try Data(block).write(to: URL(fileURLWithPath: blockPath))
        try Data(content).write(to: URL(fileURLWithPath: contentPath))

        let print = try TestSupport.run("openssl", ["cms", "-cmsout", "-print", "-inform", "DER", "-in", blockPath])
        #expect(print.succeeded, "\(print)")
        #expect(print.stdout.contains("signedAttrs:\n          <ABSENT>") || print.stdout.contains("signedAttrs:\n          <EMPTY>"),
                "\(print.stdout)")
        #expect(print.stdout.contains("eContent: <ABSENT>"), "\(print.stdout)")
        #expect(print.stdout.contains("issuerAndSerialNumber"), "\(print.stdout)")

        if algorithm == "RSA" {
            // OpenSSL maps rsaEncryption + SHA-256 to a signature check (for EC it does not accept the bare
            // ecPublicKey OID that apksig writes, hence the PublicKey check below).
            let verify = try TestSupport.run("openssl", ["cms", "-verify", "-noverify", "-binary", "-inform", "DER",
                                                         "-in", blockPath, "-content", contentPath, "-out", "/dev/null"])
            #expect(verify.succeeded, "\(verify)")
        }
        // The SignerInfo's signature is over the content itself (no signed attributes).
        let signature = try Self.signerInfoSignature(block)
        #expect(try certificate.publicKey().verify(signature: signature, data: content, digest: .sha256))
    }

    @Test func rejectsKeyThatDoesNotMatchCertificate() throws {
        let key = try PrivateKey.generateRSA(bits: 2048)
        let other = try PrivateKey.generateRSA(bits: 2048)
        let certificate = try Certificate.makeSelfSigned(key: other, subject: "CN=Other", notBefore: 1_700_000_000, validityDays: 1)
        #expect(throws: OpenSSLError.self) {
            try PKCS7.makeSignedData(signing: [1, 2, 3], key: key, certificates: [certificate], digest: .sha256)
        }
    }

    /// The last OCTET STRING of the SignerInfo: ContentInfo → [0] → SignedData → signerInfos SET → SignerInfo.
    static func signerInfoSignature(_ block: [UInt8]) throws -> [UInt8] {
        let file = try DERWalk(block)
        let signedData = try file.child(1).child(0)
        let signerInfos = try signedData.lastChild()
        let signerInfo = try signerInfos.child(0)
        return try signerInfo.lastChild().contents
    }
}

/// A tiny test-side DER walker (independent of the module's own reader, so the test does not trust it).
struct DERWalk {
    let tag: UInt8
    let contents: [UInt8]
    init(_ bytes: [UInt8]) throws {
        guard bytes.count >= 2 else { throw FixtureError(message: "short DER") }
        tag = bytes[0]
        var offset = 2
        var length = Int(bytes[1])
        if length & 0x80 != 0 {
            let count = length & 0x7f
            length = 0
            for index in 0..<count { length = length << 8 | Int(bytes[2 + index]) }
            offset += count
        }
        contents = Array(bytes[offset..<(offset + length)])
        encodedLength = offset + length
    }
    let encodedLength: Int
    func children() throws -> [DERWalk] {
        var out: [DERWalk] = []
        var rest = contents[...]
        while !rest.isEmpty {
            let element = try DERWalk(Array(rest))
            out.append(element)
            rest = rest.dropFirst(element.encodedLength)
        }
        return out
    }
    var isConstructed: Bool { tag & 0x20 != 0 }

    /// DER of `tag` and `contents` (definite length).
    static func encode(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        var length: [UInt8] = []
        if contents.count < 0x80 { length = [UInt8(contents.count)] } else {
            var value = contents.count
            var bytes: [UInt8] = []
            while value > 0 { bytes.insert(UInt8(value & 0xff), at: 0); value >>= 8 }
            length = [0x80 | UInt8(bytes.count)] + bytes
        }
        return [tag] + length + contents
    }

    /// Re-encodes `block` (ContentInfo → [0] → SignedData → signerInfos → SignerInfo) with each SignerInfo's
    /// signature OCTET STRING emptied.
    static func blankingSignerSignature(_ block: [UInt8]) throws -> [UInt8] {
        let contentInfo = try DERWalk(block)
        var contentInfoChildren = try contentInfo.children()
        let explicit = contentInfoChildren[1]
        let signedData = try explicit.child(0)
        var signedDataParts = try signedData.children().map { encode($0.tag, $0.contents) }
        let signerInfos = try signedData.lastChild()
        let blankedInfos = try signerInfos.children().map { info -> [UInt8] in
            var fields = try info.children().map { encode($0.tag, $0.contents) }
            fields[fields.count - 1] = encode(0x04, [])
            return encode(info.tag, fields.flatMap { $0 })
        }
        signedDataParts[signedDataParts.count - 1] = encode(signerInfos.tag, blankedInfos.flatMap { $0 })
        let newSignedData = encode(signedData.tag, signedDataParts.flatMap { $0 })
        contentInfoChildren.removeLast()
        return encode(contentInfo.tag, contentInfoChildren.flatMap { encode($0.tag, $0.contents) } + encode(explicit.tag, newSignedData))
    }

    func child(_ index: Int) throws -> DERWalk { try children()[index] }
    func lastChild() throws -> DERWalk { try children().last! }
}

/// Keystores made by the real `keytool`, and their contents exported with keytool/openssl.
enum KeytoolFixture {
    static func generate(keystore: String, type: String, alias: String, algorithm: String, size: Int,
                         storePassword: String, keyPassword: String? = nil,
                         dname: String = "CN=Keytool Test, OU=QA, O=Example Corp, L=Berlin, C=DE") throws {
        var arguments = ["-genkeypair", "-keystore", keystore, "-storetype", type, "-storepass", storePassword,
                         "-alias", alias, "-keyalg", algorithm, "-dname", dname, "-validity", "3650"]
        if algorithm == "EC" { arguments += ["-groupname", size == 384 ? "secp384r1" : "secp256r1"] }
        else if algorithm == "DSA" { arguments += ["-keysize", String(size), "-sigalg", "SHA256withDSA"] }
        else { arguments += ["-keysize", String(size)] }
        if let keyPassword { arguments += ["-keypass", keyPassword] }
        let result = try TestSupport.run("keytool", arguments)
        guard result.succeeded else { throw FixtureError(message: "keytool -genkeypair failed:\n\(result)") }
    }

    /// `keytool -exportcert` (DER) for `alias`.
    static func exportCertificate(keystore: String, type: String, alias: String, storePassword: String) throws -> [UInt8] {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("cert-\(UUID().uuidString).der").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try TestSupport.run("keytool", ["-exportcert", "-keystore", keystore, "-storetype", type,
                                                     "-storepass", storePassword, "-alias", alias, "-file", output])
        guard result.succeeded else { throw FixtureError(message: "keytool -exportcert failed:\n\(result)") }
        return try TestSupport.readBytes(output)
    }

    /// The key (via `openssl pkcs12 -nodes`) and the certificate chain of a one-key PKCS#12 store.
    static func exportKeyAndCertificates(keystore: String, password: String, in directory: URL) throws -> (PrivateKey, [Certificate]) {
        let keyResult = try TestSupport.run("openssl", ["pkcs12", "-in", keystore, "-nocerts", "-nodes", "-passin", "pass:\(password)"])
        guard keyResult.succeeded else { throw FixtureError(message: "openssl pkcs12 failed:\n\(keyResult)") }
        let certResult = try TestSupport.run("openssl", ["pkcs12", "-in", keystore, "-nokeys", "-passin", "pass:\(password)"])
        guard certResult.succeeded else { throw FixtureError(message: "openssl pkcs12 failed:\n\(certResult)") }
        return (try PrivateKey(pemEncoded: keyResult.stdout), try Certificate.parseAll(pemOrDER: Array(certResult.stdout.utf8)))
    }
}
