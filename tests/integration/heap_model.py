"""The objects of one binary heap dump as plain Python data, for tests that look at what a record
says (the C++ verifier checks the format; this reads the meaning). Written apart from the writer.
8-byte IDs only. Fine for heaps of up to a few hundred thousand objects."""
import hprof_records
from hprof_records import VALUE_SIZES


PRIMITIVE_NAMES = {4: "boolean", 5: "char", 6: "float", 7: "double", 8: "byte", 9: "short", 10: "int", 11: "long"}
DESCRIPTORS = {"Z": "boolean", "B": "byte", "C": "char", "S": "short", "I": "int", "J": "long", "F": "float",
               "D": "double"}


def java_name(name):
    """A LOAD CLASS name in either form (java/lang/String, [[I, [Ljava/lang/String;, Foo[]) in Java
    form; hidden classes as HotSpot names them, and the agent too (Foo$$Lambda+0x...; JVMTI's
    Foo$$Lambda.0x... of older files taken the same way)."""
    name = name.replace(".0x", "+0x")
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
                out.setdefault(name, hprof_records.value(values, at, kind))
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
                    value = hprof_records.value(values, at, 2)
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
    class_names = hprof_records.class_object_names(records)
    dumps = hprof_records.heap_dumps(records)
    segments, end = dumps[dump] if dump < len(dumps) else ([], float("inf"))
    model = HeapModel()
    model.traces = {serial for serial, (offset, _) in hprof_records.stack_traces(records).items() if offset < end}
    for record in segments:
        model.segments += 1
        for sub, _, f in hprof_records.heap_subrecords(record.body, names):
            if sub == 0x20:
                heap_class = HeapClass(f["id"])
                heap_class.super_id, heap_class.loader_id = f["super"], f["loader"]
                heap_class.signers_id, heap_class.domain_id = f["signers"], f["domain"]
                heap_class.instance_size = f["instance_size"]
                heap_class.constant_pool, heap_class.statics, heap_class.fields = \
                    f["constants"], f["statics"], f["fields"]
                model.classes[heap_class.id] = heap_class
            elif sub == 0x21:
                model.instances[f["id"]] = (f["class"], f["values"])
                model.instance_traces[f["id"]] = f["trace"]
            elif sub == 0x22:
                model.object_arrays[f["id"]] = (f["class"], hprof_records.array_elements(f))
            elif sub == 0x23:
                model.primitive_arrays[f["id"]] = (f["type"], hprof_records.array_values(f))
            else:
                model.roots.append((sub, f["id"]))
    for class_id, heap_class in model.classes.items():
        heap_class.name = class_names.get(class_id)
    return model
