import APKCore

/// The result of checking an archive's alignment the way `zipalign -c` does.
public struct AlignmentCheck: Sendable {
    public struct EntryResult: Sendable {
        public enum Status: Sendable, Equatable {
            case compressed
            case directory
            case aligned
            /// The data offset modulo the required alignment.
            case misaligned(remainder: Int64, required: Int)
        }
        public let name: String
        public let dataOffset: Int64
        public let status: Status
    }

    public let results: [EntryResult]
    public var isAligned: Bool { !results.contains { if case .misaligned = $0.status { return true } else { return false } } }

    /// Checks every entry of `archive`: stored ones must start on the policy's alignment for them, but for
    /// directory entries, which the current zipalign's `-c` passes however they lie (its ZipAlign.cpp `verify`).
    public init(archive: ZipArchive, policy: AlignmentPolicy) {
        results = archive.entries.map { entry in
            let status: EntryResult.Status
            if entry.isCompressed {
                status = .compressed
            } else if AlignmentPolicy.isDirectoryEntry(entry) {
                status = .directory
            } else {
                let required = policy.alignment(for: entry)
                let remainder = entry.dataOffset % Int64(required)
                status = remainder == 0 ? .aligned : .misaligned(remainder: remainder, required: required)
            }
            return EntryResult(name: entry.name, dataOffset: entry.dataOffset, status: status)
        }
    }

    /// zipalign -c -v's per-entry lines: offset right-aligned in 8 columns, name, verdict.
    public func verboseLines() -> [String] {
        results.map { result in
            let offset = String(result.dataOffset)
            let padded = String(repeating: " ", count: max(0, 8 - offset.count)) + offset
            switch result.status {
            case .compressed: return "\(padded) \(result.name) (OK - compressed)"
            case .directory: return "\(padded) \(result.name) (OK - directory)"
            case .aligned: return "\(padded) \(result.name) (OK)"
            case .misaligned(let remainder, _): return "\(padded) \(result.name) (BAD - \(remainder))"
            }
        }
    }
}
