// Fuzzes keystore loading (Sign.LoadedKeyStore: JKS parser and key unwrapping, PKCS#12 through OpenSSL) with the
// password "android". A JKS (or JCEKS) file ends in a SHA-1 over the password and every byte before it, so a mutated
// file would always stop at that check: for JKS- and JCEKS-looking inputs the target also tries the input with a
// freshly computed digest appended, which lets mutations reach the entry parser and KeyProtector unwrapping.
// Seeds: keytool-made JKS, JCEKS and PKCS#12 keystores (RSA, EC, DSA; key, secret-key and trusted-certificate
// entries; Java 8's PKCS#12 algorithms).
import FuzzSupport
import OpenSSLWrapper
import Sign

let password = "android"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    load(bytes)
    if bytes.starts(with: [0xfe, 0xed, 0xfe, 0xed]) || bytes.starts(with: [0xce, 0xce, 0xce, 0xce]) {
        // Java's integrity check: SHA-1(password as UTF-16BE ‖ "Mighty Aphrodite" ‖ body).
        let digest = Digest(.sha1)
        digest.update(password.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] })
        digest.update(Array("Mighty Aphrodite".utf8))
        digest.update(bytes)
        load(bytes + digest.finish())
    }
    return 0
}

func load(_ bytes: [UInt8]) {
    guard let store = try? LoadedKeyStore(bytes: bytes, label: "fuzz", type: nil, storePassword: .pass(Secret(password))) else { return }
    for entry in store.entries.prefix(8) {
        _ = try? store.signerKey(alias: entry.alias, keyPassword: nil)
        for certificate in entry.certificates.prefix(4) { _ = certificate.subjectDN; _ = try? certificate.publicKey() }
    }
}

@main enum FuzzKeyStoreMain {
    static func main() { FuzzDriver.run { data, size in fuzz(UnsafeRawPointer(data ?? UnsafePointer(bitPattern: 1)!), data == nil ? 0 : size) } }
}
