// Fuzzes the ZIP reader (EOCD search, central directory, local headers: APKCore.ZipArchive), the input-APK
// checks and bounded inflate of Unpack.APKArchive, and the APK Signing Block locator. Seeds: whole APKs
// (scripts/fuzz/seeds.sh). Any thrown error is fine; a trap, a sanitizer report, a hang or an OOM is a bug.
import APKCore
import FuzzSupport
import SignatureSchemes
import Unpack

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let source = ByteArrayDataSource(Array(UnsafeRawBufferPointer(start: start, count: count)))
    if let zip = try? ZipArchive(source: source) {
        _ = try? SigningBlock.locate(in: source, centralDirectoryOffset: zip.centralDirectoryOffset)
        for entry in zip.entries.prefix(64) { _ = try? zip.rawData(of: entry).bytes(in: 0..<min(entry.compressedSize, 64)) }
    }
    // The readings verify and sign use (Android's compression-method and ZIP64 field rules, unchecked names,
    // a ZIP64 end record holding ordinary values) as well as the strict one every other command uses.
    var androidZip = ZipArchive.Limits()
    androidZip.readsLikeAndroid = true
    androidZip.readsZip64 = true
    if let zip = try? ZipArchive(source: source, limits: androidZip) {
        for entry in zip.entries.prefix(64) { _ = try? zip.rawData(of: entry).bytes(in: 0..<min(entry.compressedSize, 64)) }
    }
    var android = UnpackLimits()
    android.checksEntryNames = false
    android.readsLikeAndroid = true
    android.readsZip64 = true
    for limits in [UnpackLimits(), .rewriting, android] {
        guard let archive = try? APKArchive(source: source, label: "fuzz", limits: limits) else { continue }
        for entry in archive.entries.prefix(64) {
            var total = 0
            try? archive.withUncompressedChunks(of: entry) { total += $0.count }
        }
    }
    return 0
}

@main enum FuzzZipMain {
    static func main() { FuzzDriver.run { data, size in fuzz(UnsafeRawPointer(data ?? UnsafePointer(bitPattern: 1)!), data == nil ? 0 : size) } }
}
