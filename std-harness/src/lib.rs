//! The std harness of `sgld`: data sets, the `sgld sample` command, convergence
//! diagnostics, the papers' experiments with their figures and reports.

/// `println!` for the command's own output, which a closed stdout (`sgld … | head`) does
/// not turn into a panic: the line is dropped and the command goes on to write its files
/// and exit as it would have.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stdout(), $($arg)*);
    }};
}

pub mod bench;
#[cfg(feature = "plots")]
pub mod compare;
pub mod constrained;
pub mod data;
pub mod diagnostics;
pub mod error;
pub use error::Error;
pub mod exact;
#[cfg(feature = "plots")]
pub mod experiments;
mod fft;
pub mod ica_tools;
pub mod interrupt;
#[cfg(feature = "plots")]
pub mod plot;
pub mod predict;
pub mod sample;
pub mod spec;
pub mod summarize;
