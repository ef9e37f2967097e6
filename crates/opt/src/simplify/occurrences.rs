//! Use counts: how many times each variable of a pass's input occurs, and which
//! variables it binds (only those have known counts), in tables kept between passes.

use unfad_syntax::{Arena, ExprId, Node, Var};

/// How many times each variable occurs in the tree of `e` (a subterm shared by several
/// parents counts once per path to it), and which variables are bound in it, indexed by
/// variable; also the number of nodes of its DAG. One visit per node of the DAG.
pub(super) fn occurrences_and_binders(arena: &Arena, e: ExprId) -> Occurrences {
    thread_local! {
        /// Per-node tables (visited, paths) kept between passes, all clear between uses:
        /// clearing the nodes a pass visited costs less than zeroing a table as large as
        /// the arena every pass.
        static NODE_TABLES: std::cell::RefCell<(Vec<bool>, Vec<usize>)> =
            const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
    }
    NODE_TABLES.with_borrow_mut(|(seen, paths)| {
        if seen.len() < arena.node_count() {
            seen.resize(arena.node_count(), false);
            paths.resize(arena.node_count(), 0);
        }
        let found = count_occurrences(arena, e, seen, paths);
        for &x in &found.1 {
            seen[x.index()] = false;
            paths[x.index()] = 0;
        }
        found.0
    })
}

/// [`occurrences_and_binders`] with clear tables `seen` and `paths` as large as the arena;
/// also returns the nodes visited (whose entries it leaves set).
fn count_occurrences(
    arena: &Arena,
    e: ExprId,
    seen: &mut [bool],
    paths: &mut [usize],
) -> (Occurrences, Vec<ExprId>) {
    // Nodes in depth-first post-order: every node after its children.
    let mut order = Vec::new();
    let mut stack = vec![(e, false)];
    while let Some((x, done)) = stack.pop() {
        if done {
            order.push(x);
            continue;
        }
        if std::mem::replace(&mut seen[x.index()], true) {
            continue;
        }
        stack.push((x, true));
        arena.for_each_child(x, |c| stack.push((c, false)));
    }
    // Paths from the root to each node, parents first (saturating: only 0, 1 and "many"
    // matter, and a DAG can have exponentially many paths).
    paths[e.index()] = 1;
    let mut vars = VAR_TABLES.with_borrow_mut(Option::take).unwrap_or_default();
    vars.begin(arena.var_count());
    for &x in order.iter().rev() {
        let p = paths[x.index()];
        let node = arena[x];
        match node {
            Node::Var(v) => vars.occurs(v, p),
            Node::Let(v, ..) => vars.bind(v),
            Node::LetTuple(vs, ..) | Node::Lambda(vs, _) => {
                for &v in arena.vars_of(vs) {
                    vars.bind(v);
                }
            }
            _ => {}
        }
        arena.for_each_child(x, |c| paths[c.index()] = paths[c.index()].saturating_add(p));
    }
    let nodes = order.len();
    (Occurrences { vars, nodes }, order)
}

thread_local! {
    /// Per-variable tables kept between passes (see [`VarTables`]).
    static VAR_TABLES: std::cell::RefCell<Option<VarTables>> =
        const { std::cell::RefCell::new(None) };
}

/// Occurrence counts and binders by variable index, valid for the pass whose generation
/// they carry: a new pass starts a new generation instead of clearing tables as large as
/// the arena's variables.
#[derive(Default)]
struct VarTables {
    generation: u32,
    count: Vec<u32>,
    counted: Vec<u32>,
    bound: Vec<u32>,
}

impl VarTables {
    fn begin(&mut self, vars: usize) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // After 2^32 passes: forget every generation.
            self.counted.fill(0);
            self.bound.fill(0);
            self.generation = 1;
        }
        if self.count.len() < vars {
            self.count.resize(vars, 0);
            self.counted.resize(vars, 0);
            self.bound.resize(vars, 0);
        }
    }

    fn occurs(&mut self, v: Var, times: usize) {
        let i = v.index();
        if self.counted[i] != self.generation {
            self.counted[i] = self.generation;
            self.count[i] = 0;
        }
        let times = u32::try_from(times).unwrap_or(u32::MAX);
        self.count[i] = self.count[i].saturating_add(times);
    }

    fn bind(&mut self, v: Var) {
        self.bound[v.index()] = self.generation;
    }
}

/// What [`occurrences_and_binders`] finds: occurrence counts and binders of the input
/// term, and the number of its nodes.
pub(super) struct Occurrences {
    vars: VarTables,
    /// The number of nodes of the input (of its DAG).
    pub(super) nodes: usize,
}

impl Occurrences {
    /// Occurrences of a binder of the input; unknown (assumed many) for other variables.
    pub(super) fn uses(&self, x: Var) -> usize {
        let (t, i) = (&self.vars, x.index());
        match t.bound.get(i) {
            Some(&g) if g == t.generation => {
                if t.counted[i] == t.generation {
                    t.count[i] as usize
                } else {
                    0
                }
            }
            _ => usize::MAX,
        }
    }
}

impl Drop for Occurrences {
    fn drop(&mut self) {
        let vars = std::mem::take(&mut self.vars);
        VAR_TABLES.with_borrow_mut(|kept| *kept = Some(vars));
    }
}
