internal import COpenSSL

/// How a DSA signature's per-signature secret k is chosen. ECDSA and RSA ignore it (apksig signs ECDSA with a
/// random k whatever the option says, and RSA PKCS#1 v1.5 has no k).
public enum DSANonce: Sendable, Equatable {
    /// From OpenSSL's random generator: Java's `SHA256withDSA`, what apksig uses by default.
    case random
    /// RFC 6979 section 3.2: k derived from the private key and the message digest with HMAC (the digest's
    /// own hash function), so the same key and data always give the same signature. apksig's
    /// `SHA256withDetDSA` / `SHA1withDetDSA` (Bouncy Castle's `HMacDSAKCalculator`), which apksigner's
    /// `--deterministic-dsa-signing` selects. OpenSSL 3.0 has no such mode, so it is computed here.
    case deterministic
}

/// One BIGNUM, cleared when freed (several hold the private key or k).
final class BigNumber {
    let pointer: OpaquePointer

    init() throws { pointer = try openSSLPointer("BN_new") { BN_new() } }
    init(takingOwnershipOf pointer: OpaquePointer) { self.pointer = pointer }
    deinit { BN_clear_free(pointer) }

    /// The unsigned big-endian integer `bytes`.
    convenience init(bigEndian bytes: [UInt8]) throws {
        self.init(takingOwnershipOf: try openSSLPointer("BN_bin2bn") { BN_bin2bn(bytes, Int32(bytes.count), nil) })
    }

    var bitCount: Int { Int(BN_num_bits(pointer)) }
    var isZero: Bool { BN_is_zero(pointer) == 1 }

    /// Big-endian, left-padded with zeros to `count` bytes.
    func bigEndianBytes(count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        guard BN_bn2binpad(pointer, &out, Int32(count)) == Int32(count) else {
            throw OpenSSLError(function: "BN_bn2binpad", reasons: ["a \(bitCount)-bit number does not fit in \(count) bytes"])
        }
        return out
    }

    /// Big-endian without leading zero bytes (empty for zero).
    var bigEndianBytes: [UInt8] {
        var out = [UInt8](repeating: 0, count: (bitCount + 7) / 8)
        _ = BN_bn2bin(pointer, &out)
        return out
    }

    static func < (a: BigNumber, b: BigNumber) -> Bool { BN_cmp(a.pointer, b.pointer) < 0 }
}

/// Deterministic DSA (RFC 6979): the nonce of section 3.2 and the FIPS 186 signature made with it, with
/// OpenSSL's big-number arithmetic.
package enum DeterministicDSA {
    /// The domain parameters and private key of a DSA key.
    struct Key {
        let p: BigNumber, q: BigNumber, g: BigNumber, x: BigNumber

        /// Reads them from a DSA `EVP_PKEY`.
        init(evpKey: OpaquePointer) throws {
            func parameter(_ name: String) throws -> BigNumber {
                var value: OpaquePointer?
                try openSSLCheck("EVP_PKEY_get_bn_param(\(name == "priv" ? "private key" : name))") {
                    EVP_PKEY_get_bn_param(evpKey, name, &value)
                }
                guard let value else { throw OpenSSLError.drain("EVP_PKEY_get_bn_param") }
                return BigNumber(takingOwnershipOf: value)
            }
            p = try parameter("p")
            q = try parameter("q")
            g = try parameter("g")
            x = try parameter("priv")
        }

        init(p: BigNumber, q: BigNumber, g: BigNumber, x: BigNumber) {
            self.p = p; self.q = q; self.g = g; self.x = x
        }
    }

    /// The signature of a message whose `digest`-hash is `hash`: k from RFC 6979 section 3.2, then
    /// r = (g^k mod p) mod q and s = k⁻¹(z + x·r) mod q, z being the hash's leftmost bits (as many as q has).
    /// A k giving r = 0 or s = 0 is skipped as the RFC says (section 3.4; it does not happen in practice).
    static func sign(hash: [UInt8], digest: DigestAlgorithm, key: Key) throws -> (k: [UInt8], r: BigNumber, s: BigNumber) {
        let context = try openSSLPointer("BN_CTX_new") { BN_CTX_new() }
        defer { BN_CTX_free(context) }
        let q = key.q
        let qBits = q.bitCount
        guard qBits >= 8, !key.x.isZero, key.x < q else {
            throw OpenSSLError(function: "DSA sign", reasons: ["the DSA key's parameters are invalid (q of \(qBits) bits)"])
        }
        let octets = (qBits + 7) / 8

        // bits2int (section 2.3.2): the leftmost qlen bits as an integer.
        func bitsToInt(_ bytes: [UInt8]) throws -> BigNumber {
            let value = try BigNumber(bigEndian: bytes)
            if bytes.count * 8 > qBits {
                try openSSLCheck("BN_rshift") { BN_rshift(value.pointer, value.pointer, Int32(bytes.count * 8 - qBits)) }
            }
            return value
        }
        let z = try bitsToInt(hash)
        // bits2octets (section 2.3.4): z mod q (z < 2^qlen < 2q, so one subtraction), on rlen bits.
        let reduced = try BigNumber()
        if z < q {
            guard BN_copy(reduced.pointer, z.pointer) != nil else { throw OpenSSLError.drain("BN_copy") }
        } else {
            try openSSLCheck("BN_sub") { BN_sub(reduced.pointer, z.pointer, q.pointer) }
        }
        let hashOctets = try reduced.bigEndianBytes(count: octets)
        var privateOctets = try key.x.bigEndianBytes(count: octets)
        defer { for index in privateOctets.indices { privateOctets[index] = 0 } }

        // Section 3.2 steps b to g: HMAC_DRBG instantiated with the key and the hash.
        let size = digest.outputSize
        var v = [UInt8](repeating: 0x01, count: size)
        var k = [UInt8](repeating: 0x00, count: size)
        defer { for index in k.indices { k[index] = 0 } }
        k = try hmac(digest, key: k, v + [0x00] + privateOctets + hashOctets)
        v = try hmac(digest, key: k, v)
        k = try hmac(digest, key: k, v + [0x01] + privateOctets + hashOctets)
        v = try hmac(digest, key: k, v)

        while true {
            // Step h: T from successive V until it holds qlen bits; k = bits2int(T) if 1 <= k < q.
            var t: [UInt8] = []
            while t.count < octets {
                v = try hmac(digest, key: k, v)
                t += v
            }
            let candidate = try bitsToInt(Array(t.prefix(octets)))
            for index in t.indices { t[index] = 0 }
            if !candidate.isZero && candidate < q {
                BN_set_flags(candidate.pointer, BN_FLG_CONSTTIME)
                if let signature = try signature(k: candidate, z: z, key: key, context: context) {
                    return (try candidate.bigEndianBytes(count: octets), signature.r, signature.s)
                }
            }
            k = try hmac(digest, key: k, v + [0x00])
            v = try hmac(digest, key: k, v)
        }
    }

    /// FIPS 186-4 section 4.6 with the chosen `k`; nil when r or s comes out 0. The exponentiations with k
    /// run in constant time (Montgomery, `BN_FLG_CONSTTIME`), as OpenSSL's own DSA does; k⁻¹ is k^(q-2) mod q
    /// (q is prime), also constant-time.
    private static func signature(k: BigNumber, z: BigNumber, key: Key, context: OpaquePointer) throws -> (r: BigNumber, s: BigNumber)? {
        let r = try BigNumber()
        try openSSLCheck("BN_mod_exp_mont_consttime") { BN_mod_exp_mont_consttime(r.pointer, key.g.pointer, k.pointer, key.p.pointer, context, nil) }
        try openSSLCheck("BN_nnmod") { BN_nnmod(r.pointer, r.pointer, key.q.pointer, context) }
        if r.isZero { return nil }
        let exponent = try BigNumber()
        guard BN_copy(exponent.pointer, key.q.pointer) != nil else { throw OpenSSLError.drain("BN_copy") }
        try openSSLCheck("BN_sub_word") { BN_sub_word(exponent.pointer, 2) }
        let inverse = try BigNumber()
        try openSSLCheck("BN_mod_exp_mont_consttime") { BN_mod_exp_mont_consttime(inverse.pointer, k.pointer, exponent.pointer, key.q.pointer, context, nil) }
        let s = try BigNumber()
        try openSSLCheck("BN_mod_mul") { BN_mod_mul(s.pointer, key.x.pointer, r.pointer, key.q.pointer, context) }
        try openSSLCheck("BN_mod_add") { BN_mod_add(s.pointer, s.pointer, z.pointer, key.q.pointer, context) }
        try openSSLCheck("BN_mod_mul") { BN_mod_mul(s.pointer, s.pointer, inverse.pointer, key.q.pointer, context) }
        if s.isZero { return nil }
        return (r, s)
    }

    private static func hmac(_ digest: DigestAlgorithm, key: [UInt8], _ data: [UInt8]) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: digest.outputSize)
        var length: UInt32 = 0
        ERR_clear_error()
        guard HMAC(digest.evp, key, Int32(key.count), data, data.count, &out, &length) != nil, Int(length) == out.count else {
            throw OpenSSLError.drain("HMAC")
        }
        return out
    }

    /// The DER `SEQUENCE { INTEGER r, INTEGER s }` Java's `Signature` and OpenSSL produce and read.
    static func encoded(r: BigNumber, s: BigNumber) -> [UInt8] {
        func integer(_ value: BigNumber) -> [UInt8] {
            DER.tlv(DER.integerTag, Array(DER.minimalInteger(([0x00] + value.bigEndianBytes)[...])))
        }
        return DER.sequence([integer(r), integer(s)])
    }

    /// RFC 6979's computation on explicit domain parameters and private key (big-endian), for checking its
    /// appendix A.2 test vectors: k, r and s for the message `data` hashed with `digest`.
    package static func signature(of data: [UInt8], digest: DigestAlgorithm, p: [UInt8], q: [UInt8], g: [UInt8],
                                  x: [UInt8]) throws -> (k: [UInt8], r: [UInt8], s: [UInt8]) {
        let key = Key(p: try BigNumber(bigEndian: p), q: try BigNumber(bigEndian: q), g: try BigNumber(bigEndian: g),
                      x: try BigNumber(bigEndian: x))
        let (k, r, s) = try sign(hash: Digest.hash(data, with: digest), digest: digest, key: key)
        return (k, r.bigEndianBytes, s.bigEndianBytes)
    }
}

extension PrivateKey {
    /// `sign(bytes:digest:)` for a DSA key with k from RFC 6979.
    func signDeterministically(bytes data: UnsafeRawBufferPointer, digest: DigestAlgorithm) throws -> [UInt8] {
        let key = try DeterministicDSA.Key(evpKey: handle.pointer)
        let (_, r, s) = try DeterministicDSA.sign(hash: Digest.hash(data, with: digest), digest: digest, key: key)
        return DeterministicDSA.encoded(r: r, s: s)
    }
}
