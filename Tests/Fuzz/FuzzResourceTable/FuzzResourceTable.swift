// Fuzzes the resources.arsc reader (ResourceTable(bytes:)) and, on a table that parsed, string lookup,
// editing and re-encoding (what `apkpatch run` does for a strings override).
// Seeds: resources.arsc from aapt-built fixtures and framework-res.apk.
import FuzzSupport
import ResourceTable

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    guard var table = try? ResourceTable(bytes: bytes) else { return 0 }
    for configuration in table.stringConfigurations.prefix(4) { _ = table.strings(in: configuration) }
    _ = try? table.encoded()
    if let first = table.entries.first(where: { $0.type == "string" }) {
        try? table.setString(named: first.name, to: "fuzz")
        _ = try? table.encoded()
    }
    return 0
}

@main enum FuzzResourceTableMain {
    static func main() { FuzzDriver.run { data, size in fuzz(UnsafeRawPointer(data ?? UnsafePointer(bitPattern: 1)!), data == nil ? 0 : size) } }
}
