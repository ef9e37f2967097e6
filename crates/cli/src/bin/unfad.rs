//! The `unfad` command line; see `unfad --help`.

fn main() -> std::process::ExitCode {
    unfad_cli::main_with_args(std::env::args_os())
}
