//! The `mnemo` binary: long-term memory for AI agents.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
