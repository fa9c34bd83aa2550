/// JAR signature files: the files directly in `META-INF/` that a JAR signature consists of, which a re-signed
/// APK must not carry over and its v1 manifest does not list (apksig's `isJarEntryDigestNeededInManifest`,
/// behind `getInputJarEntryOutputPolicy`). The folder is matched as written, `META-INF/`; the file name
/// without regard to case, as Java's `toLowerCase(Locale.US)`: `MANIFEST.MF`, `*.SF`, `*.RSA`, `*.DSA`,
/// `*.EC`, `SIG-*`. So `META-INF/cert.sf` is one and `meta-inf/manifest.mf` is an ordinary entry.
///
/// Read over the name's bytes, as apksig reads its String unit for unit: Swift's Characters join a combining
/// mark to the character before it, so "META-INF/\u{301}SIG-x" would lose its mark with the folder and
/// "META-INF/a/\u{301}b.SF" would hide its second slash. Java's lower-casing turns no character outside ASCII
/// into an ASCII letter of these patterns (KELVIN SIGN becomes "k", which none holds; U+0130 becomes "i" and a
/// combining dot, which breaks the pattern at the dot), so folding ASCII letters gives Java's answer.
public enum JarSignatureFiles {
    public static func isSignatureFile(_ name: String) -> Bool {
        let folder = "META-INF/".utf8
        guard name.utf8.starts(with: folder) else { return false }
        let rest = name.utf8.dropFirst(folder.count)
        if rest.contains(UInt8(ascii: "/")) { return false }
        if rest.count == 11 && hasFolded(rest, "manifest.mf", atEnd: false) { return true }
        if hasFolded(rest, "sig-", atEnd: false) { return true }
        for suffix: StaticString in [".sf", ".rsa", ".dsa", ".ec"] where hasFolded(rest, suffix, atEnd: true) { return true }
        return false
    }

    /// Whether `bytes` starts (or ends) with `lowercase`, ASCII letters compared without case.
    private static func hasFolded(_ bytes: Substring.UTF8View, _ lowercase: StaticString, atEnd: Bool) -> Bool {
        let count = lowercase.utf8CodeUnitCount
        guard bytes.count >= count else { return false }
        let part = atEnd ? bytes.suffix(count) : bytes.prefix(count)
        let expected = UnsafeBufferPointer(start: lowercase.utf8Start, count: count)
        for (byte, wanted) in zip(part, expected) {
            if byte.asciiLowercased != wanted { return false }
        }
        return true
    }

    /// Whether a v1 manifest lists the entry: every file but the JAR signature files (directories are not
    /// listed either).
    public static func isDigestNeededInManifest(_ name: String) -> Bool {
        name.utf8.last != UInt8(ascii: "/") && !isSignatureFile(name)
    }
}
