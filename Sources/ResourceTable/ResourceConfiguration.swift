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
