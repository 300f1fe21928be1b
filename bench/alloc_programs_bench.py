#!/usr/bin/env python3
"""Issue 28: what exact allocation tracking costs real programs (bench/README.md "Allocation tracking
on real programs"). Two programs, each run by the contenders below side by side, alternating, the order
rotating by one every round (the machine is shared and noisy):

  none    no agent
  floor   bench/floor_agent.cpp at depth 4: SampledObjectAlloc at interval 0 + GetStackTrace + SetTag,
          the JVMTI floor of exact tracking
  sites   fasthprof heap=sites,depth=4 (exact, live columns too: by its default alloc=auto, counted
          by injected code, each object's site written into its header, a collection and heap walk
          at the report)
  sites1  the same at depth=1
  sites_event  fasthprof heap=sites,alloc=event,depth=4 (the JVMTI event per allocation, every
          object tagged and followed; not run unless asked for)
  live_n  fasthprof heap=sites,live=n,alloc=event,depth=4 (every allocation counted by its event, no object
          followed)
  inject  fasthprof heap=sites,live=n,alloc=inject,depth=4 (counted by injected code, what live=n's
          default alloc=auto does; traces of 4 frames by the cached walk of the thread's frames)
  inject1 fasthprof heap=sites,live=n,alloc=inject,depth=1 (traces of one frame: no calls injected
          but the allocation calls)
  s512k   fasthprof heap=sites,sample=512k,depth=4
  all     fasthprof heap=all,depth=4 (heap=sites as `sites`, and a text heap dump at exit whose objects
          name their allocation traces, read from their headers; the default set)
  all_event  fasthprof heap=all,alloc=event,depth=4 (the same by the event's tags; not run unless
          asked for)
  times   fasthprof cpu=times,depth=4 (the shadow stack with times, no allocation counted)
  inject_base, inject1_base, times_base   inject, inject1 and times with FASTHPROF_BASE_AGENT,
          another build of the agent (before a change), for a side by side comparison

Programs:
  javac   the JDK's own javac compiling the first 60 (by name) top-level sources of java.util from the
          JDK's lib/src.zip. java.util classes cannot be compiled as ordinary sources (a package of
          java.base), so they are compiled as a patch of the module: javac --patch-module
          java.base=<src> -d <out> <files>. Only the 60 files are extracted into <src>, so javac
          compiles them alone (about 260 class files on JDK 25) and takes every other type from the
          JDK's classes; with the whole java.util tree in <src> it would also compile the ~1000
          classes of the sources they use (5 sources then cost as much as 60).
          The agent goes in with -J-agentpath. JDK 25 when JAVA25_HOME (default
          /usr/lib/jvm/temurin-25-jdk-amd64) exists, else JDK 17 (JAVA17_HOME), said in the output.
  h2      bench/java/H2Load.java on Debian's H2 2.1 (/usr/share/java/h2.jar, or FASTHPROF_H2_JAR):
          an in-memory database, 4 threads, 40 000 rows inserted in batches, then point lookups of
          every row, range sums and aggregates; on the same JDK as javac.

Per run: the process's wall time and its CPU time (user + system of the child, from the resource
usage of the waited child). Prints per contender the medians of --rounds rounds and their ratios to
none, then the headline lines `alloc_programs: <program> heap=sites / none: X x wall`. Every run is
checked: javac's exit status and class files, H2Load's checksums, and for fasthprof a SITES section
in its file, with rows for the exact contenders; a failed run stops the benchmark with what went wrong.

--smoke: javac on 5 sources, H2 with 2000 rows and 2 threads, one round of every contender.
--contenders LIST: only these (comma separated; none is always run).
--json FILE: the ratios (<program>_<contender>_wall_ratio, _cpu_ratio) and the medians.
Environment (set by meson): FASTHPROF_AGENT, FASTHPROF_FLOOR_AGENT, JAVA25_HOME, JAVA17_HOME."""
import argparse
import json
import os
import pathlib
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = pathlib.Path(__file__).resolve().parent
AGENT = os.environ.get("FASTHPROF_AGENT", "")
FLOOR = os.environ.get("FASTHPROF_FLOOR_AGENT", "")
BASE = os.environ.get("FASTHPROF_BASE_AGENT", "")
JAVA25 = os.environ.get("JAVA25_HOME") or "/usr/lib/jvm/temurin-25-jdk-amd64"
JAVA17 = os.environ.get("JAVA17_HOME") or "/usr/lib/jvm/java-17-openjdk-amd64"
H2_JAR = os.environ.get("FASTHPROF_H2_JAR") or "/usr/share/java/h2.jar"
DEPTH = 4
CONTENDERS = ["none", "floor", "sites", "live_n", "inject", "inject1", "sites1", "s512k", "all", "sites_event",
              "all_event", "times", "inject_base", "inject1_base", "times_base"]
DEFAULT_CONTENDERS = CONTENDERS[:9]
AGENT_OPTIONS = {"sites": "heap=sites", "live_n": "heap=sites,live=n,alloc=event", "inject": "heap=sites,live=n,alloc=inject",
                 "inject1": "heap=sites,live=n,alloc=inject", "sites1": "heap=sites", "sites_event": "heap=sites,alloc=event",
                 "s512k": "heap=sites,sample=512k", "times": "cpu=times", "all": "heap=all",
                 "all_event": "heap=all,alloc=event"}
AGENT_OPTIONS["inject_base"] = AGENT_OPTIONS["inject"]
AGENT_OPTIONS["inject1_base"] = AGENT_OPTIONS["inject1"]
AGENT_OPTIONS["times_base"] = AGENT_OPTIONS["times"]
# Contenders at another depth than DEPTH.
DEPTHS = {"inject1": 1, "inject1_base": 1, "sites1": 1}
H2_LINE = re.compile(r"H2Load rows=(\d+) threads=(\d+) elapsed_ms=(\d+) count=(\d+) qty_sum=(\d+) "
                     r"lookup_sum=(\d+) range_sum=(\d+) aggregate_sum=(\d+)")
SITE_ROW = re.compile(r"^\s*\d+\s+[\d.]+%\s+[\d.]+%\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\S+$", re.M)


class Failed(Exception):
    pass


def java_home():
    """(JDK home, note): JDK 25 if it is there, else JDK 17 with a note saying so."""
    if (pathlib.Path(JAVA25) / "bin" / "java").exists():
        return JAVA25, ""
    return JAVA17, f" (no JDK 25 at {JAVA25}: JDK 17 instead)"


def agent_flags(name, work, tag):
    """The JVM options that put contender `name` in; its report file (or None)."""
    if name == "none":
        return [], None
    if name == "floor":
        return [f"-agentpath:{FLOOR}=depth={DEPTH}"], None
    report = work / f"{tag}-{name}.txt"
    report.unlink(missing_ok=True)
    path = BASE if name.endswith("_base") else AGENT
    return [f"-agentpath:{path}={AGENT_OPTIONS[name]},depth={DEPTHS.get(name, DEPTH)},verbose=n,file={report}"], report


def timed(command, cwd, label):
    """(wall s, CPU s, stdout) of one run; the CPU time is the waited child's user + system."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    try:
        proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=3600)
    except subprocess.TimeoutExpired:
        raise Failed(f"{label}: no end after 3600 s: {' '.join(command)}") from None
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise Failed(f"{label}: exit {proc.returncode}: {' '.join(command)}\n{proc.stdout[-2000:]}\n"
                     f"{proc.stderr[-2000:]}")
    return wall, cpu, proc.stdout


def check_report(report, label, name):
    """The contender's file has a SITES section; an exact contender's has rows. A sampled one's may
    be empty: SITES lists sites by live bytes above the cutoff, and on a short run every sampled
    object can be dead by the report (CI saw it on the smoke's H2 with 2000 rows). A cpu=times
    contender's has a CPU TIME section instead."""
    if report is None:
        return
    options = AGENT_OPTIONS.get(name, "")
    try:
        text = report.read_text(errors="replace")
    except OSError as error:
        raise Failed(f"{label}: no agent output: {error}") from None
    if "cpu=times" in options:
        if "CPU TIME (ms) BEGIN" not in text:
            raise Failed(f"{label}: {report} has no CPU TIME section")
        return
    begin = text.find("SITES BEGIN")
    end = text.find("SITES END", begin)
    if begin < 0 or end < 0:
        raise Failed(f"{label}: {report} has no SITES section")
    if "sample=" not in options and not SITE_ROW.search(text[begin:end]):
        raise Failed(f"{label}: {report} has no SITES section with rows")
    if "heap=all" in options:
        traces = re.findall(r"^OBJ \S+ \(sz=\d+, trace=(\d+),", text, re.M)
        if not traces or all(t == "300000" for t in traces):
            raise Failed(f"{label}: {report} has no heap dump whose objects name their allocation traces")


def javac_part(work, home, sources):
    """The javac program: (run(name, round) -> (wall, CPU), description)."""
    source_root = work / "src"
    with zipfile.ZipFile(pathlib.Path(home) / "lib" / "src.zip") as archive:
        wanted = sorted(n for n in archive.namelist()
                        if re.fullmatch(r"java\.base/java/util/[A-Za-z0-9_]+\.java", n))[:sources]
        archive.extractall(source_root, wanted)
    files = [str(source_root / name) for name in wanted]
    javac = os.path.join(home, "bin", "javac")

    def run(name, round_number):
        out = work / "javac-out"
        shutil.rmtree(out, ignore_errors=True)
        flags, report = agent_flags(name, work, "javac")
        label = f"javac {name} round {round_number + 1}"
        wall, cpu, _ = timed([javac, *[f"-J{f}" for f in flags], "--patch-module",
                              f"java.base={source_root / 'java.base'}", "-d", str(out), *files], work, label)
        missing = [name for name in wanted
                   if not (out / "java" / "util" / (pathlib.Path(name).stem + ".class")).exists()]
        if missing:
            raise Failed(f"{label}: javac wrote no class file for {missing[:3]} ({len(missing)} missing)")
        check_report(report, label, name)
        return wall, cpu

    return run, f"javac: {len(files)} java.util sources (--patch-module java.base)"


def h2_expected(rows):
    total = sum((i * 7919 + 13) % 1000 for i in range(rows))
    return {"count": rows, "qty_sum": total, "lookup_sum": total, "range_sum": total, "aggregate_sum": total}


def h2_part(work, home, rows, threads):
    """The H2 program: (run(name, round) -> (wall, CPU), description)."""
    if not pathlib.Path(H2_JAR).exists():
        raise Failed(f"no H2 at {H2_JAR} (apt-get install libh2-java, or set FASTHPROF_H2_JAR)")
    classes = work / "h2load"
    subprocess.run([os.path.join(home, "bin", "javac"), "-cp", H2_JAR, "-d", str(classes),
                    str(HERE / "java" / "H2Load.java")], check=True)
    java = os.path.join(home, "bin", "java")
    expected = h2_expected(rows)

    def run(name, round_number):
        flags, report = agent_flags(name, work, "h2")
        label = f"h2 {name} round {round_number + 1}"
        wall, cpu, out = timed([java, *flags, "-cp", f"{H2_JAR}:{classes}", "H2Load", str(rows), str(threads)],
                               work, label)
        found = H2_LINE.search(out)
        if not found:
            raise Failed(f"{label}: H2Load printed no result line:\n{out[-2000:]}")
        got = dict(zip(["count", "qty_sum", "lookup_sum", "range_sum", "aggregate_sum"],
                       map(int, found.groups()[3:])))
        if got != expected:
            raise Failed(f"{label}: wrong checksums {got}, expected {expected}")
        check_report(report, label, name)
        return wall, cpu

    return run, f"h2: H2Load {rows} rows, {threads} threads ({H2_JAR})"


def measure(run, rounds):
    """{contender: {"wall": [...], "cpu": [...]}}, alternating, the order rotating every round."""
    runs = {name: {"wall": [], "cpu": []} for name in CONTENDERS}
    for round_number in range(rounds):
        shift = round_number % len(CONTENDERS)
        for name in CONTENDERS[shift:] + CONTENDERS[:shift]:
            wall, cpu = run(name, round_number)
            runs[name]["wall"].append(wall)
            runs[name]["cpu"].append(cpu)
            print(f"  [{name} round {round_number + 1}: {wall:.2f} s wall, {cpu:.2f} s CPU]", flush=True)
    return runs


def report_part(part, description, runs, rounds, figures):
    medians = {name: {kind: statistics.median(values) for kind, values in runs[name].items()} for name in CONTENDERS}
    print(f"{description}, median of {rounds} alternating round{'s' if rounds > 1 else ''}:")
    base = medians["none"]
    for name in CONTENDERS:
        wall, cpu = medians[name]["wall"], medians[name]["cpu"]
        spread = f"{min(runs[name]['wall']):.2f}..{max(runs[name]['wall']):.2f}"
        print(f"  {name:11s} wall {wall:8.2f} s ({spread})  CPU {cpu:8.2f} s   / none: wall {wall / base['wall']:6.2f} x, "
              f"CPU {cpu / base['cpu']:6.2f} x")
        if name != "none":
            figures[f"{part}_{name}_wall_ratio"] = wall / base["wall"]
            figures[f"{part}_{name}_cpu_ratio"] = cpu / base["cpu"]
    figures["medians"][part] = medians
    figures["runs"][part] = runs
    for name, shown in (("sites", "heap=sites"), ("live_n", "heap=sites,live=n,alloc=event"),
                        ("inject", "heap=sites,live=n,alloc=inject,depth=4"),
                        ("inject1", "heap=sites,live=n,alloc=inject,depth=1"),
                        ("sites1", "heap=sites,depth=1"), ("sites_event", "heap=sites,alloc=event"), ("s512k", "sample=512k"),
                        ("all", "heap=all"), ("all_event", "heap=all,alloc=event"),
                        ("floor", "floor"),
                        ("times", "cpu=times,depth=4"), ("inject_base", "base: heap=sites,live=n,alloc=inject,depth=4"),
                        ("inject1_base", "base: heap=sites,live=n,alloc=inject,depth=1"),
                        ("times_base", "base: cpu=times,depth=4")):
        if name not in CONTENDERS:
            continue
        print(f"alloc_programs: {part} {shown} / none: {figures[f'{part}_{name}_wall_ratio']:.2f} x wall, "
              f"{figures[f'{part}_{name}_cpu_ratio']:.2f} x CPU")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="javac on 5 sources, H2 2000 rows 2 threads, 1 round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parts", default="javac,h2", help="comma separated: javac, h2")
    parser.add_argument("--sources", type=int, default=60, help="java.util sources javac compiles")
    parser.add_argument("--rows", type=int, default=40000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--json", metavar="FILE", help="write the figures to FILE")
    parser.add_argument("--contenders", default=",".join(DEFAULT_CONTENDERS), help="comma separated; none is always run")
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.sources, args.rows, args.threads = 1, 5, 2000, 2
    parts = [p for p in args.parts.split(",") if p]
    if not parts or any(p not in ("javac", "h2") for p in parts) or args.rounds < 1:
        parser.error("--parts takes javac and/or h2; --rounds at least 1")
    chosen = ["none"] + [c for c in CONTENDERS if c != "none" and c in args.contenders.split(",")]
    if any(c not in CONTENDERS for c in args.contenders.split(",") if c):
        parser.error(f"--contenders takes {', '.join(CONTENDERS)}")
    CONTENDERS[:] = chosen
    if not (AGENT and FLOOR):
        parser.error("FASTHPROF_AGENT and FASTHPROF_FLOOR_AGENT must name the agent and the floor agent")
    if not BASE and any(c.endswith("_base") for c in CONTENDERS):
        parser.error("the _base contenders need FASTHPROF_BASE_AGENT")
    home, note = java_home()
    print(f"alloc_programs: JDK {home}{note}; contenders {', '.join(CONTENDERS)}; depth {DEPTH}", flush=True)
    figures = {"jdk": home, "rounds": args.rounds, "medians": {}, "runs": {}}
    try:
        with tempfile.TemporaryDirectory(prefix="fasthprof-allocprograms-") as folder:
            work = pathlib.Path(folder)
            for part in parts:
                if part == "javac":
                    run, description = javac_part(work, home, args.sources)
                else:
                    run, description = h2_part(work, home, args.rows, args.threads)
                print(description, flush=True)
                report_part(part, description, measure(run, args.rounds), args.rounds, figures)
    except Failed as error:
        sys.exit(f"alloc_programs: a run failed: {error}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
