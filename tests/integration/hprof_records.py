"""A deliberately small HPROF reader for the integration tests, written apart from the C++ writer
and verifier so that the three can disagree: of binary files the header, the top-level records and
the fields of the records the tests look at; of text files the TRACE, SITES and CPU SAMPLES
sections. The tests decode records only through this module."""
import mmap
import re
import struct


class Record:
    def __init__(self, tag, time, offset, body):
        self.tag, self.time, self.offset, self.body = tag, time, offset, body


def read(path):
    data = open(path, "rb").read()
    return _parse(data, data.index(b"\0"))


def _parse(data, end):
    """(version, id size, millis, records) of a whole file in memory (bytes or a memoryview)."""
    version = bytes(data[:end]).decode()
    id_size, high, low = struct.unpack_from(">III", data, end + 1)
    records = []
    at = end + 13
    while at < len(data):
        if at + 9 > len(data):
            raise ValueError(f"truncated record header at {at}")
        tag, time, length = struct.unpack_from(">BII", data, at)
        if at + 9 + length > len(data):
            raise ValueError(f"record at {at} claims {length} bytes, file has {len(data) - at - 9}")
        records.append(Record(tag, time, at, data[at + 9:at + 9 + length]))
        at += 9 + length
    return version, id_size, (high << 32) | low, records


def strings(records, id_size=8):
    names = {}
    for r in records:
        if r.tag == 0x01:
            (sid,) = struct.unpack(">Q" if id_size == 8 else ">I", r.body[:id_size])
            names[sid] = bytes(r.body[id_size:]).decode("utf-8", errors="replace")
    return names


def start_threads(records, id_size=8):
    """[(serial, object_id, trace_serial, name, group, parent)] with names resolved."""
    names = strings(records, id_size)
    fmt = ">IQIQQQ" if id_size == 8 else ">IIIIII"
    out = []
    for r in records:
        if r.tag == 0x0A:
            serial, obj, trace, name, group, parent = struct.unpack(fmt, r.body)
            out.append((serial, obj, trace, names.get(name), names.get(group, "" if group == 0 else None),
                        names.get(parent, "" if parent == 0 else None)))
    return out


def end_threads(records):
    return [struct.unpack(">I", r.body)[0] for r in records if r.tag == 0x0B]


def read_mapped(path):
    """As read(), for files of gigabytes: each body is a read-only memoryview into a map of the file
    instead of a copy (the map stays open while a body is referenced)."""
    with open(path, "rb") as f:
        data = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    return _parse(data, bytes(data[:64]).index(b"\0"))


# ---- binary records the tests look at -------------------------------------------------------------

def _id_char(id_size):
    return "Q" if id_size == 8 else "I"


def load_classes(records, id_size=8):
    """{class serial: name as written (slashes)} from the LOAD CLASS records."""
    names = strings(records, id_size)
    fmt = ">I" + _id_char(id_size) + "I" + _id_char(id_size)
    out = {}
    for r in records:
        if r.tag == 0x02:
            serial, _, _, name = struct.unpack(fmt, r.body)
            out[serial] = names.get(name)
    return out


def stack_frames(records, id_size=8):
    """{frame id: (method name, class serial, line)} from the STACK FRAME records."""
    names = strings(records, id_size)
    fmt = ">" + _id_char(id_size) * 4 + "Ii"
    out = {}
    for r in records:
        if r.tag == 0x04:
            frame_id, method, _, _, class_serial, line = struct.unpack(fmt, r.body)
            out[frame_id] = (names.get(method), class_serial, line)
    return out


def stack_traces(records, id_size=8):
    """{trace serial: (offset of its record, [frame id, ...])} from the STACK TRACE records."""
    out = {}
    for r in records:
        if r.tag == 0x05:
            serial, _, count = struct.unpack(">III", r.body[:12])
            out[serial] = (r.offset, list(struct.unpack(">" + _id_char(id_size) * count,
                                                        r.body[12:12 + count * id_size])))
    return out


def alloc_sites(records):
    """[(header, rows)] of the ALLOC SITES records: header (flags, cutoff as its 4 bytes, live bytes,
    live instances, bytes allocated, instances allocated, site count), rows [(array kind, class
    serial, trace serial, live bytes, live instances, bytes allocated, instances allocated)]."""
    out = []
    for r in records:
        if r.tag == 0x06:
            header = struct.unpack(">H4sIIQQI", r.body[:34])
            body = r.body[34:]
            out.append((header, [struct.unpack(">BIIIIII", body[k * 25:(k + 1) * 25]) for k in range(header[6])]))
    return out


def heap_summaries(records):
    """[(live bytes, live instances, bytes allocated, instances allocated)] of the HEAP SUMMARY records."""
    return [struct.unpack(">IIQQ", r.body) for r in records if r.tag == 0x07]


def cpu_samples(records):
    """[(offset of the record, total, [(count, trace serial)])] of the CPU SAMPLES records."""
    out = []
    for r in records:
        if r.tag == 0x0D:
            total, count = struct.unpack(">II", r.body[:8])
            out.append((r.offset, total, [struct.unpack(">II", r.body[8 + 8 * i:16 + 8 * i]) for i in range(count)]))
    return out


# ---- heap dumps (8-byte IDs) -------------------------------------------------------------------------

VALUE_SIZES = {2: 8, 4: 1, 5: 2, 6: 4, 7: 8, 8: 1, 9: 2, 10: 4, 11: 8}
ROOT_SIZES = {0xFF: 8, 0x01: 16, 0x02: 16, 0x03: 16, 0x04: 12, 0x05: 8, 0x06: 12, 0x07: 8, 0x08: 16}
FORMATS = {2: ">Q", 4: ">B", 5: ">H", 6: ">f", 7: ">d", 8: ">b", 9: ">h", 10: ">i", 11: ">q"}


def class_object_names(records):
    """{class object ID: name as written} from the LOAD CLASS records (8-byte IDs)."""
    names = strings(records)
    out = {}
    for r in records:
        if r.tag == 0x02:
            _, class_id, _, name_id = struct.unpack_from(">IQIQ", r.body)
            out[class_id] = names.get(name_id)
    return out


def heap_dumps(records):
    """[([HEAP DUMP or HEAP DUMP SEGMENT record], offset where the dump ends)] for each heap dump
    of a file: a HEAP DUMP record is a dump of its own, segments run until HEAP DUMP END."""
    dumps, segments = [], []
    for r in records:
        if r.tag == 0x0C:
            dumps.append(([r], r.offset + 9 + len(r.body)))
        elif r.tag == 0x1C:
            segments.append(r)
        elif r.tag == 0x2C:
            dumps.append((segments, r.offset))
            segments = []
    return dumps


PRIMITIVE_ARRAY_NAMES = {4: "boolean[]", 5: "char[]", 6: "float[]", 7: "double[]", 8: "byte[]", 9: "short[]",
                         10: "int[]", 11: "long[]"}


def class_counts_per_dump(records):
    """[{class name: instances and object arrays of that class, plus "int[]" etc. for primitive
    arrays}] for each heap dump of a file, class IDs resolved through the LOAD CLASS records written
    before the dump's end (a later LOAD CLASS of the same ID wins: in a file with VM dumps a class
    ID is the JDK's address, valid within its dump)."""
    names = strings(records)
    classes, out, counts = {}, [], {}
    for r in records:
        if r.tag == 0x02:
            _, class_id, _, name_id = struct.unpack_from(">IQIQ", r.body)
            classes[class_id] = names.get(name_id)
        elif r.tag in (0x0C, 0x1C):
            for sub, _, fields in heap_subrecords(r.body, {}):
                if sub in (0x21, 0x22):
                    name = classes.get(fields["class"], hex(fields["class"]))
                elif sub == 0x23:
                    name = PRIMITIVE_ARRAY_NAMES.get(fields["type"], "?[]")
                else:
                    continue
                counts[name] = counts.get(name, 0) + 1
            if r.tag == 0x0C:
                out.append(counts)
                counts = {}
        elif r.tag == 0x2C:
            out.append(counts)
            counts = {}
    return out


def value(body, at, kind):
    """A field, static or constant value of a basic type (signed as Java has it; IDs unsigned)."""
    return struct.unpack_from(FORMATS[kind], body, at)[0]


def array_elements(fields):
    """The element IDs of an OBJECT ARRAY DUMP from heap_subrecords(), as a list."""
    return list(struct.unpack(f">{fields['count']}Q", fields["elements"]))


def array_values(fields):
    """The values of a PRIMITIVE ARRAY DUMP from heap_subrecords(), as a list."""
    return list(struct.unpack(f">{fields['count']}{FORMATS[fields['type']][1]}", fields["data"]))


def heap_subrecords(body, names):
    """Yields (tag, offset, fields) for each sub-record of a HEAP DUMP (SEGMENT) body, fields by tag:
    a root: {id}; CLASS DUMP: {id, super, loader, signers, domain, instance_size, constants [(index,
    type, value)], statics [(name, type, value)], fields [(name, type)]}; INSTANCE DUMP: {id, trace,
    class, values (the bytes)}; OBJECT ARRAY DUMP: {id, trace, count, class, elements (the bytes)};
    PRIMITIVE ARRAY DUMP: {id, trace, count, type, data (the bytes)}. Field names through names
    ({string ID: text}); byte parts are slices of body (views when body is a memoryview)."""
    u2 = lambda at: struct.unpack_from(">H", body, at)[0]
    u4 = lambda at: struct.unpack_from(">I", body, at)[0]
    u8 = lambda at: struct.unpack_from(">Q", body, at)[0]
    at, end = 0, len(body)
    while at < end:
        sub, start = body[at], at
        at += 1
        if sub in ROOT_SIZES:
            yield sub, start, {"id": u8(at)}
            at += ROOT_SIZES[sub]
        elif sub == 0x20:
            fields = {"id": u8(at), "super": u8(at + 12), "loader": u8(at + 20), "signers": u8(at + 28),
                      "domain": u8(at + 36), "instance_size": u4(at + 60),
                      "constants": [], "statics": [], "fields": []}
            at += 64
            count = u2(at)
            at += 2
            for _ in range(count):
                kind = body[at + 2]
                fields["constants"].append((u2(at), kind, value(body, at + 3, kind)))
                at += 3 + VALUE_SIZES[kind]
            count = u2(at)
            at += 2
            for _ in range(count):
                kind = body[at + 8]
                fields["statics"].append((names.get(u8(at)), kind, value(body, at + 9, kind)))
                at += 9 + VALUE_SIZES[kind]
            count = u2(at)
            at += 2
            for _ in range(count):
                fields["fields"].append((names.get(u8(at)), body[at + 8]))
                at += 9
            yield sub, start, fields
        elif sub == 0x21:
            length = u4(at + 20)
            yield sub, start, {"id": u8(at), "trace": u4(at + 8), "class": u8(at + 12),
                               "values": body[at + 24:at + 24 + length]}
            at += 24 + length
        elif sub == 0x22:
            count = u4(at + 12)
            yield sub, start, {"id": u8(at), "trace": u4(at + 8), "count": count, "class": u8(at + 16),
                               "elements": body[at + 24:at + 24 + 8 * count]}
            at += 24 + 8 * count
        elif sub == 0x23:
            count, kind = u4(at + 12), body[at + 16]
            size = VALUE_SIZES[kind] * count
            yield sub, start, {"id": u8(at), "trace": u4(at + 8), "count": count, "type": kind,
                               "data": body[at + 17:at + 17 + size]}
            at += 17 + size
        else:
            raise ValueError(f"unknown heap sub-record {sub:#x} at {start}")


# ---- text sections -----------------------------------------------------------------------------------

SITES_ROW = re.compile(r"^\s*(\d+)\s+([\d.]+)%\s+([\d.]+)%\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)$")
CPU_SECTION = re.compile(r"^CPU SAMPLES BEGIN \(total = (\d+)\) .+?\n(.*?)^CPU SAMPLES END$", re.S | re.M)
CPU_ROW = re.compile(r"^ *(\d+) +([\d.]+)% +([\d.]+)% +(\d+) +(\d+) (.+)$")


def text_traces(text):
    """{serial: (offset of its TRACE line, [frame lines without their tab])} of a text file."""
    return {int(m.group(1)): (m.start(), [line[1:] for line in m.group(2).splitlines()])
            for m in re.finditer(r"^TRACE (\d+):.*\n((?:\t.*\n)*)", text, re.M)}


def site_row(line):
    """A row of a SITES section as a dict (rank, self, accum, live_bytes, live_objs, alloc_bytes,
    alloc_objs, trace, class, text), or None when the line does not have the row layout."""
    m = SITES_ROW.match(line)
    if m is None:
        return None
    return {"rank": int(m.group(1)), "self": float(m.group(2)), "accum": float(m.group(3)),
            "live_bytes": int(m.group(4)), "live_objs": int(m.group(5)),
            "alloc_bytes": int(m.group(6)), "alloc_objs": int(m.group(7)),
            "trace": int(m.group(8)), "class": m.group(9), "text": line}


def text_sites(text):
    """[(offset, header line, [the two column lines], rows, ended)] for each SITES section of a text
    file; rows holds site_row() of each line up to SITES END (None for a line of another layout),
    ended whether SITES END came."""
    lines, offset = [], 0
    for line in text.split("\n"):
        lines.append((offset, line))
        offset += len(line) + 1
    sections = []
    i = 0
    while i < len(lines):
        begin, header = lines[i]
        if header.startswith("SITES BEGIN"):
            columns = [line for _, line in lines[i + 1:i + 3]]
            rows = []
            i += 3
            while i < len(lines) and lines[i][1] != "SITES END":
                rows.append(site_row(lines[i][1]))
                i += 1
            sections.append((begin, header, columns, rows, i < len(lines)))
        i += 1
    return sections


def text_cpu_totals(text):
    """The totals of the CPU SAMPLES BEGIN lines of a text file, ended sections or not."""
    return [int(total) for total in re.findall(r"^CPU SAMPLES BEGIN \(total = (\d+)\)", text, re.M)]


def text_cpu_samples(text):
    """[(offset, total, rows)] for each CPU SAMPLES section of a text file: rows (rank, self %,
    accum %, count, trace serial, method), or ("bad", line) for a line of another layout."""
    sections = []
    for match in CPU_SECTION.finditer(text):
        rows = []
        for line in match.group(2).splitlines():
            if line.startswith("rank"):
                continue
            row = CPU_ROW.match(line)
            if row:
                rows.append((int(row.group(1)), float(row.group(2)), float(row.group(3)), int(row.group(4)),
                             int(row.group(5)), row.group(6)))
            else:
                rows.append(("bad", line))
        sections.append((match.start(), int(match.group(1)), rows))
    return sections
