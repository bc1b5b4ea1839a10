//! Online SGLD in fixed point, for logistic regression on sparse binary features: the
//! learner for a core without an FPU (Cortex-M0/M3, RV32IMC), where each f32 operation
//! is a library call of 50–75 instructions.
//!
//! θ and the posterior mean are Q7.24 integers ([`FRAC`]: `|θⱼ| < 128`, resolution
//! 6·10⁻⁸). The step is [`OnlineSgld`](super::OnlineSgld)'s, eq. 4 with the gradient
//! estimate written as per-example coefficients,
//!
//! `θⱼ ← θⱼ + (ε/2)·∂ⱼlog p(θ) + √ε·ηⱼ + Σ_{i ∈ batch} cᵢ·xᵢⱼ`,
//! `cᵢ = (ε/2)(N/n)·yᵢ σ(−yᵢ θᵀxᵢ)`,
//!
//! but the margins `θᵀxᵢ` are integer sums (the features are 0 or 1), σ an integer
//! interpolation, the prior's term comes from θⱼ's sign (Laplace) or one integer multiply
//! (Gaussian), the noise from the ziggurat in fixed point
//! ([`crate::noise::fill_normal_fixed`]) scaled by one multiply, and the coefficients are
//! added as integers: a parameter costs a few integer instructions a step, not four
//! library calls. Only the step's constants (the schedule's εₜ, √ε, `εₜ/Σε`) are f32, and
//! they enter as integer multipliers taken from their bits.
//!
//! The estimate (eq. 11) is the running weighted mean `x̄ ← x̄ + (εₜ/Σε)(θ − x̄)`, one
//! multiply a parameter.
//!
//! **What fixed point costs.** Every increment is rounded to 2⁻²⁴ (to nearest; the
//! Laplace prior's pull, `(ε/2)/b`, as small as a hundred units at the end of a
//! schedule, by dithering, so that it is unbiased). A coordinate that would leave
//! `(−128, 128)` stays at the bound and the step reports it (`StepInfo::clipped`).

use rand_core::Rng;

use super::{Example, Examples, SparseBinaryExample, Window, nth};
use crate::Error;
use crate::error::check_step_size_f32;
use crate::gradient::sample_batch;
use crate::kernels::SparseIndex;
use crate::math::sqrt;
use crate::noise::normal_fixed;
use crate::sampler::StepInfo;
use crate::schedule::Schedule;

/// Fraction bits of θ and of the posterior mean: Q7.24.
pub const FRAC: u32 = 24;
/// `2^FRAC`.
const ONE: f32 = (1u32 << FRAC) as f32;

/// `x` in Q7.24, saturating outside `(−128, 128)`; NaN is 0.
///
/// ```
/// use sgld::online::fixed::{from_fixed, to_fixed};
/// assert_eq!(to_fixed(1.5), 3 << 23);
/// assert_eq!(from_fixed(to_fixed(-0.25)), -0.25);
/// ```
pub fn to_fixed(x: f32) -> i32 {
    (x * ONE) as i32
}

/// A Q7.24 value as f32.
pub fn from_fixed(q: i32) -> f32 {
    q as f32 * (1.0 / ONE)
}

/// The prior of a [`FixedSgld`]: each has its fixed-point gradient.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FixedPrior {
    /// Laplace of scale `b`, stored as `1/b`: `∂ⱼlog p = −sign(θⱼ)/b`.
    Laplace(f32),
    /// Gaussian `N(0, σ²)`, stored as `1/σ²`: `∂ⱼlog p = −θⱼ/σ²`.
    Gaussian(f32),
}

impl FixedPrior {
    /// A Laplace prior of scale `b` (finite and positive, `1/b` finite).
    pub fn laplace(b: f32) -> Result<Self, Error> {
        Self::inverse(b, "Laplace scale must be finite and positive").map(Self::Laplace)
    }

    /// A Gaussian prior of standard deviation `sd` (finite and positive, `1/sd²` finite).
    pub fn gaussian(sd: f32) -> Result<Self, Error> {
        Self::inverse(sd * sd, "Gaussian sd must be finite and positive").map(Self::Gaussian)
    }

    fn inverse(x: f32, what: &'static str) -> Result<f32, Error> {
        let inv = 1.0 / x;
        if x > 0.0 && x.is_finite() && inv.is_finite() {
            Ok(inv)
        } else {
            Err(Error::InvalidParameter { what })
        }
    }
}

#[path = "sigmoid_table.rs"]
mod table;

use table::SIGMOID_Q30;

/// `σ(z)·2³⁰` for `z` in Q7.24 (any i64): cubic Hermite interpolation between
/// [`SIGMOID_Q30`]'s knots at every 1/8, with the slopes `σ(1 − σ)` the knots give, so
/// that it is smooth and within 10⁻⁷ of σ; `σ(−z) = 1 − σ(z)`; 1 beyond 16 (off by
/// `e⁻¹⁶ = 1.1·10⁻⁷`).
fn sigmoid_q30(z: i64) -> i64 {
    const ONE_Q30: i64 = 1 << 30;
    let a = z.unsigned_abs();
    // Knot k = ⌊|z|·8⌋ and t = the remainder in Q30.
    let k = (a >> (FRAC - 3)) as usize;
    let s = if k >= SIGMOID_Q30.len() - 1 {
        ONE_Q30
    } else {
        let t = ((a & ((1 << (FRAC - 3)) - 1)) << (30 - (FRAC - 3))) as i64;
        let (p0, p1) = (SIGMOID_Q30[k] as i64, SIGMOID_Q30[k + 1] as i64);
        // Slopes times the knot spacing 1/8, in Q30.
        let m0 = (p0 * (ONE_Q30 - p0)) >> 33;
        let m1 = (p1 * (ONE_Q30 - p1)) >> 33;
        let t2 = (t * t) >> 30;
        let t3 = (t2 * t) >> 30;
        // The Hermite basis in Q30.
        let h01 = 3 * t2 - 2 * t3;
        let h10 = t3 - 2 * t2 + t;
        let h11 = t3 - t2;
        p0 + ((h01 * (p1 - p0) + h10 * m0 + h11 * m1) >> 30)
    };
    if z < 0 { ONE_Q30 - s } else { s }
}

/// A non-negative f32 factor as an integer multiplier and a shift, `x = m/2^shift`
/// exactly, with `m` in `[2³⁰, 2³¹)` where the shift allows: a multiply and a shift
/// apply it.
#[derive(Debug, Clone, Copy)]
struct Factor {
    m: i32,
    shift: u32,
}

impl Factor {
    /// `x` in `[0, 2³⁰)`, exactly, from its bits: the 24-bit significand shifted into
    /// `[2³⁰, 2³¹)` (no float arithmetic, which is a library call without an FPU); a
    /// larger `x` is taken as 2³⁰.
    fn of(x: f32) -> Self {
        let bits = x.to_bits();
        let exp = (bits >> 23) & 0xff;
        if exp == 0 {
            // 0, or subnormal: below 1.2·10⁻³⁸, a factor of 0.
            return Self { m: 0, shift: 0 };
        }
        if exp >= 157 {
            // 2³⁰ or more (a step no chain survives): held at 2³⁰.
            return Self {
                m: 1 << 30,
                shift: 0,
            };
        }
        let m = (((bits & 0x7f_ffff) | 0x80_0000) << 7) as i32;
        // x = m·2^(exp − 127 − 23 − 7).
        let shift = 157u32.saturating_sub(exp);
        if shift > 62 {
            Self {
                m: m >> (shift - 62).min(31),
                shift: 62,
            }
        } else {
            Self { m, shift }
        }
    }

    /// `v·x`, rounded to nearest: one 32 × 32 → 64-bit multiply.
    #[inline(always)]
    fn times32(self, v: i32) -> i64 {
        let half = (1i64 << self.shift) >> 1;
        (v as i64 * self.m as i64 + half) >> self.shift
    }

    /// `⌊x·2²⁴⌋` and the fraction below it in Q32 (for dithered rounding).
    fn fixed_and_fraction(self) -> (i64, u32) {
        // x·2²⁴ = m·2^(24 − shift).
        let s = self.shift as i64 - FRAC as i64;
        if s <= 0 {
            ((self.m as i64) << -s, 0)
        } else if s > 62 {
            (0, 0)
        } else {
            let whole = (self.m as i64) >> s;
            let rest = (self.m as i64) - (whole << s);
            // rest/2^s in Q32.
            let frac = if s >= 32 {
                rest >> (s - 32)
            } else {
                rest << (32 - s)
            };
            (whole, frac as u32)
        }
    }

    /// `v·x`, rounded to nearest; `|v| < 2³²`.
    #[inline(always)]
    fn times(self, v: i64) -> i64 {
        match i32::try_from(v) {
            Ok(v) => self.times32(v),
            Err(_) => {
                let half = (1i64 << self.shift) >> 1;
                (v * self.m as i64 + half) >> self.shift
            }
        }
    }
}

/// `v` clamped into `[−(2³¹ − 1), 2³¹ − 1]`, and whether it had to be.
#[inline(always)]
fn saturate(v: i64) -> (i32, bool) {
    let c = v as i32;
    if c as i64 == v && c != i32::MIN {
        (c, false)
    } else if v < 0 {
        (i32::MIN + 1, true)
    } else {
        (i32::MAX, true)
    }
}

/// The online SGLD learner in fixed point: a window of `CAP` recent examples with at most
/// `K` indices each (of type `I`), batches of `B`, schedule `S`; θ and the estimate in the
/// caller's memory as Q7.24.
///
/// ```
/// use sgld::noise::default_rng;
/// use sgld::online::fixed::{FixedPrior, FixedSgld, from_fixed};
/// use sgld::online::{Examples, SparseBinaryExample};
/// use sgld::schedule::Constant;
///
/// type Ex = SparseBinaryExample<4, u8>;
/// let mut window = Examples::<Ex, 64>::new();
/// let (mut theta, mut mean) = ([0i32; 3], [0i32; 3]);
/// let mut learner = FixedSgld::<4, u8, _, 64, 8>::new(
///     &mut window, &mut theta, &mut mean,
///     FixedPrior::gaussian(3.0)?, Constant::new(1e-3)?, 500,
/// )?;
/// let mut rng = default_rng(5);
/// for t in 0..3000u32 {
///     // Feature 0 says +1, feature 1 says −1; feature 2 is the bias.
///     let x = if t % 2 == 0 { [0u8, 2] } else { [1u8, 2] };
///     let y = if t % 2 == 0 { 1.0 } else { -1.0 };
///     learner.push(Ex::narrow(&x, y)?, &mut rng)?;
/// }
/// assert!(learner.mean(0) > 1.0 && learner.mean(1) < -1.0);
/// assert!(from_fixed(learner.theta()[0]) > 0.5);
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug)]
pub struct FixedSgld<'a, const K: usize, I, S, const CAP: usize, const B: usize> {
    /// The examples, the count seen and the prior.
    window: Window<'a, SparseBinaryExample<K, I>, FixedPrior, CAP>,
    theta: &'a mut [i32],
    mean: &'a mut [i32],
    schedule: S,
    burn_in: u64,
    /// Σ εₜ over the estimate's draws.
    weight: f32,
    /// Draws in the estimate.
    count: u64,
    batch: [usize; B],
    coef: [i32; B],
    saturated: u64,
}

impl<'a, const K: usize, I: SparseIndex, S: Schedule, const CAP: usize, const B: usize>
    FixedSgld<'a, K, I, S, CAP, B>
{
    /// A learner starting at `theta` (Q7.24; see [`to_fixed`]) with its window in
    /// `examples` (emptied first) and its estimate in `mean` (of `theta`'s length);
    /// arrivals after the first `burn_in` enter the estimate with weight εₜ.
    pub fn new(
        examples: &'a mut Examples<SparseBinaryExample<K, I>, CAP>,
        theta: &'a mut [i32],
        mean: &'a mut [i32],
        prior: FixedPrior,
        schedule: S,
        burn_in: u64,
    ) -> Result<Self, Error> {
        if theta.is_empty() {
            return Err(Error::Empty { what: "theta" });
        }
        crate::error::check_len("mean", theta.len(), mean.len())?;
        if B == 0 {
            return Err(Error::EmptyBatch);
        }
        if CAP == 0 {
            return Err(Error::Empty {
                what: "window capacity",
            });
        }
        mean.fill(0);
        Ok(Self {
            window: Window::new(examples, theta.len(), prior),
            theta,
            mean,
            schedule,
            burn_in,
            weight: 0.0,
            count: 0,
            batch: [0; B],
            coef: [0; B],
            saturated: 0,
        })
    }

    /// Takes one example: checks it (an invalid one is refused and changes nothing), adds
    /// it to the window, and makes one SGLD step on a batch drawn from the window. The
    /// step's norms are not computed (NaN); `clipped` says a coordinate reached the
    /// bound of Q7.24.
    pub fn push<R: Rng + ?Sized>(
        &mut self,
        example: SparseBinaryExample<K, I>,
        rng: &mut R,
    ) -> Result<StepInfo, Error> {
        self.window.push(example)?;
        let n = B.min(self.window.len());
        sample_batch(rng, self.window.len(), &mut self.batch[..n])?;
        let t = self.window.seen() - 1;
        let eps = self.schedule.step_size(t);
        check_step_size_f32(eps)?;
        self.coefficients(n, eps);
        let clipped = self.step(n, eps, rng);
        if clipped {
            self.saturated += 1;
        }
        if t >= self.burn_in {
            self.accumulate(eps);
        }
        Ok(StepInfo {
            step_size: eps,
            grad_norm: f32::NAN,
            noise_norm: f32::NAN,
            non_finite: false,
            clipped,
        })
    }

    /// `cᵢ = (ε/2)(N/n)·yᵢσ(−yᵢθᵀxᵢ)` for the batch's examples, at the current θ, all in
    /// integers but the step's factor.
    fn coefficients(&mut self, n: usize, eps: f32) {
        // σ in Q30 times (ε/2)(N/n)/2⁶: the coefficient in Q7.24.
        let seen = self.window.seen() as f32;
        let scale = Factor::of(0.5 * eps * seen / n as f32 * (1.0 / 64.0));
        let slices = self.window.examples.as_slices();
        for (c, &i) in self.coef[..n].iter_mut().zip(&self.batch[..n]) {
            *c = match nth(slices, i) {
                Some(ex) => {
                    let margin: i64 = ex
                        .indices()
                        .iter()
                        .map(|j| self.theta.get(j.index()).map_or(0, |&q| q as i64))
                        .sum();
                    // Labels are ±1 (checked on arrival): the sign bit decides.
                    let positive = ex.label().is_sign_positive();
                    let v = scale.times(sigmoid_q30(if positive { -margin } else { margin }));
                    let (v, _) = saturate(v);
                    if positive { v } else { -v }
                }
                None => 0,
            };
        }
    }

    /// The prior's pull and the noise on every parameter, then the batch's coefficients
    /// on their features; true when a coordinate had to be held at the bound.
    fn step<R: Rng + ?Sized>(&mut self, n: usize, eps: f32, rng: &mut R) -> bool {
        let h = 0.5 * eps;
        // √ε·η with η in Q4.27: the factor √ε/2³ gives Q7.24.
        let noise = Factor::of(sqrt(eps) * 0.125);
        let mut clipped = false;
        match self.window.prior {
            FixedPrior::Laplace(inv_b) => {
                // (ε/2)/b rounded by dithering: unbiased however few units it is.
                let (whole, fraction) = Factor::of(h * inv_b).fixed_and_fraction();
                let pull = whole + i64::from(rng.next_u32() < fraction);
                for t in self.theta.iter_mut() {
                    let p = match *t {
                        0 => 0,
                        q if q > 0 => -pull,
                        _ => pull,
                    };
                    let z = noise.times32(normal_fixed(rng));
                    let (v, c) = saturate(*t as i64 + p + z);
                    *t = v;
                    clipped |= c;
                }
            }
            FixedPrior::Gaussian(inv_var) => {
                let decay = Factor::of(h * inv_var);
                for t in self.theta.iter_mut() {
                    let z = noise.times32(normal_fixed(rng));
                    let (v, c) = saturate(*t as i64 - decay.times32(*t) + z);
                    *t = v;
                    clipped |= c;
                }
            }
        }
        let slices = self.window.examples.as_slices();
        for (&c, &i) in self.coef[..n].iter().zip(&self.batch[..n]) {
            for j in nth(slices, i).map_or(&[][..], |e| e.indices()) {
                if let Some(t) = self.theta.get_mut(j.index()) {
                    let (v, s) = saturate(*t as i64 + c as i64);
                    *t = v;
                    clipped |= s;
                }
            }
        }
        clipped
    }

    /// Adds θ to the estimate with weight ε.
    fn accumulate(&mut self, eps: f32) {
        self.weight += eps;
        self.count += 1;
        let w = Factor::of(eps / self.weight);
        for (m, &t) in self.mean.iter_mut().zip(self.theta.iter()) {
            // |θ − x̄| < 2³², and the step moves x̄ toward θ: it stays in i32.
            *m = (*m as i64 + w.times(t as i64 - *m as i64)) as i32;
        }
    }

    /// θ in Q7.24.
    pub fn theta(&self) -> &[i32] {
        self.theta
    }

    /// The posterior mean of parameter `j` so far; NaN before the estimate's first draw
    /// or for `j` out of range.
    pub fn mean(&self, j: usize) -> f32 {
        match self.mean.get(j) {
            Some(&q) if self.count > 0 => from_fixed(q),
            _ => f32::NAN,
        }
    }

    /// Writes every posterior mean into `out` (of θ's length).
    pub fn means_into(&self, out: &mut [f32]) -> Result<(), Error> {
        crate::error::check_len("means", self.mean.len(), out.len())?;
        for (j, o) in out.iter_mut().enumerate() {
            *o = self.mean(j);
        }
        Ok(())
    }

    /// Examples seen so far.
    pub fn seen(&self) -> u64 {
        self.window.seen()
    }

    /// Draws in the estimate.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Steps at which a coordinate was held at the bound of Q7.24.
    pub fn saturated(&self) -> u64 {
        self.saturated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_keep_thirty_bits_and_round_to_nearest() {
        for x in [1e-12f32, 3.7e-6, 0.001, 0.125, 0.7, 1.0, 3.0, 1000.0] {
            let f = Factor::of(x);
            let v = 1i64 << 31;
            let got = f.times(v) as f64;
            let want = x as f64 * v as f64;
            assert!((got - want).abs() <= want * 2e-9 + 0.5, "{x}: {got} {want}");
        }
        assert_eq!(Factor::of(0.5).times(3), 2);
        assert_eq!(Factor::of(0.5).times32(3), 2);
        assert_eq!(Factor::of(0.5).times((1 << 31) + 4), (1 << 30) + 2);
        // ⌊x·2²⁴⌋ and the rest in Q32: 3.25·2⁻²⁴ is 3 and a quarter.
        assert_eq!(Factor::of(3.25 / ONE).fixed_and_fraction(), (3, 1 << 30));
        assert_eq!(Factor::of(0.5).fixed_and_fraction(), (1 << 23, 0));
        assert_eq!(Factor::of(1e-20).fixed_and_fraction().0, 0);
        assert_eq!(Factor::of(1e30).times32(3), 3 << 30);
        assert_eq!(Factor::of(0.5).times(-3), -1);
        assert_eq!(Factor::of(0.0).times(1 << 31), 0);
    }

    #[test]
    fn the_sigmoid_table_is_its_definition() {
        for (k, &q) in SIGMOID_Q30.iter().enumerate() {
            let want = 1.0 / (1.0 + libm::exp(-(k as f64) / 8.0)) * (1u64 << 30) as f64;
            assert!((q as f64 - want).abs() <= 0.5, "{k}: {q} {want}");
        }
    }

    #[test]
    fn the_integer_sigmoid_is_within_1_2e_minus_7_of_sigma() {
        let mut worst = 0.0f64;
        for i in -40_000..=40_000i64 {
            // z from −20 to 20 in steps of 1/2000, and the odd offset reaches every phase.
            let z = i * (1 << FRAC) / 2000 + 7;
            let x = z as f64 / (1u64 << FRAC) as f64;
            let want = 1.0 / (1.0 + libm::exp(-x));
            let got = sigmoid_q30(z) as f64 / (1u64 << 30) as f64;
            worst = worst.max((got - want).abs());
        }
        assert!(worst < 1.2e-7, "{worst}");
        assert_eq!(sigmoid_q30(0), 1 << 29);
        assert_eq!(sigmoid_q30(i64::MAX), 1 << 30);
        assert_eq!(sigmoid_q30(i64::MIN + 1), 0);
    }

    /// The batch's coefficients are `(ε/2)(N/n)·yσ(−yθᵀx)`, computed in f64, to 10⁻⁶ of
    /// the largest and a unit of Q7.24.
    #[test]
    fn coefficients_are_the_gradient_of_the_log_likelihood() {
        type Ex = SparseBinaryExample<4, u8>;
        let mut window = Examples::<Ex, 8>::new();
        let (mut theta, mut mean) = ([0i32; 6], [0i32; 6]);
        let schedule = crate::schedule::Constant::new(0.01).unwrap();
        let mut l = FixedSgld::<4, u8, _, 8, 4>::new(
            &mut window,
            &mut theta,
            &mut mean,
            FixedPrior::laplace(1.0).unwrap(),
            schedule,
            0,
        )
        .unwrap();
        let rows: [(&[u8], f32); 4] = [
            (&[0, 1, 5], 1.0),
            (&[2, 5], -1.0),
            (&[0, 3, 4, 5], -1.0),
            (&[], 1.0),
        ];
        for (x, y) in rows {
            l.window
                .examples
                .push_back(Ex::narrow(x, y).unwrap())
                .unwrap();
        }
        l.window.seen = 1000;
        let values = [0.7f32, -1.3, 2.9, -0.05, 11.0, 0.4];
        for (q, v) in l.theta.iter_mut().zip(values) {
            *q = to_fixed(v);
        }
        l.batch = [3, 0, 2, 1];
        let eps = 0.01f32;
        l.coefficients(4, eps);
        for (k, &i) in l.batch.iter().enumerate() {
            let (x, y) = rows[i];
            let m: f64 = x
                .iter()
                .map(|&j| from_fixed(l.theta[j as usize]) as f64)
                .sum();
            let y = y as f64;
            let want = 0.5 * eps as f64 * 1000.0 / 4.0 * y / (1.0 + libm::exp(y * m));
            let got = from_fixed(l.coef[k]) as f64;
            assert!(
                (got - want).abs() <= 1e-6 * 1.25 + 1.0 / ONE as f64,
                "{i}: {got} {want}"
            );
        }
    }

    #[test]
    fn conversions_round_trip_and_saturate() {
        assert_eq!(to_fixed(f32::NAN), 0);
        assert_eq!(to_fixed(1e9), i32::MAX);
        assert_eq!(to_fixed(-1e9), i32::MIN);
        for x in [0.0f32, 1.0, -2.5, 127.0, 1e-7] {
            assert!((from_fixed(to_fixed(x)) - x).abs() <= 1.0 / ONE, "{x}");
        }
        assert_eq!(saturate(i64::MAX), (i32::MAX, true));
        assert_eq!(saturate(-5), (-5, false));
    }
}
