"""`fasthprof dominators`, `fasthprof path` and `fasthprof leaks` on tests/java/RetainedShapes.java, a heap of known
retained sizes and paths, held still: a `jcmd GC.heap_dump` plain and -gz=1, and the agent's own
file of two dumps (kill -QUIT twice, dumper=vm), on each JDK.

What is known: the static cache (a HashMap of 32 byte[100000]) retains its 32 arrays and little
more; the chain's head retains the 1000 links and their arrays; the ring held by main's locals is
retained by one of its links; the leaked class loader (a PluginLoader that only a static list keeps)
retains the two classes it defined and their static arrays, and `leaks` finds where they accumulate,
naming both classes, with the path through the list and the loader; a class's retained size counts
its top-level instances only; the path
to the cache's largest arrays goes through `static RetainedShapes.cache -> java.util.HashMap.table`;
the path to the Target goes through the ArrayList that holds it strongly, or with --weak through
the WeakReference's referent.

Against VisualVM's heap library (tests/visualvm/RetainedCheck.java) on the plain JDK dump and the
agent's second dump, with
--compressed (the shallow sizes VisualVM assumes of such a dump): its top objects (class objects
aside) and its classes of 1 MB or more retained have exactly our retained sizes. Other classes may
differ, for the reasons docs/command.md gives (VisualVM counts a Reference among an object's
referrers in its dominator step though not for reachability); their number is printed."""
import json
import os
import pathlib
import re
import signal
import subprocess

from harness import (agentpath, browser, check, java_bin, java_process, on_each_jdk, read_text, run_cases, skip,
                     wait_for)
from readers import HEAP_CHECK, JAVA17, visualvm_built

COMMAND = os.environ.get("FASTHPROF_COMMAND", "")
CACHE_ENTRIES, CACHE_BYTES = 32, 100_000
CHAIN_LINKS, CHAIN_BYTES = 1000, 1000
RING_NODES, RING_BYTES = 64, 20_000
PLUGIN_BYTES = 1_000_000
SHIFTED_BY_THE_LEAK = ("java.util.ArrayList", "java.lang.Object[]")
CACHE_PATH = re.compile(r"static RetainedShapes\.cache -> java\.util\.HashMap\.table -> \[\d+\] -> "
                        r"(java\.util\.HashMap\$Node\.next -> )*java\.util\.HashMap\$Node\.value$")


def fasthprof(*args):
    return subprocess.run([COMMAND, *map(str, args)], capture_output=True, text=True, timeout=600)


def dominators(label, path, *extra):
    run = fasthprof("dominators", "--json", "--top", "40", "--depth", "3", "--children", "0", *extra, path)
    if not check(run.returncode == 0, f"{label}: dominators {' '.join(extra)}: exit {run.returncode}: {run.stderr}"):
        return None
    return json.loads(run.stdout)


def known_retained(label, result):
    """The cache, the chain and the ring, found where the dominator tree must put them: the class
    RetainedShapes (a child of the roots) dominates the cache's HashMap and the chain's head; the
    ring's two links held by main's locals are children of the roots, one retaining the rest."""
    tree = result["tree"]
    check(tree["type"] == "<roots>" and tree["retained"] == result["retained_total"],
          f"{label}: the tree's root: {str(tree)[:300]}")
    under_roots = tree.get("children", [])
    owner = [c for c in under_roots if c["type"] == "class RetainedShapes"]
    if not check(len(owner) == 1, f"{label}: class RetainedShapes is dominated by the roots alone"):
        return
    held = owner[0].get("children", [])
    maps = [c for c in held if c["type"] == "java.util.HashMap"]
    check(len(maps) == 1 and CACHE_ENTRIES * CACHE_BYTES <= maps[0]["retained"] < CACHE_ENTRIES * (CACHE_BYTES + 300) + 4096,
          f"{label}: the cache's HashMap retains its {CACHE_ENTRIES} x {CACHE_BYTES} bytes and little more: {maps}")
    heads = [c for c in held if c["type"] == "RetainedShapes$Link"]
    check(len(heads) == 1 and CHAIN_LINKS * (CHAIN_BYTES + 16) <= heads[0]["retained"] <= CHAIN_LINKS * (CHAIN_BYTES + 96),
          f"{label}: the chain's head retains its {CHAIN_LINKS} links and arrays: {heads}")
    rings = sorted((c for c in under_roots if c["type"] == "RetainedShapes$Link"), key=lambda c: c["retained"])
    check(len(rings) == 2 and RING_BYTES <= rings[0]["retained"] <= RING_BYTES + 96 and
          (RING_NODES - 1) * RING_BYTES <= rings[1]["retained"] <= (RING_NODES - 1) * (RING_BYTES + 96),
          f"{label}: the ring's links held by main's locals: one retains its own array, the other the rest: {rings}")
    classes = {c["name"]: c for c in result["top_classes"]}
    link_class = classes.get("RetainedShapes$Link", {})
    # A class retains what its top-level instances do: the chain's head and the ring's two roots.
    expected = sum(c["retained"] for c in heads + rings)
    check(link_class.get("count") == CHAIN_LINKS + RING_NODES and link_class.get("retained") == expected,
          f"{label}: RetainedShapes$Link: {CHAIN_LINKS + RING_NODES} instances, retained by its top-level ones "
          f"({expected}): {link_class}")
    plugins(label, result)
    check(result["reachable"] <= result["objects"] and result["references"] > result["objects"],
          f"{label}: counts: {result['objects']} objects, {result['reachable']} reachable, {result['references']} references")
    check(result["memory"]["dominator_bytes_per_object"] > 0, f"{label}: memory stated: {result['memory']}")


def plugins(label, result):
    """The class loader leak: the PluginLoader retains its two classes and their arrays."""
    top = {}
    for o in result["top_objects"]:
        top.setdefault(o["type"], o)
    loader = top.get("RetainedShapes$PluginLoader", {}).get("retained", 0)
    check(2 * PLUGIN_BYTES <= loader <= 2 * PLUGIN_BYTES + 16384,
          f"{label}: the leaked PluginLoader retains its two classes and their arrays: {loader}")


def paths(label, path, *extra):
    """The three largest byte[] are the cache's; the Target's path, strong and weak."""
    run = fasthprof("path", "--json", *extra, path, "byte[]")
    if check(run.returncode == 0, f"{label}: path byte[]: exit {run.returncode}: {run.stderr}"):
        found = json.loads(run.stdout)["paths"]
        chains = [" -> ".join(step["via"] for step in p["steps"]) for p in found]
        check(len(found) == 3 and all(CACHE_PATH.search(c) for c in chains) and
              all(p["target"]["type"] == "byte[]" for p in found), f"{label}: paths to the largest byte[]: {chains}")
    text = fasthprof("path", *extra, path, "RetainedShapes$Target")
    check(text.returncode == 0 and re.search(
        r"static RetainedShapes\.holder -> RetainedShapes\$Holder\.items -> java\.util\.ArrayList\.elementData -> \[0\]$",
        text.stdout, re.M), f"{label}: the Target's path without weak references:\n{text.stdout}{text.stderr}")
    weak = fasthprof("path", "--weak", *extra, path, "RetainedShapes$Target")
    check(weak.returncode == 0 and re.search(r"static RetainedShapes\.weak -> java\.lang\.ref\.Reference\.referent$",
                                             weak.stdout, re.M),
          f"{label}: the Target's path with --weak:\n{weak.stdout}{weak.stderr}")


def against_visualvm(label, path, dump=1):
    if not visualvm_built():
        print(f"{label}: VisualVM's heap library is not installed: no comparison")
        return
    ours = dominators(label, path, "--compressed", "--dump", str(dump))
    if ours is None:
        return
    run = subprocess.run([java_bin(JAVA17, "java"), "-Xmx1g", "-cp", HEAP_CHECK, "RetainedCheck", str(path),
                          str(dump - 1), "15"],
                         capture_output=True, text=True, timeout=600)
    if not check(run.returncode == 0, f"{label}: RetainedCheck: {run.stdout}{run.stderr}"):
        return
    their_objects = [line.split() for line in run.stdout.splitlines() if line.startswith("object ")]
    their_classes = {" ".join(p[3:]): int(p[1]) for p in (line.split() for line in run.stdout.splitlines())
                     if p[0] == "class"}
    by_id = {o["id"]: o for o in ours["top_objects"]}
    compared = [(int(p[1]), int(p[2]), " ".join(p[4:])) for p in their_objects if " ".join(p[4:]) != "java.lang.Class"]
    check(len(compared) >= 10, f"{label}: VisualVM's top objects: {their_objects}")
    for object_id, retained, name in compared:
        mine = by_id.get(object_id)
        check(mine is not None and mine["retained"] == retained,
              f"{label}: {name} {object_id:#x}: VisualVM retains {retained} bytes, we {mine}")
    ours_classes = {c["name"]: c["retained"] for c in fasthprof_classes(path, dump)}
    big = {name: r for name, r in their_classes.items() if r >= 1_000_000}
    check(len(big) >= 5, f"{label}: VisualVM's classes of 1 MB or more: {big}")
    for name, retained in big.items():
        if name in SHIFTED_BY_THE_LEAK:
            # Any class loader leak puts these two over 1 MB (the loader's own `classes` list and its
            # array are top-level instances): they then show the smaller objects' differences of
            # docs/command.md's rule (a Reference counted among the referrers: the Target that
            # Holder.items holds and `weak` refers to, 8 KB; method handles of resolved references),
            # which the objects compared above do not have. Bounded, not exact.
            check(ours_classes.get(name) is not None and 0 <= ours_classes[name] - retained <= 32768,
                  f"{label}: class {name}: VisualVM {retained}, we {ours_classes.get(name)}")
            continue
        check(ours_classes.get(name) == retained, f"{label}: class {name}: VisualVM {retained}, we {ours_classes.get(name)}")
    differing = [name for name, r in their_classes.items() if ours_classes.get(name, 0) != r]
    print(f"{label}: VisualVM: {len(compared)} top objects and {len(set(big) - set(SHIFTED_BY_THE_LEAK))} classes agree "
          f"exactly, {' and '.join(n for n in SHIFTED_BY_THE_LEAK if n in big)} within 32 KB; "
          f"{len(differing)} of {len(their_classes)} smaller classes differ (weak referrers, docs/command.md)")


def fasthprof_classes(path, dump):
    run = fasthprof("dominators", "--json", "--compressed", "--dump", str(dump), "--top", "0", "--depth", "0", path)
    return json.loads(run.stdout)["top_classes"] if run.returncode == 0 else []


def leaks(label, path, *extra):
    """`fasthprof leaks`: the class RetainedShapes (its statics: the cache, the chain) and the ring
    held by main's frame are the suspects, each with what it holds and the root that keeps it (two
    locals hold the ring, so its head retains all but the link the other one dominates)."""
    run = fasthprof("leaks", "--json", *extra, path)
    try:
        result = json.loads(run.stdout)
    except json.JSONDecodeError:
        check(False, f"{label}: leaks --json: {run.returncode} {run.stdout[:500]}{run.stderr}")
        return
    by_what = {s["what"].split(" 0x")[0]: s for s in result["suspects"]}
    owner = by_what.get("class RetainedShapes")
    cache = next((h for h in owner["accumulation"]["holds"] if h["class"] == "java.util.HashMap"), None) if owner else None
    check(owner is not None and owner["kind"] == "object" and owner["retained"] >= 32 * 100_000 + 1000 * 1000 and
          cache is not None and cache["retained"] >= 32 * 100_000 and owner["path"] and
          owner["path"][0]["via"].startswith("ROOT "),
          f"{label}: leaks: class RetainedShapes retains the cache and the chain, a root keeps it: {result['suspects'][:2]}")
    ring = by_what.get("RetainedShapes$Link")
    check(ring is not None and ring["retained"] >= 60 * 20_000 and
          ring["accumulation"]["object"]["type"] == "RetainedShapes$Link" and
          ring["path"] and ring["path"][0]["via"].startswith("ROOT JAVA FRAME"),
          f"{label}: leaks: the ring, held by main's frame, accumulated at its head: {ring}")
    def holds(suspect, name):
        return next((h["retained"] for h in suspect["accumulation"]["holds"] if h["class"] == name), 0)

    # Each class retains its static byte[][] of 16 arrays, and that only.
    leak = [s for s in result["suspects"]
            if all(PLUGIN_BYTES <= holds(s, f"class RetainedShapes$Plugin{p}") <= PLUGIN_BYTES + 1024 for p in "AB")]
    check(len(leak) == 1 and "static RetainedShapes$Plugins.LOADERS" in [step["via"] for step in leak[0]["path"]],
          f"{label}: leaks: the leaked loader's two classes hold its bytes, kept through Plugins.LOADERS: {leak}")
    text = fasthprof("leaks", *extra, path)
    check(text.returncode == 0 and re.search(r"^suspect \d: class RetainedShapes 0x\w+ retains \d+ bytes", text.stdout, re.M)
          and "  kept alive by: ROOT " in text.stdout, f"{label}: leaks in text:\n{text.stdout[:1500]}")
    none = fasthprof("leaks", "--share", "100", *extra, path)
    check(none.returncode == 0 and "no suspect: no object and no class retains 100 % of the heap" in none.stdout,
          f"{label}: leaks --share 100: {none.stdout[-300:]}")


def retained_diff(label, folder):
    """diff --value retained: each class's retained bytes as dominators counts them; a --fail-if on
    them (the same heap in both files: the cache did not grow)."""
    classes = {}
    for name in ("jdk.hprof", "agent.hprof"):
        result = dominators(f"{label}: {name}", folder / name)
        classes[name] = {c["name"]: c["retained"] for c in result["top_classes"]} if result else {}
    run = fasthprof("diff", "--json", "--value", "retained", "--top", "0", folder / "jdk.hprof", folder / "agent.hprof")
    try:
        rows = {r["name"]: r for r in json.loads(run.stdout)["rows"]}
    except (json.JSONDecodeError, KeyError):
        check(False, f"{label}: diff --value retained --json: {run.returncode} {run.stdout[:500]}{run.stderr}")
        return
    mine = rows.get("java.util.HashMap")
    check(mine is not None and mine["a"]["retained"] == classes["jdk.hprof"].get("java.util.HashMap") and
          mine["b"]["retained"] == classes["agent.hprof"].get("java.util.HashMap") and
          mine["a"]["retained"] >= 32 * 100_000,
          f"{label}: diff --value retained: HashMap as dominators counts it in each file: {mine}")
    held = fasthprof("diff", "--fail-if", "java.util.HashMap:retained>+20%", folder / "jdk.hprof", folder / "agent.hprof")
    grew = fasthprof("diff", "--fail-if", "java.util.HashMap:retained>=-100%", folder / "jdk.hprof", folder / "agent.hprof")
    check(held.returncode == 0 and " retained " in held.stdout.splitlines()[3] and grew.returncode == 1 and
          "java.util.HashMap:retained>=-100%' met" in grew.stderr,
          f"{label}: diff --fail-if on retained: not met {held.returncode}, met {grew.returncode}: {held.stdout[:600]}{grew.stderr}")


def retained_run(jdk, home):
    label = f"{jdk} retained"
    options = "heap=dump,format=b,file=agent.hprof,doe=n,verbose=y,dumper=vm"
    with java_process(home, agentpath(options), main="RetainedShapes", stdin=subprocess.PIPE,
                      jvm_args=["-Xshare:off"]) as (proc, folder):
        if not check(wait_for(lambda: "ready" in read_text(folder / "stdout.txt"), 60), f"{label}: program ready"):
            return
        jcmd = java_bin(home, "jcmd")
        for args in (["GC.heap_dump", str(folder / "jdk.hprof")], ["GC.heap_dump", "-gz=1", str(folder / "jdk.hprof.gz")]):
            done = subprocess.run([jcmd, str(proc.pid), *args], capture_output=True, text=True, timeout=300)
            check(done.returncode == 0, f"{label}: jcmd {' '.join(args)}: {done.stdout}{done.stderr}")
        for n in (1, 2):
            os.kill(proc.pid, signal.SIGQUIT)
            check(wait_for(lambda: read_text(folder / "stderr.txt").count(" done.\n") >= n, 120),
                  f"{label}: the agent's dump {n}:\n{read_text(folder / 'stderr.txt')}")
        proc.stdin.write("\n")
        proc.stdin.close()
        proc.wait(timeout=60)
        for name, extra in (("jdk.hprof", []), ("jdk.hprof.gz", []), ("agent.hprof", ["--dump", "1"]),
                            ("agent.hprof", ["--dump", "2"])):
            file_label = f"{label}: {name} {' '.join(extra)}".strip()
            result = dominators(file_label, folder / name, *extra)
            if result is not None:
                known_retained(file_label, result)
                if name == "agent.hprof":
                    check(result["dumps"] == 2 and result["dump"] == int(extra[1]), f"{file_label}: dump {result['dump']} of {result['dumps']}")
            paths(file_label, folder / name, *extra)
            if name != "jdk.hprof.gz":
                leaks(file_label, folder / name, *extra)
        against_visualvm(f"{label}: jdk.hprof", folder / "jdk.hprof")
        against_visualvm(f"{label}: agent.hprof dump 2", folder / "agent.hprof", 2)
        retained_diff(label, folder)
        share = fasthprof("leaks", "--share", "0", folder / "jdk.hprof")
        check(share.returncode == 2 and "--share takes a percentage" in share.stderr, f"{label}: leaks --share 0: {share.stderr}")
        bad = fasthprof("dominators", "--dump", "3", folder / "agent.hprof")
        check(bad.returncode == 2 and "1 to 2" in bad.stderr, f"{label}: --dump 3 of 2: {bad.returncode} {bad.stderr}")


def report_run(jdk, home):
    """`fasthprof report` of a jcmd dump of RetainedShapes, read in headless Chromium: each section
    there with the known answers, no script and nothing from elsewhere, no console message."""
    label = f"{jdk} report"
    driver = browser()
    with java_process(home, None, main="RetainedShapes", stdin=subprocess.PIPE, jvm_args=["-Xshare:off"]) as (proc, folder):
        try:
            if not check(wait_for(lambda: "ready" in read_text(folder / "stdout.txt"), 60), f"{label}: program ready"):
                return
            dump = folder / "jdk.hprof"
            done = subprocess.run([java_bin(home, "jcmd"), str(proc.pid), "GC.heap_dump", str(dump)],
                                  capture_output=True, text=True, timeout=300)
            proc.stdin.write("\n")
            proc.stdin.close()
            proc.wait(timeout=60)
            made = fasthprof("report", "--top", "12", "-o", folder / "report", dump)
            page = folder / "report" / "index.html"
            if not check(done.returncode == 0 and made.returncode == 0 and page.exists(),
                         f"{label}: jcmd and report: {done.stdout}{made.stderr}"):
                return
            html = page.read_text()
            check(not re.search(r"<script|https?://|<link|<img|@import", html), f"{label}: no script, nothing fetched")
            known = dominators(label, dump)
            cache = {c["name"]: c["retained"] for c in known["top_classes"]}.get("java.util.HashMap") if known else None
            driver.get(page.as_uri())
            shots = os.environ.get("FASTHPROF_REPORT_SCREENSHOTS") or str(folder)
            driver.save_screenshot(str(pathlib.Path(shots) / f"report-{jdk}.png"))
            text = driver.execute_script(
                "const t = s => [...document.querySelectorAll(s)].map(e => e.innerText);"
                "return {overview: t('#overview tr'), suspects: t('.suspect'), objects: t('#objects + table tr'),"
                " classes: t('#classes ~ table')[0] || '', histogram: t('#histogram ~ table tr')};")
            first = text["suspects"][0] if text["suspects"] else ""
            check(any(row.startswith("retained by the roots") for row in text["overview"]) and
                  "class RetainedShapes" in first and "java.util.HashMap" in first and "ROOT " in first,
                  f"{label}: the overview, and the first suspect the class that holds the cache:\n{text}")
            check(cache is not None and re.search(rf"^{cache}\s+\d+\s+\d+\s+java\.util\.HashMap$", text["classes"], re.M),
                  f"{label}: HashMap's retained bytes as dominators says, {cache}:\n{text['classes'][:1500]}")
            check(len(text["objects"]) == 13 and len(text["histogram"]) == 13,
                  f"{label}: --top 12 rows (and a header) per table: {len(text['objects'])}, {len(text['histogram'])}")
            logs = driver.get_log("browser")
            check(not logs, f"{label}: no console message: {logs[:5]}")
        finally:
            driver.quit()


if not COMMAND:
    skip("FASTHPROF_COMMAND is not set (run through meson test)")
run_cases("heap_analysis", {"retained": on_each_jdk(retained_run), "report": on_each_jdk(report_run)})
