//! A `.npy` design read in place: the file memory-mapped and each row read where it
//! lies, so a design need not fit in memory (the pages a mini-batch touches are read on
//! demand) and a large one is not copied before the first step. The response column,
//! when the file holds one, is skipped between rows, and the model's intercept is a
//! parameter of its own ([`sgld::models::DenseRows::with_intercept`]), not a column.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;
use sgld::models::DenseRows;

use super::DataError;

/// Little-endian f32 values of `rows` records of `cols` each, at byte `start` of a mapped
/// file; a row is the `width` values from column `first` of its record. The `.npy` loader,
/// which makes them, checks every value finite.
#[derive(Clone)]
pub struct MappedDesign {
    map: Arc<memmap2::Mmap>,
    start: usize,
    rows: usize,
    cols: usize,
    first: usize,
    width: usize,
    intercept: bool,
}

impl MappedDesign {
    /// Maps `file`, whose `rows × cols` f32 values (in the machine's byte order) start at
    /// byte `start`; rows of `width` values from column `first`. `None` when the values
    /// are not 4-byte aligned in the map (then the caller reads them instead).
    pub(crate) fn map(
        path: &Path,
        file: &File,
        start: usize,
        (rows, cols): (usize, usize),
        (first, width): (usize, usize),
    ) -> Result<Option<Self>, DataError> {
        // SAFETY: the map is read-only and lives as long as the last `MappedDesign` that
        // shares it. Rust's guarantees for the `&[u8]` it hands out hold while no other
        // process writes or truncates the file during the run: a write would change
        // values under the model (not memory safety, but not the data the run hashed),
        // and a truncation would end the process with SIGBUS on the next read of a
        // vanished page. docs/data.md asks that a mapped design not be rewritten while a
        // run reads it, as every memory-mapped loader must. Tests: a mapped design reads
        // the values `npy::write_f32` wrote (`data::mapped::tests`).
        let map = unsafe { memmap2::Mmap::map(file) }
            .map_err(|e| DataError::new(path, 0, format!("cannot map: {e}")))?;
        let bytes = rows
            .checked_mul(cols)
            .and_then(|v| v.checked_mul(4))
            .and_then(|b| b.checked_add(start))
            .filter(|&end| end <= map.len())
            .ok_or_else(|| DataError::new(path, 0, "the shape overflows the file"))?;
        let design = Self {
            map: Arc::new(map),
            start,
            rows,
            cols,
            first,
            width,
            intercept: false,
        };
        let aligned = bytemuck::try_cast_slice::<u8, f32>(&design.map[start..bytes]).is_ok();
        Ok(aligned.then_some(design))
    }

    /// Tells the kernel that rows will be read at random (`MADV_RANDOM`), so that a page
    /// it must read from disk is read alone. Its usual read-around fetches the pages about
    /// each one: for a design larger than memory, mini-batches' rows then evict more than
    /// they read (a 2 GB design in a 1 GB cgroup ran 1–2 steps a second that way, 260–270
    /// with this advice). Pages in memory are read as before.
    pub(crate) fn expect_random_reads(&self) {
        let _ = self.map.advise(memmap2::Advice::Random);
    }

    /// The file's sha256 on a thread of its own, `hasher` having taken the bytes before
    /// the values.
    pub(crate) fn hash_after(&self, hasher: sha2::Sha256) -> super::Checksum {
        super::Checksum::spawn(hasher, Arc::clone(&self.map), self.start)
    }

    /// Every value of every record, responses included, in file order.
    pub fn values(&self) -> &[f32] {
        let end = self.start + self.rows * self.cols * 4;
        bytemuck::cast_slice(&self.map[self.start..end])
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Columns of the design: the features, and the intercept's when it has one.
    pub fn dim(&self) -> usize {
        self.width + self.intercept as usize
    }

    /// Whether the model adds an intercept as its last parameter.
    pub fn has_intercept(&self) -> bool {
        self.intercept
    }

    /// The same design with an intercept (a column of ones that is not stored).
    pub fn with_intercept(self) -> Self {
        Self {
            intercept: true,
            ..self
        }
    }

    /// The features of row `i`, the intercept's 1 not among them.
    pub fn features(&self, i: usize) -> &[f32] {
        let at = i * self.cols + self.first;
        &self.values()[at..at + self.width]
    }

    /// The values of column `col` of every record (the response column), in row order.
    pub(crate) fn column(&self, col: usize) -> Vec<f32> {
        self.values()
            .par_chunks_exact(self.cols)
            .map(|r| r[col])
            .collect()
    }

    /// The rows as a model reads them in place. Their values are not read again: the
    /// loader checked them finite, naming a bad one's row and column.
    pub fn rows(&self) -> Result<DenseRows<'_>, sgld::Error> {
        let (x, width) = (self.values(), self.width);
        let rows = DenseRows::strided_prechecked(x, width, self.cols, self.first)?;
        Ok(if self.intercept {
            rows.with_intercept()
        } else {
            rows
        })
    }

    /// Row `i` as a dense design holds it: its features, then a 1 when it has an
    /// intercept.
    pub fn dense_row(&self, i: usize) -> impl Iterator<Item = f32> + '_ {
        let one = self.intercept.then_some(1.0);
        self.features(i).iter().copied().chain(one)
    }

    /// The design copied into memory, row-major, with a last column of ones when it has
    /// an intercept.
    pub fn to_dense(&self) -> Vec<f32> {
        (0..self.rows).flat_map(|i| self.dense_row(i)).collect()
    }

    /// The first non-finite value in file order, as (row, column, value).
    pub(crate) fn first_non_finite(&self) -> Option<(usize, usize, f32)> {
        let block = (1 << 16) / self.cols.max(1) + 1;
        self.values()
            .par_chunks(block * self.cols)
            .enumerate()
            .find_map_first(|(b, chunk)| {
                let k = chunk.iter().position(|v| !v.is_finite())?;
                let at = b * block * self.cols + k;
                Some((at / self.cols, at % self.cols, chunk[k]))
            })
    }
}

impl std::fmt::Debug for MappedDesign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedDesign")
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("first", &self.first)
            .field("width", &self.width)
            .field("intercept", &self.intercept)
            .finish_non_exhaustive()
    }
}

/// Equal when they hold the same rows of the same features and both or neither have an
/// intercept, wherever their records put them.
impl PartialEq for MappedDesign {
    fn eq(&self, other: &Self) -> bool {
        (self.rows, self.width, self.intercept) == (other.rows, other.width, other.intercept)
            && (0..self.rows).all(|i| self.features(i) == other.features(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mapped design reads back the values written, its rows skip the response column
    /// wherever it is, and its intercept is a parameter, not a stored column.
    #[test]
    fn a_mapped_design_reads_the_written_values_in_place() {
        use sgld::models::Design;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        let values: Vec<f32> = (0..12).map(|v| v as f32 * 0.5).collect();
        let mut out = File::create(&path).unwrap();
        crate::data::npy::write_f32(&mut out, &values, 4, 3).unwrap();
        drop(out);
        let file = File::open(&path).unwrap();
        let start = std::fs::metadata(&path).unwrap().len() as usize - 48;
        for (first, want) in [(0, [1.5f32, 2.0]), (1, [2.0, 2.5])] {
            let m = MappedDesign::map(&path, &file, start, (4, 3), (first, 2))
                .unwrap()
                .unwrap();
            assert_eq!(m.values(), &values[..]);
            assert_eq!(m.features(1), &want);
            let m = m.with_intercept();
            assert_eq!((m.len(), m.dim()), (4, 3));
            let rows = m.rows().unwrap();
            assert_eq!(rows.dot(1, &[1.0, 1.0, 10.0]), want[0] + want[1] + 10.0);
            assert_eq!(&m.to_dense()[3..6], &[want[0], want[1], 1.0]);
            assert_eq!(m.first_non_finite(), None);
        }
        assert_eq!(
            MappedDesign::map(&path, &file, start, (5, 3), (0, 2))
                .unwrap_err()
                .to_string(),
            format!("{}: the shape overflows the file", path.display())
        );
    }
}
