// cpu=samples, the signal path (the default): each thread counted in a round gets a stack request
// in a SignalStacks slot and a queued SIGPROF (signal_one, on the sampler thread); its handler
// walks its own stack into the slot (signal_stacks.cpp, on the target thread); the walked slots are
// copied out under lock_ (harvest_signal_stacks, on the stacks thread or pause()'s) and turned into
// counted stacks (count_harvested, on the stacks thread or pause()'s). Walks that fail are retried
// by a per-thread request (cpu_deferred_path.cpp) or charged where CpuThreadMap says.
#include <algorithm>
#include <string>

#include "cpu/cpu_sampler.h"
#include "jvmti_support.h"

namespace fasthprof {
namespace {

// A thread seen before its ThreadStart callback has told its native id keeps its counts this many
// rounds; after that it is taken for one that existed before the agent (attach) and goes deferred.
constexpr uint64_t kTidGraceRounds = 10;
// Signal slots: one per thread whose stack is awaited, frames preallocated (at most 4 MiB of them).
constexpr size_t kSlotFrameBytes = 4u << 20;
constexpr int kMaxSlots = 1024;
constexpr int kMinSlots = 64;

}  // namespace

// On the VMInit thread, from start(). False (with why) when the VM or the process cannot give
// signals: the caller falls back to the deferred path.
bool CpuSampler::start_signal_mode(JNIEnv* jni, std::string* why) {
  size_t frame_bytes = static_cast<size_t>(depth_) * sizeof(AsyncFrame);
  int slots = static_cast<int>(std::clamp<size_t>(kSlotFrameBytes / frame_bytes, kMinSlots, kMaxSlots));
  signal_ = SignalStacks::create(context_.vm, depth_, slots, why, context_.trace_depth);
  if (signal_ == nullptr) return false;
  if (jvmti_->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_CLASS_LOAD, nullptr) != JVMTI_ERROR_NONE) {
    *why = "cannot enable ClassLoad events";
    signal_ = nullptr;
    return false;
  }
  slot_counts_.assign(static_cast<size_t>(slots), 0);
  slot_threads_.assign(static_cast<size_t>(slots), nullptr);
  jvmtiCapabilities granted{};
  if (jvmti_->GetCapabilities(&granted) == JVMTI_ERROR_NONE && granted.can_generate_compiled_method_load_events) {
    compiled_events_ = jvmti_->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_COMPILED_METHOD_LOAD, nullptr) ==
                       JVMTI_ERROR_NONE;
  }
  // Classes prepared from here on get their jmethodIDs at ClassPrepare (make_ids_ is set).
  jint count = 0;
  jclass* classes = nullptr;
  if (jvmti_->GetLoadedClasses(&count, &classes) == JVMTI_ERROR_NONE) {
    jvmti::ReturnedRefs<jclass> held(jvmti_, jni, classes, count, 0);
    for (jint i = 0; i < count; ++i) make_method_ids(classes[i]);
  }
  return true;
}

// The sampler thread's part of a round, for one thread that ran, right after its state and CPU
// time were read (so that it has no time to go to sleep before its signal): a stack request and a
// signal, or one more count on the request it already has. Threads without a native id (or a
// free slot) go the deferred way.
void CpuSampler::signal_one(JNIEnv* jni, const Candidate& candidate) {
  RoundState* state = candidate.state;
  SignalStacks::Ticket ticket;
  jvmti_->RawMonitorEnter(lock_);
  signal_work_ = true;
  if (signal_->outstanding(state->ticket)) {
    ++slot_counts_[static_cast<size_t>(state->ticket.index)];
    jvmti_->RawMonitorExit(lock_);
    return;
  }
  pid_t tid = tid_of(candidate.tag, state);
  if (tid == 0 && round_ - state->first_round < kTidGraceRounds) {
    ++state->carried;
    jvmti_->RawMonitorExit(lock_);
    return;
  }
  if (tid != 0) ticket = signal_->request(tid, candidate.tag);
  uint64_t count = 1 + state->carried;
  state->carried = 0;
  if (ticket.index < 0) {
    pending_.add(candidate.tag, count, [&]() -> void* { return jni->NewGlobalRef(candidate.thread); });
    without_tid_ += count;
    jvmti_->RawMonitorExit(lock_);
    return;
  }
  state->ticket = ticket;
  state->ticket_round = round_;
  slot_counts_[static_cast<size_t>(ticket.index)] = count;
  slot_threads_[static_cast<size_t>(ticket.index)] = jni->NewGlobalRef(candidate.thread);
  jvmti_->RawMonitorExit(lock_);
  // The state once more right before the signal: a thread that went to sleep or to wait since
  // would walk its stack in Thread.sleep or Object.wait. Its counts go the way of a failed walk,
  // as the deferred path's do.
  jint thread_state = 0;
  if (jvmti_->GetThreadState(candidate.thread, &thread_state) != JVMTI_ERROR_NONE ||
      !counts_as_running(thread_state)) {
    signal_->cancel(ticket);
    ++stopped_before_signal_;
  } else if (signal_->send(ticket)) {
    ++signals_sent_;
  }
}

// Copies out the walked slots with their counts and frees them. lock_ held (slot counts).
void CpuSampler::harvest_signal_stacks() {
  harvested_.clear();
  harvested_frames_.clear();
  signal_->take([&](const SignalStacks::Taken& taken) {
    auto index = static_cast<size_t>(taken.index);
    size_t first = harvested_frames_.size();
    if (taken.num_frames > 0) harvested_frames_.insert(harvested_frames_.end(), taken.frames, taken.frames + taken.num_frames);
    harvested_.push_back({taken.tag, slot_counts_[index], taken.num_frames, first, slot_threads_[index]});
    slot_counts_[index] = 0;
    slot_threads_[index] = nullptr;
  });
}

// The harvested stacks into pass_; failed walks that a per-thread request can retry into
// `retries` (which takes over their thread references).
void CpuSampler::count_harvested(JNIEnv* jni, PendingCounts& retries) {
  for (const Harvested& stack : harvested_) {
    const AsyncFrame* frames = harvested_frames_.data() + stack.first;
    bool usable = stack.num_frames > 0;
    for (jint i = 0; usable && i < stack.num_frames; ++i) usable = frames[i].method_id != nullptr;
    if (!usable) {
      ++walks_failed_;
      ++walk_codes_[stack.num_frames > 0 ? 11 : std::min<jint>(-stack.num_frames, 11)];
      // The walker could not read this stack (an interpreter frame half built, a stub, a GC):
      // a per-thread request takes it, with its state. Cancelled or non-Java: charged elsewhere.
      // No Java frame at all (0): not counted, as the original did with an empty stack.
      bool retry = stack.num_frames < 0 && stack.num_frames > SignalStacks::kNotJavaThread && jni != nullptr &&
                   stack.thread != nullptr;
      if (retry) {
        void* spare = retries.add_with_handle(stack.tag, stack.count, stack.thread);
        if (spare != nullptr) jni->DeleteGlobalRef(static_cast<jobject>(spare));
        ++walks_retried_;
        continue;
      }
      if (stack.num_frames != 0) charge_uncounted(stack.tag, stack.count, false);
      if (stack.thread != nullptr && jni != nullptr) jni->DeleteGlobalRef(stack.thread);
      continue;
    }
    if (stack.thread != nullptr && jni != nullptr) jni->DeleteGlobalRef(stack.thread);
    ++walks_ok_;
    size_t first = pass_.frames.size();
    for (jint i = 0; i < stack.num_frames; ++i) {
      pass_.frames.push_back({static_cast<uint64_t>(reinterpret_cast<uintptr_t>(frames[i].method_id)),
                              static_cast<int64_t>(frames[i].lineno >= 0 ? frames[i].lineno : -1)});
    }
    pass_.stacks.push_back({stack.tag, first, static_cast<size_t>(stack.num_frames), stack.count});
  }
  harvested_.clear();
}

}  // namespace fasthprof
