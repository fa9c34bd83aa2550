internal import COpenSSL

/// An OpenSSL call that failed, with the reasons OpenSSL queued (its own words, e.g. "mac verify failure").
public struct OpenSSLError: Error, CustomStringConvertible {
    public let function: String
    public let reasons: [String]
    public init(function: String, reasons: [String]) { self.function = function; self.reasons = reasons }
    public var description: String {
        reasons.isEmpty ? "\(function) failed" : "\(function) failed: \(reasons.joined(separator: "; "))"
    }

    /// Drains OpenSSL's error queue into an error naming `function`.
    static func drain(_ function: String) -> OpenSSLError {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if let reason = ERR_reason_error_string(code) {
                reasons.append(String(cString: reason))
            } else {
                var buffer = [CChar](repeating: 0, count: 256)
                ERR_error_string_n(code, &buffer, buffer.count)
                reasons.append(String(cString: buffer))
            }
        }
        return OpenSSLError(function: function, reasons: reasons)
    }
}

/// The one funnel for OpenSSL calls that return a pointer: clears the error queue first, throws with the
/// queued reasons on NULL.
func openSSLPointer<T>(_ function: String, _ call: () -> T?) throws -> T {
    ERR_clear_error()
    guard let value = call() else { throw OpenSSLError.drain(function) }
    return value
}

/// The funnel for OpenSSL calls that return 1 on success.
func openSSLCheck(_ function: String, _ call: () -> Int32) throws {
    ERR_clear_error()
    guard call() == 1 else { throw OpenSSLError.drain(function) }
}

/// Runs `body` with a read-only memory BIO over `bytes`, freed on every path.
func withReadOnlyMemoryBIO<R>(wrapping bytes: [UInt8], _ body: (OpaquePointer) throws -> R) throws -> R {
    try bytes.withUnsafeBytes { raw in
        let bio = try openSSLPointer("BIO_new_mem_buf") { BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) }
        defer { BIO_free(bio) }
        return try body(bio)
    }
}

/// Runs `body` with a writable memory BIO and returns what it wrote.
func withWritableMemoryBIO(_ body: (OpaquePointer) throws -> Void) throws -> [UInt8] {
    let bio = try openSSLPointer("BIO_new") { BIO_new(BIO_s_mem()) }
    defer { BIO_free(bio) }
    try body(bio)
    var pointer: UnsafeMutablePointer<CChar>?
    let length = apkpatch_BIO_get_mem_data(bio, &pointer)
    guard length > 0, let pointer else { return [] }
    return Array(UnsafeRawBufferPointer(start: pointer, count: length))
}
