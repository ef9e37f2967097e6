//! The `unfad` command line (`../shared/spec/INTERFACE.md`): JSON on stdout, errors on
//! stderr with a non-zero exit code. Source errors are shown with the offending line.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use serde_json::Value as Json;
use unfad_syntax::{print_func, Func, Program, SourceId};

mod render;

/// Reverse-mode automatic differentiation of array programs, compiled to native code.
#[derive(Parser, Debug)]
#[command(name = "unfad", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Evaluate the entry point on an input; prints the value as JSON.
    Eval {
        /// The program (`.ad` file).
        file: PathBuf,
        /// A JSON object from parameter name to value.
        #[arg(long)]
        input: PathBuf,
        /// The definition to run (default: the last one in the file).
        #[arg(long)]
        entry: Option<String>,
    },
    /// Print an intermediate stage of the compilation.
    Emit {
        file: PathBuf,
        #[arg(long, value_enum)]
        stage: Stage,
        #[arg(long)]
        entry: Option<String>,
    },
}

/// The stages `emit` can show.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Stage {
    /// The typed Source term of the entry point, calls inlined.
    Source,
}

/// Where a command writes: stdout for results, stderr for errors.
pub struct Io<'a> {
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
}

/// An error already explained to the user (on stderr).
#[derive(Debug)]
pub struct Reported;

/// Parse `args` and run the command with the process's stdout and stderr.
pub fn main_with_args(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    match run(
        &cli.command,
        &mut Io {
            out: &mut out,
            err: &mut err,
        },
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Reported) => ExitCode::FAILURE,
    }
}

/// Run one command.
pub fn run(command: &Command, io: &mut Io) -> Result<(), Reported> {
    match command {
        Command::Eval { file, input, entry } => {
            let mut loaded = Loaded::read(file, io)?;
            let func = loaded.entry(entry.as_deref(), io)?;
            let input = read_json(input, io)?;
            let args = match unfad_interp::args_from_json::<f64>(&loaded.prog.arena, &func, &input)
            {
                Ok((args, _)) => args,
                Err(e) => return fail(io, &format!("error: {e}")),
            };
            match unfad_interp::eval_func(&loaded.prog.arena, &func, &args) {
                Ok(v) => print_json(io, &unfad_interp::value_to_json(&v)),
                Err(e) => fail(io, &format!("error: {e}")),
            }
        }
        Command::Emit { file, stage, entry } => {
            let mut loaded = Loaded::read(file, io)?;
            let func = loaded.entry(entry.as_deref(), io)?;
            match stage {
                Stage::Source => {
                    let text = print_func(&loaded.prog.arena, &func);
                    write_out(io, &text)
                }
            }
        }
    }
}

/// A program read from a file and type-checked.
pub struct Loaded {
    pub path: PathBuf,
    pub text: String,
    pub prog: Program,
}

impl Loaded {
    pub fn read(path: &Path, io: &mut Io) -> Result<Loaded, Reported> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => return fail(io, &format!("error: cannot read {}: {e}", path.display())),
        };
        match Program::load(&text) {
            Ok(prog) => Ok(Loaded {
                path: path.to_path_buf(),
                text,
                prog,
            }),
            Err(e) => {
                render::error(io.err, &path.display().to_string(), &text, &e);
                Err(Reported)
            }
        }
    }

    /// The entry point, inlined.
    pub fn entry(&mut self, name: Option<&str>, io: &mut Io) -> Result<Func, Reported> {
        match self.prog.entry(name).and_then(|d| self.prog.inline(d)) {
            Ok(f) => Ok(f),
            Err(e) => {
                render::error(io.err, &self.path.display().to_string(), &self.text, &e);
                Err(Reported)
            }
        }
    }
}

fn read_json(path: &Path, io: &mut Io) -> Result<Json, Reported> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return fail(io, &format!("error: cannot read {}: {e}", path.display())),
    };
    serde_json::from_str(&text).or_else(|e| {
        fail(
            io,
            &format!("error: {} is not valid JSON: {e}", path.display()),
        )
    })
}

fn print_json(io: &mut Io, j: &Json) -> Result<(), Reported> {
    write_out(io, &format!("{j}\n"))
}

fn write_out(io: &mut Io, text: &str) -> Result<(), Reported> {
    io.out.write_all(text.as_bytes()).map_err(|_| Reported)
}

fn fail<T>(io: &mut Io, message: &str) -> Result<T, Reported> {
    let _ = writeln!(io.err, "{message}");
    Err(Reported)
}

/// The source id a user's file gets (the prelude is the other one).
pub const USER_SOURCE: SourceId = SourceId::USER;
