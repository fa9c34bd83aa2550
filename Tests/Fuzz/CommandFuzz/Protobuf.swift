/// A few protocol buffer messages encoded by hand (bundletool's `toc.pb` for the .apks seed), so no protobuf
/// library is needed.
enum Protobuf {
    static func varint(_ value: Int) -> [UInt8] {
        var v = UInt64(bitPattern: Int64(value)), out: [UInt8] = []
        repeat {
            let byte = UInt8(v & 0x7f)
            v >>= 7
            out.append(v == 0 ? byte : byte | 0x80)
        } while v != 0
        return out
    }
    static func field(_ number: Int, varint value: Int) -> [UInt8] { varint(number << 3) + varint(value) }
    static func field(_ number: Int, _ bytes: [UInt8]) -> [UInt8] { varint(number << 3 | 2) + varint(bytes.count) + bytes }
    static func field(_ number: Int, _ string: String) -> [UInt8] { field(number, Array(string.utf8)) }

    /// `BuildApksResult` as bundletool writes it for an app from SDK 15: a standalone variant below SDK 21 (one
    /// complete APK) and a split variant from SDK 21 (the master split and a French configuration split). With a
    /// standalone APK in the set, apkpatch reads the table to tell the variants apart.
    static func bundletoolTOC(package: String, master: String, language: (split: String, path: String, language: String),
                              standalone: String) -> [UInt8] {
        // SdkVersionTargeting{value: SdkVersion{min: Int32Value{N}}, alternatives: …}.
        func sdk(_ level: Int) -> [UInt8] { field(1, field(1, field(1, varint: level))) }
        func sdkTargeting(_ level: Int, alternative: Int) -> [UInt8] { field(1, sdk(level) + field(2, field(1, field(1, varint: alternative)))) }
        let masterAPK = field(1, []) + field(2, master) + field(3, field(1, "") + field(2, varint: 1))
        let languageAPK = field(1, field(3, field(1, language.language))) + field(2, language.path) + field(3, field(1, language.split))
        let splits = field(1, field(1, "base")) + field(2, masterAPK) + field(2, languageAPK)
        let splitVariant = field(1, sdkTargeting(21, alternative: 15)) + field(2, splits) + field(3, varint: 1)
        let standaloneAPK = field(1, []) + field(2, standalone) + field(4, field(1, "base"))
        let standaloneVariant = field(1, sdkTargeting(15, alternative: 21)) + field(2, field(1, field(1, "base")) + field(2, standaloneAPK)) + field(3, varint: 0)
        return field(1, standaloneVariant) + field(1, splitVariant) + field(4, package)
    }
}

extension Scanner {
    /// Protocol buffer fields: each key and each length (as raw varint bytes), recursing into length-delimited
    /// values that parse as messages.
    static func protobuf(_ b: [UInt8], range: Range<Int>, into s: inout Structure, depth: Int) {
        guard depth < 16 else { return }
        func readVarint(_ p: inout Int) -> Int? {
            var value = 0, shift = 0
            while p < range.upperBound, shift < 63 {
                let byte = b[p]; p += 1
                value |= Int(byte & 0x7f) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            return nil
        }
        var p = range.lowerBound
        while p < range.upperBound {
            let keyAt = p
            guard let key = readVarint(&p) else { return }
            s.field(keyAt, p - keyAt, "pb.key", in: b)
            s.boundary(keyAt, in: b)
            switch key & 7 {
            case 0:
                let at = p
                guard readVarint(&p) != nil else { return }
                s.field(at, p - at, "pb.varint", in: b)
            case 1: p += 8
            case 5: p += 4
            case 2:
                let at = p
                guard let length = readVarint(&p), length >= 0, p + length <= range.upperBound else { return }
                s.field(at, p - at, "pb.length", in: b)
                s.boundary(p, in: b); s.boundary(p + length, in: b)
                s.containers.append(Structure.Container(range: keyAt..<(p + length), sizeFields: []))
                protobuf(b, range: p..<(p + length), into: &s, depth: depth + 1)
                p += length
            default: return
            }
        }
    }
}
