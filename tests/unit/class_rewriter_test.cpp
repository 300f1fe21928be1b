// runtime/classfile/class_rewriter on class files javac compiled at build time (tests/class_rewriter/java,
// --release 8 and 17) and on class files built here byte by byte (jsr/ret, widened branches,
// methods near 64 KiB, every constant-pool tag, a pool that would overflow, malformed input).
// Each rewritten method is checked by a reader written apart from the rewriter: the entry call
// first, the exit call before every return, the original instructions in their order, and every
// offset (branches, switches, handlers, line numbers, local variables, stack map frames and their
// uninitialized types, type annotations) naming the same instruction as before. tests/integration/
// class_rewriter_jvm.py runs rewritten classes in a JVM.
#include "class_file_tools.h"

namespace fasthprof {
namespace {

using namespace class_test;

TEST(ClassRewriter, JavacClassesKeepEveryOffsetOnItsInstruction) {
  auto classes = javac_classes();
  ASSERT_GE(classes.size(), 20u);
  size_t rewritten = 0;
  for (const auto& p : classes) {
    SCOPED_TRACE(p.string());
    RewriteResult r = check_class(read_file(p));
    if (r.outcome == RewriteOutcome::kRewritten) ++rewritten;
    EXPECT_EQ(r.methods_left_alone, 0u);
  }
  EXPECT_GE(rewritten, 15u);
}

TEST(ClassRewriter, LoopBackToOffsetZeroDoesNotEnterAgain) {
  Data d = javac_class("release17", "CallGraphs");
  Rewrite r = rewrite(d);
  ASSERT_EQ(r.result.outcome, RewriteOutcome::kRewritten);
  Parsed old_class = parse(d), new_class = parse(r.result.bytes);
  const Method& before = method_named(old_class, "spin");
  const Method& after = method_named(new_class, "spin");
  auto old_insns = decode(before.code->code);
  ASSERT_TRUE(std::any_of(old_insns.begin(), old_insns.end(),
                          [](const Insn& i) { return i.op == 0xa7 && i.targets[0] == 0; }))
      << "javac's loop jumps back to offset 0";
  for (const Insn& i : decode(after.code->code)) {
    if (i.op == 0xa7) {
      EXPECT_EQ(i.targets[0], 5u) << "to the original first instruction, after the entry call";
    }
  }
}

TEST(ClassRewriter, BranchToReturnRunsTheExitCall) {
  Data d = javac_class("release17", "CallGraphs");
  Rewrite r = rewrite(d);
  Parsed new_class = parse(r.result.bytes);
  const Method& after = method_named(new_class, "early");
  auto insns = decode(after.code->code);
  const Insn& branch = *std::find_if(insns.begin(), insns.end(), [](const Insn& i) { return i.op == 0x9e; });  // ifle
  auto target = std::find_if(insns.begin(), insns.end(), [&](const Insn& i) { return i.at == branch.targets[0]; });
  ASSERT_NE(target, insns.end());
  EXPECT_EQ(target->op, 0x12) << "the branch lands on the exit call's ldc";
  EXPECT_EQ((target + 2)->op, 0xb1);
}

TEST(ClassRewriter, AssignerCalledOncePerMethodWithCodeInOrder) {
  ClassBuilder b;
  b.methods.push_back({0x0401, "abstract", "()V", false});
  b.methods.push_back({0x0009, "a", "()V", true, 1, 0, {0xb1}});
  b.methods.push_back({0x0109, "native", "()V", false});
  b.methods.push_back({0x0009, "b", "(I)I", true, 1, 1, {0x1a, 0xac}});
  Data d = b.build();
  Rewrite r = rewrite(d);
  ASSERT_EQ(r.result.outcome, RewriteOutcome::kRewritten);
  ASSERT_EQ(r.asked.size(), 2u);
  EXPECT_EQ(r.asked[0], std::make_tuple(std::string("Hand"), std::string("a"), std::string("()V")));
  EXPECT_EQ(r.asked[1], std::make_tuple(std::string("Hand"), std::string("b"), std::string("(I)I")));
  ASSERT_EQ(r.result.methods.size(), 2u);
  EXPECT_EQ(r.result.methods[1].id, 101u);
  EXPECT_EQ(r.result.class_name, "Hand");
  check_class(d);
}

TEST(ClassRewriter, SameIdSharesOneConstant) {
  ClassBuilder b;
  b.methods.push_back({0x0009, "a", "()V", true, 1, 0, {0xb1}});
  b.methods.push_back({0x0009, "b", "()V", true, 1, 0, {0xb1}});
  Data d = b.build();
  RewriteResult one = rewrite_class(d.data(), d.size(), {}, [](auto, auto, auto) { return 7u; });
  RewriteResult two = rewrite(d).result;
  ASSERT_EQ(one.outcome, RewriteOutcome::kRewritten);
  EXPECT_EQ(two.bytes.size() - one.bytes.size(), 5u) << "one CONSTANT_Integer fewer";
}

TEST(ClassRewriter, TrackerClassItselfIsNotTouched) {
  ClassBuilder b;
  b.name = "java/lang/FasthprofTracker";
  b.methods.push_back({0x0009, "enter", "(I)V", true, 1, 1, {0xb1}});
  Data d = b.build();
  Rewrite r = rewrite(d);
  EXPECT_EQ(r.result.outcome, RewriteOutcome::kNothingToDo);
  EXPECT_TRUE(r.asked.empty());
}

// Old class files: jsr/ret, and branches that no longer reach once 2000 returns have grown by
// their exit calls: a conditional branch inverted around a goto_w, a jsr become jsr_w.
Data far_branches(uint16_t major, uint8_t second_branch) {
  ClassBuilder b;
  b.major = major;
  b.name = "Far";
  uint16_t this_class = b.class_entry("Far");
  uint16_t far_nat = b.entry(Bytes().u1(12).u2(b.utf8("far")).u2(b.utf8("()V")).data);
  uint16_t far_ref = b.entry(Bytes().u1(10).u2(this_class).u2(far_nat).data);
  Bytes main;
  main.u1(0xb8).u2(far_ref).u1(0xb8).u2(far_ref).u1(0xb1);  // far() twice
  b.methods.push_back({0x0009, "main", "([Ljava/lang/String;)V", true, 0, 1, main.data});
  Bytes code;
  code.u1(0x03);         // 0: iconst_0
  code.u1(0x99).u2(0);   // 1: ifeq FAR (patched)
  code.u1(second_branch).u2(0);  // 4: jsr SUB / goto FAR (patched)
  code.u1(0xb1);         // 7: return
  for (int i = 0; i < 2000; ++i) {
    code.u1(0xb1);  // unreachable returns, each grows by an exit call
    for (int k = 0; k < 14; ++k) code.u1(0x00);
  }
  uint32_t far = static_cast<uint32_t>(code.data.size());
  code.u1(0xa8).u2(4);   // FAR: jsr SUB
  code.u1(0xb1);         //      return
  uint32_t sub = static_cast<uint32_t>(code.data.size());
  code.u1(0x4c);         // SUB: astore_1
  code.u1(0xa9).u1(1);   //      ret 1
  auto patch = [&](uint32_t at, uint32_t target) {
    code.data[at + 1] = static_cast<uint8_t>((target - at) >> 8);
    code.data[at + 2] = static_cast<uint8_t>(target - at);
  };
  patch(1, far);
  patch(4, second_branch == 0xa8 ? sub : far);
  EXPECT_LT(sub, 32767u);
  b.methods.push_back({0x0009, "far", "()V", true, 1, 2, code.data});
  return b.build();
}

TEST(ClassRewriter, OldClassFileWidensJsrAndInvertsConditionalBranch) {
  Data d = far_branches(49, 0xa8);
  write_for_jvm("Far", d);
  RewriteResult r = check_class(d);
  ASSERT_EQ(r.outcome, RewriteOutcome::kRewritten);
  EXPECT_EQ(r.branches_widened, 2u);
  auto insns = decode(parse(r.bytes).methods[1].code->code);
  EXPECT_EQ(insns[3].op, 0x9a) << "ifeq inverted to ifne";
  EXPECT_EQ(insns[4].op, 0xc8);
  EXPECT_EQ(insns[5].op, 0xc9) << "jsr_w";
}

TEST(ClassRewriter, ConditionalThatNoLongerReachesLeavesMethodAloneWithStackMaps) {
  Data d = far_branches(52, 0xa7);
  Rewrite r = rewrite(d);
  EXPECT_EQ(r.result.outcome, RewriteOutcome::kRewritten) << "main is rewritten";
  EXPECT_EQ(r.result.methods.size(), 1u);
  EXPECT_EQ(r.result.methods_left_alone, 1u);
  EXPECT_EQ(r.asked.size(), 2u) << "far's ID was given before it was left alone";
}

TEST(ClassRewriter, GotoWidenedInStackMapClassFile) {
  // A backward goto to offset 0 over code that grows past 32 KiB; a frame at 0 and after the goto.
  ClassBuilder b;
  b.major = 52;
  Bytes code;
  code.u1(0x1a);        // 0: iload_0
  code.u1(0x9a).u2(0);  // 1: ifne L (patched)
  code.u1(0xb1);        // 4: return
  for (int i = 0; i < 2000; ++i) code.u1(0x00).u1(0x00).u1(0x00).u1(0xb1).u1(0x00).u1(0x00).u1(0x00).u1(0x00)
                                      .u1(0x00).u1(0x00).u1(0x00).u1(0x00).u1(0x00).u1(0x00).u1(0x00);
  uint32_t l = static_cast<uint32_t>(code.data.size());
  code.u1(0xa7).u2(static_cast<uint32_t>(-static_cast<int32_t>(l)));  // L: goto 0
  code.data[2] = static_cast<uint8_t>((l - 1) >> 8);
  code.data[3] = static_cast<uint8_t>(l - 1);
  Bytes frames;
  frames.u2(2).u1(0);                   // same_frame at 0
  frames.u1(251).u2(l - 1);             // same_frame_extended at L
  b.methods.push_back({0x0009, "loop", "(I)V", true, 1, 1, code.data, {}, {{"StackMapTable", frames.data}}});
  Data d = b.build();
  // The ifne's short forward branch also spans the growth: this method is left alone; without
  // the returns inside the ifne's span the goto alone widens.
  Rewrite alone = rewrite(d);
  EXPECT_EQ(alone.result.methods_left_alone, 1u);
  // Now the same with the returns after the ifne's target: move the ifne to jump over one nop.
  code.data[1] = 0x9a;
  code.data[2] = 0;
  code.data[3] = 4;  // ifne 5 (the first nop)
  b.methods[0].code = code.data;
  Bytes frames2;
  frames2.u2(3).u1(0).u1(4).u1(251).u2(l - 5 - 1);  // at 0, at 5, at L
  b.methods[0].attributes = {{"StackMapTable", frames2.data}};
  d = b.build();
  RewriteResult r = check_class(d);
  ASSERT_EQ(r.outcome, RewriteOutcome::kRewritten);
  EXPECT_EQ(r.branches_widened, 1u);
  auto insns = decode(parse(r.bytes).methods[0].code->code);
  EXPECT_EQ(insns.back().op, 0xc8);
  EXPECT_EQ(insns.back().targets[0], 5u) << "back to the first instruction, after the entry call";
}

TEST(ClassRewriter, SwitchPaddingFollowsTheNewOffset) {
  for (int lead = 0; lead < 4; ++lead) {
    ClassBuilder b;
    b.major = 52;
    Bytes code;
    for (int i = 0; i < lead; ++i) code.u1(0x00);
    code.u1(0x1a);  // iload_0
    uint32_t sw = static_cast<uint32_t>(code.data.size());
    code.u1(0xaa);
    while (code.data.size() % 4) code.u1(0);
    uint32_t body = static_cast<uint32_t>(code.data.size());
    code.u4(0).u4(0).u4(2).u4(0).u4(0).u4(0);  // default, low 0, high 2, three offsets (patched)
    uint32_t ret = static_cast<uint32_t>(code.data.size());
    code.u1(0xb1);
    code.u1(0x03).u1(0xac);  // unreachable iconst_0; ireturn... (for variety: never reached)
    for (int k = 0; k < 4; ++k) {
      uint32_t off = ret - sw;
      code.data[body + (k == 0 ? 0 : 8 + 4 * k)] = static_cast<uint8_t>(off >> 24);
      code.data[body + (k == 0 ? 0 : 8 + 4 * k) + 3] = static_cast<uint8_t>(off);
    }
    b.methods.push_back({0x0009, "sw", "(I)V", true, 1, 1, code.data});
    SCOPED_TRACE(lead);
    RewriteResult r = check_class(b.build());
    EXPECT_EQ(r.outcome, RewriteOutcome::kRewritten);
  }
}

TEST(ClassRewriter, MethodsNearThe64KiBLimit) {
  for (uint32_t length : {65535u - 15u, 65535u - 14u}) {
    ClassBuilder b;
    Data code(length - 2, 0x00);
    code.push_back(0xb1);  // one return: 5 bytes for the exit call, 5 for the entry call
    code.push_back(0xb1);
    b.methods.push_back({0x0009, "big", "()V", true, 1, 0, code});
    Rewrite r = rewrite(b.build());
    if (length + 15 <= 65535) {
      EXPECT_EQ(r.result.outcome, RewriteOutcome::kRewritten) << length;
    } else {
      EXPECT_EQ(r.result.outcome, RewriteOutcome::kNothingToDo) << length;
      EXPECT_EQ(r.result.methods_left_alone, 1u);
    }
  }
  ClassBuilder fits;
  fits.methods.push_back({0x0009, "big", "()V", true, 1, 0, Data(65535 - 5 - 5 - 1, 0x00)});
  fits.methods[0].code.push_back(0xb1);
  RewriteResult r = check_class(fits.build());
  EXPECT_EQ(r.outcome, RewriteOutcome::kRewritten) << "exactly 65535 bytes once rewritten";
  EXPECT_EQ(parse(r.bytes).methods[0].code->code.size(), 65535u);
}

TEST(ClassRewriter, EveryConstantPoolTagAndLdcW) {
  ClassBuilder b;
  b.major = 69;
  b.entry(Bytes().u1(3).u4(1).data);
  b.entry(Bytes().u1(4).u4(2).data);
  b.entry(Bytes().u1(5).u4(0).u4(3).data, 2);
  b.entry(Bytes().u1(6).u4(0).u4(4).data, 2);
  uint16_t s = b.utf8("s");
  b.entry(Bytes().u1(8).u2(s).data);
  uint16_t nat = b.entry(Bytes().u1(12).u2(s).u2(b.utf8("()V")).data);
  uint16_t cls = b.class_entry("Other");
  b.entry(Bytes().u1(9).u2(cls).u2(nat).data);
  uint16_t ref = b.entry(Bytes().u1(10).u2(cls).u2(nat).data);
  b.entry(Bytes().u1(11).u2(cls).u2(nat).data);
  b.entry(Bytes().u1(15).u1(6).u2(ref).data);
  b.entry(Bytes().u1(16).u2(b.utf8("()V")).data);
  b.entry(Bytes().u1(17).u2(0).u2(nat).data);
  b.entry(Bytes().u1(18).u2(0).u2(nat).data);
  b.entry(Bytes().u1(19).u2(b.utf8("mod")).data);
  b.entry(Bytes().u1(20).u2(b.utf8("pkg")).data);
  for (int i = 0; i < 300; ++i) b.utf8("filler" + std::to_string(i));
  b.methods.push_back({0x0009, "m", "()V", true, 1, 0, {0xb1}});
  Data d = b.build();
  RewriteResult r = check_class(d);
  ASSERT_EQ(r.outcome, RewriteOutcome::kRewritten);
  EXPECT_EQ(parse(r.bytes).methods[0].code->code[0], 0x13) << "ldc_w: the Integer's index is past 255";
}

TEST(ClassRewriter, PoolThatWouldOverflowStaysUnchanged) {
  ClassBuilder b;
  for (int i = 0; b.pool_count < 65520; ++i) b.utf8(std::to_string(i));
  b.methods.push_back({0x0009, "m", "()V", true, 1, 0, {0xb1}});
  Rewrite r = rewrite(b.build());
  EXPECT_EQ(r.result.outcome, RewriteOutcome::kNothingToDo);
  EXPECT_EQ(r.result.methods_left_alone, 1u);
}

TEST(ClassRewriter, StackMapFramesChooseEncodingsThatFit) {
  // Frames whose deltas pass 63 once 13 returns before them have grown (same_frame and
  // same_locals_1_stack_item take their extended forms), and a full frame with uninitialized types.
  ClassBuilder b;
  b.major = 52;
  uint16_t cls = b.class_entry("java/lang/Object");
  uint16_t init_nat = b.entry(Bytes().u1(12).u2(b.utf8("<init>")).u2(b.utf8("()V")).data);
  uint16_t init = b.entry(Bytes().u1(10).u2(cls).u2(init_nat).data);
  Bytes code;
  code.u1(0x1a).u1(0x1a).u1(0x99).u2(16);     // 0: iload_0; 1: iload_0; 2: ifeq 18
  for (int i = 0; i < 13; ++i) code.u1(0xb1);  // 5..17: returns
  code.u1(0x57);                               // 18: pop          frame: same_locals_1_stack_item(int)
  code.u1(0x03).u1(0x99).u2(4);                // 19: iconst_0; 20: ifeq 24
  code.u1(0x00);                               // 23: nop
  code.u1(0xbb).u2(cls);                       // 24: new Object   frame: same
  code.u1(0x59);                               // 27: dup
  code.u1(0x1a).u1(0x99).u2(4);                // 28: iload_0; 29: ifeq 33
  code.u1(0x00);                               // 32: nop
  code.u1(0xb7).u2(init);                      // 33: invokespecial  frame: full [int] [uninit 24, uninit 24]
  code.u1(0x57);                               // 36: pop
  code.u1(0xb1);                               // 37: return       frame: same (extended form, delta 3)
  Bytes frames;
  frames.u2(4).u1(64 + 18).u1(1).u1(5);
  frames.u1(255).u2(8).u2(1).u1(1).u2(2).u1(8).u2(24).u1(8).u2(24);
  frames.u1(251).u2(3);
  b.methods.push_back({0x0009, "frames", "(I)V", true, 3, 1, code.data, {}, {{"StackMapTable", frames.data}}});
  Bytes same_code;
  same_code.u1(0x1a).u1(0x99).u2(16);          // 0: iload_0; 1: ifeq 17
  for (int i = 0; i < 13; ++i) same_code.u1(0xb1);
  same_code.u1(0xb1);                          // 17: return       frame: same
  Bytes same_frames;
  same_frames.u2(1).u1(17);
  b.methods.push_back({0x0009, "same", "(I)V", true, 1, 1, same_code.data, {}, {{"StackMapTable", same_frames.data}}});
  RewriteResult r = check_class(b.build());
  ASSERT_EQ(r.outcome, RewriteOutcome::kRewritten);
  Parsed after = parse(r.bytes);
  const Data& table = after.methods[0].code->attributes.at("StackMapTable");
  EXPECT_EQ(table[2], 247) << "same_locals_1_stack_item became its extended form";
  EXPECT_EQ(table[6], 5) << "a same_frame whose delta still fits";
  EXPECT_EQ(table[table.size() - 1], 3) << "the last frame in its short form";
  EXPECT_EQ(after.methods[1].code->attributes.at("StackMapTable")[2], 251) << "same_frame became same_frame_extended";
}

// A small old class file with jsr/ret, both switches, a handler and a line table; also a fuzz seed
// (FASTHPROF_WRITE_CLASS_REWRITER_CORPUS=tests/fuzz/corpus/class_rewriter writes it there).
TEST(ClassRewriter, SmallOldClassWithSubroutineSwitchesAndHandler) {
  ClassBuilder b;
  b.major = 45;
  uint16_t throwable = b.class_entry("java/lang/Throwable");
  uint16_t this_class = b.class_entry("Hand");
  uint16_t int_void = b.utf8("(I)V");
  uint16_t old_ref = b.entry(Bytes().u1(10).u2(this_class).u2(b.entry(Bytes().u1(12).u2(b.utf8("old")).u2(int_void).data)).data);
  uint16_t look_ref = b.entry(Bytes().u1(10).u2(this_class).u2(b.entry(Bytes().u1(12).u2(b.utf8("look")).u2(int_void).data)).data);
  Bytes code;
  code.u1(0x1a);                          // 0: iload_0
  code.u1(0xaa).u1(0).u1(0);              // 1: tableswitch, padded to 4
  code.u4(32).u4(0).u4(1).u4(32).u4(27);  //    default and 0 -> 33, 1 -> 28 (a return)
  code.u1(0xa8).u2(6);                    // 24: jsr 30
  code.u1(0x00);                          // 27: nop
  code.u1(0xb1);                          // 28: return
  code.u1(0x00);                          // 29: nop
  code.u1(0x4c).u1(0xa9).u1(1);           // 30: astore_1; 31: ret 1
  code.u1(0xb1);                          // 33: return (also the handler)
  Bytes look;
  look.u1(0x1a);                          // 0: iload_0
  look.u1(0xab).u1(0).u1(0);              // 1: lookupswitch, padded to 4
  look.u4(19).u4(1).u4(7).u4(20);         //    default -> 20, 7 -> 21 (a return)
  look.u1(0x00);                          // 20: nop
  look.u1(0xb1);                          // 21: return
  Bytes main;
  main.u1(0x03).u1(0xb8).u2(old_ref).u1(0x04).u1(0xb8).u2(old_ref);
  main.u1(0x10).u1(7).u1(0xb8).u2(look_ref).u1(0x05).u1(0xb8).u2(look_ref).u1(0xb1);
  b.name = "Hand";
  b.methods.push_back({0x0009, "look", "(I)V", true, 1, 1, look.data});
  b.methods.push_back({0x0009, "main", "([Ljava/lang/String;)V", true, 1, 1, main.data});
  Bytes lines;
  lines.u2(3).u2(0).u2(10).u2(24).u2(11).u2(30).u2(12);
  b.methods.push_back({0x0009, "old", "(I)V", true, 2, 2, code.data, {{{24, 28, 33, throwable}}},
                       {{"LineNumberTable", lines.data}}});
  Data d = b.build();
  write_for_jvm("Hand", d);
  RewriteResult r = check_class(d);
  EXPECT_EQ(r.outcome, RewriteOutcome::kRewritten);
  if (const char* folder = std::getenv("FASTHPROF_WRITE_CLASS_REWRITER_CORPUS")) {
    std::ofstream(std::filesystem::path(folder) / "old-jsr-switches-handler.class", std::ios::binary)
        .write(reinterpret_cast<const char*>(d.data()), static_cast<std::streamsize>(d.size()));
  }
}

// ---- malformed input: a one-line reason, never a crash ----------------------------------------


}  // namespace
}  // namespace fasthprof
