//! Apache Parquet tables of numeric and boolean columns; one column (named by
//! `--target`, default the last) is the response, the others are features, as for CSV.
//!
//! Each row group's columns are decoded sixteen at a time in parallel (one reader each,
//! by positional reads of the one open file) and then copied into the row-major design,
//! so at most sixteen columns of a row group are held besides it. The file's sha256 is
//! taken beside the decoders, by a sequential read of the same pages.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::{ConvertedType, LogicalType, Repetition, Type as Physical};
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::{DataType, FloatType};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{ChunkReader, FileReader, Length, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{ColumnDescriptor, Type};
use rayon::prelude::*;

use super::{DataError, Dataset, Features};

/// Values decoded per call of a column reader.
const BATCH: usize = 65_536;

/// Rows of the design copied per parallel task (a block that stays in cache while each
/// decoded column of a batch is written into it).
const COPY_ROWS: usize = 1_024;

/// Columns decoded before they are copied into the design: sixteen f32 fill a cache
/// line of a row, so the design is passed over once per sixteen columns, not once per
/// few.
const COLUMN_BATCH: usize = 16;

/// Values per row group [`write_dataset`] writes (128 MB of f32).
const WRITE_GROUP_VALUES: usize = 1 << 25;

/// The file, read at given offsets (`pread`): one open file serves every column reader
/// at once, where `File`'s own reader clones share one file offset.
struct Positional {
    file: Arc<File>,
    len: u64,
}

/// A reader from an offset of a [`Positional`] file.
struct At {
    file: Arc<File>,
    pos: u64,
}

fn read_at(file: &File, buf: &mut [u8], pos: u64) -> std::io::Result<usize> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_at(file, buf, pos)
    }
    #[cfg(windows)]
    {
        std::os::windows::fs::FileExt::seek_read(file, buf, pos)
    }
}

impl std::io::Read for At {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = read_at(&self.file, buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Length for Positional {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for Positional {
    type T = std::io::BufReader<At>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(std::io::BufReader::new(At {
            file: Arc::clone(&self.file),
            pos: start,
        }))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let mut buf = vec![0u8; length];
        let mut done = 0;
        while done < length {
            match read_at(&self.file, &mut buf[done..], start + done as u64) {
                Ok(0) => {
                    return Err(parquet::errors::ParquetError::EOF(format!(
                        "{length} bytes at offset {start} run past the end of the file"
                    )));
                }
                Ok(k) => done += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(buf.into())
    }
}

thread_local! {
    /// Set while this thread runs the Parquet decoder under [`guarded`].
    static GUARDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, which calls the `parquet` crate, turning a panic of the decoder on a
/// malformed file (it asserts on some corrupt metadata) into an error, without the
/// panic message a panic prints: every input gets a one-line error, never a crash.
fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !GUARDED.with(|g| g.get()) {
                previous(info);
            }
        }));
    });
    let was = GUARDED.with(|g| g.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(was));
    result.unwrap_or_else(|payload| {
        let why = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "the decoder failed".into());
        Err(format!("a corrupt Parquet file ({why})"))
    })
}

/// How a column's values become f32.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Bool,
    /// Signed or unsigned integers (32 or 64 bits), over `10^scale` (a decimal's scale,
    /// else 0).
    Int {
        unsigned: bool,
        scale: i32,
    },
    Float,
    Double,
    /// Decimals stored as big-endian two's complement bytes (at most 16), over
    /// `10^scale`.
    WideDecimal {
        scale: i32,
    },
}

/// The kind of column `c`, or why it cannot be a number a row.
fn kind(c: &ColumnDescriptor) -> Result<Kind, String> {
    let name = c.path().string();
    if c.max_rep_level() > 0 {
        return Err(format!(
            "column {name:?} is repeated (a list): each column must hold one number a row"
        ));
    }
    let logical = c.logical_type_ref();
    let converted = c.converted_type();
    let temporal = matches!(
        logical,
        Some(LogicalType::Date | LogicalType::Time(_) | LogicalType::Timestamp(_))
    ) || matches!(
        converted,
        ConvertedType::DATE
            | ConvertedType::TIME_MILLIS
            | ConvertedType::TIME_MICROS
            | ConvertedType::TIMESTAMP_MILLIS
            | ConvertedType::TIMESTAMP_MICROS
            | ConvertedType::INTERVAL
    );
    if temporal {
        return Err(format!(
            "column {name:?} holds dates or times, not numbers (cast it to a number first)"
        ));
    }
    let unsigned = matches!(logical, Some(LogicalType::Integer(t)) if !t.is_signed)
        || matches!(
            converted,
            ConvertedType::UINT_8
                | ConvertedType::UINT_16
                | ConvertedType::UINT_32
                | ConvertedType::UINT_64
        );
    let decimal =
        matches!(logical, Some(LogicalType::Decimal { .. })) || converted == ConvertedType::DECIMAL;
    let scale = if decimal { c.type_scale() } else { 0 };
    Ok(match c.physical_type() {
        Physical::BOOLEAN => Kind::Bool,
        Physical::INT32 | Physical::INT64 => Kind::Int { unsigned, scale },
        Physical::FLOAT => Kind::Float,
        Physical::DOUBLE => Kind::Double,
        Physical::FIXED_LEN_BYTE_ARRAY if decimal && c.type_length() <= 16 => {
            Kind::WideDecimal { scale }
        }
        t => {
            let what = match t {
                Physical::BYTE_ARRAY => "text or bytes",
                Physical::FIXED_LEN_BYTE_ARRAY if decimal => "decimals wider than 128 bits",
                Physical::FIXED_LEN_BYTE_ARRAY => "fixed-length bytes",
                _ => "96-bit integers (legacy timestamps)",
            };
            return Err(format!(
                "column {name:?} holds {what}, not numbers (numeric and boolean columns are read)"
            ));
        }
    })
}

/// An integer column's value `v` (stored in a signed type), its bits `mask` read as
/// unsigned when `unsigned`.
fn integer(v: i64, unsigned: bool, mask: u64) -> f64 {
    if unsigned {
        (v as u64 & mask) as f64
    } else {
        v as f64
    }
}

/// A big-endian two's complement integer of at most 16 bytes (a wide decimal's unscaled
/// value).
fn big_endian(bytes: &[u8]) -> f64 {
    let negative = bytes.first().is_some_and(|&b| b & 0x80 != 0);
    let mut v: i128 = if negative { -1 } else { 0 };
    for &b in bytes.iter().take(16) {
        v = (v << 8) | b as i128;
    }
    v as f64
}

/// Reads every value of one column chunk of `rows` rows into `out`, converted by `f`.
fn read_column<T: DataType>(
    mut r: ColumnReaderImpl<T>,
    rows: usize,
    nullable: bool,
    f: impl Fn(&T::T) -> f64,
    out: &mut Vec<f32>,
) -> Result<(), String> {
    let (mut values, mut defs) = (Vec::with_capacity(BATCH), Vec::with_capacity(BATCH));
    while out.len() < rows {
        values.clear();
        defs.clear();
        let want = BATCH.min(rows - out.len());
        let (records, read, _) = r
            .read_records(want, nullable.then_some(&mut defs), None, &mut values)
            .map_err(|e| e.to_string())?;
        if records == 0 {
            return Err(format!(
                "the row group ends after {} of its {rows} rows",
                out.len()
            ));
        }
        if read < records {
            let k = defs.iter().position(|&l| l == 0).unwrap_or(read);
            return Err(format!("row {} is null (missing)", out.len() + k + 1));
        }
        out.extend(values[..read].iter().map(|v| f(v) as f32));
    }
    Ok(())
}

/// Reads every value of a required f32 column chunk of `rows` rows straight into `out`
/// (no staging copy: the decoder appends to it).
fn read_floats(
    mut r: ColumnReaderImpl<FloatType>,
    rows: usize,
    out: &mut Vec<f32>,
) -> Result<(), String> {
    while out.len() < rows {
        let want = BATCH.min(rows - out.len());
        let (records, _, _) = r
            .read_records(want, None, None, out)
            .map_err(|e| e.to_string())?;
        if records == 0 {
            return Err(format!(
                "the row group ends after {} of its {rows} rows",
                out.len()
            ));
        }
    }
    Ok(())
}

/// Column `j` of row group `g` as f32 (non-finite values included, checked by the
/// caller).
fn column(
    reader: &SerializedFileReader<Positional>,
    g: usize,
    j: usize,
    kind: Kind,
) -> Result<Vec<f32>, String> {
    guarded(|| {
        let rg = reader.get_row_group(g).map_err(|e| e.to_string())?;
        let rows = usize::try_from(rg.metadata().num_rows()).map_err(|_| "a negative row count")?;
        let nullable = rg.metadata().column(j).column_descr().max_def_level() > 0;
        let r = rg.get_column_reader(j).map_err(|e| e.to_string())?;
        let mut out = Vec::with_capacity(rows);
        match (r, kind) {
            (ColumnReader::BoolColumnReader(r), Kind::Bool) => {
                read_column(r, rows, nullable, |&v| v as u8 as f64, &mut out)?
            }
            (ColumnReader::Int32ColumnReader(r), Kind::Int { unsigned, scale }) => {
                let s = 10f64.powi(scale);
                let f = |&v: &i32| integer(v as i64, unsigned, u32::MAX as u64) / s;
                read_column(r, rows, nullable, f, &mut out)?
            }
            (ColumnReader::Int64ColumnReader(r), Kind::Int { unsigned, scale }) => {
                let s = 10f64.powi(scale);
                read_column(
                    r,
                    rows,
                    nullable,
                    |&v| integer(v, unsigned, u64::MAX) / s,
                    &mut out,
                )?
            }
            (ColumnReader::FloatColumnReader(r), Kind::Float) if !nullable => {
                read_floats(r, rows, &mut out)?
            }
            (ColumnReader::FloatColumnReader(r), Kind::Float) => {
                read_column(r, rows, nullable, |&v| v as f64, &mut out)?
            }
            (ColumnReader::DoubleColumnReader(r), Kind::Double) => {
                read_column(r, rows, nullable, |&v| v, &mut out)?
            }
            (ColumnReader::FixedLenByteArrayColumnReader(r), Kind::WideDecimal { scale }) => {
                let s = 10f64.powi(scale);
                let f = |v: &parquet::data_type::FixedLenByteArray| big_endian(v.data()) / s;
                read_column(r, rows, nullable, f, &mut out)?
            }
            _ => return Err("a column reader of another type than its schema".into()),
        }
        Ok(out)
    })
}

/// The table's column names (flat paths) and kinds, or why a column cannot be read.
fn columns(reader: &SerializedFileReader<Positional>) -> Vec<(String, Result<Kind, String>)> {
    let schema = reader.metadata().file_metadata().schema_descr();
    (0..schema.num_columns())
        .map(|j| {
            let c = schema.column(j);
            (c.path().string(), kind(&c))
        })
        .collect()
}

fn open(path: &Path) -> Result<SerializedFileReader<Positional>, DataError> {
    let bad = |what: String| DataError::new(path, 0, what);
    let file = File::open(path).map_err(|e| bad(format!("cannot read: {e}")))?;
    let len = file
        .metadata()
        .map_err(|e| bad(format!("cannot read: {e}")))?
        .len();
    let file = Positional {
        file: Arc::new(file),
        len,
    };
    let reader = guarded(|| SerializedFileReader::new(file).map_err(|e| e.to_string()))
        .map_err(|e| bad(format!("not a readable Parquet file: {e}")))?;
    // Every column chunk within the file (the decoder asserts where one is not).
    for (g, rg) in reader.metadata().row_groups().iter().enumerate() {
        for c in rg.columns() {
            let start = c
                .dictionary_page_offset()
                .filter(|&o| o > 0)
                .unwrap_or(c.data_page_offset());
            let end = start.checked_add(c.compressed_size());
            if start < 0 || c.compressed_size() < 0 || end.is_none_or(|e| e as u64 > len) {
                return Err(bad(format!(
                    "not a readable Parquet file: row group {g}'s column {:?} lies outside the file",
                    c.column_path().string()
                )));
            }
        }
    }
    Ok(reader)
}

/// The name of the response column [`read_hashed`] takes for `target`: that name,
/// checked to be a column, or the last column's.
pub fn target_name(path: &Path, target: Option<&str>) -> Result<String, DataError> {
    let reader = open(path)?;
    let names: Vec<String> = columns(&reader).into_iter().map(|(n, _)| n).collect();
    response(path, &names, target).map(|t| names[t].clone())
}

/// The index of the response column among `names`.
fn response(path: &Path, names: &[String], target: Option<&str>) -> Result<usize, DataError> {
    let t = match target {
        None => names.len().checked_sub(1),
        Some(name) => names.iter().position(|n| n == name),
    };
    match t {
        Some(t) if names.len() >= 2 => Ok(t),
        _ if names.len() < 2 => Err(DataError::new(
            path,
            0,
            "a target column and at least one feature column are needed",
        )),
        _ => Err(DataError::new(
            path,
            0,
            format!(
                "no column named {:?} (columns: {})",
                target.unwrap_or_default(),
                names.join(", ")
            ),
        )),
    }
}

/// Reads a Parquet table: `target` names the response column (default: the last), every
/// other column is a feature. Returns the data set and the file's sha256 (lowercase
/// hex), taken beside the decoding.
pub fn read_hashed(path: &Path, target: Option<&str>) -> Result<(Dataset, String), DataError> {
    let (data, sha) = rayon::join(|| read(path, target), || super::chunked::sha256_file(path));
    let sha = sha.map_err(|e| DataError::new(path, 0, format!("cannot read: {e}")))?;
    Ok((data?, sha))
}

fn read(path: &Path, target: Option<&str>) -> Result<Dataset, DataError> {
    let bad = |what: String| DataError::new(path, 0, what);
    let reader = open(path)?;
    let cols = columns(&reader);
    let names: Vec<String> = cols.iter().map(|(n, _)| n.clone()).collect();
    let t = response(path, &names, target)?;
    let kinds = cols
        .into_iter()
        .map(|(_, k)| k.map_err(&bad))
        .collect::<Result<Vec<Kind>, DataError>>()?;
    let meta = reader.metadata();
    let groups: Vec<usize> = meta
        .row_groups()
        .iter()
        .map(|g| usize::try_from(g.num_rows()).unwrap_or(0))
        .collect();
    let n: usize = groups.iter().sum();
    if n == 0 {
        return Err(bad("no data rows".into()));
    }
    let d = names.len() - 1;
    let values = n
        .checked_mul(d)
        .filter(|&v| v <= super::MAX_DENSE_VALUES * 4)
        .ok_or_else(|| bad(format!("{n} x {d} values are too many")))?;
    // Zeroed by the allocator's fresh pages (no pass over the design here: the copy
    // below first touches each page, on every thread), with room for a bias column,
    // which then goes in without moving the design.
    let mut x = vec![0.0f32; values + n];
    x.truncate(values);
    let mut y = vec![0.0f32; n];
    // Where column j goes: the response, or feature column `j` less one past it.
    let feature = |j: usize| if j < t { j } else { j - 1 };
    let batch = COLUMN_BATCH.max(2 * rayon::current_num_threads());
    let order: Vec<usize> = (0..names.len()).collect();
    let mut first = 0usize;
    for (g, &rows) in groups.iter().enumerate() {
        let xg = &mut x[first * d..(first + rows) * d];
        let yg = &mut y[first..first + rows];
        for js in order.chunks(batch) {
            // Every column's result, then the first error in column order (collecting
            // into a `Result` would keep whichever came first in time).
            let decoded: Vec<Result<Vec<f32>, DataError>> = js
                .par_iter()
                .map(|&j| {
                    let v = column(&reader, g, j, kinds[j])
                        .map_err(|e| bad(format!("column {:?}: {e}", names[j])))?;
                    if v.len() != rows {
                        return Err(bad(format!(
                            "column {:?}: {} values in a row group of {rows} rows",
                            names[j],
                            v.len()
                        )));
                    }
                    if let Some(i) = v.iter().position(|a| !a.is_finite()) {
                        return Err(bad(format!(
                            "column {:?}, row {}: {} is not a finite number",
                            names[j],
                            first + i + 1,
                            v[i]
                        )));
                    }
                    Ok(v)
                })
                .collect();
            let decoded = decoded.into_iter().collect::<Result<Vec<Vec<f32>>, _>>()?;
            let (response, features): (Vec<_>, Vec<_>) =
                js.iter().zip(&decoded).partition(|(j, _)| **j == t);
            if let Some((_, v)) = response.first() {
                yg.copy_from_slice(v);
            }
            let cols: Vec<(usize, &[f32])> = features
                .iter()
                .map(|&(&j, v)| (feature(j), v.as_slice()))
                .collect();
            xg.par_chunks_mut(COPY_ROWS * d.max(1))
                .enumerate()
                .for_each(|(c, block)| {
                    let r0 = c * COPY_ROWS;
                    // Row by row: the batch's columns fill one or two cache lines of
                    // each row, written once.
                    for (i, row) in block.chunks_exact_mut(d).enumerate() {
                        for &(k, v) in &cols {
                            row[k] = v[r0 + i];
                        }
                    }
                });
        }
        first += rows;
    }
    let names = names
        .into_iter()
        .enumerate()
        .filter(|&(j, _)| j != t)
        .map(|(_, s)| s)
        .collect();
    Ok(Dataset {
        features: Features::Dense { x, d },
        y,
        names,
        lines: Vec::new(),
    })
}

/// Writes `data` as a Parquet table of float32 columns, the features by their names and
/// the response last as `response` (snappy-compressed), through a `.partial` file
/// renamed when complete. Returns the rows and columns written.
pub fn write_dataset(out: &Path, data: &Dataset, response: &str) -> Result<(usize, usize), String> {
    let x = data.dense_or_error()?;
    let (n, d) = (data.len(), data.dim());
    if data.names.iter().any(|s| s == response) {
        return Err(format!(
            "a feature is already named {response:?}, the name of the response column"
        ));
    }
    let field = |name: &str| {
        Type::primitive_type_builder(name, Physical::FLOAT)
            .with_repetition(Repetition::REQUIRED)
            .build()
            .map(Arc::new)
    };
    super::write_whole(
        out,
        |partial| -> Result<File, parquet::errors::ParquetError> {
            let fields = data
                .names
                .iter()
                .map(|s| field(s))
                .chain(std::iter::once(field(response)))
                .collect::<Result<Vec<_>, _>>()?;
            let schema = Arc::new(
                Type::group_type_builder("schema")
                    .with_fields(fields)
                    .build()?,
            );
            let props = WriterProperties::builder()
                .set_compression(parquet::basic::Compression::SNAPPY)
                .set_dictionary_enabled(false)
                .build();
            let file = File::create(partial)?;
            let mut w = SerializedFileWriter::new(file, schema, Arc::new(props))?;
            let per_group = (WRITE_GROUP_VALUES / (d + 1)).max(1);
            let mut column = Vec::with_capacity(per_group.min(n));
            for start in (0..n).step_by(per_group) {
                let rows = start..(start + per_group).min(n);
                let mut g = w.next_row_group()?;
                for j in 0..=d {
                    column.clear();
                    if j < d {
                        column.extend(rows.clone().map(|i| x[i * d + j]));
                    } else {
                        column.extend_from_slice(&data.y[rows.clone()]);
                    }
                    let mut c = g.next_column()?.ok_or_else(|| {
                        parquet::errors::ParquetError::General(
                            "fewer columns than the schema".into(),
                        )
                    })?;
                    c.typed::<FloatType>().write_batch(&column, None, None)?;
                    c.close()?;
                }
                g.close()?;
            }
            w.into_inner()
        },
    )?;
    Ok((n, d + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::basic::{DecimalType, IntType, TimeUnit, TimestampType};
    use parquet::schema::types::ColumnPath;

    fn descr(t: Physical, logical: Option<LogicalType>, max_rep: i16) -> ColumnDescriptor {
        let mut b = Type::primitive_type_builder("c", t)
            .with_repetition(Repetition::REQUIRED)
            .with_logical_type(logical.clone());
        if let Some(LogicalType::Decimal(t)) = &logical {
            b = b.with_precision(t.precision).with_scale(t.scale);
        }
        let tp = Arc::new(b.build().unwrap());
        ColumnDescriptor::new(tp, 0, max_rep, ColumnPath::new(vec!["c".into()]))
    }

    /// Decimals are scaled, unsigned integers read as unsigned; dates, times, text and
    /// lists are refused by name.
    #[test]
    fn column_kinds_and_integer_values() {
        let dec = LogicalType::Decimal(DecimalType {
            scale: 2,
            precision: 10,
        });
        assert!(matches!(
            kind(&descr(Physical::INT64, Some(dec), 0)),
            Ok(Kind::Int {
                unsigned: false,
                scale: 2
            })
        ));
        let u32_type = LogicalType::Integer(IntType {
            bit_width: 32,
            is_signed: false,
        });
        assert!(matches!(
            kind(&descr(Physical::INT32, Some(u32_type), 0)),
            Ok(Kind::Int {
                unsigned: true,
                scale: 0
            })
        ));
        assert_eq!(integer(-1, true, u32::MAX as u64), 4_294_967_295.0);
        assert_eq!(integer(-1, false, u32::MAX as u64), -1.0);
        assert_eq!(
            integer(i64::MIN, true, u64::MAX),
            9_223_372_036_854_775_808.0
        );
        assert_eq!(big_endian(&[0x01, 0x00]), 256.0);
        assert_eq!(big_endian(&[0xff, 0xfe]), -2.0);
        assert_eq!(
            big_endian(&[0x80; 16]),
            i128::from_be_bytes([0x80; 16]) as f64
        );
        assert_eq!(big_endian(&[]), 0.0);
        let ts = LogicalType::Timestamp(TimestampType {
            is_adjusted_to_u_t_c: true,
            unit: TimeUnit::NANOS,
        });
        let refused = [
            (descr(Physical::INT64, Some(ts), 0), "dates or times"),
            (descr(Physical::INT32, Some(LogicalType::Date), 0), "dates"),
            (descr(Physical::BYTE_ARRAY, None, 0), "text or bytes"),
            (descr(Physical::DOUBLE, None, 1), "repeated"),
        ];
        for (c, what) in refused {
            let e = kind(&c).unwrap_err();
            assert!(e.contains(what) && e.contains("\"c\""), "{e}");
        }
    }
}
