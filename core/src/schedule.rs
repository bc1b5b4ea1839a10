//! Step-size schedules `εₜ` for `t = 0, 1, 2, …`.
//!
//! The paper decays the step size polynomially, `εₜ = a(b + t)^{−γ}` with `γ ∈ (0.5, 1]`
//! (§2), so that `Σ εₜ = ∞` and `Σ εₜ² < ∞` (eq. 2); it also suggests keeping ε constant
//! once it has fallen below a level where the Metropolis–Hastings rejection rate is
//! negligible (§3): [`Floor`].

use crate::error::{Error, check_step_size};
use crate::math;

/// A step-size schedule: the step size at iteration `t` (counted from 0).
pub trait Schedule {
    /// The step size `εₜ`; always finite and positive for a schedule built through its
    /// constructor.
    fn step_size(&self, t: u64) -> f32;
}

/// The checks both `from_range`s make once the ends are valid step sizes: `γ > 0`,
/// `start ≥ end`, and `steps ≥ 2` unless the range is flat; true for a flat one.
fn flat_range(
    gamma_ok: bool,
    order: Option<core::cmp::Ordering>,
    steps: u64,
) -> Result<bool, Error> {
    use core::cmp::Ordering::{Equal, Less};
    if !gamma_ok {
        return Err(Error::InvalidParameter {
            what: "polynomial schedule: gamma must be finite and > 0",
        });
    }
    match order {
        Some(Less) | None => Err(Error::InvalidParameter {
            what: "polynomial schedule: start must be >= end for a decreasing schedule",
        }),
        Some(Equal) => Ok(true),
        _ if steps < 2 => Err(Error::InvalidParameter {
            what: "polynomial schedule: a decreasing range needs steps >= 2",
        }),
        _ => Ok(false),
    }
}

/// A constant step size `εₜ = ε`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Constant {
    eps: f32,
}

impl Constant {
    /// A constant schedule; `eps` must be finite and positive.
    pub fn new(eps: f32) -> Result<Self, Error> {
        check_step_size(eps as f64)?;
        Ok(Self { eps })
    }
}

impl Schedule for Constant {
    #[inline]
    fn step_size(&self, _t: u64) -> f32 {
        self.eps
    }
}

/// The polynomial decay `εₜ = a(b + t)^{−γ}` of §2.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Polynomial {
    a: f64,
    b: f64,
    gamma: f64,
}

impl Polynomial {
    /// `εₜ = a(b + t)^{−γ}`; needs `a > 0`, `b > 0`, `γ ≥ 0`, all finite, and `ε₀`
    /// representable as a positive f32.
    pub fn new(a: f64, b: f64, gamma: f64) -> Result<Self, Error> {
        if !(a.is_finite() && a > 0.0) {
            return Err(Error::InvalidParameter {
                what: "polynomial schedule: a must be finite and > 0",
            });
        }
        if !(b.is_finite() && b > 0.0) {
            return Err(Error::InvalidParameter {
                what: "polynomial schedule: b must be finite and > 0",
            });
        }
        if !(gamma.is_finite() && gamma >= 0.0) {
            return Err(Error::InvalidParameter {
                what: "polynomial schedule: gamma must be finite and >= 0",
            });
        }
        let s = Self { a, b, gamma };
        let e0 = s.step_size_f64(0);
        if !(e0.is_finite() && e0 > 0.0 && (e0 as f32).is_finite() && (e0 as f32) > 0.0) {
            return Err(Error::InvalidStepSize { value: e0 });
        }
        Ok(s)
    }

    /// Solves `a` and `b` so that the step size falls from `start` (at `t = 0`) to `end`
    /// (at `t = steps − 1`) with decay exponent `γ > 0` — the paper's "ε decreases from
    /// .01 to .0001 over the run" (§5.1).
    ///
    /// With `r = (start/end)^{1/γ}`: `b = (steps − 1)/(r − 1)` and `a = start·b^γ`.
    /// Needs `start ≥ end > 0` and `steps ≥ 2` (or `start == end`, which gives a constant).
    ///
    /// ```
    /// use sgld::schedule::{Polynomial, Schedule};
    /// let s = Polynomial::from_range(1e-2, 1e-4, 0.55, 1_000_000)?;
    /// assert!((s.step_size(0) - 1e-2).abs() < 1e-8);
    /// assert!((s.step_size(999_999) - 1e-4).abs() < 1e-9);
    /// # Ok::<(), sgld::Error>(())
    /// ```
    pub fn from_range(start: f64, end: f64, gamma: f64, steps: u64) -> Result<Self, Error> {
        // Step sizes are f32: both ends must be positive, finite f32 values.
        for v in [start, end] {
            check_step_size(v)?;
            if !(v as f32).is_finite() || (v as f32) < f32::MIN_POSITIVE {
                return Err(Error::InvalidStepSize { value: v });
            }
        }
        if flat_range(
            gamma.is_finite() && gamma > 0.0,
            start.partial_cmp(&end),
            steps,
        )? {
            return Self::new(start, 1.0, 0.0);
        }
        let r = libm::pow(start / end, 1.0 / gamma);
        let b = (steps - 1) as f64 / (r - 1.0);
        let a = start * libm::pow(b, gamma);
        let s = Self::new(a, b, gamma)?;
        // The solve loses precision when (start/end)^(1/γ) is huge or close to 1.
        let (e0, e1) = (s.step_size_f64(0), s.step_size_f64(steps - 1));
        if (e0 - start).abs() > 1e-6 * start || (e1 - end).abs() > 1e-6 * end {
            return Err(Error::InvalidParameter {
                what: "polynomial schedule: this start, end and gamma cannot be met in f64 (ratio too extreme)",
            });
        }
        Ok(s)
    }

    /// The parameters `(a, b, γ)`.
    pub fn params(&self) -> (f64, f64, f64) {
        (self.a, self.b, self.gamma)
    }

    /// The step size in f64.
    #[inline]
    pub fn step_size_f64(&self, t: u64) -> f64 {
        self.a * libm::pow(self.b + t as f64, -self.gamma)
    }
}

impl Schedule for Polynomial {
    #[inline]
    fn step_size(&self, t: u64) -> f32 {
        // Decreasing from a positive f32 ε₀; the max keeps a far-future step positive.
        (self.step_size_f64(t) as f32).max(f32::MIN_POSITIVE)
    }
}

/// [`Polynomial`]'s `εₜ = a(b + t)^{−γ}` in f32 arithmetic only, for targets whose FPU is
/// single precision or absent (a Cortex-M4F computes an f64 `pow` in software, hundreds
/// of instructions an example): `εₜ = exp(ln a − γ·ln(b + t))` with [`math::exp`] and
/// [`math::ln`]. Its steps agree with [`Polynomial`]'s to a relative `2·10⁻⁶` up to
/// `t = 10⁹` (the tests compare them); it needs no f64 operation, at construction either.
///
/// ```
/// use sgld::schedule::{PolynomialF32, Schedule};
/// let s = PolynomialF32::from_range(1e-3, 1e-5, 0.55, 30_000)?;
/// assert!((s.step_size(0) / 1e-3 - 1.0).abs() < 1e-5);
/// assert!((s.step_size(29_999) / 1e-5 - 1.0).abs() < 1e-5);
/// # Ok::<(), sgld::Error>(())
/// ```
///
/// [`math::exp`]: crate::math::exp
/// [`math::ln`]: crate::math::ln
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PolynomialF32 {
    ln_a: f32,
    b: f32,
    gamma: f32,
}

impl PolynomialF32 {
    /// `εₜ = a(b + t)^{−γ}`; needs `a > 0`, `b > 0`, `γ ≥ 0`, all finite, and `ε₀` a
    /// positive normal f32.
    pub fn new(a: f32, b: f32, gamma: f32) -> Result<Self, Error> {
        if !(a.is_finite() && a > 0.0) {
            return Err(Error::InvalidParameter {
                what: "polynomial schedule: a must be finite and > 0",
            });
        }
        Self::from_ln_a(math::ln(a), b, gamma)
    }

    fn from_ln_a(ln_a: f32, b: f32, gamma: f32) -> Result<Self, Error> {
        if !(b.is_finite() && b > 0.0) {
            return Err(Error::InvalidParameter {
                what: "polynomial schedule: b must be finite and > 0",
            });
        }
        if !(gamma.is_finite() && gamma >= 0.0) {
            return Err(Error::InvalidParameter {
                what: "polynomial schedule: gamma must be finite and >= 0",
            });
        }
        let s = Self { ln_a, b, gamma };
        let e0 = s.step_size_raw(0);
        if !(e0.is_finite() && e0 >= f32::MIN_POSITIVE) {
            return Err(Error::InvalidStepSize {
                value: crate::error::widen(e0),
            });
        }
        Ok(s)
    }

    /// [`Polynomial::from_range`] in f32: the step falls from `start` (`t = 0`) to `end`
    /// (`t = steps − 1`) with exponent `γ > 0`; `b = (steps − 1)/(r − 1)` with
    /// `r = (start/end)^{1/γ}`, and `ln a = ln start + γ ln b`.
    pub fn from_range(start: f32, end: f32, gamma: f32, steps: u64) -> Result<Self, Error> {
        for v in [start, end] {
            if !(v.is_finite() && v >= f32::MIN_POSITIVE) {
                return Err(Error::InvalidStepSize {
                    value: crate::error::widen(v),
                });
            }
        }
        if flat_range(
            gamma.is_finite() && gamma > 0.0,
            start.partial_cmp(&end),
            steps,
        )? {
            return Self::new(start, 1.0, 0.0);
        }
        let r = math::exp((math::ln(start) - math::ln(end)) / gamma);
        let b = (steps - 1) as f32 / (r - 1.0);
        let s = Self::from_ln_a(math::ln(start) + gamma * math::ln(b), b, gamma)?;
        // f32 cannot meet a ratio whose r is huge or close to 1.
        let (e0, e1) = (s.step_size_raw(0), s.step_size_raw(steps - 1));
        if !((e0 - start).abs() <= 1e-4 * start && (e1 - end).abs() <= 1e-4 * end) {
            return Err(Error::InvalidParameter {
                what: "polynomial schedule: this start, end and gamma cannot be met in f32 (ratio too extreme)",
            });
        }
        Ok(s)
    }

    /// The parameters `(ln a, b, γ)`.
    pub fn params(&self) -> (f32, f32, f32) {
        (self.ln_a, self.b, self.gamma)
    }

    #[inline]
    fn step_size_raw(&self, t: u64) -> f32 {
        math::exp(self.ln_a - self.gamma * math::ln(self.b + t as f32))
    }
}

impl Schedule for PolynomialF32 {
    #[inline]
    fn step_size(&self, t: u64) -> f32 {
        self.step_size_raw(t).max(f32::MIN_POSITIVE)
    }
}

/// A schedule held constant once it falls below `floor`: `max(εₜ, floor)` (§3).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Floor<S> {
    inner: S,
    floor: f32,
}

impl<S: Schedule> Floor<S> {
    /// Clamps `inner` from below at `floor` (finite, positive).
    pub fn new(inner: S, floor: f32) -> Result<Self, Error> {
        check_step_size(floor as f64)?;
        Ok(Self { inner, floor })
    }
}

impl<S: Schedule> Schedule for Floor<S> {
    #[inline]
    fn step_size(&self, t: u64) -> f32 {
        self.inner.step_size(t).max(self.floor)
    }
}

impl<S: Schedule + ?Sized> Schedule for &S {
    #[inline]
    fn step_size(&self, t: u64) -> f32 {
        (**self).step_size(t)
    }
}

/// The cyclical cosine schedule of cyclical SG-MCMC (Zhang, Li, Zhang, Chen & Wilson
/// 2020, eq. 1): `εₜ = (ε₀/2)·[cos(π·(t mod L)/L) + 1]` with cycle length
/// `L = ⌈T/M⌉` for `T` steps in `M` cycles. Each cycle starts large (exploration) and
/// ends small (sampling); Zhang et al. keep the draws where [`phase`](Self::phase) `≥ β`
/// (they use β ≈ 0.8).
///
/// ```
/// use sgld::schedule::{Cyclical, Schedule};
/// let s = Cyclical::new(0.1, 1000, 4)?;
/// assert_eq!(s.step_size(0), 0.1);
/// assert!((s.step_size(125) - 0.05).abs() < 1e-7); // half-way through the first cycle
/// assert_eq!(s.step_size(250), 0.1); // the second cycle restarts
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cyclical {
    max: f64,
    cycle: u64,
}

impl Cyclical {
    /// `max` (`ε₀`) finite and positive; `total_steps ≥ cycles ≥ 1`.
    pub fn new(max: f64, total_steps: u64, cycles: u64) -> Result<Self, Error> {
        check_step_size(max)?;
        if max > f32::MAX as f64 {
            return Err(Error::InvalidStepSize { value: max });
        }
        if cycles == 0 || total_steps < cycles {
            return Err(Error::InvalidParameter {
                what: "cyclical schedule needs total steps >= cycles >= 1",
            });
        }
        Ok(Self {
            max,
            cycle: total_steps.div_ceil(cycles),
        })
    }

    /// The cycle length `L`.
    pub fn cycle_len(&self) -> u64 {
        self.cycle
    }

    /// Where step `t` lies in its cycle, in `[0, 1)`.
    pub fn phase(&self, t: u64) -> f64 {
        (t % self.cycle) as f64 / self.cycle as f64
    }
}

impl Schedule for Cyclical {
    fn step_size(&self, t: u64) -> f32 {
        let c = libm::cos(core::f64::consts::PI * self.phase(t));
        ((0.5 * self.max * (c + 1.0)) as f32).max(f32::MIN_POSITIVE)
    }
}
