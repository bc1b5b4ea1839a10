pub mod diagnostics;
pub mod kernels;
pub mod models;
pub mod noise;
pub mod step;
