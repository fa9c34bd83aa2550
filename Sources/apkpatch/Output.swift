import Foundation

/// Printing for the commands: results on stdout, diagnostics on stderr.
enum FileHandleOutput {
    static func standardError(_ text: String) {
        FileHandle.standardError.write(Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
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
    return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
}
