"""heap=dump on a large heap (docs/performance.md §1), three parts, each side by side in one run,
alternating (ABBA order), medians of --rounds runs (bench/README.md "heap=dump"):

 1. walk: the JVMTI walk against its floor (bench/heap_floor_agent.cpp: one FollowReferences that
    tags every object, nothing else), one JVM per run, on the file system of FASTHPROF_BENCH_DIR;
    fasthprof timed from kill -QUIT to the complete file (" done." on stderr) less the tag clean-up.
    Beside it: where the VM thread's time went (on a core, waiting for one, blocked), the io thread's
    CPU, and `dd` of the same number of bytes to the same folder (page cache, and to the disk).
 2. vm: fasthprof `dumper=vm` (the JVM's dumper through attach; `auto` picks fork where it can, which
    bench/fork_dump_bench.py measures) against `jcmd GC.heap_dump` (both live dumps, same folder), in one
    JVM per JDK (17, and 25 when installed), alternating: wall, and the pause: the safepoint totals of
    -Xlog:safepoint over the request, and the application's own view (a ticker thread that notes every
    gap of more than 20 ms, which also covers the walk's thread suspension).
 3. gz: `gz=y` for each dumper: MB/s (uncompressed bytes per second of wall), compression ratio, pause.

Parts whose options the agent does not accept (dumper=, gz=y) print a SKIP line and run what they can.

  python3 bench/heap_dump_bench.py --floor build/bench/libheapfloor.so [--objects 16000000] [--heap 12g]
        [--rounds 3] [--parts walk,vm,gz] [--json FILE]
  python3 bench/heap_dump_bench.py --floor ... --smoke       (small, one round: bench-smoke suite)
Environment: FASTHPROF_AGENT, JAVA17_HOME, JAVA25_HOME (set by meson), FASTHPROF_BENCH_DIR (where dumps go).
"""
import argparse
import gzip
import json
import os
import pathlib
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import attach_sockets  # noqa: F401 (removes the attach sockets of JVMs it killed, at exit)

HERE = pathlib.Path(__file__).resolve().parent
DONE = r" done\.\n"


def rss_kib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def thread_times(pid):
    """{thread name: (seconds on a core, seconds runnable but waiting for a core)} from schedstat."""
    times = {}
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return times
    for task in tasks:
        try:
            name = open(f"/proc/{pid}/task/{task}/comm").read().strip()
            run, wait, _ = (int(x) for x in open(f"/proc/{pid}/task/{task}/schedstat").read().split())
        except (OSError, ValueError):
            continue
        previous = times.get(name, (0.0, 0.0))
        times[name] = (previous[0] + run / 1e9, previous[1] + wait / 1e9)
    return times


def thread_delta(before, after, name):
    a, b = before.get(name, (0.0, 0.0)), after.get(name, (0.0, 0.0))
    return b[0] - a[0], b[1] - a[1]


class Jvm:
    def __init__(self, java, classes, agent_arg, objects, heap, folder, env_extra=None, options=(), tick=False):
        self.folder = folder
        self.err_path = folder / f"stderr-{time.time_ns()}.txt"
        env = dict(os.environ)
        env.pop("JAVA_TOOL_OPTIONS", None)
        env.update(env_extra or {})
        command = [java, f"-Xmx{heap}", "-XX:+UseParallelGC", *options]
        if agent_arg:
            command.append(agent_arg)
        command += ["-cp", str(classes), "HeapBuilder", str(objects)] + (["tick"] if tick else [])
        self.proc = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE,
                                     stderr=open(self.err_path, "w"), text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError(f"heap builder failed: {line}{self.stderr()}")
        self.objects = int(line.split()[1])

    def stderr(self):
        return self.err_path.read_text(errors="replace")

    def wait_for(self, pattern, count, timeout):
        deadline = time.time() + timeout
        peak = rss_kib(self.proc.pid)
        while time.time() < deadline:
            peak = max(peak, rss_kib(self.proc.pid))
            if len(re.findall(pattern, self.stderr())) >= count:
                return peak
            if self.proc.poll() is not None:
                raise RuntimeError(f"the JVM ended waiting for {pattern!r}:\n{self.stderr()}")
            time.sleep(0.01)
        raise RuntimeError(f"timed out waiting for {pattern!r}:\n{self.stderr()}")

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def quit_dump(jvm):
    """fasthprof's dump of a Jvm started with heap=dump and verbose=y, timed from
    kill -QUIT to " done." on stderr, less the tag clean-up. Also used by bench/ab_compare.py.
    Returns (seconds, the "heap dump stats" figures, RSS before in KiB, peak RSS during in KiB)."""
    # Nothing of the heap builds (or of a dump before) left to write back while this one writes.
    os.sync()
    stats_seen = len(re.findall(r"heap dump stats:", jvm.stderr()))
    before = rss_kib(jvm.proc.pid)
    started = time.monotonic()
    os.kill(jvm.proc.pid, signal.SIGQUIT)
    stats_done = jvm.wait_for(r"heap dump stats:", stats_seen + 1, 3600)
    peak = jvm.wait_for(DONE, stats_seen + 1, 3600)
    seconds = time.monotonic() - started
    line = re.findall(r"heap dump stats:[^\n]*", jvm.stderr())[-1]
    stats = dict(re.findall(r"(\w+)=([\d.]+)", line))
    # The tag clean-up runs before " done.": excluded, as for the floor.
    seconds -= float(stats["clear_seconds"])
    return seconds, stats, before, max(peak, stats_done)


def agent_accepts(java, agent, options, folder):
    """Whether the agent takes heap=dump,format=b,<options> (a JVM running -version with it): returns
    (True, "") or (False, the agent's message)."""
    probe = folder / "probe.hprof"
    run = subprocess.run([java, f"-agentpath:{agent}=heap=dump,format=b,doe=n,file={probe},{options}", "-version"],
                         capture_output=True, text=True)
    probe.unlink(missing_ok=True)
    lines = [l for l in run.stderr.splitlines() if "fasthprof" in l or "HPROF" in l or "option" in l]
    refused = [l for l in lines if re.search(r"not implemented|option error|Unknown option|invalid", l, re.I)]
    if run.returncode != 0 or refused:
        return False, (refused or lines or [f"exit status {run.returncode}"])[0].strip()
    return True, ""


def fs_type(folder):
    """The folder's file system and device, e.g. "ext4 /dev/vda"."""
    found = subprocess.run(["findmnt", "-n", "-o", "FSTYPE,SOURCE", "--target", str(folder)], capture_output=True,
                           text=True).stdout.splitlines()
    return " ".join(found[0].split()) if found else "?"


def dd_rates(folder, size):
    """MB/s of dd writing size bytes (1 MiB blocks) into folder: into the page cache, and to the disk
    (conv=fdatasync), each after a sync."""
    target = folder / "dd.bin"
    count = max(1, (size + (1 << 20) - 1) >> 20)
    rates = []
    for extra in ([], ["conv=fdatasync"]):
        os.sync()
        started = time.monotonic()
        subprocess.run(["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={count}", "status=none", *extra],
                       check=True)
        rates.append(count * (1 << 20) / 1e6 / (time.monotonic() - started))
        target.unlink()
    os.sync()
    return rates


def median(values):
    return statistics.median(values) if values else float("nan")


def spread(values):
    return (max(values) - min(values)) if values else float("nan")


def span(values, fmt="{:.2f}"):
    if not values:
        return "-"
    return f"{fmt.format(median(values))} ({fmt.format(min(values))}..{fmt.format(max(values))}, n={len(values)})"


class PauseLog:
    """The pauses of one JVM started with -Xlog:safepoint:file=<path> and HeapBuilder's ticker."""

    def __init__(self, jvm, path):
        self.jvm, self.path, self.offset = jvm, path, 0

    def mark(self):
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def over(self, started, ended):
        """(sum of the safepoint totals logged since mark(), the ticker's stalls overlapping
        [started, ended] in seconds)."""
        time.sleep(0.2)  # the ticker prints a stall once it is over; the log is written after each safepoint
        with open(self.path, "rb") as log:
            log.seek(self.offset)
            text = log.read().decode(errors="replace")
        safepoints = sum(int(n) for n in re.findall(r"Total: (\d+) ns", text)) / 1e9
        stalled = 0.0
        # Not anchored: a stall line can follow the agent's "Dumping Java heap ..." on the same line.
        for a, b in re.findall(r"stall (\d+) (\d+)\n", self.jvm.stderr()):
            a, b = int(a) / 1e9, int(b) / 1e9
            stalled += max(0.0, min(b, ended) - max(a, started))
        return safepoints, stalled


def timed_jcmd(jcmd, jvm, pauses, target, extra=()):
    os.sync()
    pauses.mark()
    started = time.monotonic()
    run = subprocess.run([jcmd, str(jvm.proc.pid), "GC.heap_dump", *extra, str(target)], check=True,
                         capture_output=True, text=True)
    ended = time.monotonic()
    match = re.search(r"in ([\d.]+) secs", run.stdout)
    in_vm = float(match.group(1)) if match else float("nan")
    size = target.stat().st_size
    target.unlink()
    safepoints, stalled = pauses.over(started, ended)
    return {"wall": ended - started, "in_vm": in_vm, "bytes": size, "safepoints": safepoints, "stalled": stalled,
            "pause": max(safepoints, stalled)}


def timed_quit(jvm, pauses, output):
    """One fasthprof dump on kill -QUIT, the whole request (tag clean-up included: the user waits for it)."""
    os.sync()
    done = len(re.findall(DONE, jvm.stderr()))
    size_before = output.stat().st_size if output.exists() else 0
    pauses.mark()
    started = time.monotonic()
    os.kill(jvm.proc.pid, signal.SIGQUIT)
    jvm.wait_for(DONE, done + 1, 3600)
    ended = time.monotonic()
    safepoints, stalled = pauses.over(started, ended)
    return {"wall": ended - started, "bytes": output.stat().st_size - size_before, "safepoints": safepoints,
            "stalled": stalled, "pause": max(safepoints, stalled)}


def walk_members(args, folder):
    """The runs of one round of the walk part: the floor, fasthprof into folder, and one fasthprof run
    per --also LABEL=DIR[,NAME=VALUE...] (another folder, e.g. tmpfs, and environment for the JVM)."""
    members = [("floor", folder, {}), ("fasthprof", folder, {})]
    for also in args.also:
        label, _, rest = also.partition("=")
        where, *settings = rest.split(",")
        members.append((label, pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-heapbench-", dir=where)),
                        dict(setting.split("=", 1) for setting in settings)))
    return members


def part_walk(args, java, agent, classes, folder, dumper_option, result):
    members = walk_members(args, folder)
    print(f"== walk: the JVMTI walk against its floor, {args.rounds} rounds alternating, "
          f"output on {folder} ({fs_type(folder)})")
    for label, where, env in members[2:]:
        print(f"   also fasthprof as {label!r}: output on {where} ({fs_type(where)}) {env or ''}")
    runs = {label: [] for label, _, _ in members}
    rates = []
    try:
        for round_ in range(args.rounds):
            order = members if round_ % 2 == 0 else list(reversed(members))
            for label, where, env in order:
                runs[label].append(walk_run(args, java, agent, classes, where, dumper_option, label, env))
                run = runs[label][-1]
                extra = (f", io thread CPU {run['io_cpu']:.2f} s, {run['bytes'] / 1e6:.0f} MB" if label != "floor" else f", {run['objects']} objects")
                print(f"  round {round_ + 1} {label:9s}: {run['seconds']:7.2f} s  (VM thread over the request: "
                      f"CPU {run['vm_cpu']:.2f} s, waiting for a core {run['vm_queued']:.2f} s, blocked "
                      f"{run['vm_blocked']:.2f} s{extra}; load {run['load']:.1f})", flush=True)
            rates.append(dd_rates(folder, runs["fasthprof"][-1]["bytes"]))
            print(f"  round {round_ + 1} dd of {runs['fasthprof'][-1]['bytes'] / 1e6:.0f} MB: page cache "
                  f"{rates[-1][0]:.0f} MB/s, to the disk (fdatasync) {rates[-1][1]:.0f} MB/s", flush=True)
    finally:
        for _, where, _ in members[2:]:
            shutil.rmtree(where, ignore_errors=True)
    floors, ours = runs["floor"], runs["fasthprof"]
    floor_s, ours_s = [r["seconds"] for r in floors], [r["seconds"] for r in ours]
    ratios = [o / f for o, f in zip(ours_s, floor_s)]
    size = median([r["bytes"] for r in ours])
    print(f"heap: {ours[0]['objects']} objects, -Xmx{args.heap}; dump {size / 1e6:.0f} MB")
    print(f"(a) floor FollowReferences + tags: {span(floor_s)} s; tag clean-up {span([r['clear'] for r in floors])} s")
    for label, _, _ in members[1:]:
        these = runs[label]
        seconds = [r["seconds"] for r in these]
        print(f"(b) fasthprof {label}, kill -QUIT to done: {span(seconds)} s (walk {span([r['walk'] for r in these])} s); "
              f"{size / 1e6 / median(seconds):.0f} MB/s; tag clean-up {span([r['clear'] for r in these])} s (excluded); "
              f"/ floor {median(seconds) / median(floor_s):.2f}")
        print(f"    VM thread CPU {span([r['vm_cpu'] for r in these])} s (floor {span([r['vm_cpu'] for r in floors])} s), "
              f"blocked {span([r['vm_blocked'] for r in these])} s (floor {span([r['vm_blocked'] for r in floors])} s); "
              f"io thread CPU {span([r['io_cpu'] for r in these])} s")
    print(f"dd of {size / 1e6:.0f} MB to the same folder: page cache {span([r[0] for r in rates], '{:.0f}')} MB/s, "
          f"to the disk {span([r[1] for r in rates], '{:.0f}')} MB/s; fasthprof wrote "
          f"{size / 1e6 / median(ours_s):.0f} MB/s")
    print(f"peak extra RSS during the dump: {median([r['peak_extra_rss_mib'] for r in ours]):.0f} MiB "
          f"(JVM tag map included); largest carried-length table: {max(r['peak_pending'] for r in ours)} entries")
    cpu_ratio = median([r["vm_cpu"] for r in ours]) / max(1e-9, median([r["vm_cpu"] for r in floors]))
    print(f"ratio VM thread CPU fasthprof / floor (clean-up included in both): {cpu_ratio:.2f}")
    result["walk"] = {"runs": runs, "dd_mb_s": rates, "ratios": ratios,
                      "ratio_of_medians": median(ours_s) / median(floor_s), "vm_cpu_ratio": cpu_ratio}
    headline = f"ratio JVMTI walk / floor on {fs_type(folder)}: {median(ours_s) / median(floor_s):.2f} " \
               f"(per round {', '.join(f'{r:.2f}' for r in ratios)}; goal <= 1.15)"
    print(headline)
    return headline


def walk_run(args, java, agent, classes, where, dumper_option, label, env):
    """One JVM: the floor's walk or fasthprof's dump into where, with the VM thread's time split."""
    if label == "floor":
        jvm = Jvm(java, classes, f"-agentpath:{os.path.abspath(args.floor)}", args.objects, args.heap, where, env)
        os.sync()
        before = thread_times(jvm.proc.pid)
        started = time.monotonic()
        os.kill(jvm.proc.pid, signal.SIGQUIT)
        jvm.wait_for(r"heapfloor: walk_seconds", 1, 3600)
        wall = time.monotonic() - started
        after = thread_times(jvm.proc.pid)
        match = re.search(r"walk_seconds=([\d.]+) objects=(\d+) clear_seconds=([\d.]+)", jvm.stderr())
        run = {"seconds": float(match.group(1)), "objects": int(match.group(2)), "clear": float(match.group(3))}
    else:
        dump = where / "walk.hprof"
        jvm = Jvm(java, classes, f"-agentpath:{agent}=heap=dump,format=b,doe=n,verbose=y,file={dump}"
                  f"{dumper_option}", args.objects, args.heap, where, env)
        os.sync()  # quit_dump syncs again, with nothing left to write: the sync stays out of the split
        before = thread_times(jvm.proc.pid)
        started = time.monotonic()
        seconds, stats, rss_before, peak = quit_dump(jvm)
        wall = time.monotonic() - started
        after = thread_times(jvm.proc.pid)
        run = {"seconds": seconds, "walk": float(stats["walk_seconds"]), "clear": float(stats["clear_seconds"]),
               "objects": int(stats["objects"]) + int(stats["classes"]), "bytes": dump.stat().st_size,
               "peak_extra_rss_mib": (peak - rss_before) / 1024, "peak_pending": int(stats["peak_pending"])}
        run["io_cpu"] = thread_delta(before, after, "fasthprof-io")[0]
        dump.unlink(missing_ok=True)
    jvm.stop()
    # Where the VM thread's time went over the request (tag clean-up included for both).
    run["vm_cpu"], run["vm_queued"] = thread_delta(before, after, "VM Thread")
    run["vm_blocked"] = max(0.0, wall - run["vm_cpu"] - run["vm_queued"])
    run["wall"], run["load"] = wall, os.getloadavg()[0]
    return run


def part_vm(args, jdk, java, jcmd, agent, classes, folder, dumper_ok, result):
    label = "dumper=vm" if dumper_ok else "the JVMTI walk (no dumper= option)"
    print(f"== vm ({jdk}): fasthprof {label} against jcmd GC.heap_dump, one JVM, {args.rounds} rounds alternating")
    output, log = folder / f"vm-{jdk}.hprof", folder / f"safepoint-{jdk}.log"
    option = ",dumper=vm" if dumper_ok else ""
    jvm = Jvm(java, classes, f"-agentpath:{agent}=heap=dump,format=b,doe=n,verbose=y,file={output}{option}",
              args.objects, args.heap, folder, options=[f"-Xlog:safepoint:file={log}"], tick=True)
    pauses = PauseLog(jvm, log)
    runs = {"jcmd": [], "fasthprof": []}
    try:
        for round_ in range(args.rounds):
            for which in (("jcmd", "fasthprof") if round_ % 2 == 0 else ("fasthprof", "jcmd")):
                run = timed_jcmd(jcmd, jvm, pauses, folder / "jdk.hprof") if which == "jcmd" else \
                    timed_quit(jvm, pauses, output)
                runs[which].append(run)
                in_vm = f" (in the VM {run['in_vm']:.2f} s)" if which == "jcmd" else ""
                print(f"  round {round_ + 1} {which:9s}: {run['wall']:6.2f} s{in_vm}, {run['bytes'] / 1e6:.0f} MB, "
                      f"safepoints {run['safepoints']:.3f} s, application stalled {run['stalled']:.3f} s", flush=True)
        which_dumper = re.findall(r"[^\n]*dumper[^\n]*", jvm.stderr())
    finally:
        jvm.stop()
        output.unlink(missing_ok=True)
    jw, ow = [r["wall"] for r in runs["jcmd"]], [r["wall"] for r in runs["fasthprof"]]
    jv = [r["in_vm"] for r in runs["jcmd"]]
    jp, op = [r["pause"] for r in runs["jcmd"]], [r["pause"] for r in runs["fasthprof"]]
    if which_dumper:
        print(f"  agent said: {which_dumper[-1].strip()}")
    print(f"jcmd GC.heap_dump: command {span(jw)} s, in the VM {span(jv)} s, pause {span(jp, '{:.3f}')} s")
    print(f"fasthprof {label}: {span(ow)} s, pause {span(op, '{:.3f}')} s "
          f"(safepoints {span([r['safepoints'] for r in runs['fasthprof']], '{:.3f}')} s, "
          f"application stalled {span([r['stalled'] for r in runs['fasthprof']], '{:.3f}')} s)")
    wall_ratio = median(ow) / median(jv)
    pause_limit = median(jp) + spread(jp)
    result.setdefault("vm", {})[jdk] = {"dumper": label, "runs": runs, "wall_ratio_in_vm": wall_ratio,
                                        "wall_ratio_command": median(ow) / median(jw), "pause_limit": pause_limit}
    verdict = "within" if median(op) <= pause_limit else "ABOVE"
    headline = (f"{jdk}: fasthprof {label} / jcmd: wall {wall_ratio:.2f} against jcmd's in-VM time "
                f"({median(ow) / median(jw):.2f} against the jcmd command; goal <= 1.10); pause "
                f"{median(op):.3f} s, {verdict} jcmd's median + spread {pause_limit:.3f} s")
    print(headline)
    return headline


def part_gz(args, jdk, java, agent, classes, folder, dumpers, result):
    headlines = []
    for dumper in dumpers:
        print(f"== gz ({jdk}): gz=y{',' + dumper if dumper else ''}, {args.rounds} dumps")
        output, log = folder / f"gz-{jdk}.hprof.gz", folder / f"safepoint-gz-{jdk}.log"
        jvm = Jvm(java, classes, f"-agentpath:{agent}=heap=dump,format=b,gz=y,doe=n,verbose=y,file={output}"
                  f"{',' + dumper if dumper else ''}", args.objects, args.heap, folder,
                  options=[f"-Xlog:safepoint:file={log}"], tick=True)
        pauses = PauseLog(jvm, log)
        runs = []
        try:
            for round_ in range(args.rounds):
                runs.append(timed_quit(jvm, pauses, output))
                print(f"  dump {round_ + 1}: {runs[-1]['wall']:.2f} s, {runs[-1]['bytes'] / 1e6:.1f} MB compressed, "
                      f"pause {runs[-1]['pause']:.3f} s", flush=True)
        finally:
            jvm.stop()
        plain = 0
        try:
            with gzip.open(output, "rb") as stream:
                while chunk := stream.read(1 << 22):
                    plain += len(chunk)
        finally:
            output.unlink(missing_ok=True)
        packed = sum(r["bytes"] for r in runs)
        per_dump = plain / len(runs)
        walls = [r["wall"] for r in runs]
        name = dumper or "default dumper"
        result.setdefault("gz", {}).setdefault(jdk, {})[name] = {
            "runs": runs, "uncompressed_bytes": plain, "compressed_bytes": packed}
        line = (f"{jdk} gz=y {name}: {per_dump / 1e6 / median(walls):.0f} MB/s uncompressed "
                f"({per_dump / 1e6:.0f} MB in {span(walls)} s), ratio {plain / max(1, packed):.2f}, "
                f"pause {span([r['pause'] for r in runs], '{:.3f}')} s")
        print(line)
        headlines.append(line)
    return headlines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--floor", required=True)
    parser.add_argument("--objects", type=int, default=16_000_000)
    parser.add_argument("--heap", default="12g")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parts", default="walk,vm,gz")
    parser.add_argument("--also", action="append", default=[], metavar="LABEL=DIR[,NAME=VALUE...]",
                        help="walk part: also time fasthprof writing into DIR (e.g. shm=/dev/shm), with environment")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.smoke:
        args.objects, args.heap, args.rounds = 300_000, "512m", 1
    parts = set(args.parts.split(","))
    homes = {"JDK 17": os.environ.get("JAVA17_HOME") or "/usr/lib/jvm/java-17-openjdk-amd64",
             "JDK 25": os.environ.get("JAVA25_HOME") or "/usr/lib/jvm/temurin-25-jdk-amd64"}
    agent = os.environ["FASTHPROF_AGENT"]
    base = pathlib.Path(os.environ.get("FASTHPROF_BENCH_DIR") or tempfile.gettempdir())
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-heapbench-", dir=base))
    result, headlines = {"objects": args.objects, "heap": args.heap, "rounds": args.rounds}, []
    try:
        java17 = os.path.join(homes["JDK 17"], "bin", "java")
        classes = folder / "classes"
        subprocess.run([os.path.join(homes["JDK 17"], "bin", "javac"), "--release", "17", "-d", str(classes),
                        str(HERE / "HeapBuilder.java")], check=True)
        dumper_ok, why = agent_accepts(java17, agent, "dumper=jvmti", folder)
        if not dumper_ok:
            print(f"SKIP dumper=: the agent does not take it ({why}); the vm part compares its JVMTI walk")
        if "walk" in parts:
            headlines.append(part_walk(args, java17, agent, classes, folder, ",dumper=jvmti" if dumper_ok else "",
                                       result))
        for jdk, home in homes.items():
            java = os.path.join(home, "bin", "java")
            if not os.path.exists(java):
                print(f"SKIP {jdk}: no JDK at {home}")
                continue
            if "vm" in parts:
                headlines.append(part_vm(args, jdk, java, os.path.join(home, "bin", "jcmd"), agent, classes, folder,
                                         dumper_ok, result))
            if "gz" in parts:
                gz_ok, why = agent_accepts(java, agent, "gz=y", folder)
                if not gz_ok:
                    print(f"SKIP gz=y ({jdk}): {why}")
                    continue
                dumpers = ["dumper=vm", "dumper=jvmti"] if dumper_ok else [""]
                headlines += part_gz(args, jdk, java, agent, classes, folder, dumpers, result)
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(result, indent=2))
        print("== summary")
        for line in headlines:
            print(line)
        return 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
