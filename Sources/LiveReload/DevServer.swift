import APKCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOHTTP1
import NIOPosix

/// The development server of `watch --live`: HTTP/1.1 on the loopback interface only (the device reaches it
/// through `adb reverse`), serving `WebRootContent` with the reload script added to HTML pages, and the
/// server-sent-events stream (`/__apkpatch/events`) that tells open pages to reload.
///
/// Every response says `Cache-Control: no-store`: the WebView must fetch a saved file again, never keep an
/// older copy. Files are read on a thread pool, off the event loop, so a large asset never holds up an event.
public final class DevServer: @unchecked Sendable {
    // @unchecked Sendable: `channel` and `subscribers` are behind `lock`; NIO's group and pool are thread-safe.
    public let content: WebRootContent
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let threadPool = NIOThreadPool(numberOfThreads: 1)
    private let lock = Lock()
    private var channel: Channel?
    private var subscribers: [ObjectIdentifier: Channel] = [:]
    private var isShutDown = false

    public init(content: WebRootContent) {
        self.content = content
        threadPool.start()
    }

    deinit { shutDown() }

    /// Listens on `host` (loopback: the pages and the files behind them are nobody else's business) and
    /// `port` (0 picks a free one). Returns the port listened on.
    /// - Throws: `DevServerError.portInUse` when another program has the port.
    @discardableResult
    public func start(host: String = "127.0.0.1", port: Int) throws -> Int {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(DevServerHandler(server: self))
                }
            }
        let listening: Channel
        do {
            listening = try bootstrap.bind(host: host, port: port).wait()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw DevServerError.portInUse(host: host, port: port)
        } catch {
            throw DevServerError.cannotListen(host: host, port: port, reason: "\(error)")
        }
        lock.withLock { channel = listening }
        return listening.localAddress?.port ?? port
    }

    /// How many pages are listening for reloads.
    public var subscriberCount: Int { lock.withLock { subscribers.count } }

    /// Sends `event` to every listening page and waits until each write reached its socket (or failed).
    /// Returns how many pages it reached.
    @discardableResult
    public func broadcast(_ event: ReloadEvent) -> Int {
        let channels = lock.withLock { Array(subscribers.values) }
        guard !channels.isEmpty else { return 0 }
        let message = event.serverSentEvent
        let writes = channels.map { channel in
            channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(channel.allocator.buffer(string: message))))
        }
        let results = (try? EventLoopFuture.whenAllComplete(writes, on: group.next()).wait()) ?? []
        return results.filter { if case .success = $0 { return true } else { return false } }.count
    }

    /// Stops listening and closes every connection (idempotent).
    public func shutDown() {
        let (listening, open, alreadyDown) = lock.withLock { () -> (Channel?, [Channel], Bool) in
            defer { isShutDown = true; channel = nil; subscribers = [:] }
            return (channel, Array(subscribers.values), isShutDown)
        }
        if alreadyDown { return }
        try? listening?.close().wait()
        for channel in open { try? channel.close().wait() }
        try? group.syncShutdownGracefully()
        try? threadPool.syncShutdownGracefully()
    }

    func addSubscriber(_ channel: Channel) { lock.withLock { subscribers[ObjectIdentifier(channel)] = channel } }
    func removeSubscriber(_ channel: Channel) { lock.withLock { subscribers[ObjectIdentifier(channel)] = nil } }

    /// Reads a file on the pool; the future completes on `eventLoop`.
    func read(_ relative: String, on eventLoop: EventLoop) -> EventLoopFuture<WebRootContent.File?> {
        let content = self.content
        return threadPool.runIfActive(eventLoop: eventLoop) { try content.file(relative) }
    }
}

/// One reload, as sent on the event stream (`event: reload`, JSON data).
public struct ReloadEvent: Sendable, Equatable, Codable {
    /// The saved files, relative to the web root (`js/app.js`), which is how pages name them.
    public var changed: [String]
    /// Whether only stylesheets changed: the page may swap them without reloading.
    public var stylesheetsOnly: Bool

    public init(changed: [String]) {
        self.changed = changed
        stylesheetsOnly = !changed.isEmpty && changed.allSatisfy { $0.lowercased().hasSuffix(".css") }
    }

    var serverSentEvent: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return "event: reload\ndata: \(json)\n\n"
    }
}

/// Why the server could not start.
public enum DevServerError: Error, CustomStringConvertible, Equatable {
    case portInUse(host: String, port: Int)
    case cannotListen(host: String, port: Int, reason: String)

    public var description: String {
        switch self {
        case .portInUse(let host, let port):
            return "port \(port) on \(host) is already in use (another live-reload session or development server?); stop that program or choose another port"
        case .cannotListen(let host, let port, let reason):
            return "cannot listen on \(host):\(port): \(reason)"
        }
    }
}

/// One connection: answers GET and HEAD for files and the reload script, and keeps an event-stream request
/// open as a subscriber.
final class DevServerHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let server: DevServer
    private var request: HTTPRequestHead?
    private var isEventStream = false

    init(server: DevServer) { self.server = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): request = head
        case .body: break
        case .end:
            guard let head = request else { return }
            request = nil
            respond(to: head, context: context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if isEventStream { server.removeSubscriber(context.channel) }
        context.fireChannelInactive()
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        guard head.method == .GET || head.method == .HEAD else {
            send(.methodNotAllowed, text: "only GET and HEAD\n", head: head, context: context, extra: [("Allow", "GET, HEAD")])
            return
        }
        switch WebRequest(target: head.uri) {
        case .refused(let reason):
            send(.forbidden, text: "refused: \(reason)\n", head: head, context: context)
        case .reloadScript:
            send(.ok, body: Array(ReloadScript.javascript.utf8), type: "text/javascript; charset=utf-8", head: head, context: context)
        case .events:
            subscribe(head: head, context: context)
        case .file(let relative):
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            server.read(relative, on: context.eventLoop).whenComplete { result in
                let (handler, context) = bound.value
                switch result {
                case .success(let file?):
                    let type = ContentType.forName(relative)
                    let body = ContentType.isHTML(type) ? ReloadScript.injecting(into: file.bytes) : file.bytes
                    handler.send(.ok, body: body, type: type, head: head, context: context)
                case .success(nil):
                    handler.send(.notFound, text: "not found: \(relative) is neither in the patch directory nor in the APK's web root\n",
                                 head: head, context: context)
                case .failure(let error):
                    handler.send(.internalServerError, text: "\(error)\n", head: head, context: context)
                }
            }
        }
    }

    private func subscribe(head: HTTPRequestHead, context: ChannelHandlerContext) {
        var headers = HTTPHeaders([("Content-Type", "text/event-stream"), ("Cache-Control", "no-store")])
        headers.add(name: "Connection", value: "keep-alive")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))), promise: nil)
        guard head.method == .GET else {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            return
        }
        isEventStream = true
        // A comment line opens the stream at once (clients see it connected); `retry` makes a page reconnect
        // within a second when the session restarts.
        let opening = context.channel.allocator.buffer(string: ": apkpatch live reload\nretry: 1000\n\n")
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(opening))), promise: nil)
        server.addSubscriber(context.channel)
    }

    private func send(_ status: HTTPResponseStatus, text: String, head: HTTPRequestHead, context: ChannelHandlerContext,
                      extra: [(String, String)] = []) {
        send(status, body: Array(text.utf8), type: "text/plain; charset=utf-8", head: head, context: context, extra: extra)
    }

    private func send(_ status: HTTPResponseStatus, body: [UInt8], type: String, head: HTTPRequestHead, context: ChannelHandlerContext,
                      extra: [(String, String)] = []) {
        var headers = HTTPHeaders([("Content-Type", type), ("Content-Length", String(body.count)), ("Cache-Control", "no-store")])
        for (name, value) in extra { headers.add(name: name, value: value) }
        let keepAlive = head.isKeepAlive
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if head.method != .HEAD {
            var buffer = context.channel.allocator.buffer(capacity: body.count)
            buffer.writeBytes(body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
