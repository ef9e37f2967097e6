//! Calls of the compiled native code itself, without the facade's per-call checks, so that
//! a benchmark times the generated code (the facade's checks cost a few hundred
//! nanoseconds, which would swamp the scalar programs). The arguments are checked once,
//! when the function is bound to them ([`unfad::GradFn::bind`]); a run then costs what the
//! raw call costs, and reads only the status cell that says whether a run-time check
//! stopped the code.

use unfad::{Bound, Func, GradFn};

use crate::suite::Data;

/// A compiled function bound to its arguments, with its output and workspace buffers.
pub struct Native<'a> {
    bound: Bound<'a>,
}

/// The sizes in the order of `vars`, given those the parameters name (`sizes` computes
/// the others, formulas of them).
fn size_values(
    vars: &[String],
    size: &dyn Fn(&str) -> Option<u64>,
    sizes: Option<Vec<u64>>,
) -> Result<Vec<u64>, String> {
    sizes.ok_or_else(|| {
        let missing = vars.iter().find(|v| size(v).is_none());
        format!("no value for the size `{}`", missing.map_or("?", |v| v))
    })
}

/// The input components of `args`: each must be a real or an array of reals, which is one
/// component (its reals, row-major); the binding checks each one's length.
fn components(args: &[Data]) -> Vec<&[f64]> {
    args.iter().map(Data::reals).collect()
}

impl<'a> Native<'a> {
    /// The gradient `g` at `args`, which must all be reals or arrays of reals (one
    /// component each), of the lengths the sizes `size` gives.
    pub fn gradient(
        g: &GradFn,
        args: &'a [Data],
        size: &dyn Fn(&str) -> Option<u64>,
    ) -> Result<Native<'a>, String> {
        let sizes = size_values(g.size_vars(), size, g.sizes_from(size))?;
        Native::new(g.bind(&components(args), &sizes))
    }

    /// The primal `f` at `args`, which must return a real; the arguments as for
    /// [`Native::gradient`].
    pub fn primal(
        f: &Func,
        args: &'a [Data],
        size: &dyn Fn(&str) -> Option<u64>,
    ) -> Result<Native<'a>, String> {
        let sizes = size_values(f.size_vars(), size, f.sizes_from(size))?;
        let native = Native::new(f.bind(&components(args), &sizes))?;
        if native.outputs().len() != 1 {
            return Err("the program does not return a real".into());
        }
        Ok(native)
    }

    /// A function of the arguments and then one direction per argument (a jvp's tangents,
    /// a Hessian-vector product's direction), such as `JvpFn::function` and
    /// `HvpFn::function` of a suite program: every parameter of a suite program holds
    /// reals, so each is differentiated and takes a direction of its shape.
    pub fn with_directions(
        f: &Func,
        args: &'a [Data],
        directions: &'a [Data],
        size: &dyn Fn(&str) -> Option<u64>,
    ) -> Result<Native<'a>, String> {
        let sizes = size_values(f.size_vars(), size, f.sizes_from(size))?;
        let mut inputs = components(args);
        inputs.extend(components(directions));
        Native::new(f.bind(&inputs, &sizes))
    }

    /// The bound function, whose first output must be a real (the value).
    fn new(bound: Result<Bound<'a>, unfad::Error>) -> Result<Native<'a>, String> {
        let bound = bound.map_err(|e| e.to_string())?;
        if bound.outputs().first().map(Vec::len) != Some(1) {
            return Err("the program does not return a real".into());
        }
        Ok(Native { bound })
    }

    /// Run the native code once; returns the value (the first output), or why the code
    /// stopped early (a failed run-time check: a bug of unfad's code generator).
    pub fn run(&mut self) -> Result<f64, String> {
        self.bound.run().map_err(|e| e.to_string())?;
        Ok(self.bound.outputs()[0][0])
    }

    /// The outputs of the last run: the value, then the gradients' components.
    pub fn outputs(&self) -> &[Vec<f64>] {
        self.bound.outputs()
    }
}
