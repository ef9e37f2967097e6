//! Scans that only move elements (`scanl (acc, z. z) c A`, `scanr (z, acc. z) c A`) are
//! views of their source with a fill at one end, read in place: by loops that peel the
//! iterations at the ends, by branches elsewhere. Results are checked bit for bit against
//! the interpreter, with guard cells around every buffer, at lengths from 0 (where a pad is
//! its fill alone) to past the peeled iterations.

mod common;

use common::{check, check_gradient, vec_of};
use serde_json::{json, Value as Json};

fn inputs(max: usize) -> Vec<Json> {
    (0..=max)
        .map(|n| json!({"A": vec_of(n, 0.3), "B": vec_of(n, 1.7), "w": 0.7}))
        .collect()
}

/// The workspace of the compiled `src` at `n`, in reals.
fn workspace(src: &str, n: u64) -> usize {
    common::workspace_at(src, &[n])
}

#[test]
fn pads_written_to_memory() {
    for src in [
        // Written out, front and end, with constant and computed fills.
        "def f(A: [n]real, B: [n]real, w: real) = scanl (acc, z. z) w A",
        "def f(A: [n]real, B: [n]real, w: real) = scanr (z, acc. z) (w * 2) A",
        // Of a map, nested, and mixed.
        "def f(A: [n]real, B: [n]real, w: real) = scanl (acc, z. z) 0 (scanl (acc, z. z) w (map (a. a * w) A))",
        "def f(A: [n]real, B: [n]real, w: real) = scanr (z, acc. z) 1 (scanl (acc, z. z) w A)",
        "def f(A: [n]real, B: [n]real, w: real) = scanl (acc, z. z) 1 (scanr (z, acc. z) w (scanr (z, acc. z) 3 A))",
        // Of tuples.
        "def f(A: [n]real, B: [n]real, w: real) = scanl (acc, z. z) (w, 0) (map2 (a, b. (a, b * w)) A B)",
    ] {
        check(src, &inputs(7));
    }
}

#[test]
fn pads_read_by_maps_and_folds() {
    for src in [
        // A map over pads of equal lengths: the peeled loop, paired in the middle.
        "def f(A: [n]real, B: [n]real, w: real) = map2 + (scanl (acc, z. z) w A) (scanr (z, acc. z) 0 A)",
        "def f(A: [n]real, B: [n]real, w: real) = \
           map2 (a, b. a * b + w) (scanl (acc, z. z) 0 (scanl (acc, z. z) 0 A)) \
                                  (scanr (z, acc. z) 0 (scanr (z, acc. z) 0 B))",
        // Pads shifted back to the length of another operand.
        "def f(A: [n]real, B: [n]real, w: real) = map2 * A (shift1R (scanl (acc, z. z) w B))",
        "def f(A: [n]real, B: [n]real, w: real) = \
           map2 * (shift1L (shift1L (scanr (z, acc. z) w (scanr (z, acc. z) w B)))) A",
        // Folds read with a test per element, in order.
        "def f(A: [n]real, B: [n]real, w: real) = reduce + 0 (scanl (acc, z. z) w A)",
        "def f(A: [n]real, B: [n]real, w: real) = reduce max (-1e9) (map (a. a * a) (scanr (z, acc. z) w A))",
        "def f(A: [n]real, B: [n]real, w: real) = foldl (s, a. s * 0.5 + a) 0 (scanl (acc, z. z) w (scanr (z, acc. z) 1 A))",
        "def f(A: [n]real, B: [n]real, w: real) = scanl (s, a. s + a) 0 (scanl (acc, z. z) w A)",
        // Shifts: dropping the fill gives the source back; dropping the other end.
        "def f(A: [n]real, B: [n]real, w: real) = shift1L (scanl (acc, z. z) w A)",
        "def f(A: [n]real, B: [n]real, w: real) = shift1R (scanl (acc, z. z) w A)",
        "def f(A: [n]real, B: [n]real, w: real) = shift1L (scanr (z, acc. z) w A)",
        "def f(A: [n]real, B: [n]real, w: real) = map2 - (shift1R (scanr (z, acc. z) w A)) A",
        // Indexed, and bound and read twice.
        "def f(A: [n]real, B: [n]real, w: real) = map (i. (scanr (z, acc. z) w A)[i]) (iota (len(A) + 1))",
        "def f(A: [n]real, B: [n]real, w: real) = \
           let P = scanl (acc, z. z) w (map (a. a * w) A) in (reduce + 0 P, map (p. p * p) P)",
        // A pad chosen by a branch.
        "def f(A: [n]real, B: [n]real, w: real) = \
           reduce + 0 (if w > 0 then scanl (acc, z. z) w A else scanr (z, acc. z) w A)",
    ] {
        check(src, &inputs(7));
    }
}

/// Stencils through shifts, as a user writes them: their gradients sum pads of the
/// residuals (the adjoints of the shifts), read in place by the loop that writes the
/// gradient.
const SECOND_DIFFERENCE: &str = "def f(x: [n]real): real =
  let left = shift1R (shift1R x) in
  let middle = shift1L (shift1R x) in
  let right = shift1L (shift1L x) in
  let outer = map2 (l, r. l + r) left right in
  sum(map2 (o, c. (o - 2 * c) * (o - 2 * c)) outer middle)";

const SMOOTHING: &str = "def f(x: [n]real, y: [n]real, lam: real): real =
  let fit = sum(map2 (xi, yi. (xi - yi) * (xi - yi)) x y) in
  let diffs = map2 (next, prev. next - prev) (shift1L x) (shift1R x) in
  fit + lam * sum(map (t. t * t) diffs)";

#[test]
fn stencil_gradients_read_pads_in_place() {
    let stencil: Vec<Json> = (0..=9).map(|n| json!({"x": vec_of(n, 0.4)})).collect();
    assert!(check_gradient(SECOND_DIFFERENCE, &stencil));
    let smoothing: Vec<Json> = (0..=9)
        .map(|n| json!({"x": vec_of(n, 0.4), "y": vec_of(n, 1.1), "lam": 0.5}))
        .collect();
    assert!(check_gradient(SMOOTHING, &smoothing));
}

#[test]
fn pads_take_no_workspace() {
    // Written to the result, a pad of a map needs no buffer of its own; two nested pads,
    // stored, would take two.
    let src = "def f(A: [n]real, B: [n]real, w: real) = \
               map2 + (scanl (acc, z. z) 0 (scanl (acc, z. z) w (map (a. a * w) A))) \
                     (scanr (z, acc. z) 0 (scanr (z, acc. z) 0 A))";
    check(src, &inputs(6));
    assert_eq!(workspace(src, 1000), 0);
}

/// A pad is read in place, without its test, only by the loop peeled for it and at that
/// loop's index: a pad read inside such a loop by a nested loop's index, or at a constant
/// position, or another pad, keeps its test (these once read the element before or after
/// the buffer).
#[test]
fn pads_read_elsewhere_inside_a_peeled_loop_keep_their_test() {
    let two = |n: usize, m: usize| json!({"A": vec_of(n, 0.4), "B": vec_of(m, 0.9)});
    let primals = [
        // An inner map over another pad, at its own index, inside a map over a pad.
        "def f(A: [n]real, B: [m]real) = let M = map (p. reduce max (-1e300) \
         (map (q. p + q) (scanl (acc, z. z) 100 B))) (scanl (acc, z. z) 0 A) in \
         reduce + 0 (map2 * M M)",
        "def f(A: [n]real, B: [m]real) = let M = map (p. reduce max (-1e300) \
         (map (q. p + q) (scanr (z, acc. z) 100 B))) (scanr (z, acc. z) 0 A) in \
         reduce + 0 (map2 * M M)",
        "def f(A: [n]real, B: [m]real) = let M = map (p. reduce max (-1e300) \
         (map (q. p + q) (scanr (z, acc. z) 100 B))) (scanl (acc, z. z) 0 A) in \
         reduce + 0 (map2 * M M)",
        // The same pad, outside and inside.
        "def f(A: [n]real, B: [m]real) = let P = scanl (acc, z. z) 100 A in \
         let M = map (p. reduce max (-1e300) (map (q. p + q) P)) P in reduce + 0 (map2 * M M)",
        // The pad read at a constant position, its fill.
        "def f(A: [n]real, B: [m]real) = let P = scanl (acc, z. z) 100 A in \
         let M = map (p. p * P[0]) P in reduce + 0 (map2 * M M)",
    ];
    for src in primals {
        check(src, &[two(1, 1), two(2, 2), two(3, 1), two(5, 4)]);
    }
    // Gradients of two-dimensional stencils: pads of the rows inside a map over pads.
    let x = json!({"A": [0.5, -1.2, 0.8, 1.1], "X": [[0.3, 0.7, -0.4], [1.1, -0.6, 0.2],
        [0.9, 0.5, -1.3], [-0.2, 0.4, 0.6]]});
    for src in [
        "def f(A: [n]real, X: [n][m]real) = \
         let C = map (r. sum(map2 * (shift1L r) (shift1R r))) X in \
         sum(map2 * (shift1L C) (shift1R C)) + A[0]",
        "def f(A: [n]real, X: [n][m]real) = \
         let C = map2 (a, r. a * sum(map2 (x, y. sin(x * y)) (shift1L r) (shift1R r))) A X in \
         sum(map2 (u, v. u * v) (shift1L C) (shift1R C))",
    ] {
        assert!(check_gradient(src, std::slice::from_ref(&x)), "{src}");
    }
}

/// The stores of each loop in the IR of `src` that tests no element (a loop body in one
/// block, which branches back to itself, with no `icmp eq`), and whether it computes on
/// two lanes.
fn untested_loops(src: &str) -> Vec<(usize, bool)> {
    let (prog, func) = unfad_test_support::load(src);
    let text = unfad_jit::clif_text(&prog.arena, &func).unwrap();
    let mut loops = Vec::new();
    for block in text.split("\nblock").skip(1) {
        let name = block.split('(').next().unwrap_or_default();
        let last = block.trim_end().lines().last().unwrap_or_default();
        let back = format!("block{name}(");
        let back_edge = last.trim_start().starts_with("brif") && last.contains(&back);
        if back_edge && !block.contains("icmp eq") {
            loops.push((block.matches("store ").count(), block.contains("f64x2")));
        }
    }
    loops
}

/// Arrays of one length written by one fused loop, some of them reading pads (the shape of
/// a stencil's gradient beside another parameter's): the length of a pad is known from the
/// sizes, so it is seen to be the others' length, and the fused loop is peeled like a
/// single map's: its middle writes both arrays, reads the pads in place, without a test,
/// and pairs.
#[test]
fn fused_arrays_that_read_pads_are_peeled() {
    for src in [
        "def f(A: [n]real, B: [n]real, w: real) = \
         (map2 + (scanl (acc, z. z) 0 (shift1L A)) B, map2 * A B)",
        "def f(A: [n]real, B: [n]real, w: real) = (\
         map2 + (map2 + (scanl (acc, z. z) 0 (shift1L A)) (scanr (z, acc. z) 0 (shift1R A))) B, \
         map2 (a, b. a * b * w) A B)",
    ] {
        check(src, &inputs(9));
        assert_eq!(untested_loops(src), [(2, true)], "{src}");
        assert_eq!(workspace(src, 1000), 0);
    }
}
