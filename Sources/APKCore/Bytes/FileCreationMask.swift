#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's file mode creation mask (umask), for files whose mode is set with `fchmod` (which ignores it):
/// an output gets the mode `open(2)` would have given it, as zipalign's and apksigner's outputs do, so a user's
/// `umask 077` keeps it private and `umask 002` group-writable.
public enum FileCreationMask {
    /// The mask, read once: Linux's `/proc/self/status` (`Umask:`), which reads it without changing it; without
    /// `/proc`, `umask(2)` set and set back at first use (a file another thread creates in between gets 022).
    public static let current: mode_t = {
        if let mask = fromProcStatus() { return mask }
        let mask = umask(0o022)
        umask(mask)
        return mask
    }()

    /// `mode` narrowed by the mask.
    public static func applied(to mode: mode_t) -> mode_t { mode & ~current }

    private static func fromProcStatus() -> mode_t? {
        let descriptor = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return parseUmask(status: bytes[0..<count])
    }

    /// The `Umask:` line's octal value in the text of `/proc/self/status` (its second line), read as bytes:
    /// nil without that line, or when what follows the key, between blanks, is not an octal number.
    package static func parseUmask(status: ArraySlice<UInt8>) -> mode_t? {
        let key = Array("Umask:".utf8)
        var lineStart = status.startIndex
        while lineStart < status.endIndex {
            let lineEnd = status[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? status.endIndex
            if status[lineStart..<lineEnd].starts(with: key) {
                let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") }
                var digits = status[(lineStart + key.count)..<lineEnd]
                while let first = digits.first, isBlank(first) { digits = digits.dropFirst() }
                while let last = digits.last, isBlank(last) { digits = digits.dropLast() }
                guard !digits.isEmpty, digits.count <= 11 else { return nil }
                var value: UInt64 = 0
                for digit in digits {
                    guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "7") else { return nil }
                    value = value << 3 | UInt64(digit - UInt8(ascii: "0"))
                }
                return mode_t(exactly: value)
            }
            lineStart = lineEnd + 1
        }
        return nil
    }
}
