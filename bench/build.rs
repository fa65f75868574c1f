//! Records the commit the benchmark binary is built from (and whether the
//! tracked sources differed from it), so that a result names the code that
//! produced it and not whatever the checkout holds when the run ends.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    // Built again when the commit or the index moves, or any source changes.
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
    }
    for path in ["../crates", "../apps", "src", "Cargo.toml", "../Cargo.lock"] {
        println!("cargo:rerun-if-changed={path}");
    }
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_default();
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
        .map(|changes| if changes.is_empty() { "false" } else { "true" })
        .unwrap_or_default();
    println!("cargo:rustc-env=TROUPE_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=TROUPE_BUILD_DIRTY={dirty}");
}
