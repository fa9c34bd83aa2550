/// JAR signature files: the files directly in `META-INF/` that a JAR signature consists of, which a re-signed
/// APK must not carry over and its v1 manifest does not list (apksig's `isJarEntryDigestNeededInManifest`,
/// behind `getInputJarEntryOutputPolicy`). The folder is matched as written, `META-INF/`; the file name
/// without regard to case, as Java's `toLowerCase(Locale.US)`: `MANIFEST.MF`, `*.SF`, `*.RSA`, `*.DSA`,
/// `*.EC`, `SIG-*`. So `META-INF/cert.sf` is one and `meta-inf/manifest.mf` is an ordinary entry.
public enum JarSignatureFiles {
    public static func isSignatureFile(_ name: String) -> Bool {
        guard name.utf8.starts(with: "META-INF/".utf8) else { return false }
        let rest = name.dropFirst("META-INF/".count)
        if rest.contains("/") { return false }
        let lower = rest.lowercased()
        return lower == "manifest.mf" || lower.hasSuffix(".sf") || lower.hasSuffix(".rsa") || lower.hasSuffix(".dsa")
            || lower.hasSuffix(".ec") || lower.hasPrefix("sig-")
    }

    /// Whether a v1 manifest lists the entry: every file but the JAR signature files (directories are not
    /// listed either).
    public static func isDigestNeededInManifest(_ name: String) -> Bool {
        name.utf8.last != UInt8(ascii: "/") && !isSignatureFile(name)
    }
}
