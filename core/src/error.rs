//! The one error type of the crate: what was wrong with an input at a public boundary.

use core::fmt;

/// Why a public function refused its input.
///
/// Every public function checks shapes, indices and finiteness once, at its boundary,
/// and returns one of these instead of panicking; inner loops then trust their input.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// Two buffers that must agree in length do not (`what` names the buffer).
    LengthMismatch {
        /// The buffer or argument whose length is wrong.
        what: &'static str,
        /// The length it must have.
        expected: usize,
        /// The length it has.
        found: usize,
    },
    /// A mini-batch with no indices: the gradient estimate `N/n · Σ` is undefined.
    EmptyBatch,
    /// An index (into the data set, or a feature index of a sparse row) is past the end.
    IndexOutOfRange {
        /// The offending index.
        index: usize,
        /// The number of valid positions.
        len: usize,
    },
    /// A value that must be finite is NaN or infinite (`what` names where).
    NonFinite {
        /// The buffer or argument holding the non-finite value.
        what: &'static str,
    },
    /// A step size that is not finite and strictly positive.
    InvalidStepSize {
        /// The rejected value.
        value: f64,
    },
    /// A model, prior, schedule or estimator parameter outside its domain.
    InvalidParameter {
        /// Which parameter, and the domain it must lie in.
        what: &'static str,
    },
    /// A data set, or a dimension, that is empty where at least one element is needed.
    Empty {
        /// What is empty.
        what: &'static str,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::LengthMismatch {
                what,
                expected,
                found,
            } => write!(f, "{what} has length {found}, expected {expected}"),
            Error::EmptyBatch => f.write_str("the mini-batch is empty"),
            Error::IndexOutOfRange { index, len } => {
                write!(f, "index {index} is out of range for length {len}")
            }
            Error::NonFinite { what } => write!(f, "{what} contains a NaN or infinite value"),
            Error::InvalidStepSize { value } => {
                write!(f, "step size {value} is not finite and positive")
            }
            Error::InvalidParameter { what } => write!(f, "invalid parameter: {what}"),
            Error::Empty { what } => write!(f, "{what} is empty"),
        }
    }
}

impl Error {
    /// What went wrong, as a fixed string without the numbers — for a device's log, where
    /// formatting the `f64` of [`Error::InvalidStepSize`] through `Display` links about
    /// 18 KiB of float-printing code.
    ///
    /// ```
    /// let e = sgld::Error::InvalidStepSize { value: -1.0 };
    /// assert_eq!(e.summary(), "step size not finite and positive");
    /// ```
    pub fn summary(&self) -> &'static str {
        match *self {
            Error::LengthMismatch { .. } => "buffer length mismatch",
            Error::EmptyBatch => "empty mini-batch",
            Error::IndexOutOfRange { .. } => "index out of range",
            Error::NonFinite { .. } => "NaN or infinite value",
            Error::InvalidStepSize { .. } => "step size not finite and positive",
            Error::InvalidParameter { what } => what,
            Error::Empty { what } => what,
        }
    }
}

impl core::error::Error for Error {}

/// Checks that `found == expected`, naming `what` otherwise.
#[inline]
pub(crate) fn check_len(what: &'static str, expected: usize, found: usize) -> Result<(), Error> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            what,
            expected,
            found,
        })
    }
}

/// Checks that every value of `xs` is finite, naming `what` otherwise.
#[inline]
pub(crate) fn check_finite(what: &'static str, xs: &[f32]) -> Result<(), Error> {
    if crate::kernels::all_finite(xs) {
        Ok(())
    } else {
        Err(Error::NonFinite { what })
    }
}

/// Checks that a scalar parameter is finite and strictly positive.
#[inline]
pub(crate) fn check_positive(what: &'static str, x: f64) -> Result<(), Error> {
    if x.is_finite() && x > 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidParameter { what })
    }
}

/// Checks a step size: finite and strictly positive.
#[inline]
pub(crate) fn check_step_size(eps: f64) -> Result<(), Error> {
    if eps.is_finite() && eps > 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidStepSize { value: eps })
    }
}

/// [`check_step_size`] for an f32 step, with no f64 arithmetic even when it fails (the
/// per-step check: on a target without an f64 FPU, `eps as f64` is a call into a
/// software routine).
#[inline]
pub(crate) fn check_step_size_f32(eps: f32) -> Result<(), Error> {
    if eps.is_finite() && eps > 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidStepSize { value: widen(eps) })
    }
}

/// `x as f64`, exactly, in integer operations on the bits.
pub(crate) fn widen(x: f32) -> f64 {
    let bits = x.to_bits();
    let sign = u64::from(bits >> 31) << 63;
    let exp = (bits >> 23) & 0xff;
    let mant = u64::from(bits & 0x007f_ffff);
    let rest = match exp {
        0 if mant == 0 => 0,
        0 => {
            // Subnormal: shift the leading 1 into the implicit bit.
            let shift = mant.leading_zeros() - 40;
            let e = 1023 - 126 - u64::from(shift);
            (e << 52) | ((mant << (29 + shift)) & 0x000f_ffff_ffff_ffff)
        }
        0xff => (0x7ff << 52) | (mant << 29),
        e => ((u64::from(e) + 1023 - 127) << 52) | (mant << 29),
    };
    f64::from_bits(sign | rest)
}

#[cfg(test)]
mod tests {
    /// `widen` is `as f64` for zeros, subnormals, normals, infinities and NaN.
    #[test]
    fn widen_is_exact() {
        let mut bits = 0u32;
        loop {
            let x = f32::from_bits(bits);
            let (w, want) = (super::widen(x), x as f64);
            assert!(
                w.to_bits() == want.to_bits() || (w.is_nan() && want.is_nan()),
                "{bits:#x}"
            );
            match bits.checked_add(9_973) {
                Some(b) => bits = b,
                None => break,
            }
        }
        for x in [
            0.0f32,
            -0.0,
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            f32::MAX,
            f32::INFINITY,
        ] {
            assert_eq!(super::widen(x).to_bits(), (x as f64).to_bits());
            assert_eq!(super::widen(-x).to_bits(), (-x as f64).to_bits());
        }
    }
}
