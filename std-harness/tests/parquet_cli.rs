//! Parquet input: `sgld data convert` to Parquet, a table as writers other than ours
//! make it (nullable doubles, integers, booleans, several row groups, columns in another
//! order), test columns matched by name, and bad tables named in one line.

use std::path::Path;
use std::sync::Arc;

use parquet::basic::{DecimalType, LogicalType, Repetition, Type as Physical};
use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DoubleType, FixedLenByteArray, FixedLenByteArrayType,
    Int32Type, Int64Type,
};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

mod common;

use common::{normals, run_ok, summary, write_csv};

/// A column of a hand-written table.
enum Col {
    /// Doubles, nullable (`None`: a null) as pandas writes them.
    Double(Vec<Option<f64>>),
    Int(Vec<i32>),
    Bool(Vec<bool>),
    Text(Vec<&'static str>),
    /// Decimals of scale 2 (the unscaled values): in 64 bits, or `wide` in 16 bytes.
    Decimal {
        unscaled: Vec<i64>,
        wide: bool,
    },
}

impl Col {
    fn len(&self) -> usize {
        match self {
            Col::Double(v) => v.len(),
            Col::Int(v) => v.len(),
            Col::Bool(v) => v.len(),
            Col::Text(v) => v.len(),
            Col::Decimal { unscaled, .. } => unscaled.len(),
        }
    }
}

/// Writes `cols` (named) as a Parquet table in row groups of `group` rows.
fn write_table(path: &Path, cols: &[(&str, Col)], group: usize) {
    let fields = cols
        .iter()
        .map(|(name, c)| {
            let (t, rep) = match c {
                Col::Double(_) => (Physical::DOUBLE, Repetition::OPTIONAL),
                Col::Int(_) => (Physical::INT32, Repetition::REQUIRED),
                Col::Bool(_) => (Physical::BOOLEAN, Repetition::REQUIRED),
                Col::Text(_) => (Physical::BYTE_ARRAY, Repetition::REQUIRED),
                Col::Decimal { wide: false, .. } => (Physical::INT64, Repetition::REQUIRED),
                Col::Decimal { wide: true, .. } => {
                    (Physical::FIXED_LEN_BYTE_ARRAY, Repetition::REQUIRED)
                }
            };
            let mut b = Type::primitive_type_builder(name, t).with_repetition(rep);
            if let Col::Decimal { wide, .. } = c {
                let precision = if *wide { 30 } else { 18 };
                b = b
                    .with_logical_type(Some(LogicalType::Decimal(DecimalType {
                        scale: 2,
                        precision,
                    })))
                    .with_precision(precision)
                    .with_scale(2)
                    .with_length(if *wide { 16 } else { -1 });
            }
            Arc::new(b.build().unwrap())
        })
        .collect();
    let schema = Arc::new(
        Type::group_type_builder("schema")
            .with_fields(fields)
            .build()
            .unwrap(),
    );
    let file = std::fs::File::create(path).unwrap();
    let props = Arc::new(WriterProperties::builder().build());
    let mut w = SerializedFileWriter::new(file, schema, props).unwrap();
    let n = cols[0].1.len();
    for start in (0..n).step_by(group) {
        let r = start..(start + group).min(n);
        let mut g = w.next_row_group().unwrap();
        for (_, c) in cols {
            let mut cw = g.next_column().unwrap().unwrap();
            match c {
                Col::Double(v) => {
                    let v = &v[r.clone()];
                    let defs: Vec<i16> = v.iter().map(|a| a.is_some() as i16).collect();
                    let vals: Vec<f64> = v.iter().flatten().copied().collect();
                    cw.typed::<DoubleType>()
                        .write_batch(&vals, Some(&defs), None)
                        .unwrap();
                }
                Col::Int(v) => {
                    cw.typed::<Int32Type>()
                        .write_batch(&v[r.clone()], None, None)
                        .unwrap();
                }
                Col::Bool(v) => {
                    cw.typed::<BoolType>()
                        .write_batch(&v[r.clone()], None, None)
                        .unwrap();
                }
                Col::Decimal { unscaled, wide } => {
                    let v = &unscaled[r.clone()];
                    if *wide {
                        let b: Vec<FixedLenByteArray> = v
                            .iter()
                            .map(|&x| ByteArray::from((x as i128).to_be_bytes().to_vec()).into())
                            .collect();
                        cw.typed::<FixedLenByteArrayType>()
                            .write_batch(&b, None, None)
                            .unwrap();
                    } else {
                        cw.typed::<Int64Type>().write_batch(v, None, None).unwrap();
                    }
                }
                Col::Text(v) => {
                    let b: Vec<ByteArray> = v[r.clone()].iter().map(|s| (*s).into()).collect();
                    cw.typed::<ByteArrayType>()
                        .write_batch(&b, None, None)
                        .unwrap();
                }
            }
            cw.close().unwrap();
        }
        g.close().unwrap();
    }
    w.close().unwrap();
}

/// The draws of a run, without the header.
fn draw_rows(out: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(out.join("draws.csv")).unwrap();
    text.lines().skip(1).map(str::to_string).collect()
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// 200 rows of two features (`a` small integers, `b` normal) and a 0/1 response.
fn rows() -> Vec<[f32; 3]> {
    let z = normals(400, 41);
    (0..200)
        .map(|k| {
            let a = (k % 7) as f32 - 3.0;
            let b = z[2 * k];
            let y = (0.4 * a - 0.5 * b + z[2 * k + 1] > 0.0) as u8 as f32;
            [a, b, y]
        })
        .collect()
}

#[test]
fn parquet_tables_sample_as_the_csv_they_came_from() {
    // `sgld data convert` writes the CSV as Parquet; a table as pandas writes it (the
    // response a boolean column in the middle, nullable doubles, integers, several row
    // groups) names its response with --target. Both give the CSV run's draws, bit for
    // bit, under the same parameter names.
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    let rows = rows();
    let table: Vec<Vec<f32>> = rows.iter().map(|r| r.to_vec()).collect();
    write_csv(&p("d.csv"), &["a", "b", "y"], &table);
    let said = run_ok(&["data", "convert", &s(&p("d.csv")), &s(&p("d.parquet"))]);
    assert!(said.contains("200 x 3 float32"), "{said}");
    write_table(
        &p("other.parquet"),
        &[
            ("a", Col::Int(rows.iter().map(|r| r[0] as i32).collect())),
            ("y", Col::Bool(rows.iter().map(|r| r[2] == 1.0).collect())),
            (
                "b",
                Col::Double(rows.iter().map(|r| Some(r[1] as f64)).collect()),
            ),
        ],
        64,
    );
    let sample = |train: &Path, extra: &[&str], out: &Path| {
        let mut args = vec!["sample", "--model", "logistic", "--seed", "5"];
        let (train, out) = (s(train), s(out));
        args.extend_from_slice(&["--train", &train, "--out", &out]);
        args.extend_from_slice(extra);
        run_ok(&args)
    };
    sample(&p("d.csv"), &[], &p("csv"));
    sample(&p("d.parquet"), &[], &p("pq"));
    assert_eq!(draw_rows(&p("csv")), draw_rows(&p("pq")));
    let names = summary(&p("pq"));
    assert_eq!(
        common::param_names(&names),
        vec!["beta[a]", "beta[b]", "bias"]
    );
    assert_eq!(names["data"]["train"]["path"], s(&p("d.parquet")));
    assert_eq!(names["data"]["train"]["sha256"].as_str().unwrap().len(), 64);
    // Columns in another order are the same features: the draws differ only in the
    // order of the parameters, so compare the summaries' means by name.
    sample(&p("other.parquet"), &["--target", "y"], &p("other"));
    let means = |dir: &Path| {
        let s = summary(dir);
        let mut m: Vec<(String, f64)> = s["params"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| {
                (
                    q["name"].as_str().unwrap().to_string(),
                    q["mean"].as_f64().unwrap(),
                )
            })
            .collect();
        m.sort_by(|a, b| a.0.cmp(&b.0));
        m
    };
    let (a, b) = (means(&p("csv")), means(&p("other")));
    assert_eq!(
        a.iter().map(|q| &q.0).collect::<Vec<_>>(),
        b.iter().map(|q| &q.0).collect::<Vec<_>>()
    );
    // The same posterior from another parameter order: within a few Monte Carlo errors
    // (the sds are about 0.2; the ESS at least 400).
    let sds: Vec<f64> = summary(&p("csv"))["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["sd"].as_f64().unwrap())
        .collect();
    let sd = sds.iter().cloned().fold(0.0, f64::max);
    for (x, y) in a.iter().zip(&b) {
        assert!(
            (x.1 - y.1).abs() < 6.0 * sd * (2.0f64 / 400.0).sqrt(),
            "{x:?} {y:?}"
        );
    }
    // A Parquet test table's columns are matched by name, in any order.
    sample(
        &p("d.parquet"),
        &["--test", &s(&p("other.parquet"))],
        &p("with_test"),
    );
    let t = summary(&p("with_test"));
    assert!(t["test"].is_object(), "{t}");
}

#[test]
fn decimal_columns_are_their_values() {
    // Decimals of scale 2, in 64 bits and in 16 bytes, give the draws of the same values
    // as a CSV (values in quarters, exact in binary).
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    let rows = rows();
    let quarters = |k: usize, v: f32| (v * 4.0).round() as i64 * 25 + k as i64 % 3 * 25;
    let a: Vec<i64> = rows
        .iter()
        .enumerate()
        .map(|(k, r)| quarters(k, r[0]))
        .collect();
    let b: Vec<i64> = rows
        .iter()
        .enumerate()
        .map(|(k, r)| quarters(k, r[1]))
        .collect();
    let table: Vec<Vec<f32>> = (0..rows.len())
        .map(|k| vec![a[k] as f32 / 100.0, b[k] as f32 / 100.0, rows[k][2]])
        .collect();
    write_csv(&p("d.csv"), &["a", "b", "y"], &table);
    write_table(
        &p("d.parquet"),
        &[
            (
                "a",
                Col::Decimal {
                    unscaled: a,
                    wide: false,
                },
            ),
            (
                "b",
                Col::Decimal {
                    unscaled: b,
                    wide: true,
                },
            ),
            ("y", Col::Int(rows.iter().map(|r| r[2] as i32).collect())),
        ],
        70,
    );
    for (train, out) in [("d.csv", "csv"), ("d.parquet", "pq")] {
        run_ok(&[
            "sample",
            "--model",
            "logistic",
            "--train",
            &s(&p(train)),
            "--out",
            &s(&p(out)),
        ]);
    }
    assert_eq!(draw_rows(&p("csv")), draw_rows(&p("pq")));
}

#[test]
fn bad_parquet_inputs_are_one_line_errors_that_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    let rows = rows();
    let dbl = |k: usize| Col::Double(rows.iter().map(|r| Some(r[k] as f64)).collect());
    write_table(&p("ok.parquet"), &[("a", dbl(0)), ("y", dbl(2))], 1000);
    let mut with_null: Vec<Option<f64>> = rows.iter().map(|r| Some(r[1] as f64)).collect();
    with_null[17] = None;
    write_table(
        &p("null.parquet"),
        &[("b", Col::Double(with_null)), ("y", dbl(2))],
        50,
    );
    write_table(
        &p("text.parquet"),
        &[
            ("a", dbl(0)),
            ("city", Col::Text(vec!["Oslo"; 200])),
            ("y", dbl(2)),
        ],
        1000,
    );
    // Nulls in two columns of one row group: the first column is named, whichever
    // column's decoding fails first.
    let mut a_null: Vec<Option<f64>> = rows.iter().map(|r| Some(r[0] as f64)).collect();
    a_null[40] = None;
    let mut b_null: Vec<Option<f64>> = rows.iter().map(|r| Some(r[1] as f64)).collect();
    b_null[2] = None;
    write_table(
        &p("nulls.parquet"),
        &[
            ("a", Col::Double(a_null)),
            ("b", Col::Double(b_null)),
            ("y", dbl(2)),
        ],
        1000,
    );
    let mut nan: Vec<Option<f64>> = rows.iter().map(|r| Some(r[1] as f64)).collect();
    nan[3] = Some(f64::NAN);
    write_table(
        &p("nan.parquet"),
        &[("b", Col::Double(nan)), ("y", dbl(2))],
        1000,
    );
    let whole = std::fs::read(p("ok.parquet")).unwrap();
    std::fs::write(p("short.parquet"), &whole[..whole.len() / 2]).unwrap();
    std::fs::write(p("fake.parquet"), "a,y\n1,0\n").unwrap();
    let cases: [(&str, &[&str], &str); 8] = [
        (
            "ok.parquet",
            &["--target", "label"],
            "no column named \"label\"",
        ),
        ("null.parquet", &[], "row 18 is null"),
        ("nulls.parquet", &[], "column \"a\": row 41 is null"),
        ("text.parquet", &[], "column \"city\" holds text"),
        ("nan.parquet", &[], "row 4: NaN is not a finite number"),
        ("short.parquet", &[], "not a readable Parquet file"),
        ("fake.parquet", &[], "not a readable Parquet file"),
        ("missing.parquet", &[], "cannot read"),
    ];
    for (k, (file, extra, what)) in cases.iter().enumerate() {
        let out = p(&format!("out{k}"));
        let o = common::sgld()
            .args(["sample", "--model", "logistic", "--out", &s(&out)])
            .args(["--train", &s(&p(file))])
            .args(*extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{file}: {err}");
        assert!(err.contains(what), "{file}: {err}");
        assert!(err.contains(file), "{file}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!out.join("draws.csv").exists() && !out.join("summary.json").exists());
    }
    // A test table without a training column is named too.
    write_table(&p("b.parquet"), &[("b", dbl(1)), ("y", dbl(2))], 1000);
    let o = common::sgld()
        .args(["sample", "--model", "logistic", "--out", &s(&p("outt"))])
        .args(["--train", &s(&p("ok.parquet"))])
        .args(["--test", &s(&p("b.parquet"))])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("lacks the training column(s) \"a\""), "{err}");
    // Converting to another extension is refused before anything is read.
    let o = common::sgld()
        .args(["data", "convert", &s(&p("ok.parquet")), &s(&p("out.txt"))])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains(".parquet or .npy"));
}

#[test]
fn wide_tables_read_as_the_csv_they_came_from() {
    // More columns than one decoding batch (sixteen), the response among them and row
    // groups that do not divide the rows: our converter's float columns and a writer's
    // nullable doubles in row groups of 64 rows give the CSV run's draws, bit for bit.
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    let (n, d, t) = (200, 37, 20);
    let z = normals(n * (d + 1), 43);
    let table: Vec<Vec<f32>> = (0..n)
        .map(|i| {
            let x = &z[i * (d + 1)..(i + 1) * (d + 1)];
            let y = (x[0] - 0.5 * x[d - 1] + x[d] > 0.0) as u8 as f32;
            let mut row = x[..d].to_vec();
            row.insert(t, y);
            row
        })
        .collect();
    let names: Vec<String> = (0..=d)
        .map(|j| if j == t { "y".into() } else { format!("x{j}") })
        .collect();
    let header: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    write_csv(&p("w.csv"), &header, &table);
    run_ok(&["data", "convert", &s(&p("w.csv")), &s(&p("w.parquet"))]);
    let col = |j: usize| Col::Double(table.iter().map(|r| Some(r[j] as f64)).collect());
    let cols: Vec<(&str, Col)> = header
        .iter()
        .enumerate()
        .map(|(j, &h)| (h, col(j)))
        .collect();
    write_table(&p("groups.parquet"), &cols, 64);
    let sample = |train: &Path, out: &Path| {
        let (train, out) = (s(train), s(out));
        run_ok(&[
            "sample", "--model", "logistic", "--seed", "3", "--target", "y", "--train", &train,
            "--out", &out,
        ])
    };
    sample(&p("w.csv"), &p("csv"));
    sample(&p("w.parquet"), &p("pq"));
    sample(&p("groups.parquet"), &p("groups"));
    let csv = draw_rows(&p("csv"));
    assert_eq!(csv, draw_rows(&p("pq")));
    assert_eq!(csv, draw_rows(&p("groups")));
    assert_eq!(common::param_names(&summary(&p("groups"))).len(), d + 1);
    // A value that is not finite in a later batch of columns and a later row group is
    // named by its column and row in the whole table.
    let mut cols = cols;
    let mut bad: Vec<Option<f64>> = table.iter().map(|r| Some(r[30] as f64)).collect();
    bad[150] = Some(f64::INFINITY);
    cols[30].1 = Col::Double(bad);
    write_table(&p("inf.parquet"), &cols, 64);
    let o = common::sgld()
        .args(["sample", "--model", "logistic", "--target", "y"])
        .args(["--train", &s(&p("inf.parquet")), "--out", &s(&p("inf"))])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("column \"x30\", row 151: inf is not a finite number"),
        "{err}"
    );
    assert!(!p("inf").join("draws.csv").exists());
}
