import TestSupport

/// Structure-aware mutations of one seed: numbers set to the values parsers get wrong (0, all ones, off by
/// one, pointing outside, backwards or into themselves), structures duplicated, removed or repeated thousands of
/// times with their enclosing sizes kept consistent (so the parser goes deep instead of stopping at the first
/// size check), truncation at every boundary, and plain byte damage. Deterministic for a given generator.
public struct Mutator {
    public let seed: [UInt8]
    public let structure: Structure
    public let format: Scanner.Format
    /// The most bytes a mutation may add (repetitions are capped by it).
    public var maxGrowth = 4 << 20

    public init(seed: [UInt8], format: Scanner.Format) {
        self.seed = seed
        self.format = format
        self.structure = Scanner.scan(seed, as: format)
    }

    /// One mutated input and what was done to it (for the findings log).
    public struct Mutation {
        public var bytes: [UInt8]
        public var steps: [String]
    }

    /// 1–3 mutations stacked: the ones that keep offsets first, then at most one that moves bytes.
    public func mutate(_ rng: inout SplitMix64) -> Mutation {
        var bytes = seed
        var steps: [String] = []
        let count = Int.random(in: 1...3, using: &rng)
        for index in 0..<count {
            let last = index == count - 1
            steps.append(last ? shifting(&bytes, &rng) : inPlace(&bytes, &rng))
        }
        return Mutation(bytes: bytes, steps: steps)
    }

    // MARK: in place (offsets of the structure stay valid)

    func inPlace(_ b: inout [UInt8], _ rng: inout SplitMix64) -> String {
        let roll = Int.random(in: 0..<100, using: &rng)
        if roll < 65, let field = structure.fields.randomElement(using: &rng), field.offset + field.width <= b.count {
            let value = interesting(field, b, &rng)
            put(&b, field, value)
            return "set \(field.label)@\(field.offset) = \(value)"
        }
        if roll < 85, !b.isEmpty {
            let n = Int.random(in: 1...8, using: &rng)
            var at: [Int] = []
            for _ in 0..<n {
                let i = Int.random(in: 0..<b.count, using: &rng)
                b[i] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
                at.append(i)
            }
            return "flip bits at \(at)"
        }
        if b.count >= 4 {
            let i = Int.random(in: 0..<(b.count - 3), using: &rng) & ~3
            let value = [0, 0xffff_ffff, 0x7fff_ffff, 0x8000_0000, b.count, 1].randomElement(using: &rng)!
            put(&b, Structure.Field(offset: i, width: 4, label: "u32"), value)
            return "set u32@\(i) = \(value)"
        }
        return "none"
    }

    func interesting(_ field: Structure.Field, _ b: [UInt8], _ rng: inout SplitMix64) -> Int {
        let current = get(b, field)
        let max = field.width >= 8 ? Int.max : (1 << (8 * field.width)) - 1
        var candidates = [0, 1, max, max >> 1, (max >> 1) + 1, current &+ 1, current &- 1, current &* 2, current ^ 0x80]
        if field.width >= 2 { candidates += [0xffff, 0x8000, 0x7fff, 256] }
        if field.width >= 4 {
            candidates += [b.count, b.count - field.offset, field.offset, b.count + 1, b.count - 1, current &+ 0x10000, 0xffff_fff0,
                           structure.boundaries.randomElement(using: &rng) ?? 0, field.offset - 4]
        }
        if format == .der, field.width == 1, field.label == "der.length" { candidates += [0x80, 0x81, 0x84, 0x89, 0x7f] }
        let value = candidates.randomElement(using: &rng)!
        return field.width >= 8 ? value : value & max
    }

    func get(_ b: [UInt8], _ f: Structure.Field) -> Int {
        var v = 0
        for i in 0..<f.width { v |= Int(b[f.offset + (f.bigEndian ? f.width - 1 - i : i)]) << (8 * i) }
        return v
    }

    func put(_ b: inout [UInt8], _ f: Structure.Field, _ value: Int) {
        for i in 0..<f.width { b[f.offset + (f.bigEndian ? f.width - 1 - i : i)] = UInt8(truncatingIfNeeded: value >> (8 * i)) }
    }

    // MARK: moving bytes

    func shifting(_ b: inout [UInt8], _ rng: inout SplitMix64) -> String {
        if format == .text, Bool.random(using: &rng) { return textMutation(&b, &rng) }
        let boundaries = structure.boundaries.filter { $0 <= b.count }.sorted()
        let roll = Int.random(in: 0..<100, using: &rng)
        switch roll {
        case 0..<20:
            // Truncation at a structure boundary, or one byte either side of it.
            let cut = Swift.max(0, Swift.min(b.count, (boundaries.randomElement(using: &rng) ?? 0) + Int.random(in: -1...1, using: &rng)))
            b.removeSubrange(cut...)
            return "truncate at \(cut)"
        case 20..<35:
            if let c = structure.containers.randomElement(using: &rng), c.range.upperBound <= b.count, c.range.count > 0 {
                let times = [1, 2, 16, 1000, 50_000].randomElement(using: &rng)!
                let n = Swift.max(1, Swift.min(times, maxGrowth / c.range.count))
                let copy = Array(b[c.range])
                var grown: [UInt8] = []
                grown.reserveCapacity(copy.count * n)
                for _ in 0..<n { grown += copy }
                b.insert(contentsOf: grown, at: c.range.upperBound)
                resize(&b, c.sizeFields, by: grown.count)
                return "repeat structure \(c.range) \(n) more times (enclosing sizes adjusted)"
            }
        case 35..<45:
            if let c = structure.containers.randomElement(using: &rng), c.range.upperBound <= b.count {
                b.removeSubrange(c.range)
                resize(&b, c.sizeFields.filter { $0 < c.range.lowerBound }, by: -c.range.count)
                return "remove structure \(c.range) (enclosing sizes adjusted)"
            }
        case 45..<55:
            // A structure nested inside itself: its bytes inserted right after its own header.
            if let c = structure.containers.filter({ !$0.sizeFields.isEmpty }).randomElement(using: &rng), c.range.upperBound <= b.count,
               c.range.count >= 8 {
                let copy = Array(b[c.range])
                let depth = Swift.max(1, Swift.min([2, 64, 5000].randomElement(using: &rng)!, maxGrowth / copy.count))
                let at = c.range.lowerBound + Swift.min(8 + le16(b, c.range.lowerBound + 2) - 8, c.range.count)
                var nested: [UInt8] = []
                for _ in 0..<depth { nested += copy }
                b.insert(contentsOf: nested, at: Swift.min(at, b.count))
                resize(&b, c.sizeFields + [c.range.lowerBound + 4], by: nested.count)
                return "nest structure \(c.range) \(depth) deep inside itself"
            }
        case 55..<75:
            let at = boundaries.randomElement(using: &rng) ?? 0
            let n = [1, 2, 3, 4, 7, 16, 255, 4096].randomElement(using: &rng)!
            let fill = [UInt8](repeating: [0, 0xff, 0x50, 0x41].randomElement(using: &rng)!, count: n)
            let random = FixtureAPK.pseudoRandomBytes(count: n, seed: rng.next())
            b.insert(contentsOf: Bool.random(using: &rng) ? fill : random, at: Swift.min(at, b.count))
            return "insert \(n) bytes at \(at)"
        case 75..<90:
            if boundaries.count >= 2 {
                let i = Int.random(in: 0..<(boundaries.count - 1), using: &rng)
                let j = Swift.min(boundaries.count - 1, i + Int.random(in: 1...3, using: &rng))
                let range = boundaries[i]..<Swift.min(boundaries[j], b.count)
                if !range.isEmpty { b.removeSubrange(range); return "delete \(range)" }
            }
        default:
            break
        }
        if b.count > 1 {
            let start = Int.random(in: 0..<b.count, using: &rng)
            let end = Swift.min(b.count, start + Int.random(in: 1...32, using: &rng))
            b.removeSubrange(start..<end)
            return "delete \(start)..<\(end)"
        }
        return "none"
    }

    /// Adds `delta` to the little-endian u32 size fields at `offsets` (those before the change point).
    func resize(_ b: inout [UInt8], _ offsets: [Int], by delta: Int) {
        for offset in offsets where offset + 4 <= b.count {
            let f = Structure.Field(offset: offset, width: 4, label: "size")
            put(&b, f, get(b, f) &+ delta)
        }
    }

    // MARK: text

    static let tokens: [String] = [
        "&#0;", "&#xFFFFFFFF;", "&#x110000;", "&unknown;", "&amp", "]]>", "<![CDATA[", "<!-- ", "<?pi ?>", "<!DOCTYPE a [<!ENTITY e \"eeeeeeeeee\">]>",
        "@string/missing", "@android:string/ok", "?attr/none", "@+id/", "@0xffffffff", "@", "?", "#", "#zzz", "#ff00ff00ff",
        "%1$s", "%", "\\u", "\\uZZZZ", "\\", "\"", "'", "\u{0}", "\u{FEFF}", "xmlns:android=\"x\"", "android:", ":", "a:b:c",
        "<a", "</b>", "/>", "<", ">", "=", "*alias", "&anchor", "!!binary", ": ", "---", "\t", "- ", "? ", "{", "}", "[", "]",
        "0x7fffffffffffffff", "-1", "1e999", "99999999999999999999", "-2147483649", "true", "null", "~", "\r", "\r\n",
        "<item>", "<string name=\"\">", "<public type=\"string\" name=\"x\" id=\"0x7f0affff\"/>", "type=\"\"", "name=\"../x\"", "android:name=\"\"",
    ]

    func textMutation(_ b: inout [UInt8], _ rng: inout SplitMix64) -> String {
        let boundaries = structure.boundaries.filter { $0 <= b.count }.sorted()
        let at = Swift.min(boundaries.randomElement(using: &rng) ?? 0, b.count)
        switch Int.random(in: 0..<7, using: &rng) {
        case 0:
            let n = [100, 5000, 200_000].randomElement(using: &rng)!
            let (open, close) = [("<a>", "</a>"), ("[", "]"), ("{a: ", "}"), ("- ", ""), ("<a><![CDATA[", "]]></a>"), ("<b a=\"1\">", "</b>")].randomElement(using: &rng)!
            let closing = Bool.random(using: &rng)
            b.insert(contentsOf: Array(String(repeating: open, count: n).utf8) + (closing ? Array(String(repeating: close, count: n).utf8) : []), at: at)
            return "nest \(open) \(n) deep at \(at)\(closing ? " (closed)" : "")"
        case 1:
            let n = [1 << 16, 1 << 20, 3 << 20].randomElement(using: &rng)!
            b.insert(contentsOf: [UInt8](repeating: UInt8(ascii: "x"), count: n), at: at)
            return "insert \(n) x at \(at)"
        case 2:
            let token = Self.tokens.randomElement(using: &rng)!
            b.insert(contentsOf: Array(token.utf8), at: at)
            return "insert token \(token.debugDescription) at \(at)"
        case 3:
            let bad: [[UInt8]] = [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0]]
            let pick = bad.randomElement(using: &rng)!
            b.insert(contentsOf: pick, at: at)
            return "insert bytes \(pick) at \(at)"
        case 4:
            // A line (or the span between two boundaries) repeated many times: huge counts of elements or keys.
            if boundaries.count >= 2 {
                let i = Int.random(in: 0..<(boundaries.count - 1), using: &rng)
                let range = boundaries[i]..<Swift.min(boundaries[Swift.min(boundaries.count - 1, i + Int.random(in: 1...6, using: &rng))], b.count)
                if !range.isEmpty {
                    let n = Swift.min([10, 1000, 30_000].randomElement(using: &rng)!, maxGrowth / range.count)
                    let copy = Array(b[range])
                    var grown: [UInt8] = []
                    for _ in 0..<n { grown += copy }
                    b.insert(contentsOf: grown, at: range.upperBound)
                    return "repeat \(range) \(n) times"
                }
            }
            return "none"
        case 5:
            let entity = "<!DOCTYPE r [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\"><!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\">]>"
            let yaml = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            let bomb = Bool.random(using: &rng) ? entity : yaml
            b.insert(contentsOf: Array(bomb.utf8), at: Bool.random(using: &rng) ? 0 : at)
            return "insert an expansion bomb at \(at)"
        default:
            if boundaries.count >= 2 {
                let i = Int.random(in: 0..<(boundaries.count - 1), using: &rng)
                let range = boundaries[i]..<Swift.min(boundaries[i + 1], b.count)
                if !range.isEmpty { b.removeSubrange(range); return "delete \(range)" }
            }
            return "none"
        }
    }
}
