//! A fixed preconditioning matrix `M` (eq. 9), diagonal or by its Cholesky factor.

use crate::error::{Error, check_len};

/// A symmetric positive-definite matrix `M`, borrowed from the caller.
///
/// `Cholesky(l)` holds the lower-triangular factor `L` of `M = LLᵀ` (row-major `d × d`;
/// entries above the diagonal are ignored), e.g. from [`crate::linalg::cholesky`]. For
/// a preconditioner, `M` is best the posterior covariance (or an estimate of it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric<'m> {
    /// `M = diag(m)`, every entry finite and `> 0`.
    Diagonal(&'m [f32]),
    /// `M = LLᵀ`; the diagonal of `L` finite and `> 0`, the lower triangle finite.
    Cholesky(&'m [f32]),
}

impl Metric<'_> {
    /// Checks the metric against dimension `d`.
    pub fn check(&self, d: usize) -> Result<(), Error> {
        match *self {
            Metric::Diagonal(m) => {
                check_len("diagonal metric", d, m.len())?;
                if !m.iter().all(|&x| x.is_finite() && x > 0.0) {
                    return Err(Error::InvalidParameter {
                        what: "diagonal metric entries must be finite and > 0",
                    });
                }
            }
            Metric::Cholesky(l) => {
                let dd = d.checked_mul(d).ok_or(Error::InvalidParameter {
                    what: "dimension overflows usize",
                })?;
                check_len("Cholesky factor", dd, l.len())?;
                for i in 0..d {
                    let row = &l[i * d..i * d + i + 1];
                    if !row.iter().all(|x| x.is_finite()) || row[i] <= 0.0 {
                        return Err(Error::InvalidParameter {
                            what: "Cholesky factor must be finite with a positive diagonal",
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// The dimension `d` (for a Cholesky factor, `√len`).
    pub fn dim(&self) -> usize {
        match *self {
            Metric::Diagonal(m) => m.len(),
            Metric::Cholesky(l) => l.len().isqrt(),
        }
    }

    /// `out = M·g`, with `tmp` as workspace (all of length `d`; checked by the caller).
    pub(crate) fn apply(&self, g: &[f32], tmp: &mut [f32], out: &mut [f32]) {
        match *self {
            Metric::Diagonal(m) => {
                for ((o, &mi), &gi) in out.iter_mut().zip(m).zip(g) {
                    *o = mi * gi;
                }
            }
            Metric::Cholesky(l) => {
                let d = g.len();
                // tmp = Lᵀ g
                crate::kernels::zero(tmp);
                for (i, &gi) in g.iter().enumerate() {
                    for (t, &lij) in tmp[..=i].iter_mut().zip(&l[i * d..i * d + i + 1]) {
                        *t += lij * gi;
                    }
                }
                lower_times(l, tmp, out);
            }
        }
    }

    /// `out = M^½·z` (`L·z` for a Cholesky factor, `√m ⊙ z` for a diagonal).
    pub(crate) fn sqrt_times(&self, z: &[f32], out: &mut [f32]) {
        match *self {
            Metric::Diagonal(m) => {
                for ((o, &mi), &zi) in out.iter_mut().zip(m).zip(z) {
                    *o = libm::sqrtf(mi) * zi;
                }
            }
            Metric::Cholesky(l) => lower_times(l, z, out),
        }
    }
}

/// `out = L·x` for the lower triangle of row-major `L`.
fn lower_times(l: &[f32], x: &[f32], out: &mut [f32]) {
    let d = x.len();
    for (i, o) in out.iter_mut().enumerate() {
        *o = crate::kernels::imp::dot(&l[i * d..i * d + i + 1], &x[..=i]);
    }
}
