//! The optimizer's work is linear in a straight-line program: the nodes it builds for the
//! gradient of a chain of `n` statements grow like `n`, also when every statement reads a
//! parameter whose adjoint sums a contribution from each (a chain of single-use bindings
//! that inlining moves into one another; copying it at each link was quadratic), and for
//! chains of array statements and of reads at constant positions (issue 23's other kinds
//! of long programs; both grow 3.99x for 4x the statements).

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

/// `let v_i = map2 (s, t. s * 0.5 + sin(t * s)) v_{i-1} w`, `n` times, and its sum: a
/// chain of array statements, every loop over the parameter `w` too.
fn loops(n: usize) -> String {
    let mut s = String::from("def f(v0: [m]real, w: [m]real): real =\n");
    for i in 1..=n {
        s.push_str(&format!(
            "  let v{i} = map2 (s, t. s * 0.5 + sin(t * s)) v{} w in\n",
            i - 1
        ));
    }
    s.push_str(&format!("  sum(v{n})\n"));
    s
}

/// `let x_i = x_{i-1} * 0.9 + exp(-x_{i-1} * x_{i-1}) * w[i % 8]`, `n` times: reads of a
/// weight vector at constant positions, whose adjoints are scatters into `w`'s.
fn reads(n: usize) -> String {
    let mut s = String::from("def f(x0: real, w: [m]real): real =\n");
    for i in 1..=n {
        let p = i - 1;
        s.push_str(&format!(
            "  let x{i} = x{p} * 0.9 + exp(-x{p} * x{p}) * w[{}] in\n",
            i % 8
        ));
    }
    s.push_str(&format!("  x{n}\n"));
    s
}

/// The nodes the weakened macro and the optimizer build for the chain of `n` statements.
fn nodes_built(n: usize) -> usize {
    nodes_built_for(&chain(n))
}

/// The nodes the weakened macro and the optimizer build for the gradient of `source` in
/// all its parameters.
fn nodes_built_for(source: &str) -> usize {
    let (mut prog, func) = load(source);
    let before = prog.arena.node_count();
    let all: Vec<usize> = (0..func.params.len()).collect();
    let grad = unfad_ad::reverse_weakened(&mut prog.arena, &func, &all).unwrap();
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

#[test]
fn the_gradients_of_long_chains_of_loops_and_of_reads_are_optimized_in_linear_work() {
    for (what, program) in [("loops", loops as fn(usize) -> String), ("reads", reads)] {
        let (small, large) = (
            nodes_built_for(&program(200)),
            nodes_built_for(&program(800)),
        );
        let growth = large as f64 / small as f64;
        assert!(
            growth < 5.0,
            "{what}: 4x the statements built {growth:.1}x the nodes ({small} -> {large})"
        );
    }
}
