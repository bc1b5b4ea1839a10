//! The draws as a model of the user's reports them: on its parameters' own scale (a
//! [`Constrained`](crate::constrained::Constrained) model's `θ = T(u)`) and with the
//! derived quantities it asks for, so that draws.csv, the summaries, R̂, ESS and the
//! CmdStan files are of what the user wrote, not of the sampler's coordinates.

use super::chains::Chain;
use super::draws::Draws;
use super::target::Target;

/// The reported names: the parameters', then the derived quantities'.
pub fn names(target: &Target<'_>) -> Vec<String> {
    let mut names = target.names.clone();
    if let Some((derived, _)) = &target.derived {
        names.extend(derived.iter().cloned());
    }
    names
}

/// Whether the reported draws differ from the sampler's.
pub fn applies(target: &Target<'_>) -> bool {
    target.supports.is_some() || target.derived.is_some()
}

/// One reported row: `θ = T(u)` (or `u`), then the derived quantities at θ.
fn row(target: &Target<'_>, u: &[f32], out: &mut Vec<f32>) -> Result<(), String> {
    out.clear();
    out.resize(u.len(), 0.0);
    match target.supports {
        Some(blocks) => sgld::transform::constrain(blocks, u, out),
        None => out.copy_from_slice(u),
    }
    if let Some((names, f)) = &target.derived {
        let values = f(&out[..]);
        if values.len() != names.len() {
            return Err(format!(
                "the derived quantities gave {} values for {} names",
                values.len(),
                names.len()
            ));
        }
        out.extend(values);
    }
    Ok(())
}

/// The chains' kept draws as reported (in memory: a user's model keeps at most
/// [`super::AUTO_DRAWS`] per chain by default), with each chain's record and state;
/// `None` when the target reports the sampler's own coordinates.
pub fn chains(target: &Target<'_>, chains: &[Chain]) -> Result<Option<Vec<Chain>>, String> {
    if !applies(target) {
        return Ok(None);
    }
    let width = names(target).len();
    chains
        .iter()
        .map(|ch| {
            let mut draws = Draws::in_memory(width);
            let mut out = Vec::with_capacity(width);
            ch.draws.rows(0..ch.kept(), |_, u| {
                row(target, u, &mut out)?;
                draws.push(&out)
            })?;
            let mut c = Chain::from_draws(ch.id, draws, ch.record.clone());
            c.steps_run = ch.steps_run;
            c.failure.clone_from(&ch.failure);
            c.crossed = ch.crossed;
            (c.min_alpha, c.lambda_at_min) = (ch.min_alpha, ch.lambda_at_min);
            c.moves = ch.moves;
            c.theta.clone_from(&ch.theta);
            Ok(c)
        })
        .collect::<Result<Vec<_>, String>>()
        .map(Some)
}

/// The Laplace approximation's sds on the reported scale, by the delta method at the
/// mode: `|dθⱼ/duⱼ|·sdⱼ` coordinate by coordinate (an ordered block's `θₖ` adds its
/// increments' in quadrature); none for the derived quantities.
pub fn laplace_sds(target: &Target<'_>, mode: &[f32], sds: &[f64]) -> Vec<f64> {
    let Some(blocks) = target.supports else {
        return sds.to_vec();
    };
    let mut out = Vec::with_capacity(sds.len());
    let mut at = 0usize;
    for &(s, len) in blocks {
        let end = (at + len).min(sds.len()).min(mode.len());
        // An ordered block's θₖ is the sum of the first k increments: their variances add.
        let mut var = 0.0f64;
        for j in at..end {
            let sd = (s.derivative(j - at, mode[j] as f64) * sds[j]).abs();
            if s == sgld::transform::Support::Ordered {
                var += sd * sd;
                out.push(var.sqrt());
            } else {
                out.push(sd);
            }
        }
        at = end;
    }
    out
}
