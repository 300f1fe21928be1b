"""The `fasthprof` command (tools/fasthprof/): its dispatch (help, --help per verb, -o, exit codes),
bad input (one message, exit 2, no crash), `verify` as one implementation with hprof-verify, and
`summary`'s class histogram against `jcmd GC.class_histogram` taken at the same quiescent moment of
tests/java/Histogram.java, on a fasthprof dump (kill -QUIT), a `jcmd GC.heap_dump` and a
`jcmd GC.heap_dump -gz=1` of it. Each case is a Meson test (`fasthprof_cmd.py <case>`)."""
import gzip
import os
import pathlib
import re
import shutil
import signal
import subprocess
import tempfile

from harness import (agentpath, check, java_bin, java_process, on_each_jdk, read_text, run_cases, wait_for)

COMMAND = os.environ.get("FASTHPROF_COMMAND", "")
VERIFY = os.environ.get("FASTHPROF_VERIFY", "")
JAVA17 = os.environ["JAVA17_HOME"]
# Histogram.java's own classes: nothing else allocates them, so their counts are exact on both sides.
OWN = ("Histogram$Node", "Histogram$Point", "Histogram$Shape", "Histogram$Square", "Histogram$Point[]",
       "Histogram$Point[][]", "Histogram$Square[]")


def fasthprof(*args, timeout=600):
    proc = subprocess.run([COMMAND, *map(str, args)], capture_output=True, text=True, timeout=timeout)
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
    check(help_text.returncode == 0 and re.search(r"^  verify ", help_text.stdout, re.M)
          and re.search(r"^  summary ", help_text.stdout, re.M), f"help lists the verbs:\n{help_text.stdout}")
    for verb in ("verify", "summary"):
        usage = fasthprof(verb, "--help")
        check(usage.returncode == 0 and usage.stdout.startswith(f"usage: fasthprof {verb}"),
              f"{verb} --help: {usage.returncode}\n{usage.stdout}{usage.stderr}")
        check(fasthprof("help", verb).stdout == usage.stdout, f"help {verb} prints {verb} --help")
    check("Shallow bytes" in fasthprof("summary", "--help").stdout, "summary --help states the shallow-size rule")
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
            "text.txt": (b"JAVA PROFILE 1.0.1, created Wed Jan 14 15:33:27 2015\n\nhello\n", r"is a text profile \(format=a\)"),
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
    options = "heap=dump,format=b,file=agent.hprof,doe=n,verbose=y"
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
            # holds no archived mirrors of classes that were never loaded (see README).
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


run_cases("fasthprof_cmd", {
    "dispatch": case_dispatch,
    "histogram": on_each_jdk(quiescent_histograms),
})
