import APKCore
import BinaryXML
import Foundation
import ResourceTable
import SignatureSchemes
import Testing
import TestSupport
import Unpack
import Verify

/// Inputs that crashed, hung or exhausted memory in a fuzz target (`Tests/Fuzz`, `scripts/fuzz/run.sh`), kept
/// under `Inputs/<target>/`. Each must now be rejected (or accepted) by a thrown error, never by a trap.
@Suite struct FuzzRegressionTests {
    static let inputs = TestSupport.packageRoot.appendingPathComponent("Tests/HardeningTests/Inputs")

    static func files(_ target: String) -> [URL] {
        let dir = inputs.appendingPathComponent(target)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.sorted().map { dir.appendingPathComponent($0) }
    }

    @Test func inputsDirectoryExists() {
        #expect(FileManager.default.fileExists(atPath: Self.inputs.path))
    }
}
