import APKCore

/// A resource configuration (`ResTable_config`): the qualifiers of a `res/values-…` folder, kept as the raw bytes
/// the table had (so writing never changes them) plus the decoded qualifier string.
///
/// Layout (`ResourceTypes.h`): size u32, mcc u16, mnc u16, language[2], country[2], orientation u8, touchscreen u8,
/// density u16, keyboard u8, navigation u8, inputFlags u8, pad u8, screenWidth u16, screenHeight u16, sdkVersion u16,
/// minorVersion u16, screenLayout u8, uiMode u8, smallestScreenWidthDp u16, screenWidthDp u16, screenHeightDp u16,
/// localeScript[4], localeVariant[8], screenLayout2 u8, colorMode u8, pad u16, … (older tables are shorter: missing
/// fields are zero).
public struct ResourceConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// The raw `ResTable_config` bytes, `size` included.
    public let bytes: [UInt8]
    /// The folder qualifiers as aapt names them, in aapt's order ("" for the default configuration),
    /// e.g. "en-rGB", "b+sr+Latn", "mcc310-mnc410", "sw600dp-land", "night", "v21". Computed once.
    public let qualifiers: String

    public init(bytes: [UInt8]) {
        self.bytes = bytes
        self.qualifiers = Self.qualifiers(of: bytes)
    }

    private var fields: Fields { Fields(bytes: bytes) }
    public var mcc: UInt16 { fields.mcc }
    public var mnc: UInt16 { fields.mnc }
    public var language: String { fields.language }
    public var region: String { fields.region }
    public var script: String { fields.script }
    public var variant: String { fields.variant }
    public var density: UInt16 { fields.density }
    public var sdkVersion: UInt16 { fields.sdkVersion }
    public var uiMode: UInt8 { fields.uiMode }
    public var orientation: UInt8 { fields.orientation }

    /// Whether every qualifier is unset (the default `res/values` folder).
    public var isDefault: Bool { qualifiers.isEmpty }

    private static func qualifiers(of bytes: [UInt8]) -> String {
        let c = Fields(bytes: bytes)
        let mcc = c.mcc, mnc = c.mnc, screenLayout = c.screenLayout, smallestScreenWidthDp = c.smallestScreenWidthDp
        let screenWidthDp = c.screenWidthDp, screenHeightDp = c.screenHeightDp, screenLayout2 = c.screenLayout2
        let colorMode = c.colorMode, orientation = c.orientation, uiMode = c.uiMode, density = c.density
        let touchscreen = c.touchscreen, inputFlags = c.inputFlags, keyboard = c.keyboard, navigation = c.navigation
        let screenWidth = c.screenWidth, screenHeight = c.screenHeight, sdkVersion = c.sdkVersion
        var parts: [String] = []
        if mcc != 0 { parts.append("mcc\(mcc)") }
        if mnc != 0 { parts.append(mnc == 0xFFFF ? "mnc00" : "mnc\(mnc)") }
        let language = c.language, region = c.region, script = c.script, variant = c.variant
        if !language.isEmpty || !region.isEmpty {
            if !script.isEmpty || !variant.isEmpty || language.count == 3 || region.count == 3 {
                var tag = "b+" + (language.isEmpty ? "und" : language)
                if !script.isEmpty { tag += "+" + script }
                if !region.isEmpty { tag += "+" + region }
                if !variant.isEmpty { tag += "+" + variant }
                parts.append(tag)
            } else {
                parts.append(language + (region.isEmpty ? "" : "-r" + region))
            }
        }
        switch screenLayout & 0xC0 { case 0x40: parts.append("ldltr"); case 0x80: parts.append("ldrtl"); default: break }
        if smallestScreenWidthDp != 0 { parts.append("sw\(smallestScreenWidthDp)dp") }
        if screenWidthDp != 0 { parts.append("w\(screenWidthDp)dp") }
        if screenHeightDp != 0 { parts.append("h\(screenHeightDp)dp") }
        switch screenLayout & 0x0F { case 1: parts.append("small"); case 2: parts.append("normal"); case 3: parts.append("large"); case 4: parts.append("xlarge"); default: break }
        switch screenLayout & 0x30 { case 0x10: parts.append("notlong"); case 0x20: parts.append("long"); default: break }
        switch screenLayout2 & 0x03 { case 1: parts.append("notround"); case 2: parts.append("round"); default: break }
        switch colorMode & 0x03 { case 1: parts.append("nowidecg"); case 2: parts.append("widecg"); default: break }
        switch colorMode & 0x0C { case 0x04: parts.append("lowdr"); case 0x08: parts.append("highdr"); default: break }
        switch orientation { case 1: parts.append("port"); case 2: parts.append("land"); case 3: parts.append("square"); default: break }
        switch uiMode & 0x0F {
        case 2: parts.append("desk"); case 3: parts.append("car"); case 4: parts.append("television"); case 5: parts.append("appliance")
        case 6: parts.append("watch"); case 7: parts.append("vrheadset"); default: break
        }
        switch uiMode & 0x30 { case 0x10: parts.append("notnight"); case 0x20: parts.append("night"); default: break }
        switch density {
        case 0: break
        case 120: parts.append("ldpi"); case 160: parts.append("mdpi"); case 213: parts.append("tvdpi"); case 240: parts.append("hdpi")
        case 320: parts.append("xhdpi"); case 480: parts.append("xxhdpi"); case 640: parts.append("xxxhdpi")
        case 0xFFFE: parts.append("anydpi"); case 0xFFFF: parts.append("nodpi")
        default: parts.append("\(density)dpi")
        }
        switch touchscreen { case 1: parts.append("notouch"); case 2: parts.append("stylus"); case 3: parts.append("finger"); default: break }
        switch inputFlags & 0x03 { case 1: parts.append("keysexposed"); case 2: parts.append("keyshidden"); case 3: parts.append("keyssoft"); default: break }
        switch keyboard { case 1: parts.append("nokeys"); case 2: parts.append("qwerty"); case 3: parts.append("12key"); default: break }
        switch inputFlags & 0x0C { case 0x04: parts.append("navexposed"); case 0x08: parts.append("navhidden"); default: break }
        switch navigation { case 1: parts.append("nonav"); case 2: parts.append("dpad"); case 3: parts.append("trackball"); case 4: parts.append("wheel"); default: break }
        if screenWidth != 0 || screenHeight != 0 { parts.append("\(screenWidth)x\(screenHeight)") }
        if sdkVersion != 0 { parts.append("v\(sdkVersion)") }
        return parts.joined(separator: "-")
    }

    /// The `res/` folder name for values of this configuration: "values" or "values-<qualifiers>".
    public var valuesDirectoryName: String { qualifiers.isEmpty ? "values" : "values-" + qualifiers }

    public var description: String { qualifiers.isEmpty ? "(default)" : qualifiers }

    public static func == (a: ResourceConfiguration, b: ResourceConfiguration) -> Bool { a.qualifiers == b.qualifiers }
    public func hash(into hasher: inout Hasher) { hasher.combine(qualifiers) }
}

/// Field access on raw `ResTable_config` bytes; missing (older, shorter) fields read as zero.
private struct Fields {
    let bytes: [UInt8]
    private func u8(_ offset: Int) -> UInt8 { offset < bytes.count ? bytes[offset] : 0 }
    private func u16(_ offset: Int) -> UInt16 { UInt16(u8(offset)) | UInt16(u8(offset + 1)) << 8 }
    private func chars(_ offset: Int, _ count: Int) -> String {
        String(decoding: (offset..<(offset + count)).map { u8($0) }.prefix { $0 != 0 }, as: UTF8.self)
    }

    public var mcc: UInt16 { u16(4) }
    public var mnc: UInt16 { u16(6) }
    public var language: String { Self.unpack(u8(8), u8(9), base: UInt8(ascii: "a")) }
    public var region: String { Self.unpack(u8(10), u8(11), base: UInt8(ascii: "0")) }
    public var orientation: UInt8 { u8(12) }
    public var touchscreen: UInt8 { u8(13) }
    public var density: UInt16 { u16(14) }
    public var keyboard: UInt8 { u8(16) }
    public var navigation: UInt8 { u8(17) }
    public var inputFlags: UInt8 { u8(18) }
    public var screenWidth: UInt16 { u16(20) }
    public var screenHeight: UInt16 { u16(22) }
    public var sdkVersion: UInt16 { u16(24) }
    public var screenLayout: UInt8 { u8(28) }
    public var uiMode: UInt8 { u8(29) }
    public var smallestScreenWidthDp: UInt16 { u16(30) }
    public var screenWidthDp: UInt16 { u16(32) }
    public var screenHeightDp: UInt16 { u16(34) }
    public var script: String { chars(36, 4) }
    public var variant: String { chars(40, 8) }
    public var screenLayout2: UInt8 { u8(48) }
    public var colorMode: UInt8 { u8(49) }

    /// Two-letter codes as is; three-letter codes packed in 15 bits with the high bit set (`unpackLanguageOrRegion`).
    private static func unpack(_ a: UInt8, _ b: UInt8, base: UInt8) -> String {
        if a & 0x80 != 0 {
            let first = b & 0x1F, second = ((b & 0xE0) >> 5) + ((a & 0x03) << 3), third = (a & 0x7C) >> 2
            return String(decoding: [first + base, second + base, third + base], as: UTF8.self)
        }
        if a == 0 { return "" }
        return String(decoding: b == 0 ? [a] : [a, b], as: UTF8.self)
    }

}

extension ResourceConfiguration {
    /// The configuration of a `res/<type>-<qualifiers>` folder, as aapt2 compiles it: the qualifiers in aapt's order,
    /// plus the platform version a qualifier needs when the folder gives none (`drawable-hdpi` is `hdpi-v4`,
    /// `values-night` is `night-v8`, `values-ldrtl` is `ldrtl-v17`: `ConfigDescription::ApplyVersionForCompatibility`).
    /// Throws `.unknownQualifier` for a qualifier Android does not know or one out of order.
    public init(qualifiers text: String) throws {
        var c = [UInt8](repeating: 0, count: 64)
        c[0] = 64
        func put16(_ value: Int, at offset: Int) { c[offset] = UInt8(value & 0xFF); c[offset + 1] = UInt8((value >> 8) & 0xFF) }
        func number(_ part: Substring, prefix: String, suffix: String) -> Int? {
            guard part.hasPrefix(prefix), part.hasSuffix(suffix), part.count > prefix.count + suffix.count else { return nil }
            let digits = part.dropFirst(prefix.count).dropLast(suffix.count)
            guard digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber), let n = Int(digits), n <= 0xFFFF else { return nil }
            return n
        }
        func unknown(_ part: Substring) -> ResourceTableError {
            ResourceTableError(.unknownQualifier, "'\(part)' in '\(text)' is not a resource qualifier Android knows (e.g. fr, fr-rCA, b+sr+Latn, night, land, hdpi, sw600dp, v21)")
        }
        let parts = text.isEmpty ? [] : text.split(separator: "-", omittingEmptySubsequences: false)
        var index = 0
        var explicitVersion = false
        while index < parts.count {
            let part = parts[index]
            let lower = part.lowercased()
            defer { index += 1 }
            if part.isEmpty { throw unknown(part) }
            if let n = number(part, prefix: "mcc", suffix: "") { put16(n, at: 4); continue }
            if let n = number(part, prefix: "mnc", suffix: "") { put16(n == 0 ? 0xFFFF : n, at: 6); continue }
            if part.count == 2 || part.count == 3, part.allSatisfy({ $0.isASCII && $0.isLowercase }), c[8] == 0,
               Self.otherWords[lower] == nil {
                try Self.packLanguage(String(part), into: &c, at: 8, base: UInt8(ascii: "a"))
                if index + 1 < parts.count, parts[index + 1].hasPrefix("r"), parts[index + 1].count == 3 || parts[index + 1].count == 4 {
                    let region = parts[index + 1].dropFirst()
                    guard region.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) else { throw unknown(parts[index + 1]) }
                    try Self.packLanguage(String(region), into: &c, at: 10, base: UInt8(ascii: "0"))
                    index += 1
                }
                continue
            }
            if part.hasPrefix("b+") {
                let subtags = part.dropFirst(2).split(separator: "+")
                guard let language = subtags.first, (2...3).contains(language.count), language.allSatisfy({ $0.isASCII && $0.isLetter }) else { throw unknown(part) }
                try Self.packLanguage(language.lowercased(), into: &c, at: 8, base: UInt8(ascii: "a"))
                for subtag in subtags.dropFirst() {
                    if subtag.count == 4, subtag.allSatisfy(\.isLetter) {
                        for (i, byte) in subtag.utf8.enumerated() { c[36 + i] = byte }
                    } else if (subtag.count == 2 && subtag.allSatisfy(\.isLetter)) || (subtag.count == 3 && subtag.allSatisfy(\.isNumber)) {
                        try Self.packLanguage(subtag.uppercased(), into: &c, at: 10, base: UInt8(ascii: "0"))
                    } else if (5...8).contains(subtag.count) {
                        for (i, byte) in subtag.utf8.enumerated() { c[40 + i] = byte }
                    } else { throw unknown(part) }
                }
                continue
            }
            if let n = number(part, prefix: "sw", suffix: "dp") { put16(n, at: 30); continue }
            if let n = number(part, prefix: "w", suffix: "dp") { put16(n, at: 32); continue }
            if let n = number(part, prefix: "h", suffix: "dp") { put16(n, at: 34); continue }
            if let n = number(part, prefix: "v", suffix: "") { put16(n, at: 24); explicitVersion = true; continue }
            if let n = number(part, prefix: "", suffix: "dpi") { put16(n, at: 14); continue }
            if let density = Self.densities[lower] { put16(density, at: 14); continue }
            if let (offset, mask, value) = Self.otherWords[lower] {
                c[offset] = (c[offset] & ~mask) | value
                continue
            }
            if part.contains("x"), let x = part.firstIndex(of: "x"), let w = Int(part[..<x]), let h = Int(part[part.index(after: x)...]) {
                put16(w, at: 20); put16(h, at: 22); continue
            }
            throw unknown(part)
        }
        if !explicitVersion {
            let fields = Fields(bytes: c)
            var minimum = 0
            if fields.uiMode & 0x0F == 7 || fields.colorMode != 0 { minimum = 26 }
            else if fields.screenLayout2 & 0x03 != 0 { minimum = 23 }
            else if fields.density == 0xFFFE { minimum = 21 }
            else if !fields.script.isEmpty || !fields.variant.isEmpty { minimum = 21 }
            else if fields.screenLayout & 0xC0 != 0 { minimum = 17 }
            else if fields.smallestScreenWidthDp != 0 || fields.screenWidthDp != 0 || fields.screenHeightDp != 0 { minimum = 13 }
            else if fields.uiMode != 0 { minimum = 8 }
            else if fields.screenLayout & 0x3F != 0 || fields.density != 0 { minimum = 4 }
            if minimum > 0 { put16(minimum, at: 24) }
        }
        self.init(bytes: c)
        // aapt takes qualifiers only in its order: the canonical spelling must read the same.
        let canonical = qualifiers.split(separator: "-").filter { !(explicitVersion == false && $0.hasPrefix("v") && Int($0.dropFirst()) != nil) }
        let given = text.split(separator: "-").map { $0.lowercased() }
        if !text.isEmpty, canonical.map({ $0.lowercased() }) != given.filter({ !(explicitVersion == false && $0.hasPrefix("v") && Int($0.dropFirst()) != nil) }) {
            throw ResourceTableError(.unknownQualifier, "qualifiers '\(text)' are not in the order Android requires: write '\(qualifiers)'")
        }
    }

    private static let densities: [String: Int] = [
        "ldpi": 120, "mdpi": 160, "tvdpi": 213, "hdpi": 240, "xhdpi": 320, "xxhdpi": 480, "xxxhdpi": 640, "anydpi": 0xFFFE, "nodpi": 0xFFFF,
    ]

    /// Qualifier words: (byte offset in `ResTable_config`, mask, value).
    private static let otherWords: [String: (Int, UInt8, UInt8)] = [
        "ldltr": (28, 0xC0, 0x40), "ldrtl": (28, 0xC0, 0x80),
        "small": (28, 0x0F, 1), "normal": (28, 0x0F, 2), "large": (28, 0x0F, 3), "xlarge": (28, 0x0F, 4),
        "notlong": (28, 0x30, 0x10), "long": (28, 0x30, 0x20),
        "notround": (48, 0x03, 1), "round": (48, 0x03, 2),
        "nowidecg": (49, 0x03, 1), "widecg": (49, 0x03, 2), "lowdr": (49, 0x0C, 0x04), "highdr": (49, 0x0C, 0x08),
        "port": (12, 0xFF, 1), "land": (12, 0xFF, 2), "square": (12, 0xFF, 3),
        "desk": (29, 0x0F, 2), "car": (29, 0x0F, 3), "television": (29, 0x0F, 4), "appliance": (29, 0x0F, 5),
        "watch": (29, 0x0F, 6), "vrheadset": (29, 0x0F, 7),
        "notnight": (29, 0x30, 0x10), "night": (29, 0x30, 0x20),
        "notouch": (13, 0xFF, 1), "stylus": (13, 0xFF, 2), "finger": (13, 0xFF, 3),
        "keysexposed": (18, 0x03, 1), "keyshidden": (18, 0x03, 2), "keyssoft": (18, 0x03, 3),
        "nokeys": (16, 0xFF, 1), "qwerty": (16, 0xFF, 2), "12key": (16, 0xFF, 3),
        "navexposed": (18, 0x0C, 0x04), "navhidden": (18, 0x0C, 0x08),
        "nonav": (17, 0xFF, 1), "dpad": (17, 0xFF, 2), "trackball": (17, 0xFF, 3), "wheel": (17, 0xFF, 4),
    ]

    /// Two letters as is; three packed into 15 bits with the high bit set (`packLanguageOrRegion`).
    private static func packLanguage(_ code: String, into c: inout [UInt8], at offset: Int, base: UInt8) throws {
        let bytes = Array(code.utf8)
        if bytes.count == 2 { c[offset] = bytes[0]; c[offset + 1] = bytes[1]; return }
        guard bytes.count == 3 else { throw ResourceTableError(.unknownQualifier, "'\(code)' is not a two- or three-letter language or region code") }
        let first = bytes[0] &- base, second = bytes[1] &- base, third = bytes[2] &- base
        c[offset] = 0x80 | (third << 2) | (second >> 3)
        c[offset + 1] = (second << 5) | first
    }

    /// The `ACONFIGURATION_*` change flags of the axes this configuration sets (a typeSpec entry's flags).
    var changeFlags: UInt32 {
        let f = Fields(bytes: bytes)
        var flags: UInt32 = 0
        if f.mcc != 0 { flags |= 0x0001 }
        if f.mnc != 0 { flags |= 0x0002 }
        if !f.language.isEmpty || !f.region.isEmpty || !f.script.isEmpty || !f.variant.isEmpty { flags |= 0x0004 }
        if f.touchscreen != 0 { flags |= 0x0008 }
        if f.keyboard != 0 { flags |= 0x0010 }
        if f.inputFlags != 0 { flags |= 0x0020 | 0x0040 }
        if f.navigation != 0 { flags |= 0x0040 }
        if f.orientation != 0 { flags |= 0x0080 }
        if f.density != 0 { flags |= 0x0100 }
        if f.screenWidth != 0 || f.screenHeight != 0 || f.screenWidthDp != 0 || f.screenHeightDp != 0 { flags |= 0x0200 }
        if f.sdkVersion != 0 { flags |= 0x0400 }
        if f.screenLayout & 0x3F != 0 { flags |= 0x0800 }
        if f.uiMode != 0 { flags |= 0x1000 }
        if f.smallestScreenWidthDp != 0 { flags |= 0x2000 }
        if f.screenLayout & 0xC0 != 0 { flags |= 0x4000 }
        if f.screenLayout2 & 0x03 != 0 { flags |= 0x8000 }
        if f.colorMode != 0 { flags |= 0x10000 }
        return flags
    }
}
