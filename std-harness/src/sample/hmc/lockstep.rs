//! Chains in lockstep: every chain's transition advances one leapfrog step at a time,
//! and the steps' gradients are taken together, one pass over the data for all chains
//! ([`sgld::gradient::log_lik_grads_interleaved`]), split among the threads by rows.
//! A chain's own work between gradients (its kicks, its flow across the kinks, its
//! Metropolis test) runs on its own thread as before, with its own step and random
//! numbers, so each chain makes the same moves it makes alone, up to the rounding of
//! the gradients' sums. A full-data gradient of sparse rows is bound by reading the
//! rows' indices and gathering from θ: interleaved, one index serves every chain and
//! the chains' coordinates sit in one cache line. Models with such a pass: logistic
//! regression and the GLMs on sparse rows, binary or with values; and only where a pass
//! reads at least [`MIN_WORK`] values, below which the threads' joins at every leapfrog
//! step cost more than the pass saves.

use rand_core::Rng;
use rayon::prelude::*;
use sgld::Error;
use sgld::gradient::log_lik_grads_interleaved;
use sgld::sampler::MalaInfo;

use super::{Hmc, HmcState, Leap};
use crate::sample::problem::ModelSync;

/// Values a full-data pass reads (rows times their mean count of non-zeros) below which
/// the chains run each alone: on small data the threads' joins at every leapfrog step
/// cost more than the shared pass saves (2,000 rows of 30 values: two thirds of the
/// chains' speed alone; 20,000 rows of 100: 1.4 times it).
pub const MIN_WORK: usize = 1 << 18;

/// The workspace of interleaved full-data passes: the chains' positions, and per part
/// of the rows its gradients, partial sums and log likelihoods.
pub struct Lockstep {
    d: usize,
    thetas: Vec<f32>,
    parts: Vec<Part>,
}

struct Part {
    grads: Vec<f32>,
    tmp: Vec<f32>,
    values: Vec<f64>,
}

impl Lockstep {
    /// The workspace for up to `chains` chains on `model`, or `None` for one chain or
    /// more than the model's interleaved pass takes
    /// ([`interleaved_points`](sgld::models::Model::interleaved_points): none where it
    /// has no such pass).
    pub fn new(model: &dyn ModelSync, chains: usize) -> Option<Self> {
        if !(2..=model.interleaved_points()).contains(&chains) {
            return None;
        }
        let d = model.dim();
        let len = d.checked_mul(chains)?;
        let thetas = vec![0.0f32; len];
        // A part per thread, each a few thousand rows at least.
        let n = model.len();
        let parts = rayon::current_num_threads().clamp(1, n.div_ceil(4096).max(1));
        Some(Self {
            d,
            thetas,
            parts: (0..parts)
                .map(|_| Part {
                    grads: vec![0.0; len],
                    tmp: vec![0.0; len],
                    values: vec![0.0; chains],
                })
                .collect(),
        })
    }

    /// One interleaved pass at `props`, the chains' positions: the rows' parts summed
    /// into the first part, for [`Lockstep::take`]; the log likelihoods only where a
    /// chain wants its `value` (a trajectory's last step).
    fn pass(&mut self, model: &dyn ModelSync, props: &[&[f32]], value: bool) {
        let (d, k) = (self.d, props.len());
        let n = model.len();
        for (c, prop) in props.iter().enumerate() {
            for (j, &t) in prop.iter().enumerate() {
                self.thetas[j * k + c] = t;
            }
        }
        let thetas = &self.thetas[..d * k];
        let (count, nv) = (self.parts.len(), if value { k } else { 0 });
        self.parts.par_iter_mut().enumerate().for_each(|(p, part)| {
            let rows = p * n / count..(p + 1) * n / count;
            let ok = log_lik_grads_interleaved(
                model,
                thetas,
                k,
                rows,
                &mut part.grads[..d * k],
                &mut part.tmp[..d * k],
                &mut part.values[..nv],
            );
            debug_assert!(ok, "the pass was checked when the workspace was made");
        });
        let (first, rest) = self.parts.split_first_mut().expect("one part at least");
        for part in rest.iter() {
            for (a, &b) in first.grads[..d * k].iter_mut().zip(&part.grads) {
                *a += b;
            }
        }
    }

    /// From the last [`Lockstep::pass`] over `k` chains: chain `c`'s log posterior
    /// gradient at `prop` into `grad`, and its log posterior where `value` (else NaN).
    fn take(
        &self,
        model: &dyn ModelSync,
        (c, k): (usize, usize),
        prop: &[f32],
        grad: &mut [f32],
        value: bool,
    ) -> f64 {
        let sums = &self.parts[0].grads;
        for (j, g) in grad.iter_mut().enumerate() {
            *g = sums[j * k + c];
        }
        model.add_log_prior_grad(prop, grad);
        match value {
            true => model.log_prior(prop) + self.parts.iter().map(|p| p.values[c]).sum::<f64>(),
            false => f64::NAN,
        }
    }
}

/// The workspace for `chains` chains of `hmc` in lockstep, where its model has an
/// interleaved pass ([`Lockstep::new`]) and a pass reads at least [`MIN_WORK`] values.
pub fn workspace(hmc: &Hmc<'_>, chains: usize) -> Option<Lockstep> {
    let work = hmc.model.len().saturating_mul(hmc.model.row_width());
    (work >= MIN_WORK).then(|| Lockstep::new(hmc.model, chains))?
}

/// A chain's transition in a lockstep round: its state, its step, its random numbers.
pub struct Slot<'a, R: Rng + Send> {
    pub state: &'a mut HmcState,
    pub rng: &'a mut R,
    /// The step this transition is made with.
    pub h: f64,
    /// Whether its trajectory waits for a gradient at `prop`.
    wants: bool,
}

impl<'a, R: Rng + Send> Slot<'a, R> {
    /// A transition of `state` at step `h` with `rng`'s numbers.
    pub fn new(state: &'a mut HmcState, rng: &'a mut R, h: f64) -> Self {
        Self {
            state,
            rng,
            h,
            wants: false,
        }
    }
}

/// One transition of every slot's chain under `hmc`, the chains' gradients taken
/// together through `lock`: the same transitions as [`Hmc::step`] on each, but for the
/// gradients' rounding. Returns what each slot's transition did, in the slots' order.
pub fn transitions<R: Rng + Send>(
    hmc: &Hmc<'_>,
    lock: &mut Lockstep,
    slots: &mut [Slot<'_, R>],
) -> Vec<Result<MalaInfo, Error>> {
    // Each chain's start and its first leapfrog step up to the gradient, then per round
    // one pass for the chains that want one, and on each chain's thread the rest of its
    // step and the next one up to its gradient: two joins of the threads a leapfrog step.
    let mut leaps: Vec<Result<Leap, Error>> = slots
        .par_iter_mut()
        .map(|s| {
            let mut leap = hmc.begin(s.state, s.h, s.rng)?;
            s.wants = hmc.to_gradient(s.state, &mut leap);
            Ok(leap)
        })
        .collect();
    loop {
        let mut waiting: Vec<(&mut Slot<'_, R>, &mut Leap)> = slots
            .iter_mut()
            .zip(&mut leaps)
            .filter_map(|(s, l)| l.as_mut().ok().filter(|_| s.wants).map(|l| (s, l)))
            .collect();
        if waiting.is_empty() {
            break;
        }
        {
            let props: Vec<&[f32]> = waiting
                .iter()
                .map(|(s, _)| s.state.prop.as_slice())
                .collect();
            let value = waiting.iter().any(|(_, leap)| leap.last());
            lock.pass(hmc.model, &props, value);
        }
        let (lock, k) = (&*lock, waiting.len());
        waiting
            .par_iter_mut()
            .enumerate()
            .for_each(|(c, (s, leap))| {
                let state = &mut *s.state;
                let lp = lock.take(hmc.model, (c, k), &state.prop, &mut state.grad, leap.last());
                hmc.after_gradient(state, leap, lp);
                s.wants = hmc.to_gradient(state, leap);
            });
    }
    slots
        .par_iter_mut()
        .zip(leaps)
        .map(|(s, leap)| Ok(hmc.finish(s.state, leap?, s.rng)))
        .collect()
}
