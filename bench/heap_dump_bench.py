"""heap=dump on a large heap (docs/performance.md §1), side by side in one run: (a) the floor agent
(bench/heap_floor_agent.cpp: one FollowReferences that tags every object, nothing else), (b) fasthprof
on kill -QUIT, timed from the signal to the complete file (" done." on stderr), (c) the JDK's own
`jcmd GC.heap_dump` of the same heap. Prints seconds, the ratios b/a and b/c, file sizes, objects/s,
MB/s, the process's peak extra memory during the dump, and the tag clean-up times.

  python3 bench/heap_dump_bench.py --floor build/bench/libheapfloor.so [--objects 16000000] [--heap 12g]
  python3 bench/heap_dump_bench.py --floor ... --smoke       (small: bench-smoke suite)
Environment: FASTHPROF_AGENT, JAVA17_HOME (set by meson), FASTHPROF_BENCH_DIR (where dumps go).
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
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent


def rss_kib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Jvm:
    def __init__(self, java, classes, agent_arg, objects, heap, folder, env_extra=None):
        self.folder = folder
        self.err_path = folder / f"stderr-{time.time_ns()}.txt"
        env = dict(os.environ)
        env.pop("JAVA_TOOL_OPTIONS", None)
        env.update(env_extra or {})
        command = [java, f"-Xmx{heap}", "-XX:+UseParallelGC"]
        if agent_arg:
            command.append(agent_arg)
        command += ["-cp", str(classes), "HeapBuilder", str(objects)]
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
    before = rss_kib(jvm.proc.pid)
    started = time.monotonic()
    os.kill(jvm.proc.pid, signal.SIGQUIT)
    stats_done = jvm.wait_for(r"heap dump stats:", 1, 3600)
    peak = jvm.wait_for(r" done\.\n", 1, 3600)
    seconds = time.monotonic() - started
    stats = dict(re.findall(r"(\w+)=([\d.]+)", re.search(r"heap dump stats:[^\n]*", jvm.stderr()).group(0)))
    # The tag clean-up runs before " done.": excluded, as for the floor.
    seconds -= float(stats["clear_seconds"])
    return seconds, stats, before, max(peak, stats_done)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--floor", required=True)
    parser.add_argument("--objects", type=int, default=16_000_000)
    parser.add_argument("--heap", default="12g")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.smoke:
        args.objects, args.heap = 300_000, "512m"
    home = os.environ.get("JAVA17_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")
    java, javac, jcmd = (os.path.join(home, "bin", tool) for tool in ("java", "javac", "jcmd"))
    agent = os.environ["FASTHPROF_AGENT"]
    base = pathlib.Path(os.environ.get("FASTHPROF_BENCH_DIR") or tempfile.gettempdir())
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-heapbench-", dir=base))
    try:
        classes = folder / "classes"
        subprocess.run([javac, "--release", "17", "-d", str(classes), str(HERE / "HeapBuilder.java")], check=True)

        # (a) the floor
        floor = Jvm(java, classes, f"-agentpath:{os.path.abspath(args.floor)}", args.objects, args.heap, folder)
        os.kill(floor.proc.pid, signal.SIGQUIT)
        floor.wait_for(r"heapfloor: walk_seconds", 1, 3600)
        match = re.search(r"walk_seconds=([\d.]+) objects=(\d+) clear_seconds=([\d.]+)", floor.stderr())
        floor_seconds, floor_objects, floor_clear = float(match.group(1)), int(match.group(2)), float(match.group(3))
        floor.stop()

        # (c) then (b) on one JVM: the JDK's dump, then fasthprof's
        dump = folder / "fasthprof.hprof"
        jvm = Jvm(java, classes, f"-agentpath:{agent}=heap=dump,format=b,doe=n,verbose=y,file={dump}", args.objects,
                  args.heap, folder)
        jdk_dump = folder / "jdk.hprof"
        started = time.monotonic()
        subprocess.run([jcmd, str(jvm.proc.pid), "GC.heap_dump", str(jdk_dump)], check=True, capture_output=True)
        jdk_seconds = time.monotonic() - started
        jdk_size = jdk_dump.stat().st_size
        jdk_dump.unlink()
        ours_seconds, stats, before, peak = quit_dump(jvm)
        clear_seconds = float(stats["clear_seconds"])
        size = dump.stat().st_size
        jvm.stop()
        objects = int(stats["objects"]) + int(stats["classes"])

        result = {
            "objects_built": jvm.objects,
            "floor_seconds": floor_seconds,
            "floor_objects": floor_objects,
            "floor_clear_seconds": floor_clear,
            "fasthprof_seconds": ours_seconds,
            "fasthprof_walk_seconds": float(stats["walk_seconds"]),
            "fasthprof_clear_seconds": clear_seconds,
            "fasthprof_objects": objects,
            "fasthprof_bytes": size,
            "jdk_seconds": jdk_seconds,
            "jdk_bytes": jdk_size,
            "peak_extra_rss_mib": (peak - before) / 1024,
            "peak_pending": int(stats["peak_pending"]),
        }
        print(f"heap: {jvm.objects} objects built, -Xmx{args.heap}")
        print(f"(a) floor FollowReferences + tags:   {floor_seconds:8.2f} s  ({floor_objects} objects)")
        print(f"(b) fasthprof kill -QUIT to done:    {ours_seconds:8.2f} s  (walk {result['fasthprof_walk_seconds']:.2f} s), "
              f"{size / 1e6:.0f} MB, {objects / max(ours_seconds, 1e-9) / 1e6:.2f} M objects/s, "
              f"{size / 1e6 / max(ours_seconds, 1e-9):.0f} MB/s")
        print(f"(c) jcmd GC.heap_dump:               {jdk_seconds:8.2f} s  ({jdk_size / 1e6:.0f} MB)")
        print(f"tag clean-up: floor {floor_clear:.2f} s, fasthprof {clear_seconds:.2f} s (excluded above)")
        print(f"peak extra RSS during the dump: {result['peak_extra_rss_mib']:.0f} MiB (JVM tag map included); "
              f"largest carried-length table: {result['peak_pending']} entries")
        print(f"ratio fasthprof / jcmd  (b/c): {ours_seconds / jdk_seconds:.2f}")
        print(f"ratio fasthprof / floor (b/a): {ours_seconds / floor_seconds:.2f}  (goal <= 1.10)")
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(result, indent=2))
        ok = floor_objects > 0 and objects > 0 and size > 0
        return 0 if ok else 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
