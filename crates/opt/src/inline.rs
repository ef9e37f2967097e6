//! Inlining of single-use bindings: `let x = e1 in e2`, with `x` used once in `e2` and not
//! inside a function argument or a conditional branch, becomes `e2[e1/x]`. It saves the
//! move of the binding and gives the paper's compact forms (`map2 * (scanr * 1 (shift1L A))
//! (shift1R (scanl * 1 A))`). The use must be at the binding's depth so that no work moves
//! into a loop or becomes conditional; the pass runs on the final first-order term, where
//! that is exact.

use std::collections::HashMap;

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
    use_depth: HashMap<Var, u32>,
    bind_depth: HashMap<Var, u32>,
}

fn scan(arena: &Arena, e: ExprId, depth: u32, u: &mut Uses) {
    with_stack(|| {
        let node = arena[e];
        match node {
            Node::Var(v) => {
                *u.count.entry(v).or_insert(0) += 1;
                u.use_depth.insert(v, depth);
            }
            Node::Let(x, r, b) => {
                u.bind_depth.insert(x, depth);
                scan(arena, r, depth, u);
                // let chains: iterate on the body
                let mut cur = b;
                while let Node::Let(x2, r2, b2) = arena[cur] {
                    u.bind_depth.insert(x2, depth);
                    scan(arena, r2, depth, u);
                    cur = b2;
                }
                scan(arena, cur, depth, u);
            }
            _ => {
                for (i, k) in arena.node_children(node).into_iter().enumerate() {
                    scan(arena, k, depth + deeper(node, i) as u32, u);
                }
            }
        }
    })
}

/// Inline every `let` whose variable is used once, at the same depth.
pub fn inline_single_use(arena: &mut Arena, func: &Func) -> Func {
    let mut u = Uses::default();
    scan(arena, func.body, 0, &mut u);
    let inline: Vec<Var> = u
        .bind_depth
        .iter()
        .filter(|(x, d)| u.count.get(x) == Some(&1) && u.use_depth.get(x) == Some(d))
        .map(|(x, _)| *x)
        .collect();
    if inline.is_empty() {
        return func.clone();
    }
    let inline: std::collections::HashSet<Var> = inline.into_iter().collect();
    let mut subst = HashMap::new();
    let body = rebuild(arena, func.body, &inline, &mut subst);
    Func {
        body,
        ..func.clone()
    }
}

fn rebuild(
    arena: &mut Arena,
    e: ExprId,
    inline: &std::collections::HashSet<Var>,
    subst: &mut HashMap<Var, ExprId>,
) -> ExprId {
    with_stack(|| {
        let node = arena[e];
        match node {
            Node::Var(v) => subst.get(&v).copied().unwrap_or(e),
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
                    let r2 = rebuild(arena, r, inline, subst);
                    if inline.contains(&x) {
                        subst.insert(x, r2);
                    } else {
                        kept.push((x, r2));
                    }
                }
                let mut out = rebuild(arena, cur, inline, subst);
                for (x, r) in kept.into_iter().rev() {
                    out = arena.add(Node::Let(x, r, out));
                }
                out
            }
            _ => {
                let new = arena.map_children(node, |a, c| rebuild(a, c, inline, subst));
                arena.rebuild(e, new)
            }
        }
    })
}
