import Foundation
import Testing
import TestSupport
@testable import APKCore
#if canImport(Glibc)
import Glibc
#endif

/// Paths are split at their slash bytes: a name may start with a combining mark, which Swift's Characters join to
/// the slash before it ("out/\u{301}x.apk" would be one component, and its folder "." or the wrong one).
@Suite(.removesTemporaryDirectories) struct PathBytesTests {
    static let mark = "\u{301}x.apk"

    @Test func componentsAreSplitAtSlashBytes() {
        #expect("out/\(Self.mark)".lastPathComponent == Self.mark)
        #expect("out/\(Self.mark)".deletingLastPathComponent == "out")
        #expect("caf\u{E9}/e\u{301}/".lastPathComponent == "e\u{301}" && "caf\u{E9}/e\u{301}/".deletingLastPathComponent == "caf\u{E9}")
        #expect("/a/b/\(Self.mark)//".deletingLastPathComponent == "/a/b")
        #expect("out".appendingPathComponent("/" + Self.mark) == "out/" + Self.mark)
        #expect("/tmp/out/\(Self.mark)".folderAndName == (folder: "/tmp/out", name: Self.mark))
        // ASCII paths as before.
        #expect("a/b/".lastPathComponent == "b" && "/".lastPathComponent == "/" && "".lastPathComponent == "")
        #expect("a/b".deletingLastPathComponent == "a" && "/b".deletingLastPathComponent == "/" && "b".deletingLastPathComponent == "")
        #expect("a/".appendingPathComponent("//b") == "a/b" && "a".appendingPathComponent("///") == "a/")
        #expect("out.apk".folderAndName == (folder: ".", name: "out.apk") && "/x".folderAndName == (folder: "", name: "x"))
    }

    /// A path starts at the root when its first byte is a slash: a Character joins a combining mark to it, so
    /// "/\u{301}x" was taken for a relative path (and the working directory put before it), and "./\u{301}x" kept
    /// its "./".
    @Test func absolutePathsAreToldByTheirFirstByte() {
        #expect("/\u{301}x".isAbsolutePath && "/".isAbsolutePath && !"\u{301}/x".isAbsolutePath && !"x/".isAbsolutePath && !"".isAbsolutePath)
        #expect(WorkingFiles.absolute("/\u{301}x/y").unicodeScalars.elementsEqual("/\u{301}x/y".unicodeScalars))
        let here = FileManager.default.currentDirectoryPath
        #expect(WorkingFiles.absolute("./\u{301}x").unicodeScalars.elementsEqual((here + (here == "/" ? "" : "/") + "\u{301}x").unicodeScalars),
                "\(WorkingFiles.absolute("./\u{301}x").debugDescription)")
        #expect(LeftoverWatch.isStagingPath("/\u{301}d/.out.apk.tmp-abc123") && !LeftoverWatch.isStagingPath("\u{301}d/.out.apk.tmp-abc123"))
    }

    /// A file's extension starts after its last dot byte: a Prepend mark (U+0600) joins the dot in a Character, so
    /// "x\u{600}.apks" had no extension and was not taken for a container.
    @Test func extensionsStartAfterTheDotByte() {
        #expect("dir/x\u{600}.apks".pathExtension == "apks" && "dir/x\u{600}.apks/".deletingPathExtension == "dir/x\u{600}")
        #expect("a\u{600}/".deletingPathExtension == "a\u{600}/" && "d/\u{301}.x".pathExtension == "x")
        // ASCII paths as before.
        #expect("x.tar.gz".pathExtension == "gz" && "x.tar.gz".deletingPathExtension == "x.tar" && "a.b/c".pathExtension == "")
        #expect(".hidden".pathExtension == "" && "noext".deletingPathExtension == "noext" && "/x.apk//".deletingPathExtension == "/x")
    }

    /// An output (its temporary file beside it, renamed into place) and the folders made for it.
    @Test func outputsAndFoldersNamedWithAMarkAfterTheSlash() throws {
        let directory = try TestSupport.makeTemporaryDirectory("path-bytes").path
        let folder = directory + "/\u{301}made/\u{301}deeper"
        try UserFiles.makeDirectories(folder)
        #expect(FileKind(atPath: directory + "/\u{301}made") == .directory && FileKind(atPath: folder) == .directory)
        for unnamed in [false, true] {
            let destination = folder + "/\u{301}\(unnamed).apk"
            let output = try OutputFile(destination: destination, unnamed: unnamed)
            try output.write(Array("out\n".utf8))
            try output.commit()
            #expect(FileManager.default.contents(atPath: destination) == Data("out\n".utf8), "unnamed: \(unnamed)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).count == 2, "nothing left beside the outputs")
    }

    /// Watch mode's recycled outputs keep their spare copy beside the destination, named after it.
    @Test func recycledOutputsWithAMarkAfterTheSlash() throws {
        let directory = try TestSupport.makeTemporaryDirectory("path-bytes-recycled").path
        let destination = directory + "/\u{301}w.apk"
        var recycler: OutputRecycler? = OutputRecycler(destination: destination)
        #expect(try !WorkingFilesTests.build(recycler!, "first"))
        recycler!.prepareSpareCopy()
        #expect(try WorkingFilesTests.build(recycler!, "second"), "the second build rewrites the copy of the first")
        #expect(FileManager.default.contents(atPath: destination) == Data("second".utf8))
        let spares = WorkingFilesTests.names(directory).filter { $0 != "\u{301}w.apk" }
        #expect(spares.count == 1 && spares.allSatisfy { $0.utf8.starts(with: ".\u{301}w.apk.apkpatch-".utf8) }, "\(spares)")
        recycler = nil
        #expect(WorkingFilesTests.names(directory) == ["\u{301}w.apk"])
    }

    /// A killed session's spare beside "\u{301}w.apk" is ".\u{301}w.apk.apkpatch-…", whose dot and mark are one
    /// Character: the next recycler knows it (and the swap name, and the older slot names) by its bytes and
    /// removes it, where a Character prefix test left it for good.
    @Test func aKilledSessionsSpareNamedWithAMarkIsRemoved() throws {
        let directory = try TestSupport.makeTemporaryDirectory("path-bytes-killed").path
        let leftovers = [".\u{301}w.apk.apkpatch-kiLLed01", ".\u{301}w.apk.apkpatch-kiLLed01.swap", ".\u{301}w.apk.apkpatch-0",
                         ".\u{301}w.apk.apkpatch-1.link"]
        for name in leftovers + ["\u{301}w.apk"] {
            #expect(FileManager.default.createFile(atPath: directory + "/" + name, contents: Data("stale".utf8)), "\(name)")
        }
        for name in leftovers { #expect(OutputRecycler.isWorkingFileName(name), "\(name.debugDescription)") }
        #expect(!OutputRecycler.isWorkingFileName("\u{301}.apkpatch-0") && !OutputRecycler.isWorkingFileName(".\u{301}w.apk"))
        let recycler = OutputRecycler(destination: directory + "/\u{301}w.apk")
        #expect(WorkingFilesTests.names(directory) == ["\u{301}w.apk"], "the leftovers are removed when a recycler starts")
        withExtendedLifetime(recycler) {}
    }

    /// A directory output ("--out-dir") named with a mark after the slash is staged beside it and moved into place.
    @Test func outputDirectoriesNamedWithAMarkAfterTheSlash() throws {
        let directory = try TestSupport.makeTemporaryDirectory("path-bytes-directory").path
        try UserFiles.makeDirectories(directory + "/b")
        let destination = directory + "/b/\u{301}set"
        let output = try OutputDirectory(destination: destination)
        #expect(output.stagingPath.deletingLastPathComponent == directory + "/b", "\(output.stagingPath)")
        #expect(FileManager.default.createFile(atPath: output.path(for: "a.apk"), contents: Data("a".utf8)))
        try output.commit { _ in true }
        #expect(FileManager.default.contents(atPath: destination + "/a.apk") == Data("a".utf8))
        #expect(WorkingFilesTests.names(directory + "/b") == ["\u{301}set"])
    }
}
