import APKCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Printing for the commands: results on stdout, diagnostics on stderr.
enum FileHandleOutput {
    static func standardError(_ text: String) {
        writeAll(2, text.hasSuffix("\n") ? text : text + "\n")
    }

    /// JSON for `--json`: sorted keys so field order is stable.
    static func json<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

/// Human-readable byte counts.
func formatBytes(_ count: Int64) -> String {
    let units = ["B", "KiB", "MiB", "GiB"]
    var value = Double(count)
    var unit = 0
    while value >= 1024 && unit < units.count - 1 { value /= 1024; unit += 1 }
    return unit == 0 ? "\(count) B" : "\(fixed(value, digits: 1)) \(units[unit])"
}

/// `value` with `digits` decimals, rounded half away from zero (printf's `%.Nf` for the values we print).
func fixed(_ value: Double, digits: Int) -> String {
    guard value.isFinite else { return "\(value)" }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded(.toNearestOrAwayFromZero)
    guard scaled < 9e18 else { return "\(value)" }
    let whole = Int64(scaled)
    let sign = value < 0 && whole != 0 ? "-" : ""
    guard digits > 0 else { return sign + String(whole) }
    let divisor = Int64(scale)
    let fraction = String(whole % divisor)
    return sign + String(whole / divisor) + "." + String(repeating: "0", count: digits - fraction.count) + fraction
}

/// `text` right-aligned in `width` columns (printf's `%Nd`, `%N@`).
func padded(_ text: String, to width: Int) -> String {
    text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
}


/// Everything on standard input, up to its end.
func readStandardInput() -> [UInt8] {
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        if count < 0 { if errno == EINTR { continue } else { break } }
        if count == 0 { break }
        result += buffer[..<count]
    }
    return result
}
