"""heap=sites,live=n,alloc=inject: allocations counted by injected code (docs/allocation-sites.md
"Counted by injection") against the JVMTI event path on the same program, site by site, on JDK 17
and 25: tests/java/AllocSites.java's known answers (3000 Items, 500 int[10], 300 String[3], the
16 worker threads and 64 short threads; every level of each multianewarray of its `multi` mode, a
negative count included), in text and in binary (verified), with thread=y, with
cpu=times in the same run (one rewriter pass for both), the fallback to the event with ZGC, and the
refused combinations; what compiled code makes in HotSpot's allocating intrinsics (`copies`); at
depth 4 and 16 (`deep`, `deep_virtual`: the frame walk) whole traces equal the event path's, and
with cpu=times (`deep_cpu_times`: the shadow stack) by the documented rule for frames of hidden
classes. Each case is
a Meson test (`alloc_inject.py <case>`)."""
import os
import pathlib
import re
import subprocess
import tempfile

import hprof_records
from harness import (AGENT, site_markers, agentpath, check, check_no_warnings, cleanup, java_bin, java_command,
                     java_process, jdk25, on_each_jdk, run_cases, run_java, run_sites_file, verify_binary, wait_for)

SOURCE = pathlib.Path(os.environ["SOURCE_ROOT"]) / "tests" / "java" / "AllocSites.java"
LINES = site_markers(SOURCE)
H2_JAR = "/usr/share/java/h2.jar"
OWN = ("AllocSites$Item", "AllocSites$Churn", "int[]", "java.lang.String[]")
# AllocSites multi: every level of each multianewarray, at makeMulti only (main's string
# concatenation makes Object[] too, and the JVM a byte[] for the message of the exception it throws
# there, which no instruction stands for).
MULTI_OWN = ("int[][]", "int[]", "java.lang.Object[][][]", "java.lang.Object[][]", "java.lang.Object[]",
             "java.lang.String[][][]", "java.lang.String[][]", "java.lang.String[]", "long[][]", "long[]",
             "short[][][][]", "short[][][]", "short[][]", "short[]")


def own_row(cls, frames, own=OWN):
    """Whether a row of class cls with these frames is one of AllocSites' own sites (a clone's below
    Object.clone's frame)."""
    if frames and frames[0].startswith("java.lang.Object.clone("):
        if len(frames) == 1:  # depth 1: the native alone, of a class only AllocSites makes
            return cls == "AllocSites$Sheep"
        frames = frames[1:]
    if not frames or "AllocSites.java" not in frames[0]:
        return False
    return cls in own or (cls in MULTI_OWN and frames[0].startswith("AllocSites.makeMulti("))


def frame(method, marker):
    return f"AllocSites.{method}(AllocSites.java:{LINES[marker]})"


def run_sites(label, home, options, mode, run_args=(), jvm_args=()):
    """AllocSites `mode` with the agent's `options`: run_sites_file's (text, SITES rows, run), or None."""
    return run_sites_file(label, home, options, "AllocSites", [mode, *run_args], jvm_args)


def sites_of(label, home, options, mode, run_args=(), jvm_args=()):
    """Runs AllocSites with heap=sites,live=n,depth=1,cutoff=0 and `options`; returns ({(class, top
    frame, thread or None): (objects, bytes)} of AllocSites' own sites, every row, the run), or None."""
    got = run_sites(label, home, f"heap=sites,live=n,depth=1,cutoff=0,{options}".rstrip(","), mode, run_args, jvm_args)
    if got is None:
        return None
    text, rows, run = got
    traces = {serial: frames for serial, (_, frames) in hprof_records.text_traces(text).items()}
    own = {}
    for r in rows:
        frames = traces.get(r["trace"], [])
        if own_row(r["class"], frames):
            key = (r["class"], frames[0])
            objects, size = own.get(key, (0, 0))
            own[key] = (objects + r["alloc_objs"], size + r["alloc_bytes"])
    return own, rows, run


def both_paths(label, home, mode):
    """{"event": sites_of(...), "inject": sites_of(...)} of one AllocSites mode, or None."""
    results = {}
    for how in ("event", "inject"):
        got = sites_of(f"{label} alloc={how}", home, f"alloc={how},", mode)
        if got is None:
            return None
        results[how] = got
    return results


def run_equals_event(label, home):
    """The known answers, and every AllocSites site equal to the event path's, objects and bytes."""
    results = both_paths(label, home, "basic")
    if results is None:
        return
    own, rows, run = results["inject"]
    expected = {("AllocSites$Item", frame("makeItems", "item")): 3000,
                ("int[]", frame("makeArrays", "ints")): 500,
                ("java.lang.String[]", frame("makeStringArrays", "strings")): 300}
    counted = {key: own.get(key, (0, 0))[0] for key in expected}
    check(counted == expected, f"{label}: alloc=inject counts the marked sites exactly: {counted}", run)
    check(own.get(("int[]", frame("makeArrays", "ints")), (0, 0))[1] == 500 * 56,
          f"{label}: int[10] x 500 is 500 x 56 bytes", run)
    check(own == results["event"][0], f"{label}: alloc=inject equals the event path site by site:\n"
          f"  inject {own}\n  event  {results['event'][0]}", run)
    sized = [r["text"] for r in rows if r["alloc_objs"] > 0 and (r["alloc_bytes"] == 0 or r["alloc_bytes"] % 8 != 0)]
    check(not sized, f"{label}: every row's bytes are whole objects of 8-byte multiples: {sized[:3]}", run)
    check(all(r["live_objs"] == r["alloc_objs"] for r in rows), f"{label}: live=n repeats the allocated counts", run)
    for _, _, r in results.values():
        cleanup(r.folder)
    run_multi(label, home)


def run_multi(label, home):
    """Every array a multianewarray makes, level by level, as the event path counts them: the known
    answers (AllocSites multi), and every row equal to the event path's, objects and bytes."""
    results = both_paths(label, home, "multi")
    if results is None:
        return
    own, _, run = results["inject"]
    expected = {("int[][]", "multiInts"): 100, ("int[]", "multiInts"): 300,
                ("java.lang.Object[][][]", "multiObjects"): 100, ("java.lang.Object[][]", "multiObjects"): 200,
                ("java.lang.Object[]", "multiObjects"): 600,
                ("java.lang.String[][][]", "multiStrings"): 100, ("java.lang.String[][]", "multiStrings"): 200,
                ("long[][]", "multiLongs"): 100, ("int[][]", "multiEmpty"): 100,
                # int[2][-1]: HotSpot makes the outer array, then throws at the first inner one
                ("int[][]", "multiNegative"): 100,
                ("short[][][][]", "multiShorts"): 100, ("short[][][]", "multiShorts"): 200,
                ("short[][]", "multiShorts"): 400, ("short[]", "multiShorts"): 800}
    counted = {(cls, marker): own.get((cls, frame("makeMulti", marker)), (0, 0))[0] for cls, marker in expected}
    check(counted == expected, f"{label}: alloc=inject counts every level of each multianewarray: {counted}", run)
    allowed = {(cls, frame("makeMulti", marker)) for cls, marker in expected}
    unexpected = [key for key in own if key[1].startswith("AllocSites.makeMulti(") and key not in allowed]
    check(not unexpected, f"{label}: no other rows (String[] of String[2][0][5], long[] of long[5][]): {unexpected}", run)
    check(own == results["event"][0], f"{label}: multi: alloc=inject equals the event path site by site:\n"
          f"  inject {own}\n  event  {results['event'][0]}", run)
    for _, _, r in results.values():
        cleanup(r.folder)


def class_totals(label, home, options, mode, classes):
    """({class: allocated objects} over every row, for the given classes, a name ending in `*` for
    every class whose name begins so; the run), or None."""
    got = run_sites(label, home, f"heap=sites,live=n,cutoff=0,{options}", mode)
    if got is None:
        return None
    _, rows, run = got
    totals = dict.fromkeys(classes, 0)
    for r in rows:
        for name in classes:
            if r["class"] == name or (name.endswith("*") and r["class"].startswith(name[:-1])):
                totals[name] += r["alloc_objs"]
    return totals, run


def run_copies(label, home):
    """What compiled code makes in HotSpot's allocating intrinsics (Object.clone, Arrays.copyOf and
    copyOfRange, Array.newInstance), which no instruction and no event would show: the agent turns
    those intrinsics off at load, so every object is counted (AllocSites copies: 200 000 Copied,
    800 000 Copied[], the loop compiled long before its end), at depth 1 and 4, equal to the event
    path's counts."""
    classes = ("AllocSites$Copied", "AllocSites$Copied[]")
    # The model object and the array literal, then the copies.
    expected = {"AllocSites$Copied": 200_001, "AllocSites$Copied[]": 800_001}
    runs = []
    for how, depth in (("event", 4), ("inject", 4), ("inject", 1)):
        got = class_totals(f"{label} alloc={how} depth={depth}", home, f"alloc={how},depth={depth}", "copies", classes)
        if got is None:
            return
        runs.append(got[1])
        check(got[0] == expected, f"{label}: alloc={how} depth={depth} counts every copy: {got[0]}", got[1])
    for run in runs:
        cleanup(run.folder)


def run_lambdas(label, home):
    """The objects of capturing lambdas, which the JDK makes through Unsafe.allocateInstance (a
    native, and a JIT intrinsic once compiled): counted at that call by the injected code, one site
    per class it is given, not by the VMObjectAlloc event (AllocSites lambdas: 200 000 objects of
    one hidden class, compiled long before the end), at depth 1 and 4, equal to the event path's."""
    classes = ("AllocSites$$Lambda*",)
    expected = {"AllocSites$$Lambda*": 200_000}
    runs = []
    for how, depth in (("event", 4), ("inject", 4), ("inject", 1)):
        got = class_totals(f"{label} alloc={how} depth={depth}", home, f"alloc={how},depth={depth},verbose=y",
                           "lambdas", classes)
        if got is None:
            return
        runs.append(got[1])
        check(got[0] == expected, f"{label}: alloc={how} depth={depth} counts every lambda: {got[0]}", got[1])
        events = re.search(r"allocation sites: \d+ sites, (\d+) events", got[1].stderr)
        if how == "inject":  # the JVM's own allocations by natives, not the lambdas'
            check(events is not None and int(events.group(1)) < 20_000,
                  f"{label}: alloc=inject depth={depth}: the lambdas took no VMObjectAlloc event: "
                  f"{events.group(0) if events else got[1].stderr[-500:]}", got[1])
            # JDK 23+: compiled code makes them inline again, with no native call and no event at
            # all (the VM's notice cleared); only the calls made before DirectMethodHandle's
            # allocateInstance is compiled reach the native (about 65 000 of the 200 000 here,
            # all of them and the JDK's own without it: over 200 000).
            told = re.search(r"natives' events told by the thread's last Java frame=(\d+) by JVMTI=(\d+)", got[1].stderr)
            if "jdk17" not in label:
                check("compiled Unsafe.allocateInstance inline (the VM's notice cleared" in got[1].stderr and
                      told is not None and int(told.group(1)) + int(told.group(2)) < 190_000,
                      f"{label}: alloc=inject depth={depth}: compiled code makes the lambdas inline: "
                      f"{told.group(0) if told else got[1].stderr[-800:]}", got[1])
    for run in runs:
        cleanup(run.folder)


def run_threads(label, home):
    """16 workers x 5000 Items while 64 short threads allocate 100 Churn each: every count, both paths
    equal; with thread=y one row per worker thread."""
    results = both_paths(label, home, "threads")
    if results is None:
        return
    own, _, run = results["inject"]
    items = own.get(("AllocSites$Item", frame("makeItems", "item")), (0, 0))[0]
    churn = own.get(("AllocSites$Churn", frame("churn", "churn")), (0, 0))[0]
    check((items, churn) == (80000, 6400), f"{label}: 16 x 5000 Items, 64 x 100 Churn: {items}, {churn}", run)
    check(own == results["event"][0], f"{label}: threads: inject equals event:\n  inject {own}\n"
          f"  event  {results['event'][0]}", run)
    got = sites_of(f"{label} thread=y", home, "alloc=inject,thread=y,", "threads")
    if got is not None:
        rows = [r for r in got[1] if r["class"] == "AllocSites$Item"]
        check(len(rows) >= 16 and sum(r["alloc_objs"] for r in rows) >= 80000,
              f"{label}: thread=y splits the Items by thread: {len(rows)} rows", got[2])
        cleanup(got[2].folder)
    for _, _, r in results.values():
        cleanup(r.folder)


def run_binary(label, home):
    run = run_java(home, agentpath("heap=sites,live=n,alloc=inject,depth=1,format=b,file=sites.hprof"), "AllocSites",
                   ["basic"], jvm_args=["-Xcheck:jni"])
    if not check(run.code == 0 and "AllocSites done" in run.stdout, f"{label}: binary run exits normally", run):
        return
    check_no_warnings(label, run.stdout, run.stderr)
    path = run.file("sites.hprof")
    ok, output = verify_binary(path)
    if not check(ok, f"{label}: the binary file verifies:\n{output}", run):
        return
    records = hprof_records.read(path)[3]
    classes = hprof_records.load_classes(records)
    frames = hprof_records.stack_frames(records)
    traces = {serial: [frames.get(i) and (frames[i][0], frames[i][2]) for i in ids]
              for serial, (_, ids) in hprof_records.stack_traces(records).items()}
    sites = hprof_records.alloc_sites(records)
    if not check(len(sites) == 1, f"{label}: one ALLOC SITES record", run):
        return
    rows = sites[0][1]
    items = [r for r in rows if classes.get(r[1]) == "AllocSites$Item" and traces.get(r[2]) == [("makeItems", LINES["item"])]]
    ints = [r for r in rows if classes.get(r[1]) == "int[]" and traces.get(r[2]) == [("makeArrays", LINES["ints"])]]
    check(len(items) == 1 and items[0][6] == 3000 and items[0][0] == 0, f"{label}: 3000 Items at one site: {items}", run)
    check(len(ints) == 1 and ints[0][0] == 10 and (ints[0][6], ints[0][5]) == (500, 28000),
          f"{label}: int[] kind 10, 500 x 56 bytes: {ints}", run)
    cleanup(run.folder)


def run_with_cpu_times(label, home):
    """cpu=times and alloc=inject rewrite each class once: both sections, the known counts."""
    got = sites_of(f"{label} with cpu=times", home, "alloc=inject,cpu=times,verbose=y,", "basic")
    if got is None:
        return
    own, _, run = got
    check(own.get(("AllocSites$Item", frame("makeItems", "item")), (0, 0))[0] == 3000,
          f"{label}: Items counted with cpu=times on: {own}", run)
    text = run.text("sites.txt")
    check("CPU TIME (ms) BEGIN" in text and "AllocSites.makeItems" in text.split("CPU TIME (ms) BEGIN")[1],
          f"{label}: CPU TIME lists the program's methods", run)
    check("alloc=inject: sites=" in run.stderr and "classes rewritten=" in run.stderr,
          f"{label}: verbose=y says what each counted", run)
    cleanup(run.folder)


def run_zgc(label, home):
    """With ZGC, instance sizes are not read from the VM: one line says so and the event path counts."""
    got = sites_of(f"{label} ZGC", home, "alloc=inject,", "basic", jvm_args=["-XX:+UseZGC"])
    if got is None:
        return
    own, _, run = got
    check("alloc=inject: instance sizes are not read with -XX:+UseZGC; heap=sites counts by the "
          "SampledObjectAlloc event instead" in run.stderr, f"{label}: ZGC: the fallback is said", run)
    check(own.get(("AllocSites$Item", frame("makeItems", "item")), (0, 0))[0] == 3000,
          f"{label}: ZGC: the event path counts the Items: {own}", run)
    cleanup(run.folder)


def run_auto(label, home):
    """alloc=auto, the default: heap=sites,live=n counts by injection (verbose=y's line of what it
    counted); with ZGC, where it cannot, by the event without a word (the event is as exact)."""
    got = sites_of(f"{label} auto", home, "verbose=y,", "basic")
    if got is None:
        return
    own, _, run = got
    check("alloc=inject: sites=" in run.stderr, f"{label}: heap=sites,live=n counts by injection", run)
    check(own.get(("AllocSites$Item", frame("makeItems", "item")), (0, 0))[0] == 3000, f"{label}: the Items: {own}", run)
    cleanup(run.folder)
    got = sites_of(f"{label} auto ZGC", home, "", "basic", jvm_args=["-XX:+UseZGC"])
    if got is None:
        return
    own, _, run = got
    check("alloc=inject" not in run.stderr and "HPROF ERROR" not in run.stderr,
          f"{label}: ZGC: alloc=auto takes the event without a word", run)
    check(own.get(("AllocSites$Item", frame("makeItems", "item")), (0, 0))[0] == 3000,
          f"{label}: ZGC: the event path counts the Items: {own}", run)
    cleanup(run.folder)


def run_attach(label, home):
    """Loaded into a running VM: the classes already loaded are retransformed, and what the program
    allocates after the attach is counted exactly; alloc=auto counts by the event there (the JIT's
    allocating intrinsics stay on, which the injected code would miss)."""
    for how in ("inject", "auto"):
        attach_once(f"{label} alloc={how}", home, how)


def attach_once(label, home, how):
    with java_process(home, None, "AllocSites", ["attach", "go"], jvm_args=["-Xcheck:jni"]) as (proc, folder):
        check(wait_for(lambda: "AllocSites waiting" in (folder / "stdout.txt").read_text(), 30),
              f"{label}: attach target started")
        attach = subprocess.run([java_bin(home, "jcmd"), str(proc.pid), "JVMTI.agent_load", AGENT,
                                 f'"heap=sites,live=n,alloc={how},depth=1,cutoff=0,verbose=y,file={folder}/attached.txt"'],
                                capture_output=True, text=True, timeout=120)
        check(attach.returncode == 0, f"{label}: jcmd JVMTI.agent_load\n{attach.stdout}{attach.stderr}")
        (folder / "go").write_text("")
        code = proc.wait(timeout=120)
        text = (folder / "attached.txt").read_text() if (folder / "attached.txt").exists() else ""
        found = hprof_records.text_traces(text)
        traces = {serial: frames for serial, (_, frames) in found.items()}
        sections = hprof_records.text_sites(text)
        if not check(code == 0 and len(sections) == 1, f"{label}: attached alloc=inject reports at exit\n{text[-1500:]}"):
            return
        rows = [r for r in sections[0][3] if r]
        counted = {}
        for r in rows:
            top = traces.get(r["trace"], [""])[:1]
            key = (r["class"], top[0] if top else "")
            counted[key] = counted.get(key, 0) + r["alloc_objs"]
        expected = {("AllocSites$Item", frame("makeItems", "item")): 3000, ("int[]", frame("makeArrays", "ints")): 500,
                    ("java.lang.String[]", frame("makeStringArrays", "strings")): 300}
        got = {key: counted.get(key, 0) for key in expected}
        if how == "inject":
            check(got == expected, f"{label}: attached: the sites after the attach, exactly: {got}")
        else:
            # The event misses what a running thread allocates before its first sampling point
            # (a few hundred KiB since the attach on JDK 17, since the thread started on JDK 23+:
            # here all or none of these; docs/allocation-sites.md "From when"), never more.
            check(all(got[k] <= expected[k] for k in expected), f"{label}: attached: no more than made: {got}")
        stderr = (folder / "stderr.txt").read_text() if (folder / "stderr.txt").exists() else ""
        check_no_warnings(f"{label} attached", "", stderr)
        if how == "inject":
            check("alloc=inject: loaded into a running VM, the JIT's intrinsics stay on" in stderr,
                  f"{label}: attached: says that compiled intrinsics' allocations are not counted\n{stderr[-1500:]}")
        else:
            check("alloc=inject" not in stderr, f"{label}: attached: counted by the event\n{stderr[-1500:]}")


def run_h2(label, home):
    """Debian's H2 (a program nobody here wrote) runs SQL with every class rewritten for allocations
    and calls (alloc=inject with cpu=times) under -Xverify:all: the right answer, no WARNING, and
    H2's own sites in SITES."""
    if not os.path.exists(H2_JAR):
        print(f"SKIP: {label}: {H2_JAR} not installed (apt-get install libh2-java)")
        return
    sql = ("CREATE TABLE T(ID INT PRIMARY KEY, NAME VARCHAR(100)); "
           "INSERT INTO T SELECT X, 'name' || X FROM SYSTEM_RANGE(1, 5000); SELECT COUNT(*), MAX(ID) FROM T")
    folder = tempfile.mkdtemp(prefix="fasthprof-it-h2-")
    command = java_command(home, "-Xverify:all",
                           agentpath("heap=sites,live=n,alloc=inject,cpu=times,file=h2.txt"), "-cp", H2_JAR,
                           "org.h2.tools.Shell", "-url", "jdbc:h2:mem:t", "-sql", sql)
    proc = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)
    check_no_warnings(f"{label}: H2 with alloc=inject", proc.stdout, proc.stderr)
    check(proc.returncode == 0 and re.search(r"5000\s*\|\s*5000", proc.stdout) is not None,
          f"{label}: H2 runs the SQL under -Xverify:all: {proc.stdout[-500:]} {proc.stderr[-1500:]}")
    text = pathlib.Path(folder, "h2.txt").read_text() if pathlib.Path(folder, "h2.txt").exists() else ""
    found = hprof_records.text_traces(text)
    sections = hprof_records.text_sites(text)
    if check(len(sections) == 1, f"{label}: H2 run writes SITES"):
        rows = [r for r in sections[0][3] if r]
        h2_frames = [r for r in rows if any(f.startswith("org.h2.") for f in found.get(r["trace"], (0, []))[1])]
        check(len(h2_frames) > 10, f"{label}: H2's own allocation sites are counted: {len(h2_frames)}")
    check("CPU TIME (ms) BEGIN" in text, f"{label}: with CPU TIME")
    cleanup(folder)


DEEP_OWN = OWN + ("java.lang.IllegalStateException", "AllocSites$Sheep", "AllocSites$Goat")


def hidden(frame_text):
    """A frame of a hidden class (a lambda proxy): the shadow stack cannot see it."""
    return "$$Lambda" in frame_text


def deep_rows(label, home, options, mode, depth, jvm_args=()):
    """{(class, trace frames): (objects, bytes)} of AllocSites' own sites at `depth`, with the run."""
    run = run_java(home, agentpath(f"heap=sites,live=n,depth={depth},cutoff=0,{options}file=sites.txt"), "AllocSites",
                   [mode], jvm_args=["-Xcheck:jni", *jvm_args], timeout=240)
    if not check(run.code == 0 and f"AllocSites done {mode}" in run.stdout, f"{label}: exits normally", run):
        return None, run
    check_no_warnings(label, run.stdout, run.stderr)
    text = run.text("sites.txt")
    traces = {serial: tuple(frames) for serial, (_, frames) in hprof_records.text_traces(text).items()}
    sections = hprof_records.text_sites(text)
    if not check(len(sections) == 1 and sections[0][4], f"{label}: one whole SITES section", run):
        return None, run
    own = {}
    for r in (r for r in sections[0][3] if r):
        frames = traces.get(r["trace"], ())
        if own_row(r["class"], frames, DEEP_OWN):
            objects, size = own.get((r["class"], frames), (0, 0))
            own[(r["class"], frames)] = (objects + r["alloc_objs"], size + r["alloc_bytes"])
    return own, run


def unaddressed(rows):
    """rows with each hidden class's frame named without its address (a run's own)."""
    out = {}
    for (cls, frames), (o, b) in rows.items():
        key = (cls, tuple(re.sub(r"\$\$Lambda(\$\d+)?\+0x[0-9a-f]+", "$$Lambda", f) for f in frames))
        known = out.get(key, (0, 0))
        out[key] = (known[0] + o, known[1] + b)
    return out


def by_rule(event, inject):
    """The documented rule (docs/allocation-sites.md "Traces deeper than one frame"): an inject trace
    is the event trace without its frames of hidden classes, continued below to depth frames. Rows
    whose event trace has such a frame are keyed by that visible part (marked), both sides."""
    marked = {}
    keyed_event = {}
    for (cls, frames), counts in event.items():
        visible = tuple(f for f in frames if not hidden(f))
        key = (cls, visible + ("<below a hidden frame>",)) if visible != frames else (cls, frames)
        if visible != frames:
            marked.setdefault(cls, []).append(visible)
        o, b = keyed_event.get(key, (0, 0))
        keyed_event[key] = (o + counts[0], b + counts[1])
    keyed_inject = {}
    for (cls, frames), counts in inject.items():
        key = (cls, frames)
        for visible in marked.get(cls, []):
            if frames[:len(visible)] == visible:
                key = (cls, visible + ("<below a hidden frame>",))
        o, b = keyed_inject.get(key, (0, 0))
        keyed_inject[key] = (o + counts[0], b + counts[1])
    return keyed_event, keyed_inject


def expected_deep(mode, depth):
    """Known traces (top first, main at the bottom) and counts of AllocSites' plain sites."""
    main = frame("main", "exceptions")
    if mode == "basic":
        a = (frame("makeItems", "item"), frame("callerA", "callerA"))
        b = (frame("makeItems", "item"), frame("callerB", "callerB"))
        return {a: 1000, b: 2000}
    if mode == "multi":
        return {}
    if mode == "unload":
        return {(frame("deepItem", "deepItem"), frame("deep1", "deep1"), frame("deep2", "deep2"),
                 frame("deep3", "deep3"))[:depth]: 30000}
    if mode == "clones":
        below = (frame("clones", "cloneRound"), frame("main", "clones"))
        return {("AllocSites$Sheep", (f"AllocSites$Sheep.clone(AllocSites.java:{LINES['sheep']})", frame("cloneRound", "cloneSheep")) + below): 20000,
                ("int[]", (frame("cloneRound", "cloneInts"),) + below): 20000,
                ("java.lang.String[]", (frame("cloneRound", "cloneStrings"),) + below): 20000}
    if mode == "lines":
        made, lines = frame("madeItem", "madeItem"), frame("main", "lines")
        return {(made, frame("twoLines", "lineOne"), lines)[:depth]: 20000,
                (made, frame("twoLines", "lineTwo"), lines)[:depth]: 20000}
    caught = (frame("makeItems", "item"), frame("afterCatch", "caught"), frame("exceptions", "afterCatch"), main)
    recursion = (frame("makeItems", "item"), frame("catchIn", "recursion")) + (frame("catchIn", "recursing"),) * 3 + \
        (frame("exceptions", "catchIn"), main)
    return {caught[:depth]: 1000, recursion[:depth]: 1000}


# AllocSites unload: the chain below unloadRound not inlined, so that every frame of its depth-4 traces
# is compiled code of its own.
NOT_INLINED = ("-XX:CompileCommand=quiet", "-XX:CompileCommand=dontinline,AllocSites::deep*")


def run_deep(label, home, extra="", cases=(("basic", 4), ("threads", 4), ("exceptions", 4), ("multi", 4),
                                           ("lines", 4), ("clones", 1), ("clones", 4), ("clones", 4, ("-Xint",)),
                                           ("unload", 4, NOT_INLINED),
                                           ("basic", 16), ("threads", 16), ("exceptions", 16), ("clones", 16))):
    """Depth 4 and 16: the same rows, traces and totals as the event path, site by site (a case's
    third element: JVM options of both runs, -Xint for clones whose natives are all interpreted)."""
    for mode, depth, *options in cases:
        jvm = list(options[0]) if options else []
        tag = f"{label} {mode} depth={depth}{' ' + extra if extra else ''}{' ' + ' '.join(jvm) if jvm else ''}"
        # A clone's event trace has Object.clone on top only where the JIT's own clone is off (as
        # alloc=inject has it); else it depends on what is compiled.
        event, erun = deep_rows(f"{tag} event", home, "alloc=event,", mode, depth,
                                jvm + (["-XX:+UnlockDiagnosticVMOptions", "-XX:DisableIntrinsic=_clone"]
                                       if mode == "clones" else []))
        inject, irun = deep_rows(f"{tag} inject", home,
                                 f"alloc=inject,{extra}{'verbose=y,' if mode in ('clones', 'unload') else ''}",
                                 mode, depth, jvm)
        if event is None or inject is None:
            continue
        # The frame walk's traces are the event path's; the shadow stack's (with cpu=times) by the rule.
        if mode == "clones":
            # What the VM makes to throw from Object.clone (the exception's backtrace) comes as the
            # native's VMObjectAlloc events with alloc=inject, as sampled allocations under
            # Throwable.fillInStackTrace with the event: not one of AllocSites' own sites.
            event, inject = ({k: c for k, c in rows.items() if not any("Goat.tryClone" in f for f in k[1])}
                             for rows in (event, inject))
        keyed_event, keyed_inject = by_rule(event, inject) if "cpu=times" in extra else (unaddressed(event),
                                                                                        unaddressed(inject))
        check(keyed_inject == keyed_event, f"{tag}: inject equals the event path trace by trace:\n  inject "
              f"{sorted(keyed_inject.items())}\n  event  {sorted(keyed_event.items())}", irun)
        total = [sum(c[i] for c in inject.values()) for i in (0, 1)]
        check(total == [sum(c[i] for c in event.values()) for i in (0, 1)], f"{tag}: the same totals: {total}", irun)
        if mode == "multi":
            check(sum(c[0] for (cls, _), c in inject.items() if cls == "short[]") == 800,
                  f"{tag}: 800 short[] of short[2][2][2][3], every one under its trace", irun)
        elif mode == "clones":
            # Counted at their calls: 60 000 clones, far fewer VMObjectAlloc events.
            events = re.search(r"allocation sites: \d+ sites, (\d+) events", irun.stderr)
            check(events is not None and int(events.group(1)) < 20000,
                  f"{tag}: the clones counted by the injected code, not by their events", irun)
            # Their events left out by the thread's last Java frame, not by a JVMTI stack walk.
            told = re.search(r"natives' events told by the thread's last Java frame=(\d+) by JVMTI=(\d+)", irun.stderr)
            # (JVMTI tells those in a wrapper whose CompiledMethodLoad has not come yet: a few hundred.)
            check(told is not None and int(told.group(1)) >= 40000 and int(told.group(2)) * 10 < int(told.group(1)),
                  f"{tag}: the clones' events told apart without JVMTI: {told and told.group(0)}", irun)
            # The frame walk (depth > 1, not -Xint) reads HotSpot's map of its code heaps for compiled
            # frames not reported yet: at exit it must name the nmethods the VM reported (native
            # wrappers too; all of them in a quiet run, but one freed whose unload event is still
            # queued is rightly not named) and not take the call stub for one.
            heaps = re.search(r"code heaps' map: nmethods loaded=(\d+) named=(\d+), call stub told apart=(\w+)", irun.stderr)
            if depth > 1 and "-Xint" not in jvm and "cpu=times" not in extra:
                check(heaps is not None and int(heaps.group(1)) >= 10 and int(heaps.group(2)) * 10 >= int(heaps.group(1)) * 9
                      and heaps.group(3) == "yes", f"{tag}: the code heaps' map agrees with the VM's reports: "
                      f"{heaps and heaps.group(0)}", irun)
            # Each clone under Object.clone's frame, then its caller at the clone's line.
            # At depth 1 that frame alone (AllocSites$Sheep only: int[] and String[] the JDK clones too).
            expected = {(cls, want[:depth - 1]): n for (cls, want), n in expected_deep(mode, depth).items()
                        if depth > 1 or cls == "AllocSites$Sheep"}
            got = {(cls, want): sum(c[0] for (k, t), c in inject.items()
                                    if k == cls and t[0].startswith("java.lang.Object.clone(") and t[1:] == want)
                   for cls, want in expected}
            check(got == expected, f"{tag}: each clone under Object.clone's frame and its caller's line: {got}", irun)
        elif mode == "unload" and "cpu=times" not in extra:
            # Compiled code unloaded between the rounds (the plugin's, and tiers replaced): the
            # walk's answers for the Items' all-compiled frames are kept across, and stay right.
            kept = re.search(r"compiled code unloaded=(\d+) times, answers kept across=(\d+)", irun.stderr)
            check(kept is not None and int(kept.group(1)) >= 1 and int(kept.group(2)) >= 1,
                  f"{tag}: answers kept across unloads: {kept and kept.group(0)}", irun)
        if mode not in ("threads", "clones", "multi"):
            items = {frames: counts[0] for (cls, frames), counts in inject.items() if cls == "AllocSites$Item"}
            got = {w: sum(c for t, c in items.items() if t[:len(w)] == w) for w in expected_deep(mode, depth)}
            check(got == expected_deep(mode, depth), f"{tag}: the known traces and counts: {got}", irun)
        if "cpu=times" in extra:
            check("CPU TIME (ms) BEGIN" in irun.text("sites.txt"), f"{tag}: with CPU TIME", irun)
        cleanup(erun.folder)
        cleanup(irun.folder)


def run_deep_cpu_times(label, home):
    """alloc=inject with cpu=times: one shadow stack for both, the same traces."""
    run_deep(label, home, "cpu=times,", cases=(("basic", 4), ("exceptions", 16)))


def run_deep_virtual():
    """JDK 25: 5000 virtual threads in batches of 1000 allocate at depth 4: the run ends (the
    tracker's lock once deadlocked with the JDK's VirtualThread-unblocker), the counts are exact and
    the traces are the event path's (the frame walk's, through frames thawed from the heap)."""
    label, home = jdk25()
    classes = tempfile.mkdtemp(prefix="fasthprof-vallocs-")
    source = pathlib.Path(os.environ["SOURCE_ROOT"]) / "tests" / "java21" / "VirtualAllocs.java"
    compiled = subprocess.run([java_bin(home, "javac"), "-d", classes, str(source)], capture_output=True, text=True)
    if not check(compiled.returncode == 0, f"{label}: VirtualAllocs compiles\n{compiled.stderr}"):
        return cleanup(classes)
    lines = site_markers(source)
    got = {}
    for how in ("event", "inject"):
        run = run_java(home, agentpath(f"heap=sites,live=n,depth=4,cutoff=0,alloc={how},file=sites.txt"),
                       "VirtualAllocs", ["5000", "1000"], jvm_args=["-Xcheck:jni"], classpath=classes, timeout=300)
        if not check(run.code == 0 and "VirtualAllocs done 5000" in run.stdout, f"{label} {how}: ends", run):
            return cleanup(classes)
        check_no_warnings(f"{label} {how}", run.stdout, run.stderr)
        text = run.text("sites.txt")
        traces = {serial: tuple(frames) for serial, (_, frames) in hprof_records.text_traces(text).items()}
        rows = {}
        for r in (r for r in hprof_records.text_sites(text)[0][3] if r):
            frames = traces.get(r["trace"], ())
            if r["class"] == "int[]" and frames and frames[0].startswith("VirtualAllocs.make("):
                o, b = rows.get(frames, (0, 0))
                rows[frames] = (o + r["alloc_objs"], b + r["alloc_bytes"])
        got[how] = {("int[]", frames): counts for frames, counts in rows.items()}
        cleanup(run.folder)
    event, inject = unaddressed(got["event"]), unaddressed(got["inject"])
    check(inject == event, f"{label}: virtual threads: inject equals the event path:\n  inject "
          f"{inject}\n  event  {event}")
    top = (f"VirtualAllocs.make(VirtualAllocs.java:{lines['make']})", f"VirtualAllocs.mid(VirtualAllocs.java:{lines['mid']})",
           f"VirtualAllocs.lambda$main$0(VirtualAllocs.java:{lines['lambda']})")
    check(sum(c[0] for (_, f), c in got["inject"].items() if f[:3] == top) == 500_000,
          f"{label}: 5000 x 100 int[4] under make, mid, the lambda: {got['inject']}")
    cleanup(classes)


def run_options(label, home):
    for options, message in (
            ("heap=dump,alloc=inject", "alloc=inject needs heap=sites or heap=all"),
            ("heap=all,live=n,alloc=inject", "live=n needs heap=sites without heap=dump"),
            ("heap=sites,live=n,alloc=injected", "alloc option value must be auto|event|inject")):
        run = run_java(home, agentpath(options), "AllocSites", ["basic"])
        check(run.code != 0 and message in run.stderr, f"{label}: {options} is refused with {message!r}", run)
        cleanup(run.folder)
    # The compiled method events the injection listens to turn HotSpot's debug information at every
    # instruction on while the flag is at its default; the agent sets it off, unless the user set it
    # or cpu=samples needs it.
    flag = re.compile(r"bool DebugNonSafepoints\s+= (\w+)\s+\{diagnostic\} \{([\w ]+)\}")
    for options, jvm, expected in (("heap=sites,live=n,depth=4", [], ("false", "ergonomic")),
                                   ("heap=sites,live=n,depth=1", [], ("false", "ergonomic")),
                                   ("heap=sites,live=n", ["-XX:+DebugNonSafepoints"], ("true", "command line")),
                                   # left at its default, which the events make count as on
                                   ("heap=sites,live=n,cpu=samples", [], ("false", "default"))):
        run = run_java(home, agentpath(options), "AllocSites", ["basic"],
                       jvm_args=["-XX:+UnlockDiagnosticVMOptions", *jvm, "-XX:+PrintFlagsFinal"])
        found = flag.search(run.stdout)
        check(run.code == 0 and found is not None and found.groups() == expected,
              f"{label}: {options} {' '.join(jvm)}: DebugNonSafepoints {expected}: {found and found.group(0)}", run)
        cleanup(run.folder)


run_cases("alloc_inject", {
    "equals_event": on_each_jdk(run_equals_event),
    "threads": on_each_jdk(run_threads),
    "copies": on_each_jdk(run_copies),
    "lambdas": on_each_jdk(run_lambdas),
    "binary": on_each_jdk(run_binary),
    "with_cpu_times": on_each_jdk(run_with_cpu_times),
    "zgc": on_each_jdk(run_zgc),
    "auto": on_each_jdk(run_auto),
    "attach": on_each_jdk(run_attach),
    "h2": on_each_jdk(run_h2),
    "options": on_each_jdk(run_options),
    "deep": on_each_jdk(run_deep),
    "deep_cpu_times": on_each_jdk(run_deep_cpu_times),
    "deep_virtual": run_deep_virtual,
})
