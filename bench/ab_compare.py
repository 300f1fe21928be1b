#!/usr/bin/env python3
"""Two builds of the agent side by side (issue 13): are allocation overhead, dump speed and CPU
sampling of the new build no worse than those of the old one?

Runs the workloads of the three whole-JVM benchmarks with each agent, the two builds alternating in
the order old, new, new, old, old, new, ... (ABBA pairs: a slow drift of the machine's load, which
on a shared machine is the usual noise, then weighs on both builds alike):
  alloc  bench/java/AllocLoop.java with heap=sites (exact) at the depth of alloc_overhead_bench.py;
         the loop time it prints (lower is better);
  dump   bench/HeapBuilder.java with heap=dump,format=b, timed from kill -QUIT to the complete file
         less the tag clean-up, as heap_dump_bench.py does (lower is better);
  cpu    tests/java/CpuBusy with cpu=samples, the signal path, as part 1 of cpu_samples_bench.py:
         samples taken / expected (raw), the mean round cost, the agent's own CPU, and the busy
         threads' work per ms (the overhead: higher is better).
For each figure: each build's median and min..max over its runs, new/old of the medians, and the
verdict: "no worse" when the new median lies within the old runs' spread or beyond it on the good
side, otherwise "WORSE by X %" (new median against old median).

  python3 bench/ab_compare.py --old OLD/libfasthprof.so --new NEW/libfasthprof.so [--runs 5]
      [--only alloc,dump,cpu] [--objects 2000000] [--heap 1g] [--json FILE]
  python3 bench/ab_compare.py --old X --new X --smoke      (small: the bench-smoke suite)
Environment: TEST_CLASSES (meson's compiled tests/java; compiled here when unset),
FASTHPROF_BENCH_DIR (where the dumps go)."""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# alloc_overhead_bench reads its agents from the environment when imported; only its helpers and
# constants are used here, with the agents given on the command line.
os.environ.setdefault("FASTHPROF_AGENT", "")
os.environ.setdefault("FASTHPROF_FLOOR_AGENT", "")
import alloc_overhead_bench  # noqa: E402
import cpu_samples_bench  # noqa: E402
import heap_dump_bench  # noqa: E402

LOWER, HIGHER = "lower", "higher"


def order(runs):
    """ABBA: old, new, new, old, old, new, ..."""
    sides = []
    for i in range(runs):
        sides += ["old", "new"] if i % 2 == 0 else ["new", "old"]
    return sides


def verdict(old, new, better):
    old_median, new_median = statistics.median(old), statistics.median(new)
    if better == LOWER:
        if new_median <= max(old):
            return "no worse"
        return f"WORSE by {100 * (new_median / old_median - 1):.1f} % (above the old runs' max)"
    if new_median >= min(old):
        return "no worse"
    return f"WORSE by {100 * (1 - new_median / old_median):.1f} % (below the old runs' min)"


def report(title, figures, results):
    """figures: [(key, label, unit, better, headline)]; results: {side: [{key: value}]} in run order.
    The headline figures are the ones issue 13 asks about; the others say where a change comes from."""
    print(f"== {title}")
    summary = {}
    for key, label, unit, better, headline in figures:
        old = [r[key] for r in results["old"] if key in r]
        new = [r[key] for r in results["new"] if key in r]
        if not old or not new:
            print(f"  {label}: not printed by {'the old' if not old else 'the new'} build, not compared")
            continue
        row = {"better": better, "headline": headline, "old": old, "new": new, "old_median": statistics.median(old),
               "new_median": statistics.median(new), "verdict": verdict(old, new, better)}
        row["ratio"] = row["new_median"] / row["old_median"] if row["old_median"] else float("nan")
        print(f"  {label} ({unit}, {better} is better{'' if headline else '; not a headline figure'})")
        for side in ("old", "new"):
            values = row[side]
            print(f"    {side}  median {row[side + '_median']:10.3f}   min..max {min(values):.3f}..{max(values):.3f}"
                  f"   runs {' '.join(f'{v:.3f}' for v in values)}")
        print(f"    new/old {row['ratio']:.3f}: {row['verdict']}")
        summary[key] = row
    return summary


def alternate(name, runs, agents, run_one):
    results = {"old": [], "new": []}
    for i, side in enumerate(order(runs)):
        figures = run_one(agents[side])
        results[side].append(figures)
        shown = ", ".join(f"{k} {v:.3f}" for k, v in figures.items())
        print(f"  {name} run {i + 1}/{2 * runs} {side}: {shown}", flush=True)
    return results


def bench_alloc(args, agents, work):
    java_home = args.java_home
    alloc_overhead_bench.JAVA_HOME = java_home
    subprocess.run([os.path.join(java_home, "bin", "javac"), "-d", str(work), str(HERE / "java" / "AllocLoop.java")],
                   check=True)
    depth = alloc_overhead_bench.DEPTH

    def run_one(agent):
        proc = alloc_overhead_bench.java(f"-agentpath:{agent}=heap=sites,depth={depth},verbose=n,file=sites.txt",
                                         "-cp", str(work), "AllocLoop", str(args.iterations), cwd=work)
        return {"loop_ms": alloc_overhead_bench.loop_ms(proc.stdout)}

    results = alternate("alloc", args.runs, agents, run_one)
    return report(f"allocation: AllocLoop {args.iterations} iterations, heap=sites exact, depth {depth}",
                  [("loop_ms", "loop time", "ms", LOWER, True)], results), results


def bench_dump(args, agents, work):
    java, javac = (os.path.join(args.java_home, "bin", tool) for tool in ("java", "javac"))
    classes = work / "heap-classes"
    subprocess.run([javac, "--release", "17", "-d", str(classes), str(HERE / "HeapBuilder.java")], check=True)
    base = pathlib.Path(os.environ.get("FASTHPROF_BENCH_DIR") or tempfile.gettempdir())
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-abdump-", dir=base))
    dump = folder / "fasthprof.hprof"

    # The JVMTI walk on both sides: builds that have dumper= would otherwise let the JVM's own dumper
    # write the dump, and a build from before it would then be compared with a different dumper.
    walk = {agent: ",dumper=jvmti" if heap_dump_bench.agent_accepts(java, agent, "dumper=jvmti", folder)[0] else ""
            for agent in set(agents.values())}

    def run_one(agent):
        # The figures line comes with FASTHPROF_DUMP_STATS=1 in some builds and with verbose=y in others.
        jvm = heap_dump_bench.Jvm(java, classes,
                                  f"-agentpath:{agent}=heap=dump,format=b,doe=n,verbose=y,file={dump}{walk[agent]}",
                                  args.objects, args.heap, folder, {"FASTHPROF_DUMP_STATS": "1"})
        try:
            seconds, stats, before, peak = heap_dump_bench.quit_dump(jvm)
            size = dump.stat().st_size
        finally:
            jvm.stop()
        dump.unlink(missing_ok=True)
        objects = int(stats["objects"]) + int(stats["classes"])
        return {"seconds": seconds, "walk_seconds": float(stats["walk_seconds"]),
                "clear_seconds": float(stats["clear_seconds"]), "objects_per_s": objects / max(seconds, 1e-9) / 1e6,
                "mb": size / 1e6, "peak_extra_mib": (peak - before) / 1024}

    try:
        results = alternate("dump", args.runs, agents, run_one)
    finally:
        subprocess.run(["rm", "-rf", str(folder)])
    return report(f"heap dump: HeapBuilder {args.objects} objects, -Xmx{args.heap}, heap=dump,format=b, "
                  f"kill -QUIT to done less the tag clean-up",
                  [("seconds", "dump time", "s", LOWER, True), ("walk_seconds", "walk", "s", LOWER, False),
                   ("clear_seconds", "tag clean-up (not in the dump time)", "s", LOWER, False),
                   ("peak_extra_mib", "peak extra RSS", "MiB", LOWER, False)], results), results


def bench_cpu(args, agents, work):
    classes = os.environ.get("TEST_CLASSES")
    if not classes:
        # As tests/java/compile_java.sh compiles it for meson.
        classes = str(work / "cpu-classes")
        subprocess.run([os.path.join(args.java_home, "bin", "javac"), "--release", "17", "-g", "-encoding", "UTF-8",
                        "-d", classes, str(HERE.parent / "tests" / "java" / "CpuBusy.java")], check=True)
    cpu_samples_bench.CLASSES = classes
    os.environ["FASTHPROF_BENCH_JAVA_HOME"] = args.java_home

    def run_one(agent):
        cpu_samples_bench.AGENT = agent
        # The default stack path (signal) without naming it: builds from before cpustacks= take it too.
        r = cpu_samples_bench.run_busy(args.cpu_threads, args.cpu_millis, "default")
        figures = {"samples_ratio": r["raw_ratio"], "round_mean_us": r["round_mean_ms"] * 1000,
                   "work_per_ms": r["work"] / r["run_ms"]}
        if "agent_cpu_share" in r:
            figures["agent_cpu_pct"] = 100 * r["agent_cpu_share"]
        return figures

    results = alternate("cpu", args.runs, agents, run_one)
    return report(f"cpu=samples: CpuBusy {args.cpu_threads} busy threads, {args.cpu_millis} ms, interval "
                  f"{cpu_samples_bench.INTERVAL_MS} ms, signal path",
                  [("samples_ratio", "samples taken / expected (raw)", "ratio", HIGHER, True),
                   ("round_mean_us", "round cost, mean", "us", LOWER, False),
                   ("agent_cpu_pct", "agent's own CPU", "% of a core", LOWER, False),
                   ("work_per_ms", "busy threads' work with the agent", "work/ms", HIGHER, True)], results), results


BENCHES = {"alloc": bench_alloc, "dump": bench_dump, "cpu": bench_cpu}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", required=True, help="the old build's libfasthprof.so")
    parser.add_argument("--new", required=True, help="the new build's libfasthprof.so")
    parser.add_argument("--java-home", default="/usr/lib/jvm/java-17-openjdk-amd64")
    parser.add_argument("--runs", type=int, default=5, help="runs of each build per benchmark (issue 13: >= 5)")
    parser.add_argument("--only", default="alloc,dump,cpu", help="comma-separated subset of alloc,dump,cpu")
    parser.add_argument("--iterations", type=int, default=alloc_overhead_bench.ITERATIONS, help="AllocLoop iterations")
    parser.add_argument("--objects", type=int, default=2_000_000, help="HeapBuilder objects")
    parser.add_argument("--heap", default="1g", help="-Xmx of the dump runs")
    parser.add_argument("--cpu-threads", type=int, default=8)
    parser.add_argument("--cpu-millis", type=int, default=3000)
    parser.add_argument("--smoke", action="store_true", help="one small run of each build (bench-smoke suite)")
    parser.add_argument("--json", help="write every figure to this file")
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.iterations, args.objects, args.heap = 1, 20_000, 100_000, "256m"
        args.cpu_threads, args.cpu_millis = 2, 500
    names = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in names if name not in BENCHES]
    if unknown or not names:
        sys.exit(f"--only: unknown benchmark {unknown}; choose from {', '.join(BENCHES)}")
    if args.runs < 1:
        sys.exit("--runs must be at least 1")
    agents = {"old": os.path.abspath(args.old), "new": os.path.abspath(args.new)}
    for side, path in agents.items():
        if not os.path.isfile(path):
            sys.exit(f"--{side}: no such file {path}")

    print(f"old: {agents['old']}\nnew: {agents['new']}\njava: {args.java_home}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}; {args.runs} runs of each build per benchmark, order "
          f"old new new old (ABBA)")
    if args.runs < 5:
        print(f"note: {args.runs} runs of each: issue 13 asks for medians of at least 5")
    work = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-ab-"))
    summary, raw = {}, {}
    try:
        for name in names:
            summary[name], raw[name] = BENCHES[name](args, agents, work)
    finally:
        subprocess.run(["rm", "-rf", str(work)])
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"old": agents["old"], "new": agents["new"], "runs": args.runs,
                                                       "summary": summary, "runs_in_order": raw}, indent=1))
    def worse(headline):
        return [f"{name} {key}" for name, rows in summary.items() for key, row in rows.items()
                if row["verdict"] != "no worse" and row["headline"] == headline]
    if worse(False):
        print("other figures worse: " + ", ".join(worse(False)))
    print("verdict: " + ("no worse on every headline figure" if not worse(True) else "WORSE: " + ", ".join(worse(True))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
