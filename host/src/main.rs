//! The `mnemo` binary: long-term memory for AI agents.

fn main() -> std::process::ExitCode {
    mnemo_host::embedding::configure_threads();
    mnemo_host::cli::main()
}
