import Dispatch
import Testing
@testable import APKCore
#if canImport(Glibc)
import Glibc
#endif

@Suite struct WorkerPoolTests {
    /// The warm-up gets pool threads running and gives them back: work queued afterwards runs as usual. (How
    /// many check in depends on what else the test process runs on the pool, so only "at least one".)
    @Test func startsThreadsAndLeavesThePoolUsable() {
        let count = min(2, ProcessorCount.active)
        let checkedIn = WorkerPool.warmUp(count: count)
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
