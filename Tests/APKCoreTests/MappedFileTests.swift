import Testing
@testable import APKCore
#if canImport(Glibc)
import Glibc
#endif

@Suite(.removesTemporaryDirectories) struct MappedFileTests {
    /// `readAhead` brings a file that is not in the page cache into it without anyone reading it. Whether a
    /// page is cached is what `mincore` reports for a file mapping.
    @Test func readAheadFillsThePageCache() throws {
        let path = "/tmp/apkpatch-readahead-\(getpid()).bin"
        defer { unlink(path) }
        let size = 24 << 20
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        let chunk = [UInt8](repeating: 0x5a, count: 1 << 20)
        for _ in 0..<(size >> 20) { #expect(chunk.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) } == chunk.count) }
        // Written back and dropped from the page cache (clean pages go with POSIX_FADV_DONTNEED).
        #expect(fsync(fd) == 0)
        _ = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
        close(fd)

        let file = try MappedFile(path: path)
        let before = try Self.cachedFraction(path)
        // A file system that keeps every page (tmpfs) cannot show readahead: nothing to check there.
        guard before < 0.5 else { return }
        file.readAhead()
        var after = before
        for _ in 0..<200 where after < 0.9 {
            usleep(10_000)
            after = try Self.cachedFraction(path)
        }
        // Not all of it: under memory pressure the kernel may already be evicting some again (seen at 98%
        // while the whole suite runs). Without readahead nothing would come in at all.
        #expect(after >= 0.5, "\(Int(before * 100))% cached before readAhead, \(Int(after * 100))% two seconds after")
    }

    /// `readAhead` skips a file the page cache holds whole, and only that: a file missing one MiB in the middle
    /// is not whole.
    @Test func wholeFileInThePageCacheIsToldApart() throws {
        let path = "/tmp/apkpatch-cached-\(getpid()).bin"
        defer { unlink(path) }
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0xa5, count: 1 << 20)
        for _ in 0..<8 { #expect(chunk.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) } == chunk.count) }
        #expect(write(fd, "end", 3) == 3)  // a last partial page
        #expect(fsync(fd) == 0)
        let file = try MappedFile(path: path)
        // Under memory pressure the kernel may already be evicting some of it: nothing to check then.
        guard try Self.cachedFraction(path) == 1 else { return }
        // Kernels before 6.5 cannot count them (no cachestat): readAhead then always advises.
        guard let whole = file.isAllCached else { return }
        #expect(whole)
        _ = posix_fadvise(fd, 3 << 20, 1 << 20, POSIX_FADV_DONTNEED)
        // A file system that keeps every page (tmpfs) cannot drop them: nothing more to check there.
        guard try Self.cachedFraction(path) < 1 else { return }
        #expect(file.isAllCached == false)
    }

    /// The fraction of `path`'s pages in the page cache, from `mincore` on a fresh mapping (which maps nothing
    /// in itself).
    static func cachedFraction(_ path: String) throws -> Double {
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        var info = stat()
        try #require(fstat(fd, &info) == 0)
        let size = Int(info.st_size)
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let mapping = mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0)
        try #require(mapping != MAP_FAILED)
        defer { munmap(mapping, size) }
        var vector = [UInt8](repeating: 0, count: (size + page - 1) / page)
        try #require(mincore(mapping, size, &vector) == 0)
        return Double(vector.filter { $0 & 1 != 0 }.count) / Double(vector.count)
    }
}
