#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import APKCore

/// The files under `Templates/` (adb commands, install script, CI jobs, the patch-dir scaffold), found at run time.
///
/// An installed binary and a development build keep their templates in different places, so ``locate(environment:executablePath:)``
/// searches, in order:
/// 1. `$APKPATCH_TEMPLATES` (an error if it is set but is not a templates directory: a typo should not fall back silently);
/// 2. `<executable dir>/../share/apkpatch/Templates` (what `make install PREFIX=…` lays out);
/// 3. the source tree's `Templates/`: walking up from the executable (`.build/…/apkpatch`) to a directory holding `Package.swift`;
/// 4. a copy compiled into the binary (``embedded``), generated from the files by `InstallTests`
///    (`APKPATCH_REGENERATE_EMBEDDED_TEMPLATES=1 swift test --filter EmbeddedTemplates`), never edited by hand.
///
/// Templates ending in `.mustache` and the CI files are Mustache templates (``MustacheTemplate``); the CI files switch the
/// delimiters to `<% %>` on their first line because GitHub Actions' `${{ }}` must pass through untouched.
public struct TemplateLibrary: Sendable {
    /// Where the templates come from.
    public enum Origin: Sendable, Equatable, CustomStringConvertible {
        case directory(String)
        case embedded
        public var description: String {
            switch self {
            case .directory(let path): return path
            case .embedded: return "<built into apkpatch>"
            }
        }
    }

    /// Where these templates come from.
    public let origin: Origin

    /// The file every templates directory has; a directory without it is not ours.
    static let markerPath = "adb/install-command.mustache"
    /// The folders compiled into the binary. `Templates/sample` belongs to `make demo` and is not embedded.
    package static let embeddedFolders = ["adb", "ci", "patch-dir"]

    /// Templates read from `path` (which must hold `adb/install-command.mustache`).
    public init(directory path: String) throws {
        guard FileManager.default.fileExists(atPath: path.appendingPathComponent(Self.markerPath)) else {
            throw TemplateError.notATemplatesDirectory(path)
        }
        origin = .directory(path)
    }

    private init(origin: Origin) { self.origin = origin }

    /// The copy compiled into the binary.
    public static let embedded = TemplateLibrary(origin: .embedded)

    /// Finds the templates as described on ``TemplateLibrary``.
    /// - Parameters:
    ///   - environment: looked up for `APKPATCH_TEMPLATES`.
    ///   - executablePath: the running binary; by default `/proc/self/exe` (symlinks resolved) or `argv[0]`.
    public static func locate(environment: [String: String] = ProcessInfo.processInfo.environment,
                              executablePath: String? = nil) throws -> TemplateLibrary {
        if let override = environment["APKPATCH_TEMPLATES"], !override.isEmpty {
            return try TemplateLibrary(directory: override)
        }
        for candidate in candidateDirectories(executablePath: executablePath ?? currentExecutablePath()) {
            if let library = try? TemplateLibrary(directory: candidate) { return library }
        }
        return .embedded
    }

    /// The directories searched after `$APKPATCH_TEMPLATES`, in order.
    static func candidateDirectories(executablePath: String?) -> [String] {
        guard let executablePath else { return [] }
        let executable = URL(fileURLWithPath: executablePath).resolvingSymlinksInPath()
        let binDirectory = executable.deletingLastPathComponent()
        var candidates = [binDirectory.deletingLastPathComponent().appendingPathComponent("share/apkpatch/Templates").path]
        // Development builds live in <package>/.build*/<triple>/<configuration>/: walk up to the package root.
        var directory = binDirectory
        while directory.path != "/" {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
                candidates.append(directory.appendingPathComponent("Templates").path)
                break
            }
            directory = directory.deletingLastPathComponent()
        }
        return candidates
    }

    static func currentExecutablePath() -> String? {
        #if os(Linux)
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return path }
        #endif
        return CommandLine.arguments.first
    }

    /// The text of the template at `relativePath` (e.g. `ci/github-actions.yml`).
    public func text(of relativePath: String) throws -> String {
        switch origin {
        case .embedded:
            guard let text = EmbeddedTemplates.files[relativePath] else { throw TemplateError.missing(relativePath, origin: origin) }
            return text
        case .directory(let root):
            let path = root.appendingPathComponent(relativePath)
            guard let data = FileManager.default.contents(atPath: path) else { throw TemplateError.missing(relativePath, origin: origin) }
            return String(decoding: data, as: UTF8.self)
        }
    }

    /// The files under `folder` (relative to the templates root, e.g. `patch-dir`), as sorted relative paths.
    public func files(under folder: String) throws -> [String] {
        switch origin {
        case .embedded:
            let prefix = folder.hasSuffix("/") ? folder : folder + "/"
            return EmbeddedTemplates.files.keys.filter { $0.hasPrefix(prefix) }.sorted()
        case .directory(let root):
            let base = root.appendingPathComponent(folder)
            guard let subpaths = try? FileManager.default.subpathsOfDirectory(atPath: base) else {
                throw TemplateError.missing(folder, origin: origin)
            }
            let prefix = folder.hasSuffix("/") ? String(folder.dropLast()) : folder
            let result = subpaths.filter { FileKind(atPath: base.appendingPathComponent($0)) == .other }
                .map { prefix.appendingPathComponent($0) }
            if result.isEmpty { throw TemplateError.missing(folder, origin: origin) }
            return result.sorted()
        }
    }

    /// Renders the Mustache template at `relativePath` with `context`. Partials are named by their path without
    /// `.mustache` (`{{> adb/install-command}}`).
    public func render(_ relativePath: String, context: [String: Any]) throws -> String {
        var partials: [String: MustacheTemplate] = [:]
        for folder in ["adb"] {
            for path in (try? files(under: folder)) ?? [] where path.hasSuffix(".mustache") {
                partials[String(path.dropLast(".mustache".count))] = try parse(path)
            }
        }
        return try parse(relativePath).render(context, partials: partials)
    }

    private func parse(_ relativePath: String) throws -> MustacheTemplate {
        do {
            return try MustacheTemplate(string: try text(of: relativePath))
        } catch let error as MustacheTemplate.SyntaxError {
            throw TemplateError.invalid(relativePath, origin: origin, reason: "\(error)")
        }
    }
}

/// A template that cannot be found or parsed.
public enum TemplateError: Error, CustomStringConvertible, Equatable {
    case notATemplatesDirectory(String)
    case missing(String, origin: TemplateLibrary.Origin)
    case invalid(String, origin: TemplateLibrary.Origin, reason: String)

    public var description: String {
        switch self {
        case .notATemplatesDirectory(let path):
            return "\(path) is not an apkpatch templates directory (no \(TemplateLibrary.markerPath) in it). "
                + "Point APKPATCH_TEMPLATES at the Templates folder of the source tree or at PREFIX/share/apkpatch/Templates, or unset it."
        case .missing(let path, let origin):
            return "template \(path) is missing from \(origin). Reinstall apkpatch (make install) or set APKPATCH_TEMPLATES to a complete Templates folder."
        case .invalid(let path, let origin, let reason):
            return "template \(path) in \(origin) is not valid Mustache: \(reason). Fix the file or unset APKPATCH_TEMPLATES to use the built-in copy."
        }
    }
}
