//! Which rows may be compared, and the ratios between them.
//!
//! The rule: a ratio pairs two rows of the same experiment and the same
//! workload (the experiment's key parameters: clients, log mode, pairs, ...)
//! that ran on the same number of threads, and its label says how many. A
//! row that does not record its thread count, or a failed row, is never
//! paired; the reason is reported instead of a ratio, so a comparison of one
//! worker against two (or of a failed run) cannot slip into a headline.
//!
//! A row's thread count is `params.threads`, else `params.workers`, else
//! `params.dispatcher_threads` (the first that is a positive integer): the
//! threads that run its workload, whatever the runtime calls them.

use serde_json::Value;

use crate::report::Row;

/// The runtime of a row: `troupe`, `baseline`, or a peer's (`pekko`,
/// `kameo`, `ractor`, `actix`) (`params.runtime`; rows saved before it was
/// recorded are troupe's).
pub fn runtime(row: &Row) -> &str {
    row.params
        .get("runtime")
        .and_then(Value::as_str)
        .unwrap_or("troupe")
}

/// Whether `runtime` is a peer's: Apache Pekko or one of the Rust libraries.
pub fn is_peer(runtime: &str) -> bool {
    runtime == "pekko" || crate::rust_peers::is_rust_peer(runtime)
}

/// A peer's name in sentences: "Pekko", "kameo", ...
pub fn peer_name(runtime: &str) -> &str {
    if runtime == "pekko" {
        "Pekko"
    } else {
        runtime
    }
}

/// The threads that ran the row's workload, when the row records them.
pub fn threads(row: &Row) -> Option<u64> {
    ["threads", "workers", "dispatcher_threads"]
        .iter()
        .find_map(|k| {
            row.params
                .get(*k)
                .and_then(Value::as_u64)
                .filter(|&n| n > 0)
        })
}

/// "1 thread" / "2 threads".
pub fn threads_text(n: u64) -> String {
    if n == 1 {
        "1 thread".into()
    } else {
        format!("{n} threads")
    }
}

/// Two comparable rows.
#[derive(Clone, Debug)]
pub struct Pair<'a> {
    /// troupe's row.
    pub troupe: &'a Row,
    /// The row it is compared with (a baseline or a peer).
    pub other: &'a Row,
    /// The thread count both ran on.
    pub threads: u64,
    /// The workload keys troupe's row records, "clients 10, txlog off", so
    /// that two pairs of the same variants on different workloads differ in
    /// their labels.
    pub workload: String,
}

impl Pair<'_> {
    /// The other row's time per message over troupe's: above 1, troupe is
    /// faster.
    pub fn ratio(&self) -> f64 {
        self.other.ns_per_msg / self.troupe.ns_per_msg
    }

    /// "actor-tp5-w1 vs tokio-mpsc-ct, 1 thread each", with the workload
    /// in brackets when the experiment has keys: "one-way/off vs
    /// pekko-one-way/off (clients 10, txlog off), 2 threads each".
    pub fn label(&self) -> String {
        let workload = if self.workload.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.workload)
        };
        format!(
            "{} vs {}{workload}, {} each",
            self.troupe.variant,
            self.other.variant,
            threads_text(self.threads)
        )
    }
}

/// The values `row` records for `keys`, "clients 10, txlog off".
fn workload(row: &Row, keys: &[&str]) -> String {
    keys.iter()
        .filter_map(|k| {
            let v = row.params.get(*k)?;
            let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            Some(format!("{k} {text}"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether two rows ran the same workload: equal values for every key
/// parameter. `strict`: a key one row has and the other lacks makes them
/// different; otherwise (a peer row naming its troupe row, which records
/// fewer parameters) only the keys both have are compared.
pub fn same_workload(a: &Row, b: &Row, keys: &[&str], strict: bool) -> bool {
    a.experiment == b.experiment
        && keys
            .iter()
            .all(|k| match (a.params.get(*k), b.params.get(*k)) {
                (Some(x), Some(y)) => x == y,
                (None, None) => true,
                _ => !strict,
            })
}

/// Why two rows cannot be paired, or `None` when they can: the same
/// experiment and workload, both valid, the same recorded thread count.
pub fn mismatch(a: &Row, b: &Row, keys: &[&str], strict: bool) -> Option<String> {
    if !same_workload(a, b, keys, strict) {
        return Some("different workloads".into());
    }
    for r in [a, b] {
        if r.failure.is_some() {
            return Some(format!("{} failed", r.variant));
        }
    }
    match (threads(a), threads(b)) {
        (Some(x), Some(y)) if x == y => None,
        (Some(x), Some(y)) => Some(format!(
            "{} ran on {}, {} on {}",
            a.variant,
            threads_text(x),
            b.variant,
            threads_text(y)
        )),
        (None, _) => Some(format!("{} does not record its threads", a.variant)),
        (_, None) => Some(format!("{} does not record its threads", b.variant)),
    }
}

/// For every peer row (Pekko's, a Rust library's), the troupe row it names
/// (`params.peer_of`, same workload key): the pair, or a line saying why
/// there is none.
pub fn peer_pairs<'a>(rows: &'a [Row], keys: &[&str]) -> Vec<Result<Pair<'a>, String>> {
    let mut out = Vec::new();
    for peer in rows.iter().filter(|r| is_peer(runtime(r))) {
        let Some(of) = peer.params.get("peer_of").and_then(Value::as_str) else {
            continue;
        };
        let troupe = rows.iter().find(|r| {
            r.experiment == peer.experiment
                && r.variant == of
                && runtime(r) == "troupe"
                && same_workload(r, peer, keys, false)
        });
        out.push(match troupe {
            None => Err(format!("{}: no troupe row {of} ran", peer.variant)),
            Some(t) => match mismatch(t, peer, keys, false) {
                Some(why) => Err(format!(
                    "{} vs {}: not paired: {why}",
                    t.variant, peer.variant
                )),
                None => Ok(Pair {
                    troupe: t,
                    other: peer,
                    threads: threads(t).unwrap_or_default(),
                    workload: workload(t, keys),
                }),
            },
        });
    }
    out
}

/// For every baseline row, troupe's fastest valid row of the same workload
/// on the same number of threads (none when troupe has no such row).
pub fn baseline_pairs<'a>(rows: &'a [Row], keys: &[&str]) -> Vec<Pair<'a>> {
    let mut out = Vec::new();
    for base in rows.iter().filter(|r| runtime(r) == "baseline") {
        let best = rows
            .iter()
            .filter(|r| runtime(r) == "troupe" && mismatch(r, base, keys, true).is_none())
            .min_by(|a, b| a.ns_per_msg.total_cmp(&b.ns_per_msg));
        if let Some(t) = best {
            out.push(Pair {
                troupe: t,
                other: base,
                threads: threads(t).unwrap_or_default(),
                workload: workload(t, keys),
            });
        }
    }
    out
}

/// The lines printed under a table: troupe against each baseline and each
/// peer row it may be compared with, and the peer rows it may not.
pub fn ratio_lines(rows: &[Row], keys: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for pair in baseline_pairs(rows, keys) {
        out.push(format!(
            "{}: troupe {}x the baseline's speed",
            pair.label(),
            ratio_text(pair.ratio())
        ));
    }
    for pair in peer_pairs(rows, keys) {
        out.push(match pair {
            Ok(pair) => format!(
                "{}: troupe {}x {}'s speed",
                pair.label(),
                ratio_text(pair.ratio()),
                peer_name(runtime(pair.other))
            ),
            Err(why) => why,
        });
    }
    out
}

/// A ratio with two decimals and the `x`-less number (callers add the unit).
pub fn ratio_text(r: f64) -> String {
    format!("{r:.2}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::row;

    fn with(mut r: Row, params: &[(&str, Value)]) -> Row {
        for (k, v) in params {
            r.params.insert(k.to_string(), v.clone());
        }
        r
    }

    #[test]
    fn baselines_pair_only_with_troupe_rows_on_as_many_threads() {
        let rows = vec![
            with(
                row("pingpong", "tokio-mpsc-mt-w2", &[500.0]),
                &[("runtime", "baseline".into()), ("workers", 2.into())],
            ),
            with(
                row("pingpong", "tokio-mpsc-ct", &[400.0]),
                &[("runtime", "baseline".into()), ("workers", 1.into())],
            ),
            with(
                row("pingpong", "actor-tp5-w1", &[100.0]),
                &[("runtime", "troupe".into()), ("workers", 1.into())],
            ),
            with(
                row("pingpong", "actor-tp5-w2", &[125.0]),
                &[("runtime", "troupe".into()), ("workers", 2.into())],
            ),
        ];
        let pairs = baseline_pairs(&rows, &[]);
        let found: Vec<(&str, &str, u64)> = pairs
            .iter()
            .map(|p| {
                (
                    p.troupe.variant.as_str(),
                    p.other.variant.as_str(),
                    p.threads,
                )
            })
            .collect();
        // The faster one-worker row is not paired with the two-worker tokio.
        assert_eq!(
            found,
            [
                ("actor-tp5-w2", "tokio-mpsc-mt-w2", 2),
                ("actor-tp5-w1", "tokio-mpsc-ct", 1)
            ]
        );
        assert_eq!(pairs[0].ratio(), 4.0);
        assert_eq!(
            pairs[1].label(),
            "actor-tp5-w1 vs tokio-mpsc-ct, 1 thread each"
        );
    }

    #[test]
    fn pairs_of_the_same_variants_on_other_workloads_have_other_labels() {
        let row_at = |variant: &str, runtime: &str, clients: u64| {
            with(
                row("trading", variant, &[100.0]),
                &[
                    ("runtime", runtime.into()),
                    ("threads", 2.into()),
                    ("clients", clients.into()),
                    ("txlog", "off".into()),
                    ("peer_of", "one-way/off".into()),
                ],
            )
        };
        let rows = vec![
            row_at("one-way/off", "troupe", 1),
            row_at("one-way/off", "troupe", 10),
            row_at("pekko-one-way/off", "pekko", 1),
            row_at("pekko-one-way/off", "pekko", 10),
        ];
        let labels: Vec<String> = peer_pairs(&rows, &["clients", "txlog"])
            .into_iter()
            .map(|p| p.expect("paired").label())
            .collect();
        assert_eq!(
            labels,
            [
                "one-way/off vs pekko-one-way/off (clients 1, txlog off), 2 threads each",
                "one-way/off vs pekko-one-way/off (clients 10, txlog off), 2 threads each",
            ]
        );
    }

    #[test]
    fn a_peer_row_on_other_threads_or_without_them_is_not_paired() {
        let troupe = with(
            row("chameneos", "actor-3", &[100.0]),
            &[("runtime", "troupe".into()), ("workers", 1.into())],
        );
        let peer = |threads: Option<u64>| {
            let mut r = with(
                row("chameneos", "pekko-3", &[300.0]),
                &[("runtime", "pekko".into()), ("peer_of", "actor-3".into())],
            );
            if let Some(t) = threads {
                r.params.insert("threads".into(), t.into());
            }
            r
        };
        let rows = vec![troupe.clone(), peer(Some(2))];
        let pairs = peer_pairs(&rows, &[]);
        assert!(
            matches!(&pairs[..], [Err(why)] if why.contains("1 thread, pekko-3 on 2 threads")),
            "{pairs:?}"
        );
        let rows = vec![troupe.clone(), peer(None)];
        assert!(
            matches!(&peer_pairs(&rows, &[])[..], [Err(why)] if why.contains("does not record"))
        );
        let rows = vec![troupe, peer(Some(1))];
        let pairs = peer_pairs(&rows, &[]);
        let [Ok(pair)] = &pairs[..] else {
            panic!("{pairs:?}")
        };
        assert_eq!((pair.threads, pair.ratio()), (1, 3.0));
    }

    #[test]
    fn failed_rows_and_other_workloads_are_never_paired() {
        let key = ["clients"];
        let a = with(
            row("trading", "one-way/off", &[100.0]),
            &[("threads", 2.into()), ("clients", 10.into())],
        );
        let mut b = with(
            row("trading", "sync/off", &[50.0]),
            &[
                ("threads", 2.into()),
                ("clients", 10.into()),
                ("runtime", "baseline".into()),
            ],
        );
        assert_eq!(mismatch(&a, &b, &key, true), None);
        b.params.insert("clients".into(), 40.into());
        assert_eq!(
            mismatch(&a, &b, &key, true).as_deref(),
            Some("different workloads")
        );
        b.params.insert("clients".into(), 10.into());
        b.failure = Some("not verified".into());
        assert_eq!(
            mismatch(&a, &b, &key, true).as_deref(),
            Some("sync/off failed")
        );
        // A key only one row has: different under the strict rule only.
        b.failure = None;
        b.params.insert("pairs".into(), 1000.into());
        assert!(!same_workload(&a, &b, &["pairs"], true));
        assert!(same_workload(&a, &b, &["pairs"], false));
    }
}
