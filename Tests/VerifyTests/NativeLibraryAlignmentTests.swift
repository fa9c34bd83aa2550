import APKCore
import Foundation
import TestSupport
import Testing
@testable import Verify

/// Minimal ELF shared objects written byte by byte: a header and program headers (PT_LOAD segments with the
/// given p_align, plus a PT_DYNAMIC whose small alignment must not count), in either class and byte order.
enum ELFFixture {
    static func make(is64Bit: Bool, bigEndian: Bool = false, loadAlignments: [UInt64], padding: Int = 3000) -> [UInt8] {
        var bytes: [UInt8] = []
        func put(_ value: UInt64, _ size: Int) {
            for index in 0..<size {
                let shift = UInt64(8 * (bigEndian ? size - 1 - index : index))
                bytes.append(UInt8(truncatingIfNeeded: value >> shift))
            }
        }
        let headerSize = is64Bit ? 64 : 52, entrySize = is64Bit ? 56 : 32
        let segments: [(type: UInt64, align: UInt64)] = loadAlignments.map { (1, $0) } + [(2, 8)]
        bytes += [0x7F, 0x45, 0x4C, 0x46, is64Bit ? 2 : 1, bigEndian ? 2 : 1, 1, 0] + [UInt8](repeating: 0, count: 8)
        put(3, 2)                                 // e_type ET_DYN
        put(is64Bit ? 183 : 40, 2)                // e_machine AArch64 / ARM
        put(1, 4)                                 // e_version
        put(0, is64Bit ? 8 : 4)                   // e_entry
        put(UInt64(headerSize), is64Bit ? 8 : 4)  // e_phoff
        put(0, is64Bit ? 8 : 4)                   // e_shoff
        put(0, 4)                                 // e_flags
        put(UInt64(headerSize), 2)                // e_ehsize
        put(UInt64(entrySize), 2)                 // e_phentsize
        put(UInt64(segments.count), 2)            // e_phnum
        put(is64Bit ? 64 : 40, 2)                 // e_shentsize
        put(0, 2); put(0, 2)                      // e_shnum, e_shstrndx
        let fileSize = UInt64(headerSize + entrySize * segments.count + padding)
        for segment in segments {
            if is64Bit {
                put(segment.type, 4); put(5, 4)          // p_type, p_flags
                put(0, 8); put(0, 8); put(0, 8)          // p_offset, p_vaddr, p_paddr
                put(fileSize, 8); put(fileSize, 8)       // p_filesz, p_memsz
                put(segment.align, 8)                    // p_align
            } else {
                put(segment.type, 4); put(0, 4); put(0, 4); put(0, 4)  // p_type, p_offset, p_vaddr, p_paddr
                put(fileSize, 4); put(fileSize, 4); put(5, 4)          // p_filesz, p_memsz, p_flags
                put(segment.align, 4)                                  // p_align
            }
        }
        // Text-like filler: it deflates well, so aapt add compresses the library.
        return bytes + (0..<padding).map { UInt8(0x61 + $0 % 7) }
    }
}

@Suite("Verify: 16 KiB page readiness of native libraries", .removesTemporaryDirectories)
struct NativeLibraryAlignmentTests {
    @Test("ELF32 and ELF64, little- and big-endian: every PT_LOAD p_align, as readelf reads it",
          arguments: [(true, false), (true, true), (false, false), (false, true)])
    func readsProgramHeaders(is64Bit: Bool, bigEndian: Bool) throws {
        let directory = try TestSupport.makeTemporaryDirectory("elf")
        for alignments in [[UInt64(4096), 4096], [16384, 16384], [16384, 4096], [65536]] {
            let bytes = ELFFixture.make(is64Bit: is64Bit, bigEndian: bigEndian, loadAlignments: alignments)
            let segments = try ELFLoadSegments(bytes)
            #expect(segments.elfClass == (is64Bit ? .elf64 : .elf32))
            #expect(segments.loadAlignments == alignments)
            #expect(segments.isLoadable(withPageSize: 16384) == alignments.allSatisfy { $0 % 16384 == 0 })
            // The oracle: binutils' readelf lists the same LOAD alignments.
            let file = directory.appendingPathComponent("lib.so")
            try Data(bytes).write(to: file)
            let readelf = try TestSupport.run("readelf", ["-lW", file.path])
            let theirs = readelf.stdout.split(separator: "\n").filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("LOAD") }
                .compactMap { $0.split(separator: " ").last.flatMap { UInt64($0.dropFirst(2), radix: 16) } }
            #expect(theirs == alignments, "\(readelf)")
        }
    }

    @Test("not ELF, truncated or hostile headers are reported, never trap")
    func hostileHeaders() throws {
        #expect(throws: ELFLoadSegments.Problem.self) { try ELFLoadSegments(Array("not an elf file at all, just text".utf8)) }
        let good = ELFFixture.make(is64Bit: true, loadAlignments: [16384])
        #expect(throws: ELFLoadSegments.Problem.self) { try ELFLoadSegments(Array(good.prefix(40))) }
        #expect(throws: ELFLoadSegments.Problem.self) { try ELFLoadSegments(Array(good.prefix(100))) }
        var far = good
        far[32] = 0xFF; far[33] = 0xFF; far[34] = 0xFF; far[39] = 0x7F  // e_phoff near 2^63
        #expect(throws: ELFLoadSegments.Problem.self) { try ELFLoadSegments(far) }
        var small = good
        small[54] = 8  // e_phentsize below a program header's size
        #expect(throws: ELFLoadSegments.Problem.self) { try ELFLoadSegments(small) }
        for seed in UInt64(0)..<500 {
            var bytes = good
            var generator = SplitMix64(seed: seed)
            for _ in 0..<4 { bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next()) }
            _ = try? ELFLoadSegments(Array(bytes.prefix(Int(generator.next() % UInt64(bytes.count)))))
        }
    }

    /// An APK with 64-bit and 32-bit libraries at 4 KiB and 16 KiB, stored (zip -0, align -P 16) or
    /// compressed (aapt add), signed by apksigner; the verifier's per-library report and warnings.
    @Test("verify reports each library's ZIP offset and LOAD alignment; 64-bit ones below 16 KiB warn")
    func reportsPerLibrary() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-elf")
        let libraries: [String: [UInt8]] = [
            "lib/arm64-v8a/libfour.so": ELFFixture.make(is64Bit: true, loadAlignments: [4096, 4096]),
            "lib/arm64-v8a/libsixteen.so": ELFFixture.make(is64Bit: true, loadAlignments: [16384, 16384]),
            "lib/armeabi-v7a/libfour.so": ELFFixture.make(is64Bit: false, loadAlignments: [4096]),
            "lib/x86_64/libcompressed.so": ELFFixture.make(is64Bit: true, loadAlignments: [4096], padding: 40_000),
        ]
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory) { fixture in
            fixture.rawFiles["lib/x86_64/libcompressed.so"] = libraries["lib/x86_64/libcompressed.so"]
        }
        // The others stored: zip -0, then page-aligned with align -P 16.
        let work = directory.appendingPathComponent("stored")
        for (name, bytes) in libraries where !name.contains("compressed") { try TestSupport.write(bytes, to: name, in: work) }
        let stored = libraries.keys.filter { !$0.contains("compressed") }.sorted()
        #expect(try TestSupport.run("zip", ["-q", "-0", unsigned] + stored, currentDirectory: work.path).succeeded)
        let aligned = directory.appendingPathComponent("aligned.apk").path
        // Debian's zipalign has no -P; apkpatch align is its drop-in with it.
        #expect(try TestSupport.apkpatch(["align", "-f", "-P", "16", "4", unsigned, aligned]).succeeded)
        let apk = try VerifyFixtures.sign(aligned, key: .rsa2048, schemes: .all, output: directory.appendingPathComponent("signed.apk").path)

        let report = try VerifyFixtures.verify(apk, signatureOnly: false)
        #expect(report.isVerified, "\(report.errors)")
        let byName = Dictionary(uniqueKeysWithValues: report.nativeLibraries.map { ($0.entry, $0) })
        #expect(Set(byName.keys) == Set(libraries.keys))
        let four = try #require(byName["lib/arm64-v8a/libfour.so"])
        #expect(four.elfClass == "elf64" && four.loadSegmentAlignments == [4096, 4096] && four.isLoadAlignment16K == false)
        #expect(four.isZipOffset16KAligned == true && !four.isCompressed)
        let sixteen = try #require(byName["lib/arm64-v8a/libsixteen.so"])
        #expect(sixteen.loadSegmentAlignments == [16384, 16384] && sixteen.isLoadAlignment16K == true)
        let arm32 = try #require(byName["lib/armeabi-v7a/libfour.so"])
        #expect(arm32.elfClass == "elf32" && arm32.loadSegmentAlignments == [4096] && arm32.isLoadAlignment16K == false)
        let compressed = try #require(byName["lib/x86_64/libcompressed.so"])
        #expect(compressed.isCompressed && compressed.isZipOffset16KAligned == nil)
        #expect(compressed.loadSegmentAlignments == [4096], "read by inflating the header bytes only")

        // Warnings: the two 64-bit libraries below 16 KiB; 32-bit code never runs on 16 KiB-page devices.
        let elfWarnings = report.installWarnings.filter { $0.code == .installNativeLibraryELFNot16KAligned }.map(\.context).sorted()
        #expect(elfWarnings == ["lib/arm64-v8a/libfour.so", "lib/x86_64/libcompressed.so"])
        #expect(!report.installWarnings.contains { $0.code == .installNativeLibraryNot16KAligned }, "align -P 16 placed them")

        // The CLI: the same in --json, and the warning on stderr.
        let json = try TestSupport.apkpatch(["verify", "--json", apk])
        #expect(json.succeeded, "\(json)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let listed = try #require(object["nativeLibraries"] as? [[String: Any]])
        let jsonFour = try #require(listed.first { $0["entry"] as? String == "lib/arm64-v8a/libfour.so" })
        #expect(jsonFour["loadSegmentAlignments"] as? [Int] == [4096, 4096])
        #expect(jsonFour["isLoadAlignment16K"] as? Bool == false)
        #expect(jsonFour["isZipOffset16KAligned"] as? Bool == true)
        let text = try TestSupport.apkpatch(["verify", apk])
        #expect(text.succeeded && text.stderr.contains("INSTALL_NATIVE_LIBRARY_ELF_NOT_16K_ALIGNED") && text.stderr.contains("max-page-size=16384"), "\(text)")
    }

    /// extractNativeLibs=false with a compressed library and one stored off a page boundary: Android refuses both
    /// (errors), and each is still reported with its ELF alignment, the next thing to fix once they are stored and
    /// aligned; the 16 KiB offset warning does not repeat the page error.
    @Test("libraries Android refuses for their packaging are still reported per library, ELF alignment included")
    func refusedLibrariesAreStillReported() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-so-refused")
        let compressed = ELFFixture.make(is64Bit: true, loadAlignments: [4096], padding: 40_000)
        let misaligned = ELFFixture.make(is64Bit: true, loadAlignments: [4096, 4096])
        let unsigned = try VerifyFixtures.unsignedAPK(in: directory) { fixture in
            fixture.applicationAttributes = "android:extractNativeLibs=\"false\""
            fixture.rawFiles["lib/x86_64/libcompressed.so"] = compressed
        }
        let work = directory.appendingPathComponent("stored")
        try TestSupport.write(Array("x".utf8), to: "assets/a", in: work)  // one odd-sized stored entry before the library
        try TestSupport.write(misaligned, to: "lib/arm64-v8a/libmisaligned.so", in: work)
        #expect(try TestSupport.run("zip", ["-q", "-0", unsigned, "assets/a", "lib/arm64-v8a/libmisaligned.so"], currentDirectory: work.path).succeeded)
        let apk = try VerifyFixtures.sign(unsigned, key: .rsa2048, schemes: .all, output: directory.appendingPathComponent("signed.apk").path)
        let entry = try #require(try VerifyFixtures.zip(try VerifyFixtures.read(apk)).entry(named: "lib/arm64-v8a/libmisaligned.so"))
        try #require(entry.dataOffset % 4096 != 0, "the fixture must place the library off a page boundary")

        let report = try VerifyFixtures.verify(apk, signatureOnly: false)
        // (aapt's resources.arsc is not aligned either; not what this test is about.)
        #expect(VerifyFixtures.codes(report.installErrors).filter { $0.hasPrefix("INSTALL_NATIVE") }.sorted()
                == ["INSTALL_NATIVE_LIBRARY_COMPRESSED", "INSTALL_NATIVE_LIBRARY_NOT_PAGE_ALIGNED"])
        let byName = Dictionary(uniqueKeysWithValues: report.nativeLibraries.map { ($0.entry, $0) })
        #expect(byName["lib/x86_64/libcompressed.so"]?.isCompressed == true && byName["lib/x86_64/libcompressed.so"]?.loadSegmentAlignments == [4096])
        #expect(byName["lib/arm64-v8a/libmisaligned.so"]?.isZipOffset16KAligned == false && byName["lib/arm64-v8a/libmisaligned.so"]?.loadSegmentAlignments == [4096, 4096])
        let elfWarnings = report.installWarnings.filter { $0.code == .installNativeLibraryELFNot16KAligned }.map(\.context).sorted()
        #expect(elfWarnings == ["lib/arm64-v8a/libmisaligned.so", "lib/x86_64/libcompressed.so"])
        #expect(!report.installWarnings.contains { $0.code == .installNativeLibraryNot16KAligned }, "the page error says it already")
        let json = try TestSupport.apkpatch(["verify", "--json", apk])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect((object["nativeLibraries"] as? [[String: Any]])?.count == 2, "\(json)")
    }

    /// A real shared object from the system compiler, linked for 4 KiB and for 16 KiB pages.
    @Test("gcc -shared with -z max-page-size: 4096 warns, 16384 does not")
    func compilerBuiltLibraries() throws {
        let directory = try TestSupport.makeTemporaryDirectory("verify-gcc")
        try TestSupport.write("int answer(void) { return 42; }\n", to: "a.c", in: directory)
        var libraries: [String: [UInt8]] = [:]
        for page in [4096, 16384] {
            let output = directory.appendingPathComponent("lib\(page).so").path
            let gcc = try TestSupport.run("gcc", ["-shared", "-fPIC", "-Wl,-z,max-page-size=\(page)", "-o", output, directory.appendingPathComponent("a.c").path])
            try #require(gcc.succeeded, "\(gcc)")
            libraries["lib/x86_64/lib\(page).so"] = try TestSupport.readBytes(output)
        }
        let apk = try VerifyFixtures.signedAPK(in: directory) { fixture in
            for (name, bytes) in libraries { fixture.rawFiles[name] = bytes }
        }
        let report = try VerifyFixtures.verify(apk, signatureOnly: false)
        let byName = Dictionary(uniqueKeysWithValues: report.nativeLibraries.map { ($0.entry, $0) })
        #expect(byName["lib/x86_64/lib4096.so"]?.isLoadAlignment16K == false)
        #expect(byName["lib/x86_64/lib16384.so"]?.isLoadAlignment16K == true)
        #expect(report.installWarnings.filter { $0.code == .installNativeLibraryELFNot16KAligned }.map(\.context) == ["lib/x86_64/lib4096.so"])
    }
}
