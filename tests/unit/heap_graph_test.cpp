// The object graph of a heap dump (hprof/heap_graph.h), its dominators and retained sizes
// (hprof/retained_sizes.h), on a small HPROF file written here byte by byte, with 8- and 4-byte
// identifiers: which references become edges, the weak referent left out or followed, what each
// reference is called, shallow sizes by both rules, a dangling reference, and the second dump of a
// file holding two.
#include "heap_graph.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dominators.h"
#include "hprof_model.h"
#include "retained_sizes.h"

namespace fasthprof {
namespace {

enum : uint64_t {
  kNameObject = 1, kNameReference, kNameWeak, kNameNode, kNameHolder, kNameArrayClass, kNameReferent, kNameNext,
  kNameValue, kNameData, kNameCache,
  kObjectClass = 0x100, kReferenceClass = 0x200, kWeakClass = 0x300, kNodeClass = 0x400, kHolderClass = 0x500,
  kArrayClass = 0x600,
  kArray = 0x1000, kNode1 = 0x2000, kNode2 = 0x2100, kNode3 = 0x2200, kNode4 = 0x2300, kBytes1 = 0x3000,
  kBytes2 = 0x3100, kWeak = 0x4000, kNowhere = 0x9999,
};
constexpr uint8_t kObj = 2;
constexpr uint8_t kInt = 10;
constexpr uint8_t kByte = 8;

// A big-endian HPROF writer of its own: records, and sub-records into the current segment.
struct Writer {
  explicit Writer(uint32_t id_bytes) : id_size(id_bytes) {
    const std::string version = "JAVA PROFILE 1.0.2";
    file.insert(file.end(), version.begin(), version.end());
    file.push_back(0);
    put(&file, id_size, 4);
    put(&file, 0, 8);
  }
  static void put(std::vector<uint8_t>* out, uint64_t value, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<uint8_t>(value >> (8 * i)));
  }
  void id(std::vector<uint8_t>* out, uint64_t value) const { put(out, value, static_cast<int>(id_size)); }
  void record(uint8_t tag, const std::vector<uint8_t>& body) {
    file.push_back(tag);
    put(&file, 0, 4);
    put(&file, body.size(), 4);
    file.insert(file.end(), body.begin(), body.end());
  }
  void utf8(uint64_t name_id, const std::string& text) {
    std::vector<uint8_t> body;
    id(&body, name_id);
    body.insert(body.end(), text.begin(), text.end());
    record(0x01, body);
  }
  void load_class(uint32_t serial, uint64_t class_id, uint64_t name_id) {
    std::vector<uint8_t> body;
    put(&body, serial, 4);
    id(&body, class_id);
    put(&body, 0, 4);
    id(&body, name_id);
    record(0x02, body);
  }
  struct Field {
    uint64_t name;
    uint8_t type;
    uint64_t value;
  };
  void class_dump(uint64_t class_id, uint64_t super, const std::vector<Field>& fields, const std::vector<Field>& statics = {}) {
    segment.push_back(0x20);
    id(&segment, class_id);
    put(&segment, 0, 4);
    for (uint64_t v : {super, uint64_t{0}, uint64_t{0}, uint64_t{0}, uint64_t{0}, uint64_t{0}}) id(&segment, v);
    put(&segment, 0, 4);
    put(&segment, 0, 2);
    put(&segment, statics.size(), 2);
    for (const Field& s : statics) {
      id(&segment, s.name);
      segment.push_back(s.type);
      if (s.type == kObj) id(&segment, s.value); else put(&segment, s.value, 4);
    }
    put(&segment, fields.size(), 2);
    for (const Field& f : fields) {
      id(&segment, f.name);
      segment.push_back(f.type);
    }
  }
  // Field values in the dump's order: the class's own first, then its superclasses'.
  void instance(uint64_t object_id, uint64_t class_id, const std::vector<Field>& values) {
    std::vector<uint8_t> bytes;
    for (const Field& v : values) {
      if (v.type == kObj) id(&bytes, v.value); else put(&bytes, v.value, 4);
    }
    segment.push_back(0x21);
    id(&segment, object_id);
    put(&segment, 0, 4);
    id(&segment, class_id);
    put(&segment, bytes.size(), 4);
    segment.insert(segment.end(), bytes.begin(), bytes.end());
  }
  void object_array(uint64_t object_id, uint64_t class_id, const std::vector<uint64_t>& elements) {
    segment.push_back(0x22);
    id(&segment, object_id);
    put(&segment, 0, 4);
    put(&segment, elements.size(), 4);
    id(&segment, class_id);
    for (uint64_t e : elements) id(&segment, e);
  }
  void byte_array(uint64_t object_id, uint32_t length) {
    segment.push_back(0x23);
    id(&segment, object_id);
    put(&segment, 0, 4);
    put(&segment, length, 4);
    segment.push_back(kByte);
    segment.insert(segment.end(), length, 7);
  }
  void root(uint8_t tag, uint64_t object_id) {
    segment.push_back(tag);
    id(&segment, object_id);
    if (tag == 0x01) id(&segment, 0x77);  // ROOT JNI GLOBAL: the global reference's own ID
  }
  void end_dump() {
    record(0x1C, segment);
    segment.clear();
    record(0x2C, {});
  }

  uint32_t id_size;
  std::vector<uint8_t> file;
  std::vector<uint8_t> segment;
};

// Holder.cache -> an Object[] {n1, null, n2}; n1.next -> n2, n1.data -> byte[100], n2.data ->
// byte[50], n2.next -> an ID no object has; a WeakReference (a JNI global root) whose referent n3
// nothing else holds; n4 held by nothing, pointing at n1. The second dump lacks the JNI global.
std::vector<uint8_t> heap_file(uint32_t id_size) {
  Writer w(id_size);
  const std::vector<std::pair<uint64_t, std::string>> names = {
      {kNameObject, "java.lang.Object"}, {kNameReference, "java.lang.ref.Reference"},
      {kNameWeak, "java.lang.ref.WeakReference"}, {kNameNode, "Node"}, {kNameHolder, "Holder"},
      {kNameArrayClass, "java.lang.Object[]"}, {kNameReferent, "referent"}, {kNameNext, "next"},
      {kNameValue, "value"}, {kNameData, "data"}, {kNameCache, "cache"}};
  for (const auto& [name_id, text] : names) w.utf8(name_id, text);
  const std::vector<std::pair<uint64_t, uint64_t>> classes = {{kObjectClass, kNameObject}, {kReferenceClass, kNameReference},
      {kWeakClass, kNameWeak}, {kNodeClass, kNameNode}, {kHolderClass, kNameHolder}, {kArrayClass, kNameArrayClass}};
  uint32_t serial = 1;
  for (const auto& [class_id, name_id] : classes) w.load_class(serial++, class_id, name_id);
  for (bool with_global : {true, false}) {
    w.class_dump(kObjectClass, 0, {});
    w.class_dump(kReferenceClass, kObjectClass, {{kNameReferent, kObj, 0}});
    w.class_dump(kWeakClass, kReferenceClass, {});
    w.class_dump(kNodeClass, kObjectClass, {{kNameNext, kObj, 0}, {kNameValue, kInt, 0}, {kNameData, kObj, 0}});
    w.class_dump(kHolderClass, kObjectClass, {}, {{kNameCache, kObj, kArray}});
    w.class_dump(kArrayClass, kObjectClass, {});
    w.object_array(kArray, kArrayClass, {kNode1, 0, kNode2});
    w.instance(kNode1, kNodeClass, {{0, kObj, kNode2}, {0, kInt, 5}, {0, kObj, kBytes1}});
    w.instance(kNode2, kNodeClass, {{0, kObj, kNowhere}, {0, kInt, 6}, {0, kObj, kBytes2}});
    w.instance(kNode3, kNodeClass, {{0, kObj, 0}, {0, kInt, 7}, {0, kObj, 0}});
    w.instance(kNode4, kNodeClass, {{0, kObj, kNode1}, {0, kInt, 8}, {0, kObj, 0}});
    w.byte_array(kBytes1, 100);
    w.byte_array(kBytes2, 50);
    w.instance(kWeak, kWeakClass, {{0, kObj, kNode3}});
    w.root(0x05, kHolderClass);
    if (with_global) w.root(0x01, kWeak);
    w.end_dump();
  }
  return w.file;
}

// The model of a file a test wrote itself and the graph of its first dump.
void load_and_build(const Writer& w, HprofModel* model, HeapGraph* graph) {
  ReadError read_error;
  ASSERT_TRUE(model->load(w.file.data(), w.file.size(), &read_error)) << read_error.message;
  std::string error;
  ASSERT_TRUE(graph->build(*model, 0, {}, &error)) << error;
}

class HeapGraphTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    file_ = heap_file(GetParam());
    ReadError error;
    ASSERT_TRUE(model_.load(file_.data(), file_.size(), &error)) << error.message;
    ASSERT_EQ(model_.dumps().size(), 2u);
  }
  void build(size_t dump, HeapGraphOptions options) {
    std::string error;
    ASSERT_TRUE(graph_.build(model_, dump, options, &error)) << error;
    dominators_.compute(graph_.csr(), HeapGraph::kSuperRoot);
  }
  uint32_t node(uint64_t id) const { return graph_.find(id); }
  uint32_t idom(uint64_t id) const { return dominators_.idom(node(id)); }

  std::vector<uint8_t> file_;
  HprofModel model_;
  HeapGraph graph_;
  Dominators dominators_;
};

TEST_P(HeapGraphTest, NodesEdgesAndDominators) {
  build(0, {});
  EXPECT_EQ(graph_.nodes(), 15u);  // 6 classes, 8 objects, the super-root
  EXPECT_EQ(graph_.find(kNowhere), kNoNode);
  EXPECT_EQ(graph_.dangling(), 1u);
  EXPECT_EQ(graph_.roots().size(), 2u);
  EXPECT_EQ(idom(kHolderClass), HeapGraph::kSuperRoot);
  EXPECT_EQ(idom(kArray), node(kHolderClass));
  EXPECT_EQ(idom(kNode1), node(kArray));
  EXPECT_EQ(idom(kNode2), node(kArray));  // the array and n1 both hold it
  EXPECT_EQ(idom(kBytes1), node(kNode1));
  EXPECT_EQ(idom(kBytes2), node(kNode2));
  EXPECT_EQ(idom(kNode3), kNoNode);  // only the weak referent reaches it
  EXPECT_EQ(idom(kNode4), kNoNode);  // garbage pointing into the live heap changes nothing
  EXPECT_EQ(graph_.kind(node(kArray)), ObjectKind::kObjectArray);
  EXPECT_EQ(graph_.type_name(node(kBytes1)), "byte[]");
  EXPECT_EQ(graph_.type_name(node(kHolderClass)), "class Holder");
  EXPECT_EQ(graph_.type_name(node(kNode1)), "Node");
}

TEST_P(HeapGraphTest, WeakReferentsFollowedOnRequest) {
  build(0, HeapGraphOptions{true, false});
  EXPECT_EQ(idom(kNode3), node(kWeak));
  EXPECT_EQ(graph_.reference_name(node(kWeak), node(kNode3)), "java.lang.ref.Reference.referent");
}

TEST_P(HeapGraphTest, ReferenceNames) {
  build(0, {});
  EXPECT_EQ(graph_.reference_name(HeapGraph::kSuperRoot, node(kHolderClass)), "ROOT STICKY CLASS");
  EXPECT_EQ(graph_.reference_name(HeapGraph::kSuperRoot, node(kWeak)), "ROOT JNI GLOBAL");
  EXPECT_EQ(graph_.reference_name(node(kHolderClass), node(kArray)), "static Holder.cache");
  EXPECT_EQ(graph_.reference_name(node(kArray), node(kNode2)), "[2]");
  EXPECT_EQ(graph_.reference_name(node(kNode1), node(kNode2)), "Node.next");
  EXPECT_EQ(graph_.reference_name(node(kNode1), node(kBytes1)), "Node.data");
  EXPECT_EQ(graph_.reference_name(node(kNode1), node(kNodeClass)), "<class>");
  EXPECT_EQ(graph_.reference_name(node(kNode1), node(kArray)), "?");
  // Left out without --weak: no edge, so no name either.
  EXPECT_EQ(graph_.reference_name(node(kWeak), node(kNode3)), "?");
}

TEST_P(HeapGraphTest, ShallowAndRetainedSizes) {
  build(0, {});
  const uint64_t n = GetParam();
  auto round = [](uint64_t bytes) { return (bytes + 7) / 8 * 8; };
  const uint64_t node_bytes = round(2 * n + 2 * n + 4);
  const uint64_t bytes1 = round(2 * n + 4 + 100), bytes2 = round(2 * n + 4 + 50);
  const uint64_t array = round(2 * n + 4 + 3 * n);
  EXPECT_EQ(graph_.shallow_bytes(node(kNode1)), node_bytes);
  EXPECT_EQ(graph_.shallow_bytes(node(kBytes1)), bytes1);
  EXPECT_EQ(graph_.shallow_bytes(node(kHolderClass)), 0u);
  RetainedSizes sizes;
  sizes.compute(graph_, dominators_);
  const uint64_t cache = array + 2 * node_bytes + bytes1 + bytes2;
  EXPECT_EQ(sizes.retained_pre(dominators_.pre(node(kArray))), cache);
  EXPECT_EQ(sizes.retained_pre(dominators_.pre(node(kHolderClass))), cache);
  EXPECT_EQ(sizes.retained_pre(dominators_.pre(node(kNode1))), node_bytes + bytes1);
  EXPECT_EQ(sizes.retained(node(kNode2)), node_bytes + bytes2);
  EXPECT_EQ(sizes.retained(node(kNode4)), 0u);  // unreachable
  const std::vector<uint32_t> top = sizes.top(2);
  ASSERT_EQ(top.size(), 2u);
  // The class and its array retain as much: the smaller ID first.
  EXPECT_EQ(dominators_.node(top[0]), node(kHolderClass));
  EXPECT_EQ(dominators_.node(top[1]), node(kArray));
  // Node: n1 and n2 are both top-level (the array dominates n2), so both count; 4 instances.
  bool found = false;
  for (const ClassRetained& row : sizes.classes()) {
    if (sizes.class_name(graph_, row) != "Node") continue;
    found = true;
    EXPECT_EQ(row.count, 4u);
    EXPECT_EQ(row.shallow, 4 * node_bytes);
    EXPECT_EQ(row.retained, 2 * node_bytes + bytes1 + bytes2);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(sizes.total(), cache + round(2 * n + n));  // and the WeakReference
}

TEST_P(HeapGraphTest, CompressedReferences) {
  build(0, HeapGraphOptions{false, true});
  // 12-byte header; references 4 bytes whatever the file's identifier size: 12 + 4 + 4 + 4.
  EXPECT_EQ(graph_.shallow_bytes(node(kNode1)), 24u);
  EXPECT_EQ(graph_.shallow_bytes(node(kBytes1)), 120u);  // 16 + 100, rounded
  EXPECT_EQ(graph_.shallow_bytes(node(kArray)), 32u);    // 16 + 3 x 4, rounded
}

TEST_P(HeapGraphTest, SecondDump) {
  build(1, {});
  EXPECT_EQ(graph_.roots().size(), 1u);
  EXPECT_EQ(idom(kWeak), kNoNode);  // no JNI global in that dump
  EXPECT_EQ(idom(kNode1), node(kArray));
  std::string error;
  HeapGraph none;
  EXPECT_FALSE(none.build(model_, 2, {}, &error));
  EXPECT_EQ(error, "the file has no heap dump 3");
}

// Framed during the model's pass (HeapGraph as its observer), of either dump: the same graph as
// one framed by build() itself.
TEST_P(HeapGraphTest, CollectedDuringTheModelsPass) {
  for (const size_t dump : {size_t{0}, size_t{1}}) {
    for (const size_t wanted : {dump, HeapGraph::kLastDump}) {
      HprofModel model;
      HeapGraph collected;
      collected.collect(wanted);
      ReadError read_error;
      ASSERT_TRUE(model.load(file_.data(), file_.size(), &read_error, nullptr, &collected)) << read_error.message;
      std::string error;
      ASSERT_TRUE(collected.build(model, dump, {}, &error)) << error;
      HeapGraph framed;
      ASSERT_TRUE(framed.build(model, dump, {}, &error)) << error;
      ASSERT_EQ(collected.nodes(), framed.nodes()) << dump << " " << wanted;
      EXPECT_EQ(collected.references(), framed.references());
      EXPECT_EQ(collected.roots().size(), framed.roots().size());
      const CsrGraph a = collected.csr();
      const CsrGraph b = framed.csr();
      EXPECT_EQ(std::vector<uint32_t>(a.targets, a.targets + a.start[a.nodes]),
                std::vector<uint32_t>(b.targets, b.targets + b.start[b.nodes]));
      for (uint32_t v = 1; v < framed.nodes(); ++v) EXPECT_EQ(collected.id(v), framed.id(v));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(IdSizes, HeapGraphTest, ::testing::Values(8u, 4u));

TEST(HeapGraph, IdsAcrossTheWholeRange) {
  // The directory over IDs 1 and 2^63 + 64 (a fuzzer's): its bucket shift stops at 63.
  Writer w(8);
  w.utf8(kNameHolder, "Holder");
  w.utf8(kNameCache, "cache");
  w.load_class(1, 1, kNameHolder);
  w.class_dump(1, 0, {}, {{kNameCache, kObj, 0x8000000000000040}});
  w.byte_array(0x8000000000000040, 10);
  w.root(0x05, 1);
  w.end_dump();
  HprofModel model;
  HeapGraph graph;
  ASSERT_NO_FATAL_FAILURE(load_and_build(w, &model, &graph));
  Dominators dominators;
  dominators.compute(graph.csr(), HeapGraph::kSuperRoot);
  EXPECT_EQ(dominators.idom(graph.find(0x8000000000000040)), graph.find(1));
  EXPECT_EQ(graph.reference_name(graph.find(1), graph.find(0x8000000000000040)), "static Holder.cache");
}

// The bitmap index (IDs a few steps apart, as a heap's addresses) and the sorted array (IDs too
// spread for a bitmap) number the same: by ID, whatever the dump's order, the first of two
// objects of one ID kept, and IDs between or beside them found in neither.
TEST(HeapGraph, IdsOutOfOrderAndRepeated) {
  for (const uint64_t step : {uint64_t{16}, uint64_t{1} << 40}) {
    const std::vector<uint64_t> order = {5, 2, 9, 0, 7, 2, 1, 8, 3, 6, 4};
    Writer w(8);
    for (uint64_t k : order) w.byte_array(0x10000 + k * step, k == 2 ? 10 : 20);
    w.root(0x05, 0x10000 + 2 * step);
    w.end_dump();
    HprofModel model;
    HeapGraph graph;
    ASSERT_NO_FATAL_FAILURE(load_and_build(w, &model, &graph));
    EXPECT_EQ(graph.nodes(), 11u) << step;
    EXPECT_EQ(graph.duplicates(), 1u) << step;
    for (uint64_t k = 0; k < 10; ++k) {
      EXPECT_EQ(graph.find(0x10000 + k * step), k + 1) << step;
      EXPECT_EQ(graph.id(static_cast<uint32_t>(k + 1)), 0x10000 + k * step) << step;
    }
    // The first byte[] of ID 2 (10 bytes) is the one kept.
    EXPECT_EQ(graph.shallow_bytes(graph.find(0x10000 + 2 * step)), shallow_array_bytes(8, 1, 10)) << step;
    EXPECT_EQ(graph.find(0x10000 + 8), kNoNode) << step;
    EXPECT_EQ(graph.find(0x10000 + step + 8), kNoNode) << step;
    EXPECT_EQ(graph.find(0x10000 + 10 * step), kNoNode) << step;
    EXPECT_EQ(graph.find(0xffff), kNoNode) << step;
  }
}

}  // namespace
}  // namespace fasthprof
