//! Network namespaces for a partition test: each engine node runs in a
//! namespace of its own, joined to the machine by a veth pair whose host
//! end is on a bridge that carries the NATS server's address. Cutting a
//! node off the cluster is taking its veth's host end down (no packet in
//! either direction, no reset: the node's connection just goes silent, as
//! behind a failed switch); healing is bringing it up again.
//!
//! Everything is made with `ip` (iproute2) and needs root (or
//! CAP_NET_ADMIN and CAP_SYS_ADMIN). Traffic stays on this machine: the
//! bridge has a private address and no route anywhere. Names carry the
//! launcher's process id, and dropping the [`Sandbox`] deletes every
//! namespace, link and the bridge it made (also after a failed start).

use std::net::Ipv4Addr;
use std::process::Command;

/// The namespaces, veth pairs and bridge of one run.
pub struct Sandbox {
    tag: u32,
    subnet: u8,
    made: Vec<Made>,
    namespaces: usize,
}

/// Something made, undone in reverse order on drop.
enum Made {
    Bridge(String),
    Namespace(String),
    Veth(String),
}

/// Runs `ip` with `args`; the error names the command and what it said.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip` (iproute2): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Sandbox {
    /// Makes `namespaces` namespaces on one bridge. Fails with what `ip`
    /// said (not root, no iproute2, no namespace support), having undone
    /// whatever it made.
    pub fn create(namespaces: usize) -> Result<Sandbox, String> {
        let tag = std::process::id() % 100_000;
        let mut sandbox = Sandbox {
            tag,
            // 10.77.<1..=250>.0/24: private, and apart for runs at once.
            subnet: (tag % 250 + 1) as u8,
            made: Vec::new(),
            namespaces,
        };
        sandbox.build().map_err(|e| {
            format!("cannot make the partition test's network namespaces (needs root): {e}")
        })?;
        Ok(sandbox)
    }

    fn build(&mut self) -> Result<(), String> {
        let bridge = self.bridge();
        ip(&["link", "add", &bridge, "type", "bridge"])?;
        self.made.push(Made::Bridge(bridge.clone()));
        let host = format!("{}/24", self.host());
        ip(&["addr", "add", &host, "dev", &bridge])?;
        ip(&["link", "set", &bridge, "up"])?;
        for i in 0..self.namespaces {
            let ns = self.namespace(i);
            let (outer, inner) = (self.outer(i), format!("trpi{}x{i}", self.tag));
            ip(&["netns", "add", &ns])?;
            self.made.push(Made::Namespace(ns.clone()));
            ip(&[
                "link", "add", &outer, "type", "veth", "peer", "name", &inner,
            ])?;
            self.made.push(Made::Veth(outer.clone()));
            ip(&["link", "set", &inner, "netns", &ns])?;
            ip(&["link", "set", &outer, "master", &bridge])?;
            ip(&["link", "set", &outer, "up"])?;
            let address = format!("10.77.{}.{}/24", self.subnet, i + 2);
            let inside = |args: &[&str]| {
                let mut all = vec!["netns", "exec", &ns, "ip"];
                all.extend_from_slice(args);
                ip(&all)
            };
            inside(&["addr", "add", &address, "dev", &inner])?;
            inside(&["link", "set", &inner, "up"])?;
            inside(&["link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    fn bridge(&self) -> String {
        format!("trpbr{}", self.tag)
    }

    /// The host end of namespace `i`'s veth pair.
    fn outer(&self, i: usize) -> String {
        format!("trpo{}x{i}", self.tag)
    }

    /// Namespace `i`'s name.
    pub fn namespace(&self, i: usize) -> String {
        format!("troupe-{}-{i}", self.tag)
    }

    /// The bridge's address: where a server must listen to be reached
    /// from the namespaces (and from this one).
    pub fn host(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, 77, self.subnet, 1)
    }

    /// The program and arguments that run a command in namespace `i`
    /// (`ip netns exec` replaces itself with the command, so the pid is
    /// the command's and signals reach it).
    pub fn exec_prefix(&self, i: usize) -> (String, Vec<String>) {
        (
            "ip".into(),
            vec!["netns".into(), "exec".into(), self.namespace(i)],
        )
    }

    /// Cuts namespace `i` off: its veth's host end goes down.
    pub fn cut(&self, i: usize) -> Result<(), String> {
        ip(&["link", "set", &self.outer(i), "down"])
    }

    /// Joins namespace `i` again.
    pub fn heal(&self, i: usize) -> Result<(), String> {
        ip(&["link", "set", &self.outer(i), "up"])
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // Deleting a veth end deletes its peer; deleting a namespace
        // deletes what is left in it.
        for made in self.made.drain(..).rev() {
            let _ = match made {
                Made::Veth(link) | Made::Bridge(link) => ip(&["link", "del", &link]),
                Made::Namespace(ns) => ip(&["netns", "del", &ns]),
            };
        }
    }
}
