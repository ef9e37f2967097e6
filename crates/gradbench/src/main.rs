//! `unfad-gradbench`: unfad as a GradBench tool, speaking the eval protocol on stdin and
//! stdout (see the crate docs of `unfad_gradbench`).

#![forbid(unsafe_code)]

fn main() {
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    if let Err(e) = unfad_gradbench::serve(stdin, stdout) {
        eprintln!("unfad-gradbench: {e}");
        std::process::exit(1);
    }
}
