//! unfad: reverse-mode automatic differentiation of array programs, compiled to native
//! code in milliseconds.
//!
//! A program in unfad's language (see `docs/language.md`) is parsed, type-checked,
//! differentiated by the purely functional reverse mode of Huot & Shaikhha, partially
//! evaluated into first-order code, and JIT-compiled with Cranelift.
//!
//! ```
//! use unfad::{Arg, Engine};
//!
//! let engine = Engine::new();
//! let grad = engine.compile_grad("def f(A: [n]real, B: [n]real) = reduce + 0 (map2 * A B)")?;
//! let (a, b) = (vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]);
//! let out = grad.call(&[a.as_slice().into(), b.as_slice().into()])?;
//! assert_eq!(out.value, 32.0);
//! assert_eq!(out.gradient(0), &[4.0, 5.0, 6.0]);
//! assert_eq!(out.gradient_by_name("B"), Some(&[1.0, 2.0, 3.0][..]));
//! # Ok::<(), unfad::Error>(())
//! ```
//!
//! # The native ABI
//!
//! [`GradFn::fn_ptr`] (and [`Func::fn_ptr`]) give the compiled code itself, an
//! `unsafe extern "C" fn(inputs, sizes, outputs, workspace)`:
//!
//! ```text
//! void f(const double *const *inputs, const uint64_t *sizes,
//!        double *const *outputs, double *workspace);
//! ```
//!
//! - Values are flattened into **components**, each a flat buffer of `f64`: a real is one
//!   component of one element; an array of reals of any rank is one component, row-major
//!   (`[n][m]real` has `n * m` elements); a tuple contributes its fields' components in
//!   order; arrays distribute over tuples (`[n](real, real)` is two components of `n`).
//! - `inputs[k]` points to the `k`-th component of the parameters, in order
//!   ([`GradFn::input_components`]).
//! - `sizes[i]` is the value of the `i`-th size variable ([`GradFn::size_vars`]). A size
//!   the program computes from others (`n - k + 1`, a convolution's output) is a size
//!   variable of its own, after those the parameters name; [`GradFn::sizes_from`] fills it
//!   in, and binding refuses a value its formula does not give.
//! - `outputs[k]` points to a buffer for the `k`-th output component, which the function
//!   fills ([`GradFn::output_components`]). For a gradient function the result is the tuple
//!   `(value, g_1, ..., g_k)`: the value, then the components of the gradient with respect
//!   to each differentiated parameter, in the order of [`GradFn::wrt`].
//! - `workspace` points to at least [`GradFn::workspace_len`] `f64`s (8-byte aligned; may
//!   be null when that is 0). The native code never allocates and touches no other memory.
//!
//! Buffers must not overlap (inputs may overlap each other). The pointer is valid while
//! the `GradFn` (or a clone) is alive. A function that checks something at run time has a
//! status cell in its workspace ([`GradFn::status_cell`]): nonzero after a call, a check
//! failed and the call stopped early; a raw caller should read it. [`GradFn::call`] does
//! all of this safely: it checks every shape and size and returns an [`Error`] on a
//! mismatch. To call the native code many times with the same components, as a benchmark
//! does, [`GradFn::bind`] checks them once and gives a [`Bound`] function whose
//! [`Bound::run`] costs what the raw call costs.
//!
//! Compiled functions are `Send + Sync`: they can be called from several threads at once
//! (each call takes a workspace of its own from a pool).

#![forbid(unsafe_code)]

mod args;
mod expand;
mod higher;
pub mod pipeline;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

use std::sync::Mutex;

use unfad_jit::{Compiled, Component};
use unfad_syntax::Type;

pub use args::{component_count, Arg};
use args::{is_single_component, Binder};
pub use higher::{
    HessianFn, HessianOutput, HvpFn, HvpOutput, JvpFn, JvpOutput, SecondOrder, HESSIAN_MAX_INPUTS,
};
pub use pipeline::Pipeline;
pub use unfad_jit::{Bound, JitError, RawFn};

/// Why compiling or calling failed. `Display` gives a message a person can act on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The program does not parse, is ill-typed, or uses a construct that cannot be
    /// differentiated; the message has the line and column.
    #[error("{0}")]
    Program(#[from] unfad_syntax::Error),
    /// The arguments do not fit the parameters (number, shape, sizes), or the request
    /// does not fit the program (parameters to differentiate against).
    #[error("{0}")]
    Argument(String),
    /// A bug of unfad, reported instead of crashing.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<unfad_jit::JitError> for Error {
    fn from(e: unfad_jit::JitError) -> Error {
        Error::Internal(e.to_string())
    }
}

/// Compiles programs. Cheap to create. Between compilations it keeps only memory: the term
/// arenas of finished compilations, whose tables a later compilation fills again instead of
/// allocating (and faulting in) fresh ones. A clone starts with none.
#[derive(Default)]
pub struct Engine {
    arenas: Mutex<Vec<unfad_syntax::Arena>>,
}

impl Clone for Engine {
    fn clone(&self) -> Engine {
        Engine::default()
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self.arenas.lock().map_or(0, |v| v.len());
        f.debug_struct("Engine")
            .field("kept_arenas", &kept)
            .finish()
    }
}

/// Arenas an engine keeps for reuse at most (one per compilation running at once).
const KEPT_ARENAS: usize = 4;

/// What to differentiate: the entry point and the parameters (the paper's rho).
#[derive(Clone, Copy, Debug, Default)]
pub struct GradOptions<'a> {
    /// The definition to differentiate (default: the last one).
    pub entry: Option<&'a str>,
    /// The parameters to differentiate against (default: all).
    pub wrt: Option<&'a [&'a str]>,
}

impl Engine {
    pub fn new() -> Engine {
        Engine::default()
    }

    /// The native value-and-gradient function of the last definition of `src`, with
    /// respect to every parameter. The definition must return `real`.
    pub fn compile_grad(&self, src: &str) -> Result<GradFn, Error> {
        self.compile_grad_with(src, GradOptions::default())
    }

    /// [`Engine::compile_grad`] of the definition named `entry`.
    pub fn compile_grad_entry(&self, src: &str, entry: &str) -> Result<GradFn, Error> {
        self.compile_grad_with(
            src,
            GradOptions {
                entry: Some(entry),
                wrt: None,
            },
        )
    }

    /// [`Engine::compile_grad`] with respect to the parameters named in `wrt` only.
    pub fn compile_grad_wrt(
        &self,
        src: &str,
        entry: Option<&str>,
        wrt: &[&str],
    ) -> Result<GradFn, Error> {
        self.compile_grad_with(
            src,
            GradOptions {
                entry,
                wrt: Some(wrt),
            },
        )
    }

    /// The general form: entry point and parameters to differentiate against.
    pub fn compile_grad_with(&self, src: &str, options: GradOptions) -> Result<GradFn, Error> {
        let mut p = Pipeline::load_in(src, options.entry, self.take_arena())?;
        // Gradients are computed in parameter order whatever order `wrt` names them in.
        let mut wrt = p.wrt(options.wrt)?;
        wrt.sort_unstable();
        let grad = p.optimized_reverse(&wrt)?;
        let compiled = unfad_jit::compile_parallel(&mut p.program.arena, &grad)?;
        let params = params_of(&p.program.arena, &p.source.params);
        let names = params.iter().map(|p| p.name.clone()).collect();
        let sources = Sources::of(&p);
        self.keep_arena(p.into_arena());
        Ok(GradFn {
            compiled,
            sources,
            params,
            names,
            wrt,
            pool: Mutex::new(Vec::new()),
            locator: Locator {
                entry: options.entry.map(str::to_string),
                primal: std::sync::OnceLock::new(),
            },
        })
    }

    /// An arena kept from an earlier compilation, or a new one.
    fn take_arena(&self) -> unfad_syntax::Arena {
        let kept = self.arenas.lock().ok().and_then(|mut v| v.pop());
        kept.unwrap_or_default()
    }

    /// Keep `arena` for a later compilation (emptied then, not now: the caller is waiting).
    fn keep_arena(&self, arena: unfad_syntax::Arena) {
        if let Ok(mut v) = self.arenas.lock() {
            if v.len() < KEPT_ARENAS {
                v.push(arena);
            }
        }
    }

    /// The native function computing the last definition of `src` (any ground result).
    pub fn compile(&self, src: &str) -> Result<Func, Error> {
        self.compile_func(src, None)
    }

    /// [`Engine::compile`] of the definition named `entry`.
    pub fn compile_entry(&self, src: &str, entry: &str) -> Result<Func, Error> {
        self.compile_func(src, Some(entry))
    }

    fn compile_func(&self, src: &str, entry: Option<&str>) -> Result<Func, Error> {
        let mut p = Pipeline::load_in(src, entry, self.take_arena())?;
        let primal = p.prepared_primal();
        // One function: a primal compiles in about a millisecond, and a cut would store the
        // values crossing it where one function fuses them (GMM's objective 12% slower).
        // A long one is cut into chunks all the same: compiling it whole takes a time
        // super-linear in its length.
        let compiled = unfad_jit::compile_whole_unless_long(&mut p.program.arena, &primal)?;
        let source = p.source.clone();
        Ok(self.func(p, compiled, &source))
    }

    /// The compiled `func` of the pipeline `p` (its entry point, or a function derived from
    /// it), its parameters named by their variables; `p`'s arena is kept for later
    /// compilations.
    fn func(&self, p: Pipeline, compiled: Compiled, func: &unfad_syntax::Func) -> Func {
        let params = params_of(&p.program.arena, &func.params);
        let names = params.iter().map(|p| p.name.clone()).collect();
        let sources = Sources::of(&p);
        self.keep_arena(p.into_arena());
        Func {
            compiled,
            sources,
            params,
            names,
            ret: func.ret.clone(),
            pool: Mutex::new(Vec::new()),
        }
    }
}

impl Engine {
    /// Compile a function the pipeline `p` derived from its entry point (a jvp, an hvp).
    fn compile_derived(
        &self,
        mut p: Pipeline,
        derived: &unfad_syntax::Func,
    ) -> Result<Func, Error> {
        let compiled = unfad_jit::compile_parallel(&mut p.program.arena, derived)?;
        Ok(self.func(p, compiled, derived))
    }
}

#[derive(Clone, Debug)]
struct Param {
    name: String,
    ty: Type,
}

/// The parameters `vars` (typed variables of `arena`) by name and type.
fn params_of(arena: &unfad_syntax::Arena, vars: &[unfad_syntax::Var]) -> Vec<Param> {
    vars.iter()
        .map(|&v| Param {
            name: arena.var_name(v).to_string(),
            ty: arena.var_type(v).cloned().expect("typed"),
        })
        .collect()
}

/// The result of a gradient call: the value, and the gradient with respect to each
/// differentiated parameter, flat and row-major. Reuse one with [`GradFn::call_into`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    pub value: f64,
    gradients: Vec<Vec<f64>>,
    names: Vec<String>,
    /// Which parameters were differentiated.
    differentiated: Vec<bool>,
    /// Components of gradients that need reordering (tuples), reused between calls.
    scratch: Vec<Vec<f64>>,
}

impl Output {
    /// The gradient with respect to parameter `i`, flat and row-major (one element for a
    /// real, the leaves in order for a tuple); empty for a parameter that was not
    /// differentiated, or out of range.
    pub fn gradient(&self, i: usize) -> &[f64] {
        self.gradients.get(i).map_or(&[], |g| g.as_slice())
    }

    /// The gradient with respect to the parameter named `name`, if it was differentiated.
    pub fn gradient_by_name(&self, name: &str) -> Option<&[f64]> {
        let i = self.names.iter().position(|n| n == name)?;
        (*self.differentiated.get(i)?).then(|| self.gradients[i].as_slice())
    }
}

/// Buffers one call needs, pooled so that warm calls allocate nothing.
#[derive(Default)]
struct Scratch {
    workspace: Vec<f64>,
    /// Input components that are assembled (tuples and arrays of tuples).
    inputs: Vec<Vec<f64>>,
    /// Size bindings while checking arguments.
    bindings: unfad_syntax::SizeBindings,
    /// Size values in the compiled function's order.
    sizes: Vec<u64>,
    /// Output components of a [`Func`] call, kept from call to call (the native code
    /// writes every element), so that a warm call of the same sizes allocates no output buffer.
    outputs: Vec<Vec<f64>>,
}

/// Component lists live on the stack up to this many components.
const STACK_COMPONENTS: usize = 64;

/// A vector on the stack for up to [`STACK_COMPONENTS`] items (on the heap beyond).
struct StackVec<T> {
    stack: [T; STACK_COMPONENTS],
    heap: Vec<T>,
    len: usize,
    spill: bool,
}

impl<T: Default> StackVec<T> {
    fn with_capacity(n: usize) -> Self {
        let spill = n > STACK_COMPONENTS;
        StackVec {
            stack: std::array::from_fn(|_| T::default()),
            heap: if spill {
                Vec::with_capacity(n)
            } else {
                Vec::new()
            },
            len: 0,
            spill,
        }
    }

    fn push(&mut self, x: T) {
        if self.spill {
            self.heap.push(x);
        } else {
            self.stack[self.len] = x;
        }
        self.len += 1;
    }

    fn as_mut_slice(&mut self) -> &mut [T] {
        if self.spill {
            &mut self.heap
        } else {
            &mut self.stack[..self.len]
        }
    }

    fn as_slice(&self) -> &[T] {
        if self.spill {
            &self.heap
        } else {
            &self.stack[..self.len]
        }
    }
}

/// Take a scratch (or any buffer kept between calls) from `pool`, run `f` with it, put it
/// back; a new one when every one is in use, on other threads.
pub(crate) fn with_scratch<T: Default, R>(pool: &Mutex<Vec<T>>, f: impl FnOnce(&mut T) -> R) -> R {
    let mut scratch = pool
        .lock()
        .map(|mut p| p.pop())
        .unwrap_or(None)
        .unwrap_or_default();
    let r = f(&mut scratch);
    if let Ok(mut p) = pool.lock() {
        p.push(scratch);
    }
    r
}

/// A compiled gradient: call it with [`GradFn::call`].
pub struct GradFn {
    compiled: Compiled,
    sources: Sources,
    params: Vec<Param>,
    names: Vec<String>,
    wrt: Vec<usize>,
    pool: Mutex<Vec<Scratch>>,
    locator: Locator,
}

/// Where a gradient's run-time error is in the source, when the gradient's own code does
/// not know: the optimizer makes new reads (a `let` of an index shared, an adjoint's
/// scatter at the read's position) that carry no position. The primal reads the same
/// positions first, and its reads are the program's own: on such an error it is compiled
/// (once, on the error path only) and run on the same arguments, and its error, which
/// says where, is the one returned.
struct Locator {
    entry: Option<String>,
    primal: std::sync::OnceLock<Option<Func>>,
}

impl Locator {
    /// `e` itself, or the primal's error on `args` where `e` is a stop that does not say
    /// where and the primal's says (the primal compiled from the program's text in
    /// `sources`).
    fn locate(&self, e: Error, sources: &Sources, args: &[Arg]) -> Error {
        let Error::Argument(msg) = &e else {
            return e;
        };
        if !msg.starts_with("the program stopped: ") {
            return e;
        }
        let primal = self.primal.get_or_init(|| {
            let engine = Engine::new();
            let src = sources.user_text();
            match &self.entry {
                Some(name) => engine.compile_entry(src, name),
                None => engine.compile(src),
            }
            .ok()
        });
        match primal.as_ref().map(|f| f.call(args)) {
            Some(Err(Error::Argument(m))) if m.starts_with("the program stopped at ") => {
                Error::Argument(m)
            }
            _ => e,
        }
    }
}

impl std::fmt::Debug for GradFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GradFn")
            .field("params", &self.names)
            .field("wrt", &self.wrt)
            .finish()
    }
}

impl GradFn {
    /// Value and gradients at `args` (one per parameter), in a fresh [`Output`].
    pub fn call(&self, args: &[Arg]) -> Result<Output, Error> {
        let mut out = Output::default();
        self.call_into(args, &mut out)?;
        Ok(out)
    }

    /// Value and gradients into `out`; once warm with the same sizes this allocates
    /// nothing (for up to 64 components of arguments and gradients).
    pub fn call_into(&self, args: &[Arg], out: &mut Output) -> Result<(), Error> {
        with_scratch(&self.pool, |scratch| self.run(args, out, scratch))
            .map_err(|e| self.locator.locate(e, &self.sources, args))
    }

    fn run(&self, args: &[Arg], out: &mut Output, scratch: &mut Scratch) -> Result<(), Error> {
        let inputs = prepare(&self.compiled, &self.params, &self.names, args, scratch)?;
        if out.names != self.names {
            out.names = self.names.clone();
            out.differentiated = (0..self.names.len())
                .map(|i| self.wrt.contains(&i))
                .collect();
        }
        out.gradients.resize_with(self.params.len(), Vec::new);
        let multi: usize = self
            .wrt
            .iter()
            .filter(|&&i| !is_single_component(&self.params[i].ty))
            .map(|&i| component_count(&self.params[i].ty))
            .sum();
        out.scratch.resize_with(multi, Vec::new);
        let comps = self.compiled.outputs();
        let sizes = &scratch.sizes;
        let comp_len = |k: usize| {
            comps
                .get(k)
                .and_then(|c| c.len(sizes))
                .ok_or_else(|| Error::Internal(format!("output component {k}")))
        };
        let mut value = [0.0f64];
        {
            // The value, then the differentiated parameters' components in parameter order
            // (the order the gradient was compiled in).
            let mut outs: StackVec<&mut [f64]> = StackVec::with_capacity(comps.len());
            outs.push(&mut value);
            let mut k = 1;
            let mut spare = out.scratch.iter_mut();
            for (i, g) in out.gradients.iter_mut().enumerate() {
                if !self.wrt.contains(&i) {
                    g.clear();
                    continue;
                }
                let ty = &self.params[i].ty;
                if is_single_component(ty) {
                    resize_zeroed(g, comp_len(k)?)?;
                    outs.push(g.as_mut_slice());
                    k += 1;
                } else {
                    for _ in 0..component_count(ty) {
                        let buf = spare
                            .next()
                            .ok_or_else(|| Error::Internal("gradient scratch".into()))?;
                        resize_zeroed(buf, comp_len(k)?)?;
                        outs.push(buf.as_mut_slice());
                        k += 1;
                    }
                }
            }
            run_native(
                &self.sources,
                &self.compiled,
                &inputs,
                scratch,
                outs.as_mut_slice(),
            )?;
        }
        out.value = value[0];
        // Tuple-valued gradients: reorder their components into row-major leaves. The
        // result's shape is `(value, g_1, ..., g_k)`.
        let shapes = match self.compiled.result_shape() {
            unfad_jit::Shape::Tuple(items) => items,
            _ => {
                return Err(Error::Internal(
                    "the gradient's result is not a tuple".into(),
                ))
            }
        };
        let mut s = 0;
        for (k, &i) in self.wrt.iter().enumerate() {
            let n = component_count(&self.params[i].ty);
            if !is_single_component(&self.params[i].ty) {
                let shape = shapes
                    .get(k + 1)
                    .ok_or_else(|| Error::Internal("gradient shape".into()))?;
                let mut parts: StackVec<&[f64]> = StackVec::with_capacity(n);
                for v in &out.scratch[s..s + n] {
                    parts.push(v.as_slice());
                }
                let total = shape
                    .leaf_count(&scratch.sizes)
                    .ok_or_else(|| Error::Internal("gradient size".into()))?;
                let g = &mut out.gradients[i];
                resize_zeroed(g, total)?;
                shape.gather(&scratch.sizes, parts.as_slice(), g)?;
                s += n;
            }
        }
        Ok(())
    }

    /// The native function; see the crate docs for its ABI. Valid while `self` lives.
    pub fn fn_ptr(&self) -> RawFn {
        self.compiled.fn_ptr()
    }

    /// The native function bound to the ABI's input components (`inputs`, borrowed) and
    /// `sizes`, every length checked once, here, with output buffers and a workspace of its
    /// own: [`Bound::run`] then runs the native code without the per-call checks of
    /// [`GradFn::call`] (see the crate docs). An [`Error::Argument`] if the components or
    /// sizes do not fit.
    pub fn bind<'a>(&self, inputs: &[&'a [f64]], sizes: &[u64]) -> Result<Bound<'a>, Error> {
        bind(&self.compiled, inputs, sizes)
    }

    /// Where the status cell is in the workspace, if the native function checks something
    /// at run time: nonzero after a raw call, a check failed and the call stopped early.
    pub fn status_cell(&self, sizes: &[u64]) -> Option<usize> {
        self.compiled.status_cell(sizes)
    }

    /// Parameter names, in order.
    pub fn param_names(&self) -> &[String] {
        &self.names
    }

    /// The type of parameter `k` (as declared, sizes formal), if there is one.
    pub fn param_type(&self, k: usize) -> Option<&Type> {
        self.params.get(k).map(|p| &p.ty)
    }

    /// Indices of the differentiated parameters, in parameter order (the order of the
    /// gradient outputs).
    pub fn wrt(&self) -> &[usize] {
        &self.wrt
    }

    /// The size variables, in the order of the ABI's `sizes` argument. Those the
    /// parameters' types name come first; after them, any size the program computes from
    /// them by more than a constant step (`n - k + 1`, its name the formula), whose value
    /// [`Self::sizes_from`] computes.
    pub fn size_vars(&self) -> &[String] {
        self.compiled.size_vars()
    }

    /// The ABI's `sizes` argument from the values of the size variables the parameters
    /// name (`base`, by name; an int parameter's is `max(0, value)`): the sizes computed
    /// from them by formulas are filled in. `None` if `base` lacks one.
    pub fn sizes_from(&self, base: &dyn Fn(&str) -> Option<u64>) -> Option<Vec<u64>> {
        self.compiled.sizes_from(base)
    }

    /// The ABI's input components.
    pub fn input_components(&self) -> &[Component] {
        self.compiled.inputs()
    }

    /// The ABI's output components: the value, then the gradients' components.
    pub fn output_components(&self) -> &[Component] {
        self.compiled.outputs()
    }

    /// Reals of workspace a call with these sizes needs.
    pub fn workspace_len(&self, sizes: &[u64]) -> usize {
        self.compiled.workspace_len(sizes)
    }
}

/// The input components of one call: the argument's own data where a component is just
/// that (reals, arrays of reals), otherwise (`None`) the component assembled in the
/// scratch.
type Direct<'a> = StackVec<Option<&'a [f64]>>;

/// Check `args` against `params`, bind the sizes into `scratch.sizes` (in the compiled
/// function's order), and collect the input components.
fn prepare<'a>(
    compiled: &Compiled,
    params: &[Param],
    names: &[String],
    args: &'a [Arg<'a>],
    scratch: &mut Scratch,
) -> Result<Direct<'a>, Error> {
    if args.len() != params.len() {
        return Err(Error::Argument(format!(
            "{} argument(s) given, the function takes {} ({})",
            args.len(),
            params.len(),
            names.join(", ")
        )));
    }
    scratch.bindings.clear();
    let count: usize = params.iter().map(|p| component_count(&p.ty)).sum();
    let mut direct = StackVec::with_capacity(count);
    scratch.inputs.resize_with(count, Vec::new);
    let mut binder = Binder {
        names,
        sizes: &mut scratch.bindings,
    };
    let mut k = 0;
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        let n = component_count(&p.ty);
        match (&p.ty, a) {
            (Type::Real, Arg::Real(x)) => direct.push(Some(std::slice::from_ref(x))),
            (Type::Int, Arg::Real(x)) => {
                binder.check_int(i, *x, None)?;
                direct.push(Some(std::slice::from_ref(x)));
            }
            (t, Arg::Array { data, shape }) if is_single_component(t) && *t != Type::Real => {
                binder.check_array(i, t, data, shape)?;
                direct.push(Some(*data));
            }
            _ => {
                for c in &mut scratch.inputs[k..k + n] {
                    c.clear();
                }
                binder.scatter(i, &p.ty, a, &mut scratch.inputs[k..k + n], 0, None)?;
                for _ in 0..n {
                    direct.push(None);
                }
            }
        }
        k += n;
    }
    scratch.sizes.clear();
    for v in compiled.size_vars() {
        // A size only mentioned below empty arrays has no data to fix it: it is 0.
        let value = scratch.bindings.get(v).unwrap_or(0);
        scratch.sizes.push(value);
    }
    Ok(direct)
}

/// [`Compiled::bind`], a call that does not fit being the caller's mistake.
fn bind<'a>(compiled: &Compiled, inputs: &[&'a [f64]], sizes: &[u64]) -> Result<Bound<'a>, Error> {
    compiled.bind(inputs, sizes).map_err(|e| match e {
        JitError::Call(msg) => Error::Argument(msg),
        e => Error::from(e),
    })
}

/// The texts of a program (the prelude and the user's), to say where a run stopped.
#[derive(Clone, Debug, Default)]
struct Sources(std::sync::Arc<[String]>);

impl Sources {
    fn of(p: &Pipeline) -> Sources {
        let texts: Vec<String> = [
            unfad_syntax::SourceId::PRELUDE,
            unfad_syntax::SourceId::USER,
        ]
        .iter()
        .map(|&id| p.program.source_text(id).to_string())
        .collect();
        Sources(texts.into())
    }

    /// The program's own text (not the prelude's).
    fn user_text(&self) -> &str {
        self.0
            .get(unfad_syntax::SourceId::USER.0 as usize)
            .map_or("", String::as_str)
    }

    /// `" at line L, column C"` of the byte `offset` of source `src` (empty if unknown).
    fn at(&self, src: u16, offset: u32) -> String {
        let Some(text) = self.0.get(src as usize) else {
            return String::new();
        };
        let offset = (offset as usize).min(text.len());
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        let place = if src == unfad_syntax::SourceId::PRELUDE.0 {
            " (in the prelude)"
        } else {
            ""
        };
        format!(" at line {line}, column {column}{place}")
    }

    /// The error of a call: a stop on the program's arguments (an index out of bounds, an
    /// int division by zero) says where; the others as [`Error::from`].
    fn error(&self, e: JitError) -> Error {
        match e {
            JitError::Stopped { why, at } => {
                let at = at.map_or(String::new(), |(src, offset)| self.at(src, offset));
                Error::Argument(format!("the program stopped{at}: {why}"))
            }
            e => Error::from(e),
        }
    }
}

/// Call the native code (through the checked call) with the prepared inputs.
fn run_native(
    sources: &Sources,
    compiled: &Compiled,
    direct: &Direct,
    scratch: &mut Scratch,
    outputs: &mut [&mut [f64]],
) -> Result<(), Error> {
    let need = compiled.workspace_len(&scratch.sizes);
    if need == usize::MAX {
        return Err(Error::Argument(format!(
            "the sizes {:?} are too large to run with",
            scratch.sizes
        )));
    }
    if scratch.workspace.len() < need {
        resize_zeroed(&mut scratch.workspace, need)?;
    }
    let mut inputs: StackVec<&[f64]> = StackVec::with_capacity(direct.as_slice().len());
    for (k, d) in direct.as_slice().iter().enumerate() {
        inputs.push(d.unwrap_or(scratch.inputs[k].as_slice()));
    }
    compiled
        .call(
            inputs.as_slice(),
            &scratch.sizes,
            outputs,
            &mut scratch.workspace[..need],
        )
        .map_err(|e| sources.error(e))?;
    Ok(())
}

/// `v` made `n` reals long (cut, or grown with zeros after its old ones), or an error if the memory cannot be
/// had: sizes that the arguments give (an `int` of 10^11 for `iota`) may ask for more
/// than the machine has, which must not abort the process.
fn resize_zeroed(v: &mut Vec<f64>, n: usize) -> Result<(), Error> {
    if n > v.len() && v.try_reserve_exact(n - v.len()).is_err() {
        return Err(Error::Argument(format!(
            "these arguments need {n} reals ({} GB) of memory, which cannot be allocated",
            (n as f64 * 8.0 / 1e9).ceil()
        )));
    }
    v.resize(n, 0.0);
    Ok(())
}

/// A compiled primal function: call it with [`Func::call`].
pub struct Func {
    compiled: Compiled,
    sources: Sources,
    params: Vec<Param>,
    names: Vec<String>,
    ret: Type,
    pool: Mutex<Vec<Scratch>>,
}

impl Func {
    /// The result's leaves, flat and row-major (one element for a real).
    pub fn call(&self, args: &[Arg]) -> Result<Vec<f64>, Error> {
        let mut out = Vec::new();
        self.call_into(args, &mut out)?;
        Ok(out)
    }

    /// [`Func::call`] into `out` (its old contents replaced). The output components are
    /// kept between calls, so that once warm with the same sizes no output buffer is
    /// allocated or paged in again (a few small vectors of the components' addresses
    /// still are). On an error, `out` holds no meaningful values (the native code may have
    /// written part of the result into it).
    pub fn call_into(&self, args: &[Arg], out: &mut Vec<f64>) -> Result<(), Error> {
        with_scratch(&self.pool, |scratch| self.run(args, scratch, out))
    }

    fn run(&self, args: &[Arg], scratch: &mut Scratch, out: &mut Vec<f64>) -> Result<(), Error> {
        let inputs = prepare(&self.compiled, &self.params, &self.names, args, scratch)?;
        let sizes = std::mem::take(&mut scratch.sizes);
        let mut bufs = std::mem::take(&mut scratch.outputs);
        let result = (|| {
            let comps = self.compiled.outputs();
            let shape = self.compiled.result_shape();
            if shape.components_in_order() {
                // The leaves are the components one after the other: the native code
                // writes them straight into `out`, with no copy after the call.
                let total = shape
                    .leaf_count(&sizes)
                    .ok_or_else(|| Error::Argument(format!("the sizes {sizes:?} are too large")))?;
                resize_zeroed(out, total)?;
                scratch.sizes = sizes.clone();
                let mut outs: StackVec<&mut [f64]> = StackVec::with_capacity(comps.len());
                let mut rest = out.as_mut_slice();
                for c in comps {
                    let n = c
                        .len(&sizes)
                        .filter(|&n| n <= rest.len())
                        .ok_or_else(|| Error::Internal("an output component's size".into()))?;
                    let (head, tail) = std::mem::take(&mut rest).split_at_mut(n);
                    outs.push(head);
                    rest = tail;
                }
                return run_native(
                    &self.sources,
                    &self.compiled,
                    &inputs,
                    scratch,
                    outs.as_mut_slice(),
                );
            }
            bufs.resize_with(comps.len(), Vec::new);
            for (c, v) in comps.iter().zip(bufs.iter_mut()) {
                let n = c
                    .len(&sizes)
                    .ok_or_else(|| Error::Argument(format!("the sizes {sizes:?} are too large")))?;
                resize_zeroed(v, n)?;
            }
            scratch.sizes = sizes.clone();
            {
                let mut outs: Vec<&mut [f64]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
                run_native(&self.sources, &self.compiled, &inputs, scratch, &mut outs)?;
            }
            let parts: Vec<&[f64]> = bufs.iter().map(|b| b.as_slice()).collect();
            let total = shape
                .leaf_count(&sizes)
                .ok_or_else(|| Error::Internal("result size".into()))?;
            resize_zeroed(out, total)?;
            shape.gather(&sizes, &parts, out)?;
            Ok(())
        })();
        scratch.outputs = bufs;
        result
    }

    /// The native function; see the crate docs for its ABI. Valid while `self` lives.
    pub fn fn_ptr(&self) -> RawFn {
        self.compiled.fn_ptr()
    }

    /// The native function bound to the ABI's input components (`inputs`, borrowed) and
    /// `sizes`, every length checked once, here, with output buffers and a workspace of its
    /// own: [`Bound::run`] then runs the native code without the per-call checks of
    /// [`Func::call`] (see the crate docs). An [`Error::Argument`] if the components or
    /// sizes do not fit.
    pub fn bind<'a>(&self, inputs: &[&'a [f64]], sizes: &[u64]) -> Result<Bound<'a>, Error> {
        bind(&self.compiled, inputs, sizes)
    }

    /// Where the status cell is in the workspace, if the native function checks something
    /// at run time: nonzero after a raw call, a check failed and the call stopped early.
    pub fn status_cell(&self, sizes: &[u64]) -> Option<usize> {
        self.compiled.status_cell(sizes)
    }

    /// Parameter names, in order.
    pub fn param_names(&self) -> &[String] {
        &self.names
    }

    /// The type of parameter `k` (as declared, sizes formal), if there is one.
    pub fn param_type(&self, k: usize) -> Option<&Type> {
        self.params.get(k).map(|p| &p.ty)
    }

    /// The result's type.
    pub fn ret_type(&self) -> &Type {
        &self.ret
    }

    /// The size variables, in the order of the ABI's `sizes` argument. Those the
    /// parameters' types name come first; after them, any size the program computes from
    /// them by more than a constant step (`n - k + 1`, its name the formula), whose value
    /// [`Self::sizes_from`] computes.
    pub fn size_vars(&self) -> &[String] {
        self.compiled.size_vars()
    }

    /// The ABI's `sizes` argument from the values of the size variables the parameters
    /// name (`base`, by name; an int parameter's is `max(0, value)`): the sizes computed
    /// from them by formulas are filled in. `None` if `base` lacks one.
    pub fn sizes_from(&self, base: &dyn Fn(&str) -> Option<u64>) -> Option<Vec<u64>> {
        self.compiled.sizes_from(base)
    }

    /// Reals of workspace a call with these sizes needs.
    pub fn workspace_len(&self, sizes: &[u64]) -> usize {
        self.compiled.workspace_len(sizes)
    }
}
