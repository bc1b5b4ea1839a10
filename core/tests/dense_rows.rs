//! Dense rows read in place ([`DenseRows::strided`]) with an intercept that no column of
//! ones holds ([`DenseRows::with_intercept`]): the same model as the packed design with
//! the column, for logistic regression and a GLM, and the layouts that are refused.

use sgld::Error;
use sgld::models::{DenseRows, Design, Gaussian, Glm, LogisticDense, Model, Poisson};
use sgld::noise::{default_rng, fill_normal};

fn normals(n: usize, seed: u64) -> Vec<f32> {
    let mut v = vec![0.0; n];
    fill_normal(&mut default_rng(seed), &mut v);
    v
}

/// `n` rows of `d` features: packed with a last column of ones (`n × (d + 1)`), and as
/// records of `d + 1` values with the response at `at` (0 or `d`) holding `fill`.
fn layouts(n: usize, d: usize, at: usize, fill: f32) -> (Vec<f32>, Vec<f32>) {
    let x = normals(n * d, 7);
    let mut ones = Vec::with_capacity(n * (d + 1));
    let mut records = Vec::with_capacity(n * (d + 1));
    for row in x.chunks_exact(d) {
        ones.extend_from_slice(row);
        ones.push(1.0);
        let mut r = row.to_vec();
        r.insert(at, fill);
        records.extend_from_slice(&r);
    }
    (ones, records)
}

/// Two models of the same parameters agree on every value and gradient the samplers
/// ask for, up to the order of the sums (the intercept is added after the row's dot
/// product, not inside it).
fn agree(a: &impl Model, b: &impl Model, theta: &[f32], centre: &[f32], batch: &[usize]) {
    let d = a.dim();
    assert_eq!((a.dim(), a.len()), (b.dim(), b.len()));
    let close = |u: f64, v: f64, what: &str| {
        assert!(
            (u - v).abs() <= 1e-5 * (1.0 + v.abs()),
            "{what}: {u} vs {v}"
        );
    };
    close(a.log_lik(theta, batch), b.log_lik(theta, batch), "log_lik");
    close(a.log_prior(theta), b.log_prior(theta), "log_prior");
    let (mut ga, mut gb) = (vec![0.0f32; d], vec![0.0f32; d]);
    a.add_log_lik_grad(theta, batch, &mut ga);
    b.add_log_lik_grad(theta, batch, &mut gb);
    let (mut va, mut vb) = (vec![0.0f32; d], vec![0.0f32; d]);
    let fa = a.add_log_lik_grad_and_value(theta, batch, &mut va);
    let fb = b.add_log_lik_grad_and_value(theta, batch, &mut vb);
    close(fa, fb, "value with the gradient");
    let (mut da, mut db) = (vec![0.0f32; d], vec![0.0f32; d]);
    a.log_lik_grad_difference(theta, centre, batch, &mut da);
    b.log_lik_grad_difference(theta, centre, batch, &mut db);
    for j in 0..d {
        close(ga[j] as f64, gb[j] as f64, &format!("gradient {j}"));
        close(
            va[j] as f64,
            vb[j] as f64,
            &format!("gradient with the value {j}"),
        );
        close(da[j] as f64, db[j] as f64, &format!("difference {j}"));
    }
    a.prefetch(batch);
}

#[test]
fn records_with_an_intercept_are_the_design_with_a_column_of_ones() {
    let (n, d) = (41, 19);
    let y: Vec<f32> = normals(n, 3)
        .iter()
        .map(|v| if *v > 0.0 { 1.0 } else { -1.0 })
        .collect();
    let prior = Gaussian::new(2.0).unwrap();
    let theta = normals(d + 1, 4);
    let centre = normals(d + 1, 5);
    // Every row, a repeat, and an index past the end (which adds nothing).
    let batch: Vec<usize> = (0..n).chain([2, 2, n + 3]).collect();
    for at in [0, d] {
        let (ones, records) = layouts(n, d, at, 1.0);
        let packed = LogisticDense::new(&ones, &y, d + 1, prior).unwrap();
        let offset = (at == 0) as usize;
        let rows = DenseRows::strided(&records, d, d + 1, offset)
            .unwrap()
            .with_intercept();
        assert_eq!((rows.len(), rows.dim()), (n, d + 1));
        let in_place = LogisticDense::from_rows(rows, &y, prior).unwrap();
        agree(&in_place, &packed, &theta, &centre, &batch);
        for i in [0, 7, n - 1] {
            let (u, v) = (in_place.margin(&theta, i), packed.margin(&theta, i));
            assert!((u - v).abs() <= 1e-5 * (1.0 + v.abs()), "margin {i}");
        }
        assert_eq!(in_place.margin(&theta, n), 0.0, "past the end");

        // A Poisson GLM on the same rows, counts as responses.
        let counts: Vec<f32> = (0..n).map(|i| (i % 4) as f32).collect();
        let small: Vec<f32> = theta.iter().map(|t| 0.1 * t).collect();
        let glm_packed = Glm::new(
            DenseRows::new(&ones, d + 1).unwrap(),
            &counts,
            Poisson,
            prior,
        );
        let glm_in_place = Glm::new(rows, &counts, Poisson, prior);
        agree(
            &glm_in_place.unwrap(),
            &glm_packed.unwrap(),
            &small,
            &centre,
            &batch,
        );
    }
}

#[test]
fn the_values_between_rows_are_neither_read_nor_checked() {
    let (n, d) = (9, 4);
    let y = vec![1.0f32; n];
    let (ones, mut records) = layouts(n, d, d, 0.0);
    // A NaN and an infinity where the response would be: not part of any row.
    records[d] = f32::NAN;
    records[3 * (d + 1) + d] = f32::INFINITY;
    let rows = DenseRows::strided(&records, d, d + 1, 0)
        .unwrap()
        .with_intercept();
    let packed = LogisticDense::new(&ones, &y, d + 1, Gaussian::new(1.0).unwrap()).unwrap();
    let in_place = LogisticDense::from_rows(rows, &y, Gaussian::new(1.0).unwrap()).unwrap();
    let theta = normals(d + 1, 9);
    agree(
        &in_place,
        &packed,
        &theta,
        &theta,
        &(0..n).collect::<Vec<_>>(),
    );
    // A NaN inside a row is refused.
    records[2 * (d + 1) + 1] = f32::NAN;
    assert!(matches!(
        DenseRows::strided(&records, d, d + 1, 0),
        Err(Error::NonFinite { .. })
    ));
    // Values a loader checked already are not read again: the layout alone is checked,
    // and a NaN left in gives a non-finite gradient, not a panic.
    let trusted = DenseRows::strided_prechecked(&records, d, d + 1, 0).unwrap();
    assert_eq!(trusted.len(), n);
    assert!(DenseRows::strided_prechecked(&records, d + 2, d + 1, 0).is_err());
    let m = LogisticDense::from_rows(trusted, &y, Gaussian::new(1.0).unwrap()).unwrap();
    let mut g = vec![0.0f32; d];
    m.add_log_lik_grad(&theta[..d], &[2], &mut g);
    assert!(g.iter().any(|v| !v.is_finite()));
}

#[test]
fn layouts_that_cannot_hold_the_rows_are_refused() {
    let x = [1.0f32; 12];
    let invalid =
        |r: Result<DenseRows<'_>, Error>| matches!(r, Err(Error::InvalidParameter { .. }));
    assert!(
        invalid(DenseRows::strided(&x, 3, 2, 0)),
        "rows that overlap"
    );
    assert!(
        matches!(DenseRows::strided(&x, 0, 1, 0), Err(Error::Empty { .. })),
        "rows of no value"
    );
    // Whole rows only: 12 values from offset 1 in strides of 4 hold two rows of 3
    // (at 1 and 5) and a third (at 9, ending at 12).
    assert_eq!(DenseRows::strided(&x, 3, 4, 1).unwrap().len(), 3);
    assert_eq!(DenseRows::strided(&x, 3, 4, 2).unwrap().len(), 2);
    assert_eq!(DenseRows::strided(&x, 3, 4, 20).unwrap().len(), 0);
    assert_eq!(DenseRows::strided(&x, 3, 4, usize::MAX).unwrap().len(), 0);
    // One label a row.
    let rows = DenseRows::strided(&x, 3, 4, 0).unwrap();
    let r = LogisticDense::from_rows(rows, &[1.0, -1.0], Gaussian::new(1.0).unwrap());
    assert!(matches!(r, Err(Error::LengthMismatch { .. })), "{r:?}");
    let r = LogisticDense::from_rows(rows, &[1.0, 0.0, 1.0], Gaussian::new(1.0).unwrap());
    assert!(r.is_err(), "labels must be ±1");
}
