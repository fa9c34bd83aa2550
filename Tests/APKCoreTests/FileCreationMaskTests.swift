import APKCore
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// The umask read from `/proc/self/status` (`FileCreationMask`), as its `Umask:` line gives it.
@Suite struct FileCreationMaskTests {
    @Test func readsTheUmaskLine() {
        let status = Array("Name:\tapkpatch\nUmask:\t0027\nState:\tR (running)\n".utf8)
        #expect(FileCreationMask.parseUmask(status: status[...]) == 0o027)
        #expect(FileCreationMask.parseUmask(status: Array("Umask: 0077 \n".utf8)[...]) == 0o077)
        #expect(FileCreationMask.parseUmask(status: Array("Name:\tx\nUmask:\t0002".utf8)[...]) == 0o002)
    }

    @Test func nothingWithoutAnOctalNumberOnTheLine() {
        for text in ["Name:\tx\n", "Name:\tx\nXUmask:\t0022\n", "Umask:\t\n", "Umask:\t0028\n", "Umask:\t00 22\n", "Umask:\t777777777777\n"] {
            #expect(FileCreationMask.parseUmask(status: Array(text.utf8)[...]) == nil, "\(text.debugDescription)")
        }
    }

    @Test func theProcessMaskIsTheOneUmaskReports() {
        let mask = umask(0o022)
        umask(mask)
        #expect(FileCreationMask.current == mask)
    }
}
