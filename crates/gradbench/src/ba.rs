//! The `ba` module: bundle adjustment (ADBench, GradBench), `programs/ba.ad`.
//!
//! GradBench sends one camera, one point, one weight and one feature, with the counts `n`
//! cameras, `m` points and `p` observations. As GradBench's C++ tools do, the adapter
//! repeats them into the full problem (observation `i` sees camera `i mod n` and point `i
//! mod m`) before the timed runs, and the program does the whole work on it: the tool must
//! not exploit the repetition.
//!
//! The Jacobian is sparse, `3p` rows by `11n + 3m + p` columns, in the layout of
//! GradBench's `SparseMat` (compressed rows): rows `2i` and `2i + 1` hold observation `i`'s
//! 15 derivatives (its camera's 11, its point's 3, its weight), then row `2p + i` the
//! weight error's. The program computes the values, in that order; the timed run also
//! builds the row offsets and column indices, as the C++ tool does. GradBench compares only
//! the first 30 entries and the last of each list, so only those are sent.

use serde_json::Value as Json;
use unfad::{Arg, Engine, Func};

use crate::modules::{unknown, Module};
use crate::{count, field, number, reals, Call, Fail};

/// Parameters of a camera: rotation 3, centre 3, focal length 1, principal point 2,
/// radial distortion 2.
const CAM: usize = 11;
/// Nonzeros in one row of a reprojection error: the camera's, the point's and the weight.
const BLOCK: usize = CAM + 3 + 1;

/// The compiled `objective` and `jacobian` entries.
pub struct Ba {
    objective: Func,
    jacobian: Func,
}

impl Ba {
    pub fn compile(engine: &Engine) -> Result<Ba, unfad::Error> {
        let src = include_str!("../programs/ba.ad");
        Ok(Ba {
            objective: engine.compile_entry(src, "objective")?,
            jacobian: engine.compile_entry(src, "jacobian")?,
        })
    }
}

/// The full problem, repeated from GradBench's input.
pub struct BaInput {
    pub n: usize,
    pub m: usize,
    pub p: usize,
    cams: Vec<f64>,
    x: Vec<f64>,
    w: Vec<f64>,
    feats: Vec<f64>,
    /// `[p][2]`: the camera and the point of each observation.
    obs: Vec<f64>,
}

fn repeat(one: &[f64], times: usize, what: &str) -> Result<Vec<f64>, Fail> {
    let len = one.len().checked_mul(times).ok_or_else(|| {
        format!(
            "ba: {times} copies of `{what}` ({} numbers each) are too many",
            one.len()
        )
    })?;
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| format!("ba: no memory for {len} numbers of `{what}`"))?;
    for _ in 0..times {
        v.extend_from_slice(one);
    }
    Ok(v)
}

impl BaInput {
    pub fn from_json(input: &Json) -> Result<BaInput, Fail> {
        let (n, m, p) = (count(input, "n")?, count(input, "m")?, count(input, "p")?);
        let cam = reals(field(input, "cam")?, "cam")?;
        let x = reals(field(input, "x")?, "x")?;
        let w = field(input, "w")?
            .as_f64()
            .ok_or("ba: `w` must be a number")?;
        let feat = reals(field(input, "feat")?, "feat")?;
        if cam.len() != CAM || x.len() != 3 || feat.len() != 2 {
            return Err(format!(
                "ba: `cam` must have {CAM} numbers, `x` 3 and `feat` 2, but they have {}, {} and {}",
                cam.len(),
                x.len(),
                feat.len()
            ));
        }
        if p > 0 && (n == 0 || m == 0) {
            return Err(format!(
                "ba: {p} observations need cameras and points, but n = {n} and m = {m}"
            ));
        }
        let mut obs = Vec::new();
        obs.try_reserve_exact(2 * p)
            .map_err(|_| format!("ba: no memory for {p} observations"))?;
        for i in 0..p {
            obs.push((i % n) as f64);
            obs.push((i % m) as f64);
        }
        Ok(BaInput {
            n,
            m,
            p,
            cams: repeat(&cam, n, "cam")?,
            x: repeat(&x, m, "x")?,
            w: repeat(&[w], p, "w")?,
            feats: repeat(&feat, p, "feat")?,
            obs,
        })
    }

    fn args(&self) -> [Arg<'_>; 5] {
        [
            Arg::array(&self.cams, &[self.n, CAM]),
            Arg::array(&self.x, &[self.m, 3]),
            Arg::from(self.w.as_slice()),
            Arg::array(&self.feats, &[self.p, 2]),
            Arg::array(&self.obs, &[self.p, 2]),
        ]
    }
}

/// The Jacobian in compressed rows, as GradBench's `SparseMat` builds it.
#[derive(Default)]
struct Sparse {
    rows: Vec<usize>,
    cols: Vec<usize>,
    vals: Vec<f64>,
}

impl Sparse {
    /// The structure of the Jacobian of `input`, around the values the program computed
    /// (`[p][2][15]` blocks, then the `p` weight derivatives).
    fn build(&mut self, input: &BaInput, vals: Vec<f64>) {
        let (n, m, p) = (input.n, input.m, input.p);
        self.rows.clear();
        self.cols.clear();
        self.rows.push(0);
        for i in 0..p {
            let (cam, pt) = (i % n, i % m);
            for _ in 0..2 {
                self.rows.push(self.rows[self.rows.len() - 1] + BLOCK);
                self.cols.extend(CAM * cam..CAM * cam + CAM);
                self.cols.extend(CAM * n + 3 * pt..CAM * n + 3 * pt + 3);
                self.cols.push(CAM * n + 3 * m + i);
            }
        }
        for i in 0..p {
            self.rows.push(self.rows[self.rows.len() - 1] + 1);
            self.cols.push(CAM * n + 3 * m + i);
        }
        self.vals = vals;
    }
}

/// The first 30 entries of a list and its last, as GradBench's `ba` compares them.
fn ends<T: Copy>(v: &[T]) -> Vec<T> {
    let mut out: Vec<T> = v.iter().take(2 * BLOCK).copied().collect();
    out.extend(v.last().copied());
    out
}

struct BaCall<'m> {
    function: &'m Func,
    jacobian: bool,
    input: BaInput,
    values: Vec<f64>,
    sparse: Sparse,
}

impl Module for Ba {
    fn prepare(&mut self, function: &str, input: &Json) -> Result<Box<dyn Call + '_>, Fail> {
        let (function, jacobian) = match function {
            "objective" => (&self.objective, false),
            "jacobian" => (&self.jacobian, true),
            f => return Err(unknown("ba", f)),
        };
        Ok(Box::new(BaCall {
            function,
            jacobian,
            input: BaInput::from_json(input)?,
            values: Vec::new(),
            sparse: Sparse::default(),
        }))
    }
}

impl Call for BaCall<'_> {
    fn run(&mut self) -> Result<(), Fail> {
        let out = self
            .function
            .call(&self.input.args())
            .map_err(|e| e.to_string())?;
        if self.jacobian {
            self.sparse.build(&self.input, out);
        } else {
            self.values = out;
        }
        Ok(())
    }

    fn output(&self) -> Result<Json, Fail> {
        let p = self.input.p;
        if self.jacobian {
            let vals: Result<Vec<Json>, Fail> =
                ends(&self.sparse.vals).into_iter().map(number).collect();
            return Ok(serde_json::json!({
                "rows": ends(&self.sparse.rows),
                "cols": ends(&self.sparse.cols),
                "vals": vals?,
            }));
        }
        // `[p][2]` reprojection errors, then `p` weight errors; all repeats are equal, and
        // GradBench's format sends one of each with its count.
        let v = &self.values;
        let (e0, e1, we) = match (v.first(), v.get(1), v.get(2 * p)) {
            (Some(&a), Some(&b), Some(&c)) => (a, b, c),
            _ => (0.0, 0.0, 0.0),
        };
        Ok(serde_json::json!({
            "reproj_error": {"elements": [number(e0)?, number(e1)?], "repeated": p},
            "w_err": {"element": number(we)?, "repeated": p},
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_layout_is_compressed_rows() {
        let input = BaInput::from_json(&serde_json::json!({
            "n": 2, "m": 3, "p": 4,
            "cam": [0.1, 0.2, 0.3, 1.0, 2.0, 3.0, 400.0, 5.0, 6.0, 0.01, 0.001],
            "x": [7.0, 0.5, 3.0], "w": 0.4, "feat": [270.0, 830.0]
        }))
        .unwrap();
        let mut s = Sparse::default();
        s.build(&input, vec![0.0; 4 * 30 + 4]);
        assert_eq!(s.rows.len(), 3 * 4 + 1);
        assert_eq!(s.rows[..3], [0, 15, 30]);
        assert_eq!(*s.rows.last().unwrap(), 4 * 30 + 4);
        // Observation 1 sees camera 1 and point 1; its weight is column 11*2 + 3*3 + 1.
        assert_eq!(s.cols[30..41], (11..22).collect::<Vec<_>>());
        assert_eq!(s.cols[41..44], [22 + 3, 22 + 4, 22 + 5]);
        assert_eq!(s.cols[44], 22 + 9 + 1);
        assert_eq!(*s.cols.last().unwrap(), 22 + 9 + 3);
    }
}
