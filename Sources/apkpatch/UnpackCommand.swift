import APKCore
import ArgumentParser
import BinaryXML
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
import Overlay
import Unpack

extension APKPatch {
    struct Unpack: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "unpack",
            abstract: "Extract an APK's entries into a directory, refusing hostile archives.",
            discussion: """
            The archive is checked before anything is written (entry names that escape the directory, duplicate \
            names, local headers that disagree with the central directory, truncation, zip bombs); extraction goes \
            to a temporary directory renamed into place at the end, so a failure leaves nothing behind.

            Examples:
              apkpatch unpack app.apk -o app/
              apkpatch unpack app.apk -o app/ --decode  # manifest, res XML, values
              apkpatch unpack app.apk --list
            """
        )

        @Argument(help: "The APK to read.") var apk: String
        @Option(name: [.customShort("o"), .long], help: "Directory to create (must not exist or be empty).") var output: String?
        @Flag(name: .long, help: "List the entries (method, sizes, CRC, offsets) instead of extracting.") var list = false
        @Flag(name: .long, help: "Also write AndroidManifest.xml and the XML files under res/ as text XML and the values as res/values*/strings.xml, bools.xml, styles.xml…, as apktool shows them.")
        var decode = false

        func validate() throws {
            if output == nil && !list { throw ValidationError("give an output directory with -o DIR, or --list") }
        }

        func run() throws {
            let archive = try APKArchive(path: apk)
            if list {
                print("  Method    Size   Stored      CRC-32  Header    Data  Name")
                for e in archive.zip.entriesInFileOrder {
                    let crc = String(e.crc32, radix: 16)
                    print([padded(e.method.description, to: 8), padded(String(e.uncompressedSize), to: 7), padded(String(e.compressedSize), to: 8),
                           String(repeating: "0", count: 8 - crc.count) + crc + "  ", padded(String(e.localHeaderOffset), to: 7),
                           padded(String(e.dataOffset), to: 7) + "  " + e.name].joined(separator: " "))
                }
                print("\(archive.entries.count) entries")
                return
            }
            var decoded: [String] = []
            let summary = try Extractor(archive: archive).extract(to: output!, finishing: { staging in
                if decode { decoded = try ResourceDecoder.decodeAll(archive: archive, into: staging).files }
            })
            print("Extracted \(summary.files) files (\(formatBytes(summary.bytes))) and \(summary.directories) directories to \(output!)")
            if decode { print("Decoded \(decoded.count) files as text: \(decoded.prefix(5).joined(separator: ", "))\(decoded.count > 5 ? ", …" : "")") }
        }
    }
}
