import Align
import APKCore

// MARK: - Alignment (apksig ApkSigner.outputInputJarEntryLfhRecord)

extension SigningEngine {
    /// The one alignment policy (`Align`) with apksig's rules: stored entries on 4 bytes, `.so` files on the
    /// library page size, an existing 0xd935 field's multiple kept, padding in a fresh 0xd935 field.
    var alignment: AlignmentPolicy { AlignmentPolicy.apksig(libraryPageAlignment: config.libraryPageAlignment) }

    /// The new local extra field for `entry`, or nil to keep its record as it is.
    ///
    /// apksig: compressed entries are never aligned; the multiple is the one in an existing 0xd935 field,
    /// else the library page size for `.so`, else 4. With `alignmentPreserved` an entry stays as it is when
    /// it keeps its position modulo the multiple, or when its data was not aligned in the input either;
    /// otherwise (and always by default since build-tools 35) stored entries get a fresh 0xd935 field.
    func alignedExtra(for entry: ZipEntry, inputHeaderOffset: Int64, outputHeaderOffset: Int64,
                      inputDataOffset: Int64, keepsAlignedData: Bool = false) -> [UInt8]? {
        var extra: [UInt8] = []
        guard appendAlignedExtra(for: entry, inputHeaderOffset: inputHeaderOffset, outputHeaderOffset: outputHeaderOffset,
                                 inputDataOffset: inputDataOffset, keepsAlignedData: keepsAlignedData, to: &extra) else { return nil }
        return extra
    }

    /// `alignedExtra`'s new local extra field appended to `output` (one buffer for all of an APK's entries), or
    /// false, with nothing appended, to keep the entry's record as it is.
    func appendAlignedExtra(for entry: borrowing ZipEntry, inputHeaderOffset: Int64, outputHeaderOffset: Int64,
                            inputDataOffset: Int64, keepsAlignedData: Bool = false, to output: inout [UInt8]) -> Bool {
        appendAlignedExtra(method: entry.method, localExtra: entry.localExtra, name: entry.name, nameLength: entry.nameBytes.count,
                           inputHeaderOffset: inputHeaderOffset, outputHeaderOffset: outputHeaderOffset,
                           inputDataOffset: inputDataOffset, keepsAlignedData: keepsAlignedData, to: &output)
    }

    /// The same from the four fields of the entry it reads: a caller that holds the entry in a class (a
    /// `KeptEntry`) passes them, as passing the whole entry copies it.
    func appendAlignedExtra(method: CompressionMethod, localExtra: [UInt8], name: String, nameLength: Int,
                            inputHeaderOffset: Int64, outputHeaderOffset: Int64, inputDataOffset: Int64,
                            keepsAlignedData: Bool = false, to output: inout [UInt8]) -> Bool {
        let preserved = config.alignmentPreserved
        if inputHeaderOffset == outputHeaderOffset && preserved && !keepsAlignedData { return false }
        let policy = alignment
        let multiple = Int64(policy.alignment(method: method, localExtra: localExtra, name: name))
        if multiple <= 1 { return false }
        if preserved {
            if keepsAlignedData {
                if inputDataOffset % multiple == 0 { return false }
            } else {
                if inputHeaderOffset % multiple == outputHeaderOffset % multiple { return false }
                if inputDataOffset % multiple != 0 { return false }
            }
        }
        policy.appendLocalExtra(inputExtra: localExtra, nameLength: nameLength, headerOffset: outputHeaderOffset,
                                alignment: Int(multiple), to: &output)
        return true
    }
}
