//! The `lstm` module: the eval's rows regrouped for `programs/lstm.ad`, which takes the
//! weights and the biases of the layers apart (the eval's `main_params` alternates them,
//! row `2i` and `2i+1` for layer `i`), and so the hidden states and the cells (`state`).
//! `objective` is the loss; `jacobian` its gradient with respect to `main_params` then
//! `extra_params`, flattened in the eval's order.

use serde_json::Value as Json;
use unfad::{Arg, Engine, Func, GradFn, Output};

use crate::modules::{unknown, Module};
use crate::{field, matrix, number, numbers, Call, Fail};

/// The compiled program.
pub struct Lstm {
    objective: Func,
    gradient: GradFn,
}

impl Lstm {
    pub fn compile(engine: &Engine) -> Result<Lstm, unfad::Error> {
        let src = include_str!("../programs/lstm.ad");
        Ok(Lstm {
            objective: engine.compile(src)?,
            gradient: engine.compile_grad_wrt(src, None, &["weights", "biases", "extra"])?,
        })
    }
}

/// An `lstm` input, regrouped: rows of `b` or `4b` values, row-major.
pub struct LstmInput {
    layers: usize,
    b: usize,
    chars: usize,
    weights: Vec<f64>,
    biases: Vec<f64>,
    extra: Vec<f64>,
    hidden: Vec<f64>,
    cell: Vec<f64>,
    sequence: Vec<f64>,
}

/// Rows `parity`, `parity + 2`, ... of a matrix of `cols` columns.
fn alternate(data: &[f64], cols: usize, parity: usize) -> Vec<f64> {
    data.chunks(cols.max(1))
        .skip(parity)
        .step_by(2)
        .flatten()
        .copied()
        .collect()
}

impl LstmInput {
    pub fn from_json(input: &Json) -> Result<LstmInput, Fail> {
        let (main, main_rows, g) = matrix(field(input, "main_params")?, "main_params")?;
        let (extra, extra_rows, b) = matrix(field(input, "extra_params")?, "extra_params")?;
        let (state, state_rows, sb) = matrix(field(input, "state")?, "state")?;
        let (sequence, chars, cb) = matrix(field(input, "sequence")?, "sequence")?;
        let layers = main_rows / 2;
        if main_rows % 2 != 0 || g != 4 * b || extra_rows != 3 || state_rows != main_rows {
            return Err(format!(
                "lstm: `main_params` must be 2l rows of 4b, `extra_params` 3 rows of b and `state` 2l rows of b; got {main_rows}x{g}, {extra_rows}x{b} and {state_rows}x{sb}"
            ));
        }
        if sb != b || cb != b || chars < 1 {
            return Err(format!(
                "lstm: `state` and `sequence` rows must have b = {b} values, and the sequence a character; got {sb}, {cb} and {chars} characters"
            ));
        }
        Ok(LstmInput {
            layers,
            b,
            chars,
            weights: alternate(&main, g, 0),
            biases: alternate(&main, g, 1),
            extra,
            hidden: alternate(&state, b, 0),
            cell: alternate(&state, b, 1),
            sequence,
        })
    }

    fn args(&self) -> [Arg<'_>; 6] {
        let (l, b) = (self.layers, self.b);
        [
            Arg::array(&self.weights, &[l, 4 * b]),
            Arg::array(&self.biases, &[l, 4 * b]),
            Arg::array(&self.extra, &[3, b]),
            Arg::array(&self.hidden, &[l, b]),
            Arg::array(&self.cell, &[l, b]),
            Arg::array(&self.sequence, &[self.chars, b]),
        ]
    }
}

struct LstmCall<'m> {
    lstm: &'m Lstm,
    input: LstmInput,
    jacobian: bool,
    value: f64,
    out: Output,
}

impl Module for Lstm {
    fn prepare(&mut self, function: &str, input: &Json) -> Result<Box<dyn Call + '_>, Fail> {
        let jacobian = match function {
            "objective" => false,
            "jacobian" => true,
            f => return Err(unknown("lstm", f)),
        };
        Ok(Box::new(LstmCall {
            lstm: self,
            input: LstmInput::from_json(input)?,
            jacobian,
            value: f64::NAN,
            out: Output::default(),
        }))
    }
}

impl Call for LstmCall<'_> {
    fn run(&mut self) -> Result<(), Fail> {
        let args = self.input.args();
        if self.jacobian {
            self.lstm
                .gradient
                .call_into(&args, &mut self.out)
                .map_err(|e| e.to_string())?;
        } else {
            self.value = self.lstm.objective.call(&args).map_err(|e| e.to_string())?[0];
        }
        Ok(())
    }

    fn output(&self) -> Result<Json, Fail> {
        if !self.jacobian {
            return number(self.value);
        }
        // The eval's order: per layer its weights then its biases, then the extra rows.
        let g = 4 * self.input.b;
        let (weights, biases) = (self.out.gradient(0), self.out.gradient(1));
        let mut flat = Vec::with_capacity(2 * weights.len() + 3 * self.input.b);
        for (w, b) in weights.chunks(g).zip(biases.chunks(g)) {
            flat.extend_from_slice(w);
            flat.extend_from_slice(b);
        }
        flat.extend_from_slice(self.out.gradient(2));
        numbers(&flat)
    }
}
