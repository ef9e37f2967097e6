//! Conditionals: `if` as a branch with block parameters at the join, or as `select`s
//! when both branches are cheap scalars; selecting between two places or layouts.

use std::rc::Rc;

use cranelift_codegen::ir::{Block, InstBuilder, Type, Value};
use unfad_syntax::{Arena, BinOp, ExprId, Node, Partial, Partial2, UnOp};

use crate::error::{internal, unsupported, JitResult};
use crate::runtime::{self, Lowering};
use crate::value::{concat_holds, CondVal, Holds, IntVal, Kind, Layout, Place, RealVal, Val};

use super::state::ssa_ints;
use super::{blockargs, Translator, MAX_BLOCK_PARAMS};

impl<'a> Translator<'a> {
    /// `if c then x else y`, written to `into` if given.
    pub(super) fn emit_if(
        &mut self,
        e: ExprId,
        c: ExprId,
        x: ExprId,
        y: ExprId,
        into: Option<&Place>,
    ) -> JitResult<Val> {
        let cond = self.emit_bool(c)?;
        let shape = self.shape(e)?;
        let branch = |t: &mut Self, b: ExprId| match into {
            Some(p) => t.emit_into(b, p),
            None => t.emit(b),
        };
        let cond = match cond {
            CondVal::Const(k) => {
                let (taken, other) = if k { (x, y) } else { (y, x) };
                self.skip(other);
                return branch(self, taken);
            }
            CondVal::Ssa(v) => v,
        };
        if !shape.has_arrays() && self.cheap(x) && self.cheap(y) {
            let vx = self.emit(x)?;
            let vy = self.emit(y)?;
            let v = self.select_val(cond, &vx, &vy)?;
            return match into {
                Some(p) => self.write(&v, p),
                None => Ok(v),
            };
        }
        let then_b = self.b.create_block();
        let else_b = self.b.create_block();
        let join_b = self.b.create_block();
        self.b.ins().brif(cond, then_b, &[], else_b, &[]);
        let mut bufs = Vec::new();
        let mut arm = |t: &mut Self, b: ExprId, blk: Block| -> JitResult<(Val, Vec<Value>)> {
            t.switch_to(blk);
            let v = branch(t, b)?;
            let v = t.in_memory(v, &shape, &mut bufs, &mut 0)?;
            let mut flat = Vec::new();
            t.flatten(&v, &mut flat)?;
            t.b.ins().jump(join_b, &blockargs(&flat));
            Ok((v, flat))
        };
        let (vx, fx) = arm(self, x, then_b)?;
        let (vy, fy) = arm(self, y, else_b)?;
        if fx.len() >= MAX_BLOCK_PARAMS {
            return unsupported("an `if` whose value has this many components");
        }
        let tx: Vec<Type> = fx.iter().map(|&v| self.b.func.dfg.value_type(v)).collect();
        let ty: Vec<Type> = fy.iter().map(|&v| self.b.func.dfg.value_type(v)).collect();
        if tx != ty {
            return internal("the branches of an `if` have different representations");
        }
        self.switch_to(join_b);
        // A value that arrives unchanged from both branches is used as it is (it dominates
        // the join); the others become block parameters.
        let mut params = Vec::with_capacity(fx.len());
        for ((&a, &b), &t) in fx.iter().zip(&fy).zip(&tx) {
            let p = self.b.append_block_param(join_b, t);
            params.push(if a == b { a } else { p });
        }
        let mut h = Vec::new();
        Self::holds_of(&vx, &mut h);
        Self::holds_of(&vy, &mut h);
        self.rebuild(&vx, &shape, &mut ssa_ints(&params).iter(), &Holds::from(h))
    }

    /// Whether `e` is a small scalar expression worth evaluating unconditionally.
    fn cheap(&self, e: ExprId) -> bool {
        fn go(arena: &Arena, e: ExprId, budget: &mut i32) -> bool {
            *budget -= 1;
            if *budget < 0 {
                return false;
            }
            match arena[e] {
                Node::Const(_) | Node::Var(_) => true,
                Node::Op1(UnOp::Neg | UnOp::Abs | UnOp::Sqrt | UnOp::ToReal, x)
                | Node::Proj(_, x) => go(arena, x, budget),
                // Derivative primitives of a few instructions each (not `-sin`, a kernel).
                Node::Op1(UnOp::Partial(p), x) if p != Partial::NegSin => go(arena, x, budget),
                // Not an int division or remainder: its divisor is checked (a zero one stops
                // the call), so it runs only in the branch taken.
                Node::Op2(op, x, y) => {
                    !op.is_integer_only()
                        && matches!(runtime::binary(op), Lowering::Inline)
                        && !matches!(op, BinOp::Partial(Partial2::PowFirst | Partial2::PowSecond))
                        && go(arena, x, budget)
                        && go(arena, y, budget)
                }
                Node::Tuple(l) => arena.exprs(l).iter().all(|&x| go(arena, x, budget)),
                // Conditions and conditionals of such terms: selects in turn.
                Node::If(c, x, y) => {
                    go(arena, c, budget) && go(arena, x, budget) && go(arena, y, budget)
                }
                Node::Cmp(_, x, y) | Node::And(x, y) | Node::Or(x, y) => {
                    go(arena, x, budget) && go(arena, y, budget)
                }
                Node::Not(x) => go(arena, x, budget),
                Node::Let(_, x, y) => go(arena, x, budget) && go(arena, y, budget),
                Node::Bool(_) => true,
                // The length of a named array: known, or one load.
                Node::Len(a) => matches!(arena[a], Node::Var(_)),
                _ => false,
            }
        }
        go(self.arena, e, &mut 40)
    }

    fn select_val(&mut self, c: Value, x: &Val, y: &Val) -> JitResult<Val> {
        Ok(match (x, y) {
            (Val::Real(RealVal::Const(a)), Val::Real(RealVal::Const(b)))
                if a.to_bits() == b.to_bits() =>
            {
                x.clone()
            }
            (Val::Real(a), Val::Real(b)) => {
                let (a, b) = (self.real_value(*a), self.real_value(*b));
                Val::Real(RealVal::Ssa(self.blend(c, a, b)))
            }
            (Val::Bool(a), Val::Bool(b)) => {
                let (a, b) = (self.cond_value(*a), self.cond_value(*b));
                Val::Bool(CondVal::Ssa(self.b.ins().select(c, a, b)))
            }
            (Val::Tuple(xs), Val::Tuple(ys)) if xs.len() == ys.len() => Val::Tuple(
                xs.iter()
                    .zip(ys.iter())
                    .map(|(a, b)| self.select_val(c, a, b))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            _ => return internal("the branches of an `if` differ in shape"),
        })
    }

    /// `if c { a } else { b }` for reals, without a branch: a `select` of reals becomes a
    /// jump over a move on x86-64, which mispredicts where the condition follows the data
    /// (a loss with a branch per element, on residuals of random sign). The two reals'
    /// bits are selected as integers instead (a conditional move), then read back as a
    /// real: the same bits as either branch, one or two cycles more where the jump would
    /// have been predicted.
    pub(super) fn blend(&mut self, c: Value, a: Value, b: Value) -> Value {
        use cranelift_codegen::ir::{types::I64, MemFlagsData as MemFlags};
        let ia = self.b.ins().bitcast(I64, MemFlags::new(), a);
        let ib = self.b.ins().bitcast(I64, MemFlags::new(), b);
        let bits = self.b.ins().select(c, ia, ib);
        let f64 = cranelift_codegen::ir::types::F64;
        self.b.ins().bitcast(f64, MemFlags::new(), bits)
    }

    /// `if c { p } else { q }`, for two places of the same shape.
    pub(super) fn select_place(&mut self, c: Value, p: &Place, q: &Place) -> JitResult<Place> {
        Ok(match (p, q) {
            (Place::Reg, Place::Reg) => Place::Reg,
            (Place::Real(x), Place::Real(y)) => Place::Real(self.select_ssa(c, *x, *y)),
            (Place::Tuple(ps), Place::Tuple(qs)) if ps.len() == qs.len() => Place::Tuple(
                ps.iter()
                    .zip(qs.iter())
                    .map(|(p, q)| self.select_place(c, p, q))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            (Place::Arr(a), Place::Arr(b)) => {
                let (
                    Kind::Mem {
                        layout: la,
                        holds: ha,
                    },
                    Kind::Mem {
                        layout: lb,
                        holds: hb,
                    },
                ) = (&a.kind, &b.kind)
                else {
                    return internal("accumulator buffers are not in memory");
                };
                let len = self.select_int(c, a.len, b.len);
                let layout = self.select_layout(c, la, lb)?;
                let claim = a.stat();
                Place::Arr(self.arr(
                    len,
                    &a.shape,
                    claim,
                    Kind::Mem {
                        layout,
                        holds: concat_holds(ha, hb),
                    },
                ))
            }
            _ => return internal("accumulator places differ in shape"),
        })
    }

    fn select_ssa(&mut self, c: Value, x: Value, y: Value) -> Value {
        if x == y {
            x
        } else {
            self.b.ins().select(c, x, y)
        }
    }

    fn select_int(&mut self, c: Value, x: IntVal, y: IntVal) -> IntVal {
        if x == y {
            return x;
        }
        let (a, b) = (self.int_value(x), self.int_value(y));
        IntVal::Ssa(self.b.ins().select(c, a, b))
    }

    fn select_layout(&mut self, c: Value, p: &Layout, q: &Layout) -> JitResult<Layout> {
        Ok(match (p, q) {
            (
                Layout::Real {
                    base: b1,
                    strides: s1,
                },
                Layout::Real {
                    base: b2,
                    strides: s2,
                },
            ) if s1.len() == s2.len() => {
                let base = self.select_ssa(c, *b1, *b2);
                let strides: Vec<IntVal> = s1
                    .iter()
                    .zip(s2.iter())
                    .map(|(&x, &y)| self.select_int(c, x, y))
                    .collect();
                Layout::Real {
                    base,
                    strides: strides.into(),
                }
            }
            (Layout::Tuple(ps), Layout::Tuple(qs)) if ps.len() == qs.len() => Layout::Tuple(
                ps.iter()
                    .zip(qs.iter())
                    .map(|(p, q)| self.select_layout(c, p, q))
                    .collect::<JitResult<Vec<_>>>()?
                    .into(),
            ),
            (Layout::Array { len: l1, elem: e1 }, Layout::Array { len: l2, elem: e2 }) => {
                Layout::Array {
                    len: self.select_int(c, *l1, *l2),
                    elem: Rc::new(self.select_layout(c, e1, e2)?),
                }
            }
            _ => return internal("accumulator layouts differ"),
        })
    }
}
