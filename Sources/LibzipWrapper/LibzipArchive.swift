internal import CLibzip
import Glibc

/// A libzip failure, in libzip's words.
public struct LibzipError: Error, CustomStringConvertible {
    public let function: String
    public let message: String
    public var description: String { "\(function): \(message)" }
}

/// A read-only libzip archive (`zip_open` with `ZIP_RDONLY | ZIP_CHECKCONS`). `deinit` only discards:
/// nothing is ever written through this handle.
public final class LibzipArchive {
    private let pointer: OpaquePointer

    /// Opens `path`; libzip's consistency check (`ZIP_CHECKCONS`) rejects archives whose local headers and
    /// central directory disagree, on top of our own checks.
    public init(path: String) throws {
        var code: Int32 = 0
        guard let archive = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &code) else {
            var error = zip_error_t()
            zip_error_init_with_code(&error, code)
            defer { zip_error_fini(&error) }
            throw LibzipError(function: "zip_open", message: String(cString: zip_error_strerror(&error)))
        }
        pointer = archive
    }

    deinit { zip_discard(pointer) }

    public var entryCount: Int { Int(zip_get_num_entries(pointer, 0)) }

    /// The name libzip gives entry `index`, as raw bytes.
    public func name(at index: Int) -> [UInt8]? {
        guard let name = zip_get_name(pointer, zip_uint64_t(index), zip_flags_t(ZIP_FL_ENC_RAW)) else { return nil }
        return Array(UnsafeBufferPointer(start: name, count: strlen(name)).map { UInt8(bitPattern: $0) })
    }

    /// Streams the uncompressed content of entry `index` to `body` in chunks. libzip checks the CRC at the end;
    /// reading stops with an error past `limit` bytes, so a lying size cannot fill the disk.
    public func read(entryAt index: Int, limit: Int64, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard let file = zip_fopen_index(pointer, zip_uint64_t(index), 0) else {
            throw LibzipError(function: "zip_fopen_index", message: String(cString: zip_strerror(pointer)))
        }
        defer { zip_fclose(file) }
        let chunk = 256 << 10
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        while true {
            let n = zip_fread(file, buffer.baseAddress, zip_uint64_t(chunk))
            if n < 0 { throw LibzipError(function: "zip_fread", message: String(cString: zip_file_strerror(file))) }
            if n == 0 { break }
            total += Int64(n)
            if total > limit {
                throw LibzipError(function: "zip_fread", message: "entry inflates beyond its declared size of \(limit) bytes")
            }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<Int(n)]))
        }
    }
}
