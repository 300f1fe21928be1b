"""The verbs on text files (format=a), the only format of cpu=times, cpu=old and monitor=y: each
case runs a real program with the agent on JDK 17 and 25 and checks `collapsed`, `summary`,
`diff`, `flame` and `pprof` (through `go tool pprof` where installed) against the sections as
this script reads them from the file itself.

  cpu_times  tests/java/CpuTimes graph (a() calls b() 1000 times, b() sleeps 1 ms), thread=y
  cpu_old    the same with cpu=old: caller;callee stacks, calls and inclusive time
  monitor    MonitorScenes contend (a lock flame graph from MONITOR TIME, thread roots) and
             MonitorScenes deadlock (summary of a kill -QUIT's MONITOR DUMP)"""
import os
import pathlib
import re
import shutil
import signal
import subprocess
import tempfile

from harness import (agentpath, check, cleanup, java_process, on_each_jdk, run_cases, run_java, wait_for)

COMMAND = os.environ.get("FASTHPROF_COMMAND", "")


def fasthprof(*args):
    return subprocess.run([COMMAND, *map(str, args)], capture_output=True, text=True, timeout=300)


def folds(text):
    """{stack: value} of collapsed output."""
    rows = {}
    for line in text.splitlines():
        stack, _, value = line.rpartition(" ")
        rows[stack] = int(value)
    return rows


def traces(text):
    """{serial: (thread serial or 0, [frame names, top first])} of a text file's TRACE records."""
    found = {}
    for match in re.finditer(r"^TRACE (\d+):( \(thread=(\d+)\))?\n((?:\t.*\n)*)", text, re.M):
        frames = [re.sub(r"\(.*$", "", f.strip()) for f in match.group(4).splitlines() if f.strip() != "<empty>"]
        found[int(match.group(1))] = (int(match.group(3) or 0), frames)
    return found


def ranked(text, title):
    """[(total, [(self %, count, trace, name)])] of every section titled title."""
    sections = []
    pattern = rf"^{re.escape(title)} BEGIN \(total = (\d+)[^)]*\).*\n.*\n((?:.*\n)*?){re.escape(title)} END"
    for match in re.finditer(pattern, text, re.M):
        rows = [(float(m[0]), int(m[1]), int(m[2]), m[3]) for m in
                re.findall(r"^ *\d+ +([\d.]+)% +[\d.]+% +(\d+) +(\d+) (.+)$", match.group(2), re.M)]
        sections.append((int(match.group(1)), rows))
    return sections


def micros(share, total):
    """A row's time in us from its self share (two decimals) of the total ms, rounded half up."""
    return (round(share * 100) * total + 5) // 10


def pprof_top(path, *extra):
    """{function: flat} of `go tool pprof -top` (None when go is not installed)."""
    if shutil.which("go") is None or not re.search(r"^  pprof ", fasthprof("help").stdout, re.M):
        return None
    env = dict(os.environ, HOME=str(pathlib.Path(path).parent))
    done = subprocess.run(["go", "tool", "pprof", "-top", "-nodefraction=0", "-nodecount=100000", *extra, str(path)],
                          capture_output=True, text=True, timeout=300, env=env)
    rows = {}
    for line in done.stdout.splitlines():
        found = re.match(r"\s*([\d.]+\w*)\s+[\d.]+%\s+[\d.]+%\s+[\d.]+\w*\s+[\d.]+%\s+(.+)$", line)
        if found:
            rows[found.group(2)] = found.group(1)
    return rows, done.stdout + done.stderr


def millis(value):
    """A pprof -top time (1.18s, 603.10ms, 950us) in ms."""
    number, unit = re.fullmatch(r"([\d.]+)(\w+)", value).groups()
    return float(number) * {"s": 1000, "ms": 1, "us": 0.001, "ns": 1e-6}[unit]


def cpu_times(jdk, home):
    label = f"{jdk} cpu=times"
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-text-"))
    try:
        for name in ("a.txt", "b.txt"):
            run = run_java(home, agentpath(f"cpu=times,thread=y,file={folder / name}"), main="CpuTimes", args=["graph"])
            if not check(run.code == 0, f"{label}: CpuTimes graph", run):
                return
        text = (folder / "a.txt").read_text()
        (total, rows), = ranked(text, "CPU TIME (ms)")
        the_traces = traces(text)
        # b's sleep: CpuTimes.b itself on JDK 17, java.lang.Thread.sleepNanos (Java code) on 25.
        under_b = [r for r in rows if "CpuTimes.b" in the_traces[r[2]][1]]
        hot = max(under_b) if under_b else None
        if not check(hot is not None and hot[1] == 1000, f"{label}: the time under CpuTimes.b, 1000 calls: {under_b}"):
            return
        expected_b = micros(hot[0], total)  # us: its share of the total
        stack_b = ";".join(reversed(the_traces[hot[2]][1]))
        # A line per stack: rows of one stack on two threads add up; a row under 0.005 % (0 us) has none.
        wanted = {}
        for share, _, serial, _ in rows:
            stack = ";".join(reversed(the_traces[serial][1]))
            wanted[stack] = wanted.get(stack, 0) + micros(share, total)
        wanted = {stack: us for stack, us in wanted.items() if us}
        collapsed = fasthprof("collapsed", folder / "a.txt")
        got = folds(collapsed.stdout)
        check(collapsed.returncode == 0 and got.get(stack_b) == expected_b and got == wanted,
              f"{label}: collapsed: {stack_b} {expected_b} us, a line per stack, differing: "
              f"{sorted(set(got.items()) ^ set(wanted.items()))[:10]}\n{collapsed.stdout[:1500]}{collapsed.stderr}")
        threaded = folds(fasthprof("collapsed", "--threads", folder / "a.txt").stdout)
        check(threaded.get("thread main;" + stack_b) == expected_b,
              f"{label}: --threads roots the stacks at their thread: {list(threaded)[:3]}")
        summary = fasthprof("summary", "--by", "method", "--top", "1", folder / "a.txt")
        check(summary.returncode == 0 and re.search(rf"^ +1 +[\d.]+% +[\d.]+% +1000 {re.escape(hot[3])}$", summary.stdout,
                                                     re.M),
              f"{label}: summary --by method ranks {hot[3]} first, 1000 calls:\n{summary.stdout}{summary.stderr}")
        diff = fasthprof("diff", "--top", "0", "--fail-if", f"{hot[3]}:calls>0", folder / "a.txt", folder / "b.txt")
        check(diff.returncode == 0 and hot[3] in diff.stdout and "A share" in diff.stdout,
              f"{label}: diff of two runs compares shares, calls equal:\n{diff.stdout}{diff.stderr}")
        met = fasthprof("diff", "--value", "calls", "--fail-if", f"{hot[3]}:calls>=0", folder / "a.txt", folder / "b.txt")
        check(met.returncode == 1 and "met: +0" in met.stderr, f"{label}: a --fail-if on calls that holds: {met.stderr}")
        flame = fasthprof("flame", "-o", folder / "a.html", folder / "a.txt")
        page = (folder / "a.html").read_text() if flame.returncode == 0 else ""
        check("CPU TIME (ms), 1 section added up, in us</title>" in page and f'"{hot[3]}"' in page,
              f"{label}: flame draws CPU TIME: {flame.stderr}")
        # The text layout records no depth=: --depth 4 (the default the run used) roots the stacks
        # as deep at "(truncated at depth 4)"; a stack less deep stands on its thread.
        cut = fasthprof("flame", "--depth", "4", "-o", folder / "cut.html", folder / "a.txt")
        page = (folder / "cut.html").read_text() if cut.returncode == 0 else ""
        deep = [r for r in rows if len(the_traces[r[2]][1]) >= 4]
        check(deep and 'id="truncated"' in page and '"(truncated at depth 4)"' in page,
              f"{label}: flame --depth 4 marks the {len(deep)} stacks 4 frames deep: {cut.stderr}")
        refused = fasthprof("flame", "--depth", "0", "-o", folder / "no.html", folder / "a.txt")
        check(refused.returncode == 2 and "--depth takes" in refused.stderr, f"{label}: --depth 0: {refused.stderr}")
        made = fasthprof("pprof", "-o", folder / "a.pb.gz", folder / "a.txt")
        top = pprof_top(folder / "a.pb.gz")
        if top is not None:
            check(made.returncode == 0 and abs(millis(top[0].get(hot[3], "0s")) - expected_b / 1000) < 0.02,
                  f"{label}: go tool pprof: {hot[3]} {expected_b / 1000} ms of cpu:\n{top[1][:1500]}")
            calls = pprof_top(folder / "a.pb.gz", "-sample_index=calls")
            check(calls[0].get(hot[3]) == "1000", f"{label}: pprof calls of {hot[3]}: 1000\n{calls[1][:800]}")
            main = pprof_top(folder / "a.pb.gz", "-tagfocus=thread=main")
            check(hot[3] in main[0], f"{label}: the thread label: {hot[3]} in main\n{main[1][:800]}")
    finally:
        cleanup(folder)


def cpu_old(jdk, home):
    label = f"{jdk} cpu=old"
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-text-"))
    try:
        run = run_java(home, agentpath(f"cpu=old,file={folder / 'old.txt'}"), main="CpuTimes", args=["graph"])
        if not check(run.code == 0, f"{label}: CpuTimes graph", run):
            return
        text = (folder / "old.txt").read_text()
        pair = re.search(r"^(\d+) CpuTimes\.b\(\)V CpuTimes\.a\(\)V (\d+)$", text, re.M)
        if not check(pair is not None and pair.group(1) == "1000", f"{label}: the b <- a pair, 1000 calls:\n{text[:800]}"):
            return
        got = folds(fasthprof("collapsed", folder / "old.txt").stdout)
        check(got.get("CpuTimes.a;CpuTimes.b") == int(pair.group(2)) * 1000,
              f"{label}: collapsed: CpuTimes.a;CpuTimes.b {pair.group(2)} ms in us: {got.get('CpuTimes.a;CpuTimes.b')}")
        summary = fasthprof("summary", folder / "old.txt")
        check(re.search(rf"^ +\d+ +1000 +{pair.group(2)}  CpuTimes\.b <- CpuTimes\.a$", summary.stdout, re.M),
              f"{label}: summary lists the pair:\n{summary.stdout[:1500]}{summary.stderr}")
        made = fasthprof("pprof", "-o", folder / "old.pb.gz", folder / "old.txt")
        calls = pprof_top(folder / "old.pb.gz", "-sample_index=calls", "-focus=^CpuTimes.a$")
        if calls is not None:
            check(made.returncode == 0 and calls[0].get("CpuTimes.b") == "1000",
                  f"{label}: pprof: 1000 calls of CpuTimes.b from CpuTimes.a\n{calls[1][:800]}")
    finally:
        cleanup(folder)


def monitor(jdk, home):
    label = f"{jdk} monitor=y"
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-text-"))
    try:
        path = folder / "m.txt"
        run = run_java(home, agentpath(f"monitor=y,thread=y,depth=8,file={path}"), main="MonitorScenes",
                       args=["contend", "4", "20", "10"])
        if not check(run.code == 0, f"{label}: MonitorScenes contend", run):
            return
        text = path.read_text()
        # One spelling of hidden classes, HotSpot's (its heap dumper's): the lambda that runs the
        # contenders is Foo$$Lambda...+0x...; JVMTI's Foo$$Lambda....0x... is never written.
        check(re.search(r"\tMonitorScenes\$\$Lambda[$\d]*\+0x[0-9a-f]+\.run\(", text) is not None and
              re.search(r"\$\$Lambda[$\d]*\.0x", text) is None, f"{label}: hidden classes as +0x:\n{text[-1500:]}")
        sections = ranked(text, "MONITOR TIME")
        the_traces = traces(text)
        threads = {int(s): n for s, n in re.findall(r'^THREAD START \(.*id = (\d+), name="([^"]*)"', text, re.M)}
        expected = {}
        for total, rows in sections:
            for share, _, serial, name in rows:
                thread, frames = the_traces[serial]
                stack = ";".join([f"thread {threads[thread]}", *reversed(frames), name.removesuffix(" (Java)")])
                expected[stack] = expected.get(stack, 0) + micros(share, total)
        expected = {stack: us for stack, us in expected.items() if us}  # collapsed leaves out 0 us
        got = folds(fasthprof("collapsed", "--monitor", "--threads", path).stdout)
        # Nearly all on the program's lock: the JDK may contend on one of its own now and then
        # (seen on JDK 25: 596 us on an int[] in AbstractQueuedSynchronizer.tryInitializeHead).
        counter = sum(v for s, v in got.items() if s.endswith(";MonitorScenes$Counter"))
        check(expected and got == expected and counter >= 0.95 * sum(got.values()),
              f"{label}: collapsed --monitor --threads, the monitor's class on top:\n{got}\nexpected\n{expected}")
        check(folds(fasthprof("collapsed", path).stdout).keys() == {s.split(";", 1)[1] for s in expected},
              f"{label}: MONITOR TIME is the default of a file without CPU or SITES")
        flame = fasthprof("flame", "--monitor", "--threads", "-o", folder / "m.html", path)
        page = (folder / "m.html").read_text() if flame.returncode == 0 else ""
        check("monitor contention, MONITOR TIME" in page and '"MonitorScenes$Counter"' in page,
              f"{label}: a lock flame graph: {flame.stderr}")
        made = fasthprof("pprof", "--monitor", "-o", folder / "m.pb.gz", path)
        top = pprof_top(folder / "m.pb.gz")
        if top is not None:
            total_ms = sum(expected.values()) / 1000
            check(made.returncode == 0 and "Type: delay" in top[1] and
                  abs(millis(top[0].get("MonitorScenes$Counter", "0s")) - total_ms) < 0.05 * total_ms + 1,
                  f"{label}: go tool pprof: MonitorScenes$Counter delays {total_ms} ms\n{top[1][:1500]}")
        summary = fasthprof("summary", path)
        check(summary.returncode == 0 and re.search(r"^MONITOR TIME 1 at line \d+ \(total = \d+ ms\)", summary.stdout, re.M)
              and "MonitorScenes$Counter (MonitorScenes$Counter.hold)" in summary.stdout,
              f"{label}: summary ranks MONITOR TIME:\n{summary.stdout[:2000]}{summary.stderr}")
        diff = fasthprof("diff", "--monitor", path, path)
        check(diff.returncode == 0 and re.search(r"^ +9\d\.\d\d% +9\d\.\d\d% +\+0\.00pt .*MonitorScenes\$Counter$|"
                                                  r"100\.00% +100\.00% +\+0\.00pt .*MonitorScenes\$Counter$", diff.stdout,
                                                  re.M), f"{label}: diff --monitor per class:\n{diff.stdout}{diff.stderr}")
        deadlock_summary(label, home, folder)
    finally:
        cleanup(folder)


def deadlock_summary(label, home, folder):
    """summary of a MONITOR DUMP taken by kill -QUIT while two threads are deadlocked."""
    with java_process(home, agentpath(f"monitor=y,file={folder / 'd.txt'}"), "MonitorScenes", ["deadlock"]) as (proc, run):
        if not check(wait_for(lambda: "ready" in (run / "stdout.txt").read_text(), 60), f"{label}: deadlock reached"):
            return
        os.kill(proc.pid, signal.SIGQUIT)
        check(wait_for(lambda: "MONITOR DUMP END" in (folder / "d.txt").read_text(), 60), f"{label}: a MONITOR DUMP")
        proc.kill()
    summary = fasthprof("summary", folder / "d.txt").stdout
    check(re.search(r'MONITOR LMonitorScenes\$Deadlock\$First;: owner \d+ "holder-first", entry count 2\n'
                    r'    waiting to enter: \d+ "holder-second"', summary) is not None and
          re.search(r'blocked: thread \d+ "holder-first" at MonitorScenes\.lambda\$deadlock\$', summary) is not None,
          f"{label}: summary names the deadlocked threads and the monitors they hold:\n{summary[-2500:]}")


run_cases("text_verbs", {
    "cpu_times": on_each_jdk(cpu_times),
    "cpu_old": on_each_jdk(cpu_old),
    "monitor": on_each_jdk(monitor),
})
