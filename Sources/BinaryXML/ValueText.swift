/// Text forms of typed values, both ways: what `apkpatch unpack --decode` writes (apktool's and Android's
/// `TypedValue.coerceToString` conventions) and what the compiler accepts (aapt's `ResTable::stringToValue`).
public enum ValueText {
    // Complex values (dimension/fraction): mantissa in bits 8–31 (signed), radix in bits 4–5, unit in bits 0–3.
    static let dimensionUnits = ["px", "dip", "sp", "pt", "in", "mm"]
    static let fractionUnits = ["%", "%p"]
    private static let radixMultipliers: [Float] = [
        1.0 / Float(1 << 8), 1.0 / Float(1 << 7) / Float(1 << 8), 1.0 / Float(1 << 15) / Float(1 << 8), 1.0 / Float(1 << 23) / Float(1 << 8),
    ]

    /// `TypedValue.complexToFloat`.
    public static func complexToFloat(_ data: UInt32) -> Float {
        let mantissa = Int32(bitPattern: data & 0xFFFF_FF00)
        return Float(mantissa) * radixMultipliers[Int((data >> 4) & 0x3)]
    }

    /// aapt's `floatToComplex`: picks the radix that keeps the most precision, rounding to nearest.
    public static func floatToComplex(_ value: Float, unit: UInt32) -> UInt32? {
        var f = value
        let negative = f < 0
        if negative { f = -f }
        // Float arithmetic, as aapt does (`f*(1<<23)+.5f`), so we round exactly like it.
        let scaled: Float = f * Float(1 << 23) + 0.5
        guard scaled.isFinite, scaled < Float(UInt64(1) << 62) else { return nil }
        let bits = UInt64(scaled)
        let radix: UInt32, shift: UInt64
        if bits & 0x7F_FFFF == 0 { radix = 0; shift = 23 }
        else if bits & 0xFFFF_FFFF_FF80_0000 == 0 { radix = 3; shift = 0 }
        else if bits & 0xFFFF_FFFF_8000_0000 == 0 { radix = 2; shift = 8 }
        else if bits & 0xFFFF_FF80_0000_0000 == 0 { radix = 1; shift = 16 }
        else { radix = 0; shift = 23 }
        guard (bits >> shift) <= 0x7F_FFFF else { return nil }  // does not fit the 24-bit mantissa
        var mantissa = UInt32((bits >> shift) & 0xFF_FFFF)
        if negative { mantissa = (0 &- mantissa) & 0xFF_FFFF }
        return (mantissa << 8) | (radix << 4) | unit
    }

    /// Java's `Float.toString` style: always a decimal point ("16.0"), shortest round-tripping digits.
    static func floatText(_ value: Float) -> String {
        var text = "\(value)"
        if value.isFinite, !text.contains("."), !text.contains("e") { text += ".0" }
        return text
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let s = String(value, radix: 16)
        return s.count >= digits ? s : String(repeating: "0", count: digits - s.count) + s
    }

    /// The text of a non-string, non-reference typed value, or nil for types without a text form.
    public static func text(of type: ResourceValue.DataType, data: UInt32, attribute: AttributeInfo?) -> String? {
        if let attribute, !attribute.symbols.isEmpty {
            if attribute.format.contains(.enumeration), type == .intDecimal || type == .intHex,
               // Of several names for one value the last wins: fill_parent/match_parent sort that way.
               let symbol = attribute.symbols.last(where: { $0.value == data }) {
                return symbol.name
            }
            if attribute.format.contains(.flags), type == .intHex || type == .intDecimal, let names = flagNames(data, attribute.symbols) {
                return names
            }
        }
        switch type {
        case .intDecimal: return String(Int32(bitPattern: data))
        case .intHex: return "0x" + String(data, radix: 16)
        case .intBoolean: return data != 0 ? "true" : "false"
        case .intColorARGB8: return "#" + hex(data, digits: 8)
        case .intColorRGB8: return "#" + hex(data & 0xFF_FFFF, digits: 6)
        case .intColorARGB4:
            return "#" + [24, 16, 8, 0].map { String((data >> ($0 + 4)) & 0xF, radix: 16) }.joined()
        case .intColorRGB4:
            return "#" + [16, 8, 0].map { String((data >> ($0 + 4)) & 0xF, radix: 16) }.joined()
        case .float: return floatText(Float(bitPattern: data))
        case .dimension:
            let unit = Int(data & 0xF)
            guard unit < dimensionUnits.count else { return nil }
            return floatText(complexToFloat(data)) + dimensionUnits[unit]
        case .fraction:
            let unit = Int(data & 0xF)
            guard unit < fractionUnits.count else { return nil }
            return floatText(complexToFloat(data) * 100) + fractionUnits[unit]
        case .null: return data == 1 ? "@empty" : "@null"
        default: return nil
        }
    }

    /// Names whose values OR to exactly `data`, as aapt writes flags ("left|center_vertical"); nil if none cover it.
    /// Prefers disjoint symbols (a small exact-cover search, widest symbols first), then overlapping ones.
    private static func flagNames(_ data: UInt32, _ symbols: [AttributeInfo.Symbol]) -> String? {
        if data == 0 { return symbols.first { $0.value == 0 }?.name }
        if let exact = symbols.first(where: { $0.value == data }) { return exact.name }
        let candidates = symbols.filter { $0.value != 0 && $0.value & data == $0.value }
            .sorted { $0.value.nonzeroBitCount != $1.value.nonzeroBitCount ? $0.value.nonzeroBitCount > $1.value.nonzeroBitCount : $0.value < $1.value }
        var budget = 10_000
        func search(_ start: Int, _ remaining: UInt32, _ chosen: [String]) -> [String]? {
            if remaining == 0 { return chosen }
            budget -= 1
            if budget < 0 { return nil }
            for i in start..<candidates.count where candidates[i].value & ~remaining == 0 {
                if let found = search(i + 1, remaining & ~candidates[i].value, chosen + [candidates[i].name]) { return found }
            }
            return nil
        }
        if let disjoint = search(0, data, []) { return disjoint.joined(separator: "|") }
        var remaining = data, covered: UInt32 = 0, names: [String] = []
        for symbol in candidates where symbol.value & ~covered != 0 {
            names.append(symbol.name); covered |= symbol.value; remaining &= ~symbol.value
        }
        return remaining == 0 ? names.joined(separator: "|") : nil
    }

    /// Parses `text` as a typed (non-string, non-reference) value allowed by `format`, as aapt does; nil when it
    /// is none of them (the caller then treats it as a string, if the format allows strings).
    public static func parseTyped(_ rawText: String, format: AttributeFormat, symbols: [AttributeInfo.Symbol] = []) -> ResourceValue? {
        let text = rawText.trimmingWhitespace()
        guard !text.isEmpty else { return nil }
        if text.hasPrefix("#") {
            guard format.contains(.color) else { return nil }
            return parseColor(text)
        }
        // aapt's U16StringToInt skips leading white space only: " 42" is an integer, " 42 " falls through to float.
        if format.contains(.integer), let value = parseInteger(String(rawText.drop { $0.isWhitespace })) { return value }
        if !format.intersection([.float, .dimension, .fraction]).isEmpty, let value = parseFloating(text, format: format) { return value }
        if format.contains(.boolean) {
            if ["true", "TRUE", "True"].contains(text) { return .boolean(true) }
            if ["false", "FALSE", "False"].contains(text) { return .boolean(false) }
        }
        if format.contains(.enumeration), let symbol = symbols.first(where: { $0.name == text }) {
            return .typed(.intDecimal, symbol.value)
        }
        if format.contains(.flags) {
            var value: UInt32 = 0
            var allKnown = true
            for part in text.split(separator: "|") {
                let name = String(part).trimmingWhitespace()
                guard let symbol = symbols.first(where: { $0.name == name }) else { allKnown = false; break }
                value |= symbol.value
            }
            if allKnown { return .typed(.intHex, value) }
        }
        return nil
    }

    static func parseInteger(_ text: String) -> ResourceValue? {
        var body = Substring(text)
        let negative = body.hasPrefix("-")
        if negative { body = body.dropFirst() }
        if body.hasPrefix("0x") || body.hasPrefix("0X") {
            guard !negative, let value = UInt32(body.dropFirst(2), radix: 16) else { return nil }
            return .typed(.intHex, value)
        }
        guard !body.isEmpty, body.allSatisfy(\.isASCII), body.allSatisfy(\.isNumber), let magnitude = Int64(body) else { return nil }
        let value = negative ? -magnitude : magnitude
        guard let v = Int32(exactly: value) else { return nil }
        return .typed(.intDecimal, UInt32(bitPattern: v))
    }

    static func parseColor(_ text: String) -> ResourceValue? {
        let digits = text.dropFirst()
        guard digits.allSatisfy(\.isHexDigit), let v = UInt32(digits, radix: 16) else { return nil }
        func nibbles(_ n: UInt32) -> UInt32 { n << 4 | n }
        switch digits.count {
        case 3:
            return .typed(.intColorRGB4, 0xFF00_0000 | nibbles((v >> 8) & 0xF) << 16 | nibbles((v >> 4) & 0xF) << 8 | nibbles(v & 0xF))
        case 4:
            return .typed(.intColorARGB4, nibbles((v >> 12) & 0xF) << 24 | nibbles((v >> 8) & 0xF) << 16 | nibbles((v >> 4) & 0xF) << 8 | nibbles(v & 0xF))
        case 6: return .typed(.intColorRGB8, 0xFF00_0000 | v)
        case 8: return .typed(.intColorARGB8, v)
        default: return nil
        }
    }

    static func parseFloating(_ text: String, format: AttributeFormat) -> ResourceValue? {
        // Split the number from its unit suffix.
        let numberEnd = text.firstIndex { !($0.isNumber || $0 == "." || $0 == "-" || $0 == "+" || $0 == "e" || $0 == "E") } ?? text.endIndex
        var numberText = String(text[..<numberEnd])
        var unit = String(text[numberEnd...]).trimmingWhitespace()
        // "1e" would eat the unit's e in "1em"? Units here never start with e, so only fix a trailing e/E.
        if numberText.hasSuffix("e") || numberText.hasSuffix("E") { unit = String(numberText.removeLast()) + unit }
        guard let value = Float(numberText), value.isFinite else { return nil }
        if unit.isEmpty {
            guard format.contains(.float) else { return nil }
            return .typed(.float, value.bitPattern)
        }
        let dimensionUnit: UInt32?
        switch unit {
        case "px": dimensionUnit = 0
        case "dip", "dp": dimensionUnit = 1
        case "sp": dimensionUnit = 2
        case "pt": dimensionUnit = 3
        case "in": dimensionUnit = 4
        case "mm": dimensionUnit = 5
        default: dimensionUnit = nil
        }
        if let dimensionUnit, format.contains(.dimension), let data = floatToComplex(value, unit: dimensionUnit) {
            return .typed(.dimension, data)
        }
        if format.contains(.fraction), unit == "%" || unit == "%p", let data = floatToComplex(value / 100, unit: unit == "%" ? 0 : 1) {
            return .typed(.fraction, data)
        }
        return nil
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let c = s.first, c.isWhitespace { s.removeFirst() }
        while let c = s.last, c.isWhitespace { s.removeLast() }
        return String(s)
    }
}
