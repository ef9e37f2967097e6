//! Variables: what each one is bound to, how many uses are left, and when its value
//! (and the buffers it holds) may be released; `let` bindings.

use unfad_syntax::{with_stack, ExprId, Node, Var};

use crate::error::{internal, JitError, JitResult, Retry};
use crate::value::{Arr, Kind, Val};

use super::Translator;

/// A variable's value and what is left of its uses.
#[derive(Clone)]
pub(super) struct Entry {
    val: Val,
    uses: u32,
    /// The loop depth at which it was bound.
    depth: usize,
}

impl Entry {
    /// The value the variable is bound to.
    pub(super) fn value(&self) -> &Val {
        &self.val
    }
}

impl<'a> Translator<'a> {
    /// Bind `v` to `val` for the rest of its scope (or until its last use). With
    /// [`Translator::force_read_twice`] set, an unevaluated array whose elements `v`'s uses
    /// read more than once is computed into memory first.
    pub fn bind(&mut self, v: Var, val: Val) -> JitResult<()> {
        let uses = self.an.uses(v);
        if uses > 0 {
            let val = if self.force_read_twice && val.has_lazy() && self.an.read_twice(v) {
                self.force(val)?
            } else {
                val
            };
            let depth = self.frames.len();
            self.env.insert(v, Entry { val, uses, depth });
        }
        Ok(())
    }

    /// Compute into memory, where a variable is bound, every unevaluated array whose
    /// elements its uses read more than once. The analysis counts reads that the fused
    /// loops share, so this costs run time where nothing needed it; the lowering is tried
    /// without it first and redone with it when an unevaluated map would be read twice (a
    /// parameter bound to an element that is itself an unevaluated map, read by two folds
    /// that are not fused).
    pub fn force_read_twice(&mut self) {
        self.force_read_twice = true;
    }

    /// Compute every scan into memory instead of where it is read: the lowering is tried
    /// without it first and redone with it when a scan computed where it is read would be
    /// read out of order (an element of a shifted scan picked by a computed index).
    pub fn force_eager_scans(&mut self) {
        self.eager_scans = true;
    }

    /// Why the lowering failed, when lowering again differently may complete it: set by
    /// [`Translator::read_twice`].
    pub fn retry(&self) -> Option<Retry> {
        self.retry
    }

    /// Fail because an unevaluated array (`what`) is read a second time: an internal error,
    /// with [`Retry::ReadTwice`] recorded for the caller, which lowers the function again
    /// with [`Translator::force_read_twice`] if it was not set.
    pub(super) fn read_twice<T>(&mut self, what: &str) -> JitResult<T> {
        self.retry = Some(Retry::ReadTwice);
        internal(format!("{what} is read twice"))
    }

    /// End the binding of `v` (if its last use has not already ended it).
    pub(super) fn unbind(&mut self, v: Var) {
        if let Some(ent) = self.env.remove(&v) {
            self.retire(ent);
        }
    }

    /// Drop a binding; a value bound outside the current loop stays alive until that loop
    /// ends, because later iterations read it again.
    fn retire(&mut self, ent: Entry) {
        if ent.depth < self.frames.len() {
            self.frames[ent.depth].push(ent.val);
        }
    }

    pub(super) fn use_var(&mut self, v: Var) -> JitResult<Val> {
        let Some(ent) = self.env.get_mut(&v) else {
            // An unevaluated array read again after its last counted use ended a variable
            // its function reads (a map's parameter bound to a row that is itself an
            // unevaluated map, read by several loops): computed into memory where it is
            // bound, the array is read from there (see `force_read_twice`).
            self.retry = Some(Retry::ReadTwice);
            return internal(format!(
                "the variable `{}` is used where it is not bound",
                self.arena.var_name(v)
            ));
        };
        let val = ent.val.clone();
        ent.uses = ent.uses.saturating_sub(1);
        if ent.uses == 0 {
            if let Some(ent) = self.env.remove(&v) {
                self.retire(ent);
            }
        }
        Ok(val)
    }

    /// Account for the variable uses in `e`, whose code is not needed.
    pub(super) fn skip(&mut self, e: ExprId) {
        with_stack(|| match self.arena[e] {
            Node::Var(v) => {
                if self.env.contains_key(&v) {
                    let _ = self.use_var(v);
                }
            }
            _ => {
                for c in self.arena.children(e) {
                    self.skip(c);
                }
            }
        })
    }

    /// End the scope of `vars`, unless `result` still refers to them through an
    /// unevaluated map (their last use then ends them).
    pub(super) fn end_scope(&mut self, vars: &[Var], result: &Val) {
        if !result.has_lazy() {
            for &v in vars {
                self.unbind(v);
            }
        }
    }

    /// Bind the value of a `let` (evaluating its maps unless they can be fused).
    pub(super) fn bind_let(&mut self, x: Var, v: Val) -> JitResult<()> {
        self.bind_let_in(x, v, None)
    }

    /// [`Translator::bind_let`], a map that must be stored being stored in `scratch` if
    /// given (see [`Translator::scratch_place`]) rather than in a buffer of its own.
    pub(super) fn bind_let_in(&mut self, x: Var, v: Val, scratch: Option<&Arr>) -> JitResult<()> {
        let v = if self.an.lazy_ok(x) || self.recomputed(x, &v) {
            v
        } else {
            match (&v, scratch) {
                (Val::Arr(a), Some(d))
                    if matches!(a.kind, Kind::Map { .. } | Kind::Map2 { .. })
                        && *a.shape == *d.shape =>
                {
                    self.write_arr(a, d)?
                }
                _ => self.force(v)?,
            }
        };
        self.bind(x, v)?;
        Ok(())
    }

    pub(super) fn bind_let_tuple(&mut self, xs: &[Var], v: Val) -> JitResult<()> {
        let Val::Tuple(items) = v else {
            return Err(JitError::Type("a tuple pattern binds a non-tuple".into()));
        };
        if items.len() != xs.len() {
            return Err(JitError::Type("a tuple pattern has the wrong arity".into()));
        }
        for (&x, v) in xs.iter().zip(items.iter()) {
            self.bind_let(x, v.clone())?;
        }
        Ok(())
    }

    /// Whether `x`'s value `v`, an unevaluated map read a few times (each read outside any
    /// loop the binding is not in), is better computed anew at each read than stored and
    /// read back: its function a few arithmetic operations, its sources arrays that can be
    /// read again (in memory, fills, `iota`s, pads of them, or such maps). If so, its maps
    /// are allowed any number of reads, and the variables their functions use get the uses
    /// of the reads beyond the first.
    fn recomputed(&mut self, x: Var, v: &Val) -> bool {
        // Reads are mostly of one component each (a reverse pass's columns), whose loads
        // the reading loops share: six reads of at most six operations cost less than
        // storing the elements and reading them back (a recurrence's per-step adjoints:
        // four columns, five reads).
        const MAX_READS: u32 = 6;
        let (reads, deep) = self.an.reads_of(x);
        let Val::Arr(a) = v else {
            return false;
        };
        if deep || reads > MAX_READS || !rereadable(self.arena, a) {
            return false;
        }
        let mut fns = Vec::new();
        allow_again(a, &mut fns);
        for f in fns {
            for (var, n) in occurrences(self.arena, f) {
                if let Some(ent) = self.env.get_mut(&var) {
                    ent.uses = ent.uses.saturating_add(n * (reads - 1));
                }
            }
        }
        true
    }
}

/// The operations a map's function may have for it to be computed at every read.
const RECOMPUTED_OPERATIONS: usize = 6;

/// Whether reading `a`'s elements again computes only a few arithmetic operations per
/// element, from sources that can be read again.
fn rereadable(arena: &unfad_syntax::Arena, a: &crate::value::Arr) -> bool {
    use crate::value::Kind;
    let cheap = |f: ExprId| {
        let mut budget = RECOMPUTED_OPERATIONS;
        arena.within_operations(f, &mut budget, &|n| n.is_arithmetic() || light_partial(n))
    };
    match &a.kind {
        Kind::Mem { .. } | Kind::Fill { .. } | Kind::Iota { .. } => true,
        Kind::Pad(p) => rereadable(arena, &p.src),
        Kind::Map { f, src, .. } => cheap(*f) && rereadable(arena, src),
        Kind::Map2 { f, a, b, .. } => cheap(*f) && rereadable(arena, a) && rereadable(arena, b),
        Kind::Scan(_) => false,
    }
}

/// A derivative of one or two arithmetic instructions (`1 - t*t`, `s * (1 - s)`, a sign):
/// as cheap to compute again as the operations [`rereadable`] counts.
fn light_partial(n: Node) -> bool {
    use unfad_syntax::{Partial, UnOp};
    matches!(
        n,
        Node::Op1(
            UnOp::Partial(
                Partial::OneMinusSquare
                    | Partial::OnePlusSquare
                    | Partial::Logistic
                    | Partial::Sign
            ),
            _
        )
    )
}

/// Allow the maps of `a` (itself and those it reads) any number of reads; their functions
/// go into `fns`.
fn allow_again(a: &crate::value::Arr, fns: &mut Vec<ExprId>) {
    use crate::value::Kind;
    match &a.kind {
        Kind::Map { f, src, read } => {
            read.allow_again();
            fns.push(*f);
            allow_again(src, fns);
        }
        Kind::Map2 { f, a, b, read } => {
            read.allow_again();
            fns.push(*f);
            allow_again(a, fns);
            allow_again(b, fns);
        }
        Kind::Pad(p) => allow_again(&p.src, fns),
        Kind::Mem { .. } | Kind::Fill { .. } | Kind::Iota { .. } | Kind::Scan(_) => {}
    }
}

/// The variables occurring in `e`, each with its number of occurrences.
fn occurrences(arena: &unfad_syntax::Arena, e: ExprId) -> Vec<(Var, u32)> {
    let mut out: Vec<(Var, u32)> = Vec::new();
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        if let Node::Var(v) = arena[e] {
            match out.iter_mut().find(|(w, _)| *w == v) {
                Some((_, n)) => *n += 1,
                None => out.push((v, 1)),
            }
        }
        stack.extend(arena.children(e));
    }
    out
}
