import Align
import APKCore
import ZlibWrapper

/// The `PT_LOAD` segments' alignments of an ELF file, read from its header and program header table alone.
///
/// Layout (System V gABI, "ELF Header" and "Program Header"), offsets in bytes, every field in the byte order
/// `e_ident[EI_DATA]` names (1: little-endian, 2: big-endian):
///
///     e_ident[0..<4] = 7f 'E' 'L' 'F', e_ident[4] = EI_CLASS (1: ELFCLASS32, 2: ELFCLASS64), e_ident[5] = EI_DATA
///     ELF32: e_phoff u32 @28, e_phentsize u16 @42, e_phnum u16 @44        (header 52 bytes)
///     ELF64: e_phoff u64 @32, e_phentsize u16 @54, e_phnum u16 @56        (header 64 bytes)
///     Elf32_Phdr: p_type u32 @0 … p_align u32 @28                          (32 bytes)
///     Elf64_Phdr: p_type u32 @0, p_flags u32 @4 … p_align u64 @48          (56 bytes)
///
/// A loader maps each `PT_LOAD` (type 1) segment at an address congruent to its file offset modulo `p_align`;
/// on a kernel with 16 KiB pages a segment aligned to less cannot be mapped (Android's 16 KB page-size guide;
/// `check_elf_alignment.sh` reads the same field with `objdump -p`).
struct ELFLoadSegments: Equatable {
    enum Class: String { case elf32, elf64 }

    /// Why the program headers could not be read.
    struct Problem: Error, Equatable, CustomStringConvertible {
        let description: String
    }

    let elfClass: Class
    /// `p_align` of each `PT_LOAD` segment, in file order.
    let loadAlignments: [UInt64]

    /// Program header tables beyond this offset are not read (no real shared object puts them there).
    static let maxHeaderBytes = 1 << 20
    static let identificationSize = 16

    /// How many bytes from the start of the file hold the header and the program header table, given at least
    /// the header (`elf64HeaderSize` bytes, or the whole file when shorter).
    static func headerBytesNeeded(_ prefix: [UInt8]) throws(Problem) -> Int {
        let layout = try Layout(prefix)
        let end = layout.programHeaderOffset.addingReportingOverflow(UInt64(layout.entrySize) * UInt64(layout.count))
        guard !end.overflow, end.partialValue <= UInt64(maxHeaderBytes) else {
            throw Problem(description: "its program headers lie beyond the first \(maxHeaderBytes >> 20) MiB")
        }
        return max(Int(end.partialValue), layout.headerSize)
    }

    static let elf64HeaderSize = 64

    /// Reads the segments from the file's first bytes (at least `headerBytesNeeded`).
    init(_ bytes: [UInt8]) throws(Problem) {
        let layout = try Layout(bytes)
        let needed = try Self.headerBytesNeeded(bytes)
        guard bytes.count >= needed else { throw Problem(description: "it ends inside its program header table") }
        elfClass = layout.elfClass
        var alignments: [UInt64] = []
        for index in 0..<layout.count {
            let start = Int(layout.programHeaderOffset) + index * layout.entrySize
            let type = layout.read(bytes, at: start, size: 4)
            guard type == 1 else { continue }  // PT_LOAD
            alignments.append(layout.elfClass == .elf64 ? layout.read(bytes, at: start + 48, size: 8) : layout.read(bytes, at: start + 28, size: 4))
        }
        loadAlignments = alignments
    }

    /// Whether every `PT_LOAD` segment is aligned to a multiple of `pageSize` (false without any: nothing to map).
    func isLoadable(withPageSize pageSize: UInt64) -> Bool {
        !loadAlignments.isEmpty && loadAlignments.allSatisfy { $0 >= pageSize && $0 % pageSize == 0 }
    }

    /// The header fields that locate the program header table.
    private struct Layout {
        let elfClass: Class
        let isLittleEndian: Bool
        let headerSize: Int
        let programHeaderOffset: UInt64
        let entrySize: Int
        let count: Int

        init(_ bytes: [UInt8]) throws(Problem) {
            guard bytes.count >= ELFLoadSegments.identificationSize, bytes[0] == 0x7F, bytes[1] == 0x45, bytes[2] == 0x4C, bytes[3] == 0x46 else {
                throw Problem(description: "it is not an ELF file")
            }
            switch bytes[4] {
            case 1: elfClass = .elf32
            case 2: elfClass = .elf64
            default: throw Problem(description: "its ELF class \(bytes[4]) is neither 32- nor 64-bit")
            }
            switch bytes[5] {
            case 1: isLittleEndian = true
            case 2: isLittleEndian = false
            default: throw Problem(description: "its ELF data encoding \(bytes[5]) is neither little- nor big-endian")
            }
            headerSize = elfClass == .elf64 ? ELFLoadSegments.elf64HeaderSize : 52
            guard bytes.count >= headerSize else { throw Problem(description: "it ends inside its ELF header") }
            let offsets: (phoff: Int, phoffSize: Int, phentsize: Int, phnum: Int) = elfClass == .elf64 ? (32, 8, 54, 56) : (28, 4, 42, 44)
            let reader = FieldReader(isLittleEndian: isLittleEndian)
            programHeaderOffset = reader.read(bytes, at: offsets.phoff, size: offsets.phoffSize)
            entrySize = Int(reader.read(bytes, at: offsets.phentsize, size: 2))
            count = Int(reader.read(bytes, at: offsets.phnum, size: 2))
            let minimumEntrySize = elfClass == .elf64 ? 56 : 32
            if count == 0xFFFF { throw Problem(description: "it has more program headers than its ELF header can count (PN_XNUM)") }
            guard count == 0 || entrySize >= minimumEntrySize else {
                throw Problem(description: "its program headers are \(entrySize) bytes, fewer than the \(minimumEntrySize) of an ELF\(elfClass == .elf64 ? 64 : 32) program header")
            }
        }

        func read(_ bytes: [UInt8], at offset: Int, size: Int) -> UInt64 {
            FieldReader(isLittleEndian: isLittleEndian).read(bytes, at: offset, size: size)
        }
    }

    /// An unsigned field of 2, 4 or 8 bytes in the file's byte order (the caller checked the bounds).
    private struct FieldReader {
        let isLittleEndian: Bool
        func read(_ bytes: [UInt8], at offset: Int, size: Int) -> UInt64 {
            var value: UInt64 = 0
            for index in 0..<size {
                let byte = UInt64(bytes[offset + (isLittleEndian ? size - 1 - index : index)])
                value = value << 8 | byte
            }
            return value
        }
    }
}

/// One native library's readiness for devices with 16 KiB pages (Android 15+; Google Play requires it of apps
/// targeting Android 15): where its data starts in the ZIP and how its ELF `PT_LOAD` segments are aligned.
public struct NativeLibraryReport: Sendable, Equatable, Encodable {
    /// The entry, e.g. `lib/arm64-v8a/libapp.so`.
    public var entry: String
    public var isCompressed: Bool
    /// Where the entry's data starts in the APK.
    public var dataOffset: Int64
    /// Whether a stored library's data starts on a 16 KiB boundary (nil when compressed: Android extracts it).
    public var isZipOffset16KAligned: Bool?
    /// The multiple a stored library's data is aligned to when the APK is signed again with the default
    /// `--lib-page-alignment` (16384), by `apkpatch sign` or apksigner: the one in its Android alignment field
    /// (0xd935) when it has one, which both keep (an earlier `--lib-page-alignment 4096` wrote 4096 there);
    /// nil when compressed.
    public var signingAlignment: Int?
    /// `elf32` or `elf64`; nil when the header could not be read.
    public var elfClass: String?
    /// `p_align` of each `PT_LOAD` segment; nil when the header could not be read.
    public var loadSegmentAlignments: [UInt64]?
    /// Whether every `PT_LOAD` segment is aligned to a multiple of 16 KiB; nil when not read.
    public var isLoadAlignment16K: Bool?
    /// Why the ELF header was not read, if it was not.
    public var problem: String?

    static let pageSize16K: Int64 = 16384

    /// Reads `entry`'s ELF program headers from the archive without extracting it: the first bytes of a stored
    /// entry, or as many as needed inflated from a compressed one.
    init(entry: ZipEntry, archive: APKArchive) {
        self.entry = entry.name
        isCompressed = entry.isCompressed
        dataOffset = entry.dataOffset
        isZipOffset16KAligned = entry.isCompressed ? nil : entry.dataOffset % Self.pageSize16K == 0
        signingAlignment = entry.isCompressed ? nil : AlignmentPolicy.apksig(libraryPageAlignment: Int(Self.pageSize16K)).alignment(for: entry)
        do {
            let head = try Self.prefix(of: entry, count: ELFLoadSegments.elf64HeaderSize, archive: archive)
            let needed = try ELFLoadSegments.headerBytesNeeded(head)
            let segments = try ELFLoadSegments(needed <= head.count ? head : try Self.prefix(of: entry, count: needed, archive: archive))
            elfClass = segments.elfClass.rawValue
            loadSegmentAlignments = segments.loadAlignments
            isLoadAlignment16K = segments.isLoadable(withPageSize: UInt64(Self.pageSize16K))
        } catch let problem as ELFLoadSegments.Problem {
            self.problem = problem.description
        } catch {
            self.problem = "its data could not be read (\(error))"
        }
    }

    /// The entry's first `count` uncompressed bytes (fewer when it is shorter).
    private static func prefix(of entry: ZipEntry, count: Int, archive: APKArchive) throws -> [UInt8] {
        let wanted = Int(min(Int64(count), entry.uncompressedSize))
        if !entry.isCompressed {
            let available = min(Int64(wanted), entry.compressedSize)
            return try archive.source.bytes(in: entry.dataOffset..<(entry.dataOffset + available))
        }
        return try archive.source.withBytes(in: entry.dataRange) { try Inflate.prefix($0, count: wanted) }
    }
}
