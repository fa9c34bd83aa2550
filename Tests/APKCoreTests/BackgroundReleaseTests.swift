import Testing
@testable import APKCore
#if canImport(Glibc)
import Glibc
#endif

@Suite struct BackgroundReleaseTests {
    /// Records the thread its deinit runs on.
    final class Tracked: @unchecked Sendable {
        let freed: Freed
        init(_ freed: Freed) { self.freed = freed }
        deinit { freed.record(pthread_self()) }
    }

    final class Freed: @unchecked Sendable {
        private let lock = Lock()
        private var thread: pthread_t?
        func record(_ thread: pthread_t) { lock.withLock { self.thread = thread } }
        /// The thread the value was freed on; nil while it lives.
        var on: pthread_t? { lock.withLock { thread } }
    }

    /// Hands `release` a new value and drops every other reference to it.
    static func holdNew(in release: BackgroundRelease) -> Freed {
        let freed = Freed()
        release.hold(Tracked(freed))
        return freed
    }

    @Test func heldValuesAreFreedOnTheQueueAfterRelease() throws {
        let release = BackgroundRelease()
        release.isEnabled = true
        let freed = Self.holdNew(in: release)
        #expect(freed.on == nil)  // only the held reference is left, and it keeps the value
        release.releaseHeld()
        release.waitForAll()
        let thread = try #require(freed.on)
        #expect(pthread_equal(thread, pthread_self()) == 0)
    }

    /// One APK from the command line: what is held stays until the process exits, nothing is freed meanwhile.
    @Test func leftToTheExitIsNeverFreed() throws {
        let release = BackgroundRelease()
        release.isEnabled = true
        release.leavesToExit = true
        let freed = Self.holdNew(in: release)
        release.releaseHeld()
        release.waitForAll()
        #expect(freed.on == nil)
    }

    @Test func offHoldsNothing() throws {
        let release = BackgroundRelease()
        let freed = Self.holdNew(in: release)
        let thread = try #require(freed.on)
        #expect(pthread_equal(thread, pthread_self()) != 0)
        release.releaseHeld()
        release.waitForAll()
    }
}
