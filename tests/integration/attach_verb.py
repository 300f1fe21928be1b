"""`fasthprof attach PID [OPTIONS]` on JDK 17 and 25:

- load: options the agent would refuse are refused here (exit 2, the option error, nothing loaded:
  no libfasthprof.so in the JVM); good options load it (exit 0, the JVM's "return code: 0"); a
  second attach says the agent is there already (exit 1); kill -QUIT then writes the reports;
- duration: --duration 1 with cpu=samples: the command asks for the reports itself and returns when
  the file holds them;
- refused: a process that is no JVM (`sleep`) is refused without a signal (it lives on); a JVM
  started with -XX:+DisableAttachMechanism answers nothing (exit 1, said; it runs on).

Each case is a Meson test of its own (`attach_verb.py <case>`, suite attach_verb).
"""
import os
import pathlib
import re
import signal
import subprocess
import time

from harness import check, java_process, jdks, read_text, run_cases, terminate, wait_for
from vm_dump import ready

COMMAND = os.environ["FASTHPROF_COMMAND"]


def attach(*args, timeout=120):
    return subprocess.run([COMMAND, "attach", *map(str, args)], capture_output=True, text=True, timeout=timeout)


def agent_mapped(pid):
    return "/libfasthprof.so" in pathlib.Path(f"/proc/{pid}/maps").read_text()


def load_run(jdk, home):
    label = f"{jdk} attach"
    with java_process(home, None, "HeapShapes", [300, 1]) as (proc, folder):
        if not ready(proc, folder, label):
            return
        bad = attach(proc.pid, "heap=sites,filex=1")
        check(bad.returncode == 2 and "Unknown option: filex" in bad.stderr and "nothing was loaded" in bad.stderr
              and not agent_mapped(proc.pid), f"{label}: bad options refused here, nothing loaded: {bad}")
        sites = folder / "sites.txt"
        good = attach(proc.pid, f"heap=sites,file={sites}")
        check(good.returncode == 0 and "return code: 0" in good.stdout and agent_mapped(proc.pid) and
              f"the agent is loaded in process {proc.pid}" in good.stdout, f"{label}: loaded: {good}")
        again = attach(proc.pid, "cpu=samples")
        check(again.returncode == 1 and "loaded in process" in again.stderr and "already" in again.stderr,
              f"{label}: a second attach is refused, said: {again}")
        os.kill(proc.pid, signal.SIGQUIT)
        check(wait_for(lambda: "SITES END" in read_text(sites), 60), f"{label}: kill -QUIT writes the reports:\n"
              f"{read_text(folder / 'stderr.txt')[-2000:]}")
        check(proc.poll() is None, f"{label}: the JVM runs on")
        terminate(proc)


def duration_run(jdk, home):
    label = f"{jdk} attach --duration"
    with java_process(home, None, "CpuBusy", [2, 60000]) as (proc, folder):
        time.sleep(1.5)
        started = time.monotonic()
        done = attach("--duration", 1, proc.pid, "cpu=samples", "file=cpu.txt")
        took = time.monotonic() - started
        text = read_text(folder / "cpu.txt")
        check(done.returncode == 0 and re.search(r"the reports after 1 s are in cpu.txt \(\d+ bytes\)", done.stdout)
              and "CPU SAMPLES END" in text and "CpuBusy" in text and took < 60,
              f"{label}: the reports written after the duration, in the target's folder ({took:.1f} s): {done}\n"
              f"{text[-1500:]}")
        check(proc.poll() is None, f"{label}: the JVM runs on after its reports")
        terminate(proc)


def refused_run(jdk, home):
    label = f"{jdk} attach refused"
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        time.sleep(0.2)
        not_jvm = attach(sleeper.pid, "heap=sites")
        check(not_jvm.returncode == 2 and "is not a Java VM" in not_jvm.stderr and sleeper.poll() is None,
              f"{label}: a process that is no JVM is refused, and not signalled: {not_jvm}")
    finally:
        sleeper.kill()
        sleeper.wait()
    with java_process(home, None, "HeapShapes", [300, 1], ["-XX:+DisableAttachMechanism"]) as (proc, folder):
        if not ready(proc, folder, label):
            return
        closed = attach("--timeout", 2, proc.pid, "heap=sites")
        check(closed.returncode == 1 and "did not open its attach socket" in closed.stderr and proc.poll() is None,
              f"{label}: -XX:+DisableAttachMechanism: no answer, said; the JVM runs on: {closed}")
        terminate(proc)
    gone = attach(2 ** 22 + 17, "heap=sites")
    check(gone.returncode == 2 and "no process" in gone.stderr, f"{label}: no such process: {gone}")


def each_jdk(run):
    return lambda: [run(jdk, home) for jdk, home in jdks()]


if __name__ == "__main__":
    run_cases("attach_verb", {
        "load": each_jdk(load_run),
        "duration": each_jdk(duration_run),
        "refused": each_jdk(refused_run),
    })
