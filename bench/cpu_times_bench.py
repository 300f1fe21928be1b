#!/usr/bin/env python3
"""cpu=times benchmark (docs/performance.md, bench/README.md "cpu=times"), two parts, each run
side by side, alternating, in one run (the machine is shared and noisy):

1. call loop (bench/java/CallLoop.java: tens of millions of calls of tiny static methods):
   fasthprof cpu=times, its report at exit included, against the floor agent (bench/
   method_floor_agent.cpp: empty MethodEntry/MethodExit callbacks). Prints the loop's own time and
   the whole process's wall time of each, and the ratio cpu=times / floor (goal <= 0.10);
2. javac compiling a few hundred generated files: cpu=times against no agent (goal <= 3 x);
3. class loading at start-up: a program that loads and initializes every class of java.base
   (tests/java/LoadAll.java, about 6400 classes on JDK 17), and the start-up of one that loads
   nothing, with cpu=times (every class through the rewriter, the JDK's start-up classes
   retransformed at VMInit) against no agent and against the floor agent. Prints the program's
   own loading time and the whole process's wall time of each, and the ratios.

--smoke runs one small round of each, so that `meson test --suite bench-smoke` keeps it working.
Environment (set by meson): FASTHPROF_AGENT, FASTHPROF_METHOD_FLOOR_AGENT, JAVA17_HOME."""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
AGENT = os.environ.get("FASTHPROF_AGENT", "")
FLOOR = os.environ.get("FASTHPROF_METHOD_FLOOR_AGENT", "")
LOOP = re.compile(r"CallLoop calls=(\d+) loop_ms=(\d+)")
LOAD = re.compile(r"LoadAll loaded=(\d+) failed=\d+ verify_errors=0 format_errors=0 load_ms=(\d+)")


def java_home():
    return os.environ.get("FASTHPROF_BENCH_JAVA_HOME", os.environ.get("JAVA17_HOME", "/usr/lib/jvm/java-17-openjdk-amd64"))


def timed(command, cwd):
    start = time.monotonic()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return wall, proc


def call_loop(work, iterations, rounds):
    java = os.path.join(java_home(), "bin", "java")
    subprocess.run([os.path.join(java_home(), "bin", "javac"), "-d", str(work), str(HERE / "java" / "CallLoop.java")],
                   check=True)
    variants = {
        "floor": [f"-agentpath:{FLOOR}"],
        "cpu=times": [f"-agentpath:{AGENT}=cpu=times,verbose=n,file={work}/times.txt"],
    }
    loop_ms = {name: [] for name in variants}
    wall_s = {name: [] for name in variants}
    for _ in range(rounds):
        for name, agent in variants.items():
            wall, proc = timed([java, *agent, "-cp", str(work), "CallLoop", str(iterations)], work)
            match = LOOP.search(proc.stdout)
            loop_ms[name].append(int(match.group(2)))
            wall_s[name].append(wall)
    calls = iterations * 3
    print(f"call loop: {calls / 1e6:.0f} M calls, {rounds} alternating rounds, JDK {java_home()}")
    for name in variants:
        print(f"  {name:10s} loop {statistics.median(loop_ms[name]):8.0f} ms (range {min(loop_ms[name])}-"
              f"{max(loop_ms[name])}), process {statistics.median(wall_s[name]):6.2f} s, "
              f"{statistics.median(loop_ms[name]) * 1e6 / calls:6.1f} ns per call")
    ratio_loop = statistics.median(loop_ms["cpu=times"]) / statistics.median(loop_ms["floor"])
    ratio_wall = statistics.median(wall_s["cpu=times"]) / statistics.median(wall_s["floor"])
    print(f"call loop cpu=times / floor: loop {ratio_loop:.3f}, whole process (start-up and report included) "
          f"{ratio_wall:.3f} (goal <= 0.10)")


def javac(work, files, rounds):
    sources = []
    for i in range(files):
        path = work / f"Gen{i}.java"
        other = f"Gen{(i + 1) % files}"
        with open(path, "w") as f:
            f.write(f"import java.util.*;\npublic class Gen{i} {{\n")
            for m in range(8):
                f.write(f"  public List<Map<String, Integer>> m{m}({other} o, int x) {{\n"
                        f"    List<Map<String, Integer>> r = new ArrayList<>();\n"
                        f"    for (int k = 0; k < x; k++) {{ Map<String, Integer> h = new HashMap<>();"
                        f" h.put(\"k\" + k + o, k * {m}); r.add(h); }}\n"
                        f"    return r.isEmpty() ? Collections.emptyList() : r;\n  }}\n")
            f.write("}\n")
        sources.append(str(path))
    tool = os.path.join(java_home(), "bin", "javac")
    variants = {"none": [], "cpu=times": [f"-J-agentpath:{AGENT}=cpu=times,verbose=n,file={work}/javac.txt"]}
    walls = {name: [] for name in variants}
    for _ in range(rounds):
        for name, agent in variants.items():
            wall, _ = timed([tool, *agent, "-d", str(work / "out"), *sources], work)
            walls[name].append(wall)
    print(f"javac: {files} files, {rounds} alternating rounds")
    for name in variants:
        print(f"  {name:10s} {statistics.median(walls[name]):6.2f} s (range {min(walls[name]):.2f}-{max(walls[name]):.2f})")
    print(f"javac cpu=times / none: {statistics.median(walls['cpu=times']) / statistics.median(walls['none']):.2f} x "
          f"(goal <= 3)")


def class_loading(work, rounds, smoke):
    java = os.path.join(java_home(), "bin", "java")
    classes = work / "loadall"
    subprocess.run([os.path.join(java_home(), "bin", "javac"), "-d", str(classes),
                    str(HERE.parent / "tests" / "java" / "LoadAll.java")], check=True)
    variants = {
        "none": [],
        "floor": [f"-agentpath:{FLOOR}"],
        "cpu=times": [f"-agentpath:{AGENT}=cpu=times,verbose=n,file={work}/loadall.txt"],
    }
    # Smoke: the start-up only, no class loaded.
    source = "module:java.base"
    load_ms = {name: [] for name in variants}
    load_wall = {name: [] for name in variants}
    start_wall = {name: [] for name in variants}
    loaded = 0
    for _ in range(rounds):
        for name, agent in variants.items():
            wall, proc = timed([java, *agent, "-cp", str(classes), "LoadAll"] + ([] if smoke else [source]), work)
            match = LOAD.search(proc.stdout)
            if match is None:
                sys.exit(f"LoadAll ({name}) printed no summary:\n{proc.stdout[-2000:]}")
            loaded = int(match.group(1))
            load_ms[name].append(int(match.group(2)))
            load_wall[name].append(wall)
            wall, _ = timed([java, *agent, "-cp", str(classes), "LoadAll"], work)
            start_wall[name].append(wall)
    print(f"class loading: {loaded} classes of java.base loaded and initialized, {rounds} alternating rounds"
          + (" (smoke: start-up only)" if smoke else ""))
    for name in variants:
        print(f"  {name:10s} loading {statistics.median(load_ms[name]):7.0f} ms (range {min(load_ms[name])}-"
              f"{max(load_ms[name])}), process {statistics.median(load_wall[name]):6.2f} s; "
              f"start-up alone (no class loaded) {statistics.median(start_wall[name]):5.2f} s")
    for name in ("none", "floor"):
        startup = statistics.median(start_wall["cpu=times"]) / statistics.median(start_wall[name])
        if smoke:
            print(f"class loading cpu=times / {name}: start-up {startup:.2f} x (smoke: no class loaded)")
            continue
        loading = statistics.median(load_ms["cpu=times"]) / max(statistics.median(load_ms[name]), 1)
        print(f"class loading cpu=times / {name}: loading {loading:.2f} x, start-up {startup:.2f} x")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--iterations", type=int, default=20_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--part", choices=["all", "loop", "javac", "loading"], default="all")
    args = parser.parse_args()
    if args.smoke:
        args.iterations, args.rounds, args.files = 200_000, 1, 20
    with tempfile.TemporaryDirectory(prefix="fasthprof-bench-") as folder:
        work = pathlib.Path(folder)
        if args.part in ("all", "loop"):
            call_loop(work, args.iterations, args.rounds)
        if args.part in ("all", "javac"):
            javac(work, args.files, args.rounds)
        if args.part in ("all", "loading"):
            class_loading(work, args.rounds, args.smoke)


if __name__ == "__main__":
    main()
