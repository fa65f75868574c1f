//! Cluster singletons across real OS processes (`troupe-singleton-node`,
//! heartbeat 100 ms, declared down after 1 s), on a nats-server of the
//! test's own:
//!
//! * the holder is killed (SIGKILL): another node takes the lease over with
//!   a larger fencing token and starts the instance; the time from the kill
//!   to the new instance is printed (a figure, not a timed assertion);
//! * the holder is paused (SIGSTOP) past the heartbeat timeout: another
//!   node takes over; resumed (SIGCONT), the old holder sees the lease
//!   moved, stops its instance and follows the new holder, whose instance
//!   goes on running.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use troupe_remote::testing::NatsServer;

mod processes;

use processes::{signal, Lines, NodeProcess};

fn spawn(url: &str, name: &str, lines: &mpsc::Sender<(String, String)>) -> NodeProcess {
    processes::spawn(
        env!("CARGO_BIN_EXE_troupe-singleton-node"),
        url,
        name,
        lines,
    )
}

/// The views the nodes printed last, and the instances they run.
#[derive(Default)]
struct Views {
    status: std::collections::BTreeMap<String, String>,
    running: std::collections::BTreeMap<String, Vec<u64>>,
}

impl Views {
    fn note(&mut self, (node, line): (String, String)) {
        if let Some(status) = line.strip_prefix("status ") {
            self.status.insert(node, status.to_string());
        } else if let Some(token) = line.strip_prefix("instance started ") {
            self.running
                .entry(node)
                .or_default()
                .push(token.parse().unwrap());
        } else if let Some(token) = line.strip_prefix("instance stopped ") {
            let token: u64 = token.parse().unwrap();
            self.running
                .entry(node)
                .or_default()
                .retain(|t| *t != token);
        }
    }

    /// Reads lines until `done` holds (up to 30 s after the call).
    fn until(&mut self, lines: &Lines, what: &str, done: impl Fn(&Views) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done(self) {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) => self.note(line),
                Err(_) => panic!(
                    "{what}: not within 30 s; last views {:?}, running {:?}",
                    self.status, self.running
                ),
            }
        }
    }

    /// The one node holding, if exactly one holds and the others follow it.
    fn settled(&self, nodes: &[&str]) -> Option<(String, u64)> {
        let holders: Vec<(&String, u64)> = self
            .status
            .iter()
            .filter(|(n, _)| nodes.contains(&n.as_str()))
            .filter_map(|(n, s)| Some((n, s.strip_prefix("holding ")?.parse().ok()?)))
            .collect();
        let [(holder, token)] = holders[..] else {
            return None;
        };
        let follow = format!("following {holder}");
        let all_follow = nodes
            .iter()
            .all(|n| *n == holder || self.status.get(*n) == Some(&follow));
        let runs = self.running.get(holder).is_some_and(|r| r == &[token]);
        (all_follow && runs).then(|| (holder.clone(), token))
    }
}

fn finish(mut processes: Vec<NodeProcess>) {
    for p in &mut processes {
        drop(p.child.stdin.take());
    }
    for mut p in processes {
        let status = p.child.wait().unwrap();
        assert!(status.success(), "{} exited with {status}", p.name);
    }
}

#[test]
fn a_killed_holder_is_replaced_by_a_follower_with_a_larger_token() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let (tx, lines) = mpsc::channel();
    let names = ["proc-1", "proc-2", "proc-3"];
    let mut processes: Vec<NodeProcess> =
        names.iter().map(|n| spawn(&server.url(), n, &tx)).collect();
    let mut views = Views::default();
    views.until(&lines, "one holder", |v| v.settled(&names).is_some());
    let (holder, token) = views.settled(&names).unwrap();

    let at = processes.iter().position(|p| p.name == holder).unwrap();
    let mut killed = processes.remove(at);
    signal(&killed, "-KILL");
    let _ = killed.child.wait();
    let killed_at = Instant::now();
    let rest: Vec<&str> = names.iter().copied().filter(|n| *n != holder).collect();
    views.until(&lines, "a new holder", |v| {
        v.settled(&rest).is_some_and(|(_, t)| t > token)
    });
    let (successor, new_token) = views.settled(&rest).unwrap();
    println!(
        "holder {holder} (token {token}) killed; {successor} runs the instance \
         with token {new_token} after {:?} (heartbeat timeout 1 s)",
        killed_at.elapsed()
    );
    finish(processes);
}

#[test]
fn a_paused_holder_stops_its_instance_when_it_resumes_and_follows_the_new_one() {
    let server = NatsServer::start().unwrap_or_else(|e| panic!("{e}"));
    let (tx, lines) = mpsc::channel();
    let names = ["paused-1", "paused-2", "paused-3"];
    let processes: Vec<NodeProcess> = names.iter().map(|n| spawn(&server.url(), n, &tx)).collect();
    let mut views = Views::default();
    views.until(&lines, "one holder", |v| v.settled(&names).is_some());
    let (holder, token) = views.settled(&names).unwrap();
    let paused = processes.iter().find(|p| p.name == holder).unwrap();

    signal(paused, "-STOP");
    let rest: Vec<&str> = names.iter().copied().filter(|n| *n != holder).collect();
    views.until(&lines, "a holder while the old one is paused", |v| {
        v.settled(&rest).is_some_and(|(_, t)| t > token)
    });
    let (successor, new_token) = views.settled(&rest).unwrap();

    signal(paused, "-CONT");
    views.until(
        &lines,
        "the resumed node stops its instance and follows",
        |v| v.settled(&names) == Some((successor.clone(), new_token)),
    );
    assert!(
        views.running.get(&holder).is_none_or(Vec::is_empty),
        "the resumed node still runs {:?}",
        views.running.get(&holder)
    );
    finish(processes);
}
