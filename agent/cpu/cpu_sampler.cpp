// cpu=samples: the lifecycle (start on the VMInit thread, stop at VM death, pause around heap
// dumps), the rounds of "fasthprof cpu sampler" that count the threads using the CPU
// (runtime/sections/cpu_counting.h's rule, fed from the VM here), and the figures printed under verbose=y.
// The stacks are taken by cpu_signal_path.cpp and cpu_deferred_path.cpp.
#include "cpu/cpu_sampler.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

#include "base/clock.h"
#include "base/proc_task.h"
#include "base/stderr_line.h"
#include "jvmti_support.h"
#include "thread_tracker.h"

namespace fasthprof {


// The rule in runtime/ reads JVMTI's state bits by their values.
static_assert(kThreadStateAlive == JVMTI_THREAD_STATE_ALIVE && kThreadStateTerminated == JVMTI_THREAD_STATE_TERMINATED);
static_assert(kThreadStateRunnable == JVMTI_THREAD_STATE_RUNNABLE);
static_assert(kThreadStateSuspended == JVMTI_THREAD_STATE_SUSPENDED);
static_assert(kThreadStateInterrupted == JVMTI_THREAD_STATE_INTERRUPTED);
static_assert(kThreadStateInNative == JVMTI_THREAD_STATE_IN_NATIVE);

namespace {

constexpr const char* kAgentThreadPrefix = "fasthprof";
constexpr uint64_t kPruneEveryRounds = 64;
// A signal not answered within this many rounds is given up (its thread is blocked for good with
// the signal masked, or gone): its counts go the way of a failed walk.
constexpr uint64_t kStaleTicketRounds = 200;

uint64_t interval_ns_of(const Options& options) {
  return static_cast<uint64_t>(std::max(options.interval_ms, 1)) * 1000000u;
}

}  // namespace

CpuSampler::CpuSampler(const AgentContext& context)
    : context_(context),
      jvmti_(context.jvmti),
      mode_(context.options->cpu_stacks_deferred ? Mode::kDeferred : Mode::kSignal),
      depth_(context.depth_capacity),
      threads_(system_clock(), interval_ns_of(*context.options)) {}

void CpuSampler::add_capabilities(jvmtiCapabilities* wanted) {
  // Asked for only when offered, so that a VM without it still loads the agent (state test only).
  jvmtiCapabilities potential{};
  if (jvmti_->GetPotentialCapabilities(&potential) == JVMTI_ERROR_NONE &&
      potential.can_get_thread_cpu_time) {
    wanted->can_get_thread_cpu_time = 1;
  }
  // With CompiledMethodLoad enabled HotSpot records debug information at every compiled
  // instruction, not only at safepoints, so that a walk from any pc names the right (inlined)
  // method; without it AsyncGetCallTrace charges the nearest recorded pc.
  if (mode_ == Mode::kSignal && depth_ > 0 && potential.can_generate_compiled_method_load_events) {
    wanted->can_generate_compiled_method_load_events = 1;
  }
}

void CpuSampler::start(JNIEnv* jni) {
  jvmtiCapabilities granted{};
  use_cpu_time_ = jvmti_->GetCapabilities(&granted) == JVMTI_ERROR_NONE && granted.can_get_thread_cpu_time;
  if (!use_cpu_time_ && context_.options->verbose) {
    write_stderr("fasthprof: cpu=samples: this VM gives no thread CPU times (can_get_thread_cpu_time); "
                 "every RUNNABLE thread is counted, as the original did\n");
  }
  // depth=0 records nothing, as the original: its traces were empty and never counted.
  if (depth_ <= 0) return;
  // start() runs on the thread that posted VMInit, which goes on to run main().
  jthread current = nullptr;
  if (jvmti_->GetCurrentThread(&current) == JVMTI_ERROR_NONE && current != nullptr) {
    context_.threads->announce(jni, current);
    remember_tid(current, static_cast<pid_t>(syscall(SYS_gettid)));
    jni->DeleteLocalRef(current);
  }
  if (mode_ == Mode::kSignal) {
    std::string why;
    if (!start_signal_mode(jni, &why)) {
      make_ids_.store(false);
      mode_ = Mode::kDeferred;
      if (context_.options->diagnostics()) {
        write_stderr("fasthprof: cpu=samples: " + why + "; stacks are taken by per-thread requests\n");
      }
    }
  }
  if (jvmti_->CreateRawMonitor("fasthprof cpu sampler", &lock_) != JVMTI_ERROR_NONE) {
    jvmti::print_error("cannot create the CPU sampler's monitor; no CPU samples will be taken");
    return;
  }
  started_ns_ = monotonic_ns();
  std::string error;
  threads_running_ = 1;
  if (!jvmti::start_agent_thread(jvmti_, jni, "fasthprof cpu stacks", &stacks_main, this, &error)) {
    threads_running_ = 0;
    jvmti::print_error(error + "; no CPU samples will be taken");
    return;
  }
  jvmti_->RawMonitorEnter(lock_);
  ++threads_running_;
  jvmti_->RawMonitorExit(lock_);
  if (!jvmti::start_agent_thread(jvmti_, jni, "fasthprof cpu sampler", &sampler_main, this, &error)) {
    jvmti::print_error(error + "; no CPU samples will be taken");
    jvmti_->RawMonitorEnter(lock_);
    --threads_running_;
    stop_requested_ = true;
    jvmti_->RawMonitorNotifyAll(lock_);
    jvmti_->RawMonitorExit(lock_);
  }
}

void CpuSampler::write_report(ReportContext& report) {
  double cutoff = report.cutoff < 0 ? context_.options->cutoff : report.cutoff;
  write_cpu_samples_section(*context_.writer, table_.take_report(cutoff),
                            std::time(nullptr));
}

bool CpuSampler::control(JNIEnv*, const NetCommand& command, std::string* refusal) {
  switch (command.control) {
    case NetControl::kSamplingOn:
    case NetControl::kSamplingOff: {
      bool on = command.control == NetControl::kSamplingOn;
      std::lock_guard<std::mutex> lock(sampling_filter_mutex_);
      if (command.thread_id == 0) {
        sampled_by_default_ = on;
        sampling_exceptions_.clear();
      } else if (on == sampled_by_default_) {
        sampling_exceptions_.erase(static_cast<jlong>(command.thread_id));
      } else {
        sampling_exceptions_.insert(static_cast<jlong>(command.thread_id));
      }
      return true;
    }
    case NetControl::kClearCpu:
      // The table starts afresh after every report (the original's reset): taking one and
      // dropping it is the clear.
      table_.take_report(1.0);
      return true;
    default:
      *refusal = "not a CPU sampling control";
      return false;
  }
}

void CpuSampler::stop(JNIEnv* jni) {
  if (lock_ == nullptr) return;
  jvmti_->RawMonitorEnter(lock_);
  stop_requested_ = true;
  jvmti_->RawMonitorNotifyAll(lock_);
  while (threads_running_ > 0) jvmti_->RawMonitorWait(lock_, 100);
  for (auto& [tag, state] : round_states_) close_stat(state);
  unfetched_samples_ += pending_.total();
  pending_.for_each([&](int64_t, const PendingCounts::Entry& entry) {
    jni->DeleteGlobalRef(static_cast<jobject>(entry.handle));
  });
  pending_.clear();
  if (signal_ != nullptr) {
    // No walk starts after this; late signals find their slots taken and do nothing.
    signal_->cancel_all();
    signal_->take([&](const SignalStacks::Taken& taken) {
      auto index = static_cast<size_t>(taken.index);
      unfetched_samples_ += slot_counts_[index];
      slot_counts_[index] = 0;
      if (slot_threads_[index] != nullptr) jni->DeleteGlobalRef(slot_threads_[index]);
      slot_threads_[index] = nullptr;
    });
  }
  jvmti_->RawMonitorExit(lock_);
  if (signal_ != nullptr) {
    make_ids_.store(false);
    jvmti_->SetEventNotificationMode(JVMTI_DISABLE, JVMTI_EVENT_CLASS_LOAD, nullptr);
    if (compiled_events_) jvmti_->SetEventNotificationMode(JVMTI_DISABLE, JVMTI_EVENT_COMPILED_METHOD_LOAD, nullptr);
  }
  if (context_.options->diagnostics()) print_stats();
}

void CpuSampler::pause() {
  if (lock_ == nullptr) return;
  jvmti_->RawMonitorEnter(lock_);
  ++pauses_;
  while (in_round_ || taking_stacks_) jvmti_->RawMonitorWait(lock_, 0);
  if (signal_ == nullptr) {
    jvmti_->RawMonitorExit(lock_);
    return;
  }
  // No walk may run during a heap walk: fail those not started, wait for those running, and
  // count what was walked, so that the report about to be written has it.
  taking_stacks_ = true;
  jvmti_->RawMonitorExit(lock_);
  signal_->cancel_all();
  jvmti_->RawMonitorEnter(lock_);
  guarded("a report's pause of the CPU sampler", [&] { harvest_signal_stacks(); });
  jvmti_->RawMonitorExit(lock_);
  // Failed walks are retried by per-thread requests on this thread (a Java thread: the reporter,
  // or the one that posts VMDeath), before the heap walk starts.
  JNIEnv* jni = nullptr;
  if (context_.vm->GetEnv(reinterpret_cast<void**>(&jni), JNI_VERSION_1_6) != JNI_OK) jni = nullptr;
  guarded("a report's pause of the CPU sampler", [&] {
    PendingCounts none;
    stacks_pass(jni, none);
  });
  jvmti_->RawMonitorEnter(lock_);
  taking_stacks_ = false;
  jvmti_->RawMonitorNotifyAll(lock_);
  jvmti_->RawMonitorExit(lock_);
}

void CpuSampler::settle_background() {
  pause();
  resume();
}

void CpuSampler::resume() {
  if (lock_ == nullptr) return;
  jvmti_->RawMonitorEnter(lock_);
  if (pauses_ > 0) --pauses_;
  jvmti_->RawMonitorNotifyAll(lock_);
  jvmti_->RawMonitorExit(lock_);
}

// The loops guard each part that can throw themselves: a throw must not leave lock_ entered.
void JNICALL CpuSampler::sampler_main(jvmtiEnv*, JNIEnv* jni, void* arg) {
  static_cast<CpuSampler*>(arg)->run_rounds(jni);
}

// Rounds start on a fixed schedule (start + k * interval), so that the time a round takes does not
// stretch the period as it did in the original. A round that overruns is followed by a pause as
// long as the round, so the sampler never takes more than half a core.
void CpuSampler::run_rounds(JNIEnv* jni) {
  const uint64_t interval_ns = interval_ns_of(*context_.options);
  uint64_t next = monotonic_ns() + interval_ns;
  jvmti_->RawMonitorEnter(lock_);
  while (!stop_requested_ && !failed_.load()) {
    uint64_t now = monotonic_ns();
    if (now < next) {
      jvmti_->RawMonitorWait(lock_, static_cast<jlong>((next - now + 999999u) / 1000000u));
      continue;
    }
    if (pauses_ > 0) {
      jvmti_->RawMonitorWait(lock_, 0);
      next = monotonic_ns() + interval_ns;
      continue;
    }
    in_round_ = true;
    jvmti_->RawMonitorExit(lock_);

    uint64_t began = monotonic_ns();
    guarded("the CPU sampler thread", [&] { sample_round(jni); });
    uint64_t ended = monotonic_ns();
    uint64_t cost = ended - began;
    round_ns_total_ += cost;
    round_ns_max_ = std::max(round_ns_max_, cost);
    next += interval_ns;
    if (next < ended) next = ended + cost;

    jvmti_->RawMonitorEnter(lock_);
    in_round_ = false;
    jvmti_->RawMonitorNotifyAll(lock_);
  }
  agent_cpu_ns_.fetch_add(thread_cpu_ns());
  --threads_running_;
  jvmti_->RawMonitorNotifyAll(lock_);
  jvmti_->RawMonitorExit(lock_);
}

void CpuSampler::sample_round(JNIEnv* jni) {
  ++round_;
  if (jni->PushLocalFrame(64) != 0) {
    jni->ExceptionClear();
    return;
  }
  jint count = 0;
  jthread* threads = nullptr;
  if (jvmti_->GetAllThreads(&count, &threads) != JVMTI_ERROR_NONE) {
    jni->PopLocalFrame(nullptr);
    return;
  }
  if (jni->EnsureLocalCapacity(count + 16) != 0) jni->ExceptionClear();
  candidates_.clear();
  std::unique_lock<std::mutex> filter(sampling_filter_mutex_);
  bool sampled_by_default = sampled_by_default_;
  std::unordered_set<jlong> exceptions;
  if (!sampling_exceptions_.empty()) exceptions = sampling_exceptions_;
  filter.unlock();
  for (jint i = 0; i < count; ++i) {
    jlong tag = 0;
    if (jvmti_->GetTag(threads[i], &tag) != JVMTI_ERROR_NONE) continue;
    if (tag == 0) {
      // Started since the tracker last looked: give it its THREAD START now.
      context_.threads->announce(jni, threads[i]);
      if (jvmti_->GetTag(threads[i], &tag) != JVMTI_ERROR_NONE || tag == 0) continue;
    }
    RoundState* state = state_for(jni, threads[i], tag);
    state->seen_round = round_;
    bool sampled = sampled_by_default != (exceptions.count(tag) != 0);
    if (!state->agent && sampled) candidates_.push_back({threads[i], tag, state});
  }
  jvmti_->Deallocate(reinterpret_cast<unsigned char*>(threads));
  threads_max_ = std::max(threads_max_, candidates_.size());

  uint64_t counted = 0;
  for (const Candidate& candidate : candidates_) {
    if (mode_ == Mode::kSignal && signal_->outstanding(candidate.state->ticket)) {
      // Its last signal is not handled yet, so it has not run since it was counted: it is still
      // RUNNABLE and waiting for a core. One more count on that request, without asking the VM.
      ++counted;
      signal_one(jni, candidate);
      continue;
    }
    jint thread_state = 0;
    if (jvmti_->GetThreadState(candidate.thread, &thread_state) != JVMTI_ERROR_NONE) continue;
    if (!counts_as_running(thread_state)) continue;  // before its CPU time is read
    // Counted when it used the CPU since the last round, or wanted to and got no core: with more
    // busy threads than cores a busy thread can wait a whole interval in the run queue.
    bool ran = ran_since_last_round(candidate.thread, candidate.state);
    if (!counts_in_round(thread_state, use_cpu_time_, ran,
                         [&] { return waiting_for_cpu(candidate.tag, candidate.state); })) {
      continue;
    }
    ++counted;
    if (mode_ == Mode::kSignal) {
      signal_one(jni, candidate);
    } else {
      jvmti_->RawMonitorEnter(lock_);
      pending_.add(candidate.tag, 1, [&]() -> void* { return jni->NewGlobalRef(candidate.thread); });
      jvmti_->RawMonitorExit(lock_);
    }
  }
  counted_in_rounds_ += counted;
  if (counted > 0) {  // the stacks thread collects what the handlers walked, or takes the stacks
    jvmti_->RawMonitorEnter(lock_);
    jvmti_->RawMonitorNotifyAll(lock_);
    jvmti_->RawMonitorExit(lock_);
  }
  jni->PopLocalFrame(nullptr);
  if (round_ % kPruneEveryRounds == 0) prune_round_states();
}

// Forgets the threads no longer alive, and gives up the signals not answered for long.
void CpuSampler::prune_round_states() {
  for (auto it = round_states_.begin(); it != round_states_.end();) {
    RoundState& state = it->second;
    bool gone = state.seen_round != round_;
    if (signal_ != nullptr && (gone || round_ - state.ticket_round > kStaleTicketRounds)) {
      if (signal_->cancel(state.ticket)) {
        jvmti_->RawMonitorEnter(lock_);
        signal_work_ = true;
        jvmti_->RawMonitorExit(lock_);
      }
    }
    if (gone) close_stat(state);
    it = gone ? round_states_.erase(it) : std::next(it);
  }
}

CpuSampler::RoundState* CpuSampler::state_for(JNIEnv* jni, jthread thread, jlong tag) {
  auto [it, inserted] = round_states_.try_emplace(tag);
  RoundState* state = &it->second;
  if (!inserted) return state;
  state->first_round = round_;
  jvmtiThreadInfo info{};
  if (jvmti_->GetThreadInfo(thread, &info) == JVMTI_ERROR_NONE) {
    state->agent = info.name != nullptr &&
                   std::strncmp(info.name, kAgentThreadPrefix, std::strlen(kAgentThreadPrefix)) == 0;
    jvmti_->Deallocate(reinterpret_cast<unsigned char*>(info.name));
    if (info.thread_group != nullptr) jni->DeleteLocalRef(info.thread_group);
    if (info.context_class_loader != nullptr) jni->DeleteLocalRef(info.context_class_loader);
  }
  // The first round only sets the baseline; a thread that appears later ran since it started.
  if (use_cpu_time_ && round_ <= 1) {
    jlong now = 0;
    if (jvmti_->GetThreadCpuTime(thread, &now) == JVMTI_ERROR_NONE) state->last_cpu_ns = now;
  }
  return state;
}

// The native id, asked of the thread map only when it may have learnt one since the last time.
pid_t CpuSampler::tid_of(jlong tag, RoundState* state) {
  if (state->tid != 0) return state->tid;
  uint64_t version = threads_.native_ids_version();
  if (state->tids_version == version) return 0;
  state->tids_version = version;
  state->tid = threads_.native_id(tag);
  return state->tid;
}

bool CpuSampler::waiting_for_cpu(jlong tag, RoundState* state) {
  pid_t tid = tid_of(tag, state);
  if (tid == 0) return false;
  if (state->stat_fd < 0) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
    state->stat_fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (state->stat_fd < 0) return false;
  }
  // Reading at offset 0 makes the kernel describe the thread anew; a thread that ended reads as
  // an error, whatever thread got its id since.
  char line[256];
  ssize_t size = ::pread(state->stat_fd, line, sizeof line, 0);
  if (size <= 0) return false;
  return task_stat_state(std::string_view(line, static_cast<size_t>(size))) == 'R';
}

void CpuSampler::close_stat(RoundState& state) {
  if (state.stat_fd >= 0) ::close(state.stat_fd);
  state.stat_fd = -1;
}

bool CpuSampler::ran_since_last_round(jthread thread, RoundState* state) {
  if (!use_cpu_time_) return true;
  jlong now = 0;
  if (jvmti_->GetThreadCpuTime(thread, &now) != JVMTI_ERROR_NONE) return false;
  return cpu_time_advanced(&state->last_cpu_ns, now);
}

// One line of figures at VM death under verbose=y (bench/cpu_samples_bench.py reads it), and the
// codes of the failed walks when there were any.
void CpuSampler::print_stats() const {
  double seconds = static_cast<double>(monotonic_ns() - started_ns_) / 1e9;
  double mean_us = round_ == 0 ? 0 : static_cast<double>(round_ns_total_) / static_cast<double>(round_) / 1e3;
  double stack_mean_us =
      stack_passes_ == 0 ? 0 : static_cast<double>(stack_ns_total_) / static_cast<double>(stack_passes_) / 1e3;
  char line[512];
  std::snprintf(line, sizeof(line),
                "fasthprof cpu sampler: mode=%s rounds=%llu samples=%llu seconds=%.3f round_mean_us=%.1f "
                "round_max_us=%.1f counted=%llu lost=%llu unfetched=%llu stack_passes=%llu stack_pass_mean_us=%.1f "
                "threads_max=%zu cpu_time=%s signals=%llu walks_ok=%llu walks_failed=%llu without_tid=%llu "
                "stopped_before_signal=%llu retried=%llu agent_cpu_us=%.0f walk_us=%.0f\n",
                mode_ == Mode::kSignal ? "signal" : "deferred", static_cast<unsigned long long>(round_),
                static_cast<unsigned long long>(samples_), seconds, mean_us,
                static_cast<double>(round_ns_max_) / 1e3, static_cast<unsigned long long>(counted_in_rounds_),
                static_cast<unsigned long long>(threads_.lost()), static_cast<unsigned long long>(unfetched_samples_),
                static_cast<unsigned long long>(stack_passes_),
                stack_mean_us, threads_max_, use_cpu_time_ ? "y" : "n",
                static_cast<unsigned long long>(signals_sent_), static_cast<unsigned long long>(walks_ok_),
                static_cast<unsigned long long>(walks_failed_), static_cast<unsigned long long>(without_tid_),
                static_cast<unsigned long long>(stopped_before_signal_),
                static_cast<unsigned long long>(walks_retried_), static_cast<double>(agent_cpu_ns_.load()) / 1e3,
                signal_ == nullptr ? 0.0 : static_cast<double>(signal_->walk_ns()) / 1e3);
  write_stderr(line);
  if (signal_ != nullptr && walks_failed_ > 0) {
    std::string codes = "fasthprof cpu sampler: failed walks by code:";
    for (int i = 0; i < 12; ++i) {
      if (walk_codes_[i] == 0) continue;
      codes += " ";
      codes += i == 11 ? std::string("other") : std::to_string(-i);
      codes += "=" + std::to_string(walk_codes_[i]);
    }
    write_stderr(codes + "\n");
  }
}

}  // namespace fasthprof
