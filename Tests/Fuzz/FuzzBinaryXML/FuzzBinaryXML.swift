// Fuzzes the binary XML reader (BinaryXML.XMLTree(binaryXML:), ManifestSummary(binaryXML:)) and what runs on
// a tree that parsed: the text decoder (as `apkpatch unpack` prints it) and the binary writer.
// Seeds: AndroidManifest.xml and res/**/*.xml from aapt-built fixtures and framework-res.apk.
import BinaryXML
import FuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    _ = try? ManifestSummary(binaryXML: bytes)
    if let tree = try? XMLTree(binaryXML: bytes) {
        _ = tree.textXML()
        _ = try? tree.binaryXML()
    }
    return 0
}

@main enum FuzzBinaryXMLMain {
    static func main() { FuzzDriver.run { data, size in fuzz(UnsafeRawPointer(data ?? UnsafePointer(bitPattern: 1)!), data == nil ? 0 : size) } }
}
