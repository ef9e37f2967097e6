//! Memory safety of the native code, fuzzed: random programs and their optimized gradients
//! (from `unfad-testgen`) run at many sizes, 0 and 1 included, each input, output and
//! workspace buffer cut from a larger one whose guard cells before and after it are checked
//! after the call; the results agree with the interpreter bit for bit; and arguments of the
//! wrong shape are refused by `Compiled::call`, never run.
//!
//! The lowering keeps every array within its buffer by construction (crate docs, "Memory
//! safety"); these tests check that on programs nobody wrote by hand, at the degenerate sizes
//! where shifted and empty arrays make the shape analysis' work hardest.

mod common;

use common::{check_compiled, gradient, native_arguments, run_guarded};
use serde_json::Value as Json;
use unfad_jit::fault::{self, Fault};
use unfad_jit::{compile, JitError};
use unfad_syntax::print_func;
use unfad_test_support::load;
use unfad_testgen::{generate, Features, Generated};

/// The sizes `(n, m)` every program runs at, beside its own input's (9 and 17: blocked
/// reductions with whole blocks of eight and elements left over).
const SIZES: [(usize, usize); 11] = [
    (0, 0),
    (0, 1),
    (1, 0),
    (1, 1),
    (1, 3),
    (2, 1),
    (2, 2),
    (3, 1),
    (6, 2),
    (9, 1),
    (17, 3),
];

/// Every input of `g` this test runs: its own, and one at each of [`SIZES`].
fn inputs_of(g: &Generated, seed: u64) -> Vec<Json> {
    let mut all = vec![g.input.clone()];
    for (k, &(n, m)) in SIZES.iter().enumerate() {
        // Programs that index read fixed positions (`A[0]`): their arrays are never empty.
        if g.indexing && (n == 0 || m == 0) {
            continue;
        }
        all.push(g.input_at(seed * 31 + k as u64, n, m));
    }
    all
}

#[test]
fn random_programs_stay_in_their_buffers_at_every_size() {
    let any_result = Features {
        real_result: false,
        ..Features::all()
    };
    let indexing = Features {
        real_result: false,
        ..Features::indexing()
    };
    let programs = (10_000..10_250)
        .map(|seed| (seed, &any_result))
        .chain((10_250..10_350).map(|seed| (seed, &indexing)));
    for (seed, features) in programs {
        let g = generate(seed, features);
        let (prog, func) = load(&g.source);
        eprintln!("seed {seed}");
        let compiled = compile(&prog.arena, &func)
            .unwrap_or_else(|e| panic!("{e}\n{}", print_func(&prog.arena, &func)));
        for input in inputs_of(&g, seed) {
            check_compiled(&prog.arena, &func, &compiled, &input);
        }
    }
}

#[test]
fn random_gradients_stay_in_their_buffers_at_every_size() {
    let mut checked = 0;
    for (features, seeds) in [
        (Features::core(), 20_000..20_100),
        (Features::all(), 20_100..20_250),
    ] {
        for seed in seeds {
            let g = generate(seed, &features);
            let Ok((prog, func)) = gradient(&g.source) else {
                continue;
            };
            eprintln!("gradient, seed {seed}");
            let compiled = compile(&prog.arena, &func)
                .unwrap_or_else(|e| panic!("{e}\n{}", print_func(&prog.arena, &func)));
            for input in inputs_of(&g, seed) {
                check_compiled(&prog.arena, &func, &compiled, &input);
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 150,
        "only {checked} random gradients could be made"
    );
}

#[test]
fn arguments_of_the_wrong_shape_are_refused() {
    let mut refused = 0;
    for seed in 30_000..30_120 {
        let g = generate(seed, &Features::all());
        let (prog, func) = load(&g.source);
        let compiled = compile(&prog.arena, &func).unwrap();
        let input = g.input_at(seed, 3, 2);
        let (inputs, sizes) = native_arguments(&prog.arena, &func, &compiled, &input);
        let mut outs: Vec<Vec<f64>> = compiled
            .outputs()
            .iter()
            .map(|c| vec![0.0; c.len(&sizes).unwrap()])
            .collect();
        let mut ws = vec![0.0; compiled.workspace_len(&sizes)];
        // Each input component one element longer, then one shorter.
        for k in 0..inputs.len() {
            for delta in [1i64, -1] {
                let mut bad = inputs.clone();
                if delta < 0 && bad[k].pop().is_none() {
                    continue;
                }
                if delta > 0 {
                    bad[k].push(0.5);
                }
                let ins: Vec<&[f64]> = bad.iter().map(Vec::as_slice).collect();
                let mut out_slices: Vec<&mut [f64]> =
                    outs.iter_mut().map(Vec::as_mut_slice).collect();
                let r = compiled.call(&ins, &sizes, &mut out_slices, &mut ws);
                let msg = r
                    .expect_err("a component of the wrong length was run")
                    .to_string();
                assert!(msg.contains("input component"), "{msg}");
                refused += 1;
            }
        }
        // An output one element short, a workspace one element short, a size missing.
        let ins: Vec<&[f64]> = inputs.iter().map(Vec::as_slice).collect();
        if let Some(k) = outs.iter().position(|o| !o.is_empty()) {
            let mut out_slices: Vec<&mut [f64]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
            let whole = std::mem::take(&mut out_slices[k]);
            let n = whole.len() - 1;
            out_slices[k] = &mut whole[..n];
            let msg = compiled
                .call(&ins, &sizes, &mut out_slices, &mut ws)
                .expect_err("a short output was written")
                .to_string();
            assert!(msg.contains("output component"), "{msg}");
        }
        if !ws.is_empty() {
            let n = ws.len() - 1;
            let mut out_slices: Vec<&mut [f64]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
            let msg = compiled
                .call(&ins, &sizes, &mut out_slices, &mut ws[..n])
                .expect_err("a short workspace was used")
                .to_string();
            assert!(msg.contains("workspace"), "{msg}");
        }
        if !sizes.is_empty() {
            let mut out_slices: Vec<&mut [f64]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
            let short = &sizes[..sizes.len() - 1];
            assert!(compiled
                .call(&ins, short, &mut out_slices, &mut ws)
                .is_err());
        }
    }
    assert!(refused >= 200, "only {refused} wrong arguments were tried");
}

/// Programs with arrays whose lengths differ only at small sizes: `scanl f z (shift1L A)` has
/// the formal size `n` of `A` but one element at `n = 0`, so the shape analysis' lengths are
/// inexact there, which is where a lowering that trusted them would leave a buffer. The last
/// returns such an array, which the ABI pads to the longer length (the interpreter does not),
/// so its values are not compared.
const UNEVEN: [&str; 5] = [
    "def f(A: [n]real, x: real) = reduce + 0 (if x > 0 then A else scanl (a, b. a + b) 0 (shift1L A))",
    "def f(A: [n]real, x: real) = reduce + 0 (map (t. t * 2) (if x > 0 then A else scanl (a, b. a * b) 1 (shift1R A)))",
    "def f(A: [n]real, x: real) = foldl (acc, t. map2 + acc (if t > x then A else scanl (a, b. a + b) 0 (shift1L A))) A A",
    "def f(A: [n]real, x: real) = foldl (acc, t. if t > x then shift1L (scanl (a, b. a + b) t acc) else acc) A A",
    "def f(A: [n]real, x: real) = if x > 0 then A else scanl (a, b. a + b) 0 (shift1L A)",
];

/// Inputs for the programs of [`UNEVEN`]: `A` of 0 to 3 elements, `x` on either side.
fn uneven_inputs() -> Vec<Json> {
    let mut all = Vec::new();
    for n in 0..4 {
        for x in [-1.0, 0.7, 1.0] {
            let a: Vec<f64> = (0..n).map(|i| i as f64 * 0.75 - 0.5).collect();
            all.push(serde_json::json!({"A": a, "x": x}));
        }
    }
    all
}

#[test]
fn arrays_whose_lengths_differ_only_at_small_sizes_stay_in_their_buffers() {
    for src in &UNEVEN[..4] {
        let (prog, func) = load(src);
        let compiled = compile(&prog.arena, &func).unwrap_or_else(|e| panic!("{e}\n{src}"));
        for input in uneven_inputs() {
            check_compiled(&prog.arena, &func, &compiled, &input);
        }
    }
}

#[test]
fn a_wrong_shape_analysis_never_reads_or_writes_outside_a_buffer() {
    // Under each deliberate mistake of the analysis (buffers too short, lengths claimed exact
    // that are not), a program compiles or is refused, and a call gives values (perhaps
    // wrong) or stops with a failed check: no guard cell is ever touched.
    let any_result = Features {
        real_result: false,
        ..Features::all()
    };
    let mut stopped = 0;
    let mut ran = 0;
    for f in Fault::ALL {
        for src in UNEVEN {
            let (prog, func) = load(src);
            let Ok(compiled) = fault::with(f, || compile(&prog.arena, &func)) else {
                continue;
            };
            for input in uneven_inputs() {
                eprintln!("{f:?}, {src}, input {input}");
                match run_guarded(&prog.arena, &func, &compiled, &input).0 {
                    Ok(_) => ran += 1,
                    Err(JitError::Check(_)) => stopped += 1,
                    Err(e) => panic!("{e}\n{src}"),
                }
            }
        }
        let programs = (40_000..40_120).map(|seed| (seed, generate(seed, &any_result), false));
        let gradients = (41_000..41_080).map(|seed| (seed, generate(seed, &Features::all()), true));
        for (seed, g, grad) in programs.chain(gradients) {
            let (prog, func) = if grad {
                match gradient(&g.source) {
                    Ok(pf) => pf,
                    Err(_) => continue,
                }
            } else {
                load(&g.source)
            };
            let Ok(compiled) = fault::with(f, || compile(&prog.arena, &func)) else {
                continue;
            };
            for input in inputs_of(&g, seed) {
                eprintln!("{f:?}, seed {seed}, gradient {grad}, input {input}");
                match run_guarded(&prog.arena, &func, &compiled, &input).0 {
                    Ok(_) => ran += 1,
                    Err(JitError::Check(_)) => stopped += 1,
                    Err(e) => panic!("{e}\n{}", print_func(&prog.arena, &func)),
                }
            }
        }
    }
    eprintln!("{ran} calls ran, {stopped} stopped at a check");
    assert!(ran > 1000, "only {ran} calls ran");
}
