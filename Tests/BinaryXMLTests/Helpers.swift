import Foundation
import Testing
import TestSupport

/// Oracle helpers shared by the BinaryXML tests.
enum Oracle {
    /// The bytes of `entry` inside `apk`, read with the real `unzip` (not our own ZIP code).
    static func entry(_ entry: String, in apk: String) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["unzip", "-p", apk, entry]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw FixtureError(message: "unzip -p \(apk) \(entry) failed") }
        return [UInt8](data)
    }

    /// `aapt dump <what> apk [files…]`, failing the test when aapt fails.
    static func aapt(_ arguments: [String]) throws -> String {
        let result = try TestSupport.run("aapt", arguments)
        guard result.succeeded else { throw FixtureError(message: "aapt \(arguments.joined(separator: " ")) failed:\n\(result)") }
        return result.stdout
    }

    /// Makes a copy of `apk` at `destination` with the given entries replaced, using `zip` (the oracle side never
    /// goes through our own ZIP writer).
    static func replacing(_ files: [String: [UInt8]], in apk: String, destination: String) throws {
        let work = try TestSupport.makeTemporaryDirectory("binxml-zip")
        defer { try? FileManager.default.removeItem(at: work) }
        try? FileManager.default.removeItem(atPath: destination)
        try FileManager.default.copyItem(atPath: apk, toPath: destination)
        for (path, bytes) in files { try TestSupport.write(bytes, to: path, in: work) }
        let names = files.keys.sorted()
        // zip reads names from stdin with -@ so thousands of files fit.
        let result = try TestSupport.run("zip", ["-q", "-X", destination, "-@"], currentDirectory: work.path, stdin: names.joined(separator: "\n") + "\n")
        guard result.succeeded else { throw FixtureError(message: "zip failed:\n\(result)") }
    }

    /// The first capture of `pattern` in `text`.
    static func capture(_ pattern: String, in text: String) -> String? {
        guard let regex = try? NSRegularExpression(pattern: pattern),
              let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
              match.numberOfRanges > 1, let range = Range(match.range(at: 1), in: text) else { return nil }
        return String(text[range])
    }
}
