import Dispatch

/// A value computed on another thread (a keystore being decrypted while the APK is read); `get()` waits for it.
public final class BackgroundValue<T>: @unchecked Sendable {
    // One group for every type: a generic class's static stored properties are not allowed, so it lives in
    // `BackgroundWork`.
    private static var running: DispatchGroup { BackgroundWork.running }

    // @unchecked Sendable: `result` is written once before `done` is signalled and read only after waiting
    // (or, in `ready`, after `done` says it was written); `offered` is taken under `finished`, by one thread.
    private var result: Result<T, any Error>?
    private let done = DispatchSemaphore(value: 0)
    private let finished = Lock()
    private var isFinished = false
    /// The work of `init(offered:)` until a thread takes it to run it.
    private var offered: (@Sendable () throws -> T)?

    /// Starts `body` on a global queue (`qos`: `.utility` for work nobody waits on soon, such as copies and
    /// read-ahead ahead of a later build).
    public init(qos: DispatchQoS.QoSClass = .default, _ body: @escaping @Sendable () throws -> T) {
        Self.running.enter()
        DispatchQueue.global(qos: qos).async { [self] in
            CoreBalance.enter()
            let value = Result { try body() }
            CoreBalance.leave()
            finished.withLock {
                result = value
                isFinished = true
            }
            done.signal()
            Self.running.leave()
        }
        CoreBalance.letWokenWorkerStart()
    }

    /// Work for whichever thread comes first: a worker thread of the global queue, if one is free before the value
    /// is asked for, or else the thread that asks (`get()` and `wait()` run `body` there). So a caller that is
    /// itself a work item of the pool (a set's member, verified or signed on a worker) never waits for work still
    /// in the queue, which with every worker busy would wait until the pool grows; it waits only for a `body`
    /// another thread is running already. `body` must not wait for other work.
    public init(offered body: @escaping @Sendable () throws -> T) {
        offered = body
        Self.running.enter()
        DispatchQueue.global().async { [self] in
            runOffered()
            Self.running.leave()
        }
        CoreBalance.letWokenWorkerStart()
    }

    /// Runs the offered work here unless another thread has taken it (or there is none).
    private func runOffered() {
        let body: (@Sendable () throws -> T)? = finished.withLock {
            defer { offered = nil }
            return offered
        }
        guard let body else { return }
        CoreBalance.enter()
        let value = Result { try body() }
        CoreBalance.leave()
        finished.withLock {
            result = value
            isFinished = true
        }
        done.signal()
    }

    /// Waits until every value started so far (of any type) is computed. A process that exits on an error
    /// calls this first: `exit` runs OpenSSL's exit handlers, which free the tables a key derivation or
    /// signature still running on another thread uses (a crash at exit), and an error can come before the
    /// code that would have waited for its value (a refused option while the keystore is still decrypting).
    public static func waitForAll() { running.wait() }

    /// A value (or failure) computed already, on the caller's thread: a caller with nothing else to do
    /// leaves the worker threads free for what the computation itself spreads over them.
    public init(result: Result<T, any Error>) {
        self.result = result
        isFinished = true
        done.signal()
    }

    /// A value that is already there.
    public init(ready value: T) {
        result = .success(value)
        isFinished = true
        done.signal()
    }

    public func get() throws -> T {
        wait()
        return try result!.get()
    }

    /// The value if the work has succeeded already; nil while it runs (or if it failed: `get()` throws then).
    public var ready: T? {
        finished.withLock { isFinished ? try? result?.get() : nil }
    }

    /// Throws what the work threw, if it has failed already; returns at once otherwise (for long work that
    /// should stop early rather than finish only to report a wrong password).
    public func throwIfFailed() throws {
        let failure: (any Error)? = finished.withLock {
            guard isFinished, case .failure(let error)? = result else { return nil }
            return error
        }
        if let failure { throw failure }
    }

    /// Waits for the work to end. A caller that fails before it needs the value must still wait: the
    /// process exits on the error, and OpenSSL's exit handlers free what a key derivation still uses.
    public func wait() {
        runOffered()
        CoreBalance.waiting { done.wait() }
        done.signal()
    }

    /// Waits for the work to end, but not past `deadline`; whether it ended. Offered work not yet taken is left
    /// to a worker thread.
    @discardableResult
    public func wait(until deadline: DispatchTime) -> Bool {
        guard CoreBalance.waiting({ done.wait(timeout: deadline) }) == .success else { return false }
        done.signal()
        return true
    }
}

/// The values started by `BackgroundValue` and not yet computed (see `BackgroundValue.waitForAll`).
enum BackgroundWork {
    static let running = DispatchGroup()
}
