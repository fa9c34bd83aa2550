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
}
