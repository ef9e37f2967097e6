//! Differential testing of native code against the reference interpreter.

#![allow(dead_code)]

use serde_json::Value as Json;
use unfad_interp::{args_from_json, eval_func, Value};
use unfad_jit::{compile, Compiled};
use unfad_syntax::{print_func, Arena, Func, Program, Type};
use unfad_test_support::load;

/// A value guard cells are filled with, to find writes outside a buffer or cells never
/// written.
const GUARD: f64 = -7.25e-123;
const GUARD_CELLS: usize = 4;

/// Number of leaf components of type `t` (arrays distribute over tuples).
pub fn component_count(t: &Type) -> usize {
    match t {
        Type::Real => 1,
        Type::Tuple(items) => items.iter().map(component_count).sum(),
        Type::Array(_, elem) => component_count(elem),
        Type::Bool | Type::Func(..) => 0,
    }
}

/// The leaf components of a value of type `t`, as the ABI lays them out.
pub fn components(v: &Value<f64>, t: &Type, out: &mut Vec<Vec<f64>>) {
    match (v, t) {
        (Value::Real(x), Type::Real) => out.push(vec![*x]),
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
/// interpreter, in the same order).
pub fn same(x: f64, y: f64) -> bool {
    x.to_bits() == y.to_bits()
}

/// The outputs of the native code for `input`, with the sizes it was run with.
pub fn run_native(
    arena: &Arena,
    func: &Func,
    compiled: &Compiled,
    input: &Json,
) -> (Vec<Vec<f64>>, Vec<u64>) {
    let (args, env) = args_from_json::<f64>(arena, func, input).unwrap();
    let sizes: Vec<u64> = compiled
        .size_vars()
        .iter()
        // A size only seen inside an empty array is not bound by the input: any value fits.
        .map(|v| env.get(v).unwrap_or(0))
        .collect();
    let mut inputs = Vec::new();
    for (a, &p) in args.iter().zip(&func.params) {
        components(a, arena.var_type(p).unwrap(), &mut inputs);
    }
    assert_eq!(inputs.len(), compiled.inputs().len());
    for (c, data) in compiled.inputs().iter().zip(&inputs) {
        assert_eq!(c.len(&sizes), Some(data.len()), "input layout");
    }
    // Every buffer is cut from a larger one whose tail is checked afterwards.
    let mut outs: Vec<Vec<f64>> = compiled
        .outputs()
        .iter()
        .map(|c| vec![GUARD; c.len(&sizes).unwrap() + GUARD_CELLS])
        .collect();
    let ws_len = compiled.workspace_len(&sizes);
    let mut ws = vec![GUARD; ws_len + GUARD_CELLS];
    {
        let ins: Vec<&[f64]> = inputs.iter().map(|v| v.as_slice()).collect();
        let mut out_slices: Vec<&mut [f64]> = outs
            .iter_mut()
            .map(|v| {
                let n = v.len() - GUARD_CELLS;
                &mut v[..n]
            })
            .collect();
        compiled
            .call(&ins, &sizes, &mut out_slices, &mut ws[..ws_len])
            .unwrap();
    }
    for v in outs.iter_mut().chain(std::iter::once(&mut ws)) {
        let n = v.len() - GUARD_CELLS;
        assert!(
            v[n..].iter().all(|x| x.to_bits() == GUARD.to_bits()),
            "a write past the end of a buffer"
        );
        v.truncate(n);
    }
    (outs, sizes)
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
    let wrt: Vec<usize> = (0..func.params.len()).collect();
    let grad = unfad_ad::reverse(&mut prog.arena, &func, &wrt).map_err(|e| e.to_string())?;
    let opt = unfad_opt::optimize(&mut prog.arena, &grad).map_err(|e| e.to_string())?;
    Ok((prog, opt))
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
