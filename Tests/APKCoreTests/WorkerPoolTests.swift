import Dispatch
import Testing
@testable import APKCore
#if canImport(Glibc)
import Glibc
#endif

@Suite(.removesTemporaryDirectories) struct WorkerPoolTests {
    /// The warm-up gets pool threads running and gives them back: work queued afterwards runs as usual. How
    /// many check in within its 20 ms depends on what else the test process runs on the pool: tests running in
    /// parallel can hold every pool thread for a while (CI once saw 0 check in), so it is retried until the pool
    /// has a free thread, for up to ~30 s, and at least one must then check in.
    @Test func startsThreadsAndLeavesThePoolUsable() {
        let count = min(2, ProcessorCount.active)
        var checkedIn = 0
        for _ in 0..<250 {
            checkedIn = WorkerPool.warmUp(count: count)
            #expect((0...count).contains(checkedIn))
            if checkedIn > 0 { break }
            usleep(100_000)
        }
        #expect((1...count).contains(checkedIn))
        let ran = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { ran.signal() }
        #expect(ran.wait(timeout: .now() + .seconds(5)) == .success)
    }

    @Test func nothingToStart() {
        #expect(WorkerPool.warmUp(count: 0) == 0)
    }

    @Test func processorCountIsPositive() {
        #expect(ProcessorCount.active >= 1)
        #expect(ProcessorCount.active == Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }
}
