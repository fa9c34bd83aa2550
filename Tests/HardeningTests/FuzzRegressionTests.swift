import APKCore
import BinaryXML
import Foundation
import OpenSSLWrapper
import ResourceTable
import Sign
import SignatureSchemes
import Testing
import TestSupport
import Unpack
import Verify

/// Replays inputs kept from fuzzing (`Tests/Fuzz`, `scripts/fuzz/run.sh`) through the same calls the fuzz targets
/// make: `Inputs/<Target>/` holds every input that ever crashed, hung or ran out of memory in that target, plus a few
/// small corpus inputs that reach deep paths (minimised by libFuzzer). Each must end in a value or a thrown error;
/// a trap here kills the test process, which is the failure.
@Suite(.removesTemporaryDirectories) struct FuzzRegressionTests {
    static let inputs = TestSupport.packageRoot.appendingPathComponent("Tests/HardeningTests/Inputs")

    static func files(_ target: String) throws -> [(name: String, bytes: [UInt8])] {
        let dir = inputs.appendingPathComponent(target)
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { !$0.hasPrefix(".") }.sorted()
        return try names.map { ($0, try TestSupport.readBytes(dir.appendingPathComponent($0).path)) }
    }

    @Test func zipInputs() throws {
        let inputs = try Self.files("FuzzZip")
        #expect(!inputs.isEmpty)
        for (name, bytes) in inputs {
            let source = ByteArrayDataSource(bytes)
            if let zip = try? ZipArchive(source: source) {
                _ = try? SigningBlock.locate(in: source, centralDirectoryOffset: zip.centralDirectoryOffset)
            }
            guard let archive = try? APKArchive(source: source, label: name) else { continue }
            for entry in archive.entries.prefix(64) { try? archive.withUncompressedChunks(of: entry) { _ in } }
        }
    }

    @Test func signingBlockInputs() throws {
        let inputs = try Self.files("FuzzSigningBlock")
        #expect(!inputs.isEmpty)
        for (_, bytes) in inputs {
            if let block = try? SigningBlock.locate(in: ByteArrayDataSource(bytes), centralDirectoryOffset: Int64(bytes.count)) {
                for pair in block.pairs {
                    _ = try? SignatureSchemeBlock(decoding: pair.value, version: .v2)
                    _ = try? SignatureSchemeBlock(decoding: pair.value, version: .v3)
                }
            }
            _ = try? SignatureSchemeBlock(decoding: bytes, version: .v2)
            _ = try? SignatureSchemeBlock(decoding: bytes, version: .v3)
        }
    }

    @Test func binaryXMLInputs() throws {
        let inputs = try Self.files("FuzzBinaryXML")
        #expect(!inputs.isEmpty)
        for (_, bytes) in inputs {
            _ = try? ManifestSummary(binaryXML: bytes)
            if let tree = try? XMLTree(binaryXML: bytes) { _ = tree.textXML(); _ = try? tree.binaryXML() }
        }
    }

    @Test func textXMLInputs() throws {
        let inputs = try Self.files("FuzzTextXML")
        #expect(!inputs.isEmpty)
        for (_, bytes) in inputs {
            let text = String(decoding: bytes, as: UTF8.self)
            for fileName in ["AndroidManifest.xml", "res/xml/config.xml"] {
                guard let tree = try? XMLTree(textXML: text, fileName: fileName), let binary = try? tree.binaryXML() else { continue }
                if let reread = try? XMLTree(binaryXML: binary) { _ = reread.textXML() }
                _ = try? ManifestSummary(binaryXML: binary)
            }
        }
    }

    @Test func jarSignatureInputs() throws {
        let inputs = try Self.files("FuzzJARSignature")
        #expect(!inputs.isEmpty)
        for (_, bytes) in inputs {
            _ = JARManifest(bytes: bytes).individualSections.compactMap { $0.name }
            if let signedData = try? PKCS7SignedData(berEncoded: bytes) {
                for certificate in signedData.certificates.prefix(8) { _ = try? VerificationCertificate(derEncoded: certificate) }
            }
        }
    }

    @Test func resourceTableInputs() throws {
        let inputs = try Self.files("FuzzResourceTable")
        #expect(!inputs.isEmpty)
        for (_, bytes) in inputs {
            guard var table = try? ResourceTable(bytes: bytes) else { continue }
            for configuration in table.stringConfigurations.prefix(4) { _ = table.strings(in: configuration) }
            _ = try? table.encoded()
            if let first = table.entries.first(where: { $0.type == "string" }) {
                try? table.setString(named: first.name, to: "fuzz")
                _ = try? table.encoded()
            }
        }
    }

    @Test func keyStoreInputs() throws {
        let inputs = try Self.files("FuzzKeyStore")
        #expect(!inputs.isEmpty)
        for (_, bytes) in inputs {
            var candidates = [bytes]
            if bytes.starts(with: [0xfe, 0xed, 0xfe, 0xed]) || bytes.starts(with: [0xce, 0xce, 0xce, 0xce]) {
                // As FuzzKeyStore does: also with a valid integrity digest appended.
                let digest = Digest(.sha1)
                digest.update("android".utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] })
                digest.update(Array("Mighty Aphrodite".utf8))
                digest.update(bytes)
                candidates.append(bytes + digest.finish())
            }
            for candidate in candidates {
                guard let store = try? LoadedKeyStore(bytes: candidate, label: "fuzz", type: nil, storePassword: .pass(Secret("android"))) else { continue }
                for entry in store.entries.prefix(8) { _ = try? store.signerKey(alias: entry.alias, keyPassword: nil) }
            }
        }
    }

    @Test func verifierInputs() throws {
        let inputs = try Self.files("FuzzVerify")
        #expect(!inputs.isEmpty)
        for (name, bytes) in inputs {
            let report = try? Verifier().verify(source: ByteArrayDataSource(bytes), label: name)
            // None of the kept inputs is a validly signed APK: each is a mutation of one.
            #expect(report?.isSignatureVerified != true, "\(name) verified")
        }
    }
}
