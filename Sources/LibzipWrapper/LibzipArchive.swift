internal import CLibzip
import Glibc

/// A libzip failure: the function, libzip's error code and its words. ``problem`` says what it means for the
/// entry read, in words a user can act on; ``description`` is libzip's own, for a log.
public struct LibzipError: Error, CustomStringConvertible {
    public let function: String
    /// libzip's `ZIP_ER_*` code (0 when the failure is ours, as a size limit).
    public let code: Int32
    /// The `errno` behind a system error (`ZIP_ER_READ`, `ZIP_ER_SEEK`), else 0.
    public let systemCode: Int32
    public let message: String
    public var description: String { "\(function): \(message)" }

    init(function: String, code: Int32 = 0, systemCode: Int32 = 0, message: String) {
        self.function = function
        self.code = code
        self.systemCode = systemCode
        self.message = message
    }

    /// What went wrong reading an entry, by kind.
    public enum Problem: Sendable, Equatable {
        /// The data read does not have the CRC-32 the archive declares (`ZIP_ER_CRC`).
        case crcMismatch
        /// The compressed data does not inflate (`ZIP_ER_COMPRESSED_DATA`, `ZIP_ER_ZLIB`).
        case compressedDataInvalid
        /// The data ends before its declared size (`ZIP_ER_EOF`).
        case truncated
        /// More data than the declared size (the limit passed to `read`).
        case longerThanDeclared(limit: Int64)
        /// The entry is encrypted (`ZIP_ER_ENCRNOTSUPP`, `ZIP_ER_NOPASSWD`, `ZIP_ER_WRONGPASSWD`).
        case encrypted
        /// A compression method libzip cannot read (`ZIP_ER_COMPNOTSUPP`).
        case compressionNotSupported
        /// The local header disagrees with the central directory (`ZIP_ER_INCONS`).
        case inconsistent
        /// Reading the file failed (`ZIP_ER_READ`, `ZIP_ER_SEEK`, `ZIP_ER_TELL`), with errno's words.
        case readFailed(String)
        /// Anything else, in libzip's words.
        case other(String)
    }

    /// What the failure means, by kind.
    public var problem: Problem {
        switch code {
        case ZIP_ER_CRC: return .crcMismatch
        case ZIP_ER_COMPRESSED_DATA, ZIP_ER_ZLIB: return .compressedDataInvalid
        case ZIP_ER_EOF: return .truncated
        case ZIP_ER_ENCRNOTSUPP, ZIP_ER_NOPASSWD, ZIP_ER_WRONGPASSWD: return .encrypted
        case ZIP_ER_COMPNOTSUPP: return .compressionNotSupported
        case ZIP_ER_INCONS: return .inconsistent
        case ZIP_ER_READ, ZIP_ER_SEEK, ZIP_ER_TELL:
            return .readFailed(systemCode != 0 ? String(cString: strerror(systemCode)) : message)
        case 0 where limit != nil: return .longerThanDeclared(limit: limit!)
        default: return .other(message)
        }
    }

    /// The declared size a read went past (our own failure, code 0).
    var limit: Int64?
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
            throw LibzipError(function: "zip_open", code: code, message: message(zip.error_strerror(&error)))
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
            let error = zip.get_error(pointer)
            throw LibzipError(function: "zip_fopen_index", code: zip.error_code_zip(error), systemCode: zip.error_code_system(error),
                              message: message(zip.strerror(pointer)))
        }
        defer { _ = zip.fclose(file) }
        let chunk = 256 << 10
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        while true {
            let n = zip.fread(file, buffer.baseAddress, zip_uint64_t(chunk))
            if n < 0 {
                let error = zip.file_get_error(file)
                throw LibzipError(function: "zip_fread", code: zip.error_code_zip(error), systemCode: zip.error_code_system(error),
                                  message: message(zip.file_strerror(file)))
            }
            if n == 0 { break }
            total += Int64(n)
            if total > limit {
                var error = LibzipError(function: "zip_fread", message: "entry inflates beyond its declared size of \(limit) bytes")
                error.limit = limit
                throw error
            }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<Int(n)]))
        }
    }
}

/// libzip's message (its error strings are never null, but the loaded function's type does not say so).
private func message(_ text: UnsafePointer<CChar>?) -> String { text.map { String(cString: $0) } ?? "unknown error" }
