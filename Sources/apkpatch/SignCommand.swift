import ArgumentParser
import Foundation
import Sign
import Unpack

extension APKPatch {
    /// A drop-in for `apksigner sign`: the same option names and meanings, so a CI script switches programs by
    /// changing the name.
    struct Sign: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign an APK with schemes v1, v2 and v3, as apksigner sign does.",
            usage: """
            apkpatch sign --ks release.jks [--ks-key-alias alias] [--ks-pass spec] [--out signed.apk] app.apk
            apkpatch sign --key key.pk8 --cert cert.x509.pem [--out signed.apk] app.apk
            """,
            discussion: """
            Schemes default to v1, v2 and v3 (turn one off with --v1-signing-enabled false and friends). Algorithms follow the APK's minSdkVersion (from AndroidManifest.xml, or --min-sdk-version): JAR digests are SHA-1 below API 18 for RSA keys, SHA-256 otherwise. Stored entries are re-aligned (4 bytes, .so files on 16 KiB pages) unless --alignment-preserved true. Without --out the input is signed in place; either way the output appears only once complete. The same input and RSA key give byte-identical output.

            Examples:
              apkpatch sign --ks release.jks --ks-pass env:KS_PASS --out app-signed.apk app.apk
              apkpatch sign --key key.pk8 --cert cert.pem --v1-signing-enabled false --min-sdk-version 24 app.apk
            """
        )

        @OptionGroup(title: "Signing key") var signer: SignerOptions
        @OptionGroup(title: "Schemes") var schemes: SchemeOptions
        @Option(name: .customLong("out"), help: ArgumentHelp("Where to write the signed APK (default: sign the input in place).", valueName: "path"))
        var output: String?
        @Option(name: .customLong("in"), help: ArgumentHelp("The APK to sign (or give it as the last argument).", valueName: "path"))
        var inputOption: String?
        @Option(name: .customLong("v4-signing-enabled"), help: ArgumentHelp("Accepted for compatibility; apkpatch does not write v4 .idsig files yet (only false is allowed).", valueName: "true|false"))
        var v4: Bool?
        @Flag(name: [.customShort("v"), .customLong("verbose")], help: "Print what was signed and how.") var verbose = false
        @Flag(name: .long, help: "Print the signing report as JSON.") var json = false
        @Argument(help: "The APK to sign.") var input: String?

        func validate() throws {
            if inputOption != nil && input != nil { throw ValidationError("give the input APK once: either --in or as the last argument") }
            if inputOption == nil && input == nil { throw ValidationError("missing the input APK (apkpatch sign [options] app.apk)") }
            if !signer.isKeySpecified { throw ValidationError("no signing key: give --ks, --key with --cert, or --debug") }
            if v4 == true { throw ValidationError("v4 signing (.idsig) is not supported yet; pass --v4-signing-enabled false or drop the option") }
        }

        func run() throws {
            let inputPath = inputOption ?? input!
            let destination = output ?? inputPath
            let key = try signer.keySource().load()
            let archive = try APKArchive(path: inputPath)
            let report = try Signer(config: schemes.config(key: key)).sign(archive, to: destination)
            if json {
                print(try FileHandleOutput.json(SignSummary(report)))
            } else if verbose {
                print("Signed \(report.outputPath) (\(formatBytes(report.outputSize)), \(report.entryCount) entries)")
                print("  schemes: \(report.schemes.map(\.description).joined(separator: ", "))")
                print("  minSdkVersion: \(report.minSdkVersion)\(report.minSdkVersionOverridden ? " (--min-sdk-version)" : " (from AndroidManifest.xml)")")
                if let digest = report.v1DigestAlgorithm, let name = report.v1SignerName {
                    print("  v1: META-INF/\(name).SF, \(digest.rawValue) digests")
                }
                if !report.signatureAlgorithms.isEmpty {
                    print("  v2/v3: \(report.signatureAlgorithms.map(\.description).joined(separator: ", ")), signing block \(report.signingBlockSize) bytes")
                }
                print("  re-aligned entries: \(report.realignedEntryCount)")
                print("  signer: \(report.certificateSubject)")
                print("  signer certificate SHA-256: \(report.certificateSHA256.map { String(format: "%02x", $0) }.joined())")
                print("Signed")
            }
        }
    }
}

/// The JSON form of a signing report (stable field names).
struct SignSummary: Encodable {
    var output: String
    var outputSize: Int64
    var entries: Int
    var schemes: [String]
    var minSdkVersion: Int
    var minSdkVersionOverridden: Bool
    var v1DigestAlgorithm: String?
    var v1SignerName: String?
    var signatureAlgorithms: [String]
    var signingBlockSize: Int
    var realignedEntries: Int
    var signerSubject: String
    var signerCertificateSHA256: String

    init(_ report: SigningReport) {
        output = report.outputPath
        outputSize = report.outputSize
        entries = report.entryCount
        schemes = report.schemes.map(\.description)
        minSdkVersion = report.minSdkVersion
        minSdkVersionOverridden = report.minSdkVersionOverridden
        v1DigestAlgorithm = report.v1DigestAlgorithm?.rawValue
        v1SignerName = report.v1SignerName
        signatureAlgorithms = report.signatureAlgorithms.map(\.description)
        signingBlockSize = report.signingBlockSize
        realignedEntries = report.realignedEntryCount
        signerSubject = report.certificateSubject
        signerCertificateSHA256 = report.certificateSHA256.map { String(format: "%02x", $0) }.joined()
    }
}
