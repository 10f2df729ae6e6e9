//! The `mnemo` binary: long-term memory for AI agents.

mod cli;
mod server;

fn main() -> std::process::ExitCode {
    cli::main()
}
