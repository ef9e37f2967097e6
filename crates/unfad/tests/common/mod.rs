//! Helpers shared by the facade's tests: interpreter values as arguments of the API.

// Each test file uses some of these.
#![allow(dead_code)]

use unfad::Arg;

/// An interpreter value as an argument of the API (arrays of reals flat, row-major).
pub fn arg_of<'a>(v: &unfad_interp::Value<f64>, flat: &'a [Vec<f64>], at: &mut usize) -> Arg<'a> {
    // The buffers were filled in the same order by `buffers_of`.
    fn go<'a>(v: &unfad_interp::Value<f64>, bufs: &'a [Vec<f64>], at: &mut usize) -> Arg<'a> {
        use unfad_interp::Value;
        match v {
            Value::Real(x) => Arg::Real(*x),
            Value::Tuple(items) => Arg::tuple(items.iter().map(|x| go(x, bufs, at)).collect()),
            Value::Array(items) if items.is_empty() => Arg::elements(Vec::new()),
            Value::Array(items) if items.iter().all(|x| matches!(x, Value::Real(_))) => {
                let data = &bufs[*at];
                *at += 1;
                Arg::from(data.as_slice())
            }
            Value::Array(items) => Arg::elements(items.iter().map(|x| go(x, bufs, at)).collect()),
            _ => Arg::Real(f64::NAN),
        }
    }
    go(v, flat, at)
}

/// The flat buffers of the arrays of reals in `v`, in the order [`arg_of`] reads them.
pub fn buffers_of(v: &unfad_interp::Value<f64>, out: &mut Vec<Vec<f64>>) {
    use unfad_interp::Value;
    match v {
        Value::Tuple(items) => items.iter().for_each(|x| buffers_of(x, out)),
        Value::Array(items) if items.is_empty() => {}
        Value::Array(items) if items.iter().all(|x| matches!(x, Value::Real(_))) => {
            out.push(v.leaves())
        }
        Value::Array(items) => items.iter().for_each(|x| buffers_of(x, out)),
        _ => {}
    }
}

/// The native value and gradients of `grad` at the interpreter's arguments `args`.
pub fn native_output(
    grad: &unfad::GradFn,
    args: &[unfad_interp::Value<f64>],
) -> Result<unfad::Output, unfad::Error> {
    let mut bufs = Vec::new();
    args.iter().for_each(|a| buffers_of(a, &mut bufs));
    let mut at = 0;
    let api_args: Vec<Arg> = args.iter().map(|a| arg_of(a, &bufs, &mut at)).collect();
    grad.call(&api_args)
}

/// Whether `out` has the value `value` (to 1e-9) and the gradients `grads` of the
/// parameters `wrt` (to 1e-7), as `unfad_test_support::close` compares.
pub fn agrees(out: &unfad::Output, value: f64, grads: &[Vec<f64>], wrt: &[usize]) -> bool {
    use unfad_test_support::close;
    close(out.value, value, 1e-9)
        && wrt.iter().all(|&i| {
            let (got, want) = (out.gradient(i), &grads[i]);
            got.len() == want.len() && got.iter().zip(want).all(|(x, y)| close(*x, *y, 1e-7))
        })
}
