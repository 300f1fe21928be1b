"""heap=sites: exact allocated and live counts at known sites from known callers (tests/java/
AllocSites.java), with 16 threads while others start and end, on kill -QUIT and at exit, in text and
binary (verified); sample= estimates; live=n (allocated counts equal to live=y's, the live columns
repeating them, the headers and CONTROL SETTINGS saying so, the refused combinations); and programs nobody here wrote (javac on generated sources,
Debian's H2 database running SQL) exit normally with sane output. Each case is a Meson test
(`alloc_sites.py <case>`)."""
import os
import pathlib
import re
import signal
import struct
import subprocess
import tempfile

import hprof_records
from harness import (site_markers, agentpath, check, check_no_warnings, cleanup, java_command, java_process,
                     on_each_jdk, run_cases, run_java, verify_binary, wait_for)

SOURCE = pathlib.Path(os.environ["SOURCE_ROOT"]) / "tests" / "java" / "AllocSites.java"
H2_JAR = "/usr/share/java/h2.jar"

HEADER = re.compile(r"^SITES BEGIN \(ordered by live bytes\) \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}$")


LINES = site_markers(SOURCE)


def frame(method, marker):
    return f"AllocSites.{method}(AllocSites.java:{LINES[marker]})"


def parse_text(text):
    """(traces {serial: [frame, ...]}, trace positions {serial: offset}, SITES sections as
    hprof_records.text_sites gives them)."""
    found = hprof_records.text_traces(text)
    return ({serial: frames for serial, (_, frames) in found.items()},
            {serial: offset for serial, (offset, _) in found.items()}, hprof_records.text_sites(text))


def rows_at(rows, traces, class_name, *top_frames):
    return [r for r in rows if r and r["class"] == class_name and
            traces.get(r["trace"], [])[:len(top_frames)] == list(top_frames)]


def check_section_shape(label, section, positions, run):
    begin, header, columns, rows, ended = section
    check(HEADER.match(header) is not None, f"{label}: SITES BEGIN line: {header!r}", run)
    check(columns == ["          percent          live          alloc'ed  stack class",
                      " rank   self  accum     bytes objs     bytes  objs trace name"],
          f"{label}: SITES column header: {columns!r}", run)
    check(ended, f"{label}: SITES END closes the section", run)
    check(all(r is not None for r in rows), f"{label}: every SITES row has the §2.9 layout", run)
    rows = [r for r in rows if r]
    check([r["rank"] for r in rows] == list(range(1, len(rows) + 1)), f"{label}: ranks count from 1", run)
    check(all(a["live_bytes"] >= b["live_bytes"] for a, b in zip(rows, rows[1:])),
          f"{label}: rows sorted by live bytes", run)
    check(all(r["live_objs"] <= r["alloc_objs"] and r["live_bytes"] <= r["alloc_bytes"] for r in rows),
          f"{label}: live never exceeds allocated", run)
    check(all(positions.get(r["trace"], 1 << 60) < begin for r in rows),
          f"{label}: every TRACE a row names is written before the section", run)
    if rows:
        check(rows[-1]["accum"] <= 100.01, f"{label}: accumulated percent stays within 100", run)
    return rows


def check_basic_counts(label, rows, traces, run, dropped_visible):
    a = rows_at(rows, traces, "AllocSites$Item", frame("makeItems", "item"), frame("callerA", "callerA"))
    b = rows_at(rows, traces, "AllocSites$Item", frame("makeItems", "item"), frame("callerB", "callerB"))
    ints = rows_at(rows, traces, "int[]", frame("makeArrays", "ints"))
    strings = rows_at(rows, traces, "java.lang.String[]", frame("makeStringArrays", "strings"))
    if check(len(a) == 1 and len(b) == 1, f"{label}: one Item site per caller (A {len(a)}, B {len(b)})", run):
        a, b = a[0], b[0]
        check((a["alloc_objs"], a["live_objs"]) == (1000, 1000),
              f"{label}: callerA Items: 1000 allocated, 1000 live: {a['text']}", run)
        check((b["alloc_objs"], b["live_objs"]) == (2000, 1000),
              f"{label}: callerB Items: 2000 allocated, 1000 live: {b['text']}", run)
        size = a["alloc_bytes"] // 1000
        check(size >= 16 and a["alloc_bytes"] == 1000 * size and a["live_bytes"] == 1000 * size and
              b["alloc_bytes"] == 2000 * size and b["live_bytes"] == 1000 * size,
              f"{label}: Item bytes are objects x one object size", run)
        check(a["trace"] != b["trace"], f"{label}: distinct callers give distinct traces", run)
    if check(len(ints) == 1, f"{label}: one int[] site in makeArrays", run):
        check((ints[0]["alloc_objs"], ints[0]["live_objs"], ints[0]["alloc_bytes"]) == (500, 500, 500 * 56),
              f"{label}: int[10] x 500, 56 bytes each, all live: {ints[0]['text']}", run)
    if dropped_visible:
        if check(len(strings) == 1, f"{label}: the dropped String[] site is listed with cutoff=0", run):
            check((strings[0]["alloc_objs"], strings[0]["live_objs"], strings[0]["live_bytes"]) == (300, 0, 0),
                  f"{label}: String[3] x 300 allocated, none live: {strings[0]['text']}", run)
    else:
        check(not strings, f"{label}: a site with no live bytes falls below the default cutoff", run)


# ---- binary reading ---------------------------------------------------------------------------

def binary_sites(path):
    """(classes {serial: name}, traces {serial: [(method, line)]}, sites [(kind, class, trace, lb,
    lo, ab, ao)], header, summaries)"""
    records = hprof_records.read(path)[3]
    frames = hprof_records.stack_frames(records)
    traces = {serial: [frames.get(i) and (frames[i][0], frames[i][2]) for i in ids]
              for serial, (_, ids) in hprof_records.stack_traces(records).items()}
    sites = hprof_records.alloc_sites(records)
    return (hprof_records.load_classes(records), traces, [rows for _, rows in sites], [header for header, _ in sites],
            hprof_records.heap_summaries(records))


def run_binary_basic(label, home):
    run = run_java(home, agentpath("heap=sites,format=b,file=sites.hprof"), "AllocSites", ["basic"])
    check(run.code == 0 and "AllocSites done" in run.stdout, f"{label}: binary run exits normally", run)
    path = run.file("sites.hprof")
    ok, output = verify_binary(path)
    check(ok, f"{label}: the binary heap=sites file verifies:\n{output}", run)
    if not ok:
        return
    classes, traces, sites, headers, summaries = binary_sites(path)
    if not check(len(sites) == 1 and len(summaries) == 1, f"{label}: one ALLOC SITES and one HEAP SUMMARY", run):
        return
    flags, cutoff, live_bytes, live_objs, alloc_bytes, alloc_objs, count = headers[0]
    check(flags == 0, f"{label}: ALLOC SITES flags 0 at exit", run)
    check(cutoff == struct.pack(">f", 0.0001), f"{label}: cutoff written as IEEE float bits: {cutoff.hex()}", run)
    check(summaries[0] == (live_bytes, live_objs, alloc_bytes, alloc_objs),
          f"{label}: HEAP SUMMARY carries the ALLOC SITES totals", run)
    rows = sites[0]
    check(sum(r[3] for r in rows) <= live_bytes and live_objs <= alloc_objs, f"{label}: totals cover the rows", run)

    def matching(name, top):
        return [r for r in rows if classes.get(r[1]) == name and traces.get(r[2], [])[:len(top)] == top]
    a = matching("AllocSites$Item", [("makeItems", LINES["item"]), ("callerA", LINES["callerA"])])
    b = matching("AllocSites$Item", [("makeItems", LINES["item"]), ("callerB", LINES["callerB"])])
    ints = matching("int[]", [("makeArrays", LINES["ints"])])
    check(len(a) == 1 and a[0][0] == 0 and (a[0][6], a[0][4]) == (1000, 1000),
          f"{label}: binary callerA Items 1000/1000, kind 0: {a}", run)
    check(len(b) == 1 and (b[0][6], b[0][4]) == (2000, 1000), f"{label}: binary callerB Items 2000/1000: {b}", run)
    check(len(ints) == 1 and ints[0][0] == 10 and (ints[0][6], ints[0][4], ints[0][5]) == (500, 500, 28000),
          f"{label}: binary int[] site: kind 10 (int), 500 x 56 bytes: {ints}", run)
    check(not matching("java.lang.String[]", [("makeStringArrays", LINES["strings"])]),
          f"{label}: the dead String[] site is below the cutoff", run)
    cleanup(run.folder)


def run_text_basic(label, home):
    run = run_java(home, agentpath("heap=sites,cutoff=0,file=sites.txt"), "AllocSites", ["basic"])
    check(run.code == 0 and "AllocSites done" in run.stdout, f"{label}: text run exits normally", run)
    check("not implemented" not in run.stderr, f"{label}: heap=sites prints no missing-feature line", run)
    check("Dumping allocation sites ... done." in run.stderr, f"{label}: the verbose dump line", run)
    traces, positions, sections = parse_text(run.text("sites.txt"))
    if check(len(sections) == 1, f"{label}: one SITES section at exit", run):
        rows = check_section_shape(f"{label} basic", sections[0], positions, run)
        check_basic_counts(f"{label} basic", rows, traces, run, dropped_visible=True)
        check(abs(rows[-1]["accum"] - 100.0) < 0.05, f"{label}: cutoff=0 lists every site (accum 100%)", run)
    cleanup(run.folder)


def run_threads(label, home):
    run = run_java(home, agentpath("heap=sites,file=threads.txt"), "AllocSites", ["threads"], timeout=180)
    check(run.code == 0 and "AllocSites done threads" in run.stdout, f"{label}: 16-thread run exits normally", run)
    traces, positions, sections = parse_text(run.text("threads.txt"))
    if not check(len(sections) == 1, f"{label}: one SITES section", run):
        return
    rows = check_section_shape(f"{label} threads", sections[0], positions, run)
    items = rows_at(rows, traces, "AllocSites$Item", frame("makeItems", "item"), frame("worker", "worker"))
    churn = rows_at(rows, traces, "AllocSites$Churn", frame("churn", "churn"))
    if check(len(items) == 1, f"{label}: one Item site for the 16 workers", run):
        check((items[0]["alloc_objs"], items[0]["live_objs"]) == (80000, 60000),
              f"{label}: 16 x 5000 Items allocated, 60000 live: {items[0]['text']}", run)
    if check(len(churn) == 1, f"{label}: one Churn site for the 64 short threads", run):
        check((churn[0]["alloc_objs"], churn[0]["live_objs"]) == (6400, 6400),
              f"{label}: 64 x 100 Churn objects, all live: {churn[0]['text']}", run)
    cleanup(run.folder)


def run_quit(label, home):
    with java_process(home, agentpath("heap=sites,file=quit.txt"), "AllocSites",
                      ["basic", "sleep", "3000"]) as (proc, folder):
        stdout = folder / "stdout.txt"
        out = folder / "quit.txt"
        check(wait_for(lambda: "AllocSites done" in stdout.read_text(), 30), f"{label}: program started")
        os.kill(proc.pid, signal.SIGQUIT)
        check(wait_for(lambda: out.exists() and "SITES END" in out.read_text(), 20),
              f"{label}: kill -QUIT writes a SITES section while the program runs")
        code = proc.wait(timeout=60)
        check(code == 0, f"{label}: exits normally after kill -QUIT (exit {code})")
        traces, positions, sections = parse_text(out.read_text())
        if check(len(sections) == 2, f"{label}: SITES on kill -QUIT and at exit ({len(sections)})"):
            for n, section in enumerate(sections):
                rows = check_section_shape(f"{label} quit #{n}", section, positions, None)
                check_basic_counts(f"{label} quit #{n}", rows, traces, None, dropped_visible=False)


def run_sampled(label, home):
    run = run_java(home, agentpath("heap=sites,sample=4k,file=sampled.txt"), "AllocSites", ["threads"], timeout=180)
    check(run.code == 0, f"{label}: sample=4k run exits normally", run)
    check("not implemented" not in run.stderr, f"{label}: sample= prints no missing-feature line", run)
    traces, positions, sections = parse_text(run.text("sampled.txt"))
    if not check(len(sections) == 1, f"{label}: sample= writes SITES", run):
        return
    rows = check_section_shape(f"{label} sampled", sections[0], positions, run)
    items = rows_at(rows, traces, "AllocSites$Item", frame("makeItems", "item"), frame("worker", "worker"))
    if check(len(items) == 1, f"{label}: sample= finds the dominant Item site", run):
        # About 1.3 MB of Items at a 4 KiB mean interval: ~300 samples, so the estimate is within a
        # few percent; 30 % leaves room for the JVM's TLAB-granular sampling.
        estimate = items[0]["alloc_objs"]
        check(abs(estimate - 80000) <= 24000, f"{label}: sampled Item estimate {estimate} near 80000", run)
        check(items[0]["live_objs"] <= items[0]["alloc_objs"], f"{label}: sampled live <= allocated", run)
    cleanup(run.folder)


def run_javac(label, home):
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-javac-"))
    sources = folder / "src"
    sources.mkdir()
    for i in range(200):
        (sources / f"Gen{i}.java").write_text(
            f"package gen;\nimport java.util.*;\npublic class Gen{i} {{\n"
            f"  private final List<String> names = new ArrayList<>();\n"
            f"  private final Map<Integer, String> byId = new HashMap<>();\n"
            f"  public int work(int n) {{ int sum = 0; for (int k = 0; k < n; k++) {{ names.add(\"n\" + k);"
            f" byId.put(k, names.get(k)); sum += k * {i}; }} return sum; }}\n"
            f"  public String describe() {{ return String.format(\"Gen{i}(%d)\", names.size()); }}\n"
            f"  static int helper(int x) {{ return x > 0 ? helper(x - 1) + 1 : 0; }}\n}}\n")
    command = java_command(home, f"-J{agentpath('heap=sites,format=b,file=' + str(folder / 'javac.hprof'))}",
                           "-d", str(folder / "out"), *[str(p) for p in sorted(sources.iterdir())], tool="javac")
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    check_no_warnings(f"{label}: javac with heap=sites", proc.stdout, proc.stderr)
    check(proc.returncode == 0, f"{label}: javac with heap=sites compiles 200 files: {proc.stderr[-2000:]}")
    check((folder / "out" / "gen" / "Gen199.class").exists(), f"{label}: javac wrote its classes")
    ok, output = verify_binary(folder / "javac.hprof")
    check(ok, f"{label}: javac's heap=sites file verifies:\n{output}")
    if ok:
        classes, traces, sites, headers, summaries = binary_sites(folder / "javac.hprof")
        check(len(sites) == 1 and len(sites[0]) > 10, f"{label}: javac ALLOC SITES lists sites")
        if sites:
            check(headers[0][5] > 100000 and headers[0][3] <= headers[0][5],
                  f"{label}: javac allocated {headers[0][5]} objects, {headers[0][3]} live")
            check(all(classes.get(r[1]) for r in sites[0]), f"{label}: every javac site names a loaded class")
    cleanup(folder)


def run_h2(label, home):
    if not os.path.exists(H2_JAR):
        print(f"SKIP: {label}: {H2_JAR} not installed (apt-get install libh2-java)")
        return
    sql = ("CREATE TABLE T(ID INT PRIMARY KEY, NAME VARCHAR(100)); "
           "INSERT INTO T SELECT X, 'name' || X FROM SYSTEM_RANGE(1, 5000); "
           "SELECT COUNT(*), MAX(ID) FROM T")
    folder = tempfile.mkdtemp(prefix="fasthprof-h2-")
    command = java_command(home, agentpath("heap=sites,file=h2.txt"), "-cp", H2_JAR, "org.h2.tools.Shell",
                           "-url", "jdbc:h2:mem:t", "-sql", sql)
    proc = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300)
    check_no_warnings(f"{label}: H2 with heap=sites", proc.stdout, proc.stderr)
    check(proc.returncode == 0 and re.search(r"5000\s*\|\s*5000", proc.stdout) is not None,
          f"{label}: H2 runs the SQL with heap=sites: {proc.stdout[-500:]} {proc.stderr[-1500:]}")
    text = pathlib.Path(folder, "h2.txt").read_text()
    traces, positions, sections = parse_text(text)
    if check(len(sections) == 1, f"{label}: H2 run writes SITES"):
        rows = check_section_shape(f"{label} h2", sections[0], positions, None)
        check(len(rows) > 10, f"{label}: H2 SITES has rows ({len(rows)})")
        check(any(r["class"].startswith("org.h2.") for r in rows) or
              any(any(f.startswith("org.h2.") for f in traces.get(r["trace"], [])) for r in rows),
              f"{label}: H2's own classes or frames appear in SITES")
    cleanup(folder)


# ---- live=n --------------------------------------------------------------------------------

LIVE_N_NOTE = ("live=n: objects were not followed after their allocation, so the live\n"
               "columns of SITES repeat the allocated ones (every allocation is counted).\n")
ALLOCATED_HEADER = re.compile(r"^SITES BEGIN \(ordered by allocated bytes\) ")


def own_sites(rows, traces):
    """{(class, top frames): (allocated objects, allocated bytes)} of the sites AllocSites itself
    allocated at (its marked lines), summed over rows."""
    out = {}
    for r in rows:
        top = tuple(f for f in traces.get(r["trace"], []) if "AllocSites.java" in f)
        if r["class"] in ("AllocSites$Item", "int[]", "java.lang.String[]") and top:
            counts = out.get((r["class"], top), (0, 0))
            out[(r["class"], top)] = (counts[0] + r["alloc_objs"], counts[1] + r["alloc_bytes"])
    return out


def run_live_n_text(label, home):
    """live=n counts what live=y counts as allocated, site by site, by the event (alloc=event) and
    by injection (alloc=auto, the default of both); its live columns repeat them, the same header,
    columns and known answer either way (the sites where the two ways differ: docs/allocation-sites.md)."""
    found = {}
    for live, how in (("y", "event"), ("n", "event"), ("y", "auto"), ("n", "auto")):
        run = run_java(home, agentpath(f"heap=sites,live={live},alloc={how},cutoff=0,file=sites.txt"), "AllocSites",
                       ["basic"], jvm_args=["-Xcheck:jni"])
        if not check(run.code == 0 and "AllocSites done" in run.stdout, f"{label} live={live} alloc={how}: exits normally", run):
            return
        check_no_warnings(f"{label} live={live} alloc={how}", run.stdout, run.stderr)
        text = run.text("sites.txt")
        traces, positions, sections = parse_text(text)
        if not check(len(sections) == 1 and sections[0][4], f"{label} live={live} alloc={how}: one whole SITES section", run):
            return
        rows = [r for r in sections[0][3] if r]
        found[live, how] = own_sites(rows, traces)
        if live == "n":
            check(LIVE_N_NOTE in text.split("--------")[0], f"{label}: the file header says live=n", run)
            check(ALLOCATED_HEADER.match(sections[0][1]) is not None,
                  f"{label}: SITES ordered by allocated bytes: {sections[0][1]!r}", run)
            same = [r["text"] for r in rows if (r["live_objs"], r["live_bytes"]) != (r["alloc_objs"], r["alloc_bytes"])]
            check(not same, f"{label}: every live column repeats the allocated one: {same[:3]}", run)
            check(all(a["alloc_bytes"] >= b["alloc_bytes"] for a, b in zip(rows, rows[1:])),
                  f"{label}: rows sorted by allocated bytes", run)
            check(abs(rows[-1]["accum"] - 100.0) < 0.05, f"{label}: cutoff=0 lists every site (accum 100%)", run)
            # The known answer: 1000 + 2000 Items, 500 int[10], 300 String[3], dropped or not.
            marked = {(name, frame(method, marker)): count for name, method, marker, count in (
                ("AllocSites$Item", "makeItems", "item", 3000), ("int[]", "makeArrays", "ints", 500),
                ("java.lang.String[]", "makeStringArrays", "strings", 300))}
            counted = {}
            for (name, top), (objects, _) in found[live, how].items():
                if (name, top[0]) in marked:
                    counted[(name, top[0])] = counted.get((name, top[0]), 0) + objects
            check(counted == marked, f"{label}: the marked sites' counts: {counted}", run)
            check(all(positions.get(r["trace"], 1 << 60) < sections[0][0] for r in rows),
                  f"{label}: every TRACE a row names is written before the section", run)
        else:
            check(LIVE_N_NOTE not in text, f"{label}: live=y's header says nothing of live=n", run)
        cleanup(run.folder)
    for how in ("event", "auto"):
        check(found["y", how] == found["n", how], f"{label}: alloc={how}: live=n's allocated counts equal live=y's, "
              f"site by site:\n  y {found['y', how]}\n  n {found['n', how]}")


def run_live_n_binary(label, home):
    run = run_java(home, agentpath("heap=sites,live=n,format=b,file=sites.hprof"), "AllocSites", ["basic"],
                   jvm_args=["-Xcheck:jni"])
    if not check(run.code == 0 and "AllocSites done" in run.stdout, f"{label}: binary live=n exits normally", run):
        return
    path = run.file("sites.hprof")
    ok, output = verify_binary(path)
    if not check(ok, f"{label}: the binary live=n file verifies:\n{output}", run):
        return
    records = hprof_records.read(path)[3]
    control = [struct.unpack(">IH", r.body) for r in records if r.tag == 0x0E]
    check(control and control[0][0] == 0x1 | 0x4, f"{label}: CONTROL SETTINGS flags alloc traces + live=n (5): {control}",
          run)
    classes, traces, sites, headers, summaries = binary_sites(path)
    if not check(len(sites) == 1 and len(summaries) == 1, f"{label}: one ALLOC SITES and one HEAP SUMMARY", run):
        return
    flags, _, live_bytes, live_objs, alloc_bytes, alloc_objs, _ = headers[0]
    check(flags == 0x2, f"{label}: ALLOC SITES flags: sorted by allocation (2): {flags}", run)
    check((live_bytes, live_objs) == (alloc_bytes, alloc_objs) and summaries[0] == headers[0][2:6],
          f"{label}: totals: live repeats allocated, HEAP SUMMARY the same: {headers[0]} {summaries[0]}", run)
    rows = sites[0]
    check(all((r[3], r[4]) == (r[5], r[6]) for r in rows), f"{label}: every site's live counts repeat its allocated", run)
    b = [r for r in rows if classes.get(r[1]) == "AllocSites$Item" and
         traces.get(r[2], [])[:2] == [("makeItems", LINES["item"]), ("callerB", LINES["callerB"])]]
    check(len(b) == 1 and (b[0][6], b[0][4]) == (2000, 2000), f"{label}: callerB Items 2000, live column 2000: {b}", run)
    text = subprocess.run([os.environ["FASTHPROF_COMMAND"], "text", str(path)], capture_output=True, text=True,
                          timeout=120)
    check(text.returncode == 0 and LIVE_N_NOTE in text.stdout and "SITES BEGIN (ordered by allocated bytes)" in text.stdout,
          f"{label}: `fasthprof text` of the file says live=n as format=a does: {text.stderr[-500:]}", run)
    cleanup(run.folder)


def run_live_n_options(label, home):
    """live=n without heap=sites, or with a heap dump, is refused at start with the reason."""
    for options, error in (("live=n", "live=n needs heap=sites without heap=dump"),
                           ("heap=all,live=n", "live=n needs heap=sites without heap=dump"),
                           ("heap=sites,heap=dump,live=n", "live=n needs heap=sites without heap=dump"),
                           ("heap=sites,live=x", "live option value must be y|n")):
        run = run_java(home, agentpath(options), "AllocSites", ["basic"])
        check(run.code != 0 and error in run.stderr and "AllocSites done" not in run.stdout,
              f"{label}: {options} refused: {error}", run)
    run = run_java(home, agentpath("heap=sites,live=n,sample=64k,file=s.txt"), "AllocSites", ["basic"])
    check(run.code == 0 and "SITES BEGIN (ordered by allocated bytes)" in run.text("s.txt"),
          f"{label}: live=n with sample= runs", run)


def run_sites_full(label, home):
    """A site table too small for the run (sites=1024, depth 16): one line says so when it fills,
    another at exit how many allocations went uncounted; the report lists at most 1024 sites. The
    default table takes the same run without either line."""
    full = "fasthprof: the allocation site table is full (1024 sites, depth 16): allocations at new sites are " \
           "not counted from now on; sites=<n> keeps more"
    run = run_java(home, agentpath("heap=sites,sites=1024,depth=16,cutoff=0,file=s.txt"), "AllocSites", ["basic"])
    if not check(run.code == 0 and "AllocSites done" in run.stdout, f"{label}: sites=1024 exits normally", run):
        return
    dropped = re.search(r"fasthprof: the allocation site table was full: (\d+) allocations at new sites were not "
                        r"tracked \(sites=<n> keeps more\)", run.stderr)
    check(run.stderr.count(full) == 1 and dropped is not None and int(dropped.group(1)) > 0,
          f"{label}: one line when the table fills, the count at exit", run)
    check(run.stderr.find(full) < run.stderr.find("Dumping allocation sites"), f"{label}: said before the report", run)
    sections = hprof_records.text_sites(run.text("s.txt"))
    rows = [r for r in sections[-1][3] if r] if sections else []
    check(0 < len(rows) <= 1024, f"{label}: at most 1024 sites listed: {len(rows)}", run)
    run = run_java(home, agentpath("heap=sites,depth=16,file=s.txt"), "AllocSites", ["basic"])
    check(run.code == 0 and "site table" not in run.stderr, f"{label}: the default table holds the run", run)


run_cases("alloc_sites", {
    "text_basic": on_each_jdk(run_text_basic),
    "binary_basic": on_each_jdk(run_binary_basic),
    "threads": on_each_jdk(run_threads),
    "quit": on_each_jdk(run_quit),
    "sampled": on_each_jdk(run_sampled),
    "javac": on_each_jdk(run_javac),
    "h2": on_each_jdk(run_h2),
    "live_n_text": on_each_jdk(run_live_n_text),
    "live_n_binary": on_each_jdk(run_live_n_binary),
    "live_n_options": on_each_jdk(run_live_n_options),
    "sites_full": on_each_jdk(run_sites_full),
})
