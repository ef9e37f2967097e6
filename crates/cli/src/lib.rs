//! The `unfad` command line (`../shared/spec/INTERFACE.md`): JSON on stdout, errors on
//! stderr with a non-zero exit code. Source errors are shown with the offending line.

#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand, ValueEnum};
use serde_json::{json, Value as Json};
use unfad::{Engine, GradOptions, Pipeline};
use unfad_interp::{args_from_json, eval_func, value_from_leaves, value_to_json, SizeEnv, Value};
use unfad_syntax::{print_func, Type};

mod convert;
mod higher;
mod render;

use convert::Args;
use higher::{jvp, second_order, Request, SecondOrderOutput};

/// Reverse-mode automatic differentiation of array programs, compiled to native code.
#[derive(Parser, Debug)]
#[command(name = "unfad", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Evaluate the entry point on an input (reference interpreter); prints the value as JSON.
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
    /// Value and gradient of the entry point, by the native code (or `--interp`).
    Grad {
        file: PathBuf,
        #[arg(long)]
        input: PathBuf,
        #[arg(long)]
        entry: Option<String>,
        /// Parameters to differentiate against, comma-separated (default: all).
        #[arg(long, value_delimiter = ',')]
        wrt: Option<Vec<String>>,
        /// Run the reference interpreter on the optimized Target term instead.
        #[arg(long)]
        interp: bool,
    },
    /// Value and directional derivative of the entry point by native forward mode:
    /// `{"value": v, "tangent": t}`, `t` shaped like `v`.
    Jvp {
        file: PathBuf,
        #[arg(long)]
        input: PathBuf,
        /// The direction: a JSON object of the shape of the input.
        #[arg(long)]
        tangent: PathBuf,
        #[arg(long)]
        entry: Option<String>,
        /// Parameters given a tangent, comma-separated (default: all; the others fixed).
        #[arg(long, value_delimiter = ',')]
        wrt: Option<Vec<String>>,
    },
    /// Value, gradient and Hessian-vector product (forward over reverse):
    /// `{"value": v, "gradient": {...}, "hvp": {...}}`.
    Hvp {
        file: PathBuf,
        #[arg(long)]
        input: PathBuf,
        /// The direction: a JSON object of the shape of the input.
        #[arg(long)]
        direction: PathBuf,
        #[arg(long)]
        entry: Option<String>,
        #[arg(long, value_delimiter = ',')]
        wrt: Option<Vec<String>>,
        /// Reverse mode over the gradient instead of forward mode (slower; a check).
        #[arg(long)]
        reverse_over_reverse: bool,
    },
    /// Value, gradient and dense Hessian over all real inputs flattened in parameter
    /// order: `{"value": v, "gradient": {...}, "hessian": [[...], ...]}`.
    Hessian {
        file: PathBuf,
        #[arg(long)]
        input: PathBuf,
        #[arg(long)]
        entry: Option<String>,
        #[arg(long, value_delimiter = ',')]
        wrt: Option<Vec<String>>,
    },
    /// Print an intermediate stage of the compilation.
    Emit {
        file: PathBuf,
        #[arg(long, value_enum)]
        stage: Stage,
        #[arg(long)]
        entry: Option<String>,
    },
    /// Cost of the primal and of the gradient in the paper's model, and the bound.
    Cost {
        file: PathBuf,
        #[arg(long)]
        entry: Option<String>,
        /// Values of the size variables, e.g. `n=1000,m=10` (default: 100 each).
        #[arg(long, value_delimiter = ',')]
        sizes: Option<Vec<String>>,
    },
    /// Compare the native gradient with the interpreter, forward mode and finite differences.
    Check {
        file: PathBuf,
        #[arg(long)]
        input: PathBuf,
        #[arg(long)]
        entry: Option<String>,
        /// Compare with forward mode and finite differences at no more than this many
        /// leaves of each parameter, spread evenly, first and last included (each costs
        /// interpreter runs, so large inputs take long otherwise); default: every leaf
        #[arg(long)]
        leaves: Option<usize>,
    },
    /// Time the native primal and value-and-gradient on an input.
    Bench {
        file: PathBuf,
        #[arg(long)]
        input: PathBuf,
        #[arg(long)]
        entry: Option<String>,
        /// Seconds to spend measuring each function.
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
    },
}

/// The stages `emit` can show.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum Stage {
    /// The typed Source term of the entry point, calls inlined.
    Source,
    /// The Source UNF of the entry point and its reverse derivative in Target UNF.
    Unf,
    /// Value and gradient by reverse mode (direct macro), before optimization.
    Target,
    /// The same after partial evaluation and the optimizations: first-order.
    Optimized,
    /// The Cranelift IR of the native gradient.
    Clif,
    /// The host's machine code of the native gradient, compiled whole (after Cranelift's
    /// optimizations and register allocation).
    Asm,
    /// Value and tangent by forward mode, optimized (what `jvp` compiles).
    Jvp,
    /// Value, gradient and Hessian-vector product, forward over reverse, optimized (what
    /// `hvp` compiles).
    Hvp,
    /// The primal as the native primal compiles it (loop invariants hoisted, no other
    /// rewriting: what `bench` times as the primal).
    Primal,
    /// The Cranelift IR of the native primal.
    PrimalClif,
    /// The host's machine code of the native primal.
    PrimalAsm,
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
            let (text, p) = load(file, entry.as_deref(), io)?;
            let (args, _) = read_args(&p, input, io)?;
            match eval_func(&p.program.arena, &p.source, &args) {
                Ok(v) => print_json(io, &value_to_json(&v)),
                // The program stopped on its input: shown at its place in the source.
                Err(unfad_interp::EvalError(msg, Some(span))) => {
                    let e = p.program.error_at(unfad_syntax::ErrorKind::Run, span, msg);
                    report(io, file, &text, unfad::Error::from(e))
                }
                Err(e) => fail(io, &format!("error: {e}")),
            }
        }
        Command::Grad {
            file,
            input,
            entry,
            wrt,
            interp,
        } => grad(file, input, entry.as_deref(), wrt.as_deref(), *interp, io),
        Command::Jvp {
            file,
            input,
            tangent,
            entry,
            wrt,
        } => jvp(file, input, tangent, entry.as_deref(), wrt.as_deref(), io),
        Command::Hvp {
            file,
            input,
            direction,
            entry,
            wrt,
            reverse_over_reverse,
        } => {
            let route = if *reverse_over_reverse {
                unfad::SecondOrder::ReverseOverReverse
            } else {
                unfad::SecondOrder::ForwardOverReverse
            };
            let request = Request::new(file, input, entry.as_deref(), wrt.as_deref());
            second_order(&request, SecondOrderOutput::Hvp(direction, route), io)
        }
        Command::Hessian {
            file,
            input,
            entry,
            wrt,
        } => {
            let request = Request::new(file, input, entry.as_deref(), wrt.as_deref());
            second_order(&request, SecondOrderOutput::Hessian, io)
        }
        Command::Emit { file, stage, entry } => emit(file, *stage, entry.as_deref(), io),
        Command::Cost { file, entry, sizes } => cost(file, entry.as_deref(), sizes.as_deref(), io),
        Command::Check {
            file,
            input,
            entry,
            leaves,
        } => check(file, input, entry.as_deref(), *leaves, io),
        Command::Bench {
            file,
            input,
            entry,
            seconds,
        } => bench(file, input, entry.as_deref(), *seconds, io),
    }
}

/// Read and load a program; errors are shown with the offending source line.
fn load(path: &Path, entry: Option<&str>, io: &mut Io) -> Result<(String, Pipeline), Reported> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return fail(io, &format!("error: cannot read {}: {e}", path.display())),
    };
    match Pipeline::load(&text, entry) {
        Ok(p) => Ok((text, p)),
        Err(e) => report(io, path, &text, e),
    }
}

/// Show an error of the library; program errors with their source line.
fn report<T>(io: &mut Io, path: &Path, text: &str, e: unfad::Error) -> Result<T, Reported> {
    match e {
        unfad::Error::Program(e) => {
            render::error(io.err, &path.display().to_string(), text, &e);
            Err(Reported)
        }
        other => fail(io, &format!("error: {other}")),
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

/// The arguments of the entry point from a JSON input file, checked against its types.
fn read_args(
    p: &Pipeline,
    input: &Path,
    io: &mut Io,
) -> Result<(Vec<Value<f64>>, SizeEnv), Reported> {
    let json = read_json(input, io)?;
    match args_from_json::<f64>(&p.program.arena, &p.source, &json) {
        Ok(r) => Ok(r),
        Err(e) => fail(io, &format!("error: {e}")),
    }
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

/// A gradient (flat, row-major) as JSON shaped like its parameter.
fn gradient_json(ty: &Type, flat: &[f64], sizes: &SizeEnv) -> Json {
    let lookup = sizes.lookup();
    match value_from_leaves(ty, flat, &|v| Some(lookup(v).unwrap_or(0))) {
        Some(v) => value_to_json(&v),
        None => Json::Array(
            flat.iter()
                .map(|&x| unfad_interp::number_to_json(x))
                .collect(),
        ),
    }
}

fn grad(
    file: &Path,
    input: &Path,
    entry: Option<&str>,
    wrt: Option<&[String]>,
    interp: bool,
    io: &mut Io,
) -> Result<(), Reported> {
    let (text, mut p) = load(file, entry, io)?;
    let (values, sizes) = read_args(&p, input, io)?;
    let names = p.source.param_names(&p.program.arena);
    let types = p.source.param_types(&p.program.arena);
    let wrt_names: Option<Vec<&str>> = wrt.map(|w| w.iter().map(String::as_str).collect());
    let mut wrt_idx = match p.wrt(wrt_names.as_deref()) {
        Ok(w) => w,
        Err(e) => return report(io, file, &text, e),
    };
    wrt_idx.sort_unstable();
    let (value, grads): (f64, Vec<Vec<f64>>) = if interp {
        let opt = match p.optimized_reverse(&wrt_idx) {
            Ok(f) => f,
            Err(e) => return report(io, file, &text, e),
        };
        match eval_func(&p.program.arena, &opt, &values) {
            Ok(Value::Tuple(items)) if items.len() == wrt_idx.len() + 1 => {
                let value = items[0].as_real().unwrap_or(f64::NAN);
                (value, items[1..].iter().map(|g| g.leaves()).collect())
            }
            Ok(other) => {
                return fail(
                    io,
                    &format!("error: unexpected result of the gradient: {other}"),
                )
            }
            Err(e) => return fail(io, &format!("error: {e}")),
        }
    } else {
        let w: Vec<&str> = wrt_idx.iter().map(|&i| names[i].as_str()).collect();
        let g = match Engine::new().compile_grad_with(
            &text,
            GradOptions {
                entry,
                wrt: Some(&w),
            },
        ) {
            Ok(g) => g,
            Err(e) => return report(io, file, &text, e),
        };
        let storage = Args::new(&values, &types);
        match g.call(&storage.args()) {
            Ok(out) => (
                out.value,
                wrt_idx.iter().map(|&i| out.gradient(i).to_vec()).collect(),
            ),
            Err(e) => return fail(io, &format!("error: {e}")),
        }
    };
    let mut gradient = serde_json::Map::new();
    for (&i, g) in wrt_idx.iter().zip(&grads) {
        gradient.insert(names[i].clone(), gradient_json(&types[i], g, &sizes));
    }
    print_json(
        io,
        &json!({ "value": unfad_interp::number_to_json(value), "gradient": gradient }),
    )
}

fn emit(file: &Path, stage: Stage, entry: Option<&str>, io: &mut Io) -> Result<(), Reported> {
    let (text, mut p) = load(file, entry, io)?;
    let all: Vec<usize> = p.differentiable_params();
    let shown = match stage {
        Stage::Source => Ok(print_func(&p.program.arena, &p.source)),
        Stage::Unf => p.check_differentiable().and_then(|_| {
            let arena = &p.program.arena;
            let src = unfad_ad::source_unf(arena, &p.source).map_err(|e| p.ad_error(e))?;
            let tgt = unfad_ad::target_unf(arena, &p.source, &all).map_err(|e| p.ad_error(e))?;
            Ok(format!(
                "// Source UNF\n{}\n\n// Target UNF: D_rho of it\n{}\n",
                unfad_ad::unf::print_source(arena, &src),
                unfad_ad::unf::print_target(arena, &tgt)
            ))
        }),
        Stage::Target => p.reverse(&all).map(|f| print_func(&p.program.arena, &f)),
        Stage::Optimized => p
            .optimized_reverse(&all)
            .map(|f| print_func(&p.program.arena, &f)),
        Stage::Clif => p.optimized_reverse(&all).and_then(|f| {
            unfad_jit::clif_text_parallel(&mut p.program.arena, &f).map_err(unfad::Error::from)
        }),
        Stage::Asm => p
            .optimized_reverse(&all)
            .and_then(|f| unfad_jit::asm_text(&p.program.arena, &f).map_err(unfad::Error::from)),
        Stage::Jvp => p
            .optimized_forward(&all)
            .map(|f| print_func(&p.program.arena, &f)),
        Stage::Hvp => p
            .optimized_hvp(&all, unfad::SecondOrder::ForwardOverReverse)
            .map(|f| print_func(&p.program.arena, &f)),
        Stage::Primal => {
            let f = p.prepared_primal();
            Ok(print_func(&p.program.arena, &f))
        }
        Stage::PrimalClif => {
            let f = p.prepared_primal();
            unfad_jit::clif_text(&p.program.arena, &f).map_err(unfad::Error::from)
        }
        Stage::PrimalAsm => {
            let f = p.prepared_primal();
            unfad_jit::asm_text(&p.program.arena, &f).map_err(unfad::Error::from)
        }
    };
    match shown {
        Ok(s) => write_out(io, &s),
        Err(e) => report(io, file, &text, e),
    }
}

/// `n=1000,m=10` as a lookup (unnamed sizes are 100).
fn parse_sizes(list: Option<&[String]>, io: &mut Io) -> Result<Vec<(String, u64)>, Reported> {
    let mut out = Vec::new();
    for item in list.unwrap_or(&[]) {
        match item
            .split_once('=')
            .map(|(k, v)| (k.trim(), v.trim().parse::<u64>()))
        {
            Some((k, Ok(v))) if !k.is_empty() => out.push((k.to_string(), v)),
            _ => return fail(io, &format!("error: `{item}` is not a size like `n=1000`")),
        }
    }
    Ok(out)
}

fn cost_json(c: &unfad_opt::Cost) -> Json {
    json!({"moves": c.moves, "adds": c.adds, "mults": c.mults, "nlops": c.nlops, "total": c.total()})
}

fn cost(
    file: &Path,
    entry: Option<&str>,
    sizes: Option<&[String]>,
    io: &mut Io,
) -> Result<(), Reported> {
    let (text, mut p) = load(file, entry, io)?;
    let given = parse_sizes(sizes, io)?;
    let vars = p.source.size_vars(&p.program.arena);
    if let Some((k, _)) = given
        .iter()
        .find(|(k, _)| !vars.iter().any(|v| v.as_ref() == k))
    {
        let names: Vec<&str> = vars.iter().map(|v| v.as_ref()).collect();
        return fail(
            io,
            &format!(
                "error: `{k}` is not a size of the program (its sizes: {})",
                names.join(", ")
            ),
        );
    }
    let value_of = |v: &str| given.iter().find(|(k, _)| k == v).map_or(100, |(_, n)| *n);
    let all: Vec<usize> = p.differentiable_params();
    let opt = match p.optimized_reverse(&all) {
        Ok(f) => f,
        Err(e) => return report(io, file, &text, e),
    };
    let lookup = |v: &str| Some(value_of(v));
    let bound = unfad_opt::Bound::measure(&p.program.arena, &p.source, &opt, &lookup);
    let size_map: serde_json::Map<String, Json> = vars
        .iter()
        .map(|v| (v.to_string(), json!(value_of(v))))
        .collect();
    print_json(
        io,
        &json!({
            "sizes": size_map,
            "primal": cost_json(&bound.primal),
            "gradient": cost_json(&bound.gradient),
            "p": bound.p,
            "bound": bound.factor(),
            "ratio": bound.ratio(),
            "holds": bound.holds(),
        }),
    )
}

/// Largest error of `a` against `b`, as (absolute, relative to max(1, |b|)).
fn max_error(a: &[f64], b: &[f64]) -> (f64, f64) {
    let mut worst = (0.0f64, 0.0f64);
    if a.len() != b.len() {
        return (f64::INFINITY, f64::INFINITY);
    }
    for (x, y) in a.iter().zip(b) {
        // The same value, infinities included (whose difference is NaN).
        if x == y {
            continue;
        }
        let abs = (x - y).abs();
        let abs = if abs.is_nan() {
            if x.is_nan() && y.is_nan() {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            abs
        };
        worst.0 = worst.0.max(abs);
        worst.1 = worst.1.max(abs / y.abs().max(1.0));
    }
    worst
}

fn check(
    file: &Path,
    input: &Path,
    entry: Option<&str>,
    leaves: Option<usize>,
    io: &mut Io,
) -> Result<(), Reported> {
    let limit = leaves.unwrap_or(usize::MAX);
    let (text, mut p) = load(file, entry, io)?;
    let (values, _) = read_args(&p, input, io)?;
    let types = p.source.param_types(&p.program.arena);
    let all: Vec<usize> = p.differentiable_params();
    let opt = match p.optimized_reverse(&all) {
        Ok(f) => f,
        Err(e) => return report(io, file, &text, e),
    };
    let native = match Engine::new().compile_grad_with(&text, GradOptions { entry, wrt: None }) {
        Ok(g) => g,
        Err(e) => return report(io, file, &text, e),
    };
    let storage = Args::new(&values, &types);
    let out = match native.call(&storage.args()) {
        Ok(o) => o,
        Err(e) => return fail(io, &format!("error: {e}")),
    };
    let native_flat: Vec<f64> = all.iter().flat_map(|&i| out.gradient(i).to_vec()).collect();
    let arena = &p.program.arena;
    let interp = match eval_func(arena, &opt, &values) {
        Ok(Value::Tuple(items)) => items,
        Ok(v) => {
            return fail(
                io,
                &format!("error: unexpected result of the gradient: {v}"),
            )
        }
        Err(e) => return fail(io, &format!("error: {e}")),
    };
    let interp_value = interp[0].as_real().unwrap_or(f64::NAN);
    let interp_flat: Vec<f64> = interp[1..].iter().flat_map(|g| g.leaves()).collect();
    let (fwd_value, fwd) =
        match unfad_interp::forward_gradient_sampled(arena, &p.source, &values, limit) {
            Ok(r) => r,
            Err(e) => return fail(io, &format!("error: {e}")),
        };
    // The oracles give every parameter's; the native gradient is of those holding reals.
    let only_differentiated = |g: Vec<Vec<Option<f64>>>| -> Vec<Option<f64>> {
        all.iter()
            .flat_map(|&i| g.get(i).cloned().unwrap_or_default())
            .collect()
    };
    let fwd_flat = only_differentiated(fwd);
    let fd_flat = match unfad_interp::fd_gradient_sampled(arena, &p.source, &values, 1e-6, limit) {
        Ok(g) => only_differentiated(g),
        Err(e) => return fail(io, &format!("error: {e}")),
    };
    // The leaves the sampled oracles were run at, and the native gradient's there.
    let at_sampled = |oracle: &[Option<f64>]| -> (Vec<f64>, Vec<f64>) {
        native_flat
            .iter()
            .zip(oracle)
            .filter_map(|(&x, y)| y.map(|y| (x, y)))
            .unzip()
    };
    let (native_fwd, fwd_flat) = at_sampled(&fwd_flat);
    let (native_fd, fd_flat) = at_sampled(&fd_flat);
    let e_interp = max_error(&native_flat, &interp_flat);
    let e_fwd = max_error(&native_fwd, &fwd_flat);
    let e_fd = max_error(&native_fd, &fd_flat);
    let e_value = max_error(&[out.value], &[fwd_value]);
    let e_interp_value = max_error(&[out.value], &[interp_value]);
    // A value that is not a finite number (0/0, 1/0) has no derivative to check: say so
    // rather than report a disagreement (forward mode's tangent of a 0/0 can be a number
    // where reverse mode's adjoint is not).
    let defined = out.value.is_finite();
    // Tolerances: the same computation in another order; a step-size-limited estimate.
    let ok = defined
        && e_value.1 <= 1e-10
        && e_interp_value.1 <= 1e-10
        && e_interp.1 <= 1e-10
        && e_fwd.1 <= 1e-8
        && e_fd.1 <= 1e-4;
    let err = |e: (f64, f64)| json!({"absolute": unfad_interp::number_to_json(e.0), "relative": unfad_interp::number_to_json(e.1)});
    print_json(
        io,
        &json!({
            "value": {"native": unfad_interp::number_to_json(out.value), "interpreter": unfad_interp::number_to_json(interp_value)},
            "gradient_leaves": native_flat.len(),
            "leaves_checked": {"forward_mode": native_fwd.len(), "finite_differences": native_fd.len()},
            "max_error": {
                "value": err(e_value),
                "native_vs_interpreter": err(e_interp),
                "native_vs_forward_mode": err(e_fwd),
                "native_vs_finite_differences": err(e_fd),
            },
            "ok": ok,
        }),
    )?;
    if ok {
        Ok(())
    } else if !defined {
        fail(
            io,
            &format!(
                "error: the value is {} at this input, so its gradient is not defined there \
                 and cannot be checked; choose an input inside the function's domain",
                out.value
            ),
        )
    } else {
        fail(
            io,
            "error: the native gradient disagrees with the oracles beyond tolerance",
        )
    }
}

/// Call `f` repeatedly for about `seconds`; returns the median time of a call.
fn time_it(seconds: f64, mut f: impl FnMut()) -> Duration {
    // Calibrate a batch that takes ~1 ms, then time batches.
    f();
    let mut batch = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        if t.elapsed() >= Duration::from_millis(1) || batch >= 1 << 30 {
            break;
        }
        batch *= 2;
    }
    let mut samples = Vec::new();
    let start = Instant::now();
    while start.elapsed().as_secs_f64() < seconds || samples.len() < 5 {
        let t = Instant::now();
        for _ in 0..batch {
            f();
        }
        samples.push(t.elapsed() / batch as u32);
    }
    samples.sort();
    samples[samples.len() / 2]
}

fn bench(
    file: &Path,
    input: &Path,
    entry: Option<&str>,
    seconds: f64,
    io: &mut Io,
) -> Result<(), Reported> {
    let (text, mut p) = load(file, entry, io)?;
    let (values, sizes) = read_args(&p, input, io)?;
    let types = p.source.param_types(&p.program.arena);
    let t0 = Instant::now();
    let compiled = match entry {
        Some(e) => Engine::new().compile_entry(&text, e),
        None => Engine::new().compile(&text),
    };
    let primal = match compiled {
        Ok(f) => f,
        Err(e) => return report(io, file, &text, e),
    };
    let compile_primal = t0.elapsed();
    let t1 = Instant::now();
    let grad = match Engine::new().compile_grad_with(&text, GradOptions { entry, wrt: None }) {
        Ok(g) => g,
        Err(e) => return report(io, file, &text, e),
    };
    let compile_grad = t1.elapsed();
    let storage = Args::new(&values, &types);
    let args = storage.args();
    if let Err(e) = primal.call(&args).and_then(|_| grad.call(&args)) {
        return fail(io, &format!("error: {e}"));
    }
    let mut out = unfad::Output::default();
    let t_primal = time_it(seconds, || {
        let _ = std::hint::black_box(primal.call(&args));
    });
    let t_grad = time_it(seconds, || {
        let _ = std::hint::black_box(grad.call_into(&args, &mut out));
    });
    // Forward mode and the Hessian-vector product, in the direction of the input itself.
    let options = GradOptions { entry, wrt: None };
    let engine = Engine::new();
    // Into outputs kept from call to call, as the gradient's: the time of the native code
    // and the argument checks, not of allocating and paging in fresh results.
    let t_jvp = match engine.compile_jvp_with(&text, options) {
        Ok(f) => {
            let mut out = unfad::JvpOutput::default();
            time_it(seconds, || {
                let _ = std::hint::black_box(f.call_into(&args, &args, &mut out));
            })
        }
        Err(e) => return report(io, file, &text, e),
    };
    let t_hvp = match engine.compile_hvp_with(&text, options, unfad::SecondOrder::default()) {
        Ok(f) => {
            let mut out = unfad::HvpOutput::default();
            time_it(seconds, || {
                let _ = std::hint::black_box(f.call_into(&args, &args, &mut out));
            })
        }
        Err(e) => return report(io, file, &text, e),
    };
    let all: Vec<usize> = p.differentiable_params();
    let model = p.optimized_reverse(&all).ok().map(|opt| {
        let lookup = sizes.lookup();
        let lookup = |v: &str| Some(lookup(v).unwrap_or(0));
        unfad_opt::Bound::measure(&p.program.arena, &p.source, &opt, &lookup)
    });
    let ns = |d: Duration| d.as_secs_f64() * 1e9;
    print_json(
        io,
        &json!({
            "primal_ns": ns(t_primal),
            "gradient_ns": ns(t_grad),
            "ratio": ns(t_grad) / ns(t_primal).max(1e-3),
            "jvp_ns": ns(t_jvp),
            "jvp_ratio": ns(t_jvp) / ns(t_primal).max(1e-3),
            "hvp_ns": ns(t_hvp),
            "hvp_ratio": ns(t_hvp) / ns(t_grad).max(1e-3),
            "model_ratio": model.as_ref().map(|b| b.ratio()),
            "bound": model.as_ref().map(|b| b.factor()),
            "compile_ms": {"primal": compile_primal.as_secs_f64() * 1e3, "gradient": compile_grad.as_secs_f64() * 1e3},
            "workspace": {
                "primal": primal.workspace_len(&size_values(primal.size_vars(), &sizes)),
                "gradient": grad.workspace_len(&size_values(grad.size_vars(), &sizes)),
            },
        }),
    )
}

fn size_values(vars: &[String], sizes: &SizeEnv) -> Vec<u64> {
    vars.iter().map(|v| sizes.get(v).unwrap_or(0)).collect()
}
