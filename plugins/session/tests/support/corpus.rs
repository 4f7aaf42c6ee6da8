//! The shared corpora (`DSH_SHARED`): where they are, and the rc.8 corpus's file names.

use std::path::{Path, PathBuf};

/// `DSH_SHARED`, else `<workspace root>/../shared`.
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("DSH_SHARED") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    }
}

/// The converter's stem of an rc.8 file name (`convert.mjs`): `__session(.N).jsonl` ->
/// `__s(.N)`.
pub fn stem(name: &str) -> String {
    let base = name.strip_suffix(".jsonl").unwrap_or(name);
    if let Some(at) = base.rfind("__session") {
        let tail = &base[at + "__session".len()..];
        let numbered = tail.is_empty()
            || (tail.starts_with('.')
                && tail.len() > 1
                && tail[1..].bytes().all(|b| b.is_ascii_digit()));
        if numbered {
            return format!("{}__s{tail}", &base[..at]);
        }
    }
    base.to_owned()
}

/// The `.jsonl` file names of the rc.8 corpus folder `dir`, sorted.
pub fn rc8_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the rc.8 corpus lists")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    names.sort();
    names
}
