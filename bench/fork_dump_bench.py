#!/usr/bin/env python3
"""dumper=fork against dumper=vm and `jcmd GC.heap_dump`: how long the program is held, how long
until the dump is complete (bench/README.md "dumper=fork").

The program is bench/java/DumpPauseHeap.java: a heap of small objects (size `objects`, 8 M by
default), or MiB-sized long[] blocks plus 1 M objects (size `large`, 6 GiB by default), then a probe
thread that sleeps 1 ms at a time and keeps its longest gap between wake-ups, and a light allocator.
Each configuration (JDK x size x huge pages off/on) runs --rounds rounds; each round dumps once with
each contender, the order rotating from round to round, one JVM per dump (every dump sees the same
freshly built heap, and three copies of a 6 GiB heap need not fit in memory at once):

  fork  fasthprof heap=dump,format=b,dumper=fork,verbose=y; kill -QUIT, wait for " done." on stderr
  vm    the same with dumper=vm (HotSpot's dumper through the attach socket: a live dump)
  jcmd  no agent; `jcmd <pid> GC.heap_dump <file>` (a live dump), until the command exits

Per dump: the pause, the larger of (a) the sum of the -Xlog:safepoint "Total:"s of the safepoints
logged over the request (kill -QUIT's thread dump included: it is part of asking) and (b) the probe's
longest gap over the request (adding them would count one stop twice); the time to done (trigger to
" done.", or to jcmd's exit; jcmd's own "in X secs" beside it); for fork the agent's fork_seconds,
pause_seconds and child_extra_bytes (its verbose=y stats line) and the child's time on a core, waiting
for one and page faults (polled); the drain thread's CPU; the collections -Xlog:gc logged during the
request (a collection in the parent while the fork's child writes is the largest pause seen: it is
printed, and counted in the pause as the safepoint it is). Then per configuration the medians
and the ratios fork / jcmd of the medians, pause (goal <= 0.10) and time to done (goal <= 2); the
last line is the headline of the first configuration.

  python3 bench/fork_dump_bench.py [--sizes objects,large] [--objects 8000000] [--heap-gb 6]
        [--jdks 17,25] [--thp off,on] [--rounds 3] [--json FILE]
  python3 bench/fork_dump_bench.py --smoke      (200 000 objects, one round, JDK 17: bench-smoke)
  python3 bench/fork_dump_bench.py --quick      (2 M objects, one round, JDK 17: bench/run --quick)
Environment: FASTHPROF_AGENT, JAVA17_HOME, JAVA25_HOME (set by meson), FASTHPROF_BENCH_DIR (where the
dumps go; a scratch folder is made in it and removed at the end).
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from heap_dump_bench import agent_accepts, fs_type, median, span  # noqa: E402

import attach_sockets  # noqa: F401 (removes the attach sockets of JVMs it killed, at exit)

CONTENDERS = ("fork", "vm", "jcmd")
DONE = re.compile(r" done\.\n")
SAFEPOINT = re.compile(r'Safepoint "([^"]+)".*?Total: (\d+) ns')
FORK_FAILED = re.compile(r"[^\n]*heap dump by fork failed[^\n]*|[^\n]*not by fork[^\n]*")
GOAL_PAUSE, GOAL_DONE = 0.10, 2.0
LARGE_OBJECTS = 1_000_000


class DumpFailed(Exception):
    pass


def thp_mode():
    """The kernel's transparent huge page mode (always, madvise, never), or None when it has none."""
    try:
        text = pathlib.Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return None
    found = re.search(r"\[(\w+)\]", text)
    return found.group(1) if found else None


def mem_available():
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def proc_kib(pid, field, name="smaps_rollup"):
    try:
        for line in open(f"/proc/{pid}/{name}"):
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Program:
    """One JVM running DumpPauseHeap: stdout, stderr and the safepoint log go to files (kill -QUIT's
    thread dump lands on stdout, so a pipe there could fill up and stop the VM thread)."""

    def __init__(self, java, classes, folder, config, agent_arg, tag):
        self.out, self.err, self.log, self.gc = (folder / f"{tag}.{kind}" for kind in ("out", "err", "safepoint", "gc"))
        command = [java, f"-Xmx{config['xmx']}", *config["jvm_options"], "-XX:+UseParallelGC",
                   f"-Xlog:safepoint:file={self.log}", f"-Xlog:gc:file={self.gc}"]
        if config["thp"]:
            command.append("-XX:+UseTransparentHugePages")
        if agent_arg:
            command.append(agent_arg)
        command += ["-cp", str(classes), "DumpPauseHeap", str(config["objects"]), str(config["fill_mib"])]
        env = {k: v for k, v in os.environ.items() if k not in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS")}
        with open(self.out, "w") as out, open(self.err, "w") as err:
            self.proc = subprocess.Popen(command, cwd=folder, env=env, stdin=subprocess.PIPE, stdout=out, stderr=err,
                                         text=True)
        self.pid = self.proc.pid
        started = time.monotonic()
        self.wait_reply("ready", 0, 900)
        self.ready_seconds = time.monotonic() - started

    def stderr(self):
        return self.err.read_text(errors="replace")

    def replies(self, word):
        return [line for line in self.out.read_text(errors="replace").splitlines() if line.split(" ", 1)[0] == word]

    def wait_reply(self, word, seen, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.replies(word)
            if len(got) > seen:
                return got[-1]
            if self.proc.poll() is not None:
                raise DumpFailed(f"the JVM ended (exit {self.proc.returncode}) waiting for {word!r}:\n"
                                 f"{self.stderr()[-3000:]}")
            time.sleep(0.01)
        raise DumpFailed(f"no {word!r} from the program in {timeout} s:\n{self.stderr()[-3000:]}")

    def ask(self, command, word, timeout=60):
        seen = len(self.replies(word))
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.wait_reply(word, seen, timeout)

    def wait_stderr(self, pattern, count, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(pattern.findall(self.stderr())) >= count:
                return
            if self.proc.poll() is not None:
                raise DumpFailed(f"the JVM ended (exit {self.proc.returncode}) during the dump:\n{self.stderr()[-3000:]}")
            time.sleep(0.01)
        raise DumpFailed(f"no {pattern.pattern!r} on stderr in {timeout} s:\n{self.stderr()[-3000:]}")

    def log_sizes(self):
        return tuple(path.stat().st_size if path.exists() else 0 for path in (self.log, self.gc))

    def logged_since(self, offsets):
        """([(operation, seconds)] of the safepoints, [lines] of the collections) logged after offsets."""
        texts = []
        for path, offset in zip((self.log, self.gc), offsets):
            with open(path, "rb") as log:
                log.seek(offset)
                texts.append(log.read().decode(errors="replace"))
        collections = [re.sub(r"^(\[[^]]*\])+\s*", "", line) for line in texts[1].splitlines() if line.strip()]
        return [(name, int(ns) / 1e9) for name, ns in SAFEPOINT.findall(texts[0])], collections

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()  # end of input: the program exits on its own, and cleans up after itself
            except OSError:
                pass
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        # A JVM that was killed leaves its attach socket behind.
        pathlib.Path(f"/tmp/.java_pid{self.pid}").unlink(missing_ok=True)


def child_pids(pid):
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            found += [int(child) for child in open(f"/proc/{pid}/task/{task}/children").read().split()]
        except (OSError, ValueError):
            pass
    return found


def schedstat(task):
    """(seconds on a core, seconds runnable but waiting for one, minor page faults) of /proc/<task> (a
    pid, or pid/task/tid)."""
    try:
        run, wait, _ = (int(x) for x in open(f"/proc/{task}/schedstat").read().split())
        minor = int(open(f"/proc/{task}/stat").read().rsplit(")", 1)[1].split()[7])
    except (OSError, ValueError, IndexError):
        return None
    return run / 1e9, wait / 1e9, minor


def thread_named(pid, name):
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for task in tasks:
        try:
            if open(f"/proc/{pid}/task/{task}/comm").read().strip() == name:
                return int(task)
        except OSError:
            pass
    return None


def wait_done_watching(program, count, timeout):
    """Waits for the count-th " done." while noting the time on a core and waiting for one of the
    process the VM thread forks and of the agent's drain thread (both end with the dump, so the last
    reading before their end counts: the polls are 10 ms apart). Returns (child's, drain's) or None."""
    deadline = time.monotonic() + timeout
    child = drain = None
    child_time = drain_time = None
    while True:
        if child is None:
            found = child_pids(program.pid)
            child = found[0] if found else None
        if drain is None:
            drain = thread_named(program.pid, "fasthprof-drain")
        if child is not None:
            child_time = schedstat(f"{child}") or child_time
        if drain is not None:
            drain_time = schedstat(f"{program.pid}/task/{drain}") or drain_time
        if len(DONE.findall(program.stderr())) >= count:
            return child_time, drain_time
        if program.proc.poll() is not None:
            raise DumpFailed(f"the JVM ended (exit {program.proc.returncode}) during the dump:\n{program.stderr()[-3000:]}")
        if time.monotonic() > deadline:
            raise DumpFailed(f"no \" done.\" on stderr in {timeout} s:\n{program.stderr()[-3000:]}")
        time.sleep(0.01)


def dump_header_ok(path):
    try:
        with open(path, "rb") as dump:
            return dump.read(18).startswith(b"JAVA PROFILE 1.0.")
    except OSError:
        return False


def one_dump(contender, program, jcmd, dump, timeout):
    """Triggers one dump of a program that has settled and measures it (the module doc string)."""
    os.sync()  # nothing of an earlier dump left to write back during this one
    offsets = program.log_sizes()
    program.ask("reset", "reset-ok")
    done_before = len(DONE.findall(program.stderr()))
    run = {}
    started = time.monotonic()
    if contender == "jcmd":
        try:
            answer = subprocess.run([jcmd, str(program.pid), "GC.heap_dump", str(dump)], capture_output=True,
                                    text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise DumpFailed(f"jcmd GC.heap_dump gave no answer in {timeout} s") from None
        run["done"] = time.monotonic() - started
        found = re.search(r"in ([\d.]+) secs", answer.stdout)
        if answer.returncode != 0 or not found:
            raise DumpFailed(f"jcmd GC.heap_dump failed (exit {answer.returncode}): {answer.stdout}{answer.stderr}")
        run["in_vm"] = float(found.group(1))
    else:
        os.kill(program.pid, signal.SIGQUIT)
        child, drain = wait_done_watching(program, done_before + 1, timeout)
        run["done"] = time.monotonic() - started
        if drain:
            run["drain_cpu"] = drain[0]
        if contender == "fork" and child:
            run["child_cpu"], run["child_queued"], run["child_faults"] = child
    time.sleep(0.3)  # the probe wakes once the program runs again; the log line follows each safepoint
    # A collection begun during the dump may still hold the program: the probe's answer waits for its end.
    gap = int(program.ask("probe", "probe", timeout).split()[1]) / 1e9
    safepoints, run["collections"] = program.logged_since(offsets)
    run.update(probe=gap, safepoints=sum(s for _, s in safepoints), pause=max(gap, sum(s for _, s in safepoints)))
    by_name = {}
    for name, seconds in safepoints:
        by_name[name] = by_name.get(name, 0.0) + seconds
    run["safepoint_ops"] = by_name
    if not dump_header_ok(dump):
        raise DumpFailed(f"{dump} is not an HPROF file ({dump.stat().st_size if dump.exists() else 'missing'})")
    run["bytes"] = dump.stat().st_size
    if contender != "jcmd":
        err = program.stderr()
        failed = FORK_FAILED.findall(err)
        if failed:
            raise DumpFailed(f"{contender}: " + " / ".join(line.strip() for line in failed))
        lines = re.findall(r"heap dump stats: dumper=(\w+)[^\n]*", err)
        stats_line = re.findall(r"heap dump stats:[^\n]*", err)
        if not lines or lines[-1] != contender:
            raise DumpFailed(f"asked for dumper={contender}, the stats line says "
                             f"{stats_line[-1] if stats_line else 'nothing'}:\n{err[-3000:]}")
        stats = dict(re.findall(r"(\w+)=(-?[\d.]+)", stats_line[-1]))
        run["agent_seconds"] = float(stats["seconds"])
        if contender == "fork":
            run.update(fork=float(stats["fork_seconds"]), walk_pause=float(stats["pause_seconds"]),
                       child=float(stats["child_seconds"]), child_extra=int(stats["child_extra_bytes"]))
    dump.unlink()
    return run


def run_line(contender, run):
    ops = ", ".join(f"{name} {seconds * 1e3:.1f}" for name, seconds in
                    sorted(run["safepoint_ops"].items(), key=lambda item: -item[1])[:3])
    text = (f"pause {run['pause'] * 1e3:8.1f} ms (safepoints {run['safepoints'] * 1e3:.1f} ms: {ops or '-'}; "
            f"probe {run['probe'] * 1e3:.1f} ms), done {run['done']:6.2f} s, {run['bytes'] / 1e6:.0f} MB")
    if contender == "jcmd":
        text += f", in the VM {run['in_vm']:.2f} s"
    if contender == "fork":
        text += (f"; fork {run['fork'] * 1e3:.1f} ms, walk call {run['walk_pause'] * 1e3:.1f} ms, child "
                 f"{run['child']:.2f} s (on a core {run.get('child_cpu', float('nan')):.2f} s, waiting for one "
                 f"{run.get('child_queued', float('nan')):.2f} s, {run.get('child_faults', 0)} page faults), child extra {run['child_extra'] / 1e6:.1f} MB")
    if "drain_cpu" in run:
        text += f"; drain thread CPU {run['drain_cpu']:.2f} s"
    if "huge_mib" in run:
        text += f"; AnonHugePages {run['huge_mib']:.0f} MiB"
    return text


def measure(args, jdk, java, jcmd, agent, classes, folder, config):
    """One configuration: --rounds rounds, each dumping once with every contender in rotating order."""
    runs = {c: [] for c in args.contenders}
    failures = []
    for round_ in range(args.rounds):
        order = args.contenders[round_ % len(args.contenders):] + args.contenders[:round_ % len(args.contenders)]
        for contender in order:
            dump = folder / f"{contender}.hprof"
            agent_arg = None
            if contender != "jcmd":
                agent_arg = f"-agentpath:{agent}=heap=dump,format=b,doe=n,verbose=y,dumper={contender},file={dump}"
            program = None
            try:
                program = Program(java, classes, folder, config, agent_arg, f"{contender}-{round_}")
                time.sleep(args.settle)
                program.ask("reset", "reset-ok")
                time.sleep(1.0)
                idle = int(program.ask("probe", "probe").split()[1]) / 1e9
                rss = proc_kib(program.pid, "VmRSS", "status") / 1024
                huge = proc_kib(program.pid, "AnonHugePages") / 1024
                run = one_dump(contender, program, jcmd, dump, args.timeout)
                run.update(idle_probe=idle, rss_mib=rss, load=os.getloadavg()[0], ready=program.ready_seconds)
                if config["thp"]:
                    run["huge_mib"] = huge
                runs[contender].append(run)
                print(f"  round {round_ + 1} {contender:4s}: {run_line(contender, run)}; idle probe "
                      f"{idle * 1e3:.1f} ms, RSS {rss:.0f} MiB, heap built in {program.ready_seconds:.0f} s, load "
                      f"{run['load']:.1f}", flush=True)
                for line in run["collections"]:
                    if "Heap Dump Initiated" not in line:  # the live dumps' own collections are in their pause
                        print(f"        a collection during the request: {line}", flush=True)
            except DumpFailed as error:
                failures.append(f"{jdk} {config['label']} round {round_ + 1} {contender}: {error}")
                print(f"  round {round_ + 1} {contender:4s}: FAILED: {error}", flush=True)
            finally:
                if program:
                    program.close()
                dump.unlink(missing_ok=True)
    return runs, failures


def summarize(jdk, config, runs):
    """Medians per contender and the ratios fork / jcmd; returns the JSON entry."""
    print(f"-- {jdk}, {config['label']}: medians (min..max, n)")
    entry = {"jdk": jdk, **{k: v for k, v in config.items() if k != "jvm_options"}, "runs": runs}
    ms = "{:.1f}"
    for contender, these in runs.items():
        if not these:
            print(f"  {contender:4s}: no successful dump")
            continue
        pick = lambda key, scale=1.0: [r[key] * scale for r in these]  # noqa: E731
        line = (f"  {contender:4s}: pause {span(pick('pause', 1e3), ms)} ms (safepoints {span(pick('safepoints', 1e3), ms)}, "
                f"probe {span(pick('probe', 1e3), ms)}); time to done {span(pick('done'))} s")
        if contender == "jcmd":
            line += f" (in the VM {span(pick('in_vm'))} s)"
        print(line)
        if contender == "fork":
            print(f"        fork() {span(pick('fork', 1e3), ms)} ms, FollowReferences call {span(pick('walk_pause', 1e3), ms)} ms, "
                  f"child {span(pick('child'))} s, child's extra memory {span(pick('child_extra', 1e-6), ms)} MB")
            if all("child_cpu" in r and "drain_cpu" in r for r in these):
                print(f"        the child on a core {span(pick('child_cpu'))} s, waiting for one {span(pick('child_queued'))} s; "
                      f"the drain thread's CPU {span(pick('drain_cpu'))} s")
        entry.setdefault("medians", {})[contender] = {
            key: median([r[key] for r in these])
            for key in ("pause", "safepoints", "probe", "done", "in_vm", "fork", "walk_pause", "child", "child_extra")
            if key in these[0]}
    fork, jcmd = runs.get("fork"), runs.get("jcmd")
    if fork and jcmd:
        medians = entry["medians"]
        pause_ratio = medians["fork"]["pause"] / medians["jcmd"]["pause"]
        done_ratio = medians["fork"]["done"] / medians["jcmd"]["done"]
        in_vm_ratio = medians["fork"]["done"] / medians["jcmd"]["in_vm"]
        entry["ratios"] = {"pause": pause_ratio, "done": done_ratio, "done_in_vm": in_vm_ratio}
        if "vm" in medians:
            entry["ratios"]["pause_over_vm"] = medians["fork"]["pause"] / medians["vm"]["pause"]
        entry["headline"] = {"pause_ratio": pause_ratio, "done_ratio": done_ratio,
                             "pause_ms": medians["fork"]["pause"] * 1e3, "fork_ms": medians["fork"]["fork"] * 1e3,
                             "child_extra_mb": medians["fork"]["child_extra"] / 1e6}
        entry["line"] = (f"{jdk}, {config['label']}: fork / jcmd: pause {pause_ratio:.3f} "
                         f"({'met' if pause_ratio <= GOAL_PAUSE else 'NOT met'}: goal <= {GOAL_PAUSE:.2f}), "
                         f"time to done {done_ratio:.2f} ({'met' if done_ratio <= GOAL_DONE else 'NOT met'}: goal <= "
                         f"{GOAL_DONE:g}; {in_vm_ratio:.2f} against jcmd's in-VM time)")
        print(entry["line"])
    return entry


def configurations(args, thp):
    """[(label, config)] for the chosen sizes and huge-page variants (a SKIP line for those that cannot run)."""
    found = []
    for size in args.sizes:
        if size == "objects":
            base = {"objects": args.objects, "fill_mib": 0, "xmx": args.xmx or "2g", "jvm_options": []}
            label = f"{args.objects} objects, -Xmx{base['xmx']}"
        else:
            fill = int(args.heap_gb * 1024)
            xmx_gb = int(args.heap_gb + 2.5)
            base = {"objects": LARGE_OBJECTS, "fill_mib": fill, "xmx": args.xmx or f"{xmx_gb}g",
                    "jvm_options": ["-Xmn512m"]}
            label = f"{args.heap_gb:g} GiB of long[] + {LARGE_OBJECTS} objects, -Xmx{base['xmx']} -Xmn512m"
            needed = (fill + 1536) * (1 << 20)
            if mem_available() < needed:
                print(f"SKIP size large: {needed / 2**30:.1f} GiB needed, {mem_available() / 2**30:.1f} GiB available")
                continue
        for variant in args.thp:
            if variant == "on" and thp in (None, "never"):
                print(f"SKIP huge pages ({label}): transparent huge pages are {thp or 'absent'} on this kernel "
                      f"(/sys/kernel/mm/transparent_hugepage/enabled)")
                continue
            config = dict(base, thp=variant == "on", size=size)
            config["label"] = f"{label}, THP {variant}"
            found.append(config)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="objects,large", help="objects (--objects small objects), large (--heap-gb)")
    parser.add_argument("--objects", type=int, default=8_000_000)
    parser.add_argument("--heap-gb", type=float, default=6.0, help="GiB of long[] blocks of the large size")
    parser.add_argument("--xmx", help="-Xmx (default 2g for objects, heap-gb + 2.5 GiB for large)")
    parser.add_argument("--jdks", default="17,25")
    parser.add_argument("--thp", default="off,on", help="huge pages: off, on (-XX:+UseTransparentHugePages) or both")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--contenders", default=",".join(CONTENDERS))
    parser.add_argument("--settle", type=float, default=1.0, help="seconds between ready and the idle probe")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds one dump may take")
    parser.add_argument("--smoke", action="store_true", help="200 000 objects, one round, JDK 17, THP off")
    parser.add_argument("--quick", action="store_true", help="2 M objects, one round, JDK 17, THP off")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.smoke or args.quick:
        args.sizes, args.jdks, args.thp, args.rounds = "objects", "17", "off", 1
        args.objects = 200_000 if args.smoke else 2_000_000
        args.xmx = args.xmx or ("512m" if args.smoke else "1g")
    args.sizes = [s for s in args.sizes.split(",") if s]
    args.thp = [t for t in args.thp.split(",") if t]
    args.contenders = [c for c in args.contenders.split(",") if c]
    if set(args.sizes) - {"objects", "large"} or set(args.thp) - {"off", "on"} or set(args.contenders) - set(CONTENDERS):
        parser.error("--sizes takes objects,large; --thp off,on; --contenders fork,vm,jcmd")
    homes = {"17": os.environ.get("JAVA17_HOME") or "/usr/lib/jvm/java-17-openjdk-amd64",
             "25": os.environ.get("JAVA25_HOME") or "/usr/lib/jvm/temurin-25-jdk-amd64"}
    agent = os.path.abspath(os.environ["FASTHPROF_AGENT"])
    base = pathlib.Path(os.environ.get("FASTHPROF_BENCH_DIR") or tempfile.gettempdir())
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-forkbench-", dir=base))
    thp = thp_mode()
    print(f"dumps into {folder} ({fs_type(folder)}); transparent huge pages: {thp or 'absent'}; "
          f"{args.rounds} rounds, contenders {', '.join(args.contenders)}, one JVM per dump", flush=True)
    result = {"rounds": args.rounds, "thp_mode": thp, "configs": []}
    failures = []
    started = time.monotonic()
    try:
        classes = folder / "classes"
        subprocess.run([os.path.join(homes["17"], "bin", "javac"), "--release", "17", "-d", str(classes),
                        str(HERE / "java" / "DumpPauseHeap.java")], check=True)
        chosen = configurations(args, thp)
        for feature in args.jdks.split(","):
            jdk, home = f"JDK {feature}", homes.get(feature, "")
            java = os.path.join(home, "bin", "java")
            if not os.path.exists(java):
                print(f"SKIP {jdk}: no JDK at {home or '(none given)'}")
                continue
            accepted, why = agent_accepts(java, agent, "dumper=fork", folder)
            if not accepted:
                print(f"SKIP {jdk}: the agent does not take dumper=fork ({why})")
                continue
            for config in chosen:
                print(f"== {jdk}, {config['label']}", flush=True)
                runs, failed = measure(args, jdk, java, os.path.join(home, "bin", "jcmd"), agent, classes, folder,
                                       config)
                failures += failed
                result["configs"].append(summarize(jdk, config, runs))
        headlines = [c for c in result["configs"] if "headline" in c]
        if headlines:
            result["headline"] = dict(headlines[0]["headline"], config=f"{headlines[0]['jdk']}, {headlines[0]['label']}")
        result["wall_seconds"] = time.monotonic() - started
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(result, indent=1))
        print(f"== summary ({result['wall_seconds'] / 60:.1f} min)")
        for failure in failures:
            print(f"FAILED: {failure.splitlines()[0]}")
        for config in result["configs"]:
            if "line" in config:
                print(config["line"])
        if not headlines:
            print("no headline: no configuration had both a fork and a jcmd dump")
            return 1
        head = headlines[0]
        print(f"headline ({head['jdk']}, {head['label']}): fork pause {head['headline']['pause_ms']:.1f} ms, "
              f"/ jcmd's {head['ratios']['pause']:.3f} (goal <= {GOAL_PAUSE:.2f}); time to done / jcmd's "
              f"{head['ratios']['done']:.2f} (goal <= {GOAL_DONE:g})")
        return 1 if failures else 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
