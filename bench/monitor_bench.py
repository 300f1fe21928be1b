#!/usr/bin/env python3
"""monitor=y benchmark (bench/README.md "monitor=y"), tests/java/MonitorScenes on JDK 17 (JDK 25
too when FASTHPROF_BENCH_JAVA_HOME names it), runs alternating so that the machine's noise hits
both sides alike:

1. uncontended: one thread, tens of millions of synchronized calls on one object, timed by the
   program itself (the thread's CPU time, and wall time): monitor=y against no agent, the ratio of
   the medians (goal <= 1.02), of the fastest runs, and the spread of each side;
2. contention: the known-contention program (4 threads, one lock held 10 ms, 100 times each) and
   a hot one (4 threads, the lock held for no time, 20 000 times each): wall time with monitor=y
   against no agent, and the contended enters the agent took per second of the program's run
   (its verbose figures line).

Figures are plain lines, the last the headline ratio; --json writes them all. --smoke is the small
version that `meson test --suite bench-smoke` runs so that the script cannot rot.
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
JAVA_HOME = os.environ.get("FASTHPROF_BENCH_JAVA_HOME", os.environ.get("JAVA17_HOME",
                                                                        "/usr/lib/jvm/java-17-openjdk-amd64"))
FIGURES = re.compile(r"fasthprof: monitors: (\d+) contended enters, (\d+) WAIT/WAITED lines")


def run(args, agent):
    folder = tempfile.mkdtemp(prefix="fasthprof-bench-")
    command = [os.path.join(JAVA_HOME, "bin", "java"), "-Xshare:auto"]
    if agent:
        command.append(f"-agentpath:{AGENT}=monitor=y,verbose=y,file={folder}/out.txt")
    command += ["-cp", CLASSES, "MonitorScenes", *map(str, args)]
    env = dict(os.environ)
    env.pop("JAVA_TOOL_OPTIONS", None)
    env.pop("_JAVA_HPROF_OPTIONS", None)
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    subprocess.run(["rm", "-rf", folder])
    if proc.returncode != 0:
        sys.exit(f"MonitorScenes {args} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    figures = {k: int(v) for k, v in re.findall(r"(\w+)_ms=(\d+)", proc.stdout)}
    counted = FIGURES.search(proc.stderr)
    if agent and not counted:
        sys.exit(f"no monitor figures on stderr (verbose=y):\n{proc.stderr}")
    if counted:
        figures["contended_enters"] = int(counted.group(1))
    return figures


def spread(values):
    return f"{min(values)}..{max(values)}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=50_000_000, help="uncontended synchronized calls per run")
    options = parser.parse_args()
    rounds = 1 if options.smoke else options.rounds
    calls = 2_000_000 if options.smoke else options.calls
    results = {"java_home": JAVA_HOME}

    base, agent, base_cpu, agent_cpu = [], [], [], []
    for _ in range(rounds):
        plain, profiled = run(["uncontended", calls], False), run(["uncontended", calls], True)
        base.append(plain["uncontended"])
        agent.append(profiled["uncontended"])
        base_cpu.append(plain["uncontended_cpu"])
        agent_cpu.append(profiled["uncontended_cpu"])
    # The headline is the thread's CPU time, which does not grow while it waits for a core of this
    # shared machine; the wall times are printed beside it.
    ratio = statistics.median(agent_cpu) / max(statistics.median(base_cpu), 1)
    wall_ratio = statistics.median(agent) / max(statistics.median(base), 1)
    # The fastest run of each side: the noise only ever adds time.
    best_ratio = min(agent_cpu) / max(min(base_cpu), 1)
    results["uncontended"] = {"calls": calls, "no_agent_ms": base, "monitor_ms": agent, "no_agent_cpu_ms": base_cpu,
                              "monitor_cpu_ms": agent_cpu, "ratio": ratio, "wall_ratio": wall_ratio,
                              "best_ratio": best_ratio}
    print(f"uncontended: {calls} synchronized calls, {rounds} alternating rounds: CPU no agent median "
          f"{statistics.median(base_cpu)} ms ({spread(base_cpu)}), monitor=y {statistics.median(agent_cpu)} ms "
          f"({spread(agent_cpu)}); wall {statistics.median(base)} ms ({spread(base)}) and "
          f"{statistics.median(agent)} ms ({spread(agent)}), ratio {wall_ratio:.3f}")

    for name, args in (("known", ["contend", 4, 5 if options.smoke else 100, 10]),
                       ("hot", ["contend", 4, 500 if options.smoke else 20000, 0])):
        walls, agent_walls, rates, enters = [], [], [], []
        for _ in range(max(1, rounds // 3)):
            walls.append(run(args, False)["wall"])
            measured = run(args, True)
            agent_walls.append(measured["wall"])
            enters.append(measured["contended_enters"])
            rates.append(measured["contended_enters"] / max(measured["wall"], 1) * 1000)
        slowdown = statistics.median(agent_walls) / max(statistics.median(walls), 1)
        results[name] = {"args": args, "no_agent_wall_ms": walls, "monitor_wall_ms": agent_walls,
                         "contended_enters": enters, "enters_per_second": rates, "slowdown": slowdown}
        print(f"contention {name} {args[1:]}: wall no agent {statistics.median(walls)} ms ({spread(walls)}), "
              f"monitor=y {statistics.median(agent_walls)} ms ({spread(agent_walls)}), slowdown {slowdown:.3f}; "
              f"{statistics.median(enters)} contended enters, {statistics.median(rates):.0f} per second")

    if options.json:
        with open(options.json, "w") as f:
            json.dump(results, f, indent=2)
    print(f"uncontended CPU time monitor=y / no agent: medians {ratio:.3f}, fastest runs {best_ratio:.3f} "
          f"(goal <= 1.02)")


if __name__ == "__main__":
    main()
