//! Numerically stable scalar functions: a branch-free exp, sigmoid, log-sigmoid, softplus.
//!
//! Each is finite for every finite argument, up to `±f32::MAX` (resp. `±f64::MAX`): an
//! `exp` that overflows does so only where the result is already its limit.

/// The logistic function `σ(z) = 1 / (1 + e^{−z})`, in `[0, 1]`.
///
/// Branch-free: for `z < −88.7`, `e^{−z}` overflows to `∞` and the result is `0`, the
/// limit (σ(z) is subnormal there). Within 4 ulps wherever σ(z) is a normal float; NaN
/// in, NaN out. Its `e^{−z}` is [`exp`]'s with fused multiply-adds where the target has
/// FMA: a shorter chain for the responsibilities and margins it computes in a step.
///
/// ```
/// use sgld::math::sigmoid;
/// assert_eq!(sigmoid(0.0), 0.5);
/// assert_eq!(sigmoid(f32::MAX), 1.0);
/// assert_eq!(sigmoid(-f32::MAX), 0.0);
/// ```
#[inline]
pub fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + exp_with::<true>(-z))
}

/// `eˣ` without a branch: `x = k·ln 2 + r` with `k` rounded by the `1.5·2²³` shifter,
/// `eʳ` by Cephes' single-precision polynomial on `|r| ≤ ln2/2` (evaluated in Estrin's
/// scheme, a shorter chain of dependent operations than Horner's), and `2ᵏ` built in
/// the exponent bits as two factors, so `k` from −150 to 128 needs no special case.
///
/// Within 1 ulp of the exact value wherever that is a normal float; `∞` above 88.73,
/// subnormal below −87.34, `0` below −103.98; NaN in, NaN out. Where the arguments of a
/// hot chain vary (a mixture's responsibilities, a logistic model's margins) it costs
/// no mispredicted branch on their range, and its latency is shorter than libm's
/// `expf`, whose reduction has a division.
///
/// ```
/// use sgld::math::exp;
/// assert_eq!(exp(0.0), 1.0);
/// assert!((exp(1.0) - core::f32::consts::E).abs() <= f32::EPSILON * 3.0);
/// assert_eq!(exp(f32::INFINITY), f32::INFINITY);
/// assert_eq!(exp(f32::NEG_INFINITY), 0.0);
/// assert!(exp(f32::NAN).is_nan());
/// ```
#[inline]
pub fn exp(x: f32) -> f32 {
    exp_with::<false>(x)
}

/// `a·b + c`: fused (one rounding) when `FUSED` and the target has FMA, else two
/// roundings.
#[inline(always)]
fn mul_add<const FUSED: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FUSED {
        let v = |x: f32| wide::f32x4::splat(x);
        v(a).mul_add(v(b), v(c)).to_array()[0]
    } else {
        a * b + c
    }
}

/// The constants of [`exp`]'s algorithm, which the vector kernels' `exp` shares.
pub(crate) mod exp_consts {
    /// `1.5·2²³`: adding it rounds to an integer, which then sits in the low bits.
    pub(crate) const SHIFTER: f32 = 12_582_912.0;
    /// `ln 2` in two parts; `0.693359375` has few bits, so `k·LN2_HI` is exact.
    pub(crate) const LN2_HI: f32 = 0.693_359_4;
    /// The rest of `ln 2`.
    pub(crate) const LN2_LO: f32 = -2.121_944_4e-4;
    /// The clamp of the argument: beyond it `eˣ` rounds to 0 or overflows anyway.
    pub(crate) const LO: f32 = -104.0;
    /// The upper end of the clamp.
    pub(crate) const HI: f32 = 89.0;
    /// Cephes' coefficients of `(eʳ − 1 − r)/r²`: `P[0] + P[1]r + … + P[5]r⁵`.
    pub(crate) const P: [f32; 6] = [
        0.5,
        1.666_666_5e-1,
        4.166_579_6e-2,
        8.333_452e-3,
        1.398_199_9e-3,
        1.987_569_1e-4,
    ];
}

/// [`exp`]'s algorithm, with fused multiply-adds when `FUSED`: a shorter chain for
/// [`sigmoid`], whose few-ulp bound it keeps, though not the 1-ulp bound of [`exp`].
#[inline(always)]
fn exp_with<const FUSED: bool>(x: f32) -> f32 {
    use exp_consts::*;
    let fma = mul_add::<FUSED>;
    // Beyond these bounds eˣ is ∞ or rounds to 0 anyway (clamp keeps a NaN).
    let x = x.clamp(LO, HI);
    let s = fma(x, core::f32::consts::LOG2_E, SHIFTER);
    let k = s - SHIFTER;
    let r = fma(-k, LN2_LO, fma(-k, LN2_HI, x));
    let z = r * r;
    let p5 = fma(P[5], r, P[4]);
    let p3 = fma(P[3], r, P[2]);
    let p1 = fma(P[1], r, P[0]);
    let y = fma(fma(fma(p5, z, p3), z, p1), z, r) + 1.0;
    // k ∈ [−150, 128] sits in the low bits of s; 2ᵏ = 2^⌊k/2⌋ · 2^⌈k/2⌉, both normal.
    let k = s.to_bits() as i32 - SHIFTER.to_bits() as i32;
    let (k1, k2) = (k >> 1, k - (k >> 1));
    let two = |e: i32| f32::from_bits(((e + 127) as u32) << 23);
    y * two(k1) * two(k2)
}

/// `softplus(x) = ln(1 + eˣ) = max(x, 0) + ln(1 + e^{−|x|})`.
#[inline]
pub fn softplus(x: f32) -> f32 {
    x.max(0.0) + libm::log1pf(libm::expf(-x.abs()))
}

/// `ln σ(z) = −softplus(−z)`, finite for every finite `z`.
///
/// ```
/// use sgld::math::log_sigmoid;
/// assert_eq!(log_sigmoid(-f32::MAX), -f32::MAX);
/// assert!((log_sigmoid(0.0) + core::f32::consts::LN_2).abs() < 1e-7);
/// ```
#[inline]
pub fn log_sigmoid(z: f32) -> f32 {
    -softplus(-z)
}

/// `tanh(x)`, in `[−1, 1]` for every argument (libm's `tanhf`: no overflow of `eˣ`,
/// ±1 beyond |x| ≈ 9, `x` itself for tiny |x|). The ICA score uses it.
#[inline]
pub fn tanh(x: f32) -> f32 {
    libm::tanhf(x)
}

/// [`softplus`] in f64.
#[inline]
pub fn softplus_f64(x: f64) -> f64 {
    x.max(0.0) + libm::log1p(libm::exp(-x.abs()))
}

/// [`log_sigmoid`] in f64, used where log-likelihoods are summed.
#[inline]
pub fn log_sigmoid_f64(z: f64) -> f64 {
    -softplus_f64(-z)
}

/// `ln(eᵃ + eᵇ)` without overflow.
#[inline]
pub fn log_add_exp(a: f64, b: f64) -> f64 {
    let m = a.max(b);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + libm::log1p(libm::exp(-(a - b).abs()))
}
