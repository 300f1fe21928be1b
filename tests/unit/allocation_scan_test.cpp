// runtime/classfile/allocation_scan: whether a loaded class's method needs the allocation calls,
// judged from its constant pool and code alone (what JVMTI gives before a retransformation). The
// oracle is the class rewriter itself: on every class javac compiled for the rewriter's tests, a
// method needs them exactly when rewrite_class (allocations, no entry calls) lists a site in it,
// with and without the clone calls. Then code built by hand: switches walked over, and every case
// it cannot read answered "yes" (a class left alone that needed the calls would go uncounted).
#include <set>

#include "class_file_tools.h"
#include "classfile/allocation_scan.h"

namespace fasthprof {
namespace {

using namespace class_test;

// The pool's entries as JVMTI's GetConstantPool gives them: (count, bytes after the count).
std::pair<uint16_t, Data> pool_of(const Data& d) {
  uint16_t count = be2(&d[8]);
  size_t at = 10;
  for (uint32_t i = 1; i < count; ++i) {
    uint8_t tag = d[at];
    static const std::map<uint8_t, size_t> kSizes = {{3, 4}, {4, 4}, {5, 8}, {6, 8}, {7, 2}, {8, 2}, {9, 4}, {10, 4},
                                                     {11, 4}, {12, 4}, {15, 3}, {16, 2}, {17, 4}, {18, 4}, {19, 2}, {20, 2}};
    at += 1 + (tag == 1 ? 2 + be2(&d[at + 1]) : kSizes.at(tag));
    if (tag == 5 || tag == 6) ++i;
  }
  return {count, Data(d.begin() + 10, d.begin() + static_cast<std::ptrdiff_t>(at))};
}

RewritePlan allocations_plan(bool clones) {
  RewritePlan plan;
  plan.calls = false;
  plan.allocations = true;
  plan.clones = clones;
  uint32_t next = 16;
  plan.assign_site_id = [next](std::string_view, const InjectedSite&) mutable { return next += 16; };
  return plan;
}

TEST(AllocationScan, AgreesWithTheRewriterOnJavacClasses) {
  size_t needing = 0, not_needing = 0;
  for (const auto& p : javac_classes()) {
    SCOPED_TRACE(p.string());
    Data d = read_file(p);
    Parsed parsed = parse(d);
    auto [count, entries] = pool_of(d);
    for (bool clones : {false, true}) {
      RewritePlan plan = allocations_plan(clones);
      RewriteResult result = rewrite_class(d.data(), d.size(), plan);
      std::set<std::pair<std::string, std::string>> with_sites;
      for (const InjectedSite& site : result.sites) with_sites.emplace(site.method_name, site.descriptor);
      AllocationScan scan(count, entries.data(), entries.size(), plan);
      for (const Method& m : parsed.methods) {
        if (!m.code) continue;
        SCOPED_TRACE(m.name + m.descriptor + (clones ? " with clones" : ""));
        bool expected = with_sites.count({m.name, m.descriptor}) != 0;
        EXPECT_EQ(scan.needs_calls(m.code->code), expected);
        needing += expected;
        not_needing += !expected;
      }
    }
  }
  // Both answers are exercised.
  EXPECT_GE(needing, 20u);
  EXPECT_GE(not_needing, 20u);
}

// A pool of Methodrefs, each at 1, 6, 11, ... (its class, name and descriptor in the 4 entries after it).
Data methods_pool(const std::vector<std::array<std::string, 3>>& methods, uint16_t* count) {
  Data b;
  auto u1 = [&](uint8_t v) { b.push_back(v); };
  auto u2 = [&](uint16_t v) { u1(static_cast<uint8_t>(v >> 8)); u1(static_cast<uint8_t>(v)); };
  auto utf8 = [&](const std::string& s) {
    u1(1);
    u2(static_cast<uint16_t>(s.size()));
    for (char c : s) u1(static_cast<uint8_t>(c));
  };
  uint16_t at = 1;
  for (const auto& [cls, name, descriptor] : methods) {
    u1(10), u2(at + 1), u2(at + 3);  // Methodref: class, NameAndType
    u1(7), u2(at + 2);               // Class
    utf8(cls);
    u1(12), u2(at + 4), u2(at + 5);  // NameAndType
    utf8(name);
    utf8(descriptor);
    at += 6;
  }
  *count = at;
  return b;
}

Data unsafe_pool(uint16_t* count) {
  return methods_pool({{"jdk/internal/misc/Unsafe", "allocateInstance", "(Ljava/lang/Class;)Ljava/lang/Object;"}}, count);
}

TEST(AllocationScan, CloneCallsWhenTheyAreCounted) {
  uint16_t count = 0;
  Data pool = methods_pool({{"[I", "clone", "()Ljava/lang/Object;"},
                            {"java/lang/Object", "clone", "()Ljava/lang/Object;"},
                            {"Sheep", "clone", "()Ljava/lang/Object;"}},
                           &count);
  AllocationScan without(count, pool.data(), pool.size(), allocations_plan(false));
  AllocationScan with(count, pool.data(), pool.size(), allocations_plan(true));
  Data array_clone = {0x2a, 0xb6, 0, 1, 0xb0};     // invokevirtual [I.clone
  Data super_clone = {0x2a, 0xb7, 0, 7, 0xb0};     // invokespecial Object.clone
  Data virtual_object = {0x2a, 0xb6, 0, 7, 0xb0};  // invokevirtual Object.clone: may reach an override
  Data own_clone = {0x2a, 0xb6, 0, 13, 0xb0};      // invokevirtual Sheep.clone
  EXPECT_FALSE(without.needs_calls(array_clone));
  EXPECT_FALSE(without.needs_calls(super_clone));
  EXPECT_TRUE(with.needs_calls(array_clone));
  EXPECT_TRUE(with.needs_calls(super_clone));
  EXPECT_FALSE(with.needs_calls(virtual_object));
  EXPECT_FALSE(with.needs_calls(own_clone));
}

TEST(AllocationScan, WalksSwitchesAndWideToTheAllocation) {
  uint16_t count = 0;
  Data pool = unsafe_pool(&count);
  AllocationScan scan(count, pool.data(), pool.size(), allocations_plan(false));
  // iconst_0; tableswitch (padding to 4, default, low 0, high 1, two offsets); new #2; return
  Data table = {0x03, 0xaa, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 20, 0, 0, 0, 20, 0xbb, 0, 2, 0xb1};
  EXPECT_TRUE(scan.needs_calls(table));
  // The same switch whose offsets hold the bytes of a `new`: read as operands, not as code.
  Data operands = {0x03, 0xaa, 0, 0, 0, 0, 0, 0xbb, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0xbb, 20, 0, 0, 0, 20, 0xb1};
  EXPECT_FALSE(scan.needs_calls(operands));
  // iconst_0; lookupswitch (padding 2, default, one pair); newarray int; return
  Data lookup = {0x03, 0xab, 0, 0, 0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 16, 0x10, 5, 0xbc, 10, 0xb1};
  EXPECT_TRUE(scan.needs_calls(lookup));
  // wide iinc (6 bytes) whose operands are 0xbb; wide iload (4 bytes); return
  Data wide = {0xc4, 0x84, 0, 0xbb, 0, 0xbb, 0xc4, 0x15, 0, 0xbd, 0xb1};
  EXPECT_FALSE(scan.needs_calls(wide));
  // invokevirtual Unsafe.allocateInstance (an object made by the native, counted at its call)
  EXPECT_TRUE(scan.needs_calls(Data{0x2a, 0x2b, 0xb6, 0, 1, 0xb0}));
  EXPECT_FALSE(scan.needs_calls(Data{0x2a, 0xb0}));
}

TEST(AllocationScan, UnsureMeansYes) {
  uint16_t count = 0;
  Data pool = unsafe_pool(&count);
  AllocationScan scan(count, pool.data(), pool.size(), allocations_plan(false));
  EXPECT_TRUE(scan.needs_calls(Data{0xcb, 0xb1})) << "an opcode no class file holds";
  EXPECT_TRUE(scan.needs_calls(Data{0x10})) << "an instruction cut by the end";
  EXPECT_TRUE(scan.needs_calls(Data{0xb6, 0})) << "an invoke cut by the end";
  EXPECT_TRUE(scan.needs_calls(Data{0x03, 0xaa, 0, 0})) << "a switch cut by the end";
  EXPECT_TRUE(scan.needs_calls(Data{0x03, 0xaa, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 1})) << "high below low";
  Data cut(pool.begin(), pool.end() - 3);
  AllocationScan bad(count, cut.data(), cut.size(), allocations_plan(false));
  EXPECT_TRUE(bad.needs_calls(Data{0xb1})) << "a malformed pool";
  AllocationScan none(1, nullptr, 0, allocations_plan(false));
  EXPECT_FALSE(none.needs_calls(Data{0x2a, 0xb0}));
}

}  // namespace
}  // namespace fasthprof
