#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps the secrets a command holds out of core files.
public enum CoreDumps {
    /// Turns core dumps off for the rest of the process and for the programs it starts (`RLIMIT_CORE`, soft and
    /// hard, 0). A command that holds a keystore password and a private key must not write them to a core file if
    /// it crashes or is sent SIGQUIT or SIGABRT; systemd-coredump and apport honour the limit too. Call it before
    /// any secret is read.
    public static func disable() {
        var none = rlimit(rlim_cur: 0, rlim_max: 0)
        #if canImport(Glibc)
        _ = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &none)
        #else
        _ = setrlimit(RLIMIT_CORE, &none)
        #endif
    }
}
