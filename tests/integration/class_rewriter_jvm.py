"""The class-file rewriter (runtime/classfile/class_rewriter) against a real JVM, without the agent: classes
compiled here are rewritten by tests/class_rewriter/rewrite_classes (methods numbered 1, 2, ...),
then run under `java -Xverify:all -Xcheck:jni` with a stand-in java.lang.FasthprofTracker on the
boot path (--patch-module java.base) that counts the injected enter and exit calls per method.
Every method's counts must be exactly those of its known call graph (EXPECTED), and no other
method may have any. h2: every class of Debian's H2 jar rewritten, then loaded and linked (so
verified): zero VerifyError or ClassFormatError (classes that need absent optional libraries fail
with NoClassDefFoundError: counted apart, not the rewriter's).

Cases: release8, release11, release17 (JDK 17's javac), release25 (JDK 25's javac; skipped when
JDK 25 is absent), long_methods (a goto widened to goto_w; a method past 64 KiB left alone),
old_class_files (hand-made versions 45 and 49: jsr/ret, jsr_w, a conditional branch inverted around
goto_w), mutants (mutated seeds the JVM still verifies must verify once rewritten), h2;
allocations17 and allocations25 (Allocations.java rewritten with allocation calls, with and without
the entry and exit calls: every site's count and the sum of the array lengths it was given must be
those the program makes; then again with the mark calls after each allocation, --marks: verified,
the same counts and output, every site marked, as often as it allocated without throwing, with
objects of its type), h2_allocations (H2 rewritten with both kinds, loaded and linked; prints
the class-file growth of each kind; with the mark calls too: every site marked, linked);
marked_objects17 and marked_objects25 (MarkedObjects.java: every object it makes checked by
identity against the one it was marked with, MARKED_SITES); jdk_marks (each JDK's java.base
rewritten with the mark calls: every site marked). release8 to release25, long_methods,
old_class_files and mutants run a second time with every kind of call (MARKS)."""
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from harness import check  # noqa: E402

SOURCES = pathlib.Path(os.environ["SOURCE_ROOT"]) / "tests" / "class_rewriter"
REWRITE = os.environ.get("FASTHPROF_REWRITE_CLASSES", "")
H2_JAR = "/usr/share/java/h2.jar"

# (class, method name or a "prefix*" for javac's synthetic names): (enters, exits). A method
# left by an exception has an enter and no exit.
CALL_GRAPHS = {
    ("CallGraphs", "leaf"): (1013, 1013),
    ("CallGraphs", "spin"): (10, 10),
    ("CallGraphs", "early"): (5, 5),
    ("CallGraphs", "dense"): (6, 6),
    ("CallGraphs", "sparse"): (4, 4),
    ("CallGraphs", "strings"): (3, 3),
    ("CallGraphs", "tryCatchFinally"): (5, 5),
    ("CallGraphs", "thrower"): (3, 0),
    ("CallGraphs", "catchThree"): (1, 1),
    ("CallGraphs", "recurse"): (10, 10),
    ("CallGraphs", "synchronizedLoop"): (1, 1),
    ("CallGraphs", "main"): (1, 1),
    ("CallGraphs", "<init>"): (1, 1),
    ("CallGraphs", "lambda$main$*"): (1, 1),
    ("CallGraphs$Base", "<init>"): (9, 9),
    ("CallGraphs$Sub", "<init>"): (9, 9),
    ("CallGraphs$Holder", "<init>"): (9, 9),
    ("CallGraphs$Shape", "describe"): (2, 2),
    ("CallGraphs$Shape", "square"): (2, 2),
    ("CallGraphs$Shape", "lambda$square$*"): (2, 2),
    ("CallGraphs$Inner", "<init>"): (1, 1),
    ("CallGraphs$Inner", "peek"): (1, 1),
}
CALL_GRAPHS_8 = {**CALL_GRAPHS, ("CallGraphs", "access$*"): (1, 1)}  # no nest mates before 11
MODERN = {
    ("Modern", "eval"): (4, 4),
    ("Modern", "kind"): (8, 8),
    ("Modern", "hidden"): (1, 1),
    ("Modern", "main"): (1, 1),
    ("Modern", "lambda$main$*"): (5, 5),
    ("Modern$Add", "<init>"): (1, 1),
    ("Modern$Add", "left"): (1, 1),
    ("Modern$Add", "right"): (1, 1),
    ("Modern$Neg", "<init>"): (1, 1),
    ("Modern$Neg", "inner"): (1, 1),
    ("Modern$Num", "<init>"): (2, 2),
    ("Modern$Num", "value"): (2, 2),
    ("Modern$Nested", "<init>"): (1, 1),
    ("Modern$Nested", "get"): (1, 1),
}
JAVA25 = {
    ("Java25", "area"): (3, 3),
    ("Java25", "describe"): (6, 6),
    ("Java25", "main"): (1, 1),
    ("Java25$Circle", "<init>"): (2, 2),
    ("Java25$Circle", "r"): (3, 3),  # the guard's call twice, the record pattern's once
    ("Java25$Rect", "<init>"): (2, 2),
    ("Java25$Rect", "w"): (2, 2),
    ("Java25$Rect", "h"): (2, 2),  # javac calls the accessor of an unnamed pattern `_` too
}
TYPE_ANNOTATED = {
    ("TypeAnnotated", "annotated"): (3, 3),
    ("TypeAnnotated", "main"): (1, 1),
}
OLD_CLASS_FILES = {
    ("Hand", "old"): (2, 2),  # version 45: jsr/ret, a tableswitch case straight to a return, a handler
    ("Hand", "look"): (2, 2),  # a lookupswitch case straight to a return
    ("Hand", "main"): (1, 1),
    ("Far", "far"): (2, 2),  # version 49: ifeq inverted around goto_w, jsr become jsr_w
    ("Far", "main"): (1, 1),
}
LONG_METHODS = {
    ("LongMethods", "walk"): (3, 3),
    ("LongMethods", "main"): (1, 1),
    # huge: past 64 KiB once rewritten, left alone: never counted
}


# Allocations.java: (class, method, type as written): (allocations, sum of the array lengths passed;
# every count of a multianewarray of 2 dimensions or more).
ALLOCATION_SITES = {
    ("Allocations", "choose", "Allocations$A"): (3, 0),
    ("Allocations", "choose", "Allocations$B"): (2, 0),
    ("Allocations", "loop", "Allocations$A"): (4, 0),
    ("Allocations", "tryNew", "[I"): (3, 0),  # lengths -1, 0, 1: the first counted, then thrown
    ("Allocations", "tryNew", "[Ljava/lang/String;"): (1, 1),
    ("Allocations", "arrays", "[J"): (2, 10),
    ("Allocations", "arrays", "[Ljava/lang/String;"): (2, 10),
    ("Allocations", "arrays", "[[I"): (2, 10),
    ("Allocations", "arrays", "[[C"): (2, 14),
    ("Allocations", "arrays", "[[[J"): (2, 20),
    ("Allocations", "arrays", "[[[[B"): (2, 22),
    ("Allocations", "arrays", "[[Ljava/lang/String;"): (2, 14),
    ("Allocations", "nested", "Allocations$Pair"): (1, 0),
    ("Allocations", "nested", "Allocations$A"): (1, 0),
    ("Allocations", "nested", "[I"): (1, 3),
    ("Allocations", "uninitializedInFrame", "Allocations$Pair"): (2, 0),
    ("Allocations", "uninitializedInFrame", "Allocations$A"): (1, 0),
    ("Allocations", "uninitializedInFrame", "Allocations$B"): (1, 0),
    ("Allocations$Holder", "<init>", "java/lang/StringBuilder"): (1, 0),
    ("Allocations$Holder", "<init>", "java/lang/Object"): (1, 0),
    ("Allocations", "main", "Allocations$Holder"): (2, 0),
}
ALLOCATION_CALLS = {
    ("Allocations", "main"): (1, 1),
    ("Allocations", "choose"): (5, 5),
    ("Allocations", "loop"): (1, 1),
    ("Allocations", "tryNew"): (1, 1),
    ("Allocations", "arrays"): (2, 2),
    ("Allocations", "nested"): (1, 1),
    ("Allocations", "uninitializedInFrame"): (2, 2),
    ("Allocations$A", "<init>"): (12, 12),  # choose 3, loop 4, nested 1, uninitializedInFrame 1, B's 3
    ("Allocations$B", "<init>"): (3, 3),
    ("Allocations$Pair", "<init>"): (3, 3),
    ("Allocations$Box", "<init>"): (2, 2),
    ("Allocations$Holder", "<init>"): (2, 2),
}

# MarkedObjects.java, run with "marks": every object it makes is claimed by identity right after it
# was made (the tracker's expectMarked). (class, method or "prefix*", type as written, "<clone>" for
# a call sure to reach Object.clone): (allocations, sum of the lengths passed). Each site is marked
# as often as it allocated, less MARKED_THROWN, with objects of its type (MARKED_CLONE_CLASSES for
# the clones).
MARKED_SITES = {
    ("MarkedObjects", "conditional", "MarkedObjects$Box"): (6, 0),  # new Box(c ? a : b), new Box(c ? new A() : new B())
    ("MarkedObjects", "conditional", "MarkedObjects$Pair"): (3, 0),
    ("MarkedObjects", "conditional", "MarkedObjects$A"): (2, 0),
    ("MarkedObjects", "conditional", "MarkedObjects$B"): (4, 0),
    ("MarkedObjects", "conditional", "MarkedObjects$Wide"): (3, 0),
    ("MarkedObjects", "conditional", "[I"): (3, 5),
    ("MarkedObjects", "nested", "MarkedObjects$Box"): (10, 0),
    ("MarkedObjects", "nested", "MarkedObjects$A"): (4, 0),
    ("MarkedObjects", "nested", "MarkedObjects$Holder"): (2, 0),
    ("MarkedObjects", "nested", "MarkedObjects"): (2, 0),
    ("MarkedObjects", "nested", "MarkedObjects$Inner"): (2, 0),
    ("MarkedObjects", "nested", "MarkedObjects$1"): (2, 0),
    ("MarkedObjects$Box", "<init>", "MarkedObjects$A"): (2, 0),  # this(new A())
    ("MarkedObjects$Holder", "<init>", "java/lang/StringBuilder"): (1, 0),  # before super()
    ("MarkedObjects$Holder", "<init>", "java/lang/Object"): (1, 0),
    ("MarkedObjects", "statement", "MarkedObjects$Remembered"): (1, 0),
    **{("MarkedObjects", "arrays", kind): (1, 3) for kind in
       ("[Z", "[B", "[C", "[S", "[I", "[J", "[F", "[D", "[Ljava/lang/String;", "[[I")},
    ("MarkedObjects", "arrays", "[Ljava/lang/Object;"): (1, 2),
    ("MarkedObjects", "arrays", "MarkedObjects$A"): (1, 0),
    ("MarkedObjects", "multi", "[[I"): (2, 4),  # [2][4], then [2][-4]: thrown
    ("MarkedObjects", "multi", "[[[J"): (2, 10),  # [2][3][4], then [-4][3][2]: thrown
    ("MarkedObjects", "multi", "[[Ljava/lang/String;"): (1, 4),  # [0][4]
    ("MarkedObjects", "multi", "[[[I"): (1, 7),  # [3][0][4]
    ("MarkedObjects", "multi", "[[[C"): (1, 6),  # [2][4][]
    ("MarkedObjects", "clones", "[I"): (1, 2),
    ("MarkedObjects", "clones", "[Ljava/lang/String;"): (1, 2),
    ("MarkedObjects", "clones", "[[J"): (1, 4),
    ("MarkedObjects", "clones", "MarkedObjects$Sheep"): (1, 0),
    ("MarkedObjects", "clones", "MarkedObjects$Lamb"): (1, 0),
    ("MarkedObjects", "clones", "<clone>"): (3, 0),  # int[], String[], long[][]
    ("MarkedObjects$Sheep", "copy", "<clone>"): (2, 0),  # super.clone(): a Sheep, a Lamb
    ("MarkedObjects$Color", "<clinit>", "MarkedObjects$Color"): (2, 0),
    ("MarkedObjects$Color", "*", "[LMarkedObjects$Color;"): (1, 2),  # $VALUES: in <clinit> or $values()
    ("MarkedObjects$Color", "values", "<clone>"): (1, 0),
    ("MarkedObjects", "lambda$lambdas$*", "MarkedObjects$A"): (2, 0),
    ("MarkedObjects", "lambda$lambdas$*", "[J"): (2, 1),  # long[]::new
    ("MarkedObjects", "makeA", "MarkedObjects$A"): (2, 0),
    ("MarkedObjects", "throwing", "MarkedObjects$Fails"): (3, 0),  # one constructor threw
    ("MarkedObjects$Fails", "<init>", "java/lang/IllegalStateException"): (1, 0),
    ("MarkedObjects", "inTry", "MarkedObjects$A"): (2, 0),
    ("MarkedObjects", "inTry", "MarkedObjects$B"): (1, 0),
    ("MarkedObjects", "inTry", "MarkedObjects$Box"): (2, 0),
    ("MarkedObjects", "inTry", "java/lang/IllegalArgumentException"): (1, 0),
    ("MarkedObjects", "boxing", "java/util/ArrayList"): (1, 0),
    ("MarkedObjects", "boxing", "[Ljava/lang/Object;"): (1, 4),
}
MARKED_SITES_8 = {**MARKED_SITES, ("MarkedObjects", "concatenation", "java/lang/StringBuilder"): (1, 0)}
MARKED_THROWN = {
    ("MarkedObjects", "multi", "[[I"): 1,
    ("MarkedObjects", "multi", "[[[J"): 1,
    ("MarkedObjects", "throwing", "MarkedObjects$Fails"): 1,
    ("Allocations", "tryNew", "[I"): 1,
}
MARKED_CLONE_CLASSES = {
    ("MarkedObjects", "clones", "<clone>"): "[I,[Ljava.lang.String;,[[J",
    ("MarkedObjects$Sheep", "copy", "<clone>"): "MarkedObjects$Lamb,MarkedObjects$Sheep",
    ("MarkedObjects$Color", "values", "<clone>"): "[LMarkedObjects$Color;",
}


def javac(home, release, out, *sources, extra=()):
    command = harness.java_command(home, "--release", str(release), "-g", "-encoding", "UTF-8",
                                   "-nowarn", "-d", str(out), *extra, *map(str, sources), tool="javac")
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"javac failed:\n{proc.stdout}{proc.stderr}")


def rewrite(inputs, out, map_path, *options):
    proc = subprocess.run([REWRITE, "--out", str(out), "--map", str(map_path), *map(str, options), *map(str, inputs)],
                          capture_output=True, text=True, errors="replace", timeout=600)
    check(proc.returncode == 0, f"rewrite_classes failed: {proc.stdout}{proc.stderr}")
    summary = proc.stdout.strip().splitlines()[-1].split()
    counts = dict(zip(summary[0::2], map(int, summary[1::2])))
    print("rewrite_classes:", proc.stdout.strip().splitlines()[-1], flush=True)
    return counts, proc.stdout


def read_map(path):
    names = {}
    for line in pathlib.Path(path).read_text(errors="replace").splitlines():
        number, class_name, method, descriptor = line.split(" ", 3)
        names[int(number)] = (class_name, method, descriptor)
    return names


class Tools:
    """The stand-in tracker and RunRewritten, compiled once per JDK."""

    def __init__(self, home, folder):
        self.tracker = folder / "tracker"
        self.runner = folder / "runner"
        tracker_source = SOURCES / "tracker" / "java" / "lang" / "FasthprofTracker.java"
        command = harness.java_command(home, "--patch-module", f"java.base={SOURCES / 'tracker'}",
                                       "-d", str(self.tracker), str(tracker_source), tool="javac")
        subprocess.run(command, check=True, capture_output=True, timeout=600)
        javac(home, 8 if "17" in home else 11, self.runner, SOURCES / "java" / "RunRewritten.java")


def run_rewritten(home, tools, classpath, *args):
    command = harness.java_command(home, "-Xverify:all", "-Xshare:auto",
                                   f"--patch-module=java.base={tools.tracker}",
                                   "-cp", f"{classpath}:{tools.runner}", "RunRewritten", *map(str, args))
    proc = subprocess.run(command, capture_output=True, text=True, timeout=900)
    harness.check_no_warnings(" ".join(command[-3:]), proc.stdout, proc.stderr)
    check(proc.returncode == 0, f"{' '.join(command)}: exit {proc.returncode}\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return proc


def check_counts(label, proc, names, expected):
    seen = {}
    for line in proc.stdout.splitlines():
        if line.startswith("COUNT "):
            _, number, enters, exits = line.split()
            seen[int(number)] = (int(enters), int(exits))
    matched = set()
    for number, counts in sorted(seen.items()):
        class_name, method, descriptor = names[number]
        key = next((k for k in expected if k[0] == class_name and
                    (k[1] == method or (k[1].endswith("*") and method.startswith(k[1][:-1])))), None)
        if check(key is not None, f"{label}: {class_name}.{method}{descriptor} counted {counts}, expected never"):
            check(counts == expected[key], f"{label}: {class_name}.{method}{descriptor}: enters/exits {counts}, "
                                           f"expected {expected[key]}")
            check(key not in matched, f"{label}: two methods match {key}")
            matched.add(key)
    for key in expected:
        check(key in matched, f"{label}: {key[0]}.{key[1]} never counted, expected {expected[key]}")
    print(f"{label}: {len(seen)} methods counted, every count as expected" if not harness.failures else "", flush=True)


def read_sites(sites_path):
    """rewrite_classes --sites: number -> (class, method, type), and the numbers marked (--marks)."""
    sites, marked = {}, set()
    for line in pathlib.Path(sites_path).read_text(errors="replace").splitlines():
        number, class_name, method, _descriptor, _offset, type_name, *mark = line.split(" ")
        sites[int(number)] = (class_name, method, type_name)
        if mark == ["marked"]:
            marked.add(int(number))
    return sites, marked


def site_key(key, expected):
    """The key of `expected` naming the site `key` (class, method, type): itself, or one whose method
    is a "prefix*" ("*" alone: any method) of the same class and type."""
    if key in expected:
        return key
    return next((k for k in expected if k[0] == key[0] and k[2] == key[2] and k[1].endswith("*")
                 and key[1].startswith(k[1][:-1])), key)


def check_marks(label, proc, sites_path, unmarked_stdout, expected):
    """With --marks: every site marked by the rewriter, marked as often as it was counted (less the
    allocations that threw, MARKED_THROWN), with objects of its type (MARKED_CLONE_CLASSES for a
    clone); no MARKERROR (an object marked twice, one the program made and was not marked with, one
    marked that the program did not make); and the program's own output as without the marks."""
    sites, marked = read_sites(sites_path)
    check(marked == set(sites), f"{label}: sites left unmarked: {sorted(set(sites) - marked)}")
    counted = {int(n): int(a) for _, n, a, _ in (line.split() for line in proc.stdout.splitlines() if line.startswith("SITE "))}
    marks = {}
    for line in proc.stdout.splitlines():
        if line.startswith("MARK "):
            _, number, count, classes = line.split(" ")
            marks[int(number)] = (int(count), classes)
    per_key = {}  # expected key -> [marks, counted, set of classes]
    for number, key in sites.items():
        entry = per_key.setdefault(site_key(key, expected), [0, 0, set()])
        count, classes = marks.get(number, (0, ""))
        entry[0] += count
        entry[1] += counted.get(number, 0)
        entry[2].update(c for c in classes.split(",") if c)
    for key, (count, allocations, classes) in sorted(per_key.items()):
        thrown = MARKED_THROWN.get(key, 0)
        check(count == allocations - thrown, f"{label}: site {key}: marked {count} times, counted {allocations} "
                                             f"(thrown {thrown})")
        if allocations == 0 or (key[2].startswith("<") and key not in MARKED_CLONE_CLASSES):
            continue  # never ran (another program's), or a clone whose classes the case does not list
        java_name = MARKED_CLONE_CLASSES.get(key, key[2].replace("/", "."))  # Class.getName(): [I, [Ljava.lang.String;
        check(",".join(sorted(classes)) == java_name, f"{label}: site {key}: marked objects of {sorted(classes)}, "
                                                      f"expected {java_name}")
    errors = [line for line in proc.stdout.splitlines() if line.startswith("MARKERROR")]
    check(not errors, f"{label}: wrong marks:\n" + "\n".join(errors[:20]))
    check(own_output(proc) == unmarked_stdout, f"{label}: the program's output changed: {own_output(proc)} "
                                               f"against {unmarked_stdout}")
    print(f"{label}: {len(marks)} sites marked" + (", every mark as expected" if not harness.failures else ""), flush=True)


def own_output(proc):
    """The program's lines, less the tracker's and the HIDDEN lines MarkedObjects prints with marks."""
    return [line for line in proc.stdout.splitlines() if not line.startswith(("COUNT ", "SITE ", "MARK", "HIDDEN "))]


def check_sites(label, proc, sites_path, expected):
    """The tracker's SITE lines, summed per (class, method, type), against `expected`; the sites
    listed of the program's classes (those of the expected keys) are those expected."""
    sites, _ = read_sites(sites_path)
    seen = {}
    for line in proc.stdout.splitlines():
        if line.startswith("SITE "):
            _, number, allocations, lengths = line.split()
            key = site_key(sites[int(number)], expected)
            before = seen.get(key, (0, 0))
            seen[key] = (before[0] + int(allocations), before[1] + int(lengths))
    for key in sorted(set(seen) | set(expected)):
        check(seen.get(key) == expected.get(key), f"{label}: site {key}: counted {seen.get(key)}, "
                                                  f"expected {expected.get(key)}")
    programs = tuple({key[0].split("$")[0] for key in expected})
    listed = {site_key(key, expected) for key in sites.values() if key[0].startswith(programs)}
    check(listed == set(expected), f"{label}: the sites listed are those expected: "
                                   f"{sorted(listed ^ set(expected))} differ")
    print(f"{label}: {len(seen)} sites counted" + (", every count as expected" if not harness.failures else ""),
          flush=True)


def allocations_case(release, jdk):
    def case():
        label, home = jdk()
        with tempfile.TemporaryDirectory(prefix="fasthprof-rewrite-") as scratch:
            folder = pathlib.Path(scratch)
            tools = Tools(home, folder)
            javac(home, release, folder / "classes", SOURCES / "java" / "Allocations.java")
            for calls in (True, False):
                kind = "allocation and entry/exit calls" if calls else "allocation calls only"
                options = ["--allocations", "--sites", folder / "sites"] + ([] if calls else ["--no-calls"])
                out = folder / ("both" if calls else "allocations")
                counts, _ = rewrite([folder / "classes"], out, folder / "map", *options)
                check(counts["malformed"] == 0 and counts["left_alone"] == 0 and counts["sites"] == 22,
                      f"{kind}: every class rewritten whole, 22 sites: {counts}")
                check(counts["methods"] == (13 if calls else 0), f"{kind}: methods given calls: {counts}")
                proc = run_rewritten(home, tools, out, "Allocations")
                check("CHECK" in proc.stdout, f"{kind}: the program ran to its end")
                if calls:
                    check_counts(f"{label} --release {release} {kind}", proc, read_map(folder / "map"), ALLOCATION_CALLS)
                else:
                    check("COUNT " not in proc.stdout, f"{kind}: no entry or exit counted")
                check_sites(f"{label} --release {release} {kind}", proc, folder / "sites", ALLOCATION_SITES)
                own = own_output(proc)
                # The same with the mark calls after each allocation (RewritePlan::marks): verified
                # under -Xverify:all, the same counts, each object marked once with its site.
                counts, _ = rewrite([folder / "classes"], out, folder / "map", "--marks", *options)
                check(counts["malformed"] == 0 and counts["left_alone"] == 0 and counts["sites"] == 22,
                      f"{kind} with marks: every class rewritten whole, 22 sites: {counts}")
                proc = run_rewritten(home, tools, out, "Allocations")
                if calls:
                    check_counts(f"{label} --release {release} {kind} marks", proc, read_map(folder / "map"),
                                 ALLOCATION_CALLS)
                check_sites(f"{label} --release {release} {kind} marks", proc, folder / "sites", ALLOCATION_SITES)
                check_marks(f"{label} --release {release} {kind} marks", proc, folder / "sites", own, ALLOCATION_SITES)
    return case


def marked_objects_case(releases, jdk):
    """MarkedObjects.java for each release: rewritten with the allocation calls (and the clones'),
    the counts checked; then with the mark calls, with and without the entry and exit calls, run
    with "marks" under -Xverify:all: each object the program makes is the one it was marked with,
    once (MARKERROR otherwise), the counts, marks and output as expected. Last, the classes without
    the mark calls run with "marks" must fail those checks (the checks are live)."""
    def case():
        label, home = jdk()
        for release in releases:
            with tempfile.TemporaryDirectory(prefix="fasthprof-rewrite-") as scratch:
                folder = pathlib.Path(scratch)
                tools = Tools(home, folder)
                javac(home, release, folder / "classes", SOURCES / "java" / "MarkedObjects.java")
                expected = MARKED_SITES_8 if release == 8 else MARKED_SITES
                what = f"{label} --release {release} MarkedObjects"
                options = ["--allocations", "--clones", "--sites", folder / "sites"]
                counts, _ = rewrite([folder / "classes"], folder / "plain", folder / "map", *options)
                check(counts["malformed"] == 0 and counts["left_alone"] == 0, f"{what}: every class whole: {counts}")
                proc = run_rewritten(home, tools, folder / "plain", "MarkedObjects")
                check("CHECK" in proc.stdout, f"{what}: the program ran to its end")
                check_sites(what, proc, folder / "sites", expected)
                own = own_output(proc)
                for calls in (True, False):
                    out = folder / ("both" if calls else "marks")
                    extra = [] if calls else ["--no-calls"]
                    counts, _ = rewrite([folder / "classes"], out, folder / "map", "--marks", *options, *extra)
                    check(counts["malformed"] == 0 and counts["left_alone"] == 0, f"{what} marks: {counts}")
                    proc = run_rewritten(home, tools, out, "MarkedObjects", "marks")
                    kind = f"{what} marks" + ("" if calls else " without calls")
                    check_sites(kind, proc, folder / "sites", expected)
                    check_marks(kind, proc, folder / "sites", own, expected)
                    hidden = sorted(line for line in proc.stdout.splitlines() if line.startswith("HIDDEN "))
                    builders = 1 if release == 8 else 0  # javac's StringBuilder of the one concatenation
                    check(hidden == ["HIDDEN [LMarkedObjects$Color; 1", f"HIDDEN java.lang.StringBuilder {builders}"],
                          f"{kind}: objects claimed by class: {hidden}")
                proc = run_rewritten(home, tools, folder / "plain", "MarkedObjects", "marks")
                errors = [line for line in proc.stdout.splitlines() if "made but not marked" in line]
                check(len(errors) >= 60, f"{what}: without the mark calls, the objects made are found unmarked: "
                                         f"{len(errors)} MARKERROR lines")
    return case


def call_graph_case(release, programs, jdk):
    def case():
        label, home = jdk()
        with tempfile.TemporaryDirectory(prefix="fasthprof-rewrite-") as scratch:
            folder = pathlib.Path(scratch)
            tools = Tools(home, folder)
            sources = [SOURCES / "java" / f"{main}.java" for main, _ in programs]
            javac(home, release, folder / "classes", *sources)
            own = {}
            for options in ((), MARKS):  # then with every kind of call: the same counts, every object marked
                out = folder / ("marked" if options else "rewritten")
                counts, _ = rewrite([folder / "classes"], out, folder / "map", *options, *sites_file(options, folder))
                check(counts["malformed"] == 0 and counts["left_alone"] == 0,
                      f"release {release}: every class rewritten whole: {counts}")
                names = read_map(folder / "map")
                for main, expected in programs:
                    proc = run_rewritten(home, tools, out, main)
                    what = f"{label} --release {release} {main}" + (" marks" if options else "")
                    check("CHECK " in proc.stdout, f"{what}: the program ran to its end")
                    check_counts(what, proc, names, expected)
                    if options:
                        check_marks(what, proc, folder / "sites", own[main], {})
                    own[main] = own_output(proc)
    return case


# Every kind of call (--marks needs the allocation calls): for the cases whose programs were
# written for the entry and exit calls, run again with these the counts must be the same, every
# site marked as often as it allocated (their constructors do not throw) and the output unchanged.
MARKS = ("--allocations", "--clones", "--marks")


def sites_file(options, folder):
    return ("--sites", folder / "sites") if options else ()


def jdk17():
    return ("jdk17", os.environ["JAVA17_HOME"])


def long_methods_source(folder):
    """walk: a loop whose backward goto spans about 31 KB and its 1500 returns, so that the exit
    calls push it past a 16-bit offset (goto_w); huge: about 61 KB with 2600 returns (javac writes it with goto_w and inverted branches, its "fat code"), past 64 KiB
    once rewritten (left alone)."""
    def blocks(count):
        return "\n".join(f"      if (acc == -{k}) return {k};\n      acc += i ^ {k};" for k in range(1, count + 1))
    source = f"""public class LongMethods {{
  static int walk(int n) {{
    int acc = 0;
    for (int i = 0; ; i++) {{
      if (i >= n) return acc;
{blocks(1500)}
    }}
  }}

  static int huge(int n) {{
    int acc = 0;
    for (int i = 0; ; i++) {{
      if (i >= n) return acc;
{blocks(2600)}
    }}
  }}

  public static void main(String[] args) {{
    int sum = 0;
    for (int i = 0; i < 3; i++) sum += walk(5) + huge(4);
    System.out.println("CHECK " + sum);
  }}
}}
"""
    path = folder / "LongMethods.java"
    path.write_text(source)
    return path


def long_methods():
    label, home = jdk17()
    with tempfile.TemporaryDirectory(prefix="fasthprof-rewrite-") as scratch:
        folder = pathlib.Path(scratch)
        tools = Tools(home, folder)
        javac(home, 8, folder / "classes", long_methods_source(folder))
        own = None
        for options in ((), MARKS):
            out = folder / ("marked" if options else "rewritten")
            counts, _ = rewrite([folder / "classes"], out, folder / "map", *options, *sites_file(options, folder))
            check(counts["left_alone"] == 1, f"huge left alone (64 KiB): {counts}")
            check(counts["widened"] >= 1, f"walk's backward goto widened: {counts}")
            proc = run_rewritten(home, tools, out, "LongMethods")
            what = f"{label} LongMethods" + (" marks" if options else "")
            check("CHECK " in proc.stdout, f"{what} ran to its end")
            check_counts(what, proc, read_map(folder / "map"), LONG_METHODS)
            if options:
                check_marks(what, proc, folder / "sites", own, {})
            own = own_output(proc)


def old_class_files():
    """Hand-made class files the unit test writes (tests/unit/class_rewriter_test.cpp)."""
    label, home = jdk17()
    with tempfile.TemporaryDirectory(prefix="fasthprof-rewrite-") as scratch:
        folder = pathlib.Path(scratch)
        (folder / "classes").mkdir()
        env = dict(os.environ, FASTHPROF_WRITE_CLASS_REWRITER_CLASSES=str(folder / "classes"))
        subprocess.run([os.environ["FASTHPROF_CLASS_REWRITER_TEST"], "--gtest_filter=*Old*"], env=env, check=True,
                       capture_output=True, timeout=300)
        check(sorted(p.name for p in (folder / "classes").iterdir()) == ["Far.class", "Hand.class"],
              "the unit test wrote Far.class and Hand.class")
        tools = Tools(home, folder)
        own = {}
        for options in ((), MARKS):
            out = folder / ("marked" if options else "rewritten")
            counts, _ = rewrite([folder / "classes"], out, folder / "map", *options, *sites_file(options, folder))
            check(counts["widened"] == 2 and counts["left_alone"] == 0, f"old class files: {counts}")
            names = read_map(folder / "map")
            for main in ("Hand", "Far"):
                proc = run_rewritten(home, tools, out, main)
                expected = {key: value for key, value in OLD_CLASS_FILES.items() if key[0] == main}
                what = f"{label} {main}" + (" marks" if options else "")
                check_counts(what, proc, names, expected)
                if options:
                    check_marks(what, proc, folder / "sites", own[main], {})
                own[main] = own_output(proc)


def mutants():
    """Mutants of the fuzz seeds (random bytes changed, as the fuzz target does) that the JVM still
    defines and verifies must verify once rewritten too. Each is defined in a loader of its own,
    with the unmutated classes on the class path for the types it names."""
    import random
    label, home = jdk17()
    seeds = SOURCES.parent / "fuzz" / "corpus" / "class_rewriter"
    rng = random.Random(15)
    with tempfile.TemporaryDirectory(prefix="fasthprof-rewrite-") as scratch:
        folder = pathlib.Path(scratch)
        tools = Tools(home, folder)
        javac(home, 17, folder / "classes", *(SOURCES / "java" / f"{name}.java" for name in
                                              ("CallGraphs", "Modern", "TypeAnnotated", "MarkedObjects")))
        javac(home, 11, tools.runner, SOURCES / "java" / "MutantCheck.java")
        (folder / "mutants").mkdir()
        seed_bytes = [p.read_bytes() for p in sorted(seeds.iterdir()) if "release25" not in p.name]
        interesting = [0, 1, 0x7f, 0x80, 0xff]
        for number in range(3000):
            data = bytearray(rng.choice(seed_bytes))
            for _ in range(rng.randint(1, 3)):
                at = rng.randrange(len(data))
                if rng.random() < 0.5:
                    data[at] ^= 1 << rng.randrange(8)
                else:
                    data[at] = rng.choice(interesting)
            (folder / "mutants" / f"m{number:05}.class").write_bytes(bytes(data))
        for options in ((), MARKS):  # then with every kind of call, the mark calls too
            out = folder / ("marked" if options else "rewritten")
            counts, _ = rewrite([folder / "mutants"], out, folder / "map", *options)
            command = harness.java_command(home, "-Xverify:all", "-Xshare:auto",
                                           f"--patch-module=java.base={tools.tracker}",
                                           "-cp", f"{tools.runner}:{folder / 'classes'}", "MutantCheck",
                                           str(folder / "mutants"), str(out))
            proc = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=1200)
            check(proc.returncode == 0, f"MutantCheck: exit {proc.returncode}\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
            last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
            print(f"{label} mutants{' marks' if options else ''}: {last}", flush=True)
            found = re.match(r"FILES (\d+) VALID (\d+) KEPT (\d+) ACCEPTED (\d+) REJECTED (\d+)", last)
            if check(found is not None, f"mutants: the summary line, got {last!r}"):
                files, valid, kept, accepted, rejected = map(int, found.groups())
                rejections = [line for line in proc.stdout.splitlines() if line.startswith("REJECTED")]
                check(rejected == 0, "mutants the JVM verified but not once rewritten:\n" + "\n".join(rejections[:20]))
                check(valid - kept >= 100, f"mutants: at least 100 of {files} valid and rewritten, got {valid - kept}")


def h2(options=()):
    if not os.path.exists(H2_JAR):
        harness.skip(f"{H2_JAR} absent (Debian libh2-java, tools/install-deps.sh --tests)")
    for label, home in harness.jdks():
        with tempfile.TemporaryDirectory(prefix="fasthprof-rewrite-") as scratch:
            folder = pathlib.Path(scratch)
            tools = Tools(home, folder)
            with zipfile.ZipFile(H2_JAR) as jar:
                jar.extractall(folder / "jar")
            names = sorted(str(p.relative_to(folder / "jar"))[:-len(".class")].replace("/", ".")
                           for p in (folder / "jar").rglob("*.class") if "META-INF" not in p.parts)
            (folder / "names").write_text("\n".join(names) + "\n")
            counts, output = rewrite([folder / "jar"], folder / "rewritten", folder / "map", *options)
            check(counts["malformed"] == 0, f"h2: no class malformed:\n{output[-3000:]}")
            check(counts["rewritten"] > 900, f"h2: most classes rewritten: {counts}")
            proc = run_rewritten(home, tools, folder / "rewritten", "--link", folder / "names")
            last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
            print(f"{label} h2: {last}", flush=True)
            found = re.match(r"LINKED (\d+) VERIFY (\d+) FORMAT (\d+) OTHER (\d+)", last)
            if check(found is not None, f"h2: the link summary line, got {last!r}"):
                linked, verify, format_errors, other = map(int, found.groups())
                bad = [line for line in proc.stdout.splitlines() if line.startswith(("VERIFY", "FORMAT"))]
                check(verify == 0 and format_errors == 0, f"{label} h2: VerifyError/ClassFormatError:\n" + "\n".join(bad[:20]))
                check(linked == len(names) - other and linked > 900, f"{label} h2: {linked} of {len(names)} linked")
                # The other failures must be the absent optional libraries, not the rewriter's.
                others = [line for line in proc.stdout.splitlines() if line.startswith("OTHER")]
                check(all("NoClassDefFoundError" in line for line in others),
                      f"{label} h2: failures other than absent libraries:\n" + "\n".join(others[:20]))


def check_every_site_marked(label, sites_path):
    """rewrite_classes --marks over javac's code: every site marked, each `new`'s initializers found."""
    sites, marked = read_sites(sites_path)
    kinds, unmarked = {}, {}
    for number, (_, _, type_name) in sites.items():
        kind = type_name if type_name.startswith("<") else "array" if type_name.startswith("[") else "new"
        kinds[kind] = kinds.get(kind, 0) + 1
        if number not in marked:
            unmarked[kind] = unmarked.get(kind, 0) + 1
    print(f"{label} marks: sites by kind {kinds}, unmarked {unmarked}", flush=True)
    check(not unmarked, f"{label}: sites left unmarked: " + ", ".join(
        " ".join(map(str, sites[n])) for n in sorted(set(sites) - marked)[:20]))


def jdk_marks():
    """Every class of each JDK's java.base rewritten with the mark calls (not run: the JDK's own
    classes cannot run the tracker's calls): none malformed, every site marked."""
    for label, home in harness.jdks():
        with tempfile.TemporaryDirectory(prefix="fasthprof-rewrite-") as scratch:
            folder = pathlib.Path(scratch)
            subprocess.run([os.path.join(home, "bin", "jimage"), "extract", "--include", "regex:/java.base/.*",
                            "--dir", str(folder / "jdk"), os.path.join(home, "lib", "modules")],
                           check=True, capture_output=True, timeout=600)
            counts, _ = rewrite([folder / "jdk"], folder / "marked", folder / "map", *MARKS, "--no-calls",
                                "--sites", folder / "sites")
            check(counts["malformed"] == 0 and counts["sites"] > 40000, f"{label} java.base: {counts}")
            check_every_site_marked(f"{label} java.base", folder / "sites")


def h2_allocations():
    """H2 rewritten with allocation calls and entry/exit calls, linked on each JDK; first the
    class-file growth of each kind on its own and of both."""
    if not os.path.exists(H2_JAR):
        harness.skip(f"{H2_JAR} absent (Debian libh2-java, tools/install-deps.sh --tests)")
    with tempfile.TemporaryDirectory(prefix="fasthprof-rewrite-") as scratch:
        folder = pathlib.Path(scratch)
        with zipfile.ZipFile(H2_JAR) as jar:
            jar.extractall(folder / "jar")
        for kind, options in (("calls", ()), ("allocations", ("--allocations", "--no-calls")),
                              ("both", ("--allocations",)), ("marks", (*MARKS, "--sites", folder / "sites"))):
            counts, _ = rewrite([folder / "jar"], folder / kind, folder / "map", *options)
            growth = 100.0 * (counts["bytes_out"] - counts["bytes_in"]) / counts["bytes_in"]
            print(f"h2 class-file growth, {kind}: {counts['bytes_in']} -> {counts['bytes_out']} bytes "
                  f"(+{growth:.1f} %), {counts['sites']} sites, {counts['left_alone']} methods left alone", flush=True)
            check(counts["malformed"] == 0, f"h2 {kind}: no class malformed: {counts}")
        check_every_site_marked("h2", folder / "sites")  # the data-flow pass over all of H2 (javac's code)
    h2(("--allocations",))
    h2(MARKS)  # linked, so verified, with the mark calls


def jdk25_program_case():
    return call_graph_case(25, [("CallGraphs", CALL_GRAPHS), ("Modern", MODERN), ("TypeAnnotated", TYPE_ANNOTATED),
                                ("Java25", JAVA25)], harness.jdk25)


if __name__ == "__main__":
    harness.run_cases("class_rewriter_jvm", {
        "release8": call_graph_case(8, [("CallGraphs", CALL_GRAPHS_8)], jdk17),
        "release11": call_graph_case(11, [("CallGraphs", CALL_GRAPHS)], jdk17),
        "release17": call_graph_case(17, [("CallGraphs", CALL_GRAPHS), ("Modern", MODERN),
                                          ("TypeAnnotated", TYPE_ANNOTATED)], jdk17),
        "release25": jdk25_program_case(),
        "long_methods": long_methods,
        "old_class_files": old_class_files,
        "mutants": mutants,
        "h2": h2,
        "allocations17": allocations_case(17, jdk17),
        "allocations25": allocations_case(25, harness.jdk25),
        "h2_allocations": h2_allocations,
        "marked_objects17": marked_objects_case((8, 17), jdk17),
        "jdk_marks": jdk_marks,
        "marked_objects25": marked_objects_case((25,), harness.jdk25),
    })
