import Foundation

/// A key rotation as a CI job meets it: the old and the new keystore (PKCS#12, made by keytool) and the lineage
/// that links them, made by `apksigner rotate` and kept in the repository at `signing/lineage.bin`.
public struct RotatedKeys: Sendable {
    public let oldKeystore: URL, newKeystore: URL
    public let oldPassword = "old-Secret-pw-1138", newPassword = "new-Secret-pw-2187"
    /// The certificates' SHA-256 digests as `--print-certs` prints them (lower-case hex).
    public let oldSHA256: String, newSHA256: String
    /// The new one as `keytool -list -v` prints it (upper-case, colon-separated), as a user copies it.
    public let newSHA256KeytoolForm: String
    /// The lineage old → new, from `apksigner rotate` (`signing/lineage.bin` under the directory given).
    public let lineage: URL

    public init(in work: URL) throws {
        oldKeystore = work.appendingPathComponent("old.p12")
        newKeystore = work.appendingPathComponent("new.p12")
        try TestSupport.makeKeyStore(at: oldKeystore.path, password: oldPassword, dname: "CN=CI Old Key, O=Example, C=US")
        try TestSupport.makeKeyStore(at: newKeystore.path, password: newPassword, dname: "CN=CI New Key, O=Example, C=US")
        lineage = work.appendingPathComponent("signing/lineage.bin")
        try FileManager.default.createDirectory(at: lineage.deletingLastPathComponent(), withIntermediateDirectories: true)
        let rotate = try TestSupport.run("apksigner", ["rotate", "--out", lineage.path,
                                                       "--old-signer", "--ks", oldKeystore.path, "--ks-pass", "env:OLD_KS_PASS",
                                                       "--new-signer", "--ks", newKeystore.path, "--ks-pass", "env:NEW_KS_PASS"],
                                         environment: ["OLD_KS_PASS": oldPassword, "NEW_KS_PASS": newPassword])
        guard rotate.succeeded else { throw FixtureError(message: "apksigner rotate failed:\n\(rotate)") }
        let newForm = try Self.keytoolSHA256(of: newKeystore, password: newPassword)
        newSHA256KeytoolForm = newForm
        newSHA256 = String(newForm.lowercased().filter { $0 != ":" })
        oldSHA256 = String(try Self.keytoolSHA256(of: oldKeystore, password: oldPassword).lowercased().filter { $0 != ":" })
    }

    /// The certificate's "SHA256:" line of `keytool -list -v`.
    public static func keytoolSHA256(of keystore: URL, password: String) throws -> String {
        let list = try TestSupport.run("keytool", ["-list", "-v", "-keystore", keystore.path, "-storepass:env", "KS_PASS"], environment: ["KS_PASS": password])
        guard list.succeeded, let line = list.stdout.split(separator: "\n").first(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix("SHA256: ") }) else {
            throw FixtureError(message: "keytool -list -v printed no SHA256 line:\n\(list)")
        }
        return String(line.trimmingCharacters(in: .whitespaces).dropFirst("SHA256: ".count))
    }

    /// The four repository secrets of a rotating job (prefix APKPATCH).
    public var secrets: [String: String] {
        get throws {
            ["APKPATCH_KEYSTORE_BASE64": try Data(contentsOf: oldKeystore).base64EncodedString(), "APKPATCH_KEYSTORE_PASSWORD": oldPassword,
             "APKPATCH_NEW_KEYSTORE_BASE64": try Data(contentsOf: newKeystore).base64EncodedString(), "APKPATCH_NEW_KEYSTORE_PASSWORD": newPassword]
        }
    }

    /// What must never show in a job's output: the passwords, and a stretch of each keystore's base64.
    public var secretValues: [String] {
        get throws { try secrets.values.map { String($0.prefix(24)) } }
    }
}
