//! Inlining of bindings: `let x = e1 in e2`, with `x` used once in `e2` and not inside a
//! function argument or a conditional branch, becomes `e2[e1/x]`. It saves the move of the
//! binding and gives the paper's compact forms (`map2 * (scanr * 1 (shift1L A))
//! (shift1R (scanl * 1 A))`). A cheap map (see `duplicable`) is inlined at every use,
//! where fusion keeps of it only what that use needs. The uses must be at the binding's
//! depth so that no work moves into a loop or becomes conditional; the pass runs on the
//! final first-order term, where that is exact.

use unfad_syntax::fast_hash::{FastMap as HashMap, FastSet as HashSet};

use unfad_syntax::{with_stack, Arena, ExprId, Func, Node, Var};

/// Depth changes under function arguments, branches and short-circuit operands.
fn deeper(node: Node, child_index: usize) -> bool {
    match node {
        Node::Lambda(..) => true,
        Node::If(..) | Node::And(..) | Node::Or(..) => child_index > 0,
        _ => false,
    }
}

#[derive(Default)]
struct Uses {
    count: HashMap<Var, usize>,
    /// The shallowest and the deepest use.
    use_depths: HashMap<Var, (u32, u32)>,
    bind_depth: HashMap<Var, u32>,
    /// Bindings worth computing again at each use, with their operands.
    duplicable: HashMap<Var, (Vec<Var>, bool)>,
    /// Uses as the operand of a `map`, and of a `map2` (fusion absorbs a map there).
    map_operand: HashMap<Var, usize>,
    map2_operand: HashMap<Var, usize>,
}

/// A term simple enough to recompute: an atom, a projection of one, or one operator on
/// those that is not a non-linear one (reading a stored `exp(x)` is cheaper than calling
/// `exp` again).
fn simple(arena: &Arena, e: ExprId) -> bool {
    let atom = |x: ExprId| match arena[x] {
        Node::Var(_) | Node::Const(_) => true,
        Node::Proj(_, y) => matches!(arena[y], Node::Var(_) | Node::Proj(..)),
        _ => false,
    };
    match arena[e] {
        Node::Op1(..) | Node::Op2(..) if crate::cost::has_nonlinear(arena, e) => false,
        Node::Op1(_, x) => atom(x),
        Node::Op2(_, x, y) => atom(x) && atom(y),
        _ => atom(e),
    }
}

/// A map or map2 over variables whose function returns simple items, alone or in a tuple or
/// array literal, perhaps after `let`s of simple values: `map2 (q, w. (w, fst q * w)) Q W`. Computing it again at each use costs
/// no more than reading a stored array of its results would, and lets each use fuse with
/// it and keep only the components it reads (the adjoints that share no work, built
/// together by reverse mode, separate again).
/// Returns the operands, and whether it is a `map` (which fuses into `map2` too).
fn duplicable(arena: &Arena, e: ExprId) -> Option<(Vec<Var>, bool)> {
    let (f, operands, is_map) = match arena[e] {
        Node::Map(f, a) => (f, vec![a], true),
        Node::Map2(f, a, b) => (f, vec![a, b], false),
        _ => return None,
    };
    let vars = operands
        .iter()
        .map(|&x| match arena[x] {
            Node::Var(v) => Some(v),
            _ => None,
        })
        .collect::<Option<Vec<Var>>>()?;
    let (_, mut body) = arena.lambda_parts(f)?;
    // `let`s of simple values (the components the simplifier names) are simple too.
    while let Node::Let(_, r, b) = arena[body] {
        if !simple(arena, r) {
            return None;
        }
        body = b;
    }
    simple_items(arena, body).then_some((vars, is_map))
}

/// A simple term, or a tuple or array literal of those (nested).
fn simple_items(arena: &Arena, e: ExprId) -> bool {
    match arena[e] {
        Node::Tuple(l) | Node::Array(l) => arena.exprs(l).iter().all(|&i| simple_items(arena, i)),
        _ => simple(arena, e),
    }
}

fn scan(arena: &Arena, e: ExprId, depth: u32, u: &mut Uses) {
    with_stack(|| {
        let node = arena[e];
        match node {
            Node::Var(v) => {
                *u.count.entry(v).or_insert(0) += 1;
                let d = u.use_depths.entry(v).or_insert((depth, depth));
                *d = (d.0.min(depth), d.1.max(depth));
            }
            Node::Let(x, r, b) => {
                let bind = |x: Var, r: ExprId, u: &mut Uses| {
                    u.bind_depth.insert(x, depth);
                    if let Some(d) = duplicable(arena, r) {
                        u.duplicable.insert(x, d);
                    }
                    scan(arena, r, depth, u);
                };
                bind(x, r, u);
                // let chains: iterate on the body
                let mut cur = b;
                while let Node::Let(x2, r2, b2) = arena[cur] {
                    bind(x2, r2, u);
                    cur = b2;
                }
                scan(arena, cur, depth, u);
            }
            _ => {
                let mut operand = |x: ExprId, map: bool| {
                    if let Node::Var(v) = arena[x] {
                        let t = if map {
                            &mut u.map_operand
                        } else {
                            &mut u.map2_operand
                        };
                        *t.entry(v).or_insert(0) += 1;
                    }
                };
                match node {
                    Node::Map(_, a) => operand(a, true),
                    Node::Map2(_, a, b) => {
                        operand(a, false);
                        operand(b, false);
                    }
                    _ => {}
                }
                for (i, k) in arena.node_children(node).into_iter().enumerate() {
                    scan(arena, k, depth + deeper(node, i) as u32, u);
                }
            }
        }
    })
}

/// Inline every `let` whose variable is used once, and every duplicable one, when all its
/// uses are at its depth.
pub fn inline_single_use(arena: &mut Arena, func: &Func) -> Func {
    let mut u = Uses::default();
    scan(arena, func.body, 0, &mut u);
    let get = |t: &HashMap<Var, usize>, x: &Var| t.get(x).copied().unwrap_or(0);
    // Every use of a duplicated map fuses with it.
    let fuses = |x: &Var, is_map: bool| {
        let fusing = get(&u.map_operand, x) + if is_map { get(&u.map2_operand, x) } else { 0 };
        get(&u.count, x) == fusing
    };
    let mut inline: HashSet<Var> = u
        .bind_depth
        .iter()
        .filter(|&(x, &d)| {
            let same_depth = u.use_depths.get(x) == Some(&(d, d));
            let duplicated = u.duplicable.get(x).is_some_and(|(_, m)| fuses(x, *m));
            same_depth && (get(&u.count, x) == 1 || duplicated)
        })
        .map(|(x, _)| *x)
        .collect();
    // A duplicated map keeps its operands bound: inlining them would duplicate their work.
    for (x, (operands, is_map)) in &u.duplicable {
        if inline.contains(x) && get(&u.count, x) > 1 && fuses(x, *is_map) {
            for v in operands {
                inline.remove(v);
            }
        }
    }
    if inline.is_empty() {
        return func.clone();
    }
    // A binding used once moves to its use as it is; one used several times (a duplicated
    // map) is copied at each use, so that every copy has binders of its own. Copying at a
    // single use too would copy a chain of inlined terms once per link: quadratic in a
    // long program (issue 23).
    let several: HashSet<Var> = inline
        .iter()
        .filter(|x| get(&u.count, x) > 1)
        .copied()
        .collect();
    let mut subst = HashMap::default();
    let body = rebuild(arena, func.body, &inline, &several, &mut subst);
    Func {
        body,
        ..func.clone()
    }
}

fn rebuild(
    arena: &mut Arena,
    e: ExprId,
    inline: &HashSet<Var>,
    several: &HashSet<Var>,
    subst: &mut HashMap<Var, ExprId>,
) -> ExprId {
    with_stack(|| {
        let node = arena[e];
        match node {
            // A fresh copy at each use: an inlined map has binders of its own.
            Node::Var(v) => match subst.get(&v).copied() {
                Some(r) if several.contains(&v) => arena.copy_fresh(r),
                Some(r) => r,
                None => e,
            },
            Node::Let(x, r, b) => {
                // Collect the chain so that long chains do not recurse.
                let mut chain = vec![(x, r)];
                let mut cur = b;
                while let Node::Let(x2, r2, b2) = arena[cur] {
                    chain.push((x2, r2));
                    cur = b2;
                }
                let mut kept = Vec::new();
                for (x, r) in chain {
                    let r2 = rebuild(arena, r, inline, several, subst);
                    if inline.contains(&x) {
                        subst.insert(x, r2);
                    } else {
                        kept.push((x, r2));
                    }
                }
                let mut out = rebuild(arena, cur, inline, several, subst);
                for (x, r) in kept.into_iter().rev() {
                    out = arena.add(Node::Let(x, r, out));
                }
                out
            }
            _ => {
                let new = arena.map_children(node, |a, c| rebuild(a, c, inline, several, subst));
                arena.rebuild(e, new)
            }
        }
    })
}
