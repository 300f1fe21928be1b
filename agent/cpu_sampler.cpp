#include "cpu_sampler.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "jvmti_support.h"
#include "thread_tracker.h"

namespace fasthprof {
namespace {

constexpr const char* kAgentThreadPrefix = "fasthprof";
constexpr jint kCountedState = JVMTI_THREAD_STATE_ALIVE | JVMTI_THREAD_STATE_RUNNABLE;
constexpr jint kExcludedState = JVMTI_THREAD_STATE_SUSPENDED | JVMTI_THREAD_STATE_INTERRUPTED;
constexpr uint64_t kPruneEveryRounds = 64;

uint64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}

bool counts_as_running(jint state) {
  return (state & kCountedState) == kCountedState && (state & kExcludedState) == 0;
}

void write_stderr(const std::string& text) {
  ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}

CpuSampler::Mode mode_from_environment() {
  const char* chosen = std::getenv("FASTHPROF_CPU_SAMPLER");
  if (chosen == nullptr) return CpuSampler::Mode::kDeferred;
  if (std::strcmp(chosen, "each") == 0) return CpuSampler::Mode::kEachThread;
  if (std::strcmp(chosen, "list") == 0) return CpuSampler::Mode::kListOfActive;
  if (std::strcmp(chosen, "all") == 0) return CpuSampler::Mode::kAllThreads;
  return CpuSampler::Mode::kDeferred;
}

const char* mode_name(CpuSampler::Mode mode) {
  switch (mode) {
    case CpuSampler::Mode::kEachThread: return "each";
    case CpuSampler::Mode::kListOfActive: return "list";
    case CpuSampler::Mode::kAllThreads: return "all";
    case CpuSampler::Mode::kDeferred: break;
  }
  return "deferred";
}

}  // namespace

CpuSampler::CpuSampler(const AgentContext& context)
    : context_(context),
      jvmti_(context.jvmti),
      mode_(mode_from_environment()),
      print_stats_(std::getenv("FASTHPROF_CPU_SAMPLER_STATS") != nullptr),
      depth_(context.options->depth) {}

void CpuSampler::add_capabilities(jvmtiCapabilities* wanted) {
  // Asked for only when offered, so that a VM without it still loads the agent (state test only).
  jvmtiCapabilities potential{};
  if (jvmti_->GetPotentialCapabilities(&potential) == JVMTI_ERROR_NONE &&
      potential.can_get_thread_cpu_time) {
    wanted->can_get_thread_cpu_time = 1;
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
  if (jvmti_->CreateRawMonitor("fasthprof cpu sampler", &lock_) != JVMTI_ERROR_NONE) {
    jvmti::print_error("cannot create the CPU sampler's monitor; no CPU samples will be taken");
    return;
  }
  started_ns_ = monotonic_ns();
  std::string error;
  if (mode_ == Mode::kDeferred) {
    threads_running_ = 1;
    if (!jvmti::start_agent_thread(jvmti_, jni, "fasthprof cpu stacks", &stacks_main, this, &error)) {
      threads_running_ = 0;
      jvmti::print_error(error + "; no CPU samples will be taken");
      return;
    }
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

void CpuSampler::write_report(ReportContext&) {
  write_cpu_samples_section(*context_.writer, table_.take_report(context_.options->cutoff),
                            std::time(nullptr));
}

void CpuSampler::stop(JNIEnv* jni) {
  if (lock_ == nullptr) return;
  jvmti_->RawMonitorEnter(lock_);
  stop_requested_ = true;
  jvmti_->RawMonitorNotifyAll(lock_);
  while (threads_running_ > 0) jvmti_->RawMonitorWait(lock_, 100);
  for (auto& [tag, pending] : pending_) {
    unfetched_samples_ += pending.count;
    jni->DeleteGlobalRef(pending.thread);
  }
  pending_.clear();
  jvmti_->RawMonitorExit(lock_);
  if (print_stats_) print_stats();
}

void CpuSampler::pause() {
  if (lock_ == nullptr) return;
  jvmti_->RawMonitorEnter(lock_);
  ++pauses_;
  while (in_round_ || taking_stacks_) jvmti_->RawMonitorWait(lock_, 0);
  jvmti_->RawMonitorExit(lock_);
}

void CpuSampler::resume() {
  if (lock_ == nullptr) return;
  jvmti_->RawMonitorEnter(lock_);
  if (pauses_ > 0) --pauses_;
  jvmti_->RawMonitorNotifyAll(lock_);
  jvmti_->RawMonitorExit(lock_);
}

void JNICALL CpuSampler::sampler_main(jvmtiEnv*, JNIEnv* jni, void* arg) {
  static_cast<CpuSampler*>(arg)->run_rounds(jni);
}

void JNICALL CpuSampler::stacks_main(jvmtiEnv*, JNIEnv* jni, void* arg) {
  static_cast<CpuSampler*>(arg)->run_stacks(jni);
}

// Rounds start on a fixed schedule (start + k * interval), so that the time a round takes does not
// stretch the period as it did in the original. A round that overruns is followed by a pause as
// long as the round, so the sampler never takes more than half a core.
void CpuSampler::run_rounds(JNIEnv* jni) {
  const uint64_t interval_ns = static_cast<uint64_t>(std::max(context_.options->interval_ms, 1)) * 1000000u;
  uint64_t next = monotonic_ns() + interval_ns;
  jvmti_->RawMonitorEnter(lock_);
  while (!stop_requested_) {
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
    sample_round(jni);
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
  --threads_running_;
  jvmti_->RawMonitorNotifyAll(lock_);
  jvmti_->RawMonitorExit(lock_);
}

void CpuSampler::run_stacks(JNIEnv* jni) {
  std::unordered_map<jlong, Pending> batch;
  jvmti_->RawMonitorEnter(lock_);
  while (!stop_requested_) {
    if (pending_.empty() || pauses_ > 0) {
      jvmti_->RawMonitorWait(lock_, 0);
      continue;
    }
    batch.swap(pending_);
    taking_stacks_ = true;
    jvmti_->RawMonitorExit(lock_);

    uint64_t began = monotonic_ns();
    take_pending_stacks(jni, batch);
    stack_ns_total_ += monotonic_ns() - began;
    ++stack_passes_;

    jvmti_->RawMonitorEnter(lock_);
    taking_stacks_ = false;
    jvmti_->RawMonitorNotifyAll(lock_);
  }
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
  for (jint i = 0; i < count; ++i) {
    jlong tag = 0;
    if (jvmti_->GetTag(threads[i], &tag) != JVMTI_ERROR_NONE) continue;
    if (tag == 0) {
      // Started since the tracker last looked: give it its THREAD START now.
      context_.threads->thread_seen(jni, threads[i]);
      if (jvmti_->GetTag(threads[i], &tag) != JVMTI_ERROR_NONE || tag == 0) continue;
    }
    ThreadEntry* entry = entry_for(jni, threads[i], tag);
    entry->seen_round = round_;
    if (!entry->agent) candidates_.push_back({threads[i], tag, entry});
  }
  jvmti_->Deallocate(reinterpret_cast<unsigned char*>(threads));
  threads_max_ = std::max(threads_max_, candidates_.size());

  if (mode_ != Mode::kDeferred) {  // in the deferred variant these belong to the stack thread
    counted_.clear();
    frames_.clear();
  }
  if (mode_ == Mode::kAllThreads) {
    collect_list(candidates_, /*test_cpu=*/true);
  } else {
    active_.clear();
    for (const Candidate& candidate : candidates_) {
      jint state = 0;
      if (jvmti_->GetThreadState(candidate.thread, &state) != JVMTI_ERROR_NONE) continue;
      if (!counts_as_running(state)) continue;
      if (ran_since_last_round(candidate.thread, candidate.entry)) active_.push_back(candidate);
    }
    counted_in_rounds_ += active_.size();
    if (mode_ == Mode::kDeferred) {
      if (!active_.empty()) {
        jvmti_->RawMonitorEnter(lock_);
        for (const Candidate& candidate : active_) {
          Pending& pending = pending_[candidate.tag];
          if (pending.thread == nullptr) pending.thread = jni->NewGlobalRef(candidate.thread);
          ++pending.count;
        }
        jvmti_->RawMonitorNotifyAll(lock_);
        jvmti_->RawMonitorExit(lock_);
      }
    } else if (mode_ == Mode::kEachThread) {
      collect_each(active_);
    } else {
      collect_list(active_, /*test_cpu=*/false);
    }
  }
  if (mode_ != Mode::kDeferred) record_counted();
  jni->PopLocalFrame(nullptr);

  if (round_ % kPruneEveryRounds == 0) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      it = it->second.seen_round == round_ ? std::next(it) : entries_.erase(it);
    }
  }
}

// The deferred variant's stack thread: one handshake per pending thread. The state comes with the
// stack, so a thread that has gone to sleep or ended since it was counted loses those counts rather
// than charging them to Thread.sleep.
void CpuSampler::take_pending_stacks(JNIEnv* jni, std::unordered_map<jlong, Pending>& batch) {
  counted_.clear();
  frames_.clear();
  direct_counts_.clear();
  for (auto& [tag, pending] : batch) {
    jthread thread = static_cast<jthread>(pending.thread);
    jvmtiStackInfo* stack = nullptr;
    jvmtiError error = thread == nullptr ? JVMTI_ERROR_INVALID_THREAD
                                         : jvmti_->GetThreadListStackTraces(1, &thread, depth_, &stack);
    bool taken = error == JVMTI_ERROR_NONE;
    size_t before = counted_.size();
    if (taken && counts_as_running(stack->state)) {
      add_frames(tag, stack->frame_buffer, stack->frame_count, pending.count);
    }
    if (counted_.size() == before) {
      auto last = last_traces_.find(tag);
      // An ended thread keeps its last stack whatever its age; a live one only a recent stack.
      bool ended = error == JVMTI_ERROR_THREAD_NOT_ALIVE || (taken && stack->state == 0);
      if (last != last_traces_.end() && (ended || last->second.pass + 1 >= stack_passes_)) {
        direct_counts_.push_back({last->second.trace, pending.count});
      } else {
        lost_samples_ += pending.count;
      }
    }
    if (taken) jvmti_->Deallocate(reinterpret_cast<unsigned char*>(stack));
    if (thread != nullptr) jni->DeleteGlobalRef(thread);
  }
  batch.clear();
  record_counted();
  if (stack_passes_ % kPruneEveryRounds == 0) {
    for (auto it = last_traces_.begin(); it != last_traces_.end();) {
      if (it->second.pass + 1 >= stack_passes_) {
        ++it;
        continue;
      }
      serials_.erase(it->first);
      it = last_traces_.erase(it);
    }
  }
}

CpuSampler::ThreadEntry* CpuSampler::entry_for(JNIEnv* jni, jthread thread, jlong tag) {
  auto [it, inserted] = entries_.try_emplace(tag);
  ThreadEntry* entry = &it->second;
  if (!inserted) return entry;
  jvmtiThreadInfo info{};
  if (jvmti_->GetThreadInfo(thread, &info) == JVMTI_ERROR_NONE) {
    entry->agent = info.name != nullptr &&
                   std::strncmp(info.name, kAgentThreadPrefix, std::strlen(kAgentThreadPrefix)) == 0;
    jvmti_->Deallocate(reinterpret_cast<unsigned char*>(info.name));
    if (info.thread_group != nullptr) jni->DeleteLocalRef(info.thread_group);
    if (info.context_class_loader != nullptr) jni->DeleteLocalRef(info.context_class_loader);
  }
  // The first round only sets the baseline; a thread that appears later ran since it started.
  if (use_cpu_time_ && round_ <= 1) jvmti_->GetThreadCpuTime(thread, &entry->last_cpu_ns);
  return entry;
}

bool CpuSampler::ran_since_last_round(jthread thread, ThreadEntry* entry) {
  if (!use_cpu_time_) return true;
  jlong now = 0;
  if (jvmti_->GetThreadCpuTime(thread, &now) != JVMTI_ERROR_NONE) return false;
  bool advanced = now > entry->last_cpu_ns;
  entry->last_cpu_ns = now;
  return advanced;
}

// One single-thread GetThreadListStackTraces per thread that ran: a handshake with that thread
// alone, and unlike GetStackTrace it reports the state at the moment of the stack, so a thread that
// went to sleep between the two queries is not counted in Thread.sleep.
void CpuSampler::collect_each(const std::vector<Candidate>& active) {
  for (const Candidate& candidate : active) {
    jvmtiStackInfo* stack = nullptr;
    if (jvmti_->GetThreadListStackTraces(1, &candidate.thread, depth_, &stack) != JVMTI_ERROR_NONE) {
      continue;
    }
    if (counts_as_running(stack->state)) add_frames(candidate.tag, stack->frame_buffer, stack->frame_count, 1);
    jvmti_->Deallocate(reinterpret_cast<unsigned char*>(stack));
  }
}

void CpuSampler::collect_list(const std::vector<Candidate>& threads, bool test_cpu) {
  if (threads.empty()) return;
  std::vector<jthread> list;
  list.reserve(threads.size());
  for (const Candidate& candidate : threads) list.push_back(candidate.thread);
  jvmtiStackInfo* stacks = nullptr;
  if (jvmti_->GetThreadListStackTraces(static_cast<jint>(list.size()), list.data(), depth_, &stacks) !=
      JVMTI_ERROR_NONE) {
    return;
  }
  for (size_t i = 0; i < threads.size(); ++i) {
    const jvmtiStackInfo& stack = stacks[i];
    if (!counts_as_running(stack.state)) continue;
    if (test_cpu && !ran_since_last_round(threads[i].thread, threads[i].entry)) continue;
    add_frames(threads[i].tag, stack.frame_buffer, stack.frame_count, 1);
  }
  jvmti_->Deallocate(reinterpret_cast<unsigned char*>(stacks));
}

void CpuSampler::add_frames(jlong tag, const jvmtiFrameInfo* frames, jint count, uint64_t hits) {
  if (count <= 0) return;  // as the original: a thread without frames is not counted
  size_t first = frames_.size();
  for (jint i = 0; i < count; ++i) {
    frames_.push_back({static_cast<uint64_t>(reinterpret_cast<uintptr_t>(frames[i].method)),
                       static_cast<int64_t>(frames[i].location)});
  }
  counted_.push_back({tag, first, static_cast<size_t>(count), hits});
}

void CpuSampler::record_counted() {
  if (counted_.empty() && direct_counts_.empty()) return;
  // Serials come from the tracker, which takes the output lock itself: ask before taking it.
  for (const Counted& counted : counted_) {
    uint32_t& serial = serials_[counted.tag];
    if (serial == 0) serial = context_.threads->serial_for_tag(counted.tag);
  }
  bool deferred = mode_ == Mode::kDeferred;
  std::lock_guard<std::mutex> lock(*context_.output_mutex);
  for (const Counted& counted : counted_) {
    std::span<const StackFrame> stack(frames_.data() + counted.first_frame, counted.frame_count);
    uint32_t trace = context_.writer->intern_trace(serials_[counted.tag], stack);
    table_.add(trace, counted.count);
    samples_ += counted.count;
    if (deferred) last_traces_[counted.tag] = {trace, stack_passes_};
  }
  for (const auto& [trace, count] : direct_counts_) {
    table_.add(trace, count);
    samples_ += count;
  }
  direct_counts_.clear();
}

void CpuSampler::print_stats() const {
  double seconds = static_cast<double>(monotonic_ns() - started_ns_) / 1e9;
  double mean_us = round_ == 0 ? 0 : static_cast<double>(round_ns_total_) / static_cast<double>(round_) / 1e3;
  double stack_mean_us =
      stack_passes_ == 0 ? 0 : static_cast<double>(stack_ns_total_) / static_cast<double>(stack_passes_) / 1e3;
  char line[384];
  std::snprintf(line, sizeof(line),
                "fasthprof cpu sampler: mode=%s rounds=%llu samples=%llu seconds=%.3f round_mean_us=%.1f "
                "round_max_us=%.1f counted=%llu lost=%llu unfetched=%llu stack_passes=%llu stack_pass_mean_us=%.1f "
                "threads_max=%zu cpu_time=%s\n",
                mode_name(mode_), static_cast<unsigned long long>(round_),
                static_cast<unsigned long long>(samples_), seconds, mean_us,
                static_cast<double>(round_ns_max_) / 1e3, static_cast<unsigned long long>(counted_in_rounds_),
                static_cast<unsigned long long>(lost_samples_), static_cast<unsigned long long>(unfetched_samples_),
                static_cast<unsigned long long>(stack_passes_),
                stack_mean_us, threads_max_, use_cpu_time_ ? "y" : "n");
  write_stderr(line);
}

}  // namespace fasthprof
