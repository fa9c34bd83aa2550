#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A character encoding a password may have been turned into bytes with when its keystore was made (apksigner's
/// `--pass-encoding`): keytool reading a password on a console whose encoding the JVM misjudged keeps the console's
/// bytes, one char each. Converted with the C library's iconv, the only user of it, under the names Java gives
/// charsets (most of which iconv knows as they are).
public struct PasswordEncoding: Sendable, Equatable {
    /// The name as given (for messages).
    public let name: String
    /// The name iconv knows the encoding by.
    let iconvName: String

    /// Java's names that iconv spells otherwise. apksigner maps cp65001, Windows' UTF-8 code page, itself
    /// (`PasswordRetriever.getCharsetByName`); Java's `x-` prefix marks charsets outside the standard set, which
    /// iconv names without it; IBM00858 is IBM's name for code page 858.
    private static let iconvNames: [String: String] = ["cp65001": "UTF-8", "ibm00858": "IBM858", "x-ibm737": "IBM737",
                                                       "x-ibm874": "IBM874", "x-windows-874": "WINDOWS-874",
                                                       "x-windows-949": "CP949", "x-windows-950": "CP950",
                                                       "x-macroman": "MACINTOSH", "windows-31j": "WINDOWS-31J"]

    /// The encoding called `name` (case-insensitive, Java's names: utf-8, ibm437 or cp437, windows-1252 or cp1252,
    /// iso-8859-1, ...). Throws `invalidArgument` when iconv has no such encoding; the message names it (it is
    /// never a password).
    public init(named name: String) throws {
        let lowered = name.lowercased()
        var candidates: [String] = []
        if let mapped = Self.iconvNames[lowered] { candidates.append(mapped) }
        // "//" would pass iconv options (//TRANSLIT, //IGNORE), which change what a conversion gives.
        if !name.isEmpty, !name.contains("/") {
            candidates.append(name)
            if lowered.hasPrefix("x-") { candidates.append(String(name.dropFirst(2))) }
        }
        guard let found = candidates.first(where: { Self.withConverter(to: $0) { _ in true } ?? false }) else {
            throw KeyStoreError(.invalidArgument, "unsupported password character encoding \(name); give a Java charset name such as utf-8, ibm437, windows-1252 or iso-8859-1")
        }
        self.name = name
        iconvName = found
    }

    /// `text` in this encoding, as Java's encoder gives it with `CodingErrorAction.REPLACE`: a character the
    /// encoding cannot hold becomes the encoding's "?".
    func encode(_ text: [UInt8]) -> [UInt8] {
        Self.withConverter(to: iconvName) { converter in
            var output: [UInt8] = []
            var input = text[...]
            while !input.isEmpty {
                let (converted, consumed, failed) = Self.convert(input, with: converter)
                output += converted
                input = input.dropFirst(consumed)
                if failed {
                    // An unconvertible character: its UTF-8 sequence (a lead byte and its continuation bytes) is skipped.
                    output += Self.convert(Array("?".utf8)[...], with: converter).converted
                    input = input.dropFirst(1).drop { $0 & 0xc0 == 0x80 }
                } else if consumed == 0 {
                    break
                }
            }
            output += Self.finish(converter)
            return output
        } ?? text
    }

    /// Runs `body` with a converter from UTF-8 to `encoding`; nil when iconv has no such encoding.
    private static func withConverter<R>(to encoding: String, _ body: (iconv_t) -> R) -> R? {
        let converter = iconv_open(encoding, "UTF-8")
        guard let converter, converter != iconv_t(bitPattern: -1) else { return nil }
        defer { iconv_close(converter) }
        return body(converter)
    }

    /// Converts as much of `input` as iconv takes: the bytes written, the input bytes consumed, and whether it
    /// stopped at a character the encoding cannot hold.
    private static func convert(_ input: ArraySlice<UInt8>, with converter: iconv_t) -> (converted: [UInt8], consumed: Int, failed: Bool) {
        var source = Array(input)
        var output = [UInt8](repeating: 0, count: source.count * 8 + 16)
        return source.withUnsafeMutableBufferPointer { sourceBuffer in
            output.withUnsafeMutableBufferPointer { outputBuffer in
                var inPointer: UnsafeMutablePointer<CChar>? = UnsafeMutableRawPointer(sourceBuffer.baseAddress!).assumingMemoryBound(to: CChar.self)
                var outPointer: UnsafeMutablePointer<CChar>? = UnsafeMutableRawPointer(outputBuffer.baseAddress!).assumingMemoryBound(to: CChar.self)
                var inLeft = sourceBuffer.count, outLeft = outputBuffer.count
                let result = iconv(converter, &inPointer, &inLeft, &outPointer, &outLeft)
                let failed = result == -1 && errno != E2BIG
                return (Array(outputBuffer[0..<(outputBuffer.count - outLeft)]), sourceBuffer.count - inLeft, failed && inLeft > 0)
            }
        }
    }

    /// The bytes that end the output in a stateful encoding (a shift back to the initial state).
    private static func finish(_ converter: iconv_t) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 16)
        return output.withUnsafeMutableBufferPointer { buffer in
            var outPointer: UnsafeMutablePointer<CChar>? = UnsafeMutableRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
            var outLeft = buffer.count
            _ = iconv(converter, nil, nil, &outPointer, &outLeft)
            return Array(buffer[0..<(buffer.count - outLeft)])
        }
    }
}
