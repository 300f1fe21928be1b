#include "cpu/signal_stacks.h"

#include <dlfcn.h>
#include <errno.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/clock.h"

namespace fasthprof {
namespace {

// HotSpot's argument to AsyncGetCallTrace (forte.cpp's ASGCT_CallTrace).
struct AsyncTrace {
  JNIEnv* env_id;
  jint num_frames;
  AsyncFrame* frames;
};

constexpr uint64_t kPhaseMask = 3;
std::atomic<SignalStacks*> installed{nullptr};

uint64_t pack(uint32_t generation, uint64_t phase) { return (static_cast<uint64_t>(generation) << 2) | phase; }

}  // namespace

SignalStacks* SignalStacks::create(JavaVM* vm, int depth, int slots, std::string* why,
                                   const std::atomic<int>* walk_depth) {
  if (installed.load() != nullptr) {
    *why = "the signal sampler is already in use";
    return nullptr;
  }
  auto walker = reinterpret_cast<Walker>(dlsym(RTLD_DEFAULT, "AsyncGetCallTrace"));
  if (walker == nullptr) {
    *why = "this VM has no AsyncGetCallTrace";
    return nullptr;
  }
  struct sigaction previous{};
  if (sigaction(SIGPROF, nullptr, &previous) != 0) {
    *why = std::string("cannot read the SIGPROF handler: ") + std::strerror(errno);
    return nullptr;
  }
  // Another profiler in the process owns SIGPROF: leave it alone.
  bool taken = (previous.sa_flags & SA_SIGINFO) != 0 ? previous.sa_sigaction != nullptr
                                                     : previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN;
  if (taken) {
    *why = "SIGPROF already has a handler in this process";
    return nullptr;
  }
  auto* self = new SignalStacks(vm, walker, depth, slots, walk_depth);
  installed.store(self, std::memory_order_release);
  struct sigaction action{};
  action.sa_sigaction = &SignalStacks::on_signal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGPROF, &action, nullptr) != 0) {
    *why = std::string("cannot install the SIGPROF handler: ") + std::strerror(errno);
    installed.store(nullptr);
    delete self;
    return nullptr;
  }
  return self;  // never freed: a late signal may still look at it
}

// walk_depth points into the Profiler, which is never freed (like this object).
SignalStacks::SignalStacks(JavaVM* vm, Walker walker, int depth, int slots, const std::atomic<int>* walk_depth)
    : vm_(vm),
      walker_(walker),
      pid_(getpid()),
      uid_(getuid()),
      depth_(depth),
      walk_depth_(walk_depth),
      slot_count_(slots),
      slots_(new Slot[static_cast<size_t>(slots)]),
      frames_(new AsyncFrame[static_cast<size_t>(slots) * static_cast<size_t>(depth)]) {
  for (int i = 0; i < slots; ++i) slots_[i].frames = frames_.get() + static_cast<size_t>(i) * static_cast<size_t>(depth);
}

SignalStacks::Ticket SignalStacks::request(pid_t tid, int64_t tag) {
  for (int tried = 0; tried < slot_count_; ++tried) {
    int index = next_free_;
    next_free_ = next_free_ + 1 == slot_count_ ? 0 : next_free_ + 1;
    Slot& slot = slots_[index];
    uint64_t state = slot.state.load(std::memory_order_acquire);
    if ((state & kPhaseMask) != kFree) continue;
    uint32_t generation = static_cast<uint32_t>(state >> 2) + 1;
    slot.tid.store(tid, std::memory_order_relaxed);
    slot.tag = tag;
    slot.num_frames = 0;
    slot.state.store(pack(generation, kRequested), std::memory_order_release);
    return {index, generation};
  }
  return {};
}

bool SignalStacks::send(Ticket ticket) {
  Slot& slot = slots_[ticket.index];
  siginfo_t info{};
  info.si_signo = SIGPROF;
  info.si_code = SI_QUEUE;
  info.si_pid = pid_;
  info.si_uid = uid_;
  info.si_value.sival_ptr =
      reinterpret_cast<void*>((static_cast<uintptr_t>(ticket.generation) << 32) | static_cast<uint32_t>(ticket.index));
  if (syscall(SYS_rt_tgsigqueueinfo, pid_, slot.tid.load(std::memory_order_relaxed), SIGPROF, &info) == 0) return true;
  fail_if_requested(slot, pack(ticket.generation, kRequested), kCancelled);
  return false;
}

bool SignalStacks::outstanding(Ticket ticket) const {
  if (ticket.index < 0) return false;
  uint64_t state = slots_[ticket.index].state.load(std::memory_order_acquire);
  return state == pack(ticket.generation, kRequested) || state == pack(ticket.generation, kWalking);
}

// Claims the slot as a walker would, so that no handler can write it meanwhile.
bool SignalStacks::fail_if_requested(Slot& slot, uint64_t expected, jint code) {
  uint64_t walking = (expected & ~kPhaseMask) | kWalking;
  if (!slot.state.compare_exchange_strong(expected, walking, std::memory_order_acq_rel)) return false;
  slot.num_frames = code;
  slot.state.store((walking & ~kPhaseMask) | kDone, std::memory_order_release);
  return true;
}

bool SignalStacks::cancel(Ticket ticket) {
  if (ticket.index < 0) return false;
  return fail_if_requested(slots_[ticket.index], pack(ticket.generation, kRequested), kCancelled);
}

void SignalStacks::cancel_all() {
  for (int i = 0; i < slot_count_; ++i) {
    Slot& slot = slots_[i];
    uint64_t state = slot.state.load(std::memory_order_acquire);
    if ((state & kPhaseMask) == kRequested) fail_if_requested(slot, state, kCancelled);
  }
  // A walk in progress ends within microseconds once its thread runs.
  for (int i = 0; i < slot_count_; ++i) {
    while ((slots_[i].state.load(std::memory_order_acquire) & kPhaseMask) == kWalking) {
      timespec pause{0, 100000};
      nanosleep(&pause, nullptr);
    }
  }
}

int SignalStacks::in_use() const {
  int used = 0;
  for (int i = 0; i < slot_count_; ++i) {
    if ((slots_[i].state.load(std::memory_order_relaxed) & kPhaseMask) != kFree) ++used;
  }
  return used;
}

void SignalStacks::on_signal(int, siginfo_t* info, void* ucontext) {
  int saved_errno = errno;
  SignalStacks* self = installed.load(std::memory_order_acquire);
  if (self != nullptr && info != nullptr && info->si_code == SI_QUEUE && info->si_pid == self->pid_) {
    self->walk_here(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(info->si_value.sival_ptr)), ucontext);
  }
  errno = saved_errno;
}

// Runs in the signal handler: async-signal-safe calls only.
void SignalStacks::walk_here(uint64_t packed, void* ucontext) {
  auto index = static_cast<uint32_t>(packed & 0xffffffffu);
  auto generation = static_cast<uint32_t>(packed >> 32);
  if (index >= static_cast<uint32_t>(slot_count_)) return;
  Slot& slot = slots_[index];
  uint64_t expected = pack(generation, kRequested);
  if (slot.state.load(std::memory_order_acquire) != expected) return;
  if (slot.tid.load(std::memory_order_relaxed) != static_cast<pid_t>(syscall(SYS_gettid))) return;
  if (!slot.state.compare_exchange_strong(expected, pack(generation, kWalking), std::memory_order_acq_rel)) return;
  uint64_t began = thread_cpu_ns();  // clock_gettime: async-signal-safe
  JNIEnv* env = nullptr;
  jint frames = kNotJavaThread;
  if (vm_->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_6) == JNI_OK && env != nullptr) {
    AsyncTrace trace{env, 0, slot.frames};
    jint depth = depth_;
    if (walk_depth_ != nullptr) depth = std::min(depth, walk_depth_->load(std::memory_order_relaxed));
    walker_(&trace, depth, ucontext);
    frames = trace.num_frames;
  }
  slot.num_frames = frames;
  slot.state.store(pack(generation, kDone), std::memory_order_release);
  walk_ns_.fetch_add(thread_cpu_ns() - began, std::memory_order_relaxed);
}

}  // namespace fasthprof
