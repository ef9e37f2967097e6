//! A compiled function and its checked call: the whole `unsafe` boundary of the crate.
//! Everything else is safe code that builds the function; here the native code is wrapped
//! ([`RawFn`]), called after every length is checked against its layout
//! ([`Compiled::call`]), and its memory freed when the last clone is dropped.

use std::sync::{Arc, Mutex};

use cranelift_jit::JITModule;
use cranelift_module::FuncId;

use crate::codegen::Built;
use crate::error::JitError;
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
    /// the input components, `outputs` the output components (filled by the call).
    pub fn call(
        &self,
        inputs: &[&[f64]],
        sizes: &[u64],
        outputs: &mut [&mut [f64]],
        workspace: &mut [f64],
    ) -> Result<(), JitError> {
        let inner = &*self.inner;
        let bad = |msg: String| Err(JitError::Call(msg));
        if sizes.len() != inner.size_vars.len() {
            return bad(format!(
                "{} size(s) given, the function has {} ({})",
                sizes.len(),
                inner.size_vars.len(),
                inner.size_vars.join(", ")
            ));
        }
        if inner.checks.iter().any(|e| e.eval(sizes).is_none()) {
            return bad(format!("the sizes {sizes:?} are too large"));
        }
        let check = |what: &str, comps: &[Component], lens: &mut dyn Iterator<Item = usize>| {
            for (k, c) in comps.iter().enumerate() {
                let owner = match what {
                    "input" => inner.param_names.get(c.index).map_or("?", String::as_str),
                    _ => "result",
                };
                let want = c.len(sizes);
                let got = lens.next();
                if want.is_none() || want != got {
                    return bad(format!(
                        "{what} component {k} (`{}`) has {} element(s), the sizes {sizes:?} need {}",
                        c.describe(owner),
                        got.map_or("no".to_string(), |n| n.to_string()),
                        want.map_or("too many".to_string(), |n| n.to_string()),
                    ));
                }
            }
            Ok(())
        };
        if inputs.len() != inner.inputs.len() {
            return bad(format!(
                "{} input component(s) given, the function takes {}",
                inputs.len(),
                inner.inputs.len()
            ));
        }
        if outputs.len() != inner.outputs.len() {
            return bad(format!(
                "{} output component(s) given, the function has {}",
                outputs.len(),
                inner.outputs.len()
            ));
        }
        check("input", &inner.inputs, &mut inputs.iter().map(|s| s.len()))?;
        check(
            "output",
            &inner.outputs,
            &mut outputs.iter().map(|s| s.len()),
        )?;
        let need = self.workspace_len(sizes);
        if workspace.len() < need {
            return bad(format!(
                "the workspace has {} element(s), the sizes {sizes:?} need {need}",
                workspace.len()
            ));
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
        match self.status_cell(sizes).and_then(|k| workspace.get(k)) {
            Some(&s) if s != 0.0 => Err(JitError::Check(
                "a length check failed, and the native code stopped rather than read or write \
                 outside a buffer; this is a bug of unfad's code generator: please report it \
                 with the program and the sizes"
                    .into(),
            )),
            _ => Ok(()),
        }
    }

    /// The index in the workspace of the cell that reports a failed run-time check (nonzero
    /// after a call that stopped early), if the function checks anything at run time.
    /// [`Compiled::call`] reads it; callers of [`Compiled::fn_ptr`] should too.
    pub fn status_cell(&self, sizes: &[u64]) -> Option<usize> {
        let k = self.inner.status.as_ref()?.eval(sizes)?;
        usize::try_from(k).ok()
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
        }),
    })
}
