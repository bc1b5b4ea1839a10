#![doc = include_str!("../README.md")]
#![no_std]
// One `unsafe` block in the crate: `math::vsqrt`, the Cortex-M4F's square root instruction.
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

pub use error::Error;
pub use sampler::{ChainState, Sampler, Sgld, SgldState, StepInfo};
