//! Exists for the `links` key of this package: Cargo refuses a build with two packages that
//! link `dsh_core`, so two copies of dsh-core (a path copy and a git copy, say) are a build
//! error instead of two registries in which plugins silently go missing.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
}
