//! The `mnemo` binary: long-term memory for AI agents.

mod cli;
mod mcp;

fn main() -> std::process::ExitCode {
    cli::main()
}
