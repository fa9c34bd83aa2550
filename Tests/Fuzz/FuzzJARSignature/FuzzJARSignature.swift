// Fuzzes what the JAR signature (v1) verifier parses before any cryptography: MANIFEST.MF and .SF files
// (SignatureSchemes.JARManifest), the PKCS #7 SignedData BER parser of .RSA/.EC/.DSA files
// (OpenSSLWrapper.PKCS7SignedData) and the certificates inside it (VerificationCertificate, through OpenSSL).
// FuzzVerify reaches these too, but only through a valid ZIP and at a few dozen inputs a second.
// Seeds: META-INF/* of apksigner-signed APKs (RSA, EC, DSA keys).
import FuzzSupport
import OpenSSLWrapper
import SignatureSchemes

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    let manifest = JARManifest(bytes: bytes)
    _ = manifest.individualSections.compactMap { $0.name }
    _ = manifest.mainSection?.value(of: "Manifest-Version")
    if let signedData = try? PKCS7SignedData(berEncoded: bytes) {
        for certificate in signedData.certificates.prefix(8) { _ = try? VerificationCertificate(derEncoded: certificate) }
    }
    return 0
}

@main enum FuzzJARSignatureMain {
    static func main() { FuzzDriver.run { data, size in fuzz(UnsafeRawPointer(data ?? UnsafePointer(bitPattern: 1)!), data == nil ? 0 : size) } }
}
