// swift-tools-version:6.0
// apkpatch: patch, align, sign and verify Android APKs. The targets read as the pipeline:
// Unpack → Overlay → Repack → Align → Sign → Verify → Install, run together by Pipeline.
import PackageDescription

let package = Package(
    name: "apkpatch",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "apkpatch", targets: ["apkpatch"]),
        .library(name: "Pipeline", targets: ["Pipeline"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Tests only (they read the rendered CI files with it): the binary links no Foundation beyond FoundationEssentials,
        // and Yams imports all of it (README, Install).
        .package(url: "https://github.com/jpsim/Yams", from: "5.0.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // C libraries: a module map and a shim each, nothing else.
        .systemLibrary(name: "CLibzip", providers: [.apt(["libzip-dev"])]),  // loaded with dlopen (see shim.h)
        // Linked statically (module maps: -l:libcrypto.a and so on), so no pkg-config: its -lcrypto would
        // pull in the shared library again.
        .systemLibrary(name: "COpenSSL", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CLibdeflate", providers: [.apt(["libdeflate-dev"])]),
        .systemLibrary(name: "CLinux"),
        // SHA-256 in sixteen AVX-512 lanes (and one SHA-NI lane): C intrinsics, optimised in debug builds too.
        .target(name: "CSHA256x16", cSettings: [.unsafeFlags(["-O3"])]),
        // CRC-32 folded on 512-bit registers (VPCLMULQDQ), for the CRC-32 of every stored byte a signer copies.
        .target(name: "CCRC32", cSettings: [.unsafeFlags(["-O3"])]),
        // PBKDF2-HMAC-SHA256 and the PKCS#12 KDF on SHA-256's compression function (SHA-NI through CSHA256x16), several
        // derivations side by side: a PKCS#12 keystore's key, certificates and MAC; the PKCS#12 KDF on SHA-1 too (its own
        // SHA-NI compression), for the stores older Java writes. Also RC2 and RC4, the ciphers of old
        // PKCS#12 stores that OpenSSL 3 keeps in a legacy provider the static libcrypto cannot load. -O3 in debug builds too.
        .target(name: "CPasswordKDF", dependencies: ["CSHA256x16"], cSettings: [.unsafeFlags(["-O3"])]),
        // The version and commit `apkpatch --version` prints, from a header make writes into .build (Makefile).
        .target(name: "CBuildInfo"),
        // zlib 1.2.13's deflate with a faster search for exactly zlib's matches, so level 9 writes zlib's (apksigner's)
        // bytes sooner (README in the folder); -O3 in debug builds too. Its names are prefixed (zconf.h) beside CZlib.
        .target(name: "CZlibDeflate", exclude: ["README.md", "LICENSE"],
                cSettings: [.define("Z_PREFIX"), .define("Z_SOLO"), .define("UNALIGNED_OK"),
                            .unsafeFlags(["-O3", "-Wno-deprecated-non-prototype"])]),
        // The only modules that import a C module.
        .target(name: "LibzipWrapper", dependencies: ["CLibzip"]),
        .target(name: "OpenSSLWrapper", dependencies: ["COpenSSL", "CPasswordKDF"]),
        .target(name: "ZlibWrapper", dependencies: ["CZlib", "CLibdeflate", "CZlibDeflate", "CCRC32"]),
        .target(name: "DigestLanes", dependencies: ["CSHA256x16", "OpenSSLWrapper"]),
        // Byte sources, ZIP records, the opened APK and its limits, output entries, the APK Signing Block codec,
        // the one concurrency helper (CLinux only for renameat2; ZlibWrapper to inflate an entry).
        .target(name: "APKCore", dependencies: ["ZlibWrapper", .target(name: "CLinux", condition: .when(platforms: [.linux]))]),
        // The stages.
        .target(name: "Unpack", dependencies: ["APKCore", "LibzipWrapper", "ZlibWrapper"]),
        .target(name: "Overlay", dependencies: ["APKCore", "Unpack", "Repack", "ZlibWrapper", "BinaryXML", "ResourceTable", "OpenSSLWrapper"]),
        .target(name: "Align", dependencies: ["APKCore", "BinaryXML"]),
        .target(name: "Repack", dependencies: ["APKCore", "Align", "ZlibWrapper"]),
        // Android binary XML and resources.arsc: read, decode to text, compile back.
        .target(name: "BinaryXML", dependencies: ["APKCore", "ZlibWrapper"]),
        .target(name: "ResourceTable", dependencies: ["APKCore", "BinaryXML"]),
        // What the signer and the verifier share (apksig's ApkSigningBlockUtils and friends): signature
        // algorithm IDs, v2/v3 signer-block codec, chunked content digests, JAR manifest parsing.
        .target(name: "SignatureSchemes", dependencies: ["APKCore", "OpenSSLWrapper", "ZlibWrapper", "DigestLanes"]),
        .target(name: "Sign", dependencies: ["APKCore", "Align", "OpenSSLWrapper", "ZlibWrapper", "SignatureSchemes", "DigestLanes", "BinaryXML"],
                exclude: ["README.md"]),
        .target(name: "Verify", dependencies: ["APKCore", "Align", "OpenSSLWrapper", "ZlibWrapper", "SignatureSchemes", "BinaryXML"]),
        // Split APK sets (.apks, .xapk, .apkm, folders): read, checked for consistency, written back in their form.
        .target(name: "Sets", dependencies: ["APKCore", "Unpack", "Repack", "Align", "BinaryXML", "ZlibWrapper"]),
        .target(name: "Install", dependencies: ["APKCore"]),
        // watch --live's development server (SwiftNIO): the web root of an APK overlaid with a patch directory.
        .target(name: "LiveReload", dependencies: [
            "APKCore", "Unpack", "Overlay",
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ]),
        .target(name: "Pipeline", dependencies: ["APKCore", "Unpack", "Overlay", "Repack", "Align", "Sign", "Verify", "Install", "LiveReload", "Sets"]),
        .executableTarget(name: "apkpatch", dependencies: [
            "Pipeline", "APKCore", "Unpack", "Overlay", "Repack", "Align", "Sign", "SignatureSchemes", "Verify", "Install", "BinaryXML", "ResourceTable", "LiveReload", "Sets",
            "CBuildInfo",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // Tests.
        .target(name: "TestSupport", dependencies: ["APKCore"], path: "Tests/TestSupport"),
        .testTarget(name: "APKCoreTests", dependencies: ["APKCore", "TestSupport", .target(name: "CLinux", condition: .when(platforms: [.linux]))]),
        .testTarget(name: "ZipStagesTests", dependencies: ["Unpack", "Overlay", "Repack", "Align", "APKCore", "ZlibWrapper", "TestSupport", .product(name: "Yams", package: "Yams")]),
        .testTarget(name: "DigestLanesTests", dependencies: ["DigestLanes", "OpenSSLWrapper", "ZlibWrapper"]),
        .testTarget(name: "ZlibWrapperTests", dependencies: ["ZlibWrapper", "APKCore", "TestSupport"]),
        .testTarget(name: "KeyStoreTests", dependencies: ["Sign", "OpenSSLWrapper", "TestSupport"]),
        .testTarget(name: "SignTests", dependencies: ["Sign", "SignatureSchemes", "DigestLanes", "APKCore", "OpenSSLWrapper", "Unpack", "Repack", "BinaryXML", "TestSupport"]),
        .testTarget(name: "VerifyTests", dependencies: ["Verify", "SignatureSchemes", "APKCore", "Unpack", "BinaryXML", "TestSupport"]),
        .testTarget(name: "BinaryXMLTests", dependencies: ["BinaryXML", "ResourceTable", "APKCore", "Unpack", "Overlay", "Repack", "TestSupport"]),
        .testTarget(name: "InstallTests", dependencies: ["Install", "Overlay", "TestSupport", .product(name: "Yams", package: "Yams")]),
        .testTarget(name: "LiveReloadTests", dependencies: ["LiveReload", "Overlay", "Unpack", "APKCore", "TestSupport"]),
        .testTarget(name: "SetsTests", dependencies: ["Sets", "Pipeline", "APKCore", "ZlibWrapper", "TestSupport"]),
        .testTarget(name: "PipelineTests", dependencies: ["Pipeline", "Unpack", "Overlay", "Repack", "Align", "Sign", "Verify", "APKCore", "TestSupport"]),
        // APKs nobody here wrote (aapt2, apktool, jar, zipfile, zip, apksigner, jarsigner), round-tripped through every command.
        .testTarget(name: "CorpusTests", dependencies: ["TestSupport"]),
        // Hardening (issue 7): hostile input, tamper sweep, atomic output, fuzz-found regressions.
        .testTarget(name: "HardeningTests", dependencies: ["APKCore", "Unpack", "Verify", "Sign", "SignatureSchemes", "BinaryXML", "ResourceTable", "OpenSSLWrapper", "ZlibWrapper", "TestSupport", "CommandFuzz"]),
        // Structure-aware mutation of seeds real tools make, run through every command as a hostile corpus would
        // be (CommandFuzzTests: a short fixed-seed pass; FuzzCommands: the long run, `make fuzz`).
        .target(name: "CommandFuzz", dependencies: ["APKCore", "ZlibWrapper", "TestSupport"], path: "Tests/Fuzz/CommandFuzz"),
        .executableTarget(name: "FuzzCommands", dependencies: ["CommandFuzz"], path: "Tests/Fuzz/FuzzCommands"),
        // Fuzz targets (issue 7): plain executables that replay input files; scripts/fuzz/run.sh builds them with
        // -sanitize=fuzzer,address -DFUZZING, which turns each into a libFuzzer binary.
        .target(name: "FuzzSupport", path: "Tests/Fuzz/FuzzSupport"),
        .executableTarget(name: "FuzzZip", dependencies: ["FuzzSupport", "APKCore", "Unpack", "SignatureSchemes"], path: "Tests/Fuzz/FuzzZip"),
        .executableTarget(name: "FuzzSigningBlock", dependencies: ["FuzzSupport", "APKCore", "SignatureSchemes", "Sign", "Verify"], path: "Tests/Fuzz/FuzzSigningBlock"),
        .executableTarget(name: "FuzzBinaryXML", dependencies: ["FuzzSupport", "BinaryXML"], path: "Tests/Fuzz/FuzzBinaryXML"),
        .executableTarget(name: "FuzzResourceTable", dependencies: ["FuzzSupport", "ResourceTable"], path: "Tests/Fuzz/FuzzResourceTable"),
        .executableTarget(name: "FuzzKeyStore", dependencies: ["FuzzSupport", "Sign", "OpenSSLWrapper"], path: "Tests/Fuzz/FuzzKeyStore"),
        .executableTarget(name: "FuzzVerify", dependencies: ["FuzzSupport", "APKCore", "Verify"], path: "Tests/Fuzz/FuzzVerify"),
        .executableTarget(name: "FuzzTextXML", dependencies: ["FuzzSupport", "BinaryXML"], path: "Tests/Fuzz/FuzzTextXML"),
        .executableTarget(name: "FuzzJARSignature", dependencies: ["FuzzSupport", "SignatureSchemes", "OpenSSLWrapper"], path: "Tests/Fuzz/FuzzJARSignature"),
    ]
)
