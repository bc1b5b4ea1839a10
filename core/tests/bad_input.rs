//! Each class of bad input gets its error, and loses nothing: the state is untouched.

use sgld::estimate::{WeightedMoments, sampling_threshold, threshold_scratch_len};
use sgld::gradient::{MiniBatch, sample_batch};
use sgld::kernels;
use sgld::models::{
    BitRows, Gaussian, Laplace, LinearRegression, LogisticBits, LogisticDense, LogisticSparse,
    SparseRows, TiedMixture,
};
use sgld::schedule::{Constant, Polynomial};
use sgld::{Error, Sgld, noise::default_rng};

const X: [f32; 6] = [1.0, 0.5, 1.0, -1.0, 1.0, 2.0];
const Y: [f32; 3] = [1.0, -1.0, 1.0];

fn model() -> LogisticDense<'static, Gaussian> {
    LogisticDense::new(&X, &Y, 2, Gaussian::new(1.0).unwrap()).unwrap()
}

#[test]
fn wrong_lengths() {
    assert!(matches!(
        kernels::dot(&[1.0; 3], &[1.0; 4]),
        Err(Error::LengthMismatch {
            expected: 3,
            found: 4,
            ..
        })
    ));
    assert!(matches!(
        kernels::axpy(1.0, &[1.0; 3], &mut [0.0; 2]),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        kernels::langevin_update(&mut [0.0; 3], &[0.0; 2], &[0.0; 3], 0.1),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        kernels::langevin_update_precond(&mut [0.0; 3], &[0.0; 3], &[0.0; 3], &[1.0; 2], 0.1),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        LogisticDense::new(&X[..5], &Y, 2, Laplace::new(1.0).unwrap()),
        Err(Error::LengthMismatch { .. })
    ));
    let m = model();
    let est = MiniBatch::new(&m);
    assert!(matches!(
        est.gradient(&[0.0; 3], &[0], &mut [0.0; 2]),
        Err(Error::LengthMismatch { what: "theta", .. })
    ));
    let mut theta = [0.0f32; 2];
    let mut small = [0.0f32; 3];
    assert!(matches!(
        Sgld::init(&mut theta, &mut small),
        Err(Error::LengthMismatch {
            what: "scratch",
            ..
        })
    ));
    // A chain of another dimension than the estimator: refused, θ untouched.
    let mut theta3 = [0.5f32; 3];
    let mut scratch = [0.0f32; 6];
    let mut state = Sgld::init(&mut theta3, &mut scratch).unwrap();
    let r = Sgld::new().step(&mut state, &est, &[0], 0.1, &mut default_rng(1));
    assert!(matches!(r, Err(Error::LengthMismatch { .. })));
    assert_eq!(state.theta(), &[0.5; 3]);
    let mut scr = [0.0; 16];
    assert!(matches!(
        sampling_threshold(&[0.0; 5], 2, 3, 0.1, 10, None, &mut scr),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        sampling_threshold(&[0.0; 6], 2, 3, 0.1, 10, None, &mut scr[..3]),
        Err(Error::LengthMismatch { .. })
    ));
    let mut store = [0.0; 6];
    let mut w = WeightedMoments::new(&mut store, 2).unwrap();
    assert!(matches!(
        w.push(1.0, &[1.0]),
        Err(Error::LengthMismatch { .. })
    ));
    assert_eq!(w.count(), 0);
}

#[test]
fn nan_and_inf_in_data_parameters_and_values() {
    let mut x = X;
    x[3] = f32::NAN;
    assert!(matches!(
        LogisticDense::new(&x, &Y, 2, Laplace::new(1.0).unwrap()),
        Err(Error::NonFinite { what: "x" })
    ));
    assert!(matches!(
        TiedMixture::paper(&[0.0, f32::INFINITY]),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(
        LinearRegression::new(&X, &[1.0, f32::NAN, 0.0], 2, 1.0, 1.0, 1.0),
        Err(Error::NonFinite { what: "y" })
    ));
    let mut theta = [0.0, f32::NAN];
    let mut scratch = [0.0; 4];
    assert!(matches!(
        Sgld::init(&mut theta, &mut scratch),
        Err(Error::NonFinite { what: "theta" })
    ));
    let m = model();
    assert!(matches!(
        MiniBatch::new(&m).gradient(&[f32::INFINITY, 0.0], &[0], &mut [0.0; 2]),
        Err(Error::NonFinite { .. })
    ));
    let mut store = [0.0; 3];
    let mut w = WeightedMoments::new(&mut store, 1).unwrap();
    assert!(matches!(
        w.push(1.0, &[f32::NAN]),
        Err(Error::NonFinite { .. })
    ));
    assert!(w.push(f64::NAN, &[1.0]).is_err());
    assert_eq!(w.count(), 0);
    let mut scr = [0.0; 16];
    assert!(matches!(
        sampling_threshold(&[0.0, f32::NAN, 1.0, 2.0], 2, 2, 0.1, 10, None, &mut scr),
        Err(Error::NonFinite { .. })
    ));
    assert!(Gaussian::new(f32::INFINITY).is_err());
}

#[test]
fn empty_batch_and_empty_data() {
    let m = model();
    let est = MiniBatch::new(&m);
    let mut theta = [0.25f32; 2];
    let mut scratch = [0.0; 4];
    let mut state = Sgld::init(&mut theta, &mut scratch).unwrap();
    assert_eq!(
        Sgld::new().step(&mut state, &est, &[], 0.1, &mut default_rng(1)),
        Err(Error::EmptyBatch)
    );
    assert_eq!(state.theta(), &[0.25; 2]);
    assert_eq!(state.steps(), 0);
    assert_eq!(
        est.gradient(&[0.0; 2], &[], &mut [0.0; 2]),
        Err(Error::EmptyBatch)
    );
    assert_eq!(
        sample_batch(&mut default_rng(1), 10, &mut []),
        Err(Error::EmptyBatch)
    );
    assert!(matches!(
        sample_batch(&mut default_rng(1), 0, &mut [0; 3]),
        Err(Error::Empty { .. })
    ));
    assert!(matches!(TiedMixture::paper(&[]), Err(Error::Empty { .. })));
    assert!(matches!(
        LogisticDense::new(&[], &[], 2, Laplace::new(1.0).unwrap()),
        Err(Error::Empty { .. })
    ));
    assert!(matches!(
        Sgld::init(&mut [], &mut []),
        Err(Error::Empty { .. })
    ));
    assert!(matches!(
        WeightedMoments::new(&mut [], 0),
        Err(Error::Empty { .. })
    ));
}

#[test]
fn non_positive_or_non_finite_step_sizes() {
    let m = model();
    let est = MiniBatch::new(&m);
    let mut theta = [0.25f32; 2];
    let mut scratch = [0.0; 4];
    let mut state = Sgld::init(&mut theta, &mut scratch).unwrap();
    for eps in [0.0f32, -0.1, f32::NAN, f32::INFINITY, -0.0] {
        let r = Sgld::new().step(&mut state, &est, &[0], eps, &mut default_rng(1));
        assert!(
            matches!(r, Err(Error::InvalidStepSize { .. })),
            "eps {eps}: {r:?}"
        );
        assert!(matches!(
            kernels::langevin_update(&mut [0.0], &[0.0], &[0.0], eps),
            Err(Error::InvalidStepSize { .. })
        ));
        assert!(Constant::new(eps).is_err());
    }
    assert_eq!(state.theta(), &[0.25; 2]);
    assert!(matches!(
        sampling_threshold(&[0.0; 4], 2, 2, 0.0, 10, None, &mut [0.0; 8]),
        Err(Error::InvalidStepSize { .. })
    ));
    assert!(Polynomial::from_range(0.0, 0.0, 0.55, 10).is_err());
}

#[test]
fn absurd_step_size_is_refused_not_propagated() {
    // A finite step so large that the proposal overflows f32: the step is refused, θ kept.
    let m = model();
    let est = MiniBatch::new(&m);
    let mut theta = [100.0f32; 2];
    let mut scratch = [0.0; 4];
    let mut state = Sgld::init(&mut theta, &mut scratch).unwrap();
    let info = Sgld::new()
        .step(&mut state, &est, &[0, 1], f32::MAX, &mut default_rng(1))
        .unwrap();
    assert!(info.non_finite);
    assert_eq!(state.theta(), &[100.0; 2]);
    assert_eq!(state.refused(), 1);
}

#[test]
fn overflowing_steps_are_taken_back_on_every_path() {
    // Dimensions on each path of the in-place step (scalar, whole vectors, a last vector
    // that overlaps the one before), with and without clipping: the step overflows, is
    // refused, and θ is restored bit for bit from the copy the step kept.
    for d in [2usize, 16, 20, 124] {
        let x: Vec<f32> = (0..3 * d)
            .map(|k| ((k * 7 % 11) as f32 - 5.0) / 4.0)
            .collect();
        let m = LogisticDense::new(&x, &Y, d, Gaussian::new(1.0).unwrap()).unwrap();
        let est = MiniBatch::new(&m);
        let start: Vec<f32> = (0..d).map(|j| 100.0 + j as f32 / 3.0).collect();
        for sampler in [Sgld::new(), Sgld::new().with_clip(1e30).unwrap()] {
            let mut theta = start.clone();
            let mut scratch = vec![0.0; Sgld::scratch_len(d)];
            let mut state = Sgld::init(&mut theta, &mut scratch).unwrap();
            let info = sampler
                .step(&mut state, &est, &[0, 1, 2], f32::MAX, &mut default_rng(1))
                .unwrap();
            assert!(info.non_finite, "d {d}");
            assert!(info.grad_norm.is_finite() && info.grad_norm > 0.0, "d {d}");
            assert_eq!(state.theta(), &start[..], "d {d}");
            assert_eq!(state.refused(), 1);
            // The chain goes on from the restored θ.
            let info = sampler
                .step(&mut state, &est, &[0, 1, 2], 1e-4, &mut default_rng(2))
                .unwrap();
            assert!(!info.non_finite && info.noise_norm > 0.0, "d {d}");
            assert!(state.theta().iter().all(|t| t.is_finite()));
        }
    }
}

#[test]
fn non_finite_gradient_is_reported_and_theta_kept() {
    // log σ² = −200: e^{200} overflows f32, so the gradient is infinite.
    let y = [1.0f32, 2.0, 3.0];
    let lr = LinearRegression::new(&X, &y, 2, 1.0, 1.0, 1.0).unwrap();
    let est = MiniBatch::new(&lr);
    for sampler in [Sgld::new(), Sgld::new().with_clip(10.0).unwrap()] {
        let mut theta = [0.1f32, 0.2, -200.0];
        let mut scratch = [0.0; 6];
        let mut state = Sgld::init(&mut theta, &mut scratch).unwrap();
        let info = sampler
            .step(&mut state, &est, &[0, 2], 1e-3, &mut default_rng(1))
            .unwrap();
        assert!(info.non_finite && !info.grad_norm.is_finite());
        assert_eq!(state.theta(), &[0.1, 0.2, -200.0]);
    }
}

#[test]
fn index_out_of_range() {
    let m = model();
    let est = MiniBatch::new(&m);
    let mut theta = [0.25f32; 2];
    let mut scratch = [0.0; 4];
    let mut state = Sgld::init(&mut theta, &mut scratch).unwrap();
    let r = Sgld::new().step(&mut state, &est, &[0, 3], 0.1, &mut default_rng(1));
    assert_eq!(r, Err(Error::IndexOutOfRange { index: 3, len: 3 }));
    assert_eq!(state.theta(), &[0.25; 2]);
    assert_eq!(
        kernels::sparse_dot(&[0, 4], &[1.0; 4]),
        Err(Error::IndexOutOfRange { index: 4, len: 4 })
    );
    assert!(kernels::sparse_axpy(1.0, &[9], &mut [0.0; 4]).is_err());
    assert!(matches!(
        SparseRows::new(&[0, 2], &[0, 5], 5),
        Err(Error::IndexOutOfRange { index: 5, len: 5 })
    ));
    // Bitmap rows: a bit past the features, a row past the table, a bit past `w`.
    assert_eq!(
        BitRows::new(&[0, 0, 0, 1 << 4], 20).err(),
        Some(Error::IndexOutOfRange { index: 20, len: 20 })
    );
    assert_eq!(
        kernels::bitmap_dots(&[1, 2], 1, &[0, 2], &[1.0; 16], &mut [0.0; 2]),
        Err(Error::IndexOutOfRange { index: 2, len: 2 })
    );
    assert_eq!(
        kernels::bitmap_dots(&[1 << 4], 1, &[0], &[1.0; 4], &mut [0.0]),
        Err(Error::IndexOutOfRange { index: 4, len: 4 })
    );
    let mut y = [0.5f32; 4];
    assert!(kernels::bitmap_axpys(&[1.0], &[1 << 9], 1, &[0], &mut y).is_err());
    assert_eq!(y, [0.5; 4]);
}

#[test]
fn invalid_parameters() {
    assert!(matches!(
        Laplace::new(0.0),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        Gaussian::new(-1.0),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        LogisticDense::new(&X, &[1.0, 0.0, 1.0], 2, Laplace::new(1.0).unwrap()),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        SparseRows::new(&[0, 3, 2], &[0, 1], 4),
        Err(Error::InvalidParameter { .. })
    ));
    let rows = SparseRows::new(&[0, 1, 2], &[0, 1], 2).unwrap();
    assert!(matches!(
        LogisticSparse::new(rows, &[1.0], Laplace::new(1.0).unwrap()),
        Err(Error::LengthMismatch { .. })
    ));
    // Bitmap rows: no features, no rows, a partial row, a buffer of the wrong size,
    // labels that do not match the rows, a zero stride, a table of partial rows.
    assert!(matches!(BitRows::new(&[1], 0), Err(Error::Empty { .. })));
    assert!(matches!(BitRows::new(&[], 4), Err(Error::Empty { .. })));
    assert!(matches!(
        BitRows::new(&[1, 2, 3], 20),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        BitRows::fill_from_sparse(&rows, &mut [0u16; 3]),
        Err(Error::LengthMismatch { .. })
    ));
    let bits = BitRows::new(&[1, 2], 2).unwrap();
    assert!(matches!(
        LogisticBits::new(bits, &[1.0], Laplace::new(1.0).unwrap()),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        LogisticBits::new(bits, &[1.0, 0.5], Laplace::new(1.0).unwrap()),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        kernels::bitmap_dots(&[1], 0, &[0], &[1.0], &mut [0.0]),
        Err(Error::Empty { .. })
    ));
    assert!(matches!(
        kernels::bitmap_dots(&[1, 2, 3], 2, &[0], &[1.0; 32], &mut [0.0]),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        kernels::bitmap_dots(&[1, 2], 1, &[0], &[1.0; 16], &mut [0.0; 2]),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        TiedMixture::new(&[1.0], 10.0, 0.0, 2.0),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        LinearRegression::new(&X, &Y, 2, 1.0, -1.0, 1.0),
        Err(Error::InvalidParameter { .. })
    ));
    assert!(matches!(
        kernels::langevin_update_precond(&mut [0.0], &[0.0], &[0.0], &[-1.0], 0.1),
        Err(Error::InvalidParameter { .. })
    ));
    let mut scr = [0.0; threshold_scratch_len(1, 2)];
    assert!(matches!(
        sampling_threshold(&[0.0; 2], 1, 2, 0.1, 10, None, &mut scr),
        Err(Error::InvalidParameter { .. })
    ));
}

/// Found by the `model_logistic_sparse` fuzz target: a subnormal Laplace scale made the
/// prior gradient 1/b infinite for a valid-looking prior.
#[test]
fn priors_whose_reciprocal_overflows_are_refused() {
    assert!(Laplace::new(1e-45).is_err());
    assert!(Laplace::new(f32::MIN_POSITIVE / 4.0).is_err());
    assert!(Gaussian::new(1e-40).is_err());
    assert!(Laplace::new(1e-30).is_ok() && Gaussian::new(1e-30).is_ok());
}

/// Found by the `schedule` fuzz target: an end step that is not a positive f32, and a
/// range whose solve cannot meet its end points.
#[test]
fn schedules_that_cannot_be_met_are_refused() {
    assert!(Polynomial::from_range(19600.56, 1.4e-134, 0.55, 1000).is_err());
    assert!(Polynomial::from_range(1e39, 1e-3, 0.55, 1000).is_err());
    assert!(Polynomial::from_range(1e30, 1e-30, 0.01, 1000).is_err());
    assert!(Polynomial::from_range(1e-2, 1e-4, 0.55, 1000).is_ok());
}

/// Found by the `threshold` fuzz target: a finite but absurd step size made α infinite.
#[test]
fn threshold_refuses_step_sizes_beyond_f32() {
    let mut scratch = [0.0; threshold_scratch_len(2, 1)];
    let r = sampling_threshold(&[0.0, 1.0], 2, 1, 1e300, 10, None, &mut scratch);
    assert!(matches!(r, Err(Error::InvalidStepSize { .. })));
}

/// Found by the `weighted_estimator` fuzz target: huge weights overflowed Σw·δ².
#[test]
fn estimator_with_huge_weights_stays_finite_or_refuses() {
    let mut store = [0.0; 3];
    let mut m = WeightedMoments::new(&mut store, 1).unwrap();
    m.push(1e300, &[1.0]).unwrap();
    m.push(1e300, &[-3.0e38]).unwrap();
    assert!(m.variance(0).is_finite() && m.mean(0).is_finite());
    assert!(
        m.push(f64::MAX, &[0.0]).is_err(),
        "a total weight that overflows is refused"
    );
    assert_eq!(m.count(), 2);
}

#[test]
fn errors_display_what_was_wrong() {
    let e = Error::LengthMismatch {
        what: "theta",
        expected: 3,
        found: 2,
    };
    assert_eq!(e.to_string(), "theta has length 2, expected 3");
    assert_eq!(Error::EmptyBatch.to_string(), "the mini-batch is empty");
    assert!(
        Error::InvalidStepSize { value: -1.0 }
            .to_string()
            .contains("-1")
    );
    let _: &dyn std::error::Error = &e;
}
