#!/usr/bin/env python3
"""cpu=samples benchmark (PERFORMANCE.md §4). At 2, 8 and 64 busy threads (tests/java/CpuBusy):

1. mechanisms: one agent run per stack-request variant (FASTHPROF_CPU_SAMPLER=deferred|each|list|all),
   printing rounds taken against rounds due (run time / interval), samples taken against expected
   (run time / interval x busy threads) and the cost of one round (mean and worst);
2. slowdown: alternating runs without and with the agent (default variant), printing the work done,
   the median slowdown and its spread, next to the spread of the runs without the agent (the noise).

Figures are plain lines, the last line the headline ratio; --json writes them all. --smoke is the
small version that `meson test --suite bench-smoke` runs so that the script cannot rot.
Environment (set by meson): FASTHPROF_AGENT, TEST_CLASSES, JAVA17_HOME."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

AGENT = os.environ.get("FASTHPROF_AGENT", "")
CLASSES = os.environ.get("TEST_CLASSES", "")
JAVA_HOME = os.environ.get("JAVA17_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")
INTERVAL_MS = 10
STATS = re.compile(r"fasthprof cpu sampler: mode=(\w+) rounds=(\d+) samples=(\d+) seconds=([\d.]+) "
                   r"round_mean_us=([\d.]+) round_max_us=([\d.]+) counted=(\d+) lost=(\d+) unfetched=(\d+) "
                   r"stack_passes=(\d+) stack_pass_mean_us=([\d.]+)")
WORK = re.compile(r"CpuBusy threads=(\d+) run_ms=([\d.]+) work=(\d+)")


def run_busy(threads, millis, agent_mode=None):
    """One CpuBusy run; returns a dict of its figures (sampler figures when agent_mode is set)."""
    java_home = os.environ.get("FASTHPROF_BENCH_JAVA_HOME", JAVA_HOME)
    command = [os.path.join(java_home, "bin", "java"), "-Xshare:auto"]
    env = dict(os.environ)
    env.pop("JAVA_TOOL_OPTIONS", None)
    env.pop("_JAVA_HPROF_OPTIONS", None)
    folder = tempfile.mkdtemp(prefix="fasthprof-bench-")
    if agent_mode:
        command.append(f"-agentpath:{AGENT}=cpu=samples,interval={INTERVAL_MS},file={folder}/out.txt")
        env["FASTHPROF_CPU_SAMPLER"] = agent_mode
        env["FASTHPROF_CPU_SAMPLER_STATS"] = "1"
    command += ["-cp", CLASSES, "CpuBusy", str(threads), str(millis)]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    subprocess.run(["rm", "-rf", folder])
    work = WORK.search(proc.stdout)
    if proc.returncode != 0 or not work:
        sys.exit(f"CpuBusy failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    result = {"threads": threads, "run_ms": float(work.group(2)), "work": int(work.group(3))}
    if agent_mode:
        stats = STATS.search(proc.stderr)
        if not stats:
            sys.exit(f"no sampler figures on stderr (FASTHPROF_CPU_SAMPLER_STATS):\n{proc.stderr}")
        result.update(mode=stats.group(1), rounds=int(stats.group(2)), samples=int(stats.group(3)),
                      sampler_seconds=float(stats.group(4)), round_mean_ms=float(stats.group(5)) / 1000,
                      round_max_ms=float(stats.group(6)) / 1000, counted=int(stats.group(7)),
                      lost=int(stats.group(8)) + int(stats.group(9)), stack_pass_ms=float(stats.group(11)) / 1000)
        # Rounds are due over the sampler's whole life (VM start to VM death), samples over the
        # time the busy threads ran.
        result["rounds_due"] = result["sampler_seconds"] * 1000 / INTERVAL_MS
        result["expected_samples"] = result["run_ms"] / INTERVAL_MS * threads
    return result


def mechanisms(counts, modes, millis):
    rows = []
    print(f"== mechanisms: interval {INTERVAL_MS} ms, {millis} ms of work per run, {os.cpu_count()} CPUs")
    print(f"{'busy':>4} {'variant':>8} {'rounds':>13} {'samples/expected':>22} {'round mean':>11} {'round max':>10}"
          f" {'lost':>6} {'stack pass':>10}")
    for threads in counts:
        for mode in modes:
            r = run_busy(threads, millis, mode)
            rows.append(r)
            print(f"{threads:>4} {mode:>8} {r['rounds']:>5}/{r['rounds_due']:<7.0f} "
                  f"{r['samples']:>7}/{r['expected_samples']:<7.0f} ({r['samples'] / r['expected_samples']:5.1%}) "
                  f"{r['round_mean_ms']:>8.2f} ms {r['round_max_ms']:>7.1f} ms {r['lost']:>6} "
                  f"{r['stack_pass_ms']:>7.1f} ms", flush=True)
    return rows


def slowdown(counts, pairs, millis):
    results = []
    print(f"== slowdown: {pairs} alternating pairs (no agent, agent) per count, {millis} ms each")
    for threads in counts:
        base, with_agent, samples = [], [], []
        for _ in range(pairs):
            b = run_busy(threads, millis)
            a = run_busy(threads, millis, "deferred")
            base.append(b["work"] / b["run_ms"])
            with_agent.append(a["work"] / a["run_ms"])
            samples.append(a["samples"] / a["expected_samples"])
        ratios = [1 - w / b for b, w in zip(base, with_agent)]
        base_median = statistics.median(base)
        noise = (max(base) - min(base)) / base_median if base_median else 0
        r = {"threads": threads, "slowdown_median": statistics.median(ratios), "slowdown_min": min(ratios),
             "slowdown_max": max(ratios), "noise": noise, "samples_ratio_median": statistics.median(samples)}
        results.append(r)
        print(f"{threads:>4} busy: slowdown median {r['slowdown_median']:+.1%} "
              f"(runs {r['slowdown_min']:+.1%} .. {r['slowdown_max']:+.1%}); "
              f"spread of runs without agent {noise:.1%}; samples {r['samples_ratio_median']:.1%} of expected",
              flush=True)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="small version for the bench-smoke suite")
    parser.add_argument("--json", help="write every figure to this file")
    parser.add_argument("--java-home", default=JAVA_HOME)
    args = parser.parse_args()
    if not AGENT or not CLASSES:
        sys.exit("set FASTHPROF_AGENT and TEST_CLASSES (meson sets them)")
    os.environ["FASTHPROF_BENCH_JAVA_HOME"] = args.java_home

    if args.smoke:
        counts, modes, millis, pairs = [2, 8], ["deferred", "list"], 1000, 1
    else:
        counts, modes, millis, pairs = [2, 8, 64], ["deferred", "each", "list", "all"], 4000, 4
    mechanism_rows = mechanisms(counts, modes, millis)
    slowdown_rows = slowdown(counts, pairs, millis)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"interval_ms": INTERVAL_MS, "cpus": os.cpu_count(), "mechanisms": mechanism_rows,
                       "slowdown": slowdown_rows}, f, indent=1)
    headline = next(r for r in slowdown_rows if r["threads"] == 8)
    print(f"headline: at 8 busy threads samples taken / expected = {headline['samples_ratio_median']:.2f}, "
          f"slowdown {headline['slowdown_median']:+.1%} (noise {headline['noise']:.1%})")


if __name__ == "__main__":
    main()
