#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Moments a test needs to catch a command at, to look at its files there and `kill -9` it: the command stops
/// itself (SIGSTOP) at the point that `APKPATCH_TEST_STOP_AT` names, where a signal sent from outside would land
/// at a moment left to the scheduler. Unset (always, outside the tests), a point costs one comparison.
public enum TestStopPoint: String, Sendable {
    /// A signed APK is in place at its destination, its v4 signature (`<apk>.idsig`) not yet written or removed.
    case beforeV4Signature = "before-v4-signature"
    /// A set's APKs are signed into its staging directory, the output not yet written.
    case setStaged = "set-staged"

    private static let requested: String? = getenv("APKPATCH_TEST_STOP_AT").map { String(cString: $0) }

    /// Stops the process here when the test asked for this point.
    public func reach() {
        if Self.requested == rawValue { raise(SIGSTOP) }
    }
}
