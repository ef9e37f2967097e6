//! Hash-consing: structurally equal nodes built in a pass are one id ([`Simplifier::mk`]),
//! and the CSE table of the expressions bound by the enclosing `let`s (keyed so that folds
//! and scans of one operator section are one key, whatever the names of their binders).

use std::hash::{Hash, Hasher};

use unfad_syntax::fast_hash::FastHasher;
use unfad_syntax::{Arena, ExprId, Node, Var};

use super::Simplifier;

/// The largest function body [`Simplifier::cse_key`] renames (larger loops keep their own
/// key: renaming is linear in the body, and equal large bodies are rare).
const CANONICAL_BODY: usize = 24;

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

impl Key {
    /// The key of `node`, whose lists are in `arena`.
    fn of(arena: &Arena, node: &Node) -> Key {
        use Node::*;
        let k = |tag: u8, op: u32, bits: u64, kids: KeyKids| Key {
            tag,
            op,
            bits,
            kids,
        };
        let id = |e: ExprId| e.index() as u32;
        let list = |l: unfad_syntax::ExprList, first: &[u32]| {
            KeyKids::chain(first, arena.exprs(l).iter().map(|e| e.index() as u32))
        };
        let vlist = |l: unfad_syntax::VarList, first: &[u32]| {
            KeyKids::chain(first, arena.vars_of(l).iter().map(|v| v.index() as u32))
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
            Op1(op, a) => k(7, op.code(), 0, few(&[id(a)])),
            Op2(op, a, b) => k(8, op.code(), 0, few(&[id(a), id(b)])),
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
            Iota(a) => k(29, 0, 0, few(&[id(a)])),
            Index(a, b) => k(30, 0, 0, few(&[id(a), id(b)])),
            ScatterAdd(a, b, c) => k(31, 0, 0, few(&[id(a), id(b), id(c)])),
            Derivative(kind, f, l) => {
                let code = match kind {
                    unfad_syntax::Derivative::Grad { wrt: None } => u32::MAX,
                    unfad_syntax::Derivative::Grad { wrt: Some(i) } => i,
                    unfad_syntax::Derivative::Jvp => u32::MAX - 1,
                };
                k(32, code, 0, list(l, &[id(f)]))
            }
        }
    }

    fn hash(&self) -> u64 {
        let mut h = FastHasher::default();
        Hash::hash(self, &mut h);
        // The low bits of the fast hash depend on few bits of the key, and the table
        // takes its buckets from the low bits: keys differing in high bits of their ids
        // (millions of nodes) fell into one long run of buckets. A final mix (that of
        // splitmix64) spreads every bit of the key over the whole hash.
        let mut x = h.finish();
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    }
}

impl Simplifier<'_> {
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
        // Reads and int divisions keep the position of what they were made from.
        let at = match node {
            Node::Index(..)
            | Node::Op2(unfad_syntax::BinOp::IntDiv | unfad_syntax::BinOp::Rem, ..) => self.site,
            _ => unfad_syntax::Span::NONE,
        };
        if self.light {
            return self.arena.add_at(node, at);
        }
        // Variables and constants, most of the nodes a pass makes and nearly always made
        // before, have tables of their own: one slot per variable of the arena, and the
        // few constants of a program.
        match node {
            Node::Var(v) => {
                let i = v.index();
                if i >= self.var_nodes.len() {
                    self.var_nodes.resize(i + 1 + i / 2, None);
                }
                if let Some(e) = self.var_nodes[i] {
                    return e;
                }
                let e = self.arena.add_at(node, at);
                self.var_nodes[i] = Some(e);
                return e;
            }
            Node::Const(c) => {
                if let Some(&e) = self.const_nodes.get(&c.to_bits()) {
                    return e;
                }
                let e = self.arena.add_at(node, at);
                self.const_nodes.insert(c.to_bits(), e);
                return e;
            }
            _ => {}
        }
        // The table holds ids only, each entry's key made again from its node when it
        // is compared or moved: a tenth of the memory of keys kept beside the ids, and
        // the table of a long program's pass (millions of nodes) then misses the caches
        // less, which was the largest cost of a pass.
        let key = Key::of(self.arena, &node);
        let hash = key.hash();
        let arena = &*self.arena;
        if let Some(&e) = self
            .hashcons
            .find(hash, |&e| Key::of(arena, &arena[e]) == key)
        {
            // A read made before without a position (by reverse mode, or a rule) takes
            // this one's, so that its error at run time still says where it is.
            if !at.is_none() && self.arena.span(e).is_none() {
                self.arena.set_span(e, at);
            }
            return e;
        }
        let e = self.arena.add_at(node, at);
        let arena = &*self.arena;
        self.hashcons
            .insert_unique(hash, e, |&e| Key::of(arena, &arena[e]).hash());
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

    /// The key of `e` in the CSE table: `e` itself (hash-consed), or for an array
    /// operation whose function's body has no function inside (an operator section, a
    /// small elementwise body), whose binders reverse mode makes fresh for every copy, the
    /// same node with the parameters renamed to canonical variables, and its arrays' keys
    /// likewise: two `sum(A)`, or two `map2 (a, b. a * b) x y` written apart, are one key.
    pub(super) fn cse_key(&mut self, e: ExprId) -> ExprId {
        self.loop_key(e, 0)
    }

    fn loop_key(&mut self, e: ExprId, depth: u32) -> ExprId {
        let node = self.arena[e];
        let (f, operands): (ExprId, Vec<ExprId>) = match node {
            Node::Map(f, a) => (f, vec![a]),
            Node::Map2(f, a, b)
            | Node::Reduce(f, a, b)
            | Node::Foldl(f, a, b)
            | Node::Scanl(f, a, b)
            | Node::Scanr(f, a, b) => (f, vec![a, b]),
            _ => return e,
        };
        // Arrays made by loops of their own, a few deep (`reduce + 0 (map2 * row x)`).
        let operands: Vec<ExprId> = if depth < 3 {
            operands
                .into_iter()
                .map(|a| self.loop_key(a, depth + 1))
                .collect()
        } else {
            operands
        };
        let Some((ps, body)) = self.arena.lambda_parts(f).map(|(p, b)| (p.to_vec(), b)) else {
            return e;
        };
        let mut budget = CANONICAL_BODY;
        if !self.leaf_body(body, &mut budget) {
            return e;
        }
        while self.canon_vars.len() < ps.len() {
            let v = self.arena.fresh_var("_", None);
            self.canon_vars.push(v);
        }
        let canon: Vec<Var> = self.canon_vars[..ps.len()].to_vec();
        let renamed = self.renamed(body, &ps, &canon);
        let l = self.arena.var_list(&canon);
        let f = self.mk(Node::Lambda(l, renamed));
        self.mk(match (node, operands.as_slice()) {
            (Node::Map(..), [a]) => Node::Map(f, *a),
            (Node::Map2(..), [a, b]) => Node::Map2(f, *a, *b),
            (Node::Reduce(..), [a, b]) => Node::Reduce(f, *a, *b),
            (Node::Foldl(..), [a, b]) => Node::Foldl(f, *a, *b),
            (Node::Scanl(..), [a, b]) => Node::Scanl(f, *a, *b),
            (Node::Scanr(..), [a, b]) => Node::Scanr(f, *a, *b),
            _ => return e,
        })
    }

    /// A function body with no function inside and at most `budget` nodes.
    fn leaf_body(&self, e: ExprId, budget: &mut usize) -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        if matches!(self.arena[e], Node::Lambda(..)) {
            return false;
        }
        let mut ok = true;
        self.arena
            .for_each_child(e, |c| ok = ok && self.leaf_body(c, budget));
        ok
    }

    /// `e` (a leaf body) with `from[i]` renamed `to[i]`, hash-consed.
    fn renamed(&mut self, e: ExprId, from: &[Var], to: &[Var]) -> ExprId {
        let node = self.arena[e];
        match node {
            Node::Var(v) => match from.iter().position(|&p| p == v) {
                Some(i) => self.var(to[i]),
                None => e,
            },
            Node::Const(_) | Node::Bool(_) => e,
            _ => {
                let kids = self.arena.node_children(node);
                let new: Vec<ExprId> = kids.iter().map(|&c| self.renamed(c, from, to)).collect();
                let mut it = new.into_iter();
                let n = self
                    .arena
                    .map_children(node, |_, old| it.next().unwrap_or(old));
                self.mk(n)
            }
        }
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

#[cfg(test)]
mod tests {
    use unfad_syntax::{Arena, BinOp, Func, Node, Type};

    use super::Simplifier;

    /// Within a pass, structurally equal nodes are one id, whichever table holds them
    /// (variables, constants by bits, every other node by its key, lists by content), and
    /// different nodes are different ids, also when their ids differ only in high bits.
    #[test]
    fn equal_nodes_of_a_pass_are_one_id_and_different_ones_are_not() {
        let mut arena = Arena::new();
        let xs: Vec<_> = (0..6)
            .map(|i| arena.fresh_var(&format!("x{i}"), Some(Type::Real)))
            .collect();
        let body = arena.var(xs[0]);
        let func = Func {
            name: "f".into(),
            params: xs.clone(),
            body,
            ret: Type::Real,
        };
        let mut s = Simplifier::new(&mut arena, &func);
        let v: Vec<_> = xs.iter().map(|&x| s.var(x)).collect();
        assert_eq!(s.var(xs[2]), v[2]);
        assert_ne!(v[1], v[2]);
        // Constants by their bits: -0 and +0 apart, a NaN equal to itself.
        let zero = s.constant(0.0);
        assert_eq!(s.constant(0.0), zero);
        assert_ne!(s.constant(-0.0), zero);
        assert_eq!(s.constant(f64::NAN), s.constant(f64::NAN));
        // A tuple of more than three items (its key's children out of line).
        let t1 = s.tuple(&v);
        let t2 = s.tuple(&v);
        assert_eq!(t1, t2);
        let mut swapped = v.clone();
        swapped.swap(4, 5);
        assert_ne!(s.tuple(&swapped), t1);
        // Many operations over the same operands: each one id, all distinct.
        let mut made = Vec::new();
        for i in 0..2000 {
            let c = s.constant(i as f64);
            let a = s.mk(Node::Op2(BinOp::Mul, v[i % 6], c));
            made.push(a);
        }
        for (i, &a) in made.iter().enumerate() {
            let c = s.constant(i as f64);
            assert_eq!(s.mk(Node::Op2(BinOp::Mul, v[i % 6], c)), a);
        }
        let mut sorted = made.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), made.len());
    }
}
