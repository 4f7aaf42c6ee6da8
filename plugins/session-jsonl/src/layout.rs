//! Where a session lives on disk: `<root>/<cwd folder>/<id segment>/session.jsonl`.
//!
//! The cwd folder is `--<slug>--` for a session with a working directory and `_no-cwd`
//! without one. The slug is readable and lossy (two directories may share a folder); the id
//! segment is an injective escape of the id, so every id has its own folder and no id can name
//! a path outside it.
//!
//! Finding the file of a stored session follows symbolic links: a cwd folder may be a link,
//! and two paths that lead to the same physical file are one file.

use dsh_session::backend::PersistenceError;
use dsh_session::format::{canonical_file_version, version_of_file_name, FormatVersion};
use dsh_session::{SessionHeader, SessionId};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// The file name of a session log inside its id folder.
pub const SESSION_FILE_NAME: &str = "session.jsonl";

/// The file name of a compressed session log (concatenated zstd frames), dsh's default form.
pub const COMPRESSED_FILE_NAME: &str = "session.jsonl.zstd";

/// The cwd folder of sessions that have no working directory.
pub const NO_CWD_FOLDER: &str = "_no-cwd";

/// The longest slug kept inside the `--…--` wrapper, in characters (all ASCII), so that the
/// folder name stays within 255 bytes.
const MAX_SLUG_CHARS: usize = 251;

/// The slug a folder gets when nothing is left of its cwd (e.g. `/`).
const EMPTY_SLUG: &str = "root";

/// The most bytes one byte of an id becomes in its segment ([`id_segment`]): 5, for an ASCII
/// character written `~XXXX`. A character of 2 or 3 bytes is one UTF-16 unit (5 bytes), one
/// of 4 bytes two units (10 bytes).
pub const MAX_ESCAPED_BYTES_PER_ID_BYTE: usize = 5;

/// The id segment of the empty id. No other id encodes to it: every non-empty id yields either
/// a safe character first or a five-character `~XXXX` escape.
const EMPTY_ID_SEGMENT: &str = "~";

/// The cwd folder name for `cwd` (`None`: no working directory).
///
/// Runs of `/`, `\` and `:` become one `-`; ASCII letters, digits, `.`, `_` and `-` are kept;
/// every other UTF-16 code unit becomes `~XXXX` (upper-case hex). Leading dashes are stripped,
/// an empty result becomes `root`, and the slug is cut to 251 characters before it is wrapped as
/// `--slug--`. Example: `/home/dev/project` gives `--home-dev-project--`.
pub fn cwd_folder(cwd: Option<&str>) -> String {
    let Some(cwd) = cwd else {
        return NO_CWD_FOLDER.to_owned();
    };
    let mut slug = String::with_capacity(cwd.len());
    let mut in_separator_run = false;
    for unit in cwd.encode_utf16() {
        if matches!(unit, 0x2F | 0x5C | 0x3A) {
            if !in_separator_run {
                slug.push('-');
            }
            in_separator_run = true;
            continue;
        }
        in_separator_run = false;
        match ascii_kept(unit, true) {
            Some(c) => slug.push(c),
            None => push_escape(&mut slug, unit),
        }
    }
    let trimmed = slug.trim_start_matches('-');
    let mut slug: String = if trimmed.is_empty() {
        EMPTY_SLUG
    } else {
        trimmed
    }
    .to_owned();
    // Every character of the slug is ASCII, so cutting by bytes cuts by characters.
    slug.truncate(MAX_SLUG_CHARS);
    format!("--{slug}--")
}

/// Whether `name` is a folder this layout puts directly under the root (a cwd folder).
pub fn is_cwd_folder(name: &str) -> bool {
    name == NO_CWD_FOLDER || (name.len() > 4 && name.starts_with("--") && name.ends_with("--"))
}

/// The id segment for `id`: an injective escape that is always a single, ordinary path
/// component.
///
/// ASCII letters, digits, `_`, `-` and `.` are kept; every other UTF-16 code unit (including
/// `~`, `/`, `\`, NUL and control characters) becomes `~XXXX` (upper-case hex). The whole ids
/// `.` and `..` are escaped too (`~002E`, `~002E~002E`), and the empty id is `~`. The segment
/// is as long as the escaped id: a very long id gives a name the file system may refuse.
pub fn id_segment(id: &str) -> String {
    if id.is_empty() {
        return EMPTY_ID_SEGMENT.to_owned();
    }
    let whole_dots = id == "." || id == "..";
    let mut segment = String::with_capacity(id.len());
    for unit in id.encode_utf16() {
        match ascii_kept(unit, !whole_dots) {
            Some(c) => segment.push(c),
            None => push_escape(&mut segment, unit),
        }
    }
    segment
}

/// The folder that holds the log of session `id` with working directory `cwd`.
pub fn session_dir(root: &Path, cwd: Option<&str>, id: &str) -> PathBuf {
    root.join(cwd_folder(cwd)).join(id_segment(id))
}

/// Where a store puts the plain file of the session `header` describes, relative to the store
/// root and with `/` between the parts: `<cwd folder>/<id segment>/session.jsonl` for format
/// v0, `…/session.vN.jsonl` for vN (a version this build does not read is named as v0). The
/// place of a session in an export bundle.
pub fn store_relative_file(header: &SessionHeader) -> String {
    let version = FormatVersion::from_number(header.version).unwrap_or_default();
    format!(
        "{}/{}/{}",
        cwd_folder(header.cwd.as_deref()),
        id_segment(header.id.as_str()),
        version.file_name(false)
    )
}

/// The log file of session `id` with working directory `cwd`:
/// `<root>/<cwd folder>/<id segment>/session.jsonl`.
pub fn session_file(root: &Path, cwd: Option<&str>, id: &str) -> PathBuf {
    session_dir(root, cwd, id).join(SESSION_FILE_NAME)
}

/// The compressed log file of session `id` with working directory `cwd`:
/// `<root>/<cwd folder>/<id segment>/session.jsonl.zstd`.
pub fn compressed_session_file(root: &Path, cwd: Option<&str>, id: &str) -> PathBuf {
    session_dir(root, cwd, id).join(COMPRESSED_FILE_NAME)
}

/// Whether the file at `path` holds the compressed form: its name ends in `.zstd` or its
/// first bytes (`start`) are a zstd frame's magic number.
pub fn is_compressed(path: &Path, start: &[u8]) -> bool {
    const MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
    path.extension().is_some_and(|ext| ext == "zstd") || start.starts_with(&MAGIC)
}

/// The ASCII character for `unit` when it is kept verbatim (`dot_kept`: whether `.` is).
fn ascii_kept(unit: u16, dot_kept: bool) -> Option<char> {
    let c = char::from_u32(u32::from(unit)).filter(char::is_ascii)?;
    let kept = c.is_ascii_alphanumeric() || c == '_' || c == '-' || (c == '.' && dot_kept);
    kept.then_some(c)
}

fn push_escape(out: &mut String, unit: u16) {
    // Writing to a String cannot fail.
    let _ = write!(out, "~{unit:04X}");
}

/// The session files of the highest format version in the id folder `dir`, among the
/// canonical names ([`canonical_file_version`]): `session.jsonl`, `session.jsonl.zstd`, or
/// both (v0), or `session.vN.jsonl[.zstd]` for the highest N present. Older generations beside
/// them (dsh keeps its source when it publishes a newer one) are not the session's file.
pub(crate) fn session_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(u64, PathBuf)> = entries
        .flatten()
        .filter_map(|entry| {
            let version = canonical_file_version(entry.file_name().to_str()?)?;
            Some((version, entry.path()))
        })
        .filter(|(_, path)| path.is_file())
        .collect();
    let highest = found.iter().map(|(version, _)| *version).max();
    found.retain(|(version, _)| Some(*version) == highest);
    let mut files: Vec<PathBuf> = found.into_iter().map(|(_, path)| path).collect();
    files.sort();
    files
}

/// Refuses the session file at `path` when its name identifies another format version than
/// its header states ([`version_of_file_name`]: `session.jsonl` and names without a version
/// suffix identify v0, `….vN.jsonl[.zstd]` vN), as dsh refuses it.
///
/// # Errors
///
/// [`PersistenceError::VersionMismatch`] naming the file and both versions.
pub(crate) fn check_file_version(
    path: &Path,
    header: &SessionHeader,
) -> Result<(), PersistenceError> {
    let named = path
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(version_of_file_name);
    match named {
        Some(named) if named != header.version => Err(PersistenceError::VersionMismatch {
            file: path.display().to_string(),
            named,
            stored: header.version,
        }),
        _ => Ok(()),
    }
}

/// The one file among `found` (the session files of one id), paths that lead to the same
/// physical file counting as one (the first in path order is kept); `None` when there is
/// none.
///
/// # Errors
///
/// The distinct files, in path order, when there are several.
pub(crate) fn single_file(mut found: Vec<PathBuf>) -> Result<Option<PathBuf>, Vec<PathBuf>> {
    if found.len() < 2 {
        return Ok(found.pop());
    }
    found.sort();
    let mut seen: Vec<PathBuf> = Vec::new();
    found.retain(|path| {
        // A file that vanished since it was listed counts by its path.
        let physical = fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        let fresh = !seen.contains(&physical);
        seen.push(physical);
        fresh
    });
    if found.len() == 1 {
        Ok(found.pop())
    } else {
        Err(found)
    }
}

/// Why an id stored in the files `paths` is refused.
pub(crate) fn stored_twice(paths: &[PathBuf]) -> String {
    let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    format!("it is stored in several files: {}", paths.join(", "))
}

/// Whether the paths `a` and `b` lead to the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Refuses a file whose header does not belong at `path` in the store at `root` (another id,
/// an id folder of another name, or a cwd whose folder is not the one the file sits in): only
/// the layout makes `load(id)` find the right file. The file sits in the cwd folder of its
/// header when the folder's name says so, or when the path through that folder leads to the
/// same physical file (the folder of the header's cwd is a symbolic link to the one the file
/// was found in, or the other way round). Before that, a file whose name identifies another
/// format version than its header is refused ([`check_file_version`]).
pub(crate) fn check_placement(
    root: &Path,
    id: &SessionId,
    header: &SessionHeader,
    path: &Path,
) -> Result<(), PersistenceError> {
    check_file_version(path, header)?;
    let reason = if header.id != *id {
        Some(format!(
            "the header names session \"{}\", but the file is stored for session \"{id}\"",
            header.id
        ))
    } else {
        let id_folder = path.parent();
        let cwd_dir = id_folder.and_then(Path::parent);
        let name = |p: Option<&Path>| {
            p.and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let expected_folder = cwd_folder(header.cwd.as_deref());
        let segment = id_segment(id.as_str());
        let through_expected_folder = || {
            let file_name = path.file_name().unwrap_or_default();
            same_file(
                path,
                &root.join(&expected_folder).join(&segment).join(file_name),
            )
        };
        if name(id_folder) != segment {
            Some(format!(
                "the file sits in folder \"{}\", not in \"{segment}\" of its id",
                name(id_folder),
            ))
        } else if name(cwd_dir) != expected_folder && !through_expected_folder() {
            Some(format!(
                "the header cwd belongs in folder \"{expected_folder}\", but the file is in \"{}\"",
                name(cwd_dir)
            ))
        } else {
            None
        }
    };
    match reason {
        Some(reason) => Err(PersistenceError::HeaderInvalid {
            file: path.display().to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The inverse of [`id_segment`] on its image; `None` for a name it never produces.
    /// Existing proves the encoding injective.
    fn decode_segment(segment: &str) -> Option<String> {
        if segment == EMPTY_ID_SEGMENT {
            return Some(String::new());
        }
        let mut units = Vec::new();
        let mut rest = segment;
        while let Some(c) = rest.chars().next() {
            if c == '~' {
                let hex = rest.get(1..5)?;
                if !hex
                    .chars()
                    .all(|h| h.is_ascii_digit() || ('A'..='F').contains(&h))
                {
                    return None;
                }
                units.push(u16::from_str_radix(hex, 16).ok()?);
                rest = &rest[5..];
            } else {
                units.push(u16::try_from(u32::from(c)).ok()?);
                rest = &rest[c.len_utf8()..];
            }
        }
        let id = String::from_utf16(&units).ok()?;
        (id_segment(&id) == segment).then_some(id)
    }

    fn is_plain_component(segment: &str) -> bool {
        !segment.is_empty()
            && segment != "."
            && segment != ".."
            && segment
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '~'))
    }

    #[test]
    fn cwd_folders_are_readable_slugs() {
        assert_eq!(
            cwd_folder(Some("/home/dev/project")),
            "--home-dev-project--"
        );
        assert_eq!(cwd_folder(Some("C:\\Users\\me")), "--C-Users-me--");
        assert_eq!(cwd_folder(Some("//a::b\\\\c")), "--a-b-c--");
        assert_eq!(cwd_folder(Some("/")), "--root--");
        assert_eq!(cwd_folder(Some("")), "--root--");
        assert_eq!(cwd_folder(Some("/-x-/y")), "--x--y--");
        assert_eq!(cwd_folder(Some("/a b/é")), "--a~0020b-~00E9--");
        assert_eq!(cwd_folder(Some("/😀")), "--~D83D~DE00--");
        assert_eq!(cwd_folder(None), "_no-cwd");
    }

    #[test]
    fn long_cwds_are_cut_to_251_slug_characters() {
        let cwd = format!("/{}", "a".repeat(400));
        let folder = cwd_folder(Some(&cwd));
        assert_eq!(folder.len(), 255);
        assert!(folder.starts_with("--aaa") && folder.ends_with("a--"));
    }

    #[test]
    fn cwd_folders_are_recognised() {
        assert!(is_cwd_folder("--home-dev--"));
        assert!(is_cwd_folder("--root--"));
        assert!(is_cwd_folder(NO_CWD_FOLDER));
        assert!(!is_cwd_folder("----"));
        assert!(!is_cwd_folder("notes"));
        assert!(!is_cwd_folder(".tmp"));
    }

    #[test]
    fn hostile_ids_stay_one_plain_component() {
        for (id, segment) in [
            ("", "~"),
            (".", "~002E"),
            ("..", "~002E~002E"),
            ("...", "..."),
            ("a.b", "a.b"),
            ("../x", "..~002Fx"),
            ("a/b", "a~002Fb"),
            ("a\\b", "a~005Cb"),
            ("~", "~007E"),
            ("~002E", "~007E002E"),
            ("nul\0", "nul~0000"),
            ("tab\t", "tab~0009"),
            ("550e8400-e29b_41d4", "550e8400-e29b_41d4"),
        ] {
            assert_eq!(id_segment(id), segment, "{id:?}");
            assert_eq!(decode_segment(segment).as_deref(), Some(id), "{id:?}");
            assert!(is_plain_component(segment), "{segment:?}");
        }
    }

    #[test]
    fn every_id_within_the_id_rule_fits_a_file_name() {
        for worst in ["~", "é", "😀", "\u{85}"] {
            let id = worst.repeat(dsh_session::SessionId::MAX_BYTES / worst.len());
            assert!(
                id_segment(&id).len() <= crate::limits::MAX_ID_SEGMENT_BYTES,
                "{worst}"
            );
        }
    }

    #[test]
    fn non_canonical_names_decode_to_nothing() {
        for name in ["~002e", "a~002E", "~00", "~ZZZZ", "a/b", "~D83D"] {
            assert_eq!(decode_segment(name), None, "{name:?}");
        }
    }

    #[test]
    fn session_files_sit_under_their_cwd_folder() {
        let root = Path::new("/store");
        assert_eq!(
            session_file(root, Some("/p"), "a/b"),
            Path::new("/store/--p--/a~002Fb/session.jsonl")
        );
        assert_eq!(
            session_file(root, None, ".."),
            Path::new("/store/_no-cwd/~002E~002E/session.jsonl")
        );
    }

    fn hostile_id() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                Just('.'),
                Just('~'),
                Just('/'),
                Just('\\'),
                Just('\0'),
                Just('\n'),
                Just('a'),
                Just('0'),
                Just('-'),
                Just('_'),
                any::<char>(),
            ],
            0..12,
        )
        .prop_map(|chars| chars.into_iter().collect())
    }

    proptest! {
        #[test]
        fn id_segments_decode_back_to_their_id(id in hostile_id()) {
            let segment = id_segment(&id);
            prop_assert!(is_plain_component(&segment), "{segment:?}");
            prop_assert_eq!(decode_segment(&segment), Some(id));
        }

        #[test]
        fn a_segment_takes_at_most_five_bytes_per_byte_of_its_id(id in hostile_id()) {
            prop_assume!(!id.is_empty());
            prop_assert!(id_segment(&id).len() <= MAX_ESCAPED_BYTES_PER_ID_BYTE * id.len());
        }

        #[test]
        fn distinct_ids_get_distinct_segments(a in hostile_id(), b in hostile_id()) {
            prop_assert_eq!(a == b, id_segment(&a) == id_segment(&b));
        }

        #[test]
        fn cwd_folders_are_plain_components(cwd in hostile_id()) {
            let folder = cwd_folder(Some(&cwd));
            prop_assert!(is_cwd_folder(&folder));
            prop_assert!(folder.len() <= 255);
            prop_assert!(is_plain_component(&folder), "{folder:?}");
        }
    }
}
