//! Native code against the reference interpreter, on hand-written programs covering every
//! node kind, arrays of size 0, 1 and many, nested arrays, arrays of tuples, tuples of
//! arrays, free variables, conditionals and every scalar operator.

mod common;

use common::{check, check_gradient, mat_of, run_native, vec_of};
use serde_json::{json, Value as Json};
use unfad_syntax::{BinOp, ExprId, Node, Partial, Partial2, UnOp};
use unfad_test_support::load;

const SPECIAL: [&str; 3] = ["NaN", "Infinity", "-Infinity"];

/// Interesting reals: signed zeros, small and large magnitudes, domain edges, non-finite.
fn reals() -> Vec<Json> {
    let mut v: Vec<Json> = [
        0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -3.25, 1e-310, 1e308, -1e308, 710.0, 0.9999,
    ]
    .iter()
    .map(|&x| json!(x))
    .collect();
    v.extend(SPECIAL.iter().map(|s| json!(s)));
    v
}

#[test]
fn every_unary_operator() {
    let src = "def f(x: real) = (sin(x), cos(x), tan(x), exp(x), log(x), sqrt(x), tanh(x), \
               abs(x), sigmoid(x), atan(x), asin(x), acos(x), sinh(x), cosh(x), log1p(x), \
               expm1(x), -x)";
    let inputs: Vec<Json> = reals().into_iter().map(|x| json!({ "x": x })).collect();
    check(src, &inputs);
}

/// Signed zeros, NaNs of both signs, infinities, the extreme finite values and the
/// smallest subnormals.
const SPECIALS: [f64; 10] = [
    0.0,
    -0.0,
    f64::NAN,
    -f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::MAX,
    f64::MIN,
    5e-324,
    -5e-324,
];

/// `max` and `min` (IEEE maximum and minimum, the canonical NaN) against the interpreter's
/// `fmax` and `fmin`, bit for bit, on every pair of special values: elementwise (two lanes
/// and the scalar tail) and as reductions (blocked, several accumulators) over arrays
/// holding them in every order, signed zeros and NaN included.
#[test]
fn max_and_min_equal_the_interpreter_on_special_values() {
    use unfad_syntax::ops::{fmax, fmin};
    let specials: Vec<f64> = SPECIALS.iter().copied().chain([1.0, -1.0]).collect();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for &x in &specials {
        for &y in &specials {
            a.push(x);
            b.push(y);
        }
    }
    let n = a.len();
    let (prog, func) = load(
        "def f(A: [n]real, B: [n]real) = (map2 max A B, map2 min A B, map2 (x, y. max(y, x)) A B)",
    );
    let compiled = unfad_jit::compile(&prog.arena, &func).unwrap();
    let (mut hi, mut lo, mut swapped) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let mut ws = vec![0.0; compiled.workspace_len(&[n as u64])];
    compiled
        .call(
            &[&a, &b],
            &[n as u64],
            &mut [&mut hi, &mut lo, &mut swapped],
            &mut ws,
        )
        .unwrap();
    for k in 0..n {
        for (got, want, what) in [
            (hi[k], fmax(a[k], b[k]), "max"),
            (lo[k], fmin(a[k], b[k]), "min"),
            (swapped[k], fmax(b[k], a[k]), "max swapped"),
        ] {
            assert!(
                got.to_bits() == want.to_bits(),
                "{what}({:e}, {:e}): native {got:e} ({:#x}), interpreter {want:e} ({:#x})",
                a[k],
                b[k],
                got.to_bits(),
                want.to_bits()
            );
        }
    }
    // Reductions: each window of the pairs' first operands, from every start, so that
    // the zeros and NaNs fall into every accumulator and into the remainder.
    let (prog, func) = load("def f(A: [n]real) = (reduce max (-1e300) A, reduce min 1e300 A, reduce max (-0) A, reduce min 0 A)");
    let compiled = unfad_jit::compile(&prog.arena, &func).unwrap();
    for start in 0..a.len() {
        for len in [1, 3, 8, 9, 17, 40] {
            let xs: Vec<f64> = a.iter().cycle().skip(start).take(len).copied().collect();
            let mut out = [0.0; 4];
            let mut ws = vec![0.0; compiled.workspace_len(&[len as u64])];
            {
                let (o0, rest) = out.split_at_mut(1);
                let (o1, rest) = rest.split_at_mut(1);
                let (o2, o3) = rest.split_at_mut(1);
                compiled
                    .call(&[&xs], &[len as u64], &mut [o0, o1, o2, o3], &mut ws)
                    .unwrap();
            }
            let want = [
                xs.iter().fold(-1e300, |m, &x| fmax(m, x)),
                xs.iter().fold(1e300, |m, &x| fmin(m, x)),
                xs.iter().fold(-0.0, |m, &x| fmax(m, x)),
                xs.iter().fold(0.0, |m, &x| fmin(m, x)),
            ];
            for (got, want) in out.iter().zip(want) {
                assert!(
                    got.to_bits() == want.to_bits(),
                    "over {xs:?}: native {got:e} ({:#x}), left fold {want:e} ({:#x})",
                    got.to_bits(),
                    want.to_bits()
                );
            }
        }
    }
}

/// The inline math kernels against the interpreter's twin (`UnOp::eval`), bit for bit, on
/// special values and a few thousand points spread over many binades of both signs.
#[test]
fn kernels_equal_the_interpreter_bit_for_bit() {
    let mut xs = SPECIALS.to_vec();
    xs.extend([
        2.2e-308, 709.78, 709.79, -745.1, -746.0, -708.4, 4194304.0, 4194304.5, -1e7, 0.625,
        -0.625, 1.0, -1.0, 40.0, -40.0,
    ]);
    let mut state = 0x2545F4914F6CDD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..4000 {
        let e = (next() % 90) as i32 - 60;
        let m = 1.0 + (next() >> 12) as f64 / (1u64 << 52) as f64;
        let x = m * 2f64.powi(e);
        xs.push(if next() & 1 == 0 { x } else { -x });
    }
    let n = xs.len();
    for op in UnOp::ALL.into_iter().filter(|op| op.kernel().is_some()) {
        let (prog, func) = load(&format!("def f(A: [n]real) = map (x. {}(x)) A", op.name()));
        let compiled = unfad_jit::compile(&prog.arena, &func).unwrap();
        let mut out = vec![0.0; n];
        let mut ws = vec![0.0; compiled.workspace_len(&[n as u64])];
        compiled
            .call(&[&xs], &[n as u64], &mut [&mut out], &mut ws)
            .unwrap();
        for (&x, &y) in xs.iter().zip(&out) {
            let want = op.eval(x);
            assert!(
                common::same(y, want),
                "{}({x:e}): native {y:e} ({:#x}), interpreter {want:e} ({:#x})",
                op.name(),
                y.to_bits(),
                want.to_bits()
            );
        }
    }
    // `sin` and `cos` of one argument share their reduction in native code (the second
    // kernel's reduction is the first's, computed once): still each the interpreter's.
    let (prog, func) = load("def f(A: [n]real) = map (x. (sin(x), cos(x), cos(x) * sin(x))) A");
    let compiled = unfad_jit::compile(&prog.arena, &func).unwrap();
    let mut outs = vec![vec![0.0; n]; 3];
    let mut ws = vec![0.0; compiled.workspace_len(&[n as u64])];
    let mut refs: Vec<&mut [f64]> = outs.iter_mut().map(|v| v.as_mut_slice()).collect();
    compiled
        .call(&[&xs], &[n as u64], &mut refs, &mut ws)
        .unwrap();
    for (k, &x) in xs.iter().enumerate() {
        let (s, c) = (UnOp::Sin.eval(x), UnOp::Cos.eval(x));
        for (got, want) in [(outs[0][k], s), (outs[1][k], c), (outs[2][k], c * s)] {
            assert!(
                common::same(got, want),
                "sin and cos of {x:e}: {got:e} != {want:e}"
            );
        }
    }
}

/// `e` with every `sin` replaced by `op` (which the surface syntax cannot name).
fn replace_sin(arena: &mut unfad_syntax::Arena, e: ExprId, op: UnOp) -> ExprId {
    let node = match arena[e] {
        Node::Op1(UnOp::Sin, x) => Node::Op1(op, x),
        node => arena.map_children(node, |a, c| replace_sin(a, c, op)),
    };
    let r = arena.rebuild(e, node);
    if let Some(t) = arena.type_of(e).cloned() {
        arena.set_type(r, t);
    }
    r
}

/// The derivative primitives (`UnOp::Partial`), which only derivatives build, against their
/// definition `Partial::eval`, bit for bit, on special values and spread points.
#[test]
fn derivative_primitives_equal_their_definition_bit_for_bit() {
    let mut xs = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.999,
        1e-310,
        -1e-310,
        1e300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    xs.extend((-300..300).map(|k| k as f64 * 0.0173));
    let n = xs.len();
    for p in Partial::ALL {
        let (mut prog, mut func) = load("def f(A: [n]real) = map (x. sin(x)) A");
        func.body = replace_sin(&mut prog.arena, func.body, UnOp::Partial(p));
        let compiled = unfad_jit::compile(&prog.arena, &func).unwrap();
        let mut out = vec![0.0; n];
        let mut ws = vec![0.0; compiled.workspace_len(&[n as u64])];
        compiled
            .call(&[&xs], &[n as u64], &mut [&mut out], &mut ws)
            .unwrap();
        for (&x, &y) in xs.iter().zip(&out) {
            let want = p.eval(x);
            assert!(
                common::same(y, want),
                "{}({x:e}): native {y:e}, definition {want:e}",
                p.name()
            );
        }
    }
}

/// `e` with every `atan2` replaced by `op`.
fn replace_atan2(arena: &mut unfad_syntax::Arena, e: ExprId, op: BinOp) -> ExprId {
    let node = match arena[e] {
        Node::Op2(BinOp::Atan2, x, y) => Node::Op2(op, x, y),
        node => arena.map_children(node, |a, c| replace_atan2(a, c, op)),
    };
    let r = arena.rebuild(e, node);
    if let Some(t) = arena.type_of(e).cloned() {
        arena.set_type(r, t);
    }
    r
}

/// The binary derivative primitives (`BinOp::Partial`) against `Partial2::eval`, bit for
/// bit, on every pair of special and ordinary values.
#[test]
fn binary_derivative_primitives_equal_their_definition_bit_for_bit() {
    let vals = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        2.5,
        -3.25,
        1e-310,
        1e300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    let (xs, ys): (Vec<f64>, Vec<f64>) = vals
        .iter()
        .flat_map(|&x| vals.iter().map(move |&y| (x, y)))
        .unzip();
    let n = xs.len();
    for p in Partial2::ALL {
        let (mut prog, mut func) =
            load("def f(A: [n]real, B: [n]real) = map2 (a, b. atan2(a, b)) A B");
        func.body = replace_atan2(&mut prog.arena, func.body, BinOp::Partial(p));
        let compiled = unfad_jit::compile(&prog.arena, &func).unwrap();
        let mut out = vec![0.0; n];
        let mut ws = vec![0.0; compiled.workspace_len(&[n as u64])];
        compiled
            .call(&[&xs, &ys], &[n as u64], &mut [&mut out], &mut ws)
            .unwrap();
        for ((&x, &y), &r) in xs.iter().zip(&ys).zip(&out) {
            let want = p.eval(x, y);
            assert!(
                common::same(r, want),
                "{}({x:e}, {y:e}): native {r:e}, definition {want:e}",
                p.name()
            );
        }
    }
}

#[test]
fn every_binary_operator() {
    let src = "def f(x: real, y: real) = (x + y, x - y, x * y, x / y, pow(x, y), max(x, y), \
               min(x, y), atan2(x, y))";
    let rs = reals();
    let mut inputs = Vec::new();
    for x in &rs {
        for y in &rs {
            inputs.push(json!({ "x": x, "y": y }));
        }
    }
    check(src, &inputs);
}

#[test]
fn constants_fold_like_the_interpreter() {
    check(
        "def f(x: real) = (x + 0 * (1 / 0), max(0, -0), min(0, -0), max(0 / 0, 1), \
         exp(1) * log(2), pow(2, 0.5) + x)",
        &[json!({ "x": 1.5 })],
    );
}

#[test]
fn comparisons_and_connectives() {
    let src = "def f(x: real, y: real) = \
        let a = if x < y then 1 else 0 in \
        let b = if x <= y then 1 else 0 in \
        let c = if x > y then 1 else 0 in \
        let d = if x >= y then 1 else 0 in \
        let e = if x == y then 1 else 0 in \
        let g = if x != y then 1 else 0 in \
        let h = if x < y && !(y > 2) || x == 0 then 1 else 0 in \
        (a, b, c, d, e, g, h)";
    let rs = reals();
    let mut inputs = Vec::new();
    for x in rs.iter().take(8).chain(rs.iter().skip(13)) {
        for y in rs.iter().take(6).chain(rs.iter().skip(13)) {
            inputs.push(json!({ "x": x, "y": y }));
        }
    }
    check(src, &inputs);
}

#[test]
fn conditionals_by_branch_and_by_select() {
    let inputs = [
        json!({"x": 1.5, "y": 2.0}),
        json!({"x": -1.5, "y": 2.0}),
        json!({"x": "NaN", "y": 0.25}),
    ];
    check(
        "def f(x: real, y: real) = if x > 0 then x * y else y - x",
        &inputs,
    );
    check(
        "def f(x: real, y: real) = if x > 0 then exp(x) * sin(y) else log(y) + 1",
        &inputs,
    );
    check(
        "def f(x: real, y: real) = if x > y then (x, y) else (y, x)",
        &inputs,
    );
    check(
        "def f(x: real, y: real) = \
         if x > 0 then (if y > 1 then sin(x) else cos(y)) else (let z = x * y in z * z)",
        &inputs,
    );
}

#[test]
fn tuples_projections_and_patterns() {
    check(
        "def f(p: (real, real), q: (real, (real, real))) = \
         let (a, b) = p in \
         let (c, d) = q in \
         (a * b, fst d + snd d * c, fst (snd q))",
        &[json!({"p": [1.0, 2.0], "q": [3.0, [4.0, 5.0]]})],
    );
}

#[test]
fn dot_product_in_one_loop_without_workspace() {
    let src = "def f(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)";
    let compiled = check(
        src,
        &[0, 1, 2, 7].map(|n| json!({"A": vec_of(n, 0.3), "B": vec_of(n, 0.7)})),
    );
    for n in [0, 1, 1000] {
        assert_eq!(compiled.workspace_len(&[n]), 0);
    }
    // Also through the prelude and through a `let` used once.
    let c = check(
        "def f(A: [n]real, B: [n]real) = dot(A, B) + sum(A)",
        &[json!({"A": vec_of(5, 0.3), "B": vec_of(5, 0.7)})],
    );
    assert_eq!(c.workspace_len(&[5]), 0);
    let c = check(
        "def f(A: [n]real, s: real) = let B = map (x. exp(x * s)) A in let C = map (x. x + 1) B in reduce + 0 C",
        &[json!({"A": vec_of(5, 0.3), "s": 0.5})],
    );
    assert_eq!(c.workspace_len(&[5]), 0);
}

fn sizes_0_1_many(f: impl Fn(usize) -> Json) -> Vec<Json> {
    [0, 1, 2, 5].into_iter().map(f).collect()
}

#[test]
fn maps_and_folds_over_vectors() {
    let one = |n| json!({"A": vec_of(n, 0.9)});
    let two = |n| json!({"A": vec_of(n, 0.9), "B": vec_of(n, 0.4), "s": 1.5});
    check(
        "def f(A: [n]real) = map (x. x * x + 1) A",
        &sizes_0_1_many(one),
    );
    check(
        "def f(A: [n]real, B: [n]real, s: real) = map2 (a, b. a * s + b) A B",
        &sizes_0_1_many(two),
    );
    check(
        "def f(A: [n]real, B: [n]real, s: real) = reduce (a, b. a + b * s) 0 A",
        &sizes_0_1_many(two),
    );
    check(
        "def f(A: [n]real) = foldl (acc, x. acc * 0.5 + sin(x)) 1 A",
        &sizes_0_1_many(one),
    );
    check(
        "def f(A: [n]real) = (reduce max (0 - 1000) A, reduce min 1000 A, prod(A))",
        &sizes_0_1_many(one),
    );
}

#[test]
fn scans_and_shifts() {
    let one = |n| json!({"A": vec_of(n, 0.9)});
    for src in [
        "def f(A: [n]real) = scanl + 0 A",
        "def f(A: [n]real) = scanr * 1 A",
        "def f(A: [n]real) = shift1L A",
        "def f(A: [n]real) = shift1R A",
        "def f(A: [n]real) = shift1L (scanl + 0 A)",
        "def f(A: [n]real) = shift1R (shift1L (scanr + 0 A))",
        "def f(A: [n]real) = scanl (acc, x. (fst acc + x, snd acc * x)) (0, 1) A",
        "def f(A: [n]real) = scanr (x, acc. (fst acc + x, snd acc * x)) (0, 1) A",
        "def f(A: [n]real) = reduce + 0 (shift1L (map (x. x * 2) A))",
        "def f(A: [n]real) = map2 + (scanl + 0 (shift1L A)) A",
        "def f(A: [n]real) = shift1L (shift1L (shift1L A))",
        // The paper's gradient of `prod`.
        "def f(A: [n]real) = map2 * (scanr * 1 (shift1L A)) (shift1R (scanl * 1 A))",
    ] {
        check(src, &sizes_0_1_many(one));
    }
    check(
        "def f(A: [n]real) = map2 * (scanr * 1 (shift1L A)) (shift1R (scanl * 1 A))",
        &[json!({"A": vec_of(3, 0.9)})],
    );
}

#[test]
fn len_zeros_like_ones_like() {
    let inp = |n, m| json!({"A": vec_of(n, 0.5), "M": mat_of(n, m, 0.2), "x": 2.0});
    let inputs = vec![inp(0, 0), inp(0, 2), inp(1, 0), inp(3, 2)];
    for src in [
        "def f(A: [n]real, M: [n][m]real, x: real) = len(A) * 2 + len(shift1L A) + len(scanl + 0 A)",
        "def f(A: [n]real, M: [n][m]real, x: real) = (zeros_like(M), ones_like(x), map (r. ones_like(r)) M)",
        "def f(A: [n]real, M: [n][m]real, x: real) = zeros_like((A, x, M))",
        "def f(A: [n]real, M: [n][m]real, x: real) = ones_like(map (a. a * x) A)",
        "def f(A: [n]real, M: [n][m]real, x: real) = map2 + (zeros_like(A)) A",
        "def f(A: [n]real, M: [n][m]real, x: real) = map (r. map2 + (ones_like(shift1L (scanl + 0 r))) r) M",
    ] {
        check(src, &inputs);
    }
}

#[test]
fn array_literals() {
    let inputs = [json!({"x": 1.5, "y": -2.0})];
    check("def f(x: real, y: real) = [x, y, x * y]", &inputs);
    check(
        "def f(x: real, y: real) = [[x, y], [y, x], [x, x]]",
        &inputs,
    );
    check("def f(x: real, y: real) = [(x, y), (y, x)]", &inputs);
    check(
        "def f(x: real, y: real) = reduce + 0 (map (r. reduce * 1 r) [[x, y], [y, 3]])",
        &inputs,
    );
    check("def f(x: real, y: real) = shift1L [x]", &inputs);
    check("def f(x: real, y: real) = shift1L (shift1L [x])", &inputs);
}

#[test]
fn nested_arrays() {
    let inp = |n, m| json!({"M": mat_of(n, m, 0.2), "v": vec_of(m, 1.1)});
    let inputs = vec![inp(0, 0), inp(0, 3), inp(2, 0), inp(1, 1), inp(3, 4)];
    for src in [
        "def f(M: [n][m]real, v: [m]real) = M",
        "def f(M: [n][m]real, v: [m]real) = map (r. reduce + 0 r) M",
        "def f(M: [n][m]real, v: [m]real) = map (r. map (x. x * 2) r) M",
        "def f(M: [n][m]real, v: [m]real) = map (r. map2 * r v) M",
        "def f(M: [n][m]real, v: [m]real) = map (r. dot(r, v)) M",
        "def f(M: [n][m]real, v: [m]real) = reduce (a, b. map2 + a b) (zeros_like(v)) M",
        "def f(M: [n][m]real, v: [m]real) = foldl (acc, r. map2 (a, x. a * 0.5 + x) acc r) v M",
        "def f(M: [n][m]real, v: [m]real) = scanl (acc, r. map2 + acc r) v M",
        "def f(M: [n][m]real, v: [m]real) = scanr (r, acc. map2 * r acc) v M",
        "def f(M: [n][m]real, v: [m]real) = map (r. scanl + 0 r) M",
        "def f(M: [n][m]real, v: [m]real) = map (r. shift1L (scanr + 0 r)) M",
        "def f(M: [n][m]real, v: [m]real) = map (r. let t = map (x. x * x) r in map2 + t r) M",
        "def f(M: [n][m]real, v: [m]real) = map (r. let t = map (x. x * x) r in map2 + t t) M",
        "def f(M: [n][m]real, v: [m]real) = map (x. map (y. x * y) v) (map (r. sum(r)) M)",
        "def f(M: [n][m]real, v: [m]real) = shift1R (map (r. shift1L r) M)",
        "def f(M: [n][m]real, v: [m]real) = map (r. reduce + 0 (map2 * r (map (a. a + len(r)) v))) M",
        "def f(M: [n][m]real, v: [m]real) = foldl (acc, r. (map2 + (fst acc) r, snd acc + 1)) (zeros_like(v), 0) M",
        "def f(M: [n][m]real, v: [m]real) = map (r. map (x. map (y. x * y) r) r) M",
    ] {
        check(src, &inputs);
    }
}

#[test]
fn arrays_of_tuples_and_tuples_of_arrays() {
    let inp = |n, m| {
        json!({
            "P": (0..n).map(|i| json!([i as f64 * 0.5, 1.0 - i as f64])).collect::<Vec<_>>(),
            "A": vec_of(n, 0.3),
            "t": [vec_of(n, 0.1), vec_of(n, 0.2)],
            "Q": (0..n).map(|i| json!([vec_of(m, i as f64), i as f64])).collect::<Vec<_>>(),
        })
    };
    let inputs = vec![inp(0, 0), inp(1, 2), inp(4, 3)];
    let sig = "def f(P: [n](real, real), A: [n]real, t: ([n]real, [n]real), Q: [n]([m]real, real))";
    for body in [
        "map (p. fst p * snd p) P",
        "map2 (p, x. (snd p, fst p + x)) P A",
        "let (a, b) = t in (map2 + a b, reduce + 0 a)",
        "map (q. (map (x. x * snd q) (fst q), reduce + 0 (fst q))) Q",
        "reduce (p, q. (fst p + fst q, snd p * snd q)) (0, 1) P",
        "scanl (acc, p. (fst acc + fst p, snd acc - snd p)) (0, 0) P",
        "shift1L P",
        "(P, t, Q)",
        "map (q. fst q) Q",
        "reduce (a, q. map2 + a (fst q)) (zeros_like(fst (snd (map (q. (snd q, fst q)) Q))) ) Q",
    ] {
        // The last body has an ill-formed zero if Q is empty; keep it to non-empty sizes.
        let ins: Vec<Json> = if body.contains("zeros_like(fst") {
            inputs[1..].to_vec()
        } else {
            inputs.clone()
        };
        let src = format!("{sig} = {body}");
        if load_ok(&src) {
            check(&src, &ins);
        }
    }
}

/// Whether `src` type-checks (some bodies above are only there in one of their forms).
fn load_ok(src: &str) -> bool {
    unfad_syntax::Program::load(src).is_ok()
}

#[test]
fn free_variables_in_function_arguments() {
    let inp = |n, m| json!({"A": vec_of(n, 0.3), "B": vec_of(m, 0.8), "s": 0.75});
    let inputs = vec![inp(0, 0), inp(2, 0), inp(0, 2), inp(3, 4)];
    for src in [
        "def f(A: [n]real, B: [m]real, s: real) = map (a. reduce + 0 (map (b. a * b * s) B)) A",
        "def f(A: [n]real, B: [m]real, s: real) = let C = map (b. b * s) B in map (a. reduce + 0 (map (c. a * c) C)) A",
        "def f(A: [n]real, B: [m]real, s: real) = let C = map (b. exp(b)) B in map (a. dot(C, C) * a) A",
        "def f(A: [n]real, B: [m]real, s: real) = foldl (acc, a. acc + reduce (x, y. x + y * a) 0 B) s A",
        "def f(A: [n]real, B: [m]real, s: real) = let z = reduce + 0 B in map (a. a * z + s) A",
    ] {
        check(src, &inputs);
    }
}

#[test]
fn conditionals_on_arrays() {
    let inp = |n, x| json!({"A": vec_of(n, 0.3), "B": vec_of(n, 0.6), "x": x});
    let inputs = vec![inp(0, 1.0), inp(3, 1.0), inp(3, -1.0), inp(1, -1.0)];
    for src in [
        "def f(A: [n]real, B: [n]real, x: real) = if x > 0 then map (a. a * x) A else A",
        "def f(A: [n]real, B: [n]real, x: real) = reduce + 0 (if x > 0 then map (a. a * x) A else B)",
        "def f(A: [n]real, B: [n]real, x: real) = if x > 0 then (A, x) else (zeros_like(B), 2)",
        "def f(A: [n]real, B: [n]real, x: real) = map (a. if a > 0 then a else 0) A",
        "def f(A: [n]real, B: [n]real, x: real) = map2 (a, b. if a > b then exp(a) else sin(b)) A B",
        "def f(A: [n]real, B: [n]real, x: real) = let C = if x > 0 then scanl + 0 A else scanr + 0 B in map2 + (shift1L C) A",
        "def f(A: [n]real, B: [n]real, x: real) = foldl (acc, a. if a > 0 then map (y. y + a) acc else acc) B A",
    ] {
        check(src, &inputs);
    }
}

#[test]
fn lets_used_many_times_are_computed_once() {
    let inputs = sizes_0_1_many(|n| json!({"A": vec_of(n, 0.3)}));
    let c = check(
        "def f(A: [n]real) = let B = map (x. exp(x)) A in reduce + 0 (map2 * B B)",
        &inputs,
    );
    assert_eq!(c.workspace_len(&[10]), 10);
    // A few arithmetic operations are computed at each read instead.
    let c = check(
        "def f(A: [n]real) = let B = map (x. x * x) A in reduce + 0 (map2 * B B)",
        &inputs,
    );
    assert_eq!(c.workspace_len(&[10]), 0);
    check(
        "def f(A: [n]real) = let B = map (x. exp(x)) A in (B, reduce + 0 B, len(B))",
        &inputs,
    );
    check(
        "def f(A: [n]real) = let p = (map (x. x + 1) A, 2) in reduce + (snd p) (fst p) + reduce * 1 (fst p)",
        &inputs,
    );
}

#[test]
fn buffers_with_disjoint_lifetimes_share_memory() {
    // Three arrays in sequence, each used twice: at most two are alive at once.
    let src = "def f(A: [n]real) = \
        let B = map (x. exp(x)) A in let b = dot(B, B) in \
        let C = map (x. exp(x * b)) A in let c = dot(C, C) in \
        let D = map (x. exp(x - c)) A in dot(D, D)";
    let c = check(src, &sizes_0_1_many(|n| json!({"A": vec_of(n, 0.3)})));
    assert_eq!(c.workspace_len(&[10]), 10);
}

#[test]
fn a_row_made_in_a_loop_reuses_one_slot() {
    let src = "def f(M: [n][m]real) = map (r. let t = map (x. exp(x)) r in dot(t, t) + sum(t)) M";
    let c = check(
        src,
        &[
            json!({"M": mat_of(0, 0, 0.1)}),
            json!({"M": mat_of(3, 4, 0.1)}),
        ],
    );
    assert_eq!(c.workspace_len(&[3, 4]), 4);
}

#[test]
fn gradients_compile_and_agree() {
    let vec_inputs = sizes_0_1_many(|n| json!({"A": vec_of(n, 0.3), "B": vec_of(n, 0.7)}));
    let mut checked = 0;
    for src in [
        "def f(A: [n]real, B: [n]real) = dot(A, B)",
        "def f(A: [n]real, B: [n]real) = prod(A) + sum(B)",
        "def f(A: [n]real, B: [n]real) = foldl (acc, a. acc * 0.9 + a * a) 1 A",
        "def f(A: [n]real, B: [n]real) = reduce max (0 - 100) (map2 * A B)",
        "def f(A: [n]real, B: [n]real) = sum(scanl + 0 (map (a. a * a) A))",
        "def f(A: [n]real, B: [n]real) = reduce + 0 (map (a. if a > 0 then a * a else 0 - a) A)",
    ] {
        checked += check_gradient(src, &vec_inputs) as usize;
    }
    let mat_inputs = vec![
        json!({"M": mat_of(0, 0, 0.2), "v": vec_of(0, 0.5)}),
        json!({"M": mat_of(2, 3, 0.2), "v": vec_of(3, 0.5)}),
    ];
    for src in [
        "def f(M: [n][m]real, v: [m]real) = sum(map (r. dot(r, v)) M)",
        "def f(M: [n][m]real, v: [m]real) = sum(map (r. exp(dot(r, r))) M) * sum(v)",
        "def f(M: [n][m]real, v: [m]real) = sum(reduce (a, b. map2 + a b) v M)",
    ] {
        checked += check_gradient(src, &mat_inputs) as usize;
    }
    checked += check_gradient(
        "def f(x: real, y: real) = let w = x * y in if w > 1 then sin(w) * y else w / (1 + y * y)",
        &[json!({"x": 2.0, "y": 0.5}), json!({"x": 0.1, "y": 0.5})],
    ) as usize;
    for src in [
        "def f(x: real, y: real) = x * y + sin(x) * exp(y) / (1 + y * y)",
        "def f(x: real, y: real) = let (a, b) = (x * y, x + y) in pow(a, 2) + atan2(a, b) + max(a, b)",
    ] {
        checked += check_gradient(src, &[json!({"x": 2.0, "y": 0.5}), json!({"x": -0.1, "y": 0.5})])
            as usize;
    }
    let p_inputs = sizes_0_1_many(|n| json!({"p": [0.5, 2.0], "A": vec_of(n, 0.3)}));
    checked += check_gradient(
        "def f(p: (real, real), A: [n]real) = dot(A, A) * fst p + snd p * prod(A)",
        &p_inputs,
    ) as usize;
    assert!(checked >= 5, "only {checked} gradients could be made");
}

/// Gradients of recurrent layers, whose backward loops read the layer's output from the
/// stored states (`unfad_opt`'s `rules::steps`: the steps zipped with the next states, and
/// the next state's elements zipped into the loops over the rows), natively against the
/// interpreter, over sequences of 0, 1 and several steps.
#[test]
fn gradients_of_recurrent_layers_read_the_stored_states() {
    let inputs: Vec<serde_json::Value> = [0, 1, 4]
        .iter()
        .map(|&n| {
            json!({"W": mat_of(3, 3, 0.3), "U": vec_of(3, 0.4), "c": vec_of(3, 0.2),
                   "h0": vec_of(3, 0.5), "xs": mat_of(n, 3, 0.7), "ys": mat_of(n, 3, 0.9)})
        })
        .collect();
    let sources = [
        "def f(W: [m][m]real, U: [m]real, c: [m]real, h0: [m]real, xs: [n][m]real, ys: [n][m]real) =
           let hT = foldl (h, x. map2 (row, u. tanh(dot(row, h) + u * x[0])) W U) h0 xs in
           dot(hT, c)",
        "def f(W: [m][m]real, U: [m]real, c: [m]real, h0: [m]real, xs: [n][m]real, ys: [n][m]real) =
           let hT = foldl (h, x. map (i. sigmoid(dot(W[i], h) + x[i] * U[i] + c[i])) (iota len(h))) h0 xs in
           sum(map (v. v * v) hT)",
        "def f(W: [m][m]real, U: [m]real, c: [m]real, h0: [m]real, xs: [n][m]real, ys: [n][m]real) =
           let out = foldl (acc, t.
             let h = map2 (row, u. tanh(dot(row, fst acc) + u * xs[t][1])) W U in
             (h, snd acc + sum(map2 (a, y. (a - y) * (a - y)) h ys[t]))) (h0, 0) (iota len(xs)) in
           snd out + dot(fst out, c)",
    ];
    let mut checked = 0;
    for src in sources {
        let (prog, func) = common::gradient(src).unwrap();
        let shown = unfad_syntax::print_func(&prog.arena, &func);
        assert!(
            shown.contains("shift1L S"),
            "the states are not read back:\n{shown}"
        );
        checked += check_gradient(src, &inputs) as usize;
    }
    assert_eq!(checked, sources.len());
}

#[test]
fn gradients_of_extrema_at_ties_signed_zeros_and_nan() {
    let inputs = [
        json!({"A": [3.0, 1.0, 3.0], "B": [0.5, 1.0, 2.0]}),
        json!({"A": [-0.0, 0.0, -0.0], "B": [0.5, 1.0, 2.0]}),
        json!({"A": [-5.0, -7.0], "B": [0.5, 1.0]}),
        json!({"A": [1.0, "NaN", 2.0], "B": [0.5, 1.0, 2.0]}),
        json!({"A": ["NaN"], "B": [0.5]}),
        json!({"A": [], "B": []}),
    ];
    for src in [
        "def f(A: [n]real, B: [n]real) = reduce max (-1) A * sum(B)",
        "def f(A: [n]real, B: [n]real) = reduce min 1 (map2 * A B)",
        "def f(A: [n]real, B: [n]real) = \
         let m = reduce max (-1e300) A in m + log(sum(map2 (a, b. exp(a - m) * b) A B))",
    ] {
        assert!(check_gradient(src, &inputs), "{src}");
    }
}

#[test]
fn degenerate_ifs_pad_with_zeros() {
    // At n = 0 the branches have 1 and 0 elements; the result is padded to 1.
    let src = "def f(A: [n]real, x: real) = if x > 0 then scanl + 0 (shift1L A) else A";
    let (prog, func) = load(src);
    let compiled = unfad_jit::compile(&prog.arena, &func).unwrap();
    let (out, _) = run_native(&prog.arena, &func, &compiled, &json!({"A": [], "x": -1.0}));
    assert_eq!(out, vec![vec![0.0]]);
    let (out, _) = run_native(&prog.arena, &func, &compiled, &json!({"A": [], "x": 1.0}));
    assert_eq!(out, vec![vec![0.0]]);
    check(
        src,
        &[
            json!({"A": [1.0, 2.0], "x": 1.0}),
            json!({"A": [1.0, 2.0], "x": -1.0}),
        ],
    );
}

#[test]
fn objectives_of_the_kind_benchmarks_use() {
    let lse = "def lse(v: [k]real) = let m = reduce max (0 - 1e300) v in m + log(sum(map (y. exp(y - m)) v))\n";
    let gmm = format!(
        "{lse}def f(alphas: [k]real, means: [k][d]real, ld: [k][d]real, x: [n][d]real) =
          let sld = map (l. sum(l)) ld in
          let a2 = map2 + alphas sld in
          let md = map2 (m, l. (m, l)) means ld in
          let inner = map (xi.
              lse(map2 (a, q. a - 0.5 * sum(map2 (z, l. let w = exp(l) * z in w * w)
                                             (map2 - xi (fst q)) (snd q))) a2 md)) x in
          sum(inner) - len(x) * lse(alphas)"
    );
    let inp = |k, d, n| {
        json!({"alphas": vec_of(k, 0.3), "means": mat_of(k, d, 0.5), "ld": mat_of(k, d, 0.1),
               "x": mat_of(n, d, 0.9)})
    };
    check(
        &gmm,
        &[inp(1, 1, 1), inp(3, 2, 5), inp(2, 3, 0), inp(4, 5, 7)],
    );
    check(
        &format!("{lse}def f(x: [k]real) = lse(x)"),
        &[json!({"x": [0.5, -1.25, 3, 2.5, 0]}), json!({"x": []})],
    );
    check(
        "def layer(W: [n][m]real, b: [n]real, x: [m]real): [n]real =
           map2 (row, bi. tanh(dot(row, x) + bi)) W b
         def loss(W: [n][m]real, b: [n]real, x: [m]real, t: [n]real): real =
           let h = layer(W, b, x) in
           sum(map2 (hi, ti. (hi - ti) * (hi - ti)) h t)",
        &[
            json!({"W": [[0.1, -0.2, 0.3], [0.5, 0.4, -0.6]], "b": [0.05, -0.1], "x": [1, 2, -1], "t": [0.2, -0.3]}),
        ],
    );
    check(
        "def recurrence(xs: [n]real, w: real, u: real, h0: real): real =
           let h = foldl (h, x. tanh(w * h + u * x)) h0 xs in h * h",
        &[json!({"xs": [0.5, -1, 0.25, 2, -0.75], "w": 0.9, "u": 0.6, "h0": 0.1})],
    );
}

#[test]
fn constant_conditions_and_boolean_constants() {
    let inputs = sizes_0_1_many(|n| json!({"A": vec_of(n, 0.3), "x": 0.5}));
    check(
        "def f(A: [n]real, x: real) = if 1 < 2 then map (a. a * x) A else scanl + 0 (shift1L A)",
        &inputs,
    );
    check(
        "def f(A: [n]real, x: real) = if 2 < 1 || x != x then zeros_like(A) else A",
        &inputs,
    );
    // `true` and `false` only come from the optimizer: build one by hand.
    let (mut prog, func) = load("def f(A: [n]real, x: real) = if x > 0 then A else zeros_like(A)");
    let unfad_syntax::Node::If(_, then_, else_) = prog.arena[func.body] else {
        panic!("the body is an if")
    };
    for b in [true, false] {
        let c = prog.arena.add(unfad_syntax::Node::Bool(b));
        let not_c = prog.arena.add(unfad_syntax::Node::Not(c));
        let body = prog.arena.add(unfad_syntax::Node::If(not_c, then_, else_));
        let f = unfad_syntax::Func {
            body,
            ..func.clone()
        };
        unfad_syntax::typeck::infer(&mut prog.arena, &unfad_syntax::typeck::NoSource, body)
            .unwrap();
        for input in &inputs {
            common::check_func(&prog.arena, &f, input);
        }
    }
}

#[test]
fn rows_of_joined_arrays_keep_their_own_length() {
    // At m = 0 the rows of one branch are empty and those of the other have one element.
    let src = "def f(M: [n][m]real, x: real) = \
               let R = if x > 0 then M else map (r. scanl + 0 (shift1L r)) M in \
               map (r. sum(r) + len(r)) R";
    let mut inputs = Vec::new();
    for x in [1.0, -1.0] {
        inputs.push(json!({"M": [[], []], "x": x}));
        inputs.push(json!({"M": mat_of(3, 2, 0.4), "x": x}));
    }
    check(src, &inputs);
    let sums = "def f(M: [n][m]real, x: real) = \
                let R = if x > 0 then M else map (r. scanl + 0 (shift1L r)) M in \
                map (r. sum(r)) R";
    check(sums, &inputs);
}

#[test]
fn unevaluated_maps_that_refer_to_loop_parameters() {
    let inp = |n, m| json!({"M": mat_of(n, m, 0.2), "v": vec_of(m, 1.1), "A": vec_of(n, 0.4)});
    let inputs = vec![inp(0, 0), inp(0, 2), inp(2, 0), inp(3, 4)];
    let sig = "def f(M: [n][m]real, v: [m]real, A: [n]real)";
    for body in [
        "foldl (acc, a. map (y. y * 0.5 + a) acc) v A",
        "scanl (acc, a. map (y. y * 0.5 + a) acc) v A",
        "scanr (a, acc. map2 (x, y. x * a + y) acc v) v A",
        "reduce (s, t. map2 + s t) (zeros_like(v)) (map (a. map (y. y * a) v) A)",
        "reduce (s, t. map2 + s t) (zeros_like(v)) (map2 (a, r. map2 (x, y. x * y + a) r v) A M)",
        "map (z. sum(map (s. z * s) v)) A",
        "let R = map (a. map (y. y - a) v) A in (reduce (s, t. map2 max s t) v R, map (r. sum(r)) R)",
        "shift1L (map (a. shift1R (map (y. y * a) v)) A)",
        "map2 (r, s. map2 + r s) (map (a. map (y. y * a) v) A) M",
    ] {
        check(&format!("{sig} = {body}"), &inputs);
    }
}

#[test]
fn summing_rows_needs_no_matrix_buffer() {
    // The per-point rows are made one at a time inside the reduction's loop.
    let src = "def f(X: [n][d]real, w: [d]real) = \
               reduce (s, t. map2 + s t) (zeros_like(w)) (map (x. map2 (a, b. a * b + exp(a)) x w) X)";
    let c = check(
        src,
        &[
            json!({"X": mat_of(0, 0, 0.1), "w": []}),
            json!({"X": mat_of(4, 3, 0.1), "w": vec_of(3, 0.2)}),
        ],
    );
    // The accumulator is the result's buffer, added into in place: no workspace at all,
    // nothing of size n * d.
    assert_eq!(c.workspace_len(&[1000, 3]), 0);
}

#[test]
fn accumulators_updated_in_place_agree_with_the_interpreter() {
    // Sums of arrays, nested and in tuples, keep one buffer added into in place; a fold
    // that reads its accumulator elsewhere than where it writes (`s[0]`, `s` whole) keeps
    // two. Both compute what the interpreter does.
    let inputs = [
        json!({"M": mat_of(0, 0, 0.1), "z": []}),
        json!({"M": mat_of(1, 3, 0.1), "z": vec_of(3, 0.2)}),
        json!({"M": mat_of(7, 5, 0.1), "z": vec_of(5, 0.2)}),
        json!({"M": mat_of(12, 2, 0.3), "z": vec_of(2, 0.5)}),
    ];
    for src in [
        "def f(M: [n][d]real, z: [d]real) = reduce (s, t. map2 + s t) z M",
        "def f(M: [n][d]real, z: [d]real) = \
         foldl (s, t. (map2 (a, b. a * 0.5 + b) (fst s) t, snd s + reduce + 0 t)) (z, 1) M",
        "def f(M: [n][d]real, z: [d]real) = \
         foldl (s, t. map2 (a, b. map2 + a b) s (map (x. map (y. y * x) t) t)) (map (x. z) z) M",
        "def f(M: [n][d]real, z: [d]real) = foldl (s, t. map2 (a, b. a + b * s[0]) s t) z M",
        "def f(M: [n][d]real, z: [d]real) = \
         foldl (s, t. map2 (a, b. a + b * reduce + 0 s) s t) z M",
    ] {
        check(src, &inputs);
    }
    // The sum added into the result's buffer; one buffer of d reals for a sum read
    // again; two for the fold reading `s[0]`.
    let sum = check(
        "def f(M: [n][d]real, z: [d]real) = reduce (s, t. map2 + s t) z M",
        &inputs,
    );
    let again = check(
        "def f(M: [n][d]real, z: [d]real) = \
         let s = reduce (s, t. map2 + s t) z M in map (v. v * reduce + 0 s) s",
        &inputs,
    );
    let reads = check(
        "def f(M: [n][d]real, z: [d]real) = foldl (s, t. map2 (a, b. a + b * s[0]) s t) z M",
        &inputs,
    );
    assert_eq!(sum.workspace_len(&[1000, 10]), 0);
    assert_eq!(again.workspace_len(&[1000, 10]), 10);
    assert!(reads.workspace_len(&[1000, 10]) >= 20);
}
