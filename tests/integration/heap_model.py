"""The objects of one binary heap dump as plain Python data, for tests that look at what a record
says (the C++ verifier checks the format; this reads the meaning). Written apart from the writer.
8-byte IDs only. Fine for heaps of up to a few hundred thousand objects."""
import struct

import hprof_records

VALUE_SIZES = {2: 8, 4: 1, 5: 2, 6: 4, 7: 8, 8: 1, 9: 2, 10: 4, 11: 8}
ROOT_SIZES = {0xFF: 8, 0x01: 16, 0x02: 16, 0x03: 16, 0x04: 12, 0x05: 8, 0x06: 12, 0x07: 8, 0x08: 16}
FORMATS = {2: ">Q", 4: ">B", 5: ">H", 6: ">f", 7: ">d", 8: ">b", 9: ">h", 10: ">i", 11: ">q"}


PRIMITIVE_NAMES = {4: "boolean", 5: "char", 6: "float", 7: "double", 8: "byte", 9: "short", 10: "int", 11: "long"}
DESCRIPTORS = {"Z": "boolean", "B": "byte", "C": "char", "S": "short", "I": "int", "J": "long", "F": "float",
               "D": "double"}


def java_name(name):
    """A LOAD CLASS name in either form (java/lang/String, [[I, [Ljava/lang/String;, Foo[]) in Java
    form; hidden classes as JVMTI names them (Foo$$Lambda.0x...)."""
    name = name.replace("+0x", ".0x")
    dims = len(name) - len(name.lstrip("["))
    base = name[dims:]
    if dims:
        base = DESCRIPTORS[base] if base in DESCRIPTORS else base[1:-1]
    return base.replace("/", ".") + "[]" * dims


class HeapClass:
    def __init__(self, class_id):
        self.id = class_id
        self.name = None
        self.super_id = self.loader_id = self.signers_id = self.domain_id = 0
        self.instance_size = 0
        self.constant_pool = []  # [(index, type, value)]
        self.statics = []        # [(name, type, value)]
        self.fields = []         # own instance fields [(name, type)]


class HeapModel:
    def __init__(self):
        self.classes = {}    # class ID -> HeapClass
        self.instances = {}  # ID -> (class ID, values bytes)
        self.object_arrays = {}  # ID -> (array class ID, [element IDs])
        self.primitive_arrays = {}  # ID -> (type, [values])
        self.roots = []      # [(sub-record tag, object ID)]
        self.instance_traces = {}  # instance ID -> its allocation trace serial
        self.traces = set()  # serials of the TRACE records before the dump ends
        self.segments = 0

    def class_named(self, name):
        found = [c for c in self.classes.values() if c.name == name]
        return found[0] if len(found) == 1 else None

    def fields_of(self, object_id):
        """{field name: value} of an instance, over its class and superclasses."""
        class_id, values = self.instances[object_id]
        out, at = {}, 0
        while class_id:
            heap_class = self.classes[class_id]
            for name, kind in heap_class.fields:
                size = VALUE_SIZES[kind]
                out.setdefault(name, struct.unpack(FORMATS[kind], values[at:at + size])[0])
                at += size
            class_id = heap_class.super_id
        return out

    def references_of(self, object_id):
        """The non-null object IDs an instance, object array or class holds."""
        if object_id in self.object_arrays:
            return [e for e in self.object_arrays[object_id][1] if e]
        if object_id in self.classes:
            heap_class = self.classes[object_id]
            out = [v for _, kind, v in heap_class.statics if kind == 2 and v]
            out += [v for _, kind, v in heap_class.constant_pool if kind == 2 and v]
            return out + [v for v in (heap_class.loader_id, heap_class.signers_id, heap_class.domain_id) if v]
        if object_id not in self.instances:
            return []
        class_id, values = self.instances[object_id]
        out, at = [], 0
        while class_id in self.classes:
            heap_class = self.classes[class_id]
            for _, kind in heap_class.fields:
                if kind == 2:
                    value = struct.unpack(">Q", values[at:at + 8])[0]
                    if value:
                        out.append(value)
                at += VALUE_SIZES[kind]
            class_id = heap_class.super_id
        return out

    def histogram(self, only=None):
        """{Java class name: objects} over every instance and array (or those in `only`)."""
        counts = {}
        def add(name):
            counts[name] = counts.get(name, 0) + 1
        for table in (self.instances, self.object_arrays):
            for object_id, (class_id, _) in table.items():
                if only is None or object_id in only:
                    heap_class = self.classes.get(class_id)
                    add(java_name(heap_class.name if heap_class else "?"))
        for object_id, (kind, _) in self.primitive_arrays.items():
            if only is None or object_id in only:
                add(PRIMITIVE_NAMES[kind] + "[]")
        return counts

    def class_of(self, object_id):
        if object_id in self.instances:
            return self.classes.get(self.instances[object_id][0])
        if object_id in self.object_arrays:
            return self.classes.get(self.object_arrays[object_id][0])
        return None

    def string_value(self, object_id):
        """The text of a java.lang.String instance (Latin-1 or UTF-16 coder), or None."""
        fields = self.fields_of(object_id)
        array = self.primitive_arrays.get(fields.get("value"))
        if array is None:
            return None
        raw = bytes(v & 0xFF for v in array[1])
        return raw.decode("latin-1") if fields.get("coder", 0) == 0 else raw.decode("utf-16-le")


def read(path, dump=0):
    """The model of heap dump number `dump` (0-based) of a binary file."""
    _, id_size, _, records = hprof_records.read(path)
    if id_size != 8:
        raise ValueError("heap_model reads 8-byte IDs only")
    names = hprof_records.strings(records)
    model = HeapModel()
    class_names = {}
    current = 0  # dumps before this record: segments run until HEAP DUMP END
    for record in records:
        if record.tag == 0x02:
            _, class_id, _, name_id = struct.unpack(">IQIQ", record.body)
            class_names[class_id] = names.get(name_id)
        elif record.tag == 0x05 and current <= dump:
            model.traces.add(struct.unpack(">I", record.body[:4])[0])
        elif record.tag in (0x0C, 0x1C):
            if current == dump:
                model.segments += 1
                _parse_segment(model, record.body, names)
            if record.tag == 0x0C:
                current += 1
        elif record.tag == 0x2C:
            current += 1
    for class_id, heap_class in model.classes.items():
        heap_class.name = class_names.get(class_id)
    return model


def _parse_segment(model, body, names):
    u2 = lambda at: struct.unpack(">H", body[at:at + 2])[0]
    u4 = lambda at: struct.unpack(">I", body[at:at + 4])[0]
    u8 = lambda at: struct.unpack(">Q", body[at:at + 8])[0]
    at = 0
    while at < len(body):
        sub = body[at]
        at += 1
        if sub in ROOT_SIZES:
            model.roots.append((sub, u8(at)))
            at += ROOT_SIZES[sub]
        elif sub == 0x20:
            heap_class = HeapClass(u8(at))
            heap_class.super_id, heap_class.loader_id = u8(at + 12), u8(at + 20)
            heap_class.signers_id, heap_class.domain_id = u8(at + 28), u8(at + 36)
            heap_class.instance_size = u4(at + 60)
            at += 64
            count = u2(at)
            at += 2
            for _ in range(count):
                kind = body[at + 2]
                heap_class.constant_pool.append((u2(at), kind, _value(body, at + 3, kind)))
                at += 3 + VALUE_SIZES[kind]
            count = u2(at)
            at += 2
            for _ in range(count):
                kind = body[at + 8]
                heap_class.statics.append((names.get(u8(at)), kind, _value(body, at + 9, kind)))
                at += 9 + VALUE_SIZES[kind]
            count = u2(at)
            at += 2
            for _ in range(count):
                heap_class.fields.append((names.get(u8(at)), body[at + 8]))
                at += 9
            model.classes[heap_class.id] = heap_class
        elif sub == 0x21:
            length = u4(at + 20)
            model.instances[u8(at)] = (u8(at + 12), body[at + 24:at + 24 + length])
            model.instance_traces[u8(at)] = u4(at + 8)
            at += 24 + length
        elif sub == 0x22:
            count = u4(at + 12)
            elements = list(struct.unpack(f">{count}Q", body[at + 24:at + 24 + 8 * count]))
            model.object_arrays[u8(at)] = (u8(at + 16), elements)
            at += 24 + 8 * count
        elif sub == 0x23:
            count, kind = u4(at + 12), body[at + 16]
            size = VALUE_SIZES[kind]
            data = body[at + 17:at + 17 + size * count]
            model.primitive_arrays[u8(at)] = (kind, list(struct.unpack(f">{count}{FORMATS[kind][1]}", data)))
            at += 17 + size * count
        else:
            raise ValueError(f"unknown heap sub-record {sub:#x} at {at - 1}")


def _value(body, at, kind):
    return struct.unpack(FORMATS[kind], body[at:at + VALUE_SIZES[kind]])[0]
