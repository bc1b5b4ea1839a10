//! The weighted estimator (eq. 11) against a direct compensated f64 computation over
//! 10⁸ updates; the sampling threshold (eq. 10) against a dense eigendecomposition of
//! `V_s`; the Jacobi eigensolver; schedules; thinning; batch sampling.

mod common;

use nalgebra::{DMatrix, SymmetricEigen};
use sgld::estimate::{
    MixingThinner, WeightedMeanF32, WeightedMoments, WeightedMomentsF32, sampling_threshold,
    threshold_scratch_len,
};
use sgld::gradient::sample_batch;
use sgld::linalg::{sym_eigen, sym_max_eigenvalue, tridiagonal_max_eigenvalue};
use sgld::noise::default_rng;
use sgld::schedule::{Constant, Floor, Polynomial, PolynomialF32, Schedule};

/// Neumaier-compensated sum.
#[derive(Default)]
struct Sum {
    s: f64,
    c: f64,
}

impl Sum {
    fn add(&mut self, x: f64) {
        let t = self.s + x;
        if self.s.abs() >= x.abs() {
            self.c += (self.s - t) + x;
        } else {
            self.c += (x - t) + self.s;
        }
        self.s = t;
    }
    fn get(&self) -> f64 {
        self.s + self.c
    }
}

#[test]
fn weighted_estimator_matches_direct_f64_over_1e8_updates() {
    const T: u64 = 100_000_000;
    let schedule = Polynomial::from_range(1e-2, 1e-4, 0.55, T).unwrap();
    // A slowly drifting, oscillating f32 sequence with a large offset: the hard case for
    // naive accumulation (the mean is 1000, the spread 1e-2).
    let f = |t: u64| {
        1000.0f32 + 0.01 * ((t as f64 * 0.001).sin() as f32) + 1e-3 * ((t % 7) as f32 - 3.0)
    };
    let mut store = [0.0f64; WeightedMoments::storage_len(1)];
    let mut est = WeightedMoments::new(&mut store, 1).unwrap();
    let mut plain_store = [0.0f64; WeightedMoments::storage_len(1)];
    let mut plain = WeightedMoments::new(&mut plain_store, 1).unwrap();
    let (mut sw, mut swf, mut sf) = (Sum::default(), Sum::default(), Sum::default());
    for t in 0..T {
        let w = schedule.step_size(t) as f64;
        let x = f(t);
        est.push(w, &[x]).unwrap();
        plain.push(1.0, &[x]).unwrap();
        sw.add(w);
        swf.add(w * x as f64);
        sf.add(x as f64);
    }
    let mean = swf.get() / sw.get();
    let plain_mean = sf.get() / T as f64;
    let (mut sv, mut spv) = (Sum::default(), Sum::default());
    for t in 0..T {
        let w = schedule.step_size(t) as f64;
        let dx = f(t) as f64 - mean;
        sv.add(w * dx * dx);
        let dp = f(t) as f64 - plain_mean;
        spv.add(dp * dp);
    }
    let var = sv.get() / sw.get();
    let plain_var = spv.get() / T as f64;
    eprintln!(
        "weighted mean {:.15} vs {mean:.15}; var {:.6e} vs {var:.6e}; plain mean {:.15} vs {plain_mean:.15}",
        est.mean(0),
        est.variance(0),
        plain.mean(0)
    );
    // Relative 1e-12 on the mean (f32 data carry 1e-7), 1e-6 on the variance (which is
    // 1e-10 of the squared mean, so 1e-6 of it is 1e-16 relative to the data).
    assert!((est.mean(0) - mean).abs() <= 1e-12 * mean.abs());
    assert!((est.variance(0) - var).abs() <= 1e-6 * var);
    assert!((est.total_weight() - sw.get()).abs() <= 1e-12 * sw.get());
    assert!((plain.mean(0) - plain_mean).abs() <= 1e-12 * plain_mean.abs());
    assert!((plain.variance(0) - plain_var).abs() <= 1e-6 * plain_var);
    assert_eq!(est.count(), T);
}

/// The f32 estimator against the f64 one over 10⁷ updates with step-size weights: the
/// hard sequence above (mean 1000, spread 10⁻²) and a posterior-like one (an AR(1) chain
/// around 0.3 with sd 0.1), both pushed to both estimators.
#[test]
fn f32_estimator_tracks_the_f64_one_over_1e7_updates() {
    const T: u64 = 10_000_000;
    let schedule = PolynomialF32::from_range(1e-3, 1e-5, 0.55, T).unwrap();
    let hard = |t: u64| {
        1000.0f32 + 0.01 * ((t as f64 * 0.001).sin() as f32) + 1e-3 * ((t % 7) as f32 - 3.0)
    };
    let mut rng = default_rng(3);
    let mut z = [0.0f32; 2];
    let mut ar = 0.0f32;
    let (mut s64, mut s32) = ([0.0f64; 6], [0.0f32; WeightedMomentsF32::storage_len(2)]);
    let mut m64 = WeightedMoments::new(&mut s64, 2).unwrap();
    let mut m32 = WeightedMomentsF32::new(&mut s32, 2).unwrap();
    // The means-only form, whose means must be the same values.
    let mut sm = [0.0f32; WeightedMeanF32::storage_len(2)];
    let mut mean32 = WeightedMeanF32::new(&mut sm, 2).unwrap();
    for t in 0..T {
        if t % 2 == 0 {
            sgld::noise::fill_normal(&mut rng, &mut z);
        }
        ar = 0.9 * ar + 0.1f32.sqrt() * 0.436 * z[(t % 2) as usize];
        let x = [hard(t), 0.3 + ar];
        let w = schedule.step_size(t);
        m64.push(w as f64, &x).unwrap();
        m32.push(w, &x).unwrap();
        mean32.push(w, &x).unwrap();
    }
    for j in 0..2 {
        assert_eq!(
            mean32.mean(j).to_bits(),
            m32.mean(j).to_bits(),
            "means only, {j}"
        );
    }
    assert_eq!(mean32.total_weight(), m32.total_weight());
    assert_eq!(m32.count(), T);
    let rel = |a: f64, b: f64| (a - b).abs() / b.abs();
    let (w32, w64) = (m32.total_weight() as f64, m64.total_weight());
    eprintln!(
        "f32 vs f64 over 1e7 updates: weight {:.2e}, means {:.2e} {:.2e} (of sd), variances {:.2e} {:.2e} (relative), Kish ESS {:.2e}",
        rel(w32, w64),
        (m32.mean(0) as f64 - m64.mean(0)).abs() / m64.variance(0).sqrt(),
        (m32.mean(1) as f64 - m64.mean(1)).abs() / m64.variance(1).sqrt(),
        rel(m32.variance(0) as f64, m64.variance(0)),
        rel(m32.variance(1) as f64, m64.variance(1)),
        rel(m32.weight_ess() as f64, m64.weight_ess()),
    );
    // Measured: weights 1.5·10⁻⁸ relative; means 2.5·10⁻³ and 1.6·10⁻⁸ of an sd (the
    // first is 1.8·10⁻⁸ of its mean of 1000, f32's resolution there); variances 1.3·10⁻⁸
    // and 1.3·10⁻⁸ relative. The bounds are ten times those or more.
    assert!(rel(w32, w64) <= 1e-6);
    assert!((m32.mean(0) as f64 - m64.mean(0)).abs() <= 1e-7 * 1000.0);
    assert!((m32.mean(1) as f64 - m64.mean(1)).abs() <= 1e-6 * m64.variance(1).sqrt());
    assert!(rel(m32.variance(0) as f64, m64.variance(0)) <= 1e-5);
    assert!(rel(m32.variance(1) as f64, m64.variance(1)) <= 1e-6);
    assert!(rel(m32.weight_ess() as f64, m64.weight_ess()) <= 1e-6);
}

/// The f32 schedule follows the f64 one, and `math::ln` follows libm, over their ranges.
#[test]
fn f32_schedule_and_ln_follow_f64() {
    for (start, end, gamma, steps) in [
        (1e-3, 1e-5, 0.55, 30_000u64),
        (1e-2, 1e-4, 0.55, 1_000_000),
        (0.5, 1e-6, 1.0, 1_000_000_000),
        (1e-4, 1e-6, 0.51, 100),
    ] {
        let f64s = Polynomial::from_range(start, end, gamma, steps).unwrap();
        let f32s =
            PolynomialF32::from_range(start as f32, end as f32, gamma as f32, steps).unwrap();
        let mut t = 0u64;
        while t < steps {
            let (a, b) = (f32s.step_size(t) as f64, f64s.step_size_f64(t));
            assert!(
                (a / b - 1.0).abs() <= 2e-6,
                "{start} {end} {gamma}: t = {t}, {a} vs {b}"
            );
            t = t * 3 + 1;
        }
    }
    assert!(PolynomialF32::from_range(1e-4, 1e-2, 0.55, 100).is_err());
    assert!(PolynomialF32::from_range(1e-2, 1e-4, 0.55, 1).is_err());
    assert!(PolynomialF32::from_range(f32::NAN, 1e-4, 0.55, 100).is_err());
    assert!(PolynomialF32::new(1.0, 0.0, 0.55).is_err());
    assert!(PolynomialF32::new(f32::MAX, 1e-30, 1.0).is_err());
    let flat = PolynomialF32::from_range(1e-3, 1e-3, 0.55, 1).unwrap();
    assert_eq!(flat.step_size(12345), flat.step_size(0));
    // ln: within 2 ulps of the correctly rounded value, over every binade.
    let mut worst = 0.0f64;
    let mut bits = 1u32;
    while bits < f32::INFINITY.to_bits() {
        let x = f32::from_bits(bits);
        let (got, want) = (sgld::math::ln(x) as f64, libm::log(x as f64));
        let ulp = f32::EPSILON as f64 * want.abs().max(f32::MIN_POSITIVE as f64);
        worst = worst.max((got - want).abs() / ulp);
        bits += 4099;
    }
    eprintln!("math::ln: largest error {worst:.2} ulps");
    assert!(worst <= 2.0);
    assert_eq!(sgld::math::ln(0.0), f32::NEG_INFINITY);
    assert_eq!(sgld::math::ln(f32::INFINITY), f32::INFINITY);
    assert!(sgld::math::ln(-1.0).is_nan() && sgld::math::ln(f32::NAN).is_nan());
}

fn dense_threshold(
    scores: &[f32],
    n: usize,
    d: usize,
    eps: f64,
    n_data: usize,
    m: Option<&[f32]>,
) -> f64 {
    let s = DMatrix::from_row_iterator(n, d, scores.iter().map(|&v| v as f64));
    let mean = s.row_mean();
    let c = DMatrix::from_fn(n, d, |i, j| {
        (s[(i, j)] - mean[j]) * m.map_or(1.0, |m| (m[j] as f64).sqrt())
    });
    let vs = c.transpose() * &c / n as f64;
    let lmax = SymmetricEigen::new(vs).eigenvalues.max();
    eps * (n_data * n_data) as f64 / (4.0 * n as f64) * lmax
}

#[test]
fn threshold_matches_dense_eigendecomposition() {
    for (case, &(n, d)) in [
        (10usize, 124usize),
        (10, 3),
        (50, 20),
        (2, 5),
        (7, 7),
        (100, 2),
        (3, 1),
    ]
    .iter()
    .enumerate()
    {
        let g = common::normals(n * d + d, case as u64);
        // Scores with unequal scales per coordinate and a common offset (which cancels).
        let scores: Vec<f32> = (0..n * d)
            .map(|k| 5.0 + g[k] * (1.0 + (k % d) as f32))
            .collect();
        let m: Vec<f32> = g[n * d..].iter().map(|v| v.abs() + 0.1).collect();
        let mut scratch = vec![0.0; threshold_scratch_len(n, d)];
        for pre in [None, Some(&m[..])] {
            let t = sampling_threshold(&scores, n, d, 1e-4, 32_561, pre, &mut scratch).unwrap();
            let want = dense_threshold(&scores, n, d, 1e-4, 32_561, pre);
            assert!(
                (t.alpha - want).abs() <= 1e-9 * want,
                "n {n} d {d}: {} vs {want}",
                t.alpha
            );
            let eps_star = t.step_size_for(0.1, n, 32_561);
            let at =
                sampling_threshold(&scores, n, d, eps_star, 32_561, pre, &mut scratch).unwrap();
            assert!(
                (at.alpha - 0.1).abs() < 1e-9,
                "step size for the target gives {}",
                at.alpha
            );
        }
    }
}

#[test]
fn jacobi_matches_nalgebra_including_ill_conditioned() {
    for (seed, n) in [(1u64, 1usize), (2, 2), (3, 5), (4, 16), (5, 30)] {
        for cond in [1.0f64, 1e6, 1e12] {
            let g = common::normals(n * n, seed);
            let q = DMatrix::from_iterator(n, n, g.iter().map(|&v| v as f64))
                .qr()
                .q();
            let lam: Vec<f64> = (0..n)
                .map(|i| cond.powf(-(i as f64) / (n.max(2) - 1) as f64))
                .collect();
            let a = &q
                * DMatrix::from_diagonal(&nalgebra::DVector::from_vec(lam.clone()))
                * q.transpose();
            let a = (&a + a.transpose()) * 0.5;
            let mut buf: Vec<f64> = (0..n * n).map(|k| a[(k / n, k % n)]).collect();
            let mut vecs = vec![0.0; n * n];
            sym_eigen(&mut buf, n, Some(&mut vecs)).unwrap();
            let mut got: Vec<f64> = (0..n).map(|i| buf[i * n + i]).collect();
            let mut want: Vec<f64> = SymmetricEigen::new(a.clone())
                .eigenvalues
                .iter()
                .copied()
                .collect();
            got.sort_by(f64::total_cmp);
            want.sort_by(f64::total_cmp);
            for (x, y) in got.iter().zip(&want) {
                assert!(
                    (x - y).abs() <= 1e-12 * lam[0],
                    "n {n} cond {cond:e}: {x} vs {y}"
                );
            }
            // A v = λ v and VᵀV = I.
            let v = DMatrix::from_row_slice(n, n, &vecs);
            let av = &a * &v;
            for i in 0..n {
                let lv = v.column(i) * buf[i * n + i];
                assert!(
                    (av.column(i) - lv).norm() <= 1e-11,
                    "residual for eigenpair {i}"
                );
            }
            assert!((v.transpose() * &v - DMatrix::identity(n, n)).norm() <= 1e-12 * n as f64);
        }
    }
}

/// A symmetric matrix `Q diag(lam) Qᵀ` with a random orthogonal `Q`, row-major.
fn with_spectrum(lam: &[f64], seed: u64) -> (DMatrix<f64>, Vec<f64>) {
    let n = lam.len();
    let g = common::normals(n * n, seed);
    let q = DMatrix::from_iterator(n, n, g.iter().map(|&v| v as f64))
        .qr()
        .q();
    let a = &q * DMatrix::from_diagonal(&nalgebra::DVector::from_vec(lam.to_vec())) * q.transpose();
    let a = (&a + a.transpose()) * 0.5;
    let buf = (0..n * n).map(|k| a[(k / n, k % n)]).collect();
    (a, buf)
}

#[test]
fn largest_eigenvalue_matches_nalgebra_on_hard_spectra() {
    for (seed, n) in [
        (1u64, 1usize),
        (2, 2),
        (3, 3),
        (4, 7),
        (5, 16),
        (6, 51),
        (7, 90),
    ] {
        let spectra: Vec<Vec<f64>> = vec![
            // Spread over 12 decades, the top alone.
            (0..n)
                .map(|i| 1e-12f64.powf(i as f64 / (n.max(2) - 1) as f64))
                .collect(),
            // A cluster at the top: the largest three within 1e-10 of each other.
            (0..n)
                .map(|i| {
                    if i < 3 {
                        1.0 + 1e-10 * i as f64
                    } else {
                        0.5 / (i as f64)
                    }
                })
                .collect(),
            // Every eigenvalue equal (a multiple of the identity in another basis).
            vec![2.5; n],
            // Negative definite, and indefinite with the largest magnitude negative.
            (0..n).map(|i| -1.0 - i as f64).collect(),
            (0..n)
                .map(|i| if i == 0 { -100.0 } else { i as f64 / n as f64 })
                .collect(),
            // Rank one, the rest exactly zero.
            (0..n).map(|i| if i == 0 { 3.0 } else { 0.0 }).collect(),
        ];
        for (k, lam) in spectra.iter().enumerate() {
            for scale in [1.0, 1e150, 1e-150] {
                let lam: Vec<f64> = lam.iter().map(|l| l * scale).collect();
                let (a, mut buf) = with_spectrum(&lam, seed + 100 * k as u64);
                let want = SymmetricEigen::new(a.clone())
                    .eigenvalues
                    .iter()
                    .copied()
                    .fold(f64::NEG_INFINITY, f64::max);
                let norm = lam.iter().fold(0.0f64, |m, l| m.max(l.abs()));
                let got = sym_max_eigenvalue(&mut buf, n).unwrap();
                assert!(
                    (got - want).abs() <= 1e-13 * norm * n as f64,
                    "n {n} spectrum {k} scale {scale:e}: {got} vs {want}"
                );
                let mut jacobi: Vec<f64> = (0..n * n).map(|k| a[(k / n, k % n)]).collect();
                sym_eigen(&mut jacobi, n, None).unwrap();
                let top = (0..n)
                    .map(|i| jacobi[i * n + i])
                    .fold(f64::NEG_INFINITY, f64::max);
                assert!((got - top).abs() <= 1e-13 * norm * n as f64);
            }
        }
    }
    // Diagonal and zero matrices, which the reduction leaves as they are.
    let mut d = [3.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 7.0];
    assert_eq!(sym_max_eigenvalue(&mut d, 3).unwrap(), 7.0);
    assert_eq!(sym_max_eigenvalue(&mut [0.0; 16], 4).unwrap(), 0.0);
    assert_eq!(sym_max_eigenvalue(&mut [], 0).unwrap(), f64::NEG_INFINITY);
    assert!(sym_max_eigenvalue(&mut [1.0, f64::NAN, f64::NAN, 1.0], 2).is_err());
    assert!(sym_max_eigenvalue(&mut [1.0; 3], 2).is_err());
    // Entries near the largest finite f64: an error or the right answer, never a panic.
    let mut big = [f64::MAX, f64::MAX, f64::MAX, f64::MAX];
    if let Ok(top) = sym_max_eigenvalue(&mut big, 2) {
        assert!(top.is_finite());
    }
}

#[test]
fn tridiagonal_largest_eigenvalue_matches_nalgebra() {
    for n in [1usize, 2, 5, 40] {
        let g = common::normals(2 * n, n as u64);
        let diag: Vec<f64> = g[..n].iter().map(|&v| v as f64).collect();
        let off: Vec<f64> = g[n..2 * n - 1].iter().map(|&v| v as f64).collect();
        let mut t = DMatrix::from_diagonal(&nalgebra::DVector::from_vec(diag.clone()));
        for (i, &e) in off.iter().enumerate() {
            t[(i, i + 1)] = e;
            t[(i + 1, i)] = e;
        }
        let want = SymmetricEigen::new(t).eigenvalues.max();
        let got = tridiagonal_max_eigenvalue(&diag, &off).unwrap();
        assert!(
            (got - want).abs() <= 1e-13 * want.abs().max(1.0),
            "n {n}: {got} vs {want}"
        );
    }
    // A zero off-diagonal splits the matrix; the larger block wins.
    assert_eq!(
        tridiagonal_max_eigenvalue(&[1.0, 5.0], &[0.0]).unwrap(),
        5.0
    );
    assert!(tridiagonal_max_eigenvalue(&[1.0, 2.0], &[]).is_err());
    assert!(tridiagonal_max_eigenvalue(&[], &[1.0]).is_err());
    assert!(tridiagonal_max_eigenvalue(&[f64::INFINITY], &[]).is_err());
}

#[test]
fn schedules() {
    let s = Polynomial::from_range(0.01, 0.0001, 0.55, 1_000_000).unwrap();
    assert!((s.step_size_f64(0) - 0.01).abs() < 1e-15);
    assert!((s.step_size_f64(999_999) - 0.0001).abs() < 1e-15);
    assert!((1..1000).all(|t| s.step_size(t * 1000) < s.step_size((t - 1) * 1000)));
    let (a, b, g) = s.params();
    assert!((a * (b + 5.0f64).powf(-g) - s.step_size_f64(5)).abs() < 1e-15);
    let f = Floor::new(s, 1e-3).unwrap();
    assert_eq!(f.step_size(0), s.step_size(0));
    assert_eq!(f.step_size(999_999), 1e-3);
    assert_eq!(Constant::new(0.5).unwrap().step_size(123), 0.5);
    let flat = Polynomial::from_range(1e-3, 1e-3, 0.55, 1).unwrap();
    assert_eq!(flat.step_size(10_000), 1e-3);
    assert!(
        Polynomial::from_range(1e-4, 1e-2, 0.55, 100).is_err(),
        "increasing range"
    );
    assert!(
        Polynomial::from_range(1e-2, 1e-4, 0.55, 1).is_err(),
        "one step cannot decrease"
    );
    assert!(
        Polynomial::from_range(1e-2, 1e-4, 0.0, 100).is_err(),
        "gamma 0"
    );
    assert!(Polynomial::from_range(f64::NAN, 1e-4, 0.55, 100).is_err());
    assert!(Polynomial::new(1.0, 0.0, 0.55).is_err());
    assert!(
        Polynomial::new(1e300, 1.0, 0.0).is_err(),
        "eps_0 overflows f32"
    );
    assert!(Floor::new(Constant::new(1.0).unwrap(), 0.0).is_err());
}

#[test]
fn mixing_thinner_keeps_samples_d0_apart() {
    let mut thin = MixingThinner::new(1.0).unwrap();
    let mut kept = 0;
    for t in 0..10_000 {
        if thin.push(0.01 + (t % 3) as f64 * 0.01) {
            kept += 1;
        }
    }
    // Σε = 10_000·0.02 = 200 (to rounding): one sample per unit of Σε, give or take one.
    assert!((195..=200).contains(&kept), "kept {kept}");
    assert!(MixingThinner::new(0.0).is_err());
}

/// Pearson's χ² of 10⁶ indices drawn as 1,000 batches of 1,000 from `0..n_data` and
/// counted in `C` cells by `i mod C`, against equal expected counts.
fn batch_chi_square<const C: usize>(seed: u64, n_data: usize) -> f64 {
    let mut rng = default_rng(seed);
    let mut batch = [0usize; 1000];
    let mut counts = [0f64; C];
    for _ in 0..1000 {
        sample_batch(&mut rng, n_data, &mut batch).unwrap();
        for &i in &batch {
            counts[i % C] += 1.0;
        }
    }
    let e = 1e6 / C as f64;
    counts.iter().map(|c| (c - e) * (c - e) / e).sum()
}

#[test]
fn sample_batch_is_uniform() {
    // χ² test of 10⁶ indices over 7 cells (6 degrees of freedom): the 0.999 quantile is 22.46.
    let chi2 = batch_chi_square::<7>(9, 7);
    assert!(chi2 < 22.46, "chi-square {chi2}");
}

/// `sample_batch` for `n < 2³²` as its docs define it, one index at a time: per call of
/// up to 128 indices, ⌈len/16⌉·16 little-endian 32-bit halves from one `fill_bytes` (a
/// batch shorter than 16: halves of `next_u64` words); index `j` from half `j`, a
/// rejected product redrawn from `next_u32`.
fn sample_batch_by_definition(rng: &mut impl rand_core::Rng, n: u32, batch: &mut [usize]) {
    let threshold = ((1u64 << 32) % n as u64) as u32;
    if batch.len() < 16 {
        // Short batches: halves of `next_u64` words, low first.
        let mut word = 0u64;
        for (j, slot) in batch.iter_mut().enumerate() {
            if j % 2 == 0 {
                word = rng.next_u64();
            }
            let h = if j % 2 == 0 {
                word as u32
            } else {
                (word >> 32) as u32
            };
            let mut m = h as u64 * n as u64;
            while (m as u32) < threshold {
                m = rng.next_u32() as u64 * n as u64;
            }
            *slot = (m >> 32) as usize;
        }
        return;
    }
    for chunk in batch.chunks_mut(128) {
        let mut bytes = vec![0u8; 4 * chunk.len().next_multiple_of(16)];
        rng.fill_bytes(&mut bytes);
        for (slot, h) in chunk.iter_mut().zip(bytes.chunks_exact(4)) {
            let mut m = u32::from_le_bytes(h.try_into().unwrap()) as u64 * n as u64;
            while (m as u32) < threshold {
                m = rng.next_u32() as u64 * n as u64;
            }
            *slot = (m >> 32) as usize;
        }
    }
}

#[test]
fn sample_batch_follows_its_definition_rejections_included() {
    use rand_core::Rng;
    // 2³¹ + 1 rejects almost half the products, 3·2³⁰ a quarter; the others rarely or never.
    let ns = [1u32, 7, 5000, 32_561, (1 << 31) + 1, 3 << 30, u32::MAX];
    let lens = [1usize, 2, 10, 15, 16, 17, 100, 127, 128, 129, 300];
    for n in ns {
        for len in lens {
            for seed in 0..4 {
                let (mut a, mut b) = (default_rng(seed), default_rng(seed));
                let (mut x, mut y) = (vec![0usize; len], vec![0usize; len]);
                sample_batch(&mut a, n as usize, &mut x).unwrap();
                sample_batch_by_definition(&mut b, n, &mut y);
                assert_eq!(x, y, "n {n} len {len} seed {seed}");
                assert_eq!(
                    a.next_u64(),
                    b.next_u64(),
                    "n {n} len {len}: generator states"
                );
                assert!(x.iter().all(|&i| i < n as usize));
            }
        }
    }
}

#[test]
fn sample_batch_rejection_makes_it_uniform() {
    // n = 3·2³⁰: without rejection, ⌊3h/4⌋ would take residue 0 mod 3 half the time.
    // χ² of 10⁶ indices over the three residues (2 degrees of freedom): the 0.999
    // quantile is 13.82.
    let chi2 = batch_chi_square::<3>(11, 3 << 30);
    assert!(chi2 < 13.82, "chi-square {chi2}");
}

#[cfg(target_pointer_width = "64")]
#[test]
fn sample_batch_beyond_u32_takes_a_word_an_index() {
    let n = (1usize << 40) + 3;
    let mut rng = default_rng(5);
    let mut batch = [0usize; 300];
    sample_batch(&mut rng, n, &mut batch).unwrap();
    assert!(batch.iter().all(|&i| i < n));
    // Indices spread over the whole range, not just its low 2³² values.
    assert!(batch.iter().filter(|&&i| i > n / 2).count() > 100);
}
