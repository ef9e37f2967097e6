//! Calls of the compiled native code itself, without the facade's per-call checks, so that
//! a benchmark times the generated code (the facade's checks cost a few hundred
//! nanoseconds, which would swamp the scalar programs).

use unfad::{Func, GradFn, RawFn};

use crate::suite::Data;

/// A compiled function bound to its arguments, with its output and workspace buffers.
pub struct Native<'a> {
    f: RawFn,
    in_ptrs: Vec<*const f64>,
    sizes: Vec<u64>,
    outputs: Vec<Vec<f64>>,
    out_ptrs: Vec<*mut f64>,
    workspace: Vec<f64>,
    /// The inputs and the compiled code, borrowed for as long as the pointers are used.
    _borrow: std::marker::PhantomData<&'a ()>,
}

/// The sizes in the order of `vars`.
fn size_values(vars: &[String], size: &dyn Fn(&str) -> Option<u64>) -> Result<Vec<u64>, String> {
    vars.iter()
        .map(|v| size(v).ok_or_else(|| format!("no value for the size `{v}`")))
        .collect()
}

impl<'a> Native<'a> {
    /// The gradient `g` at `args`. The arguments are checked by one call through the
    /// facade first, and must all be reals or arrays of reals (one component each).
    pub fn gradient(
        g: &'a GradFn,
        args: &'a [Data],
        size: &dyn Fn(&str) -> Option<u64>,
    ) -> Result<Native<'a>, String> {
        let facade: Vec<unfad::Arg> = args.iter().map(Data::arg).collect();
        g.call(&facade).map_err(|e| e.to_string())?;
        let sizes = size_values(g.size_vars(), size)?;
        let ins = g.input_components();
        if ins.len() != args.len() {
            return Err("an argument is not a single component".into());
        }
        for (c, a) in ins.iter().zip(args) {
            if c.len(&sizes) != Some(a.reals().len()) {
                return Err("an argument's length does not match its component".into());
            }
        }
        let outputs = g
            .output_components()
            .iter()
            .map(|c| c.len(&sizes).map(|n| vec![0.0; n]))
            .collect::<Option<Vec<_>>>()
            .ok_or("an output is too large")?;
        let ws = g.workspace_len(&sizes);
        Ok(Native::new(g.fn_ptr(), args, sizes, outputs, ws))
    }

    /// The primal `f` at `args`, which must return a real; checked as for
    /// [`Native::gradient`].
    pub fn primal(
        f: &'a Func,
        args: &'a [Data],
        size: &dyn Fn(&str) -> Option<u64>,
    ) -> Result<Native<'a>, String> {
        let facade: Vec<unfad::Arg> = args.iter().map(Data::arg).collect();
        let out = f.call(&facade).map_err(|e| e.to_string())?;
        if out.len() != 1 {
            return Err("the program does not return a real".into());
        }
        let sizes = size_values(f.size_vars(), size)?;
        let ws = f.workspace_len(&sizes);
        // `call` accepted these arguments: each is one component (a real or an array of
        // reals, row-major) of exactly its length, and the result is one real.
        Ok(Native::new(f.fn_ptr(), args, sizes, vec![vec![0.0]], ws))
    }

    fn new(
        f: RawFn,
        args: &'a [Data],
        sizes: Vec<u64>,
        mut outputs: Vec<Vec<f64>>,
        workspace: usize,
    ) -> Native<'a> {
        let in_ptrs = args.iter().map(|a| a.reals().as_ptr()).collect();
        let out_ptrs = outputs.iter_mut().map(|o| o.as_mut_ptr()).collect();
        Native {
            f,
            in_ptrs,
            sizes,
            outputs,
            out_ptrs,
            workspace: vec![0.0; workspace.max(1)],
            _borrow: std::marker::PhantomData,
        }
    }

    /// Run the native code once; returns the value (the first output).
    pub fn run(&mut self) -> f64 {
        // SAFETY: the constructors checked every input against its component's length for
        // these sizes (by the facade's checked call, and for gradients by the components),
        // sized every output by its component and the workspace by `workspace_len`; the
        // inputs and the compiled code are borrowed for `'a`, and the outputs and the
        // workspace are owned here and overlap nothing.
        unsafe {
            (self.f)(
                self.in_ptrs.as_ptr(),
                self.sizes.as_ptr(),
                self.out_ptrs.as_ptr(),
                self.workspace.as_mut_ptr(),
            );
        }
        self.outputs[0][0]
    }

    /// The outputs of the last run: the value, then the gradients' components.
    pub fn outputs(&self) -> &[Vec<f64>] {
        &self.outputs
    }
}
