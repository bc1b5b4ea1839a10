//! The small text specifications of the command line: priors (`laplace:1`), step sizes
//! (`range:0.01,0.0001,0.55`) and burn-in (`auto` or a number of steps).

use std::fmt;
use std::str::FromStr;

use sgld::schedule::{Constant, Cyclical, Polynomial, Schedule};

/// `--prior laplace:SCALE | gaussian:VAR | nig:V,PHI,PSI`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PriorSpec {
    /// Independent Laplace coefficients with this scale (§5.2 uses 1).
    Laplace(f32),
    /// Independent Gaussian coefficients with this variance.
    Gaussian(f32),
    /// Normal–inverse-gamma: `β|σ² ~ N(0, σ²·V·I)`, `σ² ~ IG(φ, ψ)`.
    Nig {
        /// Prior variance scale of the coefficients.
        v: f32,
        /// Inverse-gamma shape.
        phi: f32,
        /// Inverse-gamma scale.
        psi: f32,
    },
}

/// `--step-size range:START,END[,GAMMA] | poly:A,B,GAMMA | const:EPS`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepSpec {
    /// Polynomial decay from `start` (first step) to `end` (last step) with exponent γ
    /// (default 0.55).
    Range {
        /// First step size.
        start: f64,
        /// Last step size.
        end: f64,
        /// Decay exponent.
        gamma: f64,
    },
    /// `εₜ = a(b + t)^{−γ}`.
    Poly {
        /// Scale.
        a: f64,
        /// Offset.
        b: f64,
        /// Decay exponent.
        gamma: f64,
    },
    /// A constant step.
    Const(f64),
    /// The cyclical cosine schedule (Zhang et al. 2020) from `max` in `cycles` cycles
    /// over the run.
    Cyclical {
        /// Step size at the start of each cycle.
        max: f64,
        /// Number of cycles.
        cycles: u64,
    },
}

/// `--burn-in auto|STEPS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BurnIn {
    /// End burn-in when the sampling threshold (eq. 10) falls below `--alpha`.
    Auto,
    /// A fixed number of steps.
    Steps(u64),
}

fn numbers<const N: usize>(s: &str, what: &str, form: &str) -> Result<[f64; N], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() != N {
        return Err(format!(
            "{what} needs {N} comma-separated numbers ({form}), got {s:?}"
        ));
    }
    let mut out = [0.0; N];
    for (o, p) in out.iter_mut().zip(&parts) {
        *o = p
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("{what}: {p:?} is not a finite number ({form})"))?;
    }
    Ok(out)
}

fn positive(v: f64, what: &str) -> Result<f64, String> {
    if v > 0.0 {
        Ok(v)
    } else {
        Err(format!("{what} must be > 0, got {v}"))
    }
}

impl FromStr for PriorSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, rest) = s.split_once(':').ok_or_else(|| {
            format!("prior {s:?} must be laplace:SCALE, gaussian:VAR or nig:V,PHI,PSI")
        })?;
        match kind {
            "laplace" => {
                let [b] = numbers::<1>(rest, "laplace prior", "laplace:SCALE")?;
                Ok(PriorSpec::Laplace(positive(b, "Laplace scale")? as f32))
            }
            "gaussian" => {
                let [v] = numbers::<1>(rest, "gaussian prior", "gaussian:VAR")?;
                Ok(PriorSpec::Gaussian(
                    positive(v, "Gaussian prior variance")? as f32
                ))
            }
            "nig" => {
                let [v, phi, psi] = numbers::<3>(rest, "nig prior", "nig:V,PHI,PSI")?;
                Ok(PriorSpec::Nig {
                    v: positive(v, "nig V")? as f32,
                    phi: positive(phi, "nig PHI")? as f32,
                    psi: positive(psi, "nig PSI")? as f32,
                })
            }
            other => Err(format!(
                "unknown prior {other:?}: use laplace:SCALE, gaussian:VAR or nig:V,PHI,PSI"
            )),
        }
    }
}

impl fmt::Display for PriorSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PriorSpec::Laplace(b) => write!(f, "laplace:{b}"),
            PriorSpec::Gaussian(v) => write!(f, "gaussian:{v}"),
            PriorSpec::Nig { v, phi, psi } => write!(f, "nig:{v},{phi},{psi}"),
        }
    }
}

impl FromStr for StepSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, rest) = s.split_once(':').ok_or_else(|| {
            format!("step size {s:?} must be range:START,END[,GAMMA], poly:A,B,GAMMA, const:EPS or cyclical:EPS0,CYCLES")
        })?;
        let spec = match kind {
            "range" => {
                let n = rest.split(',').count();
                let (start, end, gamma) = if n == 2 {
                    let [a, b] = numbers::<2>(rest, "range step size", "range:START,END[,GAMMA]")?;
                    (a, b, 0.55)
                } else {
                    let [a, b, g] =
                        numbers::<3>(rest, "range step size", "range:START,END[,GAMMA]")?;
                    (a, b, g)
                };
                StepSpec::Range { start, end, gamma }
            }
            "poly" => {
                let [a, b, gamma] = numbers::<3>(rest, "poly step size", "poly:A,B,GAMMA")?;
                StepSpec::Poly { a, b, gamma }
            }
            "const" => {
                let [e] = numbers::<1>(rest, "const step size", "const:EPS")?;
                StepSpec::Const(e)
            }
            "cyclical" => {
                let [max, c] = numbers::<2>(rest, "cyclical step size", "cyclical:EPS0,CYCLES")?;
                if !(c >= 1.0 && c.fract() == 0.0) {
                    return Err(format!(
                        "cyclical step size: CYCLES must be a whole number >= 1, got {c}"
                    ));
                }
                StepSpec::Cyclical {
                    max,
                    cycles: c as u64,
                }
            }
            other => {
                return Err(format!(
                    "unknown step size {other:?}: use range:, poly:, const: or cyclical:"
                ));
            }
        };
        // Validate now (with a nominal run length) so a bad value fails at parse time.
        spec.schedule(1000)
            .map_err(|e| format!("step size {s:?}: {e}"))?;
        Ok(spec)
    }
}

impl fmt::Display for StepSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepSpec::Range { start, end, gamma } => write!(f, "range:{start},{end},{gamma}"),
            StepSpec::Poly { a, b, gamma } => write!(f, "poly:{a},{b},{gamma}"),
            StepSpec::Const(e) => write!(f, "const:{e}"),
            StepSpec::Cyclical { max, cycles } => write!(f, "cyclical:{max},{cycles}"),
        }
    }
}

/// A schedule built from a [`StepSpec`].
#[derive(Debug, Clone, Copy)]
pub enum StepSchedule {
    /// Polynomial decay.
    Poly(Polynomial),
    /// Constant.
    Const(Constant),
    /// Cyclical.
    Cyclical(Cyclical),
}

impl Schedule for StepSchedule {
    fn step_size(&self, t: u64) -> f32 {
        match self {
            StepSchedule::Poly(p) => p.step_size(t),
            StepSchedule::Const(c) => c.step_size(t),
            StepSchedule::Cyclical(c) => c.step_size(t),
        }
    }
}

impl StepSpec {
    /// The schedule for a run of `steps` steps.
    pub fn schedule(&self, steps: u64) -> Result<StepSchedule, sgld::Error> {
        Ok(match *self {
            StepSpec::Range { start, end, gamma } => {
                StepSchedule::Poly(Polynomial::from_range(start, end, gamma, steps.max(2))?)
            }
            StepSpec::Poly { a, b, gamma } => StepSchedule::Poly(Polynomial::new(a, b, gamma)?),
            StepSpec::Const(e) => StepSchedule::Const(Constant::new(e as f32)?),
            StepSpec::Cyclical { max, cycles } => {
                StepSchedule::Cyclical(Cyclical::new(max, steps.max(cycles), cycles)?)
            }
        })
    }
}

impl FromStr for BurnIn {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "auto" {
            return Ok(BurnIn::Auto);
        }
        s.parse::<u64>()
            .map(BurnIn::Steps)
            .map_err(|_| format!("burn-in {s:?} must be auto or a number of steps"))
    }
}

/// `--step-size auto | SPEC`: `auto` adapts the step in warm-up (eq. 10); a spec is used
/// exactly as given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepChoice {
    /// Warm-up finds the mode, a preconditioner and the step that puts α at `--alpha`.
    Auto,
    /// The user's schedule.
    Given(StepSpec),
}

impl FromStr for StepChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "auto" {
            Ok(StepChoice::Auto)
        } else {
            s.parse().map(StepChoice::Given)
        }
    }
}

/// `--batch auto | N`: `auto` picks the smallest batch at which the adapted step is
/// limited by the discretisation rather than by α (the whole data set, without
/// replacement, when that is cheaper); a number is used as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSize(pub Option<usize>);

impl FromStr for BatchSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "auto" {
            return Ok(BatchSize(None));
        }
        match s.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(BatchSize(Some(n))),
            _ => Err(format!("batch {s:?} must be auto or a whole number >= 1")),
        }
    }
}

/// `--thin auto | K`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thin {
    /// At most [`AUTO_DRAWS`](crate::sample::AUTO_DRAWS) draws per chain; about eight
    /// per autocorrelation time of an adapted run.
    Auto,
    /// Keep every K-th step.
    Every(u64),
}

impl FromStr for Thin {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "auto" {
            return Ok(Thin::Auto);
        }
        match s.parse::<u64>() {
            Ok(k) if k >= 1 => Ok(Thin::Every(k)),
            _ => Err(format!("thin {s:?} must be auto or a whole number >= 1")),
        }
    }
}

/// `--chain-ids A..B` (chains A to B − 1) or `--chain-ids A` (chain A alone): which
/// chains of a run to run, numbered from 0 as in `draws.csv`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainIds(pub std::ops::Range<usize>);

impl FromStr for ChainIds {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad =
            || format!("chain ids {s:?} must be A..B (chains A to B-1, B > A) or one number A");
        let range = match s.split_once("..") {
            Some((a, b)) => {
                a.trim().parse().map_err(|_| bad())?..b.trim().parse().map_err(|_| bad())?
            }
            None => {
                let a: usize = s.trim().parse().map_err(|_| bad())?;
                a..a + 1
            }
        };
        if range.is_empty() {
            return Err(bad());
        }
        Ok(ChainIds(range))
    }
}

/// `--init V1,V2,… | PATH`: the chains' start, as numbers (one per parameter, every
/// chain) or a CSV file whose header names the parameters and whose rows are the
/// chains' starts (one row: every chain).
#[derive(Debug, Clone, PartialEq)]
pub enum InitSpec {
    /// One start for every chain.
    Values(Vec<f64>),
    /// A CSV file of starts.
    File(std::path::PathBuf),
}

impl FromStr for InitSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        if let Ok(v) = parts
            .iter()
            .map(|p| p.parse::<f64>())
            .collect::<Result<Vec<_>, _>>()
        {
            if let Some(bad) = v.iter().find(|x| !x.is_finite()) {
                return Err(format!("init value {bad} is not finite"));
            }
            return Ok(InitSpec::Values(v));
        }
        if s.is_empty() {
            return Err("init needs numbers V1,V2,… or a CSV file".into());
        }
        Ok(InitSpec::File(s.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_forms() {
        assert_eq!(
            "laplace:1".parse::<PriorSpec>(),
            Ok(PriorSpec::Laplace(1.0))
        );
        assert_eq!(
            "gaussian:2.5".parse::<PriorSpec>(),
            Ok(PriorSpec::Gaussian(2.5))
        );
        assert_eq!(
            "nig:100,1,1".parse::<PriorSpec>(),
            Ok(PriorSpec::Nig {
                v: 100.0,
                phi: 1.0,
                psi: 1.0
            })
        );
        assert_eq!(
            "range:0.01,0.0001".parse::<StepSpec>(),
            Ok(StepSpec::Range {
                start: 0.01,
                end: 0.0001,
                gamma: 0.55
            })
        );
        assert_eq!(
            "poly:1,10,0.6".parse::<StepSpec>(),
            Ok(StepSpec::Poly {
                a: 1.0,
                b: 10.0,
                gamma: 0.6
            })
        );
        assert_eq!("const:1e-3".parse::<StepSpec>(), Ok(StepSpec::Const(1e-3)));
        assert_eq!(
            "cyclical:0.01,4".parse::<StepSpec>(),
            Ok(StepSpec::Cyclical {
                max: 0.01,
                cycles: 4
            })
        );
        assert_eq!("auto".parse::<BurnIn>(), Ok(BurnIn::Auto));
        assert_eq!("500".parse::<BurnIn>(), Ok(BurnIn::Steps(500)));
    }

    #[test]
    fn rejects_bad_forms_with_a_reason() {
        for bad in [
            "laplace",
            "laplace:0",
            "laplace:-1",
            "gaussian:nan",
            "nig:1,2",
            "cauchy:1",
        ] {
            let e = bad.parse::<PriorSpec>().unwrap_err();
            assert!(!e.is_empty(), "{bad}");
        }
        for bad in [
            "range:1e-4,1e-2",
            "const:0",
            "const:-1",
            "poly:1,0,0.5",
            "range:a,b",
            "fixed:1",
            "const:inf",
            "cyclical:0.1,0",
            "cyclical:0.1,2.5",
            "cyclical:-1,2",
        ] {
            assert!(bad.parse::<StepSpec>().is_err(), "{bad}");
        }
        assert!("-3".parse::<BurnIn>().is_err());
        assert!("0".parse::<Thin>().is_err());
        assert!("x".parse::<Thin>().is_err());
        assert!("const:0".parse::<StepChoice>().is_err());
        assert!("1,nan".parse::<InitSpec>().is_err());
    }

    #[test]
    fn parses_auto_and_init_forms() {
        assert_eq!("auto".parse::<StepChoice>(), Ok(StepChoice::Auto));
        assert_eq!(
            "const:0.1".parse::<StepChoice>(),
            Ok(StepChoice::Given(StepSpec::Const(0.1)))
        );
        assert_eq!("2..5".parse::<ChainIds>(), Ok(ChainIds(2..5)));
        assert_eq!("3".parse::<ChainIds>(), Ok(ChainIds(3..4)));
        for bad in ["5..5", "5..2", "a..3", "1..", "-1", ""] {
            assert!(bad.parse::<ChainIds>().is_err(), "{bad}");
        }
        assert_eq!("auto".parse::<Thin>(), Ok(Thin::Auto));
        assert_eq!("5".parse::<Thin>(), Ok(Thin::Every(5)));
        assert_eq!(
            "1, -2.5,0".parse::<InitSpec>(),
            Ok(InitSpec::Values(vec![1.0, -2.5, 0.0]))
        );
        assert_eq!(
            "starts.csv".parse::<InitSpec>(),
            Ok(InitSpec::File("starts.csv".into()))
        );
    }
}
