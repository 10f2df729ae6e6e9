//! The `mnemo` binary: long-term memory for AI agents.

mod cli;

fn main() -> std::process::ExitCode {
    mnemo_host::embedding::configure_threads();
    cli::main()
}
