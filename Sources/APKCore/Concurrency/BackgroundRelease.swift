#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// Frees large values on another thread, after the work that made them has returned.
///
/// Signing an APK of thousands of entries leaves tens of thousands of small objects (entries, their
/// digests and records) to free when it returns, on the thread that waits for the result, while the other
/// cores have nothing to do. A function that makes them `hold`s them while it works and calls
/// `releaseHeld()` once the frames that used them are gone: the last references are then the held ones,
/// dropped on a queue. The process's `shared` one is waited for at exit, so nothing is freed while the
/// process tears down (OpenSSL's exit handlers free the tables a key's deinit uses).
public final class BackgroundRelease: @unchecked Sendable {
    // @unchecked Sendable: `held` and `isEnabled` are read and written under `lock`.
    /// The one the signer uses; off until the `apkpatch` executable turns it on (`isEnabled`): a library caller
    /// gets its values freed where they were used.
    public static let shared = BackgroundRelease(waitsAtExit: true)

    private let lock = Lock()
    private var enabled = false
    private var held: [Any] = []
    private let group = DispatchGroup()
    private let queue = DispatchQueue(label: "apkpatch.background-release")
    private let waitsAtExit: Bool
    private var exitHookInstalled = false

    public init() { waitsAtExit = false }
    private init(waitsAtExit: Bool) { self.waitsAtExit = waitsAtExit }

    /// Off: `hold` keeps nothing.
    public var isEnabled: Bool {
        get { lock.withLock { enabled } }
        set { lock.withLock { enabled = newValue } }
    }

    /// The process ends once the work that holds values returns (one APK signed from the command line), and
    /// ends with `_exit`: what is held then stays until the exit, which takes back the whole address space at
    /// once, instead of being freed object by object on a core the rest of the command could use.
    public var leavesToExit: Bool {
        get { lock.withLock { leaves } }
        set { lock.withLock { leaves = newValue } }
    }
    private var leaves = false

    /// Keeps a reference to `value` until the next `releaseHeld()` (nothing when not enabled).
    public func hold(_ value: Any) {
        lock.withLock { if enabled { held.append(value) } }
    }

    /// Drops the values held so far, on the queue.
    public func releaseHeld() {
        let pile = Pile(lock.withLock { () -> [Any] in
            if leaves { return [] }
            defer { held = [] }
            if !held.isEmpty && waitsAtExit && !exitHookInstalled {
                exitHookInstalled = true
                atexit { BackgroundRelease.shared.waitForAll() }
            }
            return held
        })
        guard !pile.isEmpty else { return }
        queue.async(group: group) { pile.drop() }
    }

    /// Waits until every release started so far is done.
    public func waitForAll() { group.wait() }

    public static func hold(_ value: Any) { shared.hold(value) }
    public static func releaseHeld() { shared.releaseHeld() }

    /// The values handed to the queue: `drop` frees them there, whoever still refers to the pile.
    private final class Pile: @unchecked Sendable {
        // @unchecked Sendable: `values` is set here and then touched only on the queue.
        private var values: [Any]
        init(_ values: [Any]) { self.values = values }
        var isEmpty: Bool { values.isEmpty }
        func drop() { values = [] }
    }
}
