import APKCore

/// The ZIP records the signer writes besides the entries it copies: the JAR signature files' records, the
/// central directory (the copied entries' records with their new offsets, then the new files') and the end
/// of central directory record. Encoded with `APKCore`'s record encoders, in apksig's field values.
enum Records {
    /// A copied entry's central directory record: the input's bytes with a new local header offset, or
    /// (entries from the Repack stage) encoded.
    enum CentralRecord {
        case input(Range<Int64>, headerOffset: UInt32)
        case encoded([UInt8])
    }

    /// Local header (the deflated data follows it) and central directory record of a new file, as apksig's
    /// `LocalFileRecord`/`CentralDirectoryRecord.*WithDeflateCompressedData` write them: raw deflate,
    /// version 20, UTF-8 flag, no extra fields, no attributes.
    static func deflatedRecords(name: String, data: [UInt8], compressed: [UInt8], crc: UInt32, timestamp: DOSTimestamp,
                                headerOffset: Int64) throws -> (localHeader: [UInt8], central: [UInt8]) {
        var entry = ZipEntry(nameBytes: Array(name.utf8), method: .deflated, crc32: crc, compressedSize: Int64(compressed.count),
                             uncompressedSize: Int64(data.count), lastModifiedTime: timestamp.time, lastModifiedDate: timestamp.date)
        entry.versionMadeBy = 20
        entry.versionNeeded = 20
        entry.flags = ZipFlags.utf8Names
        return (entry.encodedLocalHeader(extra: []), entry.encodedCentralDirectoryRecord(localHeaderOffset: headerOffset))
    }

    /// The central directory: `records` by `order`, then `appended`, written into one buffer (the input's
    /// records are copied from its mapping with the offset patched in place, not one array per entry).
    /// `reserving`: room for that many more bytes (the records of files written after the copied ones).
    static func centralDirectory(_ records: [(order: Int, record: CentralRecord)], then appended: [[UInt8]],
                                 input: (any DataSource)?, reserving: Int = 0) throws -> [UInt8] {
        var size = appended.reduce(0) { $0 + $1.count } + reserving
        var inOrder = true
        for (index, item) in records.enumerated() {
            switch item.record {
            case .input(let range, _): size += Int(range.count64)
            case .encoded(let bytes): size += bytes.count
            }
            if index > 0 && records[index - 1].order > item.order { inOrder = false }
        }
        let order = inOrder ? nil : records.indices.sorted { records[$0].order < records[$1].order }
        var result = [UInt8]()
        result.reserveCapacity(size)
        var position = 0
        while position < records.count {
            switch records[order?[position] ?? position].record {
            case .input(let range, _):
                guard let input else { throw SignError.internalInconsistency("a copied central directory record without its input") }
                // Records that follow one another in the input (an APK copied as it is: all of them) are read
                // in one piece, then each gets its new offset.
                var end = position + 1, inputEnd = range.upperBound
                while end < records.count, case .input(let next, _) = records[order?[end] ?? end].record, next.lowerBound == inputEnd {
                    inputEnd = next.upperBound
                    end += 1
                }
                var start = result.count
                // Read, not mapped: the archive's pages were given back after it was opened (`Signer`), and
                // mapping them again costs a page fault per few pages where a read copies them in one call.
                let piece = range.lowerBound..<inputEnd
                result.append(contentsOf: repeatElement(0, count: Int(piece.count64)))
                try result.withUnsafeMutableBytes { try input.read(piece, into: UnsafeMutableRawBufferPointer(rebasing: $0[start...])) }
                for index in position..<end {
                    guard case .input(let record, let headerOffset) = records[order?[index] ?? index].record else { continue }
                    try patchLocalHeaderOffset(&result, record: start, to: headerOffset)
                    start += Int(record.count64)
                }
                position = end
            case .encoded(let bytes):
                result.append(contentsOf: bytes)
                position += 1
            }
        }
        for bytes in appended { result.append(contentsOf: bytes) }
        return result
    }

    /// Writes the local header offset of the central directory record at `start`. A record whose offset field
    /// is 0xFFFFFFFF keeps the marker and gets the offset in its ZIP64 extra field instead (after the values of
    /// the sizes that are 0xFFFFFFFF), so ZIP64 records stay consistent as apksig keeps them
    /// (ApkSignerTest testSignApk_apkWithZip64Records_signsAndVerifiesSuccessfully).
    static func patchLocalHeaderOffset(_ cd: inout [UInt8], record start: Int, to offset: UInt32) throws {
        func uint16(_ at: Int) -> Int { Int(cd[at]) | Int(cd[at + 1]) << 8 }
        func isMarker(_ at: Int) -> Bool { cd[at] == 0xff && cd[at + 1] == 0xff && cd[at + 2] == 0xff && cd[at + 3] == 0xff }
        guard isMarker(start + 42) else {
            withUnsafeBytes(of: offset.littleEndian) { for i in 0..<4 { cd[start + 42 + i] = $0[i] } }
            return
        }
        // ZipArchive has checked that the field exists and holds the values the markers call for.
        let extraStart = start + 46 + uint16(start + 28)
        let extra = Array(cd[extraStart..<(extraStart + uint16(start + 30))])
        var position: Int?
        ExtraField.forEachRecord(in: extra) { id, _, data in
            guard id == 0x0001 else { return true }
            let at = data.lowerBound + 8 * ((isMarker(start + 24) ? 1 : 0) + (isMarker(start + 20) ? 1 : 0))
            if at + 8 <= data.upperBound { position = extraStart + at }
            return false
        }
        guard let position else {
            throw SignError.internalInconsistency("a ZIP64 central directory record without the offset in its ZIP64 field")
        }
        withUnsafeBytes(of: UInt64(offset).littleEndian) { for k in 0..<8 { cd[position + k] = $0[k] } }
    }

    /// The end of central directory record for `count` records of `centralDirectorySize` bytes at `offset`:
    /// the input's record with those fields replaced (as apksig does; its comment stays), or a new one with
    /// `comment`.
    /// `commentPadding` zero bytes lengthen the comment (apksig `EocdRecord.createWithPaddedComment`, for
    /// `--align-file-size`).
    static func endOfCentralDirectory(input: [UInt8]?, comment: [UInt8], count: Int, centralDirectorySize: Int,
                                      offset: Int64, commentPadding: Int = 0) throws -> [UInt8] {
        var eocd = input ?? EndOfCentralDirectory(entryCount: 0, centralDirectorySize: 0, centralDirectoryOffset: 0, comment: comment).encoded()
        if commentPadding > 0 {
            eocd += [UInt8](repeating: 0, count: commentPadding)
            let length = eocd.count - 22
            guard length <= 0xFFFF else { throw SignError.tooLarge("the ZIP comment padded to align the file size is \(length) bytes, over the 65535 a ZIP comment holds") }
            eocd[20] = UInt8(length & 0xff); eocd[21] = UInt8(length >> 8)
        }
        eocd[8] = UInt8(count & 0xff); eocd[9] = UInt8(count >> 8)
        eocd[10] = eocd[8]; eocd[11] = eocd[9]
        try patchUInt32(&eocd, at: 12, to: Int64(centralDirectorySize), what: "central directory size")
        try patchUInt32(&eocd, at: 16, to: offset, what: "central directory offset")
        return eocd
    }

    static func checkOffset(_ offset: Int64) throws {
        guard offset <= Int64(UInt32.max) else { throw SignError.tooLarge("it passes 4 GiB, which needs ZIP64, which APKs cannot use") }
    }

    static func patchUInt32(_ bytes: inout [UInt8], at offset: Int, to value: Int64, what: @autoclosure () -> String) throws {
        guard let value = UInt32(exactly: value) else { throw SignError.tooLarge("\(what()) \(value) does not fit 32 bits (ZIP64 is not allowed in APKs)") }
        let le = value.littleEndianBytes
        for i in 0..<4 { bytes[offset + i] = le[i] }
    }
}
