//! Gradient clipping by norm: the update uses the gradient rescaled to norm `c` and
//! reports it; a gradient below the norm is untouched.

use sgld::Sgld;
use sgld::gradient::MiniBatch;
use sgld::models::{Gaussian, LogisticDense};
use sgld::noise::{default_rng, fill_normal};

#[test]
fn clipped_step_equals_the_update_with_the_rescaled_gradient() {
    // Far from the mode, the Gaussian prior's gradient −θ/σ² is large.
    let x = [1.0f32, 0.5, 1.0, -1.0];
    let y = [1.0f32, -1.0];
    let m = LogisticDense::new(&x, &y, 2, Gaussian::new(0.01).unwrap()).unwrap();
    let est = MiniBatch::new(&m);
    let start = [30.0f32, -40.0];
    for clip in [None, Some(5.0f32), Some(1e6)] {
        let mut theta = start;
        let mut scratch = [0.0f32; 4];
        let mut state = Sgld::init(&mut theta, &mut scratch).unwrap();
        let sampler = match clip {
            Some(c) => Sgld::new().with_clip(c).unwrap(),
            None => Sgld::new(),
        };
        let eps = 1e-4f32;
        let info = sampler
            .step(&mut state, &est, &[0, 1], eps, &mut default_rng(3))
            .unwrap();
        // The same gradient and noise by hand.
        let mut g = [0.0f32; 2];
        est.gradient(&start, &[0, 1], &mut g).unwrap();
        let norm = (g[0] * g[0] + g[1] * g[1]).sqrt();
        assert!((info.grad_norm - norm).abs() <= 1e-3 * norm);
        let f = match clip {
            Some(c) if norm > c => c / norm,
            _ => 1.0,
        };
        assert_eq!(info.clipped, f < 1.0);
        let mut eta = [0.0f32; 2];
        fill_normal(&mut default_rng(3), &mut eta);
        for j in 0..2 {
            let want = start[j] + 0.5 * eps * f * g[j] + eps.sqrt() * eta[j];
            assert!(
                (state.theta()[j] - want).abs() <= 1e-4 * (1.0 + want.abs()),
                "clip {clip:?}: {} vs {want}",
                state.theta()[j]
            );
        }
    }
    assert!(Sgld::new().with_clip(f32::NAN).is_err());
    assert!(Sgld::new().with_clip(-1.0).is_err());
}
