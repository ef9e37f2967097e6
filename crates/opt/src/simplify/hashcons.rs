//! Hash-consing: structurally equal nodes built in a pass are one id ([`Simplifier::mk`]),
//! and the CSE table of the expressions bound by the enclosing `let`s (keyed so that folds
//! and scans of one operator section are one key, whatever the names of their binders).

use unfad_syntax::{ExprId, Node, Var};

use super::Simplifier;

/// A structural key for hash-consing (lists by content, constants by bits).
#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) struct Key {
    tag: u8,
    op: u32,
    bits: u64,
    kids: KeyKids,
}

/// The children of a key: inline when there are few (most nodes), so that building a
/// key does not allocate.
#[derive(Clone, PartialEq, Eq, Hash)]
enum KeyKids {
    Few(u8, [u32; 3]),
    Many(Box<[u32]>),
}

impl KeyKids {
    /// `first` followed by `rest`, allocating only when there are more than three.
    fn chain(first: &[u32], rest: impl ExactSizeIterator<Item = u32>) -> KeyKids {
        let n = first.len() + rest.len();
        if n <= 3 {
            let mut a = [0; 3];
            a[..first.len()].copy_from_slice(first);
            for (slot, x) in a[first.len()..].iter_mut().zip(rest) {
                *slot = x;
            }
            KeyKids::Few(n as u8, a)
        } else {
            KeyKids::Many(first.iter().copied().chain(rest).collect())
        }
    }

    fn few(items: &[u32]) -> KeyKids {
        let mut a = [0; 3];
        a[..items.len()].copy_from_slice(items);
        KeyKids::Few(items.len() as u8, a)
    }
}

impl Simplifier<'_> {
    pub(super) fn key(&self, node: &Node) -> Key {
        use Node::*;
        let k = |tag: u8, op: u32, bits: u64, kids: KeyKids| Key {
            tag,
            op,
            bits,
            kids,
        };
        let id = |e: ExprId| e.index() as u32;
        let list = |l: unfad_syntax::ExprList, first: &[u32]| {
            KeyKids::chain(first, self.arena.exprs(l).iter().map(|e| e.index() as u32))
        };
        let vlist = |l: unfad_syntax::VarList, first: &[u32]| {
            KeyKids::chain(
                first,
                self.arena.vars_of(l).iter().map(|v| v.index() as u32),
            )
        };
        let few = |items: &[u32]| KeyKids::few(items);
        match *node {
            Const(c) => k(0, 0, c.to_bits(), few(&[])),
            Bool(b) => k(1, b as u32, 0, few(&[])),
            Var(v) => k(2, v.index() as u32, 0, few(&[])),
            Let(x, a, b) => k(3, x.index() as u32, 0, few(&[id(a), id(b)])),
            LetTuple(xs, a, b) => k(4, 0, 0, vlist(xs, &[id(a), id(b)])),
            Tuple(l) => k(5, 0, 0, list(l, &[])),
            Proj(i, a) => k(6, i, 0, few(&[id(a)])),
            Op1(op, a) => k(7, op as u32, 0, few(&[id(a)])),
            Op2(op, a, b) => k(8, op as u32, 0, few(&[id(a), id(b)])),
            Cmp(op, a, b) => k(9, op as u32, 0, few(&[id(a), id(b)])),
            Not(a) => k(10, 0, 0, few(&[id(a)])),
            And(a, b) => k(11, 0, 0, few(&[id(a), id(b)])),
            Or(a, b) => k(12, 0, 0, few(&[id(a), id(b)])),
            If(a, b, c) => k(13, 0, 0, few(&[id(a), id(b), id(c)])),
            Lambda(xs, b) => k(14, 0, 0, vlist(xs, &[id(b)])),
            App(f, l) => k(15, 0, 0, list(l, &[id(f)])),
            Call(d, l) => k(16, d.0, 0, list(l, &[])),
            Array(l) => k(17, 0, 0, list(l, &[])),
            Len(a) => k(18, 0, 0, few(&[id(a)])),
            ZerosLike(a) => k(19, 0, 0, few(&[id(a)])),
            OnesLike(a) => k(20, 0, 0, few(&[id(a)])),
            Map(f, a) => k(21, 0, 0, few(&[id(f), id(a)])),
            Map2(f, a, b) => k(22, 0, 0, few(&[id(f), id(a), id(b)])),
            Reduce(f, a, b) => k(23, 0, 0, few(&[id(f), id(a), id(b)])),
            Foldl(f, a, b) => k(24, 0, 0, few(&[id(f), id(a), id(b)])),
            Scanl(f, a, b) => k(25, 0, 0, few(&[id(f), id(a), id(b)])),
            Scanr(f, a, b) => k(26, 0, 0, few(&[id(f), id(a), id(b)])),
            Shift1L(a) => k(27, 0, 0, few(&[id(a)])),
            Shift1R(a) => k(28, 0, 0, few(&[id(a)])),
        }
    }

    /// The node, hash-consed: structurally equal nodes built in a pass are one id.
    pub(super) fn mk(&mut self, node: Node) -> ExprId {
        // Normalise through the arena first (`-c` is a constant).
        let node = match node {
            Node::Op1(unfad_syntax::UnOp::Neg, e) => match self.arena[e] {
                Node::Const(c) => Node::Const(-c),
                _ => node,
            },
            _ => node,
        };
        if self.light {
            return self.arena.add(node);
        }
        let key = self.key(&node);
        if let Some(&e) = self.hashcons.get(&key) {
            return e;
        }
        let e = self.arena.add(node);
        self.hashcons.insert(key, e);
        e
    }

    pub(super) fn constant(&mut self, c: f64) -> ExprId {
        self.mk(Node::Const(c))
    }

    pub(super) fn var(&mut self, v: Var) -> ExprId {
        self.mk(Node::Var(v))
    }

    pub(super) fn tuple(&mut self, items: &[ExprId]) -> ExprId {
        if items.len() == 1 {
            return items[0];
        }
        let l = self.arena.expr_list(items);
        self.mk(Node::Tuple(l))
    }

    pub(super) fn mark(&self) -> usize {
        self.avail_log.len()
    }

    pub(super) fn pop_to(&mut self, mark: usize) {
        while self.avail_log.len() > mark {
            let e = self.avail_log.pop().unwrap();
            self.avail.remove(&e);
        }
    }

    pub(super) fn make_available(&mut self, e: ExprId, x: Var) {
        if self.light || self.is_trivial(e) {
            return;
        }
        let k = self.cse_key(e);
        if let std::collections::hash_map::Entry::Vacant(slot) = self.avail.entry(k) {
            slot.insert(x);
            self.avail_log.push(k);
        }
    }

    /// The variable bound to a term equal to `e` (up to the names of its binders), if one
    /// is in scope.
    pub(super) fn available(&mut self, e: ExprId) -> Option<Var> {
        if self.light || self.avail.is_empty() {
            return None;
        }
        let k = self.cse_key(e);
        self.avail.get(&k).copied()
    }

    /// The key of `e` in the CSE table: `e` itself (hash-consed), or for a fold or scan
    /// whose function is an operator section, whose binders reverse mode makes fresh for
    /// every copy, the same node with one section per operator: two `sum(A)` are one key.
    pub(super) fn cse_key(&mut self, e: ExprId) -> ExprId {
        let node = self.arena[e];
        let (Node::Reduce(f, z, a)
        | Node::Foldl(f, z, a)
        | Node::Scanl(f, z, a)
        | Node::Scanr(f, z, a)) = node
        else {
            return e;
        };
        let Some((ps, body)) = self.arena.lambda_parts(f) else {
            return e;
        };
        let Node::Op2(op, x, y) = self.arena[body] else {
            return e;
        };
        let (p, q) = match ps {
            [p, q] => (Node::Var(*p), Node::Var(*q)),
            _ => return e,
        };
        let swapped = match (self.arena[x], self.arena[y]) {
            (a, b) if (a, b) == (p, q) => false,
            (a, b) if (a, b) == (q, p) => true,
            _ => return e,
        };
        while self.canon_vars.len() < 2 {
            let v = self.arena.fresh_var("_", None);
            self.canon_vars.push(v);
        }
        let (c0, c1) = (self.canon_vars[0], self.canon_vars[1]);
        let (e0, e1) = (self.var(c0), self.var(c1));
        let body = if swapped {
            self.mk(Node::Op2(op, e1, e0))
        } else {
            self.mk(Node::Op2(op, e0, e1))
        };
        let l = self.arena.var_list(&[c0, c1]);
        let section = self.mk(Node::Lambda(l, body));
        self.mk(match node {
            Node::Reduce(..) => Node::Reduce(section, z, a),
            Node::Foldl(..) => Node::Foldl(section, z, a),
            Node::Scanl(..) => Node::Scanl(section, z, a),
            _ => Node::Scanr(section, z, a),
        })
    }

    /// The stand-in for parameter `i` of the functions at depth `depth` in expansions.
    pub(super) fn stand_in(&mut self, depth: u32, i: usize) -> Var {
        if let Some(&v) = self.stand_ins.get(&(depth, i)) {
            return v;
        }
        let v = self.arena.fresh_var("_", None);
        self.stand_ins.insert((depth, i), v);
        v
    }
}
