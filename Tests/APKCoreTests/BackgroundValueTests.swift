import Dispatch
import Testing
@testable import APKCore

/// `BackgroundValue(offered:)`: the work runs once, on a free worker or on the thread that asks for it, and a pool
/// item that asks never waits for work still in the queue (a signer or verifier running as one of a set's members
/// offers the resource table's check and asks for it; a plain `BackgroundValue` there waited until the pool grew).
struct BackgroundValueTests {
    @Test func offeredWorkRunsOnce() throws {
        let runs = Parallel.Slots<Int>(count: 200, repeating: 0)
        let values = (0..<200).map { index in BackgroundValue<Int>(offered: { runs[index] += 1; return index * 3 }) }
        for (index, value) in values.enumerated() {
            if index % 2 == 0 { _ = value.wait(until: .now() + .microseconds(50)) }  // some taken by workers first
            #expect(try value.get() == index * 3)
        }
        BackgroundValue<Void>.waitForAll()
        #expect(runs.values == [Int](repeating: 1, count: 200))
    }

    @Test func offeredWorkThrowsToTheCaller() {
        struct Failed: Error {}
        let value = BackgroundValue<Int>(offered: { throw Failed() })
        #expect(throws: Failed.self) { try value.get() }
        #expect(throws: Failed.self) { try value.throwIfFailed() }
    }

    /// Every pool thread (and the caller) busy with items that each ask for their own offered value: each item runs
    /// its value itself if no worker is free, so the loop ends in the time of its work. Items that waited for queued
    /// work instead would hold every worker until the pool grew (about a second a step on Linux).
    @Test func poolItemsAskingForOfferedWorkDoNotStall() throws {
        let items = 16 * ProcessorCount.active
        let start = DispatchTime.now()
        let results = try Parallel.map(items) { index -> Int in
            let value = BackgroundValue<Int>(offered: {
                var sum = 0
                for step in 0..<20_000 { sum &+= step &* index }
                return sum
            })
            return try value.get()
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        #expect(results.count == items)
        #expect(elapsed < 0.9, "\(items) items took \(elapsed) s")
    }
}
