//! The std harness of `sgld`: data sets, the `sgld sample` command, convergence
//! diagnostics, the papers' experiments with their figures and reports.

pub mod bench;
pub mod compare;
pub mod data;
pub mod diagnostics;
pub mod exact;
pub mod experiments;
pub mod ica_tools;
pub mod plot;
pub mod predict;
pub mod sample;
pub mod spec;
