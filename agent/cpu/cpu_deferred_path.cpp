// cpu=samples, the stacks thread ("fasthprof cpu stacks") and the deferred path. Each pass (run by
// the stacks thread, or by pause() on the thread that pauses) turns what the rounds made due into
// counted stacks: the harvested signal stacks (cpu_signal_path.cpp), then one stack request (a
// handshake with that thread alone, which waits until it runs) per thread with pending counts,
// then the counts whose stack could not be taken, charged where CpuThreadMap says. The counted
// stacks are handed over under counted_mutex_ and interned by drain_counted() on the writer
// thread.
#include <algorithm>
#include <span>

#include "base/clock.h"
#include "cpu/cpu_sampler.h"
#include "thread_tracker.h"

namespace fasthprof {
namespace {

constexpr uint64_t kPruneEveryPasses = 64;

}  // namespace

void JNICALL CpuSampler::stacks_main(jvmtiEnv*, JNIEnv* jni, void* arg) {
  static_cast<CpuSampler*>(arg)->run_stacks(jni);
}

void CpuSampler::run_stacks(JNIEnv* jni) {
  PendingCounts batch;
  jvmti_->RawMonitorEnter(lock_);
  while (!stop_requested_ && !failed_.load()) {
    if ((pending_.empty() && !signal_work_) || pauses_ > 0) {
      jvmti_->RawMonitorWait(lock_, 0);
      continue;
    }
    pending_.take(&batch);
    signal_work_ = false;
    taking_stacks_ = true;
    if (signal_ != nullptr) guarded("the CPU stacks thread", [&] { harvest_signal_stacks(); });
    jvmti_->RawMonitorExit(lock_);

    uint64_t began = monotonic_ns();
    guarded("the CPU stacks thread", [&] { stacks_pass(jni, batch); });
    stack_ns_total_ += monotonic_ns() - began;

    jvmti_->RawMonitorEnter(lock_);
    taking_stacks_ = false;
    jvmti_->RawMonitorNotifyAll(lock_);
  }
  agent_cpu_ns_.fetch_add(thread_cpu_ns());
  --threads_running_;
  jvmti_->RawMonitorNotifyAll(lock_);
  jvmti_->RawMonitorExit(lock_);
}

// One pass: harvested signal stacks, then the pending threads' stacks, then the counted stacks
// interned. `batch` (pending counts with their thread references) is emptied.
void CpuSampler::stacks_pass(JNIEnv* jni, PendingCounts& batch) {
  ++stack_passes_;
  pass_.clear();
  count_harvested(jni, batch);
  if (!batch.empty()) take_pending_stacks(jni, batch);
  publish_counted();
  if (stack_passes_ % kPruneEveryPasses == 0) threads_.prune();
}

// Counts whose stack could not be taken: to the thread's last trace, or lost (CpuThreadMap).
void CpuSampler::charge_uncounted(jlong tag, uint64_t count, bool ended) {
  uint32_t trace = threads_.charge_uncounted(tag, count, ended);
  if (trace != 0) pass_.direct.emplace_back(trace, count);
}

// One handshake per pending thread. The state comes with the stack, so a thread that has gone to
// sleep or ended since it was counted loses those counts rather than charging them to
// Thread.sleep.
void CpuSampler::take_pending_stacks(JNIEnv* jni, PendingCounts& batch) {
  batch.for_each([&](int64_t tag, const PendingCounts::Entry& pending) {
    jthread thread = static_cast<jthread>(pending.handle);
    jvmtiStackInfo* stack = nullptr;
    jvmtiError error = thread == nullptr ? JVMTI_ERROR_INVALID_THREAD
                                         : jvmti_->GetThreadListStackTraces(1, &thread, context_.current_depth(), &stack);
    // HotSpot 17 answers NONE without a stack when the thread ends before the handshake reaches it.
    if (error == JVMTI_ERROR_NONE && stack == nullptr) error = JVMTI_ERROR_THREAD_NOT_ALIVE;
    bool taken = error == JVMTI_ERROR_NONE;
    size_t before = pass_.stacks.size();
    if (taken && counts_as_running(stack->state)) {
      add_frames(tag, stack->frame_buffer, stack->frame_count, pending.count);
    }
    if (pass_.stacks.size() == before) {
      bool ended = error == JVMTI_ERROR_THREAD_NOT_ALIVE || (taken && stack->state == 0);
      charge_uncounted(tag, pending.count, ended);
    }
    if (taken) jvmti_->Deallocate(reinterpret_cast<unsigned char*>(stack));
    if (thread != nullptr) jni->DeleteGlobalRef(thread);
  });
  batch.clear();
}

void CpuSampler::add_frames(jlong tag, const jvmtiFrameInfo* frames, jint count, uint64_t hits) {
  if (count <= 0) return;  // as the original: a thread without frames is not counted
  size_t first = pass_.frames.size();
  for (jint i = 0; i < count; ++i) {
    pass_.frames.push_back({static_cast<uint64_t>(reinterpret_cast<uintptr_t>(frames[i].method)),
                            static_cast<int64_t>(frames[i].location)});
  }
  pass_.stacks.push_back({tag, first, static_cast<size_t>(count), hits});
}

// The pass's stacks appended to counted_ for drain_counted().
void CpuSampler::publish_counted() {
  if (pass_.empty()) return;
  std::lock_guard<std::mutex> lock(counted_mutex_);
  if (counted_.empty()) {
    std::swap(counted_, pass_);
    return;
  }
  size_t offset = counted_.frames.size();
  counted_.frames.insert(counted_.frames.end(), pass_.frames.begin(), pass_.frames.end());
  for (Counted counted : pass_.stacks) {
    counted.first_frame += offset;
    counted_.stacks.push_back(counted);
  }
  counted_.direct.insert(counted_.direct.end(), pass_.direct.begin(), pass_.direct.end());
}

size_t CpuSampler::drain_counted(JNIEnv* jni) {
  {
    std::lock_guard<std::mutex> lock(counted_mutex_);
    if (counted_.empty()) return 0;
    draining_.clear();
    std::swap(draining_, counted_);
  }
  ThreadRegistry& registry = context_.writer->threads();
  for (const Counted& counted : draining_.stacks) {
    std::span<const StackFrame> stack(draining_.frames.data() + counted.first_frame, counted.frame_count);
    auto object_id = static_cast<uint64_t>(counted.tag);
    uint32_t serial = registry.serial_of_object_id(object_id);
    if (serial == 0) {
      // The thread's START THREAD may still be queued.
      context_.apply_lifecycle(jni);
      serial = registry.serial_of_object_id(object_id);
    }
    uint32_t trace = context_.writer->intern_trace(serial, stack);
    table_.add(trace, counted.count);
    samples_ += counted.count;
    threads_.stack_taken(counted.tag, trace);
  }
  for (const auto& [trace, count] : draining_.direct) {
    table_.add(trace, count);
    samples_ += count;
  }
  size_t taken = draining_.stacks.size() + draining_.direct.size();
  draining_.clear();
  return taken;
}

}  // namespace fasthprof
