//! The compile-time benchmark of issue 23: how `compile_grad`'s time and peak memory grow
//! with the length of a straight-line program, stage by stage (load, reverse pass,
//! optimizer, native code), and the stages of one example file.
//!
//! ```text
//! cargo run --release -p unfad --example compile_scaling -- [--paper] [--no-jit] [--shape S] [N ...]
//! cargo run --release -p unfad --example compile_scaling -- [--paper] --file examples/gmm.ad
//! ```
//!
//! The program of length `N` is `let x_i = sin(x_{i-1}) * 0.5 + x_{i-1}` for `i = 1..N`,
//! one real in, one out; `--shape` picks another kind of statement (`SHAPES`: two
//! variables updated in turn, array statements, reads of a weight vector). Each `N` runs in a child process of its own, so that its peak
//! memory (`VmHWM`) is its own. `--paper` differentiates with the paper's macro
//! ([`Pipeline::reverse`], continuations over the whole context) instead of the route
//! `compile_grad` takes ([`Pipeline::optimized_reverse`]); `--no-jit` stops before the
//! native code (whose register allocation is what grows fastest). The default curve is
//! N = 100, 1000, 10000, 100000.
//!
//! A benchmark, not a test: the figures depend on the machine and its load.

use std::process::Command;
use std::time::Instant;

use unfad::pipeline::Pipeline;

/// The straight-line program of `n` statements of the kind `shape` (see [`SHAPES`]).
fn program(shape: &str, n: usize) -> String {
    match shape {
        "pair" => {
            let mut s = String::from("def f(a0: real, b0: real): real =\n");
            let (mut a, mut b) = ("a0".to_string(), "b0".to_string());
            for i in 1..=n {
                if i % 2 == 1 {
                    s.push_str(&format!("  let a{i} = {a} * {b} + 0.1 in\n"));
                    a = format!("a{i}");
                } else {
                    s.push_str(&format!("  let b{i} = tanh({a}) - 0.5 * {b} in\n"));
                    b = format!("b{i}");
                }
            }
            s + &format!("  {a} + {b}\n")
        }
        "loops" => chain_of(
            "def f(v0: [m]real, w: [m]real): real =",
            n,
            |i, p| format!("let v{i} = map2 (s, t. s * 0.5 + sin(t * s)) v{p} w"),
            &format!("sum(v{n})"),
        ),
        "reads" => chain_of(
            "def f(x0: real, w: [m]real): real =",
            n,
            |i, p| format!("let x{i} = x{p} * 0.9 + exp(-x{p} * x{p}) * w[{}]", i % 8),
            &format!("x{n}"),
        ),
        _ => chain_of(
            "def f(x0: real): real =",
            n,
            |i, p| format!("let x{i} = sin(x{p}) * 0.5 + x{p}"),
            &format!("x{n}"),
        ),
    }
}

/// `header`, then statement `i` (reading statement `p = i - 1`'s variable) for `i = 1..n`,
/// then `result`.
fn chain_of(
    header: &str,
    n: usize,
    statement: impl Fn(usize, usize) -> String,
    result: &str,
) -> String {
    let mut s = format!("{header}\n");
    for i in 1..=n {
        s.push_str(&format!("  {} in\n", statement(i, i - 1)));
    }
    s + &format!("  {result}\n")
}

/// The kinds of straight-line programs, and what their statements are.
const SHAPES: &[(&str, &str)] = &[
    (
        "chain",
        "`let x_i = sin(x_{i-1}) * 0.5 + x_{i-1}` (the default)",
    ),
    (
        "pair",
        "two variables updated in turn: `a * b + 0.1`, `tanh(a) - 0.5 * b`",
    ),
    (
        "loops",
        "array statements: `let v_i = map2 (s, t. s * 0.5 + sin(t * s)) v_{i-1} w`",
    ),
    (
        "reads",
        "reads of a weight vector: `x * 0.9 + exp(-x * x) * w[i % 8]`",
    ),
];

/// The peak resident memory of this process so far, in MB (Linux; 0 elsewhere).
fn peak_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The stages of one compilation, in milliseconds, and the sizes of the terms.
struct Stages {
    load: f64,
    reverse: f64,
    optimize: f64,
    jit: f64,
    /// The peak memory before the JIT, in MB.
    peak_before_jit: f64,
    reverse_nodes: usize,
    optimized_nodes: usize,
}

/// The number of nodes of the term `e` (an explicit stack: long programs are deep terms).
fn term_size(a: &unfad_syntax::Arena, e: unfad_syntax::ExprId) -> usize {
    let mut stack = vec![e];
    let mut n = 0;
    while let Some(e) = stack.pop() {
        n += 1;
        a.for_each_child(e, |c| stack.push(c));
    }
    n
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Compile `src`'s gradient stage by stage, as `Engine::compile_grad_with` does (without
/// the JIT if `jit` is false).
fn compile(src: &str, paper: bool, jit: bool) -> Stages {
    let t = Instant::now();
    let mut p = Pipeline::load(src, None).expect("the program loads");
    let wrt: Vec<usize> = (0..p.source.params.len()).collect();
    let load = ms(t);
    let before = p.program.arena.node_count();
    let t = Instant::now();
    let rev = if paper {
        p.reverse(&wrt)
    } else {
        p.reverse_weakened(&wrt)
    }
    .expect("reverse mode");
    let reverse = ms(t);
    let reverse_nodes = p.program.arena.node_count() - before;
    let t = Instant::now();
    let opt = p.optimize(&rev).expect("the optimizer");
    let optimize = ms(t);
    let optimized_nodes = term_size(&p.program.arena, opt.body);
    let peak_before_jit = peak_mb();
    let t = Instant::now();
    if jit {
        let compiled = unfad_jit::compile_parallel(&mut p.program.arena, &opt).expect("the JIT");
        drop(compiled);
    }
    let jit = ms(t);
    Stages {
        load,
        reverse,
        optimize,
        jit,
        peak_before_jit,
        reverse_nodes,
        optimized_nodes,
    }
}

fn row(label: &str, s: &Stages) {
    let total = s.load + s.reverse + s.optimize + s.jit;
    println!(
        "| {label} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} | {:.0} | {} | {} |",
        s.load,
        s.reverse,
        s.optimize,
        s.jit,
        total,
        s.peak_before_jit,
        peak_mb(),
        s.reverse_nodes,
        s.optimized_nodes
    );
}

fn header(what: &str) {
    println!(
        "| {what} | load ms | reverse ms | optimize ms | JIT ms | total ms | peak MB before JIT | peak MB | macro nodes | optimized nodes |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    const USAGE: &str = "usage: compile_scaling [--paper] [--no-jit] [--shape S] [N ...]\n       \
                         compile_scaling [--paper] [--no-jit] --file PATH\n\
                         shapes: chain (default), pair, loops, reads";
    let paper = args.iter().any(|a| a == "--paper");
    let jit = !args.iter().any(|a| a == "--no-jit");
    let mut shape = "chain".to_string();
    let mut rest: Vec<&String> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--paper" | "--no-jit" => {}
            "--shape" => match it.next() {
                Some(s) if SHAPES.iter().any(|(name, _)| name == s) => shape = s.clone(),
                _ => {
                    eprintln!("`--shape` takes one of:");
                    for (name, what) in SHAPES {
                        eprintln!("  {name}: {what}");
                    }
                    std::process::exit(2);
                }
            },
            _ => rest.push(a),
        }
    }
    if rest
        .iter()
        .any(|a| a.starts_with('-') && *a != "--one" && *a != "--file")
    {
        eprintln!("{USAGE}");
        std::process::exit(2);
    }
    let length = |n: &str| -> usize {
        n.parse().unwrap_or_else(|_| {
            eprintln!("`{n}` is not a length (a whole number)\n{USAGE}");
            std::process::exit(2)
        })
    };
    match rest.as_slice() {
        [flag, n] if *flag == "--one" => {
            let n = length(n);
            row(&n.to_string(), &compile(&program(&shape, n), paper, jit));
        }
        [flag, path] if *flag == "--file" => {
            let src = std::fs::read_to_string(path).unwrap_or_else(|e| {
                eprintln!("cannot read {path}: {e}");
                std::process::exit(2)
            });
            header("run");
            // The first runs warm the allocator and the caches; the median of the rest.
            let mut runs: Vec<Stages> = (0..25).map(|_| compile(&src, paper, jit)).collect();
            runs.drain(..5);
            runs.sort_by(|a, b| {
                let t = |s: &Stages| s.load + s.reverse + s.optimize + s.jit;
                t(a).total_cmp(&t(b))
            });
            row("median", &runs[runs.len() / 2]);
        }
        lengths => {
            let lengths: Vec<usize> = if lengths.is_empty() {
                vec![100, 1000, 10_000, 100_000]
            } else {
                lengths.iter().map(|n| length(n)).collect()
            };
            header("N");
            let me = std::env::current_exe().expect("this program's path");
            for n in lengths {
                let mut cmd = Command::new(&me);
                cmd.arg("--one").arg(n.to_string());
                cmd.arg("--shape").arg(&shape);
                if paper {
                    cmd.arg("--paper");
                }
                if !jit {
                    cmd.arg("--no-jit");
                }
                let out = cmd.output().expect("the child runs");
                if out.status.success() {
                    print!("{}", String::from_utf8_lossy(&out.stdout));
                } else {
                    println!("| {n} | failed: {} |", out.status);
                }
            }
        }
    }
}
