//! Hamiltonian Monte Carlo with a few leapfrog steps on the whole data set, the exact
//! path's sampler for a Laplace prior, whose kinks at 0 it follows exactly.
//!
//! With the metric `M = LLᵀ`, position θ and whitened momentum `r ~ N(0, I)`, the
//! Hamiltonian `H = −log p(θ|X)/τ + ½|r|²` splits into a smooth part
//! `U_s(θ) = −log p(θ|X)/τ − Σⱼ|θⱼ|/(bτ)` and `K = ½|r|² + Σⱼ|θⱼ|/(bτ)`. Each leapfrog
//! step kicks the momentum by half a step of `−Lᵀ∇U_s`, follows `K`'s exact flow for a
//! step, and kicks again (Strang splitting; split HMC, Shahbaba et al. 2014). Under
//! `K` the force `−M s/(bτ)` (`s = sign θ`) is constant until some `θⱼ` crosses 0, so
//! θ moves on parabolas, `θ(t) = θ + v t − M s t²/(2bτ)` with `v = L r`, and `sⱼ`
//! flips at each crossing; the flow conserves `K` exactly (the potential is continuous,
//! so the momentum passes a kink unchanged: Mohasel Afshar & Domke 2015). The energy
//! error is then the smooth part's, O(h³) a step, where a plain leapfrog over a kink
//! errs by O(h) and MALA (one leapfrog) rejects most moves that cross 0.
//!
//! Kicks and a Hamiltonian flow preserve volume and are reversible whatever `b` is, so
//! the Metropolis test on `H` keeps the chain exact for any model; `b` only decides how
//! well the split fits. Without a kinked prior the flow is a straight line and this is
//! plain HMC.

use rand_core::Rng;
use sgld::Error;
use sgld::gradient::{full_grad_log_posterior, full_log_posterior};
use sgld::noise::{fill_normal, uniform};
use sgld::sampler::MalaInfo;

use super::dense::dot;
use super::metric_store::MetricStore;
use super::problem::ModelSync;
use super::shear::Shear;

/// The integration time of a trajectory in the whitened coordinates, about: near a
/// quarter of the period of a unit-variance Gaussian (π/2), where successive draws of
/// every whitened coordinate are nearly independent. The leapfrog steps are this over
/// the step, rounded: on a9a, 3 steps of 0.46.
pub const TRAJECTORY: f64 = 1.5;

/// Leapfrog steps per trajectory at most (a tiny step shortens the trajectory instead
/// of lengthening the transition without bound).
pub const MAX_LEAPFROG: usize = 32;

/// The step is jittered uniformly over `h·[1 − JITTER, 1 + JITTER]` (Stan's
/// `stepsize_jitter`), so no trajectory length is tied to a period of the posterior.
const JITTER: f64 = 0.1;

/// Kink crossings in one step's flow, per parameter, at most; a flow past it (a chain
/// oscillating across 0 ever faster, as only rounding makes it) is a divergent
/// transition and rejected. The rule depends on the trajectory alone and so is the
/// same forward and back: the chain stays exact.
const MAX_CROSSINGS_PER_PARAM: usize = 20;

/// A coordinate whose distance from 0 is beyond its reach by this factor is not
/// searched for a root (the margin covers the rounding of the bound and of the root).
const REACH_SLACK: f64 = 1.0 + 1e-6;

/// `L` and `M = LLᵀ` (dense, row-major), or their diagonals. `L` is the metric's own
/// f32 factor, kept in f32 (half the memory traffic of its products, which take each
/// entry to f64 exactly) and `M` in f64.
#[derive(Debug, Clone)]
enum Factor {
    Dense { l: Vec<f32>, m: Vec<f64> },
    Diagonal { sqrt: Vec<f64>, m: Vec<f64> },
}

impl Factor {
    fn new(metric: &MetricStore, d: usize) -> Self {
        match metric {
            MetricStore::Cholesky(l) => {
                let l = l.clone();
                let mut m = vec![0.0; d * d];
                for i in 0..d {
                    for j in 0..=i {
                        let s = dot(&l[i * d..=i * d + j], &l[j * d..=j * d + j]);
                        m[i * d + j] = s;
                        m[j * d + i] = s;
                    }
                }
                Factor::Dense { l, m }
            }
            MetricStore::Diagonal(v) => Factor::Diagonal {
                sqrt: v.iter().map(|&x| (x as f64).sqrt()).collect(),
                m: v.iter().map(|&x| x as f64).collect(),
            },
        }
    }

    /// `out = L x`.
    fn times(&self, x: &[f64], out: &mut [f64]) {
        let d = x.len();
        match self {
            Factor::Dense { l, .. } => {
                for (i, o) in out.iter_mut().enumerate() {
                    *o = dot(&l[i * d..=i * d + i], x);
                }
            }
            Factor::Diagonal { sqrt, .. } => {
                for ((o, s), v) in out.iter_mut().zip(sqrt).zip(x) {
                    *o = s * v;
                }
            }
        }
    }

    /// `r += c · Lᵀ g`.
    fn add_t_times(&self, c: f64, g: &[f64], r: &mut [f64]) {
        let d = g.len();
        match self {
            Factor::Dense { l, .. } => {
                for (k, &gk) in g.iter().enumerate() {
                    let cg = c * gk;
                    for (rj, &lkj) in r[..=k].iter_mut().zip(&l[k * d..=k * d + k]) {
                        *rj += cg * lkj as f64;
                    }
                }
            }
            Factor::Diagonal { sqrt, .. } => {
                for ((rj, s), gj) in r.iter_mut().zip(sqrt).zip(g) {
                    *rj += c * s * gj;
                }
            }
        }
    }

    /// `out += c · M[:, j]`.
    fn add_column(&self, c: f64, j: usize, out: &mut [f64]) {
        let d = out.len();
        match self {
            Factor::Dense { m, .. } => {
                for (o, &mij) in out.iter_mut().zip(&m[j * d..(j + 1) * d]) {
                    *o += c * mij;
                }
            }
            Factor::Diagonal { m, .. } => out[j] += c * m[j],
        }
    }
}

/// HMC on `model`'s whole data set with a metric, the kinks of a Laplace prior of
/// scale `b` followed exactly ([module docs](self)).
#[derive(Clone)]
pub struct Hmc<'m> {
    model: &'m dyn ModelSync,
    factor: Factor,
    /// `1/b` of the Laplace prior whose kinks the flow follows (0: none).
    inv_scale: f32,
    temperature: f64,
    clip: Option<f32>,
    /// With a diagonal metric, the trajectory runs in the sheared coordinates `z`
    /// ([`Shear`]): `pos`, `r` and the forces are `z`'s. The hub's Laplace term is then
    /// in the smooth part (its kink is not on an axis of `z`), which the Metropolis
    /// test keeps exact.
    shear: Option<&'m Shear>,
}

impl std::fmt::Debug for Hmc<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hmc")
            .field("dim", &self.model.dim())
            .field("rows", &self.model.len())
            .field("inv_scale", &self.inv_scale)
            .field("temperature", &self.temperature)
            .finish_non_exhaustive()
    }
}

/// A chain's state and workspace.
#[derive(Debug, Clone)]
pub struct HmcState {
    theta: Vec<f32>,
    /// `−∇U_s` at θ in θ's coordinates: `(∇log p(θ|X) + sign(θ)/b)/τ`.
    force: Vec<f64>,
    log_p: f64,
    prop: Vec<f32>,
    grad: Vec<f32>,
    tmp: Vec<f32>,
    pos: Vec<f64>,
    force_prop: Vec<f64>,
    r: Vec<f64>,
    v: Vec<f64>,
    accel: Vec<f64>,
    sign: Vec<f64>,
    swept: Vec<f64>,
    /// What `r` changes by through `Lᵀ` before the next flow.
    pend: Vec<f64>,
    noise: Vec<f32>,
}

impl HmcState {
    /// The current state.
    pub fn theta(&self) -> &[f32] {
        &self.theta
    }
}

/// A transition under way between its gradients, so that chains in lockstep
/// ([`lockstep`]) can take each leapfrog step's gradients in one pass over the data.
#[derive(Debug)]
pub struct Leap {
    /// The jittered step.
    h: f64,
    steps: usize,
    /// Leapfrog steps completed.
    done: usize,
    /// The Hamiltonian at the start.
    h0: f64,
    info: MalaInfo,
    /// The log density at the end (NaN until then).
    log_p_new: f64,
    diverged: bool,
}

impl Leap {
    /// Whether the coming gradient is the trajectory's last (its value is wanted too).
    fn last(&self) -> bool {
        self.done + 1 == self.steps
    }
}

/// The kinetic energy `½|r|²`.
fn kinetic(r: &[f64]) -> f64 {
    0.5 * r.iter().map(|x| x * x).sum::<f64>()
}

impl<'m> Hmc<'m> {
    /// HMC on `model` with `metric`; a Laplace prior's kinks of scale `laplace` followed
    /// exactly when given.
    pub fn new(
        model: &'m dyn ModelSync,
        metric: &MetricStore,
        laplace: Option<f32>,
        temperature: f64,
        clip: Option<f32>,
    ) -> Result<Self, Error> {
        let d = model.dim();
        metric.metric().check(d)?;
        if !(temperature.is_finite() && temperature > 0.0) {
            return Err(Error::InvalidParameter {
                what: "HMC needs a temperature > 0",
            });
        }
        let inv_scale = match laplace {
            Some(b) if b.is_finite() && b > 0.0 && (1.0 / b).is_finite() => 1.0 / b,
            Some(_) => {
                return Err(Error::InvalidParameter {
                    what: "the Laplace scale must be finite and > 0",
                });
            }
            None => 0.0,
        };
        Ok(Self {
            model,
            factor: Factor::new(metric, d),
            inv_scale,
            temperature,
            clip,
            shear: None,
        })
    }

    /// The same sampler moving in `shear`'s coordinates; a dense metric, which holds
    /// the correlations itself, ignores it.
    pub fn with_shear(mut self, shear: Option<&'m Shear>) -> Self {
        let fits = |s: &Shear| s.mu.len() == self.model.dim() && s.hub < s.mu.len();
        if matches!(self.factor, Factor::Diagonal { .. }) {
            self.shear = shear.filter(|s| fits(s));
        }
        self
    }

    /// `pos` from `theta`: `z` with a shear, else `θ`.
    fn position(&self, theta: &[f32], pos: &mut [f64]) {
        for (p, &t) in pos.iter_mut().zip(theta) {
            *p = t as f64;
        }
        if let Some(sh) = self.shear {
            pos[sh.hub] = sh.hub_z(theta);
        }
    }

    /// `theta` from `pos` (rounded to f32).
    fn parameters(&self, pos: &[f64], theta: &mut [f32]) {
        for (q, &p) in theta.iter_mut().zip(pos) {
            *q = p as f32;
        }
        if let Some(sh) = self.shear {
            theta[sh.hub] = sh.hub_theta(pos) as f32;
        }
    }

    /// Leapfrog steps of a trajectory at step `h`.
    pub fn leapfrog_steps(h: f64) -> usize {
        let n = (TRAJECTORY / h).round();
        if n.is_finite() && n >= 1.0 {
            (n as usize).min(MAX_LEAPFROG)
        } else if n.is_nan() || n < 1.0 {
            1
        } else {
            MAX_LEAPFROG
        }
    }

    /// `−∇U_s` at `theta` into `out` from the log posterior's gradient `grad`; `None` if
    /// not finite.
    fn force(&self, theta: &[f32], grad: &mut [f32], out: &mut [f64]) -> Option<()> {
        if let Some(c) = self.clip {
            let norm = grad
                .iter()
                .map(|&g| (g as f64) * (g as f64))
                .sum::<f64>()
                .sqrt();
            if norm > c as f64 {
                let s = (c as f64 / norm) as f32;
                grad.iter_mut().for_each(|g| *g *= s);
            }
        }
        let inv = self.inv_scale;
        let tau = self.temperature;
        // Branch-free (selects, and one check at the end), so that it runs in vectors.
        let mut finite = true;
        for ((o, &g), &t) in out.iter_mut().zip(grad.iter()).zip(theta) {
            *o = smooth_force(g, t, inv, tau);
            finite &= o.is_finite();
        }
        if !finite {
            return None;
        }
        if let Some(sh) = self.shear {
            // The hub's Laplace term stays in the smooth part (a shear moves its kink off
            // the axes), and the force is taken to the shear's coordinates.
            out[sh.hub] = grad[sh.hub] as f64 / tau;
            sh.grad_to_z(out);
            if !out.iter().all(|o| o.is_finite()) {
                return None;
            }
        }
        Some(())
    }

    /// The state at `theta`: an error if the log density or its gradient is not finite
    /// there.
    pub fn init(&self, theta: Vec<f32>) -> Result<HmcState, Error> {
        let d = self.model.dim();
        if theta.len() != d {
            return Err(Error::LengthMismatch {
                what: "theta",
                expected: d,
                found: theta.len(),
            });
        }
        let mut grad = vec![0.0f32; d];
        let mut tmp = vec![0.0f32; d];
        let log_p = full_log_posterior(self.model, &theta, &mut grad, &mut tmp);
        let mut force = vec![0.0; d];
        if !log_p.is_finite() || self.force(&theta, &mut grad, &mut force).is_none() {
            return Err(Error::NonFinite {
                what: "log density or its gradient at the starting point",
            });
        }
        Ok(HmcState {
            prop: theta.clone(),
            theta,
            force,
            log_p,
            grad,
            tmp,
            pos: vec![0.0; d],
            force_prop: vec![0.0; d],
            r: vec![0.0; d],
            v: vec![0.0; d],
            accel: vec![0.0; d],
            sign: vec![0.0; d],
            swept: vec![0.0; d],
            pend: vec![0.0; d],
            noise: vec![0.0; d],
        })
    }

    /// One transition: a trajectory of [`Hmc::leapfrog_steps`] at a jittered `h`, then
    /// the Metropolis test. `accept_prob` is what the step adapts by.
    pub fn step<R: Rng + ?Sized>(
        &self,
        s: &mut HmcState,
        h: f64,
        rng: &mut R,
    ) -> Result<MalaInfo, Error> {
        let mut leap = self.begin(s, h, rng)?;
        while self.to_gradient(s, &mut leap) {
            let log_p = if leap.last() {
                full_log_posterior(self.model, &s.prop, &mut s.grad, &mut s.tmp)
            } else {
                full_grad_log_posterior(self.model, &s.prop, &mut s.grad, &mut s.tmp);
                f64::NAN
            };
            self.after_gradient(s, &mut leap, log_p);
        }
        Ok(self.finish(s, leap, rng))
    }

    /// A transition's start: the jittered step, the momentum drawn, the first half kick
    /// pending.
    fn begin<R: Rng + ?Sized>(&self, s: &mut HmcState, h: f64, rng: &mut R) -> Result<Leap, Error> {
        if !(h.is_finite() && h > 0.0) {
            return Err(Error::InvalidStepSize { value: h });
        }
        let steps = Self::leapfrog_steps(h);
        let h = h * (1.0 + JITTER * (2.0 * uniform(rng) - 1.0));
        fill_normal(rng, &mut s.noise);
        for (r, &z) in s.r.iter_mut().zip(&s.noise) {
            *r = z as f64;
        }
        let h0 = -s.log_p / self.temperature + kinetic(&s.r);
        self.position(&s.theta, &mut s.pos);
        s.force_prop.copy_from_slice(&s.force);
        let mut info = MalaInfo::default();
        info.step.step_size = h as f32;
        // A full recomputation of the flow's acceleration once a trajectory (signs at 0).
        s.sign.fill(0.0);
        s.accel.fill(0.0);
        // Every change of `r` is `Lᵀ` of something: the half kicks on either side of a
        // position update and the flow's own change are summed into `pend` and applied
        // by one product before the next flow (a leapfrog step reads `r` only there).
        for (p, &f) in s.pend.iter_mut().zip(&s.force_prop) {
            *p = 0.5 * h * f;
        }
        Ok(Leap {
            h,
            steps,
            done: 0,
            h0,
            info,
            log_p_new: f64::NAN,
            diverged: false,
        })
    }

    /// The next leapfrog step up to its gradient: `true` when the log posterior's
    /// gradient at `prop` is wanted in `grad` (and, on the last step, its value),
    /// `false` when the trajectory has ended or diverged.
    fn to_gradient(&self, s: &mut HmcState, leap: &mut Leap) -> bool {
        if leap.diverged || leap.done == leap.steps {
            return false;
        }
        let moved = match self.one_pass() {
            Some(diag) => drift_diagonal(s, leap.h, self.kink(), diag),
            None => self.drift(s, leap.h),
        };
        leap.diverged = !moved;
        moved
    }

    /// A leapfrog step's drift: the pending kicks taken into `r`, the flow for time
    /// `h`, `prop` at the new position; `false` where the crossings pass their bound or
    /// `prop` is not finite.
    fn drift(&self, s: &mut HmcState, h: f64) -> bool {
        self.factor.add_t_times(1.0, &s.pend, &mut s.r);
        if self.flow_deferred(s, h).is_none() {
            return false;
        }
        self.parameters(&s.pos, &mut s.prop);
        s.prop.iter().all(|x| x.is_finite())
    }

    /// The leapfrog step's end from the gradient at `prop` in `grad` (and `log_p`,
    /// the log posterior there, on the last step).
    fn after_gradient(&self, s: &mut HmcState, leap: &mut Leap, log_p: f64) {
        let last = leap.last();
        let c = if last { 0.5 * leap.h } else { leap.h };
        let kicked = match (self.one_pass(), self.clip) {
            (Some(diag), None) => {
                let (inv, tau) = (self.inv_scale, self.temperature);
                kick_diagonal(s, (inv, tau), c, self.kink(), diag, last)
            }
            _ => self.kick(s, c, last),
        };
        if !kicked {
            leap.diverged = true;
            return;
        }
        leap.done += 1;
        if last {
            leap.log_p_new = log_p;
        }
    }

    /// A leapfrog step's kicks from the gradient at `prop`: `force_prop`, and
    /// `c·force − kink·swept` pending, or taken into `r` when the trajectory `ends`;
    /// `false` where the force is not finite.
    fn kick(&self, s: &mut HmcState, c: f64, ends: bool) -> bool {
        if self
            .force(&s.prop, &mut s.grad, &mut s.force_prop)
            .is_none()
        {
            return false;
        }
        let kink = self.kink();
        for ((p, &f), &w) in s.pend.iter_mut().zip(&s.force_prop).zip(&s.swept) {
            *p = c * f - kink * w;
        }
        if ends {
            self.factor.add_t_times(1.0, &s.pend, &mut s.r);
        }
        true
    }

    /// The Metropolis test at the trajectory's end (a rejection, without a draw, where
    /// it diverged or its density is not finite).
    fn finish<R: Rng + ?Sized>(&self, s: &mut HmcState, leap: Leap, rng: &mut R) -> MalaInfo {
        let mut info = leap.info;
        let log_p_new = leap.log_p_new;
        if leap.diverged || !log_p_new.is_finite() {
            return reject(info);
        }
        let log_a = leap.h0 - (-log_p_new / self.temperature + kinetic(&s.r));
        info.log_ratio = if log_a.is_nan() {
            f64::NEG_INFINITY
        } else {
            log_a
        };
        info.accept_prob = if log_a >= 0.0 { 1.0 } else { log_a.exp() };
        if uniform(rng) < info.accept_prob {
            info.accepted = true;
            std::mem::swap(&mut s.theta, &mut s.prop);
            std::mem::swap(&mut s.force, &mut s.force_prop);
            s.log_p = log_p_new;
        }
        info
    }

    /// The flow's kink force per unit of `M s`: `1/(bτ)` (0 without a kinked prior).
    fn kink(&self) -> f64 {
        self.inv_scale as f64 / self.temperature
    }

    /// The metric's diagonals and the shear where a leapfrog step's `O(d)` work can be
    /// one pass over the coordinates ([`drift_diagonal`], [`kick_diagonal`]): a
    /// diagonal metric and a kinked prior.
    fn one_pass(&self) -> Option<Diagonal<'_>> {
        match (&self.factor, self.inv_scale) {
            (Factor::Diagonal { sqrt, m }, inv) if inv != 0.0 => Some(Diagonal {
                sqrt,
                m,
                shear: self.shear,
            }),
            _ => None,
        }
    }

    /// `K`'s exact flow for time `h`: `pos` and `r` move; the kinks crossed, or `None`
    /// past their bound.
    #[cfg(test)]
    fn flow(&self, s: &mut HmcState, h: f64) -> Option<usize> {
        let n = self.flow_deferred(s, h)?;
        self.factor.add_t_times(-self.kink(), &s.swept, &mut s.r);
        Some(n)
    }

    /// [`Hmc::flow`] but for `r`'s change, `−Lᵀ swept/(bτ)`, left to the caller: `pos`
    /// and `v` move and `swept` holds `∫ sign θ dt`. `accel = M sign/(bτ)` is kept
    /// between calls (each sign that differs from the last flow's end costs one column
    /// of `M`; `sign` all 0 makes it a full recomputation).
    fn flow_deferred(&self, s: &mut HmcState, h: f64) -> Option<usize> {
        let d = s.pos.len();
        self.factor.times(&s.r, &mut s.v);
        if self.inv_scale == 0.0 {
            for (p, &v) in s.pos.iter_mut().zip(&s.v) {
                *p += h * v;
            }
            return Some(0);
        }
        let kink = self.kink();
        let m = match &self.factor {
            Factor::Diagonal { m, .. } => m,
            Factor::Dense { .. } => {
                for j in 0..d {
                    let new = side(s.pos[j], s.v[j]);
                    if new != s.sign[j] {
                        self.factor
                            .add_column(kink * (new - s.sign[j]), j, &mut s.accel);
                        s.sign[j] = new;
                    }
                }
                return self.flow_dense(s, h, kink);
            }
        };
        for ((sg, &p), &v) in s.sign.iter_mut().zip(&s.pos).zip(&s.v) {
            *sg = side(p, v);
        }
        flow_diagonal(s, h, kink, m, self.shear.map(|sh| sh.hub))
    }

    /// The coupled flow of a dense metric: each kink changes every coordinate's
    /// acceleration by a column of `M`, so the next crossing is searched among all,
    /// `O(d)` a kink (a bound on how far each coordinate can move skips the roots of
    /// those that cannot reach 0 in time).
    fn flow_dense(&self, s: &mut HmcState, h: f64, kink: f64) -> Option<usize> {
        let d = s.pos.len();
        s.swept.fill(0.0);
        let mut left = h;
        let mut just: Option<usize> = None;
        for crossed in 0..MAX_CROSSINGS_PER_PARAM * d + 1 {
            let first = next_crossing(s, left, just);
            let t = first.0;
            for j in 0..d {
                s.pos[j] += t * (s.v[j] - 0.5 * s.accel[j] * t);
                s.v[j] -= s.accel[j] * t;
                s.swept[j] += s.sign[j] * t;
            }
            let Some(j) = first.1 else {
                return Some(crossed);
            };
            s.pos[j] = 0.0;
            let old = s.sign[j];
            s.sign[j] = -old;
            self.factor.add_column(-2.0 * kink * old, j, &mut s.accel);
            left -= t;
            just = Some(j);
        }
        None
    }
}

/// Whether a coordinate at `c` on side `sg`, moving at `v` under `a`, stays off 0 for
/// time `t`: within `t` it moves at most `(|v| + |a|t/2)·t`, and its distance from 0 is
/// beyond that by [`REACH_SLACK`].
#[inline(always)]
fn out_of_reach(c: f64, v: f64, a: f64, sg: f64, t: f64) -> bool {
    c * sg > (v.abs() + 0.5 * a.abs() * t) * t * REACH_SLACK
}

/// The first kink ahead within `left` in the coupled flow: `(time, coordinate)`, or
/// `(left, None)`. Eight coordinates at a time are first checked with [`out_of_reach`]
/// (a vectorised compare) and the roots are solved only where one of them can get to
/// 0; `just`, at 0, always can.
fn next_crossing(s: &HmcState, left: f64, just: Option<usize>) -> (f64, Option<usize>) {
    let mut first = (left, None);
    let d = s.pos.len();
    let solve = |j: usize, first: &mut (f64, Option<usize>)| {
        if let Some(t) = crossing(s.pos[j], s.v[j], s.accel[j], s.sign[j], just == Some(j))
            && t < first.0
        {
            *first = (t, Some(j));
        }
    };
    let (p, _) = s.pos.as_chunks::<8>();
    let (v, _) = s.v.as_chunks::<8>();
    let (a, _) = s.accel.as_chunks::<8>();
    let (g, _) = s.sign.as_chunks::<8>();
    for (k, (((p, v), a), g)) in p.iter().zip(v).zip(a).zip(g).enumerate() {
        let t = first.0;
        // `!far` rather than a compare the other way: a NaN is near, and its root says
        // what it is.
        let near = (0..8).fold(false, |near, i| {
            near | !out_of_reach(p[i], v[i], a[i], g[i], t)
        });
        if near {
            for j in 8 * k..8 * k + 8 {
                solve(j, &mut first);
            }
        }
    }
    let whole = d - d % 8;
    for j in whole..d {
        solve(j, &mut first);
    }
    first
}

/// `−∂U_s/∂θⱼ` from the log posterior's `g` at `t`: the model's own Laplace gradient,
/// `−sign(θ)/b` (0 at 0), added back, over `τ`.
#[inline(always)]
fn smooth_force(g: f32, t: f32, inv: f32, tau: f64) -> f64 {
    let k = if t > 0.0 {
        inv
    } else if t < 0.0 {
        -inv
    } else {
        0.0
    };
    (g as f64 + k as f64) / tau
}

/// A diagonal metric's `L` and `M`, and the shear its trajectories run in.
#[derive(Clone, Copy)]
struct Diagonal<'a> {
    sqrt: &'a [f64],
    m: &'a [f64],
    shear: Option<&'a Shear>,
}

/// [`Hmc::drift`] with a diagonal metric and a kinked prior, in one pass over the
/// coordinates: each takes its pending kicks into `r`, its velocity, its side, its flow
/// for time `h` ([`flow_one`]; a shear's hub in a straight line) and its place in
/// `prop` (the hub's after the pass, from every coordinate); `false` where the
/// crossings pass their bound or `prop` is not finite. The same arithmetic, in the same
/// order for each coordinate, as the passes it replaces.
fn drift_diagonal(s: &mut HmcState, h: f64, kink: f64, diag: Diagonal<'_>) -> bool {
    let budget = MAX_CROSSINGS_PER_PARAM * s.pos.len();
    let (mut crossed, mut finite) = (0usize, true);
    let HmcState {
        pos,
        r,
        v,
        sign,
        swept,
        pend,
        prop,
        ..
    } = s;
    let d = pos.len();
    let (r, v, sign, swept, pend, prop) = (
        &mut r[..d],
        &mut v[..d],
        &mut sign[..d],
        &mut swept[..d],
        &pend[..d],
        &mut prop[..d],
    );
    let (sqrt, m) = (&diag.sqrt[..d], &diag.m[..d]);
    let hub = diag.shear.map(|sh| sh.hub);
    for j in 0..d {
        let rj = r[j] + 1.0 * sqrt[j] * pend[j];
        let vj = sqrt[j] * rj;
        let p = pos[j];
        let sg = side(p, vj);
        r[j] = rj;
        if hub == Some(j) {
            (pos[j], v[j], sign[j], swept[j]) = (p + h * vj, vj, sg, 0.0);
            continue;
        }
        let Some(moved) = flow_one(p, vj, sg, h, kink * m[j], &mut crossed, budget) else {
            return false;
        };
        (pos[j], v[j], sign[j], swept[j]) = moved;
        prop[j] = moved.0 as f32;
        finite &= prop[j].is_finite();
    }
    if let Some(sh) = diag.shear {
        prop[sh.hub] = sh.hub_theta(pos) as f32;
        finite &= prop[sh.hub].is_finite();
    }
    finite
}

/// [`Hmc::kick`] with a diagonal metric and no clipping, in one pass: `force_prop`
/// from `grad` at `prop` ([`smooth_force`]; with a shear, the hub's without its kink
/// and all taken to `z`), the kicks `c·force − kink·swept` pending, or taken into `r`
/// when the trajectory `ends`; `false` where the force is not finite.
fn kick_diagonal(
    s: &mut HmcState,
    (inv, tau): (f32, f64),
    c: f64,
    kink: f64,
    diag: Diagonal<'_>,
    ends: bool,
) -> bool {
    let mut finite = true;
    let HmcState {
        prop,
        grad,
        force_prop,
        swept,
        pend,
        r,
        ..
    } = s;
    let parts = force_prop.iter_mut().zip(pend.iter_mut()).zip(swept.iter());
    let parts = parts.zip(grad.iter().zip(prop.iter()));
    match diag.shear {
        None => {
            for (((f, p), &w), (&g, &t)) in parts {
                *f = smooth_force(g, t, inv, tau);
                finite &= f.is_finite();
                *p = c * *f - kink * w;
            }
        }
        Some(sh) => {
            // `Sᵀ` of the force, `fⱼ − μⱼ f_hub` ([`Shear::grad_to_z`]), the hub's own
            // force its smooth part's (its kink is not on an axis of `z`).
            let hub = grad[sh.hub] as f64 / tau;
            for (j, ((((f, p), &w), (&g, &t)), &mu)) in parts.zip(&sh.mu).enumerate() {
                let own = smooth_force(g, t, inv, tau);
                let z = if j == sh.hub { hub } else { own } - mu * hub;
                finite &= own.is_finite() & z.is_finite();
                *f = z;
                *p = c * z - kink * w;
            }
        }
    }
    if ends && finite {
        for ((rj, s), gj) in r.iter_mut().zip(diag.sqrt).zip(pend.iter()) {
            *rj += 1.0 * s * gj;
        }
    }
    finite
}

/// [`Hmc::flow_deferred`] with a diagonal metric: a kink then changes its own coordinate's
/// acceleration alone, so each coordinate follows its own parabolas for time `h`,
/// `O(d + kinks)` in all where the coupled flow costs `O(d)` a kink. `free`, a
/// coordinate without a kink (a shear's hub), moves in a straight line.
fn flow_diagonal(
    s: &mut HmcState,
    h: f64,
    kink: f64,
    m: &[f64],
    free: Option<usize>,
) -> Option<usize> {
    let budget = MAX_CROSSINGS_PER_PARAM * s.pos.len();
    let mut crossed = 0usize;
    for (j, &mj) in m.iter().enumerate() {
        let (c, v) = (s.pos[j], s.v[j]);
        if free == Some(j) {
            (s.pos[j], s.swept[j]) = (c + h * v, 0.0);
            continue;
        }
        let moved = flow_one(c, v, s.sign[j], h, kink * mj, &mut crossed, budget)?;
        (s.pos[j], s.v[j], s.sign[j], s.swept[j]) = moved;
    }
    Some(crossed)
}

/// The side a coordinate at `p` moving at `v` is on (at 0, the side it moves into).
#[inline(always)]
fn side(p: f64, v: f64) -> f64 {
    if p > 0.0 || (p == 0.0 && v >= 0.0) {
        1.0
    } else {
        -1.0
    }
}

/// One coordinate's flow under a diagonal metric for time `h`, from `c` at velocity `v`
/// on side `sg`, its kink force per unit of sign `km = M_jj/(bτ)`: its position,
/// velocity, side and `∫ sign θ dt`, the crossings added to `crossed`, or `None` once
/// they pass `budget`.
#[inline(always)]
fn flow_one(
    mut c: f64,
    mut v: f64,
    mut sg: f64,
    h: f64,
    km: f64,
    crossed: &mut usize,
    budget: usize,
) -> Option<(f64, f64, f64, f64)> {
    let a = km * sg;
    if out_of_reach(c, v, a, sg, h) {
        // No kink within the step: one parabola.
        return Some((c + h * (v - 0.5 * a * h), v - a * h, sg, sg * h));
    }
    let (mut left, mut swept, mut just) = (h, 0.0, false);
    loop {
        let a = km * sg;
        match crossing(c, v, a, sg, just).filter(|&t| t < left) {
            Some(t) => {
                v -= a * t;
                swept += sg * t;
                (c, sg, left, just) = (0.0, -sg, left - t, true);
                *crossed += 1;
                if *crossed > budget {
                    return None;
                }
            }
            None => {
                c += left * (v - 0.5 * a * left);
                v -= a * left;
                swept += sg * left;
                return Some((c, v, sg, swept));
            }
        }
    }
}

/// The first time in `(0, ∞)` at which `c + v t − a t²/2` reaches 0 from side `s` (`c`
/// is at 0 and leaving it when `at_zero`); 0 when rounding left `c` on the other side.
fn crossing(c: f64, v: f64, a: f64, s: f64, at_zero: bool) -> Option<f64> {
    if c * s < 0.0 {
        return Some(0.0);
    }
    if at_zero || c == 0.0 {
        // Roots 0 and 2v/a: back at 0 after 2v/a if pulled back.
        let t = 2.0 * v / a;
        return (t > 0.0 && t.is_finite()).then_some(t);
    }
    if a == 0.0 {
        let t = -c / v;
        return (t > 0.0 && t.is_finite()).then_some(t);
    }
    // a/2 t² − v t − c = 0, by the stable pair of formulas.
    let disc = v * v + 2.0 * a * c;
    if disc < 0.0 {
        return None;
    }
    let q = v + disc.sqrt().copysign(v);
    let roots = [q / a, -2.0 * c / q];
    roots
        .into_iter()
        .filter(|t| *t > 0.0 && t.is_finite())
        .min_by(f64::total_cmp)
}

/// A rejected, divergent proposal.
fn reject(mut info: MalaInfo) -> MalaInfo {
    info.step.non_finite = true;
    info.log_ratio = f64::NEG_INFINITY;
    info.accept_prob = 0.0;
    info
}

pub mod lockstep;
#[cfg(test)]
mod tests;
