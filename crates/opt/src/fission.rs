//! Kernel tails split from the loops that feed them: a map whose element runs a loop and
//! then a math kernel on its result becomes a map of the loops' results, then a map of
//! the kernels.
//!
//! `map2 (row, b. tanh(reduce + 0 (map2 * row x) + b)) W b` (a layer of a perceptron)
//! computes, per element, a dot product (a loop) and then a `tanh`. The code generator
//! runs an element that contains a loop one at a time, so the `tanh` runs on one real at
//! a time, a chain of dependent operations whose latency is the element's cost; elements
//! without loops it runs two at a time, their kernels on the two lanes of a vector.
//! Here such a map becomes
//!
//! ```text
//! let d = map (row. reduce + 0 (map2 * row x)) W in
//! map2 (e, b. tanh(e + b)) d b
//! ```
//!
//! and the code generator stores `d` (one real per element, `unfad_jit`'s analysis keeps
//! such a `let` from being computed where it is read), so that the second map is light
//! and runs in pairs.
//!
//! The same holds for a dot product of a parameter's row with a vector bound outside the
//! map, wherever it is in an element that computes more (a gradient's element, which also
//! writes rows of adjoints; a loss's `max(0, dot(row, x) + c)`):
//!
//! ```text
//! map (row. let v = tanh(reduce + 0 (map2 * row x)) in (v, map (a. a * v) x)) W
//! ```
//!
//! becomes `let d = map (row. reduce + 0 (map2 * row x)) W in map2 (row, e. let v =
//! tanh(e) in (v, map (a. a * v) x)) W d` ([`split_dot`]), a map of dot products that the
//! code generator computes for four rows at a time on the host's widest vectors, where one
//! row's sum would wait on the latency of its additions.
//!
//! Exact: every element is computed by the same operations, in the same order. Only maps
//! whose element is a real (or a tuple of reals: a jvp's value and tangent) are split,
//! whose function's tail (the element's term outside its loops, after its `let`s: a `let`
//! of a loop names the loop's result, the others are part of the tail) is arithmetic,
//! indexing and projections only (no branch, no loop) and calls a kernel. The tail runs
//! over the loops' results and the map's arrays it reads (a zip of the two when it reads
//! both). The loops must read the element; the `let`s they read go with them (copied
//! when the tail reads them too), and must not read a loop's result. Runs last, on the
//! final term: the simplifier would fuse the two maps again.
//!
//! [`split_nested_dots`] takes the dot products out of the maps inside other loops'
//! functions alone, for `share`, which then computes once the maps of dot products that
//! the loops of a chain compute in bodies of their own.

use unfad_syntax::fast_hash::{FastMap as HashMap, FastSet as HashSet};
use unfad_syntax::typeck::{infer, NoSource};
use unfad_syntax::{with_stack, Arena, ExprId, Func, Node, Type, Var};

use unfad_syntax::reduction::dot_with_row;

use crate::siblings::replace;

/// Loops per element at most that one split stores the results of (each a column).
const MAX_LOOPS: usize = 4;

/// Nodes of an element's tail at most (a tail larger than this is left as it is).
const MAX_TAIL: usize = 64;

/// Split the kernel tails of `func`'s maps from their loops; `func` itself when none is.
pub fn split_kernel_tails(arena: &mut Arena, func: &Func) -> Func {
    let mut memo = HashMap::default();
    let body = walk(arena, func.body, &mut memo, &mut HashSet::default());
    Func {
        body,
        ..func.clone()
    }
}

/// The dot products of rows with vectors taken out of the maps inside the functions of
/// other loops ([`split_dot`]): `map2 (dz, row. f(dz + dot(row, z))) P Lc` becomes
/// `let d = map (row. dot(row, z)) Lc in map2 (dz, e. f(dz + e)) P d`. Run by `share`
/// before it looks for loops that two loops over the same arrays compute (a mixture's
/// primal and its adjoint each compute `L_c z` per point and component, in loops of
/// different bodies; named, it is one loop of the elements, computed once), which keeps
/// the result only if it shared something (the simplifier fuses the maps again).
pub fn split_nested_dots(arena: &mut Arena, func: &Func) -> Func {
    let mut memo = HashMap::default();
    let body = walk_nested(arena, func.body, false, &mut memo);
    Func {
        body,
        ..func.clone()
    }
}

/// [`split_nested_dots`] of `e`, `inside` a loop's function or not.
fn walk_nested(
    arena: &mut Arena,
    e: ExprId,
    inside: bool,
    memo: &mut HashMap<(ExprId, bool), ExprId>,
) -> ExprId {
    if let Some(&r) = memo.get(&(e, inside)) {
        return r;
    }
    let out = with_stack(|| {
        let node = arena[e];
        let runs = node.is_array_op();
        let new = arena.map_children(node, |a, c| {
            let inner = inside || (runs && matches!(a[c], Node::Lambda(..)));
            walk_nested(a, c, inner, memo)
        });
        let rebuilt = arena.rebuild(e, new);
        if inside {
            split_dot(arena, rebuilt).unwrap_or(rebuilt)
        } else {
            rebuilt
        }
    });
    memo.insert((e, inside), out);
    out
}

/// `e` with its maps split, innermost first (a node shared in the DAG once).
/// `made` collects the variables that bind the splits' maps of loops.
fn walk(
    arena: &mut Arena,
    e: ExprId,
    memo: &mut HashMap<ExprId, ExprId>,
    made: &mut HashSet<Var>,
) -> ExprId {
    if let Some(&r) = memo.get(&e) {
        return r;
    }
    let out = with_stack(|| {
        let node = arena[e];
        let new = arena.map_children(node, |a, c| walk(a, c, memo, made));
        let rebuilt = arena.rebuild(e, new);
        // A split bound by a `let` is unnested (`let x = (let d = .. in t) in rest` becomes
        // `let d = .. in let x = t in rest`; binders are unique): the code generator reads
        // the columns of a map bound by a `let` where they are folded.
        if let Node::Let(x, e1, rest) = arena[rebuilt] {
            if let Node::Let(d, dm, t) = arena[e1] {
                if made.contains(&d) {
                    let inner = arena.add(Node::Let(x, t, rest));
                    return arena.add(Node::Let(d, dm, inner));
                }
            }
        }
        match split(arena, rebuilt).or_else(|| split_dot(arena, rebuilt)) {
            Some(r) => {
                if let Node::Let(d, ..) = arena[r] {
                    made.insert(d);
                }
                r
            }
            None => rebuilt,
        }
    });
    memo.insert(e, out);
    out
}

/// The tail of an element: its term outside its loops, and the loops (each a scalar
/// `reduce` or `foldl`), in order of first occurrence.
struct Tail {
    loops: Vec<ExprId>,
    nodes: usize,
    kernel: bool,
}

/// Collect `e`'s tail into `t`; `None` if `e` has a node a tail may not have.
fn tail_of(arena: &Arena, e: ExprId, t: &mut Tail) -> Option<()> {
    t.nodes += 1;
    if t.nodes > MAX_TAIL {
        return None;
    }
    match arena[e] {
        Node::Reduce(..) | Node::Foldl(..) => {
            if !t.loops.contains(&e) {
                if t.loops.len() == MAX_LOOPS {
                    return None;
                }
                t.loops.push(e);
            }
            Some(())
        }
        Node::Const(_) | Node::Var(_) => Some(()),
        Node::Op1(op, x) => {
            t.kernel |= op.kernel().is_some();
            tail_of(arena, x, t)
        }
        Node::Op2(_, x, y) | Node::Index(x, y) => {
            tail_of(arena, x, t)?;
            tail_of(arena, y, t)
        }
        Node::Proj(_, x) | Node::Len(x) => tail_of(arena, x, t),
        Node::Tuple(items) => {
            for &x in arena.exprs(items) {
                tail_of(arena, x, t)?;
            }
            Some(())
        }
        _ => None,
    }
}

/// The function, its parameters and body, and the arrays of `e` if it is a map or `map2`.
fn map_parts(arena: &Arena, e: ExprId) -> Option<(ExprId, Vec<Var>, ExprId, Vec<ExprId>)> {
    let (f, arrays) = match arena[e] {
        Node::Map(f, a) => (f, vec![a]),
        Node::Map2(f, a, b) => (f, vec![a, b]),
        _ => return None,
    };
    let (params, body) = arena.lambda_parts(f)?;
    Some((f, params.to_vec(), body, arrays))
}

/// `e` with a dot product taken out of its function (see the module's documentation), if
/// `e` is a map whose element computes one of a parameter's row with a vector bound
/// outside the map, and more than that. The first such product found is taken (the others
/// stay); the element may be of any type.
fn split_dot(arena: &mut Arena, e: ExprId) -> Option<ExprId> {
    let (f, params, body, arrays) = map_parts(arena, e)?;
    if params.len() == 1 && dot_with_row(arena, params[0], body).is_some() {
        // Already a map of dot products.
        return None;
    }
    let outside = arena.free_vars(f);
    let (dot, k) = find_dot(arena, body, &params, &outside, &mut HashSet::default())?;
    let ty = arena.var_type(params[k]).cloned();
    let name = arena.var_name(params[k]).to_string();
    let row = arena.fresh_var(&name, ty);
    let row_ref = arena.var(row);
    let element = arena.subst(dot, &HashMap::from_iter([(params[k], row_ref)]));
    let fd = arena.lambda(&[row], element);
    let dots = arena.add(Node::Map(fd, arrays[k]));
    let Ok(d_ty) = infer(arena, &NoSource, dots) else {
        return None;
    };
    let d = arena.fresh_var("d", Some(d_ty));
    let dv = arena.fresh_var("e", Some(Type::Real));
    let dv_ref = arena.var(dv);
    let rest = replace(arena, body, &[dot], &[dv_ref]);
    let tails = over_params(arena, &params, &arrays, d, dv, rest)?;
    Some(arena.add(Node::Let(d, dots, tails)))
}

/// The first dot product in `e` of a row of one of `params` (its index returned) with a
/// variable of `outside` (bound outside the map), its initial value a constant or such a
/// variable. `seen` holds the nodes searched already (a node shared in the DAG once).
fn find_dot(
    arena: &Arena,
    e: ExprId,
    params: &[Var],
    outside: &[Var],
    seen: &mut HashSet<ExprId>,
) -> Option<(ExprId, usize)> {
    if !seen.insert(e) {
        return None;
    }
    with_stack(|| {
        for (k, &p) in params.iter().enumerate() {
            if let Some((x, z)) = dot_with_row(arena, p, e) {
                let z_ok = match arena[z] {
                    Node::Const(_) => true,
                    Node::Var(v) => outside.contains(&v),
                    _ => false,
                };
                if z_ok && outside.contains(&x) {
                    return Some((e, k));
                }
            }
        }
        arena
            .children(e)
            .iter()
            .find_map(|&c| find_dot(arena, c, params, outside, seen))
    })
}

/// Whether `e` is a scalar loop, a `reduce` or `foldl`, after `let`s (`let A = map2 * row
/// x in reduce + 0 A`, as the prelude's `sum` inlines).
fn is_loop(arena: &Arena, mut e: ExprId) -> bool {
    while let Node::Let(_, _, rest) = arena[e] {
        e = rest;
    }
    matches!(arena[e], Node::Reduce(..) | Node::Foldl(..))
}

/// Whether `e` has a loop (a `reduce`, `foldl`, map or scan) in it.
fn runs_loop(arena: &Arena, e: ExprId) -> bool {
    with_stack(|| match arena[e] {
        Node::Reduce(..)
        | Node::Foldl(..)
        | Node::Map(..)
        | Node::Map2(..)
        | Node::Scanl(..)
        | Node::Scanr(..) => true,
        _ => arena.children(e).iter().any(|&c| runs_loop(arena, c)),
    })
}

/// `e` split, if it is a map of the kind the module splits.
fn split(arena: &mut Arena, e: ExprId) -> Option<ExprId> {
    let (_, params, body, arrays) = map_parts(arena, e)?;
    // The element's `let`s: those binding a loop outright give the loop's result a name;
    // the others are part of the tail.
    let mut lets = Vec::new();
    let mut last = body;
    while let Node::Let(v, e1, rest) = arena[last] {
        lets.push((v, e1));
        last = rest;
    }
    let mut t = Tail {
        loops: Vec::new(),
        nodes: 0,
        kernel: false,
    };
    let mut named: Vec<(Var, usize)> = Vec::new();
    let mut light: Vec<(Var, ExprId)> = Vec::new();
    for &(v, e1) in &lets {
        if is_loop(arena, e1) {
            if t.loops.len() == MAX_LOOPS {
                return None;
            }
            named.push((v, t.loops.len()));
            t.loops.push(e1);
        } else {
            tail_of(arena, e1, &mut t)?;
            light.push((v, e1));
        }
    }
    tail_of(arena, last, &mut t)?;
    if !t.kernel || t.loops.is_empty() {
        return None;
    }
    // The element's `let`s the loops read (transitively): their copies go with the loops.
    // They must not read a loop's result (a loop after a loop), nor run a loop.
    let light_vars: Vec<Var> = light.iter().map(|&(v, _)| v).collect();
    let named_vars: Vec<Var> = named.iter().map(|&(v, _)| v).collect();
    let mut needed: Vec<Var> = light_vars
        .iter()
        .copied()
        .filter(|&v| t.loops.iter().any(|&l| arena.mentions_any(l, &[v])))
        .collect();
    for &(v, e1) in light.iter().rev() {
        if needed.contains(&v) {
            for &u in &light_vars {
                if !needed.contains(&u) && arena.mentions_any(e1, &[u]) {
                    needed.push(u);
                }
            }
        }
    }
    for &(v, e1) in &light {
        if needed.contains(&v) && (arena.mentions_any(e1, &named_vars) || runs_loop(arena, e1)) {
            return None;
        }
    }
    // Each loop computes a real from the element (a loop that reads none of the map's
    // parameters is hoisting's business).
    let mut reads_element = params.clone();
    reads_element.extend(&needed);
    for &l in &t.loops {
        if !arena.mentions_any(l, &reads_element) || arena.mentions_any(l, &named_vars) {
            return None;
        }
    }
    let Ok(Type::Array(_, elem)) = infer(arena, &NoSource, e) else {
        return None;
    };
    let reals = |t: &Type| match t {
        Type::Real => true,
        Type::Tuple(items) => items.iter().all(|i| *i == Type::Real),
        _ => false,
    };
    if !reals(&elem) {
        return None;
    }
    // The loops' results: a real each, as the map `d`'s element (a tuple of them for
    // several).
    let mut element = if t.loops.len() == 1 {
        t.loops[0]
    } else {
        arena.tuple(&t.loops)
    };
    for &(v, e1) in light.iter().rev() {
        if needed.contains(&v) {
            element = arena.add(Node::Let(v, e1, element));
        }
    }
    // Over the arrays whose elements the loops read (the tail's map checks the lengths
    // against the other's).
    let read: Vec<usize> = (0..params.len())
        .filter(|&k| arena.mentions_any(element, &[params[k]]))
        .collect();
    let loops_map = match (&arrays[..], &read[..]) {
        ([a], _) => {
            let fd = arena.lambda(&params, element);
            arena.add(Node::Map(fd, *a))
        }
        ([_, _], &[k]) => {
            let fd = arena.lambda(&[params[k]], element);
            arena.add(Node::Map(fd, arrays[k]))
        }
        ([a, b], _) => {
            let fd = arena.lambda(&params, element);
            arena.add(Node::Map2(fd, *a, *b))
        }
        _ => return None,
    };
    let Ok(d_ty) = infer(arena, &NoSource, loops_map) else {
        return None;
    };
    let Type::Array(_, d_elem) = &d_ty else {
        return None;
    };
    let d_elem = (**d_elem).clone();
    let d = arena.fresh_var("d", Some(d_ty));
    let dv = arena.fresh_var("e", Some(d_elem));
    let dv_ref = arena.var(dv);
    let reads: Vec<ExprId> = if t.loops.len() == 1 {
        vec![dv_ref]
    } else {
        (0..t.loops.len())
            .map(|i| arena.add(Node::Proj(i as u32, dv_ref)))
            .collect()
    };
    // The tail: its `let`s and its term, each loop replaced by its result.
    let named_reads: HashMap<Var, ExprId> = named.iter().map(|&(v, i)| (v, reads[i])).collect();
    let mut rest = replace(arena, last, &t.loops, &reads);
    rest = arena.subst(rest, &named_reads);
    // The tail's `let`s: those it reads, a copy with a binder of its own for one the
    // loops' map binds too (binders are unique).
    for &(v, e1) in light.iter().rev() {
        if !arena.mentions_any(rest, &[v]) {
            continue;
        }
        let e1 = replace(arena, e1, &t.loops, &reads);
        let e1 = arena.subst(e1, &named_reads);
        let v = if needed.contains(&v) {
            let ty = arena.var_type(v).cloned();
            let name = arena.var_name(v).to_string();
            let copy = arena.fresh_var(&name, ty);
            let copy_ref = arena.var(copy);
            rest = arena.subst(rest, &HashMap::from_iter([(v, copy_ref)]));
            copy
        } else {
            v
        };
        rest = arena.add(Node::Let(v, e1, rest));
    }
    let tails = over_params(arena, &params, &arrays, d, dv, rest)?;
    Some(arena.add(Node::Let(d, loops_map, tails)))
}

/// `rest` (the element's term, which reads the element `dv` of `d`) mapped over `d` and the
/// arrays of the map's parameters it still reads, in the order the parameters had (a zip
/// of both when it reads both): the map that follows the split.
fn over_params(
    arena: &mut Arena,
    params: &[Var],
    arrays: &[ExprId],
    d: Var,
    dv: Var,
    rest: ExprId,
) -> Option<ExprId> {
    // The tail runs over `d` and the arrays of the map's parameters it reads, in the order
    // the parameters had (a zip of both when it reads both).
    let used: Vec<usize> = (0..params.len())
        .filter(|&k| arena.mentions_any(rest, &[params[k]]))
        .collect();
    let d_ref = arena.var(d);
    let tails = match used[..] {
        [] => {
            let g = arena.lambda(&[dv], rest);
            arena.add(Node::Map(g, d_ref))
        }
        [k] => {
            // A binder of its own (binders are unique): the loops keep the parameter.
            let ty = arena.var_type(params[k]).cloned();
            let name = arena.var_name(params[k]).to_string();
            let p = arena.fresh_var(&name, ty);
            let p_ref = arena.var(p);
            let rest = arena.subst(rest, &HashMap::from_iter([(params[k], p_ref)]));
            let (ps, xs): (Vec<Var>, Vec<ExprId>) = if k == 0 {
                (vec![p, dv], vec![arrays[0], d_ref])
            } else {
                (vec![dv, p], vec![d_ref, arrays[k]])
            };
            let g = arena.lambda(&ps, rest);
            arena.add(Node::Map2(g, xs[0], xs[1]))
        }
        [0, 1] => {
            // Both: the tail runs over the zip of the two arrays and `d`.
            let tys: Vec<Type> = params
                .iter()
                .map(|&p| arena.var_type(p).cloned())
                .collect::<Option<_>>()?;
            let (a, b) = (
                arena.fresh_var("a", Some(tys[0].clone())),
                arena.fresh_var("b", Some(tys[1].clone())),
            );
            let (a_ref, b_ref) = (arena.var(a), arena.var(b));
            let pair = arena.tuple(&[a_ref, b_ref]);
            let zip_f = arena.lambda(&[a, b], pair);
            let zip = arena.add(Node::Map2(zip_f, arrays[0], arrays[1]));
            let p = arena.fresh_var("p", Some(Type::tuple(tys)));
            let p_ref = arena.var(p);
            let (first, second) = (
                arena.add(Node::Proj(0, p_ref)),
                arena.add(Node::Proj(1, p_ref)),
            );
            let rest = arena.subst(
                rest,
                &HashMap::from_iter([(params[0], first), (params[1], second)]),
            );
            let g = arena.lambda(&[p, dv], rest);
            arena.add(Node::Map2(g, zip, d_ref))
        }
        _ => return None,
    };
    Some(tails)
}
