"""The `fasthprof` command (tools/fasthprof/): its dispatch (help, --help per verb, -o, exit codes),
bad input (one message, exit 2, no crash), `verify` as one implementation with hprof-verify, and
`summary`'s class histogram against `jcmd GC.class_histogram` taken at the same quiescent moment of
tests/java/Histogram.java, on a fasthprof dump (kill -QUIT), a `jcmd GC.heap_dump` and a
`jcmd GC.heap_dump -gz=1` of it; `collapsed` against folded stacks computed here from the records
(hprof_records.py) of cpu=samples (plain and gz=y) and heap=sites runs; `diff --fail-if` exit codes
both ways on heap dumps of two sizes and on SITES. Each case is a Meson test (`fasthprof_cmd.py <case>`)."""
import gzip
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile

import hprof_records
from harness import (agentpath, browser, check, cleanup, java_bin, java_process, on_each_jdk, read_text, run_cases,
                     run_java, skip, wait_for)

COMMAND = os.environ.get("FASTHPROF_COMMAND", "")
VERIFY = os.environ.get("FASTHPROF_VERIFY", "")
JAVA17 = os.environ["JAVA17_HOME"]
# Histogram.java's own classes: nothing else allocates them, so their counts are exact on both sides.
OWN = ("Histogram$Node", "Histogram$Point", "Histogram$Shape", "Histogram$Square", "Histogram$Point[]",
       "Histogram$Point[][]", "Histogram$Square[]")


def fasthprof(*args, timeout=600, env=None):
    proc = subprocess.run([COMMAND, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=None if env is None else {**os.environ, **env})
    return proc


def one_message(label, proc, expect):
    """Exit 2, no crash, one line on stderr that names what is wrong."""
    lines = proc.stderr.splitlines()
    check(proc.returncode == 2, f"{label}: exit 2, got {proc.returncode}\n{proc.stderr}")
    check(len(lines) == 1 and re.search(expect, lines[0]) is not None,
          f"{label}: one message matching {expect!r}, got:\n{proc.stderr}")
    check(proc.stdout == "", f"{label}: nothing on stdout, got:\n{proc.stdout[:500]}")


def histogram(summary_text, dump=1):
    """{class name: (instances, bytes)} of a dump's class histogram in `summary --top 0` output."""
    section = summary_text.split(f"\nHEAP DUMP {dump} at byte ", 1)[1].split("\nHEAP DUMP ", 1)[0]
    section = section.split("\nSITES ", 1)[0].split("\nCPU ", 1)[0]
    rows = {}
    for line in section.splitlines():
        found = re.match(r"\s*\d+\s+[\d.]+%\s+(\d+)\s+(\d+)  (.+)$", line)
        if found:
            name = found.group(3)
            instances, size = rows.get(name, (0, 0))
            rows[name] = (instances + int(found.group(1)), size + int(found.group(2)))
    return rows


def jcmd_histogram(text):
    """{Java class name: instances} of `jcmd GC.class_histogram` (names as summary prints them)."""
    primitive = {"Z": "boolean", "C": "char", "F": "float", "D": "double", "B": "byte", "S": "short", "I": "int",
                 "J": "long"}
    rows = {}
    for line in text.splitlines():
        found = re.match(r"\s*\d+:\s+(\d+)\s+(\d+)\s+(\S+)", line)
        if not found:
            continue
        name = found.group(3)
        dims = len(name) - len(name.lstrip("["))
        if dims:
            element = name[dims:]
            name = primitive.get(element) or (element[1:-1] if element.startswith("L") else element)
            name += "[]" * dims
        rows[name] = rows.get(name, 0) + int(found.group(1))
    return rows


def case_dispatch():
    help_text = fasthprof("help")
    listed = re.findall(r"^  (\w+) ", help_text.stdout, re.M)
    # pprof is built only where Debian's protobuf and profile.proto are (tools/meson.build).
    check(help_text.returncode == 0 and listed in (["verify", "summary", "dominators", "path", "leaks", "report", "collapsed", "diff",
                                                    "text", "flame", "listen", "attach"],
                                                   ["verify", "summary", "dominators", "path", "leaks", "report", "collapsed", "diff",
                                                    "text", "flame", "pprof", "listen", "attach"]),
          f"help lists the verbs that are built, and no other:\n{help_text.stdout}")
    for verb in listed:
        usage = fasthprof(verb, "--help")
        check(usage.returncode == 0 and usage.stdout.startswith(f"usage: fasthprof {verb}"),
              f"{verb} --help: {usage.returncode}\n{usage.stdout}{usage.stderr}")
        check(fasthprof("help", verb).stdout == usage.stdout, f"help {verb} prints {verb} --help")
    check("Shallow bytes" in fasthprof("summary", "--help").stdout, "summary --help states the shallow-size rule")
    version = fasthprof("--version")
    check(version.returncode == 0 and re.fullmatch(r"fasthprof \d+\.\d+\.\d+\n", version.stdout) is not None,
          f"--version: {version}")
    for args in (("version",), ("diff", "--version"), ("summary", "-V", "x.hprof")):
        check(fasthprof(*args).stdout == version.stdout, f"{' '.join(args)} prints the version")
    verify_version = subprocess.run([os.environ["FASTHPROF_VERIFY"], "--version"], capture_output=True, text=True)
    check(verify_version.returncode == 0 and version.stdout.strip() in verify_version.stdout,
          f"hprof-verify --version: {verify_version}")
    one_message("no verb", fasthprof("frobnicate", "x"), r"^fasthprof: no verb frobnicate")
    no_args = fasthprof()
    check(no_args.returncode == 2 and "usage: fasthprof" in no_args.stderr, f"no arguments: usage, exit 2: {no_args}")
    one_message("unknown option", fasthprof("summary", "--bogus", "x"), r"unknown option --bogus")
    one_message("bad --top", fasthprof("summary", "--top", "many", "x"), r"--top takes a count")

    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-cmd-"))
    try:
        # A small valid file: header, a UTF8 and a LOAD CLASS, a HEAP DUMP with one CLASS DUMP and
        # two instances (4-byte IDs), written here so that the bad inputs below are cuts of it.
        def record(tag, body):
            return bytes([tag]) + (0).to_bytes(4, "big") + len(body).to_bytes(4, "big") + body

        def u4(value):
            return value.to_bytes(4, "big")

        header = b"JAVA PROFILE 1.0.1\0" + u4(4) + (0).to_bytes(8, "big")
        name = record(0x01, u4(0x10) + b"demo.Thing") + record(0x05, u4(1) + u4(0) + u4(0))
        load = record(0x02, u4(1) + u4(0x100) + u4(1) + u4(0x10))
        class_dump = (bytes([0x20]) + u4(0x100) + u4(1) + u4(0) * 5 + u4(0) + u4(4) + (0).to_bytes(2, "big")
                      + (0).to_bytes(2, "big") + (1).to_bytes(2, "big") + u4(0x10) + bytes([10]))
        instances = b"".join(bytes([0x21]) + u4(0x200 + i) + u4(1) + u4(0x100) + u4(4) + u4(i) for i in range(2))
        dump = record(0x0C, class_dump + instances)
        good = header + name + load + dump
        (folder / "good.hprof").write_bytes(good)
        summary = fasthprof("summary", folder / "good.hprof")
        rows = histogram(summary.stdout)
        # 8 (two 4-byte IDs) + 4 (the int field) = 12, rounded up to 16.
        check(summary.returncode == 0 and rows.get("demo.Thing") == (2, 32) and rows.get("java.lang.Class", (0,))[0] == 1,
              f"summary of a hand-made file: 2 demo.Thing of 16 bytes, 1 class: {rows}\n{summary.stdout}{summary.stderr}")
        (folder / "good.hprof.gz").write_bytes(gzip.compress(good))
        zipped = fasthprof("summary", folder / "good.hprof.gz")
        check(zipped.returncode == 0 and histogram(zipped.stdout) == rows, f"plain gzip reads the same:\n{zipped.stdout}")
        # Every verb reads gzip as the plain file, plain gzip and the JDK's chunked layout (a member
        # per block) alike: decompressed into a temporary file of no name in $TMPDIR, gone after.
        (folder / "chunked.hprof.gz").write_bytes(b"".join(gzip.compress(good[at:at + 64])
                                                          for at in range(0, len(good), 64)))
        tmp = folder / "tmp"
        tmp.mkdir()

        def same_as_plain(verb, *extra, after=()):
            def run(file_name):
                proc = fasthprof(verb, *extra, folder / file_name, *after, env={"TMPDIR": str(tmp)})
                names = re.compile(re.escape(str(folder)) + r"/(good|chunked)\.hprof(\.gz)?")
                # dominators' memory line states the process's peak RSS, which decompression raises.
                text = "\n".join(line for line in names.sub("FILE", proc.stdout).splitlines()
                                 if not line.startswith(("gzip: ", "memory: ")))
                return proc.returncode, text, names.sub("FILE", proc.stderr)
            plain = run("good.hprof")
            for file_name in ("good.hprof.gz", "chunked.hprof.gz"):
                check(run(file_name) == plain, f"{verb} {' '.join(map(str, extra))} {file_name} as the plain file: {plain}")
            return plain

        for verb in [verb for verb in listed if verb not in ("listen", "flame", "pprof", "attach", "path", "report")]:
            extra = (folder / "good.hprof",) if verb == "diff" else ()
            code, _, _ = same_as_plain(verb, *extra)
            check(code == (2 if verb == "collapsed" else 0), f"{verb} of the hand-made file: exit {code}")
        # The file has no roots: no path reaches a demo.Thing (exit 1, said on stderr).
        code, text, error = same_as_plain("path", "--top", "2", after=("demo.Thing",))
        check(code == 1 and text.count("none, no GC root reaches it") == 2 and "no GC root reaches 2 of the 2" in error,
              f"path of the hand-made file: exit {code}: {text}{error}")
        made = fasthprof("report", "-o", folder / "report", folder / "good.hprof")
        check(made.returncode == 0 and "No suspect" in (folder / "report" / "index.html").read_text(),
              f"report of the hand-made file (no roots, no suspect): exit {made.returncode} {made.stderr}")
        check(list(tmp.iterdir()) == [], f"nothing left in $TMPDIR: {list(tmp.iterdir())}")
        one_message("TMPDIR missing", fasthprof("summary", folder / "good.hprof.gz", env={"TMPDIR": str(folder / "none")}),
                    r"cannot make a temporary file in .*/none to decompress into: No such file")

        out = folder / "out.txt"
        written = fasthprof("summary", "-o", out, folder / "good.hprof")
        check(written.returncode == 0 and written.stdout == "" and out.read_text() == summary.stdout,
              f"-o writes what stdout would get: {written}")
        unwritable = fasthprof("summary", "-o", folder / "no" / "such" / "dir.txt", folder / "good.hprof")
        one_message("-o into a missing folder", unwritable, r"cannot create .*No such file")

        # verify: one implementation under two names.
        for strict in ([], ["--strict"]):
            mine = fasthprof("verify", *strict, "--classes", folder / "good.hprof")
            alias = subprocess.run([VERIFY, *strict, "--classes", str(folder / "good.hprof")], capture_output=True,
                                   text=True, timeout=60)
            check(mine.returncode == alias.returncode and mine.stdout == alias.stdout,
                  f"verify {strict} and hprof-verify agree:\n{mine.stdout}{mine.stderr}\n{alias.stdout}{alias.stderr}")
        check(fasthprof("verify", folder / "good.hprof").returncode == 0, "verify passes the hand-made file")

        bad = {
            "truncated.hprof": (good[:-5], r"runs past the end of the file"),
            "header_only.hprof": (good[:20], r"truncated header"),
            "unknown_record.hprof": (good + record(0x55, b"xx"), r"unknown record tag 0x55"),
            "unknown_sub_record.hprof": (header + name + load + record(0x0C, b"\x77" + class_dump), r"sub-record tag 0x77"),
            "short_trace.hprof": (header + record(0x05, u4(2) + u4(0) + u4(9)), r"STACK TRACE record names 9 frames"),
            "garbage.bin": (b"\x00\x01garbage" * 10, r"not an HPROF binary file"),
            "empty.hprof": (b"", r"empty file"),
            "cut.hprof.gz": (gzip.compress(good)[:-12], r"gzip: .*truncated"),
        }
        for file_name, (content, expect) in bad.items():
            (folder / file_name).write_bytes(content)
            one_message(f"summary {file_name}", fasthprof("summary", folder / file_name), expect)
            checked = fasthprof("verify", folder / file_name)
            check(checked.returncode == 1 and len(checked.stderr.splitlines()) == 1,
                  f"verify {file_name}: exit 1 (the verdict), one message: {checked.returncode}\n{checked.stderr}")
        # A text file: summary reads it (tests/integration/text_verbs.py), verify and text refuse it.
        (folder / "text.txt").write_bytes(b"JAVA PROFILE 1.0.1, created Wed Jan 14 15:33:27 2015\n\nhello\n")
        read = fasthprof("summary", folder / "text.txt")
        check(read.returncode == 0 and "text profile (format=a)" in read.stdout, f"summary of a text file: {read}")
        refused = fasthprof("verify", folder / "text.txt")
        check(refused.returncode == 1 and "a text profile" in refused.stderr, f"verify refuses a text file: {refused}")
        one_message("missing file", fasthprof("summary", folder / "missing.hprof"), r"cannot read .*No such file")
        missing = fasthprof("verify", folder / "missing.hprof")
        check(missing.returncode == 2, f"verify of a missing file: exit 2, got {missing.returncode}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def quiescent_histograms(jdk, home):
    """Histogram.java held still (-Xshare:off): a warm-up histogram and dump, then GC.class_histogram,
    GC.heap_dump plain and -gz=1, the agent's own dump on kill -QUIT, GC.class_histogram again;
    every dump's histogram equals jcmd's class by class (java.lang.Class counted from CLASS DUMPs),
    the agent's the second one's."""
    label = f"{jdk} histogram"
    # The JVM's live dump through attach: a dump by fork (auto's first choice) holds the garbage of
    # the moment too, which a live histogram leaves out (docs/heap-dumps.md "Dumps by fork").
    options = "heap=dump,format=b,file=agent.hprof,doe=n,verbose=y,dumper=vm"
    scale = 3000
    with java_process(home, agentpath(options), main="Histogram", args=[scale], stdin=subprocess.PIPE,
                      jvm_args=["-Xshare:off", "-Xcheck:jni"]) as (proc, folder):
        if not check(wait_for(lambda: "ready" in read_text(folder / "stdout.txt"), 60), f"{label}: program ready"):
            return
        jcmd = java_bin(home, "jcmd")

        def run_jcmd(*args):
            done = subprocess.run([jcmd, str(proc.pid), *args], capture_output=True, text=True, timeout=300)
            check(done.returncode == 0, f"{label}: jcmd {' '.join(args)}: {done.stdout}{done.stderr}")
            return done.stdout

        # The first command loads the attach listener's classes; the JDK dumper's own, and the
        # histogram's, are loaded by one of each before the measured ones.
        run_jcmd("GC.class_histogram")
        run_jcmd("GC.heap_dump", str(folder / "warmup.hprof"))
        expected = jcmd_histogram(run_jcmd("GC.class_histogram"))
        run_jcmd("GC.heap_dump", str(folder / "jdk.hprof"))
        run_jcmd("GC.heap_dump", "-gz=1", str(folder / "jdk.hprof.gz"))
        os.kill(proc.pid, signal.SIGQUIT)
        check(wait_for(lambda: " done.\n" in read_text(folder / "stderr.txt"), 120),
              f"{label}: the agent's dump:\n{read_text(folder / 'stderr.txt')}")
        after = jcmd_histogram(run_jcmd("GC.class_histogram"))
        proc.stdin.write("\n")
        proc.stdin.close()
        proc.wait(timeout=60)

        own = {name: expected.get(name, 0) for name in OWN}
        want = {"Histogram$Node": 3 * scale, "Histogram$Point": scale, "Histogram$Shape": scale,
                "Histogram$Square": scale, "Histogram$Point[]": scale // 10, "Histogram$Point[][]": 1,
                "Histogram$Square[]": 7}
        check(own == want, f"{label}: jcmd sees the program's heap: {own}")
        for file_name in ("jdk.hprof", "jdk.hprof.gz", "agent.hprof"):
            summary = fasthprof("summary", "--top", "0", folder / file_name)
            if not check(summary.returncode == 0, f"{label}: summary {file_name}: {summary.stderr}"):
                continue
            rows = histogram(summary.stdout)
            ids = int(re.search(r"identifier size (\d+)", summary.stdout).group(1))
            counts = {name: value[0] for name, value in rows.items()}
            # Every class, java.lang.Class (from the CLASS DUMPs) included: with -Xshare:off the heap
            # holds no archived mirrors of classes that were never loaded (see docs/command.md).
            # The agent's dump is compared with the histogram taken after it: on JDK 25 the kill -QUIT
            # leaves an interned String behind (its table node, bytes and a lock object).
            reference = after if file_name == "agent.hprof" else expected
            check(counts == reference, f"{label}: {file_name}: every class as jcmd GC.class_histogram counts it "
                  f"({len(counts)} classes in the dump, {len(reference)} in jcmd's): {differences(reference, counts)}")
            # Shallow bytes by the rule of summary --help: Node = 2 IDs + 2 references + an int, to 8.
            check(rows.get("Histogram$Node", (0, 0))[1] == (4 * ids + 4 + 7) // 8 * 8 * 3 * scale,
                  f"{label}: {file_name}: Histogram$Node bytes {rows.get('Histogram$Node')}")
            check(rows.get("Histogram$Square[]", (0, 0))[1] == sum((2 * ids + 4 + ids * i * 5 + 7) // 8 * 8 for i in range(7)),
                  f"{label}: {file_name}: Histogram$Square[] bytes {rows.get('Histogram$Square[]')}")
            print(f"{label}: {file_name}: {len(counts)} classes, {sum(counts.values())} objects, "
                  f"java.lang.Class {counts.get('java.lang.Class')}", flush=True)


def differences(a, b):
    """{name: (count in a, count in b)} where they differ, at most 30."""
    names = sorted(name for name in set(a) | set(b) if a.get(name, 0) != b.get(name, 0))
    return {name: (a.get(name, 0), b.get(name, 0)) for name in names[:30]}


PRIMITIVE_ARRAYS = {4: "boolean[]", 5: "char[]", 6: "float[]", 7: "double[]", 8: "byte[]", 9: "short[]", 10: "int[]",
                    11: "long[]"}


def java_name(name):
    """A LOAD CLASS name as the command prints it (dotted, [] for arrays)."""
    dims = len(name) - len(name.lstrip("["))
    if dims:
        element = name[dims:]
        element = PRIMITIVE_ARRAYS.get({"Z": 4, "C": 5, "F": 6, "D": 7, "B": 8, "S": 9, "I": 10, "J": 11}.get(element),
                                       "")[:-2] or (element[1:-1] if element.startswith("L") else element)
        name = element + "[]" * dims
    return name.replace("/", ".")


def expected_folds(path, sites_metric=None):
    """{folded stack: count} computed from the records: every CPU SAMPLES section added up, or the
    last ALLOC SITES section's rows by the given column (3 live bytes, 6 objects allocated)."""
    version, id_size, _, records = hprof_records.read(path) if not str(path).endswith(".gz") else \
        hprof_records._parse(gzip.decompress(pathlib.Path(path).read_bytes()),
                             gzip.decompress(pathlib.Path(path).read_bytes()).index(b"\0"))
    classes = {serial: java_name(name) for serial, name in hprof_records.load_classes(records, id_size).items()}
    frames = hprof_records.stack_frames(records, id_size)
    traces = hprof_records.stack_traces(records, id_size)

    def stack(serial):
        frame_ids = traces[serial][1]
        if not frame_ids:
            return "<empty trace>"
        return ";".join(f"{classes[frames[f][1]]}.{frames[f][0]}".replace(";", ":") for f in reversed(frame_ids))

    folds = {}
    if sites_metric is None:
        for _, _, rows in hprof_records.cpu_samples(records):
            for count, serial in rows:
                folds[stack(serial)] = folds.get(stack(serial), 0) + count
    else:
        for row in hprof_records.alloc_sites(records)[-1][1]:
            name = PRIMITIVE_ARRAYS.get(row[0]) or classes[row[1]]
            key = stack(row[2]) + ";" + name
            folds[key] = folds.get(key, 0) + row[sites_metric]
    return {key: count for key, count in folds.items() if count}


def parse_folds(text):
    folds = {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        folds[stack] = int(count)
    return folds


def collapsed_run(jdk, home):
    label = f"{jdk} collapsed"
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-cmd-"))
    try:
        for name, options in (("cpu.hprof", "cpu=samples,format=b"), ("cpu.hprof.gz", "cpu=samples,format=b,gz=y")):
            run = run_java(home, agentpath(f"{options},file={folder / name}"), main="CpuBusy", args=["2", "1500"])
            if not check(run.code == 0, f"{label}: CpuBusy with {options}", run):
                continue
            folded = fasthprof("collapsed", folder / name)
            got = parse_folds(folded.stdout)
            check(folded.returncode == 0 and got == expected_folds(folder / name),
                  f"{label}: {name}: the folded stacks of the CPU SAMPLES records:\n{folded.stdout[:3000]}{folded.stderr}")
            hottest = max(got, key=got.get) if got else ""
            check(hottest.endswith(";CpuBusy.spin") and re.match(r"java\.lang\.Thread\.run(With)?;", hottest) is not None,
                  f"{label}: {name}: the hottest stack is Thread.run (JDK 25: runWith) ... CpuBusy.spin: {hottest} {got.get(hottest)}")
            check(list(got) == sorted(got), f"{label}: {name}: lines sorted by stack")
        sites = folder / "sites.hprof"
        run = run_java(home, agentpath(f"heap=sites,format=b,file={sites}"), main="AllocSites")
        if check(run.code == 0, f"{label}: AllocSites", run):
            for value, column in (("live-bytes", 3), ("alloc-objects", 6)):
                extra = [] if value == "live-bytes" else ["--value", value]
                folded = fasthprof("collapsed", *extra, sites)
                got = parse_folds(folded.stdout)
                check(folded.returncode == 0 and got == expected_folds(sites, column),
                      f"{label}: sites by {value}: the folded stacks of the ALLOC SITES rows:\n{folded.stdout[:3000]}")
                items = sum(count for stack, count in got.items() if stack.endswith(";AllocSites.makeItems;AllocSites$Item"))
                check(items > 0, f"{label}: sites by {value}: AllocSites.makeItems allocates AllocSites$Item ({items})")
                # The default cutoff (by live bytes) leaves out the dropped String[] and the JDK's
                # short-lived sites: the verb says how much of the allocated bytes it shows.
                share = re.search(r"^fasthprof collapsed: SITES 1 lists [\d.]+ MB of the [\d.]+ MB allocated "
                                  r"\(([\d.]+) %\): .* run it with cutoff=0 to list every site$", folded.stderr, re.M)
                check(share is not None and 0 < float(share.group(1)) < 100,
                      f"{label}: sites by {value}: the cut is said on stderr: {folded.stderr!r}")
        whole = folder / "whole.hprof"
        run = run_java(home, agentpath(f"heap=sites,format=b,cutoff=0,file={whole}"), main="AllocSites")
        if check(run.code == 0, f"{label}: AllocSites with cutoff=0", run):
            folded = fasthprof("collapsed", whole)
            check(folded.returncode == 0 and "cutoff" not in folded.stderr,
                  f"{label}: cutoff=0: every site listed, nothing to say: {folded.stderr!r}")
            page = fasthprof("flame", sites, "-o", folder / "sites.html")
            check(page.returncode == 0 and 'id="coverage"' in (folder / "sites.html").read_text() and
                  "cutoff=0" in page.stderr, f"{label}: flame shows the cut on the page and says it: {page.stderr!r}")
        one_message(f"{label}: --cpu of a file with none", fasthprof("collapsed", "--cpu", sites), r"holds no CPU sections")
    finally:
        cleanup(folder)


def diff_run(jdk, home):
    """Heap dumps at exit of Histogram at two scales, and SITES of two runs of AllocSites."""
    label = f"{jdk} diff"
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-cmd-"))
    try:
        for scale in (1000, 2000):
            # Live dumps (dumper=vm): the byte totals compared below leave garbage out.
            run = run_java(home, agentpath(f"heap=dump,format=b,dumper=vm,file={folder / f'h{scale}.hprof'}"),
                           main="Histogram",
                           args=[str(scale), "now"])
            check(run.code == 0, f"{label}: Histogram {scale}", run)
        small, large = folder / "h1000.hprof", folder / "h2000.hprof"
        table = fasthprof("diff", "--top", "0", small, large)
        rows = {}
        for line in table.stdout.splitlines():
            found = re.match(r"\s*(\d+)\s+(\d+)\s+([+-]\d+)\s+\S+\s+(\d+)\s+(\d+)\s+([+-]\d+)\s+\S+  (.+)$", line)
            if found:
                rows[found.group(7)] = tuple(int(found.group(i)) for i in (1, 2, 3, 4, 5, 6))
        node = rows.get("Histogram$Node")
        check(table.returncode == 0 and node is not None and node[3:] == (3000, 6000, 3000),
              f"{label}: diff --heap: Histogram$Node objects 3000 -> 6000: {node}\n{table.stdout[:3000]}{table.stderr}")
        changes = [abs(row[2]) for name, row in rows.items() if name != "(total)"]
        check(changes == sorted(changes, reverse=True), f"{label}: rows sorted by the absolute change")
        cases = [
            (["Histogram$Node:objects>+50%"], small, large, 1),    # +100%
            (["Histogram$Node:objects>+150%"], small, large, 0),
            (["Histogram$Node:objects>=3000"], small, large, 1),
            (["Histogram$Node:objects>3000"], small, large, 0),
            (["bytes>+5%"], small, large, 1),
            (["bytes>+5%"], large, small, 0),
            (["bytes<-5%"], large, small, 1),
            (["Histogram$Point[]:bytes<=0", "objects>1000000"], small, large, 0),
            (["Histogram$Point[]:bytes<=0", "objects>1000"], small, large, 1),
            (["No.Such.Class:objects>0"], small, large, 0),
            (["bytes>0"], small, small, 0),
        ]
        for conditions, a, b, want in cases:
            args = [arg for condition in conditions for arg in ("--fail-if", condition)]
            done = fasthprof("diff", *args, a, b)
            met = [line for line in done.stderr.splitlines() if "met:" in line]
            check(done.returncode == want and (want == 0) == (not met),
                  f"{label}: diff {' '.join(conditions)} {a.name} {b.name}: exit {want}, got {done.returncode}\n"
                  f"{done.stderr}")
        one_message(f"{label}: a bad --fail-if", fasthprof("diff", "--fail-if", "bytes>lots", small, large),
                    r"not a number")
        one_message(f"{label}: a metric of another kind", fasthprof("diff", "--fail-if", "alloc-bytes>0", small, large),
                    r"no metric \"alloc-bytes\" for heap")

        for run_name in ("s1.hprof", "s2.hprof"):
            run = run_java(home, agentpath(f"heap=sites,format=b,file={folder / run_name}"), main="AllocSites")
            check(run.code == 0, f"{label}: AllocSites", run)
        same = fasthprof("diff", "--sites", "--fail-if", "AllocSites$Item:alloc-objects>0", "--fail-if",
                         "AllocSites$Item:live-bytes<0", folder / "s1.hprof", folder / "s2.hprof")
        check(same.returncode == 0 and re.search(r"\+0\s+\+0.00%.*AllocSites\$Item$", same.stdout, re.M),
              f"{label}: two runs of AllocSites allocate the same Items: exit 0\n{same.stdout}{same.stderr}")
        grown = fasthprof("diff", "--fail-if", "AllocSites$Item:alloc-objects>=0", folder / "s1.hprof",
                          folder / "s2.hprof")
        check(grown.returncode == 1 and "AllocSites$Item:alloc-objects>=0' met: +0" in grown.stderr,
              f"{label}: --fail-if on sites met: exit 1\n{grown.stderr}")

        # Lambdas: their hidden classes have another address in each run; diff names them without it.
        for run_name in ("l1.hprof", "l2.hprof"):
            run = run_java(home, agentpath(f"heap=sites,format=b,cutoff=0,file={folder / run_name}"), main="AllocSites",
                           args=["threads"], timeout=180)
            check(run.code == 0, f"{label}: AllocSites threads", run)
        for extra in ([], ["--stacks"]):
            lambdas = fasthprof("diff", "--sites", "--top", "0", *extra, folder / "l1.hprof", folder / "l2.hprof")
            names = [line.split()[-1] for line in lambdas.stdout.splitlines()[4:]]
            check(lambdas.returncode == 0 and any("AllocSites$$Lambda" in n for n in names) and
                  not any(re.search(r"[./+]0x[0-9a-f]", n) for n in names) and
                  not re.search(r"\bnew\b.*Lambda", lambdas.stdout),
                  f"{label}: diff {' '.join(extra)}: lambdas matched without their addresses:\n{lambdas.stdout[-3000:]}")

        # CPU on shares: two runs of one busy program take different numbers of samples, the same
        # shares. spin() is most of each (two threads spinning for 1.5 s).
        for run_name, millis in (("c1.hprof", "1500"), ("c2.hprof", "3000")):
            run = run_java(home, agentpath(f"cpu=samples,format=b,file={folder / run_name}"), main="CpuBusy",
                           args=["2", millis])
            check(run.code == 0, f"{label}: CpuBusy", run)
        cpu = fasthprof("diff", "--cpu", "--fail-if", "CpuBusy.spin:share>15", "--fail-if", "CpuBusy.spin:share<-15",
                        folder / "c1.hprof", folder / "c2.hprof")
        spin = re.search(r"^\s*([\d.]+)%\s+([\d.]+)%\s+([-+][\d.]+)pt\s+\S+\s+(\d+)\s+(\d+)\s.*CpuBusy\.spin$",
                         cpu.stdout, re.M)
        check(cpu.returncode == 0 and cpu.stdout.splitlines()[2].startswith("cpu by share") and spin is not None and
              float(spin.group(1)) > 50 and int(spin.group(5)) > int(spin.group(4)) and
              re.search(r"100\.00%\s+100\.00%\s+\+0\.00pt.*\(total\)$", cpu.stdout, re.M),
              f"{label}: diff --cpu compares shares (twice the samples, the same share): exit 0\n{cpu.stdout}{cpu.stderr}")
        moved = fasthprof("diff", "--cpu", "--fail-if", "CpuBusy.spin:share>-100", folder / "c1.hprof",
                          folder / "c2.hprof")
        check(moved.returncode == 1 and re.search(r"CpuBusy.spin:share>-100' met: [-+][\d.]+ points", moved.stderr),
              f"{label}: --fail-if on a share met, in points: exit 1\n{moved.stderr}")
    finally:
        cleanup(folder)


# Every line kind of format=a (docs/compatibility.md §2), for both outputs compared by text_run.
TEXT_LINES = [r"THREAD START \(obj=[0-9a-f]+, id = \d+, name=\".*\", group=\".*\"\)",
              r"THREAD END \(id = \d+\)",
              r"TRACE \d+:( \(thread=\d+\))?", r"\t<empty>", r"\t\S+\.[^.(]+\([^:]*:(\d+|Unknown line|Native method)\)",
              r"HEAP DUMP BEGIN \(\d+ objects, \d+ bytes\) \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}", r"HEAP DUMP END",
              r"ROOT [0-9a-f]+ \(kind=<(thread>, id=\d+, trace=\d+|thread block>, thread=\d+|JNI global ref>, id=[0-9a-f]+, "
              r"trace=\d+|system class>, name=\S+|busy monitor>|Java stack>, thread=\d+, frame=-?\d+|JNI local ref>, "
              r"thread=\d+, frame=-?\d+|unknown>|native stack>, thread=\d+)\)",
              r"OBJ [0-9a-f]+ \(sz=\d+, trace=\d+, class=\S+@[0-9a-f]+\)", r"\t\S+\t\t?[0-9a-f]+",
              r"ARR [0-9a-f]+ \(sz=\d+, trace=\d+, nelems=\d+, elem type=\S+?(@[0-9a-f]+)?\)", r"\t\[\d+\]\t\t[0-9a-f]+",
              r"CLS [0-9a-f]+ \(name=\S+, trace=\d+\)", r"\t(super|loader|signers|domain)\t\t[0-9a-f]+",
              r"\tstatic \S+\t[0-9a-f]+", r"\tconstant pool entry \d+\t[0-9a-f]+",
              r"SITES BEGIN \(ordered by (live|allocated) bytes\) .*", r"          percent          live          alloc'ed  stack class",
              r" rank   self  accum     bytes objs     bytes  objs trace name",
              r" *\d+ +\d+\.\d\d% +\d+\.\d\d% +\d+ +\d+ +\d+ +\d+ +\d+ \S+", r"SITES END",
              r"CPU (SAMPLES|TIME \(ms\)) BEGIN \(total = \d+\) .*", r"rank   self  accum   count trace method",
              r" *\d+ +\d+\.\d\d% +\d+\.\d\d% +\d+ +\d+ (\S+|<empty trace>)", r"CPU (SAMPLES|TIME \(ms\)) END"]
TEXT_LINE = re.compile("|".join(f"(?:{pattern})" for pattern in TEXT_LINES))


def text_sections(text):
    """(header lines up to ----, body lines after it)."""
    head, _, body = text.partition("\n--------\n\n")
    return head.splitlines(), body.splitlines()


def text_facts(lines):
    """What two runs of one deterministic program share: OBJ/ARR per class name, the CLS names, the
    field lines of the program's objects, and the program's SITES rows with their stacks."""
    traces, current = {}, None
    objects, classes, fields, sites = {}, {}, {}, []
    owner = None
    for line in lines:
        found = re.match(r"TRACE (\d+):", line)
        if found:
            current = traces.setdefault(int(found.group(1)), [])
            continue
        if line.startswith("\t") and current is not None and "(" in line:
            current.append(line.strip())
            continue
        current = None
        found = re.match(r"(OBJ|ARR) \S+ \(.*(?:class|elem type)=([^@)]+)", line)
        if found:
            objects[found.group(2)] = objects.get(found.group(2), 0) + 1
            owner = found.group(2)
            continue
        found = re.match(r"CLS \S+ \(name=(\S+),", line)
        if found:
            # Hidden classes carry their address in their name: counted by the name without it.
            hidden = re.sub(r"[.+]0x[0-9a-f]+$", "", found.group(1))
            classes[hidden] = classes.get(hidden, 0) + 1
            owner = None
            continue
        found = re.match(r"\t(\w+)\t", line)
        if found and owner and owner.startswith("Histogram$"):
            key = (owner, found.group(1))
            fields[key] = fields.get(key, 0) + 1
            continue
        found = re.match(r" *\d+ +[\d.]+% +[\d.]+% +(\d+) +(\d+) +(\d+) +(\d+) +(\d+) (Histogram\S*)$", line)
        if found:
            sites.append((found.group(6), *map(int, found.groups()[:4]), tuple(traces.get(int(found.group(5)), []))))
    return objects, classes, fields, sorted(sites)


def text_run(jdk, home):
    """Histogram run twice, format=a and format=b; `fasthprof text` of the binary file against the
    text file: every line in a format=a layout, the same header, per class the same OBJ/ARR lines,
    the same classes, the program's objects' reference fields and its SITES rows with their stacks."""
    label = f"{jdk} text"
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-cmd-"))
    try:
        for name, form in (("run.txt", "a"), ("run.hprof", "b")):
            run = run_java(home, agentpath(f"heap=all,format={form},dumper=jvmti,file={folder / name}"),
                           main="Histogram", args=["300", "now"])
            check(run.code == 0, f"{label}: Histogram with format={form}", run)
        converted = fasthprof("text", folder / "run.hprof")
        if not check(converted.returncode == 0, f"{label}: text: {converted.stderr}"):
            return
        original = (folder / "run.txt").read_text()
        head, body = text_sections(converted.stdout)
        want_head, want_body = text_sections(original)
        check(re.fullmatch(r"JAVA PROFILE 1\.0\.1, created \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}", head[0])
              and head[1:] == want_head[1:], f"{label}: the header of format=a:\n{head[:3]}")
        for what, lines in (("text", body), ("format=a", want_body)):
            bad = [line for line in lines if not TEXT_LINE.fullmatch(line)]
            check(not bad, f"{label}: {what}: every line in a format=a layout; not: {bad[:10]}")
        for section in ("HEAP DUMP BEGIN", "HEAP DUMP END", "SITES BEGIN", "SITES END"):
            check(sum(line.startswith(section) for line in body) == sum(line.startswith(section) for line in want_body) == 1,
                  f"{label}: one {section} in each")
        got, want = text_facts(body), text_facts(want_body)
        own = lambda counts: {k: v for k, v in counts.items() if k.startswith("Histogram")}
        check(own(got[0]) == own(want[0]) and own(got[0]).get("Histogram$Node") == 900,
              f"{label}: OBJ/ARR lines of the program's classes: {own(got[0])} / {own(want[0])}")
        check(got[1] == want[1], f"{label}: the same CLS names: {differences(got[1], want[1])}")
        check(got[2] == want[2] and got[2].get(("Histogram$Node", "next")) == 899,
              f"{label}: the program's reference fields: {got[2]} / {want[2]}")
        check(got[3] == want[3] and len(got[3]) >= 4, f"{label}: the program's SITES rows and stacks:\n{got[3]}\n{want[3]}")
        node = re.search(r"^OBJ \S+ \(sz=(\d+), trace=\d+, class=Histogram\$Node@", converted.stdout, re.M)
        check(node is not None and node.group(1) == "40", f"{label}: sz= of a Node is its shallow size, 40")
        one_message(f"{label}: text of a text file", fasthprof("text", folder / "run.txt"), r"is a text profile")
        # CPU SAMPLES, TRACE and THREAD lines (a heap=all run has none of the first): a cpu=samples
        # run in each format. Samples differ from run to run, so the layout and the section's
        # arithmetic are compared, not the rows.
        for name, form in (("cpu.txt", "a"), ("cpu.hprof", "b")):
            run = run_java(home, agentpath(f"cpu=samples,interval=1,format={form},file={folder / name}"),
                           main="Histogram", args=["3000", "now"])
            check(run.code == 0, f"{label}: Histogram with cpu=samples,format={form}", run)
        converted = fasthprof("text", folder / "cpu.hprof")
        _, body = text_sections(converted.stdout)
        _, want_body = text_sections((folder / "cpu.txt").read_text())
        for what, lines in (("text", body), ("format=a", want_body)):
            bad = [line for line in lines if not TEXT_LINE.fullmatch(line)]
            check(not bad, f"{label}: cpu=samples {what}: every line in a format=a layout; not: {bad[:10]}")
            for kind in ("CPU SAMPLES BEGIN", "CPU SAMPLES END", "THREAD START", "TRACE "):
                check(any(line.startswith(kind) for line in lines), f"{label}: cpu=samples {what} has {kind} lines")
        total = re.search(r"^CPU SAMPLES BEGIN \(total = (\d+)\)", converted.stdout, re.M)
        rows = re.findall(r"^ *\d+ +\d+\.\d\d% +\d+\.\d\d% +(\d+) +\d+ ", converted.stdout.split("CPU SAMPLES BEGIN")[-1], re.M)
        check(total is not None and int(total.group(1)) > 0 and sum(map(int, rows)) == int(total.group(1)),
              f"{label}: text's CPU SAMPLES rows add up to its total: {total and total.group(1)} / {rows[:10]}")
    finally:
        cleanup(folder)


def flame_run(jdk, home):
    """The flame graph of CpuBusy opened in headless chromium: no console message, the widest leaf
    frame is CpuBusy.spin, a click zooms, a search highlights, Reset restores; the SITES icicle
    puts its callers at the top and AllocSites$Item under AllocSites.makeItems."""
    label = f"{jdk} flame"
    driver = browser()
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-cmd-"))
    try:
        run = run_java(home, agentpath(f"cpu=samples,format=b,file={folder / 'cpu.hprof'}"), main="CpuBusy",
                       args=["2", "1500"])
        run_sites = run_java(home, agentpath(f"heap=sites,format=b,file={folder / 'sites.hprof'}"), main="AllocSites")
        if not (check(run.code == 0, f"{label}: CpuBusy", run) and check(run_sites.code == 0, f"{label}: AllocSites",
                                                                           run_sites)):
            return
        made = fasthprof("flame", "-o", folder / "cpu.html", folder / "cpu.hprof")
        check(made.returncode == 0 and made.stdout == "", f"{label}: flame -o cpu.html: {made.stderr}")
        page = (folder / "cpu.html").read_text()
        title = re.search(r"<title>(.*)</title>", page)
        check(title is not None and title.group(1).endswith(": CPU SAMPLES, 1 section added up, in samples") and
              title.group(1).count("CPU SAMPLES") == 1, f"{label}: the page's title names the section once: {title}")
        check(not re.search(r"(src|href)=|https?://|fetch\(|XMLHttpRequest|import\(", page),
              f"{label}: the page fetches nothing")
        driver.get((folder / "cpu.html").as_uri())
        frames = lambda: driver.find_elements(By.CSS_SELECTOR, "#chart .frame")
        width = lambda element: element.rect["width"]
        chart_width = driver.find_element(By.ID, "chart").rect["width"]
        leaves = [f for f in frames() if f.get_attribute("data-leaf")]
        widest = max(leaves, key=width) if leaves else None
        check(widest is not None and widest.get_attribute("data-name") == "CpuBusy.spin",
              f"{label}: the widest leaf frame is CpuBusy.spin: {widest and widest.get_attribute('data-name')}")
        collapsed = parse_folds(fasthprof("collapsed", folder / "cpu.hprof").stdout)
        spin = sum(count for stack, count in collapsed.items() if stack.endswith(";CpuBusy.spin"))
        total = sum(collapsed.values())
        spin_width = sum(width(f) for f in frames() if f.get_attribute("data-name") == "CpuBusy.spin")
        check(abs(spin_width / chart_width - spin / total) < 0.02,
              f"{label}: CpuBusy.spin is {spin}/{total} of the samples and {spin_width:.0f}/{chart_width:.0f} px wide")
        root = [f for f in frames() if f.get_attribute("data-depth") == "0"]
        check(len(root) == 1 and root[0].rect["y"] == max(f.rect["y"] for f in frames()),
              f"{label}: a flame graph: the root at the bottom")
        drawn = sorted(f.get_attribute("data-name") for f in frames())
        # Hover: the status line names the frame, its count and share.
        ActionChains(driver).move_to_element(widest).perform()
        status = driver.find_element(By.ID, "status").text
        check(status.startswith("CpuBusy.spin ") and re.search(r"\d+ \(\d+\.\d\d%\)", status),
              f"{label}: hovering shows name, count and percentage: {status!r}")
        # Click: the lambda that calls spin fills the width.
        caller = [f for f in frames() if f.get_attribute("data-name") == "CpuBusy.lambda$main$0"]
        check(bool(caller), f"{label}: a CpuBusy.lambda$main$0 frame")
        if caller:
            max(caller, key=width).click()
            after = [f for f in frames() if f.get_attribute("data-name") == "CpuBusy.lambda$main$0"]
            # The chart's width less its two border pixels.
            check(len(after) == 1 and abs(width(after[0]) - (chart_width - 2)) < 1,
                  f"{label}: a click zooms: the clicked frame is as wide as the chart: "
                  f"{[width(f) for f in after]} of {chart_width}")
            under = {f.get_attribute("data-name") for f in frames() if int(f.get_attribute("data-depth")) > 2}
            check(len(frames()) < len(drawn) and "CpuBusy.spin" in under,
                  f"{label}: frames outside the zoomed one are gone ({len(frames())} of {len(drawn)} drawn)")
        search = driver.find_element(By.ID, "search")
        search.send_keys("spin")
        marked = [f.get_attribute("data-name") for f in frames() if "match" in f.get_attribute("class")]
        check(marked and all("spin" in name for name in marked), f"{label}: the search highlights: {marked[:5]}")
        check(driver.find_element(By.ID, "matched").text.startswith("matched "),
              f"{label}: the matched share is shown: {driver.find_element(By.ID, 'matched').text!r}")
        driver.find_element(By.ID, "reset").click()
        check(sorted(f.get_attribute("data-name") for f in frames()) == drawn
              and not [f for f in frames() if "match" in f.get_attribute("class")]
              and driver.find_element(By.ID, "search").get_attribute("value") == "",
              f"{label}: Reset zooms out and clears the search")
        logs = driver.get_log("browser")
        check(not logs, f"{label}: no console message: {logs[:5]}")

        made = fasthprof("flame", "--value", "alloc-bytes", "-o", folder / "sites.html", folder / "sites.hprof")
        check(made.returncode == 0, f"{label}: flame of SITES: {made.stderr}")
        driver.get((folder / "sites.html").as_uri())
        root = [f for f in frames() if f.get_attribute("data-depth") == "0"]
        check(len(root) == 1 and root[0].rect["y"] == min(f.rect["y"] for f in frames()),
              f"{label}: an icicle: the root at the top")
        items = [f for f in frames() if f.get_attribute("data-name") == "AllocSites$Item" and f.get_attribute("data-leaf")]
        makers = [f for f in frames() if f.get_attribute("data-name") == "AllocSites.makeItems"]
        check(items and makers and any(abs(i.rect["y"] - m.rect["y"] - m.rect["height"]) < 1 for i in items for m in makers),
              f"{label}: AllocSites$Item drawn right under AllocSites.makeItems")
        logs = driver.get_log("browser")
        check(not logs, f"{label}: no console message on the icicle: {logs[:5]}")
    finally:
        driver.quit()
        cleanup(folder)


def pprof_top(path, *extra):
    """{function: flat} and the total of `go tool pprof -top` on a profile."""
    env = dict(os.environ, HOME=str(pathlib.Path(path).parent))  # go keeps a cache under $HOME
    done = subprocess.run(["go", "tool", "pprof", "-top", "-nodefraction=0", "-nodecount=100000", *extra, str(path)],
                          capture_output=True, text=True, timeout=300, env=env)
    rows = []
    for line in done.stdout.splitlines():
        found = re.match(r"\s*([\d.]+)(\w*)\s+[\d.]+%\s+[\d.]+%\s+[\d.]+\w*\s+[\d.]+%\s+(.+)$", line)
        if found:
            rows.append((found.group(3), found.group(1) + found.group(2)))
    total = re.search(r"of ([\d.]+\w*) total", done.stdout)
    return rows, total.group(1) if total else None, done.stdout + done.stderr


def pprof_seconds(millis):
    """A time as `go tool pprof -top` prints a row of a profile of seconds: 3.30s, but 5s (it
    drops a ".00", which a count of samples that is a multiple of 50 at 20 ms gives)."""
    return f"{millis / 1000:.2f}".removesuffix(".00") + "s"


def pprof_run(jdk, home):
    """`go tool pprof -top` (Debian's golang-go) on the pprof output of CpuBusy lists CpuBusy.spin
    first with the count the CPU SAMPLES records give it, and the records' total; on AllocSites'
    sites, AllocSites$Item with the objects its sites allocated."""
    label = f"{jdk} pprof"
    if not re.search(r"^  pprof ", fasthprof("help").stdout, re.M):
        skip("the pprof verb is not built (protobuf-compiler, libprotobuf-dev, golang-github-google-pprof-dev)")
    if shutil.which("go") is None:
        skip("go is not installed (golang-go, tools/install-deps.sh --tests)")
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-cmd-"))
    try:
        cpu = folder / "cpu.hprof"
        run = run_java(home, agentpath(f"cpu=samples,format=b,file={cpu}"), main="CpuBusy", args=["2", "1500"])
        if not check(run.code == 0, f"{label}: CpuBusy", run):
            return
        made = fasthprof("pprof", "-o", folder / "cpu.pb.gz", cpu)
        check(made.returncode == 0 and (folder / "cpu.pb.gz").read_bytes()[:2] == b"\x1f\x8b",
              f"{label}: pprof -o cpu.pb.gz, gzipped: {made.stderr}")
        _, id_size, _, records = hprof_records.read(cpu)
        classes = {serial: java_name(name) for serial, name in hprof_records.load_classes(records, id_size).items()}
        frames = hprof_records.stack_frames(records, id_size)
        traces = hprof_records.stack_traces(records, id_size)
        spin, total = 0, 0
        for _, section_total, rows in hprof_records.cpu_samples(records):
            total += section_total
            for count, serial in rows:
                top = traces[serial][1][:1]
                if top and f"{classes[frames[top[0]][1]]}.{frames[top[0]][0]}" == "CpuBusy.spin":
                    spin += count
        by_method = fasthprof("summary", "--by", "method", cpu)
        first = re.search(r"^rank   self  accum   count method\n\s+1\s+[\d.]+%\s+[\d.]+%\s+(\d+) (\S+)$",
                          by_method.stdout, re.M)
        check(by_method.returncode == 0 and first is not None and first.groups() == (str(spin), "CpuBusy.spin"),
              f"{label}: summary --by method ranks CpuBusy.spin first with its {spin} samples:\n{by_method.stdout[-1500:]}")
        rows, shown_total, output = pprof_top(folder / "cpu.pb.gz", "-sample_index=samples")
        check(rows[:1] == [("CpuBusy.spin", str(spin))] and shown_total == str(total),
              f"{label}: go tool pprof -top lists CpuBusy.spin first with {spin} of {total} samples:\n{output[:2000]}")
        # As fleet tools take CPU profiles: nanoseconds by default, each sample the interval (10 ms).
        rows, shown_total, output = pprof_top(folder / "cpu.pb.gz")
        check("Type: cpu" in output and rows[:1] == [("CpuBusy.spin", pprof_seconds(spin * 10))] and
              re.search(r"Duration: [\d.]+m?s", output) is not None,
              f"{label}: pprof's default is CPU time, {spin} x 10 ms in CpuBusy.spin, with a duration:\n{output[:2000]}")
        made = fasthprof("pprof", "--interval", "20", "-o", folder / "cpu20.pb.gz", cpu)
        rows, _, output = pprof_top(folder / "cpu20.pb.gz")
        check(made.returncode == 0 and rows[:1] == [("CpuBusy.spin", pprof_seconds(spin * 20))],
              f"{label}: --interval 20: each sample 20 ms:\n{output[:2000]}")
        env = dict(os.environ, HOME=str(folder))
        raw = subprocess.run(["go", "tool", "pprof", "-raw", str(folder / "cpu.pb.gz")], capture_output=True, text=True,
                             timeout=300, env=env).stdout
        check("PeriodType: cpu nanoseconds" in raw and "Period: 10000000" in raw and
              "samples/count cpu/nanoseconds[dflt]" in raw, f"{label}: period type, period, sample types:\n{raw[:800]}")
        sites = folder / "sites.hprof"
        run = run_java(home, agentpath(f"heap=sites,format=b,file={sites}"), main="AllocSites")
        if not check(run.code == 0, f"{label}: AllocSites", run):
            return
        check(fasthprof("pprof", "--sites", "-o", folder / "sites.pb.gz", sites).returncode == 0, f"{label}: pprof --sites")
        _, id_size, _, records = hprof_records.read(sites)
        classes = {serial: java_name(name) for serial, name in hprof_records.load_classes(records, id_size).items()}
        items = sum(row[6] for row in hprof_records.alloc_sites(records)[-1][1] if classes.get(row[1]) == "AllocSites$Item")
        rows, _, output = pprof_top(folder / "sites.pb.gz", "-sample_index=alloc_objects")
        check(items > 0 and ("AllocSites$Item", str(items)) in rows,
              f"{label}: alloc_objects of AllocSites$Item: {items}:\n{output[:2000]}")
        one_message(f"{label}: pprof without -o", fasthprof("pprof", cpu), r"needs -o")
    finally:
        cleanup(folder)


run_cases("fasthprof_cmd", {
    "dispatch": case_dispatch,
    "histogram": on_each_jdk(quiescent_histograms),
    "collapsed": on_each_jdk(collapsed_run),
    "diff": on_each_jdk(diff_run),
    "text": on_each_jdk(text_run),
    "flame": on_each_jdk(flame_run),
    "pprof": on_each_jdk(pprof_run),
})
