import CommandFuzz
import Foundation

// The long mutation run over every command (`make fuzz`): builds the seeds with the real tools, mutates them
// structure-aware and runs each target's commands on every mutated input under a timeout and an address-space
// limit. A finding keeps its case directory (the input, FINDING.txt with the command and what went wrong) under
// WORK/cases/; exit status 1 when there is one.
//
//   FuzzCommands --apkpatch .build/release/apkpatch [--seconds N | --iterations N] [--seed N] [--work DIR]
//                [--jobs N] [--no-java-oracles] [--target SUBSTRING]... [--timeout S] [--memory-mb N]
// Unbuffered writes: a long run's progress reaches a log file as it happens.
@Sendable func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
var arguments = Array(CommandLine.arguments.dropFirst())
@MainActor func value(_ name: String) -> String? {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
    defer { arguments.removeSubrange(i...(i + 1)) }
    return arguments[i + 1]
}
@MainActor func flag(_ name: String) -> Bool {
    guard let i = arguments.firstIndex(of: name) else { return false }
    arguments.remove(at: i)
    return true
}
let apkpatch = value("--apkpatch") ?? ".build/release/apkpatch"
let work = URL(fileURLWithPath: value("--work") ?? ".build/fuzz-commands")
var options = CampaignOptions(apkpatch: URL(fileURLWithPath: apkpatch).path, work: work)
options.seed = value("--seed").flatMap(UInt64.init) ?? UInt64(Date().timeIntervalSince1970)
let iterations = value("--iterations").flatMap(Int.init), seconds = value("--seconds").flatMap(Double.init)
if let iterations { options.iterations = iterations; options.seconds = seconds } else { options.iterations = .max; options.seconds = seconds ?? 600 }
if let n = value("--jobs").flatMap(Int.init) { options.jobs = n }
if let n = value("--timeout").flatMap(Double.init) { options.timeout = n }
if let n = value("--memory-mb").flatMap(Int.init) { options.memoryBytes = n << 20 }
if let n = value("--commands-per-case").flatMap(Int.init) { options.commandsPerCase = n }
options.javaOracles = !flag("--no-java-oracles")
options.log = say
while let t = value("--target") { options.targetFilter.append(t) }
guard arguments.isEmpty else {
    FileHandle.standardError.write(Data("FuzzCommands: unknown arguments \(arguments)\n".utf8))
    exit(2)
}
guard FileManager.default.isExecutableFile(atPath: options.apkpatch) else {
    FileHandle.standardError.write(Data("FuzzCommands: no apkpatch binary at \(options.apkpatch) (make build)\n".utf8))
    exit(2)
}
try? FileManager.default.removeItem(at: work.appendingPathComponent("seeds"))
say("fuzz: seed \(options.seed), work \(work.path), binary \(options.apkpatch)")
let campaign: Campaign
do { campaign = try Campaign(options: options) } catch {
    FileHandle.standardError.write(Data("FuzzCommands: building the seeds failed: \(error)\n".utf8))
    exit(2)
}
// The intact seeds first: a command that refuses its own seed would only ever test its first refusal.
for control in campaign.runControls() where control.status != 0 {
    say("fuzz: control: \(control.target): \(control.command) exits \(control.status) on the intact seed")
}
campaign.run()
say("fuzz: \(campaign.cases) cases, \(campaign.runs) command runs, \(campaign.findings.count) distinct finding(s)")
say(campaign.statistics)
for finding in campaign.findings {
    say("FINDING [\(finding.target)] \(finding.command): \(finding.kind)\n  \(finding.caseDirectory)/FINDING.txt")
}
exit(campaign.findings.isEmpty ? 0 : 1)
