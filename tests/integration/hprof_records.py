"""A deliberately small HPROF binary reader for the integration tests, written apart from the
C++ writer and verifier so that the three can disagree: header, top-level records, and the fields
of the records the tests look at."""
import mmap
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
            names[sid] = r.body[id_size:].decode("utf-8", errors="replace")
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
