//! Posterior estimates from an SGLD run: the step-size-weighted estimator (eq. 11), the
//! sampling threshold (eq. 10), and sample collection by mixing distance (§5.3.1).

mod thinning;
mod threshold;
mod weighted;

pub use thinning::MixingThinner;
pub use threshold::{Threshold, sampling_threshold, scores_into, threshold_scratch_len};
pub use weighted::WeightedMoments;
