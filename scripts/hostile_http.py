#!/usr/bin/env python3
"""Hostile input against the primes service, with a health probe throughout.

Starts `primes serve` (actor-backed by default), then, one attack at a time:
malformed request lines, huge headers, invalid UTF-8 in the path, slow
clients trickling bytes, thousands of idle connections, pipelined requests.
All the while a probe sends a well-formed `GET /primes/20` every 50 ms on a
fresh connection and checks the answer, and the server's resident memory is
sampled every 200 ms. Prints what each attack got back, the probe's record
and the memory curve; exits 1 if a well-formed request ever failed, a
pipelined batch came back wrong, or the server died.

    scripts/hostile_http.py [--server actor|plain|blocking] [--idle 10000]
"""

import argparse
import json
import os
import re
import resource
import socket
import subprocess
import sys
import threading
import time

EXPECTED_20 = b"[2,3,5,7,11,13,17,19,23,29,31,37,41,43,47,53,59,61,67,71]"


def start_server(binary, kind):
    proc = subprocess.Popen(
        [binary, "serve", "--addr", "127.0.0.1:0", "--server", kind],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    line = proc.stderr.readline().decode()
    match = re.search(r"http://([\d.]+):(\d+)", line)
    if not match:
        proc.kill()
        sys.exit(f"hostile: the server did not say where it listens: {line!r}")
    # Keep draining stderr so the server never blocks on a full pipe.
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    return proc, (match.group(1), int(match.group(2)))


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def read_response(sock, timeout=5.0):
    """Reads one response (headers + Content-Length body); None on close."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None, data
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return (head, rest[:length]), rest[length:]


def status_of(head):
    return int(head.split(b" ", 2)[1])


class Probe(threading.Thread):
    """A well-formed request every 50 ms; counts failures and keeps latencies."""

    def __init__(self, addr):
        super().__init__(daemon=True)
        self.addr = addr
        self.stop = threading.Event()
        self.ok = 0
        self.failures = []
        self.latencies = []

    def run(self):
        while not self.stop.is_set():
            start = time.monotonic()
            try:
                with socket.create_connection(self.addr, timeout=5) as s:
                    s.sendall(b"GET /primes/20 HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n")
                    resp, _ = read_response(s)
                    if resp is None or status_of(resp[0]) != 200 or resp[1] != EXPECTED_20:
                        self.failures.append(f"bad answer: {resp!r:.120}")
                    else:
                        self.ok += 1
                        self.latencies.append(time.monotonic() - start)
            except OSError as e:
                self.failures.append(f"{type(e).__name__}: {e}")
            self.stop.wait(0.05)


def one_shot(addr, raw, timeout=5.0):
    """Sends raw bytes, returns the status line or what happened."""
    try:
        with socket.create_connection(addr, timeout=timeout) as s:
            s.sendall(raw)
            resp, _ = read_response(s, timeout)
            if resp is None:
                return "connection closed, no response"
            return resp[0].split(b"\r\n")[0].decode(errors="replace")
    except OSError as e:
        return f"{type(e).__name__}: {e}"


def attack_malformed(addr, report):
    cases = {
        "garbage line": b"GARBAGE\r\n\r\n",
        "method only": b"GET\r\n\r\n",
        "unknown version": b"GET /primes/20 HTTP/9.9\r\nHost: x\r\n\r\n",
        "binary noise": bytes(range(256)) + b"\r\n\r\n",
        "8 KiB method": b"G" * 8192 + b" / HTTP/1.1\r\n\r\n",
        "no host, HTTP/1.0": b"GET /primes/20 HTTP/1.0\r\n\r\n",
        "negative n": b"GET /primes/-1 HTTP/1.1\r\nHost: x\r\n\r\n",
        "huge n": b"GET /primes/99999999999999999999999 HTTP/1.1\r\nHost: x\r\n\r\n",
        "overlong path": b"GET /primes/" + b"1" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        "POST": b"POST /primes/20 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        "unknown path": b"GET /etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
        "invalid UTF-8 in path": b"GET /primes/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n",
        "percent-encoded junk": b"GET /primes/%ff%00 HTTP/1.1\r\nHost: x\r\n\r\n",
        "bad content-length": b"GET /primes/20 HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
    }
    for name, raw in cases.items():
        report.append((name, one_shot(addr, raw)))


def attack_huge_headers(addr, report):
    big = b"X-Big: " + b"a" * (1 << 20) + b"\r\n"
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(10000))
    report.append(("1 MiB header", one_shot(addr, b"GET /primes/20 HTTP/1.1\r\nHost: x\r\n" + big + b"\r\n")))
    report.append(("10,000 headers", one_shot(addr, b"GET /primes/20 HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")))


def attack_slow_clients(addr, report, clients=200, seconds=5.0):
    request = b"GET /primes/20 HTTP/1.1\r\nHost: slow\r\nConnection: close\r\n\r\n"
    socks = []
    for _ in range(clients):
        try:
            socks.append(socket.create_connection(addr, timeout=5))
        except OSError:
            break
    step = seconds / len(request)
    for i in range(len(request)):
        for s in socks:
            try:
                s.send(request[i : i + 1])
            except OSError:
                pass
        time.sleep(step)
    answered = 0
    for s in socks:
        try:
            resp, _ = read_response(s)
            answered += resp is not None and status_of(resp[0]) == 200
        except OSError:
            pass
        s.close()
    report.append((f"{len(socks)} clients trickling a byte every {step * 1000:.0f} ms", f"{answered} answered 200"))


def attack_idle(addr, report, count, seconds=5.0):
    socks = []
    errors = 0
    for _ in range(count):
        try:
            socks.append(socket.create_connection(addr, timeout=5))
        except OSError:
            errors += 1
    time.sleep(seconds)
    alive = 0
    for s in socks:
        try:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: idle\r\nConnection: close\r\n\r\n")
            resp, _ = read_response(s, 10)
            alive += resp is not None and status_of(resp[0]) == 200
        except OSError:
            pass
        s.close()
    report.append((f"{count} idle connections for {seconds:.0f} s", f"{len(socks)} opened, {errors} refused, {alive} still served afterwards"))


def attack_pipelined(addr, report, n=100):
    paths = [f"/primes/{1 + i % 50}" for i in range(n)]
    raw = b"".join(f"GET {p} HTTP/1.1\r\nHost: pipe\r\n\r\n".encode() for p in paths)
    good = 0
    with socket.create_connection(addr, timeout=10) as s:
        s.sendall(raw)
        pending = b""
        for i in range(n):
            s.settimeout(10)
            data = pending
            while b"\r\n\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1)) if head else 0
            while len(rest) < length:
                chunk = s.recv(65536)
                if not chunk:
                    break
                rest += chunk
            body, pending = rest[:length], rest[length:]
            want = 1 + i % 50
            try:
                good += head.startswith(b"HTTP/1.1 200") and len(json.loads(body)) == want
            except ValueError:
                pass
    report.append((f"{n} pipelined requests on one connection", f"{good} answered in order"))
    return good == n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", default="actor", choices=["actor", "plain", "blocking"])
    ap.add_argument("--idle", type=int, default=10000, help="idle connections to hold open")
    ap.add_argument("--binary", default="target/release/primes")
    args = ap.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if not os.path.exists(args.binary):
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "primes"], check=True)
    proc, addr = start_server(args.binary, args.server)
    samples = []
    sampling = threading.Event()

    def sample():
        start = time.monotonic()
        while not sampling.is_set():
            samples.append((time.monotonic() - start, rss_kib(proc.pid)))
            sampling.wait(0.2)

    threading.Thread(target=sample, daemon=True).start()
    probe = Probe(addr)
    probe.start()
    report = []
    ok = True
    try:
        attack_malformed(addr, report)
        attack_huge_headers(addr, report)
        attack_slow_clients(addr, report)
        attack_idle(addr, report, args.idle)
        ok &= attack_pipelined(addr, report)
        time.sleep(1)
    finally:
        probe.stop.set()
        probe.join()
        sampling.set()
        died = proc.poll() is not None
        proc.terminate()
        proc.wait(timeout=10)

    print(f"hostile input against the {args.server} server at {addr[0]}:{addr[1]}\n")
    print("| attack | what came back |")
    print("|---|---|")
    for name, outcome in report:
        print(f"| {name} | {outcome} |")
    lat = sorted(probe.latencies)
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3 if lat else float("nan")
    print(f"\nprobe: {probe.ok} well-formed requests answered correctly, {len(probe.failures)} failed; "
          f"latency ms p50 {p(0.5):.2f} p99 {p(0.99):.2f} max {p(1.0):.2f}")
    for failure in probe.failures[:10]:
        print(f"  failure: {failure}")
    rss = [r for _, r in samples if r]
    if rss:
        print(f"server resident memory (MiB): start {rss[0] / 1024:.1f}, peak {max(rss) / 1024:.1f}, end {rss[-1] / 1024:.1f} "
              f"({len(rss)} samples over {samples[-1][0]:.0f} s)")
    if died:
        print("the server DIED during the run")
    ok &= not probe.failures and not died
    print("\nresult:", "PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
