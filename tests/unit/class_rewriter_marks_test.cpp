// runtime/classfile/class_rewriter's mark calls (RewritePlan::marks, with allocations): after each
// counted allocation, the new object handed to the tracker with its site's ID. Class files built
// byte by byte (version 49: no stack maps to build) and javac's classes of
// tests/class_rewriter/java. Checked here: the exact suffix after each kind (newarray,
// anewarray, multianewarray of 1 and of more dimensions, Unsafe.allocateInstance, a sure clone, and
// for `new` after each invokespecial <init> that initializes its object, found through
// conditional arguments, nested news, dup_x1/swap and category-2 arguments), a branch and a
// handler naming the next instruction landing past it, the give-up cases (a copy stored to a local,
// the top after the initializer not a copy, jsr), InjectedSite::marked, max_stack, ldc_w, and that
// without marks nothing changes.
#include <set>

#include "class_file_tools.h"

namespace fasthprof {
namespace {

using namespace class_test;

constexpr uint8_t kNew = 0xbb, kNewarray = 0xbc, kAnewarray = 0xbd, kMultianewarray = 0xc5, kDup = 0x59,
                  kInvokespecial = 0xb7, kInvokestatic = 0xb8, kInvokevirtual = 0xb6, kAreturn = 0xb0;

struct Hand {
  ClassBuilder b;
  uint16_t methodref(const std::string& owner, const std::string& name, const std::string& descriptor) {
    uint16_t owner_entry = b.class_entry(owner);
    uint16_t nat = b.entry(Bytes().u1(12).u2(b.utf8(name)).u2(b.utf8(descriptor)).data);
    return b.entry(Bytes().u1(10).u2(owner_entry).u2(nat).data);
  }
  void method(const std::string& name, Data code, uint16_t stack = 4, uint16_t locals = 4,
              std::vector<std::array<uint16_t, 4>> handlers = {}) {
    b.methods.push_back({0x0009, name, "(ILjava/lang/Object;)Ljava/lang/Object;", true, stack, locals, std::move(code), handlers});
  }
};

Data op2(uint8_t op, uint16_t v) { return {op, uint8_t(v >> 8), uint8_t(v)}; }
Data cat(std::initializer_list<Data> parts) {
  Data out;
  for (const Data& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

RewriteResult marks_rewrite(const Data& d, bool marks, bool calls = false) {
  RewritePlan plan;
  plan.calls = calls;
  plan.allocations = true;
  plan.clones = true;
  plan.marks = marks;
  uint32_t next_method = 100, next_site = 500;
  plan.assign_method_id = [&](std::string_view, std::string_view, std::string_view) { return next_method++; };
  plan.assign_site_id = [&](std::string_view, const InjectedSite&) { return next_site++; };
  return rewrite_class(d.data(), d.size(), plan);
}

// The mark calls of one rewritten method: (offset in the new code of the instruction they follow,
// the site ID pushed, the tracker method "name descriptor", dimensions pushed or 0).
struct Mark {
  uint32_t after_new_at;
  uint8_t after_op;
  int64_t site;
  std::string call;
  int dimensions;
  bool operator==(const Mark&) const = default;
};
int64_t integer_at(const Parsed& p, uint16_t index) {
  return p.tags[index] == 3 ? int64_t{be4(&p.data[p.offsets[index] + 1])} : -1;
}
std::vector<Mark> marks_in(const Parsed& after, const Code& code) {
  std::vector<Insn> insns = decode(code.code);
  std::vector<Mark> out;
  for (size_t k = 1; k + 2 < insns.size(); ++k) {
    if (insns[k].op != kDup) continue;
    size_t at = k + 1;
    int dims = 0;
    if (insns[at].op == 0x10 || insns[at].op == 0x11) {
      dims = insns[at].op == 0x10 ? code.code[insns[at].at + 1] : be2(&code.code[insns[at].at + 1]);
      ++at;
    }
    if (at + 1 >= insns.size() || (insns[at].op != 0x12 && insns[at].op != 0x13) || insns[at + 1].op != kInvokestatic) continue;
    std::string call = after.methodref(be2(&code.code[insns[at + 1].at + 1]));
    if (call.find(".marked") == std::string::npos) continue;
    uint16_t index = insns[at].op == 0x12 ? code.code[insns[at].at + 1] : be2(&code.code[insns[at].at + 1]);
    out.push_back({insns[k - 1].at, insns[k - 1].op, integer_at(after, index), call.substr(call.find('.') + 1), dims});
  }
  return out;
}

const std::string kObjectInt = " (Ljava/lang/Object;I)V";

TEST(ClassRewriterMarks, SuffixAfterEachKind) {
  Hand h;
  uint16_t strings = h.b.class_entry("java/lang/String"), ints2 = h.b.class_entry("[[I");
  uint16_t object = h.b.class_entry("java/lang/Object");
  uint16_t init = h.methodref("java/lang/Object", "<init>", "()V");
  uint16_t clone = h.methodref("[I", "clone", "()Ljava/lang/Object;");
  uint16_t instance = h.methodref("jdk/internal/misc/Unsafe", "allocateInstance", "(Ljava/lang/Class;)Ljava/lang/Object;");
  h.method("ints", {0x1a, kNewarray, 10, kAreturn});
  h.method("strings", cat({{0x1a}, op2(kAnewarray, strings), {kAreturn}}));
  h.method("one", cat({{0x1a}, op2(kMultianewarray, ints2), {1, kAreturn}}));
  h.method("two", cat({{0x1a, 0x1a}, op2(kMultianewarray, ints2), {2, kAreturn}}));
  h.method("plain", cat({op2(kNew, object), {kDup}, op2(kInvokespecial, init), {kAreturn}}));
  h.method("cloned", cat({{0x2b}, op2(kInvokevirtual, clone), {kAreturn}}));
  h.method("instance", cat({{0x2b, 0x2b}, op2(kInvokevirtual, instance), {kAreturn}}));
  Data d = h.b.build();
  RewriteResult r = marks_rewrite(d, true);
  ASSERT_EQ(r.outcome, RewriteOutcome::kRewritten) << r.error;
  ASSERT_EQ(r.sites.size(), 7u);
  for (const InjectedSite& s : r.sites) EXPECT_TRUE(s.marked) << s.method_name;
  Parsed after = parse(r.bytes), before = parse(d);
  struct Expect { const char* method; uint8_t op; const char* call; int dims; uint16_t stack; };
  for (const Expect& e : {Expect{"ints", kNewarray, "marked", 0, 6}, Expect{"strings", kAnewarray, "marked", 0, 6},
                          Expect{"one", kMultianewarray, "marked", 0, 6}, Expect{"two", kMultianewarray, "markedMulti", 2, 7},
                          Expect{"plain", kInvokespecial, "marked", 0, 6}, Expect{"cloned", kInvokevirtual, "markedClone", 0, 6},
                          Expect{"instance", kInvokevirtual, "markedClass", 0, 6}}) {
    SCOPED_TRACE(e.method);
    const Code& code = *method_named(after, e.method).code;
    std::vector<Mark> marks = marks_in(after, code);
    ASSERT_EQ(marks.size(), 1u);
    const InjectedSite* site = nullptr;
    for (const InjectedSite& s : r.sites)
      if (s.method_name == e.method) site = &s;
    ASSERT_NE(site, nullptr);
    std::string descriptor = e.dims ? " (Ljava/lang/Object;II)V" : kObjectInt;
    EXPECT_EQ(marks[0], (Mark{marks[0].after_new_at, e.op, site->id, e.call + descriptor, e.dims}));
    EXPECT_EQ(code.code.back(), kAreturn) << "the mark call before the return, after its instruction";
    EXPECT_EQ(code.max_stack, e.stack) << "4 + room for the copy, the ID (and d)";
    size_t suffix = e.dims ? 8 : 6;
    EXPECT_EQ(Data(code.code.end() - 1 - static_cast<long>(suffix), code.code.end() - static_cast<long>(suffix) + 1)[0], kDup);
    // Taking the mark call out leaves the code the allocation calls alone give.
    RewriteResult alone = marks_rewrite(d, false);
    Parsed alone_parsed = parse(alone.bytes);
    const Code& plain = *method_named(alone_parsed, e.method).code;
    Data without = code.code;
    without.erase(without.end() - 1 - static_cast<long>(suffix), without.end() - 1);
    EXPECT_EQ(without, plain.code);
  }
  (void)before;
}

// A branch and a handler naming the instruction after an array allocation land past its mark call.
TEST(ClassRewriterMarks, BranchToTheNextInstructionLandsAfterTheSuffix) {
  Hand h;
  // 0 aconst_null; 1 iload_0; 2 ifeq 9; 5 pop; 6 iconst_1; 7 newarray int; 9 areturn
  h.method("m", {0x01, 0x1a, 0x99, 0, 7, 0x57, 0x04, kNewarray, 10, kAreturn}, 4, 4, {{{0, 9, 9, 0}}});
  RewriteResult r = marks_rewrite(h.b.build(), true);
  ASSERT_EQ(r.outcome, RewriteOutcome::kRewritten) << r.error;
  Parsed after = parse(r.bytes);
  const Code& code = *method_named(after, "m").code;
  std::vector<Insn> insns = decode(code.code);
  ASSERT_EQ(insns.back().op, kAreturn);
  uint32_t areturn = insns.back().at;
  EXPECT_EQ(insns[2].op, 0x99);
  EXPECT_EQ(insns[2].targets.at(0), areturn) << "the branch lands past the mark call";
  EXPECT_EQ(insns[insns.size() - 2].op, kInvokestatic);
  EXPECT_EQ(code.handlers.at(0)[1], areturn) << "the range ends past it (the mark call is in it)";
  EXPECT_EQ(code.handlers.at(0)[2], areturn) << "the handler starts past it";
  ASSERT_EQ(marks_in(after, code).size(), 1u);
}

struct NewCase {
  Hand h;
  uint16_t object_class, box_class, box_init, b_class, b_init, j_init;
  NewCase() {
    object_class = h.b.class_entry("java/lang/Object");
    box_class = h.b.class_entry("Box");
    box_init = h.methodref("Box", "<init>", "(Ljava/lang/Object;)V");
    b_class = h.b.class_entry("B");
    b_init = h.methodref("B", "<init>", "()V");
    j_init = h.methodref("B", "<init>", "(J)V");
  }
};

// Each `new` of these is marked after each of its initializers, none elsewhere.
TEST(ClassRewriterMarks, NewMarkedAfterEachInitializer) {
  NewCase c;
  // new Box(i != 0 ? o : null): both arms meet at the one initializer
  c.h.method("conditional", cat({op2(kNew, c.box_class), {kDup, 0x1a, 0x99, 0, 7, 0x2b, 0xa7, 0, 4, 0x01},
                                  op2(kInvokespecial, c.box_init), {kAreturn}}));
  // new B, initialized in either arm of a branch: two initializers
  c.h.method("arms", cat({op2(kNew, c.b_class), {kDup, 0x1a, 0x99, 0, 9}, op2(kInvokespecial, c.b_init), {0xa7, 0, 6},
                           op2(kInvokespecial, c.b_init), {kAreturn}}));
  // new Box(new B())
  c.h.method("nested", cat({op2(kNew, c.box_class), {kDup}, op2(kNew, c.b_class), {kDup}, op2(kInvokespecial, c.b_init),
                             op2(kInvokespecial, c.box_init), {kAreturn}}));
  // new B(); as a statement
  c.h.method("statement", cat({op2(kNew, c.b_class), {kDup}, op2(kInvokespecial, c.b_init), {0x57, 0x2b, kAreturn}}));
  // o; new Box; dup_x1; swap; invokespecial Box(o)
  c.h.method("dupX1Swap", cat({{0x2b}, op2(kNew, c.box_class), {0x5a, 0x5f}, op2(kInvokespecial, c.box_init), {kAreturn}}));
  // new B(2L): a category-2 argument through dup2 and pop2
  c.h.method("wideArgument", cat({op2(kNew, c.b_class), {kDup, 0x0a, 0x5c, 0x58}, op2(kInvokespecial, c.j_init), {kAreturn}}));
  Data d = c.h.b.build();
  RewriteResult r = marks_rewrite(d, true);
  ASSERT_EQ(r.outcome, RewriteOutcome::kRewritten) << r.error;
  Parsed after = parse(r.bytes);
  std::map<std::string, std::vector<uint32_t>> sites;  // method -> its sites' IDs in code order
  for (const InjectedSite& s : r.sites) {
    EXPECT_TRUE(s.marked) << s.method_name << " at " << s.offset;
    sites[s.method_name].push_back(s.id);
  }
  auto ids = [&](const std::string& method) {
    std::vector<int64_t> out;
    for (const Mark& m : marks_in(after, *method_named(after, method).code)) {
      EXPECT_EQ(m.after_op, kInvokespecial) << method;
      EXPECT_EQ(m.call, "marked" + kObjectInt);
      out.push_back(m.site);
    }
    return out;
  };
  EXPECT_EQ(ids("conditional"), (std::vector<int64_t>{sites["conditional"][0]}));
  EXPECT_EQ(ids("arms"), (std::vector<int64_t>{sites["arms"][0], sites["arms"][0]}));
  EXPECT_EQ(ids("nested"), (std::vector<int64_t>{sites["nested"][1], sites["nested"][0]})) << "B's first, then the Box's";
  EXPECT_EQ(ids("statement"), (std::vector<int64_t>{sites["statement"][0]}));
  EXPECT_EQ(ids("dupX1Swap"), (std::vector<int64_t>{sites["dupX1Swap"][0]}));
  EXPECT_EQ(ids("wideArgument"), (std::vector<int64_t>{sites["wideArgument"][0]}));
  const Code& statement = *method_named(after, "statement").code;
  EXPECT_EQ(statement.code[statement.code.size() - 3], 0x57) << "the mark call, then the statement's pop";
  EXPECT_EQ(statement.max_stack, 6) << "room for the copy and the ID";
  // The arms' branch to the second initializer and its goto to the return land where they did,
  // relative to their instructions (past the first arm's mark call).
  std::vector<Insn> arms = decode(method_named(after, "arms").code->code);
  for (const Insn& i : arms)
    for (uint32_t t : i.targets) {
      auto target = std::find_if(arms.begin(), arms.end(), [&](const Insn& x) { return x.at == t; });
      ASSERT_NE(target, arms.end());
      EXPECT_TRUE(target->op == kInvokespecial || target->op == kAreturn || target->op == 0x12) << int(target->op);
    }
}

// A copy stored to a local, the top after the initializer not a copy, a jsr before the
// initializer: no mark call for that new anywhere, the site unmarked; the others still marked.
TEST(ClassRewriterMarks, GivesUpWhereItCannotBeSure) {
  NewCase c;
  c.h.method("stored", cat({op2(kNew, c.b_class), {kDup, 0x4c}, op2(kInvokespecial, c.b_init), {0x2b, kAreturn}}));
  c.h.method("notOnTop", cat({op2(kNew, c.b_class), {0x01, 0x5f}, op2(kInvokespecial, c.b_init), {kAreturn}}));
  c.h.method("jsr", cat({op2(kNew, c.b_class), {kDup, 0xa8, 0, 7}, op2(kInvokespecial, c.b_init), {kAreturn, 0x4d, 0xa9, 2}}));
  c.h.method("fine", cat({op2(kNew, c.b_class), {kDup}, op2(kInvokespecial, c.b_init), {0x1a, kNewarray, 10, 0x57, kAreturn}}));
  Data d = c.h.b.build();
  RewriteResult r = marks_rewrite(d, true);
  ASSERT_EQ(r.outcome, RewriteOutcome::kRewritten) << r.error;
  Parsed after = parse(r.bytes);
  for (const InjectedSite& s : r.sites) {
    bool expected = s.method_name == "fine";
    EXPECT_EQ(s.marked, expected) << s.method_name << " at " << s.offset;
  }
  ASSERT_EQ(r.sites.size(), 5u);
  for (const char* name : {"stored", "notOnTop", "jsr"}) {
    EXPECT_TRUE(marks_in(after, *method_named(after, name).code).empty()) << name;
    EXPECT_EQ(method_named(after, name).code->max_stack, 5) << name << ": the allocation call's growth only";
  }
  EXPECT_EQ(marks_in(after, *method_named(after, "fine").code).size(), 2u);
}

// Without RewritePlan::marks: no mark call, no marked* reference, no site marked; with marks but
// no allocations nothing is injected at all.
TEST(ClassRewriterMarks, WithoutMarksNothingChanges) {
  for (const auto& path : javac_classes()) {
    SCOPED_TRACE(path.string());
    Data d = read_file(path);
    RewriteResult without = marks_rewrite(d, false, true);
    ASSERT_NE(without.outcome, RewriteOutcome::kMalformed);
    for (const InjectedSite& s : without.sites) EXPECT_FALSE(s.marked);
    if (without.outcome == RewriteOutcome::kRewritten) {
      Parsed p = parse(without.bytes);
      for (size_t i = 1; i < p.tags.size(); ++i) {
        if (p.tags[i] != 10) continue;
        EXPECT_EQ(p.methodref(static_cast<uint16_t>(i)).find(".marked"), std::string::npos);
      }
    }
    RewritePlan plan;
    plan.calls = true;
    plan.marks = true;  // without allocations: ignored
    uint32_t next = 100;
    plan.assign_method_id = [&](std::string_view, std::string_view, std::string_view) { return next++; };
    RewriteResult calls_only = rewrite_class(d.data(), d.size(), plan);
    EXPECT_EQ(calls_only.bytes, rewrite(d).result.bytes);
  }
}

// javac's classes: every site marked (javac's `new C; dup; ...; invokespecial` always leaves the
// copy on top), one mark call per array or allocating call and one per initializer, each pushing
// its site's ID; the output reads again.
TEST(ClassRewriterMarks, JavacClassesEverySiteMarked) {
  size_t sites = 0;
  for (const auto& path : javac_classes()) {
    SCOPED_TRACE(path.string());
    Data d = read_file(path);
    for (bool calls : {false, true}) {
      RewriteResult r = marks_rewrite(d, true, calls);
      ASSERT_NE(r.outcome, RewriteOutcome::kMalformed) << r.error;
      EXPECT_EQ(r.methods_left_alone, 0u);
      if (r.outcome != RewriteOutcome::kRewritten) continue;
      Parsed after = parse(r.bytes);
      std::multiset<int64_t> marked_ids;
      for (const Method& m : after.methods) {
        if (!m.code) continue;
        for (const Mark& mark : marks_in(after, *m.code)) marked_ids.insert(mark.site);
      }
      for (const InjectedSite& s : r.sites) {
        EXPECT_TRUE(s.marked) << s.method_name << " at " << s.offset;
        EXPECT_GE(marked_ids.count(s.id), 1u) << s.method_name << " at " << s.offset;
        sites += !calls;
      }
      RewriteResult again = marks_rewrite(r.bytes, false);
      EXPECT_NE(again.outcome, RewriteOutcome::kMalformed) << again.error;
    }
  }
  EXPECT_GT(sites, 20u);
}

// Site IDs past the pool's first 256 entries: the mark call's ldc_w, as the counting call's.
TEST(ClassRewriterMarks, LdcWPastThePoolsFirst256) {
  Hand h;
  for (int i = 0; i < 300; ++i) h.b.utf8("padding" + std::to_string(i));
  h.method("ints", {0x1a, kNewarray, 10, kAreturn});
  RewriteResult r = marks_rewrite(h.b.build(), true);
  ASSERT_EQ(r.outcome, RewriteOutcome::kRewritten);
  Parsed after = parse(r.bytes);
  const Code& code = *method_named(after, "ints").code;
  // iload_0; dup; ldc_w; invokestatic; newarray; dup; ldc_w s; invokestatic; areturn
  ASSERT_EQ(code.code.size(), 1u + 1 + 3 + 3 + 2 + 1 + 3 + 3 + 1);
  EXPECT_EQ(code.code[10], kDup);
  EXPECT_EQ(code.code[11], 0x13);
  EXPECT_EQ(Data(code.code.begin() + 12, code.code.begin() + 14), Data(code.code.begin() + 3, code.code.begin() + 5))
      << "the same constant as the counting call's";
}

}  // namespace
}  // namespace fasthprof
