//! The sampler family: SGLD and its preconditioned, adaptive, momentum and exact
//! relatives, each as `init` + `step` over caller-owned buffers.
//!
//! One convention throughout: a step size `ε` is Welling & Teh's, so the plain Langevin
//! move is `θ + (ε/2)·∇log p + N(0, ε)`. Each sampler's docs give its own paper's form in
//! one line, converted to this one. Every sampler also takes
//!
//! - a **temperature** `τ ≥ 0` (handout 6, Algorithm 21): the injected noise is scaled
//!   so the chain targets `p(θ|X)^{1/τ}`, i.e. `N(0, ετ)` in place of `N(0, ε)`; `τ = 0`
//!   turns a sampler into its optimiser (SGD, SGD with momentum, …);
//! - **gradient clipping** by norm: when `‖ĝ‖₂ > c` the gradient is rescaled to norm `c`.
//!
//! | sampler | paper | extra state |
//! |---|---|---|
//! | [`Sgld`] | Welling & Teh 2011, eq. 4 | – |
//! | [`PrecondSgld`] | eq. 9; handout eq. 3.9 | fixed metric `M` (diagonal or Cholesky factor) |
//! | [`Psgld`] | Li et al. 2016 | RMSprop second moments |
//! | [`Sghmc`] | Chen et al. 2014, eq. 15 | momentum |
//! | [`Sghd`] | Lasri & Chaoui, §5 | momentum resampled each step, leapfrog |
//! | [`Sgnht`] | Ding et al. 2014 | momentum and thermostat |
//! | [`Mala`] | Roberts & Tweedie 1996 (full data, exact) | cached log density |
//!
//! Every sampler implements [`Sampler`], so a driver loop can be written once.

mod common;
mod mala;
mod metric;
mod precond;
mod psgld;
mod sghd;
mod sghmc;
mod sgld;
mod sgnht;

pub(crate) use common::chain_state;
pub use common::{ChainState, Sampler};
pub use mala::{Mala, MalaInfo, MalaState};
pub use metric::Metric;
pub use precond::{PrecondSgld, PrecondState};
pub use psgld::{Psgld, PsgldInfo, PsgldState};
pub use sghd::{Sghd, SghdState};
pub use sghmc::{Sghmc, SghmcInfo, SghmcState};
pub use sgld::{Sgld, SgldState, StepInfo};
pub use sgnht::{Sgnht, SgnhtInfo, SgnhtState};
