//! A reference posterior by a long exact-gradient MALA run (shared by the tests and the
//! Poisson example's test).

/// A reference posterior from a long exact-gradient MALA run: per parameter the mean,
/// the sd, and the batch-means Monte Carlo standard errors of both.
pub struct Reference {
    pub mean: Vec<f64>,
    pub sd: Vec<f64>,
    pub mean_se: Vec<f64>,
    pub sd_se: Vec<f64>,
    pub acceptance: f64,
}

/// MALA on `model`'s full data from θ = 0: a pilot of 20,000 steps at a small step sets a
/// diagonal metric from its second half's variances; then `steps` steps at ε = 0.8 in
/// that metric (the first tenth dropped), summarised over 50 batches.
pub fn mala_reference<M: sgld::models::Model>(model: &M, steps: usize) -> Reference {
    let d = model.dim();
    mala_reference_of(model, steps, vec![0.0; d], false, &|theta, out| {
        out.extend(theta.iter().map(|&v| v as f64))
    })
}

/// [`mala_reference`] from `start` of the quantities `f` appends for each draw (such as a
/// network's predictions, which its permuting units leave unchanged) instead of θ; with
/// `adapt`, the step moves toward 60% acceptance during the dropped first tenth (for
/// posteriors whose pilot variances are a poor metric, such as a network's).
pub fn mala_reference_of<M: sgld::models::Model>(
    model: &M,
    steps: usize,
    start: Vec<f32>,
    adapt: bool,
    f: &dyn Fn(&[f32], &mut Vec<f64>),
) -> Reference {
    use sgld::ChainState;
    use sgld::sampler::Mala;
    let d = model.dim();
    let mut rng = sgld::noise::default_rng(4242);
    let mut theta = start;
    let mut scratch = vec![0.0f32; Mala::<()>::scratch_len(d)];
    // Pilot: identity metric, a step small enough for the data's curvature.
    let pilot = Mala::new(model);
    let mut var = vec![0.0f64; d];
    {
        let mut eps = 1e-3f32;
        let mut state = pilot.init(&mut theta, &mut scratch).unwrap();
        let (mut s1, mut s2, mut n) = (vec![0.0f64; d], vec![0.0f64; d], 0.0);
        for t in 0..20_000 {
            let info = pilot.step(&mut state, eps, &mut rng).unwrap();
            // Robbins–Monro on the step toward 60% acceptance during the first half.
            if t < 10_000 {
                eps *= if info.accepted { 1.01 } else { 0.985 };
            } else {
                for j in 0..d {
                    let v = state.theta()[j] as f64;
                    s1[j] += v;
                    s2[j] += v * v;
                }
                n += 1.0;
            }
        }
        for j in 0..d {
            let m = s1[j] / n;
            var[j] = (s2[j] / n - m * m).max(1e-12);
        }
    }
    let metric: Vec<f32> = var.iter().map(|&v| v as f32).collect();
    let mala = Mala::new(model).with_metric(&metric).unwrap();
    let mut state = mala.init(&mut theta, &mut scratch).unwrap();
    let burn = steps / 10;
    let nb = 50;
    let per = (steps - burn) / nb;
    let mut values = Vec::new();
    f(state.theta(), &mut values);
    let d = values.len();
    let mut sums = vec![[vec![0.0f64; d], vec![0.0f64; d]]; nb];
    let mut accepted = 0usize;
    let mut eps = 0.8f32;
    for t in 0..burn + nb * per {
        let info = mala.step(&mut state, eps, &mut rng).unwrap();
        if adapt && t < burn {
            eps *= if info.accepted { 1.01 } else { 0.985 };
        }
        if t >= burn {
            accepted += usize::from(info.accepted);
            values.clear();
            f(state.theta(), &mut values);
            let [s1, s2] = &mut sums[(t - burn) / per];
            for ((a, b), &v) in s1.iter_mut().zip(s2.iter_mut()).zip(&values) {
                *a += v / per as f64;
                *b += v * v / per as f64;
            }
        }
    }
    let nbf = nb as f64;
    let mut r = Reference {
        mean: vec![0.0; d],
        sd: vec![0.0; d],
        mean_se: vec![0.0; d],
        sd_se: vec![0.0; d],
        acceptance: accepted as f64 / (nb * per) as f64,
    };
    for j in 0..d {
        let mean = sums.iter().map(|s| s[0][j]).sum::<f64>() / nbf;
        let sq = sums.iter().map(|s| s[1][j]).sum::<f64>() / nbf;
        let sd = (sq - mean * mean).sqrt();
        // Batch means of θ and of the batch sds give the errors of the mean and the sd.
        let batch_sd: Vec<f64> = sums
            .iter()
            .map(|s| (s[1][j] - s[0][j] * s[0][j]).max(0.0).sqrt())
            .collect();
        let se = |xs: &mut dyn Iterator<Item = f64>, m: f64| {
            (xs.map(|x| (x - m).powi(2)).sum::<f64>() / (nbf - 1.0) / nbf).sqrt()
        };
        r.mean[j] = mean;
        r.sd[j] = sd;
        r.mean_se[j] = se(&mut sums.iter().map(|s| s[0][j]), mean);
        let bsd_mean = batch_sd.iter().sum::<f64>() / nbf;
        r.sd_se[j] = se(&mut batch_sd.iter().copied(), bsd_mean);
    }
    r
}
