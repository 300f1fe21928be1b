"""heap=dump of a large heap: about 2 GB live (tests/java/HeapLarge.java: mostly primitive arrays,
Object[]s of millions of elements with runs of nulls, a long[] and an Object[] far larger than one
1 MiB segment), dumped on kill -QUIT. Checks that the file is valid (tools/hprof-verify; VisualVM's
heap library opens it and resolves every instance's references, about 1 s), that it
holds many HEAP DUMP SEGMENTs with every array larger than a segment in a segment of its own, the
arrays' lengths and counts, their elements (all of the Object[]s', samples of the primitive arrays'),
and that the process's peak RSS (VmHWM) grows during the dump by at most the JVM's tag map (64 bytes
per tagged object) + 64 MiB: the Java heap is pre-touched, so the growth is the native memory of the
dump (the agent's buffers, the tag map, the walk's own marks and stack). Measured: 9 MiB on JDK 17,
50 MiB on JDK 25, of which the floor agent (bench/heap_floor_agent.cpp) alone takes 7 and 48; an agent
that held an array's elements while the walk reported them would need 96 MB for the largest Object[].

Needs 8 GB free where the dump goes (TMPDIR, else /tmp) and about 4 GB of memory; skipped with a
message otherwise. About 20 s per JDK here. One case per JDK, each a Meson test: `heap_dump_large.py
jdk17` and `heap_dump_large.py jdk25` (skipped without JDK 25).
"""
import array
import os
import pathlib
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

import hprof_records
from hprof_records import VALUE_SIZES
from harness import (agentpath, check, check_no_warnings, cleanup, java_command, java_process, jdk25, run_cases, skip,
                     verify_binary, wait_for)

HEAP_CHECK = os.environ.get("HEAP_CHECK_CLASSES", "")
JAVA17 = os.environ["JAVA17_HOME"]
NEEDED_FREE = 8 << 30
SEGMENT = 1 << 20
POOL = 100_000
BYTE_ARRAYS = 1300
BYTE, INT, LONG = 8, 10, 11


class Dump:
    """The parts of the first heap dump of a file that the checks need; bodies stay in the map."""

    def __init__(self):
        self.segments = []          # body length of each HEAP DUMP SEGMENT
        self.own_segments = 0       # segments holding one array sub-record larger than SEGMENT
        self.oversize = []          # segments larger than SEGMENT that are not one array's own
        self.fields = {}            # class ID -> [(own instance field name, type)]
        self.class_names = {}       # class ID -> name (LOAD CLASS)
        self.statics = {}           # class ID -> {static name: value}
        self.instances = {}         # ID -> (class ID, values) for HeapLarge$Value only
        self.object_arrays = {}     # ID -> (array class ID, count, elements)
        self.primitive_arrays = {}  # ID -> (type, count, data)

    def class_id(self, name):
        found = [cid for cid, n in self.class_names.items() if n == name]
        return found[0] if len(found) == 1 else None

    def ids(self, array_id):
        """The elements of an OBJECT ARRAY DUMP as an array of integers (empty if there is none)."""
        _, count, body = self.object_arrays.get(array_id, (0, 0, b""))
        out = array.array("Q")
        out.frombytes(body)
        if sys.byteorder == "little":
            out.byteswap()
        return out

    def values(self, array_id, index):
        kind, count, body = self.primitive_arrays[array_id]
        return hprof_records.value(body, index * VALUE_SIZES[kind], kind)


def read_dump(path):
    _, id_size, _, records = hprof_records.read_mapped(path)
    assert id_size == 8
    dump = Dump()
    names = hprof_records.strings(records)
    dumps = hprof_records.heap_dumps(records)
    segments, end = dumps[0] if dumps else ([], 0)
    # The classes loaded before the first dump ends, the one the checks look at.
    dump.class_names = hprof_records.class_object_names([r for r in records if r.offset < end])
    for record in segments:
        dump.segments.append(len(record.body))
        read_segment(dump, record.body, names)
    return dump


def read_segment(dump, body, names):
    value_class = dump.class_id("HeapLarge$Value")
    sub_records = 0
    for tag, _, f in hprof_records.heap_subrecords(body, names):
        sub_records += 1
        if tag == 0x20:
            dump.statics[f["id"]] = {name: value for name, _, value in f["statics"]}
            dump.fields[f["id"]] = f["fields"]
        elif tag == 0x21:
            if f["class"] == value_class:
                dump.instances[f["id"]] = (f["class"], f["values"])
        elif tag == 0x22:
            dump.object_arrays[f["id"]] = (f["class"], f["count"], f["elements"])
        elif tag == 0x23:
            dump.primitive_arrays[f["id"]] = (f["type"], f["count"], f["data"])
    if len(body) > SEGMENT:
        if sub_records == 1 and body[0] in (0x22, 0x23):
            dump.own_segments += 1
        else:
            dump.oversize.append((len(body), sub_records))


def status(pid, field):
    """A /proc/<pid>/status field in KiB (VmHWM, VmRSS), or 0."""
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def check_contents(label, dump):
    statics = dump.statics.get(dump.class_id("HeapLarge"), {})
    wanted = ("pool", "bytes", "longs", "ints", "hugeLongs", "hugeRefs", "refs", "small")
    if not check(all(statics.get(name) for name in wanted),
                 f"{label}: HeapLarge's CLASS DUMP with its statics ({sorted(statics)})"):
        return
    object_array_class = dump.class_id("java.lang.Object[]")

    pool = dump.ids(statics["pool"])
    check(len(pool) == POOL and all(pool), f"{label}: the pool of {POOL} objects, none null")
    fields = dump.fields.get(dump.class_id("HeapLarge$Value"), [])
    check(sorted(fields) == [("n", INT), ("twice", LONG)], f"{label}: HeapLarge$Value's fields ({fields})")
    offsets, at = {}, 0
    for name, kind in fields:
        offsets[name] = at
        at += VALUE_SIZES[kind]
    wrong = []
    for k in range(POOL):
        values = dump.instances.get(pool[k], (0, bytes(12)))[1]
        if (hprof_records.value(values, offsets.get("n", 0), INT),
                hprof_records.value(values, offsets.get("twice", 4), LONG)) != (k, 2 * k):
            wrong.append(k)
    check(len(dump.instances) == POOL and not wrong,
          f"{label}: {POOL} HeapLarge$Value instances ({len(dump.instances)}) with their field values (wrong: {wrong[:5]})")

    byte_arrays = dump.ids(statics["bytes"])
    bad = [k for k, a in enumerate(byte_arrays)
           if dump.primitive_arrays.get(a, (0, 0))[:2] != (BYTE, 1 << 20)
           or (dump.values(a, 0), dump.values(a, 1 << 19), dump.values(a, (1 << 20) - 1))
           != tuple(struct.unpack("b", bytes([v & 0xFF]))[0] for v in (k, k * 3, -k))]
    check(len(byte_arrays) == BYTE_ARRAYS and not bad,
          f"{label}: {BYTE_ARRAYS} byte[1 MiB] with their sampled values ({len(byte_arrays)}, wrong: {bad[:5]})")

    long_arrays = dump.ids(statics["longs"])
    bad = [k for k, a in enumerate(long_arrays)
           if dump.primitive_arrays.get(a, (0, 0))[:2] != (LONG, 1 << 20)
           or any(dump.values(a, j) != k * 1_000_003 + j for j in (0, 1, 77_777, (1 << 20) - 1))]
    check(len(long_arrays) == 50 and not bad, f"{label}: 50 long[1 M] with their sampled values (wrong: {bad[:5]})")

    int_arrays = dump.ids(statics["ints"])
    bad = [k for k, a in enumerate(int_arrays)
           if dump.primitive_arrays.get(a, (0, 0))[:2] != (INT, 20_000)
           or any(dump.values(a, j) != j ^ k for j in (0, 777, 19_999))]
    check(len(int_arrays) == 2000 and not bad, f"{label}: 2000 int[20 000] with their sampled values (wrong: {bad[:5]})")

    huge = statics["hugeLongs"]
    kind, count, _ = dump.primitive_arrays.get(huge, (0, 0, b""))
    check((kind, count) == (LONG, 16 << 20) and
          all(dump.values(huge, j) == j * 7 - 5 for j in (0, 1, 8 << 20, (16 << 20) - 1)),
          f"{label}: the long[16 M] (128 MB) with its sampled values ({kind}, {count})")

    def check_refs(name, array_id, length, expected):
        got = dump.ids(array_id)
        class_ok = dump.object_arrays.get(array_id, (0,))[0] == object_array_class
        check(class_ok and len(got) == length and got == expected,
              f"{label}: {name}: an Object[{length}] ({len(got)}) whose every element (nulls included) "
              f"is the program's")

    check_refs("hugeRefs", statics["hugeRefs"], 12_000_000, pool * 120)
    refs = dump.ids(statics["refs"])
    if check(len(refs) == 4, f"{label}: refs holds 4 arrays ({len(refs)})"):
        check_refs("refs[0]", refs[0], 3_000_000,
                   array.array("Q", (0 if i % 3 == 0 else pool[i % POOL] for i in range(3_000_000))))
        check_refs("refs[1]", refs[1], 2_000_000,
                   array.array("Q", bytes(8_000_000)) +
                   array.array("Q", (pool[(i * 7) % POOL] for i in range(1_000_000, 2_000_000))))
        sparse = array.array("Q", bytes(8 * 2_500_000))
        sparse[0], sparse[1_234_567] = pool[0], pool[4567]
        check_refs("refs[2]", refs[2], 2_500_000, sparse)
        check_refs("refs[3]", refs[3], 1_000_000, array.array("Q", bytes(8_000_000)))
    small = dump.ids(statics["small"])
    bad = [k for k, a in enumerate(small)
           if a not in dump.object_arrays or
           dump.ids(a) != array.array("Q", (0 if i % 2 else pool[(k + i) % POOL] for i in range(1000)))]
    check(len(small) == 300 and not bad, f"{label}: 300 Object[1000] with every other element null (wrong: {bad[:5]})")

    shapes = {}
    for kind, count, _ in dump.primitive_arrays.values():
        shapes[(kind, count)] = shapes.get((kind, count), 0) + 1
    check(shapes.get((BYTE, 1 << 20)) == BYTE_ARRAYS and shapes.get((LONG, 1 << 20)) == 50 and
          shapes.get((INT, 20_000)) == 2000 and shapes.get((LONG, 16 << 20)) == 1,
          f"{label}: primitive arrays per shape as built, and each once")


def run(label, home):
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fasthprof-large-"))
    free = shutil.disk_usage(folder).free
    if free < NEEDED_FREE:
        cleanup(folder)
        print(f"{label}: {folder.parent} has {free >> 30} GB free, the large heap dump needs {NEEDED_FREE >> 30} GB")
        return False
    started = time.time()
    with java_process(home, agentpath("heap=dump,format=b,file=dump.hprof,doe=n,verbose=y,dumper=jvmti"), "HeapLarge",
                      [BYTE_ARRAYS],
                      jvm_args=["-Xms3500m", "-Xmx3500m", "-Xmn256m", "-XX:+UseParallelGC", "-XX:+AlwaysPreTouch"],
                      folder=folder, stdin=subprocess.PIPE) as (proc, folder):
        stderr = lambda: (folder / "stderr.txt").read_text(errors="replace")
        if not check(wait_for(lambda: "ready" in (folder / "stdout.txt").read_text() or proc.poll() is not None, 120)
                     and proc.poll() is None, f"{label}: HeapLarge built its heap\n{stderr()}"):
            return True
        built = time.time()
        hwm_before, rss_before = status(proc.pid, "VmHWM"), status(proc.pid, "VmRSS")
        os.kill(proc.pid, signal.SIGQUIT)
        done = wait_for(lambda: "fasthprof: heap dump stats:" in stderr() or proc.poll() is not None, 240, 0.05)
        hwm_after = status(proc.pid, "VmHWM")
        dumped = time.time()
        if not check(done and proc.poll() is None, f"{label}: the dump finished\n{stderr()}"):
            return True
        proc.stdin.write("exit\n")
        proc.stdin.close()
        code = proc.wait(timeout=60)
        check(code == 0 and "bye" in (folder / "stdout.txt").read_text(), f"{label}: the program ended normally ({code})")
        stats = dict(re.findall(r"(\w+)=([\d.]+)", stderr().split("fasthprof: heap dump stats:")[1].splitlines()[0]))
        objects = int(stats["objects"])
        size = (folder / "dump.hprof").stat().st_size
        growth = max(0, hwm_after - hwm_before) << 10
        tag_map = 64 * objects
        print(f"{label}: heap built in {built - started:.1f} s (RSS {rss_before >> 10} MiB); dump of {objects} objects, "
              f"{size / 1e9:.2f} GB in {float(stats['seconds']):.2f} s ({size / 1e6 / float(stats['seconds']):.0f} MB/s, "
              f"{dumped - built:.1f} s from kill -QUIT); peak RSS growth during the dump {growth >> 20} MiB "
              f"(bound: tag map {tag_map >> 20} MiB + 64 MiB)")
        check(growth <= tag_map + (64 << 20),
              f"{label}: peak RSS grew by {growth >> 20} MiB during the dump, more than the tag map "
              f"({tag_map >> 20} MiB) + 64 MiB")

        verify_started = time.time()
        ok, output = verify_binary(folder / "dump.hprof")
        verified = time.time()
        check(ok, f"{label}: hprof-verify accepts the dump\n{output[-2000:]}")
        match = re.search(r"dump 1 at byte \d+: (\d+) segments", output)
        dump = read_dump(folder / "dump.hprof")
        read = time.time()
        segments = int(match.group(1)) if match else -1
        check(segments == len(dump.segments) > BYTE_ARRAYS + 50,
              f"{label}: many HEAP DUMP SEGMENTs ({segments} by hprof-verify, {len(dump.segments)} read)")
        # Every byte[1 MiB], long[1 M] and the long[16 M], the Object[12 M] and the four refs arrays.
        check(dump.own_segments >= BYTE_ARRAYS + 50 + 1 + 1 + 4,
              f"{label}: arrays larger than a segment each in a segment of their own ({dump.own_segments})")
        check(not dump.oversize and max(dump.segments) > 100 * SEGMENT,
              f"{label}: segments of at most 1 MiB besides the arrays' own (others: {dump.oversize[:5]}; "
              f"largest {max(dump.segments)} bytes)")
        check_contents(label, dump)
        del dump
        checked = time.time()
        if HEAP_CHECK and os.path.isdir(HEAP_CHECK.split(":")[0]):
            # VisualVM's heap library opens it: every instance's references resolve, every root.
            proc_check = subprocess.run(java_command(JAVA17, "-Xmx2g", "-cp", HEAP_CHECK, "HeapCheck", "generic",
                                                     str(folder / "dump.hprof"), "0"),
                                        capture_output=True, text=True, timeout=300)
            check_no_warnings(f"{label}: HeapCheck", proc_check.stdout, proc_check.stderr)
            check(proc_check.returncode == 0, f"{label}: VisualVM's heap library reads the dump\n"
                  f"{proc_check.stdout[-2000:]}{proc_check.stderr[-2000:]}")
            seen = re.search(r"HeapCheck: (\d+) objects", proc_check.stdout)
            check(seen and int(seen.group(1)) == objects,
                  f"{label}: VisualVM sees the {objects} objects the agent wrote ({seen and seen.group(1)})")
            print(f"{label}: VisualVM HeapCheck {time.time() - checked:.1f} s ({(proc_check.stdout.splitlines() or [''])[0]})")
        else:
            print(f"{label}: VisualVM check not run: the checker is not built (install `visualvm`)")
        print(f"{label}: hprof-verify {verified - verify_started:.1f} s, reading the dump {read - verified:.1f} s, "
              f"whole run {time.time() - started:.1f} s")
    return True


def on(label, home):
    """The case of one JDK; skipped when the disk has no room for the dump."""
    def case():
        if not run(label, home):
            skip(f"{label}: not enough free disk space for the large heap dump")
    return case


def jdk25_case():
    on(*jdk25())()


if __name__ == "__main__":
    run_cases("heap_dump_large", {"jdk17": on("jdk17", os.environ["JAVA17_HOME"]), "jdk25": jdk25_case})
