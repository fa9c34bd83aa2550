#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import APKCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `adb reverse`: a port on the device's localhost that leads to the same port on this computer, so an app on
/// the device reaches a development server here as `http://localhost:PORT` (USB or emulator, no network setup).
public struct PortReverse: Sendable, Equatable {
    public let port: Int
    /// `adb -s SERIAL`, when several devices are connected.
    public let serial: String?

    public init(port: Int, serial: String? = nil) throws {
        if let serial, serial.isEmpty || serial.hasPrefix("-") { throw InstallCommandError.invalidSerial(serial) }
        self.port = port
        self.serial = serial
    }

    private var device: [String] { serial.map { ["-s", $0] } ?? [] }
    /// `adb [-s SERIAL] reverse tcp:PORT tcp:PORT` as argv (`"adb"` first).
    public var setUp: [String] { ["adb"] + device + ["reverse", "tcp:\(port)", "tcp:\(port)"] }
    /// `adb [-s SERIAL] reverse --remove tcp:PORT` as argv.
    public var removal: [String] { ["adb"] + device + ["reverse", "--remove", "tcp:\(port)"] }
}

/// `adb reverse` failed.
public struct PortReverseError: Error, CustomStringConvertible, Sendable {
    public let command: [String]
    public let adbMessage: String?
    public let exitStatus: Int32?

    public var description: String {
        var text = "\(ShellWords.join(command)) failed"
        if let adbMessage { text += ": \(adbMessage)" } else if let exitStatus { text += " (exit status \(exitStatus))" }
        return text + ". Check that `adb devices` lists the device (and that only one is connected, or name it with its serial); the app reaches this computer's server only through this port."
    }
}

extension Installer {
    /// Runs `command` (``PortReverse/setUp`` or ``PortReverse/removal``).
    /// - Throws: ``PortReverseError`` when adb is missing, cannot start or fails.
    public func run(_ command: [String]) throws {
        guard let adb = adbPath ?? Self.findADB(environment: environment) else {
            throw PortReverseError(command: command, adbMessage: "adb is not on PATH", exitStatus: nil)
        }
        let result: (output: String, status: Int32)
        do { result = try run(adb: adb, arguments: Array(command.dropFirst())) } catch {
            throw PortReverseError(command: command, adbMessage: "\(error)", exitStatus: nil)
        }
        let lines = result.output.split(whereSeparator: \.isNewline).map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
        if result.status != 0 || lines.contains(where: { $0.lowercased().hasPrefix("error:") }) {
            throw PortReverseError(command: command, adbMessage: lines.last, exitStatus: result.status)
        }
    }
}
