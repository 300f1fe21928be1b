#!/usr/bin/env python3
"""docs/performance.md §2: what exact allocation tracking costs, measured side by side in one run.

Alternates, round after round, on bench/java/AllocLoop.java:
  none      no agent
  floor     bench/floor_agent.cpp: SampledObjectAlloc at interval 0 + GetStackTrace(depth) + SetTag
  floor+ct  the same plus GetTag on the object's class (what fasthprof pays to identify the class)
  sites     fasthprof heap=sites,alloc=event (exact, by the event: the pipeline against the floor;
            heap=sites' default counts by injection, inject1/inject4 below without the live columns)
  s512k     fasthprof heap=sites,sample=512k
  inject1   fasthprof heap=sites,live=n,alloc=inject,depth=1 (counted by injected code)
  inject4   the same at depth 4 (traces by the frame walk)
and prints the median loop time of each, then the ratios and what the injected count alone costs
an allocation (ns over no agent, at depth 1 and 4); the last line is fasthprof / floor
(goal <= 1.10). Then a longer exact run against sample=64k: every site with at least 5 % of the
allocated bytes must appear in the sampled run with its bytes within 15 %.

Environment: FASTHPROF_AGENT, FASTHPROF_FLOOR_AGENT, JAVA_HOME (or JAVA17_HOME),
FASTHPROF_BENCH_ITERATIONS (default 2000000), FASTHPROF_BENCH_ROUNDS (default 3),
FASTHPROF_BENCH_JSON (optional: where to write the figures)."""
import atexit
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
AGENT = os.environ["FASTHPROF_AGENT"]
FLOOR = os.environ["FASTHPROF_FLOOR_AGENT"]
JAVA_HOME = os.environ.get("JAVA_HOME") or os.environ.get("JAVA17_HOME") or "/usr/lib/jvm/java-17-openjdk-amd64"
ITERATIONS = int(os.environ.get("FASTHPROF_BENCH_ITERATIONS", "2000000"))
ROUNDS = int(os.environ.get("FASTHPROF_BENCH_ROUNDS", "3"))
DEPTH = 4

ROW = re.compile(r"^\s*\d+\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)$")


def java(*args, cwd):
    proc = subprocess.run([os.path.join(JAVA_HOME, "bin", "java"), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=1800)
    if proc.returncode != 0:
        sys.exit(f"java {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def loop_ms(output):
    found = re.search(r"loop_ms ([\d.]+)", output)
    if not found:
        sys.exit(f"no loop time in: {output}")
    return float(found.group(1))


def sites_by_key(text):
    """{(class, frames...): alloc bytes} from a SITES section (cutoff=0)."""
    traces, rows = {}, {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        found = re.match(r"^TRACE (\d+):", lines[i])
        if found:
            frames = []
            i += 1
            while i < len(lines) and lines[i].startswith("\t"):
                frames.append(lines[i][1:])
                i += 1
            traces[int(found.group(1))] = tuple(frames)
            continue
        row = ROW.match(lines[i])
        if row:
            key = (row.group(6),) + traces.get(int(row.group(5)), ())
            rows[key] = rows.get(key, 0) + int(row.group(3))
        i += 1
    return rows


def main():
    work = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-allocbench-"))
    atexit.register(shutil.rmtree, work, ignore_errors=True)  # its class and the runs' files
    subprocess.run([os.path.join(JAVA_HOME, "bin", "javac"), "-d", str(work), str(HERE / "java" / "AllocLoop.java")],
                   check=True)
    variants = {
        "none": [],
        "floor": [f"-agentpath:{FLOOR}=depth={DEPTH}"],
        "floor+ct": [f"-agentpath:{FLOOR}=depth={DEPTH},classtag=y"],
        "sites": [f"-agentpath:{AGENT}=heap=sites,alloc=event,depth={DEPTH},verbose=n,file=sites.txt"],
        "s512k": [f"-agentpath:{AGENT}=heap=sites,sample=512k,depth={DEPTH},verbose=n,file=s512k.txt"],
        "inject1": [f"-agentpath:{AGENT}=heap=sites,live=n,alloc=inject,depth=1,verbose=n,file=inject1.txt"],
        "inject4": [f"-agentpath:{AGENT}=heap=sites,live=n,alloc=inject,depth={DEPTH},verbose=n,file=inject4.txt"],
    }
    times = {name: [] for name in variants}
    for _ in range(ROUNDS):
        for name, agent in variants.items():
            proc = java(*agent, "-cp", str(work), "AllocLoop", str(ITERATIONS), cwd=work)
            times[name].append(loop_ms(proc.stdout))
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"AllocLoop, {ITERATIONS} iterations (about {ITERATIONS * 2.5 / 1e6:.1f} M allocations), depth {DEPTH}, "
          f"median of {ROUNDS} alternating rounds:")
    for name, value in median.items():
        spread = f"{min(times[name]):.0f}..{max(times[name]):.0f}"
        print(f"  {name:9} {value:9.1f} ms  ({spread})")
    allocations = ITERATIONS * 2.5

    def ns_over(name, base):
        """What contender `name` adds to `base` per allocation, in ns."""
        return (median[name] - median[base]) * 1e6 / allocations

    print(f"floor cost per allocation: {ns_over('floor', 'none'):.0f} ns; "
          f"class GetTag adds {ns_over('floor+ct', 'floor'):.0f} ns")
    print(f"fasthprof heap=sites cost over the floor: {ns_over('sites', 'floor'):.0f} ns per allocation")
    print(f"sample=512k / none: {median['s512k'] / median['none']:.2f} (goal <= 1.05)")
    inject_ns = {depth: ns_over(f"inject{depth}", "none") for depth in (1, DEPTH)}
    print(f"injected count per allocation (alloc=inject, over no agent): {inject_ns[1]:.1f} ns at depth 1, "
          f"{inject_ns[DEPTH]:.1f} ns at depth {DEPTH} (the floor's event: {ns_over('floor', 'none'):.0f} ns)")

    # Accuracy of sample=64k against the exact run on a longer loop.
    long_run = ITERATIONS * 2
    java(f"-agentpath:{AGENT}=heap=sites,alloc=event,cutoff=0,verbose=n,file=exact.txt", "-cp", str(work), "AllocLoop",
         str(long_run), cwd=work)
    java(f"-agentpath:{AGENT}=heap=sites,cutoff=0,sample=64k,verbose=n,file=s64k.txt", "-cp", str(work),
         "AllocLoop", str(long_run), cwd=work)
    exact = sites_by_key((work / "exact.txt").read_text())
    sampled = sites_by_key((work / "s64k.txt").read_text())
    total = sum(exact.values())
    worst = 0.0
    missing = 0
    for key, value in sorted(exact.items(), key=lambda item: -item[1]):
        if value < 0.05 * total:
            continue
        estimate = sampled.get(key)
        if estimate is None:
            missing += 1
            print(f"  sample=64k misses {key[0]} at {key[1:2]}")
            continue
        error = abs(estimate - value) / value
        worst = max(worst, error)
        print(f"  {key[0]:24} {key[1] if len(key) > 1 else '':50} exact {value:>12} sampled {estimate:>12} "
              f"({100 * error:.1f} %)")
    print(f"sample=64k accuracy: {missing} big sites missing, worst byte error {100 * worst:.1f} % (goal: none, <= 15 %)")

    ratio = median["sites"] / median["floor"]
    figures = {"median_ms": median, "rounds": times, "sites_over_floor": ratio,
               "s512k_over_none": median["s512k"] / median["none"], "sample64k_worst_error": worst,
               "sample64k_missing": missing, "inject1_ns_per_allocation": inject_ns[1],
               "inject4_ns_per_allocation": inject_ns[DEPTH]}
    if os.environ.get("FASTHPROF_BENCH_JSON"):
        pathlib.Path(os.environ["FASTHPROF_BENCH_JSON"]).write_text(json.dumps(figures, indent=1))
    print(f"fasthprof heap=sites / floor: {ratio:.2f} (goal <= 1.10)")


if __name__ == "__main__":
    main()
