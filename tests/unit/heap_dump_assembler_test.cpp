// Heap dumps without a JVM: class layouts (JVMTI field indices -> INSTANCE DUMP offsets), the
// assembler's records (binary and text), and the text dump's staging file.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "base/ids.h"
#include "hand_bytes.h"
#include "heap_dump/heap_dump_assembler.h"
#include "heap_dump/heap_dump_layout.h"
#include "heap_dump/heap_dump_staging.h"
#include "heap_dump/heap_dump_writer.h"
#include "memory_stream.h"
#include "records/record_writer.h"
#include "records/text_writer.h"
#include "sink/output_stream.h"

namespace fasthprof {
namespace {

uint64_t class_id(uint64_t n) { return make_registry_object_id(RegistryObjectKind::kClass, n); }

DeclaredField field(const char* name, BasicType type, bool is_static = false) {
  DeclaredField f;
  f.name = name;
  f.type = type;
  f.is_static = is_static;
  return f;
}

// A class with no interfaces and no static values; super_id 0 for java.lang.Object and interfaces.
ClassDescription describe(uint64_t id, uint64_t super_id, const char* name, std::vector<DeclaredField> fields = {}) {
  ClassDescription description;
  description.class_id = id;
  description.super_id = super_id;
  description.name = name;
  description.fields = std::move(fields);
  return description;
}

// java.lang.Object, java.lang.Class, an interface with one constant, Base implements it,
// Leaf extends Base, Object[], int[], and a class with a huge registry index (hash lookup).
void add_classes(ClassLayoutTable* table) {
  table->add(describe(class_id(1), 0, "java.lang.Object"));
  table->add(describe(class_id(2), class_id(1), "java.lang.Class", {field("name", BasicType::kObject)}));

  ClassDescription marked = describe(class_id(3), 0, "Marked", {field("MARK", BasicType::kInt, true)});
  marked.is_interface = true;
  marked.static_values = {{0, BasicType::kInt, 77}};
  table->add(marked);

  ClassDescription base = describe(class_id(4), class_id(1), "Base",
                                   {field("S", BasicType::kInt, true), field("a", BasicType::kInt),
                                    field("r", BasicType::kObject)});
  base.interfaces = {class_id(3)};
  base.static_values = {{0, BasicType::kInt, 5}};
  table->add(base);

  ClassDescription leaf = describe(class_id(5), class_id(4), "Leaf",
                                   {field("b", BasicType::kByte), field("next", BasicType::kObject),
                                    field("T", BasicType::kLong, true)});
  leaf.static_values = {{0, BasicType::kLong, 9}};
  table->add(leaf);

  ClassDescription objects = describe(class_id(6), class_id(1), "java.lang.Object[]");
  objects.is_array = true;
  table->add(objects);

  ClassDescription ints = describe(class_id(7), class_id(1), "int[]");
  ints.is_array = true;
  ints.element_type = BasicType::kInt;
  table->add(ints);

  // listed after its superclass's superclass chain
  table->add(describe(make_id(IdSpace::kFirstHeapDumpTag, 12345), class_id(5), "Far"));
  table->resolve();
}

TEST(HeapDumpLayout, JvmtiIndicesCountInterfaceFieldsThenObjectDownToTheClass) {
  ClassLayoutTable table;
  add_classes(&table);
  const ClassLayout* leaf = table.find(class_id(5));
  ASSERT_NE(nullptr, leaf);
  // Leaf implements Marked through Base: Marked's one field takes index 0.
  EXPECT_EQ(1u, leaf->index_base);
  // Values: Leaf's own (b: 1 byte, next: 8), then Base's (a: 4, r: 8).
  EXPECT_EQ(21u, leaf->instance_size);
  EXPECT_EQ(nullptr, leaf->slot(0));  // Marked.MARK
  EXPECT_EQ(nullptr, leaf->slot(1));  // Base.S is static
  ASSERT_NE(nullptr, leaf->slot(2));
  EXPECT_EQ(9u, leaf->slot(2)->offset);   // Base.a
  EXPECT_EQ(13u, leaf->slot(3)->offset);  // Base.r
  EXPECT_EQ(0u, leaf->slot(4)->offset);   // Leaf.b
  EXPECT_EQ(1u, leaf->slot(5)->offset);   // Leaf.next
  EXPECT_EQ(nullptr, leaf->slot(6));      // Leaf.T is static
  EXPECT_EQ(nullptr, leaf->slot(7));      // past the end
  EXPECT_EQ(nullptr, leaf->slot(-1));
  ASSERT_EQ(2u, leaf->own_fields.size());
  EXPECT_EQ(BasicType::kByte, leaf->own_fields[0].type);

  const ClassLayout* far = table.find(make_id(IdSpace::kFirstHeapDumpTag, 12345));
  ASSERT_NE(nullptr, far);
  EXPECT_EQ(21u, far->instance_size);
  EXPECT_EQ(nullptr, table.find(class_id(99)));
  EXPECT_EQ(nullptr, table.find(make_id(IdSpace::kFirstHeapDumpTag, 1)));
}

TEST(HeapDumpLayout, SuperclassesComeFirst) {
  ClassLayoutTable table;
  add_classes(&table);
  std::vector<std::string> order;
  table.for_each_superclass_first([&](const ClassLayout& layout) { order.push_back(layout.description->name); });
  ASSERT_EQ(8u, order.size());
  auto at = [&](const char* name) { return std::find(order.begin(), order.end(), name) - order.begin(); };
  EXPECT_LT(at("java.lang.Object"), at("Base"));
  EXPECT_LT(at("Base"), at("Leaf"));
  EXPECT_LT(at("Leaf"), at("Far"));
}

// Finds needle in haystack.
bool contains(const Bytes& haystack, const Bytes& needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end()) != haystack.end();
}

struct Value {
  uint64_t value;
  int size;  // bytes
};

// Appends each value big-endian in its size.
void put(Bytes* out, std::initializer_list<Value> values) {
  for (Value v : values) {
    for (int i = v.size - 1; i >= 0; --i) out->push_back(static_cast<uint8_t>(v.value >> (8 * i)));
  }
}

constexpr uint32_t kTrace = 300000;  // the stack trace serial of every object below

// An INSTANCE DUMP (0x21) up to its count of value bytes; the values follow.
Bytes instance_head(uint64_t object, uint64_t klass, uint32_t value_bytes) {
  Bytes head = {0x21};
  put(&head, {{object, 8}, {kTrace, 4}, {klass, 8}, {value_bytes, 4}});
  return head;
}

// An OBJECT ARRAY DUMP (0x22) with all its elements.
Bytes object_array(uint64_t object, uint64_t array_class, std::initializer_list<uint64_t> elements) {
  Bytes array = {0x22};
  put(&array, {{object, 8}, {kTrace, 4}, {elements.size(), 4}, {array_class, 8}});
  for (uint64_t element : elements) put(&array, {{element, 8}});
  return array;
}

// An int[] PRIMITIVE ARRAY DUMP (0x23) up to its element type; the values follow.
Bytes int_array_head(uint64_t object, uint32_t length) {
  Bytes head = {0x23};
  put(&head, {{object, 8}, {kTrace, 4}, {length, 4}, {10, 1}});
  return head;
}

// The binary path of a heap dump, into memory: assembler, output, segments, records.
struct BinaryDump {
  explicit BinaryDump(const ClassLayoutTable& table, bool primfields = true, HeapDumpWriterOptions options = {})
      : segments(records, options), assembler(table, out, class_id(1), class_id(2), primfields) {}

  // Ends the dump: its last segment and every record reach the stream.
  void finish() {
    segments.finish();
    records.flush();
  }

  bool holds(const Bytes& record) const { return contains(stream.bytes, record); }

  MemoryStream stream;
  RecordWriter records{stream, 0, [] { return uint64_t{0}; }};
  HeapDumpWriter segments;
  BinaryHeapDumpOutput out{segments};
  HeapDumpAssembler assembler;
};

// The text path of a heap dump: roots and objects into two memory streams.
struct TextDump {
  explicit TextDump(const ClassLayoutTable& table) : assembler(table, out, class_id(1), class_id(2), true) {}

  // The text written so far to either stream.
  std::string roots_text() {
    roots.flush();
    return roots_stream.text();
  }
  std::string objects_text() {
    objects.flush();
    return objects_stream.text();
  }

  MemoryStream roots_stream;
  MemoryStream objects_stream;
  TextWriter roots{roots_stream};
  TextWriter objects{objects_stream};
  TextHeapDumpOutput out{roots, objects};
  HeapDumpAssembler assembler;
};

TEST(HeapDumpAssembler, InstanceValuesLandWhereTheClassDumpSaysInBigEndian) {
  ClassLayoutTable table;
  add_classes(&table);
  BinaryDump dump(table);
  HeapDumpAssembler& assembler = dump.assembler;
  assembler.write_classes();
  assembler.begin_object(0x2000000000000010, class_id(5), kTrace, -1, 0);
  assembler.field(5, 0x2000000000000011);       // next
  assembler.primitive_field(4, 0xF9);           // b = -7
  assembler.primitive_field(2, 0x01020304);     // a
  assembler.field(6, 0x77);                     // a static: ignored
  assembler.field(42, 0x77);                    // unknown index: ignored
  assembler.begin_object(0x2000000000000012, class_id(6), kTrace, 4, 0);  // Object[4], nulls kept
  assembler.element(1, 0x2000000000000010);
  assembler.begin_object(0x2000000000000013, class_id(7), kTrace, 2, 0);
  int32_t values[] = {1, -1};
  assembler.primitive_array(BasicType::kInt, values, 2);
  assembler.begin_object(0x2000000000000014, make_id(IdSpace::kFirstHeapDumpTag, 777), kTrace, -1, 0);
  assembler.field(1, 5);  // no layout: ignored
  assembler.skip_object();  // an object the dump leaves out (the class-field holder)
  assembler.element(0, 5);
  assembler.end_object();
  assembler.class_instance(0x2000000000000015, 0);
  dump.finish();

  Bytes instance = instance_head(0x2000000000000010, class_id(5), 21);
  put(&instance, {{0xF9, 1}, {0x2000000000000011, 8}, {0x01020304, 4}, {0, 8}});
  EXPECT_TRUE(dump.holds(instance));
  EXPECT_TRUE(dump.holds(object_array(0x2000000000000012, class_id(6), {0, 0x2000000000000010, 0, 0})));
  Bytes ints = int_array_head(0x2000000000000013, 2);
  put(&ints, {{1, 4}, {0xFFFFFFFF, 4}});
  EXPECT_TRUE(dump.holds(ints));

  // The unknown class's object is written as a java.lang.Object.
  EXPECT_TRUE(dump.holds(instance_head(0x2000000000000014, class_id(1), 0)));
  Bytes mirror = instance_head(0x2000000000000015, class_id(2), 8);
  put(&mirror, {{0, 8}});
  EXPECT_TRUE(dump.holds(mirror));

  const HeapDumpCounts& counts = assembler.counts();
  EXPECT_EQ(3u, counts.instances);  // Leaf, the unknown class's object, the mirror
  EXPECT_EQ(1u, counts.object_arrays);
  EXPECT_EQ(1u, counts.primitive_arrays);
  EXPECT_EQ(8u, counts.class_dumps);
  EXPECT_EQ(1u, counts.unknown_classes);
}

// Every value size (1, 2, 4 and 8 bytes, and IDs) is stored big-endian at its slot, through the
// begin_object() that takes the layout the walk looked up.
TEST(HeapDumpAssembler, EveryFieldTypeIsStoredBigEndianWithTheCallersLayout) {
  ClassLayoutTable table;
  table.add(describe(class_id(1), 0, "java.lang.Object"));
  table.add(describe(class_id(2), class_id(1), "java.lang.Class"));
  table.add(describe(class_id(3), class_id(1), "AllTypes",
                     {field("z", BasicType::kBoolean), field("c", BasicType::kChar), field("s", BasicType::kShort),
                      field("f", BasicType::kFloat), field("d", BasicType::kDouble), field("b", BasicType::kByte),
                      field("i", BasicType::kInt), field("j", BasicType::kLong), field("r", BasicType::kObject)}));
  table.resolve();
  const ClassLayout* layout = table.find(class_id(3));
  ASSERT_NE(nullptr, layout);

  // JVMTI indices: java.lang.Object has no fields, so AllTypes's start at 0. Each value with its
  // size in the INSTANCE DUMP.
  const Value values[] = {{1, 1}, {0xC3A9, 2}, {0x8001, 2}, {0x3FC00000, 4}, {0x400921FB54442D18, 8},
                          {0x80, 1}, {0xDEADBEEF, 4}, {0x0102030405060708, 8}};
  BinaryDump dump(table);
  dump.assembler.begin_object(0x2000000000000020, class_id(3), layout, kTrace, -1, 0);
  for (int index = 0; index < 8; ++index) dump.assembler.primitive_field(index, values[index].value);
  dump.assembler.field(8, 0x2000000000000021);
  dump.assembler.end_object();
  dump.finish();

  Bytes instance = instance_head(0x2000000000000020, class_id(3), 1 + 2 + 2 + 4 + 8 + 1 + 4 + 8 + 8);
  for (Value value : values) put(&instance, {value});
  put(&instance, {{0x2000000000000021, 8}});
  EXPECT_TRUE(dump.holds(instance));
  EXPECT_EQ(1u, dump.assembler.counts().instances);
}

TEST(HeapDumpAssembler, PrimitiveFieldsAndArraysCanBeLeftOut) {
  ClassLayoutTable table;
  add_classes(&table);
  BinaryDump dump(table, false);
  dump.assembler.begin_object(0x2000000000000010, class_id(5), kTrace, -1, 0);
  dump.assembler.primitive_field(2, 0x01020304);
  dump.assembler.field(5, 0x2000000000000011);
  dump.assembler.begin_object(0x2000000000000013, class_id(7), kTrace, 2, 0);  // no contents reported
  dump.assembler.end_object();
  dump.finish();
  Bytes instance = instance_head(0x2000000000000010, class_id(5), 21);
  put(&instance, {{0, 1}, {0x2000000000000011, 8}, {0, 4} /* primfields=n: zero */, {0, 8}});
  EXPECT_TRUE(dump.holds(instance));
  EXPECT_TRUE(dump.holds(int_array_head(0x2000000000000013, 0)));
}

TEST(HeapDumpAssembler, TextLinesFollowTheOriginalColumns) {
  ClassLayoutTable table;
  add_classes(&table);
  TextDump dump(table);
  HeapDumpAssembler& assembler = dump.assembler;
  assembler.root_thread(0x30200000000001, 200001, 300001);
  assembler.root_java_frame(0x2000000000000010, 200001, 2);
  assembler.root_system_class(class_id(5));
  assembler.root_system_class(0x2000000000000012);  // an array the boot loader holds
  assembler.begin_object(0x2000000000000010, class_id(5), kTrace, -1, 32);
  assembler.field(3, 0x2000000000000011);  // Base.r
  assembler.field(5, 0x2000000000000012);  // Leaf.next
  assembler.begin_object(0x2000000000000012, class_id(6), kTrace, 3, 32);
  assembler.element(2, 0x2000000000000010);
  assembler.end_object();
  assembler.write_classes();
  EXPECT_EQ(2u, assembler.counts().objects());
  EXPECT_EQ(64u, assembler.counts().bytes);

  std::string roots = dump.roots_text();
  EXPECT_NE(std::string::npos, roots.find("ROOT 30200000000001 (kind=<thread>, id=200001, trace=300001)\n"
                                          "ROOT 30200000000001 (kind=<thread block>, thread=200001)\n"))
      << roots;
  EXPECT_NE(std::string::npos, roots.find("(kind=<system class>, name=Leaf)")) << roots;
  EXPECT_NE(std::string::npos, roots.find("ROOT 2000000000000012 (kind=<unknown>)\n")) << roots;
  EXPECT_EQ(std::string::npos, roots.find("name=)")) << roots;
  std::string objects = dump.objects_text();
  // Fields in JVMTI order: Base's before Leaf's.
  std::string leaf = "OBJ 2000000000000010 (sz=32, trace=300000, class=Leaf@301000000000005)\n"
                     "\tr\t\t2000000000000011\n"
                     "\tnext\t\t2000000000000012\n";
  EXPECT_NE(std::string::npos, objects.find(leaf)) << objects;
  EXPECT_NE(std::string::npos, objects.find("nelems=3, elem type=java.lang.Object[]@301000000000006)\n"
                                            "\t[2]\t\t2000000000000010\n"))
      << objects;
  EXPECT_NE(std::string::npos, objects.find("CLS 301000000000005 (name=Leaf, trace=300000)\n"
                                            "\tsuper\t\t301000000000004\n"))
      << objects;
  EXPECT_LT(objects.find("OBJ "), objects.find("CLS "));
}

// Object arrays stream with the length the walk carried; one without a carried length is
// collected and gets highest non-null index + 1. Out-of-order elements are dropped and counted.
TEST(HeapDumpAssembler, ObjectArraysStreamWithTheCarriedLength) {
  ClassLayoutTable table;
  add_classes(&table);
  BinaryDump dump(table, true, {.segment_size = 64});  // the 5-element array gets its own segment
  HeapDumpAssembler& assembler = dump.assembler;
  assembler.begin_object(0x2000000000000020, class_id(6), kTrace, 5, 0);
  assembler.element(1, 0x2000000000000021);
  assembler.element(3, 0x2000000000000023);
  assembler.element(0, 0x2000000000000099);  // out of order: dropped
  assembler.begin_object(0x2000000000000030, class_id(6), kTrace, -1, 0);
  assembler.element(2, 0x2000000000000032);
  assembler.element(0, 0x2000000000000030);  // collected: any order
  assembler.end_object();
  dump.finish();

  Bytes streamed = object_array(0x2000000000000020, class_id(6), {0, 0x2000000000000021, 0, 0x2000000000000023, 0});
  Bytes segment_header = {0x1C, 0, 0, 0, 0};
  put(&segment_header, {{streamed.size(), 4}});
  EXPECT_TRUE(dump.holds(concat({segment_header, streamed})));
  EXPECT_TRUE(dump.holds(object_array(0x2000000000000030, class_id(6), {0x2000000000000030, 0, 0x2000000000000032})));
  EXPECT_EQ(2u, assembler.counts().object_arrays);
  EXPECT_EQ(1u, assembler.counts().dropped_elements);
}

TEST(HeapDumpAssembler, TextObjectArraysStreamTheirLines) {
  ClassLayoutTable table;
  add_classes(&table);
  TextDump dump(table);
  HeapDumpAssembler& assembler = dump.assembler;
  assembler.begin_object(0x2000000000000020, class_id(6), kTrace, 6, 40);
  assembler.element(1, 0x2000000000000021);
  assembler.element(4, 0x2000000000000024);
  assembler.element(4, 0x2000000000000025);  // repeated: dropped
  assembler.element(6, 0x2000000000000026);  // past the length: dropped
  assembler.begin_object(0x2000000000000030, class_id(6), kTrace, -1, 24);
  assembler.element(2, 0x2000000000000032);
  assembler.end_object();
  EXPECT_EQ("ARR 2000000000000020 (sz=40, trace=300000, nelems=6, elem type=java.lang.Object[]@301000000000006)\n"
            "\t[1]\t\t2000000000000021\n"
            "\t[4]\t\t2000000000000024\n"
            "ARR 2000000000000030 (sz=24, trace=300000, nelems=3, elem type=java.lang.Object[]@301000000000006)\n"
            "\t[2]\t\t2000000000000032\n",
            dump.objects_text());
  EXPECT_EQ(2u, assembler.counts().object_arrays);
  EXPECT_EQ(64u, assembler.counts().bytes);
  EXPECT_EQ(2u, assembler.counts().dropped_elements);
}

TEST(HeapDumpStaging, CopiesBackAndLeavesNoFileBehind) {
  char folder_template[] = "/tmp/fasthprof-staging-XXXXXX";
  ASSERT_NE(nullptr, mkdtemp(folder_template));
  std::string folder = folder_template;
  std::string error;
  std::unique_ptr<StagingFile> staged = StagingFile::create(folder, &error);
  ASSERT_NE(nullptr, staged) << error;
  std::string line(1000, 'x');
  for (int i = 0; i < 3000; ++i) staged->write(line.data(), line.size());  // past the buffer
  EXPECT_EQ(3000000u, staged->size());
  DIR* dir = opendir(folder.c_str());
  int entries = 0;
  while (dirent* entry = readdir(dir)) entries += entry->d_name[0] != '.' || std::string(entry->d_name).size() > 2;
  closedir(dir);
  EXPECT_EQ(0, entries) << "the staging file is unlinked at once";
  MemoryStream out;
  ASSERT_TRUE(staged->copy_to(out, &error)) << error;
  EXPECT_EQ(3000000u, out.bytes.size());
  EXPECT_EQ(0u, staged->size());
  staged->write("again", 5);
  MemoryStream second;
  ASSERT_TRUE(staged->copy_to(second, &error)) << error;
  EXPECT_EQ("again", second.text());
  staged.reset();
  rmdir(folder.c_str());
  EXPECT_EQ(nullptr, StagingFile::create("/nonexistent-folder-of-fasthprof", &error));
  EXPECT_NE(std::string::npos, error.find("/nonexistent-folder-of-fasthprof")) << error;
  EXPECT_EQ("/a/b", folder_of("/a/b/c.hprof"));
  EXPECT_EQ(".", folder_of("c.hprof"));
  EXPECT_EQ("/", folder_of("/c.hprof"));
}

}  // namespace
}  // namespace fasthprof
