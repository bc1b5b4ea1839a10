//! Model gradients against finite differences of their log densities, dense against
//! sparse logistic regression, and the stable scalar functions at extreme arguments.

use sgld::gradient::{GradientEstimator, MiniBatch};
use sgld::math::{exp, log_sigmoid, sigmoid, softplus, tanh};
use sgld::models::{
    BitRows, Flat, Gaussian, GaussianMean, Laplace, LinearRegression, LogisticBits, LogisticDense,
    LogisticSparse, Mlp, Model, Noise, Prior, SparseRows, TiedMixture,
};
use sgld::noise::{default_rng, fill_normal};

fn normals(n: usize, seed: u64) -> Vec<f32> {
    let mut v = vec![0.0; n];
    fill_normal(&mut default_rng(seed), &mut v);
    v
}

/// Rounds to a multiple of 2⁻¹⁰ so that θ ± h (h a power of two) is exact in f32.
fn grid(v: &[f32]) -> Vec<f32> {
    v.iter()
        .map(|x| {
            // At least 1/16 from 0, beyond the differences' reach of a Laplace kink.
            let x = if x.abs() < 0.0625 {
                0.0625f32.copysign(*x)
            } else {
                *x
            };
            (x * 1024.0).round() / 1024.0
        })
        .collect()
}

/// Central differences with one Richardson step: error O(h⁴).
fn fd_grad(f: impl Fn(&[f32]) -> f64, theta: &[f32]) -> Vec<f64> {
    let h = 1.0 / 64.0;
    (0..theta.len())
        .map(|j| {
            let d = |h: f32| {
                let (mut p, mut m) = (theta.to_vec(), theta.to_vec());
                p[j] += h;
                m[j] -= h;
                (f(&p) - f(&m)) / (2.0 * h as f64)
            };
            (4.0 * d(h / 2.0) - d(h)) / 3.0
        })
        .collect()
}

/// Checks the prior and likelihood gradients of `model` at `theta` on `batch`.
fn check_gradients<M: Model>(model: &M, theta: &[f32], batch: &[usize], rel: f64) {
    let d = model.dim();
    let mut g = vec![0.0f32; d];
    model.add_log_lik_grad(theta, batch, &mut g);
    let fd = fd_grad(|t| model.log_lik(t, batch), theta);
    for j in 0..d {
        let tol = rel * (1.0 + fd[j].abs());
        assert!(
            (g[j] as f64 - fd[j]).abs() <= tol,
            "likelihood grad[{j}] = {} vs finite differences {}",
            g[j],
            fd[j]
        );
    }
    let mut g = vec![0.0f32; d];
    model.add_log_prior_grad(theta, &mut g);
    let fd = fd_grad(|t| model.log_prior(t), theta);
    for j in 0..d {
        let tol = rel * (1.0 + fd[j].abs());
        assert!(
            (g[j] as f64 - fd[j]).abs() <= tol,
            "prior grad[{j}] = {} vs finite differences {}",
            g[j],
            fd[j]
        );
    }
}

#[test]
fn logistic_dense_and_sparse_gradients() {
    // 40 rows, 9 features (the last is the bias), binary features.
    let (n, d) = (40usize, 9usize);
    let u = normals(n * d + n, 1);
    let mut x = vec![0.0f32; n * d];
    let mut offsets = vec![0usize];
    let mut idx = Vec::new();
    for i in 0..n {
        for j in 0..d {
            if j == d - 1 || u[i * d + j] > 0.3 {
                x[i * d + j] = 1.0;
                idx.push(j as u32);
            }
        }
        offsets.push(idx.len());
    }
    let y: Vec<f32> = (0..n)
        .map(|i| if u[n * d + i] > 0.0 { 1.0 } else { -1.0 })
        .collect();
    let theta = grid(&normals(d, 2));
    let batch: Vec<usize> = (0..n).step_by(3).collect();
    let dense = LogisticDense::new(&x, &y, d, Gaussian::new(2.0).unwrap()).unwrap();
    check_gradients(&dense, &theta, &batch, 1e-3);
    let sparse = LogisticSparse::new(
        SparseRows::new(&offsets, &idx, d).unwrap(),
        &y,
        Gaussian::new(2.0).unwrap(),
    )
    .unwrap();
    check_gradients(&sparse, &theta, &batch, 1e-3);
    let (mut gd, mut gs) = (vec![0.0f32; d], vec![0.0f32; d]);
    dense.add_log_lik_grad(&theta, &batch, &mut gd);
    sparse.add_log_lik_grad(&theta, &batch, &mut gs);
    for j in 0..d {
        assert!(
            (gd[j] - gs[j]).abs() <= 1e-5 * (1.0 + gd[j].abs()),
            "dense {} vs sparse {}",
            gd[j],
            gs[j]
        );
    }
    assert!((dense.log_lik(&theta, &batch) - sparse.log_lik(&theta, &batch)).abs() < 1e-4);

    // The same rows with u8 and u16 indices: the same gradient and likelihood, bit for bit
    // (the batch repeats rows and runs past one chunk of sixteen).
    let idx8: Vec<u8> = idx.iter().map(|&j| j as u8).collect();
    let idx16: Vec<u16> = idx.iter().map(|&j| j as u16).collect();
    let prior = Gaussian::new(2.0).unwrap();
    let narrow8 = LogisticSparse::new(SparseRows::narrow(&offsets, &idx8, d).unwrap(), &y, prior);
    let narrow16 = LogisticSparse::new(SparseRows::narrow(&offsets, &idx16, d).unwrap(), &y, prior);
    let (narrow8, narrow16) = (narrow8.unwrap(), narrow16.unwrap());
    let long: Vec<usize> = (0..n).chain((0..n).rev()).step_by(2).collect();
    for b in [&batch, &long] {
        let (mut g32, mut g8, mut g16) = (vec![0.0f32; d], vec![0.0f32; d], vec![0.0f32; d]);
        sparse.add_log_lik_grad(&theta, b, &mut g32);
        narrow8.add_log_lik_grad(&theta, b, &mut g8);
        narrow16.add_log_lik_grad(&theta, b, &mut g16);
        assert_eq!(g8, g32);
        assert_eq!(g16, g32);
        assert_eq!(narrow8.log_lik(&theta, b), sparse.log_lik(&theta, b));
    }
    // An index past the dimension is refused whatever its width.
    assert!(SparseRows::narrow(&[0, 1], &[9u8], d).is_err());
    assert!(SparseRows::narrow(&[0, 1], &[9u16], d).is_err());
}

/// `n` random binary rows of `d` features as index lists (each feature set with
/// probability ~0.16, the last one, a bias, always) and labels ±1: `(offsets, indices,
/// labels)`.
fn binary_rows(n: usize, d: usize, seed: u64) -> (Vec<usize>, Vec<u32>, Vec<f32>) {
    let u = normals(n * d + n, seed);
    let (mut offsets, mut idx) = (vec![0usize], Vec::new());
    for i in 0..n {
        idx.extend(
            (0..d)
                .filter(|&j| j == d - 1 || u[i * d + j] > 1.0)
                .map(|j| j as u32),
        );
        offsets.push(idx.len());
    }
    let y = (0..n)
        .map(|i| if u[n * d + i] > 0.0 { 1.0 } else { -1.0 })
        .collect();
    (offsets, idx, y)
}

/// The rows as bitmaps, for [`BitRows::new`].
fn bitmaps(rows: &SparseRows<'_>) -> Vec<u16> {
    let mut words = vec![0u16; rows.len() * BitRows::words_per_row(rows.dim())];
    BitRows::fill_from_sparse(rows, &mut words).unwrap();
    words
}

#[test]
fn logistic_bits_match_index_rows() {
    // Feature counts on every path of the bitmap kernels: one word, a whole number of
    // words, a9a's 124 (its last vector ends inside), and rows wider than eight words.
    for (d, seed) in [(9usize, 3u64), (16, 4), (124, 5), (130, 6), (300, 7)] {
        let n = 50;
        let (offsets, idx, y) = binary_rows(n, d, seed);
        let rows = SparseRows::new(&offsets, &idx, d).unwrap();
        let words = bitmaps(&rows);
        let prior = Laplace::new(1.0).unwrap();
        let sparse = LogisticSparse::new(rows, &y, prior).unwrap();
        let bits = LogisticBits::new(BitRows::new(&words, d).unwrap(), &y, prior).unwrap();
        assert_eq!((bits.len(), bits.dim()), (n, d));
        let theta = grid(&normals(d, seed + 100));
        if d <= 16 {
            check_gradients(&bits, &theta, &[0, 3, 7, 7, 20], 1e-3);
        }
        // A batch longer than one chunk of sixteen, with repeats.
        let batch: Vec<usize> = (0..n).chain((0..n).rev()).step_by(3).collect();
        let (mut gb, mut gs) = (vec![0.0f32; d], vec![0.0f32; d]);
        bits.add_log_lik_grad(&theta, &batch, &mut gb);
        sparse.add_log_lik_grad(&theta, &batch, &mut gs);
        // The margins are summed in another order (a few ulps of Σ|θⱼ|), so each
        // weight σ(·) moves by as much; the scatter-adds then sum the same weights.
        let scale = batch.len() as f32 * theta.iter().map(|t| t.abs()).sum::<f32>();
        for j in 0..d {
            assert!(
                (gb[j] - gs[j]).abs() <= 1e-6 * scale,
                "d {d} j {j}: bits {} vs index rows {}",
                gb[j],
                gs[j]
            );
        }
        let (lb, ls) = (bits.log_lik(&theta, &batch), sparse.log_lik(&theta, &batch));
        assert!(
            (lb - ls).abs() <= 1e-6 * scale as f64,
            "d {d}: {lb} vs {ls}"
        );
        for i in [0, n / 2, n - 1] {
            let (mb, ms) = (bits.margin(&theta, i), sparse.margin(&theta, i));
            assert!(
                (mb - ms).abs() <= 1e-6 * scale,
                "d {d} row {i}: {mb} vs {ms}"
            );
        }
        // The fused estimate (prior first, batch terms scaled as they are added) against
        // the four passes it replaces: the same terms in the same order, each rounded a
        // few more times. With |σ| ≤ 1 and |∇log p(θ)| ≤ 1 every element is a sum of at
        // most m + 1 terms of size ≤ max(1, s), so γ bounds the difference.
        let s = n as f32 / batch.len() as f32;
        let mut fused = vec![f32::NAN; d];
        bits.scaled_grad(&theta, &batch, s, &mut fused);
        let mut parts = vec![0.0f32; d];
        bits.add_log_lik_grad(&theta, &batch, &mut parts);
        parts.iter_mut().for_each(|g| *g *= s);
        bits.add_log_prior_grad(&theta, &mut parts);
        let m = batch.len() as f32;
        let tol = 2.0 * (m + 3.0) * f32::EPSILON / 2.0 * (1.0 + s * m);
        for j in 0..d {
            assert!(
                (fused[j] - parts[j]).abs() <= tol,
                "d {d} j {j}: fused {} vs parts {}",
                fused[j],
                parts[j]
            );
        }
        // The overlapped estimate is the estimate, bit for bit, and calls its side work
        // once: for one chunk, several, and none (and through `MiniBatch` of `&M` as a
        // `dyn` estimator).
        for b in [&batch[..], &batch[..10], &batch[..16], &batch[..17], &[]] {
            let mut plain = vec![f32::NAN; d];
            bits.scaled_grad(&theta, b, s, &mut plain);
            let mut calls = 0;
            let mut over = vec![f32::NAN; d];
            bits.scaled_grad_overlapped(&theta, b, s, &mut over, &mut || calls += 1);
            let same = plain
                .iter()
                .zip(&over)
                .all(|(p, o)| p.to_bits() == o.to_bits());
            assert!(
                same && calls == 1,
                "d {d}, batch of {}: {calls} calls",
                b.len()
            );
            if !b.is_empty() {
                let est: &dyn GradientEstimator = &MiniBatch::new(&bits);
                let mut direct = vec![f32::NAN; d];
                est.estimate(&theta, b, &mut direct);
                est.estimate_overlapped(&theta, b, &mut over, &mut || calls += 1);
                assert_eq!(
                    (direct, calls),
                    (over.clone(), 2),
                    "d {d}, batch of {}",
                    b.len()
                );
            }
        }
        // An index past the end adds nothing (the estimators refuse such batches first).
        let mut g = gb.clone();
        bits.add_log_lik_grad(&theta, &[n, usize::MAX], &mut g);
        assert_eq!(g, gb);
        assert_eq!(bits.margin(&theta, n), 0.0);
    }
}

/// `prefetch` is a hint: the estimates after it are the same bits, and any index (past
/// the end, `usize::MAX`) is taken without a panic.
#[test]
fn gradient_and_value_together_equal_the_two_calls_bit_for_bit() {
    // The fused passes of the bitmap and dense rows, the default of the others; batches that end
    // inside a chunk of sixteen, an index past the end (skipped by both).
    let (n, d) = (53, 124);
    let (offsets, idx, y) = binary_rows(n, d, 13);
    let rows = SparseRows::new(&offsets, &idx, d).unwrap();
    let words = bitmaps(&rows);
    let prior = Laplace::new(1.0).unwrap();
    let sparse = LogisticSparse::new(rows, &y, prior).unwrap();
    let bits = LogisticBits::new(BitRows::new(&words, d).unwrap(), &y, prior).unwrap();
    let theta = grid(&normals(d, 14));
    let all: Vec<usize> = (0..n).collect();
    let x = normals(n * d, 15);
    let dense = LogisticDense::new(&x, &y, d, prior).unwrap();
    let models: [&dyn Model; 3] = [&bits, &sparse, &dense];
    for (k, m) in models.into_iter().enumerate() {
        for batch in [&all[..], &all[..17], &[5, 5, 52, n][..], &[][..]] {
            let (mut g1, mut g2) = (vec![0.5f32; d], vec![0.5f32; d]);
            m.add_log_lik_grad(&theta, batch, &mut g1);
            let l1 = m.log_lik(&theta, batch);
            let l2 = m.add_log_lik_grad_and_value(&theta, batch, &mut g2);
            assert_eq!(l1.to_bits(), l2.to_bits(), "model {k}, batch {batch:?}");
            assert!(
                g1.iter().zip(&g2).all(|(a, b)| a.to_bits() == b.to_bits()),
                "model {k}, batch {batch:?}"
            );
        }
    }
}

#[test]
fn prefetch_changes_nothing_and_takes_any_index() {
    let (n, d) = (40, 124);
    let (offsets, idx, y) = binary_rows(n, d, 11);
    let rows = SparseRows::new(&offsets, &idx, d).unwrap();
    let words = bitmaps(&rows);
    let mut dense = vec![0.0f32; n * d];
    for i in 0..n {
        for &j in rows.row(i) {
            dense[i * d + j as usize] = 1.0;
        }
    }
    let prior = Laplace::new(1.0).unwrap();
    let sparse = LogisticSparse::new(rows, &y, prior).unwrap();
    let bits = LogisticBits::new(BitRows::new(&words, d).unwrap(), &y, prior).unwrap();
    let dense = LogisticDense::new(&dense, &y, d, prior).unwrap();
    let theta = grid(&normals(d, 12));
    let batch = [3usize, 39, 0, 3, 17];
    let odd = [n, usize::MAX, usize::MAX - 1, 0];
    let models: [&dyn Model; 3] = [&sparse, &bits, &dense];
    for (k, m) in models.into_iter().enumerate() {
        let est = MiniBatch::new(m);
        let mut before = vec![f32::NAN; d];
        est.estimate(&theta, &batch, &mut before);
        m.prefetch(&odd);
        est.prefetch(&odd);
        est.prefetch(&batch);
        let mut after = vec![f32::NAN; d];
        est.estimate(&theta, &batch, &mut after);
        assert!(
            before
                .iter()
                .zip(&after)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "model {k}"
        );
    }
}

#[test]
fn laplace_prior_gradient_is_minus_sign_over_scale() {
    let x = [1.0f32, 1.0];
    let y = [1.0f32];
    let m = LogisticDense::new(&x, &y, 2, Laplace::new(0.5).unwrap()).unwrap();
    let mut g = [0.0f32; 2];
    m.add_log_prior_grad(&[0.3, -0.2], &mut g);
    assert_eq!(g, [-2.0, 2.0]);
    let mut g = [0.0f32; 2];
    m.add_log_prior_grad(&[0.0, -0.0], &mut g);
    assert_eq!(g, [0.0, 0.0], "subgradient 0 at 0");
    check_gradients(&m, &[0.25, -0.75], &[0], 1e-4);
}

#[test]
fn priors_write_what_they_add() {
    // write_grad overwrites (whatever grad held) with what add_grad adds to zeros, on
    // lengths that leave a vector tail, and with zeros and a NaN in θ.
    let theta: Vec<f32> = (0..37)
        .map(|j| match j {
            5 => 0.0,
            6 => -0.0,
            7 => f32::NAN,
            _ => (j as f32 - 18.0) / 7.0,
        })
        .collect();
    fn check<P: Prior>(p: P, theta: &[f32]) {
        let mut added = vec![0.0f32; theta.len()];
        p.add_grad(theta, &mut added);
        let mut written = vec![f32::NAN; theta.len()];
        p.write_grad(theta, &mut written);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&written), bits(&added));
    }
    check(Laplace::new(0.5).unwrap(), &theta);
    check(Gaussian::new(2.0).unwrap(), &theta);
    check(Flat, &theta);
}

#[test]
fn mixture_gradients() {
    let x = normals(100, 3);
    let m = TiedMixture::paper(&x).unwrap();
    for theta in [[0.0f32, 1.0], [1.0, -1.0], [-2.5, 3.25], [0.5, 0.0]] {
        check_gradients(&m, &theta, &(0..100).collect::<Vec<_>>(), 1e-4);
        check_gradients(&m, &theta, &[7], 1e-4);
    }
}

#[test]
fn linear_regression_gradients() {
    let (n, d) = (50usize, 4usize);
    let x = normals(n * d, 4);
    let y = normals(n, 5);
    let m = LinearRegression::new(&x, &y, d, 10.0, 2.0, 1.5).unwrap();
    assert_eq!(m.dim(), d + 1);
    for gamma in [-1.0f32, 0.0, 0.5] {
        let mut theta = grid(&normals(d, 6));
        theta.push(gamma);
        check_gradients(&m, &theta, &(0..n).collect::<Vec<_>>(), 1e-3);
    }
}

#[test]
fn gaussian_mean_gradients() {
    let d = 3;
    let x = normals(20 * d, 7);
    let lik = [2.0f32, 0.5, 0.0, 0.5, 1.0, 0.25, 0.0, 0.25, 1.5];
    let prior = [1.0f32, -0.3, 0.1, -0.3, 0.5, 0.0, 0.1, 0.0, 0.8];
    let mu0 = [0.5f32, -1.0, 2.0];
    let m = GaussianMean::new(&x, d, &lik, &mu0, &prior).unwrap();
    check_gradients(&m, &grid(&normals(d, 8)), &[0, 3, 3, 19], 1e-4);
}

/// The branch-free `exp` over its whole range against f64: within one ulp of the
/// exact value where that is a normal float, within one subnormal step below, and the
/// right limits and special values.
#[test]
fn exp_is_within_one_ulp_everywhere() {
    let n = 2_000_000;
    for i in 0..=n {
        // Every grid point across [−105, 90], plus the neighbours of the limits.
        let x = (-105.0 + 195.0 * i as f64 / n as f64) as f32;
        let (got, want) = (exp(x) as f64, (x as f64).exp());
        if want > f32::MAX as f64 {
            assert_eq!(got, f64::INFINITY, "exp({x})");
        } else if want < f32::MIN_POSITIVE as f64 {
            // Subnormal (or zero) results: one step of 2⁻¹⁴⁹ at most.
            assert!(
                (got - want).abs() <= 2f64.powi(-149),
                "exp({x}) = {got}, want {want}"
            );
        } else {
            let ulp = 2f64.powi(want.log2().floor() as i32 - 23);
            assert!((got - want).abs() <= ulp, "exp({x}) = {got}, want {want}");
        }
    }
    assert_eq!(exp(0.0), 1.0);
    assert_eq!(exp(-0.0), 1.0);
    assert_eq!(exp(f32::INFINITY), f32::INFINITY);
    assert_eq!(exp(f32::MAX), f32::INFINITY);
    assert_eq!(exp(f32::NEG_INFINITY), 0.0);
    assert_eq!(exp(-f32::MAX), 0.0);
    assert!(exp(f32::NAN).is_nan());
}

/// `sigmoid` (whose `e^{−z}` is fused where the target has FMA) over the range where
/// it moves, against f64: within 4 ulps where σ(z) is a normal float; below that (z <
/// −87.3), anything from 0 to the smallest normal, as documented.
/// The branch-free softplus (the logistic models' log-likelihood) against f64 over a
/// dense sweep: within 4 ulps relative wherever the result is a normal float.
#[test]
fn softplus_is_within_four_ulps_on_a_dense_sweep() {
    let mut worst = 0.0f64;
    for k in 0..200_000 {
        let z = -110.0 + k as f32 * 0.0011;
        let zf = z as f64;
        let want = zf.max(0.0) + (-zf.abs()).exp().ln_1p();
        if want < f32::MIN_POSITIVE as f64 {
            assert!(softplus(z) < 1e-37, "softplus({z})");
            continue;
        }
        let rel = (softplus(z) as f64 - want).abs() / (want * f32::EPSILON as f64);
        worst = worst.max(rel);
        assert!(rel <= 4.0, "softplus({z}) = {}, f64 {want}", softplus(z));
    }
    eprintln!("softplus: worst {worst:.2} ulps");
}

#[test]
fn sigmoid_is_within_four_ulps_everywhere() {
    let n = 2_000_000;
    for i in 0..=n {
        let z = (-105.0 + 210.0 * i as f64 / n as f64) as f32;
        let zf = z as f64;
        let want = if zf >= 0.0 {
            1.0 / (1.0 + (-zf).exp())
        } else {
            zf.exp() / (1.0 + zf.exp())
        };
        let got = sigmoid(z) as f64;
        if want < f32::MIN_POSITIVE as f64 {
            assert!(
                (0.0..=f32::MIN_POSITIVE as f64).contains(&got),
                "sigmoid({z}) = {got}"
            );
        } else {
            let ulp = 2f64.powi(want.log2().floor() as i32 - 23);
            assert!(
                (got - want).abs() <= 4.0 * ulp,
                "sigmoid({z}) = {got}, want {want}"
            );
        }
    }
}

#[test]
fn stable_functions_at_extreme_arguments() {
    let zs = [
        -f32::MAX,
        -1e30,
        -1e4,
        -200.0,
        -88.0,
        -30.0,
        -1.0,
        -1e-20,
        0.0,
        1e-20,
        1.0,
        17.0,
        30.0,
        88.0,
        89.0,
        200.0,
        1e4,
        1e30,
        f32::MAX,
    ];
    for &z in &zs {
        let zf = z as f64;
        let s_ref = if zf >= 0.0 {
            1.0 / (1.0 + (-zf).exp())
        } else {
            zf.exp() / (1.0 + zf.exp())
        };
        let sp_ref = zf.max(0.0) + (-zf.abs()).exp().ln_1p();
        let (s, ls, sp) = (sigmoid(z), log_sigmoid(z), softplus(z));
        assert!(s.is_finite() && ls.is_finite() && sp.is_finite(), "z = {z}");
        // relative error within a few ulps where the reference is a normal f32, else absolute
        let close = |a: f32, b: f64| {
            let b32 = b as f32;
            (a as f64 - b).abs() <= 4.0 * f32::EPSILON as f64 * b.abs()
                || (b32.abs() < f32::MIN_POSITIVE && a.abs() < 1e-37)
        };
        assert!(close(s, s_ref), "sigmoid({z}) = {s}, f64 reference {s_ref}");
        assert!(
            close(sp, sp_ref),
            "softplus({z}) = {sp}, f64 reference {sp_ref}"
        );
        assert!(
            close(ls, -(-zf).max(0.0) - (-zf.abs()).exp().ln_1p()),
            "log_sigmoid({z}) = {ls}"
        );
        let th = tanh(z);
        assert!(
            th.is_finite() && close(th, zf.tanh()),
            "tanh({z}) = {th}, f64 reference {}",
            zf.tanh()
        );
    }
}

/// The MLP's gradients (every observation model) against finite differences, at weights whose
/// hidden pre-activations all stay at least 0.1 from the ReLU kink (so that the ±h
/// differences, which move a pre-activation by at most h·max|x| < 0.06, never cross it).
#[test]
fn mlp_gradients() {
    let (n, d, width) = (6usize, 3usize, 5usize);
    let x = grid(&normals(n * d, 21));
    let y = normals(n, 22);
    let labels: Vec<f32> = y
        .iter()
        .map(|&v| if v > 0.0 { 1.0 } else { -1.0 })
        .collect();
    for noise in [
        Noise::Fixed(2.0),
        Noise::Learned {
            shape: 6.0,
            rate: 6.0,
        },
        Noise::Bernoulli,
    ] {
        let y = if noise == Noise::Bernoulli {
            &labels
        } else {
            &y
        };
        let m = Mlp::new(&x, y, d, width, 1.5, noise).unwrap();
        let k = m.dim();
        let theta = (0u64..)
            .map(|seed| {
                let mut t = grid(&normals(k, 100 + seed));
                if matches!(noise, Noise::Learned { .. }) {
                    t[k - 1] = 0.5;
                }
                t
            })
            .find(|t| {
                (0..n).all(|i| {
                    (0..width).all(|h| {
                        let w = &t[h * (d + 1)..(h + 1) * (d + 1)];
                        let s: f32 = w[..d]
                            .iter()
                            .zip(&x[i * d..(i + 1) * d])
                            .map(|(a, b)| a * b)
                            .sum::<f32>()
                            + w[d];
                        s.abs() > 0.1
                    })
                })
            })
            .unwrap();
        // Some units active somewhere, or the test would be vacuous for W₁.
        let mut g = vec![0.0f32; k];
        m.add_log_lik_grad(&theta, &[0, 1, 2, 3, 4, 5], &mut g);
        assert!(g[..width * (d + 1)].iter().any(|&v| v != 0.0));
        check_gradients(&m, &theta, &[0, 1, 2, 3, 4, 5, 2], 1e-3);
        // The output is what the log-likelihood integrates.
        let f = m.predict(&theta, &x[..d]) as f64;
        let lambda = m.precision(&theta) as f64;
        let ll = if noise == Noise::Bernoulli {
            -(1.0 + (-(y[0] as f64) * f).exp()).ln()
        } else {
            0.5 * lambda.ln()
                - 0.5 * (2.0 * std::f64::consts::PI).ln()
                - 0.5 * lambda * (y[0] as f64 - f).powi(2)
        };
        assert!((m.log_lik(&theta, &[0]) - ll).abs() < 1e-4 * (1.0 + ll.abs()));
    }
    // Classification takes labels ±1 only, and has no noise parameter.
    assert!(Mlp::new(&x, &y, d, 4, 1.0, Noise::Bernoulli).is_err());
    let m = Mlp::new(&x, &labels, d, 4, 1.0, Noise::Bernoulli).unwrap();
    assert_eq!(m.dim(), 4 * (d + 2) + 1);
    assert_eq!(m.precision(&vec![0.0; m.dim()]), 1.0);
    assert!(Mlp::new(&x, &y, d, 0, 1.0, Noise::Fixed(1.0)).is_err());
    assert!(Mlp::new(&x, &y, d, 4, 0.0, Noise::Fixed(1.0)).is_err());
    assert!(Mlp::new(&x, &y, d, 4, 1.0, Noise::Fixed(-1.0)).is_err());
    assert!(Mlp::new(&x[1..], &y, d, 4, 1.0, Noise::Fixed(1.0)).is_err());
    assert!(
        Mlp::new(
            &x,
            &y,
            d,
            4,
            1.0,
            Noise::Learned {
                shape: 0.0,
                rate: 1.0
            }
        )
        .is_err()
    );
}

/// `model` with the default [`Model::row_width`] (its dimension): full-data passes then
/// add 64 rows into each partial sum whatever its rows hold.
struct SixtyFourRows<M>(M);

impl<M: Model> Model for SixtyFourRows<M> {
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn add_log_prior_grad(&self, theta: &[f32], grad: &mut [f32]) {
        self.0.add_log_prior_grad(theta, grad)
    }
    fn add_log_lik_grad(&self, theta: &[f32], batch: &[usize], grad: &mut [f32]) {
        self.0.add_log_lik_grad(theta, batch, grad)
    }
    fn log_prior(&self, theta: &[f32]) -> f64 {
        self.0.log_prior(theta)
    }
    fn log_lik(&self, theta: &[f32], batch: &[usize]) -> f64 {
        self.0.log_lik(theta, batch)
    }
}

#[test]
fn full_data_passes_add_every_row_once_whatever_the_row_width() {
    use sgld::gradient::{full_grad_log_posterior, full_log_posterior};
    // Rows of 3 and of 200 indices among 4,000 features: partial sums of all the rows
    // (3,000 rows in 47 chunks) and of 20 chunks (20, 20, 7), against the rows' terms
    // summed one at a time in f64.
    let (n, d) = (3_000, 4_000);
    let theta: Vec<f32> = normals(d, 5).iter().map(|v| 0.1 * v).collect();
    let labels = normals(n, 6);
    let y: Vec<f32> = labels
        .iter()
        .map(|&v| if v > 0.0 { 1.0 } else { -1.0 })
        .collect();
    for width in [3usize, 200] {
        let (mut offsets, mut idx) = (vec![0usize], Vec::new());
        for i in 0..n {
            let mut row: Vec<u32> = (0..width)
                .map(|k| ((i * 7_919 + k * 19) % d) as u32)
                .collect();
            row.sort_unstable();
            row.dedup();
            idx.extend(row);
            offsets.push(idx.len());
        }
        let rows = SparseRows::new(&offsets, &idx, d).unwrap();
        let model = LogisticSparse::new(rows, &y, Gaussian::new(1.0).unwrap()).unwrap();
        assert_eq!(model.row_width(), width);
        let mut want = vec![0.0f64; d];
        let mut one = vec![0.0f32; d];
        let mut want_lp = model.log_prior(&theta);
        for i in 0..n {
            one.fill(0.0);
            model.add_log_lik_grad(&theta, &[i], &mut one);
            want_lp += model.log_lik(&theta, &[i]);
            want.iter_mut().zip(&one).for_each(|(w, &g)| *w += g as f64);
        }
        one.fill(0.0);
        model.add_log_prior_grad(&theta, &mut one);
        want.iter_mut().zip(&one).for_each(|(w, &g)| *w += g as f64);
        let (mut g, mut g64, mut tmp) = (vec![0.0f32; d], vec![0.0f32; d], vec![0.0f32; d]);
        let lp = full_log_posterior(&model, &theta, &mut g, &mut tmp);
        assert!(
            (lp - want_lp).abs() < 1e-9 * want_lp.abs(),
            "{lp} vs {want_lp}"
        );
        full_grad_log_posterior(&SixtyFourRows(&model), &theta, &mut g64, &mut tmp);
        let mut grad_only = vec![0.0f32; d];
        full_grad_log_posterior(&model, &theta, &mut grad_only, &mut tmp);
        for j in 0..d {
            for (what, got) in [
                ("with value", g[j]),
                ("alone", grad_only[j]),
                ("64 rows", g64[j]),
            ] {
                assert!(
                    (got as f64 - want[j]).abs() < 1e-5 * (1.0 + want[j].abs()),
                    "width {width}, {what}, feature {j}: {got} vs {}",
                    want[j]
                );
            }
        }
    }
}

#[test]
fn control_variate_differences_are_the_two_sums_and_zero_at_the_centre() {
    // The one-read passes of the logistic rows (dense, index lists of two widths,
    // bitmaps) and of the GLMs, against the two sums they replace (the default's): a
    // batch past one chunk of sixteen with repeats, one that ends inside a chunk with an
    // index past the end (skipped), the empty batch.
    use sgld::models::{DenseRows, Glm, Logit, Poisson, Probit, ValuedRows};
    let (n, d) = (53, 124);
    let (offsets, idx, y) = binary_rows(n, d, 21);
    let rows = SparseRows::new(&offsets, &idx, d).unwrap();
    let narrow: Vec<u8> = idx.iter().map(|&j| j as u8).collect();
    let words = bitmaps(&rows);
    let prior = Laplace::new(1.0).unwrap();
    let sparse = LogisticSparse::new(rows, &y, prior).unwrap();
    let sparse8 = LogisticSparse::new(SparseRows::narrow(&offsets, &narrow, d).unwrap(), &y, prior);
    let bits = LogisticBits::new(BitRows::new(&words, d).unwrap(), &y, prior).unwrap();
    let x: Vec<f32> = normals(n * d, 22).iter().map(|v| 0.3 * v).collect();
    let dense = LogisticDense::new(&x, &y, d, prior).unwrap();
    let counts: Vec<f32> = normals(n, 23)
        .iter()
        .map(|v| (2.0 * v.abs()).floor())
        .collect();
    let design = DenseRows::new(&x, d).unwrap();
    let poisson = Glm::new(design, &counts, Poisson, prior).unwrap();
    let probit = Glm::new(design, &y, Probit, prior).unwrap();
    let ones = vec![1.0f32; idx.len()];
    let valued = Glm::new(
        ValuedRows::new(SparseRows::new(&offsets, &idx, d).unwrap(), &ones).unwrap(),
        &y,
        Logit,
        prior,
    )
    .unwrap();
    let models: [&dyn Model; 7] = [
        &dense,
        &sparse,
        &sparse8.unwrap(),
        &bits,
        &poisson,
        &probit,
        &valued,
    ];
    let theta = grid(&normals(d, 24).iter().map(|v| 0.1 * v).collect::<Vec<_>>());
    let centre: Vec<f32> = normals(d, 25).iter().map(|v| 0.1 * v).collect();
    let long: Vec<usize> = (0..n).chain((0..n).rev()).step_by(3).collect();
    for (k, m) in models.into_iter().enumerate() {
        for batch in [&long[..], &[5, 5, 52, n][..], &[][..]] {
            let mut got = vec![0.5f32; d];
            m.log_lik_grad_difference(&theta, &centre, batch, &mut got);
            // The rows' terms one at a time in f64, and the sum of their sizes.
            let (mut want, mut size) = (vec![0.0f64; d], vec![0.0f64; d]);
            let mut one = vec![0.0f32; d];
            for &i in batch {
                for (point, sign) in [(&theta, 1.0), (&centre, -1.0)] {
                    one.fill(0.0);
                    m.add_log_lik_grad(point, &[i], &mut one);
                    for j in 0..d {
                        want[j] += sign * one[j] as f64;
                        size[j] += one[j].abs() as f64;
                    }
                }
            }
            for j in 0..d {
                assert!(
                    (got[j] as f64 - want[j]).abs() <= 1e-6 * size[j],
                    "model {k}, batch {batch:?}, coordinate {j}: {} vs {}",
                    got[j],
                    want[j]
                );
            }
            // At the centre each item's two terms cancel exactly.
            m.log_lik_grad_difference(&centre, &centre, batch, &mut got);
            assert!(got.iter().all(|&g| g == 0.0), "model {k}, batch {batch:?}");
        }
    }
}

#[test]
fn logistic_regression_on_rows_with_values_is_the_dense_model() {
    // Valued rows (a tf-idf-like design: a few non-zeros of varied sizes a row) as the
    // logit GLM, against LogisticDense on the same rows written out in full: the same
    // gradient and log-likelihood up to the order of the sums, and finite differences.
    use sgld::models::{Design, Glm, Logit, ValuedRows};
    let (n, d) = (70, 300);
    let u = normals(n * 8 + n, 31);
    let (mut offsets, mut idx, mut vals) = (vec![0usize], Vec::<u16>::new(), Vec::new());
    let mut dense = vec![0.0f32; n * d];
    for i in 0..n {
        let mut row: Vec<u16> = (0..8).map(|k| ((i * 131 + k * 37) % d) as u16).collect();
        row.sort_unstable();
        row.dedup();
        for (k, &j) in row.iter().enumerate() {
            let v = 0.2 + u[i * 8 + k].abs();
            dense[i * d + j as usize] = v;
            vals.push(v);
        }
        idx.extend(row);
        offsets.push(idx.len());
    }
    let y: Vec<f32> = (0..n)
        .map(|i| if u[n * 8 + i] > 0.0 { 1.0 } else { -1.0 })
        .collect();
    let prior = Laplace::new(1.0).unwrap();
    let rows = ValuedRows::new(SparseRows::narrow(&offsets, &idx, d).unwrap(), &vals).unwrap();
    assert_eq!(rows.row_width(), 8);
    let valued = Glm::new(rows, &y, Logit, prior).unwrap();
    let full = LogisticDense::new(&dense, &y, d, prior).unwrap();
    assert_eq!(valued.row_width(), 8);
    let theta = grid(&normals(d, 32).iter().map(|v| 0.5 * v).collect::<Vec<_>>());
    let batch: Vec<usize> = (0..n).chain([3, 3, n + 5]).collect();
    let (mut gv, mut gd) = (vec![0.0f32; d], vec![0.0f32; d]);
    valued.add_log_lik_grad(&theta, &batch, &mut gv);
    full.add_log_lik_grad(&theta, &batch, &mut gd);
    for j in 0..d {
        assert!(
            (gv[j] - gd[j]).abs() <= 1e-5 * (1.0 + gd[j].abs()),
            "{j}: {} vs {}",
            gv[j],
            gd[j]
        );
    }
    let (lv, ld) = (valued.log_lik(&theta, &batch), full.log_lik(&theta, &batch));
    assert!((lv - ld).abs() <= 1e-5 * ld.abs(), "{lv} vs {ld}");
    check_gradients(&valued, &theta, &[0, 5, 5, 69], 1e-3);
}
