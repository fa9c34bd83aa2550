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
        for line in String(decoding: bytes[0..<count], as: UTF8.self).split(separator: "\n") where line.hasPrefix("Umask:") {
            return mode_t(line.dropFirst("Umask:".count).trimmingWhitespace(), radix: 8)
        }
        return nil
    }
}
