#!/usr/bin/env python3
"""Run a command; after `skip` seconds, sample each thread's CPU time every
`every` seconds until it exits; print, per thread name, CPU seconds used in
the sampled window and the share of the window's wall time."""
import os, subprocess, sys, time
skip, every = float(sys.argv[1]), float(sys.argv[2])
cmd = sys.argv[3:]
hz = os.sysconf('SC_CLK_TCK')
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
def snap(pid):
    out = {}
    try:
        for t in os.listdir(f'/proc/{pid}/task'):
            try:
                s = open(f'/proc/{pid}/task/{t}/stat').read()
                name = s[s.index('(')+1:s.rindex(')')]
                f = s[s.rindex(')')+2:].split()
                out[t] = (name, (int(f[11]) + int(f[12])) / hz)
            except OSError:
                pass
    except OSError:
        pass
    return out
time.sleep(skip)
first = snap(p.pid); t0 = time.time(); last = dict(first); t1 = t0
while p.poll() is None:
    time.sleep(every)
    s = snap(p.pid)
    if s:
        last.update(s); t1 = time.time()
out = p.stdout.read()
wall = t1 - t0
rows = []
for tid, (name, cpu) in last.items():
    before = first.get(tid, (name, 0.0))[1]
    rows.append((cpu - before, name, tid))
rows.sort(reverse=True)
print(f'window {wall:.1f} s, all threads {sum(r[0] for r in rows):.2f} cpu-s = {sum(r[0] for r in rows)/wall:.2f} cores')
for d, name, tid in rows[:12]:
    print(f'{name:32s} {tid:>8s} {d:7.2f} s {100*d/wall:6.1f} %')
for l in out.splitlines():
    if l.startswith('RESULT'):
        print(l[:400])
