import ArgumentParser

extension CompletionShell: @retroactive ExpressibleByArgument {}

extension APKPatch {
    /// `apkpatch completions bash|zsh|fish`: the shell completion script (what `make install` installs).
    struct Completions: ParsableCommand {
        static let configuration = CommandConfiguration(
            // Named, as every command is: argument-parser derives a missing name with String(describing:), whose
            // reflection and protocol conformance lookups every run of every command pays while the tree is built.
            commandName: "completions",
            abstract: "Print the shell completion script for bash, zsh or fish.",
            discussion: """
            make install and the release archive install these for you. By hand:

            Examples:
              apkpatch completions bash \\
                  > ~/.local/share/bash-completion/completions/apkpatch
              apkpatch completions zsh > ~/.zfunc/_apkpatch
              apkpatch completions fish > ~/.config/fish/completions/apkpatch.fish
            """
        )

        @Argument(help: ArgumentHelp("bash, zsh or fish.", valueName: "shell")) var shell: CompletionShell

        func run() {
            let script = APKPatch.completionScript(for: shell)
            print(script, terminator: script.hasSuffix("\n") ? "" : "\n")
        }
    }
}
