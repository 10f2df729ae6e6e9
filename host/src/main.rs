//! The `mnemo` binary: long-term memory for AI agents.

mod cli;

fn main() -> std::process::ExitCode {
    mnemo_host::embedding::pin_thread_count();
    cli::main()
}
