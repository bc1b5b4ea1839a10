//! Sample collection by mixing distance (§5.3.1): keep a sample only when the sum of
//! step sizes since the last kept one exceeds `D₀` (the paper takes `D₀` equal to the
//! step size at the sampling threshold).

use crate::error::{Error, check_step_size};

/// Decides which steps to keep so that kept samples are `D₀` apart in `Σ ε`.
///
/// ```
/// let mut thin = sgld::estimate::MixingThinner::new(0.25)?;
/// let kept: Vec<bool> = (0..6).map(|_| thin.push(0.1)).collect();
/// assert_eq!(kept, [false, false, true, false, false, true]);
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MixingThinner {
    d0: f64,
    since: f64,
}

impl MixingThinner {
    /// A thinner with distance `D₀` (finite, positive).
    pub fn new(d0: f64) -> Result<Self, Error> {
        check_step_size(d0)?;
        Ok(Self { d0, since: 0.0 })
    }

    /// Records a step of size `eps`; true when the sample after it is to be kept.
    /// Non-finite or non-positive `eps` count as 0.
    pub fn push(&mut self, eps: f64) -> bool {
        if eps.is_finite() && eps > 0.0 {
            self.since += eps;
        }
        if self.since > self.d0 {
            self.since = 0.0;
            true
        } else {
            false
        }
    }
}
