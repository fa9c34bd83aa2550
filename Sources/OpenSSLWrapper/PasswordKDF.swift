internal import COpenSSL
internal import CPasswordKDF

/// The password-based key derivations of a PKCS#12 keystore on SHA-256, run together by CPasswordKDF: several
/// derivations share two interleaved SHA-NI streams, and each iteration is a bare compression instead of
/// OpenSSL 3's provider round trip. `deriveWithOpenSSL` is the same derivation by OpenSSL, the reference the
/// tests hold this to.
package enum PasswordKDF {
    package enum Kind: Sendable, Equatable {
        /// PBKDF2 (RFC 8018 5.2) with HMAC-SHA-256, over the password's bytes as given (PBES2, as OpenSSL
        /// passes them).
        case pbkdf2HMACSHA256
        /// The PKCS#12 KDF (RFC 7292 B.2) with SHA-256; `id` 1 derives a key, 2 an IV, 3 a MAC key. The
        /// password is a BMPString (`bmpString(utf8:)`).
        case pkcs12SHA256(id: UInt8)
        /// The PKCS#12 KDF with SHA-1, as older Java's keystores use it (the MAC key, the 3DES and RC2 keys and
        /// IVs); outputs past 20 bytes take further blocks (RFC 7292 B.2 step 6C). The password as for SHA-256.
        case pkcs12SHA1(id: UInt8)
    }

    package struct Request: Sendable {
        package var kind: Kind
        /// PBKDF2: the password's bytes. PKCS#12: its BMPString, or nil for an absent password.
        package var password: [UInt8]?
        package var salt: [UInt8]
        package var iterations: Int
        package var length: Int

        package init(kind: Kind, password: [UInt8]?, salt: [UInt8], iterations: Int, length: Int) {
            self.kind = kind
            self.password = password
            self.salt = salt
            self.iterations = iterations
            self.length = length
        }
    }

    package enum Engine: Sendable {
        /// SHA-NI when the CPU has it.
        case fastest
        /// Portable C only: what a CPU without SHA-NI runs.
        case portable
    }

    /// The derived bytes of every request, in order; nil when a request is outside what CPasswordKDF derives
    /// (iterations 1...2³¹-1, PBKDF2 up to 1024 bytes, PKCS#12 up to 32).
    package static func derive(_ requests: [Request], engine: Engine = .fastest) -> [[UInt8]]? {
        guard !requests.isEmpty else { return [] }
        for request in requests {
            guard (1...Int(Int32.max)).contains(request.iterations), request.length >= 1 else { return nil }
            switch request.kind {
            case .pbkdf2HMACSHA256: guard request.length <= 1024, request.password != nil else { return nil }
            case .pkcs12SHA256: guard request.length <= 32 else { return nil }
            case .pkcs12SHA1: guard request.length <= 64 else { return nil }
            }
        }
        // One buffer for every input and one for every output, so all the pointers live through the one call.
        var inputs: [UInt8] = []
        var inputOffsets: [(password: Int?, salt: Int)] = []
        for request in requests {
            let passwordOffset = request.password.map { password -> Int in
                defer { inputs += password }
                return inputs.count
            }
            inputOffsets.append((passwordOffset, inputs.count))
            inputs += request.salt
        }
        defer { wipe(&inputs) }
        let outputOffsets = requests.reduce(into: [0]) { $0.append($0.last! + $1.length) }
        var outputs = [UInt8](repeating: 0, count: outputOffsets.last!)
        defer { wipe(&outputs) }
        let status = inputs.withUnsafeBufferPointer { input in
            outputs.withUnsafeMutableBufferPointer { output in
                // A non-nil base even for no bytes: the C side reads nothing through it.
                let inputBase = input.baseAddress ?? UnsafePointer(output.baseAddress!)
                var jobs = requests.indices.map { index -> apk_kdf_job in
                    let request = requests[index]
                    var job = apk_kdf_job()
                    switch request.kind {
                    case .pbkdf2HMACSHA256:
                        job.kind = Int32(APK_KDF_PBKDF2_HMAC_SHA256)
                    case .pkcs12SHA256(let id):
                        job.kind = Int32(APK_KDF_PKCS12_SHA256)
                        job.id = id
                    case .pkcs12SHA1(let id):
                        job.kind = Int32(APK_KDF_PKCS12_SHA1)
                        job.id = id
                    }
                    if let offset = inputOffsets[index].password, let password = request.password {
                        job.password = inputBase + offset
                        job.password_length = password.count
                    }
                    job.salt = inputBase + inputOffsets[index].salt
                    job.salt_length = request.salt.count
                    job.iterations = UInt32(request.iterations)
                    job.out = output.baseAddress! + outputOffsets[index]
                    job.out_length = request.length
                    return job
                }
                return apk_kdf_run(&jobs, jobs.count, engine == .portable ? Int32(APK_KDF_ENGINE_PORTABLE) : Int32(APK_KDF_ENGINE_FASTEST))
            }
        }
        guard status == 0 else { return nil }
        return requests.indices.map { Array(outputs[outputOffsets[$0]..<outputOffsets[$0 + 1]]) }
    }

    /// The BMPString OpenSSL makes of a UTF-8 password for the PKCS#12 KDF (`OPENSSL_utf82uni`: big-endian
    /// UTF-16 and two zero bytes; bytes that are not UTF-8 are taken one per character, as older OpenSSL
    /// did); nil when OpenSSL refuses the password.
    package static func bmpString(utf8 password: [UInt8]) -> [UInt8]? {
        guard password.count < Int(Int32.max) / 2 else { return nil }
        var length: Int32 = 0
        let converted = withCPassword(password) { pointer -> UnsafeMutablePointer<UInt8>? in
            var unicode: UnsafeMutablePointer<UInt8>?
            return OPENSSL_utf82uni(pointer, Int32(password.count), &unicode, &length)
        }
        guard let converted else { ERR_clear_error(); return nil }
        defer {
            OPENSSL_cleanse(converted, Int(length))
            apkpatch_OPENSSL_free(converted)
        }
        return Array(UnsafeBufferPointer(start: converted, count: Int(length)))
    }

    /// OpenSSL's derivation of `request`: PKCS5_PBKDF2_HMAC, or PKCS12_key_gen_uni. nil if OpenSSL fails.
    package static func deriveWithOpenSSL(_ request: Request) -> [UInt8]? {
        var output = [UInt8](repeating: 0, count: request.length)
        // One spare byte so that an empty salt still has an address.
        var salt = request.salt + [0]
        let saltCount = Int32(request.salt.count)
        let status: Int32 = salt.withUnsafeMutableBufferPointer { saltBuffer in
            let saltPointer = saltBuffer.baseAddress!
            switch request.kind {
            case .pbkdf2HMACSHA256:
                return withCPassword(request.password ?? []) { pass in
                    PKCS5_PBKDF2_HMAC(pass, Int32(request.password?.count ?? 0), saltPointer, saltCount,
                                      Int32(request.iterations), FetchedDigests.sha256, Int32(request.length), &output)
                }
            case .pkcs12SHA256(let id), .pkcs12SHA1(let id):
                let digest = request.kind == .pkcs12SHA1(id: id) ? FetchedDigests.sha1 : FetchedDigests.sha256
                guard var password = request.password else {
                    return PKCS12_key_gen_uni(nil, 0, saltPointer, saltCount, Int32(id), Int32(request.iterations),
                                              Int32(request.length), &output, digest)
                }
                defer { wipe(&password) }
                return password.withUnsafeMutableBufferPointer { pass in
                    PKCS12_key_gen_uni(pass.baseAddress, Int32(pass.count), saltPointer, saltCount, Int32(id),
                                       Int32(request.iterations), Int32(request.length), &output, digest)
                }
            }
        }
        ERR_clear_error()
        return status == 1 ? output : nil
    }

    /// OpenSSL's PKCS#12 key from a UTF-8 password (PKCS12_key_gen_utf8, what its MAC check and its PKCS#12 PBE
    /// derive): the reference for `bmpString(utf8:)` followed by `derive`, and the SHA-1 keys of PKCS12LegacyPBE.
    package static func derivePKCS12WithOpenSSL(utf8Password password: [UInt8], salt: [UInt8], id: UInt8, iterations: Int,
                                                length: Int) -> [UInt8]? {
        derivePKCS12WithOpenSSL(utf8Password: password, salt: salt, id: id, iterations: iterations, length: length,
                                digest: FetchedDigests.sha256)
    }

    static func derivePKCS12WithOpenSSL(utf8Password password: [UInt8], salt: [UInt8], id: UInt8, iterations: Int,
                                        length: Int, digest: OpaquePointer) -> [UInt8]? {
        var output = [UInt8](repeating: 0, count: length)
        var saltWithSpare = salt + [0]
        let status: Int32 = saltWithSpare.withUnsafeMutableBufferPointer { saltBuffer in
            withCPassword(password) { pass in
                PKCS12_key_gen_utf8(pass, Int32(password.count), saltBuffer.baseAddress!, Int32(salt.count), Int32(id), Int32(iterations),
                                    Int32(length), &output, digest)
            }
        }
        ERR_clear_error()
        return status == 1 ? output : nil
    }

    static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { OPENSSL_cleanse(base, raw.count) }
        }
    }
}
