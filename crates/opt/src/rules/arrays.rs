//! Array algebraic simplifications and map fusion.
//!
//! `zeros_like(A)` and `ones_like(A)` are kept symbolic so that these rules see them; a
//! rule that replaces an array operation by one of its operands first checks with the
//! exact length analysis that the operand is never longer than the result (see
//! [`crate::len`]), since `map2` stops at the shorter array.

use unfad_syntax::{with_stack, BinOp, ExprId, Node, Type, UnOp, Var};

use crate::simplify::Simplifier;

/// Parameters and body of a function argument.
fn lambda(s: &Simplifier, f: ExprId) -> Option<(Vec<Var>, ExprId)> {
    s.arena.lambda_parts(f).map(|(ps, b)| (ps.to_vec(), b))
}

/// Whether `v` occurs in `body` (binders being unique, a parameter of the function around
/// `body` is free wherever it occurs there).
fn mentions(s: &Simplifier, body: ExprId, v: Var) -> bool {
    s.arena.mentions_any(body, &[v])
}

/// `zeros_like(A)` / `ones_like(A)` of an array of reals: `(A, 0.0 or 1.0)`.
fn constant_array(s: &mut Simplifier, e: ExprId) -> Option<(ExprId, f64)> {
    let (a, c) = match s.arena[e] {
        Node::ZerosLike(a) => (a, 0.0),
        Node::OnesLike(a) => (a, 1.0),
        _ => return None,
    };
    match s.ty(a)? {
        Type::Array(_, elem) if *elem == Type::Real => Some((a, c)),
        _ => None,
    }
}

fn elem_is_real(s: &mut Simplifier, a: ExprId) -> bool {
    matches!(s.ty(a), Some(Type::Array(_, elem)) if *elem == Type::Real)
}

fn fill(s: &mut Simplifier, like: ExprId, c: f64) -> ExprId {
    s.mk(if c == 0.0 {
        Node::ZerosLike(like)
    } else {
        Node::OnesLike(like)
    })
}

fn lam(s: &mut Simplifier, params: &[Var], body: ExprId) -> ExprId {
    let l = s.arena.var_list(params);
    s.mk(Node::Lambda(l, body))
}

/// `map (x. x) A` is `A`.
pub fn map_identity(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Map(f, a) = s.arena[e] else {
        return None;
    };
    let (ps, body) = lambda(s, f)?;
    (s.arena[body] == Node::Var(ps[0])).then_some(a)
}

/// `map (x. e) (zeros_like A)` is `map (x. e[0/x]) A` (so for ones): only the length of
/// the operand matters once its elements are known.
pub fn map_constant_operand(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Map(f, a) = s.arena[e] else {
        return None;
    };
    let (a0, c) = constant_array(s, a)?;
    let (ps, body) = lambda(s, f)?;
    let k = s.constant(c);
    let body = if mentions(s, body, ps[0]) {
        s.simplify_with(body, &[(ps[0], k)])
    } else {
        body
    };
    let f = lam(s, &ps, body);
    Some(s.mk(Node::Map(f, a0)))
}

/// `map (x. 0) A` over reals is `zeros_like(A)`, and `map (x. 1) A` is `ones_like(A)`.
pub fn map_constant_body(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Map(f, a) = s.arena[e] else {
        return None;
    };
    let (_, body) = lambda(s, f)?;
    let c = match s.arena[body] {
        Node::Const(c) if c == 0.0 || c == 1.0 => c,
        _ => return None,
    };
    elem_is_real(s, a).then(|| fill(s, a, c))
}

/// Map fusion: `map (x. e1) (map2 (y1, y2. e2) A B)` is `map2 (y1, y2. let x = e2 in e1) A B`,
/// and `map (x. e1) (map (y. e2) A)` is `map (y. let x = e2 in e1) A`.
pub fn map_fusion(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Map(f, a) = s.arena[e] else {
        return None;
    };
    let (ps, e1) = lambda(s, f)?;
    let (inner_f, node) = match s.arena[a] {
        Node::Map(g, x) => (g, Node::Map(g, x)),
        Node::Map2(g, x, y) => (g, Node::Map2(g, x, y)),
        _ => return None,
    };
    let (qs, e2) = lambda(s, inner_f)?;
    let fused = s.arena.let_(ps[0], e2, e1);
    let body = s.scoped(fused);
    let g = lam(s, &qs, body);
    Some(match node {
        Node::Map(_, x) => s.mk(Node::Map(g, x)),
        Node::Map2(_, x, y) => s.mk(Node::Map2(g, x, y)),
        _ => unreachable!("matched above"),
    })
}

/// `map2 (x, y. e) A A` is `map (x. e[x/y]) A`.
pub fn map2_same_operands(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Map2(f, a, b) = s.arena[e] else {
        return None;
    };
    if a != b {
        return None;
    }
    let (ps, body) = lambda(s, f)?;
    let x = s.var(ps[0]);
    let body = s.simplify_with(body, &[(ps[1], x)]);
    let g = lam(s, &ps[..1], body);
    Some(s.mk(Node::Map(g, a)))
}

/// `map2 (x, y. e) A (zeros_like B)` specialises `y` to `0` (so for ones, either side):
/// `map2 * A (ones_like B)` becomes `map2 (x, y. x) A (ones_like B)`, then `A`.
pub fn map2_constant_operand(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Map2(f, a, b) = s.arena[e] else {
        return None;
    };
    let (ps, body) = lambda(s, f)?;
    for (i, operand) in [a, b].into_iter().enumerate() {
        if let Some((_, c)) = constant_array(s, operand) {
            if mentions(s, body, ps[i]) {
                let k = s.constant(c);
                let body = s.simplify_with(body, &[(ps[i], k)]);
                let g = lam(s, &ps, body);
                return Some(s.mk(Node::Map2(g, a, b)));
            }
        }
    }
    None
}

/// `map2 (x, y. e) A B` with `y` unused is `map (x. e) A` if `A` is never longer than `B`
/// (and symmetrically).
pub fn map2_unused_param(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Map2(f, a, b) = s.arena[e] else {
        return None;
    };
    let (ps, body) = lambda(s, f)?;
    let (uses_x, uses_y) = (mentions(s, body, ps[0]), mentions(s, body, ps[1]));
    let (keep, operand) = if !uses_y && s.not_longer(a, b) {
        (0, a)
    } else if !uses_x && s.not_longer(b, a) {
        (1, b)
    } else {
        return None;
    };
    let g = lam(s, &ps[keep..keep + 1], body);
    Some(s.mk(Node::Map(g, operand)))
}

/// `map2 (x, y. e) (map (z. e2) A) B` is `map2 (z, y. let x = e2 in e) A B` (either side).
pub fn map2_fusion(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Map2(f, a, b) = s.arena[e] else {
        return None;
    };
    let (ps, body) = lambda(s, f)?;
    for (i, operand) in [a, b].into_iter().enumerate() {
        if let Node::Map(g, inner) = s.arena[operand] {
            let (qs, e2) = lambda(s, g)?;
            let fused = s.arena.let_(ps[i], e2, body);
            let new_body = s.scoped(fused);
            let mut params = ps.clone();
            params[i] = qs[0];
            let h = lam(s, &params, new_body);
            let (na, nb) = if i == 0 { (inner, b) } else { (a, inner) };
            return Some(s.mk(Node::Map2(h, na, nb)));
        }
    }
    None
}

/// A term equal to every element of the array `a`, when all are one known value:
/// `c` for `zeros_like`/`ones_like` of reals, `e` for `map (x. e) A` with a trivial `e`
/// that does not use `x`.
fn constant_elements(s: &mut Simplifier, a: ExprId) -> Option<ExprId> {
    if let Some((_, c)) = constant_array(s, a) {
        return Some(s.constant(c));
    }
    let Node::Map(f, _) = s.arena[a] else {
        return None;
    };
    let (ps, body) = lambda(s, f)?;
    (s.is_trivial(body) && !mentions(s, body, ps[0])).then_some(body)
}

/// `reduce f z A` (or `foldl`) over an array of elements all equal to `c` is `z` when
/// `f(z, c)` is `z`: this is `reduce + 0 (zeros_like A) -> 0`, `reduce * 1 (ones_like A)
/// -> 1`, sums of arrays of zero arrays, and more.
pub fn fold_constant_array(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let (Node::Reduce(f, z, a) | Node::Foldl(f, z, a)) = s.arena[e] else {
        return None;
    };
    if !s.is_trivial(z) {
        return None;
    }
    let c = constant_elements(s, a)?;
    let (ps, body) = lambda(s, f)?;
    let step = s.simplify_with(body, &[(ps[0], z), (ps[1], c)]);
    (step == z).then_some(z)
}

/// `reduce + 0 (ones_like A)` (or of `map (x. 1) A`) is `len(A)`.
pub fn count_ones(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Reduce(f, z, a) = s.arena[e] else {
        return None;
    };
    let (a0, c) = match constant_array(s, a) {
        Some(found) => found,
        // `map (x. 1) A` over elements of any type
        None => match s.arena[a] {
            Node::Map(g, a0) => match s.arena[lambda(s, g)?.1] {
                Node::Const(c) => (a0, c),
                _ => return None,
            },
            _ => return None,
        },
    };
    let (ps, body) = lambda(s, f)?;
    let plus = matches!(s.arena[body], Node::Op2(BinOp::Add, x, y)
        if s.arena[x] == Node::Var(ps[0]) && s.arena[y] == Node::Var(ps[1]));
    (plus && c == 1.0 && s.arena.is_const(z, 0.0)).then(|| s.mk(Node::Len(a0)))
}

/// A constant made of reals and tuples only (no shape), all zeros or all ones: the value.
fn scalar_fill(s: &Simplifier, e: ExprId) -> Option<f64> {
    match s.arena[e] {
        Node::Const(c) if c == 0.0 || c == 1.0 => Some(c),
        Node::Tuple(l) => {
            let items = s.arena.exprs(l);
            let first = scalar_fill(s, items[0])?;
            items
                .iter()
                .all(|&i| scalar_fill(s, i) == Some(first))
                .then_some(first)
        }
        _ => None,
    }
}

/// `map2 (x, y. (0, 0)) A P` is `zeros_like(P)` when `(0, 0)` has the type of `P`'s
/// elements and `P` is never longer than `A` (either side; so for ones).
pub fn map2_fill_body(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Map2(f, a, b) = s.arena[e] else {
        return None;
    };
    let (_, body) = lambda(s, f)?;
    let c = scalar_fill(s, body)?;
    let t = s.ty(body)?;
    for (x, other) in [(a, b), (b, a)] {
        let elem = match s.ty(x)? {
            Type::Array(_, elem) => (*elem).clone(),
            _ => return None,
        };
        if elem == t && s.not_longer(x, other) {
            return Some(fill(s, x, c));
        }
    }
    None
}

/// `map (x. zeros_like(x)) A` is `zeros_like(A)`, and `map (x. (0, 0)) P` is
/// `zeros_like(P)` when `(0, 0)` has the type of `P`'s elements (so for ones).
pub fn map_fill_body(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Map(f, a) = s.arena[e] else {
        return None;
    };
    let (ps, body) = lambda(s, f)?;
    let x = Node::Var(*ps.first()?);
    match s.arena[body] {
        Node::ZerosLike(w) if s.arena[w] == x => Some(fill(s, a, 0.0)),
        Node::OnesLike(w) if s.arena[w] == x => Some(fill(s, a, 1.0)),
        _ => {
            let c = scalar_fill(s, body)?;
            let elem = match s.ty(a)? {
                Type::Array(_, elem) => (*elem).clone(),
                _ => return None,
            };
            (s.ty(body)? == elem).then(|| fill(s, a, c))
        }
    }
}

/// A `reduce` over tuples whose function adds componentwise is a tuple of reductions,
/// one per component (the paper's `reduce hat+ hat0 G`): each can then fuse with the map
/// that computes its component.
pub fn reduce_tuple_split(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Reduce(f, z, a) = s.arena[e] else {
        return None;
    };
    let (ps, body) = lambda(s, f)?;
    let (p, q) = (ps[0], ps[1]);
    let Node::Tuple(items) = s.arena[body] else {
        return None;
    };
    let items = s.arena.exprs(items).to_vec();
    let Some(Type::Tuple(comp_types)) = s.ty(z) else {
        return None;
    };
    let mut parts = Vec::new();
    for (i, &item) in items.iter().enumerate() {
        let ty = comp_types.get(i)?.clone();
        let x = s.fresh("x", Some(ty.clone()));
        let y = s.fresh("y", Some(ty.clone()));
        let comp = project_params(s, item, p, q, i as u32, x, y)?;
        let g = lam(s, &[x, y], comp);
        let zi = match s.arena[z] {
            Node::Tuple(l) => s.arena.exprs(l)[i],
            _ => s.mk(Node::Proj(i as u32, z)),
        };
        let elem_ty = s.ty(a).and_then(|t| match t {
            Type::Array(_, el) => Some((*el).clone()),
            _ => None,
        });
        let t = s.fresh("t", elem_ty);
        let et = s.var(t);
        let pt = s.mk(Node::Proj(i as u32, et));
        let pick = lam(s, &[t], pt);
        let column = s.mk(Node::Map(pick, a));
        let column = crate::rules::apply(s, column).unwrap_or(column);
        let r = s.mk(Node::Reduce(g, zi, column));
        parts.push(crate::rules::apply(s, r).unwrap_or(r));
    }
    Some(s.tuple(&parts))
}

/// `item` with `p.i` replaced by `x` and `q.i` by `y`; `None` if `p` or `q` is used
/// any other way (the function is then not componentwise).
fn project_params(
    s: &mut Simplifier,
    item: ExprId,
    p: Var,
    q: Var,
    i: u32,
    x: Var,
    y: Var,
) -> Option<ExprId> {
    match s.arena[item] {
        Node::Proj(j, t) if j == i && s.arena[t] == Node::Var(p) => Some(s.var(x)),
        Node::Proj(j, t) if j == i && s.arena[t] == Node::Var(q) => Some(s.var(y)),
        Node::Var(v) if v == p || v == q => None,
        node => {
            let kids = s.arena.node_children(node);
            let mut new = Vec::new();
            for k in kids {
                new.push(project_params(s, k, p, q, i, x, y)?);
            }
            let mut it = new.into_iter();
            let n = s
                .arena
                .map_children(node, |_, _| it.next().expect("one per child"));
            Some(s.mk(n))
        }
    }
}

/// `scanl f z (c_like A)` with `f(z, c) = z` for a constant `z` in {0, 1} is filled with
/// `z` (so `scanl + 0 zeros` and `scanr * 1 ones`); its shape is the scan's.
pub fn scan_constant_array(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let (f, z, a, left) = match s.arena[e] {
        Node::Scanl(f, z, a) => (f, z, a, true),
        Node::Scanr(f, z, a) => (f, z, a, false),
        _ => return None,
    };
    let (_, c) = constant_array(s, a)?;
    let zc = match s.arena[z] {
        Node::Const(k) if k == 0.0 || k == 1.0 => k,
        _ => return None,
    };
    let (ps, body) = lambda(s, f)?;
    let k = s.constant(c);
    let subs = if left {
        [(ps[0], z), (ps[1], k)]
    } else {
        [(ps[0], k), (ps[1], z)]
    };
    let step = s.simplify_with(body, &subs);
    (step == z).then(|| fill(s, e, zc))
}

/// `shift1L (zeros_like A)` is `zeros_like(shift1L A)` (so for ones and `shift1R`).
pub fn shift_constant_array(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let (a, left) = match s.arena[e] {
        Node::Shift1L(a) => (a, true),
        Node::Shift1R(a) => (a, false),
        _ => return None,
    };
    let (inner, c) = match s.arena[a] {
        Node::ZerosLike(x) => (x, 0.0),
        Node::OnesLike(x) => (x, 1.0),
        _ => return None,
    };
    let shifted = s.mk(if left {
        Node::Shift1L(inner)
    } else {
        Node::Shift1R(inner)
    });
    Some(fill(s, shifted, c))
}

/// `len(e)` of a term exactly as long as a parameter `P` is `len(P)`.
pub fn len_of_known_length(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Len(a) = s.arena[e] else {
        return None;
    };
    if matches!(s.arena[a], Node::Var(_)) {
        return None;
    }
    let p = s.array_param_of_len(a)?;
    let ep = s.var(p);
    Some(s.mk(Node::Len(ep)))
}

/// `len(zeros_like A)` is `len(A)`.
pub fn len_of_constant_array(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Len(a) = s.arena[e] else {
        return None;
    };
    match s.arena[a] {
        Node::ZerosLike(x) | Node::OnesLike(x) => Some(s.mk(Node::Len(x))),
        _ => None,
    }
}

/// `zeros_like` only needs the shape of its operand: of a parameter of the same length if
/// there is one; otherwise `zeros_like(ones_like A)` is `zeros_like(A)`, and
/// `zeros_like(map2 f A B)` over reals is `zeros_like` of the operand that is never
/// longer (so for `map` and `ones_like`).
pub fn constant_array_witness(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let (a, c) = match s.arena[e] {
        Node::ZerosLike(a) => (a, 0.0),
        Node::OnesLike(a) => (a, 1.0),
        _ => return None,
    };
    let node = s.arena[a];
    // The simplest witness of a shape is a parameter of the same exact length.
    if elem_is_real(s, a) {
        if let Some(p) = s.param_of_len(a) {
            if s.arena[a] != Node::Var(p) {
                let ep = s.var(p);
                return Some(fill(s, ep, c));
            }
        }
    }
    let witness = match node {
        Node::ZerosLike(x) | Node::OnesLike(x) => x,
        Node::Map(_, x) if elem_is_real(s, a) && elem_is_real(s, x) => x,
        Node::Map2(_, x, y) if elem_is_real(s, a) && elem_is_real(s, x) && elem_is_real(s, y) => {
            if s.not_longer(x, y) {
                x
            } else if s.not_longer(y, x) {
                y
            } else {
                return None;
            }
        }
        _ => return None,
    };
    Some(fill(s, witness, c))
}

/// `zeros_like(W)` / `ones_like(W)` of an array whose elements are not reals:
/// `(W, true for zeros)`.
fn element_fill(s: &mut Simplifier, a: ExprId) -> Option<(ExprId, bool)> {
    let (w, zero) = match s.arena[a] {
        Node::ZerosLike(w) => (w, true),
        Node::OnesLike(w) => (w, false),
        _ => return None,
    };
    match s.ty(a)? {
        Type::Array(_, elem) if *elem != Type::Real => Some((w, zero)),
        _ => None,
    }
}

/// The function argument over `W`'s elements equal to `(x. body)` applied to the fills of
/// those elements: `(w. body[zeros_like(w)/x])`.
fn over_fill(s: &mut Simplifier, x: Var, body: ExprId, zero: bool) -> (Var, ExprId) {
    let name = s.arena.var_name(x).to_string();
    let w = s.fresh(&name, s.arena.var_type(x).cloned());
    let ew = s.var(w);
    let fill = s.mk(if zero {
        Node::ZerosLike(ew)
    } else {
        Node::OnesLike(ew)
    });
    (w, s.simplify_with(body, &[(x, fill)]))
}

/// `map (x. e) (zeros_like W)` over tuples or arrays is `map (w. e[zeros_like(w)/x]) W`
/// (so for ones): the fill's elements are fills of `W`'s.
pub fn map_fill_operand(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Map(f, a) = s.arena[e] else {
        return None;
    };
    let (w, zero) = element_fill(s, a)?;
    let (ps, body) = lambda(s, f)?;
    let (q, body) = over_fill(s, *ps.first()?, body, zero);
    let g = lam(s, &[q], body);
    Some(s.mk(Node::Map(g, w)))
}

/// `map2 (x, y. e) (zeros_like W) B` over tuples or arrays is
/// `map2 (w, y. e[zeros_like(w)/x]) W B` (so for ones, either side).
pub fn map2_fill_operand(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Map2(f, a, b) = s.arena[e] else {
        return None;
    };
    let (ps, body) = lambda(s, f)?;
    if ps.len() != 2 {
        return None;
    }
    for (i, operand) in [a, b].into_iter().enumerate() {
        if let Some((w, zero)) = element_fill(s, operand) {
            let (q, body) = over_fill(s, ps[i], body, zero);
            let mut params = ps.clone();
            params[i] = q;
            let g = lam(s, &params, body);
            let (na, nb) = if i == 0 { (w, b) } else { (a, w) };
            return Some(s.mk(Node::Map2(g, na, nb)));
        }
    }
    None
}

/// `foldl (acc, x. x) z X`, the last element of `X` (or `z`): `(z, X)`.
fn last_of(s: &Simplifier, e: ExprId) -> Option<(ExprId, ExprId)> {
    let Node::Foldl(f, z, x) = s.arena[e] else {
        return None;
    };
    let (ps, body) = lambda(s, f)?;
    (s.arena[body] == Node::Var(*ps.get(1)?)).then_some((z, x))
}

/// The last element of `scanl f z A` is `foldl f z A`; of `scanr f z A`, `z`.
pub fn last_of_scan(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let (_, x) = last_of(s, e)?;
    match s.arena[x] {
        Node::Scanl(f, z, a) => Some(s.mk(Node::Foldl(f, z, a))),
        Node::Scanr(_, z, _) => Some(z),
        _ => None,
    }
}

/// The last element of `c_like(A)` over reals, with `A` never empty, is `c`.
pub fn last_of_fill(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let (_, x) = last_of(s, e)?;
    let (inner, c) = constant_array(s, x)?;
    let nonempty = s.len_of(inner)?;
    crate::len::Len::constant(1)
        .le(&nonempty)
        .then(|| s.constant(c))
}

/// A shift of `scanl (acc, x. acc) z A` or of `scanr (x, acc. acc) z A` (a scan that keeps
/// its accumulator) is `map (x. z) A` for a trivial `z`: it repeats `z`, once per element.
pub fn shift_of_constant_scan(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let (Node::Shift1L(inner) | Node::Shift1R(inner)) = s.arena[e] else {
        return None;
    };
    let (f, z, a, acc) = match s.arena[inner] {
        Node::Scanl(f, z, a) => (f, z, a, 0),
        Node::Scanr(f, z, a) => (f, z, a, 1),
        _ => return None,
    };
    let (ps, body) = lambda(s, f)?;
    if s.arena[body] != Node::Var(*ps.get(acc)?) || !s.is_trivial(z) {
        return None;
    }
    let elem = match s.ty(a)? {
        Type::Array(_, elem) => (*elem).clone(),
        _ => return None,
    };
    let x = s.fresh("x", Some(elem));
    let g = lam(s, &[x], z);
    Some(s.mk(Node::Map(g, a)))
}

/// The simplest array exactly as long as `x`: through fills, maps, shifts of scans (`n+1`
/// then `n`) and the never longer operand of a `map2`.
fn same_length(s: &Simplifier, x: ExprId) -> ExprId {
    let next = match s.arena[x] {
        Node::ZerosLike(a) | Node::OnesLike(a) | Node::Map(_, a) => Some(a),
        Node::Shift1L(i) | Node::Shift1R(i) => match s.arena[i] {
            Node::Scanl(_, _, a) | Node::Scanr(_, _, a) => Some(a),
            _ => None,
        },
        Node::Map2(_, a, b) if s.not_longer(a, b) => Some(a),
        Node::Map2(_, a, b) if s.not_longer(b, a) => Some(b),
        _ => None,
    };
    match next {
        Some(a) => with_stack(|| same_length(s, a)),
        None => x,
    }
}

/// `map (x. c) X` with `c` not using `x` only needs `X`'s length: `X` is replaced by the
/// simplest array as long (`map (x. c) (shift1R (scanl f z A))` is `map (x. c) A`).
pub fn map_constant_body_operand(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Map(f, a) = s.arena[e] else {
        return None;
    };
    let (ps, body) = lambda(s, f)?;
    if mentions(s, body, *ps.first()?) {
        return None;
    }
    let w = same_length(s, a);
    if w == a {
        return None;
    }
    let elem = match s.ty(w)? {
        Type::Array(_, elem) => (*elem).clone(),
        _ => return None,
    };
    let name = s.arena.var_name(ps[0]).to_string();
    let x = s.fresh(&name, Some(elem));
    let g = lam(s, &[x], body);
    Some(s.mk(Node::Map(g, w)))
}

/// `reduce + 0 X` with the function `(a, b. a + b)`.
fn is_sum(s: &Simplifier, f: ExprId, z: ExprId) -> bool {
    let Some((ps, body)) = lambda(s, f) else {
        return false;
    };
    s.arena.is_const(z, 0.0)
        && matches!(s.arena[body], Node::Op2(BinOp::Add, x, y)
            if s.arena[x] == Node::Var(ps[0]) && s.arena[y] == Node::Var(ps[1]))
}

/// A sum of the elements of a `map` whose body is `c * e` (or `e * c`, or `-e`) with `c`
/// not depending on the elements is `c * ` (or `-`) the sum of `e` (distributivity: the
/// sums of `c * e` over a loop become one product after it).
pub fn sum_of_scaled(s: &mut Simplifier, e: ExprId) -> Option<ExprId> {
    let Node::Reduce(f, z, a) = s.arena[e] else {
        return None;
    };
    if !is_sum(s, f, z) {
        return None;
    }
    let (g, operands) = match s.arena[a] {
        Node::Map(g, x) => (g, vec![x]),
        Node::Map2(g, x, y) => (g, vec![x, y]),
        _ => return None,
    };
    let (ps, body) = lambda(s, g)?;
    let constant = |s: &Simplifier, c: ExprId| {
        let free = s.arena.free_vars(c);
        !ps.iter().any(|p| free.contains(p))
    };
    let (factor, rest) = match s.arena[body] {
        Node::Op1(UnOp::Neg, x) => (None, x),
        Node::Op2(BinOp::Mul, c, x) if constant(s, c) => (Some(c), x),
        Node::Op2(BinOp::Mul, x, c) if constant(s, c) => (Some(c), x),
        _ => return None,
    };
    let h = lam(s, &ps, rest);
    let inner = s.mk(match operands[..] {
        [x] => Node::Map(h, x),
        [x, y] => Node::Map2(h, x, y),
        _ => return None,
    });
    let inner = crate::rules::apply(s, inner).unwrap_or(inner);
    let sum = s.mk(Node::Reduce(f, z, inner));
    let sum = crate::rules::apply(s, sum).unwrap_or(sum);
    Some(s.mk(match factor {
        Some(c) => Node::Op2(BinOp::Mul, c, sum),
        None => Node::Op1(UnOp::Neg, sum),
    }))
}
