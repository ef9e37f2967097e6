//! Math kernels in batches: a loop whose elements run math kernels runs in chunks of
//! [`BATCH_CHUNK`] elements, and each chunk twice. The first pass (*collect*) runs the
//! elements' code with every kernel's argument written to a scratch region of the stack
//! instead of the kernel (its value a placeholder, its stores left out); one call per
//! kernel site then applies the kernel to the whole chunk's arguments in place, on four
//! or eight lanes at a time (`crate::batch`, where Cranelift's code has two); the
//! second pass (*read*) runs the elements' code again, each kernel's value read from the
//! scratch region. Cranelift removes what the first pass computes that no argument needs.
//!
//! The two passes emit the same code from the same bindings ([`Replay`]) and meet the
//! same kernels in the same order: the `s`-th kernel the `c`-th copy of an iteration meets
//! is its site `s`, whose arguments and values lie at `s`'s own stack slot, element
//! `p * copies + c` for iteration `p` of the chunk (the copies of an iteration side by
//! side, so that the lanes pass pairs their stores and loads). The read pass checks it:
//! a site missing, added or of another kernel fails the lowering with
//! [`Retry::NoBatch`], which lowers the function again without batches.
//!
//! An argument the first pass cannot compute as the element would is left to an inline
//! kernel in both passes: one that depends on the loop's state (a fold's accumulator: the
//! first pass does not carry it), on another kernel's value (only a placeholder then), or
//! on memory that the element's code writes (the first pass writes nothing). The first
//! pass finds these by following the argument's operands back to where the pass started
//! ([`Batch::tainted`]). A kernel of a value computed before the loop is inline too (it
//! runs once per call of the kernel in both passes alike, and Cranelift may hoist it).
//!
//! Only loops of light elements (no loop inside, see `pairs_well` and `blocked_loop`)
//! batch, never one inside a batched loop, and never one whose elements step a scan
//! computed where it is read (its state lives in the builder's variables, which the first
//! pass would advance). On the host's instance a loop inside another loop batches only
//! where its count is large ([`NESTED_ELEMENTS`]): a call per run of a short inner loop
//! costs more than it gains. A count known at compile time decides then; one known only
//! at run time (a row's length) decides at run time, between the batched loop and the
//! inline one, both emitted ([`Translator::by_count`]).
//!
//! The batch function is called through a function of the module in the `preserve_all`
//! convention ([`trampoline`]), which saves and restores what the host convention lets the
//! callee clobber, so the loop around the call keeps its values in registers.

use std::rc::Rc;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{F64, I64};
use cranelift_codegen::ir::Signature;
use cranelift_codegen::ir::{
    AbiParam, FuncRef, InstBuilder, InstructionData, MemFlagsData, StackSlot, StackSlotData,
    StackSlotKind, Value, ValueDef,
};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{FuncId, FuncOrDataId, Linkage, Module};
use unfad_kernels::Kernel;
use unfad_syntax::fast_hash::{FastMap as HashMap, FastSet as HashSet};
use unfad_syntax::{Arena, BinOp, ExprId, Node, Partial, UnOp};

use crate::batch::{self as calls, Width};
use crate::error::{internal, JitResult, Retry};
use crate::value::{Arr, IntVal, Kind};

use super::blocked::{Replay, Step};
use super::folds::reads_scan;
use super::kernels::{codegen_error, local_function};
use super::prologue::PrologueValue;
use super::Translator;

/// Elements per chunk of a batched loop: each kernel site's scratch region holds this
/// many reals (2 KiB): long enough that a call's cost is small beside the kernels' (64
/// elements ran 10-15% slower on `exp`-heavy loops), short enough that a few sites'
/// arguments stay in the first-level cache.
pub(crate) const BATCH_CHUNK: usize = 256;

/// A loop with a known count batches only from this many elements on.
const MIN_ELEMENTS: i64 = 16;

/// A loop inside another batches from this many elements on: with a count known at
/// compile time, the batched loop alone is emitted; with a count known only at run time,
/// both loops, and the count chooses ([`Translator::by_count`]). Sums of rows of a kernel
/// on an Intel Xeon (AVX-512), batched against inline: rows of 8, `exp` and `log` 1.2-1.5x
/// slower (`tanh` 1.07x faster); of 12, even; of 16, `exp` 1.05x, `log` 1.37x and `tanh`
/// 1.8x faster; `log(sum(exp))` of rows of 32 1.3x and of 100 2x faster.
const NESTED_ELEMENTS: i64 = 16;

/// Whether a loop batches its kernels ([`Translator::batches`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Batches {
    /// Its kernels stay inline.
    No,
    /// In chunks, batched.
    Yes,
    /// Batched where its count, known at run time only, is at least [`NESTED_ELEMENTS`]
    /// (a loop inside another): both loops are emitted.
    ByCount,
}

/// One iteration of a batched loop: its index and state, the next state.
pub(super) type Iteration<'b, 'a> =
    dyn FnMut(&mut Translator<'a>, Value, &[Value]) -> JitResult<Vec<Value>> + 'b;

/// How a function's loops batch their kernels (see the module's documentation).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Batching {
    /// The instance the batch functions run.
    pub width: Width,
    /// Elements per chunk ([`BATCH_CHUNK`]; tests take fewer, to run many chunks).
    pub chunk: usize,
    /// Whether loops inside other loops batch whatever their count (tests: see
    /// [`Translator::batches`]).
    pub nested: bool,
}

impl Batching {
    /// Batches on the host's widest instance, if it is wider than the JIT's own code.
    pub(crate) fn host() -> Option<Batching> {
        Width::host().map(|width| Batching {
            width,
            chunk: BATCH_CHUNK,
            nested: false,
        })
    }
}

/// A kernel site of an iteration's copy.
#[derive(Clone, Copy, Debug)]
struct Site {
    kernel: Kernel,
    /// The argument, as the collecting pass computed it.
    arg: Value,
    /// Computed inline in both passes (see [`Batch::tainted`]).
    inline: bool,
}

/// The state of a batched loop's pass.
pub(super) struct Batch {
    /// The collecting pass (else the reading one).
    collect: bool,
    /// The elements an iteration computes.
    copies: usize,
    /// The elements a chunk holds: each site's stack slot has this many reals.
    elements: usize,
    /// The pass's loop index: the iteration within the chunk.
    iteration: Option<Value>,
    /// The copy being emitted, and its next site.
    copy: usize,
    next: usize,
    /// Each copy's sites, as the collecting pass met them.
    sites: Vec<Vec<Site>>,
    /// Each site's scratch region.
    slots: Vec<StackSlot>,
    /// Values numbered from this one on are the pass's own; those before it were
    /// computed before the pass.
    first_value: u32,
    /// The state the collecting pass hands the elements (not carried from one to the next).
    state: HashSet<Value>,
    /// The collecting pass's placeholders of kernel values.
    placeholders: HashSet<Value>,
    /// The buffer each of the collecting pass's loads read (`None`: unknown).
    load_roots: HashMap<Value, Option<Value>>,
    /// The buffers the elements' code writes (left out by the collecting pass).
    written: Vec<Option<Value>>,
    /// A site the reading pass met differs from the collecting pass's.
    mismatch: bool,
    /// Whether a value of the pass depends on its loop index (see [`Batch::varies`]).
    varies: HashMap<Value, bool>,
}

impl Batch {
    /// Whether `v` depends on the pass's loop index: computed from it, or from what is
    /// loaded at addresses computed from it. A kernel of a value that does not is the same
    /// in every copy of an iteration (value numbering computes it once for all of them), so
    /// it is inline, and every copy meets the same kernels.
    fn varies(&mut self, func: &cranelift_codegen::ir::Function, v: Value) -> bool {
        let mut stack = vec![(func.dfg.resolve_aliases(v), false)];
        while let Some((v, expanded)) = stack.pop() {
            if self.varies.contains_key(&v) {
                continue;
            }
            if v.as_u32() < self.first_value || self.placeholders.contains(&v) {
                self.varies.insert(v, self.placeholders.contains(&v));
                continue;
            }
            let inst = match func.dfg.value_def(v) {
                ValueDef::Result(inst, _) => inst,
                ValueDef::Param(..) | ValueDef::Union(..) => {
                    self.varies.insert(v, Some(v) == self.iteration);
                    continue;
                }
            };
            let args: Vec<Value> = func
                .dfg
                .inst_values(inst)
                .map(|a| func.dfg.resolve_aliases(a))
                .collect();
            if !expanded {
                stack.push((v, true));
                stack.extend(args.into_iter().map(|a| (a, false)));
                continue;
            }
            let d = args.iter().any(|a| self.varies.get(a) == Some(&true));
            self.varies.insert(v, d);
        }
        self.varies.get(&func.dfg.resolve_aliases(v)) == Some(&true)
    }

    /// Whether the collecting pass's `v` differs from what the element computes: it
    /// depends on the state, on a kernel's placeholder, or on a load from memory the
    /// element writes, through operations of the pass.
    fn tainted(
        &self,
        func: &cranelift_codegen::ir::Function,
        main: cranelift_codegen::ir::Block,
        v: Value,
    ) -> bool {
        let mut memo: HashMap<Value, bool> = HashMap::default();
        let mut stack = vec![(v, false)];
        while let Some((v, expanded)) = stack.pop() {
            let v = func.dfg.resolve_aliases(v);
            if memo.contains_key(&v) {
                continue;
            }
            if self.state.contains(&v) || self.placeholders.contains(&v) {
                memo.insert(v, true);
                continue;
            }
            if v.as_u32() < self.first_value {
                memo.insert(v, false);
                continue;
            }
            let inst = match func.dfg.value_def(v) {
                ValueDef::Result(inst, _) => inst,
                // The pass's loop index is computed alike in both passes; any other block
                // parameter (a join inside the element) is not followed.
                // The prologue's values are parameters of the body's first block.
                ValueDef::Param(block, _) => {
                    memo.insert(v, Some(v) != self.iteration && block != main);
                    continue;
                }
                ValueDef::Union(..) => {
                    memo.insert(v, true);
                    continue;
                }
            };
            let args: Vec<Value> = func.dfg.inst_values(inst).collect();
            if !expanded {
                let opcode = func.dfg.insts[inst].opcode();
                if opcode.can_load() && self.reads_written(func, inst, v) {
                    memo.insert(v, true);
                    continue;
                }
                stack.push((v, true));
                for a in args {
                    stack.push((a, false));
                }
                continue;
            }
            let t = args
                .iter()
                .any(|a| memo.get(&func.dfg.resolve_aliases(*a)) == Some(&true));
            memo.insert(v, t);
        }
        memo.get(&func.dfg.resolve_aliases(v)) == Some(&true)
    }

    /// Whether the load `inst` (of `v`) may read memory the element's code writes: a
    /// load of the pass's of a buffer written (or any, once a store went to an unknown
    /// buffer), or a load of something else from memory that may change.
    fn reads_written(
        &self,
        func: &cranelift_codegen::ir::Function,
        inst: cranelift_codegen::ir::Inst,
        v: Value,
    ) -> bool {
        let unknown = self.written.contains(&None);
        match self.load_roots.get(&v) {
            Some(Some(root)) => unknown || self.written.contains(&Some(*root)),
            Some(None) => !self.written.is_empty(),
            None => match func.dfg.insts[inst] {
                InstructionData::Load { flags, .. } => {
                    !func.dfg.mem_flags[flags].readonly() && !self.written.is_empty()
                }
                _ => true,
            },
        }
    }
}

impl<'a> Translator<'a> {
    /// Whether a loop of `count` elements reading `reads` and running `bodies` batches
    /// its kernels: batching is on, the loop is not inside a batched one, its elements
    /// run a kernel and step no scan, and it has enough elements (inside another loop,
    /// perhaps only at run time).
    pub(super) fn batches(&self, count: IntVal, reads: &[&Rc<Arr>], bodies: &[ExprId]) -> Batches {
        let Some(batching) = self.batching else {
            return Batches::No;
        };
        if self.batch.is_some() {
            return Batches::No;
        }
        if matches!(count, IntVal::Const(n) if n < MIN_ELEMENTS) {
            return Batches::No;
        }
        if reads.iter().any(|a| reads_scan(a)) {
            return Batches::No;
        }
        let arena = self.arena;
        if !(reads.iter().any(|a| arr_has_kernel(arena, a))
            || bodies.iter().any(|&e| has_kernel(arena, e)))
        {
            return Batches::No;
        }
        // Inside another loop, a call per run of the inner loop costs more than the batch
        // gains when the run is a few elements (a softmax's ten classes per row).
        let nested = !self.counters.is_empty() && !batching.nested;
        match count {
            _ if !nested => Batches::Yes,
            IntVal::Const(n) if n >= NESTED_ELEMENTS => Batches::Yes,
            IntVal::Const(_) => Batches::No,
            IntVal::Ssa(_) => Batches::ByCount,
        }
    }

    /// `run(self, batched)` for a loop of `count` elements as `batches` says
    /// ([`Translator::batches`]). For [`Batches::ByCount`] (`count` known at run time
    /// only): batched where `count` is at least [`NESTED_ELEMENTS`], inline elsewhere;
    /// both loops are emitted, each from the bindings of `replay`, and what follows starts
    /// from them again (neither loop's values reach it but the state `run` returns, which
    /// both loops make of the same types).
    pub(super) fn by_count(
        &mut self,
        batches: Batches,
        count: IntVal,
        replay: &Replay,
        run: &mut dyn FnMut(&mut Self, bool) -> JitResult<Vec<Value>>,
    ) -> JitResult<Vec<Value>> {
        match batches {
            Batches::No => return run(self, false),
            Batches::Yes => return run(self, true),
            Batches::ByCount => {}
        }
        self.split_by_count(count, NESTED_ELEMENTS, replay, run)
    }

    /// `run(self, true)` where `count` (known at run time only) is at least `at_least`,
    /// `run(self, false)` elsewhere: both are emitted, each from the bindings of `replay`,
    /// and what follows starts from them again (neither branch's values reach it but the
    /// state `run` returns, which both make of the same types).
    pub(super) fn split_by_count(
        &mut self,
        count: IntVal,
        at_least: i64,
        replay: &Replay,
        run: &mut dyn FnMut(&mut Self, bool) -> JitResult<Vec<Value>>,
    ) -> JitResult<Vec<Value>> {
        let n = self.int_value(count);
        let long = self
            .b
            .ins()
            .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, n, at_least);
        let batched = self.b.create_block();
        let inline = self.b.create_block();
        let join = self.b.create_block();
        self.b.ins().brif(long, batched, &[], inline, &[]);
        self.switch_to(batched);
        let a = run(self, true)?;
        let types: Vec<_> = a.iter().map(|&v| self.b.func.dfg.value_type(v)).collect();
        let outs: Vec<Value> = types
            .iter()
            .map(|&t| self.b.append_block_param(join, t))
            .collect();
        self.b.ins().jump(join, &super::blockargs(&a));
        self.rewind(replay);
        self.switch_to(inline);
        let b = run(self, false)?;
        let same = b.len() == a.len()
            && b.iter()
                .zip(&types)
                .all(|(&v, &t)| self.b.func.dfg.value_type(v) == t);
        if !same {
            return internal("the batched and inline loops carry different states");
        }
        self.b.ins().jump(join, &super::blockargs(&b));
        self.rewind(replay);
        self.switch_to(join);
        Ok(outs)
    }

    /// `iterations` iterations of `iteration` (each computing `copies` elements, each
    /// copy through [`Translator::copy_step`]) carrying `init`, in chunks whose kernels
    /// are batched (see the module's documentation); `replay` is where each pass starts.
    /// Returns the state after the last iteration.
    pub(super) fn chunked(
        &mut self,
        iterations: IntVal,
        copies: usize,
        init: Vec<Value>,
        replay: &Replay,
        iteration: &mut Iteration<'_, 'a>,
    ) -> JitResult<Vec<Value>> {
        let Some(batching) = self.batching else {
            return internal("a batched loop without batching");
        };
        let per = (batching.chunk / copies).max(1).next_power_of_two() as i64;
        let chunks = match iterations {
            IntVal::Const(q) => IntVal::Const((q + per - 1) / per),
            IntVal::Ssa(q) => {
                // `per` is a power of two: a shift, where a division took tens of cycles.
                let up = self.b.ins().iadd_imm_s(q, per - 1);
                IntVal::Ssa(self.b.ins().ushr_imm_s(up, per.trailing_zeros() as i64))
            }
        };
        let total = self.int_value(iterations);
        self.loop_(chunks, false, init, &mut |t, k, cur| {
            let base = t.b.ins().imul_imm_s(k, per);
            let left = t.b.ins().isub(total, base);
            let most = t.b.ins().iconst(I64, per);
            let len = t.b.ins().umin(left, most);
            // The collecting pass.
            t.rewind(replay);
            t.forget_block();
            t.batch = Some(Batch {
                collect: true,
                copies,
                elements: per as usize * copies,
                iteration: None,
                copy: 0,
                next: 0,
                sites: Vec::new(),
                slots: Vec::new(),
                first_value: t.b.func.dfg.num_values() as u32,
                state: cur.iter().copied().collect(),
                placeholders: HashSet::default(),
                load_roots: HashMap::default(),
                written: Vec::new(),
                mismatch: false,
                varies: HashMap::default(),
            });
            let collected = t.loop_(IntVal::Ssa(len), false, Vec::new(), &mut |t, p, _| {
                if let Some(b) = &mut t.batch {
                    b.iteration = Some(p);
                }
                let it = t.b.ins().iadd(base, p);
                iteration(t, it, cur)?;
                Ok(Vec::new())
            });
            let Some(mut batch) = t.batch.take() else {
                return internal("a batched loop lost its batch");
            };
            collected?;
            let calls = t.decide(&mut batch)?;
            // The kernels, a call per site, on the chunk's `len * copies` elements.
            if !calls.is_empty() {
                let f = t.batch_function(batching.width)?;
                let n = t.b.ins().imul_imm_s(len, copies as i64);
                for (s, kernel) in calls {
                    if batching.width == Width::Avx512 {
                        // Measured now, once per process, rather than in a run.
                        crate::batch::prefers_avx2(kernel);
                    }
                    let at = t.prologue_value(PrologueValue::BatchSlot(batch.slots[s]));
                    let k = t.b.ins().iconst(I64, calls::index(kernel) as i64);
                    t.b.ins().call(f, &[k, at, n]);
                }
            }
            // The reading pass.
            t.rewind(replay);
            t.forget_block();
            batch.collect = false;
            batch.iteration = None;
            batch.varies.clear();
            batch.first_value = t.b.func.dfg.num_values() as u32;
            t.batch = Some(batch);
            let out = t.loop_(IntVal::Ssa(len), false, cur.to_vec(), &mut |t, p, st| {
                if let Some(b) = &mut t.batch {
                    b.iteration = Some(p);
                }
                let it = t.b.ins().iadd(base, p);
                iteration(t, it, st)
            });
            let batch = t.batch.take();
            let out = out?;
            if batch.is_none_or(|b| b.mismatch) {
                t.retry = Some(Retry::NoBatch);
                return internal("the passes of a batched loop met different kernels");
            }
            Ok(out)
        })
    }

    /// Copy `c` of an iteration: `step` at index `i` with state `cur`, its kernels
    /// numbered from the copy's first (see the module's documentation).
    pub(super) fn copy_step(
        &mut self,
        c: usize,
        i: Value,
        cur: &[Value],
        step: &mut Step<'_, 'a>,
    ) -> JitResult<Vec<Value>> {
        if let Some(b) = &mut self.batch {
            b.copy = c;
            b.next = 0;
            if b.collect && b.sites.len() <= c {
                b.sites.resize(c + 1, Vec::new());
            }
        }
        let r = step(self, i, cur);
        if let Some(b) = &mut self.batch {
            if !b.collect && b.sites.get(c).map(Vec::len) != Some(b.next) {
                b.mismatch = true;
            }
        }
        r
    }

    /// Kernel `k` on `x` in a batched loop's pass, or `None` where it is computed inline
    /// (outside a batched loop, of a value computed before the pass, or a site left
    /// inline).
    pub(super) fn batched_kernel(&mut self, k: Kernel, x: Value) -> JitResult<Option<Value>> {
        let x = self.b.func.dfg.resolve_aliases(x);
        let Some(b) = &mut self.batch else {
            return Ok(None);
        };
        let prologue =
            matches!(self.b.func.dfg.value_def(x), ValueDef::Param(blk, _) if blk == self.main);
        let before = x.as_u32() < b.first_value || prologue;
        if before && !(b.collect && b.state.contains(&x)) {
            return Ok(None);
        }
        if !b.varies(self.b.func, x) {
            return Ok(None);
        }
        let (c, s, copies, collect) = (b.copy, b.next, b.copies, b.collect);
        let Some(p) = b.iteration else {
            return internal("a batched kernel outside its pass's loop");
        };
        b.next += 1;
        if collect {
            if s == b.slots.len() {
                let bytes = (8 * b.elements) as u32;
                let data = StackSlotData::new(StackSlotKind::ExplicitSlot, bytes, 4);
                b.slots.push(self.b.create_sized_stack_slot(data));
            }
            b.sites[c].push(Site {
                kernel: k,
                arg: x,
                inline: false,
            });
        } else {
            match b.sites.get(c).and_then(|sites| sites.get(s)) {
                Some(site) if site.kernel == k && !site.inline => {}
                Some(site) if site.kernel == k => return Ok(None),
                _ => {
                    b.mismatch = true;
                    return Ok(None);
                }
            }
        }
        let slot = b.slots[s];
        let e = self.b.ins().imul_imm_s(p, copies as i64);
        let e = self.b.ins().iadd_imm_s(e, c as i64);
        let base = self.prologue_value(PrologueValue::BatchSlot(slot));
        self.roots.insert(base, base);
        let at = self.addr(base, IntVal::Ssa(e), IntVal::Const(1));
        let flags = MemFlagsData::trusted();
        if collect {
            // The argument goes to the scratch region; the kernel's value is a placeholder
            // (a constant, so that nothing between the two copies' stores keeps the lanes
            // pass from pairing them), which only arguments left inline may read.
            self.b.ins().store(flags, x, at, 0);
            let v = self.b.ins().f64const(0.0);
            if let Some(b) = &mut self.batch {
                b.placeholders.insert(v);
            }
            return Ok(Some(v));
        }
        Ok(Some(self.b.ins().load(F64, flags, at, 0)))
    }

    /// In a collecting pass: whether a store is left out (it is, recording its buffer).
    pub(super) fn collecting_store(&mut self, addr: Value) -> bool {
        let root = self.roots.get(&addr).copied();
        match &mut self.batch {
            Some(b) if b.collect => {
                b.written.push(root);
                true
            }
            _ => false,
        }
    }

    /// In a collecting pass: record the buffer the load `v` (from `addr`) read.
    pub(super) fn collecting_load(&mut self, addr: Value, v: Value) {
        let root = self.roots.get(&addr).copied();
        if let Some(b) = &mut self.batch {
            if b.collect {
                b.load_roots.insert(v, root);
            }
        }
    }

    /// In a collecting pass: the elements step a scan, which a batch cannot (see the
    /// module's documentation): the function is lowered again without batches.
    pub(super) fn refuse_scan_in_batch(&mut self) -> JitResult<()> {
        if self.batch.is_some() {
            self.retry = Some(Retry::NoBatch);
            return internal("a batched loop steps a scan");
        }
        Ok(())
    }

    /// After the collecting pass: which sites stay inline, and the sites to call the
    /// batch function on (with their kernel). Every copy must have met the same kernels.
    fn decide(&mut self, batch: &mut Batch) -> JitResult<Vec<(usize, Kernel)>> {
        let first = batch.sites.first().cloned().unwrap_or_default();
        let alike = batch.sites.iter().all(|sites| {
            sites.len() == first.len()
                && sites.iter().zip(&first).all(|(a, b)| a.kernel == b.kernel)
        });
        if !alike {
            self.retry = Some(Retry::NoBatch);
            return internal("the copies of a batched loop's iteration met different kernels");
        }
        let func = &self.b.func;
        let mut inline = Vec::new();
        for sites in &batch.sites {
            inline.push(
                sites
                    .iter()
                    .map(|site| batch.tainted(func, self.main, site.arg))
                    .collect::<Vec<_>>(),
            );
        }
        for (sites, flags) in batch.sites.iter_mut().zip(inline) {
            for (site, t) in sites.iter_mut().zip(flags) {
                site.inline = t;
            }
        }
        Ok((0..first.len())
            .filter(|&s| batch.sites.iter().any(|sites| !sites[s].inline))
            .map(|s| (s, first[s].kernel))
            .collect())
    }

    /// The batch function of `width` (through its trampoline, see [`trampoline`]),
    /// declared in the function.
    fn batch_function(&mut self, width: Width) -> JitResult<FuncRef> {
        if let Some(f) = self.batch_fn {
            return Ok(f);
        }
        let id = trampoline(&mut *self.module, width)?;
        let f = self.module.declare_func_in_func(id, self.b.func);
        self.batch_fn = Some(f);
        Ok(f)
    }
}

/// `(kernel, address, length)`, no result, in the calling convention `cc`.
fn batch_signature(cc: CallConv) -> Signature {
    let mut sig = Signature::new(cc);
    for _ in 0..3 {
        sig.params.push(AbiParam::new(I64));
    }
    sig
}

/// The symbol of the module's trampoline to the batch function of `width`.
fn trampoline_name(width: Width) -> String {
    format!("{}_preserving", width.symbol())
}

/// The module's function that calls the batch function of `width` and preserves every
/// register: its calling convention (`preserve_all`) makes it save and restore what the
/// call clobbers, so that a loop calling it keeps its values in registers. In the host's
/// convention every float register is the callee's to clobber, and a batched loop inside
/// another loop made the register allocator keep the outer loop's values on the stack
/// through its inner loops: a softmax's gradient ran 1.3 times slower than without
/// batches. Declared and compiled at its first use in the module.
fn trampoline(module: &mut dyn Module, width: Width) -> JitResult<FuncId> {
    let sig = batch_signature(CallConv::PreserveAll);
    local_function(module, &trampoline_name(width), &sig, &mut |m, id, ctx| {
        build_trampoline(m, width, id, ctx)
    })
}

/// The trampoline `id` of `width` (see [`trampoline`]), built into `ctx`.
fn build_trampoline(
    module: &mut dyn Module,
    width: Width,
    id: FuncId,
    ctx: &mut cranelift_codegen::Context,
) -> JitResult<()> {
    let host = batch_signature(module.isa().default_call_conv());
    let callee = module
        .declare_function(width.symbol(), Linkage::Import, &host)
        .map_err(codegen_error)?;
    ctx.func.signature = batch_signature(CallConv::PreserveAll);
    ctx.func.name = cranelift_codegen::ir::UserFuncName::user(0, id.as_u32());
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let args = b.block_params(entry).to_vec();
    let f = module.declare_func_in_func(callee, b.func);
    b.ins().call(f, &args);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(module.isa().frontend_config());
    Ok(())
}

/// The CLIF of the trampolines `module` has (see [`trampoline`]), for printing.
pub(crate) fn trampolines_text(module: &mut dyn Module) -> JitResult<String> {
    let mut text = String::new();
    for width in [Width::Avx512, Width::Avx2, Width::Portable] {
        if let Some(FuncOrDataId::Func(id)) = module.get_name(&trampoline_name(width)) {
            let mut ctx = module.make_context();
            build_trampoline(module, width, id, &mut ctx)?;
            text.push_str(&format!(
                "\n; the trampoline to `{}`\n{}",
                width.symbol(),
                ctx.func.display()
            ));
        }
    }
    Ok(text)
}

/// Whether computing an element of `a` runs a kernel (the functions of the maps it reads).
fn arr_has_kernel(arena: &Arena, a: &Arr) -> bool {
    match &a.kind {
        Kind::Map { f, src, .. } => has_kernel(arena, *f) || arr_has_kernel(arena, src),
        Kind::Map2 { f, a: x, b: y, .. } => {
            has_kernel(arena, *f) || arr_has_kernel(arena, x) || arr_has_kernel(arena, y)
        }
        Kind::Scan(scan) => has_kernel(arena, scan.f) || arr_has_kernel(arena, &scan.src),
        Kind::Pad(p) => arr_has_kernel(arena, &p.src),
        Kind::Mem { .. } | Kind::Fill { .. } | Kind::Iota { .. } => false,
    }
}

/// Whether the expression `e` applies a math kernel (or a derivative that does).
fn has_kernel(arena: &Arena, e: ExprId) -> bool {
    let mut found = false;
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match arena[e] {
            Node::Op1(UnOp::Partial(Partial::NegSin), _) => found = true,
            Node::Op1(op, _) if op.kernel().is_some() => found = true,
            Node::Op2(BinOp::Partial(_), _, _) => found = true,
            _ => {}
        }
        if found {
            return true;
        }
        arena.for_each_child(e, |c| stack.push(c));
    }
    false
}
