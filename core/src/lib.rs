#![doc = include_str!("../README.md")]
#![no_std]
// `unsafe` in the crate, each allowed where it stands: `math::vsqrt` (the Cortex-M4F's
// square root instruction) and the sparse rows of `online` read without a bounds check
// per index (`kernels::*::sparse_*_in_bounds`).
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod error;
pub mod estimate;
pub mod gradient;
pub mod ica;
pub mod kernels;
pub mod kfac;
pub mod linalg;
pub mod math;
pub mod models;
pub mod noise;
pub mod online;
pub mod rng;
pub mod sampler;
pub mod schedule;
pub mod transform;

pub use error::Error;
pub use sampler::{ChainState, Sampler, Sgld, SgldState, StepInfo};
