"""THREAD START / THREAD END for every Java thread: those that existed before the agent went live
(main, Reference Handler, ...), the program's own, and the agent's, in text and in binary."""
import re

import hprof_records
from harness import agentpath, check, finish, jdks, run_java, verify_binary

START = re.compile(r'THREAD START \(obj=([0-9a-f]+), id = (\d+), name="([^"]*)", group="([^"]*)"\)')
END = re.compile(r"THREAD END \(id = (\d+)\)")

for label, home in jdks():
    run = run_java(home, agentpath("heap=sites"), args=["4"])
    text = run.text("java.hprof.txt") if run.file("java.hprof.txt").exists() else ""
    body = text.split("\n--------\n\n", 1)[-1]
    starts = [m.groups() for m in START.finditer(body)]
    ends = [int(m.group(1)) for m in END.finditer(body)]
    by_name = {name: (obj, int(serial), group) for obj, serial, name, group in starts}
    serials = [int(serial) for _, serial, _, _ in starts]
    check(len(serials) == len(set(serials)), f"{label}: every thread has its own serial", run)
    check(min(serials, default=0) >= 200001, f"{label}: thread serials start above 200000", run)
    objects = [obj for obj, _, _, _ in starts]
    check(len(objects) == len(set(objects)), f"{label}: every thread has its own object ID", run)
    for name, group in (("main", "main"), ("Reference Handler", "system"), ("Finalizer", "system"),
                        ("Signal Dispatcher", "system"), ("fasthprof writer", "system")):
        check(by_name.get(name, (None, None, None))[2] == group,
              f"{label}: THREAD START for {name!r} in group {group!r}", run)
    for i in range(4):
        entry = by_name.get(f"worker-{i}")
        check(entry is not None and entry[2] == "workers", f"{label}: THREAD START for worker-{i}", run)
        if entry:
            check(entry[1] in ends, f"{label}: THREAD END for worker-{i}", run)
            start_at = body.find(f'name="worker-{i}"')
            end_at = body.find(f"THREAD END (id = {entry[1]})")
            check(0 <= start_at < end_at, f"{label}: worker-{i} starts before it ends", run)
    # heap=sites writes its report (TRACEs, then SITES) at exit; everything before it is thread lines.
    streamed = re.split(r"^(?:TRACE \d+:|SITES BEGIN)", body, maxsplit=1, flags=re.M)[0]
    check(all(line.startswith(("THREAD START", "THREAD END")) for line in streamed.splitlines() if line),
          f"{label}: nothing but thread lines after the header at this stage", run)

    # Binary: UTF8 names + START THREAD with names, group and parent group; END THREAD.
    run = run_java(home, agentpath("format=b,heap=sites"), args=["3"])
    path = run.file("java.hprof")
    if not check(path.exists(), f"{label}: binary file written", run):
        continue
    _, id_size, _, records = hprof_records.read(path)
    threads = hprof_records.start_threads(records, id_size)
    names = {t[3]: t for t in threads}
    check("main" in names and names["main"][4] == "main" and names["main"][5] == "system",
          f"{label}: START THREAD main in group main under system: {names.get('main')}", run)
    check("Reference Handler" in names and names["Reference Handler"][5] == "",
          f"{label}: the system group has no parent group", run)
    check(all(t[2] == 300000 for t in threads), f"{label}: START THREAD names the empty trace 300000", run)
    traces = [r for r in records if r.tag == 0x05]
    check(any(r.body[:4] == (300000).to_bytes(4, "big") and r.body[8:12] == b"\0\0\0\0" for r in traces),
          f"{label}: the empty TRACE 300000 is written", run)
    ended = hprof_records.end_threads(records)
    for i in range(3):
        t = names.get(f"worker-{i}")
        check(t is not None and t[4] == "workers" and t[0] in ended,
              f"{label}: START and END THREAD for worker-{i}", run)
    ok, output = verify_binary(path)
    check(ok, f"{label}: hprof-verify accepts the thread records:\n{output}", run)

finish("thread_lines")
