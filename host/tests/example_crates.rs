//! The `Cargo.toml` lines the README gives a library host and a plugin crate are those of the
//! example crates `examples/library-host` and `examples/plugin-crate`, which the workspace
//! builds and tests: the README cannot show lines that do not build.

use std::path::Path;

/// The lines of the `[dependencies]` table of `toml`, each `path = "..."` written `path = _`
/// (the README gives the path of a clone; the crates the path inside it).
fn dependencies(toml: &str) -> Vec<String> {
    toml.lines()
        .skip_while(|line| line.trim() != "[dependencies]")
        .skip(1)
        .take_while(|line| !line.trim_start().starts_with('['))
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| match line.find("path = \"") {
            Some(at) => {
                let rest = &line[at + 8..];
                let end = rest.find('"').expect("a closed path");
                format!("{}path = _{}", &line[..at], &rest[end + 1..])
            }
            None => line.to_owned(),
        })
        .collect()
}

/// The TOML block of the README that starts with the comment `# CRATE/Cargo.toml`.
fn readme_block(readme: &str, marker: &str) -> String {
    let start = readme
        .find(&format!("```toml\n# {marker}\n"))
        .unwrap_or_else(|| panic!("the README shows {marker}"));
    let block = &readme[start + 8..];
    block[..block.find("```").expect("a closed block")].to_owned()
}

#[test]
fn the_readmes_cargo_lines_are_those_of_the_example_crates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    for krate in ["examples/library-host", "examples/plugin-crate"] {
        let marker = format!("{krate}/Cargo.toml");
        let shown = dependencies(&readme_block(&readme, &marker));
        let built = dependencies(&std::fs::read_to_string(root.join(&marker)).unwrap());
        assert!(!built.is_empty(), "{krate} has dependencies");
        assert_eq!(shown, built, "{krate}");
    }
}
