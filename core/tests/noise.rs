//! Statistical tests of the Gaussian noise (release mode): 10⁷ draws checked for
//! moments, Kolmogorov–Smirnov against Φ, tail frequencies and lag-1 autocorrelation;
//! the SIMD path against its scalar twin; and pinned golden values.
//!
//! Tolerances: for N iid standard normals the sample mean, variance, skewness and
//! excess kurtosis have standard errors √(1/N), √(2/N), √(6/N), √(24/N); the lag-1
//! autocorrelation √(1/N); a tail count is Binomial(N, p). Each check allows 5 standard
//! errors (a false alarm about once in 1.7 million runs per check).

use rand_core::Rng;
use sgld::noise::{
    DefaultRng, NORMAL_FRAC, default_rng, fill_normal, fill_normal_fixed, fill_normal_lanes,
    fill_normal_polynomial, fill_normal_simd, fill_normal_ziggurat, reference,
};

const N: usize = 10_000_000;
const SEED: u64 = 0x5EED_2011;

/// The fills checked: what [`fill_normal`] runs here, the table-free arithmetic it runs
/// on targets without a vector permute (wasm32), the ziggurat it runs on targets
/// without an FPU, which this one can run too, and the ziggurat's fixed-point normals
/// (the fixed-point learner's noise) read back as f32.
type Fill = fn(&mut DefaultRng, &mut [f32]);
const FILLS: [(&str, Fill); 4] = [
    ("fill_normal", fill_normal),
    ("fill_normal_polynomial", fill_normal_polynomial),
    ("fill_normal_ziggurat", fill_normal_ziggurat),
    ("fill_normal_fixed", fill_normal_fixed_as_f32),
];

/// [`fill_normal_fixed`]'s Q4.27 normals, rounded to f32.
fn fill_normal_fixed_as_f32(rng: &mut DefaultRng, out: &mut [f32]) {
    let mut q = [0i32; 1024];
    for chunk in out.chunks_mut(q.len()) {
        let q = &mut q[..chunk.len()];
        fill_normal_fixed(rng, q);
        for (o, &v) in chunk.iter_mut().zip(q.iter()) {
            *o = v as f32 / (1u32 << NORMAL_FRAC) as f32;
        }
    }
}

fn draws(fill: Fill) -> Vec<f32> {
    let mut z = vec![0.0f32; N];
    fill(&mut default_rng(SEED), &mut z);
    z
}

fn phi(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// P(K > x) for the Kolmogorov distribution.
fn kolmogorov_sf(x: f64) -> f64 {
    let mut s = 0.0;
    for k in 1..100 {
        let k = k as f64;
        s += 2.0 * (-1f64).powf(k - 1.0) * (-2.0 * k * k * x * x).exp();
    }
    s.clamp(0.0, 1.0)
}

#[test]
fn moments_within_five_standard_errors() {
    for (path, fill) in FILLS {
        let z = draws(fill);
        let n = N as f64;
        let mean = z.iter().map(|&x| x as f64).sum::<f64>() / n;
        let (mut m2, mut m3, mut m4) = (0.0, 0.0, 0.0);
        for &x in &z {
            let d = x as f64 - mean;
            let d2 = d * d;
            m2 += d2;
            m3 += d2 * d;
            m4 += d2 * d2;
        }
        let (m2, m3, m4) = (m2 / n, m3 / n, m4 / n);
        let skew = m3 / m2.powf(1.5);
        let kurt = m4 / (m2 * m2) - 3.0;
        eprintln!(
            "{path}: seed {SEED:#x}: mean {mean:.2e} var {m2:.6} skew {skew:.2e} excess kurtosis {kurt:.2e}"
        );
        assert!(mean.abs() < 5.0 * (1.0 / n).sqrt(), "{path}: mean {mean}");
        assert!(
            (m2 - 1.0).abs() < 5.0 * (2.0 / n).sqrt(),
            "{path}: variance {m2}"
        );
        assert!(
            skew.abs() < 5.0 * (6.0 / n).sqrt(),
            "{path}: skewness {skew}"
        );
        assert!(
            kurt.abs() < 5.0 * (24.0 / n).sqrt(),
            "{path}: excess kurtosis {kurt}"
        );
    }
}

#[test]
fn kolmogorov_smirnov_against_phi() {
    for (path, fill) in FILLS {
        let mut z = draws(fill);
        z.sort_unstable_by(f32::total_cmp);
        let n = N as f64;
        let mut d = 0.0f64;
        for (i, &x) in z.iter().enumerate() {
            let f = phi(x as f64);
            d = d.max((i as f64 + 1.0) / n - f).max(f - i as f64 / n);
        }
        let p = kolmogorov_sf(d * n.sqrt());
        eprintln!(
            "{path}: seed {SEED:#x}: KS D = {d:.3e}, sqrt(N)·D = {:.3}, p = {p:.3}",
            d * n.sqrt()
        );
        assert!(
            p > 0.001,
            "{path}: KS test rejects at alpha = 0.001: D = {d}, p = {p}"
        );
    }
}

#[test]
fn tail_frequencies_within_binomial_error() {
    for (path, fill) in FILLS {
        let z = draws(fill);
        let n = N as f64;
        for t in [3.0f64, 4.0] {
            let p = libm::erfc(t / std::f64::consts::SQRT_2);
            let count = z.iter().filter(|x| (x.abs() as f64) > t).count() as f64;
            let sd = (n * p * (1.0 - p)).sqrt();
            eprintln!(
                "{path}: |z| > {t}: {count} observed, {:.1} expected (sd {sd:.1})",
                n * p
            );
            assert!(
                (count - n * p).abs() < 5.0 * sd,
                "{path}: |z| > {t}: {count} vs {}",
                n * p
            );
        }
        assert!(
            z.iter().all(|x| x.abs() < 6.67),
            "{path}: tails are cut at 6.66"
        );
    }
}

#[test]
fn lag_one_autocorrelation_within_error() {
    for (path, fill) in FILLS {
        let z = draws(fill);
        let n = N as f64;
        let mean = z.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = z.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>();
        let cov: f64 = z
            .windows(2)
            .map(|w| (w[0] as f64 - mean) * (w[1] as f64 - mean))
            .sum();
        let r1 = cov / var;
        // Also across the cosine/sine halves of a SIMD block (lag 16).
        let cov16: f64 = z
            .windows(17)
            .map(|w| (w[0] as f64 - mean) * (w[16] as f64 - mean))
            .sum();
        let r16 = cov16 / var;
        eprintln!("{path}: lag-1 autocorrelation {r1:.2e}, lag-16 {r16:.2e}");
        assert!(
            r1.abs() < 5.0 / n.sqrt(),
            "{path}: lag-1 autocorrelation {r1}"
        );
        assert!(
            r16.abs() < 5.0 / n.sqrt(),
            "{path}: lag-16 autocorrelation {r16}"
        );
    }
}

#[test]
fn simd_and_lanes_match_scalar_twin_and_consume_the_same_words() {
    /// Every path: short fills, whole blocks with and without a ragged tail, four-block
    /// runs, and what follows them.
    const LENS: [usize; 30] = [
        0, 1, 2, 3, 7, 8, 9, 10, 15, 16, 17, 31, 32, 33, 40, 41, 63, 64, 65, 67, 96, 100, 124, 127,
        128, 129, 160, 255, 257, 1000,
    ];
    fn compare<R: Rng>(name: &str, make: impl Fn(u64) -> R, worst: &mut f32) {
        for seed in 0..20u64 {
            for len in LENS {
                let (mut a, mut b, mut c) = (make(seed), make(seed), make(seed));
                let (mut za, mut zb) = (vec![0.0f32; len], vec![0.0f32; len]);
                let (mut zc, mut zd) = (vec![0.0f32; len], vec![0.0f32; len]);
                let mut d = make(seed);
                fill_normal_simd(&mut a, &mut za);
                // Without tables (the targets without a vector permute).
                fill_normal_polynomial(&mut d, &mut zd);
                reference::fill_normal(&mut b, &mut zb);
                // The SIMD arithmetic a pair at a time (the scalar targets' path).
                fill_normal_lanes(&mut c, &mut zc);
                let next = b.next_u64();
                assert_eq!(
                    a.next_u64(),
                    next,
                    "{name} seed {seed} len {len}: generator states differ"
                );
                assert_eq!(c.next_u64(), next, "{name} seed {seed} len {len}: lanes");
                assert_eq!(
                    d.next_u64(),
                    next,
                    "{name} seed {seed} len {len}: polynomial"
                );
                let pairs = za.iter().zip(&zb).chain(zc.iter().zip(&zb));
                let pairs = pairs.chain(zd.iter().zip(&zb));
                for (x, y) in pairs {
                    // ln, sin, cos within 2 ulps each, √ halves the relative error of
                    // ln: allow 8 ulps of max(1, |z|).
                    let tol = 8.0 * f32::EPSILON * y.abs().max(1.0);
                    *worst = worst.max((x - y).abs() / y.abs().max(1.0));
                    assert!(
                        (x - y).abs() <= tol,
                        "{name} seed {seed} len {len}: {x} vs {y}"
                    );
                }
            }
        }
    }
    let mut worst = 0.0f32;
    compare("default", default_rng, &mut worst);
    compare(
        "pcg64mcg",
        |seed| rand_pcg::Pcg64Mcg::new(0xcafe_f00d_u128 << 64 | seed as u128 | 1),
        &mut worst,
    );
    eprintln!(
        "largest SIMD-vs-scalar difference: {:.2} ulps of max(1,|z|)",
        worst / f32::EPSILON
    );
}

/// The first eight normals from `Pcg64Mcg::new(0xcafef00dd15ea5e5)`, computed
/// independently in f64 from the method in the module docs (PCG-64 MCG words, Box–Muller
/// pairs). f32 rounding of `u₁` and of `2π·2⁻²⁴` moves them by < 10⁻⁶·max(1, |z|).
#[cfg(not(sgld_soft_float))]
const GOLDEN: [f32; 8] = [
    -0.8057221, -0.036572, 1.1719547, -3.1504024, -0.6114843, 0.0194534, 0.5571411, 0.2071901,
];

/// (Where the noise is the ziggurat, `fill_normal` is not Box–Muller's.)
#[cfg(not(sgld_soft_float))]
#[test]
fn golden_values_for_a_fixed_seed() {
    let state = 0xcafe_f00d_d15e_a5e5u128;
    let mut z = [0.0f32; 8];
    reference::fill_normal(&mut rand_pcg::Pcg64Mcg::new(state), &mut z);
    let mut s = [0.0f32; 8];
    fill_normal(&mut rand_pcg::Pcg64Mcg::new(state), &mut s);
    for (i, ((x, y), g)) in z.iter().zip(&s).zip(GOLDEN).enumerate() {
        let tol = 2e-6 * g.abs().max(1.0);
        assert!(
            (x - g).abs() <= tol,
            "state {state:#x}, scalar z[{i}] = {x}, pinned {g}"
        );
        assert!(
            (y - g).abs() <= tol,
            "state {state:#x}, z[{i}] = {y}, pinned {g}"
        );
    }
}
