//! A compiled function and its checked calls: the whole `unsafe` boundary of the
//! workspace. Everything else is safe code that builds or calls the function; here the
//! native code is wrapped ([`RawFn`]), called after every length is checked against its
//! layout ([`Compiled::call`]) or bound once to checked arguments and run many times
//! ([`Compiled::bind`], [`Bound`]), and its memory freed when the last clone is dropped.

use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use cranelift_jit::JITModule;
use cranelift_module::FuncId;

use crate::codegen::{Built, IntParam};
use crate::error::{JitError, Stop};
use crate::layout::{Component, Shape, SizeExpr};

/// The native function: `f(inputs, sizes, outputs, workspace)` (see the crate docs).
pub type RawFn = unsafe extern "C" fn(*const *const f64, *const u64, *const *mut f64, *mut f64);

/// A compiled function. Cloning is cheap; the native code lives until the last clone is
/// dropped.
#[derive(Clone)]
pub struct Compiled {
    inner: Arc<Inner>,
}

struct Inner {
    /// Owns the executable memory; freed on drop.
    module: Mutex<Option<JITModule>>,
    entry: RawFn,
    /// The functions the term was compiled as (2 when cut in two).
    parts: usize,
    size_vars: Vec<String>,
    param_names: Vec<String>,
    inputs: Vec<Component>,
    outputs: Vec<Component>,
    param_shapes: Vec<Shape>,
    result_shape: Shape,
    workspace: SizeExpr,
    checks: Vec<SizeExpr>,
    status: Option<SizeExpr>,
    int_params: Vec<IntParam>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let module = match self.module.get_mut() {
            Ok(m) => m.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(module) = module {
            // SAFETY: the code is only reachable through `entry`, which is called by
            // `Compiled::call` (which borrows a clone of this `Arc`) or through the pointer
            // `Compiled::fn_ptr` hands out, documented to be valid only while a clone of the
            // `Compiled` is alive. The last clone is being dropped, so no call is running and
            // none can start.
            unsafe { module.free_memory() };
        }
    }
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("size_vars", &self.inner.size_vars)
            .field("inputs", &self.inner.inputs)
            .field("outputs", &self.inner.outputs)
            .finish_non_exhaustive()
    }
}

impl Compiled {
    /// The native function (see the crate docs for its ABI). It stays valid while this
    /// `Compiled` or a clone of it is alive.
    pub fn fn_ptr(&self) -> RawFn {
        self.inner.entry
    }

    /// How many functions the term was compiled as: 1, or 2 when
    /// [`compile_parallel`](crate::compile_parallel) cut it in two.
    pub fn parts(&self) -> usize {
        self.inner.parts
    }

    /// The input components, over all parameters in order.
    pub fn inputs(&self) -> &[Component] {
        &self.inner.inputs
    }

    /// The output components of the result.
    pub fn outputs(&self) -> &[Component] {
        &self.inner.outputs
    }

    /// The size variables, in the order the `sizes` argument gives their values.
    pub fn size_vars(&self) -> &[String] {
        &self.inner.size_vars
    }

    /// The parameter names, indexed like [`Component::index`].
    pub fn param_names(&self) -> &[String] {
        &self.inner.param_names
    }

    /// The shape of parameter `k` (to convert its value to components: [`Shape::scatter`]).
    pub fn param_shape(&self, k: usize) -> Option<&Shape> {
        self.inner.param_shapes.get(k)
    }

    /// The shape of the result (to read it from the components: [`Shape::gather`]).
    pub fn result_shape(&self) -> &Shape {
        &self.inner.result_shape
    }

    /// The number of reals the workspace must hold for these sizes (`usize::MAX` if the
    /// sizes are missing or too large to run with).
    pub fn workspace_len(&self, sizes: &[u64]) -> usize {
        self.inner
            .workspace
            .eval(sizes)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(usize::MAX)
    }

    /// Run the native code after checking every length against the layout: `inputs` are
    /// the input components, `outputs` the output components (filled by the call). To call
    /// a function many times with the same arguments, check them once with
    /// [`Compiled::bind`] instead.
    pub fn call(
        &self,
        inputs: &[&[f64]],
        sizes: &[u64],
        outputs: &mut [&mut [f64]],
        workspace: &mut [f64],
    ) -> Result<(), JitError> {
        let inner = &*self.inner;
        self.check_sizes(sizes)?;
        check_count(Side::Input, inputs.len(), inner.inputs.len())?;
        check_count(Side::Output, outputs.len(), inner.outputs.len())?;
        self.check_lengths(Side::Input, sizes, &mut inputs.iter().map(|s| s.len()))?;
        self.check_lengths(Side::Output, sizes, &mut outputs.iter().map(|s| s.len()))?;
        self.check_ints(inputs, sizes)?;
        let need = self.workspace_len(sizes);
        if workspace.len() < need {
            return Err(JitError::Call(format!(
                "the workspace has {} element(s), the sizes {sizes:?} need {need}",
                workspace.len()
            )));
        }
        const ON_STACK: usize = 16;
        let mut in_stack = [std::ptr::null::<f64>(); ON_STACK];
        let mut out_stack = [std::ptr::null_mut::<f64>(); ON_STACK];
        let in_heap: Vec<*const f64>;
        let out_heap: Vec<*mut f64>;
        let in_ptrs: &[*const f64] = if inputs.len() <= ON_STACK {
            for (p, s) in in_stack.iter_mut().zip(inputs) {
                *p = s.as_ptr();
            }
            &in_stack[..inputs.len()]
        } else {
            in_heap = inputs.iter().map(|s| s.as_ptr()).collect();
            &in_heap
        };
        let out_ptrs: &[*mut f64] = if outputs.len() <= ON_STACK {
            for (p, s) in out_stack.iter_mut().zip(outputs.iter_mut()) {
                *p = s.as_mut_ptr();
            }
            &out_stack[..outputs.len()]
        } else {
            out_heap = outputs.iter_mut().map(|s| s.as_mut_ptr()).collect();
            &out_heap
        };
        // SAFETY: the native code reads `inputs[k][..inputs()[k].len(sizes)]` for every input
        // component, `sizes[..size_vars().len()]`, writes `outputs[k][..outputs()[k].len(sizes)]`
        // and uses `workspace[..workspace_len(sizes)]`, and nothing else; every count it
        // computes from the sizes was checked above to be representable, so its wrapping
        // arithmetic gives the same values. All those lengths were checked against the
        // slices just now. The output slices are exclusive borrows, so they overlap neither
        // each other, nor the inputs, nor the workspace. The code is alive: `self` holds
        // the module that owns it.
        unsafe {
            (inner.entry)(
                in_ptrs.as_ptr(),
                sizes.as_ptr(),
                out_ptrs.as_ptr(),
                workspace.as_mut_ptr(),
            );
        }
        read_status(self.status_cell(sizes), workspace)
    }

    /// Check `inputs` (the input components) and `sizes` exactly as [`Compiled::call`]
    /// does, and bind them, with output buffers and a workspace of their own, to a
    /// [`Bound`] function whose [`Bound::run`] then calls the native code with no further
    /// check and no allocation. This is the safe way to time the compiled code itself: the
    /// checked call's per-call work (checking every length, finding a workspace) would
    /// swamp a function that runs in nanoseconds. The inputs stay borrowed, so they cannot
    /// change under the bound function.
    pub fn bind<'a>(&self, inputs: &[&'a [f64]], sizes: &[u64]) -> Result<Bound<'a>, JitError> {
        let inner = &*self.inner;
        self.check_sizes(sizes)?;
        check_count(Side::Input, inputs.len(), inner.inputs.len())?;
        self.check_lengths(Side::Input, sizes, &mut inputs.iter().map(|s| s.len()))?;
        self.check_ints(inputs, sizes)?;
        let mut outputs = inner
            .outputs
            .iter()
            .enumerate()
            .map(|(k, c)| match c.len(sizes) {
                Some(n) => zeros(n, || format!("output component {k}")),
                None => Err(JitError::Call(format!(
                    "output component {k} (`{}`) is too large for the sizes {sizes:?}",
                    c.describe("result")
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let need = self.workspace_len(sizes);
        if need == usize::MAX {
            return Err(JitError::Call(format!(
                "the sizes {sizes:?} are too large to run with"
            )));
        }
        let workspace = zeros(need, || "the workspace".to_string())?;
        Ok(Bound {
            entry: inner.entry,
            inputs: inputs.iter().map(|s| s.as_ptr()).collect(),
            sizes: sizes.to_vec(),
            output_pointers: outputs.iter_mut().map(|o| o.as_mut_ptr()).collect(),
            outputs,
            workspace,
            status: self.status_cell(sizes),
            compiled: self.clone(),
            inputs_borrowed: PhantomData,
        })
    }

    /// Refuse `sizes` unless they are one per size variable and every count the native
    /// code computes from them is representable.
    fn check_sizes(&self, sizes: &[u64]) -> Result<(), JitError> {
        let inner = &*self.inner;
        if sizes.len() != inner.size_vars.len() {
            return Err(JitError::Call(format!(
                "{} size(s) given, the function has {} ({})",
                sizes.len(),
                inner.size_vars.len(),
                inner.size_vars.join(", ")
            )));
        }
        if inner.checks.iter().any(|e| e.eval(sizes).is_none()) {
            return Err(JitError::Call(format!("the sizes {sizes:?} are too large")));
        }
        // A derived size (`n - k + 1`, after the others) must be what its formula gives
        // on the others (never below 0): the layout trusts it.
        let value_of = |name: &str| {
            let i = inner.size_vars.iter().position(|v| v == name)?;
            i64::try_from(sizes[i]).ok()
        };
        for (name, &given) in inner.size_vars.iter().zip(sizes) {
            if unfad_syntax::size_expr::is_size_name(name) {
                continue;
            }
            let want = unfad_syntax::size_expr::evaluate(name, &value_of).map(|v| v.max(0) as u64);
            if want != Some(given) {
                return Err(JitError::Call(format!(
                    "the size `{name}` is {given}, but its formula gives {} on the other sizes",
                    want.map_or("no value".to_string(), |v| v.to_string())
                )));
            }
        }
        Ok(())
    }

    /// The value of every size variable from those the arguments give, `base` (looked up
    /// by name): a derived size (`n - k + 1`) is computed from the others. `None` if one
    /// the arguments fix is missing.
    pub fn sizes_from(&self, base: &dyn Fn(&str) -> Option<u64>) -> Option<Vec<u64>> {
        let lookup = |name: &str| i64::try_from(base(name)?).ok();
        self.inner
            .size_vars
            .iter()
            .map(|v| {
                if unfad_syntax::size_expr::is_size_name(v) {
                    base(v)
                } else {
                    unfad_syntax::size_expr::evaluate(v, &lookup).map(|x| x.max(0) as u64)
                }
            })
            .collect()
    }

    /// Refuse the values of the int parameters (in `inputs`, already checked to be one
    /// real each) unless each is a whole number up to 2^53 in magnitude whose size variable
    /// in `sizes` is `max(0, value)`, as [`unfad_syntax::Func::size_vars`] makes it.
    fn check_ints(&self, inputs: &[&[f64]], sizes: &[u64]) -> Result<(), JitError> {
        let inner = &*self.inner;
        for p in &inner.int_params {
            let name = inner
                .inputs
                .get(p.component)
                .and_then(|c| inner.param_names.get(c.index))
                .map_or("?", String::as_str);
            let Some(&x) = inputs.get(p.component).and_then(|c| c.first()) else {
                return Err(JitError::Call(format!(
                    "the int parameter `{name}` has no value"
                )));
            };
            if !unfad_syntax::typeck::is_int(x) {
                return Err(JitError::Call(format!(
                    "parameter `{name}` is an int, but the argument is {x} (ints are whole \
                     numbers up to 2^53 in magnitude)"
                )));
            }
            let size = x.max(0.0) as u64;
            if sizes.get(p.size) != Some(&size) {
                return Err(JitError::Call(format!(
                    "the int parameter `{name}` is {x}, so its size `{name}` is {size}, but \
                     the sizes give {}",
                    sizes
                        .get(p.size)
                        .map_or("none".to_string(), |s| s.to_string())
                )));
            }
        }
        Ok(())
    }

    /// Refuse the buffers of the `side`'s components, whose lengths are `lens`, unless each
    /// has the length its component has at `sizes`.
    fn check_lengths(
        &self,
        side: Side,
        sizes: &[u64],
        lens: &mut dyn Iterator<Item = usize>,
    ) -> Result<(), JitError> {
        let inner = &*self.inner;
        let comps = match side {
            Side::Input => &inner.inputs,
            Side::Output => &inner.outputs,
        };
        for (k, c) in comps.iter().enumerate() {
            let owner = match side {
                Side::Input => inner.param_names.get(c.index).map_or("?", String::as_str),
                Side::Output => "result",
            };
            let want = c.len(sizes);
            let got = lens.next();
            if want.is_none() || want != got {
                return Err(JitError::Call(format!(
                    "{} component {k} (`{}`) has {} element(s), the sizes {sizes:?} need {}",
                    side.name(),
                    c.describe(owner),
                    got.map_or("no".to_string(), |n| n.to_string()),
                    want.map_or("too many".to_string(), |n| n.to_string()),
                )));
            }
        }
        Ok(())
    }

    /// The index in the workspace of the cell that reports a failed run-time check (nonzero
    /// after a call that stopped early), if the function checks anything at run time.
    /// [`Compiled::call`] and [`Bound::run`] read it; callers of [`Compiled::fn_ptr`]
    /// should too (the function clears it when it starts).
    pub fn status_cell(&self, sizes: &[u64]) -> Option<usize> {
        let k = self.inner.status.as_ref()?.eval(sizes)?;
        usize::try_from(k).ok()
    }
}

/// The inputs or the outputs of a call, for its checks and their messages.
#[derive(Clone, Copy)]
enum Side {
    Input,
    Output,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Input => "input",
            Side::Output => "output",
        }
    }
}

/// Refuse `given` buffers for the `side`'s components unless the function has exactly
/// `want` of them.
fn check_count(side: Side, given: usize, want: usize) -> Result<(), JitError> {
    if given != want {
        let verb = match side {
            Side::Input => "takes",
            Side::Output => "has",
        };
        return Err(JitError::Call(format!(
            "{given} {} component(s) given, the function {verb} {want}",
            side.name()
        )));
    }
    Ok(())
}

/// `n` zeros, or an error naming `what` if they cannot be allocated (a bound function's
/// buffers are sized by the caller's sizes, which may be too large for the memory).
fn zeros(n: usize, what: impl FnOnce() -> String) -> Result<Vec<f64>, JitError> {
    let mut v = Vec::new();
    if v.try_reserve_exact(n).is_err() {
        return Err(JitError::Call(format!(
            "{} needs {n} reals, more than can be allocated",
            what()
        )));
    }
    v.resize(n, 0.0);
    Ok(v)
}

/// The outcome of a call that used `workspace`: an error if the function has a status
/// cell (at `status`) and a run-time check set it.
#[inline]
fn read_status(status: Option<usize>, workspace: &[f64]) -> Result<(), JitError> {
    let cells = status.and_then(|k| workspace.get(k..k + crate::error::STATUS_CELLS as usize));
    match cells {
        Some(&[code, index, len]) if code != 0.0 => Err(Stop::error(code, [index, len])),
        _ => Ok(()),
    }
}

/// A compiled function bound by [`Compiled::bind`] to its inputs (borrowed for `'a`) and
/// sizes, with output buffers and a workspace of its own. Every length was checked once,
/// when it was bound; [`Bound::run`] calls the native code with nothing left to check but
/// the status cell, so its cost is that of the raw call. It keeps the native code alive.
pub struct Bound<'a> {
    entry: RawFn,
    /// The pointers to the input components (the native code's `inputs`).
    inputs: Vec<*const f64>,
    sizes: Vec<u64>,
    /// The pointers to the buffers of `outputs` (the native code's `outputs`). They stay
    /// valid: `outputs` is never handed out mutably, so its buffers never move.
    output_pointers: Vec<*mut f64>,
    outputs: Vec<Vec<f64>>,
    workspace: Vec<f64>,
    /// Where the status cell is in `workspace`, if the function has one.
    status: Option<usize>,
    /// Owns the native code while this lives.
    compiled: Compiled,
    /// The input components the pointers of `inputs` point into.
    inputs_borrowed: PhantomData<&'a [f64]>,
}

impl Bound<'_> {
    /// Run the native code once, filling [`Bound::outputs`]. An error means a run-time
    /// check failed and the code stopped early (a bug of the code generator; the outputs
    /// are then not complete).
    #[inline]
    pub fn run(&mut self) -> Result<(), JitError> {
        // SAFETY: `Compiled::bind` checked `sizes` (one per size variable, every count the
        // native code computes from them representable) and the length of every input
        // component against its layout for these sizes, exactly as `Compiled::call` does;
        // the inputs are borrowed for `'a`, so they are alive and unchanged. It allocated
        // every output buffer with its component's length and the workspace with
        // `workspace_len(sizes)`; they are owned here, never resized (only `&self` hands
        // them out), so the pointers to them are valid, and `&mut self` makes them
        // exclusive: they overlap nothing. `compiled` keeps the code alive.
        unsafe {
            (self.entry)(
                self.inputs.as_ptr(),
                self.sizes.as_ptr(),
                self.output_pointers.as_ptr(),
                self.workspace.as_mut_ptr(),
            );
        }
        read_status(self.status, &self.workspace)
    }

    /// The output components of the last run, in the order of [`Compiled::outputs`]
    /// (zeros before the first run).
    #[inline]
    pub fn outputs(&self) -> &[Vec<f64>] {
        &self.outputs
    }

    /// The values of the size variables the function was bound with.
    pub fn sizes(&self) -> &[u64] {
        &self.sizes
    }

    /// The compiled function this runs.
    pub fn compiled(&self) -> &Compiled {
        &self.compiled
    }
}

impl std::fmt::Debug for Bound<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bound")
            .field("compiled", &self.compiled)
            .field("sizes", &self.sizes)
            .finish_non_exhaustive()
    }
}

/// Finalize `module` and wrap its function `id`, which has the ABI's signature.
pub(crate) fn finish(
    mut module: JITModule,
    id: FuncId,
    built: Built,
    parts: usize,
) -> Result<Compiled, JitError> {
    module
        .finalize_definitions()
        .map_err(|e| JitError::Codegen(e.to_string()))?;
    let code = module.get_finalized_function(id);
    // SAFETY: `code` is the address of the function just compiled with the signature
    // (ptr, ptr, ptr, ptr) -> () in the host's default calling convention, which is the C
    // ABI of `RawFn`; it stays valid as long as `module`, which `Inner` owns, is alive.
    let entry: RawFn = unsafe { std::mem::transmute::<*const u8, RawFn>(code) };
    Ok(Compiled {
        inner: Arc::new(Inner {
            module: Mutex::new(Some(module)),
            entry,
            parts,
            size_vars: built.size_vars,
            param_names: built.param_names,
            inputs: built.inputs,
            outputs: built.outputs,
            param_shapes: built.param_shapes,
            result_shape: built.result_shape,
            workspace: built.workspace,
            checks: built.checks,
            status: built.status,
            int_params: built.int_params,
        }),
    })
}

#[cfg(test)]
mod tests {
    //! The raw function pointer, called as a caller of [`Compiled::fn_ptr`] would: here,
    //! because this is the one module allowed `unsafe`.

    use unfad_test_support::load;

    use crate::compile;

    #[test]
    fn the_raw_function_pointer_follows_the_abi() {
        let (prog, func) = load("def f(x: real, A: [n]real) = (map (a. a * x) A, sum(A))");
        let c = compile(&prog.arena, &func).unwrap();
        let f = c.fn_ptr();
        let x = [2.0];
        let a = [1.0, 2.0, 3.0];
        let inputs = [x.as_ptr(), a.as_ptr()];
        let sizes = [3u64];
        let mut scaled = [0.0; 3];
        let mut total = [0.0];
        let outputs = [scaled.as_mut_ptr(), total.as_mut_ptr()];
        assert_eq!(c.workspace_len(&sizes), 0);
        assert_eq!(c.status_cell(&sizes), None);
        // SAFETY: the buffers have the lengths the layouts give for n = 3 and the workspace is
        // empty, as checked just above.
        unsafe {
            f(
                inputs.as_ptr(),
                sizes.as_ptr(),
                outputs.as_ptr(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(scaled, [2.0, 4.0, 6.0]);
        assert_eq!(total, [6.0]);
    }

    #[test]
    fn a_raw_call_that_passes_its_checks_clears_the_status_cell() {
        // Writing a right scan into memory checks at run time that its buffer has a row
        // for the first accumulator: the function has a status cell.
        let (prog, func) = load("def f(A: [n]real) = sum(shift1R (scanr max (-1000) A))");
        let c = compile(&prog.arena, &func).unwrap();
        let a = [1.0, 3.0, 2.0];
        let sizes = [3u64];
        let len = c.workspace_len(&sizes);
        let status = c
            .status_cell(&sizes)
            .expect("the function checks at run time");
        assert!(
            status < len,
            "the status cell {status} is in the workspace of {len}"
        );
        let mut checked = [0.0];
        c.call(&[&a], &sizes, &mut [&mut checked], &mut vec![0.0; len])
            .unwrap();
        // A workspace left dirty by an earlier call that stopped: the function clears the
        // cell when it starts.
        let mut workspace = vec![1.0; len];
        let inputs = [a.as_ptr()];
        let mut total = [0.0];
        let outputs = [total.as_mut_ptr()];
        assert_eq!(c.inputs().len(), 1);
        assert_eq!(c.outputs().len(), 1);
        assert_eq!(c.outputs()[0].len(&sizes), Some(1));
        assert_eq!(c.inputs()[0].len(&sizes), Some(3));
        let f = c.fn_ptr();
        // SAFETY: the one input component has the 3 elements and the one output component
        // the 1 element the layouts give for n = 3 (checked just above), and the workspace
        // has `workspace_len(&sizes)` reals; the buffers do not overlap.
        unsafe {
            f(
                inputs.as_ptr(),
                sizes.as_ptr(),
                outputs.as_ptr(),
                workspace.as_mut_ptr(),
            )
        };
        assert_eq!(
            workspace[status], 0.0,
            "a call that ran to the end leaves 0"
        );
        assert_eq!(total, checked);
    }
}
