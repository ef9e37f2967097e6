//! The prologue: counts and workspace addresses that depend only on the sizes, computed
//! once in the entry block. The body uses placeholders for them ([`PrologueValue`]), which
//! [`Translator::finish_prologue`] makes aliases of the values it computes.

use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{Block, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;
use unfad_syntax::fast_hash::FastMap as HashMap;

use crate::error::{internal, unsupported, JitResult};
use crate::layout::{Dim, SizeExpr};
use crate::value::IntVal;

use super::{Translator, MAX_BLOCK_PARAMS};

/// A value computed once in the prologue.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(super) enum PrologueValue {
    /// An element count.
    Count(SizeExpr),
    /// The address of element `offset` of slot `slot` of the workspace.
    Addr(usize, SizeExpr),
    /// The address of the math kernels' tables (`kernels::kernel_tables`): one value for
    /// the whole function, so that the lookups of two lanes gather from the same base.
    KernelTables,
    /// The address of the sink, the one real on the stack that unkept columns point at
    /// (`Translator::alloc_without`).
    Sink,
    /// The address of a kernel site's scratch region in a batched loop (`batch`): one
    /// value for the whole function, so that both passes and both lanes address it alike.
    BatchSlot(cranelift_codegen::ir::StackSlot),
}

/// What the prologue must compute, and what a call must check, once the body is lowered.
pub(crate) struct Plan {
    /// Length of the workspace, in reals.
    pub workspace: SizeExpr,
    /// Every count the native code computes from the sizes; a call checks that each one is
    /// representable before running it.
    pub checks: Vec<SizeExpr>,
    /// Where the status cell is in the workspace, if the function checks something at run
    /// time: nonzero after a call if a check failed.
    pub status: Option<SizeExpr>,
}

/// Element counts computed from the `sizes` argument in a function's first block, each
/// expression and each size loaded once.
pub(crate) struct SizeValues {
    sizes: Value,
    cache: HashMap<SizeExpr, Value>,
    loaded: HashMap<u32, Value>,
}

impl SizeValues {
    /// Counts from the sizes array at `sizes`.
    pub fn new(sizes: Value) -> SizeValues {
        SizeValues {
            sizes,
            cache: HashMap::default(),
            loaded: HashMap::default(),
        }
    }

    /// The value of `e`, emitted at the builder's position if not yet emitted.
    pub fn get(&mut self, b: &mut FunctionBuilder, e: &SizeExpr) -> Value {
        if let Some(&v) = self.cache.get(e) {
            return v;
        }
        let v = match e {
            SizeExpr::K(k) => b.ins().iconst(I64, *k as i64),
            SizeExpr::D(d) => match d.var {
                None => b.ins().iconst(I64, d.as_constant().unwrap_or(0) as i64),
                Some(i) => {
                    let n = match self.loaded.get(&i) {
                        Some(&n) => n,
                        None => {
                            let n = b.ins().load(
                                I64,
                                MemFlagsData::trusted().with_readonly().with_can_move(),
                                self.sizes,
                                (i as i32).wrapping_mul(8),
                            );
                            self.loaded.insert(i, n);
                            n
                        }
                    };
                    let t = if d.offset == 0 {
                        n
                    } else {
                        b.ins().iadd_imm_s(n, d.offset)
                    };
                    if d.offset >= 0 && d.floor == 0 {
                        t
                    } else {
                        let fl = b.ins().iconst(I64, d.floor as i64);
                        b.ins().smax(t, fl)
                    }
                }
            },
            SizeExpr::Sum(xs) => self.fold(b, xs, |b, a, v| b.ins().iadd(a, v)),
            SizeExpr::Mul(x, y) => {
                let (x, y) = (self.get(b, x), self.get(b, y));
                b.ins().imul(x, y)
            }
            SizeExpr::Max(xs) => self.fold(b, xs, |b, a, v| b.ins().smax(a, v)),
        };
        self.cache.insert(e.clone(), v);
        v
    }

    /// The counts `xs` combined left to right by `op` (0 for none).
    fn fold(
        &mut self,
        b: &mut FunctionBuilder,
        xs: &[SizeExpr],
        op: impl Fn(&mut FunctionBuilder, Value, Value) -> Value,
    ) -> Value {
        let mut acc: Option<Value> = None;
        for x in xs {
            let v = self.get(b, x);
            acc = Some(match acc {
                None => v,
                Some(a) => op(b, a, v),
            });
        }
        acc.unwrap_or_else(|| b.ins().iconst(I64, 0))
    }
}

impl<'a> Translator<'a> {
    pub(super) fn prologue_value(&mut self, p: PrologueValue) -> Value {
        if let Some(&v) = self.prologue.get(&p) {
            return v;
        }
        // The placeholder is a parameter of the body's first block until `finish_prologue`
        // makes it an alias. That block already has instructions; the builder's only
        // `Variable`s (the state of scans computed where they are read) are defined before
        // every use, in this block or after it, so the SSA construction never gives this
        // block a parameter, and adding one cannot disturb it.
        if self.prologue_order.len() >= MAX_BLOCK_PARAMS {
            // Refused in `finish_prologue`; until then any value keeps the IR well-formed.
            if let Some(&(_, v)) = self.prologue_order.last() {
                return v;
            }
        }
        let v = self.b.func.dfg.append_block_param(self.main, I64);
        self.prologue.insert(p.clone(), v);
        self.prologue_order.push((p, v));
        v
    }

    pub(super) fn count(&mut self, e: SizeExpr) -> IntVal {
        match e {
            SizeExpr::K(k) => IntVal::Const(k as i64),
            e => IntVal::Ssa(self.prologue_value(PrologueValue::Count(e))),
        }
    }

    pub(super) fn dim(&mut self, d: Dim) -> IntVal {
        self.count(SizeExpr::dim(d))
    }

    /// Emit the prologue into `entry` (which must be empty): load the sizes, compute every
    /// count and buffer address the body uses, make the body's placeholders aliases of
    /// them, and jump to the body's first block.
    pub fn finish_prologue(
        &mut self,
        entry: Block,
        sizes: Value,
        workspace: Value,
    ) -> JitResult<Plan> {
        if self.prologue_order.len() > MAX_BLOCK_PARAMS {
            return unsupported("a function with this many distinct array lengths");
        }
        // Every buffer handle is gone by now; the slot sizes are final.
        self.env.clear();
        let slot_sizes: Vec<SizeExpr> = self
            .slots
            .members
            .iter()
            .map(|m| SizeExpr::max_of(m.iter().cloned()))
            .collect();
        let total = SizeExpr::sum(slot_sizes.iter().cloned());
        self.switch_to(entry);
        let mut counts = SizeValues::new(sizes);
        // Slot `k` starts after the slots before it. Every address is below the total,
        // which a call checks, so the wrapping arithmetic here is exact.
        let mut slot_addr = Vec::with_capacity(slot_sizes.len());
        let mut addr = workspace;
        for s in &slot_sizes {
            slot_addr.push(addr);
            let n = counts.get(&mut self.b, s);
            let bytes = self.b.ins().ishl_imm_s(n, 3);
            addr = self.b.ins().iadd(addr, bytes);
        }
        let mut checks = vec![total.clone()];
        let mut args = Vec::with_capacity(self.prologue_order.len());
        let order = std::mem::take(&mut self.prologue_order);
        for (p, _) in &order {
            let v = match p {
                PrologueValue::Count(e) => {
                    checks.push(e.clone());
                    counts.get(&mut self.b, e)
                }
                PrologueValue::Addr(slot, off) => {
                    let Some(&base) = slot_addr.get(*slot) else {
                        return internal("a buffer in a slot that does not exist");
                    };
                    let k = counts.get(&mut self.b, off);
                    let bytes = self.b.ins().ishl_imm_s(k, 3);
                    self.b.ins().iadd(base, bytes)
                }
                PrologueValue::Sink => {
                    let Some(slot) = self.sink else {
                        return internal("the sink read but not made");
                    };
                    self.b.ins().stack_addr(I64, slot, 0)
                }
                PrologueValue::BatchSlot(slot) => self.b.ins().stack_addr(I64, *slot, 0),
                PrologueValue::KernelTables => {
                    let Some(gv) = self.kernel_tables else {
                        return internal("the kernels' tables read but not declared");
                    };
                    self.b.ins().symbol_value(I64, gv)
                }
            };
            args.push(v);
        }
        // A function that checks something at run time has a status cell after every
        // buffer, which it clears first; the block a failed check jumps to sets it and
        // returns.
        let status = self.status.take().map(|fail| {
            let zero = self.b.ins().f64const(0.0);
            self.b.ins().store(self.flags, zero, addr, 0);
            (total.clone(), addr, fail)
        });
        let main = self.main;
        self.b.ins().jump(main, &[]);
        for ((_, placeholder), &v) in order.iter().zip(&args).rev() {
            self.b.func.dfg.remove_block_param(*placeholder);
            self.b.func.dfg.change_to_alias(*placeholder, v);
        }
        let status = status.map(|(offset, at, fail)| {
            self.switch_to(fail);
            // The code of the failed check (see `Stop`) and its details.
            let cells = self.b.block_params(fail).to_vec();
            for (k, cell) in cells.into_iter().enumerate() {
                self.b.ins().store(self.flags, cell, at, 8 * k as i32);
            }
            self.b.ins().return_(&[]);
            offset
        });
        let workspace = match &status {
            Some(_) => SizeExpr::add(total, SizeExpr::K(crate::error::STATUS_CELLS)),
            None => total,
        };
        checks.push(workspace.clone());
        Ok(Plan {
            workspace,
            checks,
            status,
        })
    }
}
