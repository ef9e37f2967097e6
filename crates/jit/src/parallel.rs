//! Parallel compilation (see "Parallel compilation" in the crate docs): a large term cut
//! in two, the parts compiled on two threads, and the entry that runs them; and the
//! Cranelift contexts kept between compilations.

use std::sync::mpsc::{self, TrySendError};
use std::sync::{Mutex, OnceLock};

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{
    types, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Value,
};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Module};
use unfad_syntax::{Arena, Func};

use crate::codegen::{
    build_part, declare_in, host_isa, new_module, type_in_place, verify, Built, ENTRY,
};
use crate::compiled::{finish, Compiled};
use crate::error::{JitError, JitResult, STATUS_CELLS};
use crate::layout::{Component, PathStep, Shape, SizeExpr};
use crate::lower::SizeValues;
use crate::shape::SShape;
use crate::{compile, split};

/// Cranelift contexts kept between compilations: a context that is reused keeps its
/// allocations (the register allocator's above all), which a new one makes again.
static CONTEXTS: Mutex<Vec<Context>> = Mutex::new(Vec::new());

/// Contexts kept at most (three per compilation running at once, for two).
const KEPT_CONTEXTS: usize = 6;

/// A context for `module`'s functions, kept from an earlier compilation if there is one.
pub(crate) fn take_context(module: &JITModule) -> Context {
    let kept = CONTEXTS.lock().ok().and_then(|mut v| v.pop());
    match kept {
        Some(mut ctx) => {
            module.clear_context(&mut ctx);
            ctx
        }
        None => module.make_context(),
    }
}

/// Keep `ctxs` for later compilations (emptied when taken).
pub(crate) fn keep_contexts(ctxs: impl IntoIterator<Item = Context>) {
    if let Ok(mut v) = CONTEXTS.lock() {
        for ctx in ctxs {
            if v.len() < KEPT_CONTEXTS {
                v.push(ctx);
            }
        }
    }
}

/// [`compile`], cut in two for a large term on a host with two cores or more: Cranelift
/// compiles the parts on two threads (see "Parallel compilation" in the crate docs). A
/// term that is small, or that no cut divides fairly, is compiled whole. Adds the nodes
/// of the first part's result to `arena` (and types `func` there if it is not typed).
///
/// A long term ([`split::CHUNK_MIN_NODES`] nodes or more) is cut into many small parts
/// instead, whatever the cores, compiled on every core there is (see [`split::chunks`]).
pub fn compile_parallel(arena: &mut Arena, func: &Func) -> Result<Compiled, JitError> {
    type_in_place(arena, func)?;
    if let Some(chunks) = split::chunks(arena, func) {
        match compile_chunks(arena, &chunks) {
            Ok(Some(compiled)) => return Ok(compiled),
            Ok(None) => {}
            Err(JitError::Unsupported(_)) => return compile(arena, func),
            Err(e) => return Err(e),
        }
    }
    if cores() < 2 {
        return compile(arena, func);
    }
    match split::split(arena, func) {
        // A part may lack what the whole shows: the length of an `iota` whose int crosses
        // the cut is a value there, not a size. The whole function is compiled instead.
        Some(parts) => match compile_parts(arena, func, &parts) {
            Err(JitError::Unsupported(_)) => compile(arena, func),
            r => r,
        },
        None => compile(arena, func),
    }
}

/// [`compile`] for a function best kept whole (a primal: one function fuses what a cut
/// would store), except a long one, cut into chunks as [`compile_parallel`] cuts it:
/// compiling a function of `split::CHUNK_MIN_NODES` nodes or more whole takes a time
/// super-linear in its length (issue 23).
pub fn compile_whole_unless_long(arena: &mut Arena, func: &Func) -> Result<Compiled, JitError> {
    type_in_place(arena, func)?;
    if let Some(chunks) = split::chunks(arena, func) {
        match compile_chunks(arena, &chunks) {
            Ok(Some(compiled)) => return Ok(compiled),
            Ok(None) | Err(JitError::Unsupported(_)) => {}
            Err(e) => return Err(e),
        }
    }
    compile(arena, func)
}

/// [`compile_parallel`] with the cut after statement `at` of the chain whatever the
/// sizes ([`compile`] where there is no such cut), the first part computing the result's
/// components it can if `take`: the cuts tested on small terms.
#[doc(hidden)]
pub fn compile_split_at(
    arena: &mut Arena,
    func: &Func,
    at: usize,
    take: bool,
) -> Result<Compiled, JitError> {
    type_in_place(arena, func)?;
    match split::split_at(arena, func, split::Cut { at, take }) {
        Some(parts) => compile_parts(arena, func, &parts),
        None => compile(arena, func),
    }
}

/// The two parts of `func` and the entry running them, compiled on two threads.
fn compile_parts(arena: &Arena, func: &Func, parts: &split::Parts) -> Result<Compiled, JitError> {
    let isa = host_isa()?;
    let mut module = new_module()?;
    let mut entry = take_context(&module);
    let mut ctxs = [take_context(&module), take_context(&module)];
    // The first part is lowered first: the second takes the shapes of the crossing values
    // from it. Then the larger part compiles on another thread while this one compiles
    // the other part and the entry.
    let [first_ctx, second_ctx] = &mut ctxs;
    let ((id1, b1), (id2, b2)) = build_parts(arena, parts, &mut module, first_ctx, second_ctx)?;
    let (far_ctx, near_ctx) = if parts.first_larger {
        (first_ctx, second_ctx)
    } else {
        (second_ctx, first_ctx)
    };
    let built = std::thread::scope(|s| {
        let other = std::thread::Builder::new()
            .name("unfad-jit".into())
            .spawn_scoped(s, || compile_code(far_ctx, &*isa));
        let mine = (|| {
            let Some(lens) = crossing_lens(&b1, &b2) else {
                return Ok(None);
            };
            let Some(results) = merge_results(&b1, &b2, parts, lens.len()) else {
                return Ok(None);
            };
            let id0 = build_entry(
                &mut module,
                &mut entry,
                [id1, id2],
                [&b1, &b2],
                &lens,
                &results,
            )?;
            compile_code(near_ctx, &*isa)?;
            compile_code(&mut entry, &*isa)?;
            Ok(Some((id0, lens, results)))
        })();
        match other {
            Ok(h) => h
                .join()
                .unwrap_or_else(|_| Err(JitError::Internal("the compiling thread panicked".into())))
                .and(mine),
            // No second thread: compiled whole below.
            Err(_) => Ok(None),
        }
    })?;
    let ids = [id1, id2];
    let Some((id0, lens, results)) = built else {
        return compile(arena, func);
    };
    for (id, ctx) in ids.into_iter().zip(&ctxs).chain([(id0, &entry)]) {
        define_compiled(&mut module, id, ctx)?;
    }
    let [c1, c2] = ctxs;
    keep_contexts([c1, c2, entry]);
    let parts_workspace = SizeExpr::max_of([b1.workspace.clone(), b2.workspace.clone()]);
    // The function's status cell, if a part has one, follows the parts' workspace.
    let status = (b1.status.is_some() || b2.status.is_some())
        .then(|| SizeExpr::sum(lens.iter().cloned().chain([parts_workspace.clone()])));
    let workspace = SizeExpr::sum(
        lens.iter()
            .cloned()
            .chain([parts_workspace])
            .chain(status.as_ref().map(|_| SizeExpr::K(STATUS_CELLS))),
    );
    let mut checks = b1.checks;
    checks.extend(b2.checks);
    checks.extend(lens);
    checks.push(workspace.clone());
    let built = Built {
        size_vars: b1.size_vars,
        param_names: b1.param_names,
        inputs: b1.inputs,
        outputs: results.outputs,
        param_shapes: b1.param_shapes,
        result_shape: results.shape,
        result: b2.result,
        workspace,
        checks,
        status,
        int_params: b1.int_params,
    };
    finish(module, id0, built, 2)
}

/// The parts of a function cut into chunks, compiled on every core (the parts are
/// lowered here one after the other, each handed to the compiling threads when lowered),
/// and the entry that runs them in order; `None` if the parts do not agree on the
/// values crossing between them (the function is then compiled as if not cut).
fn compile_chunks(arena: &Arena, chunks: &split::Chunks) -> JitResult<Option<Compiled>> {
    let isa = crate::codegen::long_code_isa()?;
    let mut module = new_module()?;
    let n = chunks.parts.len();
    // The first part takes the function's parameters only; the others add their imports.
    let own = chunks.parts.first().map_or(0, |p| p.params.len())
        - chunks.imports.first().map_or(0, Vec::len);
    // A short queue: when it is full, this thread compiles the part it lowered, so that
    // lowered parts do not pile up (each holds its function's IR).
    let (to_compile, queue) = mpsc::sync_channel::<(usize, FuncId, Context)>(cores());
    let queue = Mutex::new(queue);
    let (done, compiled) = mpsc::channel::<(usize, JitResult<Code>)>();
    let lowered = std::thread::scope(|s| {
        for _ in 1..cores() {
            let (queue, done, isa) = (&queue, done.clone(), &*isa);
            // Without another thread, this one compiles every part below.
            let _ = std::thread::Builder::new()
                .name("unfad-jit".into())
                .spawn_scoped(s, move || compile_queued(queue, &done, isa));
        }
        let lowered = (|| {
            let mut ids = Vec::with_capacity(n);
            let mut built = Vec::with_capacity(n);
            for (j, part) in chunks.parts.iter().enumerate() {
                let mut ctx = take_context(&module);
                let (id, b) = build_part(
                    arena,
                    part,
                    own,
                    &[],
                    &mut module,
                    &mut ctx,
                    &format!("unfad_part{j}"),
                    true,
                )?;
                ids.push(id);
                built.push(b);
                if let Err(TrySendError::Full(item) | TrySendError::Disconnected(item)) =
                    to_compile.try_send((j, id, ctx))
                {
                    compile_one(item, &done, &*isa);
                }
            }
            let Some(plan) = Crossing::plan(&built, chunks) else {
                return Ok(None);
            };
            let mut entry = take_context(&module);
            let id0 = build_chunk_entry(&mut module, &mut entry, &ids, &built, &plan)?;
            if let Err(TrySendError::Full(item) | TrySendError::Disconnected(item)) =
                to_compile.try_send((n, id0, entry))
            {
                compile_one(item, &done, &*isa);
            }
            ids.push(id0);
            Ok(Some((ids, built, plan)))
        })();
        drop(to_compile);
        compile_queued(&queue, &done, &*isa);
        lowered
    })?;
    drop(done);
    let Some((ids, built, plan)) = lowered else {
        return Ok(None);
    };
    let mut codes: Vec<Option<Code>> = (0..=n).map(|_| None).collect();
    for (j, code) in compiled {
        codes[j] = Some(code?);
    }
    for (&id, code) in ids.iter().zip(codes) {
        let code = code.ok_or_else(|| JitError::Internal("a part was not compiled".into()))?;
        module
            .define_function_bytes(id, code.alignment, &code.bytes, &code.relocs)
            .map_err(|e| JitError::Codegen(format!("{e:?}")))?;
    }
    let id0 = ids[n];
    let parts_workspace = SizeExpr::max_of(built.iter().map(|b| b.workspace.clone()));
    let before_parts = SizeExpr::sum(
        [SizeExpr::K(plan.cells as u64)]
            .into_iter()
            .chain(plan.lens.iter().cloned()),
    );
    let has_status = built.iter().any(|b| b.status.is_some());
    let status = has_status.then(|| SizeExpr::add(before_parts.clone(), parts_workspace.clone()));
    let workspace = SizeExpr::sum([
        before_parts,
        parts_workspace,
        SizeExpr::K(if has_status { STATUS_CELLS } else { 0 }),
    ]);
    let mut checks: Vec<SizeExpr> = built.iter().flat_map(|b| b.checks.clone()).collect();
    checks.extend(
        plan.lens
            .iter()
            .filter(|l| !matches!(l, SizeExpr::K(_)))
            .cloned(),
    );
    checks.push(workspace.clone());
    let mut built = built.into_iter();
    let (Some(first), Some(last)) = (built.next(), built.next_back()) else {
        return Err(JitError::Internal(
            "a function cut into fewer than two parts".into(),
        ));
    };
    let whole = Built {
        size_vars: first.size_vars,
        param_names: first.param_names,
        inputs: first.inputs,
        outputs: last.outputs,
        param_shapes: first.param_shapes,
        result_shape: last.result_shape,
        result: last.result,
        workspace,
        checks,
        status,
        int_params: first.int_params,
    };
    finish(module, id0, whole, n).map(Some)
}

/// A part's machine code, taken out of its context so that the context can be reused
/// at once (a long function's parts would otherwise hold all their contexts).
struct Code {
    alignment: u64,
    bytes: Vec<u8>,
    relocs: Vec<cranelift_module::ModuleReloc>,
}

/// Compile the functions of the contexts `queue` holds (with their indices and ids)
/// until it is closed and empty, sending each one's code to `done` with its index.
fn compile_queued(
    queue: &Mutex<mpsc::Receiver<(usize, FuncId, Context)>>,
    done: &mpsc::Sender<(usize, JitResult<Code>)>,
    isa: &dyn cranelift_codegen::isa::TargetIsa,
) {
    loop {
        let next = queue.lock().ok().and_then(|q| q.recv().ok());
        let Some(item) = next else {
            return;
        };
        if !compile_one(item, done, isa) {
            return;
        }
    }
}

/// Compile the function of a context (with its index and id), sending its code to `done`;
/// whether `done` still receives.
fn compile_one(
    (j, id, mut ctx): (usize, FuncId, Context),
    done: &mpsc::Sender<(usize, JitResult<Code>)>,
    isa: &dyn cranelift_codegen::isa::TargetIsa,
) -> bool {
    let result = compile_code(&mut ctx, isa).and_then(|()| {
        let code = ctx
            .compiled_code()
            .ok_or_else(|| JitError::Internal("a part was not compiled".into()))?;
        Ok(Code {
            alignment: code.buffer.alignment as u64,
            bytes: code.code_buffer().to_vec(),
            relocs: code
                .buffer
                .relocs()
                .iter()
                .map(|r| cranelift_module::ModuleReloc::from_mach_reloc(r, &ctx.func, id))
                .collect(),
        })
    });
    ctx.clear();
    keep_contexts([ctx]);
    done.send((j, result)).is_ok()
}

/// Where a cell of a part's table of inputs points.
enum Cell {
    /// The function's input `k`.
    Input(usize),
    /// A crossing value's region of the workspace.
    Region(usize),
}

/// How the values crossing between chunks go through the workspace: at its start, the
/// tables of pointers each part is called with (`cells` of them), then one region per
/// component of a crossing value, then the parts' own workspace.
struct Crossing {
    /// The number of table cells.
    cells: usize,
    /// Each region's length, in elements, in the workspace's order.
    lens: Vec<SizeExpr>,
    /// Each part's table of inputs.
    inputs: Vec<Vec<Cell>>,
    /// Each part's table of outputs (the regions of its exports; empty for the last,
    /// which writes the function's outputs).
    outputs: Vec<Vec<usize>>,
}

impl Crossing {
    /// The regions of the parts `built` of `chunks`, if every part numbers the sizes as
    /// the first, reads the function's inputs as it does, and reads each import as its
    /// exporter writes it (the same components, of the same lengths).
    fn plan(built: &[Built], chunks: &split::Chunks) -> Option<Crossing> {
        let first = built.first()?;
        let n_in = first.inputs.len();
        let n_params = first.param_names.len();
        let same_inputs = built.iter().all(|b| {
            b.size_vars == first.size_vars
                && b.inputs.len() >= n_in
                && b.inputs[..n_in]
                    .iter()
                    .zip(&first.inputs)
                    .all(|(a, c)| a.dims == c.dims && a.index == c.index)
        });
        if !same_inputs {
            return None;
        }
        // The regions of each export (by part and position), one per component.
        let mut lens = Vec::new();
        let mut dims = Vec::new();
        let mut regions: Vec<Vec<Vec<usize>>> = Vec::with_capacity(built.len());
        let mut outputs = Vec::with_capacity(built.len());
        for (b, &count) in built.iter().zip(&chunks.exports) {
            let mut by_export = vec![Vec::new(); count];
            let mut table = Vec::new();
            if count > 0 {
                for c in &b.outputs {
                    let p = match c.path.first() {
                        Some(PathStep::Field(p)) if count > 1 => *p as usize,
                        _ => 0,
                    };
                    by_export.get_mut(p)?.push(lens.len());
                    table.push(lens.len());
                    lens.push(SizeExpr::product(&c.dims));
                    dims.push(c.dims.clone());
                }
            }
            regions.push(by_export);
            outputs.push(table);
        }
        let mut inputs = Vec::with_capacity(built.len());
        for (b, imports) in built.iter().zip(&chunks.imports) {
            let mut table: Vec<Cell> = (0..n_in).map(Cell::Input).collect();
            let mut read = vec![0; imports.len()];
            for c in &b.inputs[n_in..] {
                let i = c.index.checked_sub(n_params)?;
                let &(e, p) = imports.get(i)?;
                let r = *regions.get(e)?.get(p)?.get(read[i])?;
                if dims[r] != c.dims {
                    return None;
                }
                read[i] += 1;
                table.push(Cell::Region(r));
            }
            let all_read = imports
                .iter()
                .zip(&read)
                .all(|(&(e, p), &k)| regions[e][p].len() == k);
            if !all_read {
                return None;
            }
            inputs.push(table);
        }
        let cells = inputs.iter().map(Vec::len).sum::<usize>()
            + outputs.iter().map(Vec::len).sum::<usize>();
        Some(Crossing {
            cells,
            lens,
            inputs,
            outputs,
        })
    }
}

/// The entry of a function cut into chunks: it writes each part's tables of pointers
/// (the function's inputs and the regions of the crossing values) at the start of the
/// workspace, then calls the parts in order, each with its tables, the last with the
/// function's outputs, all with the workspace after the regions. When a part has a status
/// cell, the function has one after the parts' workspace: cleared first, it gets each such
/// part's status after its call, and a failed part ends the call.
fn build_chunk_entry(
    module: &mut JITModule,
    ctx: &mut Context,
    parts: &[FuncId],
    built: &[Built],
    plan: &Crossing,
) -> JitResult<FuncId> {
    let ptr = types::I64;
    let id = declare_in(module, ctx, ENTRY)?;
    let calls: Vec<_> = parts
        .iter()
        .map(|&p| module.declare_func_in_func(p, &mut ctx.func))
        .collect();
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
    let [inputs, sizes, outputs, ws] = entry_params(&mut b)?;
    let flags = MemFlagsData::trusted();
    let bytes = |cells: usize| i64::try_from(8 * cells).unwrap_or(i64::MAX);
    let offset = |cells: usize| i32::try_from(8 * cells).unwrap_or(i32::MAX);
    // The tables: each part's inputs, then its outputs.
    let mut at = 0;
    let mut tables = Vec::with_capacity(parts.len());
    let mut cells_of: Vec<Vec<usize>> = vec![Vec::new(); plan.lens.len()];
    for (table, outs) in plan.inputs.iter().zip(&plan.outputs) {
        tables.push((at, at + table.len()));
        for cell in table {
            match *cell {
                Cell::Input(k) => {
                    let p = b.ins().load(ptr, flags, inputs, offset(k));
                    b.ins().store(flags, p, ws, offset(at));
                }
                Cell::Region(r) => cells_of[r].push(at),
            }
            at += 1;
        }
        for &r in outs {
            cells_of[r].push(at);
            at += 1;
        }
    }
    // The regions after the tables, their addresses written where the tables point.
    // Every address is below the workspace's length, which a call checks.
    let mut counts = SizeValues::new(sizes);
    let (mut base, mut off) = (ws, bytes(plan.cells));
    for (len, cells) in plan.lens.iter().zip(&cells_of) {
        let addr = b.ins().iadd_imm_s(base, off);
        for &cell in cells {
            b.ins().store(flags, addr, ws, offset(cell));
        }
        match len {
            SizeExpr::K(k) => off += bytes(*k as usize),
            len => {
                let n = counts.get(&mut b, len);
                let n_bytes = b.ins().ishl_imm_s(n, 3);
                base = b.ins().iadd(addr, n_bytes);
                off = 0;
            }
        }
    }
    let parts_ws = b.ins().iadd_imm_s(base, off);
    let status = if built.iter().any(|p| p.status.is_some()) {
        let rest = SizeExpr::max_of(built.iter().map(|p| p.workspace.clone()));
        let n = counts.get(&mut b, &rest);
        let n_bytes = b.ins().ishl_imm_s(n, 3);
        let cell = b.ins().iadd(parts_ws, n_bytes);
        let zero = b.ins().f64const(0.0);
        b.ins().store(flags, zero, cell, 0);
        Some((cell, zero))
    } else {
        None
    };
    let stop = b.create_block();
    let last = parts.len() - 1;
    for (j, (&call, &(ins, outs))) in calls.iter().zip(&tables).enumerate() {
        let pin = b.ins().iadd_imm_s(ws, bytes(ins));
        let pout = if j == last {
            outputs
        } else {
            b.ins().iadd_imm_s(ws, bytes(outs))
        };
        b.ins().call(call, &[pin, sizes, pout, parts_ws]);
        if let (Some((cell, zero)), Some(at)) = (status, &built[j].status) {
            let n = counts.get(&mut b, at);
            let n_bytes = b.ins().ishl_imm_s(n, 3);
            let part_cell = b.ins().iadd(parts_ws, n_bytes);
            let s = copy_status_cells(&mut b, flags, part_cell, cell);
            if j < last {
                let failed = b.ins().fcmp(FloatCC::NotEqual, s, zero);
                let go_on = b.create_block();
                b.ins().brif(failed, stop, &[], go_on, &[]);
                b.switch_to_block(go_on);
            }
        }
    }
    b.ins().return_(&[]);
    b.switch_to_block(stop);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(module.isa().frontend_config());
    verify(ctx, module)?;
    Ok(id)
}

/// The lengths of the values crossing from the first part to the second (the first
/// outputs of the first part), if the second reads them as the first writes them and
/// both number the sizes alike (the lengths the semantics computes may differ from those
/// of the types).
pub(crate) fn crossing_lens(b1: &Built, b2: &Built) -> Option<Vec<SizeExpr>> {
    let n_in = b1.inputs.len();
    let crossing = b2.inputs.get(n_in..)?;
    let agree = b2.size_vars == b1.size_vars
        && crossing.len() <= b1.outputs.len()
        && crossing
            .iter()
            .zip(&b1.outputs)
            .all(|(i, o)| i.dims == o.dims);
    agree.then(|| {
        b1.outputs[..crossing.len()]
            .iter()
            .map(|c| SizeExpr::product(&c.dims))
            .collect()
    })
}

/// The two parts of a cut lowered, the first before the second, which reads the crossing
/// values with the shapes the first gives them ([`crossing_shapes`]).
pub(crate) fn build_parts(
    arena: &Arena,
    parts: &split::Parts,
    module: &mut JITModule,
    first_ctx: &mut Context,
    second_ctx: &mut Context,
) -> JitResult<((FuncId, Built), (FuncId, Built))> {
    let own = parts.first.params.len();
    let (id1, b1) = build_part(
        arena,
        &parts.first,
        own,
        &[],
        module,
        first_ctx,
        "unfad_first",
        false,
    )?;
    let crossing = crossing_shapes(&b1, parts);
    let (id2, b2) = build_part(
        arena,
        &parts.second,
        own,
        &crossing,
        module,
        second_ctx,
        "unfad_second",
        false,
    )?;
    Ok(((id1, b1), (id2, b2)))
}

/// The shapes of the values crossing from the first part `b1` of `parts` to the second,
/// as the first part computes them; empty (the second part then reads them as their types
/// say) unless every array among them has an exact length.
pub(crate) fn crossing_shapes(b1: &Built, parts: &split::Parts) -> Vec<SShape> {
    let items: Vec<SShape> = if parts.crossing + parts.taken.len() == 1 {
        vec![b1.result.clone()]
    } else {
        match &b1.result {
            SShape::Tuple(items) => items.iter().take(parts.crossing).cloned().collect(),
            _ => return Vec::new(),
        }
    };
    if items.len() == parts.crossing && items.iter().all(SShape::exact_throughout) {
        items
    } else {
        Vec::new()
    }
}

/// The function's result put together from its parts'.
pub(crate) struct Results {
    /// Its outputs, as the whole function would have them.
    pub(crate) outputs: Vec<Component>,
    pub(crate) shape: Shape,
    /// Where the first part's outputs after its crossing values are among the function's.
    pub(crate) first_route: Vec<usize>,
    /// Where the second part's outputs are among the function's; `None` when it writes
    /// all of them.
    pub(crate) second_route: Option<Vec<usize>>,
}

/// The result of the function cut into `parts`, whose first part writes `crossing_leaves`
/// outputs (the crossing values) before those of the components it takes.
pub(crate) fn merge_results(
    b1: &Built,
    b2: &Built,
    parts: &split::Parts,
    crossing_leaves: usize,
) -> Option<Results> {
    if parts.taken.is_empty() {
        return Some(Results {
            outputs: b2.outputs.clone(),
            shape: b2.result_shape.clone(),
            first_route: Vec::new(),
            second_route: None,
        });
    }
    let m = parts.result_items;
    let left = m - parts.taken.len();
    let Shape::Tuple(first_items) = &b1.result_shape else {
        return None;
    };
    let second_items = match &b2.result_shape {
        Shape::Tuple(items) if left > 1 => items.clone(),
        s if left == 1 => vec![s.clone()],
        _ => return None,
    };
    // Each part's outputs by the position of their result item (the first part's after
    // its crossing values), with the path below that item.
    let by_item = |outputs: &[Component], skip: usize, whole: bool, n: usize| {
        let mut items: Vec<Vec<Component>> = vec![Vec::new(); n];
        for c in outputs.iter().skip(skip) {
            let (k, rest) = match c.path.split_first() {
                Some((PathStep::Field(k), rest)) if !whole => (*k as usize, rest),
                _ => (0, &c.path[..]),
            };
            items.get_mut(k)?.push(Component {
                index: c.index,
                path: rest.to_vec(),
                dims: c.dims.clone(),
            });
        }
        Some(items)
    };
    let first = by_item(&b1.outputs, crossing_leaves, false, first_items.len())?;
    let second = by_item(&b2.outputs, 0, left == 1, second_items.len())?;
    let mut outputs = Vec::new();
    let mut shapes = Vec::with_capacity(m);
    let mut routes = [Vec::new(), Vec::new()];
    let (mut t, mut l) = (0, 0);
    for j in 0..m {
        let (cs, shape, route) = if parts.taken.contains(&j) {
            t += 1;
            (
                &first[parts.crossing + t - 1],
                first_items.get(parts.crossing + t - 1)?,
                0,
            )
        } else {
            l += 1;
            (&second[l - 1], second_items.get(l - 1)?, 1)
        };
        shapes.push(shape.clone());
        for c in cs {
            routes[route].push(outputs.len());
            let mut path = vec![PathStep::Field(j as u32)];
            path.extend_from_slice(&c.path);
            outputs.push(Component {
                index: c.index,
                path,
                dims: c.dims.clone(),
            });
        }
    }
    let [first_route, second_route] = routes;
    Some(Results {
        outputs,
        shape: Shape::Tuple(shapes),
        first_route,
        second_route: Some(second_route),
    })
}

/// The number of cores this process may use (known once).
pub(crate) fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Cranelift's compilation of the function in `ctx` (kept in `ctx`).
fn compile_code(ctx: &mut Context, isa: &dyn cranelift_codegen::isa::TargetIsa) -> JitResult<()> {
    let mut plane = cranelift_codegen::control::ControlPlane::default();
    ctx.compile(isa, &mut plane)
        .map(|_| ())
        .map_err(|e| JitError::Codegen(format!("{:?}", e.inner)))
}

/// Define function `id` of `module` with the code compiled in `ctx`.
fn define_compiled(module: &mut JITModule, id: FuncId, ctx: &Context) -> JitResult<()> {
    let Some(code) = ctx.compiled_code() else {
        return Err(JitError::Internal("a part was not compiled".into()));
    };
    let relocs: Vec<cranelift_module::ModuleReloc> = code
        .buffer
        .relocs()
        .iter()
        .map(|r| cranelift_module::ModuleReloc::from_mach_reloc(r, &ctx.func, id))
        .collect();
    module
        .define_function_bytes(
            id,
            code.buffer.alignment as u64,
            code.code_buffer(),
            &relocs,
        )
        .map_err(|e| JitError::Codegen(format!("{e:?}")))
}

/// The entry of a function cut in two: with the crossing values (of lengths `lens`) at
/// the start of the workspace, it calls `parts[0]` with the inputs, writing them, then
/// `parts[1]` with the inputs followed by them, their outputs routed by `results`; both use
/// the rest of the workspace. When a part has a status cell, the function has one after
/// the parts' workspace: cleared first, it gets each such part's status after its call,
/// and a failed first part ends the call.
pub(crate) fn build_entry(
    module: &mut JITModule,
    ctx: &mut Context,
    parts: [FuncId; 2],
    built: [&Built; 2],
    lens: &[SizeExpr],
    results: &Results,
) -> JitResult<FuncId> {
    let n_in = built[0].inputs.len();
    let workspaces = built.map(|b| (&b.workspace, &b.status));
    let ptr = types::I64;
    let id = declare_in(module, ctx, ENTRY)?;
    let calls = parts.map(|p| module.declare_func_in_func(p, &mut ctx.func));
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
    let [inputs, sizes, outputs, ws] = entry_params(&mut b)?;
    let slot = |b: &mut FunctionBuilder, n: usize| {
        let bytes = u32::try_from(8 * n.max(1)).unwrap_or(u32::MAX);
        b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, bytes, 3))
    };
    let (first_route, second_route) = (&results.first_route, results.second_route.as_deref());
    let all_in = slot(&mut b, n_in + lens.len());
    let first_out = slot(&mut b, lens.len() + first_route.len());
    let flags = MemFlagsData::trusted();
    let offset = |k: usize| i32::try_from(8 * k).unwrap_or(i32::MAX);
    for k in 0..n_in {
        let p = b.ins().load(ptr, flags, inputs, offset(k));
        b.ins().stack_store(ptr, p, all_in, offset(k));
    }
    // Every address is below the workspace's length, which a call checks.
    let mut counts = SizeValues::new(sizes);
    let mut addr = ws;
    for (k, len) in lens.iter().enumerate() {
        b.ins().stack_store(ptr, addr, all_in, offset(n_in + k));
        b.ins().stack_store(ptr, addr, first_out, offset(k));
        let n = counts.get(&mut b, len);
        let bytes = b.ins().ishl_imm_s(n, 3);
        addr = b.ins().iadd(addr, bytes);
    }
    // The outputs each part writes, picked from the function's.
    let pick = |b: &mut FunctionBuilder,
                to: cranelift_codegen::ir::StackSlot,
                at: usize,
                route: &[usize]| {
        for (k, &o) in route.iter().enumerate() {
            let p = b.ins().load(ptr, flags, outputs, offset(o));
            b.ins().stack_store(ptr, p, to, offset(at + k));
        }
    };
    pick(&mut b, first_out, lens.len(), first_route);
    let second_out = match second_route {
        Some(route) => {
            let s = slot(&mut b, route.len());
            pick(&mut b, s, 0, route);
            b.ins().stack_addr(ptr, s, 0)
        }
        None => outputs,
    };
    let pin = b.ins().stack_addr(ptr, all_in, 0);
    let pout = b.ins().stack_addr(ptr, first_out, 0);
    let status = if workspaces.iter().any(|(_, s)| s.is_some()) {
        let rest = SizeExpr::max_of(workspaces.map(|(w, _)| w.clone()));
        let n = counts.get(&mut b, &rest);
        let bytes = b.ins().ishl_imm_s(n, 3);
        let at = b.ins().iadd(addr, bytes);
        let zero = b.ins().f64const(0.0);
        b.ins().store(flags, zero, at, 0);
        Some((at, zero))
    } else {
        None
    };
    // The status of part `k`, copied to the function's cell; whether it failed.
    let mut copy_status = |b: &mut FunctionBuilder, k: usize| -> Option<Value> {
        let (at, zero) = status?;
        let offset = workspaces[k].1.as_ref()?;
        let n = counts.get(b, offset);
        let bytes = b.ins().ishl_imm_s(n, 3);
        let cell = b.ins().iadd(addr, bytes);
        let s = copy_status_cells(b, flags, cell, at);
        Some(b.ins().fcmp(FloatCC::NotEqual, s, zero))
    };
    b.ins().call(calls[0], &[inputs, sizes, pout, addr]);
    if let Some(failed) = copy_status(&mut b, 0) {
        let stop = b.create_block();
        let go_on = b.create_block();
        b.ins().brif(failed, stop, &[], go_on, &[]);
        b.switch_to_block(stop);
        b.ins().return_(&[]);
        b.switch_to_block(go_on);
    }
    b.ins().call(calls[1], &[pin, sizes, second_out, addr]);
    copy_status(&mut b, 1);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(module.isa().frontend_config());
    verify(ctx, module)?;
    Ok(id)
}

/// The entry function's first block, switched to, and its four parameters (the inputs',
/// sizes', outputs' and workspace's addresses).
fn entry_params(b: &mut FunctionBuilder) -> JitResult<[Value; 4]> {
    let block = b.create_block();
    b.append_block_params_for_function_params(block);
    b.switch_to_block(block);
    b.block_params(block)
        .try_into()
        .map_err(|_| JitError::Internal("the entry block has the wrong parameters".into()))
}

/// Copy a part's status cells (at `from`) to the function's (at `to`); the code, the first
/// cell, is returned.
fn copy_status_cells(
    b: &mut FunctionBuilder,
    flags: MemFlagsData,
    from: Value,
    to: Value,
) -> Value {
    let mut code = None;
    for k in 0..STATUS_CELLS as i32 {
        let s = b.ins().load(types::F64, flags, from, 8 * k);
        b.ins().store(flags, s, to, 8 * k);
        code.get_or_insert(s);
    }
    code.expect("a status has cells")
}
