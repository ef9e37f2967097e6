//! The optimizer's work is linear in a straight-line program: the nodes it builds for the
//! gradient of a chain of `n` statements grow like `n`, also when every statement reads a
//! parameter whose adjoint sums a contribution from each (a chain of single-use bindings
//! that inlining moves into one another; copying it at each link was quadratic).

use unfad_test_support::load;

/// `let x_i = sin(x_{i-1}) * w + x_{i-1}`, `n` times.
fn chain(n: usize) -> String {
    let mut s = String::from("def f(x0: real, w: real): real =\n");
    for i in 1..=n {
        s.push_str(&format!(
            "  let x{i} = sin(x{}) * w + x{} in\n",
            i - 1,
            i - 1
        ));
    }
    s.push_str(&format!("  x{n}\n"));
    s
}

/// The nodes the weakened macro and the optimizer build for the chain of `n` statements.
fn nodes_built(n: usize) -> usize {
    let (mut prog, func) = load(&chain(n));
    let before = prog.arena.node_count();
    let grad = unfad_ad::reverse_weakened(&mut prog.arena, &func, &[0, 1]).unwrap();
    unfad_opt::optimize(&mut prog.arena, &grad).unwrap();
    prog.arena.node_count() - before
}

#[test]
fn the_gradient_of_a_long_chain_is_optimized_in_linear_work() {
    let (small, large) = (nodes_built(500), nodes_built(2000));
    let growth = large as f64 / small as f64;
    // Linear: 4x the statements, about 4x the nodes; quadratic would be about 16x.
    assert!(
        growth < 5.0,
        "4x the statements built {growth:.1}x the nodes ({small} -> {large})"
    );
}
