"""Writes the hostile HPROF files of issue 32 (fasthprof_hostile.py runs the verbs on them): stacks
tens of thousands of frames deep, stacks whose frames loop, a deep chain of super classes, and
small gzip files that stand for huge ones. They are made here rather than committed, since most
are large; `python3 hostile_files.py --seeds DIR` writes small ones of each shape, the fuzz seeds
of tests/fuzz/corpus/<verb>/."""
import gzip
import pathlib
import struct
import sys

ID = 8  # identifier size of every file made here


def u1(value):
    return struct.pack(">B", value)


def u2(value):
    return struct.pack(">H", value)


def u4(value):
    return struct.pack(">I", value)


def ident(value):
    return struct.pack(">Q", value)


def record(tag, body):
    return u1(tag) + u4(0) + u4(len(body)) + body


def header():
    return b"JAVA PROFILE 1.0.2\0" + u4(ID) + struct.pack(">Q", 1_700_000_000_000)


class Names:
    """UTF8 records, one per distinct string, numbered from 1."""

    def __init__(self):
        self.ids = {}
        self.records = []

    def __call__(self, text):
        if text not in self.ids:
            self.ids[text] = len(self.ids) + 1
            self.records.append(record(0x01, ident(self.ids[text]) + (text if isinstance(text, bytes) else text.encode())))
        return self.ids[text]


def cpu_profile(frames_of_trace, rows=1, extra_rows=b""):
    """A cpu=samples file as the agent writes it: CONTROL SETTINGS (cpu=samples, depth 65535), the
    classes and frames of `frames_of_trace` ([(class, method)], top first, a frame per distinct
    pair), one STACK TRACE (serial 1) of them, and a CPU SAMPLES record of `rows` rows naming it."""
    names = Names()
    classes, frame_ids, body = {}, {}, []
    for class_name, method in frames_of_trace:
        if class_name not in classes:
            classes[class_name] = len(classes) + 1
            serial = classes[class_name]
            body.append(record(0x02, u4(serial) + ident(0x1000 + serial) + u4(1) + ident(names(class_name))))
        if (class_name, method) not in frame_ids:
            frame = frame_ids[(class_name, method)] = 0x10_0000 + len(frame_ids)
            body.append(record(0x04, ident(frame) + ident(names(method)) + ident(names("()V")) +
                               ident(names(b"Source.java")) + u4(classes[class_name]) +
                               u4(len(frame_ids))))
    trace = b"".join(ident(frame_ids[pair]) for pair in frames_of_trace)
    body.append(record(0x05, u4(1) + u4(1) + u4(len(frames_of_trace)) + trace))
    samples = u4(rows) + u4(rows) + (u4(1) + u4(1)) * rows
    body.append(record(0x0D, samples + extra_rows))
    return header() + record(0x0E, u4(2) + u2(65535)) + b"".join(names.records) + b"".join(body)


def deep_recursion(depth):
    """A thread running Deep.recurse `depth` frames deep (the same frame over and over, as the agent
    interns a recursive call site) under Thread.run."""
    return cpu_profile([("Deep", "recurse")] * (depth - 1) + [("java.lang.Thread", "run")])


def modified_utf8_names():
    """A profile whose names are the JVM's modified UTF-8, as JVMTI gives them: U+1F600 as two
    3-byte surrogates and NUL as C0 80; and a raw byte that is no UTF-8 at all."""
    smile = b"\xed\xa0\xbd\xed\xb8\x80"
    return cpu_profile([(b"Smile" + smile, b"run\xc0\x80" + smile), (b"Bad\xff", b"main")])


def looping_stack(depth, rows=1):
    """A trace whose frames go round a loop of three methods, and `rows` rows naming it."""
    loop = [("Loop", "a"), ("Loop", "b"), ("Loop", "c")]
    return cpu_profile([loop[i % 3] for i in range(depth)], rows)


def class_chain(classes, instances=100, cyclic=False):
    """A heap dump of `classes` classes, each the super class of the next and each with one int
    field, and `instances` instances of the last (its values: one int per class of the chain).
    cyclic: the first class's super class is the last."""
    top = 0x1000 + classes if cyclic else 0
    empty_trace = record(0x05, u4(1) + u4(0) + u4(0))
    field_name = record(0x01, ident(1) + b"value")
    names = b"".join(record(0x01, ident(1 + i) + b"Chain%d" % i) for i in range(1, classes + 1))
    loads = b"".join(struct.pack(">BIIIQIQ", 0x02, 0, 8 + 2 * ID, i, 0x1000 + i, 1, 1 + i) for i in range(1, classes + 1))
    class_dumps = b"".join(struct.pack(">BQIQ5QIHHHQB", 0x20, 0x1000 + i, 1, 0x1000 + i - 1 if i > 1 else top,
                                       0, 0, 0, 0, 0, 4, 0, 0, 1, 1, 10) for i in range(1, classes + 1))
    values = u4(7) * classes
    objects = b"".join(u1(0x21) + ident(0x100_0000 + i) + u4(1) + ident(0x1000 + classes) + u4(len(values)) + values
                       for i in range(instances))
    return (header() + empty_trace + field_name + names + loads + record(0x1C, class_dumps + objects) +
            record(0x2C, b""))


def row_bomb(expanded):
    """A gzip file of a cpu=samples profile whose CPU SAMPLES record holds about `expanded` bytes of
    rows, all naming one 2000-frame trace: deflate shrinks the repeated rows about 1000 to 1, and one
    member of 16 MiB of rows is compressed once and repeated (gzip files may hold many members)."""
    rows = expanded // 8
    start = cpu_profile(looping_stack_frames(2000), rows=0)
    # The empty CPU SAMPLES record (17 bytes) becomes the head of one of `rows` rows, which follow
    # in other members.
    start = start[:len(start) - 17] + u1(0x0D) + u4(0) + u4(8 + 8 * rows) + u4(rows) + u4(rows)
    per_member = 1 << 21
    whole, rest = divmod(rows, per_member)
    member = gzip.compress((u4(1) + u4(1)) * per_member, 9) if whole else b""
    return gzip.compress(start, 1) + member * whole + gzip.compress((u4(1) + u4(1)) * rest, 9)


def looping_stack_frames(depth):
    loop = [("Loop", "a"), ("Loop", "b"), ("Loop", "c")]
    return [loop[i % 3] for i in range(depth)]


def write_seeds(folder):
    """Small files of each shape, for the fuzz targets' corpora."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hostile-deep-stack.hprof").write_bytes(deep_recursion(3000))
    (folder / "hostile-looping-stack.hprof").write_bytes(looping_stack(600, rows=20))
    (folder / "hostile-class-chain.hprof").write_bytes(class_chain(300, instances=3))
    (folder / "hostile-nested.hprof.gz").write_bytes(gzip.compress(gzip.compress(deep_recursion(50))))
    (folder / "hostile-rows.hprof.gz").write_bytes(row_bomb(1 << 16))
    (folder / "modified-utf8-names.hprof").write_bytes(modified_utf8_names())


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--seeds":
        sys.exit("usage: hostile_files.py --seeds FOLDER")
    write_seeds(sys.argv[2])
