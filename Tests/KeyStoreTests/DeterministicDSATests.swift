import Foundation
import Testing
import OpenSSLWrapper
import TestSupport

/// RFC 6979 deterministic DSA (apksigner `--deterministic-dsa-signing`, apksig's `SHA256withDetDSA`): the nonce
/// and signature against the RFC's own test vectors (appendix A.2.1, DSA 1024/160, and A.2.2, DSA 2048/256,
/// messages "sample" and "test"), and a real key's signatures checked by OpenSSL.
@Suite(.removesTemporaryDirectories) struct DeterministicDSATests {
    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
    }

    struct Domain: Sendable {
        let p: String, q: String, g: String, x: String
    }

    /// A.2.1: DSA, 1024 bits.
    static let dsa1024 = Domain(
        p: "86F5CA03DCFEB225063FF830A0C769B9DD9D6153AD91D7CE27F787C43278B447E6533B86B18BED6E8A48B784A14C252C5BE0DBF60B86D6385BD2F12FB763ED88"
            + "73ABFD3F5BA2E0A8C0A59082EAC056935E529DAF7C610467899C77ADEDFC846C881870B7B19B2B58F9BE0521A17002E3BDD6B86685EE90B3D9A1B02B782B1779",
        q: "996F967F6C8E388D9E28D01E205FBA957A5698B1",
        g: "07B0F92546150B62514BB771E2A0C0CE387F03BDA6C56B505209FF25FD3C133D89BBCD97E904E09114D9A7DEFDEADFC9078EA544D2E401AEECC40BB9FBBF78FD"
            + "87995A10A1C27CB7789B594BA7EFB5C4326A9FE59A070E136DB77175464ADCA417BE5DCE2F40D10A46A3A3943F26AB7FD9C0398FF8C76EE0A56826A8A88F1DBD",
        x: "411602CB19A6CCC34494D79D98EF1E7ED5AF25F7")

    /// A.2.2: DSA, 2048 bits.
    static let dsa2048 = Domain(
        p: "9DB6FB5951B66BB6FE1E140F1D2CE5502374161FD6538DF1648218642F0B5C48C8F7A41AADFA187324B87674FA1822B00F1ECF8136943D7C55757264E5A1A44F"
            + "FE012E9936E00C1D3E9310B01C7D179805D3058B2A9F4BB6F9716BFE6117C6B5B3CC4D9BE341104AD4A80AD6C94E005F4B993E14F091EB51743BF33050C38DE2"
            + "35567E1B34C3D6A5C0CEAA1A0F368213C3D19843D0B4B09DCB9FC72D39C8DE41F1BF14D4BB4563CA28371621CAD3324B6A2D392145BEBFAC748805236F5CA2FE"
            + "92B871CD8F9C36D3292B5509CA8CAA77A2ADFC7BFD77DDA6F71125A7456FEA153E433256A2261C6A06ED3693797E7995FAD5AABBCFBE3EDA2741E375404AE25B",
        q: "F2C3119374CE76C9356990B465374A17F23F9ED35089BD969F61C6DDE9998C1F",
        g: "5C7FF6B06F8F143FE8288433493E4769C4D988ACE5BE25A0E24809670716C613D7B0CEE6932F8FAA7C44D2CB24523DA53FBE4F6EC3595892D1AA58C4328A06C4"
            + "6A15662E7EAA703A1DECF8BBB2D05DBE2EB956C142A338661D10461C0D135472085057F3494309FFA73C611F78B32ADBB5740C361C9F35BE90997DB2014E2EF5"
            + "AA61782F52ABEB8BD6432C4DD097BC5423B285DAFB60DC364E8161F4A2A35ACA3A10B1C4D203CC76A470A33AFDCBDD92959859ABD8B56E1725252D78EAC66E71"
            + "BA9AE3F1DD2487199874393CD4D832186800654760E1E34C09E4D155179F9EC0DC4473F996BDCE6EED1CABED8B6F116F7AD9CF505DF0F998E34AB27514B0FFE7",
        x: "69C7548C21D0DFEA6B9A51C9EAD4E27C33D3B3F180316E5BCAB92C933F0E4DBC")

    struct Vector: Sendable, CustomTestStringConvertible {
        let section: String, domain: Domain, digest: DigestAlgorithm, message: String, k: String, r: String, s: String
        var testDescription: String { "\(section) \(digest.rawValue) \"\(message)\"" }
    }

    /// The SHA-256 cases (apksig's v2/v3/v4 and v1 from API 21) and the SHA-1 ones (v1 below API 21).
    static let vectors: [Vector] = [
        Vector(section: "A.2.1", domain: dsa1024, digest: .sha256, message: "sample", k: "519BA0546D0C39202A7D34D7DFA5E760B318BCFB",
               r: "81F2F5850BE5BC123C43F71A3033E9384611C545", s: "4CDD914B65EB6C66A8AAAD27299BEE6B035F5E89"),
        Vector(section: "A.2.1", domain: dsa1024, digest: .sha256, message: "test", k: "5A67592E8128E03A417B0484410FB72C0B630E1A",
               r: "22518C127299B0F6FDC9872B282B9E70D0790812", s: "6837EC18F150D55DE95B5E29BE7AF5D01E4FE160"),
        Vector(section: "A.2.1", domain: dsa1024, digest: .sha1, message: "sample", k: "7BDB6B0FF756E1BB5D53583EF979082F9AD5BD5B",
               r: "2E1A0C2562B2912CAAF89186FB0F42001585DA55", s: "29EFB6B0AFF2D7A68EB70CA313022253B9A88DF5"),
        Vector(section: "A.2.1", domain: dsa1024, digest: .sha1, message: "test", k: "5C842DF4F9E344EE09F056838B42C7A17F4A6433",
               r: "42AB2052FD43E123F0607F115052A67DCD9C5C77", s: "183916B0230D45B9931491D4C6B0BD2FB4AAF088"),
        Vector(section: "A.2.2", domain: dsa2048, digest: .sha256, message: "sample",
               k: "8926A27C40484216F052F4427CFD5647338B7B3939BC6573AF4333569D597C52",
               r: "EACE8BDBBE353C432A795D9EC556C6D021F7A03F42C36E9BC87E4AC7932CC809",
               s: "7081E175455F9247B812B74583E9E94F9EA79BD640DC962533B0680793A38D53"),
        Vector(section: "A.2.2", domain: dsa2048, digest: .sha256, message: "test",
               k: "1D6CE6DDA1C5D37307839CD03AB0A5CBB18E60D800937D67DFB4479AAC8DEAD7",
               r: "8190012A1969F9957D56FCCAAD223186F423398D58EF5B3CEFD5A4146A4476F0",
               s: "7452A53F7075D417B4B013B278D1BB8BBD21863F5E7B1CEE679CF2188E1AB19E"),
        // SHA-1 with a 256-bit q: T takes two HMAC blocks (20-byte output, 32-byte k).
        Vector(section: "A.2.2", domain: dsa2048, digest: .sha1, message: "sample",
               k: "888FA6F7738A41BDC9846466ABDB8174C0338250AE50CE955CA16230F9CBD53E",
               r: "3A1B2DBD7489D6ED7E608FD036C83AF396E290DBD602408E8677DAABD6E7445A",
               s: "D26FCBA19FA3E3058FFC02CA1596CDBB6E0D20CB37B06054F7E36DED0CDBBCCF"),
    ]

    @Test("RFC 6979 appendix A.2 vectors: k, r and s", arguments: vectors)
    func rfcVectors(vector: Vector) throws {
        let d = vector.domain
        let (k, r, s) = try DeterministicDSA.signature(of: Array(vector.message.utf8), digest: vector.digest,
                                                       p: Self.bytes(d.p), q: Self.bytes(d.q), g: Self.bytes(d.g), x: Self.bytes(d.x))
        #expect(k.hexString.uppercased() == vector.k)
        #expect(r.hexString.uppercased() == vector.r)
        #expect(s.hexString.uppercased() == vector.s)
    }

    @Test("a DSA key signs deterministically: the same bytes each time, accepted by OpenSSL; random k stays the default")
    func keySignatures() throws {
        let directory = try TestSupport.makeTemporaryDirectory("detdsa")
        defer { try? FileManager.default.removeItem(at: directory) }
        let parameters = directory.appendingPathComponent("dsa.param").path, pem = directory.appendingPathComponent("dsa.pem").path
        #expect(try TestSupport.run("openssl", ["genpkey", "-genparam", "-algorithm", "DSA", "-pkeyopt", "dsa_paramgen_bits:2048",
                                                "-pkeyopt", "dsa_paramgen_q_bits:256", "-out", parameters]).succeeded)
        #expect(try TestSupport.run("openssl", ["genpkey", "-paramfile", parameters, "-out", pem]).succeeded)
        let key = try PrivateKey(pemEncoded: String(decoding: try TestSupport.readBytes(pem), as: UTF8.self))
        let data = Array("signed data".utf8)
        for digest in [DigestAlgorithm.sha256, .sha1] {
            let first = try key.sign(data, digest: digest, dsaNonce: .deterministic)
            #expect(try key.sign(data, digest: digest, dsaNonce: .deterministic) == first)
            #expect(key.publicKey.verify(signature: first, data: data, digest: digest))
            #expect(try key.sign(data, digest: digest) != first, "random k by default")
            #expect(try key.sign(Array("other data".utf8), digest: digest, dsaNonce: .deterministic) != first)

            // OpenSSL's own DSA verification of the DER signature.
            let dataPath = directory.appendingPathComponent("data").path, signaturePath = directory.appendingPathComponent("sig").path
            let publicPath = directory.appendingPathComponent("pub.pem").path
            try Data(data).write(to: URL(fileURLWithPath: dataPath))
            try Data(first).write(to: URL(fileURLWithPath: signaturePath))
            #expect(try TestSupport.run("openssl", ["pkey", "-in", pem, "-pubout", "-out", publicPath]).succeeded)
            let name = digest == .sha1 ? "-sha1" : "-sha256"
            let verify = try TestSupport.run("openssl", ["dgst", name, "-verify", publicPath, "-signature", signaturePath, dataPath])
            #expect(verify.succeeded && verify.stdout.contains("Verified OK"), "\(verify)")
        }
        // RSA and EC keys ignore the choice (apksig signs ECDSA with a random k either way).
        let ec = try PrivateKey.generateEC(curve: "P-256")
        #expect(try ec.sign(data, digest: .sha256, dsaNonce: .deterministic) != (try ec.sign(data, digest: .sha256, dsaNonce: .deterministic)))
    }
}
