#if canImport(Glibc)
import Glibc
#if canImport(CLinux)
import CLinux
#endif
#endif

/// Turns a bus error while reading a mapped input into a clean failure.
///
/// Inputs are read through `mmap` (`MappedFile`): if another program truncates the APK while apkpatch reads
/// it (a build rewriting it in place, say), the next read of a page past the new end raises SIGBUS, which
/// would kill the process and leave its half-written temporary output behind. With the guard installed
/// (the `apkpatch` executable does so at start), the process instead removes every registered temporary
/// output, prints what happened and exits 1. A library caller decides about its own signal handlers, so
/// nothing is installed by default; registration is cheap and harmless without the handler.
public enum BusErrorGuard {
    #if canImport(CLinux)
    /// The registered paths, one C string pointer per slot (null when free), read by the signal handler.
    nonisolated(unsafe) static let slots: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> = {
        let slots = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: Int(APKPATCH_OUTPUT_SLOTS))
        slots.initialize(repeating: nil, count: Int(APKPATCH_OUTPUT_SLOTS))
        return slots
    }()
    #endif

    /// Installs the SIGBUS handler for this process.
    public static func install() {
        #if canImport(CLinux)
        _ = slots  // initialized here, not in the handler
        _ = apkpatch_install_bus_error_handler { _ in apkpatch_bus_error_exit(BusErrorGuard.slots) }
        #endif
    }

    /// A temporary output the handler removes; `end()` it once the file is renamed or removed.
    public struct Registration {
        fileprivate let slot: Int32

        /// Stops removing the file on a bus error.
        public func end() {
            #if canImport(CLinux)
            if let path = apkpatch_unregister_output_path(BusErrorGuard.slots, slot) { free(path) }
            #endif
        }
    }

    /// The paths a bus error would remove now (for tests).
    static var registeredPaths: [String] {
        #if canImport(CLinux)
        return (0..<Int(APKPATCH_OUTPUT_SLOTS)).compactMap { slots[$0].map { String(cString: $0) } }
        #else
        return []
        #endif
    }

    /// Registers `path` for removal if a bus error ends the process before `end()`.
    public static func register(_ path: String) -> Registration {
        #if canImport(CLinux)
        guard let copy = strdup(path) else { return Registration(slot: -1) }
        let slot = apkpatch_register_output_path(slots, copy)
        if slot < 0 { free(copy) }
        return Registration(slot: slot)
        #else
        return Registration(slot: -1)
        #endif
    }
}
