//! Compile times and run times of a few programs (run with `--release`).
//!
//! `cargo run --release -p unfad-jit --example measure`

use std::time::Instant;

use unfad_jit::compile;
use unfad_syntax::Program;

fn load(src: &str) -> (Program, unfad_syntax::Func) {
    let mut prog = Program::load(src).unwrap();
    let func = prog.inline(prog.entry(None).unwrap()).unwrap();
    (prog, func)
}

fn gradient(src: &str) -> (Program, unfad_syntax::Func) {
    let (mut prog, func) = load(src);
    let wrt: Vec<usize> = (0..func.params.len()).collect();
    let g = unfad_ad::reverse(&mut prog.arena, &func, &wrt).unwrap();
    let g = unfad_opt::optimize(&mut prog.arena, &g).unwrap();
    (prog, g)
}

fn time_compile(name: &str, prog: &Program, func: &unfad_syntax::Func) {
    let reps = 20;
    let t = Instant::now();
    for _ in 0..reps {
        compile(&prog.arena, func).unwrap();
    }
    let per = t.elapsed().as_secs_f64() / reps as f64;
    let t = Instant::now();
    for _ in 0..reps {
        unfad_jit::clif_text(&prog.arena, func).unwrap();
    }
    let lower = t.elapsed().as_secs_f64() / reps as f64;
    println!(
        "compile {name:<28} {:8.3} ms  (lowering and printing {:.3} ms)",
        per * 1e3,
        lower * 1e3
    );
}

/// Run with every input component filled with small values; returns ns per element.
fn time_run(name: &str, prog: &Program, func: &unfad_syntax::Func, sizes: &[u64], elems: u64) {
    let c = compile(&prog.arena, func).unwrap();
    let inputs: Vec<Vec<f64>> = c
        .inputs()
        .iter()
        .map(|comp| {
            (0..comp.len(sizes).unwrap())
                .map(|i| 0.5 + (i % 7) as f64 * 0.01)
                .collect()
        })
        .collect();
    let mut outputs: Vec<Vec<f64>> = c
        .outputs()
        .iter()
        .map(|comp| vec![0.0; comp.len(sizes).unwrap()])
        .collect();
    let mut ws = vec![0.0; c.workspace_len(sizes)];
    let ins: Vec<&[f64]> = inputs.iter().map(|v| v.as_slice()).collect();
    let mut run = |outputs: &mut Vec<Vec<f64>>| {
        let mut outs: Vec<&mut [f64]> = outputs.iter_mut().map(|v| v.as_mut_slice()).collect();
        c.call(&ins, sizes, &mut outs, &mut ws).unwrap();
    };
    run(&mut outputs);
    let reps = 20;
    let t = Instant::now();
    for _ in 0..reps {
        run(&mut outputs);
    }
    let per = t.elapsed().as_secs_f64() / reps as f64;
    println!(
        "run     {name:<28} {:8.3} ms  {:6.2} ns/element  workspace {} reals",
        per * 1e3,
        per * 1e9 / elems as f64,
        c.workspace_len(sizes)
    );
}

fn main() {
    let dot = "def f(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)";
    let prod = "def f(A: [n]real) = prod(A)";
    let mv = "def f(M: [n][m]real, v: [m]real) = map (r. dot(r, v)) M";
    let smooth = "def f(A: [n]real, B: [n]real) = reduce + 0 (map2 (a, b. exp(a) * sin(b)) A B)";
    let big = "def f(x: real, y: real, A: [n]real, B: [n]real) = \
        let s = dot(A, B) in let t = sum(map (a. a * s) A) in \
        let u = prod(map2 (a, b. a + b * t) A B) in \
        reduce max (0 - 1000) (scanl + 0 (map2 (a, b. a * u + b * x) A B)) * y";

    for (name, src) in [("dot", dot), ("prod", prod), ("matvec", mv), ("big", big)] {
        let (p, f) = load(src);
        time_compile(name, &p, &f);
    }
    let (p, g) = gradient(prod);
    time_compile("grad prod", &p, &g);
    let (p, g) = gradient(dot);
    time_compile("grad dot", &p, &g);

    // Larger terms: long chains of lets, scalar and array-valued.
    for k in [100usize, 1000, 5000] {
        let mut src = String::from("def f(x: real, A: [n]real) =\n");
        for i in 0..k {
            let prev = if i == 0 {
                "x".to_string()
            } else {
                format!("s{}", i - 1)
            };
            src.push_str(&format!("  let s{i} = sin({prev}) * 0.5 + {prev} * x in\n"));
        }
        src.push_str(&format!("  s{}", k - 1));
        let (p, f) = load(&src);
        time_compile(&format!("{k} scalar lets"), &p, &f);
        let mut src = String::from("def f(x: real, A: [n]real) =\n  let B0 = A in\n");
        for i in 0..k / 10 {
            src.push_str(&format!(
                "  let B{} = map2 (a, b. a * x + b) B{i} A in let t{i} = dot(B{}, B{}) in\n",
                i + 1,
                i + 1,
                i + 1
            ));
        }
        src.push_str(&format!("  t{}", k / 10 - 1));
        let (p, f) = load(&src);
        time_compile(&format!("{} array lets", k / 10), &p, &f);
    }

    let n = 1_000_000u64;
    let (p, f) = load(dot);
    time_run("dot", &p, &f, &[n], n);
    let (p, f) = load(smooth);
    time_run("sum exp*sin", &p, &f, &[n], n);
    let (p, g) = gradient(prod);
    time_run("grad prod", &p, &g, &[n], n);
    let (p, g) = gradient(dot);
    time_run("grad dot", &p, &g, &[n], n);
    let (p, f) = load(mv);
    time_run("matvec 1000x1000", &p, &f, &[1000, 1000], 1_000_000);
}
