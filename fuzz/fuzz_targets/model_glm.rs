//! Generalised linear models (Poisson with a log link, probit, logit): the constructors
//! refuse responses outside the family and rows that are not whole; nothing panics on any
//! θ or batch; with moderate θ and responses the gradient is finite, the sparse rows (binary
//! and with values) give the dense rows' gradient, and the control variate's difference is
//! 0 at its centre; the interleaved pass of chains in lockstep takes any count, lengths and
//! indices (the dense rows have none) and gives each point its own pass's gradient; the
//! probit helpers are finite and ordered on any input.
#![no_main]
#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use sgld::models::{
    DenseRows, Design, Family, Gaussian, Glm, Logit, Model, Poisson, Probit, SparseRows,
    ValuedRows, inverse_mills, log_normal_cdf,
};

/// The fuzzer's input, taken apart below.
type Input = (u8, Vec<u8>, Vec<u8>, Vec<f32>, Vec<f32>, Vec<u16>, f64);

fuzz_target!(|input: Input| {
    let (dim, lens, raw_idx, responses, theta, raw_batch, t) = input;
    // The probit helpers: φ/Φ ≥ 0 and ln Φ ≤ 0 wherever t is a number.
    if !t.is_nan() {
        let (r, l) = (inverse_mills(t), log_normal_cdf(t));
        assert!(r >= 0.0 && !r.is_nan(), "inverse Mills {r} at {t}");
        assert!(l <= 0.0 && !l.is_nan(), "ln Φ {l} at {t}");
    }
    let d = dim as usize % 9 + 1;
    let mut offsets = vec![0usize];
    for &l in lens.iter().take(32) {
        offsets.push((offsets.last().unwrap() + (l as usize % 6)).min(raw_idx.len()));
    }
    let n = offsets.len() - 1;
    let Ok(rows) = SparseRows::narrow(&offsets, &raw_idx[..offsets[n]], d) else {
        return;
    };
    // The same rows with values in [−1, 1).
    let values: Vec<f32> = raw_idx[..offsets[n]]
        .iter()
        .map(|&b| b as f32 / 128.0 - 1.0)
        .collect();
    // The dense matrix of the rows, each stored index `p` adding `value(p)`.
    let dense_of = |value: &dyn Fn(usize) -> f32| {
        let mut x = vec![0.0f32; n * d];
        for i in 0..n {
            for (k, &j) in rows.row(i).iter().enumerate() {
                x[i * d + j as usize] += value(offsets[i] + k);
            }
        }
        x
    };
    let (x, xv) = (dense_of(&|_| 1.0), dense_of(&|p| values[p]));
    let dense = DenseRows::new(&x, d).unwrap();
    assert!(DenseRows::new(&x[..x.len().saturating_sub(1)], d).is_err() || d == 1 || n == 0);
    let valued = ValuedRows::new(rows, &values).unwrap();
    assert!(
        ValuedRows::new(rows, &values[..values.len().saturating_sub(1)]).is_err()
            || values.is_empty()
    );
    let dense_v = DenseRows::new(&xv, d).unwrap();
    let prior = Gaussian::new(1.0).unwrap();
    let y: Vec<f32> = responses.iter().take(n).copied().collect();
    check(Poisson, dense, rows, &y, &theta, &raw_batch, prior);
    let labels: Vec<f32> = y
        .iter()
        .map(|&v| if v > 0.0 { 1.0 } else { -1.0 })
        .collect();
    check(Probit, dense, rows, &labels, &theta, &raw_batch, prior);
    check(Probit, dense, rows, &y, &theta, &raw_batch, prior);
    check(Poisson, dense_v, valued, &y, &theta, &raw_batch, prior);
    check(Logit, dense_v, valued, &labels, &theta, &raw_batch, prior);
    check(Logit, dense_v, valued, &y, &theta, &raw_batch, prior);
});

fn check<F: Family, R: Design + Copy>(
    family: F,
    dense: DenseRows<'_>,
    rows: R,
    y: &[f32],
    theta: &[f32],
    raw_batch: &[u16],
    prior: Gaussian,
) {
    let valid = y.len() == rows.len() && !y.is_empty() && y.iter().all(|&v| F::check(v).is_ok());
    let a = Glm::new(dense, y, family, prior);
    let b = Glm::new(rows, y, family, prior);
    assert_eq!(a.is_ok(), valid);
    assert_eq!(b.is_ok(), valid);
    let (Ok(a), Ok(b)) = (a, b) else { return };
    // Any θ length and batch: no panic.
    let batch: Vec<usize> = raw_batch.iter().map(|&i| i as usize).collect();
    let d = a.dim();
    let mut g = vec![0.0f32; d];
    a.add_log_lik_grad(theta, &batch, &mut g);
    let _ = b.log_lik(theta, &batch);
    b.log_lik_grad_difference(theta, theta, &batch, &mut g);
    // The interleaved pass: any count, any θ length, any indices; the dense rows have
    // no such pass, the sparse ones take every count of one to eight that fits.
    let k = raw_batch.len() % 10;
    let mut gs = vec![0.0f32; theta.len()];
    let mut vs = vec![0.0f64; k];
    assert!(!a.add_log_lik_grads_interleaved(theta, k, &batch, &mut gs, &mut vs));
    let fits = (1..=8).contains(&k) && theta.len() == d * k;
    assert_eq!(
        b.add_log_lik_grads_interleaved(theta, k, &batch, &mut gs, &mut vs),
        fits
    );
    // Moderate θ of the right length, batch indices in range: finite, and the same
    // gradient from both row kinds (sums of the same terms in another order).
    let moderate_y = y.iter().all(|v| v.abs() <= 1e6);
    if theta.len() != d || !theta.iter().all(|t| t.is_finite() && t.abs() <= 3.0) || !moderate_y {
        return;
    }
    let batch: Vec<usize> = batch.iter().map(|&i| i % y.len()).collect();
    let (mut ga, mut gb) = (vec![0.0f32; d], vec![0.0f32; d]);
    a.scaled_grad(theta, &batch, 1.0, &mut ga);
    b.scaled_grad(theta, &batch, 1.0, &mut gb);
    let mag: f64 = batch.len() as f64
        * 6.0
        * (y.iter().fold(1.0f32, |m, v| m.max(v.abs())) as f64 + 20.0f64.exp());
    for j in 0..d {
        assert!(ga[j].is_finite() && gb[j].is_finite(), "{ga:?} {gb:?}");
        assert!(
            common::close(ga[j], gb[j], mag, 64.0),
            "dense {} vs sparse {}",
            ga[j],
            gb[j]
        );
    }
    assert!(a.log_lik(theta, &batch).is_finite());
    // The same θ twice, interleaved: each its own pass's gradient and log likelihood.
    let twice: Vec<f32> = theta.iter().flat_map(|&t| [t, t]).collect();
    let (mut g2, mut v2) = (vec![0.0f32; 2 * d], [0.0f64; 2]);
    assert!(b.add_log_lik_grads_interleaved(&twice, 2, &batch, &mut g2, &mut v2));
    let mut own = vec![0.0f32; d];
    b.add_log_lik_grad(theta, &batch, &mut own);
    let lik = b.log_lik(theta, &batch);
    for c in 0..2 {
        assert!(
            common::close(v2[c] as f32, lik as f32, mag, 64.0),
            "{} vs {lik}",
            v2[c]
        );
        for j in 0..d {
            assert!(
                common::close(g2[j * 2 + c], own[j], mag, 64.0),
                "{} vs {}",
                g2[j * 2 + c],
                own[j]
            );
        }
    }
    b.log_lik_grad_difference(theta, theta, &batch, &mut gb);
    assert!(
        gb.iter().all(|&v| v == 0.0),
        "difference at the centre {gb:?}"
    );
}
