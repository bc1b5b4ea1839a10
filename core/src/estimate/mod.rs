//! Posterior estimates from an SGLD run: the step-size-weighted estimator (eq. 11), the
//! sampling threshold (eq. 10), and sample collection by mixing distance (§5.3.1).

mod thinning;
mod threshold;
mod weighted;
mod weighted_f32;

pub use thinning::MixingThinner;
pub use threshold::{Threshold, sampling_threshold, scores_into, threshold_scratch_len};
pub use weighted::WeightedMoments;
pub use weighted_f32::{WeightedF32, WeightedMeanF32, WeightedMomentsF32};

use crate::Error;

/// A running estimate that takes weighted samples, as the online learner feeds it:
/// [`WeightedMoments`] (f64) or [`WeightedMomentsF32`] (f32 only, for targets without an
/// f64 FPU).
pub trait Accumulator {
    /// Adds `values` with weight `w` (finite, `> 0`); an invalid sample is refused with an
    /// error and changes nothing.
    fn accumulate(&mut self, w: f32, values: &[f32]) -> Result<(), Error>;

    /// [`accumulate`](Self::accumulate) for values the caller knows are finite (the
    /// online learner's position after a step that checked it): an estimator may skip
    /// checking them. By default, `accumulate`.
    fn accumulate_finite(&mut self, w: f32, values: &[f32]) -> Result<(), Error> {
        self.accumulate(w, values)
    }
}

/// The first `need` words of an estimator's caller `storage`, cleared, for `dim ≥ 1`
/// components.
fn claim<T: Copy + Default>(storage: &mut [T], dim: usize, need: usize) -> Result<&mut [T], Error> {
    if dim == 0 {
        return Err(Error::Empty {
            what: "estimator dimension",
        });
    }
    let found = storage.len();
    let words = storage.get_mut(..need).ok_or(Error::LengthMismatch {
        what: "estimator storage",
        expected: need,
        found,
    })?;
    words.fill(T::default());
    Ok(words)
}

impl Accumulator for WeightedMoments<'_> {
    #[inline]
    fn accumulate(&mut self, w: f32, values: &[f32]) -> Result<(), Error> {
        self.push(w as f64, values)
    }

    #[inline]
    fn accumulate_finite(&mut self, w: f32, values: &[f32]) -> Result<(), Error> {
        self.push_finite(w as f64, values)
    }
}

impl<const VARIANCE: bool> Accumulator for WeightedF32<'_, VARIANCE> {
    #[inline]
    fn accumulate(&mut self, w: f32, values: &[f32]) -> Result<(), Error> {
        self.push(w, values)
    }

    #[inline]
    fn accumulate_finite(&mut self, w: f32, values: &[f32]) -> Result<(), Error> {
        self.push_finite(w, values)
    }
}
