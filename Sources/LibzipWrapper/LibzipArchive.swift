internal import CLibzip
import Glibc

/// A libzip failure, in libzip's words.
public struct LibzipError: Error, CustomStringConvertible {
    public let function: String
    public let message: String
    public var description: String { "\(function): \(message)" }
}

/// libzip's functions, loaded on first use (see CLibzip's shim.h).
private enum Libzip {
    static let loaded: Result<apkpatch_libzip, LibzipError> = {
        var table = apkpatch_libzip()
        if let failure = apkpatch_libzip_load(&table) {
            return .failure(LibzipError(function: "dlopen", message: "\(String(cString: failure)) (install libzip4: apt-get install libzip4)"))
        }
        return .success(table)
    }()
}

/// A read-only libzip archive (`zip_open` with `ZIP_RDONLY | ZIP_CHECKCONS`). `deinit` only discards:
/// nothing is ever written through this handle.
public final class LibzipArchive {
    private let pointer: OpaquePointer
    private let zip: apkpatch_libzip

    /// Opens `path`; libzip's consistency check (`ZIP_CHECKCONS`) rejects archives whose local headers and
    /// central directory disagree, on top of our own checks.
    public init(path: String) throws {
        let zip = try Libzip.loaded.get()
        var code: Int32 = 0
        guard let archive = zip.open(path, ZIP_RDONLY | ZIP_CHECKCONS, &code) else {
            var error = zip_error_t()
            zip.error_init_with_code(&error, code)
            defer { zip.error_fini(&error) }
            throw LibzipError(function: "zip_open", message: message(zip.error_strerror(&error)))
        }
        self.zip = zip
        pointer = archive
    }

    deinit { zip.discard(pointer) }

    public var entryCount: Int { Int(zip.get_num_entries(pointer, 0)) }

    /// The name libzip gives entry `index`, as raw bytes.
    public func name(at index: Int) -> [UInt8]? {
        guard let name = zip.get_name(pointer, zip_uint64_t(index), zip_flags_t(ZIP_FL_ENC_RAW)) else { return nil }
        return Array(UnsafeBufferPointer(start: name, count: strlen(name)).map { UInt8(bitPattern: $0) })
    }

    /// Streams the uncompressed content of entry `index` to `body` in chunks. libzip checks the CRC at the end;
    /// reading stops with an error past `limit` bytes, so a lying size cannot fill the disk.
    public func read(entryAt index: Int, limit: Int64, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard let file = zip.fopen_index(pointer, zip_uint64_t(index), 0) else {
            throw LibzipError(function: "zip_fopen_index", message: message(zip.strerror(pointer)))
        }
        defer { _ = zip.fclose(file) }
        let chunk = 256 << 10
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        while true {
            let n = zip.fread(file, buffer.baseAddress, zip_uint64_t(chunk))
            if n < 0 { throw LibzipError(function: "zip_fread", message: message(zip.file_strerror(file))) }
            if n == 0 { break }
            total += Int64(n)
            if total > limit {
                throw LibzipError(function: "zip_fread", message: "entry inflates beyond its declared size of \(limit) bytes")
            }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<Int(n)]))
        }
    }
}

/// libzip's message (its error strings are never null, but the loaded function's type does not say so).
private func message(_ text: UnsafePointer<CChar>?) -> String { text.map { String(cString: $0) } ?? "unknown error" }
