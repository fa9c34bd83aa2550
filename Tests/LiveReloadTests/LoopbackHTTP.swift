import APKCore
import Foundation
import Glibc

/// A minimal HTTP/1.1 client over a loopback socket, for the tests only: it sends the request target exactly as
/// given (URLSession would normalise `/../`, which is what the server must refuse) and reads an event stream
/// as it arrives.
enum LoopbackHTTP {
    struct Response: CustomStringConvertible {
        let status: Int
        /// Header names lowercased.
        let headers: [String: String]
        let body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        var description: String { "HTTP \(status) \(headers)\n\(text)" }
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    static func connect(port: Int, timeoutSeconds: Int = 10) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { close(fd); throw Failure(description: "connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))") }
        return fd
    }

    static func send(_ text: String, to fd: Int32) throws {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send: \(String(cString: strerror(errno)))") }
            sent += n
        }
    }

    /// One request with `Connection: close`; the response read to the end.
    static func request(port: Int, _ target: String, method: String = "GET") throws -> Response {
        let fd = try connect(port: port)
        defer { close(fd) }
        try send("\(method) \(target) HTTP/1.1\r\nHost: localhost:\(port)\r\nConnection: close\r\n\r\n", to: fd)
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 { throw Failure(description: "recv: \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            data += buffer[0..<n]
        }
        guard let end = data.firstRange(of: Array("\r\n\r\n".utf8)) else { throw Failure(description: "no response head in \(String(decoding: data, as: UTF8.self))") }
        let head = String(decoding: data[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        guard let statusLine = head.first, let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else {
            throw Failure(description: "bad status line \(head.first ?? "")")
        }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Response(status: status, headers: headers, body: Array(data[end.upperBound...]))
    }

    /// A subscription to the server-sent-events endpoint, read on a background thread.
    final class EventStream: @unchecked Sendable {
        private let fd: Int32
        private let lock = Lock()
        private var received = ""
        private var isClosed = false

        init(port: Int, path: String = "/__apkpatch/events") throws {
            fd = try LoopbackHTTP.connect(port: port, timeoutSeconds: 1)
            try LoopbackHTTP.send("GET \(path) HTTP/1.1\r\nHost: localhost:\(port)\r\nAccept: text/event-stream\r\n\r\n", to: fd)
            Thread.detachNewThread { [self] in
                // The reader owns the descriptor: it closes it when the stream ends, under the lock `close()` takes.
                defer { lock.withLock { isClosed = true; Glibc.close(fd) } }
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if n < 0 && (errno == EAGAIN || errno == EINTR) { continue }
                    if n <= 0 { return }
                    lock.withLock { received += String(decoding: buffer[0..<n], as: UTF8.self) }
                }
            }
        }

        deinit { close() }

        var text: String { lock.withLock { received } }

        /// Waits up to `seconds` until what arrived contains `needle`.
        func waitFor(_ needle: String, seconds: Double = 15) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if text.contains(needle) { return true }
                Thread.sleep(forTimeInterval: 0.01)
            }
            return false
        }

        func close() {
            lock.withLock { if !isClosed { shutdown(fd, Int32(SHUT_RDWR)) } }
        }
    }
}
