//! Stage 2, the problem: data read and checked, then made into a model the chains share.

use std::path::Path;

use sgld::kernels::SparseIndex;
use sgld::models::{
    BitRows, DenseRows, Family, Gaussian, Glm, Laplace, LinearRegression, LogisticBits,
    LogisticDense, LogisticSparse, Logit, Mlp, Poisson, Prior, Probit, SparseRows, TiedMixture,
    ValuedRows,
};

use super::config::{ModelKind, NetOutput, SampleConfig};
use super::net_model;
use super::records::Scaling;
use super::records::{DataFile, DataFiles};
pub use super::target::ModelSync;
use crate::data::{self, Dataset, Features, Format};
use crate::spec::PriorSpec;

/// The model built from data (owning the data it borrows from).
pub struct Problem {
    /// Training data as loaded (bias appended for logistic).
    pub train: Dataset,
    /// Test data aligned with the training features.
    pub test: Option<Dataset>,
    /// The data files read, with their sha256.
    pub files: DataFiles,
    /// The training file's feature columns (before a bias is appended).
    pub features: usize,
    /// What loading found worth a warning (a LIBSVM test file's unknown features).
    pub warnings: Vec<String>,
    /// Parameter names.
    pub names: Vec<String>,
    /// The prior.
    pub prior: Option<PriorSpec>,
    /// Responses mapped to what the model uses (±1 for logistic).
    pub y: Vec<f32>,
    /// Test responses, mapped likewise.
    pub y_test: Vec<f32>,
    /// A network's standardisation (`--model mlp`; its data above are standardised).
    pub scaling: Option<Scaling>,
    /// A network's hidden units and output.
    pub net: Option<(usize, NetOutput)>,
    kind: ModelKind,
}

/// Counts for `--model poisson`: whole numbers ≥ 0.
fn counts(path: &Path, data: &Dataset) -> Result<Vec<f32>, String> {
    data.y
        .iter()
        .enumerate()
        .map(|(i, &v)| match Poisson::check(v) {
            Ok(()) => Ok(v),
            Err(_) => Err(format!(
                "{}: {}: response {v} is not a count (a whole number >= 0)",
                path.display(),
                data.locate(i)
            )),
        })
        .collect()
}

fn labels_pm1(path: &Path, data: &Dataset) -> Result<Vec<f32>, String> {
    data.y
        .iter()
        .enumerate()
        .map(|(i, &v)| match v {
            1.0 => Ok(1.0),
            v if v == -1.0 || v == 0.0 => Ok(-1.0),
            v => Err(format!(
                "{}: {}: label {v} is not ±1 or 0/1",
                path.display(),
                data.locate(i)
            )),
        })
        .collect()
}

/// The sha256s of a problem's data files, those of memory-mapped designs still being
/// computed on threads of their own ([`data::Checksum`]).
pub(crate) struct Checksums {
    train: data::Checksum,
    test: Option<data::Checksum>,
}

impl Checksums {
    /// Puts each sha256 into `files`, waiting for those still being computed.
    pub(crate) fn fill(self, files: &mut DataFiles) {
        files.train.sha256 = self.train.wait();
        if let (Some(file), Some(sha)) = (files.test.as_mut(), self.test) {
            file.sha256 = sha.wait();
        }
    }
}

impl Problem {
    /// Loads and checks the data for `cfg`.
    pub fn load(cfg: &SampleConfig) -> Result<Problem, String> {
        let (mut problem, checksums) = Problem::load_checksummed(cfg)?;
        checksums.fill(&mut problem.files);
        Ok(problem)
    }

    /// [`Problem::load`], its files' sha256s left to their [`Checksums`] (each file's
    /// `sha256` empty until [`Checksums::fill`]).
    pub(crate) fn load_checksummed(cfg: &SampleConfig) -> Result<(Problem, Checksums), String> {
        let (mut train, mut test, files, checksums, warnings) = read_data(cfg)?;
        let features = train.dim();
        let prior = prior_for(cfg)?;
        let (y, y_test, names);
        let (mut scaling, mut net) = (None, None);
        match cfg.model {
            ModelKind::Logistic | ModelKind::Probit | ModelKind::Poisson => {
                let responses = match cfg.model {
                    ModelKind::Poisson => counts,
                    _ => labels_pm1,
                };
                y = responses(&cfg.train, &train)?;
                y_test = match (&test, &cfg.test) {
                    (Some(t), Some(p)) => responses(p, t)?,
                    _ => vec![],
                };
                let mut n: Vec<String> = train.names.iter().map(|n| format!("beta[{n}]")).collect();
                if !cfg.no_bias {
                    train = train.with_bias();
                    test = test.map(Dataset::with_bias);
                    n.push("bias".into());
                }
                names = n;
            }
            ModelKind::Linreg => {
                y = train.y.clone();
                y_test = test.as_ref().map(|t| t.y.clone()).unwrap_or_default();
                let mut n: Vec<String> = train.names.iter().map(|n| format!("beta[{n}]")).collect();
                if !cfg.no_bias {
                    train = train.with_bias();
                    test = test.map(Dataset::with_bias);
                    n.push("bias".into());
                }
                n.push("log_sigma2".into());
                names = n;
            }
            ModelKind::Gmm => {
                y = vec![];
                y_test = vec![];
                names = vec!["theta1".into(), "theta2".into()];
            }
            ModelKind::Mlp => {
                let fitted;
                (y, y_test, fitted) = network_data(cfg, &mut train, &mut test)?;
                scaling = Some(fitted);
                names = net_model::names(&train.names, cfg.hidden, net_model::noise(cfg.output));
                net = Some((cfg.hidden, cfg.output));
            }
        }
        let problem = Problem {
            train,
            test,
            files,
            features,
            warnings,
            names,
            prior,
            y,
            y_test,
            scaling,
            net,
            kind: cfg.model,
        };
        Ok((problem, checksums))
    }

    /// The network of `--model mlp` on the (standardised) training rows.
    pub fn network(&self) -> Result<Mlp<'_>, String> {
        self.network_on(&self.train, &self.y)
    }

    /// The same network on the test rows, if any.
    pub fn test_network(&self) -> Result<Option<Mlp<'_>>, String> {
        self.test
            .as_ref()
            .map(|t| self.network_on(t, &self.y_test))
            .transpose()
    }

    fn network_on<'p>(&'p self, data: &'p Dataset, y: &'p [f32]) -> Result<Mlp<'p>, String> {
        let (Some((hidden, output)), Features::Dense { x, d }) = (self.net, &data.features) else {
            return Err("not a network problem".into());
        };
        let prior_var = match self.prior {
            Some(PriorSpec::Gaussian(v)) => v,
            _ => 1.0,
        };
        Mlp::new(x, y, *d, hidden, prior_var, net_model::noise(output))
            .map_err(|e| format!("invalid data or prior: {e}"))
    }

    /// Number of training rows.
    pub fn n_train(&self) -> usize {
        self.train.len()
    }

    /// Number of parameters.
    pub fn dim(&self) -> usize {
        self.names.len()
    }

    /// The model kind.
    pub fn kind(&self) -> ModelKind {
        self.kind
    }
}

fn load_one_column(
    path: &Path,
    fmt: Format,
    target: Option<&str>,
) -> Result<(Dataset, String), String> {
    if fmt != Format::Csv {
        return Err(format!(
            "{}: --model gmm reads a one-column CSV",
            path.display()
        ));
    }
    let (header, values, lines) =
        data::csv_table::read_columns_at(path).map_err(|e| e.to_string())?;
    let col = match target {
        Some(name) => header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| format!("{}: no column named {name:?}", path.display()))?,
        None if header.len() == 1 => 0,
        None => {
            return Err(format!(
                "{}: {} columns; name the data column with --target",
                path.display(),
                header.len()
            ));
        }
    };
    let y: Vec<f32> = values.chunks_exact(header.len()).map(|r| r[col]).collect();
    let sha256 = data::chunked::sha256_file(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let data = Dataset {
        features: Features::Dense { x: vec![], d: 0 },
        y,
        names: vec![],
        lines,
    };
    Ok((data, sha256))
}

/// Runs `f` with the model of `problem` (the models borrow the problem's data).
pub(crate) fn with_model<R>(
    problem: &Problem,
    f: impl FnOnce(&(dyn ModelSync + '_)) -> R,
) -> Result<R, String> {
    let err = |e: sgld::Error| format!("invalid data or prior: {e}");
    match problem.kind {
        ModelKind::Logistic => {
            let prior = problem.prior.unwrap_or(PriorSpec::Laplace(1.0));
            match prior {
                PriorSpec::Laplace(b) => logistic(problem, Laplace::new(b).map_err(err)?, f),
                PriorSpec::Gaussian(v) => logistic(problem, Gaussian::new(v).map_err(err)?, f),
                PriorSpec::Nig { .. } => Err("the nig prior is for linreg".into()),
            }
        }
        ModelKind::Linreg => {
            let Some(PriorSpec::Nig { v, phi, psi }) = problem.prior else {
                return Err("linreg needs a nig prior".into());
            };
            let x = match &problem.train.features {
                Features::Dense { x, .. } => std::borrow::Cow::Borrowed(x),
                Features::SparseBinary { .. } | Features::SparseValued { .. } | Features::Mapped(_) => std::borrow::Cow::Owned(problem.train.dense().ok_or_else(|| {
                    format!(
                        "linreg needs dense features: {} rows x {} features is more than {} values",
                        problem.train.len(),
                        problem.train.dim(),
                        data::MAX_DENSE_VALUES
                    )
                })?),
            };
            let m = LinearRegression::new(&x, &problem.y, problem.train.dim(), v, phi, psi)
                .map_err(err)?;
            Ok(f(&m))
        }
        ModelKind::Gmm => {
            let m = TiedMixture::paper(&problem.train.y).map_err(err)?;
            Ok(f(&m))
        }
        ModelKind::Poisson => glm_with_prior(problem, Poisson, f),
        ModelKind::Probit => glm_with_prior(problem, Probit, f),
        ModelKind::Mlp => Ok(f(&problem.network()?)),
    }
}

/// A generalised linear model of `family` with the problem's prior.
fn glm_with_prior<F: Family + Send + Sync, R>(
    problem: &Problem,
    family: F,
    f: impl FnOnce(&(dyn ModelSync + '_)) -> R,
) -> Result<R, String> {
    let err = |e: sgld::Error| format!("invalid data or prior: {e}");
    match problem.prior.unwrap_or(PriorSpec::Laplace(1.0)) {
        PriorSpec::Laplace(b) => glm(problem, family, Laplace::new(b).map_err(err)?, f),
        PriorSpec::Gaussian(v) => glm(problem, family, Gaussian::new(v).map_err(err)?, f),
        PriorSpec::Nig { .. } => Err("the nig prior is for linreg".into()),
    }
}

fn glm<F: Family + Send + Sync, P: Prior + Copy + Send + Sync, R>(
    problem: &Problem,
    family: F,
    prior: P,
    f: impl FnOnce(&(dyn ModelSync + '_)) -> R,
) -> Result<R, String> {
    let err = |e: sgld::Error| format!("invalid data: {e}");
    let y = &problem.y;
    match &problem.train.features {
        Features::Dense { x, d } => {
            let rows = DenseRows::new(x, *d).map_err(err)?;
            Ok(f(&Glm::new(rows, y, family, prior).map_err(err)?))
        }
        Features::Mapped(m) => {
            let rows = m.rows().map_err(err)?;
            Ok(f(&Glm::new(rows, y, family, prior).map_err(err)?))
        }
        Features::SparseBinary {
            offsets,
            indices,
            d,
        } => on_sparse_rows(
            offsets,
            indices,
            *d,
            y.len(),
            GlmOn {
                y,
                family,
                prior,
                f,
            },
        ),
        Features::SparseValued {
            offsets,
            indices,
            values,
            d,
        } => on_valued_rows(
            offsets,
            indices,
            values,
            *d,
            GlmOn {
                y,
                family,
                prior,
                f,
            },
        ),
    }
}

fn logistic<P: Prior + Copy + Send + Sync, R>(
    problem: &Problem,
    prior: P,
    f: impl FnOnce(&(dyn ModelSync + '_)) -> R,
) -> Result<R, String> {
    let err = |e: sgld::Error| format!("invalid data: {e}");
    let y = &problem.y;
    match &problem.train.features {
        Features::Dense { x, d } => Ok(f(&LogisticDense::new(x, y, *d, prior).map_err(err)?)),
        Features::Mapped(m) => {
            let rows = m.rows().map_err(err)?;
            Ok(f(&LogisticDense::from_rows(rows, y, prior).map_err(err)?))
        }
        Features::SparseBinary {
            offsets,
            indices,
            d,
        } => on_sparse_rows(offsets, indices, *d, y.len(), LogisticOn { y, prior, f }),
        // Logistic regression as the logit GLM, which reads rows with values.
        Features::SparseValued { .. } => glm(problem, Logit, prior, f),
    }
}

/// A model built on binary sparse rows, whichever form [`on_sparse_rows`] reads them in.
trait OnRows {
    /// What the model's caller returns.
    type Out;
    /// The model on bitmap rows.
    fn bits(self, rows: BitRows<'_>) -> Result<Self::Out, String>;
    /// The model on index lists of type `I`.
    fn sparse<I: SparseIndex + Sync>(self, rows: SparseRows<'_, I>) -> Result<Self::Out, String>;
    /// The model on index lists of type `I` with values (the GLMs only).
    fn valued<I: SparseIndex + Sync>(self, rows: ValuedRows<'_, I>) -> Result<Self::Out, String>;
}

/// Hands `on` the `n` binary sparse rows in the form their kernels read fastest: bitmaps
/// where a row's words are no more than its indices (a9a: 8 words for 14 indices; their
/// kernels take sixteen features a word, AVX-512 masks), otherwise index lists of the
/// narrowest type that holds the features (the rows are drawn at random, and narrower
/// rows keep more of the data set in cache).
fn on_sparse_rows<O: OnRows>(
    offsets: &[usize],
    indices: &[u32],
    d: usize,
    n: usize,
    on: O,
) -> Result<O::Out, String> {
    let err = |e: sgld::Error| format!("invalid data: {e}");
    let words_per_row = BitRows::words_per_row(d);
    if words_per_row * n <= indices.len() {
        let rows = SparseRows::new(offsets, indices, d).map_err(err)?;
        let mut words = vec![0u16; rows.len() * words_per_row];
        BitRows::fill_from_sparse(&rows, &mut words).map_err(err)?;
        return on.bits(BitRows::new(&words, d).map_err(err)?);
    }
    if let Some(narrow) = data::narrow_indices::<u8>(indices) {
        on.sparse(SparseRows::narrow(offsets, &narrow, d).map_err(err)?)
    } else if let Some(narrow) = data::narrow_indices::<u16>(indices) {
        on.sparse(SparseRows::narrow(offsets, &narrow, d).map_err(err)?)
    } else {
        on.sparse(SparseRows::new(offsets, indices, d).map_err(err)?)
    }
}

/// Hands `on` the sparse rows with values, their indices of the narrowest type that
/// holds the features.
fn on_valued_rows<O: OnRows>(
    offsets: &[usize],
    indices: &[u32],
    values: &[f32],
    d: usize,
    on: O,
) -> Result<O::Out, String> {
    let err = |e: sgld::Error| format!("invalid data: {e}");
    if let Some(narrow) = data::narrow_indices::<u8>(indices) {
        let rows = SparseRows::narrow(offsets, &narrow, d).map_err(err)?;
        on.valued(ValuedRows::new(rows, values).map_err(err)?)
    } else if let Some(narrow) = data::narrow_indices::<u16>(indices) {
        let rows = SparseRows::narrow(offsets, &narrow, d).map_err(err)?;
        on.valued(ValuedRows::new(rows, values).map_err(err)?)
    } else {
        let rows = SparseRows::new(offsets, indices, d).map_err(err)?;
        on.valued(ValuedRows::new(rows, values).map_err(err)?)
    }
}

/// Logistic regression for [`on_sparse_rows`].
struct LogisticOn<'p, P, F> {
    y: &'p [f32],
    prior: P,
    f: F,
}

impl<P, R, F> OnRows for LogisticOn<'_, P, F>
where
    P: Prior + Copy + Send + Sync,
    F: FnOnce(&(dyn ModelSync + '_)) -> R,
{
    type Out = R;
    fn bits(self, rows: BitRows<'_>) -> Result<R, String> {
        let m = LogisticBits::new(rows, self.y, self.prior);
        Ok((self.f)(&m.map_err(|e| format!("invalid data: {e}"))?))
    }
    fn sparse<I: SparseIndex + Sync>(self, rows: SparseRows<'_, I>) -> Result<R, String> {
        let m = LogisticSparse::new(rows, self.y, self.prior);
        Ok((self.f)(&m.map_err(|e| format!("invalid data: {e}"))?))
    }
    fn valued<I: SparseIndex + Sync>(self, rows: ValuedRows<'_, I>) -> Result<R, String> {
        let m = Glm::new(rows, self.y, Logit, self.prior);
        Ok((self.f)(&m.map_err(|e| format!("invalid data: {e}"))?))
    }
}

/// A generalised linear model for [`on_sparse_rows`].
struct GlmOn<'p, Fam, P, F> {
    y: &'p [f32],
    family: Fam,
    prior: P,
    f: F,
}

impl<Fam, P, R, F> OnRows for GlmOn<'_, Fam, P, F>
where
    Fam: Family + Send + Sync,
    P: Prior + Copy + Send + Sync,
    F: FnOnce(&(dyn ModelSync + '_)) -> R,
{
    type Out = R;
    fn bits(self, rows: BitRows<'_>) -> Result<R, String> {
        let m = Glm::new(rows, self.y, self.family, self.prior);
        Ok((self.f)(&m.map_err(|e| format!("invalid data: {e}"))?))
    }
    fn sparse<I: SparseIndex + Sync>(self, rows: SparseRows<'_, I>) -> Result<R, String> {
        let m = Glm::new(rows, self.y, self.family, self.prior);
        Ok((self.f)(&m.map_err(|e| format!("invalid data: {e}"))?))
    }
    fn valued<I: SparseIndex + Sync>(self, rows: ValuedRows<'_, I>) -> Result<R, String> {
        let m = Glm::new(rows, self.y, self.family, self.prior);
        Ok((self.f)(&m.map_err(|e| format!("invalid data: {e}"))?))
    }
}

impl Problem {
    /// The diagonal of the prior's precision at `theta`, for the Laplace approximation
    /// of the warm-up: `1/(2b²)` for Laplace(b) (the precision of the Gaussian of the same
    /// variance), `1/v` for Gaussian(v); for the Normal–inverse-gamma prior `1/(σ²V)` on
    /// β and `ψ/σ²` on `log σ²` (the curvature of the inverse-gamma's log density in
    /// `log σ²`); the §5.1 mixture's `1/10` and `1`.
    pub fn prior_precision(&self, theta: &[f32]) -> Vec<f64> {
        let d = theta.len();
        match (self.kind, self.prior) {
            (m, Some(PriorSpec::Laplace(b))) if m.is_glm() => {
                vec![1.0 / (2.0 * b as f64 * b as f64); d]
            }
            (m, Some(PriorSpec::Gaussian(v))) if m.is_glm() => vec![1.0 / v as f64; d],
            (ModelKind::Linreg, Some(PriorSpec::Nig { v, psi, .. })) => {
                let inv_s2 = (-(theta[d - 1] as f64)).exp().min(1e30);
                let mut p = vec![inv_s2 / v as f64; d];
                p[d - 1] = psi as f64 * inv_s2;
                p
            }
            (ModelKind::Gmm, _) => vec![0.1, 1.0],
            _ => vec![1.0; d],
        }
    }
}

/// The data read: training, test, their files (with empty sha256s), the files' checksums
/// and the warnings about the data (test features the training data does not have).
type Read = (Dataset, Option<Dataset>, DataFiles, Checksums, Vec<String>);

/// The training and test data of `cfg` with their files, and the warnings about them.
fn read_data(cfg: &SampleConfig) -> Result<Read, String> {
    let fmt = cfg.format.unwrap_or_else(|| Format::from_path(&cfg.train));
    if cfg.labels.is_some() && fmt != Format::Npy {
        return Err("--labels names the labels of a .npy design (--format npy)".into());
    }
    if cfg.labels.is_some() && cfg.test.is_some() != cfg.test_labels.is_some() {
        return Err("with --labels, --test needs its own --test-labels".into());
    }
    let file = |p: &Path| DataFile {
        path: p.display().to_string(),
        sha256: String::new(),
    };
    let load = |p: &Path, labels: Option<&Path>| -> Result<(Dataset, data::Checksum), String> {
        match (cfg.model, labels) {
            (ModelKind::Gmm, _) => {
                load_one_column(p, fmt, cfg.target.as_deref()).map(|(d, sha)| (d, sha.into()))
            }
            (_, Some(l)) => {
                data::npy::read(p, data::npy::Response::File(l)).map_err(|e| e.to_string())
            }
            _ => data::load_checksummed(p, Some(fmt), cfg.target.as_deref())
                .map_err(|e| e.to_string()),
        }
    };
    let (train, train_sha) = load(&cfg.train, cfg.labels.as_deref())?;
    let mut warnings = Vec::new();
    let (mut test, test_sha) = match cfg.test.as_deref() {
        // CSV and Parquet test columns are matched to the training columns by name,
        // the response too (the training file's `--target`, or its last column).
        Some(p) if matches!(fmt, Format::Csv | Format::Parquet) && cfg.model != ModelKind::Gmm => {
            let target = data::target_name(&cfg.train, fmt, cfg.target.as_deref())
                .map_err(|e| e.to_string())?;
            let (t, sha) = data::load_checksummed(p, Some(fmt), target.as_deref())
                .map_err(|e| e.to_string())?;
            (Some(t.match_columns(&train.names, p)?), Some(sha))
        }
        Some(p) => {
            let (t, sha) = load(p, cfg.test_labels.as_deref())?;
            (Some(t), Some(sha))
        }
        None => (None, None),
    };
    let files = DataFiles {
        train: file(&cfg.train),
        test: cfg.test.as_deref().map(file),
    };
    let checksums = Checksums {
        train: train_sha,
        test: test_sha,
    };
    if let (Some(t), Some(p)) = (test.take(), cfg.test.as_deref()) {
        let t = if fmt == Format::Libsvm {
            let beyond = t.rows_beyond(train.dim());
            if beyond > 0 {
                warnings.push(format!(
                    "{}: {beyond} test rows use feature indices beyond the training data's {} (up to {}): those features are dropped, as the model has no coefficient for them",
                    p.display(),
                    train.dim(),
                    t.dim()
                ));
            }
            t.with_dim(train.dim())
        } else {
            t
        };
        if t.dim() != train.dim() {
            return Err(format!(
                "test data has {} feature columns, training data {}",
                t.dim(),
                train.dim()
            ));
        }
        test = Some(t);
    }
    Ok((train, test, files, checksums, warnings))
}

/// The prior of `cfg`'s model: the one given where it applies, else the model's default.
fn prior_for(cfg: &SampleConfig) -> Result<Option<PriorSpec>, String> {
    let prior = match (cfg.model, cfg.prior) {
        (m, Some(p @ (PriorSpec::Laplace(_) | PriorSpec::Gaussian(_)))) if m.is_glm() => Some(p),
        (ModelKind::Linreg, None) => Some(PriorSpec::Nig {
            v: 100.0,
            phi: 1.0,
            psi: 1.0,
        }),
        (ModelKind::Linreg, Some(p @ PriorSpec::Nig { .. })) => Some(p),
        (ModelKind::Gmm, None) => None,
        (ModelKind::Mlp, None) => Some(PriorSpec::Gaussian(1.0)),
        (ModelKind::Mlp, Some(p @ PriorSpec::Gaussian(_))) => Some(p),
        (ModelKind::Mlp, _) => None,
        (_, None) => Some(PriorSpec::Laplace(1.0)),
        (m, Some(p)) => {
            return Err(format!(
                "prior {p} does not apply to --model {m:?} (logistic, probit, poisson: laplace or gaussian; linreg: nig; gmm: the paper's fixed prior; mlp: gaussian)"
            )
            .to_lowercase());
        }
    };
    if cfg.model == ModelKind::Mlp && prior.is_none() {
        return Err(format!(
            "prior {} does not apply to --model mlp: its weights take gaussian:V, N(0, V/fan-in) per layer",
            cfg.prior.map(|p| p.to_string()).unwrap_or_default()
        ));
    }
    Ok(prior)
}

/// A network's rows: dense, inputs (and a regression target) standardised with the
/// training rows' statistics; the responses (±1 labels for `bernoulli`); the scaling.
fn network_data(
    cfg: &SampleConfig,
    train: &mut Dataset,
    test: &mut Option<Dataset>,
) -> Result<(Vec<f32>, Vec<f32>, Scaling), String> {
    let dense = |d: &Dataset, path: &Path| -> Result<Dataset, String> {
        let x = d.dense().ok_or_else(|| {
            format!(
                "{}: --model mlp needs dense inputs, and {} rows x {} features is more than {} values",
                path.display(),
                d.len(),
                d.dim(),
                data::MAX_DENSE_VALUES
            )
        })?;
        Ok(Dataset {
            features: Features::Dense { x, d: d.dim() },
            y: d.y.clone(),
            names: d.names.clone(),
            lines: d.lines.clone(),
        })
    };
    *train = dense(train, &cfg.train)?;
    if let (Some(t), Some(p)) = (test.as_ref(), &cfg.test) {
        *test = Some(dense(t, p)?);
    }
    let bernoulli = cfg.output == NetOutput::Bernoulli;
    let (mut y, mut y_test) = if bernoulli {
        let y_test = match (test.as_ref(), &cfg.test) {
            (Some(t), Some(p)) => labels_pm1(p, t)?,
            _ => vec![],
        };
        (labels_pm1(&cfg.train, train)?, y_test)
    } else {
        (
            train.y.clone(),
            test.as_ref().map(|t| t.y.clone()).unwrap_or_default(),
        )
    };
    let d = train.dim();
    let fitted = match &train.features {
        Features::Dense { x, .. } => Scaling::fit(x, d, (!bernoulli).then_some(&y)),
        Features::SparseBinary { .. } | Features::SparseValued { .. } | Features::Mapped(_) => {
            unreachable!("made dense above")
        }
    };
    for t in std::iter::once(train).chain(test.as_mut()) {
        if let Features::Dense { x, .. } = &mut t.features {
            fitted.inputs(x);
        }
    }
    fitted.targets(&mut y);
    fitted.targets(&mut y_test);
    Ok((y, y_test, fitted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sgld::models::Model;

    /// Sparse rows of any width reach the sampler as the same model: the gradient through
    /// `logistic` equals the `u32` model's bit for bit, at dimensions that select `u8`,
    /// `u16` and `u32` indices.
    #[test]
    fn sparse_logistic_is_the_same_model_at_every_index_width() {
        for d in [6usize, 300, 70_000] {
            let n = 40;
            let (mut offsets, mut indices) = (vec![0usize], Vec::new());
            for i in 0..n {
                let mut row: Vec<u32> = (0..4)
                    .map(|k| ((i * 37 + k * 101) % (d - 1)) as u32)
                    .collect();
                row.push(d as u32 - 1);
                row.sort_unstable();
                row.dedup();
                indices.extend(row);
                offsets.push(indices.len());
            }
            let y: Vec<f32> = (0..n)
                .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 })
                .collect();
            let problem = Problem {
                files: DataFiles {
                    train: DataFile {
                        path: "rows".into(),
                        sha256: String::new(),
                    },
                    test: None,
                },
                warnings: vec![],
                features: d,
                train: Dataset {
                    features: Features::SparseBinary {
                        offsets: offsets.clone(),
                        indices: indices.clone(),
                        d,
                    },
                    y: y.clone(),
                    names: (0..d).map(|j| j.to_string()).collect(),
                    lines: vec![],
                },
                test: None,
                names: Vec::new(),
                prior: None,
                y: y.clone(),
                y_test: Vec::new(),
                scaling: None,
                net: None,
                kind: ModelKind::Logistic,
            };
            let prior = Gaussian::new(2.0).unwrap();
            let theta: Vec<f32> = (0..d).map(|j| ((j % 7) as f32 - 3.0) * 0.1).collect();
            let batch: Vec<usize> = (0..n).step_by(2).collect();
            let grad = |m: &dyn Model| {
                let mut g = vec![0.0f32; d];
                m.add_log_lik_grad(&theta, &batch, &mut g);
                g
            };
            let through = logistic(&problem, prior, |m| grad(m)).unwrap();
            let rows = SparseRows::new(&offsets, &indices, d).unwrap();
            let wide = LogisticSparse::new(rows, &y, prior).unwrap();
            assert_eq!(through, grad(&wide), "d = {d}");
            assert!(through.iter().any(|&g| g != 0.0));
        }
    }
}
