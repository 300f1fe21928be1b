#include "cpu_sampler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "entry_guard.h"
#include "jvmti_support.h"
#include "proc_task.h"
#include "thread_tracker.h"

namespace fasthprof {

using jvmti::write_stderr;

namespace {

constexpr const char* kAgentThreadPrefix = "fasthprof";
constexpr jint kCountedState = JVMTI_THREAD_STATE_ALIVE | JVMTI_THREAD_STATE_RUNNABLE;
constexpr jint kExcludedState = JVMTI_THREAD_STATE_SUSPENDED | JVMTI_THREAD_STATE_INTERRUPTED;
constexpr uint64_t kPruneEveryRounds = 64;
// A signal not answered within this many rounds is given up (its thread is blocked for good with
// the signal masked, or gone): its counts go the way of a failed walk.
constexpr uint64_t kStaleTicketRounds = 200;
// A thread seen before its ThreadStart callback has told its native id keeps its counts this many
// rounds; after that it is taken for one that existed before the agent (attach) and goes deferred.
constexpr uint64_t kTidGraceRounds = 10;
// Signal slots: one per thread whose stack is awaited, frames preallocated (at most 4 MiB of them).
constexpr size_t kSlotFrameBytes = 4u << 20;
constexpr int kMaxSlots = 1024;
constexpr int kMinSlots = 64;

pid_t current_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

uint64_t thread_cpu_ns() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}

uint64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}

bool counts_as_running(jint state) {
  return (state & kCountedState) == kCountedState && (state & kExcludedState) == 0;
}

CpuSampler::Mode mode_from_environment() {
  const char* chosen = std::getenv("FASTHPROF_CPU_SAMPLER");
  if (chosen == nullptr) return CpuSampler::Mode::kSignal;
  if (std::strcmp(chosen, "deferred") == 0) return CpuSampler::Mode::kDeferred;
  if (std::strcmp(chosen, "each") == 0) return CpuSampler::Mode::kEachThread;
  if (std::strcmp(chosen, "list") == 0) return CpuSampler::Mode::kListOfActive;
  if (std::strcmp(chosen, "all") == 0) return CpuSampler::Mode::kAllThreads;
  if (std::strcmp(chosen, "count") == 0) return CpuSampler::Mode::kCountOnly;
  return CpuSampler::Mode::kSignal;
}

const char* mode_name(CpuSampler::Mode mode) {
  switch (mode) {
    case CpuSampler::Mode::kEachThread: return "each";
    case CpuSampler::Mode::kListOfActive: return "list";
    case CpuSampler::Mode::kAllThreads: return "all";
    case CpuSampler::Mode::kCountOnly: return "count";
    case CpuSampler::Mode::kSignal: return "signal";
    case CpuSampler::Mode::kDeferred: break;
  }
  return "deferred";
}

}  // namespace


template <typename Body>
void CpuSampler::guarded(const char* where, Body&& body) {
  guard_entry(where, "cpu=samples stops; reports keep the samples counted so far", std::forward<Body>(body),
              [this] { failed_.store(true); });
}

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
  // With CompiledMethodLoad enabled HotSpot records debug information at every compiled
  // instruction, not only at safepoints, so that a walk from any pc names the right (inlined)
  // method; without it AsyncGetCallTrace charges the nearest recorded pc.
  if (mode_ == Mode::kSignal && depth_ > 0 && potential.can_generate_compiled_method_load_events) {
    wanted->can_generate_compiled_method_load_events = 1;
  }
}

// The signal mode needs the native id of each thread, known only on the thread itself
// (ThreadStart), and jmethodIDs made before any walk (ClassPrepare); AsyncGetCallTrace refuses to
// walk unless ClassLoad events are on, and CompiledMethodLoad makes compiled code carry debug
// information at every pc (add_capabilities): those two hooks stay empty.
void CpuSampler::wanted_events(FeatureEvents* events) {
  if (depth_ <= 0) return;
  // Native ids in every mode: the rounds read the OS's run state by them (waiting_for_cpu).
  track_tids_ = true;
  if (mode_ != Mode::kSignal) return;
  if (dlsym(RTLD_DEFAULT, "AsyncGetCallTrace") == nullptr) {
    mode_ = Mode::kDeferred;
    return;
  }
  events->class_load = true;
  events->compiled_method_load = true;
  make_ids_.store(true);
}

void CpuSampler::on_thread_start(JNIEnv*, jthread thread) {
  if (track_tids_) guarded("ThreadStart", [&] { remember_tid(thread, current_tid()); });  // on the new thread
}

void CpuSampler::on_thread_end(JNIEnv*, jthread thread) {
  if (track_tids_) guarded("ThreadEnd", [&] { remember_tid(thread, 0); });
}

void CpuSampler::on_class_prepare(JNIEnv*, jclass klass) {
  if (make_ids_.load(std::memory_order_relaxed)) make_method_ids(klass);
}

void CpuSampler::make_method_ids(jclass klass) {
  jint count = 0;
  jmethodID* methods = nullptr;
  if (jvmti_->GetClassMethods(klass, &count, &methods) == JVMTI_ERROR_NONE) {
    jvmti_->Deallocate(reinterpret_cast<unsigned char*>(methods));
  }
}

void CpuSampler::remember_tid(jthread thread, pid_t tid) {
  jlong tag = 0;
  if (jvmti_->GetTag(thread, &tag) != JVMTI_ERROR_NONE || tag == 0) return;
  std::lock_guard<std::mutex> lock(tids_mutex_);
  if (tid != 0) {
    tids_[tag] = tid;
    tids_version_.fetch_add(1);
  } else {
    tids_.erase(tag);
  }
}

pid_t CpuSampler::tid_of(jlong tag, ThreadEntry* entry) {
  if (entry->tid != 0) return entry->tid;
  uint64_t version = tids_version_.load();
  if (entry->tids_version == version) return 0;
  entry->tids_version = version;
  std::lock_guard<std::mutex> lock(tids_mutex_);
  auto found = tids_.find(tag);
  if (found != tids_.end()) entry->tid = found->second;
  return entry->tid;
}

bool CpuSampler::start_signal_mode(JNIEnv* jni, std::string* why) {
  size_t frame_bytes = static_cast<size_t>(depth_) * sizeof(AsyncFrame);
  int slots = static_cast<int>(std::clamp<size_t>(kSlotFrameBytes / frame_bytes, kMinSlots, kMaxSlots));
  signal_ = SignalStacks::create(context_.vm, depth_, slots, why);
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
    remember_tid(current, current_tid());
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
  if (mode_ == Mode::kDeferred || mode_ == Mode::kSignal) {
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
  for (auto& [tag, entry] : entries_) close_stat(entry);
  for (auto& [tag, pending] : pending_) {
    unfetched_samples_ += pending.count;
    jni->DeleteGlobalRef(pending.thread);
  }
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
  if (print_stats_) print_stats();
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
    std::unordered_map<jlong, Pending> none;
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

void CpuSampler::run_stacks(JNIEnv* jni) {
  std::unordered_map<jlong, Pending> batch;
  jvmti_->RawMonitorEnter(lock_);
  while (!stop_requested_ && !failed_.load()) {
    if ((pending_.empty() && !signal_work_) || pauses_ > 0) {
      jvmti_->RawMonitorWait(lock_, 0);
      continue;
    }
    batch.swap(pending_);
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
      context_.threads->announce(jni, threads[i]);
      if (jvmti_->GetTag(threads[i], &tag) != JVMTI_ERROR_NONE || tag == 0) continue;
    }
    ThreadEntry* entry = entry_for(jni, threads[i], tag);
    entry->seen_round = round_;
    if (!entry->agent) candidates_.push_back({threads[i], tag, entry});
  }
  jvmti_->Deallocate(reinterpret_cast<unsigned char*>(threads));
  threads_max_ = std::max(threads_max_, candidates_.size());

  bool in_round = mode_ != Mode::kDeferred && mode_ != Mode::kSignal;
  if (in_round) {  // otherwise these belong to the stacks thread
    counted_.clear();
    frames_.clear();
  }
  if (mode_ == Mode::kAllThreads) {
    collect_list(candidates_, /*test_cpu=*/true);
  } else {
    active_.clear();
    for (const Candidate& candidate : candidates_) {
      if (mode_ == Mode::kSignal && signal_->outstanding(candidate.entry->ticket)) {
        // Its last signal is not handled yet, so it has not run since it was counted: it is still
        // RUNNABLE and waiting for a core. One more count on that request, without asking the VM.
        active_.push_back(candidate);
        signal_one(jni, candidate);
        continue;
      }
      jint state = 0;
      if (jvmti_->GetThreadState(candidate.thread, &state) != JVMTI_ERROR_NONE) continue;
      if (!counts_as_running(state)) continue;
      // Counted when it used the CPU since the last round, or wanted to and got no core: with
      // more busy threads than cores a busy thread can wait a whole interval in the run queue.
      if (!ran_since_last_round(candidate.thread, candidate.entry) &&
          !(use_cpu_time_ && waiting_for_cpu(candidate.tag, candidate.entry))) {
        continue;
      }
      active_.push_back(candidate);
      if (mode_ == Mode::kSignal) signal_one(jni, candidate);
    }
    counted_in_rounds_ += active_.size();
    if (mode_ == Mode::kSignal) {
      if (!active_.empty()) {  // the stacks thread collects what the handlers walked
        jvmti_->RawMonitorEnter(lock_);
        jvmti_->RawMonitorNotifyAll(lock_);
        jvmti_->RawMonitorExit(lock_);
      }
    } else if (mode_ == Mode::kDeferred) {
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
    } else if (mode_ == Mode::kCountOnly) {
      // The counts alone, for the benchmark.
    } else if (mode_ == Mode::kEachThread) {
      collect_each(active_);
    } else {
      collect_list(active_, /*test_cpu=*/false);
    }
  }
  if (in_round) record_counted();
  jni->PopLocalFrame(nullptr);

  if (round_ % kPruneEveryRounds == 0) {
    for (auto it = entries_.begin(); it != entries_.end();) {
      ThreadEntry& entry = it->second;
      bool gone = entry.seen_round != round_;
      if (signal_ != nullptr && (gone || round_ - entry.ticket_round > kStaleTicketRounds)) {
        if (signal_->cancel(entry.ticket)) {
          jvmti_->RawMonitorEnter(lock_);
          signal_work_ = true;
          jvmti_->RawMonitorExit(lock_);
        }
      }
      if (gone) close_stat(entry);
      it = gone ? entries_.erase(it) : std::next(it);
    }
  }
}

// The signal mode's part of a round, for one thread that ran, right after its state and CPU time
// were read (so that it has no time to go to sleep before its signal): a stack request and a
// signal, or one more count on the request it already has. Threads without a native id (or a
// free slot) go the deferred way.
void CpuSampler::signal_one(JNIEnv* jni, const Candidate& candidate) {
  ThreadEntry* entry = candidate.entry;
  SignalStacks::Ticket ticket;
  jvmti_->RawMonitorEnter(lock_);
  signal_work_ = true;
  if (signal_->outstanding(entry->ticket)) {
    ++slot_counts_[static_cast<size_t>(entry->ticket.index)];
    jvmti_->RawMonitorExit(lock_);
    return;
  }
  pid_t tid = tid_of(candidate.tag, entry);
  if (tid == 0 && round_ - entry->first_round < kTidGraceRounds) {
    ++entry->carried;
    jvmti_->RawMonitorExit(lock_);
    return;
  }
  if (tid != 0) ticket = signal_->request(tid, candidate.tag);
  uint64_t count = 1 + entry->carried;
  entry->carried = 0;
  if (ticket.index < 0) {
    Pending& pending = pending_[candidate.tag];
    if (pending.thread == nullptr) pending.thread = jni->NewGlobalRef(candidate.thread);
    pending.count += count;
    without_tid_ += count;
    jvmti_->RawMonitorExit(lock_);
    return;
  }
  entry->ticket = ticket;
  entry->ticket_round = round_;
  slot_counts_[static_cast<size_t>(ticket.index)] = count;
  slot_threads_[static_cast<size_t>(ticket.index)] = jni->NewGlobalRef(candidate.thread);
  jvmti_->RawMonitorExit(lock_);
  // The state once more right before the signal: a thread that went to sleep or to wait since
  // would walk its stack in Thread.sleep or Object.wait. Its counts go the way of a failed walk,
  // as the deferred variant's do.
  jint state = 0;
  if (jvmti_->GetThreadState(candidate.thread, &state) != JVMTI_ERROR_NONE || !counts_as_running(state)) {
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

// One pass of the stacks thread (or of pause()): the harvested signal stacks, then one request
// per pending thread, then the traces interned and counted.
void CpuSampler::stacks_pass(JNIEnv* jni, std::unordered_map<jlong, Pending>& batch) {
  ++stack_passes_;
  counted_.clear();
  frames_.clear();
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
        Pending& pending = batch[stack.tag];
        if (pending.thread == nullptr) {
          pending.thread = stack.thread;
        } else {
          jni->DeleteGlobalRef(stack.thread);
        }
        pending.count += stack.count;
        ++walks_retried_;
        continue;
      }
      if (stack.num_frames != 0) charge_elsewhere(stack.tag, stack.count, false);
      if (stack.thread != nullptr && jni != nullptr) jni->DeleteGlobalRef(stack.thread);
      continue;
    }
    if (stack.thread != nullptr && jni != nullptr) jni->DeleteGlobalRef(stack.thread);
    ++walks_ok_;
    size_t first = frames_.size();
    for (jint i = 0; i < stack.num_frames; ++i) {
      frames_.push_back({static_cast<uint64_t>(reinterpret_cast<uintptr_t>(frames[i].method_id)),
                         static_cast<int64_t>(frames[i].lineno >= 0 ? frames[i].lineno : -1)});
    }
    counted_.push_back({stack.tag, first, static_cast<size_t>(stack.num_frames), stack.count});
  }
  harvested_.clear();
  if (!batch.empty()) take_pending_stacks(jni, batch);
  record_counted();
  if (stack_passes_ % kPruneEveryRounds == 0) {
    uint64_t now = monotonic_ns();
    for (auto it = last_stacks_.begin(); it != last_stacks_.end();) {
      if (recent(it->second, now)) {
        ++it;
        continue;
      }
      it = last_stacks_.erase(it);
    }
  }
}

// A stack taken within the last few intervals still stands for what the thread was running.
bool CpuSampler::recent(const LastStack& last, uint64_t now_ns) const {
  constexpr uint64_t kRecentIntervals = 10;
  uint64_t interval_ns = static_cast<uint64_t>(std::max(context_.options->interval_ms, 1)) * 1000000u;
  return now_ns - last.taken_ns <= kRecentIntervals * interval_ns;
}

// Counts whose stack could not be taken: to the thread's last trace when that is recent (at any
// age when the thread has ended), otherwise lost.
void CpuSampler::charge_elsewhere(jlong tag, uint64_t count, bool ended) {
  auto last = last_stacks_.find(tag);
  if (last != last_stacks_.end() && (ended || recent(last->second, monotonic_ns()))) {
    size_t first = frames_.size();
    frames_.insert(frames_.end(), last->second.frames.begin(), last->second.frames.end());
    counted_.push_back({tag, first, last->second.frames.size(), count, /*repeat=*/true});
  } else {
    lost_samples_ += count;
  }
}

// The deferred variant's stack thread: one handshake per pending thread. The state comes with the
// stack, so a thread that has gone to sleep or ended since it was counted loses those counts rather
// than charging them to Thread.sleep.
void CpuSampler::take_pending_stacks(JNIEnv* jni, std::unordered_map<jlong, Pending>& batch) {
  for (auto& [tag, pending] : batch) {
    jthread thread = static_cast<jthread>(pending.thread);
    jvmtiStackInfo* stack = nullptr;
    jvmtiError error = thread == nullptr ? JVMTI_ERROR_INVALID_THREAD
                                         : jvmti_->GetThreadListStackTraces(1, &thread, depth_, &stack);
    // HotSpot 17 answers NONE without a stack when the thread ends before the handshake reaches it.
    if (error == JVMTI_ERROR_NONE && stack == nullptr) error = JVMTI_ERROR_THREAD_NOT_ALIVE;
    bool taken = error == JVMTI_ERROR_NONE;
    size_t before = counted_.size();
    if (taken && counts_as_running(stack->state)) {
      add_frames(tag, stack->frame_buffer, stack->frame_count, pending.count);
    }
    if (counted_.size() == before) {
      bool ended = error == JVMTI_ERROR_THREAD_NOT_ALIVE || (taken && stack->state == 0);
      charge_elsewhere(tag, pending.count, ended);
    }
    if (taken) jvmti_->Deallocate(reinterpret_cast<unsigned char*>(stack));
    if (thread != nullptr) jni->DeleteGlobalRef(thread);
  }
  batch.clear();
}

CpuSampler::ThreadEntry* CpuSampler::entry_for(JNIEnv* jni, jthread thread, jlong tag) {
  auto [it, inserted] = entries_.try_emplace(tag);
  ThreadEntry* entry = &it->second;
  if (!inserted) return entry;
  entry->first_round = round_;
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

bool CpuSampler::waiting_for_cpu(jlong tag, ThreadEntry* entry) {
  pid_t tid = tid_of(tag, entry);
  if (tid == 0) return false;
  if (entry->stat_fd < 0) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
    entry->stat_fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (entry->stat_fd < 0) return false;
  }
  // Reading at offset 0 makes the kernel describe the thread anew; a thread that ended reads as
  // an error, whatever thread got its id since.
  char line[256];
  ssize_t size = ::pread(entry->stat_fd, line, sizeof line, 0);
  if (size <= 0) return false;
  return task_stat_state(std::string_view(line, static_cast<size_t>(size))) == 'R';
}

void CpuSampler::close_stat(ThreadEntry& entry) {
  if (entry.stat_fd >= 0) ::close(entry.stat_fd);
  entry.stat_fd = -1;
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
    if (jvmti_->GetThreadListStackTraces(1, &candidate.thread, depth_, &stack) != JVMTI_ERROR_NONE ||
        stack == nullptr) {
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
          JVMTI_ERROR_NONE ||
      stacks == nullptr) {
    return;
  }
  for (size_t i = 0; i < threads.size(); ++i) {
    const jvmtiStackInfo& stack = stacks[i];
    if (!counts_as_running(stack.state)) continue;
    if (test_cpu) {
      if (!ran_since_last_round(threads[i].thread, threads[i].entry)) continue;
      ++counted_in_rounds_;
    }
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

// The stacks counted by this pass go to the writer thread, which interns them (drain()).
void CpuSampler::record_counted() {
  if (counted_.empty()) return;
  bool deferred = mode_ == Mode::kDeferred || mode_ == Mode::kSignal;
  uint64_t taken_ns = monotonic_ns();
  std::lock_guard<std::mutex> lock(ready_mutex_);
  for (const Counted& counted : counted_) {
    auto first = frames_.begin() + static_cast<std::ptrdiff_t>(counted.first_frame);
    auto last = first + static_cast<std::ptrdiff_t>(counted.frame_count);
    if (deferred && !counted.repeat) last_stacks_[counted.tag] = {std::vector<StackFrame>(first, last), taken_ns};
    ready_counted_.push_back({counted.tag, ready_frames_.size(), counted.frame_count, counted.count, counted.repeat});
    ready_frames_.insert(ready_frames_.end(), first, last);
  }
  counted_.clear();
  frames_.clear();
}

size_t CpuSampler::drain(JNIEnv* jni) {
  {
    std::lock_guard<std::mutex> lock(ready_mutex_);
    taken_frames_.swap(ready_frames_);
    taken_counted_.swap(ready_counted_);
  }
  ProfileWriter& writer = *context_.writer;
  for (const Counted& counted : taken_counted_) {
    uint32_t serial = writer.threads().serial_of_object_id(static_cast<uint64_t>(counted.tag));
    if (serial == 0) {
      // The thread's START THREAD may still be queued.
      context_.apply_lifecycle(jni);
      serial = writer.threads().serial_of_object_id(static_cast<uint64_t>(counted.tag));
    }
    std::span<const StackFrame> stack(taken_frames_.data() + counted.first_frame, counted.frame_count);
    table_.add(writer.intern_trace(serial, stack), counted.count);
    samples_ += counted.count;
  }
  size_t taken = taken_counted_.size();
  taken_counted_.clear();
  taken_frames_.clear();
  return taken;
}

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
                mode_name(mode_), static_cast<unsigned long long>(round_),
                static_cast<unsigned long long>(samples_), seconds, mean_us,
                static_cast<double>(round_ns_max_) / 1e3, static_cast<unsigned long long>(counted_in_rounds_),
                static_cast<unsigned long long>(lost_samples_), static_cast<unsigned long long>(unfetched_samples_),
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
