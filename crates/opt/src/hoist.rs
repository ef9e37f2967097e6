//! Hoisting: work that does not change from one iteration of a loop to the next is done
//! once, before the loop.
//!
//! Every variable is bound at a loop depth: 0 outside every loop (the parameters of the
//! function), `d` for the parameters of a loop nested `d` deep and for the `let`s of its
//! body. A term's *level* is the deepest depth among its free variables. Inside a loop of
//! depth `d`, a term of level `l < d` is the same in every iteration of the loops of depths
//! `l + 1 ..= d`: it is bound to a new variable just outside the loop of depth `l + 1`, and
//! read there (loop-invariant code motion). Whole array computations move as well: the
//! mixture's `map (x. exp(x)) q` inside the map over points is computed once.
//!
//! A term can also depend on a loop's element only through an array that does not change
//! in the loop around it: `exp(qd)`, where `qd` runs over a row `snd c` of the components,
//! and the components do not depend on the point. Such a term is computed for every element
//! of its array in a loop of its own, `map (qd. exp(qd)) (snd c)`, and the loop reads that
//! array's element instead (*element precomputation*). The new array depends on `c` only,
//! so it is in turn precomputed for every component, and that array, invariant in the map
//! over points, is hoisted before it: `exp` runs K·D times instead of N·K·D. Over
//! positions (`iota`) the loop keeps the positions beside the new array when its body
//! still reads them (`map2 (j, pe. ..) (iota k) h`): an index stored in the new array's
//! tuples would hide from the code generator that it is an `iota`'s element. Positions a
//! loop's body binds (`let v = iota len(mu)`, reverse mode's scatter positions in a fold
//! over rows) stand for themselves when their length does not change in the loop, and a
//! real `let` of work on positions alone is read as its term, so that what it is part of
//! is precomputed whole. Ints are never precomputed.
//!
//! Nothing moves out of a conditional branch or a short-circuit operand (it would be
//! computed when the program does not compute it), and nothing is precomputed for a loop
//! inside one. Only terms that do work move: an operator, an array operation, an `if`; not
//! variables, projections, tuples, shifts (views) or fills. The language's operations are
//! total, so evaluating a term before a loop that runs zero times changes no result, only
//! adds the term's cost once. The memory a hoisted array takes is what the loop's
//! iterations would each have made of it.

use unfad_syntax::fast_hash::FastMap as HashMap;
use unfad_syntax::typeck::{infer, NoSource};
use unfad_syntax::{with_stack, Arena, ExprId, Func, Kids, Node, Type, Var};

/// Move loop-invariant work of `func` out of its loops; `func` itself when nothing moves.
pub fn hoist_invariants(arena: &mut Arena, func: &Func) -> Func {
    hoist(arena, func, false)
}

/// [`hoist_invariants`], and a division in a loop by a term that moves out of it becomes a
/// multiplication by that term's reciprocal, which moves instead: `(x - mu) / (2 s s)` over
/// the rows divides once per position, not once per element. A product by a reciprocal is
/// not always the quotient's nearest real (it may differ in the last bit), so this is for
/// terms that follow the smooth semantics (the optimizer's gradients), not for the primal,
/// whose values hoisting keeps bit for bit.
pub fn hoist_invariants_and_reciprocals(arena: &mut Arena, func: &Func) -> Func {
    hoist(arena, func, true)
}

fn hoist(arena: &mut Arena, func: &Func, reciprocals: bool) -> Func {
    let params = func
        .params
        .iter()
        .filter_map(|&p| Some((p, arena.var_type(p)?.clone())))
        .collect();
    let mut h = Hoister {
        arena,
        vars: HashMap::default(),
        depth: 0,
        floor: 1,
        pending: vec![Vec::new()],
        frames: Vec::new(),
        moved: 0,
        aliases: HashMap::default(),
        iotas: Default::default(),
        params,
        rows: HashMap::default(),
        reciprocals,
    };
    let (body, _) = h.walk(func.body);
    if h.moved == 0 {
        return func.clone();
    }
    Func {
        body,
        ..func.clone()
    }
}

/// Loops nested deeper than this are left as they are (levels are bits of a word).
const MAX_DEPTH: u32 = 62;

/// The loop depths a term's free variables are bound at: `plain` for ordinary variables,
/// `elem` for elements of arrays that do not change in the enclosing loop (see the module
/// docs). Bit 0 (the function's parameters) is never set: they never change.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
struct Deps {
    plain: u64,
    elem: u64,
}

impl Deps {
    fn at(depth: u32, elem: bool) -> Deps {
        let bit = if depth == 0 { 0 } else { 1u64 << depth };
        if elem {
            Deps {
                plain: 0,
                elem: bit,
            }
        } else {
            Deps {
                plain: bit,
                elem: 0,
            }
        }
    }

    fn union(self, o: Deps) -> Deps {
        Deps {
            plain: self.plain | o.plain,
            elem: self.elem | o.elem,
        }
    }

    /// The deepest depth of any of the variables (0 for none).
    fn level(self) -> u32 {
        highest(self.plain | self.elem)
    }

    /// Only the variables bound outside the loop of depth `depth`.
    fn outside(self, depth: u32) -> Deps {
        let mask = (1u64 << depth) - 1;
        Deps {
            plain: self.plain & mask,
            elem: self.elem & mask,
        }
    }
}

fn highest(bits: u64) -> u32 {
    if bits == 0 {
        0
    } else {
        63 - bits.leading_zeros()
    }
}

/// A binding to place just outside a loop.
enum Binding {
    One(Var, ExprId, Deps),
    Many(unfad_syntax::VarList, ExprId, Deps),
}

/// What a loop being walked collects: the terms to precompute for each of its elements,
/// as (the variable standing for the term's value, the term).
struct Frame {
    /// The loop's parameters that run over invariant arrays.
    elements: Vec<Var>,
    /// The loop runs at least once, whatever the sizes (see [`Hoister::alias_read`]).
    runs: bool,
    precomputed: Vec<(Var, ExprId, Deps)>,
}

struct Hoister<'a> {
    arena: &'a mut Arena,
    /// What each variable in scope depends on: the depth it is bound at, and for the
    /// element of a loop's array, also what that array depends on.
    vars: HashMap<Var, Deps>,
    /// The depth of the innermost loop around the term being walked.
    depth: u32,
    /// Terms may be placed outside loops of this depth and deeper only (a branch inside
    /// the loop of depth `d` raises it to `d + 1`).
    floor: u32,
    /// For each depth, the bindings to place just outside the loop being walked there.
    pending: Vec<Vec<Binding>>,
    /// The loops being walked, innermost last.
    frames: Vec<Frame>,
    /// Terms moved so far.
    moved: usize,
    /// Variables bound to another name for a value (see [`is_alias`]), with what they
    /// stand for, already walked.
    aliases: HashMap<Var, (ExprId, Deps)>,
    /// Variables bound to an `iota` (positions: see `rebuild_precomputed`).
    iotas: unfad_syntax::fast_hash::FastSet<Var>,
    /// The function's parameters and their declared types, whose sizes are exact.
    params: Vec<(Var, Type)>,
    /// Loop elements that are rows of a parameter, with a parameter exactly as long as
    /// each row (see [`Hoister::row_length`]).
    rows: HashMap<Var, Var>,
    /// Divisions by invariant terms become products by their reciprocals (see
    /// [`hoist_invariants_and_reciprocals`]).
    reciprocals: bool,
}

/// A variable, or a projection of one: another name for a value, which the walk
/// substitutes so that what the value depends on shows where it is read.
fn is_alias(arena: &Arena, e: ExprId) -> bool {
    match arena[e] {
        Node::Var(_) => true,
        Node::Proj(_, a) => is_alias(arena, a),
        _ => false,
    }
}

/// A variable, a constant, or reads and projections of those (`cams[o[0]]`).
fn is_read(arena: &Arena, e: ExprId) -> bool {
    match arena[e] {
        Node::Var(_) | Node::Const(_) => true,
        Node::Proj(_, a) => is_read(arena, a),
        Node::Index(a, i) => is_read(arena, a) && is_read(arena, i),
        _ => false,
    }
}

/// An array that has an element whatever the sizes: `iota k` or a literal of at least one
/// element, or a `map` over one.
fn runs_at_least_once(arena: &Arena, e: ExprId) -> bool {
    match arena[e] {
        Node::Iota(n) => matches!(arena[n], Node::Const(c) if c >= 1.0),
        Node::Array(l) => !l.is_empty(),
        Node::Map(_, a) => runs_at_least_once(arena, a),
        _ => false,
    }
}

/// The values precomputed for a loop's elements: reals, and arrays and tuples of them.
/// Not ints: index arithmetic is cheap where it is, and an int made of lengths and
/// literals (`len(A) - 1`) is an int only by its context, which a precomputed tuple of
/// positions would not give it when printed and read again.
fn precomputed_type(t: &Type) -> bool {
    matches!(t, Type::Real | Type::Array(..) | Type::Tuple(_)) && !t.has_ints()
}

/// A term that does work worth moving (see the module docs).
fn does_work(arena: &Arena, e: ExprId) -> bool {
    use unfad_syntax::UnOp;
    match arena[e] {
        Node::Op1(UnOp::Neg, a) => does_work(arena, a),
        // Comparisons and their connectives too: a condition left in the loop would keep
        // every `if` on it there.
        Node::Op1(..)
        | Node::Op2(..)
        | Node::If(..)
        | Node::Cmp(..)
        | Node::Not(_)
        | Node::And(..)
        | Node::Or(..) => true,
        node => node.is_array_op(),
    }
}

impl Hoister<'_> {
    fn walk(&mut self, e: ExprId) -> (ExprId, Deps) {
        with_stack(|| self.walk_inner(e))
    }

    /// A parameter exactly as long as each row of `a`, if `a` is a parameter whose rows
    /// are arrays: `mu: [d]real` for the rows of `X: [n][d]real`. Declared sizes are exact
    /// (the arguments bind them), so `len(x)` of a row `x` is `len(mu)`, which no loop
    /// changes: a loop over `iota len(x)` inside the loop over `X` is then invariant, and
    /// what it computes from `mu` and its positions alone is computed once (the primal's
    /// `log(sig[j])` of a Gaussian log-likelihood, as the optimizer finds it for the
    /// gradient with `len_of_known_length`).
    fn row_length(&self, a: ExprId) -> Option<Var> {
        let Node::Var(x) = self.arena[a] else {
            return None;
        };
        let (_, Type::Array(_, row)) = self.params.iter().find(|(p, _)| *p == x)? else {
            return None;
        };
        let Type::Array(size, _) = &**row else {
            return None;
        };
        self.params.iter().find_map(|(p, t)| match t {
            Type::Array(s, _) if s == size => Some(*p),
            _ => None,
        })
    }

    /// The parameter as long as `a`, if `a` is a loop element that is a row of a
    /// parameter (see [`Hoister::row_length`]).
    fn row_of(&self, a: ExprId) -> Option<Var> {
        match self.arena[a] {
            Node::Var(x) => self.rows.get(&x).copied(),
            _ => None,
        }
    }

    /// `a / b` (walked: `walked`) as `a * (1 / b)` with the reciprocal moved out of the
    /// loop or precomputed, when `b` moves and `a` does not (and the pass may change the
    /// last bits, `reciprocals`). A constant divisor stays: the code generator multiplies
    /// by its inverse where that is exact.
    fn by_reciprocal(
        &mut self,
        e: ExprId,
        node: Node,
        walked: &[(ExprId, Deps)],
        deps: Deps,
    ) -> Option<(ExprId, Deps)> {
        use unfad_syntax::BinOp;
        if !self.reciprocals || self.depth == 0 {
            return None;
        }
        let Node::Op2(BinOp::Div, _, _) = node else {
            return None;
        };
        let [(a, da), (b, db)] = walked else {
            return None;
        };
        let moves = |h: &Self, d: Deps| d.level() < h.depth || h.precomputable(d);
        if matches!(self.arena[*b], Node::Const(_)) || !moves(self, *db) || moves(self, *da) {
            return None;
        }
        let one = self.arena.add(Node::Const(1.0));
        let r = self.arena.add(Node::Op2(BinOp::Div, one, *b));
        let considered = self.consider_all(&[(*a, *da), (r, *db)], deps, true);
        self.moved += 1;
        Some(self.rebuild_with(e, Node::Op2(BinOp::Mul, *a, r), &considered))
    }

    /// The type of `e`: the one the type checker recorded, where it did (an int made of
    /// lengths and literals, `len(A) - 1`, is an int only by the context it was checked
    /// in, and inferred alone it is a real), else inferred.
    fn type_of(&mut self, e: ExprId) -> Option<Type> {
        match self.arena.type_of(e) {
            Some(t) => Some(t.clone()),
            None => infer(self.arena, &NoSource, e).ok(),
        }
    }

    fn var_deps(&self, v: Var) -> Deps {
        self.vars.get(&v).copied().unwrap_or_default()
    }

    fn walk_inner(&mut self, e: ExprId) -> (ExprId, Deps) {
        let node = self.arena[e];
        // `len(x)` of a row is the length of a parameter: the same in every iteration (see
        // `row_length`).
        if let Node::Len(a) = node {
            if let Some(p) = self.row_of(a) {
                let p = self.arena.add(Node::Var(p));
                self.moved += 1;
                return (self.arena.add(Node::Len(p)), Deps::default());
            }
        }
        match node {
            Node::Const(_) | Node::Bool(_) => (e, Deps::default()),
            Node::Var(v) => match self.aliases.get(&v) {
                Some(&(a, d)) => (a, d),
                None => (e, self.var_deps(v)),
            },
            Node::Let(x, rhs, body) => {
                let (rhs, dr) = self.walk(rhs);
                if let Node::Iota(_) = self.arena[rhs] {
                    self.iotas.insert(x);
                }
                if is_alias(self.arena, rhs)
                    || self.alias_read(rhs, dr)
                    || self.invariant_positions(rhs, dr)
                {
                    // `let q = snd c`: the body reads `snd c` (what it depends on shows).
                    self.aliases.insert(x, (rhs, dr));
                    self.moved += 1;
                    return self.walk(body);
                }
                if let Some(k) = self.hoist_target(rhs, dr) {
                    self.pending[k as usize].push(Binding::One(x, rhs, dr));
                    self.vars.insert(x, Deps::at(k - 1, false));
                    self.moved += 1;
                    return self.walk(body);
                }
                if self.precomputable_term(rhs, dr) {
                    // `let v126 = 2 * sig[j] * sig[j]` over positions: the body reads the
                    // term itself, so that what it is part of (`a / v126`) is precomputed
                    // whole where it qualifies, rather than the binding alone.
                    self.aliases.insert(x, (rhs, dr));
                    self.moved += 1;
                    return self.walk(body);
                }
                let (rhs, dr) = match self.precompute(rhs, dr) {
                    Some(v) => (v, Deps::at(self.depth, false)),
                    None => (rhs, dr),
                };
                self.vars.insert(x, self.staying(dr));
                let (body, db) = self.walk(body);
                let node_deps = dr.union(db);
                let (body, db2) = self.consider(body, db, node_deps, false);
                let out = self.arena.rebuild(e, Node::Let(x, rhs, body));
                (out, dr.union(db2))
            }
            Node::LetTuple(xs, rhs, body) => {
                let (rhs, dr) = self.walk(rhs);
                let vars: Vec<Var> = self.arena.vars_of(xs).to_vec();
                if let Node::Tuple(items) = self.arena[rhs] {
                    let items = self.arena.exprs(items).to_vec();
                    if items.len() == vars.len() && items.iter().all(|&i| is_alias(self.arena, i)) {
                        for (&x, &i) in vars.iter().zip(&items) {
                            let (i, di) = self.walk(i);
                            self.aliases.insert(x, (i, di));
                        }
                        self.moved += 1;
                        return self.walk(body);
                    }
                }
                if let Some(k) = self.hoist_target(rhs, dr) {
                    self.pending[k as usize].push(Binding::Many(xs, rhs, dr));
                    for &x in &vars {
                        self.vars.insert(x, Deps::at(k - 1, false));
                    }
                    self.moved += 1;
                    return self.walk(body);
                }
                let d = self.staying(dr);
                for &x in &vars {
                    self.vars.insert(x, d);
                }
                let (body, db) = self.walk(body);
                let node_deps = dr.union(db);
                let (body, db2) = self.consider(body, db, node_deps, false);
                let out = self.arena.rebuild(e, Node::LetTuple(xs, rhs, body));
                (out, dr.union(db2))
            }
            Node::Lambda(..) => {
                // Only loops' functions are walked (a first-order term has no other):
                // this one stays as it is, and so does everything around it.
                let d = Deps::at(self.depth, false);
                (e, d)
            }
            Node::If(..) | Node::And(..) | Node::Or(..) => self.walk_conditional(e, node),
            _ if node.is_array_op() && self.depth < MAX_DEPTH => self.walk_loop(e, node),
            _ => {
                let kids = self.arena.node_children(node);
                let walked: Vec<(ExprId, Deps)> = kids.iter().map(|&c| self.walk(c)).collect();
                let node_deps = walked
                    .iter()
                    .fold(Deps::default(), |acc, &(_, d)| acc.union(d));
                if let Some(product) = self.by_reciprocal(e, node, &walked, node_deps) {
                    return product;
                }
                let considered = self.consider_all(&walked, node_deps, does_work(self.arena, e));
                self.rebuild_with(e, node, &considered)
            }
        }
    }

    /// `e` rebuilt from `node` with its children replaced in order; and its deps.
    fn rebuild_with(&mut self, e: ExprId, node: Node, kids: &[(ExprId, Deps)]) -> (ExprId, Deps) {
        let mut next = 0;
        let new = self.arena.map_children(node, |_, old| {
            let c = kids.get(next).map_or(old, |&(c, _)| c);
            next += 1;
            c
        });
        let deps = kids
            .iter()
            .fold(Deps::default(), |acc, &(_, d)| acc.union(d));
        (self.arena.rebuild(e, new), deps)
    }

    fn consider_all(
        &mut self,
        walked: &[(ExprId, Deps)],
        parent: Deps,
        parent_works: bool,
    ) -> Vec<(ExprId, Deps)> {
        walked
            .iter()
            .map(|&(c, d)| self.consider(c, d, parent, parent_works))
            .collect()
    }

    /// Whether `let x = A[i]` may stand for its read wherever `x` is used, so that work on
    /// `x` (`sin(x[0])`, a camera's rotation) moves out of the loops `A[i]` does not change
    /// in: the read is cheap (a row is a view), but unlike the other operations it can
    /// fail, so it may move only out of loops that run at least once, where the program
    /// reads it anyway (and an index out of bounds stops it at the same read).
    ///
    /// A read at the loop's own element, where the loop runs over an array that does not
    /// change (`let s = sig[j]` over `iota len(mu)`, bound once by reverse mode's sharing
    /// of repeated reads), stands for its read too: work on it (`log(s)`) is then
    /// precomputed per element of that array, as `log(sig[j])` is.
    fn alias_read(&self, rhs: ExprId, dr: Deps) -> bool {
        if !matches!(self.arena[rhs], Node::Index(..)) || !is_read(self.arena, rhs) {
            return false;
        }
        let plain = highest(dr.plain);
        if plain >= self.depth || (dr.level() >= self.depth && highest(dr.elem) != self.depth) {
            return false;
        }
        // The loops deeper than the read's own level: frames[k] is the loop of depth k + 1.
        self.frames
            .iter()
            .skip(dr.level().min(self.depth) as usize)
            .all(|f| f.runs)
    }

    /// Whether `let v = iota k` stands for its positions wherever `v` is read: `k` does not
    /// change in the innermost loop. The positions are a view (no work, no memory), so
    /// nothing is lost by naming them again; and a loop over them then shows that it runs
    /// over an array that does not change, so that what it computes from its positions
    /// alone is precomputed outside the loop around it: a fold over the rows whose body
    /// binds `let v8 = iota len(mu)` and scatters `map (j. .. / (2 sig[j] sig[j])) v8`
    /// into its accumulator divides once per position, not once per element.
    fn invariant_positions(&self, rhs: ExprId, dr: Deps) -> bool {
        let Node::Iota(n) = self.arena[rhs] else {
            return false;
        };
        let of_param = match self.arena[n] {
            Node::Len(a) => {
                matches!(self.arena[a], Node::Var(p) if self.params.iter().any(|(q, _)| *q == p))
            }
            _ => false,
        };
        of_param && self.depth > 0 && dr.level() < self.depth
    }

    /// What a variable bound where it stays, to a term of deps `d`, depends on. Bound in
    /// a loop's body, it is new in every iteration: terms that read it stay in the loop.
    /// Bound in a conditional branch, nothing moves out of the branch anyway, and the
    /// variable depends on what its term does: the whole conditional, which binds it, may
    /// then move out of the loop (a projection whose `if sqtheta != 0` computes the
    /// rotation's sine and cosine, in a map over the two rows of a Jacobian).
    fn staying(&self, d: Deps) -> Deps {
        if self.floor > self.depth {
            d
        } else {
            Deps::at(self.depth, false)
        }
    }

    /// Where an invariant term `e` of deps `d` goes: the depth of the loop to place it
    /// just outside of, if it is invariant in the innermost loop and does work.
    fn hoist_target(&self, e: ExprId, d: Deps) -> Option<u32> {
        if self.depth == 0 || !does_work(self.arena, e) {
            return None;
        }
        let k = (d.level() + 1).max(self.floor);
        (k <= self.depth).then_some(k)
    }

    /// True if `d` makes a term worth precomputing for the elements of the innermost
    /// loop: it reads that loop's elements and nothing else bound in its body (so it can
    /// be computed where the loop's arrays are), and does not change with some loop
    /// around it (so that the array of its values moves out of that loop in the end).
    fn precomputable(&self, d: Deps) -> bool {
        let depth = self.depth;
        if depth < 2 {
            return false;
        }
        // Bits 1 ..= depth - 1: the loops around this one.
        let around = (1u64 << depth) - 2;
        let unchanged_in = !(d.plain | d.elem) & around;
        if self.floor > depth
            || d.elem & (1u64 << depth) == 0
            || d.plain & (1u64 << depth) != 0
            || unchanged_in == 0
        {
            return false;
        }
        // The innermost loop around it that the term does not change with: the array of
        // its values gets there by being precomputed for the elements of each loop in
        // between, so it may read only their elements, nothing else bound in them.
        let target = highest(unchanged_in);
        let between = around & !((2u64 << target) - 1);
        d.plain & between == 0
    }

    /// Whether [`Hoister::precompute`] would take `e` (deps `d`): it does work, reads the
    /// innermost loop's elements and nothing else that changes, and is a real (a `let` of
    /// an array or a tuple stays bound where it is: it may be read in ways a precomputed
    /// array's element is not, shifted or indexed).
    fn precomputable_term(&mut self, e: ExprId, d: Deps) -> bool {
        self.qualifies(e, d) && self.type_of(e) == Some(Type::Real)
    }

    /// Whether `e` (deps `d`) does work and reads the innermost loop's elements and nothing
    /// else that changes ([`Hoister::precomputable`]): what [`Hoister::precompute`] takes,
    /// but for its type.
    fn qualifies(&self, e: ExprId, d: Deps) -> bool {
        does_work(self.arena, e)
            && self.precomputable(d)
            && self
                .frames
                .last()
                .is_some_and(|f| self.arena.mentions_any(e, &f.elements))
    }

    /// Precompute `e` for the innermost loop's elements, if it qualifies: the variable
    /// that stands for its value in the body.
    fn precompute(&mut self, e: ExprId, d: Deps) -> Option<ExprId> {
        if !self.qualifies(e, d) {
            return None;
        }
        let frame = self.frames.last()?;
        // A term already precomputed for this loop, up to the names of its bound
        // variables (the value's loop and the adjoint's, joined, each reading `exp(q)`
        // through a map of its own), is read from the same component.
        if let Some(&(v, _, _)) = frame
            .precomputed
            .iter()
            .find(|&&(_, t, _)| crate::reuse::same(self.arena, t, e))
        {
            return Some(self.arena.var(v));
        }
        let ty = self.type_of(e)?;
        if !precomputed_type(&ty) {
            return None;
        }
        let v = self.arena.fresh_var("pre", Some(ty));
        // Read in the body as an ordinary variable of this loop: nothing around it is
        // precomputed with it.
        self.vars.insert(v, Deps::at(self.depth, false));
        self.frames.last_mut()?.precomputed.push((v, e, d));
        self.moved += 1;
        Some(self.arena.var(v))
    }

    /// A child `c` (deps `d`) of a node of deps `parent`: hoisted or precomputed when it
    /// qualifies and its parent does not move with it as a whole.
    fn consider(&mut self, c: ExprId, d: Deps, parent: Deps, parent_works: bool) -> (ExprId, Deps) {
        if self.depth == 0 {
            return (c, d);
        }
        let level = d.level();
        let parent_moves_alike = parent_works && parent.level() == level;
        if !parent_moves_alike {
            if let Some(k) = self.hoist_target(c, d) {
                let ty = self.type_of(c);
                let v = self.arena.fresh_var("h", ty);
                self.pending[k as usize].push(Binding::One(v, c, d));
                self.vars.insert(v, Deps::at(k - 1, false));
                self.moved += 1;
                return (self.arena.var(v), Deps::at(k - 1, false));
            }
        }
        let parent_precomputed = parent_works && self.precomputable(parent);
        if !parent_precomputed {
            if let Some(v) = self.precompute(c, d) {
                return (v, Deps::at(self.depth, false));
            }
        }
        (c, d)
    }

    /// `if`, `&&`, `||`: the first operand is always evaluated; the others only
    /// sometimes, so nothing moves out of them past the innermost loop around them.
    fn walk_conditional(&mut self, e: ExprId, node: Node) -> (ExprId, Deps) {
        let kids = self.arena.node_children(node);
        let mut walked = Vec::with_capacity(kids.len());
        for (i, &c) in kids.iter().enumerate() {
            if i == 0 {
                walked.push(self.walk(c));
            } else {
                let saved = self.floor;
                self.floor = self.depth + 1;
                walked.push(self.walk(c));
                self.floor = saved;
            }
        }
        let node_deps = walked
            .iter()
            .fold(Deps::default(), |acc, &(_, d)| acc.union(d));
        let works = does_work(self.arena, e);
        // Only the condition is a candidate itself.
        let first = self.consider(walked[0].0, walked[0].1, node_deps, works);
        walked[0] = first;
        self.rebuild_with(e, node, &walked)
    }

    /// A loop: its operands, then its function's body one level deeper, then the terms
    /// precomputed for its elements and the bindings hoisted to just outside it.
    fn walk_loop(&mut self, e: ExprId, node: Node) -> (ExprId, Deps) {
        let kids: Kids = self.arena.node_children(node);
        // The function is the first child of every loop node.
        let (f, operand_ids) = (kids[0], &kids[1..]);
        let Some((params, body)) = self.arena.lambda_parts(f).map(|(p, b)| (p.to_vec(), b)) else {
            return (e, Deps::at(self.depth, false));
        };
        let operands: Vec<(ExprId, Deps)> = operand_ids.iter().map(|&c| self.walk(c)).collect();
        // Which parameter runs over which operand (the index into `operands`).
        let element_of: Vec<Option<usize>> = match (node, params.len()) {
            (Node::Map(..), 1) => vec![Some(0)],
            (Node::Map2(..), 2) => vec![Some(0), Some(1)],
            (Node::Foldl(..) | Node::Scanl(..), 2) => vec![None, Some(1)],
            (Node::Scanr(..), 2) => vec![Some(1), None],
            _ => vec![None; params.len()],
        };
        let d = self.depth + 1;
        let mut elements = Vec::new();
        for (&p, which) in params.iter().zip(&element_of) {
            match which {
                Some(i) => {
                    self.vars.insert(p, operands[*i].1.union(Deps::at(d, true)));
                    elements.push(p);
                    if let Some(q) = self.row_length(operand_ids[*i]) {
                        self.rows.insert(p, q);
                    }
                }
                None => {
                    self.vars.insert(p, Deps::at(d, false));
                }
            }
        }
        self.depth = d;
        self.pending.push(Vec::new());
        let runs = element_of
            .iter()
            .flatten()
            .all(|&i| runs_at_least_once(self.arena, operand_ids[i]))
            && element_of.iter().any(Option::is_some);
        self.frames.push(Frame {
            elements,
            runs,
            precomputed: Vec::new(),
        });
        let old_body = body;
        let (body, db) = self.walk(body);
        let (body, db) = self.consider(body, db, Deps::at(d, false), false);
        let mut frame = self.frames.pop().unwrap_or(Frame {
            elements: Vec::new(),
            runs: false,
            precomputed: Vec::new(),
        });
        // A loop that does not change in the loop around it moves as a whole (or, inside
        // a branch, stays as a whole): precomputing its terms would only split it.
        let (mut body, mut db) = (body, db);
        if !frame.precomputed.is_empty() {
            let whole = frame
                .precomputed
                .iter()
                .fold(db.outside(d), |acc, &(_, _, td)| acc.union(td.outside(d)));
            let whole = operands.iter().fold(whole, |acc, &(_, od)| acc.union(od));
            if whole.level() + 1 < d {
                self.unprecompute(&mut frame, &mut body, &mut db);
            }
        }
        let bindings = self.pending.pop().unwrap_or_default();
        self.depth = d - 1;
        // A binding placed here, in the body of the loop around, may be precomputed for
        // that loop's elements in turn.
        let bindings: Vec<Binding> = bindings
            .into_iter()
            .map(|b| match b {
                Binding::One(v, rhs, dr) => match self.precompute(rhs, dr) {
                    Some(p) => Binding::One(v, p, dr.union(Deps::at(self.depth, false))),
                    None => Binding::One(v, rhs, dr),
                },
                b => b,
            })
            .collect();

        let rebuilt = if frame.precomputed.is_empty() {
            None
        } else {
            let r =
                self.rebuild_precomputed(node, &params, body, db, &operands, &element_of, &frame);
            if r.is_none() {
                self.unprecompute(&mut frame, &mut body, &mut db);
            }
            r
        };
        let (new_node, loop_deps) = if let Some(r) = rebuilt {
            r
        } else {
            let f2 = if body == old_body {
                f
            } else {
                self.arena.lambda(&params, body)
            };
            let mut all = vec![(f2, Deps::default())];
            all.extend(operands.iter().copied());
            let node_deps = operands
                .iter()
                .fold(db.outside(d), |acc, &(_, od)| acc.union(od));
            let considered = self.consider_all(&all[1..], node_deps, true);
            all.truncate(1);
            all.extend(considered);
            let (out, deps) = self.rebuild_with(e, node, &all);
            (out, deps.union(db.outside(d)))
        };
        let mut out = new_node;
        // The loop, with the bindings placed before it, changes with what their right-hand
        // sides change with: their variables read in the body stand for their own depth
        // only (a binding placed here that reads an accumulator of a loop further out keeps
        // this loop in that one).
        let mut binding_deps = Deps::default();
        for b in bindings.into_iter().rev() {
            out = match b {
                Binding::One(v, rhs, dr) => {
                    binding_deps = binding_deps.union(dr);
                    self.arena.let_(v, rhs, out)
                }
                Binding::Many(xs, rhs, dr) => {
                    binding_deps = binding_deps.union(dr);
                    self.arena.add(Node::LetTuple(xs, rhs, out))
                }
            };
        }
        (out, loop_deps.union(binding_deps).outside(d))
    }

    /// Put the terms `frame` precomputed back where they were read in `body` (of deps
    /// `db`): the loop keeps them.
    fn unprecompute(&mut self, frame: &mut Frame, body: &mut ExprId, db: &mut Deps) {
        let back: HashMap<Var, ExprId> =
            frame.precomputed.iter().map(|&(v, t, _)| (v, t)).collect();
        *body = self.arena.subst(*body, &back);
        *db = frame
            .precomputed
            .iter()
            .fold(*db, |acc, &(_, _, td)| acc.union(td));
        self.moved -= frame.precomputed.len();
        frame.precomputed.clear();
    }

    /// The loop `node` whose body reads precomputed terms: they become components of an
    /// array made over the operands they depend on, which replaces those operands.
    #[allow(clippy::too_many_arguments)]
    fn rebuild_precomputed(
        &mut self,
        node: Node,
        params: &[Var],
        body: ExprId,
        body_deps: Deps,
        operands: &[(ExprId, Deps)],
        element_of: &[Option<usize>],
        frame: &Frame,
    ) -> Option<(ExprId, Deps)> {
        let d = self.depth + 1;
        // The element parameters the precomputed terms read, in parameter order.
        let mut used: Vec<usize> = Vec::new();
        for (i, &p) in params.iter().enumerate() {
            if element_of[i].is_some()
                && frame
                    .precomputed
                    .iter()
                    .any(|&(_, t, _)| self.arena.mentions_any(t, &[p]))
            {
                used.push(i);
            }
        }
        // A loop's elements are one or two arrays' (precomputed terms read at least one).
        if !(1..=2).contains(&used.len()) {
            return None;
        }
        // A `map` over positions (`iota`) whose body still reads the position keeps them
        // as its first operand, beside the new array of the precomputed terms alone: the
        // code generator knows an `iota`'s element in bounds and its neighbours adjacent,
        // which an index stored in a tuple of the new array would hide from it.
        let first_op = operands[element_of[used[0]].unwrap_or(0)];
        let over_positions = matches!(node, Node::Map(..))
            && used.len() == 1
            && self.arena.mentions_any(body, &[params[used[0]]])
            && match self.arena[first_op.0] {
                Node::Iota(_) => true,
                Node::Var(v) => self.iotas.contains(&v),
                _ => false,
            };
        // The components of the new array's elements: the used parameters the body
        // still reads, then the precomputed terms.
        let kept: Vec<usize> = used
            .iter()
            .copied()
            .filter(|&i| !over_positions && self.arena.mentions_any(body, &[params[i]]))
            .collect();
        let mut items: Vec<ExprId> = kept.iter().map(|&i| self.arena.var(params[i])).collect();
        let mut item_types: Vec<Type> = kept
            .iter()
            .map(|&i| {
                self.arena
                    .var_type(params[i])
                    .cloned()
                    .unwrap_or(Type::Real)
            })
            .collect();
        for &(v, t, _) in &frame.precomputed {
            items.push(t);
            item_types.push(self.arena.var_type(v).cloned().unwrap_or(Type::Real));
        }
        let element = if items.len() == 1 {
            items[0]
        } else {
            self.arena.tuple(&items)
        };
        let elem_ty = Type::product(item_types);
        // The new array, over the operands of the used parameters.
        let used_params: Vec<Var> = used.iter().map(|&i| params[i]).collect();
        let lam = self.arena.lambda(&used_params, element);
        let ops: Vec<ExprId> = used
            .iter()
            .map(|&i| operands[element_of[i].unwrap_or(0)].0)
            .collect();
        let pre = match *ops.as_slice() {
            [a] => self.arena.add(Node::Map(lam, a)),
            [a, b] => self.arena.add(Node::Map2(lam, a, b)),
            _ => return None,
        };
        let mut pre_deps = frame
            .precomputed
            .iter()
            .fold(Deps::default(), |acc, &(_, _, td)| acc.union(td.outside(d)));
        for &i in &used {
            pre_deps = pre_deps.union(operands[element_of[i].unwrap_or(0)].1);
        }
        // The body reads the new element instead.
        let t = self.arena.fresh_var("pe", Some(elem_ty));
        let tv = self.arena.var(t);
        let mut subst = HashMap::default();
        let n_items = kept.len() + frame.precomputed.len();
        let component = |arena: &mut Arena, i: usize| {
            if n_items == 1 {
                tv
            } else {
                arena.proj(i as u32, tv)
            }
        };
        for (j, &i) in kept.iter().enumerate() {
            let c = component(self.arena, j);
            subst.insert(params[i], c);
        }
        for (j, &(v, _, _)) in frame.precomputed.iter().enumerate() {
            let c = component(self.arena, kept.len() + j);
            subst.insert(v, c);
        }
        let new_body = self.arena.subst(body, &subst);
        if over_positions {
            // `map2 (j, pe. body) (iota k) (map (j. terms) (iota k))`.
            let f = self.arena.lambda(&[params[used[0]], t], new_body);
            let new_ops = [first_op, (pre, pre_deps)];
            let node_deps = new_ops
                .iter()
                .fold(body_deps.outside(d), |acc, &(_, od)| acc.union(od));
            let considered = self.consider_all(&new_ops, node_deps, true);
            let [a, b] = considered.as_slice() else {
                return None;
            };
            let out = self.arena.add(Node::Map2(f, a.0, b.0));
            let deps = body_deps.outside(d).union(a.1).union(b.1);
            return Some((out, deps));
        }
        // The loop's parameters and operands, with those of the used parameters replaced
        // by the one new element and array.
        let mut new_params: Vec<Var> = Vec::new();
        let mut new_ops: Vec<(ExprId, Deps)> = Vec::new();
        let mut placed = false;
        for (i, &p) in params.iter().enumerate() {
            if used.contains(&i) {
                if !placed {
                    new_params.push(t);
                    placed = true;
                }
            } else {
                new_params.push(p);
            }
        }
        // Operands in their order; the used ones become the one new array, placed where
        // the first of them was.
        let used_ops: Vec<usize> = used.iter().filter_map(|&i| element_of[i]).collect();
        let mut placed_op = false;
        for (oi, &o) in operands.iter().enumerate() {
            if used_ops.contains(&oi) {
                if !placed_op {
                    new_ops.push((pre, pre_deps));
                    placed_op = true;
                }
            } else {
                new_ops.push(o);
            }
        }
        let f = self.arena.lambda(&new_params, new_body);
        let node_deps = new_ops
            .iter()
            .fold(body_deps.outside(d), |acc, &(_, od)| acc.union(od));
        let considered = self.consider_all(&new_ops, node_deps, true);
        let new_node = match (node, considered.as_slice()) {
            (Node::Map(..) | Node::Map2(..), [a]) => Node::Map(f, a.0),
            (Node::Map2(..), [a, b]) => Node::Map2(f, a.0, b.0),
            (Node::Foldl(..), [z, a]) => Node::Foldl(f, z.0, a.0),
            (Node::Scanl(..), [z, a]) => Node::Scanl(f, z.0, a.0),
            (Node::Scanr(..), [z, a]) => Node::Scanr(f, z.0, a.0),
            _ => node,
        };
        let out = self.arena.add(new_node);
        let deps = considered
            .iter()
            .fold(body_deps.outside(d), |acc, &(_, od)| acc.union(od));
        Some((out, deps))
    }
}
