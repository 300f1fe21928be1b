// Allocation traces deeper than one frame for alloc=inject without a shadow stack
// (docs/allocation-sites.md "Traces by frame walk"): the injected allocation call asks a native
// (FasthprofAllocs.callers) for the frames below the allocating method. The native reads the
// calling thread's own stack through its frame pointers (HotSpot keeps them in compiled code when
// PreserveFramePointer is on, which the agent sets at load; interpreted frames always have them)
// and makes a key of what each frame runs: the return address into a compiled method, or the
// Method* and bytecode pointer of an interpreted frame. A key names the same Java frames as long as
// that code lives, so the answer is cached per thread under it; only a key not seen yet costs a
// JVMTI GetStackTrace, whose frames are interned as a context ID (the answer). The code
// addresses that count as compiled methods are the instructions of the nmethods JVMTI reported
// (CompiledMethodLoad), and the cache is dropped when one is unloaded (CompiledMethodUnload): a
// return address anywhere else (a stub, a frame whose code is being deoptimized, a call from the
// VM) leaves the key unmade and the allocation pays the GetStackTrace.
#pragma once

#include <jni.h>
#include <jvmti.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/flat_map.h"
#include "base/stack_frame.h"
#include "base/unload_epochs.h"
#include "sites/code_heaps.h"

namespace fasthprof {

class FrameWalk {
 public:
  // The deepest traces it makes (a deeper depth keeps the shadow stack).
  static constexpr int kMaxDepth = 62;

  // Agent_OnLoad (not attached): asks HotSpot to keep frame pointers in the code it compiles from
  // now on. False when the VM does not let the agent (no such flag, or not described): the
  // traces then come from the shadow stack.
  static bool keep_frame_pointers();

  // Live, on a Java thread: finds the interpreter's code and the code cache (the caller then
  // enables the compiled method events and asks for those of the methods compiled already). False
  // with *why when the VM does not describe them: callers() then asks GetStackTrace at every
  // allocation (exact, slow). depth: at most kMaxDepth.
  bool start(jvmtiEnv* jvmti, int depth, std::string* why);
  // CompiledMethodLoad / CompiledMethodUnload (any thread).
  void on_code_loaded(const void* code, jint size);
  void on_code_unloaded(const void* code);

  // The frames below the allocating method of context `id` (the owner), depth - 1 at most; empty
  // for an unknown ID.
  std::vector<StackFrame> frames(uint32_t id);
  // What the walks did, for verbose=y: answers from the threads' caches, from the shared table, by
  // a GetStackTrace.
  uint64_t walked() const;
  uint64_t asked() const { return asked_.load(std::memory_order_relaxed); }
  uint64_t shared_hits();
  uint64_t contexts();
  // How many times compiled code was unloaded (each a new epoch), and how many cached answers were
  // kept across one since none of their code was freed.
  uint64_t epochs() const { return epoch_.load(std::memory_order_relaxed) - 1; }
  uint64_t kept_answers();
  // Return addresses in compiled code named by the code heaps' map before CompiledMethodLoad came.
  uint64_t named_early() const { return heaps_.named(); }
  // For verbose=y, a check of that map against the VM's own reports: of the nmethods loaded now,
  // how many it names (*agreed of *checked), and whether it tells the call stub (code that is no
  // nmethod) apart. False when the map is not read.
  bool check_heaps(uint64_t* checked, uint64_t* agreed, bool* stub_apart);

  // FasthprofAllocs.callers (Java_java_lang_FasthprofAllocs_callers): the context of the
  // allocation under way on this thread, 0 when the allocating method has no caller. `fp`: the
  // native's own frame pointer.
  static jint callers(JNIEnv* jni, const void* fp);
  // FasthprofAllocs.cloneCallers marks the thread before a clone the injected code counts: the
  // clone's VMObjectAlloc event (the next on this thread) takes the mark and is left out.
  static void mark_clone() { clone_ahead_ = true; }
  static bool take_clone_mark() {
    bool marked = clone_ahead_;
    clone_ahead_ = false;
    return marked;
  }

 private:
  struct Key;
  // checked: every return address into compiled code is one of a reported nmethod's (else the
  // key is unmade); unchecked, a key can only be looked up (a checked one made it, in this epoch).
  bool make_key(const uintptr_t* fp, uintptr_t stack_high, Key* key, bool checked) const;
  // Whether the answer a key had at epoch `since` holds now: every frame of it compiled code, none
  // of which was freed since (a key with an interpreted frame is made again: the class of its
  // Method* may have been unloaded, which no event reports).
  bool still_holds(const Key& key, uint32_t since) const;
  jint ask(JNIEnv* jni);
  bool recall(const Key& key, uint64_t low, uint64_t high, uint32_t epoch, jint* context);
  void remember(uint64_t low, uint64_t high, uint32_t epoch, jint context);
  jint intern(const jvmtiFrameInfo* frames, jint count);
  bool compiled_code(uintptr_t pc) const;
  void mark(const void* code, uint64_t size, bool on);

  jvmtiEnv* jvmti_ = nullptr;
  int depth_ = 0;
  bool walking_ = false;  // start() found what it needs
  uintptr_t interpreter_low_ = 0, interpreter_high_ = 0;
  uintptr_t code_low_ = 0, code_high_ = 0;
  uintptr_t call_stub_return_ = 0;
  uint64_t wrapper_last_sp_ = 0;  // JavaCallWrapper::_anchor + JavaFrameAnchor::_last_Java_sp
  // One bit per 8 bytes of the code cache: set over the instructions of a loaded nmethod.
  std::atomic<uint64_t>* code_bits_ = nullptr;
  size_t code_words_ = 0;
  // Bumped when compiled code is unloaded (under mutex_): a cached answer made before is taken again
  // only when its code was not freed since (unloads_).
  std::atomic<uint32_t> epoch_{1};
  UnloadEpochs unloads_;
  // Compiled code not reported yet, told by HotSpot's map of its code heaps (code_heaps.h): an
  // nmethod's load event is queued before its unload event, so such a key goes stale in time too.
  CodeHeaps heaps_;
  bool heaps_known_ = false;

  static thread_local bool clone_ahead_;
  std::atomic<uint64_t> asked_{0};
  std::mutex mutex_;  // guards what follows
  std::unordered_map<const void*, uint64_t> code_sizes_;  // loaded nmethods' instructions
  std::unordered_map<uint64_t, std::vector<uint32_t>> by_hash_;  // frames' hash -> context IDs
  // Keys (their 128-bit hash) -> context and the epoch it was last known good in, behind the
  // threads' caches.
  struct SharedKey {
    uint64_t low, high;
    bool operator==(const SharedKey& other) const { return low == other.low && high == other.high; }
  };
  struct SharedKeyHash {
    uint64_t operator()(const SharedKey& key) const { return key.low; }
  };
  // Open addressing: a lookup is one cache miss where a node-based map took two or three (javac at
  // depth 4 asks it 240 000 times).
  struct SharedAnswer {
    uint32_t context, epoch;
  };
  FlatMap<SharedKey, SharedAnswer, SharedKeyHash> shared_keys_;
  uint64_t shared_hits_ = 0;
  uint64_t shared_kept_ = 0;
  std::vector<std::vector<StackFrame>> contexts_;                // by ID - 1
};

}  // namespace fasthprof
