//! Loops: every loop is bottom-tested (one guard before it, one compare-and-branch per
//! iteration) and carries its state in block parameters.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{F64, I64};
use cranelift_codegen::ir::{
    InstBuilder, MemFlagsData, StackSlot, StackSlotData, StackSlotKind, Type, Value,
};

use crate::error::{internal, unsupported, JitResult};
use crate::value::IntVal;

use super::{blockargs, Translator, MAX_BLOCK_PARAMS};

/// A loop's body: emits one iteration, given the index and the carried values, and
/// returns the next carried values.
type Body<'b, 'a> = dyn FnMut(&mut Translator<'a>, Value, &[Value]) -> JitResult<Vec<Value>> + 'b;

impl<'a> Translator<'a> {
    /// A bottom-tested loop of `count` iterations (from `count - 1` down to 0 if `rev`),
    /// carrying the values `init`; `body` gets the index and the carried values and returns
    /// the next ones. Returns the carried values after the loop.
    pub(super) fn loop_(
        &mut self,
        count: IntVal,
        rev: bool,
        init: Vec<Value>,
        body: &mut Body<'_, 'a>,
    ) -> JitResult<Vec<Value>> {
        self.loop_or_once(count, rev, false, init, body)
    }

    /// [`Translator::loop_`] of a `count` that is 0 or 1: the body runs once (index 0) if
    /// `count` is 1, without a back edge (the scalar tail of a loop of pairs).
    pub(super) fn at_most_once(
        &mut self,
        count: IntVal,
        init: Vec<Value>,
        body: &mut Body<'_, 'a>,
    ) -> JitResult<Vec<Value>> {
        self.loop_or_once(count, false, true, init, body)
    }

    /// [`Translator::loop_`], or [`Translator::at_most_once`] if `once`.
    fn loop_or_once(
        &mut self,
        count: IntVal,
        rev: bool,
        once: bool,
        init: Vec<Value>,
        body: &mut Body<'_, 'a>,
    ) -> JitResult<Vec<Value>> {
        let types: Vec<Type> = init
            .iter()
            .map(|&v| self.b.func.dfg.value_type(v))
            .collect();
        if let IntVal::Const(n) = count {
            if n <= 0 {
                return Ok(init);
            }
            // Once, as straight-line code: no blocks (a scatter of one element, a literal
            // of one). Long programs make many such loops, and every block costs the
            // register allocator a pass over the values live across it.
            if n == 1 {
                let zero = self.b.ins().iconst(I64, 0);
                return self.iteration(zero, rev, &init, &types, body);
            }
        }
        if init.len() >= MAX_BLOCK_PARAMS {
            return unsupported("a loop carrying this many values");
        }
        let body_b = self.b.create_block();
        let exit_b = self.b.create_block();
        let i = self.b.append_block_param(body_b, I64);
        let params: Vec<Value> = types
            .iter()
            .map(|&t| self.b.append_block_param(body_b, t))
            .collect();
        let outs: Vec<Value> = types
            .iter()
            .map(|&t| self.b.append_block_param(exit_b, t))
            .collect();
        let n = self.int_value(count);
        let start = if rev {
            self.b.ins().iadd_imm_s(n, -1)
        } else {
            self.b.ins().iconst(I64, 0)
        };
        let mut args = vec![start];
        args.extend_from_slice(&init);
        match count {
            IntVal::Const(_) => {
                self.b.ins().jump(body_b, &blockargs(&args));
            }
            IntVal::Ssa(_) => {
                self.b
                    .ins()
                    .brif(n, body_b, &blockargs(&args), exit_b, &blockargs(&init));
            }
        }
        self.switch_to(body_b);
        let out = self.iteration(i, rev, &params, &types, body)?;
        let mut next = Vec::with_capacity(out.len() + 1);
        if once {
            self.b.ins().jump(exit_b, &blockargs(&out));
        } else if rev {
            let i1 = self.b.ins().iadd_imm_s(i, -1);
            next.push(i1);
            next.extend_from_slice(&out);
            self.b
                .ins()
                .brif(i, body_b, &blockargs(&next), exit_b, &blockargs(&out));
        } else {
            let i1 = self.b.ins().iadd_imm_s(i, 1);
            let more = match count {
                IntVal::Const(k) => self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, i1, k),
                IntVal::Ssa(n) => self.b.ins().icmp(IntCC::UnsignedLessThan, i1, n),
            };
            next.push(i1);
            next.extend_from_slice(&out);
            self.b
                .ins()
                .brif(more, body_b, &blockargs(&next), exit_b, &blockargs(&out));
        }
        self.switch_to(exit_b);
        // The reals a loop leaves behind pass through a stack slot, which makes them new
        // values defined here (a stack load stays where it is): one that must survive a
        // later call (every float register is caller-saved) is then spilled here, once,
        // rather than at its definition inside the loop on every iteration, where the
        // register allocator puts it when the loop's block parameter and the value are one
        // live range.
        let mut relayed = Vec::with_capacity(outs.len());
        for v in outs {
            relayed.push(if self.b.func.dfg.value_type(v) == F64 {
                let slot = self.relay_slot();
                let addr = self.b.ins().stack_addr(I64, slot, 0);
                self.b.ins().store(MemFlagsData::trusted(), v, addr, 0);
                let bits = self.b.ins().atomic_load(I64, MemFlagsData::trusted(), addr);
                self.b.ins().bitcast(F64, MemFlagsData::new(), bits)
            } else {
                v
            });
        }
        Ok(relayed)
    }

    /// A stack slot of one real that what must be written nowhere goes to (nothing reads
    /// it): the element of a scatter whose position is outside its array.
    pub(super) fn discard_slot(&mut self) -> StackSlot {
        let s = self.discard.unwrap_or_else(|| self.real_slot());
        self.discard = Some(s);
        s
    }

    /// A new stack slot of one real (eight bytes, aligned to eight).
    fn real_slot(&mut self) -> StackSlot {
        self.b
            .create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 3))
    }

    /// One iteration of a loop's `body` at index `i`, carrying `params` (of `types`): the
    /// values it pins last until it ends, and it returns values of the same types.
    fn iteration(
        &mut self,
        i: Value,
        rev: bool,
        params: &[Value],
        types: &[Type],
        body: &mut Body<'_, 'a>,
    ) -> JitResult<Vec<Value>> {
        self.frames.push(Vec::new());
        self.counters.push((!rev).then_some(i));
        let out = body(self, i, params);
        self.counters.pop();
        let pinned = self.frames.pop();
        let out = out?;
        drop(pinned);
        let out_types: Vec<Type> = out.iter().map(|&v| self.b.func.dfg.value_type(v)).collect();
        if out_types != types {
            return internal("a loop body changes the types it carries");
        }
        Ok(out)
    }

    /// The stack slot loop results pass through.
    fn relay_slot(&mut self) -> StackSlot {
        let s = self.relay.unwrap_or_else(|| self.real_slot());
        self.relay = Some(s);
        s
    }
}
