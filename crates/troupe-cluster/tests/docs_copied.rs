//! What a user does with the docs: copies a dependency block and an example
//! into a crate of their own, outside this repository, and builds it.
//!
//! The guide's pages are compiled as doctests inside the workspace, where
//! every crate has the features the whole workspace turns on and the
//! dev-dependencies of the crate that includes the page. That hides a
//! dependency line that does not resolve (a version of a crate that is not
//! published, a repository nobody can reach) and a feature a page forgot
//! (`troupe_remote::launcher` without `launcher`). So this test reads
//! `README.md` and every `docs/guide/*.md` and, for each of them, makes
//! new crates in a temporary directory, each its own workspace, and runs
//! `cargo check` on them:
//!
//! * every ```` ```toml ```` block with `[dependencies]` or
//!   `[dev-dependencies]`, alone (with an empty `main`);
//! * every example file a page points to (`crates/<crate>/examples/<name>.rs`,
//!   or `-p <crate> --example <name>`), as a binary of a crate whose
//!   dependencies are the block whose leading comment names that file (a
//!   pointed-to example without such a block fails the test);
//! * every Rust snippet of a page (what rustdoc compiles, hidden lines and
//!   the `main` it adds included), as an example target of a crate whose
//!   dependencies are the first block of `01-getting-started.md` (what every
//!   page assumes) merged with the page's blocks above the snippet.
//!
//! troupe is not published: its crates are given as
//! `path = "../troupe/crates/<crate>"` (a checkout beside the user's crate),
//! which is the only thing rewritten here, to this checkout. Each crate gets
//! the workspace's `Cargo.lock` and cargo runs `--offline`, so nothing new
//! is resolved or downloaded, and a crate that ends up with a registry
//! package the workspace's lock does not hold fails the test. The crates
//! build into the workspace's own target directory (cargo holds its lock
//! only while it builds, not while the tests run): what they compile as
//! the workspace does (build scripts, proc macros, the dev profile) is
//! reused, and the rest is kept for the next run.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use toml::{Table, Value};

/// The checkout's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the checkout's root")
}

/// The page every other page builds on: its first dependency block.
const BASELINE_PAGE: &str = "docs/guide/01-getting-started.md";

/// How the docs name a checkout of troupe beside the user's crate.
const CHECKOUT: &str = "../troupe/";

/// A fenced code block of a markdown file.
struct Fence {
    /// The file, relative to the root.
    file: String,
    /// The line of its opening fence (1-based).
    line: usize,
    /// The info string's words (`rust`, `no_run`, `toml`, ...).
    info: Vec<String>,
    text: String,
}

fn fences(file: &str, markdown: &str) -> Vec<Fence> {
    let mut out = Vec::new();
    let mut open: Option<Fence> = None;
    for (i, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    open = Some(Fence {
                        file: file.to_string(),
                        line: i + 1,
                        info: info
                            .split(|c: char| c == ',' || c.is_whitespace())
                            .filter(|w| !w.is_empty())
                            .map(str::to_string)
                            .collect(),
                        text: String::new(),
                    });
                }
            }
            Some(mut fence) => {
                if trimmed.starts_with("```") {
                    out.push(fence);
                } else {
                    fence.text.push_str(line);
                    fence.text.push('\n');
                    open = Some(fence);
                }
            }
        }
    }
    out
}

/// A dependency block: its sections (`dependencies`, `dev-dependencies`)
/// with troupe's paths rewritten to this checkout, and the example files
/// its leading comment names.
struct DepBlock {
    at: String,
    sections: Table,
    for_examples: Vec<String>,
}

fn dep_block(fence: &Fence, checkout: &Path) -> Result<Option<DepBlock>, String> {
    let at = format!("{}:{}", fence.file, fence.line);
    let parsed: Table = fence
        .text
        .parse()
        .map_err(|e| format!("{at}: the ```toml block does not parse: {e}"))?;
    let mut sections = Table::new();
    for (name, value) in parsed {
        if name != "dependencies" && name != "dev-dependencies" {
            continue;
        }
        let Value::Table(deps) = value else {
            return Err(format!("{at}: [{name}] is not a table"));
        };
        let mut rewritten = Table::new();
        for (dep, spec) in deps {
            rewritten.insert(dep.clone(), checkout_path(&at, &dep, spec, checkout)?);
        }
        sections.insert(name, Value::Table(rewritten));
    }
    if sections.is_empty() {
        return Ok(None);
    }
    let for_examples = fence
        .text
        .lines()
        .take_while(|l| l.trim_start().starts_with('#'))
        .flat_map(example_paths)
        .collect();
    Ok(Some(DepBlock {
        at,
        sections,
        for_examples,
    }))
}

/// A troupe crate must come from a checkout (`path = "../troupe/crates/<it>"`):
/// it is not published, and no public repository holds it. The path is
/// rewritten to this checkout; nothing else is.
fn checkout_path(at: &str, dep: &str, spec: Value, checkout: &Path) -> Result<Value, String> {
    if !dep.starts_with("troupe") {
        return Ok(spec);
    }
    let wanted = format!("{CHECKOUT}crates/{dep}");
    let fix = format!(
        "troupe is not published: write `{dep} = {{ path = \"{wanted}\" }}` \
         (with the features it needs)"
    );
    let Value::Table(mut table) = spec else {
        return Err(format!("{at}: `{dep} = {spec}`: {fix}"));
    };
    if table.contains_key("git") || table.contains_key("version") {
        return Err(format!(
            "{at}: `{dep}` names a git source or a version: {fix}"
        ));
    }
    match table.get("path").and_then(Value::as_str) {
        Some(p) if p == wanted => {}
        other => return Err(format!("{at}: `{dep}` has path {other:?}: {fix}")),
    }
    let here = checkout.join("crates").join(dep);
    if !here.join("Cargo.toml").is_file() {
        return Err(format!("{at}: no crate `{dep}` in this checkout"));
    }
    table.insert("path".into(), Value::String(here.display().to_string()));
    Ok(Value::Table(table))
}

/// `crates/<crate>/examples/<name>.rs` wherever it appears in `text`, and
/// `-p <crate> ... --example <name>` on one line.
fn example_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        while let Some(i) = rest.find("crates/") {
            rest = &rest[i..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || "/_-.".contains(c)))
                .unwrap_or(rest.len());
            let candidate = rest[..end].trim_end_matches('.');
            if candidate.contains("/examples/") && candidate.ends_with(".rs") {
                out.push(candidate.to_string());
            }
            rest = &rest["crates/".len()..];
        }
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == '`')
            .collect();
        let after = |flag: &str| {
            words
                .iter()
                .position(|w| *w == flag)
                .and_then(|i| words.get(i + 1))
        };
        if let (Some(krate), Some(name)) = (after("-p"), after("--example")) {
            out.push(format!("crates/{krate}/examples/{name}.rs"));
        }
    }
    out
}

/// Merges `more` into `into`: dependencies named twice get the union of
/// their features; any other difference is the docs contradicting
/// themselves.
fn merge(into: &mut Table, more: &Table, at: &str) -> Result<(), String> {
    for (section, deps) in more {
        let into = into
            .entry(section.clone())
            .or_insert_with(|| Value::Table(Table::new()))
            .as_table_mut()
            .expect("a section is a table");
        for (dep, spec) in deps.as_table().expect("a section is a table") {
            let spec = as_table(spec);
            let Some(had) = into.get(dep).map(as_table) else {
                into.insert(dep.clone(), Value::Table(spec));
                continue;
            };
            let mut merged = had.clone();
            for (key, value) in &spec {
                match (key.as_str(), merged.get(key)) {
                    ("features", Some(Value::Array(old))) => {
                        let mut all: Vec<Value> = old.clone();
                        for f in value.as_array().into_iter().flatten() {
                            if !all.contains(f) {
                                all.push(f.clone());
                            }
                        }
                        merged.insert(key.clone(), Value::Array(all));
                    }
                    (_, Some(old)) if old == value => {}
                    (_, None) => {
                        merged.insert(key.clone(), value.clone());
                    }
                    (_, Some(old)) => {
                        return Err(format!(
                            "{at}: `{dep}` has {key} = {value} here and {old} above on the page"
                        ))
                    }
                }
            }
            into.insert(dep.clone(), Value::Table(merged));
        }
    }
    Ok(())
}

fn as_table(spec: &Value) -> Table {
    match spec {
        Value::String(version) => {
            let mut t = Table::new();
            t.insert("version".into(), Value::String(version.clone()));
            t
        }
        Value::Table(t) => t.clone(),
        other => panic!("a dependency given as {other}"),
    }
}

/// A Rust snippet as rustdoc compiles it: hidden lines shown, and wrapped
/// in a `main` when it has none.
fn as_program(code: &str) -> String {
    let mut attrs = String::from("#![allow(unused)]\n");
    let mut body = String::new();
    for line in code.lines() {
        let trimmed = line.trim();
        let line = if let Some(escaped) = trimmed.strip_prefix("##") {
            format!("#{escaped}")
        } else if let Some(hidden) = trimmed.strip_prefix("# ") {
            hidden.to_string()
        } else if trimmed == "#" {
            String::new()
        } else {
            line.to_string()
        };
        if line.trim_start().starts_with("#![") {
            attrs.push_str(&line);
            attrs.push('\n');
        } else {
            body.push_str(&line);
            body.push('\n');
        }
    }
    if body.contains("fn main(") {
        return attrs + &body;
    }
    let last = body.lines().rev().find(|l| !l.trim().is_empty());
    if last.is_some_and(|l| l.trim_start().starts_with("Ok::<")) {
        // rustdoc's form for a snippet that ends in `Ok::<(), E>(())`.
        return format!(
            "{attrs}fn main() {{ fn _inner() -> Result<(), impl core::fmt::Debug> {{\n{body}}} _inner().unwrap() }}\n"
        );
    }
    format!("{attrs}fn main() {{\n{body}}}\n")
}

/// Whether rustdoc compiles this fence as Rust.
fn is_rust(info: &[String]) -> bool {
    const ATTRS: &[&str] = &[
        "rust",
        "no_run",
        "should_panic",
        "edition2018",
        "edition2021",
        "edition2024",
    ];
    !info.iter().any(|w| w == "ignore" || w == "compile_fail")
        && info.iter().all(|w| ATTRS.contains(&w.as_str()))
}

/// A crate to build: its dependencies, and what came from where.
#[derive(Default)]
struct Copied {
    /// Binaries (`src/bin/<name>.rs`): the example files.
    bins: Vec<(String, String)>,
    /// Example targets (`examples/<name>.rs`, which see dev-dependencies,
    /// as a doctest does): the pages' snippets.
    examples: Vec<(String, String)>,
    /// Where its parts come from, for the failure message.
    from: Vec<String>,
}

/// `docs/guide/*.md`, in order.
fn guide_pages(checkout: &Path) -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(checkout.join("docs/guide"))
        .expect("docs/guide")
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/guide/{n}"))
        .collect();
    pages.sort();
    pages
}

/// The docs a user copies from, by what they hold.
fn plan(checkout: &Path) -> Result<BTreeMap<String, (Table, Copied)>, Vec<String>> {
    let mut files = vec!["README.md".to_string()];
    files.extend(guide_pages(checkout));

    let mut errors = Vec::new();
    let mut crates: BTreeMap<String, (Table, Copied)> = BTreeMap::new();
    let mut add = |deps: &Table,
                   from: String,
                   bin: Option<(String, String)>,
                   example: Option<(String, String)>| {
        let key = deps.to_string();
        let (_, copied) = crates
            .entry(key)
            .or_insert_with(|| (deps.clone(), Copied::default()));
        copied.from.push(from);
        copied.bins.extend(bin);
        copied.examples.extend(example);
    };

    let read =
        |f: &str| std::fs::read_to_string(checkout.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    // A wrong baseline is reported with the page's other blocks below;
    // nothing is compiled until every block is right.
    let baseline = fences(BASELINE_PAGE, &read(BASELINE_PAGE))
        .iter()
        .filter(|f| f.info.iter().any(|w| w == "toml"))
        .find_map(|f| dep_block(f, checkout).unwrap_or(None))
        .map_or_else(Table::new, |b| b.sections);

    let mut pointed: BTreeMap<String, String> = BTreeMap::new();
    let mut blocks_for: BTreeMap<String, Vec<DepBlock>> = BTreeMap::new();
    for file in &files {
        let text = read(file);
        for (i, line) in text.lines().enumerate() {
            for path in example_paths(line) {
                pointed.entry(path).or_insert(format!("{file}:{}", i + 1));
            }
        }
        // What the page has told the user to depend on so far.
        let mut so_far = baseline.clone();
        for fence in fences(file, &text) {
            let at = format!("{file}:{}", fence.line);
            if fence.info.iter().any(|w| w == "toml") {
                match dep_block(&fence, checkout) {
                    Err(e) => errors.push(e),
                    Ok(None) => {}
                    Ok(Some(block)) => {
                        if let Err(e) = merge(&mut so_far, &block.sections, &at) {
                            errors.push(e);
                        }
                        add(
                            &block.sections,
                            format!("{at} (the block alone)"),
                            None,
                            None,
                        );
                        for example in &block.for_examples {
                            blocks_for
                                .entry(example.clone())
                                .or_default()
                                .push(DepBlock {
                                    at: block.at.clone(),
                                    sections: block.sections.clone(),
                                    for_examples: Vec::new(),
                                });
                        }
                    }
                }
            } else if is_rust(&fence.info) {
                let name: String = format!("{}_{}", file.trim_end_matches(".md"), fence.line)
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect();
                let program = format!("// {at}\n{}", as_program(&fence.text));
                add(
                    &so_far,
                    format!("{at} (a snippet)"),
                    None,
                    Some((name, program)),
                );
            }
        }
    }
    for (example, at) in &pointed {
        let source = match std::fs::read_to_string(checkout.join(example)) {
            Ok(source) => source,
            Err(e) => {
                errors.push(format!("{at} points to {example}: {e}"));
                continue;
            }
        };
        let Some(blocks) = blocks_for.get(example) else {
            errors.push(format!(
                "{at} points to {example}, and no dependency block says what it needs: \
                 add a ```toml block whose first line is `# {example}`"
            ));
            continue;
        };
        let name = Path::new(example)
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .to_string();
        for block in blocks {
            let from = format!("{example} with the block at {}", block.at);
            add(
                &block.sections,
                from,
                Some((name.clone(), source.clone())),
                None,
            );
        }
    }
    if errors.is_empty() {
        Ok(crates)
    } else {
        Err(errors)
    }
}

/// The registry packages of a lock file, as `name version`.
fn locked(lock: &str) -> BTreeSet<String> {
    let lock: Table = lock.parse().expect("a lock file parses");
    lock.get("package")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| {
            p.get("source")
                .and_then(Value::as_str)
                .is_some_and(|s| s.starts_with("registry+"))
        })
        .map(|p| {
            format!(
                "{} {}",
                p["name"].as_str().unwrap(),
                p["version"].as_str().unwrap()
            )
        })
        .collect()
}

/// Writes one copied crate under `dir` and checks it; `Err` holds what a
/// user would have seen.
fn check(
    dir: &Path,
    n: usize,
    deps: &Table,
    copied: &Copied,
    checkout: &Path,
    target: &Path,
) -> Result<(), String> {
    let mut manifest = format!(
        "[package]\nname = \"copied-{n}\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n\
         # Its own workspace, as a user's crate is.\n[workspace]\n\n"
    );
    manifest.push_str(&deps.to_string());
    std::fs::create_dir_all(dir.join("src/bin")).unwrap();
    std::fs::create_dir_all(dir.join("examples")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), &manifest).unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    for (name, source) in &copied.bins {
        std::fs::write(dir.join(format!("src/bin/{name}.rs")), source).unwrap();
    }
    for (name, source) in &copied.examples {
        std::fs::write(dir.join(format!("examples/{name}.rs")), source).unwrap();
    }
    let workspace_lock = std::fs::read_to_string(checkout.join("Cargo.lock")).unwrap();
    std::fs::write(dir.join("Cargo.lock"), &workspace_lock).unwrap();

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "check",
            "--offline",
            "--quiet",
            "--keep-going",
            "--bins",
            "--examples",
            "--message-format",
            "short",
        ])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .output()
        .expect("cargo runs");
    let from = copied.from.join("\n    ");
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let errors: Vec<&str> = stderr.lines().filter(|l| !l.contains("warning")).collect();
        return Err(format!(
            "a crate made of\n    {from}\nwith\n{manifest}\ndoes not build:\n{}",
            errors.join("\n")
        ));
    }
    let resolved = std::fs::read_to_string(dir.join("Cargo.lock")).unwrap();
    let new: Vec<String> = locked(&resolved)
        .difference(&locked(&workspace_lock))
        .cloned()
        .collect();
    if !new.is_empty() {
        return Err(format!(
            "a crate made of\n    {from}\nresolved packages the workspace's Cargo.lock does not hold: {new:?}"
        ));
    }
    Ok(())
}

#[test]
fn every_dependency_block_and_example_in_the_docs_builds_in_a_new_crate_outside_the_workspace() {
    let checkout = root();
    let crates = plan(&checkout).unwrap_or_else(|errors| panic!("\n{}\n", errors.join("\n")));
    // Every Rust fence of the docs is in some crate (a parser that found
    // nothing would otherwise pass).
    let fenced: usize = ["README.md".to_string()]
        .into_iter()
        .chain(guide_pages(&checkout))
        .map(|f| {
            let text = std::fs::read_to_string(checkout.join(&f)).unwrap();
            text.matches("\n```rust").count()
        })
        .sum();
    let planned: usize = crates.values().map(|(_, c)| c.examples.len()).sum();
    assert_eq!(
        planned, fenced,
        "every ```rust snippet of the docs is compiled"
    );
    // `<target>/tmp`'s parent: the target directory this test was built in.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the temporary directory is inside the target directory")
        .to_path_buf();
    let dir = tempfile::tempdir().unwrap();
    let mut failures = String::new();
    for (n, (deps, copied)) in crates.values().enumerate() {
        let here = dir.path().join(format!("copied-{n}"));
        let started = std::time::Instant::now();
        let result = check(&here, n, deps, copied, &checkout, &target);
        eprintln!(
            "copied-{n}: {} bins, {} snippets, {:.1?}: {}",
            copied.bins.len(),
            copied.examples.len(),
            started.elapsed(),
            copied.from.first().unwrap()
        );
        if let Err(e) = result {
            let _ = writeln!(failures, "\n{e}");
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

#[test]
fn the_docs_install_the_pinned_nats_server() {
    let checkout = root();
    let script = std::fs::read_to_string(checkout.join("scripts/nats-server.sh")).unwrap();
    let pinned = script
        .lines()
        .find_map(|l| l.strip_prefix("VERSION=\""))
        .and_then(|v| v.strip_suffix('"'))
        .expect("the script's VERSION line");
    let mut named = 0;
    for file in ["README.md".to_string()]
        .into_iter()
        .chain(guide_pages(&checkout))
    {
        let text = std::fs::read_to_string(checkout.join(&file)).unwrap();
        for at in text
            .match_indices("nats-server/v2@v")
            .map(|(i, m)| i + m.len())
        {
            let version: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            assert_eq!(
                version, pinned,
                "{file}: `go install` of another version than the script's"
            );
            named += 1;
        }
    }
    assert!(
        named > 0,
        "the remote page says how to install the pinned server"
    );
}

#[test]
fn the_examples_a_line_points_to_are_found() {
    assert_eq!(
        example_paths("`crates/troupe-cluster/examples/cluster_accounts.rs` is this whole."),
        ["crates/troupe-cluster/examples/cluster_accounts.rs"]
    );
    assert_eq!(
        example_paths("cargo run -p troupe --features tokio --example fetch_async"),
        ["crates/troupe/examples/fetch_async.rs"]
    );
    assert!(example_paths("crates/troupe-cluster/tests/persistent_singleton.rs").is_empty());
}

#[test]
fn a_snippet_is_compiled_as_rustdoc_would() {
    let program =
        as_program("# use std::time::Duration;\nlet d = Duration::from_secs(1);\n## not hidden\n");
    assert_eq!(
        program,
        "#![allow(unused)]\nfn main() {\nuse std::time::Duration;\nlet d = Duration::from_secs(1);\n# not hidden\n}\n"
    );
    assert!(as_program("fn main() {}\n").ends_with("fn main() {}\n"));
}
