//! Differential testing of native code against the reference interpreter.

#![allow(dead_code)]

use serde_json::{json, Value as Json};
use unfad_interp::{args_from_json, eval_func, Value};
use unfad_jit::{compile, Compiled, JitError};
use unfad_syntax::{print_func, Arena, Func, Program, Type};
use unfad_test_support::load;

/// The workspace the compiled `src` needs at the sizes given, in reals.
pub fn workspace_at(src: &str, sizes: &[u64]) -> usize {
    let (prog, func) = load(src);
    compile(&prog.arena, &func).unwrap().workspace_len(sizes)
}

/// `n` deterministic reals in [-2, 2] from `seed`.
pub fn vec_of(n: usize, seed: f64) -> Json {
    json!((0..n)
        .map(|i| ((i as f64 + 1.0) * seed).sin() * 2.0)
        .collect::<Vec<_>>())
}

/// `n` rows of [`vec_of`], each from its own seed.
pub fn mat_of(n: usize, m: usize, seed: f64) -> Json {
    json!((0..n)
        .map(|i| vec_of(m, seed + i as f64))
        .collect::<Vec<_>>())
}

/// What guard cells hold: a NaN whose payload no program computes from the generated
/// inputs (which have no NaN), and which arithmetic carries along; an output that has it
/// read a guard cell.
const GUARD: f64 = f64::from_bits(0x7ff8_dead_beef_0bad);
const GUARD_PAYLOAD: u64 = 0x0000_dead_beef_0bad;
const GUARD_CELLS: usize = 8;

/// Number of leaf components of type `t` (arrays distribute over tuples).
pub fn component_count(t: &Type) -> usize {
    match t {
        Type::Real | Type::Int => 1,
        Type::Tuple(items) => items.iter().map(component_count).sum(),
        Type::Array(_, elem) => component_count(elem),
        Type::Bool | Type::Func(..) => 0,
    }
}

/// The leaf components of a value of type `t`, as the ABI lays them out.
pub fn components(v: &Value<f64>, t: &Type, out: &mut Vec<Vec<f64>>) {
    match (v, t) {
        (Value::Real(x), Type::Real | Type::Int) => out.push(vec![*x]),
        (Value::Tuple(items), Type::Tuple(ts)) => {
            for (x, t) in items.iter().zip(ts.iter()) {
                components(x, t, out);
            }
        }
        (Value::Array(items), Type::Array(_, elem)) => {
            let mut cols = vec![Vec::new(); component_count(elem)];
            for x in items.iter() {
                let mut sub = Vec::new();
                components(x, elem, &mut sub);
                assert_eq!(sub.len(), cols.len(), "an element has the wrong shape");
                for (c, s) in cols.iter_mut().zip(sub) {
                    c.extend(s);
                }
            }
            out.extend(cols);
        }
        _ => panic!("value {v} does not have type {t}"),
    }
}

/// Equal bits (NaN payloads included: the native code runs the same operations as the
/// interpreter, in the same order), except a NaN's sign: IEEE 754 leaves the sign of an
/// operation's NaN unspecified, and x86 makes a negative one where a multiply-add in
/// software (the interpreter's `mul_add` without FMA in its build) makes a positive one.
pub fn same(x: f64, y: f64) -> bool {
    const SIGN: u64 = 1 << 63;
    x.to_bits() == y.to_bits() || (x.is_nan() && (x.to_bits() ^ y.to_bits()) == SIGN)
}

/// True if `x` is a guard cell's value, or a NaN computed from one (arithmetic keeps a
/// NaN's payload); a number whose bits merely include the payload's is not.
fn holds_guard(x: f64) -> bool {
    x.is_nan() && x.to_bits() & 0x0007_ffff_ffff_ffff == GUARD_PAYLOAD
}

/// `data` inside a buffer of guard cells.
pub fn guarded(data: &[f64]) -> Vec<f64> {
    let mut v = vec![GUARD; data.len() + 2 * GUARD_CELLS];
    v[GUARD_CELLS..GUARD_CELLS + data.len()].copy_from_slice(data);
    v
}

/// The buffer inside `v`'s guard cells, after checking that they are intact.
pub fn unguard(v: &[f64], what: &str) -> Vec<f64> {
    let n = v.len() - 2 * GUARD_CELLS;
    let intact = |cells: &[f64]| cells.iter().all(|x| same(*x, GUARD));
    assert!(
        intact(&v[..GUARD_CELLS]),
        "a write before the start of {what}"
    );
    assert!(
        intact(&v[GUARD_CELLS + n..]),
        "a write past the end of {what}"
    );
    v[GUARD_CELLS..GUARD_CELLS + n].to_vec()
}

/// Run `compiled` on `input` with every buffer inside guard cells, and check that the guard
/// cells are intact afterwards: the outputs, or the call's error.
pub fn run_guarded(
    arena: &Arena,
    func: &Func,
    compiled: &Compiled,
    input: &Json,
) -> (Result<Vec<Vec<f64>>, JitError>, Vec<u64>) {
    let (inputs, sizes) = native_arguments(arena, func, compiled, input);
    let inputs: Vec<Vec<f64>> = inputs.iter().map(|d| guarded(d)).collect();
    let mut outs: Vec<Vec<f64>> = compiled
        .outputs()
        .iter()
        .map(|c| guarded(&vec![GUARD; c.len(&sizes).unwrap()]))
        .collect();
    let ws_len = compiled.workspace_len(&sizes);
    let mut ws = guarded(&vec![GUARD; ws_len]);
    let called = {
        let ins: Vec<&[f64]> = inputs
            .iter()
            .map(|v| &v[GUARD_CELLS..v.len() - GUARD_CELLS])
            .collect();
        let mut out_slices: Vec<&mut [f64]> = outs
            .iter_mut()
            .map(|v| {
                let end = v.len() - GUARD_CELLS;
                &mut v[GUARD_CELLS..end]
            })
            .collect();
        compiled.call(
            &ins,
            &sizes,
            &mut out_slices,
            &mut ws[GUARD_CELLS..GUARD_CELLS + ws_len],
        )
    };
    for (k, v) in inputs.iter().enumerate() {
        unguard(v, &format!("input component {k}"));
    }
    unguard(&ws, "the workspace");
    let got: Vec<Vec<f64>> = outs
        .iter()
        .enumerate()
        .map(|(k, v)| unguard(v, &format!("output component {k}")))
        .collect();
    if called.is_ok() {
        for (k, v) in got.iter().enumerate() {
            assert!(
                !v.iter().any(|x| holds_guard(*x)),
                "output component {k} holds a guard cell's value: a read outside a buffer, \
                 or a cell never written"
            );
        }
    }
    (called.map(|()| got), sizes)
}

/// The input components of `input` for `compiled`, and the sizes it binds (a size only
/// seen inside an empty array is not bound by the input: any value fits, 0 is taken).
pub fn native_arguments(
    arena: &Arena,
    func: &Func,
    compiled: &Compiled,
    input: &Json,
) -> (Vec<Vec<f64>>, Vec<u64>) {
    let (args, env) = args_from_json::<f64>(arena, func, input).unwrap();
    let sizes: Vec<u64> = compiled
        .size_vars()
        .iter()
        .map(|v| env.get(v).unwrap_or(0))
        .collect();
    let mut inputs = Vec::new();
    for (a, &p) in args.iter().zip(&func.params) {
        components(a, arena.var_type(p).unwrap(), &mut inputs);
    }
    (inputs, sizes)
}

/// The outputs of the native code for `input` (every buffer guarded, see [`run_guarded`]),
/// with the sizes it was run with.
pub fn run_native(
    arena: &Arena,
    func: &Func,
    compiled: &Compiled,
    input: &Json,
) -> (Vec<Vec<f64>>, Vec<u64>) {
    let (outs, sizes) = run_guarded(arena, func, compiled, input);
    (
        outs.unwrap_or_else(|e| panic!("{e}\n{}", print_func(arena, func))),
        sizes,
    )
}

/// Compile `func`, run it on `input` natively and in the interpreter, and require equal
/// results, bit for bit. Returns the compiled function.
pub fn check_func(arena: &Arena, func: &Func, input: &Json) -> Compiled {
    let compiled =
        compile(arena, func).unwrap_or_else(|e| panic!("{e}\n{}", print_func(arena, func)));
    check_compiled(arena, func, &compiled, input);
    compiled
}

/// [`check_func`] for `func` compiled already.
pub fn check_compiled(arena: &Arena, func: &Func, compiled: &Compiled, input: &Json) {
    let text = || print_func(arena, func);
    let (args, _) = args_from_json::<f64>(arena, func, input).unwrap();
    let expected = eval_func(arena, func, &args).unwrap_or_else(|e| panic!("{e}\n{}", text()));
    let mut want = Vec::new();
    components(&expected, &func.ret, &mut want);
    let (got, sizes) = run_native(arena, func, compiled, input);
    assert_eq!(
        got.len(),
        want.len(),
        "number of output components\n{}",
        text()
    );
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            g.len() == w.len() && g.iter().zip(w).all(|(x, y)| same(*x, *y)),
            "output component {k} differs for input {input} (sizes {sizes:?}):\n native {g:?}\n interp {w:?}\n{}",
            text()
        );
    }
}

/// [`check_func`] on the entry point of `src`, for each input.
pub fn check(src: &str, inputs: &[Json]) -> Compiled {
    let (prog, func) = load(src);
    let mut last = None;
    for input in inputs {
        last = Some(check_func(&prog.arena, &func, input));
    }
    last.expect("at least one input")
}

/// The optimized value-and-gradient function of the entry point of `src` with respect to
/// every parameter, or why reverse mode or the optimizer (other crates, still growing)
/// cannot make it.
pub fn gradient(src: &str) -> Result<(Program, Func), String> {
    let (mut prog, func) = load(src);
    // Against the parameters holding reals (ints have no derivative).
    let types = func.param_types(&prog.arena);
    let wrt: Vec<usize> = (0..types.len()).filter(|&i| types[i].has_reals()).collect();
    let grad = unfad_ad::reverse(&mut prog.arena, &func, &wrt).map_err(|e| e.to_string())?;
    let opt = unfad_opt::optimize(&mut prog.arena, &grad).map_err(|e| e.to_string())?;
    Ok((prog, opt))
}

/// Forward mode and forward over reverse, optimized: the function `(params, tangents) ->
/// (value, tangent)` of the entry point of `src` and, if it returns a real, the function
/// `(params, directions) -> (value, gradient, Hessian times direction)`, with respect to
/// the parameters holding reals; and the input extended with a direction (each tangent
/// parameter `d<name>` given its parameter's own value).
pub fn higher_order(src: &str, input: &Json) -> Result<(Program, Vec<Func>, Json), String> {
    let (mut prog, func) = load(src);
    let types = func.param_types(&prog.arena);
    let wrt: Vec<usize> = (0..types.len()).filter(|&i| types[i].has_reals()).collect();
    let mut funcs = Vec::new();
    let fwd = unfad_ad::forward(&mut prog.arena, &func, &wrt).map_err(|e| e.to_string())?;
    funcs.push(unfad_opt::optimize(&mut prog.arena, &fwd).map_err(|e| e.to_string())?);
    if func.ret == Type::Real {
        let grad =
            unfad_ad::reverse_weakened(&mut prog.arena, &func, &wrt).map_err(|e| e.to_string())?;
        let grad = unfad_opt::optimize(&mut prog.arena, &grad).map_err(|e| e.to_string())?;
        let hvp =
            unfad_ad::hessian_vector(&mut prog.arena, &grad, &wrt).map_err(|e| e.to_string())?;
        funcs.push(unfad_opt::optimize(&mut prog.arena, &hvp).map_err(|e| e.to_string())?);
    }
    let mut extended = input.clone();
    for &i in &wrt {
        let name = prog.arena.var_name(func.params[i]).to_string();
        if let Some(v) = input.get(&name) {
            extended[format!("d{name}")] = v.clone();
        }
    }
    Ok((prog, funcs, extended))
}

/// [`check_func`] on the optimized value-and-gradient function of `src`; returns false
/// (after saying why) if no gradient could be made.
pub fn check_gradient(src: &str, inputs: &[Json]) -> bool {
    let (prog, func) = match gradient(src) {
        Ok(g) => g,
        Err(why) => {
            eprintln!("no gradient to compile for {src}: {why}");
            return false;
        }
    };
    for input in inputs {
        check_func(&prog.arena, &func, input);
    }
    true
}

/// [`check_func`] on the random programs of `seeds` drawn with `features`.
pub fn check_random_primals(features: &unfad_testgen::Features, seeds: std::ops::Range<u64>) {
    for seed in seeds {
        let g = unfad_testgen::generate(seed, features);
        let (prog, func) = load(&g.source);
        eprintln!("seed {seed}");
        check_func(&prog.arena, &func, &g.input);
    }
}

/// [`check_func`] on the optimized gradients of the random programs of `seeds` drawn with
/// `features` (those reverse mode or the optimizer can make); how many were checked.
pub fn check_random_gradients(
    features: &unfad_testgen::Features,
    seeds: std::ops::Range<u64>,
) -> usize {
    let mut checked = 0;
    for seed in seeds {
        let g = unfad_testgen::generate(seed, features);
        let Ok((prog, func)) = gradient(&g.source) else {
            continue;
        };
        eprintln!("gradient, seed {seed}");
        check_func(&prog.arena, &func, &g.input);
        checked += 1;
    }
    checked
}

/// A small deterministic generator (xorshift64*), for the tests' random inputs.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in `[-0.5, 0.5)`, on a grid of 2^-53.
    pub fn centred(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    }
}
