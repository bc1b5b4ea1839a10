//! Numerically stable scalar functions: sigmoid, log-sigmoid, softplus.
//!
//! Each is finite for every finite argument, up to `±f32::MAX` (resp. `±f64::MAX`): an
//! `exp` that overflows does so only where the result is already its limit.

/// The logistic function `σ(z) = 1 / (1 + e^{−z})`, in `[0, 1]`.
///
/// Branch-free: for `z < −88.7`, `e^{−z}` overflows to `∞` and the result is `0`, the
/// limit (σ(z) is subnormal there). Relative error a few ulps wherever σ(z) is a normal
/// float; NaN in, NaN out.
///
/// ```
/// use sgld::math::sigmoid;
/// assert_eq!(sigmoid(0.0), 0.5);
/// assert_eq!(sigmoid(f32::MAX), 1.0);
/// assert_eq!(sigmoid(-f32::MAX), 0.0);
/// ```
#[inline]
pub fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + libm::expf(-z))
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
