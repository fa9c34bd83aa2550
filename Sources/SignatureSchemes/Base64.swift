/// Base64 as Java's basic `Base64.getEncoder()`/`getDecoder()`: the standard alphabet, padding written on
/// output and optional on input, no whitespace. The JAR signer writes thousands of digests with it straight
/// into MANIFEST.MF and the .SF file; the JAR verifier reads them back and quotes them in its messages.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// The encoded length of `count` bytes.
    public static func encodedCount(_ count: Int) -> Int { (count + 2) / 3 * 4 }

    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8](repeating: 0, count: encodedCount(bytes.count))
        out.withUnsafeMutableBytes { write(bytes, into: $0) }
        return String(decoding: out, as: UTF8.self)
    }

    /// Writes the Base64 of `bytes` at the start of `out`, which must have room for it (checked once, not
    /// per byte).
    public static func write(_ bytes: [UInt8], into out: UnsafeMutableRawBufferPointer) {
        bytes.withUnsafeBufferPointer { write($0, into: out) }
    }

    public static func write(_ bytes: ArraySlice<UInt8>, into out: UnsafeMutableRawBufferPointer) {
        bytes.withUnsafeBufferPointer { write($0, into: out) }
    }

    public static func write(_ bytes: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count >= encodedCount(bytes.count))
        guard let input = bytes.baseAddress, let output = out.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        alphabet.withUnsafeBufferPointer { table in
            let alphabet = table.baseAddress!
            var i = 0, o = 0
            while i < bytes.count {
                let rest = bytes.count - i
                let n = UInt32(input[i]) << 16 | (rest > 1 ? UInt32(input[i + 1]) << 8 : 0) | (rest > 2 ? UInt32(input[i + 2]) : 0)
                output[o] = alphabet[Int(n >> 18 & 63)]
                output[o + 1] = alphabet[Int(n >> 12 & 63)]
                output[o + 2] = rest > 1 ? alphabet[Int(n >> 6 & 63)] : 0x3d
                output[o + 3] = rest > 2 ? alphabet[Int(n & 63)] : 0x3d
                i += 3
                o += 4
            }
        }
    }

    /// Each byte's value in the alphabet, or 0xFF.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// The decoded bytes, or nil for text Java's decoder rejects.
    public static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        values.reserveCapacity(text.utf8.count)
        var padding = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "=") { padding += 1; continue }
            let value = Self.values[Int(byte)]
            guard padding == 0, value != 0xFF else { return nil }
            values.append(value)
        }
        // Padding, when present, must complete the last quantum (Java rejects "QQ=" and "Q===").
        if padding > 0 && (values.count + padding) % 4 != 0 { return nil }
        if padding > 2 || values.count % 4 == 1 { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 3 / 4)
        var i = 0
        while i + 1 < values.count {
            let v0 = values[i], v1 = values[i + 1]
            out.append(v0 << 2 | v1 >> 4)
            if i + 2 < values.count {
                let v2 = values[i + 2]
                out.append((v1 & 15) << 4 | v2 >> 2)
                if i + 3 < values.count { out.append((v2 & 3) << 6 | values[i + 3]) }
            }
            i += 4
        }
        return out
    }
}
