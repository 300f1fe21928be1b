#!/usr/bin/env python3
"""What the shadow stack costs per call (docs/allocation-sites.md "Traces deeper than one frame",
bench/README.md; alloc=inject keeps it at depth > 1 with cpu=times and under attach, and walks the
frames at each allocation otherwise): bench/java/CallLoop.java (tens of millions of
calls of two tiny static methods, no allocation in the loop) run side by side, alternating, the
order rotating every round, by:

  none        no agent
  inject1     heap=sites,live=n,alloc=inject,depth=1 (allocation calls only: none in the loop)
  inject4     heap=sites,live=n,alloc=inject,depth=4 (the frame walk: allocation calls only, none
              in the loop; with an agent from before 2026-11-29, entry, exit and position calls)
  cpu=times   cpu=times,depth=4 (entry and exit calls, clock and times)
  both        both in one run (one rewrite, one shadow stack, positions and times)

With FASTHPROF_BASE_AGENT naming another build of the agent (before a change), inject4 and
cpu=times also run with it, as inject4@base and cpu=times@base, in the same rounds.

Prints per contender the median of the loop's own time (CallLoop's System.nanoTime) and of the
process's CPU time, and the loop's extra nanoseconds per call over none (3 calls an iteration).
Environment: FASTHPROF_AGENT, FASTHPROF_BASE_AGENT (optional); JAVA17_HOME or FASTHPROF_BENCH_JAVA_HOME for the JDK."""
import argparse
import os
import pathlib
import re
import resource
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
AGENT = os.environ.get("FASTHPROF_AGENT", "")
BASE = os.environ.get("FASTHPROF_BASE_AGENT", "")
LOOP = re.compile(r"CallLoop calls=(\d+) loop_ms=(\d+)")
OPTIONS = {"none": None, "inject1": "heap=sites,live=n,alloc=inject,depth=1",
           "inject4": "heap=sites,live=n,alloc=inject,depth=4", "cpu=times": "cpu=times,depth=4",
           "both": "heap=sites,live=n,alloc=inject,cpu=times,depth=4"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=20_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not AGENT:
        parser.error("FASTHPROF_AGENT must name the agent")
    home = os.environ.get("FASTHPROF_BENCH_JAVA_HOME", os.environ.get("JAVA17_HOME", "/usr/lib/jvm/java-17-openjdk-amd64"))
    if BASE:
        OPTIONS["inject4@base"] = OPTIONS["inject4"]
        OPTIONS["cpu=times@base"] = OPTIONS["cpu=times"]
    names = list(OPTIONS)
    loop_ms = {name: [] for name in names}
    cpu_s = {name: [] for name in names}
    with tempfile.TemporaryDirectory(prefix="fasthprof-shadow-") as folder:
        work = pathlib.Path(folder)
        subprocess.run([f"{home}/bin/javac", "-d", folder, str(HERE / "java" / "CallLoop.java")], check=True)
        for round_number in range(args.rounds):
            shift = round_number % len(names)
            for name in names[shift:] + names[:shift]:
                path = BASE if name.endswith("@base") else AGENT
                agent = [] if OPTIONS[name] is None else [f"-agentpath:{path}={OPTIONS[name]},verbose=n,file={work}/out.txt"]
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                proc = subprocess.run([f"{home}/bin/java", "-Xcheck:jni", *agent, "-cp", folder, "CallLoop",
                                       str(args.iterations)], capture_output=True, text=True, timeout=3600)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                match = LOOP.search(proc.stdout)
                if proc.returncode != 0 or match is None or "WARNING" in proc.stdout + proc.stderr:
                    sys.exit(f"{name}: failed\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
                loop_ms[name].append(int(match.group(2)))
                cpu_s[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    calls = args.iterations * 3
    base = statistics.median(loop_ms["none"])
    print(f"shadow_stack: CallLoop {calls / 1e6:.0f} M calls, {args.rounds} alternating rounds, JDK {home}, "
          f"load {os.getloadavg()[0]:.1f}")
    for name in names:
        ms = statistics.median(loop_ms[name])
        print(f"  {name:14s} loop {ms:7.0f} ms ({min(loop_ms[name])}..{max(loop_ms[name])})  process CPU "
              f"{statistics.median(cpu_s[name]):6.2f} s  +{(ms - base) * 1e6 / calls:6.1f} ns per call over none")


if __name__ == "__main__":
    main()
