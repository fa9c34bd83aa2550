// Fuzzes the text XML compiler that reads patch directories (BinaryXML.XMLTree(textXML:): the XML parser, name and
// value resolution against the framework table), then the binary round trip a patched manifest goes through.
// Hostile patch dirs are untrusted input too. Seeds: the text XML sources of the seed app (scripts/fuzz/seeds.sh).
import BinaryXML
import FuzzSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    for fileName in ["AndroidManifest.xml", "res/xml/config.xml"] {
        guard let tree = try? XMLTree(textXML: text, fileName: fileName),
              let binary = try? tree.binaryXML() else { continue }
        if let reread = try? XMLTree(binaryXML: binary) { _ = reread.textXML() }
        _ = try? ManifestSummary(binaryXML: binary)
    }
    return 0
}

@main enum FuzzTextXMLMain {
    static func main() { FuzzDriver.run { data, size in fuzz(UnsafeRawPointer(data ?? UnsafePointer(bitPattern: 1)!), data == nil ? 0 : size) } }
}
