//! From a typed function to Cranelift IR in a module: the host's ISA and a module with the
//! run-time functions, the ABI's signature, the lowering of one function by a
//! [`Translator`] (redone when an unevaluated array turns out to be read twice), the
//! verifier, and the components the function's parameters and result flatten into.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use cranelift_codegen::ir::{types, AbiParam, InstBuilder, MemFlagsData, UserFuncName, Value};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::Configurable;
use cranelift_codegen::{settings, Context};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId, Linkage, Module};
use unfad_syntax::typeck::{infer, NoSource};
use unfad_syntax::{Arena, Func, Type};

use crate::error::{JitError, JitResult, Retry};
use crate::layout::{Component, Dim, PathStep, Shape, SizeExpr};
use crate::lower::Translator;
use crate::runtime;
use crate::shape::{Analysis, SShape};

/// The name of the function the ABI describes.
pub(crate) const ENTRY: &str = "unfad_entry";

/// Type-check `func` in `arena` unless it is typed already.
pub(crate) fn type_in_place(arena: &mut Arena, func: &Func) -> JitResult<()> {
    if arena.type_of(func.body).is_none() {
        infer(arena, &NoSource, func.body).map_err(|e| JitError::Type(e.to_string()))?;
    }
    Ok(())
}

/// A module for the host with the run-time functions registered.
pub(crate) fn new_module() -> JitResult<JITModule> {
    let mut jb = JITBuilder::with_isa(host_isa()?, default_libcall_names());
    for (name, ptr) in runtime::symbols() {
        jb.symbol(name, ptr);
    }
    Ok(JITModule::new(jb))
}

/// Cranelift's verifier on the function in `ctx`, in debug builds (tests) only.
pub(crate) fn verify(ctx: &Context, module: &JITModule) -> JitResult<()> {
    if cfg!(debug_assertions) {
        cranelift_codegen::verify_function(&ctx.func, module.isa()).map_err(|e| {
            JitError::Codegen(format!(
                "the generated code fails verification:\n{}",
                cranelift_codegen::print_errors::pretty_verifier_error(&ctx.func, None, e)
            ))
        })?;
    }
    Ok(())
}

/// Declare the function `name` of `module` with the ABI's signature, `void f(ptr, ptr,
/// ptr, ptr)` in the host's calling convention, as the function `ctx` builds.
pub(crate) fn declare_in(
    module: &mut JITModule,
    ctx: &mut Context,
    name: &str,
) -> JitResult<FuncId> {
    let mut sig = module.make_signature();
    for _ in 0..4 {
        sig.params.push(AbiParam::new(types::I64));
    }
    let id = module
        .declare_function(name, Linkage::Local, &sig)
        .map_err(|e| JitError::Codegen(e.to_string()))?;
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    Ok(id)
}

/// The arena with every node of `func` typed (type-checking a copy if needed).
pub(crate) fn typed<'a>(arena: &'a Arena, func: &Func) -> JitResult<Cow<'a, Arena>> {
    if arena.type_of(func.body).is_some() {
        return Ok(Cow::Borrowed(arena));
    }
    let mut copy = arena.clone();
    infer(&mut copy, &NoSource, func.body).map_err(|e| JitError::Type(e.to_string()))?;
    Ok(Cow::Owned(copy))
}

/// The target ISA of the host, with the flags this crate compiles with.
pub(crate) fn host_isa() -> JitResult<OwnedTargetIsa> {
    static ISA: OnceLock<Result<OwnedTargetIsa, String>> = OnceLock::new();
    ISA.get_or_init(|| isa_with(&[("opt_level", "speed")]))
        .clone()
        .map_err(JitError::Codegen)
}

/// The ISA the chunks of a long program are compiled with (see `parallel.rs`): Cranelift's
/// single-pass register allocator and no e-graph pass. On a chain of 10^4 statements this
/// compiles 2.5x faster than the default flags (the backtracking allocator and the
/// e-graph pass take most of a long program's compilation) for code about 1.4x slower;
/// the pipeline has optimized the term already, and a program that long is compiled more
/// often than it runs long (issue 23).
pub(crate) fn long_code_isa() -> JitResult<OwnedTargetIsa> {
    static ISA: OnceLock<Result<OwnedTargetIsa, String>> = OnceLock::new();
    ISA.get_or_init(|| isa_with(&[("opt_level", "none"), ("regalloc_algorithm", "single_pass")]))
        .clone()
        .map_err(JitError::Codegen)
}

/// The host's ISA with this crate's flags and `extra`.
fn isa_with(extra: &[(&str, &str)]) -> Result<OwnedTargetIsa, String> {
    let mut flags = settings::builder();
    let verify = if cfg!(debug_assertions) {
        "true"
    } else {
        "false"
    };
    for (k, v) in [
        ("is_pic", "false"),
        ("use_colocated_libcalls", "false"),
        ("enable_verifier", verify),
    ]
    .into_iter()
    .chain(extra.iter().copied())
    {
        flags.set(k, v).map_err(|e| e.to_string())?;
    }
    let builder = cranelift_native::builder().map_err(|e| e.to_string())?;
    builder
        .finish(settings::Flags::new(flags))
        .map_err(|e| e.to_string())
}

/// What the lowering found out besides the code.
pub(crate) struct Built {
    pub(crate) size_vars: Vec<String>,
    pub(crate) param_names: Vec<String>,
    pub(crate) inputs: Vec<Component>,
    pub(crate) outputs: Vec<Component>,
    pub(crate) param_shapes: Vec<Shape>,
    pub(crate) result_shape: Shape,
    /// The result's shape as the analysis has it: for the first part of a function cut in
    /// two, the shapes of the values crossing to the second (for a function compiled in
    /// parts, its last part's).
    pub(crate) result: SShape,
    pub(crate) workspace: SizeExpr,
    pub(crate) checks: Vec<SizeExpr>,
    /// The workspace cell a failed run-time check sets (see [`Compiled::call`]), if any.
    pub(crate) status: Option<SizeExpr>,
    /// The int parameters, whose values the checked call checks against their sizes.
    pub(crate) int_params: Vec<IntParam>,
}

/// An int parameter: its value (a whole number, carried as a real) is input component
/// `component`, and `max(0, value)` is size variable `size` (`iota n`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct IntParam {
    pub(crate) component: usize,
    pub(crate) size: usize,
}

/// The components of a value of shape `s` belonging to parameter (or result) `index`.
fn components(
    s: &SShape,
    index: usize,
    path: &mut Vec<PathStep>,
    dims: &mut Vec<Dim>,
    out: &mut Vec<Component>,
) {
    match s {
        SShape::Real => out.push(Component {
            index,
            path: path.clone(),
            dims: dims.clone(),
        }),
        SShape::Bool => {}
        SShape::Tuple(items) => {
            for (i, s) in items.iter().enumerate() {
                path.push(PathStep::Field(i as u32));
                components(s, index, path, dims, out);
                path.pop();
            }
        }
        SShape::Arr(sa) => {
            path.push(PathStep::Elements);
            dims.push(sa.len);
            components(&sa.elem, index, path, dims, out);
            dims.pop();
            path.pop();
        }
    }
}

/// Lower `func` into `ctx.func`, declared in `module`.
pub(crate) fn build(
    arena: &Arena,
    func: &Func,
    module: &mut JITModule,
    ctx: &mut Context,
    name: &str,
) -> JitResult<(FuncId, Built)> {
    build_part(
        arena,
        func,
        func.params.len(),
        &[],
        module,
        ctx,
        name,
        false,
    )
}

/// [`build`] for a part of a function cut in parts, whose first `own_params` parameters
/// are the function's own and the others values crossing from earlier parts: an int among
/// those is a value like any other, not the size variable of its name, so that every part
/// numbers the sizes as the function does. `crossing`, if not empty, has the shapes of the
/// crossing values as the part computing them has them (see [`Analysis::run`]). `long`: a
/// chunk of a long program (see [`long_code_isa`]), whose math kernels are calls rather
/// than inline code.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_part(
    arena: &Arena,
    func: &Func,
    own_params: usize,
    crossing: &[SShape],
    module: &mut JITModule,
    ctx: &mut Context,
    name: &str,
    long: bool,
) -> JitResult<(FuncId, Built)> {
    let mut build = |ctx: &mut Context, memory: InMemory| {
        let r = build_with(
            arena, func, own_params, crossing, module, ctx, name, memory, long,
        );
        if r.is_err() {
            ctx.clear();
        }
        r
    };
    // Lowered as fast as it can be first; a lowering that reads an unevaluated array twice,
    // or a scan out of order, is redone computing that kind of array into memory, and one
    // whose batched loop could not batch is redone without batches: each reason met adds
    // its change to the next attempt, until one succeeds or meets no new reason.
    let mut memory = InMemory {
        read_twice: false,
        eager_scans: false,
        batch: true,
    };
    loop {
        match build(ctx, memory) {
            Err(Failure {
                retry: Some(why),
                error,
            }) => {
                let next = memory.with(why);
                if next == memory {
                    return Err(error);
                }
                memory = next;
            }
            r => return r.map_err(|f| f.error),
        }
    }
}

/// A failed lowering, and whether lowering again differently may complete it.
struct Failure {
    error: JitError,
    retry: Option<Retry>,
}

impl From<JitError> for Failure {
    fn from(error: JitError) -> Failure {
        Failure { error, retry: None }
    }
}

/// What a later lowering computes into memory that the first left unevaluated, and
/// whether loops batch their kernels.
#[derive(Clone, Copy, PartialEq, Eq)]
struct InMemory {
    /// The unevaluated arrays read more than once, where they are bound (see
    /// [`Translator::force_read_twice`]).
    read_twice: bool,
    /// Every scan (see [`Translator::force_eager_scans`]).
    eager_scans: bool,
    /// Loops batch their kernels where the mode allows it (see `lower/batch.rs`).
    batch: bool,
}

impl InMemory {
    /// The lowering to try after one that failed for `why`.
    fn with(self, why: Retry) -> InMemory {
        match why {
            Retry::ReadTwice => InMemory {
                read_twice: true,
                ..self
            },
            Retry::ScanOrder => InMemory {
                eager_scans: true,
                ..self
            },
            Retry::NoBatch => InMemory {
                batch: false,
                ..self
            },
        }
    }
}

/// [`build`], computing into memory what `memory` says.
#[allow(clippy::too_many_arguments)]
fn build_with(
    arena: &Arena,
    func: &Func,
    own_params: usize,
    crossing: &[SShape],
    module: &mut JITModule,
    ctx: &mut Context,
    name: &str,
    memory: InMemory,
    long: bool,
) -> Result<(FuncId, Built), Failure> {
    let mut param_names = Vec::new();
    for &p in &func.params {
        if arena.var_type(p).is_none() {
            return Err(
                JitError::Type(format!("parameter `{}` has no type", arena.var_name(p))).into(),
            );
        }
        param_names.push(arena.var_name(p).to_string());
    }
    // The sizes in the parameters' types, and each int parameter's own (`iota n`), in the
    // order of `Func::size_vars`; in a part, only the function's own int parameters.
    // A whole function also takes the derived sizes of its `iota`s (`n * m`) as size
    // variables of their own, after the others: the caller computes them from those.
    let size_vars: Vec<Arc<str>> = if own_params >= func.params.len() {
        let mut vars = func.size_vars(arena);
        let derived = crate::shape::derived_sizes(arena, func.body, &vars);
        vars.extend(derived);
        vars
    } else {
        let mut out = Vec::new();
        for (k, &p) in func.params.iter().enumerate() {
            let t = arena.var_type(p).cloned().unwrap_or(Type::Real);
            t.size_vars(&mut out);
            let name: Arc<str> = arena.var_name(p).into();
            if k < own_params && t == Type::Int && !out.contains(&name) {
                out.push(name);
            }
        }
        out
    };
    let index = |name: &str| {
        size_vars
            .iter()
            .position(|v| &**v == name)
            .map(|i| i as u32)
    };
    let (an, result) = Analysis::run(arena, func, own_params, crossing, &index)?;
    if matches!(func.ret, Type::Bool) || matches!(result, SShape::Bool) {
        return Err(JitError::Unsupported(
            "the function returns a condition; results are reals, tuples and arrays".into(),
        )
        .into());
    }
    let mut inputs = Vec::new();
    let mut param_shapes = Vec::new();
    for (k, &p) in func.params.iter().enumerate() {
        let s = an.var_shape(p)?.clone();
        components(&s, k, &mut Vec::new(), &mut Vec::new(), &mut inputs);
        param_shapes.push(s);
    }
    let mut outputs = Vec::new();
    components(&result, 0, &mut Vec::new(), &mut Vec::new(), &mut outputs);
    let mut int_params = Vec::new();
    for (k, &p) in func.params.iter().enumerate().take(own_params) {
        if arena.var_type(p) != Some(&Type::Int) {
            continue;
        }
        let component = inputs
            .iter()
            .position(|c| c.index == k && c.path.is_empty());
        let size = index(arena.var_name(p));
        match (component, size) {
            (Some(component), Some(size)) => int_params.push(IntParam {
                component,
                size: size as usize,
            }),
            _ => {
                return Err(JitError::Internal(format!(
                    "the int parameter `{}` has no component or no size variable",
                    arena.var_name(p)
                ))
                .into())
            }
        }
    }

    let ptr = module.target_config().pointer_type();
    if ptr != types::I64 {
        return Err(JitError::Unsupported("a host without 64-bit pointers".into()).into());
    }
    let id = declare_in(module, ctx, name)?;
    let frontend = module.isa().frontend_config();

    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    // The entry block comes first in the layout but is filled last (with the prologue).
    b.func.layout.append_block(entry);
    let [p_inputs, p_sizes, p_outputs, p_ws]: [Value; 4] = b
        .block_params(entry)
        .try_into()
        .map_err(|_| JitError::Internal("the entry block has the wrong parameters".into()))?;
    let main = b.create_block();
    b.switch_to_block(main);
    // The pointer arrays are read-only: their loads may move to where the pointers are used.
    let flags = MemFlagsData::trusted().with_readonly().with_can_move();
    let load_ptrs = |b: &mut FunctionBuilder, base: Value, n: usize| -> Vec<Value> {
        (0..n)
            .map(|k| b.ins().load(ptr, flags, base, (k as i32).wrapping_mul(8)))
            .collect()
    };
    let in_ptrs = load_ptrs(&mut b, p_inputs, inputs.len());
    let out_ptrs = load_ptrs(&mut b, p_outputs, outputs.len());

    let mut t = Translator::new(b, module, arena, &an, main);
    t.set_size_forms(&size_vars);
    if long {
        t.call_kernels();
    }
    t.count_kernels_outside_loops(func.body);
    if memory.eager_scans {
        t.force_eager_scans();
    }
    if memory.read_twice {
        t.force_read_twice();
    }
    if memory.batch && !long {
        t.batch_kernels(crate::batching());
    }
    let lowered = (|| {
        let mut it = in_ptrs.iter();
        for (&p, s) in func.params.iter().zip(&param_shapes) {
            let v = t.param_val(s, &mut it)?;
            t.bind(p, v)?;
        }
        let out = t.result_place(&result, &mut out_ptrs.iter())?;
        t.emit_result(func.body, &out)?;
        drop(out);
        t.builder().ins().return_(&[]);
        t.finish_prologue(entry, p_sizes, p_ws)
    })();
    let plan = match lowered {
        Ok(plan) => plan,
        Err(error) => {
            return Err(Failure {
                error,
                retry: t.retry(),
            })
        }
    };
    let roots = t.roots();
    let mut b = t.into_builder();
    b.seal_all_blocks();
    b.finalize(frontend);
    // Pairs of alike scalar computations the lowering packed into vectors become vector
    // computations (two elements per instruction).
    if crate::lower::lanes::available(module.isa()) {
        crate::lower::lanes::pair_lanes(&mut ctx.func, &roots);
    }

    verify(ctx, module)?;
    Ok((
        id,
        Built {
            size_vars: size_vars.iter().map(|s| s.to_string()).collect(),
            param_names,
            inputs,
            outputs,
            param_shapes: param_shapes.iter().map(SShape::public).collect(),
            result_shape: result.public(),
            result: result.clone(),
            workspace: plan.workspace,
            checks: plan.checks,
            status: plan.status,
            int_params,
        },
    ))
}
