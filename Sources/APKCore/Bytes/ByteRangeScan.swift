/// Whether a run of bytes holds one outside a range, tested eight bytes at a time: names are checked this way for
/// the rare bytes that need a closer look (a NUL, a non-ASCII byte, a control character), and most have none.
public enum ByteRangeScan {
    /// Whether any byte of `bytes` lies outside `range`, whose lower bound is at most 0x80 and upper bound at least
    /// 0x80 (the word test below is exact only then).
    ///
    /// A word holds a byte below `n` (n ≤ 0x80) exactly when `(w - n·0x0101…) & ~w` has a high bit set ("Bit
    /// Twiddling Hacks", hasless); a byte at or above `m` is a byte of `~w` below `0x100 - m`.
    @inlinable
    public static func containsByte(in bytes: UnsafeRawBufferPointer, outside range: Range<UInt8>) -> Bool {
        precondition(range.lowerBound <= 0x80 && range.upperBound >= 0x80)
        let ones: UInt64 = 0x0101_0101_0101_0101
        let below = ones &* UInt64(range.lowerBound), above = ones &* UInt64(0x100 - Int(range.upperBound))
        var found: UInt64 = 0
        var index = 0
        while bytes.count - index >= 8 {
            let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            found |= ((word &- below) & ~word) | ((~word &- above) & word)
            index += 8
        }
        if found & (ones &* 0x80) != 0 { return true }
        while index < bytes.count {
            if !range.contains(bytes[index]) { return true }
            index += 1
        }
        return false
    }
}
