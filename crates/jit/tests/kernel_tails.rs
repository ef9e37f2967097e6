//! Kernel tails split from their loops (`unfad_opt::fission`) and the map of the loops'
//! results stored, so that the kernels run two elements at a time: native code against
//! the interpreter, bit for bit, with guard cells around every buffer, for the primals,
//! gradients, jvps and Hessian-vector products of layer-like programs; the workspace
//! shows the results stored.

mod common;

use common::{check_func, check_gradient, higher_order, mat_of, vec_of};
use serde_json::{json, Value as Json};
use unfad_jit::compile;
use unfad_opt::fission::split_kernel_tails;
use unfad_test_support::load;
use unfad_testgen::layer;

fn inputs() -> Vec<Json> {
    // Odd and even lengths (pairs and a last element alone), empty ones included.
    [
        (3, 4, 2),
        (1, 1, 1),
        (4, 7, 3),
        (5, 2, 1),
        (0, 3, 2),
        (2, 0, 1),
    ]
    .iter()
    .enumerate()
    .map(|(s, &(k, m, n))| {
        let s = s as f64;
        json!({
            "W": mat_of(k, m, 0.3 + s),
            "bias": vec_of(k, 0.7 + s),
            "X": mat_of(n, m, 0.11 + s),
            "x": vec_of(m, 0.05 + s),
            "c": 0.25,
        })
    })
    .collect()
}

#[test]
fn split_layers_agree_with_the_interpreter() {
    let mut split = 0;
    for seed in 0..60 {
        let (src, _) = layer(seed);
        let (mut prog, func) = load(&src);
        let primal = split_kernel_tails(&mut prog.arena, &func);
        split += (primal.body != func.body) as usize;
        for input in inputs() {
            check_func(&prog.arena, &primal, &input);
        }
        // The optimizer splits the gradient's maps too, and the jvp's (a value and a
        // tangent per element) and the Hessian-vector product's.
        assert!(check_gradient(&src, &inputs()), "{src}");
        for input in inputs() {
            let (prog, funcs, extended) = higher_order(&src, &input).unwrap();
            for f in &funcs {
                check_func(&prog.arena, f, &extended);
            }
        }
    }
    assert!(split >= 30, "only {split} of the programs were split");
}

#[test]
fn the_loops_results_are_stored_once_per_point() {
    // A perceptron's hidden layer: `k` dot products per point, then `k` tanh in pairs.
    let src = "def f(W: [k][m]real, bias: [k]real, X: [n][m]real) =
      reduce + 0 (map (x. reduce + 0 (map2 (row, b. tanh(reduce + 0 (map2 * row x) + b)) W bias)) X)";
    let (mut prog, func) = load(src);
    let whole = compile(&prog.arena, &func).unwrap();
    let primal = split_kernel_tails(&mut prog.arena, &func);
    let split = compile(&prog.arena, &primal).unwrap();
    // Sizes in the order the parameters name them: k, m, n.
    assert_eq!(whole.workspace_len(&[32, 32, 1000]), 0);
    assert_eq!(split.workspace_len(&[32, 32, 1000]), 32);
    for mut input in inputs() {
        let fields = input.as_object_mut().unwrap();
        fields.remove("x");
        fields.remove("c");
        check_func(&prog.arena, &primal, &input);
    }
}

#[test]
fn a_tail_reading_both_elements_runs_over_their_zip() {
    let src = "def f(W: [k][m]real, bias: [k][m]real, X: [n][m]real, x: [m]real, c: real) =
      reduce + 0 (map2 (row, br. tanh(reduce + 0 (map2 * row x) + c * real(len(br)) + real(len(row)))) W bias)";
    let (mut prog, func) = load(src);
    let primal = split_kernel_tails(&mut prog.arena, &func);
    assert_ne!(primal.body, func.body, "not split");
    for mut input in inputs() {
        // `bias` as rows, like `W`.
        input["bias"] = input["W"].clone();
        check_func(&prog.arena, &primal, &input);
        assert!(check_gradient(src, &[input]));
    }
}
