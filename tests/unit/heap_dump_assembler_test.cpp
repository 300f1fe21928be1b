// Heap dumps without a JVM: class layouts (JVMTI field indices -> INSTANCE DUMP offsets), the
// assembler's records (binary and text), and the text dump's staging file.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/ids.h"
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

using Bytes = std::vector<uint8_t>;

uint64_t class_id(uint64_t n) { return make_registry_object_id(RegistryObjectKind::kClass, n); }

DeclaredField field(const char* name, BasicType type, bool is_static = false) {
  DeclaredField f;
  f.name = name;
  f.type = type;
  f.is_static = is_static;
  return f;
}

// java.lang.Object, java.lang.Class, an interface with one constant, Base implements it,
// Leaf extends Base, Object[], int[], and a class with a huge registry index (hash lookup).
void add_classes(ClassLayoutTable* table) {
  ClassDescription object;
  object.class_id = class_id(1);
  object.name = "java.lang.Object";
  table->add(object);

  ClassDescription klass;
  klass.class_id = class_id(2);
  klass.super_id = class_id(1);
  klass.name = "java.lang.Class";
  klass.fields = {field("name", BasicType::kObject)};
  table->add(klass);

  ClassDescription marked;
  marked.class_id = class_id(3);
  marked.name = "Marked";
  marked.is_interface = true;
  marked.fields = {field("MARK", BasicType::kInt, true)};
  marked.static_values = {{0, BasicType::kInt, 77}};
  table->add(marked);

  ClassDescription base;
  base.class_id = class_id(4);
  base.super_id = class_id(1);
  base.name = "Base";
  base.interfaces = {class_id(3)};
  base.fields = {field("S", BasicType::kInt, true), field("a", BasicType::kInt), field("r", BasicType::kObject)};
  base.static_values = {{0, BasicType::kInt, 5}};
  table->add(base);

  ClassDescription leaf;
  leaf.class_id = class_id(5);
  leaf.super_id = class_id(4);
  leaf.name = "Leaf";
  leaf.fields = {field("b", BasicType::kByte), field("next", BasicType::kObject),
                 field("T", BasicType::kLong, true)};
  leaf.static_values = {{0, BasicType::kLong, 9}};
  table->add(leaf);

  ClassDescription objects;
  objects.class_id = class_id(6);
  objects.super_id = class_id(1);
  objects.name = "java.lang.Object[]";
  objects.is_array = true;
  table->add(objects);

  ClassDescription ints;
  ints.class_id = class_id(7);
  ints.super_id = class_id(1);
  ints.name = "int[]";
  ints.is_array = true;
  ints.element_type = BasicType::kInt;
  table->add(ints);

  ClassDescription far;
  far.class_id = make_id(IdSpace::kFirstHeapDumpTag, 12345);
  far.super_id = class_id(5);  // listed after its superclass's superclass chain
  far.name = "Far";
  table->add(far);
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

void put(Bytes* out, uint64_t value, int size) {
  for (int i = size - 1; i >= 0; --i) out->push_back(static_cast<uint8_t>(value >> (8 * i)));
}

Bytes concat_bytes(const Bytes& first, const Bytes& second) {
  Bytes all = first;
  all.insert(all.end(), second.begin(), second.end());
  return all;
}

TEST(HeapDumpAssembler, InstanceValuesLandWhereTheClassDumpSaysInBigEndian) {
  ClassLayoutTable table;
  add_classes(&table);
  MemoryStream stream;
  RecordWriter records(stream, 0, [] { return uint64_t{0}; });
  HeapDumpWriter segments(records);
  BinaryHeapDumpOutput out(segments);
  HeapDumpAssembler assembler(table, out, class_id(1), class_id(2), true);
  assembler.write_classes();
  assembler.begin_object(0x2000000000000010, class_id(5), 300000, -1, 0);
  assembler.field(5, 0x2000000000000011);       // next
  assembler.primitive_field(4, 0xF9);           // b = -7
  assembler.primitive_field(2, 0x01020304);     // a
  assembler.field(6, 0x77);                     // a static: ignored
  assembler.field(42, 0x77);                    // unknown index: ignored
  assembler.begin_object(0x2000000000000012, class_id(6), 300000, 4, 0);  // Object[4], nulls kept
  assembler.element(1, 0x2000000000000010);
  assembler.begin_object(0x2000000000000013, class_id(7), 300000, 2, 0);
  int32_t values[] = {1, -1};
  assembler.primitive_array(BasicType::kInt, values, 2);
  assembler.begin_object(0x2000000000000014, make_id(IdSpace::kFirstHeapDumpTag, 777), 300000, -1, 0);
  assembler.field(1, 5);  // no layout: ignored
  assembler.skip_object();  // an object the dump leaves out (the class-field holder)
  assembler.element(0, 5);
  assembler.end_object();
  assembler.class_instance(0x2000000000000015, 0);
  segments.finish();
  records.flush();

  Bytes instance = {0x21};
  put(&instance, 0x2000000000000010, 8);
  put(&instance, 300000, 4);
  put(&instance, class_id(5), 8);
  put(&instance, 21, 4);
  put(&instance, 0xF9, 1);
  put(&instance, 0x2000000000000011, 8);
  put(&instance, 0x01020304, 4);
  put(&instance, 0, 8);
  EXPECT_TRUE(contains(stream.bytes, instance));

  Bytes array = {0x22};
  put(&array, 0x2000000000000012, 8);
  put(&array, 300000, 4);
  put(&array, 4, 4);
  put(&array, class_id(6), 8);
  put(&array, 0, 8);
  put(&array, 0x2000000000000010, 8);
  put(&array, 0, 8);
  put(&array, 0, 8);
  EXPECT_TRUE(contains(stream.bytes, array));

  Bytes ints = {0x23};
  put(&ints, 0x2000000000000013, 8);
  put(&ints, 300000, 4);
  put(&ints, 2, 4);
  ints.push_back(10);
  put(&ints, 1, 4);
  put(&ints, 0xFFFFFFFF, 4);
  EXPECT_TRUE(contains(stream.bytes, ints));

  // The unknown class's object is written as a java.lang.Object.
  Bytes unknown = {0x21};
  put(&unknown, 0x2000000000000014, 8);
  put(&unknown, 300000, 4);
  put(&unknown, class_id(1), 8);
  put(&unknown, 0, 4);
  EXPECT_TRUE(contains(stream.bytes, unknown));
  Bytes mirror = {0x21};
  put(&mirror, 0x2000000000000015, 8);
  put(&mirror, 300000, 4);
  put(&mirror, class_id(2), 8);
  put(&mirror, 8, 4);
  put(&mirror, 0, 8);
  EXPECT_TRUE(contains(stream.bytes, mirror));

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
  ClassDescription object;
  object.class_id = class_id(1);
  object.name = "java.lang.Object";
  table.add(object);
  ClassDescription klass;
  klass.class_id = class_id(2);
  klass.super_id = class_id(1);
  klass.name = "java.lang.Class";
  table.add(klass);
  ClassDescription all;
  all.class_id = class_id(3);
  all.super_id = class_id(1);
  all.name = "AllTypes";
  all.fields = {field("z", BasicType::kBoolean), field("c", BasicType::kChar), field("s", BasicType::kShort),
                field("f", BasicType::kFloat), field("d", BasicType::kDouble), field("b", BasicType::kByte),
                field("i", BasicType::kInt), field("j", BasicType::kLong), field("r", BasicType::kObject)};
  table.add(all);
  table.resolve();
  const ClassLayout* layout = table.find(class_id(3));
  ASSERT_NE(nullptr, layout);

  MemoryStream stream;
  RecordWriter records(stream, 0, [] { return uint64_t{0}; });
  HeapDumpWriter segments(records);
  BinaryHeapDumpOutput out(segments);
  HeapDumpAssembler assembler(table, out, class_id(1), class_id(2), true);
  assembler.begin_object(0x2000000000000020, class_id(3), layout, 300000, -1, 0);
  // JVMTI indices: java.lang.Object has no fields, so AllTypes's start at 0.
  assembler.primitive_field(0, 1);
  assembler.primitive_field(1, 0xC3A9);
  assembler.primitive_field(2, 0x8001);
  assembler.primitive_field(3, 0x3FC00000);
  assembler.primitive_field(4, 0x400921FB54442D18);
  assembler.primitive_field(5, 0x80);
  assembler.primitive_field(6, 0xDEADBEEF);
  assembler.primitive_field(7, 0x0102030405060708);
  assembler.field(8, 0x2000000000000021);
  assembler.end_object();
  segments.finish();
  records.flush();

  Bytes instance = {0x21};
  put(&instance, 0x2000000000000020, 8);
  put(&instance, 300000, 4);
  put(&instance, class_id(3), 8);
  put(&instance, 1 + 2 + 2 + 4 + 8 + 1 + 4 + 8 + 8, 4);
  put(&instance, 1, 1);
  put(&instance, 0xC3A9, 2);
  put(&instance, 0x8001, 2);
  put(&instance, 0x3FC00000, 4);
  put(&instance, 0x400921FB54442D18, 8);
  put(&instance, 0x80, 1);
  put(&instance, 0xDEADBEEF, 4);
  put(&instance, 0x0102030405060708, 8);
  put(&instance, 0x2000000000000021, 8);
  EXPECT_TRUE(contains(stream.bytes, instance));
  EXPECT_EQ(1u, assembler.counts().instances);
}

TEST(HeapDumpAssembler, PrimitiveFieldsAndArraysCanBeLeftOut) {
  ClassLayoutTable table;
  add_classes(&table);
  MemoryStream stream;
  RecordWriter records(stream, 0, [] { return uint64_t{0}; });
  HeapDumpWriter segments(records);
  BinaryHeapDumpOutput out(segments);
  HeapDumpAssembler assembler(table, out, class_id(1), class_id(2), false);
  assembler.begin_object(0x2000000000000010, class_id(5), 300000, -1, 0);
  assembler.primitive_field(2, 0x01020304);
  assembler.field(5, 0x2000000000000011);
  assembler.begin_object(0x2000000000000013, class_id(7), 300000, 2, 0);  // no contents reported
  assembler.end_object();
  segments.finish();
  records.flush();
  Bytes instance = {0x21};
  put(&instance, 0x2000000000000010, 8);
  put(&instance, 300000, 4);
  put(&instance, class_id(5), 8);
  put(&instance, 21, 4);
  put(&instance, 0, 1);
  put(&instance, 0x2000000000000011, 8);
  put(&instance, 0, 4);  // primfields=n: zero
  put(&instance, 0, 8);
  EXPECT_TRUE(contains(stream.bytes, instance));
  Bytes empty = {0x23};
  put(&empty, 0x2000000000000013, 8);
  put(&empty, 300000, 4);
  put(&empty, 0, 4);
  empty.push_back(10);
  EXPECT_TRUE(contains(stream.bytes, empty));
}

TEST(HeapDumpAssembler, TextLinesFollowTheOriginalColumns) {
  ClassLayoutTable table;
  add_classes(&table);
  MemoryStream roots_stream;
  MemoryStream objects_stream;
  {
    TextWriter roots(roots_stream);
    TextWriter objects(objects_stream);
    TextHeapDumpOutput out(roots, objects);
    HeapDumpAssembler assembler(table, out, class_id(1), class_id(2), true);
    assembler.root_thread(0x30200000000001, 200001, 300001);
    assembler.root_java_frame(0x2000000000000010, 200001, 2);
    assembler.root_system_class(class_id(5));
    assembler.root_system_class(0x2000000000000012);  // an array the boot loader holds
    assembler.begin_object(0x2000000000000010, class_id(5), 300000, -1, 32);
    assembler.field(3, 0x2000000000000011);  // Base.r
    assembler.field(5, 0x2000000000000012);  // Leaf.next
    assembler.begin_object(0x2000000000000012, class_id(6), 300000, 3, 32);
    assembler.element(2, 0x2000000000000010);
    assembler.end_object();
    assembler.write_classes();
    EXPECT_EQ(2u, assembler.counts().objects());
    EXPECT_EQ(64u, assembler.counts().bytes);
  }
  std::string roots = roots_stream.text();
  EXPECT_NE(std::string::npos, roots.find("ROOT 30200000000001 (kind=<thread>, id=200001, trace=300001)\n"
                                          "ROOT 30200000000001 (kind=<thread block>, thread=200001)\n"))
      << roots;
  EXPECT_NE(std::string::npos, roots.find("(kind=<system class>, name=Leaf)")) << roots;
  EXPECT_NE(std::string::npos, roots.find("ROOT 2000000000000012 (kind=<unknown>)\n")) << roots;
  EXPECT_EQ(std::string::npos, roots.find("name=)")) << roots;
  std::string objects = objects_stream.text();
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
  MemoryStream stream;
  RecordWriter records(stream, 0, [] { return uint64_t{0}; });
  HeapDumpWriter segments(records, {.segment_size = 64});  // the 5-element array gets its own segment
  BinaryHeapDumpOutput out(segments);
  HeapDumpAssembler assembler(table, out, class_id(1), class_id(2), true);
  assembler.begin_object(0x2000000000000020, class_id(6), 300000, 5, 0);
  assembler.element(1, 0x2000000000000021);
  assembler.element(3, 0x2000000000000023);
  assembler.element(0, 0x2000000000000099);  // out of order: dropped
  assembler.begin_object(0x2000000000000030, class_id(6), 300000, -1, 0);
  assembler.element(2, 0x2000000000000032);
  assembler.element(0, 0x2000000000000030);  // collected: any order
  assembler.end_object();
  segments.finish();
  records.flush();

  Bytes streamed = {0x22};
  put(&streamed, 0x2000000000000020, 8);
  put(&streamed, 300000, 4);
  put(&streamed, 5, 4);
  put(&streamed, class_id(6), 8);
  for (uint64_t id : {0ull, 0x2000000000000021ull, 0ull, 0x2000000000000023ull, 0ull}) put(&streamed, id, 8);
  Bytes segment_header = {0x1C, 0, 0, 0, 0};
  put(&segment_header, streamed.size(), 4);
  EXPECT_TRUE(contains(stream.bytes, concat_bytes(segment_header, streamed)));
  Bytes collected = {0x22};
  put(&collected, 0x2000000000000030, 8);
  put(&collected, 300000, 4);
  put(&collected, 3, 4);
  put(&collected, class_id(6), 8);
  for (uint64_t id : {0x2000000000000030ull, 0ull, 0x2000000000000032ull}) put(&collected, id, 8);
  EXPECT_TRUE(contains(stream.bytes, collected));
  EXPECT_EQ(2u, assembler.counts().object_arrays);
  EXPECT_EQ(1u, assembler.counts().dropped_elements);
}

TEST(HeapDumpAssembler, TextObjectArraysStreamTheirLines) {
  ClassLayoutTable table;
  add_classes(&table);
  MemoryStream roots_stream;
  MemoryStream objects_stream;
  HeapDumpCounts counts;
  {
    TextWriter roots(roots_stream);
    TextWriter objects(objects_stream);
    TextHeapDumpOutput out(roots, objects);
    HeapDumpAssembler assembler(table, out, class_id(1), class_id(2), true);
    assembler.begin_object(0x2000000000000020, class_id(6), 300000, 6, 40);
    assembler.element(1, 0x2000000000000021);
    assembler.element(4, 0x2000000000000024);
    assembler.element(4, 0x2000000000000025);  // repeated: dropped
    assembler.element(6, 0x2000000000000026);  // past the length: dropped
    assembler.begin_object(0x2000000000000030, class_id(6), 300000, -1, 24);
    assembler.element(2, 0x2000000000000032);
    assembler.end_object();
    counts = assembler.counts();
  }
  EXPECT_EQ("ARR 2000000000000020 (sz=40, trace=300000, nelems=6, elem type=java.lang.Object[]@301000000000006)\n"
            "\t[1]\t\t2000000000000021\n"
            "\t[4]\t\t2000000000000024\n"
            "ARR 2000000000000030 (sz=24, trace=300000, nelems=3, elem type=java.lang.Object[]@301000000000006)\n"
            "\t[2]\t\t2000000000000032\n",
            objects_stream.text());
  EXPECT_EQ(2u, counts.object_arrays);
  EXPECT_EQ(64u, counts.bytes);
  EXPECT_EQ(2u, counts.dropped_elements);
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
