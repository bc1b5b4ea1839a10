//! The network as a model (stage 2): its likelihood, its parameter names in order, and
//! its description and layer summaries for summary.json. Its sampling is a later stage's.

use sgld::models::{Mlp, Noise};

use super::config::NetOutput;
use super::records::{Group, NetworkSummary, ParamSummary, Scaling};

/// The likelihood of an output.
pub fn noise(output: NetOutput) -> Noise {
    match output {
        NetOutput::Gaussian => Noise::Learned {
            shape: 6.0,
            rate: 6.0,
        },
        NetOutput::Bernoulli => Noise::Bernoulli,
    }
}

/// The output a network's noise model stands for.
fn output_of(net: &Mlp<'_>) -> NetOutput {
    match net.noise() {
        Noise::Bernoulli => NetOutput::Bernoulli,
        _ => NetOutput::Gaussian,
    }
}

/// Parameter names in the network's order: per hidden unit `h` (from 1) its weights
/// `w1[h:input]` and bias `b1[h]`, then `w2[h]`, `b2` and (regression with a learned
/// precision) `log_precision`.
pub fn names(inputs: &[String], hidden: usize, noise: Noise) -> Vec<String> {
    let mut n = Vec::with_capacity(hidden * (inputs.len() + 2) + 2);
    for h in 1..=hidden {
        n.extend(inputs.iter().map(|x| format!("w1[{h}:{x}]")));
        n.push(format!("b1[{h}]"));
    }
    n.extend((1..=hidden).map(|h| format!("w2[{h}]")));
    n.push("b2".into());
    if matches!(noise, Noise::Learned { .. }) {
        n.push("log_precision".into());
    }
    n
}

/// The layers' summaries (`w1`, `b1`, `w2`, `b2`) of a network with `inputs` inputs and
/// `hidden` units, from the per-parameter summaries in the network's order.
pub fn groups(params: &[ParamSummary], inputs: usize, hidden: usize) -> Vec<Group> {
    let k = inputs + 1;
    let o = hidden * k;
    let w1: Vec<usize> = (0..hidden).flat_map(|h| h * k..h * k + inputs).collect();
    let b1: Vec<usize> = (0..hidden).map(|h| h * k + inputs).collect();
    let w2: Vec<usize> = (o..o + hidden).collect();
    [("w1", w1), ("b1", b1), ("w2", w2), ("b2", vec![o + hidden])]
        .into_iter()
        .map(|(name, at)| {
            let ps: Vec<&ParamSummary> = at.iter().filter_map(|&j| params.get(j)).collect();
            let n = ps.len().max(1) as f64;
            let mut rhats: Vec<f64> = ps.iter().map(|p| p.rhat).collect();
            rhats.sort_by(f64::total_cmp);
            Group {
                name: name.into(),
                params: ps.len(),
                rms_mean: (ps.iter().map(|p| p.mean * p.mean).sum::<f64>() / n).sqrt(),
                mean_sd: ps.iter().map(|p| p.sd).sum::<f64>() / n,
                median_rhat: rhats.get(rhats.len() / 2).copied().unwrap_or(f64::NAN),
                min_ess_bulk: ps.iter().map(|p| p.ess_bulk).fold(f64::INFINITY, f64::min),
            }
        })
        .collect()
}

/// The shape of `net` for summary.json (its groups and checks filled in by the caller).
pub fn describe(net: &Mlp<'_>, scaling: Option<Scaling>) -> NetworkSummary {
    NetworkSummary {
        inputs: net.d_in(),
        hidden: net.width(),
        output: output_of(net),
        scaling,
        step_grid: vec![],
        groups: vec![],
        checked: vec![],
    }
}
