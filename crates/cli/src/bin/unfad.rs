//! The `unfad` command line; see `unfad --help`.

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    unfad_cli::main_with_args(std::env::args_os())
}
