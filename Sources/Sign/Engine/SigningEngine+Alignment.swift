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
        let preserved = config.alignmentPreserved
        if inputHeaderOffset == outputHeaderOffset && preserved && !keepsAlignedData { return nil }
        let policy = alignment
        let multiple = Int64(policy.alignment(for: entry))
        if multiple <= 1 { return nil }
        if preserved {
            if keepsAlignedData {
                if inputDataOffset % multiple == 0 { return nil }
            } else {
                if inputHeaderOffset % multiple == outputHeaderOffset % multiple { return nil }
                if inputDataOffset % multiple != 0 { return nil }
            }
        }
        return policy.localExtra(for: entry, headerOffset: outputHeaderOffset, alignment: Int(multiple))
    }
}
