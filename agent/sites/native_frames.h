// Which native method a Java thread is in when the VM posts a VMObjectAlloc event from inside it,
// told without a JVMTI stack walk (docs/allocation-sites.md "Natives counted at their calls"): the
// allocation tracker leaves out the events of the natives the injected code counts at their calls
// (Unsafe.allocateInstance always, Object.clone where its call was marked), and asking JVMTI for
// the top frame of each (a handshake and a frame decoded) cost as much as the rest of the event.
//
// The VM keeps, for a thread that left Java code, where its last Java frame is (JavaThread::_anchor:
// stack pointer, frame pointer, pc), and HotSpot's tables for its Serviceability Agent say where
// those words are. A native's last Java frame is its own: an interpreter frame (the native called
// before it was compiled), whose Method* lies at a fixed slot below the frame pointer, or its
// compiled wrapper, whose code CompiledMethodLoad reports with the method. Anything else (a
// wrapper not reported yet, a VM that does not describe these) is asked of JVMTI, as before.
#pragma once

#include <jni.h>
#include <jvmti.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace fasthprof {

class NativeFrames {
 public:
  // Live, on a Java thread: the natives to tell (a null one is left out). False with *why when the
  // VM does not describe a thread's last Java frame or its interpreter: top() then asks JVMTI.
  bool start(jvmtiEnv* jvmti, JNIEnv* jni, jmethodID first, jmethodID second, std::string* why);
  // CompiledMethodLoad / CompiledMethodUnload (any thread): the wrappers of the natives watched.
  void on_code_loaded(jmethodID method, const void* code, jint size);
  void on_code_unloaded(const void* code);

  // Sets *method to the calling thread's top Java frame's method when that is one of the natives
  // watched, else to null: false when the VM's record cannot tell (the caller then asks JVMTI,
  // with the stack trace it takes anyway). On a Java thread inside a native (a VMObjectAlloc
  // callback), with its own JNIEnv.
  bool top(JNIEnv* jni, jmethodID* method);
  // What top() could not tell, as JVMTI answered it (a top frame's method): the watched one or null.
  // A watched native's compiled wrapper whose CompiledMethodLoad has not come yet (the Service thread
  // posts them late on a busy machine) is learned by the return address the thread's record holds,
  // which is the same at every call of that wrapper: top() tells the next events by it.
  jmethodID watched(JNIEnv* jni, jmethodID top);
  // Whether the calling thread may have an exception pending (a VMObjectAlloc event of a native
  // that threw): the VM's own record of it where the tables describe it, else true (unknown).
  bool may_have_exception(JNIEnv* jni) const {
    if (pending_offset_ == 0) return true;
    return thread_word(jni, pending_offset_) != 0;
  }
  // For verbose=y: answers from the VM's record, answers JVMTI gave.
  uint64_t read() const { return read_.load(std::memory_order_relaxed); }
  uint64_t asked() const { return asked_.load(std::memory_order_relaxed); }

 private:
  static constexpr int kWrappers = 8;
  // 0 or 1 for a watched native, -1 for any other method (or null).
  int watched_index(jmethodID method) const {
    return method == nullptr ? -1 : method == watched_[0] ? 0 : method == watched_[1] ? 1 : -1;
  }
  // The word at `offset` in the JavaThread whose JNIEnv is `jni` (reading_ only).
  uintptr_t thread_word(JNIEnv* jni, uint64_t offset) const {
    return *reinterpret_cast<const uintptr_t*>(reinterpret_cast<const char*>(jni) - env_offset_ + offset);
  }
  struct Wrapper {
    std::atomic<uintptr_t> low{0}, high{0};
    std::atomic<int> which{-1};
  };


  jvmtiEnv* jvmti_ = nullptr;
  jmethodID watched_[2] = {nullptr, nullptr};
  bool reading_ = false;  // start() found what it needs
  uint64_t env_offset_ = 0, anchor_sp_ = 0, anchor_fp_ = 0, anchor_pc_ = 0;
  uint64_t pending_offset_ = 0;  // ThreadShadow::_pending_exception in a JavaThread; 0: unknown
  uintptr_t interpreter_low_ = 0, interpreter_high_ = 0;
  Wrapper wrappers_[kWrappers];
  // Learned wrappers' return addresses (watched()): pc | which << 63, 0 when empty; all dropped at
  // any CompiledMethodUnload (whose event gives no size to match a pc with).
  static constexpr int kLearned = 8;
  std::atomic<uint64_t> learned_[kLearned] = {};
  std::atomic<uint32_t> next_learned_{0};
  alignas(64) std::atomic<uint64_t> read_{0};
  alignas(64) std::atomic<uint64_t> asked_{0};
};

}  // namespace fasthprof
