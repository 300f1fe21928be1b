// Stacks taken on the sampled thread itself: a queued SIGPROF to one native thread, whose handler
// calls HotSpot's AsyncGetCallTrace (libjvm's exported asynchronous stack walker) and copies the
// frames into a preallocated slot. Nothing stops or waits for the thread: a thread that waits for
// the CPU walks its own (unchanged) stack when it next runs, a running one within microseconds.
//
//   sampler thread            target thread (signal handler)          harvesting thread
//   request(): FREE->REQUESTED
//   send(): rt_tgsigqueueinfo  ---> REQUESTED->WALKING, AsyncGetCallTrace,
//                                   WALKING->DONE
//                                                                     take(): DONE->FREE
//
// The handler only compares and swaps the slot's state word (generation + phase, so a late
// signal for a reused slot does nothing), asks the VM for the current JNIEnv and walks: no malloc,
// no lock, no JVMTI. A slot that cannot be walked ends DONE too, with a negative frame count
// (AsyncGetCallTrace's reason, or kCancelled). cancel_all() ends every slot not yet walked that
// way and waits for walks in progress, after which no walk starts until the next request(): the
// hook for heap dumps and VM death. AsyncGetCallTrace needs the ClassLoad event enabled and jmethodIDs made ahead (the caller
// does both: CpuSampler).
#pragma once

#include <jni.h>
#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace fasthprof {

// HotSpot's frame as AsyncGetCallTrace fills it: bci (-1 unknown, -3 native method) and method.
struct AsyncFrame {
  jint lineno;
  jmethodID method_id;
};

class SignalStacks {
 public:
  // AsyncGetCallTrace's results below 1: no Java frame (0) or the VM's reason (negative), plus ours.
  static constexpr jint kNotJavaThread = -100;  // GetEnv found no Java thread (tid reused)
  static constexpr jint kCancelled = -101;      // cancel_all() or the thread had ended

  struct Ticket {  // what request() hands out, to send() and to extend a request
    int index = -1;
    uint32_t generation = 0;
  };

  // Finds AsyncGetCallTrace in the process and installs the SIGPROF handler. nullptr with *why
  // when this VM has no AsyncGetCallTrace or the handler cannot be installed. Allocates `slots`
  // slots of `depth` frames once; at most one instance per process (the handler's). Any thread.
  // walk_depth: the depth to walk now, read in the handler (at most `depth`; null: `depth`).
  static SignalStacks* create(JavaVM* vm, int depth, int slots, std::string* why,
                              const std::atomic<int>* walk_depth = nullptr);

  // Sampler thread only. Reserves a FREE slot for the native thread `tid` (the Java thread tag is
  // kept for the harvest); index -1 when every slot is in use.
  Ticket request(pid_t tid, int64_t tag);
  // Sampler thread only. Signals the slot's thread; false (slot cancelled) when the thread is gone.
  bool send(Ticket ticket);
  // True while the ticket's stack is still to be walked (or is being walked): a count added to
  // the request now belongs to the stack that will be taken.
  bool outstanding(Ticket ticket) const;

  struct Taken {
    int64_t tag = 0;
    jint num_frames = 0;  // > 0: frames valid; otherwise AsyncGetCallTrace's code or ours
    const AsyncFrame* frames = nullptr;
    int index = -1;
  };
  // Harvesting thread only. Calls visit(Taken) for every slot that is DONE, then frees
  // it (frames are valid only during the call). Returns how many.
  template <typename Visit>
  int take(Visit&& visit);

  // Sampler thread only. Cancels the ticket's slot if its stack is not walked yet (its thread ended,
  // went to sleep, or has not run for long); true when it did.
  bool cancel(Ticket ticket);

  // Any thread but a target's. Cancels every slot not yet walked and waits for walks in progress.
  void cancel_all();

  // Slots requested and not yet taken (for the figures).
  int in_use() const;
  int depth() const { return depth_; }
  // CPU time the handlers' walks took, for the figures.
  uint64_t walk_ns() const { return walk_ns_.load(std::memory_order_relaxed); }

 private:
  enum Phase : uint64_t { kFree = 0, kRequested = 1, kWalking = 2, kDone = 3 };
  struct Slot {
    std::atomic<uint64_t> state{kFree};  // generation << 2 | phase
    std::atomic<pid_t> tid{0};  // read by the handler before its compare-and-swap
    int64_t tag = 0;
    jint num_frames = 0;
    AsyncFrame* frames = nullptr;
  };
  using Walker = void (*)(void* trace, jint depth, void* ucontext);

  SignalStacks(JavaVM* vm, Walker walker, int depth, int slots, const std::atomic<int>* walk_depth);
  static void on_signal(int signal, siginfo_t* info, void* ucontext);
  void walk_here(uint64_t packed, void* ucontext);
  bool fail_if_requested(Slot& slot, uint64_t expected, jint code);

  JavaVM* vm_;
  Walker walker_;
  pid_t pid_;
  uid_t uid_;
  int depth_;
  const std::atomic<int>* walk_depth_;  // lock-free: read in the signal handler
  int slot_count_;
  std::unique_ptr<Slot[]> slots_;
  std::unique_ptr<AsyncFrame[]> frames_;
  int next_free_ = 0;  // sampler's search cursor
  std::atomic<uint64_t> walk_ns_{0};
};

template <typename Visit>
int SignalStacks::take(Visit&& visit) {
  int taken = 0;
  for (int i = 0; i < slot_count_; ++i) {
    Slot& slot = slots_[i];
    uint64_t state = slot.state.load(std::memory_order_acquire);
    if ((state & 3) != kDone) continue;
    visit(Taken{slot.tag, slot.num_frames, slot.frames, i});
    slot.state.store((state & ~uint64_t{3}) | kFree, std::memory_order_release);
    ++taken;
  }
  return taken;
}

}  // namespace fasthprof
