//! Static shapes and the analysis pass that runs before lowering.
//!
//! The shape of a value is its type with every array length replaced by a [`Dim`], an
//! upper bound of the run-time length that depends on the sizes only (never on data). It
//! is exact unless an `if` chooses between arrays whose structural lengths differ (which
//! happens only at degenerate sizes, through a shifted empty array); then buffers get the
//! larger length and the run-time length travels with the value.
//!
//! The same pass counts the occurrences of each variable, which the lowering uses to free
//! buffers after their last use, and decides which `let`-bound arrays may stay unevaluated
//! (fused into their single consumer).

use std::rc::Rc;
use std::sync::Arc;
use unfad_syntax::fast_hash::{FastMap as HashMap, FastSet as HashSet};

use unfad_syntax::{with_stack, Arena, BinOp, ExprId, Func, Len, Node, Type, Var};

use crate::error::{internal, unsupported, JitError, JitResult};
use crate::fault;
use crate::layout::{dim_of_size, Dim};

/// The shape of a value of ground type (or of a condition).
#[derive(Clone, PartialEq, Debug)]
pub(crate) enum SShape {
    Real,
    Bool,
    Tuple(Rc<[SShape]>),
    Arr(Rc<SArr>),
}

/// The shape of an array.
#[derive(PartialEq, Debug)]
pub(crate) struct SArr {
    /// An upper bound of the length (exact if `exact`).
    pub len: Dim,
    /// Whether the run-time length always equals `len`.
    pub exact: bool,
    pub elem: SShape,
}

impl SShape {
    pub fn arr(len: Dim, exact: bool, elem: SShape) -> SShape {
        let exact = fault::exact(exact);
        SShape::Arr(Rc::new(SArr { len, exact, elem }))
    }

    /// Whether every array in the value has an exact length (see [`SArr::exact`]).
    pub fn exact_throughout(&self) -> bool {
        match self {
            SShape::Real | SShape::Bool => true,
            SShape::Tuple(items) => items.iter().all(SShape::exact_throughout),
            SShape::Arr(a) => a.exact && a.elem.exact_throughout(),
        }
    }

    /// The shape of a parameter of type `ty` (formal sizes are exact there).
    pub fn of_type(ty: &Type, index: &dyn Fn(&str) -> Option<u32>) -> JitResult<SShape> {
        Ok(match ty {
            Type::Real | Type::Int => SShape::Real,
            Type::Bool => SShape::Bool,
            Type::Tuple(items) => SShape::Tuple(
                items
                    .iter()
                    .map(|t| SShape::of_type(t, index))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            Type::Array(n, elem) => {
                SShape::arr(dim_of_size(n, index)?, true, SShape::of_type(elem, index)?)
            }
            Type::Func(..) => {
                return unsupported(format!(
                    "a value of function type `{ty}` (the code generator takes first-order terms)"
                ))
            }
        })
    }

    /// True if an array occurs in the shape.
    pub fn has_arrays(&self) -> bool {
        match self {
            SShape::Real | SShape::Bool => false,
            SShape::Tuple(items) => items.iter().any(SShape::has_arrays),
            SShape::Arr(_) => true,
        }
    }

    /// True if every array in the shape has an exact length.
    pub fn all_exact(&self) -> bool {
        match self {
            SShape::Real | SShape::Bool => true,
            SShape::Tuple(items) => items.iter().all(SShape::all_exact),
            SShape::Arr(a) => a.exact && a.elem.all_exact(),
        }
    }

    /// The public description (for parameters and results, which have no conditions).
    pub fn public(&self) -> crate::layout::Shape {
        use crate::layout::Shape;
        match self {
            SShape::Real | SShape::Bool => Shape::Real,
            SShape::Tuple(items) => Shape::Tuple(items.iter().map(SShape::public).collect()),
            SShape::Arr(a) => Shape::Array(a.len, Box::new(a.elem.public())),
        }
    }

    /// The least shape above both (the shape of an `if`).
    pub fn join(&self, other: &SShape) -> JitResult<SShape> {
        Ok(match (self, other) {
            (SShape::Real, SShape::Real) => SShape::Real,
            (SShape::Bool, SShape::Bool) => SShape::Bool,
            (SShape::Tuple(a), SShape::Tuple(b)) if a.len() == b.len() => SShape::Tuple(
                a.iter()
                    .zip(b.iter())
                    .map(|(x, y)| x.join(y))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            (SShape::Arr(a), SShape::Arr(b)) => {
                if Rc::ptr_eq(a, b) {
                    return Ok(self.clone());
                }
                let len = a.len.max(b.len).ok_or_else(|| {
                    JitError::Type(format!(
                        "arrays of unrelated lengths {:?} and {:?} meet",
                        a.len, b.len
                    ))
                })?;
                let (len, exact) =
                    fault::join(a.len, b.len, (len, a.exact && b.exact && a.len == b.len));
                SShape::arr(len, exact, a.elem.join(&b.elem)?)
            }
            _ => return Err(JitError::Type("values of different types meet".into())),
        })
    }
}

/// What the lowering needs to know about the whole term before emitting code.
#[derive(Default)]
pub(crate) struct Analysis {
    shapes: HashMap<ExprId, SShape>,
    /// The size variable of each int parameter (the one of its name, as in `iota n`).
    int_params: HashMap<Var, u32>,
    /// The right-hand side of each `let` binding a scalar, for the lengths of `iota`.
    scalar_lets: HashMap<Var, ExprId>,
    var_shapes: HashMap<Var, SShape>,
    uses: HashMap<Var, u32>,
    pulls: HashMap<Var, u32>,
    bind_depth: HashMap<Var, u32>,
    deep: HashSet<Var>,
    /// Variables bound to a map whose elements run loops and read by one light map whose
    /// elements call a math kernel (`unfad_opt::fission`'s split): stored, so that the
    /// kernels run two elements at a time rather than in the loop's element one by one.
    stored_for_pairs: HashSet<Var>,
    /// The `iota`s laid out for the size of their type's formula where it may not be their
    /// length (an int parameter it reads is negative, and its size variable is 0): their
    /// length is checked against it at run time.
    checked_iotas: HashSet<ExprId>,
}

impl Analysis {
    /// Analyse `func`; `index` maps size variables to their positions. Only the first
    /// `own_params` parameters are the function's own: an int among the others (a value
    /// crossing from an earlier part) is not the size variable of its name. `crossing`,
    /// if not empty, gives the shapes of those others as the part that computes them has
    /// them, where their types may say less (a scan over a range that may be empty has at
    /// least one element, its type `[n]` none when `n` is 0).
    pub fn run(
        arena: &Arena,
        func: &Func,
        own_params: usize,
        crossing: &[SShape],
        index: &dyn Fn(&str) -> Option<u32>,
    ) -> JitResult<(Analysis, SShape)> {
        let mut a = Analyzer {
            arena,
            index,
            out: Analysis::default(),
        };
        for (k, &p) in func.params.iter().enumerate() {
            let ty = arena.var_type(p).ok_or_else(|| {
                JitError::Type(format!("parameter `{}` has no type", arena.var_name(p)))
            })?;
            if !ty.is_ground() {
                return unsupported(format!(
                    "parameter `{}` has type `{ty}`; parameters are reals, tuples and arrays",
                    arena.var_name(p)
                ));
            }
            let s = match k.checked_sub(own_params).and_then(|j| crossing.get(j)) {
                Some(given) => given.clone(),
                None => SShape::of_type(ty, index)?,
            };
            if *ty == Type::Int && k < own_params {
                if let Some(size) = index(arena.var_name(p)) {
                    a.out.int_params.insert(p, size);
                }
            }
            a.out.var_shapes.insert(p, s);
            a.out.bind_depth.insert(p, 0);
        }
        let result = a.visit(func.body, 0, true, true)?;
        Ok((a.out, result))
    }

    /// Whether the length of the `iota` at `e` is checked against its layout at run time
    /// (see `checked_iotas`).
    pub fn checked_iota(&self, e: ExprId) -> bool {
        self.checked_iotas.contains(&e)
    }

    /// The shape of node `e` (recorded by the pass).
    pub fn shape(&self, e: ExprId) -> JitResult<&SShape> {
        self.shapes
            .get(&e)
            .map_or_else(|| internal(format!("no shape for node {e:?}")), Ok)
    }

    /// The shape of the values `v` is bound to.
    pub fn var_shape(&self, v: Var) -> JitResult<&SShape> {
        self.var_shapes
            .get(&v)
            .map_or_else(|| internal(format!("no shape for variable {v:?}")), Ok)
    }

    /// How many times `v` occurs in the term.
    pub fn uses(&self, v: Var) -> u32 {
        self.uses.get(&v).copied().unwrap_or(0)
    }

    /// Whether the elements of the arrays bound to `v` are read more than once (an
    /// unevaluated array can be read once).
    pub fn read_twice(&self, v: Var) -> bool {
        self.pulls.get(&v).copied().unwrap_or(0) > 1
    }

    /// How many times the elements of the arrays bound to `v` are read (by loops or
    /// indexing), and whether some read is inside a loop that the binding is not.
    pub fn reads_of(&self, v: Var) -> (u32, bool) {
        (
            self.pulls.get(&v).copied().unwrap_or(0),
            self.deep.contains(&v),
        )
    }

    /// Whether the arrays bound to `v` may stay unevaluated: their elements are read at most
    /// once, outside any loop that the binding is not also inside.
    pub fn lazy_ok(&self, v: Var) -> bool {
        self.pulls.get(&v).copied().unwrap_or(0) <= 1
            && !self.deep.contains(&v)
            && !self.stored_for_pairs.contains(&v)
    }
}

/// Whether `let x = e1 in e2` is a map of dot products of rows with one vector (`e1`) read
/// by a map (`e2`), as `unfad_opt::fission` takes them out of the map's elements: stored,
/// so that one routine computes the products for the rows at once (`lower/routines.rs`).
fn dots_then_map(arena: &Arena, x: Var, e1: ExprId, e2: ExprId) -> bool {
    let Node::Map(f, _) = arena[e1] else {
        return false;
    };
    let Some(([row], body)) = arena.lambda_parts(f) else {
        return false;
    };
    unfad_syntax::reduction::dot_with_row(arena, *row, body).is_some() && maps_over(arena, e2, x)
}

/// Whether `e` is a map or `map2` with `x` among its arrays.
fn maps_over(arena: &Arena, e: ExprId, x: Var) -> bool {
    let is_x = |a: ExprId| arena[a] == Node::Var(x);
    match arena[e] {
        Node::Map(_, a) => is_x(a),
        Node::Map2(_, a, b) => is_x(a) || is_x(b),
        _ => false,
    }
}

/// Whether `let x = e1 in e2` is a map whose elements run loops (`e1`) read by a map of
/// their results whose function calls a math kernel and runs no loop (`e2`), as
/// `unfad_opt::fission` writes it.
fn split_kernel_tail(arena: &Arena, x: Var, e1: ExprId, e2: ExprId) -> bool {
    let function_of = |e: ExprId| match arena[e] {
        Node::Map(f, _) | Node::Map2(f, _, _) => Some(f),
        _ => None,
    };
    let (Some(f1), Some(f2)) = (function_of(e1), function_of(e2)) else {
        return false;
    };
    if !maps_over(arena, e2, x) {
        return false;
    }
    let mut loops = false;
    let mut kernels = false;
    let mut tail_loops = false;
    let scanned = each_node(arena, f1, &mut |n| {
        loops |= matches!(n, Node::Reduce(..) | Node::Foldl(..));
    }) && each_node(arena, f2, &mut |n| match n {
        Node::Op1(op, _) => kernels |= op.kernel().is_some(),
        Node::Reduce(..) | Node::Foldl(..) | Node::Map(..) | Node::Map2(..) => tail_loops = true,
        _ => {}
    });
    scanned && loops && kernels && !tail_loops
}

/// Nodes [`each_node`] visits at most.
const SCANNED_NODES: usize = 4096;

/// Calls `f` on each node of `e` (a node reached by two paths once per path); false if
/// `e` has more than [`SCANNED_NODES`] of them (then not all were visited).
fn each_node(arena: &Arena, e: ExprId, f: &mut impl FnMut(Node)) -> bool {
    let mut stack = vec![e];
    let mut seen = 0;
    while let Some(e) = stack.pop() {
        seen += 1;
        if seen > SCANNED_NODES {
            return false;
        }
        f(arena[e]);
        arena.for_each_child(e, |c| stack.push(c));
    }
    true
}

struct Analyzer<'a> {
    arena: &'a Arena,
    /// The position of each size variable, derived ones included (see [`derived_sizes`]).
    index: &'a dyn Fn(&str) -> Option<u32>,
    out: Analysis,
}

/// The derived sizes (`n - m + 1`, `n * m`, see [`unfad_syntax::size_expr`]) of the
/// `iota`s in `body`, each computed only from the size variables `base`: the lowering
/// takes them as size variables of their own, after `base` (the caller computes their
/// values from the others), and lays an `iota` out by its own where that is exact or
/// where no parameter's size bounds it.
pub(crate) fn derived_sizes(arena: &Arena, body: ExprId, base: &[Arc<str>]) -> Vec<Arc<str>> {
    let mut out: Vec<Arc<str>> = Vec::new();
    let mut stack = vec![body];
    let mut seen = HashSet::default();
    while let Some(e) = stack.pop() {
        if !seen.insert(e) {
            continue;
        }
        if let (Node::Iota(_), Some(Type::Array(size, _))) = (&arena[e], arena.type_of(e)) {
            if let Some(v) = size.var.as_ref().filter(|_| size.is_derived()) {
                let known =
                    unfad_syntax::size_expr::known_from(v, &|n| base.iter().any(|b| &**b == n));
                if known && !out.contains(v) {
                    out.push(v.clone());
                }
            }
        }
        arena.for_each_child(e, |c| stack.push(c));
    }
    out
}

/// The parameters and body of the function argument of an array operation.
pub(crate) fn lambda<'a>(
    arena: &'a Arena,
    f: ExprId,
    arity: usize,
    what: &str,
) -> JitResult<(&'a [Var], ExprId)> {
    match arena.lambda_parts(f) {
        Some((ps, body)) if ps.len() == arity => Ok((ps, body)),
        Some((ps, _)) => Err(JitError::Type(format!(
            "the function of `{what}` takes {} argument(s), it needs {arity}",
            ps.len()
        ))),
        None => unsupported(format!(
            "the function argument of `{what}` must be a binder `(x. e)`"
        )),
    }
}

/// The value of a condition made of constants only (the lowering folds these too, and
/// lowers only the branch taken).
fn static_cond(arena: &Arena, c: ExprId) -> Option<bool> {
    with_stack(|| match arena[c] {
        Node::Bool(b) => Some(b),
        Node::Cmp(op, x, y) => match (arena[x], arena[y]) {
            (Node::Const(a), Node::Const(b)) => Some(op.eval(a, b)),
            _ => None,
        },
        Node::Not(x) => static_cond(arena, x).map(|b| !b),
        Node::And(x, y) => match (static_cond(arena, x), static_cond(arena, y)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        Node::Or(x, y) => match (static_cond(arena, x), static_cond(arena, y)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
        _ => None,
    })
}

fn expect_arr(s: SShape, what: &str) -> JitResult<Rc<SArr>> {
    match s {
        SShape::Arr(a) => Ok(a),
        _ => Err(JitError::Type(format!(
            "the operand of `{what}` is not an array"
        ))),
    }
}

impl Analyzer<'_> {
    fn bind(&mut self, v: Var, s: SShape, depth: u32) {
        self.out.var_shapes.insert(v, s);
        self.out.bind_depth.insert(v, depth);
    }

    /// Visit `e` at lambda depth `depth`. `count` is false when re-visiting a loop body to
    /// find the shape of its accumulator; `pull` is false where a variable's elements are
    /// not read (`len`, `zeros_like`, `ones_like`).
    fn visit(&mut self, e: ExprId, depth: u32, count: bool, pull: bool) -> JitResult<SShape> {
        let s = with_stack(|| self.visit_node(e, depth, count, pull))?;
        self.out.shapes.insert(e, s.clone());
        Ok(s)
    }

    fn visit_node(&mut self, e: ExprId, depth: u32, count: bool, pull: bool) -> JitResult<SShape> {
        use Node::*;
        let arena = self.arena;
        Ok(match arena[e] {
            Const(_) => SShape::Real,
            Bool(_) => SShape::Bool,
            Var(v) => {
                let Some(s) = self.out.var_shapes.get(&v).cloned() else {
                    return unsupported(format!(
                        "the variable `{}` is not bound in the function",
                        arena.var_name(v)
                    ));
                };
                if count {
                    *self.out.uses.entry(v).or_insert(0) += 1;
                    if pull {
                        *self.out.pulls.entry(v).or_insert(0) += 1;
                    }
                    if self.out.bind_depth.get(&v) != Some(&depth) {
                        self.out.deep.insert(v);
                    }
                }
                s
            }
            Let(x, e1, e2) => {
                let s1 = self.visit(e1, depth, count, true)?;
                if s1 == SShape::Real {
                    self.out.scalar_lets.insert(x, e1);
                }
                // The map reading `x` is the body, or bound by a `let` there (the split
                // was bound by one: `unfad_opt::fission` unnests it).
                let reader = match arena[e2] {
                    Let(_, r, _) => r,
                    _ => e2,
                };
                if split_kernel_tail(arena, x, e1, reader) || dots_then_map(arena, x, e1, reader) {
                    self.out.stored_for_pairs.insert(x);
                }
                self.bind(x, s1, depth);
                self.visit(e2, depth, count, true)?
            }
            LetTuple(xs, e1, e2) => {
                let s1 = self.visit(e1, depth, count, true)?;
                let vars = arena.vars_of(xs);
                match s1 {
                    SShape::Tuple(items) if items.len() == vars.len() => {
                        for (&v, s) in vars.iter().zip(items.iter()) {
                            self.bind(v, s.clone(), depth);
                        }
                    }
                    _ => {
                        return Err(JitError::Type(
                            "a tuple pattern binds a value of another shape".into(),
                        ))
                    }
                }
                self.visit(e2, depth, count, true)?
            }
            Tuple(l) => {
                let mut items = Vec::new();
                for &i in arena.exprs(l) {
                    items.push(self.visit(i, depth, count, true)?);
                }
                SShape::Tuple(items.into())
            }
            Proj(i, x) => match self.visit(x, depth, count, true)? {
                SShape::Tuple(items) if (i as usize) < items.len() => items[i as usize].clone(),
                _ => return Err(JitError::Type(format!("projection .{i} of a non-tuple"))),
            },
            Op1(_, x) => {
                self.visit(x, depth, count, true)?;
                SShape::Real
            }
            Op2(_, x, y) => {
                self.visit(x, depth, count, true)?;
                self.visit(y, depth, count, true)?;
                SShape::Real
            }
            Cmp(_, x, y) | And(x, y) | Or(x, y) => {
                self.visit(x, depth, count, true)?;
                self.visit(y, depth, count, true)?;
                SShape::Bool
            }
            Not(x) => {
                self.visit(x, depth, count, true)?;
                SShape::Bool
            }
            If(c, x, y) => {
                self.visit(c, depth, count, true)?;
                let sx = self.visit(x, depth, count, true)?;
                let sy = self.visit(y, depth, count, true)?;
                match static_cond(arena, c) {
                    Some(true) => sx,
                    Some(false) => sy,
                    None => sx.join(&sy)?,
                }
            }
            Lambda(..) => {
                return unsupported(
                    "a function value outside the function argument of an array operation",
                )
            }
            App(..) => return unsupported("application of a function value"),
            Iota(n) => {
                self.visit(n, depth, count, true)?;
                // A constant the type checker found by cancelling a size variable
                // (`(k + 2) - k`): the value is that constant exactly (ints are exact).
                let constant = || match arena.type_of(e) {
                    Some(Type::Array(size, _)) if size.var.is_none() => {
                        Some((Dim::constant(size.offset.max(0) as u64), true))
                    }
                    _ => None,
                };
                // A size computed from others by more than a constant step (`n - m + 1`,
                // `n * m`): a size variable of its own, which the caller computes from the
                // others ([`derived_sizes`]); a size of one variable the type checker found
                // by cancelling others (`k * 2 - k`) likewise, without a variable of its
                // own. It is the length exactly when every length the formula reads is the
                // formal one and it reads no int parameter (whose size variable is `max(0,
                // value)`); else a bound, the length computed again and checked against it
                // at run time.
                let formal = || match arena.type_of(e) {
                    Some(Type::Array(size, _)) if size.var.is_some() => {
                        let dim = if size.is_derived() {
                            Dim::of_var((self.index)(size.var.as_deref()?)?).step(size.offset)
                        } else {
                            dim_of_size(size, self.index).ok()?
                        };
                        Some((dim, self.formal_lengths(n)))
                    }
                    _ => None,
                };
                let bounded = self.iota_len(n, 0);
                let mut checked = false;
                // An exact length first; then the formal size checked at run time, before a
                // looser bound: the formal size is the length the type gives, which a result
                // or a call's argument is laid out by (a result laid out by a looser bound
                // would come out longer than its value, padded).
                let found = match bounded {
                    Some((_, true)) => bounded,
                    _ => match formal() {
                        Some((dim, true)) => Some((dim, true)),
                        Some((dim, false)) => {
                            checked = true;
                            Some((dim, false))
                        }
                        _ => bounded.or_else(constant),
                    },
                };
                if checked {
                    self.out.checked_iotas.insert(e);
                }
                let Some((len, exact)) = found else {
                    return unsupported(
                        "`iota` of a length the native code cannot bound: a literal, `len(A)` \
                         or an int parameter, plus or minus a literal, or a formula of those",
                    );
                };
                SShape::arr(len, exact, SShape::Real)
            }
            Index(x, i) => {
                let sa = expect_arr(self.visit(x, depth, count, true)?, "indexing")?;
                self.visit(i, depth, count, true)?;
                sa.elem.clone()
            }
            ScatterAdd(z, i, v) => {
                let sz = self.visit(z, depth, count, true)?;
                let si = expect_arr(self.visit(i, depth, count, true)?, "scatter_add")?;
                expect_arr(self.visit(v, depth, count, true)?, "scatter_add")?;
                let positions_are_ints = match &si.elem {
                    SShape::Real => true,
                    SShape::Tuple(items) => items.iter().all(|s| *s == SShape::Real),
                    _ => false,
                };
                if !positions_are_ints {
                    return Err(JitError::Type(
                        "the positions of `scatter_add` are not ints or tuples of ints".into(),
                    ));
                }
                sz
            }
            Call(..) => return unsupported("a call of a definition (inline the program first)"),
            Derivative(..) => {
                return unsupported("a `grad` or `jvp` not expanded (expand the program first)")
            }
            Array(l) => {
                let items = arena.exprs(l);
                let mut elem: Option<SShape> = None;
                for &i in items {
                    let s = self.visit(i, depth, count, true)?;
                    elem = Some(match elem {
                        None => s,
                        Some(prev) => prev.join(&s)?,
                    });
                }
                let Some(elem) = elem else {
                    return unsupported("an empty array literal");
                };
                SShape::arr(Dim::constant(items.len() as u64), true, elem)
            }
            Len(x) => {
                let s = self.visit(x, depth, count, false)?;
                expect_arr(s, "len")?;
                SShape::Real
            }
            ZerosLike(x) | OnesLike(x) => self.visit(x, depth, count, false)?,
            Map(f, x) => {
                let sa = expect_arr(self.visit(x, depth, count, true)?, "map")?;
                let (ps, body) = lambda(arena, f, 1, "map")?;
                self.bind(ps[0], sa.elem.clone(), depth + 1);
                let sb = self.visit(body, depth + 1, count, true)?;
                SShape::arr(sa.len, sa.exact, sb)
            }
            Map2(f, x, y) => {
                let sa = expect_arr(self.visit(x, depth, count, true)?, "map2")?;
                let sb = expect_arr(self.visit(y, depth, count, true)?, "map2")?;
                let (ps, body) = lambda(arena, f, 2, "map2")?;
                self.bind(ps[0], sa.elem.clone(), depth + 1);
                self.bind(ps[1], sb.elem.clone(), depth + 1);
                let len = sa.len.min(sb.len).ok_or_else(|| {
                    JitError::Type("`map2` over arrays of unrelated sizes".into())
                })?;
                let len = fault::map2(sa.len, sb.len, len);
                let s = self.visit(body, depth + 1, count, true)?;
                SShape::arr(len, sa.exact && sb.exact, s)
            }
            Reduce(f, z, x) | Foldl(f, z, x) => {
                let what = if matches!(arena[e], Reduce(..)) {
                    "reduce"
                } else {
                    "foldl"
                };
                self.fold(f, z, x, depth, count, what, false)?.0
            }
            Scanl(f, z, x) => {
                let (acc, sa) = self.fold(f, z, x, depth, count, "scanl", false)?;
                SShape::arr(fault::scan(sa.len), sa.exact, acc)
            }
            Scanr(f, z, x) => {
                let (acc, sa) = self.fold(f, z, x, depth, count, "scanr", true)?;
                SShape::arr(fault::scan(sa.len), sa.exact, acc)
            }
            Shift1L(x) | Shift1R(x) => {
                let sa = expect_arr(self.visit(x, depth, count, true)?, "shift")?;
                SShape::arr(fault::shift(sa.len), sa.exact, sa.elem.clone())
            }
        })
    }

    /// `e` through the scalar `let`s that bind it.
    fn through_lets(&self, mut e: ExprId) -> ExprId {
        while let Node::Var(v) = self.arena[e] {
            match self.out.scalar_lets.get(&v) {
                Some(&rhs) => e = rhs,
                None => break,
            }
        }
        e
    }

    /// `y` where `a - b` is `(b + y) - b` or `(y + b) - b`: the length of a slice
    /// `x[i : i + len(w)]`, whose bounds share a term that is not a size.
    fn cancel(&self, a: ExprId, b: ExprId) -> Option<ExprId> {
        let same = |x: ExprId, y: ExprId| {
            let (x, y) = (self.through_lets(x), self.through_lets(y));
            x == y
                || matches!((&self.arena[x], &self.arena[y]), (Node::Var(u), Node::Var(w)) if u == w)
        };
        match self.arena[self.through_lets(a)] {
            Node::Op2(BinOp::Add, x, y) if same(x, b) => Some(y),
            Node::Op2(BinOp::Add, x, y) if same(y, b) => Some(x),
            _ => None,
        }
    }

    /// Whether every length the int `e` reads (through `let`s) is exactly the formal size
    /// of its array's type, and it reads no int parameter: then the type checker's formula
    /// for `e` is its value. A length that saturates at small sizes (`len(shift1L x)`,
    /// `max(n - 1, 0)`, is not `n - 1` at `n = 0`) is not its formal size there.
    fn formal_lengths(&self, e: ExprId) -> bool {
        match self.arena[e] {
            Node::Len(a) => match (self.out.shapes.get(&a), self.arena.type_of(a)) {
                (Some(SShape::Arr(sa)), Some(Type::Array(size, _))) => {
                    let linear = sa.len.var.is_none() || (sa.len.offset >= 0 && sa.len.floor == 0);
                    linear && sa.exact && dim_of_size(size, self.index).is_ok_and(|d| d == sa.len)
                }
                _ => false,
            },
            Node::Const(_) => true,
            Node::Var(v) => match self.out.scalar_lets.get(&v) {
                Some(&rhs) => self.formal_lengths(rhs),
                None => !self.out.int_params.contains_key(&v),
            },
            Node::Op1(_, a) => self.formal_lengths(a),
            Node::Op2(_, a, b) => self.formal_lengths(a) && self.formal_lengths(b),
            _ => false,
        }
    }

    /// Whether the int `e` is never negative: a length, a non-negative literal, or sums,
    /// products and quotients of those.
    fn nonnegative(&self, e: ExprId) -> bool {
        match self.arena[e] {
            Node::Len(_) => true,
            Node::Const(c) => c >= 0.0,
            Node::Var(v) => self
                .out
                .scalar_lets
                .get(&v)
                .is_some_and(|&rhs| self.nonnegative(rhs)),
            Node::Op2(BinOp::Add | BinOp::Mul | BinOp::IntDiv | BinOp::Max, a, b) => {
                self.nonnegative(a) && self.nonnegative(b)
            }
            _ => false,
        }
    }

    /// The length of `iota (n + k)`, `max(0, n + k)`, as a function of the sizes, and
    /// whether it is exactly that (else an upper bound), where `n` (already visited) is a
    /// size as the type checker knows them: a whole-number literal, `len(A)`, an int
    /// parameter or a `let` of one of those, plus or minus literals. `None` otherwise.
    fn iota_len(&self, n: ExprId, k: i64) -> Option<(Dim, bool)> {
        let arena = self.arena;
        let literal = |c: f64| {
            (c.fract() == 0.0 && c.abs() <= unfad_syntax::typeck::INT_LIMIT).then_some(c as i64)
        };
        match arena[n] {
            Node::Const(c) => {
                let v = literal(c)?.checked_add(k)?;
                Some((Dim::constant(v.max(0) as u64), true))
            }
            // The sum of two lengths one of which is a constant (`concat` of a `[n]` and
            // a `[3]` array): the other stepped by it. Lengths are never negative, so the
            // sum is exact when both are.
            Node::Op2(BinOp::Add, a, b)
                if k == 0 && !matches!(arena[b], Node::Const(_) | Node::Var(_)) =>
            {
                let (la, ea) = self.iota_len(a, 0)?;
                let (lb, eb) = self.iota_len(b, 0)?;
                let (c, other) = match (la.as_constant(), lb.as_constant()) {
                    (Some(c), _) => (c, lb),
                    (_, Some(c)) => (c, la),
                    _ => return None,
                };
                Some((other.step(c as i64), ea && eb))
            }
            Node::Op2(op @ (BinOp::Add | BinOp::Sub), a, b) => {
                if op == BinOp::Sub {
                    if let Some(y) = self.cancel(a, b) {
                        return self.iota_len(y, k);
                    }
                }
                // A literal, or a `let` of one (a slice's lower bound).
                let mut b = b;
                while let Node::Var(v) = arena[b] {
                    b = *self.out.scalar_lets.get(&v)?;
                }
                let c = match arena[b] {
                    Node::Const(c) => literal(c)?,
                    // `a - b + k` for a `b` never negative (a convolution's `len(x) -
                    // len(w) + 1`): at most `a + k`, the exact length computed at run time.
                    _ if op == BinOp::Sub && self.nonnegative(b) => {
                        let (len, _) = self.iota_len(a, k)?;
                        return Some((len, false));
                    }
                    _ => return None,
                };
                let c = if op == BinOp::Add {
                    c
                } else {
                    c.checked_neg()?
                };
                self.iota_len(a, k.checked_add(c)?)
            }
            // `div(a, b) + k` for `b >= 0` (else it divides by zero) and `a % b + k`: at
            // most `max(a, 0) + k`, as `|div(a, b)| <= |a|` with the sign of `a * b`, and
            // `a % b` has the sign of `a` and is no larger.
            Node::Op2(op @ (BinOp::IntDiv | BinOp::Rem), a, b)
                if op == BinOp::Rem || self.nonnegative(b) =>
            {
                let (len, _) = self.iota_len(a, 0)?;
                Some((len.step(k), false))
            }
            // `min(a, b) + k`: at most either.
            Node::Op2(BinOp::Min, a, b) => {
                let (len, _) = self.iota_len(a, k).or_else(|| self.iota_len(b, k))?;
                Some((len, false))
            }
            // `len(A) + k` is `max(0, len(A) + k)`: `A`'s length stepped by `k`.
            Node::Len(a) => match self.out.shapes.get(&a)? {
                SShape::Arr(sa) => Some((sa.len.step(k), sa.exact)),
                _ => None,
            },
            Node::Var(v) => {
                if let Some(&rhs) = self.out.scalar_lets.get(&v) {
                    return self.iota_len(rhs, k);
                }
                // The size variable of an int parameter is `max(0, value)`: `max(0, value +
                // k)` is `max(size + k, 0)` for `k <= 0`; for `k > 0` only at most
                // `size + k` (a negative value).
                let &var = self.out.int_params.get(&v)?;
                Some((Len::of_var(var).step(k), k <= 0))
            }
            _ => None,
        }
    }

    /// A loop with an accumulator: finds the accumulator's shape as the least fixed point
    /// above the initial value's (it only grows where a body shifts an empty array).
    #[allow(clippy::too_many_arguments)]
    fn fold(
        &mut self,
        f: ExprId,
        z: ExprId,
        x: ExprId,
        depth: u32,
        count: bool,
        what: &str,
        acc_second: bool,
    ) -> JitResult<(SShape, Rc<SArr>)> {
        let mut acc = self.visit(z, depth, count, true)?;
        let sa = expect_arr(self.visit(x, depth, count, true)?, what)?;
        let (ps, body) = lambda(self.arena, f, 2, what)?;
        let (pa, px) = if acc_second {
            (ps[1], ps[0])
        } else {
            (ps[0], ps[1])
        };
        for round in 0..16 {
            self.bind(pa, acc.clone(), depth + 1);
            self.bind(px, sa.elem.clone(), depth + 1);
            let sb = self.visit(body, depth + 1, count && round == 0, true)?;
            let joined = acc.join(&sb)?;
            if joined == acc {
                return Ok((acc, sa));
            }
            acc = joined;
        }
        Err(JitError::Unsupported(format!(
            "the accumulator of this `{what}` has no stable shape"
        )))
    }
}
