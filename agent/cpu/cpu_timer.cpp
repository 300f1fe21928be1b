// cpu=times and cpu=old: the agent's half of bytecode injection (agent/cpu/cpu_timer.h). The counting
// itself is Java (agent/instrument/tracker/java/lang/FasthprofTracker.java); this side names the
// injected methods, runs the clock, and turns the tracker's counts into traces and sections on the owner.
#include "cpu/cpu_timer.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/java_names.h"
#include "base/stderr_line.h"
#include "instrument/tracker_threads.h"
#include "jvmti_support.h"
#include "thread_tracker.h"

namespace fasthprof {

namespace {

// The clock's tick: the resolution of every time in CPU TIME (docs/cpu_times.md).
constexpr long kTickNs = 1'000'000;
// Bounds of the tracker's memory (docs/cpu_times.md, "Memory"): the bytes of traces over every
// thread (a share of the maximum heap, within these bounds), and threads counted at once (virtual
// threads above the cap run uncounted until others end).
constexpr jlong kHeapShareDivisor = 16;
constexpr jlong kMinTraceBudget = jlong{4} << 20;
constexpr jlong kMaxTraceBudget = jlong{128} << 20;
constexpr jint kThreadCap = 16384;
// The agent's words after the clock (FasthprofTracker.start()).
constexpr size_t kStatesWord = 72, kBudgetReachedWord = 80, kGaveUpWord = 84;
// Between reports the owner takes the counts this often, so that the states of ended threads go.
constexpr uint64_t kCollectIntervalNs = 1'000'000'000;

// A clock tick later than this is counted as the clock thread held off (verbose=y): the busy
// threads' time slices can hold a woken thread off for tens of milliseconds (docs/cpu_times.md).
constexpr uint64_t kHeldOffNs = 10'000'000;

// An int word of the clock's memory that the tracker writes.
int clock_int(void* memory, size_t offset) {
  return __atomic_load_n(reinterpret_cast<int*>(static_cast<char*>(memory) + offset), __ATOMIC_ACQUIRE);
}

}  // namespace

jlong max_heap_bytes(JNIEnv* jni) {
  jvmti::LocalFrame frame(jni, 4);
  jclass runtime = jni->FindClass("java/lang/Runtime");
  jmethodID get = runtime == nullptr ? nullptr : jni->GetStaticMethodID(runtime, "getRuntime", "()Ljava/lang/Runtime;");
  jmethodID max = runtime == nullptr ? nullptr : jni->GetMethodID(runtime, "maxMemory", "()J");
  if (jvmti::clear_exception(jni) || get == nullptr || max == nullptr) return 0;
  jobject instance = jni->CallStaticObjectMethod(runtime, get);
  if (jvmti::clear_exception(jni) || instance == nullptr) return 0;
  jlong bytes = jni->CallLongMethod(instance, max);
  return jvmti::clear_exception(jni) ? 0 : bytes;
}

jlong trace_budget_bytes(jlong max_heap) {
  if (max_heap <= 0 || max_heap == std::numeric_limits<jlong>::max()) return kMaxTraceBudget;
  return std::clamp(max_heap / kHeapShareDivisor, kMinTraceBudget, kMaxTraceBudget);
}

// ---- CpuTimer -----------------------------------------------------------------------------------

CpuTimer::CpuTimer(const AgentContext& context, ClassInstrumenter* instrumenter)
    : context_(context), jvmti_(context.jvmti), instrumenter_(instrumenter), methods_(*instrumenter->methods()) {
  instrumenter_->inject_calls(
      [this](std::string_view class_name, std::string_view method_name, std::string_view descriptor) {
        return methods_.add(class_name, method_name, descriptor);
      });

  // Exits by exception: ExceptionCatch pops the shadow stack down to the catching frame. Without
  // it the tracker pops those frames at the next exit below them (later, so their time is longer).
  instrumenter_->catch_exceptions(jvmti_);
}

CpuTimer::~CpuTimer() = default;

void CpuTimer::add_capabilities(jvmtiCapabilities* wanted) {
  instrumenter_->add_capabilities(wanted);
}

void CpuTimer::wanted_events(FeatureEvents* events) {
  events->exception_catch = instrumenter_->catches();
}

bool CpuTimer::take_tracker(JNIEnv* jni) {
  tracker_ = instrumenter_->tracker(jni, "cpu=times");
  if (tracker_ == nullptr) return false;
  start_ = jni->GetStaticMethodID(tracker_, "start", "(JIJI)V");
  stop_ = jni->GetStaticMethodID(tracker_, "stop", "()V");
  collect_ = jni->GetStaticMethodID(tracker_, "collect", "([Ljava/lang/Thread;)[Ljava/lang/Object;");
  ignore_ = jni->GetStaticMethodID(tracker_, "ignoreCurrentThread", "()V");
  release_ = jni->GetStaticMethodID(tracker_, "release", "()V");
  if (start_ == nullptr || stop_ == nullptr || collect_ == nullptr || ignore_ == nullptr ||
      release_ == nullptr) {
    jvmti::clear_exception(jni);
    jvmti::print_error("cpu=times: the tracker class lacks its methods; no CPU TIME is recorded");
    tracker_ = nullptr;
    return false;
  }
  return true;
}

void* CpuTimer::ticker_main(void* arg) {
  auto* timer = static_cast<CpuTimer*>(arg);
  auto* word = static_cast<uint64_t*>(timer->clock_memory_);
  timespec tick{0, kTickNs};
  uint64_t last = monotonic_ns();
  while (!timer->ticker_stop_.load(std::memory_order_relaxed)) {
    const uint64_t now = monotonic_ns();
    __atomic_store_n(word, now, __ATOMIC_RELAXED);
    if (now - last > kTickNs) {
      timer->held_off_max_ns_ = std::max(timer->held_off_max_ns_, now - last - kTickNs);
    }
    if (now - last > kTickNs + kHeldOffNs) ++timer->held_off_;
    last = now;
    nanosleep(&tick, nullptr);
  }
  return nullptr;
}

void CpuTimer::start(JNIEnv* jni) {
  if (!take_tracker(jni)) return;
  // Never freed: a daemon thread may still read the clock after VM death has stopped the tracker.
  if (posix_memalign(&clock_memory_, 64, 128) != 0) {
    clock_memory_ = nullptr;
    jvmti::print_error("cpu=times: out of memory for the clock; no CPU TIME is recorded");
    return;
  }
  std::memset(clock_memory_, 0, 128);
  *static_cast<uint64_t*>(clock_memory_) = monotonic_ns();
  if (pthread_create(&ticker_, nullptr, &ticker_main, this) != 0) {
    jvmti::print_error("cpu=times: cannot start the clock thread; no CPU TIME is recorded");
    return;
  }
  pthread_setname_np(ticker_, "fasthprof-clock");
  ticker_running_ = true;
  budget_bytes_ = trace_budget_bytes(max_heap_bytes(jni));
  jni->CallStaticVoidMethod(tracker_, start_, static_cast<jlong>(reinterpret_cast<uintptr_t>(clock_memory_)),
                            static_cast<jint>(context_.options->prof_trace_depth), budget_bytes_, kThreadCap);
  jvmti::clear_exception(jni);
}

// Takes the rows of one collect() result into the table. With `ended`, fills it with the thread
// objects (local references) of the states whose thread has terminated.
void CpuTimer::take_rows(JNIEnv* jni, jobjectArray result, std::vector<jobject>* ended) {
  auto methods = static_cast<jintArray>(jni->GetObjectArrayElement(result, 0));
  auto values = static_cast<jlongArray>(jni->GetObjectArrayElement(result, 1));
  auto row_threads = static_cast<jintArray>(jni->GetObjectArrayElement(result, 2));
  auto threads = static_cast<jobjectArray>(jni->GetObjectArrayElement(result, 3));
  auto figures = static_cast<jlongArray>(jni->GetObjectArrayElement(result, 4));
  auto row_lengths = static_cast<jintArray>(jni->GetObjectArrayElement(result, 5));
  jsize rows = jni->GetArrayLength(row_threads);
  jsize thread_count = jni->GetArrayLength(threads);
  std::vector<jint> ids(static_cast<size_t>(jni->GetArrayLength(methods)));
  std::vector<jlong> counts(static_cast<size_t>(rows) * 3);
  std::vector<jint> row_thread(static_cast<size_t>(rows));
  std::vector<jint> row_length(static_cast<size_t>(rows));
  if (rows > 0) {
    jni->GetIntArrayRegion(methods, 0, static_cast<jsize>(ids.size()), ids.data());
    jni->GetLongArrayRegion(values, 0, static_cast<jsize>(counts.size()), counts.data());
    jni->GetIntArrayRegion(row_threads, 0, rows, row_thread.data());
    jni->GetIntArrayRegion(row_lengths, 0, rows, row_length.data());
  }
  jni->GetLongArrayRegion(figures, 0, 4, reinterpret_cast<jlong*>(figures_));
  // Serials per thread only with thread=y; the thread objects are looked at once each.
  std::vector<uint32_t> serials =
      tracker_thread_serials(jni, jvmti_, *context_.writer, threads, context_.options->thread_in_traces, ended);
  std::vector<StackFrame> frames;
  size_t at = 0;
  for (jsize row = 0; row < rows; ++row) {
    const jint* trace = ids.data() + at;
    const size_t stored = std::min(static_cast<size_t>(std::max(row_length[static_cast<size_t>(row)], 0)),
                                   ids.size() - at);
    at += stored;
    // The tracker keeps deeper traces when allocation traces need them: rows that differ below
    // depth add up in the table.
    const size_t length = std::min(stored, static_cast<size_t>(std::max(context_.options->prof_trace_depth, 0)));
    CpuTimeCounts row_counts{static_cast<uint64_t>(counts[static_cast<size_t>(row) * 3]),
                             static_cast<uint64_t>(counts[static_cast<size_t>(row) * 3 + 1]),
                             static_cast<uint64_t>(counts[static_cast<size_t>(row) * 3 + 2])};
    if (context_.options->old_timing) {
      table_.add(old_key(length > 0 ? static_cast<uint32_t>(trace[0]) : 0,
                         length > 1 ? static_cast<uint32_t>(trace[1]) : 0),
                 row_counts);
      continue;
    }
    frames.clear();
    for (size_t k = 0; k < length; ++k) {
      frames.push_back({InjectedMethods::kMark | static_cast<uint32_t>(trace[k]), -1});
    }
    jint thread_index = row_thread[static_cast<size_t>(row)];
    uint32_t serial = thread_index >= 0 && thread_index < thread_count ? serials[static_cast<size_t>(thread_index)] : 0;
    table_.add(context_.writer->intern_trace(serial, frames), row_counts);
  }
  jni->DeleteLocalRef(methods);
  jni->DeleteLocalRef(values);
  jni->DeleteLocalRef(row_threads);
  jni->DeleteLocalRef(threads);
  jni->DeleteLocalRef(figures);
  jni->DeleteLocalRef(row_lengths);
}

void CpuTimer::collect(JNIEnv* jni) {
  if (tracker_ == nullptr || jni == nullptr) return;
  last_collect_ns_ = monotonic_ns();
  jint threads = static_cast<jint>(figures_[2]) + 64;
  jvmti::LocalFrame frame(jni, threads + 32);
  auto result = static_cast<jobjectArray>(jni->CallStaticObjectMethod(tracker_, collect_, nullptr));
  if (jvmti::clear_exception(jni) || result == nullptr) return;
  std::vector<jobject> ended;
  take_rows(jni, result, &ended);
  jni->DeleteLocalRef(result);
  if (ended.empty()) return;
  // Their last counts, and their states go (their threads can make no more calls).
  jobjectArray array = tracker_thread_array(jni, ended);
  if (array == nullptr) return;
  result = static_cast<jobjectArray>(jni->CallStaticObjectMethod(tracker_, collect_, array));
  if (jvmti::clear_exception(jni) || result == nullptr) return;
  take_rows(jni, result, nullptr);
}

size_t CpuTimer::drain(JNIEnv* jni) {
  if (tracker_ == nullptr || clock_memory_ == nullptr) return 0;
  if (!writer_ignored_) {
    // The owner's own Java calls (reports' Runtime.totalMemory, class linking) are not the program's.
    writer_ignored_ = true;
    jni->CallStaticVoidMethod(tracker_, ignore_);
    jvmti::clear_exception(jni);
  }
  check_limits(jni);
  // Early when threads come and go fast (virtual threads): their states go only at a collect.
  int states = clock_int(clock_memory_, kStatesWord);
  if (states > kThreadCap / 4 || monotonic_ns() - last_collect_ns_ >= kCollectIntervalNs) collect(jni);
  return 0;
}

// Says once that the trace budget was reached, and once that an OutOfMemoryError stopped the
// tracker; then takes the counts made so far and lets the tracker's states go.
void CpuTimer::check_limits(JNIEnv* jni) {
  if (!budget_said_ && clock_int(clock_memory_, kBudgetReachedWord) != 0) {
    budget_said_ = true;
    jvmti::print_error("cpu=times: the traces reached their budget of " + std::to_string(budget_bytes_ >> 20) +
                       " MiB (1/16 of the maximum heap, 4 to 128 MiB); calls of new traces are counted under "
                       "<empty trace> from now on");
  }
  if (!gave_up_said_ && clock_int(clock_memory_, kGaveUpWord) != 0) {
    gave_up_said_ = true;
    jvmti::print_error("cpu=times: the Java heap ran out while counting; counting stopped for good, the "
                       "CPU TIME section holds the calls counted before");
    collect(jni);
    jni->CallStaticVoidMethod(tracker_, release_);
    jvmti::clear_exception(jni);
  }
}

void CpuTimer::write_report(ReportContext& report) {
  if (tracker_ != nullptr && clock_memory_ != nullptr && report.jni != nullptr) check_limits(report.jni);
  collect(report.jni);
  ProfileWriter& writer = *context_.writer;
  if (context_.options->old_timing) {
    write_old_prof_section(writer, table_.take_old_report(),
                           [&](uint32_t id, OldMethodName* out) { return methods_.describe(id, out); });
  } else {
    double cutoff = report.cutoff < 0 ? context_.options->cutoff : report.cutoff;  // a net= command's
    write_cpu_time_section(writer, table_.take_report(cutoff), context_.options->cpu_sampling,
                           std::time(nullptr));
  }
}

bool CpuTimer::control(JNIEnv* jni, const NetCommand& command, std::string* refusal) {
  if (command.control != NetControl::kClearCpu) {
    *refusal = "not a cpu=times control";
    return false;
  }
  // The times counted before the command go with the rest: collected, then the table starts
  // afresh as after a report (taking one and dropping it).
  collect(jni);
  if (context_.options->old_timing) {
    table_.take_old_report();
  } else {
    table_.take_report(1.0);
  }
  return true;
}

void CpuTimer::stop(JNIEnv* jni) {
  if (tracker_ != nullptr && jni != nullptr) {
    jni->CallStaticVoidMethod(tracker_, stop_);
    jvmti::clear_exception(jni);
  }
  if (ticker_running_) {
    ticker_stop_.store(true);
    pthread_join(ticker_, nullptr);
    ticker_running_ = false;
  }
  if (context_.options->verbose_given) {
    const ClassInstrumenter::Figures classes = instrumenter_->figures();
    char line[512];
    std::snprintf(line, sizeof(line),
                  "fasthprof: cpu=times: classes rewritten=%llu unchanged=%llu malformed=%llu excluded=%llu "
                  "retransformed_at_start=%llu retransform_failed=%llu methods=%zu threads_untracked=%lld "
                  "calls_over_trace_budget=%lld exception_catch=%s clock_held_off=%llu "
                  "clock_held_off_max_ms=%.1f\n",
                  static_cast<unsigned long long>(classes.rewritten), static_cast<unsigned long long>(classes.unchanged),
                  static_cast<unsigned long long>(classes.malformed), static_cast<unsigned long long>(classes.excluded),
                  static_cast<unsigned long long>(classes.retransformed),
                  static_cast<unsigned long long>(classes.retransform_failed),
                  methods_.size(), static_cast<long long>(figures_[0]), static_cast<long long>(figures_[1]),
                  instrumenter_->catches() ? "y" : "n", static_cast<unsigned long long>(held_off_),
                  static_cast<double>(held_off_max_ns_) / 1e6);
    write_stderr(line);
  }
}

}  // namespace fasthprof
