//! Two elements per instruction (`f64x2` lanes): maps and blocked reductions whose
//! elements run through arithmetic, selects and the math kernels agree with the
//! interpreter bit for bit, on arrays of every length from 0 to 40 (odd lengths leave a
//! scalar tail) with signed zeros, NaN, infinities, huge and tiny reals among the elements;
//! values and gradients.

mod common;

use common::{check, Rng};
use serde_json::{json, Value as Json};

/// Mostly ordinary reals; with `special`, sometimes a special value or one at the
/// kernels' edges.
fn real(rng: &mut Rng, special: bool) -> Json {
    let k = if special { rng.below(24) } else { 23 };
    match k {
        0 => json!(-0.0),
        1 => json!(0.0),
        2 => json!("NaN"),
        3 => json!("Infinity"),
        4 => json!("-Infinity"),
        5 => json!(710.0),
        6 => json!(-745.5),
        7 => json!(1e-310),
        8 => json!(-1e300),
        9 => json!(20.5),
        _ => {
            let m = rng.centred();
            let e = rng.below(4) as i32 - 1;
            json!(m * 10f64.powi(e))
        }
    }
}

fn reals(rng: &mut Rng, n: usize, special: bool) -> Json {
    Json::Array((0..n).map(|_| real(rng, special)).collect())
}

/// Random inputs `A` and `B` of each length from 0 to 40.
fn inputs(seed: u64, special: bool) -> Vec<Json> {
    let mut rng = Rng(seed);
    (0..=40)
        .map(|n| json!({"A": reals(&mut rng, n, special), "B": reals(&mut rng, n, special)}))
        .collect()
}

/// Element functions of one variable `x` (and `y`, the other array's element).
const BODIES: [&str; 10] = [
    "exp(x)",
    "log(abs(x) + y * y)",
    "tanh(x) * y",
    "sigmoid(x - y)",
    "log1p(abs(x)) - expm1(y)",
    "sin(x) + cos(y)",
    "max(x, y) - min(x * 2, y)",
    "if x < y then x * x else y - 0.5",
    "sqrt(abs(x)) / (1 + y * y)",
    "exp(x - y) * 0.25 + abs(x)",
];

#[test]
fn maps_on_two_lanes_agree_with_the_interpreter() {
    for (k, body) in BODIES.iter().enumerate() {
        let src = format!("def g(A: [n]real, B: [n]real) = map2 (x, y. {body}) A B");
        check(&src, &inputs(k as u64 + 1, true));
    }
}

#[test]
fn reductions_on_two_lanes_agree_with_the_interpreter() {
    for (k, body) in BODIES.iter().enumerate() {
        for op in ["+", "*", "max", "min"] {
            let src = format!(
                "def g(A: [n]real, B: [n]real) = \
                 (reduce {op} 0.5 (map2 (x, y. {body}) A B), map2 (x, y. {body} * 2) A B)"
            );
            check(&src, &inputs(50 + k as u64, true));
        }
    }
}

#[test]
fn gradients_on_two_lanes_agree_with_the_interpreter() {
    for (k, body) in BODIES.iter().enumerate() {
        let src = format!("def g(A: [n]real, B: [n]real) = sum(map2 (x, y. {body}) A B)");
        assert!(
            common::check_gradient(&src, &inputs(200 + k as u64, false)),
            "{src}"
        );
    }
    let lse = "def g(A: [n]real, B: [n]real) = \
               let m = reduce max (0 - 1e300) A in m + log(sum(map (a. exp(a - m)) A))";
    assert!(common::check_gradient(lse, &inputs(300, false)));
}

/// Maps stored without a reduction run two elements per iteration (and a scalar tail):
/// single maps, maps of tuples, maps beside a sequential fold in one loop, a stored map
/// folded by `foldl`, and a map reading a scan computed where it is read.
#[test]
fn paired_map_loops_agree_with_the_interpreter() {
    for (k, body) in BODIES.iter().enumerate() {
        let single =
            format!("def g(A: [n]real, B: [n]real) = map (x. let y = x * 0.5 in {body}) A");
        check(&single, &inputs(400 + k as u64, true));
        let pairs = format!("def g(A: [n]real, B: [n]real) = map2 (x, y. ({body}, x * y)) A B");
        check(&pairs, &inputs(420 + k as u64, true));
    }
    let programs = [
        // A fused tuple: two maps and a fold that is not blocked, in one loop.
        "def g(A: [n]real, B: [n]real) = \
         (map2 (x, y. exp(x) * y) A B, map (x. tanh(x)) A, foldl (s, x. s * 0.5 + x) 0.25 A)",
        // A stored map folded sequentially in the loop that stores it.
        "def g(A: [n]real, B: [n]real) = \
         let E = map (a. exp(a) - 1) A in (foldl (s, x. s * 0.75 + x) 0 E, E)",
        // A scan read by a map, element by element in order.
        "def g(A: [n]real, B: [n]real) = map2 (p, x. sigmoid(p) * x) (shift1R (scanl + 0 A)) B",
        // A map writing into the buffer of the array it reads.
        "def g(A: [n]real, B: [n]real) = let C = map (x. x * 2) A in map (y. exp(y) + y) C",
    ];
    for (k, src) in programs.iter().enumerate() {
        check(src, &inputs(440 + k as u64, true));
    }
}

/// A `foldl` whose state is an array alternates between two buffers that the lanes pass
/// knows apart from every other buffer (not from each other): the maps of its step that
/// read the state and write elsewhere run on two lanes, and those that read one buffer
/// and write the other, or read the state shifted (`y[i - 1]`), stay right.
#[test]
fn folds_over_array_states_agree_with_the_interpreter() {
    let programs = [
        // A Runge-Kutta step: stages read the state at `i - 1`, and the next state is
        // written into the buffer the state is not in.
        "def g(A: [n]real, B: [n]real) = foldl (y, s.            let k1 = map (i. if i == 0 then A[0] else A[i] * y[i - 1]) (iota len(A)) in            let y2 = map2 (a, b. a + s * b / 2) y k1 in            let k2 = map (i. if i == 0 then A[0] else A[i] * y2[i - 1]) (iota len(A)) in            map2 (a, b. a + s * (b + 2 * a) / 6) y k2) B A",
        // The state passed on unchanged, copied into the other buffer; then reversed.
        "def g(A: [n]real, B: [n]real) = foldl (y, s. y) B A",
        "def g(A: [n]real, B: [n]real) =          foldl (y, s. map (i. y[len(y) - 1 - i] + s) (iota len(y))) B A",
        // A tuple of arrays as the state, its components swapped at every step.
        "def g(A: [n]real, B: [n]real) =          foldl (p, s. (map2 (a, b. a * s + b) (snd p) (fst p), fst p)) (A, B) B",
    ];
    for (k, src) in programs.iter().enumerate() {
        check(src, &inputs(480 + k as u64, true));
    }
}

/// Gradients whose stored maps (adjoints written element by element) run two elements
/// per iteration.
#[test]
fn gradients_of_paired_maps_agree_with_the_interpreter() {
    let programs = [
        "def g(A: [n]real, B: [n]real) = sum(map2 (a, b. a * tanh(b)) A B)",
        "def g(A: [n]real, B: [n]real) = \
         let E = map (a. exp(a)) A in log(sum(E)) + dot(E, B)",
        "def g(A: [n]real, B: [n]real) = foldl (s, x. s * 0.5 + x) 0 (map2 (a, b. sigmoid(a) + b) A B)",
    ];
    for (k, src) in programs.iter().enumerate() {
        assert!(
            common::check_gradient(src, &inputs(460 + k as u64, false)),
            "{src}"
        );
    }
}

/// A fold whose function adds into its accumulator in place keeps it in one buffer, at
/// addresses fixed before the loop (not carried from one step to the next): the lanes
/// pass then tells the store of one element from the load of the next, and the additions
/// run on two lanes, as a sum of rows written `reduce (a, b. map2 + a b) z X` in a primal.
#[test]
fn folds_adding_in_place_run_on_two_lanes() {
    let mut rng = Rng(530);
    let inputs: Vec<Json> = [(1, 1), (1, 5), (2, 2), (3, 7), (6, 4), (9, 9)]
        .iter()
        .map(|&(n, m)| {
            let rows: Vec<Json> = (0..n).map(|_| reals(&mut rng, m, true)).collect();
            json!({"X": rows, "B": reals(&mut rng, m, false)})
        })
        .collect();
    let programs = [
        "def g(X: [n][m]real, B: [m]real) = reduce (a, b. map2 + a b) (map (t. 0) X[0]) X",
        "def g(X: [n][m]real, B: [m]real) = foldl (acc, r. map2 (s, x. s + x * x) acc r) B X",
        "def g(X: [n][m]real, B: [m]real) = \
         let M = reduce (a, b. map2 + a b) B X in \
         reduce (a, b. map2 + a b) B (map (r. map2 (x, mu. (x - mu) * (x - mu)) r M) X)",
        "def g(X: [n][m]real, B: [m]real) = \
         foldl (p, r. (map2 + (fst p) r, map2 (s, x. s + x * x) (snd p) r)) (B, B) X",
    ];
    for src in programs {
        check(src, &inputs);
    }
    let (prog, func) = unfad_test_support::load(programs[0]);
    // The inline kernels' code (batches would replace it on a host with AVX2).
    unfad_jit::set_batch_mode(unfad_jit::BatchMode::Off);
    let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    assert!(text.contains("load.f64x2"), "{text}");
}

/// A table read by a kernel on two lanes (`exp`'s `2^(j/128)`, held in two columns) is
/// read a row per lane: one 16-byte load at each lane's row, and a shuffle per column,
/// not a load and a move between lanes per real. The values are the interpreter's, at
/// every row of the table and at the kernels' edges.
#[test]
fn kernel_tables_are_read_a_row_per_lane() {
    let mut rng = Rng(531);
    let mut inputs = inputs(532, true);
    // Every row of the table: `x` at each multiple of ln 2 / 128 around 0 and near the
    // ends of the range, where the row and exponent come from the last bits of `k`.
    for base in [0.0, 700.0, -740.0] {
        let xs: Vec<Json> = (0..260)
            .map(|j| json!(base + (j as f64 - 130.0) * std::f64::consts::LN_2 / 128.0))
            .collect();
        inputs.push(json!({"A": xs.clone(), "B": reals(&mut rng, xs.len(), false)}));
    }
    let programs = [
        "def g(A: [n]real, B: [n]real) = sum(map (x. exp(x)) A)",
        "def g(A: [n]real, B: [n]real) = map2 (x, y. tanh(x) * sigmoid(y) + exp(x - y)) A B",
    ];
    for src in programs {
        check(src, &inputs);
    }
    let (prog, func) = unfad_test_support::load(programs[0]);
    // The inline kernels' code (batches would replace it on a host with AVX2).
    unfad_jit::set_batch_mode(unfad_jit::BatchMode::Off);
    let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    let rows = text
        .lines()
        .filter(|l| l.contains("load.f64x2") && l.contains("region0"))
        .count();
    // The second column: bytes 8..16 of each row.
    let second = text
        .lines()
        .filter(|l| l.contains("shuffle") && l.contains("0x1f1e1d1c1b1a19180f0e0d0c0b0a0908"))
        .count();
    let reals = text
        .lines()
        .filter(|l| l.contains("load.f64 ") && l.contains("region0"))
        .count();
    // Two lanes of two copies in the blocked reduction's loop: four rows, the second
    // column of each pair of rows shuffled out of the loads that gave the first; the
    // scalar tail reads its row's two reals.
    assert_eq!((rows, second, reals), (4, 2, 2), "{text}");
}
