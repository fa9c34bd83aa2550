import Foundation
import Testing
import TestSupport

/// Outputs get the mode `open(2)` and `mkdir(2)` would give them under the user's umask, as zipalign's and
/// apksigner's do: `umask 077` keeps a signed APK, its `.idsig` and an unpacked folder private, `umask 002` makes
/// them group-writable. (Files were 0644 whatever the umask: their mode was set with fchmod, which ignores it.)
@Suite(.removesTemporaryDirectories) struct OutputModeTests {
    @Test(arguments: [("077", 0o600, 0o700), ("002", 0o664, 0o775), ("022", 0o644, 0o755)])
    func outputsFollowTheUmask(umask: String, fileMode: Int, directoryMode: Int) throws {
        let dir = try TestSupport.makeTemporaryDirectory("output-mode")
        let input = try FixtureAPK.cordovaLike().build(in: dir)
        let keys = SignCommandTests.shared.rsa
        let signed = dir.appendingPathComponent("signed.apk").path, unpacked = dir.appendingPathComponent("unpacked").path
        // A folder of APKs is a set, signed into a folder.
        let set = dir.appendingPathComponent("set"), signedSet = dir.appendingPathComponent("signed-set").path
        try FileManager.default.createDirectory(at: set, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: input, toPath: set.appendingPathComponent("base.apk").path)
        let key = ["--key", keys.keyPK8, "--cert", keys.certificatePEM]
        let script = #"umask "$1"; shift; "$@""#
        for arguments in [["sign"] + key + ["--out", signed, input], ["unpack", input, "-o", unpacked], ["sign"] + key + ["--out", signedSet, set.path]] {
            let result = try TestSupport.run("bash", ["-c", script, "bash", umask, TestSupport.apkpatchBinary] + arguments)
            #expect(result.succeeded, "\(arguments[0]): \(result)")
        }
        func mode(_ path: String) throws -> Int { try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) }
        for path in [signed, signed + ".idsig", unpacked + "/AndroidManifest.xml", signedSet + "/base.apk"] {
            let seen = try mode(path)
            #expect(seen == fileMode, "umask \(umask): \(path) has mode \(String(seen, radix: 8))")
        }
        for folder in [unpacked, signedSet] {
            let seen = try mode(folder)
            #expect(seen == directoryMode, "umask \(umask): \(folder) has mode \(String(seen, radix: 8))")
        }
    }
}
