pub mod kernels;
pub mod noise;
pub mod step;
