//! Numerically stable scalar functions: a branch-free exp, sigmoid, log-sigmoid, softplus,
//! and the single-precision `sqrt` and `ln` of the hot paths.
//!
//! Each is finite for every finite argument, up to `±f32::MAX` (resp. `±f64::MAX`): an
//! `exp` that overflows does so only where the result is already its limit.
//!
//! [`exp`], [`sigmoid`], [`sqrt`] and [`ln`] use f32 arithmetic only: on a target whose
//! FPU is single precision (the Cortex-M4F) or that has none, an f64 operation is a call
//! into a software routine tens of instructions long, so nothing a step runs per example
//! goes through f64 ([`libm`]'s `expf`, `logf` and `sinf` compute in f64 inside).

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
    // Where the target has no FMA, `wide`'s `mul_add` is this multiply and add anyway.
    const HAS_FMA: bool = cfg!(any(
        all(
            any(target_arch = "x86", target_arch = "x86_64"),
            target_feature = "fma"
        ),
        all(target_arch = "aarch64", target_feature = "neon")
    ));
    if FUSED && HAS_FMA {
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

/// `√x`, correctly rounded: the hardware instruction where the target has one — x86's
/// `sqrtss` and AArch64's `fsqrt` (through [`libm::sqrtf`]), wasm's `f32x4.sqrt` (with
/// `simd128`) and `vsqrt.f32` on 32-bit ARM with a hard-float FPU (the Cortex-M4F), which
/// libm does not use — and libm's software routine elsewhere. NaN for `x < 0`.
///
/// ```
/// assert_eq!(sgld::math::sqrt(2.25), 1.5);
/// assert_eq!(sgld::math::sqrt(0.0), 0.0);
/// assert!(sgld::math::sqrt(-1.0).is_nan());
/// ```
#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    #[cfg(all(target_arch = "arm", target_abi = "eabihf"))]
    {
        vsqrt(x)
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        // libm's `sqrtf` is software on wasm unless built with nightly intrinsics.
        wide::f32x4::splat(x).sqrt().to_array()[0]
    }
    #[cfg(not(any(
        all(target_arch = "arm", target_abi = "eabihf"),
        all(target_arch = "wasm32", target_feature = "simd128")
    )))]
    {
        libm::sqrtf(x)
    }
}

/// `vsqrt.f32` on 32-bit ARM with a hard-float FPU.
#[cfg(all(target_arch = "arm", target_abi = "eabihf"))]
#[allow(unsafe_code)]
#[inline(always)]
fn vsqrt(x: f32) -> f32 {
    let y: u32;
    // SAFETY: the instructions move `x` into `s15`, take its square root there and move
    // it out; `s15` is declared clobbered, they touch no memory and no stack and leave
    // the flags alone, and the hard-float ABI guarantees the FPU they need. The embedded
    // firmware (core/embedded, run under QEMU by its run.sh) checks this function bit
    // for bit against libm's correctly rounded software `sqrtf`.
    unsafe {
        core::arch::asm!(
            "vmov s15, {x}",
            "vsqrt.f32 s15, s15",
            "vmov {y}, s15",
            x = in(reg) x.to_bits(),
            y = lateout(reg) y,
            out("s15") _,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    f32::from_bits(y)
}

/// `ln x` in f32 arithmetic only (Cephes' `logf`): `x = 2ᵉ·(1 + f)` with
/// `1 + f ∈ [√½, √2)`, `ln(1 + f)` by a degree-9 polynomial, `e·ln 2` in two parts.
/// Within 2 ulps of the exact value (the tests compare it with libm's over every
/// binade); `−∞` at 0, NaN below 0 and for NaN, `∞` at `∞`; subnormals are exact-scaled
/// first.
///
/// ```
/// use sgld::math::ln;
/// assert_eq!(ln(1.0), 0.0);
/// assert!((ln(core::f32::consts::E) - 1.0).abs() <= f32::EPSILON);
/// assert_eq!(ln(0.0), f32::NEG_INFINITY);
/// assert!(ln(-1.0).is_nan());
/// ```
#[inline]
pub fn ln(x: f32) -> f32 {
    if !(x > 0.0 && x < f32::INFINITY) {
        return if x == 0.0 {
            f32::NEG_INFINITY
        } else if x == f32::INFINITY {
            x
        } else {
            f32::NAN
        };
    }
    // Subnormals: scale into the normal range, exactly.
    let (x, e_bias) = if x < f32::MIN_POSITIVE {
        (x * 8_388_608.0, -23)
    } else {
        (x, 0)
    };
    let bits = x.to_bits();
    // The exponent of x relative to [√½, √2): mantissas at or above √2/2 of the binade
    // move up one.
    const SQRT_HALF_BITS: u32 = 0x3f35_04f3;
    let k = bits.wrapping_sub(SQRT_HALF_BITS) as i32 >> 23;
    let m = f32::from_bits(bits.wrapping_sub((k as u32) << 23));
    let e = (k + e_bias) as f32;
    let f = m - 1.0;
    let z = f * f;
    let p = [
        7.037_683_6e-2,
        -1.151_461e-1,
        1.167_699_9e-1,
        -1.242_014_1e-1,
        1.424_932_3e-1,
        -1.666_805_8e-1,
        2.000_071_5e-1,
        -2.499_999_4e-1,
        3.333_333e-1,
    ];
    let poly = p.iter().fold(0.0f32, |acc, &c| acc * f + c);
    let y = f * z * poly + e * exp_consts::LN2_LO - 0.5 * z;
    f + y + e * exp_consts::LN2_HI
}

/// `softplus(x) = ln(1 + eˣ) = max(x, 0) + ln(1 + e^{−|x|})`, in f32 arithmetic and
/// without a branch (a loop over many arguments vectorises): `t = e^{−|x|}` by [`exp`],
/// and `ln(1 + t) = 2 atanh(s)`, `s = t/(2 + t) ≤ 1/3`, by its odd series to `s¹⁵`
/// (truncation below 2·10⁻⁸ relative), accurate to a few ulps relative however small
/// `t` is.
///
/// ```
/// use sgld::math::softplus;
/// assert!((softplus(0.0) - core::f32::consts::LN_2).abs() < 1e-7);
/// assert_eq!(softplus(-200.0), 0.0);
/// assert!((softplus(-20.0) / 2.061_153_6e-9 - 1.0).abs() < 1e-6);
/// assert_eq!(softplus(f32::INFINITY), f32::INFINITY);
/// ```
#[inline]
pub fn softplus(x: f32) -> f32 {
    let t = exp(-x.abs());
    let s = t / (2.0 + t);
    let z = s * s;
    let p = ATANH_SERIES.iter().fold(0.0f32, |acc, &c| acc * z + c);
    x.max(0.0) + 2.0 * s * p
}

/// `atanh(s)/s = 1 + z/3 + z²/5 + … + z⁷/15` in `z = s²`, highest power first (Horner):
/// [`softplus`]'s series, shared with the vector kernels.
pub(crate) const ATANH_SERIES: [f32; 8] = [
    1.0 / 15.0,
    1.0 / 13.0,
    1.0 / 11.0,
    1.0 / 9.0,
    1.0 / 7.0,
    1.0 / 5.0,
    1.0 / 3.0,
    1.0,
];

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
