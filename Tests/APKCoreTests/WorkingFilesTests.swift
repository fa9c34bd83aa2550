import Foundation
import Testing
@testable import APKCore
#if canImport(Glibc)
import Glibc
#endif

/// Watch mode's working files: named only when they must be, locked while a session uses them, and removed by
/// a later session only when they are a killed session's (ours by name and owner, locked by nobody).
@Suite(.removesTemporaryDirectories) struct WorkingFilesTests {
    static func makeDirectory(_ label: String) -> String {
        let directory = "/tmp/apkpatch-working-\(label)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        mkdir(directory, 0o700)
        return directory
    }

    static func names(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    static func write(_ text: String, to path: String) {
        FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
    }

    @Test("a leftover is removed only if its name matches, it is ours, a file or directory, and nobody holds its lock")
    func leftoversAreRemovedOnlyWhenSafe() throws {
        let directory = Self.makeDirectory("leftovers")
        defer { OutputDirectory.removeTree(directory) }
        for name in [".a.apk.apkpatch-stale001", ".a.apk.apkpatch-locked01", "a.apk", ".a.apk.apkpatch-foreign1", "notours.apkpatch-stale002"] {
            Self.write(name, to: directory + "/" + name)
        }
        mkdir(directory + "/.a.apk.apkpatch-dirstale", 0o700)
        Self.write("inside", to: directory + "/.a.apk.apkpatch-dirstale/x")
        symlink(directory + "/a.apk", directory + "/.a.apk.apkpatch-symlink1")
        #expect(chown(directory + "/.a.apk.apkpatch-foreign1", 65534, 65534) == 0 || getuid() != 0)
        // A live session's file: locked through another open file (this process's, as another session's would be).
        // Closed once, below: a second close here could close another test's descriptor that took its number
        // meanwhile (tests run side by side in this process), dropping that test's lock.
        let held = open(directory + "/.a.apk.apkpatch-locked01", O_RDONLY)
        #expect(WorkingFiles.lock(held))

        let removed = WorkingFiles.removeLeftovers(in: directory) { $0.hasPrefix(".a.apk.apkpatch-") }
        #expect(removed.sorted() == [".a.apk.apkpatch-dirstale", ".a.apk.apkpatch-stale001"])
        var expected = [".a.apk.apkpatch-locked01", ".a.apk.apkpatch-symlink1", "a.apk", "notours.apkpatch-stale002"]
        if getuid() == 0 { expected.append(".a.apk.apkpatch-foreign1") }
        #expect(Self.names(directory) == expected.sorted())
        // Once the holder is gone, the file is a leftover like any other.
        close(held)
        #expect(WorkingFiles.removeLeftovers(in: directory) { $0 == ".a.apk.apkpatch-locked01" } == [".a.apk.apkpatch-locked01"])
    }

    @Test("recycler names: its spare and swap names and the older slot names match; the output and other files do not")
    func recyclerNames() {
        for name in [".out.apk.apkpatch-AbCd1234", ".out.apk.apkpatch-AbCd1234.swap", ".out.apk.apkpatch-0", ".out.apk.apkpatch-1.link", ".x.apkpatch-00000000"] {
            #expect(OutputRecycler.isWorkingFileName(name), "\(name)")
        }
        for name in ["out.apk", ".out.apk", "out.apk.apkpatch-AbCd1234", ".out.apk.apkpatch-AbCd123", ".out.apk.apkpatch-AbCd12345", ".out.apk.apkpatch-Ab-d1234",
                     ".out.apk.apkpatch-2", ".apkpatch-0", ".out.apk.tmp-AbCd1234", ".apkpatch-stream-AbCdEf"] {
            #expect(!OutputRecycler.isWorkingFileName(name), "\(name)")
        }
    }

    /// Builds `content` through `recycler` as watch mode does: open the slot not published, write, publish.
    static func build(_ recycler: OutputRecycler, _ content: String) throws -> Bool {
        let output = try recycler.open()
        try output.write(Array(content.utf8))
        try output.commit()
        return output.reused
    }

    @Test("the recycler: the first build and the spare copy have no name, then one spare; leftovers go, a live session's stay")
    func recyclerLeavesOneNamedSpareAtMost() throws {
        let directory = Self.makeDirectory("recycler")
        defer { OutputDirectory.removeTree(directory) }
        let destination = directory + "/out.apk"
        // A killed session's files, of this version and of the older naming.
        for name in [".out.apk.apkpatch-killed01", ".out.apk.apkpatch-killed01.swap", ".out.apk.apkpatch-0", ".other.apk.apkpatch-1.link"] {
            Self.write("stale", to: directory + "/" + name)
        }
        Self.write("older output", to: destination)
        var recycler: OutputRecycler? = OutputRecycler(destination: destination)
        #expect(Self.names(directory) == ["out.apk"], "the leftovers are removed when a recycler starts")

        #expect(try !Self.build(recycler!, "first"))
        #expect(Self.names(directory) == ["out.apk"], "the first build had no name but the destination")
        #expect(try String(contentsOfFile: destination, encoding: .utf8) == "first")
        recycler!.prepareSpareCopy()
        #expect(try Self.build(recycler!, "second"), "the second build rewrites the unnamed copy of the first")
        let spares = Self.names(directory).filter { $0 != "out.apk" }
        #expect(spares.count == 1 && OutputRecycler.isWorkingFileName(spares[0]), "\(spares)")
        #expect(try String(contentsOfFile: directory + "/" + spares[0], encoding: .utf8) == "first")
        #expect(try String(contentsOfFile: destination, encoding: .utf8) == "second")
        #expect(try Self.build(recycler!, "third"))
        #expect(Self.names(directory) == (["out.apk"] + spares).sorted(), "the same spare name, now the second build")
        #expect(try String(contentsOfFile: directory + "/" + spares[0], encoding: .utf8) == "second")
        #expect(try String(contentsOfFile: destination, encoding: .utf8) == "third")
        var status = stat()
        #expect(stat(destination, &status) == 0 && status.st_nlink == 1, "the published build has no second name")

        // Another session starting in the same directory leaves this live session's spare alone.
        var other: OutputRecycler? = OutputRecycler(destination: directory + "/other.apk")
        #expect(Self.names(directory).contains(spares[0]))
        #expect(try Self.build(recycler!, "fourth"))
        #expect(try String(contentsOfFile: destination, encoding: .utf8) == "fourth")
        other = nil
        _ = other
        recycler = nil
        #expect(Self.names(directory) == ["out.apk"], "a stopped session leaves its output only")
        #expect(try String(contentsOfFile: destination, encoding: .utf8) == "fourth")
    }

    @Test("the destination replaced by another program between builds: the next build still publishes, nothing is left")
    func destinationReplacedBetweenBuilds() throws {
        let directory = Self.makeDirectory("replaced")
        defer { OutputDirectory.removeTree(directory) }
        let destination = directory + "/out.apk"
        var recycler: OutputRecycler? = OutputRecycler(destination: destination)
        _ = try Self.build(recycler!, "first")
        recycler!.prepareSpareCopy()
        _ = try Self.build(recycler!, "second")
        unlink(destination)
        Self.write("someone else's", to: destination)
        _ = try Self.build(recycler!, "third")
        #expect(try String(contentsOfFile: destination, encoding: .utf8) == "third")
        _ = try Self.build(recycler!, "fourth")
        #expect(try String(contentsOfFile: destination, encoding: .utf8) == "fourth")
        recycler = nil
        #expect(Self.names(directory) == ["out.apk"])
    }

    @Test("named temporary outputs (no O_TMPFILE): locked while written; a new one removes the ones killed runs left")
    func namedTemporaryOutputs() throws {
        let directory = Self.makeDirectory("named")
        defer { OutputDirectory.removeTree(directory) }
        Self.write("killed run", to: directory + "/.u.bin.tmp-Killed01")
        Self.write("not ours", to: directory + "/.u.bin.tmp-short")
        let live = try OutputFile(destination: directory + "/u.bin", unnamed: false)
        try live.write([1])
        #expect(Self.names(directory) == [".u.bin.tmp-short", URL(fileURLWithPath: live.temporaryPath).lastPathComponent].sorted())
        let second = try OutputFile(destination: directory + "/u.bin", unnamed: false)
        #expect(FileManager.default.fileExists(atPath: live.temporaryPath), "a live run's temporary output is kept")
        try second.write([2])
        try second.commit()
        try live.commit()
        #expect(Self.names(directory) == [".u.bin.tmp-short", "u.bin"])
    }

    @Test("a staging directory is locked while used; a new one for the same destination removes a killed run's")
    func stagingDirectories() throws {
        let directory = Self.makeDirectory("staging")
        defer { OutputDirectory.removeTree(directory) }
        mkdir(directory + "/.set.tmp-Killed", 0o700)
        Self.write("member", to: directory + "/.set.tmp-Killed/base.apk")
        mkdir(directory + "/.set.builds.tmp-Other1", 0o700)
        let live = try OutputDirectory(destination: directory + "/set")
        #expect(Self.names(directory) == [".set.builds.tmp-Other1", URL(fileURLWithPath: live.stagingPath).lastPathComponent].sorted())
        let second = try OutputDirectory(destination: directory + "/set")
        #expect(FileManager.default.fileExists(atPath: live.stagingPath), "a live staging directory is kept")
        #expect(Self.names(directory).count == 3)
        _ = second
    }

    @Test("the register lists each live session's working files; a new session removes those a killed one listed, wherever they are")
    func registerOfWorkingFiles() throws {
        let directory = Self.makeDirectory("register")
        defer { OutputDirectory.removeTree(directory) }
        let outputs = directory + "/elsewhere", register = directory + "/register"
        mkdir(outputs, 0o700)
        mkdir(register, 0o700)
        // A killed session: its spare and its entry, both unlocked; it also lists a file that is not a spare.
        let killedSpare = outputs + "/.a.apk.apkpatch-Killed01"
        Self.write("spare", to: killedSpare)
        Self.write("keep", to: outputs + "/notes.txt")
        Self.write("\(killedSpare)\n\(outputs)/notes.txt\nrelative/.a.apk.apkpatch-Relativ1\n", to: register + "/killedEntry1")
        // A live session: its spare locked, its entry registered (and so locked).
        let liveSpare = outputs + "/.b.apk.apkpatch-Live0001"
        Self.write("live", to: liveSpare)
        let held = open(liveSpare, O_RDONLY)
        defer { close(held) }
        #expect(WorkingFiles.lock(held))
        var live = WorkingFiles.register([liveSpare, liveSpare + ".swap"], in: register)
        #expect(live != nil)
        #expect(Self.names(register).count == 2)

        let removed = WorkingFiles.removeRegisteredLeftovers(in: register, where: OutputRecycler.isWorkingFileName)
        #expect(removed == [killedSpare])
        #expect(Self.names(outputs) == [".b.apk.apkpatch-Live0001", "notes.txt"], "the live spare and the listed non-spare stay")
        #expect(Self.names(register).count == 1 && !Self.names(register).contains("killedEntry1"), "the killed session's entry is gone")
        // A second look changes nothing; the live session's entry goes with it.
        #expect(WorkingFiles.removeRegisteredLeftovers(in: register, where: OutputRecycler.isWorkingFileName).isEmpty)
        live = nil
        #expect(Self.names(register).isEmpty)
        _ = live
    }

    @Test("a register directory another user could write is not used")
    func unsafeRegisterIsRefused() throws {
        let directory = Self.makeDirectory("register-mode")
        defer { OutputDirectory.removeTree(directory) }
        let spare = directory + "/.a.apk.apkpatch-Killed01"
        Self.write("spare", to: spare)
        Self.write(spare + "\n", to: directory + "/killedEntry1")
        chmod(directory, 0o777)
        #expect(WorkingFiles.register([spare], in: directory) == nil)
        #expect(WorkingFiles.removeRegisteredLeftovers(in: directory, where: OutputRecycler.isWorkingFileName).isEmpty)
        #expect(FileManager.default.fileExists(atPath: spare))
        chmod(directory, 0o700)
        #expect(WorkingFiles.removeRegisteredLeftovers(in: directory, where: OutputRecycler.isWorkingFileName) == [spare])
    }
}
