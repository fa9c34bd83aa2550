internal import COpenSSL

/// Digest algorithms used by the APK signature schemes and by certificate fingerprints.
public enum DigestAlgorithm: String, Sendable, Hashable, CaseIterable {
    case md5 = "MD5"
    case sha1 = "SHA-1"
    case sha256 = "SHA-256"
    case sha512 = "SHA-512"

    public var outputSize: Int {
        switch self {
        case .md5: return 16
        case .sha1: return 20
        case .sha256: return 32
        case .sha512: return 64
        }
    }

    var evp: OpaquePointer {
        switch self {
        case .md5: return EVP_md5()
        case .sha1: return EVP_sha1()
        case .sha256: return EVP_sha256()
        case .sha512: return EVP_sha512()
        }
    }

    /// The provider's implementation, fetched once: OpenSSL 3 looks a legacy `EVP_sha256()` up again on every
    /// init, which costs microseconds per digest, and the signer and verifier make one digest per entry.
    var fetched: OpaquePointer {
        switch self {
        case .md5: return FetchedDigests.md5
        case .sha1: return FetchedDigests.sha1
        case .sha256: return FetchedDigests.sha256
        case .sha512: return FetchedDigests.sha512
        }
    }
}

/// Fetched once, never freed (process lifetime); immutable and thread-safe in OpenSSL. Shared by the
/// signer's `DigestAlgorithm` and the verifier's wider set of digests.
enum FetchedDigests {
    nonisolated(unsafe) static let md5 = fetch("MD5", fallback: EVP_md5())
    nonisolated(unsafe) static let sha1 = fetch("SHA1", fallback: EVP_sha1())
    nonisolated(unsafe) static let sha224 = fetch("SHA224", fallback: EVP_sha224())
    nonisolated(unsafe) static let sha256 = fetch("SHA256", fallback: EVP_sha256())
    nonisolated(unsafe) static let sha384 = fetch("SHA384", fallback: EVP_sha384())
    nonisolated(unsafe) static let sha512 = fetch("SHA512", fallback: EVP_sha512())
    static func fetch(_ name: String, fallback: OpaquePointer?) -> OpaquePointer {
        EVP_MD_fetch(nil, name, nil) ?? fallback!
    }
}

/// A streaming message digest over OpenSSL's EVP interface. A reference type with a single owner: copy
/// semantics would need EVP_MD_CTX_copy on every copy, and nothing here wants that.
public final class Digest {
    public let algorithm: DigestAlgorithm
    private let context: OpaquePointer

    public init(_ algorithm: DigestAlgorithm) {
        self.algorithm = algorithm
        context = EVP_MD_CTX_new()!
        EVP_DigestInit_ex2(context, algorithm.fetched, nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
    }

    public func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// Returns the digest; the object must not be updated afterwards, until `reset`.
    public func finish() -> [UInt8] {
        var output = [UInt8](repeating: 0, count: algorithm.outputSize)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &output, &length)
        return output
    }

    /// Starts a new digest with the same context (cheaper than a new `Digest` per message).
    public func reset() {
        EVP_DigestInit_ex2(context, algorithm.fetched, nil)
    }

    public static func hash(_ bytes: UnsafeRawBufferPointer, with algorithm: DigestAlgorithm) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: algorithm.outputSize)
        var length: UInt32 = 0
        EVP_Digest(bytes.baseAddress, bytes.count, &output, &length, algorithm.fetched, nil)
        return output
    }

    /// The digests of many small pieces of `bytes`, concatenated in order (one context, reinitialised per
    /// piece: the JAR signature digests thousands of manifest sections).
    public static func hashEach(_ ranges: [Range<Int>], of bytes: [UInt8], with algorithm: DigestAlgorithm) -> [UInt8] {
        let size = algorithm.outputSize
        var output = [UInt8](repeating: 0, count: ranges.count * size)
        guard let context = EVP_MD_CTX_new() else { return ranges.flatMap { hash(Array(bytes[$0]), with: algorithm) } }
        defer { EVP_MD_CTX_free(context) }
        let md = algorithm.fetched
        bytes.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                var length: UInt32 = 0
                for (index, range) in ranges.enumerated() {
                    precondition(range.lowerBound >= 0 && range.upperBound <= input.count)
                    EVP_DigestInit_ex2(context, md, nil)
                    EVP_DigestUpdate(context, input.baseAddress! + range.lowerBound, range.count)
                    EVP_DigestFinal_ex(context, out.baseAddress!.assumingMemoryBound(to: UInt8.self) + index * size, &length)
                }
            }
        }
        return output
    }

    public static func hash(_ bytes: [UInt8], with algorithm: DigestAlgorithm) -> [UInt8] {
        bytes.withUnsafeBytes { hash($0, with: algorithm) }
    }
}

extension Array where Element == UInt8 {
    /// Lower-case hexadecimal, as apksigner prints digests.
    public var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8](); out.reserveCapacity(count * 2)
        for byte in self { out.append(digits[Int(byte >> 4)]); out.append(digits[Int(byte & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
