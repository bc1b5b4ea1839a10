//! K-FAC SGLD for the one-hidden-layer network: the Kronecker noise has covariance
//! `[(A + αI) ⊗ (S + βI)]⁻¹` (sampling error from the Wishart variance of each entry), the
//! drift at temperature 0 is exactly `(ε/2)·F̂⁻¹ĝ` per layer, and a chain learns.

use nalgebra::DMatrix;
use sgld::ChainState;
use sgld::gradient::{GradientEstimator, MiniBatch};
use sgld::kfac::{KfacSgld, kronecker_noise};
use sgld::models::{Mlp, Model, Noise};
use sgld::noise::{default_rng, fill_normal};

fn normals(n: usize, seed: u64) -> Vec<f32> {
    let mut v = vec![0.0; n];
    fill_normal(&mut default_rng(seed), &mut v);
    v
}

fn spd(n: usize, seed: u64) -> DMatrix<f64> {
    let g = normals(n * n, seed);
    let b = DMatrix::from_iterator(n, n, g.iter().map(|&v| v as f64));
    &b * b.transpose() / n as f64 + DMatrix::identity(n, n) * 0.3
}

fn row_major(m: &DMatrix<f64>) -> Vec<f32> {
    (0..m.nrows())
        .flat_map(|i| (0..m.ncols()).map(move |j| (i, j)))
        .map(|(i, j)| m[(i, j)] as f32)
        .collect()
}

#[test]
fn kronecker_noise_has_the_inverse_fisher_as_covariance() {
    let (rows, cols) = (2usize, 3usize);
    let (a, s) = (spd(cols, 1), spd(rows, 2));
    let (alpha, beta) = (0.1f32, 0.2f32);
    let a_d = &a + DMatrix::identity(cols, cols) * alpha as f64;
    let s_d = &s + DMatrix::identity(rows, rows) * beta as f64;
    // Row-major vec(Z) (index r·cols + c) has covariance S⁻¹ ⊗ A⁻¹.
    let want = s_d
        .clone()
        .try_inverse()
        .unwrap()
        .kronecker(&a_d.clone().try_inverse().unwrap());
    let (a32, s32) = (row_major(&a), row_major(&s));
    let k = rows * cols;
    let n = 200_000;
    let mut z = vec![0.0f32; k];
    let mut scratch = vec![0.0f32; rows * rows + cols * cols + rows];
    let mut rng = default_rng(3);
    let mut acc = DMatrix::<f64>::zeros(k, k);
    for _ in 0..n {
        kronecker_noise(
            &a32,
            &s32,
            rows,
            cols,
            alpha,
            beta,
            &mut z,
            &mut scratch,
            &mut rng,
        )
        .unwrap();
        for i in 0..k {
            for j in 0..k {
                acc[(i, j)] += z[i] as f64 * z[j] as f64;
            }
        }
    }
    let emp = acc / n as f64;
    for i in 0..k {
        for j in 0..k {
            // Var of a sample second moment of a Gaussian: (Σᵢᵢ Σⱼⱼ + Σᵢⱼ²)/n; z = 5
            // (Bonferroni over 36 entries, family error < 10⁻⁴).
            let se = ((want[(i, i)] * want[(j, j)] + want[(i, j)].powi(2)) / n as f64).sqrt();
            assert!(
                (emp[(i, j)] - want[(i, j)]).abs() <= 5.0 * se,
                "cov[{i},{j}] = {} vs {} (se {se:.2e})",
                emp[(i, j)],
                want[(i, j)]
            );
        }
    }
    // Not positive definite after damping: refused.
    let neg = vec![-1.0f32; cols * cols];
    assert!(
        kronecker_noise(
            &neg,
            &s32,
            rows,
            cols,
            0.0,
            beta,
            &mut z,
            &mut scratch,
            &mut rng
        )
        .is_err()
    );
}

/// A small regression network and its data.
fn net() -> (Vec<f32>, Vec<f32>) {
    let (n, d) = (40usize, 2usize);
    let x = normals(n * d, 11);
    let y: Vec<f32> = (0..n)
        .map(|i| (x[i * d] * 1.5).sin() + 0.3 * x[i * d + 1] + 0.1 * normals(n, 12)[i])
        .collect();
    (x, y)
}

/// At temperature 0 one step moves θ by exactly `(ε/2)·F̂⁻¹ĝ`, with `F̂` built in f64 from
/// the factors the step estimated (damping by the prior precision, factored Tikhonov).
#[test]
fn the_drift_is_the_kronecker_preconditioned_gradient() {
    let (x, y) = net();
    let (d, h) = (2usize, 4usize);
    let m = Mlp::new(&x, &y, d, h, 2.0, Noise::Fixed(4.0)).unwrap();
    let dim = m.dim();
    let theta0 = normals(dim, 13);
    let mut theta = theta0.clone();
    let mut scratch = vec![0.0f32; KfacSgld::scratch_len(d, h)];
    let k = KfacSgld::new(0.9, 1)
        .unwrap()
        .with_temperature(0.0)
        .unwrap();
    let mut st = k.init(&m, &mut theta, &mut scratch).unwrap();
    let batch: Vec<usize> = (0..40).collect();
    let eps = 1e-3f32;
    let mut rng = default_rng(1);
    k.step(&mut st, &m, &batch, eps, &mut rng).unwrap();
    let (a1, s1, a2, s2) = st.factors();
    let (p, q) = (d + 1, h + 1);
    let a1 = DMatrix::from_row_slice(p, p, &a1.iter().map(|&v| v as f64).collect::<Vec<_>>());
    let s1 = DMatrix::from_row_slice(h, h, &s1.iter().map(|&v| v as f64).collect::<Vec<_>>());
    let a2 = DMatrix::from_row_slice(q, q, &a2.iter().map(|&v| v as f64).collect::<Vec<_>>());
    let s2 = s2 as f64;
    let n = 40.0 * 4.0; // N·λ
    // Damping: each layer's prior precision, fan-in / σ²_w.
    let root = ((d + 1) as f64 / 2.0).sqrt();
    let root2 = ((h + 1) as f64 / 2.0).sqrt();
    let pi1 = ((a1.trace() / p as f64) / (n * s1.trace() / h as f64)).sqrt();
    let a1d = &a1 + DMatrix::identity(p, p) * (pi1 * root);
    let s1d = &s1 * n + DMatrix::identity(h, h) * (root / pi1);
    let pi2 = ((a2.trace() / q as f64) / (n * s2)).sqrt();
    let a2d = &a2 + DMatrix::identity(q, q) * (pi2 * root2);
    let s2d = n * s2 + root2 / pi2;
    let mut g = vec![0.0f32; dim];
    MiniBatch::new(&m).estimate(&theta0, &batch, &mut g);
    let g1 = DMatrix::from_row_slice(
        h,
        p,
        &g[..h * p].iter().map(|&v| v as f64).collect::<Vec<_>>(),
    );
    let want1 = s1d.try_inverse().unwrap() * g1 * a1d.try_inverse().unwrap();
    let g2 = DMatrix::from_row_slice(
        1,
        q,
        &g[h * p..].iter().map(|&v| v as f64).collect::<Vec<_>>(),
    );
    let want2 = g2 * a2d.try_inverse().unwrap() / s2d;
    let want: Vec<f64> = (0..h)
        .flat_map(|r| (0..p).map(move |c| (r, c)))
        .map(|(r, c)| want1[(r, c)])
        .chain(want2.iter().copied())
        .collect();
    for j in 0..dim {
        let moved = (st.theta()[j] - theta0[j]) as f64;
        let expect = 0.5 * eps as f64 * want[j];
        assert!(
            (moved - expect).abs() <= 1e-3 * expect.abs() + 1e-6,
            "θ[{j}] moved {moved:e}, expected {expect:e}"
        );
    }
}

#[test]
fn a_chain_learns_the_function_and_bad_input_is_refused() {
    let (x, y) = net();
    let (d, h) = (2usize, 8usize);
    let m = Mlp::new(
        &x,
        &y,
        d,
        h,
        1.0,
        Noise::Learned {
            shape: 6.0,
            rate: 6.0,
        },
    )
    .unwrap();
    let mut theta: Vec<f32> = normals(m.dim(), 14).iter().map(|v| 0.5 * v).collect();
    let all: Vec<usize> = (0..40).collect();
    let before = m.log_lik(&theta, &all);
    let mut scratch = vec![0.0f32; KfacSgld::scratch_len(d, h)];
    let k = KfacSgld::new(0.95, 10).unwrap();
    let mut st = k.init(&m, &mut theta, &mut scratch).unwrap();
    let mut rng = default_rng(2);
    let mut batch = [0usize; 8];
    for _ in 0..3000 {
        sgld::gradient::sample_batch(&mut rng, 40, &mut batch).unwrap();
        let info = k.step(&mut st, &m, &batch, 2e-3, &mut rng).unwrap();
        assert!(!info.non_finite);
    }
    let after = m.log_lik(st.theta(), &all);
    eprintln!("log-likelihood {before:.1} -> {after:.1}");
    assert!(after > before + 10.0, "{before} -> {after}");
    // Bad input: the state is untouched.
    let snapshot = st.theta().to_vec();
    assert!(k.step(&mut st, &m, &[], 1e-3, &mut rng).is_err());
    assert!(k.step(&mut st, &m, &[40], 1e-3, &mut rng).is_err());
    assert!(k.step(&mut st, &m, &[0], f32::NAN, &mut rng).is_err());
    assert_eq!(st.theta(), &snapshot[..]);
    assert!(KfacSgld::new(1.0, 1).is_err() && KfacSgld::new(0.9, 0).is_err());
    let mut short = vec![0.0f32; 3];
    let mut th = vec![0.0f32; m.dim()];
    assert!(k.init(&m, &mut th, &mut short).is_err());
}

/// With a logistic output (binary labels) each example's contribution to the output-side
/// factors is weighted by its Bernoulli variance: after one step from empty averages, `S₁`
/// and `s₂` are the batch means of `σ(f)(1 − σ(f))·δδᵀ` and `σ(f)(1 − σ(f))` (`δ` the
/// output weights masked by the ReLU), computed here in f64; and a chain learns the labels.
#[test]
fn a_logistic_output_weighs_the_factors_by_the_bernoulli_variance() {
    let (x, y) = net();
    let labels: Vec<f32> = y
        .iter()
        .map(|&v| if v > 0.0 { 1.0 } else { -1.0 })
        .collect();
    let (d, h) = (2usize, 4usize);
    let m = Mlp::new(&x, &labels, d, h, 2.0, Noise::Bernoulli).unwrap();
    let theta0 = normals(m.dim(), 13);
    let mut theta = theta0.clone();
    let mut scratch = vec![0.0f32; KfacSgld::scratch_len(d, h)];
    let k = KfacSgld::new(0.9, 1).unwrap();
    let mut st = k.init(&m, &mut theta, &mut scratch).unwrap();
    let batch: Vec<usize> = (0..40).collect();
    k.step(&mut st, &m, &batch, 1e-3, &mut default_rng(1))
        .unwrap();
    let (_, s1, _, s2) = st.factors();
    let (p, o) = (d + 1, h * (d + 1));
    let mut want_s1 = vec![0.0f64; h * h];
    let mut want_s2 = 0.0f64;
    for i in 0..40 {
        let xi = &x[i * d..(i + 1) * d];
        let pre: Vec<f64> = (0..h)
            .map(|u| {
                let w = &theta0[u * p..(u + 1) * p];
                w[..d]
                    .iter()
                    .zip(xi)
                    .map(|(a, b)| *a as f64 * *b as f64)
                    .sum::<f64>()
                    + w[d] as f64
            })
            .collect();
        let f = (0..h)
            .map(|u| theta0[o + u] as f64 * pre[u].max(0.0))
            .sum::<f64>()
            + theta0[o + h] as f64;
        let q = 1.0 / (1.0 + (-f).exp());
        let wgt = q * (1.0 - q) / 40.0;
        let delta: Vec<f64> = (0..h)
            .map(|u| {
                if pre[u] > 0.0 {
                    theta0[o + u] as f64
                } else {
                    0.0
                }
            })
            .collect();
        for r in 0..h {
            for c in 0..h {
                want_s1[r * h + c] += wgt * delta[r] * delta[c];
            }
        }
        want_s2 += wgt;
    }
    for (got, want) in s1.iter().zip(&want_s1) {
        assert!(
            (*got as f64 - want).abs() <= 1e-5 * (1.0 + want.abs()),
            "{got} vs {want}"
        );
    }
    assert!((s2 as f64 - want_s2).abs() <= 1e-6, "{s2} vs {want_s2}");
    assert!(want_s2 > 0.0 && want_s2 < 0.25);

    // A chain from small weights learns the labels: the posterior predictive over its
    // last 1,000 draws classifies the training data.
    let m = Mlp::new(&x, &labels, d, 8, 1.0, Noise::Bernoulli).unwrap();
    let mut theta: Vec<f32> = normals(m.dim(), 14).iter().map(|v| 0.5 * v).collect();
    let mut scratch = vec![0.0f32; KfacSgld::scratch_len(d, 8)];
    let k = KfacSgld::new(0.95, 10).unwrap();
    let mut st = k.init(&m, &mut theta, &mut scratch).unwrap();
    let before = m.log_lik(st.theta(), &batch);
    let mut rng = default_rng(2);
    let mut b = [0usize; 8];
    let mut prob = vec![0.0f64; 40];
    for t in 0..4000 {
        sgld::gradient::sample_batch(&mut rng, 40, &mut b).unwrap();
        assert!(!k.step(&mut st, &m, &b, 2e-2, &mut rng).unwrap().non_finite);
        if t >= 3000 {
            for (i, p) in prob.iter_mut().enumerate() {
                let f = m.predict(st.theta(), &x[i * d..(i + 1) * d]) as f64;
                *p += 1e-3 / (1.0 + (-f).exp());
            }
        }
    }
    let after = m.log_lik(st.theta(), &batch);
    let correct = (0..40)
        .filter(|&i| (prob[i] > 0.5) == (labels[i] > 0.0))
        .count();
    eprintln!("log-likelihood {before:.1} -> {after:.1}, predictive {correct}/40 correct");
    assert!(
        after > before + 5.0 && correct >= 32,
        "{before} -> {after}, {correct}/40"
    );
}

/// The `Sampler` adapter is the same chain as `KfacSgld::step`, bit for bit.
#[test]
fn the_sampler_adapter_is_the_same_chain() {
    use sgld::Sampler;
    use sgld::kfac::KfacSampler;
    let (x, y) = net();
    let m = Mlp::new(
        &x,
        &y,
        2,
        4,
        1.0,
        Noise::Learned {
            shape: 6.0,
            rate: 6.0,
        },
    )
    .unwrap();
    let k = KfacSgld::new(0.95, 5).unwrap();
    let start = normals(m.dim(), 15);
    let run = |adapter: bool| -> Vec<f32> {
        let mut theta = start.clone();
        let mut scratch = vec![0.0f32; KfacSgld::scratch_len(2, 4)];
        let mut rng = default_rng(7);
        let s = KfacSampler::new(k, &m);
        let est = MiniBatch::new(&m);
        let mut st = if adapter {
            s.start(&mut theta, &mut scratch).unwrap()
        } else {
            k.init(&m, &mut theta, &mut scratch).unwrap()
        };
        for t in 0..200 {
            let batch = [t % 40, (7 * t + 3) % 40, (13 * t + 1) % 40];
            if adapter {
                s.advance(&mut st, &est, &batch, 1e-3, &mut rng).unwrap();
            } else {
                k.step(&mut st, &m, &batch, 1e-3, &mut rng).unwrap();
            }
        }
        st.theta().to_vec()
    };
    assert_eq!(run(true), run(false));
}
