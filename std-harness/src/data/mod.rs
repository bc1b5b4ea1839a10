//! Data sets: loaders for LIBSVM sparse text and headed CSV, the table of known data
//! sets with their checksums, and fetching them from their public sources.

pub mod checksum;
pub mod chunked;
pub mod csv_table;
#[cfg(feature = "fetch")]
pub mod fetch;
pub mod libsvm;
pub mod mapped;
pub mod npy;
#[cfg(feature = "parquet")]
pub mod parquet_table;
pub mod registry;

use std::fmt;
use std::path::{Path, PathBuf};

pub use checksum::Checksum;
pub use mapped::MappedDesign;

/// Why a data file could not be read: the file, the 1-based line (0 when the problem is
/// the file as a whole) and what was wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct DataError {
    /// The file.
    pub file: PathBuf,
    /// The 1-based line, or 0 for the whole file.
    pub line: usize,
    /// What was wrong.
    pub what: String,
}

impl DataError {
    pub(crate) fn new(file: &Path, line: usize, what: impl Into<String>) -> Self {
        Self {
            file: file.to_path_buf(),
            line,
            what: what.into(),
        }
    }
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.what)
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.what)
        }
    }
}

impl std::error::Error for DataError {}

/// The largest dense matrix (in values) a loader or model will build: 2²⁸ f32 (1 GiB).
pub const MAX_DENSE_VALUES: usize = 1 << 28;

/// The largest feature index a LIBSVM file may use: 2²⁴ (a model has one parameter per
/// feature).
pub const MAX_FEATURES: usize = 1 << 24;

/// A data set: features (dense or sparse binary), one response per row, and the name of
/// each feature.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// The features.
    pub features: Features,
    /// One response (label or target) per row.
    pub y: Vec<f32>,
    /// One name per feature column (`"1"`, `"2"`, … for LIBSVM indices).
    pub names: Vec<String>,
    /// The file line of each row (from 1), for messages about a row; empty when the rows
    /// did not come from a file.
    pub lines: Vec<usize>,
}

impl Dataset {
    /// Where row `i` is: `line L` of its file, or `row i+1` when that is not known.
    pub fn locate(&self, i: usize) -> String {
        match self.lines.get(i) {
            Some(l) => format!("line {l}"),
            None => format!("row {}", i + 1),
        }
    }
}

/// Feature storage.
#[derive(Debug, Clone, PartialEq)]
pub enum Features {
    /// Row-major `n × d` values.
    Dense {
        /// The values.
        x: Vec<f32>,
        /// Columns.
        d: usize,
    },
    /// Dense rows read in place from a memory-mapped `.npy` file, the intercept (after
    /// [`Dataset::with_bias`]) a parameter rather than a stored column.
    Mapped(MappedDesign),
    /// Rows whose every non-zero is 1, as 0-based feature indices in compressed rows.
    SparseBinary {
        /// Row `i` is `indices[offsets[i]..offsets[i+1]]`.
        offsets: Vec<usize>,
        /// 0-based feature indices, strictly increasing within a row.
        indices: Vec<u32>,
        /// Number of features.
        d: usize,
    },
    /// Sparse rows with values (LIBSVM rows whose non-zeros are not all 1, such as
    /// tf-idf text), in compressed rows.
    SparseValued {
        /// Row `i` is `indices[offsets[i]..offsets[i+1]]` with `values` alike.
        offsets: Vec<usize>,
        /// 0-based feature indices, strictly increasing within a row.
        indices: Vec<u32>,
        /// The value at each index.
        values: Vec<f32>,
        /// Number of features.
        d: usize,
    },
}

/// The `n × d` row-major matrix of sparse rows with values.
pub fn densify(offsets: &[usize], indices: &[u32], values: &[f32], n: usize, d: usize) -> Vec<f32> {
    let mut x = vec![0.0f32; n * d];
    for (i, w) in offsets.windows(2).enumerate() {
        for k in w[0]..w[1] {
            x[i * d + indices[k] as usize] = values[k];
        }
    }
    x
}

/// Sparse feature indices as `T` (`u8`, `u16`), if every one fits: rows drawn at random
/// stay in cache better when their indices are narrow.
pub fn narrow_indices<T: TryFrom<u32>>(indices: &[u32]) -> Option<Vec<T>> {
    indices.iter().map(|&j| T::try_from(j).ok()).collect()
}

impl Dataset {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// Number of feature columns.
    pub fn dim(&self) -> usize {
        match &self.features {
            Features::Dense { d, .. }
            | Features::SparseBinary { d, .. }
            | Features::SparseValued { d, .. } => *d,
            Features::Mapped(m) => m.dim(),
        }
    }

    /// The rows `rows` (in that order) as a new data set.
    pub fn subset(&self, rows: &[usize]) -> Dataset {
        let y = rows.iter().map(|&i| self.y[i]).collect();
        let features = match &self.features {
            Features::Dense { x, d } => Features::Dense {
                x: rows
                    .iter()
                    .flat_map(|&i| x[i * d..(i + 1) * d].iter().copied())
                    .collect(),
                d: *d,
            },
            Features::Mapped(m) => Features::Dense {
                x: rows.iter().flat_map(|&i| m.dense_row(i)).collect(),
                d: m.dim(),
            },
            Features::SparseBinary {
                offsets,
                indices,
                d,
            } => {
                let mut o = Vec::with_capacity(rows.len() + 1);
                let mut idx = Vec::new();
                o.push(0);
                for &i in rows {
                    idx.extend_from_slice(&indices[offsets[i]..offsets[i + 1]]);
                    o.push(idx.len());
                }
                Features::SparseBinary {
                    offsets: o,
                    indices: idx,
                    d: *d,
                }
            }
            Features::SparseValued {
                offsets,
                indices,
                values,
                d,
            } => {
                let (mut o, mut idx, mut val) = (vec![0], Vec::new(), Vec::new());
                for &i in rows {
                    idx.extend_from_slice(&indices[offsets[i]..offsets[i + 1]]);
                    val.extend_from_slice(&values[offsets[i]..offsets[i + 1]]);
                    o.push(idx.len());
                }
                Features::SparseValued {
                    offsets: o,
                    indices: idx,
                    values: val,
                    d: *d,
                }
            }
        };
        Dataset {
            features,
            y,
            names: self.names.clone(),
            lines: rows
                .iter()
                .filter_map(|&i| self.lines.get(i).copied())
                .collect(),
        }
    }

    /// Appends a constant feature equal to 1 (a bias), named `bias`.
    pub fn with_bias(mut self) -> Dataset {
        match &mut self.features {
            // In place, rows moved back to front: a large design is not held twice.
            Features::Dense { x, d } => {
                let (n, w) = (self.y.len(), *d);
                x.resize(n * (w + 1), 1.0);
                for i in (0..n).rev() {
                    x.copy_within(i * w..(i + 1) * w, i * (w + 1));
                    x[i * (w + 1) + w] = 1.0;
                }
                *d += 1;
            }
            // The model adds the intercept: the mapped file is not touched.
            Features::Mapped(m) => *m = m.clone().with_intercept(),
            Features::SparseBinary {
                offsets,
                indices,
                d,
            } => {
                let mut o = Vec::with_capacity(offsets.len());
                let mut idx = Vec::with_capacity(indices.len() + self.y.len());
                o.push(0);
                for w in offsets.windows(2) {
                    idx.extend_from_slice(&indices[w[0]..w[1]]);
                    idx.push(*d as u32);
                    o.push(idx.len());
                }
                *offsets = o;
                *indices = idx;
                *d += 1;
            }
            Features::SparseValued {
                offsets,
                indices,
                values,
                d,
            } => {
                let (mut o, mut idx, mut val) = (vec![0], Vec::new(), Vec::new());
                for w in offsets.windows(2) {
                    idx.extend_from_slice(&indices[w[0]..w[1]]);
                    val.extend_from_slice(&values[w[0]..w[1]]);
                    idx.push(*d as u32);
                    val.push(1.0);
                    o.push(idx.len());
                }
                (*offsets, *indices, *values) = (o, idx, val);
                *d += 1;
            }
        }
        self.names.push("bias".into());
        self
    }

    /// The rows with a non-zero feature at an index of `d` or more (a LIBSVM test file's
    /// features the training file never named).
    pub fn rows_beyond(&self, d: usize) -> usize {
        match &self.features {
            Features::Dense { x, d: width } if *width > d => x
                .chunks_exact(*width)
                .filter(|row| row[d..].iter().any(|&v| v != 0.0))
                .count(),
            Features::Dense { .. } => 0,
            Features::Mapped(m) => (0..m.len())
                .filter(|&i| m.features(i).iter().skip(d).any(|&v| v != 0.0))
                .count(),
            Features::SparseBinary {
                offsets, indices, ..
            }
            | Features::SparseValued {
                offsets, indices, ..
            } => offsets
                .windows(2)
                .filter(|w| indices[w[0]..w[1]].iter().any(|&j| j as usize >= d))
                .count(),
        }
    }

    /// The feature columns put in the order of `names` by their own names (a test file's
    /// matched to the training file's): a column one has and the other has not, or a
    /// name given twice, is an error naming it (`path`: the file, for the message).
    pub fn match_columns(mut self, names: &[String], path: &Path) -> Result<Dataset, String> {
        if self.names == names {
            return Ok(self);
        }
        let twice = |ns: &[String]| {
            ns.iter()
                .enumerate()
                .find(|(i, n)| ns[..*i].contains(n))
                .map(|(_, n)| n.clone())
        };
        if let Some(n) = twice(names).or_else(|| twice(&self.names)) {
            return Err(format!(
                "{}: column {n:?} appears twice, so the test columns cannot be matched to the training columns by name",
                path.display()
            ));
        }
        let list = |ns: Vec<&String>| {
            ns.iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let missing: Vec<&String> = names.iter().filter(|n| !self.names.contains(n)).collect();
        let extra: Vec<&String> = self.names.iter().filter(|n| !names.contains(n)).collect();
        if !missing.is_empty() || !extra.is_empty() {
            let mut what = vec![];
            if !missing.is_empty() {
                what.push(format!("lacks the training column(s) {}", list(missing)));
            }
            if !extra.is_empty() {
                what.push(format!(
                    "has column(s) {} the training data lacks",
                    list(extra)
                ));
            }
            return Err(format!(
                "{}: the test data {} (test columns are matched to training columns by name)",
                path.display(),
                what.join(" and ")
            ));
        }
        let from: Vec<usize> = names
            .iter()
            .map(|n| self.names.iter().position(|m| m == n).unwrap_or(0))
            .collect();
        self.in_memory();
        if let Features::Dense { x, d } = &mut self.features {
            let mut out = Vec::with_capacity(x.len());
            for row in x.chunks_exact(*d) {
                out.extend(from.iter().map(|&j| row[j]));
            }
            *x = out;
        }
        self.names = names.to_vec();
        Ok(self)
    }

    /// Widens (or narrows) the feature space to `d` columns: LIBSVM test files may name
    /// fewer features than the training file; features past `d` are dropped.
    pub fn with_dim(mut self, new_d: usize) -> Dataset {
        self.in_memory();
        match &mut self.features {
            Features::Mapped(_) => unreachable!("copied into memory above"),
            Features::Dense { x, d } => {
                if *d != new_d {
                    let n = self.y.len();
                    let mut out = vec![0.0; n * new_d];
                    for i in 0..n {
                        let k = (*d).min(new_d);
                        out[i * new_d..i * new_d + k].copy_from_slice(&x[i * *d..i * *d + k]);
                    }
                    *x = out;
                    *d = new_d;
                }
            }
            Features::SparseBinary {
                offsets,
                indices,
                d,
            } => {
                if new_d < *d {
                    let mut o = vec![0];
                    let mut idx = Vec::with_capacity(indices.len());
                    for w in offsets.windows(2) {
                        idx.extend(
                            indices[w[0]..w[1]]
                                .iter()
                                .copied()
                                .filter(|&j| (j as usize) < new_d),
                        );
                        o.push(idx.len());
                    }
                    *offsets = o;
                    *indices = idx;
                }
                *d = new_d;
            }
            Features::SparseValued {
                offsets,
                indices,
                values,
                d,
            } => {
                if new_d < *d {
                    let (mut o, mut idx, mut val) = (vec![0], Vec::new(), Vec::new());
                    for w in offsets.windows(2) {
                        for k in w[0]..w[1] {
                            if (indices[k] as usize) < new_d {
                                idx.push(indices[k]);
                                val.push(values[k]);
                            }
                        }
                        o.push(idx.len());
                    }
                    (*offsets, *indices, *values) = (o, idx, val);
                }
                *d = new_d;
            }
        }
        self.names = (1..=new_d).map(|j| j.to_string()).collect();
        self
    }

    /// A mapped design copied into memory (its intercept as a column of ones), for the
    /// few operations that rewrite the rows; other features are left as they are.
    fn in_memory(&mut self) {
        if let Features::Mapped(m) = &self.features {
            self.features = Features::Dense {
                x: m.to_dense(),
                d: m.dim(),
            };
        }
    }

    /// [`Dataset::dense`], or an error saying the matrix is too large.
    pub fn dense_or_error(&self) -> Result<Vec<f32>, String> {
        self.dense().ok_or_else(|| {
            format!(
                "{} rows x {} features is more than {MAX_DENSE_VALUES} values as a dense matrix",
                self.len(),
                self.dim(),
            )
        })
    }

    /// Dense row-major values (converting sparse rows); `None` when that matrix would
    /// exceed [`MAX_DENSE_VALUES`].
    pub fn dense(&self) -> Option<Vec<f32>> {
        match &self.features {
            Features::Dense { x, .. } => Some(x.clone()),
            // A copy of values that were read as a design already, as for `Dense`.
            Features::Mapped(m) => Some(m.to_dense()),
            Features::SparseBinary {
                offsets,
                indices,
                d,
            } => {
                self.len()
                    .checked_mul(*d)
                    .filter(|&v| v <= MAX_DENSE_VALUES)?;
                let mut x = vec![0.0; self.len() * d];
                for (i, w) in offsets.windows(2).enumerate() {
                    for &j in &indices[w[0]..w[1]] {
                        x[i * d + j as usize] = 1.0;
                    }
                }
                Some(x)
            }
            Features::SparseValued {
                offsets,
                indices,
                values,
                d,
            } => {
                self.len()
                    .checked_mul(*d)
                    .filter(|&v| v <= MAX_DENSE_VALUES)?;
                Some(densify(offsets, indices, values, self.len(), *d))
            }
        }
    }
}

/// Reads a data file in the given format (`None`: by extension, see
/// [`Format::from_path`]). `target` names the response column (default: the last): a
/// CSV or Parquet column's name, a `.npy` column's 0-based index.
pub fn load(
    path: &Path,
    format: Option<Format>,
    target: Option<&str>,
) -> Result<Dataset, DataError> {
    load_hashed(path, format, target).map(|(d, _)| d)
}

/// [`load`] and the file's sha256 (lowercase hex), computed in the same pass over it.
pub fn load_hashed(
    path: &Path,
    format: Option<Format>,
    target: Option<&str>,
) -> Result<(Dataset, String), DataError> {
    load_checksummed(path, format, target).map(|(d, sha)| (d, sha.wait()))
}

/// [`load_hashed`], the sha256 of a memory-mapped `.npy` design still being computed
/// beside the caller when this returns (text and Parquet files are hashed as they are
/// read).
pub fn load_checksummed(
    path: &Path,
    format: Option<Format>,
    target: Option<&str>,
) -> Result<(Dataset, Checksum), DataError> {
    let format = format.unwrap_or_else(|| Format::from_path(path));
    let known = |(d, sha): (Dataset, String)| (d, sha.into());
    match format {
        Format::Libsvm => libsvm::read_hashed(path).map(known),
        Format::Csv => csv_table::read_hashed(path, target).map(known),
        #[cfg(feature = "parquet")]
        Format::Parquet => parquet_table::read_hashed(path, target).map(known),
        #[cfg(not(feature = "parquet"))]
        Format::Parquet => Err(no_parquet(path)),
        Format::Npy => {
            let column = target
                .map(|t| {
                    t.parse().map_err(|_| {
                        DataError::new(
                            path,
                            0,
                            format!(
                                "--target {t:?}: a .npy design's response is a 0-based column index"
                            ),
                        )
                    })
                })
                .transpose()?;
            npy::read(path, npy::Response::Column(column))
        }
    }
}

/// The error for a Parquet file in a build without the `parquet` feature.
#[cfg(not(feature = "parquet"))]
fn no_parquet(path: &Path) -> DataError {
    DataError::new(
        path,
        0,
        "Parquet tables need sgld-harness's `parquet` feature (on by default)".to_string(),
    )
}

/// The name of the response column a CSV or Parquet file's `target` takes: that name,
/// checked to be a column, or the last column's; `None` for the formats without names.
pub fn target_name(
    path: &Path,
    format: Format,
    target: Option<&str>,
) -> Result<Option<String>, DataError> {
    match format {
        Format::Csv => csv_table::target_name(path, target).map(Some),
        #[cfg(feature = "parquet")]
        Format::Parquet => parquet_table::target_name(path, target).map(Some),
        #[cfg(not(feature = "parquet"))]
        Format::Parquet => Err(no_parquet(path)),
        Format::Libsvm | Format::Npy => Ok(None),
    }
}

/// A data file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Format {
    /// LIBSVM / svmlight sparse text: `label idx:value …` with 1-based indices.
    Libsvm,
    /// Comma-separated values with a header line.
    Csv,
    /// A NumPy `.npy` array: a 2-D design, the response one of its columns or a labels
    /// file of its own.
    Npy,
    /// An Apache Parquet table of numeric and boolean columns.
    Parquet,
}

impl Format {
    /// `.csv` is CSV, `.npy` NumPy, `.parquet` or `.pq` Parquet, anything else LIBSVM.
    pub fn from_path(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("csv") => Format::Csv,
            Some(e) if e.eq_ignore_ascii_case("npy") => Format::Npy,
            Some(e) if e.eq_ignore_ascii_case("parquet") || e.eq_ignore_ascii_case("pq") => {
                Format::Parquet
            }
            _ => Format::Libsvm,
        }
    }
}

/// Writes `out` whole or not at all: `write` makes `OUT.partial` and returns its file,
/// which is synced and renamed to `out`; on any error the partial file is removed and the
/// error names `out`.
pub(crate) fn write_whole<E: fmt::Display>(
    out: &Path,
    write: impl FnOnce(&Path) -> Result<std::fs::File, E>,
) -> Result<(), String> {
    let mut partial = out.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    write(&partial)
        .map_err(|e| e.to_string())
        .and_then(|f| f.sync_all().map_err(|e| e.to_string()))
        .and_then(|()| std::fs::rename(&partial, out).map_err(|e| e.to_string()))
        .map_err(|e| {
            let _ = std::fs::remove_file(&partial);
            format!("{}: {e}", out.display())
        })
}

/// The data directory: `--data-dir`, else `SGLD_DATA_DIR`, else none.
pub fn data_dir(flag: Option<&Path>) -> Option<PathBuf> {
    flag.map(Path::to_path_buf).or_else(|| {
        std::env::var_os("SGLD_DATA_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

#[cfg(test)]
mod tests {
    use super::narrow_indices;

    #[test]
    fn narrow_indices_fit_or_are_refused() {
        assert_eq!(narrow_indices::<u8>(&[0, 255]), Some(vec![0u8, 255]));
        assert_eq!(narrow_indices::<u8>(&[0, 256]), None);
        assert_eq!(
            narrow_indices::<u16>(&[0, 65_535]),
            Some(vec![0u16, 65_535])
        );
        assert_eq!(narrow_indices::<u16>(&[65_536]), None);
    }

    /// A mapped design takes the bias without a copy, and is copied into memory (the
    /// bias a column of ones) for a subset and for test columns put in another order.
    #[test]
    fn a_mapped_design_takes_the_bias_and_is_copied_for_rewrites() {
        use super::{Features, npy};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.npy");
        let mut f = std::fs::File::create(&path).unwrap();
        // Three rows of two features and the response, last.
        let values = [1.0f32, 2.0, 0.0, 3.0, 4.0, 1.0, 5.0, 6.0, 1.0];
        npy::write_f32(&mut f, &values, 3, 3).unwrap();
        drop(f);
        let (data, _) = npy::read_hashed(&path, npy::Response::Column(None)).unwrap();
        let data = data.with_bias();
        assert!(matches!(&data.features, Features::Mapped(m) if m.has_intercept()));
        assert_eq!(
            (data.dim(), data.names.clone()),
            (3, vec!["0".into(), "1".into(), "bias".into()])
        );
        let dense = vec![1.0, 2.0, 1.0, 3.0, 4.0, 1.0, 5.0, 6.0, 1.0];
        assert_eq!(data.dense(), Some(dense));
        let sub = data.subset(&[2, 0]);
        assert_eq!(
            sub.features,
            Features::Dense {
                x: vec![5.0, 6.0, 1.0, 1.0, 2.0, 1.0],
                d: 3
            }
        );
        assert_eq!(sub.y, vec![1.0, 0.0]);
        let names: Vec<String> = ["bias", "1", "0"].map(String::from).to_vec();
        let moved = data.match_columns(&names, &path).unwrap();
        assert_eq!(
            moved.features,
            Features::Dense {
                x: vec![1.0, 2.0, 1.0, 1.0, 4.0, 3.0, 1.0, 6.0, 5.0],
                d: 3
            }
        );
    }
}
