"""monitor=y: WAIT/WAITED lines while the program runs, MONITOR DUMP and MONITOR TIME at each report
(docs/compatibility.md §2.3, §2.6, §2.7), every line checked against its layout, on JDK 17 and 25
(25 skipped, and said so, when absent), every JVM with -Xverify:all.

  contention  4 threads take one lock 100 times each and hold it 10 ms: MONITOR TIME's total is
              within 15 % of the contention the program measured itself, and its first row names
              the synchronized method and the lock's class
  deadlock    two threads deadlocked and one waiting on a monitor nobody owns: a kill -QUIT's MONITOR
              DUMP gives each owner, entry count and waiter right; the test ends the JVM
  waits       Object.wait(50) 20 times: WAIT/WAITED pairs with the timeout and a plausible time, in
              the file's order before the report
  combined    monitor=y with heap=all,cpu=samples,thread=y,depth=2: every section in §2.5 order;
              format=b is refused with the original's message
  javac, h2   javac and Debian's H2 (SQL in memory) with monitor=y exit 0 with a well-formed report
  attach      jcmd JVMTI.agent_load monitor=y: the reduced MONITOR DUMP with its reason, WAIT lines
              and MONITOR TIME still there, the program unharmed
  virtual     JDK 25: virtual threads contending and waiting; the run ends normally, and what the
              file shows of them is checked (see docs/compatibility.md "monitor=y")"""
import os
import re
import signal
import subprocess
import tempfile
import time

from harness import (AGENT, agentpath, check, check_no_warnings, cleanup, java_bin, java_command, java_process,
                     jdk25, jdks, on_each_jdk, run_cases, run_java, wait_for)

VERIFY = ["-Xverify:all"]
CTIME = r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}"
THREAD_START = re.compile(r'^THREAD START \(obj=[0-9a-f]+, id = (\d+), name="([^"]*)", group="[^"]*"\)$', re.M)
WAIT = re.compile(r"^WAIT: MONITOR (\S+), timeout=(-?\d+), (?:thread (\d+)|<unknown thread>)$")
WAITED = re.compile(r"^WAITED: MONITOR (\S+), time_waited=(-?\d+), (?:thread (\d+)|<unknown thread>)$")
DUMP_THREAD = re.compile(r"^    THREAD (\d+), trace (\d+), status: ((?:S\|)?(?:intr\|)?(?:native\|)?(?:ZO|NS|SL|MW|CW|R|UN))$")
DUMP_MONITOR = re.compile(r"^    MONITOR (\S+)( unowned)?$")
DUMP_OWNER = re.compile(r"^\towner: thread (\d+), entry count: (\d+)$")
DUMP_LIST = re.compile(r"^\t(waiting to enter|waiting to be notified):((?: (?:thread \d+|<unknown thread>),)*"
                       r"(?: (?:thread \d+|<unknown thread>))?)$")
DUMP_NOTE = re.compile(r"^    \((.+)\)$")
TIME_BEGIN = re.compile(r"^MONITOR TIME BEGIN \(total = (\d+) ms\) " + CTIME + "$")
TIME_HEADER = "rank   self  accum   count trace monitor"
TIME_ROW = re.compile(r"^ *(\d+) +(\d+\.\d\d)% +(\d+\.\d\d)% +(\d+) +(\d+) (\S+) \(Java\)$")
TRACE_HEAD = re.compile(r"^TRACE (\d+):(?: \(thread=\d+\))?$")
TRACE_FRAME = re.compile(r"^\t(\S+)\((.*)\)$")


def body_of(text):
    return text.split("\n--------\n\n", 1)[-1]


def traces_of(text):
    """{serial: [frame text, ...]} and the position of each TRACE header."""
    traces, where, current = {}, {}, None
    offset = 0
    for line in text.split("\n"):
        head = TRACE_HEAD.match(line)
        if head:
            current = int(head.group(1))
            traces[current] = []
            where[current] = offset
        elif current is not None and line.startswith("\t") and not line.startswith("\towner") \
                and not line.startswith("\twaiting"):
            frame = TRACE_FRAME.match(line)
            traces[current].append(frame.group(1) if frame else line.strip())
        else:
            current = None
        offset += len(line) + 1
    return traces, where


def lines_and_positions(text):
    """The lines of text, and where each starts in it."""
    lines = text.split("\n")
    positions = []
    offset = 0
    for line in lines:
        positions.append(offset)
        offset += len(line) + 1
    return lines, positions


def monitor_dumps(label, text, run=None):
    """Every MONITOR DUMP of the file, each line checked: [(position, threads, monitors, notes)] with
    threads {serial: (trace, status)} and monitors [(signature, owner, entry count, to enter,
    to be notified)]."""
    dumps = []
    lines, positions = lines_and_positions(text)
    i = 0
    while i < len(lines):
        if lines[i] != "MONITOR DUMP BEGIN":
            i += 1
            continue
        start = positions[i]
        threads, monitors, notes = {}, [], []
        i += 1
        while i < len(lines) and lines[i] != "MONITOR DUMP END":
            line = lines[i]
            thread, monitor, note = DUMP_THREAD.match(line), DUMP_MONITOR.match(line), DUMP_NOTE.match(line)
            if thread:
                threads[int(thread.group(1))] = (int(thread.group(2)), thread.group(3))
                i += 1
            elif note and not monitors and not threads:
                notes.append(note.group(1))
                i += 1
            elif monitor:
                owner, count = 0, 0
                j = i + 1
                if not monitor.group(2):
                    owned = DUMP_OWNER.match(lines[j]) if j < len(lines) else None
                    if not check(owned is not None, f"{label}: owner line after {line!r}: {lines[j]!r}", run):
                        return dumps
                    owner, count = int(owned.group(1)), int(owned.group(2))
                    j += 1
                lists = []
                for expected in ("waiting to enter", "waiting to be notified"):
                    listed = DUMP_LIST.match(lines[j]) if j < len(lines) else None
                    if not check(listed is not None and listed.group(1) == expected,
                                 f"{label}: {expected!r} line after {line!r}: {lines[j]!r}", run):
                        return dumps
                    lists.append([int(x) for x in re.findall(r"thread (\d+)", listed.group(2))]
                                 + [0] * listed.group(2).count("<unknown thread>"))
                    j += 1
                monitors.append((monitor.group(1), owner, count, lists[0], lists[1]))
                i = j
            else:
                check(False, f"{label}: MONITOR DUMP line matches no layout of §2.6: {line!r}", run)
                i += 1
        check(i < len(lines), f"{label}: MONITOR DUMP has its END", run)
        dumps.append((start, threads, monitors, notes))
        i += 1
    return dumps


def monitor_times(label, text, run=None):
    """Every MONITOR TIME section, each line checked: [(position, total_ms, rows)] with rows
    (rank, self, accum, count, trace, class)."""
    sections = []
    lines, positions = lines_and_positions(text)
    for i, line in enumerate(lines):
        if not line.startswith("MONITOR TIME BEGIN"):
            continue
        begin = TIME_BEGIN.match(line)
        if not check(begin is not None, f"{label}: MONITOR TIME BEGIN layout: {line!r}", run):
            continue
        rows = []
        j = i + 1
        if lines[j] == TIME_HEADER:
            j += 1
        while j < len(lines) and lines[j] != "MONITOR TIME END":
            row = TIME_ROW.match(lines[j])
            if check(row is not None, f"{label}: MONITOR TIME row layout: {lines[j]!r}", run):
                rank, self_p, accum, count, trace, name = row.groups()
                exact = "%4u %5.2f%% %5.2f%% %7u %5u %s (Java)" % (int(rank), float(self_p), float(accum), int(count),
                                                                   int(trace), name)
                check(exact == lines[j], f"{label}: MONITOR TIME row is §2.7's printf: {lines[j]!r} vs {exact!r}", run)
                rows.append((int(rank), float(self_p), float(accum), int(count), int(trace), name))
            j += 1
        check(rows == [] or lines[i + 1] == TIME_HEADER, f"{label}: column header before the rows", run)
        ranks = [r[0] for r in rows]
        check(ranks == list(range(1, len(rows) + 1)), f"{label}: ranks 1..n", run)
        check(all(rows[k][1] >= rows[k + 1][1] for k in range(len(rows) - 1)), f"{label}: rows by time", run)
        sections.append((positions[i], int(begin.group(1)), rows))
    return sections


def check_traces_first(label, text, serials, section_at, run=None):
    """Every trace a section names is in the file before the section."""
    _, where = traces_of(text)
    missing = [s for s in serials if s not in where or where[s] > section_at]
    check(not missing, f"{label}: TRACEs written before the section that names them (missing {missing[:5]})", run)


def thread_serials(text):
    return {name: int(serial) for serial, name in THREAD_START.findall(text)}


def contention(label, home):
    run = run_java(home, agentpath("monitor=y,file=m.txt,depth=4"), "MonitorScenes", ["contend", "4", "100", "10"],
                   jvm_args=VERIFY, timeout=300)
    measured = re.search(r"contended_ms=(\d+)", run.stdout)
    check(run.code == 0 and measured, f"{label}: the contention program ran", run)
    text = run.text("m.txt") if run.file("m.txt").exists() else ""
    times = monitor_times(label, text, run)
    if not check(len(times) == 1 and times[0][2], f"{label}: one MONITOR TIME with rows at exit", run):
        return
    at, total, rows = times[0]
    expected = int(measured.group(1))
    check(abs(total - expected) <= 0.15 * expected,
          f"{label}: MONITOR TIME total {total} ms within 15 % of the measured {expected} ms", run)
    traces, _ = traces_of(text)
    top = rows[0]
    check(top[5] == "MonitorScenes$Counter" and traces.get(top[4], [""])[0] == "MonitorScenes$Counter.hold",
          f"{label}: first row is the Counter's lock in the synchronized method ({top}, "
          f"{traces.get(top[4])})", run)
    # 400 acquisitions; one that the releasing thread takes again at once, or that a spinning thread
    # gets without blocking, is no contended enter for the JVM (how many, the machine's load decides).
    enters = sum(r[3] for r in rows if r[5] == "MonitorScenes$Counter")
    check(40 <= enters <= 401, f"{label}: the contended enters are counted ({[r[3] for r in rows]})", run)
    check_traces_first(label, text, [r[4] for r in rows], at, run)
    dumps = monitor_dumps(label, text, run)
    check(len(dumps) == 1 and dumps[0][0] < at, f"{label}: MONITOR DUMP before MONITOR TIME", run)
    check(not any(line.startswith(("WAIT:", "WAITED:")) and "Counter" in line for line in text.split("\n")),
          f"{label}: no WAIT lines on a lock nobody waits on", run)


def deadlock(label, home):
    with java_process(home, agentpath("monitor=y,file=d.txt,depth=4"), "MonitorScenes", ["deadlock"],
                      jvm_args=VERIFY) as (proc, folder):
        out, result = folder / "stdout.txt", folder / "d.txt"
        if not check(wait_for(lambda: "ready" in out.read_text(), 60), f"{label}: deadlock reached"):
            return
        os.kill(proc.pid, signal.SIGQUIT)
        check(wait_for(lambda: result.exists() and "MONITOR DUMP END" in result.read_text(), 60),
              f"{label}: kill -QUIT writes a MONITOR DUMP")
        text = result.read_text() if result.exists() else ""
        proc.kill()
    serials = thread_serials(text)
    first, second, lonely, main = (serials.get(n) for n in ("holder-first", "holder-second", "lonely-waiter", "main"))
    dumps = monitor_dumps(label, text)
    if not check(len(dumps) == 1 and None not in (first, second, lonely, main),
                 f"{label}: one dump and the threads' START lines\n{text[-3000:]}"):
        return
    _, threads, monitors, notes = dumps[0]
    check(not notes, f"{label}: no note in a dump that lists monitors ({notes})")
    check(threads.get(first, (0, ""))[1] == "MW" and threads.get(second, (0, ""))[1] == "MW",
          f"{label}: both deadlocked threads are MW ({threads.get(first)}, {threads.get(second)})")
    check(threads.get(lonely, (0, ""))[1] == "CW", f"{label}: the waiting thread is CW ({threads.get(lonely)})")
    check(threads.get(main, (0, ""))[1] == "SL", f"{label}: main sleeps: SL ({threads.get(main)})")
    check(set(threads) >= set(serials[n] for n in ("main", "Signal Dispatcher", "fasthprof writer")),
          f"{label}: every live thread, the agent's included")
    traces, where = traces_of(text)
    check(all(t in where for t, _ in threads.values()), f"{label}: every thread's trace is written")
    check(any(f.startswith("MonitorScenes.lambda$deadlock$") for f in traces.get(threads[first][0], [])),
          f"{label}: the first holder's trace is its lambda ({traces.get(threads[first][0])})")
    by_class = {m[0]: m for m in monitors}
    expect = {
        "LMonitorScenes$Deadlock$First;": (first, 2, [second], []),
        "LMonitorScenes$Deadlock$Second;": (second, 1, [first], []),
        "LMonitorScenes$Lonely;": (0, 0, [], [lonely]),
    }
    for signature, (owner, count, enter, notify) in expect.items():
        got = by_class.get(signature)
        check(got is not None and got[1:] == (owner, count, enter, notify),
              f"{label}: {signature} owner {owner} count {count} to enter {enter} to be notified {notify}: {got}")
    unowned = [line for line in text.split("\n") if line.startswith("    MONITOR LMonitorScenes$Lonely;")]
    check(unowned == ["    MONITOR LMonitorScenes$Lonely; unowned"], f"{label}: the waited-on monitor is unowned")
    check(len(monitors) == len(set(m[0] for m in monitors if m[0].startswith("LMonitorScenes")))
          + len([m for m in monitors if not m[0].startswith("LMonitorScenes")]), f"{label}: each monitor once")


def waits(label, home):
    run = run_java(home, agentpath("monitor=y,file=w.txt"), "MonitorScenes", ["waits", "20"], jvm_args=VERIFY)
    text = run.text("w.txt") if run.file("w.txt").exists() else ""
    check(run.code == 0, f"{label}: the waiting program ran", run)
    main = thread_serials(text).get("main")
    body = body_of(text)
    streamed = re.split(r"^TRACE \d+:", body, maxsplit=1, flags=re.M)[0]
    lines = [line for line in streamed.split("\n") if line.startswith(("WAIT:", "WAITED:")) and "Sleeper" in line]
    pairs = list(zip(lines[0::2], lines[1::2]))
    check(len(lines) == 40, f"{label}: 20 WAIT and 20 WAITED lines before the report ({len(lines)})", run)
    for wait_line, waited_line in pairs:
        wait, waited = WAIT.match(wait_line), WAITED.match(waited_line)
        if not check(wait and waited, f"{label}: WAIT/WAITED layout: {wait_line!r} {waited_line!r}", run):
            break
        check(wait.group(1) == "LMonitorScenes$Sleeper;" and wait.group(2) == "50" and int(wait.group(3)) == main,
              f"{label}: WAIT names the raw signature, timeout 50 and main: {wait_line!r}", run)
        check(waited.group(1) == "LMonitorScenes$Sleeper;" and 45 <= int(waited.group(2)) <= 500
              and int(waited.group(3)) == main, f"{label}: WAITED time plausible: {waited_line!r}", run)
    others = [line for line in streamed.split("\n")
              if line and not line.startswith(("WAIT:", "WAITED:", "THREAD START", "THREAD END"))]
    check(not others, f"{label}: only thread and wait lines stream before the report ({others[:3]})", run)
    times = monitor_times(label, text, run)
    check(len(times) <= 1, f"{label}: at most one MONITOR TIME", run)


def combined(label, home):
    run = run_java(home, agentpath("monitor=y,heap=all,cpu=samples,thread=y,depth=2,file=c.txt"), "MonitorScenes",
                   ["contend", "3", "30", "10"], jvm_args=VERIFY, timeout=300)
    text = run.text("c.txt") if run.file("c.txt").exists() else ""
    check(run.code == 0, f"{label}: contention with heap=all,cpu=samples ran", run)
    check("Dumping contended monitor usage ... Java heap ... allocation sites ... CPU usage by sampling running "
          "threads ... done.\n" in run.stderr, f"{label}: the original's verbose line", run)
    order = [text.find(s) for s in ("MONITOR DUMP BEGIN", "MONITOR TIME BEGIN", "HEAP DUMP BEGIN", "SITES BEGIN",
                                    "CPU SAMPLES BEGIN")]
    check(all(p >= 0 for p in order) and order == sorted(order), f"{label}: sections in §2.5 order {order}", run)
    times = monitor_times(label, text, run)
    dumps = monitor_dumps(label, text, run)
    if check(times and times[0][2] and dumps, f"{label}: both monitor sections with rows", run):
        check_traces_first(label, text, [r[4] for r in times[0][2]], times[0][0], run)
        check_traces_first(label, text, [t for t, _ in dumps[0][1].values()], dumps[0][0], run)
        heads = {int(m.group(1)): m.group(0) for m in re.finditer(r"^TRACE (\d+):.*$", text, re.M)}
        check(all("(thread=" in heads.get(r[4], "") for r in times[0][2]),
              f"{label}: thread=y puts the thread in MONITOR TIME's traces", run)
        traces, _ = traces_of(text)
        counter = [r for r in times[0][2] if r[5] == "MonitorScenes$Counter"]
        check(counter and all(traces.get(r[4], [])[:2] == ["MonitorScenes$Counter.hold", "MonitorScenes.lambda$contend$0"]
                              and len(traces[r[4]]) == 2 for r in counter),
              f"{label}: depth=2 traces of the contended enter ({[traces.get(r[4]) for r in counter]})", run)
    refused = run_java(home, agentpath("monitor=y,format=b"))
    check(refused.code == 1 and "monitor=y is not supported with format=b" in refused.stderr,
          f"{label}: format=b with monitor=y refused with the original's message", refused)


def javac(label, home):
    folder = tempfile.mkdtemp(prefix="fasthprof-it-")
    sources = []
    for i in range(60):
        path = os.path.join(folder, f"Gen{i}.java")
        with open(path, "w") as f:
            f.write(f"public class Gen{i} {{ synchronized int m(Gen{(i + 1) % 60} o) {{ return {i}; }} }}\n")
        sources.append(path)
    result = subprocess.run(java_command(home, f"-J{agentpath('monitor=y,file=javac.txt')}", "-J-Xverify:all",
                                         "-d", os.path.join(folder, "classes"), *sources, tool="javac"),
                            cwd=folder, capture_output=True, text=True, timeout=300)
    check_no_warnings(f"{label}: javac with monitor=y", result.stdout, result.stderr)
    check(result.returncode == 0, f"{label}: javac with monitor=y exits 0\n{result.stderr[-2000:]}")
    path = os.path.join(folder, "javac.txt")
    text = open(path).read() if os.path.exists(path) else ""
    check(len(monitor_dumps(label, text)) == 1, f"{label}: javac's file has its MONITOR DUMP")
    monitor_times(label, text)
    cleanup(folder)


H2_JAR = "/usr/share/java/h2.jar"


def h2(label, home):
    if not os.path.exists(H2_JAR):
        print(f"SKIP: {label}: {H2_JAR} not installed (apt-get install libh2-java)", flush=True)
        return
    sql = ("CREATE TABLE T(ID INT PRIMARY KEY, NAME VARCHAR(100)); "
           "INSERT INTO T SELECT X, 'name' || X FROM SYSTEM_RANGE(1, 5000); "
           "SELECT COUNT(*), MAX(ID) FROM T")
    folder = tempfile.mkdtemp(prefix="fasthprof-h2-")
    command = java_command(home, "-Xverify:all", agentpath("monitor=y,file=h2.txt"), "-cp", H2_JAR,
                           "org.h2.tools.Shell", "-url", "jdbc:h2:mem:t", "-sql", sql)
    proc = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300)
    check_no_warnings(f"{label}: H2 with monitor=y", proc.stdout, proc.stderr)
    check(proc.returncode == 0 and re.search(r"5000\s*\|\s*5000", proc.stdout) is not None,
          f"{label}: H2 runs the SQL with monitor=y: {proc.stdout[-500:]} {proc.stderr[-1500:]}")
    path = os.path.join(folder, "h2.txt")
    text = open(path).read() if os.path.exists(path) else ""
    check(len(monitor_dumps(label, text)) == 1, f"{label}: H2's file has its MONITOR DUMP")
    monitor_times(label, text)
    cleanup(folder)


def attach(label, home):
    with java_process(home, None, "MonitorScenes", ["deadlock"], jvm_args=VERIFY) as (proc, folder):
        out, result = folder / "stdout.txt", folder / "attached.txt"
        if not check(wait_for(lambda: "ready" in out.read_text(), 60), f"{label}: attach target ready"):
            return
        loaded = subprocess.run([java_bin(home, "jcmd"), str(proc.pid), "JVMTI.agent_load", AGENT,
                                 f'"monitor=y,file={result}"'], capture_output=True, text=True, timeout=60)
        check(loaded.returncode == 0 and "return code: 0" in loaded.stdout,
              f"{label}: the agent attaches\n{loaded.stdout}{loaded.stderr}")
        time.sleep(0.5)
        os.kill(proc.pid, signal.SIGQUIT)
        check(wait_for(lambda: result.exists() and "MONITOR DUMP END" in result.read_text(), 60),
              f"{label}: kill -QUIT writes a MONITOR DUMP under attach")
        check(proc.poll() is None, f"{label}: the program runs on after the report")
        text = result.read_text() if result.exists() else ""
        stderr = (folder / "stderr.txt").read_text()
        proc.kill()
    dumps = monitor_dumps(label, text)
    if check(len(dumps) == 1, f"{label}: one reduced dump\n{text[-2000:]}"):
        _, threads, monitors, notes = dumps[0]
        check(len(notes) == 1 and "no owned-monitor information" in notes[0] and not monitors,
              f"{label}: the dump's first line says why it lists no monitors ({notes}, {monitors})")
        serials = thread_serials(text)
        check(threads.get(serials.get("holder-first"), (0, ""))[1] == "MW",
              f"{label}: the threads and their states are there")
    check("no owned-monitor information" in stderr, f"{label}: the attach says it on stderr too\n{stderr}")


def virtual():
    label, home = jdk25()
    source = os.path.join(os.environ.get("SOURCE_ROOT", "."), "tests", "java21", "MonitorVirtual.java")
    classes = tempfile.mkdtemp(prefix="fasthprof-vt-")
    compiled = subprocess.run([java_bin(home, "javac"), "-d", classes, source], capture_output=True, text=True)
    if not check(compiled.returncode == 0, f"{label}: MonitorVirtual compiles\n{compiled.stderr}"):
        return
    run = run_java(home, agentpath("monitor=y,file=v.txt,depth=4"), "MonitorVirtual", ["40", "10"],
                   jvm_args=VERIFY, classpath=classes, timeout=300)
    check(run.code == 0 and "done" in run.stdout, f"{label}: virtual threads contend and wait under monitor=y", run)
    text = run.text("v.txt") if run.file("v.txt").exists() else ""
    waits_seen = [line for line in text.split("\n") if line.startswith("WAIT: MONITOR LMonitorVirtual$Shared;")]
    waited_seen = [line for line in text.split("\n") if line.startswith("WAITED: MONITOR LMonitorVirtual$Shared;")]
    # What the JVM reports of virtual threads (docs/compatibility.md "monitor=y"): their waits, as
    # <unknown thread> (the agent gives virtual threads no serial), and their contention.
    check(len(waits_seen) == 400 and len(waited_seen) == 400,
          f"{label}: every wait of the virtual threads is a WAIT/WAITED pair ({len(waits_seen)}, {len(waited_seen)})",
          run)
    check(all(line.endswith("<unknown thread>") for line in waits_seen + waited_seen),
          f"{label}: virtual threads are <unknown thread>", run)
    for line in waits_seen + waited_seen:
        check(WAIT.match(line) or WAITED.match(line), f"{label}: layout of {line!r}", run)
        break
    times = monitor_times(label, text, run)
    measured = re.search(r"contended_ms=(\d+)", run.stdout)
    total = times[0][1] if times else 0
    print(f"{label}: virtual threads: program measured {measured.group(1) if measured else '?'} ms of contention,"
          f" MONITOR TIME total {total} ms, rows {times[0][2][:3] if times else []}", flush=True)
    check(len(monitor_dumps(label, text, run)) == 1, f"{label}: the MONITOR DUMP is written", run)
    cleanup(classes)


run_cases("monitor", {
    "contention": on_each_jdk(contention),
    "deadlock": on_each_jdk(deadlock),
    "waits": on_each_jdk(waits),
    "combined": on_each_jdk(combined),
    "javac": on_each_jdk(javac),
    "h2": on_each_jdk(h2),
    "attach": on_each_jdk(attach),
    "virtual": virtual,
})
