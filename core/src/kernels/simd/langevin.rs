//! The Langevin update of eq. 4 (and eq. 9 with a diagonal preconditioner): in place,
//! as a proposal, and checked, with the tail moved in fixed pieces.

use super::*;

/// The Langevin update in place, eq. 4: `θ ← θ + (ε/2)·g + √ε·η`, given `h = ε/2`
/// and `s = √ε`.
pub fn langevin_update(theta: &mut [f32], grad: &[f32], noise: &[f32], h: f32, s: f32) {
    let n = theta.len().min(grad.len()).min(noise.len());
    let (theta, grad, noise) = (&mut theta[..n], &grad[..n], &noise[..n]);
    let (vh, vs) = (f32x16::splat(h), f32x16::splat(s));
    let mut tc = theta.chunks_exact_mut(LANES);
    let mut gc = grad.chunks_exact(LANES);
    let mut nc = noise.chunks_exact(LANES);
    for ((t, g), e) in (&mut tc).zip(&mut gc).zip(&mut nc) {
        let v = vs.mul_add(load(e), vh.mul_add(load(g), load(t)));
        store(v, t);
    }
    let tail = tc.into_remainder().iter_mut();
    for ((t, g), e) in tail.zip(gc.remainder()).zip(nc.remainder()) {
        *t += h * g + s * e;
    }
}

/// The Langevin proposal out of place: `η ← θ + (ε/2)·g + √ε·η` (the noise buffer is
/// overwritten by the proposed position), given `h = ε/2` and `s = √ε`: the values
/// [`langevin_step_checked`] writes into θ, bit for bit.
pub fn langevin_propose(theta: &[f32], grad: &[f32], noise: &mut [f32], h: f32, s: f32) {
    let n = theta.len().min(grad.len()).min(noise.len());
    let (theta, grad, noise) = (&theta[..n], &grad[..n], &mut noise[..n]);
    if n < LANES {
        for ((e, t), g) in noise.iter_mut().zip(theta).zip(grad) {
            *e = t + h * g + s * *e;
        }
        return;
    }
    let (vh, vs) = (f32x16::splat(h), f32x16::splat(s));
    // The last vector, read before the loop writes the elements it shares with it.
    let last = n - LANES;
    let v_last = vs.mul_add(
        load(&noise[last..]),
        vh.mul_add(load(&grad[last..]), load(&theta[last..])),
    );
    let mut tc = theta.chunks_exact(LANES);
    let mut gc = grad.chunks_exact(LANES);
    let mut nc = noise.chunks_exact_mut(LANES);
    for ((t, g), e) in (&mut tc).zip(&mut gc).zip(&mut nc) {
        store(vs.mul_add(load(e), vh.mul_add(load(g), load(t))), e);
    }
    store(v_last, &mut noise[last..]);
}

/// The Langevin step of eq. 4 in place, with its checks in the same pass:
/// `θ ← θ + h·g + s·η` (`h = ε/2`, `s = √ε`), the old `θ` left in `noise` so that the
/// caller can take the step back, returning `Σ η²` and `Σ g²` of what it read and
/// whether every new `θᵢ` is finite (what a sampler reports and checks before it keeps
/// the step).
///
/// A length that is not a multiple of sixteen ends with its last `n mod 16` elements
/// in one vector, loaded and stored in fixed pieces (eight floats, four, then one at a
/// time, each one access; zeros in the lanes above): the next step reads θ
/// and the noise buffer back piece by piece, each piece from the one store that wrote
/// it. (Read as the last sixteen elements, the tail overlapped the loop's last vector,
/// and a load across two stores waits for both to reach the cache: at d = 124 the step
/// alone, called on its own output, took 19–20 ns against 13.4 at 128.)
#[inline]
pub fn langevin_step_checked(
    theta: &mut [f32],
    grad: &[f32],
    noise: &mut [f32],
    h: f32,
    s: f32,
) -> StepCheck {
    if !WIDE {
        return langevin_step_checked_x4(theta, grad, noise, h, s);
    }
    let n = theta.len().min(grad.len()).min(noise.len());
    let (theta, grad, noise) = (&mut theta[..n], &grad[..n], &mut noise[..n]);
    if n < LANES {
        return step_tail(theta, grad, noise, h, s);
    }
    let (vh, vs) = (f32x16::splat(h), f32x16::splat(s));
    let (mut esq, mut gsq, mut bad) = (f32x16::ZERO, f32x16::ZERO, f32x16::ZERO);
    let full = n - n % LANES;
    let (theta, theta_tail) = theta.split_at_mut(full);
    let (grad, grad_tail) = grad.split_at(full);
    let (noise, noise_tail) = noise.split_at_mut(full);
    for ((t, g), e) in theta
        .chunks_exact_mut(LANES)
        .zip(grad.chunks_exact(LANES))
        .zip(noise.chunks_exact_mut(LANES))
    {
        let (tv, gv, ev) = (load(t), load(g), load(e));
        esq = ev.mul_add(ev, esq);
        gsq = gv.mul_add(gv, gsq);
        let v = vs.mul_add(ev, vh.mul_add(gv, tv));
        bad += v * f32x16::ZERO;
        store(v, t);
        store(tv, e);
    }
    if !theta_tail.is_empty() {
        // The last elements in lanes `0..rem`, zeros above (which add nothing to the
        // sums and are not stored), moved in the pieces of [`tail::load`].
        let (tv, gv, ev) = (
            tail::load(theta_tail),
            tail::load(grad_tail),
            tail::load(noise_tail),
        );
        esq = ev.mul_add(ev, esq);
        gsq = gv.mul_add(gv, gsq);
        let v = vs.mul_add(ev, vh.mul_add(gv, tv));
        bad += v * f32x16::ZERO;
        tail::store(v, theta_tail);
        tail::store(tv, noise_tail);
    }
    StepCheck {
        noise_sq: esq.reduce_add(),
        grad_sq: gsq.reduce_add(),
        finite: bad.reduce_add() == 0.0,
    }
}

/// Whether the target has 512-bit vectors (AVX-512), which [`langevin_step_checked`]'s
/// sixteen-lane loop and pieced tail are made for. Elsewhere `wide` runs a sixteen-lane
/// vector as four of four lanes (or sixteen scalars), and four lanes at a time is the
/// shorter code: [`langevin_step_checked_x4`].
const WIDE: bool = cfg!(all(
    any(target_arch = "x86", target_arch = "x86_64"),
    target_feature = "avx512f"
));

/// [`langevin_step_checked`] four lanes at a time: what it runs on a target without
/// 512-bit vectors (wasm32 with `simd128`, x86 without AVX-512, Arm). The last `n mod 4`
/// elements go through one more vector, padded with zeros, and fewer than sixteen
/// elements in all one at a time, as there: so θ and the noise buffer come out bit for
/// bit as the sixteen-lane loop writes them, on any target. The sums of squares differ
/// only in rounding, being summed in another order.
pub fn langevin_step_checked_x4(
    theta: &mut [f32],
    grad: &[f32],
    noise: &mut [f32],
    h: f32,
    s: f32,
) -> StepCheck {
    let n = theta.len().min(grad.len()).min(noise.len());
    let (theta, grad, noise) = (&mut theta[..n], &grad[..n], &mut noise[..n]);
    if n < LANES {
        return step_tail(theta, grad, noise, h, s);
    }
    let (vh, vs) = (f32x4::splat(h), f32x4::splat(s));
    let (mut esq, mut gsq, mut bad) = (f32x4::ZERO, f32x4::ZERO, f32x4::ZERO);
    let mut one = |t: &mut [f32; 4], g: [f32; 4], e: &mut [f32; 4]| {
        let (tv, gv, ev) = (f32x4::new(*t), f32x4::new(g), f32x4::new(*e));
        esq = ev.mul_add(ev, esq);
        gsq = gv.mul_add(gv, gsq);
        let v = vs.mul_add(ev, vh.mul_add(gv, tv));
        bad += v * f32x4::ZERO;
        *t = v.to_array();
        *e = tv.to_array();
    };
    let (tc, theta_tail) = theta.as_chunks_mut::<4>();
    let (gc, grad_tail) = grad.as_chunks::<4>();
    let (ec, noise_tail) = noise.as_chunks_mut::<4>();
    for ((t, g), e) in tc.iter_mut().zip(gc).zip(ec.iter_mut()) {
        one(t, *g, e);
    }
    if !theta_tail.is_empty() {
        // Zeros above the last elements add nothing to the sums and are not stored.
        let pad = |x: &[f32]| core::array::from_fn(|j| x.get(j).copied().unwrap_or(0.0));
        let (mut t, g, mut e) = (pad(theta_tail), pad(grad_tail), pad(noise_tail));
        one(&mut t, g, &mut e);
        let r = theta_tail.len();
        theta_tail.copy_from_slice(&t[..r]);
        noise_tail.copy_from_slice(&e[..r]);
    }
    StepCheck {
        noise_sq: esq.reduce_add(),
        grad_sq: gsq.reduce_add(),
        finite: bad.reduce_add() == 0.0,
    }
}

/// [`langevin_step_checked`] for fewer than sixteen elements (lengths trusted equal):
/// four partial sums of each square, element `k` into sum `k mod 4`, so the norms are
/// not chains of dependent adds. Every sum is named by a constant index (four at a
/// time, then the last one to three), which keeps them in registers: an index known
/// only at run time puts them on the stack, and reading them back as one vector after
/// four scalar stores stalls on store forwarding.
#[inline(always)]
pub(super) fn step_tail(
    theta: &mut [f32],
    grad: &[f32],
    noise: &mut [f32],
    h: f32,
    s: f32,
) -> StepCheck {
    let (mut esq, mut gsq, mut finite) = ([0.0f32; 4], [0.0f32; 4], true);
    let mut one = |j: usize, t: &mut f32, g: f32, e: &mut f32| {
        esq[j] += *e * *e;
        gsq[j] += g * g;
        let old = *t;
        *t = old + h * g + s * *e;
        *e = old;
        finite &= t.is_finite();
    };
    let mut tc = theta.chunks_exact_mut(4);
    let mut ec = noise.chunks_exact_mut(4);
    let mut gc = grad.chunks_exact(4);
    for ((t, e), g) in (&mut tc).zip(&mut ec).zip(&mut gc) {
        for j in 0..4 {
            one(j, &mut t[j], g[j], &mut e[j]);
        }
    }
    let (t, e, g) = (tc.into_remainder(), ec.into_remainder(), gc.remainder());
    for j in 0..3 {
        if let (Some(t), Some(e), Some(&g)) = (t.get_mut(j), e.get_mut(j), g.get(j)) {
            one(j, t, g, e);
        }
    }
    let sum = |q: [f32; 4]| (q[0] + q[1]) + (q[2] + q[3]);
    StepCheck {
        noise_sq: sum(esq),
        grad_sq: sum(gsq),
        finite,
    }
}

/// The preconditioned Langevin update in place, eq. 9 with a diagonal `M`:
/// `θ ← θ + (ε/2)·M·g + √ε·M^½·η`, given `h = ε/2` and `s = √ε`.
pub fn langevin_update_precond(
    theta: &mut [f32],
    grad: &[f32],
    noise: &[f32],
    m: &[f32],
    h: f32,
    s: f32,
) {
    let n = theta.len().min(grad.len()).min(noise.len()).min(m.len());
    let (theta, grad, noise, m) = (&mut theta[..n], &grad[..n], &noise[..n], &m[..n]);
    let (vh, vs) = (f32x16::splat(h), f32x16::splat(s));
    let mut tc = theta.chunks_exact_mut(LANES);
    let mut gc = grad.chunks_exact(LANES);
    let mut nc = noise.chunks_exact(LANES);
    let mut mc = m.chunks_exact(LANES);
    for (((t, g), e), mm) in (&mut tc).zip(&mut gc).zip(&mut nc).zip(&mut mc) {
        let mv = load(mm);
        let drift = (vh * mv).mul_add(load(g), load(t));
        let v = (vs * mv.sqrt()).mul_add(load(e), drift);
        store(v, t);
    }
    let tail = tc.into_remainder().iter_mut();
    let rest = gc
        .remainder()
        .iter()
        .zip(nc.remainder())
        .zip(mc.remainder());
    for (t, ((g, e), mm)) in tail.zip(rest) {
        *t += h * mm * g + s * libm::sqrtf(*mm) * e;
    }
}
