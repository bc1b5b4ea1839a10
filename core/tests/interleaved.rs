//! The interleaved full-data pass (chains in lockstep) against each point's own pass.

use proptest::prelude::*;
use sgld::gradient::{full_log_posterior, log_lik_grads_interleaved};
use sgld::models::{
    DenseRows, Flat, Gaussian, Glm, LogisticDense, LogisticSparse, Logit, Model, Poisson, Probit,
    SparseRows, ValuedRows,
};

/// Rows of distinct sorted indices below `d`, labels ±1.
fn rows_strategy() -> impl Strategy<Value = (usize, Vec<Vec<u32>>, Vec<f32>)> {
    (1usize..40).prop_flat_map(|d| {
        let row = prop::collection::btree_set(0..d as u32, 0..d.min(12))
            .prop_map(|s| s.into_iter().collect::<Vec<u32>>());
        (
            Just(d),
            prop::collection::vec((row, prop::bool::ANY), 1..70),
        )
            .prop_map(|(d, rows)| {
                let y = rows.iter().map(|r| if r.1 { 1.0 } else { -1.0 }).collect();
                (d, rows.into_iter().map(|r| r.0).collect(), y)
            })
    })
}

/// Values in [−2, 2] on a grid of 0.001 from `seed` (xorshift).
fn uniform(seed: u64) -> impl FnMut() -> f32 {
    let mut s = seed | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s % 4001) as f32 / 1000.0 - 2.0
    }
}

fn csr(rows: &[Vec<u32>]) -> (Vec<usize>, Vec<u32>) {
    let mut offsets = vec![0];
    let mut idx = Vec::new();
    for r in rows {
        idx.extend_from_slice(r);
        offsets.push(idx.len());
    }
    (offsets, idx)
}

/// Each point's log likelihood and gradient over `range` in f64.
fn reference(
    d: usize,
    rows: &[Vec<u32>],
    y: &[f32],
    theta: &[f32],
    range: std::ops::Range<usize>,
) -> (f64, Vec<f64>) {
    let mut g = vec![0.0; d];
    let mut v = 0.0;
    for i in range {
        let z: f64 = rows[i].iter().map(|&j| theta[j as usize] as f64).sum();
        let u = y[i] as f64 * z;
        v += -(1.0 + (-u).exp()).ln();
        let w = y[i] as f64 / (1.0 + u.exp());
        for &j in &rows[i] {
            g[j as usize] += w;
        }
    }
    (v, g)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn interleaved_points_match_each_points_own_pass(
        (d, rows, y) in rows_strategy(),
        k in 1usize..=8,
        seed in any::<u64>(),
        cut in (0.0f64..1.0, 0.0f64..1.0),
    ) {
        let n = rows.len();
        let (offsets, idx) = csr(&rows);
        let idx16: Vec<u16> = idx.iter().map(|&j| j as u16).collect();
        let wide = LogisticSparse::new(SparseRows::new(&offsets, &idx, d).unwrap(), &y, Flat).unwrap();
        let narrow =
            LogisticSparse::new(SparseRows::narrow(&offsets, &idx16, d).unwrap(), &y, Flat).unwrap();
        let mut next = uniform(seed);
        let thetas: Vec<f32> = (0..d * k).map(|_| next()).collect();
        let (a, b) = ((cut.0 * n as f64) as usize, (cut.1 * n as f64) as usize);
        let range = a.min(b)..a.max(b);
        for model in [&wide as &dyn Model, &narrow as &dyn Model] {
            let (mut grads, mut tmp, mut values) = (vec![9.0f32; d * k], vec![0.0; d * k], vec![9.0; k]);
            prop_assert!(log_lik_grads_interleaved(
                model, &thetas, k, range.clone(), &mut grads, &mut tmp, &mut values
            ));
            for c in 0..k {
                let theta: Vec<f32> = (0..d).map(|j| thetas[j * k + c]).collect();
                let (v, g) = reference(d, &rows, &y, &theta, range.clone());
                let terms: usize = rows[range.clone()].iter().map(Vec::len).sum::<usize>() + range.len();
                let tol = 1e-5 * (1.0 + terms as f64);
                prop_assert!((values[c] - v).abs() <= tol, "value {c}: {} vs {v}", values[c]);
                for j in 0..d {
                    prop_assert!(
                        (grads[j * k + c] as f64 - g[j]).abs() <= tol,
                        "grad {j} of point {c}: {} vs {}", grads[j * k + c], g[j]
                    );
                }
            }
        }
        // The whole data set: the same sums as the point's own full-data pass.
        let (mut grads, mut tmp, mut values) = (vec![0.0f32; d * k], vec![0.0; d * k], vec![0.0; k]);
        prop_assert!(log_lik_grads_interleaved(&wide, &thetas, k, 0..n, &mut grads, &mut tmp, &mut values));
        let theta: Vec<f32> = (0..d).map(|j| thetas[j * k + k - 1]).collect();
        let (mut g, mut t) = (vec![0.0f32; d], vec![0.0f32; d]);
        let lp = full_log_posterior(&wide, &theta, &mut g, &mut t);
        prop_assert!((values[k - 1] - lp).abs() <= 1e-4 * (1.0 + lp.abs()));
        for j in 0..d {
            prop_assert!((grads[j * k + k - 1] - g[j]).abs() <= 1e-4 * (1.0 + g[j].abs()));
        }
    }
}

/// Each of the `k` interleaved points' gradient and log likelihood over `batch` against
/// the model's own one-point passes.
fn check_against_own_passes(
    model: &dyn Model,
    thetas: &[f32],
    k: usize,
    batch: &[usize],
) -> Result<(), TestCaseError> {
    let d = model.dim();
    let (mut grads, mut values) = (vec![0.0f32; d * k], vec![0.0; k]);
    prop_assert!(model.add_log_lik_grads_interleaved(thetas, k, batch, &mut grads, &mut values));
    for c in 0..k {
        let theta: Vec<f32> = (0..d).map(|j| thetas[j * k + c]).collect();
        let mut g = vec![0.0f32; d];
        model.add_log_lik_grad(&theta, batch, &mut g);
        let v = model.log_lik(&theta, batch);
        let scale: f32 = g.iter().map(|x| x.abs()).sum::<f32>() + batch.len() as f32;
        prop_assert!(
            (values[c] - v).abs() <= 1e-4 * (1.0 + v.abs()),
            "value {} vs {v}",
            values[c]
        );
        for j in 0..d {
            prop_assert!(
                (grads[j * k + c] - g[j]).abs() <= 1e-5 * (1.0 + scale),
                "grad {j} of point {c}: {} vs {}",
                grads[j * k + c],
                g[j]
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn glms_on_sparse_rows_interleave_with_and_without_values(
        (d, rows, y) in rows_strategy(),
        k in 1usize..=8,
        seed in any::<u64>(),
        batch in prop::collection::vec(0usize..100, 0..40),
    ) {
        let (offsets, idx) = csr(&rows);
        let mut next = uniform(seed);
        let values: Vec<f32> = idx.iter().map(|_| next()).collect();
        let thetas: Vec<f32> = (0..d * k).map(|_| next() * 0.5).collect();
        let counts: Vec<f32> = y.iter().map(|&v| if v > 0.0 { 3.0 } else { 0.0 }).collect();
        let sparse = SparseRows::new(&offsets, &idx, d).unwrap();
        let valued = ValuedRows::new(sparse, &values).unwrap();
        // Indices past the end (up to 99) add nothing, as in the one-point passes.
        check_against_own_passes(&Glm::new(valued, &y, Logit, Flat).unwrap(), &thetas, k, &batch)?;
        check_against_own_passes(&Glm::new(valued, &y, Probit, Flat).unwrap(), &thetas, k, &batch)?;
        check_against_own_passes(&Glm::new(valued, &counts, Poisson, Flat).unwrap(), &thetas, k, &batch)?;
        check_against_own_passes(&Glm::new(sparse, &y, Logit, Flat).unwrap(), &thetas, k, &batch)?;
    }
}

#[test]
fn what_does_not_fit_is_refused_and_nothing_written() {
    let (offsets, idx, y) = ([0, 2, 3], [0u32, 2, 1], [1.0f32, -1.0]);
    let model = LogisticSparse::new(SparseRows::new(&offsets, &idx, 3).unwrap(), &y, Flat).unwrap();
    let thetas = [0.5f32; 6];
    let untouched = |grads: &[f32], values: &[f64]| {
        grads.iter().all(|&g| g == 7.0) && values.iter().all(|&v| v == 7.0)
    };
    // k = 0, k = 9 (past the supported eight), lengths that do not match, a range past
    // the end or backwards.
    let cases: [(usize, usize, std::ops::Range<usize>, usize); 6] = [
        (0, 0, 0..2, 0),
        (9, 27, 0..2, 9),
        (2, 5, 0..2, 2),
        (2, 6, 0..2, 1),
        (2, 6, 0..3, 2),
        (2, 6, std::ops::Range { start: 2, end: 1 }, 2),
    ];
    for (k, len, range, nv) in cases {
        let th = vec![0.5f32; len];
        let (mut grads, mut tmp, mut values) =
            (vec![7.0f32; len], vec![7.0f32; len], vec![7.0; nv]);
        assert!(!log_lik_grads_interleaved(
            &model,
            &th,
            k,
            range.clone(),
            &mut grads,
            &mut tmp,
            &mut values
        ));
        assert!(untouched(&grads, &values), "k {k}, len {len}, {range:?}");
    }
    // A model without the pass says so.
    let x = [0.5f32, 1.0, -1.0, 0.2, 0.3, 0.1];
    let dense = LogisticDense::new(&x, &y, 3, Gaussian::new(1.0).unwrap()).unwrap();
    let (mut grads, mut tmp, mut values) = ([7.0f32; 6], [7.0f32; 6], [7.0; 2]);
    assert!(!log_lik_grads_interleaved(
        &dense,
        &thetas,
        2,
        0..2,
        &mut grads,
        &mut tmp,
        &mut values
    ));
    assert!(untouched(&grads, &values));
    assert!(!dense.add_log_lik_grads_interleaved(&thetas, 2, &[0, 1], &mut grads, &mut values));
    // Nor a GLM on dense rows; one on sparse rows refuses lengths that do not fit.
    let glm = Glm::new(DenseRows::new(&x, 3).unwrap(), &y, Logit, Flat).unwrap();
    assert!(!glm.add_log_lik_grads_interleaved(&thetas, 2, &[0, 1], &mut grads, &mut values));
    let sparse = Glm::new(SparseRows::new(&offsets, &idx, 3).unwrap(), &y, Logit, Flat).unwrap();
    assert!(!sparse.add_log_lik_grads_interleaved(
        &thetas[..5],
        2,
        &[0],
        &mut grads[..5],
        &mut values
    ));
    assert!(!sparse.add_log_lik_grads_interleaved(&thetas, 2, &[0], &mut grads, &mut values[..1]));
    assert!(!sparse.add_log_lik_grads_interleaved(&thetas, 9, &[0], &mut grads, &mut values));
    assert!(untouched(&grads, &values));
    // An empty `values` asks for the gradients alone: the same gradients.
    let (mut with, mut without, mut tmp) = ([0.0f32; 6], [0.0f32; 6], [0.0f32; 6]);
    assert!(log_lik_grads_interleaved(
        &model,
        &thetas,
        2,
        0..2,
        &mut with,
        &mut tmp,
        &mut [0.0; 2]
    ));
    assert!(log_lik_grads_interleaved(
        &model,
        &thetas,
        2,
        0..2,
        &mut without,
        &mut tmp,
        &mut []
    ));
    assert_eq!(with, without);
    let (mut with, mut without) = ([0.0f32; 6], [0.0f32; 6]);
    assert!(sparse.add_log_lik_grads_interleaved(&thetas, 2, &[0, 1], &mut with, &mut [0.0; 2]));
    assert!(sparse.add_log_lik_grads_interleaved(&thetas, 2, &[0, 1], &mut without, &mut []));
    assert_eq!(with, without);
    // The counts each says it takes.
    assert_eq!(model.interleaved_points(), 8);
    assert_eq!(sparse.interleaved_points(), 8);
    assert_eq!(dense.interleaved_points(), 0);
    assert_eq!(glm.interleaved_points(), 0);
    // Indices past the end of the data add nothing, as in the one-point pass.
    let (mut grads, mut values) = ([0.0f32; 6], [0.0; 2]);
    assert!(model.add_log_lik_grads_interleaved(&thetas, 2, &[5, 99], &mut grads, &mut values));
    assert!(grads.iter().all(|&g| g == 0.0) && values == [0.0, 0.0]);
}
