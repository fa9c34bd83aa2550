/// JAR signature files, which a re-signed APK must not carry over (apksig's `getInputJarEntryOutputPolicy`).
public enum JarSignatureFiles {
    public static func isSignatureFile(_ name: String) -> Bool {
        guard name.hasPrefix("META-INF/") else { return false }
        let rest = name.dropFirst("META-INF/".count)
        if rest.contains("/") { return false }
        if rest == "MANIFEST.MF" { return true }
        let upper = rest.uppercased()
        return upper.hasSuffix(".SF") || upper.hasSuffix(".RSA") || upper.hasSuffix(".DSA") || upper.hasSuffix(".EC")
            || upper.hasPrefix("SIG-")
    }
}
