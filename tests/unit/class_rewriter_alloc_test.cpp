// runtime/classfile/class_rewriter's allocation-site injection (RewritePlan::allocations), on the
// classes javac compiles from tests/class_rewriter/java/Allocations.java (--release 8 and 17) and
// on class files built byte by byte. Each rewritten method is checked by a reader written apart
// from the rewriter: before every new, newarray, anewarray and multianewarray the counting call
// (with the length copied for an array, every count through fresh locals and an int[] for a
// multianewarray of 2 dimensions or more), the entry and exit calls when asked for
// too, the original instructions in their order, every branch, handler and frame naming the start
// of its instruction's group (so a branch to a `new` runs its call), every uninitialized(offset)
// naming the `new` itself, max_stack and max_locals, and the sites listed with their IDs. With
// RewritePlan::call_positions, also the position call before every invoke* (sipush of its original
// offset, then `at`) and the call lines listed for each method.
#include <fstream>
#include <set>

#include "class_file_tools.h"

namespace fasthprof {
namespace {

using namespace class_test;

constexpr uint8_t kNew = 0xbb, kNewarray = 0xbc, kAnewarray = 0xbd, kMultianewarray = 0xc5;

bool is_allocation(uint8_t op) { return op == kNew || op == kNewarray || op == kAnewarray || op == kMultianewarray; }

struct AllocRewrite {
  RewriteResult result;
  std::vector<std::tuple<std::string, std::string, uint32_t, std::string>> asked;  // method, descriptor, offset, type
  uint32_t methods_asked = 0;
};

// Sites are numbered from 500, methods from 100.
AllocRewrite alloc_rewrite(const Data& d, bool calls, bool positions = false) {
  AllocRewrite r;
  RewritePlan plan;
  plan.calls = calls;
  plan.call_positions = positions;
  plan.allocations = true;
  uint32_t next_method = 100, next_site = 500;
  plan.assign_method_id = [&](std::string_view, std::string_view, std::string_view) {
    ++r.methods_asked;
    return next_method++;
  };
  plan.assign_site_id = [&](std::string_view, const InjectedSite& site) {
    r.asked.emplace_back(site.method_name, site.descriptor, site.offset, site.type);
    return next_site++;
  };
  r.result = rewrite_class(d.data(), d.size(), plan);
  return r;
}

// The Integer an ldc/ldc_w at new_insns[k] pushes, or -1.
int64_t pushed_integer(const Parsed& after, const Code& code, const Insn& ldc) {
  if (ldc.op != 0x12 && ldc.op != 0x13) return -1;
  uint16_t index = ldc.op == 0x12 ? code.code[ldc.at + 1] : be2(&code.code[ldc.at + 1]);
  EXPECT_TRUE(ldc.op == 0x12 || index >= 256) << "ldc_w where ldc would do";
  if (after.tags[index] != 3) return -1;
  return be4(&after.data[after.offsets[index] + 1]);
}

uint8_t dimensions_of(const Insn& o, const Data& old_code) { return o.op == kMultianewarray ? old_code[o.at + 3] : 0; }

// An iload (0x15) or istore (0x36) of `local`, wide from 256 on.
Data local_insn(uint8_t op, uint32_t local) {
  if (local < 256) return {op, uint8_t(local)};
  return {0xc4, op, uint8_t(local >> 8), uint8_t(local)};
}

// The instructions injected before an allocation, before its ldc (class_rewriter.h): an array's
// length copied; for a multianewarray of d >= 2 every count stored past the old locals (the
// innermost first), an int[] of them.
std::vector<Data> copy_insns(const Insn& o, const Data& old_code, uint32_t old_locals) {
  if (o.op == kNew) return {};
  uint8_t d = dimensions_of(o, old_code);
  if (d < 2) return {{0x59}};  // dup
  std::vector<Data> out;
  for (uint32_t k = d; k-- > 0;) out.push_back(local_insn(0x36, old_locals + k));
  out.push_back({0x11, 0, d});  // sipush d
  out.push_back({0xbc, 10});    // newarray int
  for (uint32_t k = 0; k < d; ++k) {
    out.push_back({0x59});
    out.push_back({0x11, uint8_t(k >> 8), uint8_t(k)});
    out.push_back(local_insn(0x15, old_locals + k));
    out.push_back({0x4f});  // iastore
  }
  return out;
}

struct Walk {
  std::vector<uint32_t> group_at, insn_at;
  std::map<uint32_t, size_t> old_index;
};

// Walks the new code along the old: the calls and the instructions, in order.
void walk(const Parsed& after, const Code& old_code, const Code& new_code, std::optional<uint32_t> method_id,
          const std::vector<InjectedSite>& sites, const TrackerCalls& tracker, bool positions, Walk& out) {
  std::vector<Insn> old_insns = decode(old_code.code), new_insns = decode(new_code.code);
  auto call = [&](size_t k, int64_t id, const std::string& name, const char* descriptor) {
    return k + 1 < new_insns.size() && pushed_integer(after, new_code, new_insns[k]) == id &&
           new_insns[k + 1].op == 0xb8 &&
           after.methodref(be2(&new_code.code[new_insns[k + 1].at + 1])) == tracker.class_name + "." + name + " " + descriptor;
  };
  size_t k = 0, site = 0;
  if (method_id) {
    ASSERT_TRUE(call(0, *method_id, tracker.enter_name, "(I)V")) << "the entry call first";
    k = 2;
  }
  out.group_at.assign(old_insns.size(), 0);
  out.insn_at.assign(old_insns.size(), 0);
  std::set<uint32_t> starts;  // of straight runs: branch targets and handlers
  for (const Insn& o : old_insns) starts.insert(o.targets.begin(), o.targets.end());
  for (const auto& h : old_code.handlers) starts.insert(h[2]);
  bool run_positioned = false;  // a position call made earlier in this straight run
  for (size_t i = 0; i < old_insns.size(); ++i) {
    if (starts.count(old_insns[i].at) || (i > 0 && !old_insns[i - 1].targets.empty())) run_positioned = false;
    const Insn& o = old_insns[i];
    out.old_index[o.at] = i;
    ASSERT_LT(k, new_insns.size());
    out.group_at[i] = new_insns[k].at;
    if (method_id && is_return(o.op)) {
      ASSERT_TRUE(call(k, *method_id, tracker.exit_name, "(I)V")) << "exit call before the return at " << o.at;
      k += 2;
    }
    if (is_allocation(o.op)) {
      ASSERT_LT(site, sites.size()) << "a site listed for the allocation at " << o.at;
      EXPECT_EQ(sites[site].offset, o.at);
      for (const Data& insn : copy_insns(o, old_code.code, old_code.max_locals)) {
        ASSERT_LT(k, new_insns.size());
        EXPECT_EQ(Data(new_code.code.begin() + new_insns[k].at, new_code.code.begin() + new_insns[k].at + new_insns[k].length),
                  insn) << "the length copied before the allocation at " << o.at;
        ++k;
      }
      bool plain = o.op == kNew, multi = dimensions_of(o, old_code.code) >= 2;
      EXPECT_TRUE(call(k, sites[site].id, plain ? tracker.alloc_name : multi ? tracker.alloc_multi_name : tracker.alloc_array_name,
                       plain ? "(I)V" : multi ? "([II)V" : "(II)V"))
          << "the allocation call before " << o.at;
      k += 2;
      ++site;
      for (uint32_t c = 0; multi && c < dimensions_of(o, old_code.code); ++c, ++k) {  // the counts back
        ASSERT_LT(k, new_insns.size());
        Data insn = local_insn(0x15, old_code.max_locals + c);
        EXPECT_EQ(Data(new_code.code.begin() + new_insns[k].at, new_code.code.begin() + new_insns[k].at + insn.size()), insn)
            << "count " << c << " loaded back before " << o.at;
      }
    }
    // invoke*: sipush <its old offset>; invokestatic at, unless an invoke before it in its straight
    // run had one (on the same line: the JVM tests check the lines)
    bool positioned = positions && o.op >= 0xb6 && o.op <= 0xba && k < new_insns.size() && new_insns[k].op == 0x11;
    if (positions && o.op >= 0xb6 && o.op <= 0xba && !positioned) EXPECT_TRUE(run_positioned) << "no position call at " << o.at;
    if (positioned) {
      run_positioned = true;
      ASSERT_LT(k + 1, new_insns.size());
      EXPECT_EQ(new_insns[k].op, 0x11) << "sipush before the invoke at " << o.at;
      EXPECT_EQ(be2(&new_code.code[new_insns[k].at + 1]), o.at) << "the invoke's original offset";
      EXPECT_EQ(new_insns[k + 1].op, 0xb8);
      EXPECT_EQ(after.methodref(be2(&new_code.code[new_insns[k + 1].at + 1])), tracker.class_name + "." + tracker.at_name + " (I)V");
      k += 2;
    }
    ASSERT_LT(k, new_insns.size());
    ASSERT_EQ(new_insns[k].op, o.op) << "instruction at " << o.at;
    out.insn_at[i] = new_insns[k].at;
    if (o.targets.empty()) {
      EXPECT_TRUE(std::equal(old_code.code.begin() + o.at, old_code.code.begin() + o.at + o.length,
                             new_code.code.begin() + new_insns[k].at))
          << "instruction at " << o.at << " copied";
    } else {
      ASSERT_EQ(new_insns[k].targets.size(), o.targets.size());
    }
    ++k;
  }
  EXPECT_EQ(site, sites.size()) << "every listed site injected";
  EXPECT_EQ(k, new_insns.size()) << "nothing after the last instruction";
}

// Checks one rewritten method: the walk, then every offset and max_stack.
void check_alloc_method(const Parsed& after, const Method& old_method, const Method& new_method,
                        std::optional<uint32_t> method_id, const std::vector<InjectedSite>& sites,
                        bool positions = false, const TrackerCalls& tracker = {}) {
  SCOPED_TRACE(old_method.name + old_method.descriptor);
  const Code& old_code = *old_method.code;
  const Code& new_code = *new_method.code;
  Walk w;
  walk(after, old_code, new_code, method_id, sites, tracker, positions, w);
  if (::testing::Test::HasFatalFailure()) return;
  auto group_of = [&](uint32_t old_at) {
    return old_at == old_code.code.size() ? static_cast<uint32_t>(new_code.code.size()) : w.group_at[w.old_index.at(old_at)];
  };
  std::vector<Insn> old_insns = decode(old_code.code), new_insns = decode(new_code.code);
  std::map<uint32_t, const Insn*> new_by_at;
  for (const Insn& n : new_insns) new_by_at[n.at] = &n;
  bool arrays = false, news = false;
  uint32_t counts = 0;  // locals for a multianewarray's counts
  for (size_t i = 0; i < old_insns.size(); ++i) {
    arrays |= is_allocation(old_insns[i].op) && old_insns[i].op != kNew;
    if (dimensions_of(old_insns[i], old_code.code) >= 2) counts = std::max(counts, uint32_t{dimensions_of(old_insns[i], old_code.code)});
    news |= old_insns[i].op == kNew;
    for (size_t t = 0; t < old_insns[i].targets.size(); ++t)
      EXPECT_EQ(new_by_at.at(w.insn_at[i])->targets[t], group_of(old_insns[i].targets[t])) << "branch at " << old_insns[i].at;
  }
  EXPECT_EQ(new_code.max_stack, old_code.max_stack + (arrays ? 2 : news || method_id ? 1 : 0));
  EXPECT_EQ(new_code.max_locals, old_code.max_locals + counts);
  ASSERT_EQ(new_code.handlers.size(), old_code.handlers.size());
  for (size_t h = 0; h < old_code.handlers.size(); ++h)
    for (int part = 0; part < 3; ++part) EXPECT_EQ(new_code.handlers[h][part], group_of(old_code.handlers[h][part]));
  if (!old_code.attributes.count("StackMapTable")) return;
  auto old_frames = frames(old_code.attributes.at("StackMapTable"));
  auto new_frames = frames(new_code.attributes.at("StackMapTable"));
  ASSERT_EQ(old_frames.size(), new_frames.size());
  for (size_t f = 0; f < old_frames.size(); ++f) {
    EXPECT_EQ(new_frames[f].first, group_of(old_frames[f].first)) << "frame at " << old_frames[f].first;
    ASSERT_EQ(new_frames[f].second.size(), old_frames[f].second.size());
    for (size_t u = 0; u < old_frames[f].second.size(); ++u) {
      EXPECT_EQ(new_frames[f].second[u], w.insn_at[w.old_index.at(old_frames[f].second[u])]);
      EXPECT_EQ(new_code.code[new_frames[f].second[u]], kNew) << "uninitialized names the new, past its call";
    }
  }
}

// Rewrites with allocations (and calls when asked) and checks every method and the site list.
AllocRewrite check_alloc_class(const Data& original, bool calls, bool positions = false) {
  AllocRewrite r = alloc_rewrite(original, calls, positions);
  EXPECT_NE(r.result.outcome, RewriteOutcome::kMalformed) << r.result.error;
  if (r.result.outcome != RewriteOutcome::kRewritten) return r;
  Parsed before = parse(original), after = parse(r.result.bytes);
  if (r.result.methods_left_alone == 0) {
    EXPECT_EQ(r.asked.size(), r.result.sites.size());
  }
  size_t site = 0, method = 0;
  uint32_t method_id = 100;
  for (size_t i = 0; i < before.methods.size(); ++i) {
    const Method& m = before.methods[i];
    std::vector<InjectedSite> sites;
    while (site < r.result.sites.size() && r.result.sites[site].method_name == m.name &&
           r.result.sites[site].descriptor == m.descriptor)
      sites.push_back(r.result.sites[site++]);
    if (!m.code || (!calls && sites.empty())) {
      EXPECT_EQ(after.methods[i].bytes, m.bytes) << m.name << ": nothing injected, copied as it was";
      continue;
    }
    std::optional<uint32_t> id;
    if (calls) {
      id = method_id++;
      const InjectedMethod& injected = r.result.methods.at(method++);
      EXPECT_EQ(injected.id, *id);
      std::vector<uint32_t> invokes;
      for (const Insn& o : decode(m.code->code))
        if (o.op >= 0xb6 && o.op <= 0xba) invokes.push_back(o.at);
      EXPECT_EQ(injected.call_lines.size(), positions ? invokes.size() : 0u) << m.name << ": a call line per invoke";
      for (size_t c = 0; positions && c < injected.call_lines.size() && c < invokes.size(); ++c)
        EXPECT_EQ(injected.call_lines[c].first, invokes[c]);
    }
    check_alloc_method(after, m, after.methods[i], id, sites, positions);
  }
  EXPECT_EQ(site, r.result.sites.size());
  EXPECT_EQ(method, r.result.methods.size());
  AllocRewrite again = alloc_rewrite(r.result.bytes, calls, positions);
  EXPECT_NE(again.result.outcome, RewriteOutcome::kMalformed) << "the output reads again: " << again.result.error;
  return r;
}

const InjectedSite* find_site(const RewriteResult& r, const std::string& method, const std::string& type) {
  for (const InjectedSite& s : r.sites)
    if (s.method_name == method && s.type == type) return &s;
  return nullptr;
}

TEST(ClassRewriterAllocations, JavacClassesAllocationsOnlyAndWithCalls) {
  size_t rewritten = 0;
  for (const auto& p : javac_classes()) {
    SCOPED_TRACE(p.string());
    Data d = read_file(p);
    for (bool calls : {false, true}) {
      AllocRewrite r = check_alloc_class(d, calls);
      EXPECT_EQ(r.result.methods_left_alone, 0u);
      if (calls) {
        EXPECT_EQ(r.result.methods.size(), r.methods_asked);
      } else {
        EXPECT_EQ(r.methods_asked, 0u) << "no method IDs without calls";
        EXPECT_TRUE(r.result.methods.empty());
      }
      rewritten += r.result.outcome == RewriteOutcome::kRewritten;
    }
  }
  EXPECT_GE(rewritten, 40u);
}

TEST(ClassRewriterAllocations, EveryKindWithItsTypeAndOffset) {
  for (const char* release : {"release8", "release17"}) {
    SCOPED_TRACE(release);
    Data d = javac_class(release, "Allocations");
    AllocRewrite r = check_alloc_class(d, false);
    ASSERT_EQ(r.result.outcome, RewriteOutcome::kRewritten);
    Parsed before = parse(d);
    for (const char* type : {"[J", "[Ljava/lang/String;", "[[I", "[[C", "[[[J", "[[[[B", "[[Ljava/lang/String;"}) {
      const InjectedSite* s = find_site(r.result, "arrays", type);
      ASSERT_NE(s, nullptr) << type;
      EXPECT_EQ(s->descriptor, "(I)Z");
      uint8_t op = method_named(before, "arrays").code->code.at(s->offset);
      EXPECT_TRUE(op == kNewarray || op == kAnewarray || op == kMultianewarray) << type << " at " << s->offset;
    }
    ASSERT_NE(find_site(r.result, "choose", "Allocations$B"), nullptr);
    ASSERT_NE(find_site(r.result, "nested", "[I"), nullptr);
    EXPECT_EQ(r.asked.size(), r.result.sites.size());
    for (size_t i = 0; i < r.asked.size(); ++i) {
      EXPECT_EQ(std::get<2>(r.asked[i]), r.result.sites[i].offset);
      EXPECT_EQ(std::get<3>(r.asked[i]), r.result.sites[i].type);
      EXPECT_EQ(r.result.sites[i].id, 500 + i);
    }
  }
}

// javac's `first ? new A() : new B()`: the conditional jumps to the new B; a do-while loop jumps
// back to its new; both must land on the allocation call.
TEST(ClassRewriterAllocations, BranchToNewRunsItsCall) {
  Data d = javac_class("release17", "Allocations");
  AllocRewrite r = alloc_rewrite(d, true);
  Parsed after = parse(r.result.bytes);
  for (const char* name : {"choose", "loop"}) {
    SCOPED_TRACE(name);
    auto insns = decode(method_named(after, name).code->code);
    size_t branches_to_new = 0;
    for (const Insn& i : insns) {
      if (i.targets.empty() || i.op == 0xa7) continue;  // the conditionals
      auto target = std::find_if(insns.begin(), insns.end(), [&](const Insn& t) { return t.at == i.targets[0]; });
      ASSERT_NE(target, insns.end());
      if (target + 2 < insns.end() && (target + 2)->op == kNew) {
        EXPECT_EQ(target->op, 0x12) << "the branch lands on the site's ldc";
        ++branches_to_new;
      }
    }
    EXPECT_EQ(branches_to_new, 1u);
  }
}

TEST(ClassRewriterAllocations, UninitializedFollowsTheNew) {
  Data d = javac_class("release17", "Allocations");
  Parsed before = parse(d);
  auto old_frames = frames(method_named(before, "uninitializedInFrame").code->attributes.at("StackMapTable"));
  ASSERT_TRUE(std::any_of(old_frames.begin(), old_frames.end(), [](const auto& f) { return !f.second.empty(); }))
      << "javac's frame holds uninitialized(0)";
  AllocRewrite r = alloc_rewrite(d, true);
  Parsed after = parse(r.result.bytes);
  for (const auto& [at, uninitialized] : frames(method_named(after, "uninitializedInFrame").code->attributes.at("StackMapTable")))
    for (uint32_t u : uninitialized) EXPECT_EQ(u, 10u) << "past the entry call and the Pair's call (5 bytes each)";

}


// A class of version 49 (no stack maps) with one method per kind, built byte by byte.
Data every_kind(uint16_t padding_utf8s = 0) {
  ClassBuilder b;
  for (uint16_t i = 0; i < padding_utf8s; ++i) b.utf8("padding" + std::to_string(i));  // pushes the IDs past 255
  uint16_t object = b.class_entry("java/lang/Object"), strings = b.class_entry("[Ljava/lang/String;");
  uint16_t ints2 = b.class_entry("[[I"), longs4 = b.class_entry("[[[[J");
  auto method = [&](const char* name, const char* descriptor, Data code, uint16_t stack, uint16_t locals) {
    b.methods.push_back({0x0009, name, descriptor, true, stack, locals, std::move(code)});
  };
  method("plain", "()Ljava/lang/Object;", {kNew, uint8_t(object >> 8), uint8_t(object), 0xb0}, 1, 0);
  method("ints", "(I)Ljava/lang/Object;", {0x1a, kNewarray, 10, 0xb0}, 1, 1);
  method("objects", "(I)Ljava/lang/Object;", {0x1a, kAnewarray, uint8_t(strings >> 8), uint8_t(strings), 0xb0}, 1, 1);
  method("one", "(I)Ljava/lang/Object;", {0x1a, kMultianewarray, uint8_t(ints2 >> 8), uint8_t(ints2), 1, 0xb0}, 1, 1);
  method("two", "(I)Ljava/lang/Object;", {0x1a, 0x1a, kMultianewarray, uint8_t(ints2 >> 8), uint8_t(ints2), 2, 0xb0}, 2, 1);
  method("four", "(I)Ljava/lang/Object;",
         {0x1a, 0x1a, 0x1a, 0x1a, kMultianewarray, uint8_t(longs4 >> 8), uint8_t(longs4), 4, 0xb0}, 4, 1);
  method("none", "(I)I", {0x1a, 0xac}, 1, 1);
  return b.build();
}

TEST(ClassRewriterAllocations, HandMadeKindsExactBytes) {
  Data d = every_kind();
  for (bool calls : {false, true}) check_alloc_class(d, calls);
  AllocRewrite r = alloc_rewrite(d, false);
  ASSERT_EQ(r.result.outcome, RewriteOutcome::kRewritten);
  ASSERT_EQ(r.result.sites.size(), 6u);
  EXPECT_EQ(r.result.sites[0].type, "java/lang/Object");
  EXPECT_EQ(r.result.sites[1].type, "[I");
  EXPECT_EQ(r.result.sites[2].type, "[[Ljava/lang/String;");
  EXPECT_EQ(r.result.sites[3].type, "[[I");
  EXPECT_EQ(r.result.sites[5].type, "[[[[J");
  EXPECT_EQ(r.result.sites[5].offset, 4u);
  EXPECT_EQ(r.result.sites[0].dimensions, 0) << "new";
  EXPECT_EQ(r.result.sites[1].dimensions, 0) << "newarray";
  EXPECT_EQ(r.result.sites[2].dimensions, 0) << "anewarray";
  EXPECT_EQ(r.result.sites[3].dimensions, 1);
  EXPECT_EQ(r.result.sites[4].dimensions, 2);
  EXPECT_EQ(r.result.sites[5].dimensions, 4);
  Parsed after = parse(r.result.bytes);
  const Code& ints = *method_named(after, "ints").code;
  ASSERT_EQ(ints.code.size(), 4u + 6u);
  EXPECT_EQ(ints.code[1], 0x59) << "dup";
  EXPECT_EQ(ints.code[2], 0x12) << "ldc";
  EXPECT_EQ(ints.code[4], 0xb8) << "invokestatic";
  EXPECT_EQ(after.methodref(be2(&ints.code[5])), "java/lang/FasthprofTracker.allocArray (II)V");
  EXPECT_EQ(ints.max_stack, 3u);
  EXPECT_EQ(method_named(after, "plain").code->max_stack, 2u) << "a new needs room for the ID only";
  EXPECT_EQ(after.methods.back().bytes, parse(d).methods.back().bytes) << "none: nothing to inject, as it was";
}

// A multianewarray's counts go to locals past the method's own: exact bytes for 2 dimensions, wide
// loads and stores past local 255, 255 dimensions, and a method whose locals would pass 65535 left
// alone.
TEST(ClassRewriterAllocations, MultianewarrayCountsThroughFreshLocals) {
  ClassBuilder b;
  uint16_t ints2 = b.class_entry("[[I"), deep = b.class_entry(std::string(255, '[') + "I");
  auto method = [&](const char* name, uint8_t dims, uint16_t type, uint16_t locals) {
    Data code(dims, 0x1a);  // iload_0 for every count
    code.insert(code.end(), {kMultianewarray, uint8_t(type >> 8), uint8_t(type), dims, 0xb0});
    b.methods.push_back({0x0009, name, "(I)Ljava/lang/Object;", true, dims, locals, std::move(code)});
  };
  method("two", 2, ints2, 1);
  method("wide", 3, deep, 300);
  method("deepest", 255, deep, 1);
  Data d = b.build();
  method("full", 2, ints2, 65534);
  ClassBuilder over;
  uint16_t ints = over.class_entry("[I");
  over.methods.push_back({0x0009, "m", "(I)Ljava/lang/Object;", true, 2, 1,
                          {0x1a, 0x1a, kMultianewarray, uint8_t(ints >> 8), uint8_t(ints), 2, 0xb0}});
  EXPECT_EQ(alloc_rewrite(over.build(), false).result.outcome, RewriteOutcome::kMalformed) << "[I of 2 dimensions";
  AllocRewrite full = alloc_rewrite(b.build(), false);
  EXPECT_EQ(full.result.methods_left_alone, 1u) << "full: 65534 + 2 locals do not fit";
  for (bool calls : {false, true}) check_alloc_class(d, calls);
  AllocRewrite r = alloc_rewrite(d, false);
  ASSERT_EQ(r.result.outcome, RewriteOutcome::kRewritten);
  ASSERT_EQ(r.result.sites.size(), 3u);
  EXPECT_EQ(r.result.sites[2].dimensions, 255);
  Parsed after = parse(r.result.bytes);
  const Code& two = *method_named(after, "two").code;
  uint16_t site = 0;
  for (uint16_t i = 1; i < after.tags.size(); ++i)
    if (after.tags[i] == 3 && be4(&after.data[after.offsets[i] + 1]) == r.result.sites[0].id) site = i;
  ASSERT_NE(site, 0);
  Data expected = {0x1a, 0x1a, 0x36, 2, 0x36, 1, 0x11, 0, 2, 0xbc, 10,  // istore 2, istore 1, an int[2]
                   0x59, 0x11, 0, 0, 0x15, 1, 0x4f, 0x59, 0x11, 0, 1, 0x15, 2, 0x4f,
                   0x12, uint8_t(site), 0xb8};
  ASSERT_GT(two.code.size(), expected.size() + 2);
  EXPECT_EQ(Data(two.code.begin(), two.code.begin() + expected.size()), expected);
  EXPECT_EQ(after.methodref(be2(&two.code[expected.size()])), "java/lang/FasthprofTracker.allocMulti ([II)V");
  Data rest = {0x15, 1, 0x15, 2, kMultianewarray, uint8_t(ints2 >> 8), uint8_t(ints2), 2, 0xb0};
  EXPECT_EQ(Data(two.code.begin() + expected.size() + 2, two.code.end()), rest) << "the counts back, then the instruction";
  EXPECT_EQ(two.max_locals, 3u);
  EXPECT_EQ(two.max_stack, 4u);
  EXPECT_EQ(method_named(after, "wide").code->max_locals, 303u);
  EXPECT_EQ(method_named(after, "deepest").code->max_locals, 256u);
}

// Each site names its source line (the LineNumberTable's), and that line of Allocations.java
// allocates; a class without line numbers gives -1.
TEST(ClassRewriterAllocations, SitesNameTheirSourceLines) {
  std::vector<std::string> lines;
  {
    std::ifstream source(std::filesystem::path(CLASS_REWRITER_SOURCES) / "Allocations.java");
    for (std::string line; std::getline(source, line);) lines.push_back(line);
  }
  ASSERT_GT(lines.size(), 20u);
  for (const char* release : {"release8", "release17"}) {
    SCOPED_TRACE(release);
    AllocRewrite r = alloc_rewrite(javac_class(release, "Allocations"), false);
    ASSERT_EQ(r.result.outcome, RewriteOutcome::kRewritten);
    ASSERT_FALSE(r.result.sites.empty());
    for (const InjectedSite& site : r.result.sites) {
      ASSERT_GE(site.line, 1) << site.method_name << " at " << site.offset;
      ASSERT_LE(static_cast<size_t>(site.line), lines.size());
      EXPECT_NE(lines[static_cast<size_t>(site.line) - 1].find("new "), std::string::npos)
          << site.method_name << " at " << site.offset << ": line " << site.line << " is \""
          << lines[static_cast<size_t>(site.line) - 1] << "\"";
    }
  }
  AllocRewrite hand_made = alloc_rewrite(every_kind(), false);
  ASSERT_EQ(hand_made.result.outcome, RewriteOutcome::kRewritten);
  for (const InjectedSite& site : hand_made.result.sites) EXPECT_EQ(site.line, -1);
}

TEST(ClassRewriterAllocations, SiteIdsPastThePoolsFirst256UseLdcW) {
  Data d = every_kind(300);
  AllocRewrite r = check_alloc_class(d, true);  // pushed_integer checks ldc_w only past 255
  ASSERT_EQ(r.result.outcome, RewriteOutcome::kRewritten);
  Parsed after = parse(r.result.bytes);
  EXPECT_EQ(method_named(after, "plain").code->code[6], 0x13) << "ldc_w for the site, after the entry call's";
}

TEST(ClassRewriterAllocations, MethodPastThe64KiBLimitLeftAlone) {
  for (uint32_t length : {65535u - 6u, 65535u - 5u}) {
    SCOPED_TRACE(length);
    ClassBuilder b;
    Data code = {0x04, kNewarray, 10, 0x57};  // iconst_1 newarray int pop: 6 bytes injected
    code.resize(length - 1, 0x00);
    code.push_back(0xb1);
    b.methods.push_back({0x0009, "long", "()V", true, 1, 0, code});
    b.methods.push_back({0x0009, "short", "(I)Ljava/lang/Object;", true, 1, 1, {0x1a, kNewarray, 10, 0xb0}});
    Data d = b.build();
    AllocRewrite r = alloc_rewrite(d, false);
    ASSERT_EQ(r.asked.size(), 2u) << "a site of a method left alone is still numbered";
    bool fits = length + 6 <= 65535;
    EXPECT_EQ(r.result.methods_left_alone, fits ? 0u : 1u);
    EXPECT_EQ(r.result.sites.size(), fits ? 2u : 1u);
    Parsed after = parse(r.result.bytes);
    if (!fits) {
      EXPECT_EQ(after.methods[0].bytes, parse(d).methods[0].bytes);
    } else {
      EXPECT_EQ(after.methods[0].code->code.size(), 65535u);
    }
    check_alloc_class(d, false);
  }
}

TEST(ClassRewriterAllocations, MalformedOperandsOfAllocations) {
  auto with_code = [](Data code) {
    ClassBuilder b;
    b.methods.push_back({0x0009, "m", "(I)Ljava/lang/Object;", true, 4, 1, code});
    return b.build();
  };
  uint16_t utf8 = 1;  // ClassBuilder's first entry: the class name's Utf8
  for (const auto& [code, why] : std::vector<std::pair<Data, std::string>>{
           {{kNew, 0, uint8_t(utf8), 0xb0}, "new naming a Utf8"},
           {{kNew, 0x7f, 0xff, 0xb0}, "new naming past the pool"},
           {{0x1a, kNewarray, 3, 0xb0}, "newarray of type 3"},
           {{0x1a, kNewarray, 12, 0xb0}, "newarray of type 12"},
           {{0x1a, kAnewarray, 0, 0, 0xb0}, "anewarray naming entry 0"},
           {{kMultianewarray, 0, 2, 0, 0xb0}, "multianewarray of 0 dimensions"},
           {{0x1a, kMultianewarray, 0, 2, 1, 0xb0}, "multianewarray of a class that is no array"}}) {
    AllocRewrite r = alloc_rewrite(with_code(code), true);
    EXPECT_EQ(r.result.outcome, RewriteOutcome::kMalformed) << why;
    EXPECT_NE(r.result.error.find("allocation at"), std::string::npos) << why << ": " << r.result.error;
    EXPECT_TRUE(r.asked.empty()) << why;
    EXPECT_EQ(rewrite(with_code(code)).result.outcome, RewriteOutcome::kRewritten) << why << ": calls only do not read it";
  }
}

// Position calls (allocation traces deeper than one frame): every javac class, with and without
// the allocation calls, walked as above; each call line names a line of the source that calls.
TEST(ClassRewriterAllocations, PositionCallsBeforeEveryInvoke) {
  std::vector<std::string> lines;
  {
    std::ifstream source(std::filesystem::path(CLASS_REWRITER_SOURCES) / "Allocations.java");
    for (std::string line; std::getline(source, line);) lines.push_back(line);
  }
  for (const auto& path : javac_classes()) {
    SCOPED_TRACE(path.string());
    for (bool allocations : {false, true}) {
      if (allocations) {
        check_alloc_class(read_file(path), true, true);
        continue;
      }
      RewritePlan plan;
      plan.call_positions = true;
      uint32_t next = 100;
      plan.assign_method_id = [&](std::string_view, std::string_view, std::string_view) { return next++; };
      RewriteResult alone = rewrite_class(read_file(path).data(), read_file(path).size(), plan);
      EXPECT_NE(alone.outcome, RewriteOutcome::kMalformed) << alone.error;
    }
  }
  for (const char* release : {"release8", "release17"}) {
    SCOPED_TRACE(release);
    AllocRewrite r = check_alloc_class(javac_class(release, "Allocations"), true, true);
    size_t calls = 0;
    for (const InjectedMethod& method : r.result.methods) {
      for (const auto& [offset, line] : method.call_lines) {
        ASSERT_GE(line, 1) << method.name << " at " << offset;
        ASSERT_LE(static_cast<size_t>(line), lines.size());
        ++calls;
      }
    }
    EXPECT_GT(calls, 10u);
  }
  // Without the entry and exit calls there are no position calls (they name a frame of the shadow stack).
  AllocRewrite alone = alloc_rewrite(every_kind(), false, true);
  ASSERT_EQ(alone.result.outcome, RewriteOutcome::kRewritten);
  Parsed after = parse(alone.result.bytes);
  for (size_t i = 0; i < after.tags.size(); ++i) {
    if (after.tags[i] == 10) EXPECT_EQ(after.methodref(static_cast<uint16_t>(i)).find(".at "), std::string::npos);
  }
}

// Calls that allocate: Unsafe.allocateInstance always; with RewritePlan::clones, the calls sure to
// reach Object.clone (an array's clone(), invokespecial java/lang/Object.clone) and no other clone().
// Exact bytes: the receiver (or the class) copied, the site ID, the call, then the original call.
TEST(ClassRewriterAllocations, AllocatingCallsGetTheirCalls) {
  ClassBuilder b;
  auto methodref = [&](const std::string& owner, const std::string& name, const std::string& descriptor) {
    uint16_t owner_entry = b.class_entry(owner);
    uint16_t nat = b.entry(Bytes().u1(12).u2(b.utf8(name)).u2(b.utf8(descriptor)).data);
    return b.entry(Bytes().u1(10).u2(owner_entry).u2(nat).data);
  };
  const std::string object_clone = "()Ljava/lang/Object;";
  auto method = [&](const char* name, uint8_t invoke, uint16_t ref, bool two_arguments) {
    Data code = {0x2a};  // aload_0
    if (two_arguments) code.push_back(0x2b);  // aload_1
    code.insert(code.end(), {invoke, uint8_t(ref >> 8), uint8_t(ref), 0xb0});
    b.methods.push_back({0x0009, name, "(Ljava/lang/Object;Ljava/lang/Object;)Ljava/lang/Object;", true, 2, 2, std::move(code)});
  };
  method("ints", 0xb6, methodref("[I", "clone", object_clone), false);
  method("strings", 0xb6, methodref("[Ljava/lang/String;", "clone", object_clone), false);
  method("superClone", 0xb7, methodref("java/lang/Object", "clone", object_clone), false);
  method("ownClone", 0xb6, methodref("Hand", "clone", object_clone), false);               // may be overridden
  method("parentClone", 0xb7, methodref("java/util/AbstractMap", "clone", object_clone), false);  // its own clone()
  method("objectVirtual", 0xb6, methodref("java/lang/Object", "clone", object_clone), false);     // any override
  method("otherDescriptor", 0xb6, methodref("[I", "clone", "()[I"), false);
  method("instance", 0xb6, methodref("jdk/internal/misc/Unsafe", "allocateInstance", "(Ljava/lang/Class;)Ljava/lang/Object;"), true);
  Data d = b.build();
  for (bool clones : {false, true}) {
    SCOPED_TRACE(clones);
    RewritePlan plan;
    plan.calls = false;
    plan.allocations = true;
    plan.clones = clones;
    uint32_t next_site = 500;
    plan.assign_site_id = [&](std::string_view, const InjectedSite&) { return next_site++; };
    RewriteResult r = rewrite_class(d.data(), d.size(), plan);
    ASSERT_EQ(r.outcome, RewriteOutcome::kRewritten);
    std::vector<std::string> counted;
    for (const InjectedSite& site : r.sites) {
      counted.push_back(site.method_name);
      EXPECT_EQ(site.type, "");
      EXPECT_EQ(site.clones, site.method_name != "instance");
      EXPECT_EQ(site.instantiates, site.method_name == "instance");
      EXPECT_EQ(site.offset, site.method_name == "instance" ? 2u : 1u);
    }
    const std::vector<std::string> expected =
        clones ? std::vector<std::string>{"ints", "strings", "superClone", "instance"} : std::vector<std::string>{"instance"};
    EXPECT_EQ(counted, expected);
    Parsed after = parse(r.bytes);
    const Parsed before = parse(d);
    for (size_t m = 0; m < after.methods.size(); ++m) {
      const std::string& name = after.methods[m].name;
      const Code& code = *after.methods[m].code;
      bool injected = name == "instance" || (clones && (name == "ints" || name == "strings" || name == "superClone"));
      SCOPED_TRACE(name);
      if (!injected) {
        EXPECT_EQ(after.methods[m].bytes, before.methods[m].bytes) << "left as it was";
        continue;
      }
      size_t at = name == "instance" ? 2 : 1;
      ASSERT_EQ(code.code.size(), before.methods[m].code->code.size() + 6);
      EXPECT_EQ(code.code[at], 0x59) << "dup";
      EXPECT_EQ(code.code[at + 1], 0x12) << "ldc";
      auto site = std::find(counted.begin(), counted.end(), name) - counted.begin();
      EXPECT_EQ(pushed_integer(after, code, Insn{uint32_t(at + 1), 2, 0x12, {}}), 500 + site) << "its site ID";
      EXPECT_EQ(code.code[at + 3], 0xb8) << "invokestatic";
      EXPECT_EQ(after.methodref(be2(&code.code[at + 4])),
                name == "instance" ? "java/lang/FasthprofTracker.allocClass (Ljava/lang/Class;I)V"
                                   : "java/lang/FasthprofTracker.allocClone (Ljava/lang/Object;I)V");
      EXPECT_EQ(Data(code.code.begin() + at + 6, code.code.end()),
                Data(before.methods[m].code->code.begin() + at, before.methods[m].code->code.end()))
          << "then the call itself";
      EXPECT_EQ(code.max_stack, 4u);
    }
  }
}

}  // namespace
}  // namespace fasthprof
