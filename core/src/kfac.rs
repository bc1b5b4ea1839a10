//! K-FAC preconditioned SGLD for the one-hidden-layer [`Mlp`] (Nado et al., eq. 2–3;
//! Martens & Grosse 2015).
//!
//! Per layer `ℓ` the Fisher block is approximated by a Kronecker product
//! `F̂ₗ = Aₗ ⊗ Sₗ`: `A = E[ã ãᵀ]` over the layer's inputs (with a trailing 1 for the
//! bias) and `S = Cov(δ)` of the log-likelihood derivatives `δ` with respect to its
//! pre-activations. For the Gaussian likelihood `δ = λ(y − f)·∂f/∂s` and, with `y` drawn
//! from the model, `Cov(δ) = λ·E[(∂f/∂s)(∂f/∂s)ᵀ]` exactly: the factors store
//! `E[(∂f/∂s)(∂f/∂s)ᵀ]` and the current precision `λ` multiplies them at each refresh, so
//! the preconditioner follows a learned `λ` at once. For a logistic output (binary
//! labels) `Cov(δ) = E[σ(f)(1 − σ(f))·(∂f/∂s)(∂f/∂s)ᵀ]`: each example's outer product is
//! weighted by its Bernoulli variance and `λ = 1`. Both are exponential moving averages
//! over mini-batches. With `N` data, the layer's prior precision `κ` (fan-in/σ²_w) as
//! damping and the factored Tikhonov split `π = √((tr A/dim A)/(tr NλS/dim S))`, the preconditioner is
//! `Mₗ = [(A + π√κ I) ⊗ (NλS + √κ/π I)]⁻¹` and the step, in our convention, is
//!
//! `θ' = θ + (ε/2)·M·ĝ + N(0, ετ·M)`, computed per layer as `S⁻¹ Ĝ A⁻¹` for the drift
//! and `L_S⁻ᵀ Z L_A⁻¹` (`Z` standard normal, `A = L_A L_Aᵀ`, `S = L_S L_Sᵀ`) for the
//! noise — the Cholesky factor of a Kronecker product is the product of the factors.
//! Nado et al. write `θ − εH⁻¹g + √ε H^{−½}ν`; the issue's `√(2ε)` noise is the Langevin
//! form, ours with `ε = 2ε_theirs`. The log noise precision, when learned, gets the
//! scalar Fisher `N/2` plus its prior curvature. The factors' Cholesky factors are
//! refreshed every `refresh` steps.

use rand_core::Rng;

use crate::error::{Error, check_step_size};
use crate::gradient::{GradientEstimator, MiniBatch, check_batch};
use crate::kernels::{all_finite, imp};
use crate::linalg::{solve_lower, solve_lower_t};
use crate::models::{Mlp, Model, Noise};
use crate::noise::fill_normal;
use crate::sampler::{Sampler, StepInfo};

/// K-FAC SGLD settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KfacSgld {
    decay: f32,
    refresh: u32,
    temperature: f32,
}

/// A K-FAC chain: θ and every factor, in caller memory.
#[derive(Debug)]
pub struct KfacState<'a> {
    theta: &'a mut [f32],
    grad: &'a mut [f32],
    prop: &'a mut [f32],
    /// Layer 1: A₁ ((D+1)²), S₁ (H²); layer 2: A₂ ((H+1)²), S₂ (1).
    a1: &'a mut [f32],
    s1: &'a mut [f32],
    a2: &'a mut [f32],
    s2: f32,
    /// Cholesky factors of the damped factors.
    la1: &'a mut [f32],
    ls1: &'a mut [f32],
    la2: &'a mut [f32],
    ls2: f32,
    /// Per-example activations ã₂ (H+1) and pre-activation derivatives δ₁ (H).
    act: &'a mut [f32],
    delta: &'a mut [f32],
    /// A matrix of the largest layer's shape, for solves.
    work: &'a mut [f32],
    /// Whether the factors hold an estimate yet.
    seeded: bool,
    /// Whether the Cholesky factors are valid.
    factored: bool,
    steps: u64,
    refused: u64,
}

crate::sampler::chain_state!(KfacState);

impl KfacState<'_> {
    /// The factors `(A₁, S₁, A₂, S₂)` as estimated so far.
    pub fn factors(&self) -> (&[f32], &[f32], &[f32], f32) {
        (self.a1, self.s1, self.a2, self.s2)
    }
}

/// Damped Cholesky factor of `scale·f + shift·I` (`n × n`) into `l`, in f64; false
/// when it is not positive definite.
fn damped_cholesky(f: &[f32], n: usize, scale: f32, shift: f32, l: &mut [f32]) -> bool {
    // Factor in place in f32 with f64 accumulation (n ≤ a few hundred).
    for i in 0..n {
        for j in 0..=i {
            let mut s =
                scale as f64 * f[i * n + j] as f64 + if i == j { shift as f64 } else { 0.0 };
            for k in 0..j {
                s -= l[i * n + k] as f64 * l[j * n + k] as f64;
            }
            if i == j {
                if !(s > 0.0 && s.is_finite()) {
                    return false;
                }
                l[i * n + i] = libm::sqrt(s) as f32;
            } else {
                l[i * n + j] = (s / l[j * n + j] as f64) as f32;
            }
        }
        for j in i + 1..n {
            l[i * n + j] = 0.0;
        }
    }
    true
}

fn trace(f: &[f32], n: usize) -> f32 {
    (0..n).map(|i| f[i * n + i]).sum()
}

impl KfacSgld {
    /// K-FAC SGLD with factor decay `decay ∈ [0, 1)` (weight of the old average) and
    /// Cholesky refresh every `refresh ≥ 1` steps.
    pub fn new(decay: f32, refresh: u32) -> Result<Self, Error> {
        if !(0.0..1.0).contains(&decay) {
            return Err(Error::InvalidParameter {
                what: "K-FAC decay must lie in [0, 1)",
            });
        }
        if refresh == 0 {
            return Err(Error::InvalidParameter {
                what: "K-FAC refresh interval must be at least 1",
            });
        }
        Ok(Self {
            decay,
            refresh,
            temperature: 1.0,
        })
    }

    /// The same sampler at temperature `τ ≥ 0` (noise `N(0, ετM)`).
    pub fn with_temperature(mut self, tau: f32) -> Result<Self, Error> {
        if !(tau.is_finite() && tau >= 0.0) {
            return Err(Error::InvalidParameter {
                what: "temperature must be finite and >= 0",
            });
        }
        self.temperature = tau;
        Ok(self)
    }

    /// Scratch floats for a network with `d_in` inputs and `width` hidden units.
    pub const fn scratch_len(d_in: usize, width: usize) -> usize {
        let dim = width * (d_in + 2) + 2;
        let (p, h, q) = (d_in + 1, width, width + 1);
        let big = if h * p > q { h * p } else { q };
        2 * dim + 2 * (p * p + h * h + q * q) + q + h + big
    }

    /// Starts a chain of `model` at `theta` (finite, of the model's dimension).
    pub fn init<'a>(
        &self,
        model: &Mlp<'_>,
        theta: &'a mut [f32],
        scratch: &'a mut [f32],
    ) -> Result<KfacState<'a>, Error> {
        let dim = model.dim();
        crate::error::check_len("theta", dim, theta.len())?;
        crate::error::check_finite("theta", theta)?;
        let need = Self::scratch_len(model.d_in(), model.width());
        if scratch.len() < need {
            return Err(Error::LengthMismatch {
                what: "scratch",
                expected: need,
                found: scratch.len(),
            });
        }
        let (p, h, q) = (model.d_in() + 1, model.width(), model.width() + 1);
        let rest = &mut scratch[..need];
        rest.fill(0.0);
        let (grad, rest) = rest.split_at_mut(dim);
        let (prop, rest) = rest.split_at_mut(dim);
        let (a1, rest) = rest.split_at_mut(p * p);
        let (s1, rest) = rest.split_at_mut(h * h);
        let (a2, rest) = rest.split_at_mut(q * q);
        let (la1, rest) = rest.split_at_mut(p * p);
        let (ls1, rest) = rest.split_at_mut(h * h);
        let (la2, rest) = rest.split_at_mut(q * q);
        let (act, rest) = rest.split_at_mut(q);
        let (delta, work) = rest.split_at_mut(h);
        Ok(KfacState {
            theta,
            grad,
            prop,
            a1,
            s1,
            a2,
            s2: 0.0,
            la1,
            ls1,
            la2,
            ls2: 0.0,
            act,
            delta,
            work,
            seeded: false,
            factored: false,
            steps: 0,
            refused: 0,
        })
    }

    /// Accumulates the batch's factor estimates into the moving averages.
    fn update_factors(&self, model: &Mlp<'_>, x: &[f32], s: &mut KfacState<'_>, batch: &[usize]) {
        let (d, hn) = (model.d_in(), model.width());
        let (p, q) = (d + 1, hn + 1);
        let keep = if s.seeded { self.decay } else { 0.0 };
        s.seeded = true;
        let w = (1.0 - keep) / batch.len() as f32;
        for v in
            s.a1.iter_mut()
                .chain(s.s1.iter_mut())
                .chain(s.a2.iter_mut())
        {
            *v *= keep;
        }
        s.s2 *= keep;
        let o = hn * p;
        for &i in batch {
            let xi = &x[i * d..(i + 1) * d];
            // ã₁ = [x; 1]
            let x1 = |k: usize| xi.get(k).copied().unwrap_or(1.0);
            for r in 0..p {
                let xr = x1(r);
                for (c, a) in s.a1[r * p..r * p + r + 1].iter_mut().enumerate() {
                    *a += w * xr * x1(c);
                }
            }
            // Forward to the activations a₁, and ∂f/∂s₁ = w₂ ⊙ 1[s₁ > 0].
            for hh in 0..hn {
                let wu = &s.theta[hh * p..(hh + 1) * p];
                let pre = imp::dot(&wu[..d], xi) + wu[d];
                let a = if pre > 0.0 { pre } else { 0.0 };
                s.act[hh] = a;
                s.delta[hh] = if pre > 0.0 { s.theta[o + hh] } else { 0.0 };
            }
            s.act[hn] = 1.0;
            for r in 0..q {
                for c in 0..=r {
                    s.a2[r * q + c] += w * s.act[r] * s.act[c];
                }
            }
            // The output's Fisher weight: λ for Gaussian noise (applied at the refresh),
            // σ(f)(1 − σ(f)) per example for a logistic output.
            let ws = if model.noise() == Noise::Bernoulli {
                let f = imp::dot(&s.theta[o..o + hn], &s.act[..hn]) + s.theta[o + hn];
                let p = crate::math::sigmoid(f);
                w * p * (1.0 - p)
            } else {
                w
            };
            for r in 0..hn {
                for c in 0..=r {
                    s.s1[r * hn + c] += ws * s.delta[r] * s.delta[c];
                }
            }
            s.s2 += ws;
        }
        // Mirror the lower triangles.
        for (m, n) in [(&mut *s.a1, p), (&mut *s.s1, hn), (&mut *s.a2, q)] {
            for r in 0..n {
                for c in 0..r {
                    m[c * n + r] = m[r * n + c];
                }
            }
        }
    }

    /// Refreshes the damped Cholesky factors; false if any is not positive definite.
    /// `kappa`: the prior precisions of the two layers (the damping).
    fn refresh_factors(model: &Mlp<'_>, kappa: (f32, f32), s: &mut KfacState<'_>) -> bool {
        let (p, hn, q) = (model.d_in() + 1, model.width(), model.width() + 1);
        // N·λ: the data's weight times the current noise precision.
        let n = model.len() as f32 * model.precision(s.theta);
        if !(n.is_finite() && n > 0.0) {
            return false;
        }
        let (root, root2) = (libm::sqrtf(kappa.0), libm::sqrtf(kappa.1));
        // Layer 1.
        let pi1 = libm::sqrtf(
            ((trace(s.a1, p) / p as f32)
                / (n * trace(s.s1, hn) / hn as f32).max(f32::MIN_POSITIVE))
            .max(f32::MIN_POSITIVE),
        )
        .clamp(1e-4, 1e4);
        let ok1 = damped_cholesky(s.a1, p, 1.0, pi1 * root, s.la1)
            && damped_cholesky(s.s1, hn, n, root / pi1, s.ls1);
        // Layer 2 (S₂ is a scalar).
        let pi2 = libm::sqrtf(
            ((trace(s.a2, q) / q as f32) / (n * s.s2).max(f32::MIN_POSITIVE))
                .max(f32::MIN_POSITIVE),
        )
        .clamp(1e-4, 1e4);
        let ok2 = damped_cholesky(s.a2, q, 1.0, pi2 * root2, s.la2);
        let s2 = n * s.s2 + root2 / pi2;
        s.ls2 = libm::sqrtf(s2);
        ok1 && ok2 && s2 > 0.0 && s.ls2.is_finite() && (s.ls2 * s.ls2).is_finite()
    }

    /// One step on the mini-batch `batch` of `model`'s data with step size `eps`.
    ///
    /// Errors (state untouched) on a bad step size or batch; a non-finite gradient,
    /// factor or proposal refuses the step and keeps θ.
    pub fn step<R: Rng + ?Sized>(
        &self,
        state: &mut KfacState<'_>,
        model: &Mlp<'_>,
        batch: &[usize],
        eps: f32,
        rng: &mut R,
    ) -> Result<StepInfo, Error> {
        check_step_size(eps as f64)?;
        check_batch(batch, model.len())?;
        crate::error::check_len("theta", model.dim(), state.theta.len())?;
        let (x, _) = model.data();
        let s = &mut *state;
        s.steps += 1;
        let est = MiniBatch::new(model);
        est.estimate(s.theta, batch, s.grad);
        let mut info = StepInfo {
            step_size: eps,
            grad_norm: libm::sqrtf(imp::dot(s.grad, s.grad)),
            ..StepInfo::default()
        };
        if !all_finite(s.grad) {
            info.non_finite = true;
            s.refused += 1;
            return Ok(info);
        }
        self.update_factors(model, x, s, batch);
        let kappa = model.layer_precisions();
        // Refresh the Cholesky factors; a factor that is not positive definite in f32
        // gets ten times the damping, up to 10⁶ times (Martens & Grosse adapt it too).
        if (s.steps - 1).is_multiple_of(self.refresh as u64) || !s.factored {
            s.factored = (0..7).any(|k| {
                let f = libm::powf(10.0, k as f32);
                Self::refresh_factors(model, (kappa.0 * f, kappa.1 * f), s)
            });
            if !s.factored {
                info.non_finite = true;
                s.refused += 1;
                return Ok(info);
            }
        }
        let (d, hn) = (model.d_in(), model.width());
        let (p, q) = (d + 1, hn + 1);
        let dim = model.dim();
        let scale = libm::sqrtf(eps * self.temperature);
        let half = 0.5 * eps;
        // Layer 1: Ĝ is H × P (row h = unit h's weights and bias).
        let g1 = &mut s.work[..hn * p];
        g1.copy_from_slice(&s.grad[..hn * p]);
        precondition(g1, hn, p, s.ls1, s.la1, s.delta);
        let z1 = &mut s.prop[..hn * p];
        if scale > 0.0 {
            fill_normal(rng, z1);
            kron_sqrt(z1, hn, p, s.ls1, s.la1, s.delta);
        } else {
            z1.fill(0.0);
        }
        for ((pr, &t), &g) in s.prop[..hn * p]
            .iter_mut()
            .zip(s.theta.iter())
            .zip(g1.iter())
        {
            *pr = t + half * g + scale * *pr;
        }
        // Layer 2: a row vector of Q = H + 1 (w₂ then b₂); S₂ is a scalar.
        let o = hn * p;
        let g2 = &mut s.work[..q];
        g2.copy_from_slice(&s.grad[o..o + q]);
        let s2 = s.ls2 * s.ls2;
        solve_lower(s.la2, &mut g2[..q]);
        solve_lower_t(s.la2, &mut g2[..q]);
        let z2 = &mut s.prop[o..o + q];
        if scale > 0.0 {
            fill_normal(rng, z2);
            solve_lower_t(s.la2, &mut z2[..q]);
        } else {
            z2.fill(0.0);
        }
        for ((pr, &t), &g) in s.prop[o..o + q]
            .iter_mut()
            .zip(&s.theta[o..o + q])
            .zip(g2.iter())
        {
            *pr = t + half * g / s2 + scale * *pr / s.ls2;
        }
        // The log noise precision: scalar Fisher N/2 plus the prior's curvature b·e^γ.
        if let Noise::Learned { rate, .. } = model.noise() {
            let g = dim - 1;
            let m = 1.0 / (0.5 * model.len() as f32 + rate * libm::expf(s.theta[g]));
            let mut z = [0.0f32; 2];
            fill_normal(rng, &mut z);
            s.prop[g] = s.theta[g] + half * m * s.grad[g] + scale * libm::sqrtf(m) * z[0];
        }
        let mut sq = 0.0f32;
        for k in 0..dim {
            let dlt = s.prop[k] - s.theta[k];
            sq += dlt * dlt;
        }
        info.noise_norm = libm::sqrtf(sq);
        if all_finite(&s.prop[..dim]) {
            s.theta.copy_from_slice(&s.prop[..dim]);
        } else {
            info.non_finite = true;
            s.refused += 1;
        }
        Ok(info)
    }
}

/// [`KfacSgld`] on one network as a [`Sampler`], so that a driver written for the
/// sampler family (chains in parallel, thinning, diagnostics) runs it.
///
/// The gradient estimator a driver passes is not used: K-FAC takes the plain mini-batch
/// gradient of its network (eq. 4), from which its factors are also estimated.
///
/// ```
/// use sgld::kfac::{KfacSampler, KfacSgld};
/// use sgld::models::{Mlp, Model, Noise};
/// use sgld::{ChainState, Sampler};
/// let x = [0.0, 1.0, 2.0, 3.0];
/// let y = [0.5, 1.0, 2.5, 3.0];
/// let net = Mlp::new(&x, &y, 1, 3, 1.0, Noise::Fixed(4.0))?;
/// let kfac = KfacSampler::new(KfacSgld::new(0.95, 10)?, &net);
/// let mut theta = vec![0.1f32; net.dim()];
/// let mut scratch = vec![0.0f32; kfac.scratch_floats(net.dim())];
/// let mut state = kfac.start(&mut theta, &mut scratch)?;
/// let est = sgld::gradient::MiniBatch::new(&net); // not used by K-FAC
/// let mut rng = sgld::noise::default_rng(1);
/// for _ in 0..100 {
///     kfac.advance(&mut state, &est, &[0, 2], 1e-3, &mut rng)?;
/// }
/// assert_eq!(state.steps(), 100);
/// # Ok::<(), sgld::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct KfacSampler<'m, 'a> {
    kfac: KfacSgld,
    model: &'m Mlp<'a>,
}

impl<'m, 'a> KfacSampler<'m, 'a> {
    /// `kfac` on `model`.
    pub fn new(kfac: KfacSgld, model: &'m Mlp<'a>) -> Self {
        Self { kfac, model }
    }
}

impl Sampler for KfacSampler<'_, '_> {
    type State<'s> = KfacState<'s>;

    fn scratch_floats(&self, _dim: usize) -> usize {
        KfacSgld::scratch_len(self.model.d_in(), self.model.width())
    }

    fn start<'s>(
        &self,
        theta: &'s mut [f32],
        scratch: &'s mut [f32],
    ) -> Result<KfacState<'s>, Error> {
        self.kfac.init(self.model, theta, scratch)
    }

    fn advance<E, R>(
        &self,
        state: &mut KfacState<'_>,
        _estimator: &E,
        batch: &[usize],
        eps: f32,
        rng: &mut R,
    ) -> Result<StepInfo, Error>
    where
        E: GradientEstimator + ?Sized,
        R: Rng + ?Sized,
    {
        self.kfac.step(state, self.model, batch, eps, rng)
    }
}

/// `G ← S⁻¹ G A⁻¹` for `G` (`rows × cols`, row-major), `S = L_S L_Sᵀ` (`rows`), `A = L_A
/// L_Aᵀ` (`cols`); `col` is a workspace of `rows` floats.
fn precondition(g: &mut [f32], rows: usize, cols: usize, ls: &[f32], la: &[f32], col: &mut [f32]) {
    // Right: each row r ← r A⁻¹ (A symmetric: solve A x = r).
    for row in g.chunks_exact_mut(cols) {
        solve_lower(la, &mut row[..cols]);
        solve_lower_t(la, &mut row[..cols]);
    }
    // Left: each column c ← S⁻¹ c.
    for c in 0..cols {
        for r in 0..rows {
            col[r] = g[r * cols + c];
        }
        solve_lower(ls, &mut col[..rows]);
        solve_lower_t(ls, &mut col[..rows]);
        for r in 0..rows {
            g[r * cols + c] = col[r];
        }
    }
}

/// `Z ← L_S⁻ᵀ Z L_A⁻¹`: a draw of `N(0, (A ⊗ S)⁻¹)` in matrix form from standard normals.
fn kron_sqrt(z: &mut [f32], rows: usize, cols: usize, ls: &[f32], la: &[f32], col: &mut [f32]) {
    // Right: r ← r L_A⁻¹, i.e. solve L_Aᵀ xᵀ = rᵀ.
    for row in z.chunks_exact_mut(cols) {
        solve_lower_t(la, &mut row[..cols]);
    }
    for c in 0..cols {
        for r in 0..rows {
            col[r] = z[r * cols + c];
        }
        solve_lower_t(ls, &mut col[..rows]);
        for r in 0..rows {
            z[r * cols + c] = col[r];
        }
    }
}

/// The noise a step would inject for given factors, for tests: fills `z` (`rows × cols`)
/// with a draw of `N(0, [(A + αI) ⊗ (S + βI)]⁻¹)`. `scratch` needs `rows² + cols² + rows`
/// floats. Returns false if a damped factor is not positive definite.
#[allow(clippy::too_many_arguments)]
pub fn kronecker_noise<R: Rng + ?Sized>(
    a: &[f32],
    s: &[f32],
    rows: usize,
    cols: usize,
    alpha: f32,
    beta: f32,
    z: &mut [f32],
    scratch: &mut [f32],
    rng: &mut R,
) -> Result<(), Error> {
    crate::error::check_len("A", cols * cols, a.len())?;
    crate::error::check_len("S", rows * rows, s.len())?;
    crate::error::check_len("z", rows * cols, z.len())?;
    if scratch.len() < rows * rows + cols * cols + rows {
        return Err(Error::LengthMismatch {
            what: "scratch",
            expected: rows * rows + cols * cols + rows,
            found: scratch.len(),
        });
    }
    let (la, rest) = scratch.split_at_mut(cols * cols);
    let (ls, col) = rest.split_at_mut(rows * rows);
    if !damped_cholesky(a, cols, 1.0, alpha, la) || !damped_cholesky(s, rows, 1.0, beta, ls) {
        return Err(Error::InvalidParameter {
            what: "a damped Kronecker factor is not positive definite",
        });
    }
    fill_normal(rng, z);
    kron_sqrt(z, rows, cols, ls, la, col);
    Ok(())
}
