// Fuzzes the verifier end to end (Verify.Verifier: ZIP, signing block, v2/v3/v3.1 and JAR signatures, PKCS#7,
// certificates, manifest checks), as `apkpatch verify` runs it. Seeds: small apksigner- and apkpatch-signed APKs.
import APKCore
import FuzzSupport
import Verify

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let source = ByteArrayDataSource(Array(UnsafeRawBufferPointer(start: start, count: count)))
    if let report = try? Verifier().verify(source: source, label: "fuzz") { _ = report.isVerified; _ = "\(report.errors)" }
    return 0
}

@main enum FuzzVerifyMain {
    static func main() { FuzzDriver.run { data, size in fuzz(UnsafeRawPointer(data ?? UnsafePointer(bitPattern: 1)!), data == nil ? 0 : size) } }
}
