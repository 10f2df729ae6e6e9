//! The `mnemo` binary: long-term memory for AI agents.

mod cli;
mod mcp;
mod server;

fn main() -> std::process::ExitCode {
    cli::main()
}
