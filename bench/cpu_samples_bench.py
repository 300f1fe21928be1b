#!/usr/bin/env python3
"""cpu=samples benchmark (docs/performance.md §4). At 2, 8 and 64 busy threads (tests/java/CpuBusy):

1. mechanisms: agent runs per stack path (cpustacks=signal|deferred, the figures line printed by
   verbose=y), alternating the two, printing rounds taken against rounds due (sampler lifetime /
   interval), the cost of one round (mean and worst), the agent's own CPU, and samples taken
   against three expectations:
   - raw: run time / interval x busy threads (the issue's formula);
   - rule: what the CPU-time rule makes due: threads counted per round (median over the runs of
     both paths) x rounds due. The in-round variants and the `count` baseline (rounds that took no
     stack at all) were removed from the agent (docs/cpu.md says when); their figures stay in
     docs/cpu.md "How the stacks are taken". With more busy threads than CPUs a thread that waits for the CPU through a
     whole interval is not due a sample, so this, not raw, is what a mechanism can reach;
   - own: the variant's own counts (rounds x threads that passed the rule) scaled to the rounds
     due: what it lost between counting and recording, and by missing rounds;
2. slowdown: alternating runs without the agent, with the signal variant and with the deferred
   one, printing the median slowdown (work per ms) and its range, next to the spread of the runs
   without the agent (the noise).

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
WORK = re.compile(r"CpuBusy threads=(\d+) run_ms=([\d.]+) work=(\d+) cpu_ms=([\d.]+)")
SIGNAL = re.compile(r"signals=(\d+) walks_ok=(\d+) walks_failed=(\d+) without_tid=(\d+) "
                    r"stopped_before_signal=(\d+) retried=(\d+) agent_cpu_us=(\d+) walk_us=(\d+)")
MODES = ["signal", "deferred"]


def run_busy(threads, millis, agent_mode=None):
    """One CpuBusy run; returns a dict of its figures (sampler figures when agent_mode is set).
    agent_mode "default" names no cpustacks= (builds older than the option print their figures
    with FASTHPROF_CPU_SAMPLER_STATS=1 in the environment, which run_busy then sets)."""
    java_home = os.environ.get("FASTHPROF_BENCH_JAVA_HOME", JAVA_HOME)
    command = [os.path.join(java_home, "bin", "java"), "-Xshare:auto"]
    env = dict(os.environ)
    env.pop("JAVA_TOOL_OPTIONS", None)
    env.pop("_JAVA_HPROF_OPTIONS", None)
    folder = tempfile.mkdtemp(prefix="fasthprof-bench-")
    if agent_mode:
        stacks = "" if agent_mode == "default" else f",cpustacks={agent_mode}"
        if agent_mode == "default":
            env["FASTHPROF_CPU_SAMPLER_STATS"] = "1"
        command.append(f"-agentpath:{AGENT}=cpu=samples,interval={INTERVAL_MS},file={folder}/out.txt,"
                       f"verbose=y{stacks}")
    command += ["-cp", CLASSES, "CpuBusy", str(threads), str(millis)]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    subprocess.run(["rm", "-rf", folder])
    work = WORK.search(proc.stdout)
    if proc.returncode != 0 or not work:
        sys.exit(f"CpuBusy failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    result = {"threads": threads, "run_ms": float(work.group(2)), "work": int(work.group(3)),
              "cpu_ms": float(work.group(4))}
    if agent_mode:
        stats = STATS.search(proc.stderr)
        if not stats:
            sys.exit(f"no sampler figures on stderr (verbose=y):\n{proc.stderr}")
        result.update(mode=stats.group(1), rounds=int(stats.group(2)), samples=int(stats.group(3)),
                      sampler_seconds=float(stats.group(4)), round_mean_ms=float(stats.group(5)) / 1000,
                      round_max_ms=float(stats.group(6)) / 1000, counted=int(stats.group(7)),
                      lost=int(stats.group(8)) + int(stats.group(9)), stack_pass_ms=float(stats.group(11)) / 1000)
        # Rounds are due over the sampler's whole life (VM start to VM death), samples over the
        # time the busy threads ran.
        result["rounds_due"] = result["sampler_seconds"] * 1000 / INTERVAL_MS
        result["expected_samples"] = result["run_ms"] / INTERVAL_MS * threads
        result["expected_ran"] = result["counted"] * result["rounds_due"] / max(1, result["rounds"])
        result["expected_cpu"] = result["cpu_ms"] / INTERVAL_MS
        result["raw_ratio"] = result["samples"] / result["expected_samples"]
        result["ran_ratio"] = result["samples"] / max(1.0, result["expected_ran"])
        result["cpu_ratio"] = result["samples"] / max(1.0, result["expected_cpu"])
        signal = SIGNAL.search(proc.stderr)
        if signal:
            result.update(walks_ok=int(signal.group(2)), walks_failed=int(signal.group(3)),
                          retried=int(signal.group(6)))
            # The agent's own CPU, as a share of one core over its life: its two threads plus the
            # walks in the signal handlers (the handshakes of the per-thread requests run on the
            # target threads and are not in it).
            result["agent_cpu_share"] = (int(signal.group(7)) + int(signal.group(8))) / 1e6 / result["sampler_seconds"]
    return result


def mechanisms(counts, modes, millis, repeats):
    """Each path `repeats` times, the paths alternating; prints the median run of each.
    Returns (rows, {busy threads: threads counted per round, median over every run})."""
    rows, per_round = [], {}
    print(f"== mechanisms: interval {INTERVAL_MS} ms, {millis} ms of work per run, {os.cpu_count()} CPUs, "
          f"median of {repeats} alternating runs")
    print(f"{'busy':>4} {'variant':>8} {'rounds':>11} {'raw':>7} {'rule':>7} {'own':>7} {'samples':>8} "
          f"{'round mean':>11} {'round max':>10} {'lost':>5} {'failed walks':>12} {'agent cpu':>9}")
    for threads in counts:
        runs = {mode: [] for mode in modes}
        for _ in range(repeats):
            for mode in runs:
                runs[mode].append(run_busy(threads, millis, mode))
        # What the rule makes due: threads counted per round, by the rounds of every run.
        per_round[threads] = statistics.median(r["counted"] / max(1, r["rounds"]) for m in runs for r in runs[m])
        for mode in runs:
            for x in runs[mode]:
                x["rule_ratio"] = x["samples"] / max(1.0, per_round[threads] * x["rounds_due"])
            median = lambda key: statistics.median(x[key] for x in runs[mode])
            r = {"threads": threads, "mode": mode, "runs": runs[mode], "rule_per_round": per_round[threads]}
            for key in ("rounds", "rounds_due", "samples", "counted", "expected_samples", "expected_ran",
                        "expected_cpu", "raw_ratio", "rule_ratio", "ran_ratio", "cpu_ratio", "round_mean_ms",
                        "round_max_ms", "lost", "agent_cpu_share"):
                r[key] = median(key)
            failed = ""
            if all("walks_ok" in x for x in runs[mode]):
                r["failed_walk_ratio"] = median_of([x["walks_failed"] / max(1, x["walks_ok"] + x["walks_failed"])
                                                    for x in runs[mode]])
                failed = f"{r['failed_walk_ratio']:.1%}" if mode == "signal" else ""
            rows.append(r)
            print(f"{threads:>4} {mode:>8} {r['rounds']:>5.0f}/{r['rounds_due']:<5.0f} {r['raw_ratio']:>7.1%} "
                  f"{r['rule_ratio']:>7.1%} {r['ran_ratio']:>7.1%} {r['samples']:>8.0f} {r['round_mean_ms']:>8.2f} ms "
                  f"{r['round_max_ms']:>7.1f} ms {r['lost']:>5.0f} {failed:>12} {r['agent_cpu_share']:>9.1%}", flush=True)
    return rows, per_round


def median_of(values):
    return statistics.median(values) if values else 0.0


def slowdown(counts, agent_modes, pairs, millis, per_round):
    results = []
    print(f"== slowdown: {pairs} alternating rounds (no agent, {', '.join(agent_modes)}) per count, {millis} ms each")
    for threads in counts:
        base, with_agent, samples = [], {m: [] for m in agent_modes}, {m: [] for m in agent_modes}
        for _ in range(pairs):
            b = run_busy(threads, millis)
            base.append(b["work"] / b["run_ms"])
            for mode in agent_modes:
                a = run_busy(threads, millis, mode)
                with_agent[mode].append(a["work"] / a["run_ms"])
                rule = a["samples"] / max(1.0, per_round[threads] * a["rounds_due"])
                samples[mode].append((a["raw_ratio"], rule, a["agent_cpu_share"]))
        base_median = statistics.median(base)
        noise = (max(base) - min(base)) / base_median if base_median else 0
        for mode in agent_modes:
            ratios = [1 - w / b for b, w in zip(base, with_agent[mode])]
            r = {"threads": threads, "mode": mode, "slowdown_median": statistics.median(ratios),
                 "slowdown_min": min(ratios), "slowdown_max": max(ratios), "noise": noise,
                 "samples_ratio_median": statistics.median(x[0] for x in samples[mode]),
                 "rule_ratio_median": statistics.median(x[1] for x in samples[mode]),
                 "agent_cpu_median": statistics.median(x[2] for x in samples[mode])}
            results.append(r)
            print(f"{threads:>4} busy {mode:>8}: slowdown median {r['slowdown_median']:+.1%} "
                  f"(runs {r['slowdown_min']:+.1%} .. {r['slowdown_max']:+.1%}); "
                  f"spread of runs without agent {noise:.1%}; samples {r['samples_ratio_median']:.1%} of raw "
                  f"expected, {r['rule_ratio_median']:.1%} of the rule's; agent CPU {r['agent_cpu_median']:.1%} "
                  f"of a core", flush=True)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="small version for the bench-smoke suite")
    parser.add_argument("--json", help="write every figure to this file")
    parser.add_argument("--java-home", default=JAVA_HOME)
    parser.add_argument("--repeats", type=int, default=3, help="runs per variant in part 1 (median shown)")
    args = parser.parse_args()
    if not AGENT or not CLASSES:
        sys.exit("set FASTHPROF_AGENT and TEST_CLASSES (meson sets them)")
    os.environ["FASTHPROF_BENCH_JAVA_HOME"] = args.java_home

    if args.smoke:
        counts, modes, millis, pairs, repeats = [2, 8], MODES, 1000, 1, 1
    else:
        counts, modes, millis, pairs, repeats = [2, 8, 64], MODES, 4000, 4, args.repeats
    mechanism_rows, per_round = mechanisms(counts, modes, millis, repeats)
    slowdown_rows = slowdown(counts, ["signal", "deferred"], pairs, millis, per_round)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"interval_ms": INTERVAL_MS, "cpus": os.cpu_count(), "mechanisms": mechanism_rows,
                       "rule_threads_per_round": per_round, "slowdown": slowdown_rows}, f, indent=1)
    headline = next(r for r in slowdown_rows if r["threads"] == 8 and r["mode"] == "signal")
    print(f"headline: at 8 busy threads (signal) samples taken / expected = {headline['samples_ratio_median']:.2f} "
          f"raw, {headline['rule_ratio_median']:.2f} of what the CPU-time rule makes due; "
          f"slowdown {headline['slowdown_median']:+.1%} (noise {headline['noise']:.1%})")


if __name__ == "__main__":
    main()
