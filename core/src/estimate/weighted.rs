//! The step-size-weighted posterior estimator of eq. 11, with weighted variance.
//!
//! `E[f(θ)] ≈ Σₜ εₜ f(θₜ) / Σₜ εₜ`. Each pushed sample updates, for every component, a
//! weighted mean and the weighted variance by West's (1979) incremental algorithm (kept
//! as a variance rather than a sum of squares, so no finite input overflows), in f64, with
//! Kahan compensation of the mean and of the weight total, so
//! that 10⁸ updates lose no accuracy (the release tests check this against a direct
//! two-pass f64 computation). Pushing the weight 1 gives the plain average.

use crate::error::{Error, check_len};

/// f64 words of storage per component.
const WORDS: usize = 3;

/// A running weighted mean and variance of `d` components in caller storage.
///
/// ```
/// use sgld::estimate::WeightedMoments;
/// let mut storage = [0.0f64; WeightedMoments::storage_len(2)];
/// let mut m = WeightedMoments::new(&mut storage, 2)?;
/// m.push(1.0, &[1.0, 10.0])?;
/// m.push(3.0, &[3.0, 20.0])?;
/// assert_eq!(m.mean(0), 2.5); // (1·1 + 3·3) / 4
/// assert_eq!(m.mean(1), 17.5);
/// assert_eq!(m.variance(0), 0.75); // Σw(x − x̄)² / Σw
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug)]
pub struct WeightedMoments<'a> {
    /// `[mean, mean compensation, variance]` per component.
    words: &'a mut [f64],
    dim: usize,
    weight: f64,
    weight_comp: f64,
    weight_sq: f64,
    count: u64,
}

impl<'a> WeightedMoments<'a> {
    /// f64 storage needed for `dim` components.
    pub const fn storage_len(dim: usize) -> usize {
        WORDS * dim
    }

    /// An empty estimator of `dim ≥ 1` components in `storage` (at least
    /// [`storage_len`](Self::storage_len)`(dim)` words; it is cleared).
    pub fn new(storage: &'a mut [f64], dim: usize) -> Result<Self, Error> {
        let words = super::claim(storage, dim, Self::storage_len(dim))?;
        Ok(Self {
            words,
            dim,
            weight: 0.0,
            weight_comp: 0.0,
            weight_sq: 0.0,
            count: 0,
        })
    }

    /// Adds the sample `values` (one per component) with weight `w` (finite, `> 0`; the
    /// step size `εₜ` for eq. 11, or 1 for the plain average). Non-finite values are
    /// refused with an error and change nothing.
    pub fn push(&mut self, w: f64, values: &[f32]) -> Result<(), Error> {
        self.push_checked(w, values, true)
    }

    /// [`push`](Self::push) for values the caller knows are finite, such as a position
    /// an SGLD step has just checked: the same update without the pass over `values`
    /// that checks them. A non-finite value is not refused but makes its component's
    /// estimates NaN; the other components, the weights and the errors are as for `push`.
    pub fn push_finite(&mut self, w: f64, values: &[f32]) -> Result<(), Error> {
        self.push_checked(w, values, false)
    }

    #[inline(always)]
    fn push_checked(&mut self, w: f64, values: &[f32], check: bool) -> Result<(), Error> {
        check_len("values", self.dim, values.len())?;
        if !(w.is_finite() && w > 0.0) {
            return Err(Error::InvalidParameter {
                what: "estimator weight must be finite and > 0",
            });
        }
        if check {
            crate::error::check_finite("values", values)?;
        }
        // Kahan-compensated total weight.
        let y = w - self.weight_comp;
        let total = self.weight + y;
        if !total.is_finite() {
            return Err(Error::InvalidParameter {
                what: "estimator weights overflow: their total is not finite",
            });
        }
        self.weight_comp = (total - self.weight) - y;
        self.weight = total;
        self.weight_sq += w * w;
        self.count += 1;
        let frac = w / total;
        for (c, &x) in self.words.chunks_exact_mut(WORDS).zip(values) {
            let x = x as f64;
            let delta = x - c[0];
            // mean += frac·delta, Kahan-compensated.
            let y = frac * delta - c[1];
            let t = c[0] + y;
            c[1] = (t - c[0]) - y;
            c[0] = t;
            // The weighted variance itself (not Σw·δ², which can overflow):
            // v ← v·(W_old/W) + (w/W)·δ·(x − x̄_new).
            c[2] = c[2] * (1.0 - frac) + frac * delta * (x - c[0]);
        }
        Ok(())
    }

    /// Number of components.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of samples pushed.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// `Σ wₜ`.
    pub fn total_weight(&self) -> f64 {
        self.weight
    }

    /// Kish's effective number of samples of the weights, `(Σw)² / Σw²` (0 when empty).
    pub fn weight_ess(&self) -> f64 {
        if self.weight_sq > 0.0 {
            self.weight * self.weight / self.weight_sq
        } else {
            0.0
        }
    }

    /// The weighted mean of component `j` (eq. 11); NaN when empty or out of range.
    pub fn mean(&self, j: usize) -> f64 {
        match self.words.chunks_exact(WORDS).nth(j) {
            Some(c) if self.count > 0 => c[0],
            _ => f64::NAN,
        }
    }

    /// The weighted variance `Σ wₜ (xₜ − x̄)² / Σ wₜ` of component `j`; NaN when empty
    /// or out of range.
    pub fn variance(&self, j: usize) -> f64 {
        match self.words.chunks_exact(WORDS).nth(j) {
            Some(c) if self.count > 0 => c[2].max(0.0),
            _ => f64::NAN,
        }
    }

    /// Writes every mean into `out` (length `dim`).
    pub fn means_into(&self, out: &mut [f64]) -> Result<(), Error> {
        check_len("out", self.dim, out.len())?;
        for (j, o) in out.iter_mut().enumerate() {
            *o = self.mean(j);
        }
        Ok(())
    }

    /// Writes every variance into `out` (length `dim`).
    pub fn variances_into(&self, out: &mut [f64]) -> Result<(), Error> {
        check_len("out", self.dim, out.len())?;
        for (j, o) in out.iter_mut().enumerate() {
            *o = self.variance(j);
        }
        Ok(())
    }
}
