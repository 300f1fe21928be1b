// cpu=samples' counting rule, without the VM (the agent's CpuSampler reads the VM and asks these):
// which thread counts in a round, and the counts a round makes due before their stack is taken.
//
// A thread counts in a round when its state is RUNNABLE, neither suspended nor interrupted, and
// its CPU time advanced since the previous round, or did not because the thread waited for a core
// the whole interval (the OS has it runnable: runtime/base/proc_task.h). Counts wait per thread
// (PendingCounts) until a stack is taken for them; counts whose stack cannot be taken are charged
// by CpuThreadMap (runtime/sections/cpu_thread_map.h). Sampler and stacks threads (see each type).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>

#include "base/thread_state.h"

namespace fasthprof {

// RUNNABLE (and alive), neither suspended nor interrupted: the state a counted thread must be in,
// in the round and again when its stack is taken.
bool counts_as_running(int32_t state);

// Updates *last_cpu_ns to now_cpu_ns; true when the CPU time moved forward since.
bool cpu_time_advanced(int64_t* last_cpu_ns, int64_t now_cpu_ns);

// The round's decision for one thread. cpu_advanced: cpu_time_advanced() (or true when the VM gives
// no CPU times, as the original counted every RUNNABLE thread); waiting_for_cpu() is asked only
// when the CPU time did not move and the VM gives CPU times, since it reads /proc.
template <typename WaitingForCpu>
bool counts_in_round(int32_t state, bool use_cpu_time, bool cpu_advanced, WaitingForCpu&& waiting_for_cpu) {
  if (!counts_as_running(state)) return false;
  if (!use_cpu_time || cpu_advanced) return true;
  return waiting_for_cpu();
}

// Counts made due by rounds and not yet given a stack, per thread tag, each with an opaque handle
// on the thread (the agent's global reference: made by the first add, handed back by take()).
// Not thread safe: the owner's lock guards it.
class PendingCounts {
 public:
  struct Entry {
    void* handle = nullptr;
    uint64_t count = 0;
  };

  // Adds count to the thread's pending counts; make_handle() is called only for a thread that has
  // none pending, and its result kept.
  template <typename MakeHandle>
  void add(int64_t tag, uint64_t count, MakeHandle&& make_handle) {
    Entry& entry = entries_[tag];
    if (entry.handle == nullptr) entry.handle = make_handle();
    entry.count += count;
  }
  // Adds count with a handle the caller already owns: kept if the thread had none pending,
  // otherwise returned for the caller to release (nullptr when kept).
  void* add_with_handle(int64_t tag, uint64_t count, void* handle);

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  uint64_t total() const;
  // Moves every entry into *out (which must be empty) and leaves this one empty.
  void take(PendingCounts* out);
  template <typename Visit>
  void for_each(Visit&& visit) const {
    for (const auto& [tag, entry] : entries_) visit(tag, entry);
  }
  void clear() { entries_.clear(); }

 private:
  std::unordered_map<int64_t, Entry> entries_;
};

}  // namespace fasthprof
