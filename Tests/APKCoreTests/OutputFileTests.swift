import Foundation
import Testing
@testable import APKCore
#if canImport(Glibc)
import Glibc
#endif

/// `OutputFile` gathers copied and referenced pieces into `writev` calls: whatever the mix, the file must hold
/// exactly the bytes written, in order.
@Suite(.removesTemporaryDirectories) struct OutputFileTests {
    /// `reservation`: what `reserve` allocates first: more than is written (commit cuts the file back), or
    /// less (a signer reserves its entries section and appends the rest: nothing is cut).
    @Test("copied and referenced pieces reach the file in order",
          arguments: zip([1, 7, 0x5eed, 3] as [UInt64], [16 << 20, 16 << 20, 16 << 20, 1 << 20]))
    func gatheredWrites(seed: UInt64, reservation: Int64) throws {
        let directory = "/tmp/apkpatch-outputfile-\(getpid())-\(seed)"
        mkdir(directory, 0o700)
        defer { unlink(directory + "/out.bin"); rmdir(directory) }
        // 6 MiB of referenced bytes that outlive the output, and a log of what was written.
        let source = UnsafeMutableRawBufferPointer.allocate(byteCount: 6 << 20, alignment: 16)
        defer { source.deallocate() }
        var state = seed | 1
        func next() -> UInt64 { state = state &* 6364136223846793005 &+ 1442695040888963407; return state >> 33 }
        for i in 0..<source.count { source[i] = UInt8(truncatingIfNeeded: next()) }
        var expected: [UInt8] = []
        let output = try OutputFile(destination: directory + "/out.bin")
        try output.reserve(reservation)
        var offset = 0
        while offset < source.count {
            // Mostly tiny pieces (more than writev's 1024 per call), now and then a large one.
            let size = min(source.count - offset, next() % 50 == 0 ? Int(next() % (3 << 20)) : Int(next() % 200))
            let bytes = UnsafeRawBufferPointer(rebasing: source[offset..<(offset + size)])
            expected += Array(bytes)
            switch next() % 3 {
            case 0, 1: try output.write(bytes)
            default:
                let zeros = Int(next() % 5)
                try output.write(Array(bytes))
                try output.writeZeros(zeros)
                expected += [UInt8](repeating: 0, count: zeros)
            }
            offset += size
        }
        #expect(output.position == Int64(expected.count))
        try output.commit()
        let written = try MappedFile(path: directory + "/out.bin").allBytes()
        #expect(written.count == expected.count)
        #expect(written == expected)
        var info = stat()
        #expect(stat(directory + "/out.bin", &info) == 0)
        #expect(Int(info.st_blocks) * 512 < expected.count + (1 << 20), "\(info.st_blocks) blocks for \(expected.count) bytes")
    }

    @Test("an output's temporary file is registered for a bus error until commit, and only its own")
    func busErrorRegistration() throws {
        let directory = "/tmp/apkpatch-outputfile-bus-\(getpid())"
        mkdir(directory, 0o700)
        defer { unlink(directory + "/a.bin"); unlink(directory + "/b.bin"); rmdir(directory) }
        var first: OutputFile? = try OutputFile(destination: directory + "/a.bin", unnamed: false)
        let firstTemporary = first!.temporaryPath
        #expect(BusErrorGuard.registeredPaths.contains(firstTemporary))
        try first!.write([1, 2, 3])
        try first!.commit()
        #expect(!BusErrorGuard.registeredPaths.contains(firstTemporary))
        // The slot the first output freed is taken by the next one; the first one's end must not free it again.
        let second = try OutputFile(destination: directory + "/b.bin", unnamed: false)
        first = nil
        #expect(BusErrorGuard.registeredPaths.contains(second.temporaryPath))
        try second.commit()
        #expect(!BusErrorGuard.registeredPaths.contains(second.temporaryPath))
    }

    /// Other threads may be reading a mapped input while an output is created (sign digests the input as soon
    /// as it starts): a temporary file that existed for a moment unregistered could be left by a bus error.
    @Test("a temporary file is registered for a bus error from the moment it exists until it is removed")
    func registeredFromCreation() throws {
        let directory = "/tmp/apkpatch-outputfile-created-\(getpid())"
        mkdir(directory, 0o700)
        defer { rmdir(directory) }
        // Other tests create outputs at the same time: keep only this directory's, under a lock.
        let lock = Lock()
        nonisolated(unsafe) var seen: [(path: String, registered: Bool)] = []
        OutputFile.createdForTesting = { path in
            guard path.hasPrefix(directory + "/") else { return }
            let registered = access(path, F_OK) == 0 && BusErrorGuard.registeredPaths.contains(path)
            lock.withLock { seen.append((path, registered)) }
        }
        defer { OutputFile.createdForTesting = nil }
        var output: OutputFile? = try OutputFile(destination: directory + "/c.bin", unnamed: false)
        let temporary = output!.temporaryPath
        let observed = lock.withLock { seen }
        #expect(observed.count == 1 && observed[0].path == temporary && observed[0].registered, "\(observed)")
        output = nil  // not committed: removed, then unregistered
        #expect(access(temporary, F_OK) != 0)
        #expect(!BusErrorGuard.registeredPaths.contains(temporary))
    }

    /// Issue 19: a killed run left a full-size `.NAME.tmp-XXXXXXXX` beside the output. The temporary output is
    /// unnamed (`O_TMPFILE`) until commit: nothing shows in the directory while it is written, nothing stays
    /// when it is dropped, and commit gives it the destination's name.
    @Test("an unnamed temporary output is invisible until commit and leaves nothing when dropped")
    func unnamedTemporaryOutput() throws {
        let directory = "/tmp/apkpatch-outputfile-unnamed-\(getpid())"
        mkdir(directory, 0o700)
        defer { unlink(directory + "/u.bin"); rmdir(directory) }
        func names() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: directory) }
        var output: OutputFile? = try OutputFile(destination: directory + "/u.bin")
        #expect(output!.isUnnamed, "O_TMPFILE is expected on Linux /tmp")
        try output!.write([1, 2, 3])
        #expect(try output!.mapWritten().bytes(in: 0..<3) == [1, 2, 3])
        #expect(try names().isEmpty, "written but not committed: no name in the directory")
        output = nil
        #expect(try names().isEmpty, "dropped: nothing left")
        let second = try OutputFile(destination: directory + "/u.bin", mode: 0o640)
        try second.write([4, 5])
        try second.commit()
        #expect(try names() == ["u.bin"])
        #expect(try MappedFile(path: directory + "/u.bin").allBytes() == [4, 5])
        var info = stat()
        #expect(stat(directory + "/u.bin", &info) == 0 && info.st_mode & 0o777 == 0o640)
    }
}
