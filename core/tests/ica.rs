//! ICA (§5.3): the natural gradient against finite differences of the log density times
//! WᵀW, the log density against a direct evaluation, the corrected-Langevin acceptance
//! ratio against a dense Gaussian evaluation of the proposal densities, and √(WᵀW).

use nalgebra::{DMatrix, DVector};
use sgld::ica::Ica;
use sgld::noise::{default_rng, fill_normal};

fn data(n: usize, d: usize, seed: u64) -> Vec<f32> {
    // Heavy-tailed sources (cubed normals) mixed by a fixed matrix.
    let mut z = vec![0.0f32; n * d];
    fill_normal(&mut default_rng(seed), &mut z);
    let mut x = vec![0.0f32; n * d];
    for i in 0..n {
        for a in 0..d {
            let mut v = 0.0;
            for b in 0..d {
                let m = if a == b {
                    1.0
                } else {
                    0.3 / (1.0 + (a + b) as f32)
                };
                v += m * z[i * d + b].powi(3) * 0.5;
            }
            x[i * d + a] = v;
        }
    }
    x
}

fn w0(d: usize, seed: u64) -> Vec<f64> {
    let mut g = vec![0.0f32; d * d];
    fill_normal(&mut default_rng(seed), &mut g);
    (0..d * d)
        .map(|k| if k / d == k % d { 1.0 } else { 0.0 } + 0.2 * g[k] as f64)
        .collect()
}

fn direct_log_density(x: &[f32], d: usize, w: &[f64], lambda: f64) -> f64 {
    let wm = DMatrix::from_row_slice(d, d, w);
    let n = x.len() / d;
    let mut s = n as f64 * wm.determinant().abs().ln();
    for row in x.chunks_exact(d) {
        let y = &wm * DVector::from_iterator(d, row.iter().map(|&v| v as f64));
        s -= y.iter().map(|v| 2.0 * (0.5 * v).cosh().ln()).sum::<f64>();
    }
    s - 0.5 * lambda * w.iter().map(|v| v * v).sum::<f64>()
}

#[test]
fn natural_gradient_equals_finite_differences_times_wtw() {
    let (n, d, lambda) = (60usize, 3usize, 0.5f64);
    let x = data(n, d, 1);
    let ica = Ica::new(&x, d, lambda).unwrap();
    let w = w0(d, 2);
    let mut scratch = vec![0.0; Ica::scratch_len(d)];
    let lp = ica.log_density(&w, &mut scratch).unwrap();
    let direct = direct_log_density(&x, d, &w, lambda);
    assert!(
        (lp - direct).abs() <= 1e-9 * direct.abs(),
        "{lp} vs {direct}"
    );
    // ∇ log p by central differences, then D_W = ∇ log p · WᵀW.
    let h = 1e-5;
    let mut g = vec![0.0; d * d];
    for k in 0..d * d {
        let (mut p, mut m) = (w.clone(), w.clone());
        p[k] += h;
        m[k] -= h;
        g[k] = (ica.log_density(&p, &mut scratch).unwrap()
            - ica.log_density(&m, &mut scratch).unwrap())
            / (2.0 * h);
    }
    let wm = DMatrix::from_row_slice(d, d, &w);
    let want = DMatrix::from_row_slice(d, d, &g) * (wm.transpose() * &wm);
    let mut dw = vec![0.0; d * d];
    let all: Vec<usize> = (0..n).collect();
    ica.natural_gradient(&w, &all, &mut dw, &mut scratch)
        .unwrap();
    for k in 0..d * d {
        let wk = want[(k / d, k % d)];
        assert!(
            (dw[k] - wk).abs() <= 1e-5 * (1.0 + wk.abs()),
            "D_W[{k}] = {} vs {wk}",
            dw[k]
        );
    }
    // A mini-batch estimate is unbiased: the average over all single-row batches is D_W.
    let mut avg = vec![0.0; d * d];
    let mut one = vec![0.0; d * d];
    for i in 0..n {
        ica.natural_gradient(&w, &[i], &mut one, &mut scratch)
            .unwrap();
        for k in 0..d * d {
            avg[k] += one[k] / n as f64;
        }
    }
    // Equal but for the sums' rounding: f32 lanes of at most four products (each sum
    // within 8·2⁻²⁴ of Σ|tanh(yᵢ/2)·yₖ| + (λn/N)·Σₘ|Wᵢₘ·Wₖₘ|, the prior's products
    // sharing the lanes), scaled by N/n and multiplied by W, in both.
    let mut abs = lambda * wm.abs() * wm.abs().transpose();
    for row in x.chunks_exact(d) {
        let y = &wm * DVector::from_iterator(d, row.iter().map(|&v| v as f64));
        let t = y.map(|v| (0.5 * v).tanh().abs());
        abs += t * y.abs().transpose();
    }
    let bound = 2.0 * 8.0 * f64::from(f32::EPSILON) / 2.0 * abs * wm.abs();
    for k in 0..d * d {
        let tol = bound[(k / d, k % d)] + 1e-9 * (1.0 + dw[k].abs());
        assert!(
            (avg[k] - dw[k]).abs() <= tol,
            "D_W[{k}]: {} vs {} (tolerance {tol})",
            avg[k],
            dw[k]
        );
    }
}

/// `log N(v; μ, Σ)` with a dense Cholesky.
fn log_normal(v: &DVector<f64>, mu: &DVector<f64>, cov: &DMatrix<f64>) -> f64 {
    let k = v.len() as f64;
    let ch = cov.clone().cholesky().unwrap();
    let r = v - mu;
    let sol = ch.solve(&r);
    let logdet = 2.0 * ch.l().diagonal().iter().map(|x| x.ln()).sum::<f64>();
    -0.5 * (r.dot(&sol) + logdet + k * (2.0 * std::f64::consts::PI).ln())
}

#[test]
fn mala_ratio_matches_a_dense_evaluation() {
    let (n, d, lambda) = (40usize, 3usize, 1.0f64);
    let x = data(n, d, 3);
    let ica = Ica::new(&x, d, lambda).unwrap();
    let mut scratch = vec![0.0; Ica::scratch_len(d)];
    let all: Vec<usize> = (0..n).collect();
    for seed in 0..5u64 {
        let w = w0(d, 10 + seed);
        let eps = 0.5 / n as f64;
        let mut wc = w.clone();
        let mut prop = vec![0.0; d * d];
        let info = ica
            .mala_step(
                &mut wc,
                eps,
                &mut default_rng(seed),
                &mut prop,
                &mut scratch,
            )
            .unwrap();
        // Dense: vec(W*) ~ N(vec(W + ε/2·D(W)), ε·(I ⊗ WᵀW)) with rows stacked.
        let dens = |from: &[f64], to: &[f64]| {
            let mut dw = vec![0.0; d * d];
            ica.natural_gradient(from, &all, &mut dw, &mut vec![0.0; Ica::scratch_len(d)])
                .unwrap();
            let f = DMatrix::from_row_slice(d, d, from);
            let wtw = f.transpose() * &f;
            let mut cov = DMatrix::zeros(d * d, d * d);
            for i in 0..d {
                cov.view_mut((i * d, i * d), (d, d))
                    .copy_from(&(&wtw * eps));
            }
            let mu = DVector::from_iterator(d * d, (0..d * d).map(|k| from[k] + 0.5 * eps * dw[k]));
            log_normal(&DVector::from_row_slice(to), &mu, &cov)
        };
        let want = direct_log_density(&x, d, &prop, lambda) - direct_log_density(&x, d, &w, lambda)
            + dens(&prop, &w)
            - dens(&w, &prop);
        assert!(
            (info.log_ratio - want).abs() <= 1e-7 * (1.0 + want.abs()),
            "seed {seed}: {} vs {want}",
            info.log_ratio
        );
        assert_eq!(wc == prop, info.accepted);
        if !info.accepted {
            assert_eq!(wc, w);
        }
    }
}

#[test]
fn sgld_step_moves_rows_with_covariance_eps_wtw() {
    // With a tiny data set and λ, one step's noise η√(WᵀW) has row covariance ε·WᵀW:
    // check the sample covariance of many single steps from the same W (drift removed).
    let (n, d) = (5usize, 2usize);
    let x = data(n, d, 4);
    let ica = Ica::new(&x, d, 1.0).unwrap();
    let w = vec![1.5, 0.4, -0.3, 0.8];
    let eps = 1e-4;
    let mut scratch = vec![0.0; Ica::scratch_len(d)];
    let mut dw = vec![0.0; d * d];
    let all: Vec<usize> = (0..n).collect();
    ica.natural_gradient(&w, &all, &mut dw, &mut scratch)
        .unwrap();
    let reps = 40_000;
    let mut rng = default_rng(9);
    let mut s = [[0.0f64; 2]; 2];
    for _ in 0..reps {
        let mut wc = w.clone();
        assert!(
            ica.sgld_step(&mut wc, &all, eps, &mut rng, &mut scratch)
                .unwrap()
        );
        // Row 0's noise.
        let e: Vec<f64> = (0..d).map(|j| wc[j] - w[j] - 0.5 * eps * dw[j]).collect();
        for a in 0..2 {
            for b in 0..2 {
                s[a][b] += e[a] * e[b] / reps as f64;
            }
        }
    }
    let wm = DMatrix::from_row_slice(d, d, &w);
    let want = (wm.transpose() * &wm) * eps;
    for a in 0..2 {
        for b in 0..2 {
            // Sample covariance of 40000 draws: relative sd ≈ √(2/40000) = 0.7%; allow 5 sd
            // of the scale √(Σaa Σbb).
            let tol = 5.0 * (2.0f64 / reps as f64).sqrt() * (want[(a, a)] * want[(b, b)]).sqrt();
            assert!(
                (s[a][b] - want[(a, b)]).abs() <= tol,
                "cov[{a}][{b}] = {} vs {}",
                s[a][b],
                want[(a, b)]
            );
        }
    }
    // Bad input.
    let mut short = vec![0.0; 3];
    assert!(
        ica.sgld_step(&mut short, &all, eps, &mut rng, &mut scratch)
            .is_err()
    );
    assert!(
        ica.sgld_step(&mut w.clone(), &[], eps, &mut rng, &mut scratch)
            .is_err()
    );
    assert!(
        ica.sgld_step(&mut w.clone(), &all, -1.0, &mut rng, &mut scratch)
            .is_err()
    );
    assert!(Ica::new(&x, 0, 1.0).is_err() && Ica::new(&x, d, 0.0).is_err());
}

#[test]
fn sgld_step_refuses_bad_indices_and_a_non_finite_w_and_changes_nothing() {
    use rand_core::Rng;
    use sgld::Error;
    let (n, d) = (300usize, 3usize);
    let x = data(n, d, 7);
    let ica = Ica::new(&x, d, 1.0).unwrap();
    let mut scratch = vec![0.0; Ica::scratch_len(d)];
    let w = w0(d, 8);
    // Out of range after more rows than one chunk, and so large that i·d overflows.
    let mut late: Vec<usize> = (0..n).collect();
    late.push(n);
    for (batch, index) in [(late, n), (vec![0, usize::MAX, 1], usize::MAX)] {
        let (mut rng, mut fresh) = (default_rng(5), default_rng(5));
        let mut ws = w.clone();
        let r = ica.sgld_step(&mut ws, &batch, 1e-4, &mut rng, &mut scratch);
        assert_eq!(r, Err(Error::IndexOutOfRange { index, len: n }));
        assert_eq!(ws, w);
        // No noise was drawn either.
        assert_eq!(rng.next_u64(), fresh.next_u64());
    }
    // A W with a NaN or an infinity anywhere is refused the same way.
    for (k, bad) in [
        (0, f64::NAN),
        (d * d - 1, f64::INFINITY),
        (4, f64::NEG_INFINITY),
    ] {
        let mut wb = w.clone();
        wb[k] = bad;
        let before = wb.clone();
        let (mut rng, mut fresh) = (default_rng(5), default_rng(5));
        let r = ica.sgld_step(&mut wb, &[0, 1], 1e-4, &mut rng, &mut scratch);
        assert_eq!(r, Err(Error::NonFinite { what: "W" }));
        assert!(
            wb.iter()
                .zip(&before)
                .all(|(a, b)| a.to_bits() == b.to_bits())
        );
        assert_eq!(rng.next_u64(), fresh.next_u64(), "noise drawn for a bad W");
    }
}

/// A finite `W` whose step overflows (`λ W Wᵀ W` past f64's range) is refused, `Ok(false)`,
/// and `W` is left as it was to the bit, at a width the step transposes with the width a
/// constant (10) and at one it does not (3); the same `W` scaled down is stepped.
#[test]
fn sgld_step_whose_result_is_not_finite_is_refused_and_keeps_w() {
    for d in [3usize, 10] {
        let n = 300;
        let x = data(n, d, 7);
        let ica = Ica::new(&x, d, 1.0).unwrap();
        let mut scratch = vec![0.0; Ica::scratch_len(d)];
        let huge: Vec<f64> = w0(d, 8).iter().map(|v| v * 1e120).collect();
        let mut ws = huge.clone();
        let r = ica.sgld_step(&mut ws, &[0, 1, 2], 1e-4, &mut default_rng(5), &mut scratch);
        assert_eq!(r, Ok(false), "d = {d}");
        assert!(
            ws.iter()
                .zip(&huge)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "d = {d}: W changed"
        );
        let mut ws = w0(d, 8);
        let r = ica.sgld_step(&mut ws, &[0, 1, 2], 1e-4, &mut default_rng(5), &mut scratch);
        assert_eq!(r, Ok(true), "d = {d}");
        assert!(
            ws.iter().all(|v| v.is_finite()) && ws != w0(d, 8),
            "d = {d}"
        );
    }
}

#[test]
fn threshold_matches_a_direct_computation() {
    let (n, d, lambda) = (30usize, 3usize, 2.0f64);
    let x = data(n, d, 5);
    let ica = Ica::new(&x, d, lambda).unwrap();
    let w = w0(d, 6);
    let batch: Vec<usize> = (0..n).step_by(3).collect();
    let nb = batch.len();
    let mut scores = vec![0.0f32; nb * d * d];
    let mut scratch = vec![0.0; Ica::scratch_len(d)];
    let mut ts = vec![0.0; sgld::estimate::threshold_scratch_len(nb, d * d)];
    let eps = 1e-3;
    let t = ica
        .threshold(&w, &batch, eps, &mut scores, &mut scratch, &mut ts)
        .unwrap();
    let wm = DMatrix::from_row_slice(d, d, &w);
    let eig = (wm.transpose() * &wm).symmetric_eigen();
    let sqrt = &eig.eigenvectors
        * DMatrix::from_diagonal(&eig.eigenvalues.map(f64::sqrt))
        * eig.eigenvectors.transpose();
    let wit = wm.clone().try_inverse().unwrap().transpose();
    let mut rows = DMatrix::zeros(nb, d * d);
    for (r, &i) in batch.iter().enumerate() {
        let xi = DVector::from_iterator(d, x[i * d..(i + 1) * d].iter().map(|&v| v as f64));
        let y = &wm * &xi;
        let t_ = y.map(|v| (0.5 * v).tanh());
        let g = &wit - &t_ * xi.transpose() - &wm * (lambda / n as f64);
        let s = g * &sqrt;
        for a in 0..d {
            for b in 0..d {
                rows[(r, a * d + b)] = s[(a, b)] as f32 as f64;
            }
        }
    }
    let mean = rows.row_mean();
    let c = DMatrix::from_fn(nb, d * d, |i, j| rows[(i, j)] - mean[j]);
    let lmax = (c.transpose() * &c / nb as f64)
        .symmetric_eigenvalues()
        .max();
    let alpha = eps * (n * n) as f64 / (4.0 * nb as f64) * lmax;
    assert!(
        (t.alpha - alpha).abs() <= 1e-6 * alpha,
        "{} vs {alpha}",
        t.alpha
    );
}

/// Batch-means mean and MCSE of a scalar series.
fn mean_mcse(v: &[f64], batches: usize) -> (f64, f64) {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let per = v.len() / batches;
    let bm: Vec<f64> = (0..batches)
        .map(|b| v[b * per..(b + 1) * per].iter().sum::<f64>() / per as f64)
        .collect();
    let var = bm.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (batches - 1) as f64;
    (m, (var / batches as f64).sqrt())
}

/// On a 2×2 problem the SGLD posterior mean of W (mini-batches of 20, small constant
/// step) agrees with a long corrected-Langevin run (exact up to Monte Carlo error):
/// |difference| ≤ 4·√(MCSE_sgld² + MCSE_mala²) for each of the 4 entries (family error
/// ≈ 2.5·10⁻⁴), MCSEs from 50 batch means.
#[test]
fn sgld_posterior_mean_matches_a_long_mala_run_on_2x2() {
    let (n, d, lambda) = (200usize, 2usize, 1.0f64);
    let x = data(n, d, 12);
    let ica = Ica::new(&x, d, lambda).unwrap();
    let mut scratch = vec![0.0; Ica::scratch_len(d)];
    let all: Vec<usize> = (0..n).collect();
    // Find the mode's neighbourhood with a short SGLD run from the identity.
    let mut w = vec![1.0, 0.0, 0.0, 1.0];
    let mut rng = default_rng(21);
    for t in 0..20_000u64 {
        let eps = 1.0 / n as f64 * (1.0 + t as f64 / 100.0).powf(-0.55);
        ica.sgld_step(&mut w, &all[..], eps, &mut rng, &mut scratch)
            .unwrap();
    }
    let start = w.clone();
    // Corrected Langevin.
    let steps = 200_000;
    let mut wm = start.clone();
    let mut prop = vec![0.0; 4];
    let mut mala: Vec<Vec<f64>> = (0..4).map(|_| Vec::with_capacity(steps)).collect();
    let mut accepted = 0usize;
    for _ in 0..steps {
        accepted += usize::from(
            ica.mala_step(&mut wm, 0.5 / n as f64, &mut rng, &mut prop, &mut scratch)
                .unwrap()
                .accepted,
        );
        for k in 0..4 {
            mala[k].push(wm[k]);
        }
    }
    let acc_rate = accepted as f64 / steps as f64;
    // SGLD with mini-batches of 20.
    let mut ws = start.clone();
    let mut batch = [0usize; 20];
    let mut sg: Vec<Vec<f64>> = (0..4).map(|_| Vec::with_capacity(4 * steps)).collect();
    for _ in 0..4 * steps {
        sgld::gradient::sample_batch(&mut rng, n, &mut batch).unwrap();
        ica.sgld_step(&mut ws, &batch, 0.01 / n as f64, &mut rng, &mut scratch)
            .unwrap();
        for k in 0..4 {
            sg[k].push(ws[k]);
        }
    }
    eprintln!("MALA acceptance {acc_rate:.3}");
    assert!(acc_rate > 0.3, "acceptance {acc_rate}");
    for k in 0..4 {
        let (m1, s1) = mean_mcse(&mala[k], 50);
        let (m2, s2) = mean_mcse(&sg[k], 50);
        let tol = 4.0 * (s1 * s1 + s2 * s2).sqrt();
        eprintln!("W[{k}]: MALA {m1:.4} ± {s1:.4}, SGLD {m2:.4} ± {s2:.4}");
        assert!(
            (m1 - m2).abs() <= tol,
            "W[{k}]: MALA {m1} vs SGLD {m2} (tolerance {tol})"
        );
    }
}

#[test]
fn mala_cache_gives_the_same_chain_as_fresh_scratch() {
    let (n, d) = (30usize, 3usize);
    let x = data(n, d, 8);
    let ica = Ica::new(&x, d, 1.0).unwrap();
    let (mut w1, mut w2) = (w0(d, 1), w0(d, 1));
    let mut cached = vec![0.0; Ica::scratch_len(d)];
    let mut prop = vec![0.0; d * d];
    let (mut r1, mut r2) = (default_rng(4), default_rng(4));
    for _ in 0..50 {
        let a = ica
            .mala_step(&mut w1, 0.3 / n as f64, &mut r1, &mut prop, &mut cached)
            .unwrap();
        let mut fresh = vec![0.0; Ica::scratch_len(d)];
        let b = ica
            .mala_step(&mut w2, 0.3 / n as f64, &mut r2, &mut prop, &mut fresh)
            .unwrap();
        assert_eq!(a.accepted, b.accepted);
        assert!((a.log_ratio - b.log_ratio).abs() <= 1e-9 * (1.0 + b.log_ratio.abs()));
        assert_eq!(w1, w2);
    }
}
