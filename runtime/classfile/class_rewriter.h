// The class-file rewriter behind cpu=times and cpu=old: it injects a call to the tracker class at
// every method entry and before every return instruction, so that calls are counted and timed in
// Java without a JVMTI event per call (docs/cpu_times.md once written). It can also inject, in the
// same pass, a call before every allocation instruction (exact allocation sites, issue 28).
//
// Injected code, for a method given ID n (an int chosen by the caller):
//   at entry:               ldc/ldc_w <CONSTANT_Integer n>; invokestatic <tracker>.<enter>(I)V
//   before every *return:   ldc/ldc_w <CONSTANT_Integer n>; invokestatic <tracker>.<exit>(I)V
// and, with RewritePlan::allocations, for an allocation site given ID s:
//   before new C:                      ldc s; invokestatic <tracker>.<alloc>(I)V
//   before newarray T / anewarray C:   dup; ldc s; invokestatic <tracker>.<alloc_array>(II)V  (length, s)
//   before multianewarray C 1:         as before newarray
//   before Unsafe.allocateInstance(c): dup; ldc s; invokestatic <tracker>.<alloc_class>(Ljava/lang/Class;I)V
//   with RewritePlan::clones, before a call sure to reach Object.clone (an array's clone(), or
//   invokespecial java/lang/Object.clone, a direct subclass's super.clone()):
//                                      dup; ldc s; invokestatic <tracker>.<alloc_clone>(Ljava/lang/Object;I)V
//   before multianewarray C dims >= 2: the counts stored in fresh locals (max_locals grows by
//                                      dims), an int[] of them built, ldc s; invokestatic
//                                      <tracker>.<alloc_multi>([II)V, the counts loaded back
//                                      (multi_allocation.h); the int[] itself is not counted
// and, with RewritePlan::marks too, a mark call AFTER each counted allocation, with the new object
// on top (the same site constant; a jump to the next instruction lands after it):
//   after newarray, anewarray, multianewarray C 1: dup; ldc s; invokestatic <tracker>.<marked>(Ljava/lang/Object;I)V
//   after multianewarray C d >= 2:     dup; bipush d (sipush past 127); ldc s;
//                                      invokestatic <tracker>.<marked_multi>(Ljava/lang/Object;II)V
//   after Unsafe.allocateInstance:     dup; ldc s; invokestatic <tracker>.<marked_class>(Ljava/lang/Object;I)V
//   after a sure Object.clone call:    dup; ldc s; invokestatic <tracker>.<marked_clone>(Ljava/lang/Object;I)V
//   for new C, not after the new (an uninitialized object cannot be passed) but after every
//   invokespecial C.<init> that initializes that object, where a copy of it is on top
//   (uninitialized_flow.h finds them): dup; ldc s; invokestatic <tracker>.<marked>(Ljava/lang/Object;I)V;
//   when it cannot find them all, none (InjectedSite::marked says which sites got theirs)
// and, with RewritePlan::call_positions (entry and exit calls too), before every invoke* instruction
// at original offset p:                sipush (short) p; invokestatic <tracker>.<at>(I)V
// so that the tracker knows from which instruction each call was made (allocation traces deeper
// than one frame, docs/allocation-sites.md).
// (athrow is not touched: exits by exception are taken by the agent through ExceptionCatch, or by
// the tracker when a later exit finds frames above its own.) The injected code leaves stack and
// locals as they were (a multianewarray's counts pass through locals past the method's own, which
// no frame names), so StackMapTable frames keep their types; offsets everywhere move.
//
// Pure C++: no JVM needed, any thread, allocates. A class file it cannot parse, or whose rewrite
// would be invalid, is never "fixed": the caller keeps the original bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fasthprof {

// The static methods the injected code calls, both of descriptor (I)V. Names in internal form.
struct TrackerCalls {
  std::string class_name = "java/lang/FasthprofTracker";
  std::string enter_name = "enter";
  std::string exit_name = "exit";
  std::string alloc_name = "alloc";             // (I)V: the site ID; before a `new`
  std::string alloc_array_name = "allocArray";  // (II)V: the length, the site ID
  std::string alloc_multi_name = "allocMulti";  // ([II)V: a multianewarray's counts (2 or more), the site ID
  std::string at_name = "at";                   // (I)V: the original offset of the invoke that follows (as a short)
  std::string alloc_class_name = "allocClass";  // (Ljava/lang/Class;I)V: before Unsafe.allocateInstance: its class, the site ID
  std::string alloc_clone_name = "allocClone";  // (Ljava/lang/Object;I)V: before Object.clone: the receiver, the site ID
  // With RewritePlan::marks, after an allocation: the new object (initialized), the site ID.
  std::string marked_name = "marked";             // (Ljava/lang/Object;I)V: after new's <init>, newarray, anewarray, multianewarray C 1
  std::string marked_multi_name = "markedMulti";  // (Ljava/lang/Object;II)V: after multianewarray C d >= 2: the array, d, the site ID
  std::string marked_class_name = "markedClass";  // (Ljava/lang/Object;I)V: after Unsafe.allocateInstance
  std::string marked_clone_name = "markedClone";  // (Ljava/lang/Object;I)V: after a call sure to reach Object.clone
};

// One allocation instruction that got a counting call.
struct InjectedSite {
  std::string method_name;  // of the method holding the instruction
  std::string descriptor;
  uint32_t offset = 0;      // of the instruction in the ORIGINAL code
  std::string type;         // as written: "java/lang/String" for new, "[I", "[Ljava/lang/String;", "[[J"
  uint32_t id = 0;          // what the injected code pushes
  int32_t line = -1;        // the instruction's source line (LineNumberTable), -1 without one
  // multianewarray: the dimensions it allocates, else 0. From 2 on it makes arrays at each level
  // (type, then type without its first '[', ...) under one ID, the caller's: the agent's names the
  // innermost level and gives the levels above it the indexes just before (FasthprofAllocs.java).
  uint8_t dimensions = 0;
  // A call of jdk.internal.misc.Unsafe.allocateInstance(Class) (type ""): an instance of the class
  // it is given, known when it runs (the JDK makes lambdas' objects this way).
  bool instantiates = false;
  // A call sure to reach Object.clone (RewritePlan::clones; type ""): an object like the receiver,
  // whose class and size are known when it runs.
  bool clones = false;
  // RewritePlan::marks: every mark call this object needs was injected (for a `new`, after each
  // invokespecial <init> that initializes it; none when the rewriter could not find them all).
  bool marked = false;
};

struct InjectedMethod {
  std::string name;        // e.g. "<init>", "run"
  std::string descriptor;  // e.g. "(Ljava/lang/String;)V"
  uint32_t id = 0;         // what the injected code pushes
  // With RewritePlan::call_positions: (original offset, source line or -1) of each invoke*, in code order.
  std::vector<std::pair<uint32_t, int32_t>> call_lines;
};

enum class RewriteOutcome {
  kRewritten,    // RewriteResult::bytes holds the new class file
  kNothingToDo,  // no method with code to instrument (or every one was left alone): keep the original
  kMalformed,    // not a class file this rewriter can read (RewriteResult::error says why): keep the original
};

struct RewriteResult {
  RewriteOutcome outcome = RewriteOutcome::kMalformed;
  std::vector<uint8_t> bytes;
  std::string class_name;               // this_class, internal form ("" when malformed early)
  std::string source_file;              // the SourceFile attribute, "" when absent
  std::vector<InjectedMethod> methods;  // the methods given entry and exit calls, in class-file order
  std::vector<InjectedSite> sites;      // the allocation sites counted, in class-file and code order
  uint32_t methods_left_alone = 0;      // had code but stayed as they were (64 KiB limit, ...)
  uint32_t branches_widened = 0;        // short branches written in a long form (goto_w, ...) to reach
  std::string error;                    // kMalformed: one line naming what was wrong and where
};

// Chooses the ID of one method about to be instrumented: (class name, method name, descriptor),
// all internal form. Called once per instrumented method, in class-file order, on the calling
// thread; a method later left alone keeps the ID it was given (unused).
using MethodIdAssigner =
    std::function<uint32_t(std::string_view class_name, std::string_view method_name,
                           std::string_view descriptor)>;

// Chooses the ID of one allocation site: the class name and the site as InjectedSite describes it
// (its id not set yet). Called once per allocation instruction, in class-file then code order,
// after the method's MethodIdAssigner; a site in a method later left alone keeps its ID (unused).
using SiteIdAssigner = std::function<uint32_t(std::string_view class_name, const InjectedSite& site)>;

// What one pass injects. Both kinds together rewrite each method once; a method with nothing to
// inject (allocations only, and none in it) is copied as it was and counted nowhere.
struct RewritePlan {
  TrackerCalls tracker;
  bool calls = true;         // entry and exit calls; assign_method_id is needed
  bool allocations = false;  // a call before every allocation instruction and Unsafe.allocateInstance; assign_site_id is needed
  bool call_positions = false;  // with calls: a call before every invoke* naming its offset
  bool clones = false;          // with allocations: a call before every call sure to reach Object.clone
  bool marks = false;           // with allocations: a call after every counted allocation, with the new object
  MethodIdAssigner assign_method_id;
  SiteIdAssigner assign_site_id;
};

// Rewrites one class file (versions 45 to 69). Methods without code (abstract, native) are not
// touched; neither is any method of the tracker class itself. Never reads outside [data, data+size).
RewriteResult rewrite_class(const uint8_t* data, size_t size, const RewritePlan& plan);

// Entry and exit calls only (cpu=times).
inline RewriteResult rewrite_class(const uint8_t* data, size_t size, const TrackerCalls& tracker,
                                   const MethodIdAssigner& assign_id) {
  RewritePlan plan;
  plan.tracker = tracker;
  plan.assign_method_id = assign_id;
  return rewrite_class(data, size, plan);
}

}  // namespace fasthprof
