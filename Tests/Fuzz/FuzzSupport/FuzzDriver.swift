#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The entry point shared by every fuzz target under `Tests/Fuzz`.
///
/// Built by `scripts/fuzz/run.sh` with `-sanitize=fuzzer,address -DFUZZING`, `run` hands control to libFuzzer
/// (`LLVMFuzzerRunDriver`, so libFuzzer's usual flags and corpus directories work). SwiftPM renames an executable's
/// `main` to `<Module>_main` and links `main` to it, which would shadow libFuzzer's own `main`; calling the
/// driver from Swift's `@main` sidesteps that. Built normally (plain `swift build`), the same executable replays
/// files or directories given on the command line through the same callback, so the targets never break the
/// ordinary build and a crashing input can be replayed without the sanitizer toolchain.
public enum FuzzDriver {
    /// What libFuzzer calls for each input.
    public typealias Callback = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

    /// Runs the fuzzer (FUZZING builds) or replays the files and directories named in `CommandLine.arguments`.
    public static func run(_ callback: Callback) -> Never {
        #if FUZZING
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, callback))
        #else
        let paths = CommandLine.arguments.dropFirst().filter { !$0.hasPrefix("-") }
        if paths.isEmpty {
            printError("usage: \(CommandLine.arguments[0]) FILE|DIR...  (replays inputs; build with scripts/fuzz/run.sh to fuzz)")
            exit(2)
        }
        var count = 0
        for path in paths {
            for file in files(at: path) {
                guard let bytes = readFile(file) else { printError("cannot read \(file)"); exit(1) }
                _ = bytes.withUnsafeBufferPointer { callback($0.baseAddress, $0.count) }
                count += 1
            }
        }
        print("replayed \(count) input(s) without a crash")
        exit(0)
        #endif
    }

    /// Views libFuzzer's (pointer, size) pair as a buffer; a zero-length input may come with a null pointer.
    public static func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
        guard let data, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: size))
    }

    static func printError(_ message: String) {
        let line = Array((message + "\n").utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }

    static func files(at path: String) -> [String] {
        guard let dir = opendir(path) else { return [path] }
        defer { closedir(dir) }
        var result: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            result.append(path + "/" + name)
        }
        return result.sorted()
    }

    static func readFile(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if n <= 0 { break }
            result.append(contentsOf: buffer[0..<n])
        }
        return result
    }
}

#if FUZZING
/// libFuzzer's entry point for programs that have their own `main` (LLVM 11+).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                         _ callback: FuzzDriver.Callback) -> CInt
#endif
