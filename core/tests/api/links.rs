//! Link safety: a host asserts the plugins it ships, and two copies of dsh-core in one build
//! are refused by Cargo (the `links` key) instead of splitting the registry.

use dsh_core::{plugin_fn, Context, CoreError};
use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn expecting_plugins_the_build_lacks_names_them_and_the_fix() {
    let ctx = Context::builder()
        .add_plugin(plugin_fn("present", |_, ()| Ok(())))
        .build()
        .unwrap();
    ctx.expect_plugins(&["present"]).unwrap();
    let error = ctx
        .expect_plugins(&["present", "absent", "gone"])
        .unwrap_err();
    assert_eq!(
        error,
        CoreError::MissingPlugins {
            missing: vec!["absent".into(), "gone".into()]
        }
    );
    assert_eq!(error.code(), "MISSING_PLUGINS");
    assert!(error.to_string().contains("use the_crate as _;"), "{error}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A workspace holding the real dsh-core and a second copy of it (as a git copy beside a path
/// copy would be), with one crate depending on each and a binary on both.
#[test]
fn a_build_with_two_copies_of_dsh_core_is_refused_by_cargo() {
    let core = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile_dir();
    let copy = dir.join("core-copy");
    for part in ["src", "build.rs", "Cargo.toml"] {
        let from = core.join(part);
        if from.is_dir() {
            copy_dir(&from, &copy.join(part));
        } else {
            std::fs::copy(&from, copy.join(part)).unwrap();
        }
    }
    // The copy stands alone: concrete fields instead of the workspace's, another version.
    let manifest = std::fs::read_to_string(copy.join("Cargo.toml")).unwrap();
    let manifest = manifest
        .replace("version.workspace = true", "version = \"0.1.1\"")
        .replace("edition.workspace = true", "edition = \"2021\"")
        .replace("license.workspace = true", "license = \"MIT\"")
        .lines()
        .filter(|line| !line.contains(".workspace = true") || !line.contains("trybuild"))
        .collect::<Vec<_>>()
        .join("\n");
    let manifest = workspace_deps_inline(&manifest);
    std::fs::write(copy.join("Cargo.toml"), manifest).unwrap();
    std::fs::create_dir_all(dir.join("host/src")).unwrap();
    std::fs::write(dir.join("host/src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(
        dir.join("host/Cargo.toml"),
        format!(
            "[package]\nname = \"two-cores\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\n\
             dsh-core = {{ path = {:?} }}\nother-core = {{ package = \"dsh-core\", path = {:?} }}\n\n[workspace]\n",
            core.display().to_string(),
            copy.display().to_string(),
        ),
    )
    .unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--offline",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(dir.join("host/Cargo.toml"))
        .output()
        .expect("run cargo");
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("failed to load source")
        || stderr.contains("no matching package named") && !stderr.contains("links")
    {
        println!("skipped: cargo cannot resolve the registry offline here: {stderr}");
        return;
    }
    assert!(!output.status.success(), "two copies resolved: {stderr}");
    assert!(
        stderr.contains("links") && stderr.contains("dsh_core"),
        "refused for another reason: {stderr}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Inlines the dependencies inherited from the workspace (`x.workspace = true`, or
/// `x = { workspace = true, ... }`) with a plain `*` version.
fn workspace_deps_inline(manifest: &str) -> String {
    manifest
        .lines()
        .map(|line| match line.split_once(".workspace = true") {
            Some((name, "")) if !name.contains(' ') => format!("{name} = \"*\""),
            _ => line.replace("{ workspace = true", "{ version = \"*\""),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dsh-two-cores-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
