import APKCore

/// apksig's `Hints`: an APK holding `assets/com.android.hints.pins.txt` (one Java regular expression a line,
/// optionally followed by a start and end offset; `#` starts a comment) gets `pinlist.meta`, the byte ranges of
/// the signed APK that Android's PinnerService keeps in memory: for each entry whose name matches a pattern,
/// the matched part of its data and its local header, then everything from the pin list on (the JAR signature
/// and the central directory). Each range is two big-endian int32s, start and length, clamped to 0…2^31-1.
struct PinList {
    static let hintsEntryName = "assets/com.android.hints.pins.txt"
    static let entryName = "pinlist.meta"

    /// One pattern line: the whole entry name must match `pattern`; `offset` and `size` cut the entry's data.
    struct Pattern {
        var pattern: Regex<AnyRegexOutput>
        var offset: Int64 = 0
        var size: Int64 = Int64.max

        /// apksig `PatternWithRange.ClampToAbsoluteByteRange`.
        func clamp(_ range: Range<Int64>) -> Range<Int64>? {
            guard range.upperBound - range.lowerBound >= offset else { return nil }
            let start = range.lowerBound + offset
            return start..<(start + min(range.upperBound - start, size))
        }
    }

    /// apksig `Hints.parsePinPatterns`, whose Java `String.split` drops trailing empty fields.
    static func patterns(in bytes: [UInt8]) throws -> [Pattern] {
        var patterns: [Pattern] = []
        var lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        while lines.last?.isEmpty == true { lines.removeLast() }
        for rawLine in lines {
            var line = rawLine
            // "#.*": from the first # to the end of the line (Java's `.` stops at a carriage return).
            if let hash = line.firstIndex(of: "#") {
                let end = line[hash...].firstIndex(where: { $0 == "\r" || $0 == "\r\n" }) ?? line.endIndex
                line.removeSubrange(hash..<end)
            }
            var fields = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            if !line.isEmpty { while fields.last?.isEmpty == true { fields.removeLast() } }
            do {
                if fields.count == 1 {
                    patterns.append(Pattern(pattern: try Regex(fields[0])))
                } else if fields.count == 3, let start = Int64(fields[1]), let end = Int64(fields[2]) {
                    patterns.append(Pattern(pattern: try Regex(fields[0]), offset: start, size: end - start))
                } else {
                    throw SignError.invalidOption("\(hintsEntryName): bad pin pattern line \(line.debugDescription): give a regular expression, optionally followed by a start and end offset")
                }
            } catch let error as SignError {
                throw error
            } catch {
                throw SignError.invalidOption("\(hintsEntryName): \(fields[0].debugDescription) is not a regular expression apkpatch can read (\(error))")
            }
        }
        return patterns
    }

    /// The pin list's bytes for the kept entries written at `recordStarts`/`dataStarts` (output order), the list
    /// itself starting at `listOffset`.
    static func encoded(patterns: [Pattern], entries: [KeptEntry], recordStarts: [Int64], dataStarts: [Int64],
                        listOffset: Int64) -> [UInt8] {
        var ranges: [Range<Int64>] = []
        for (index, item) in entries.enumerated() {
            let entry = item.entry
            let data = dataStarts[index]..<(dataStarts[index] + entry.recordRange.upperBound - entry.dataOffset)
            var pinsHeader = false
            for pattern in patterns where (try? pattern.pattern.wholeMatch(in: entry.name)) != nil {
                if let range = pattern.clamp(data) {
                    pinsHeader = true
                    ranges.append(range)
                }
            }
            if pinsHeader { ranges.append(recordStarts[index]..<dataStarts[index]) }
        }
        var bytes: [UInt8] = []
        func int32(_ value: Int64) {
            let clamped = UInt32(max(0, min(value, Int64(Int32.max))))
            bytes += [UInt8(clamped >> 24), UInt8((clamped >> 16) & 0xff), UInt8((clamped >> 8) & 0xff), UInt8(clamped & 0xff)]
        }
        for range in ranges {
            int32(range.lowerBound)
            int32(range.upperBound - range.lowerBound)
        }
        int32(listOffset)
        int32(Int64.max - listOffset)
        return bytes
    }
}
