#include "sites/allocation_tracker.h"

#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <ctime>
#include <new>
#include <string>
#include <vector>

#include "base/ids.h"
#include "base/memory.h"
#include "base/stderr_line.h"
#include "class_tracker.h"
#include "entry_guard.h"
#include "jvmti_support.h"
#include "records/record_writer.h"
#include "sections/sites_section.h"
#include "xxhash.h"

namespace fasthprof {


namespace {

static_assert(sizeof(jvmtiFrameInfo) == sizeof(SlotFrame));
static_assert(offsetof(jvmtiFrameInfo, method) == offsetof(SlotFrame, method));
static_assert(offsetof(jvmtiFrameInfo, location) == offsetof(SlotFrame, location));

// Keys of classes that have no tag yet; the top bit keeps them apart from every tag (tags are
// positive).
constexpr uint64_t kSignatureKeyBit = uint64_t{1} << 63;

constexpr const char* kTrackingStopped =
    "heap=sites stops tracking new allocations; reports keep what was counted so far";

uint64_t frame_budget(uint32_t max_slots, uint32_t depth) {
  uint64_t frames = uint64_t{max_slots} * (depth == 0 ? 1 : depth);
  return std::min<uint64_t>(frames, uint64_t{1} << 26);  // at most 1 GiB of address space
}

}  // namespace

struct AllocationTracker::ThreadState {
  AllocationTracker* owner = nullptr;
  ThreadState* next_free = nullptr;  // in owner->free_states_
  RecorderThread recorder;
  jvmtiFrameInfo* frames = nullptr;  // max(depth, 1) entries, right after the state

  // The one block a state takes with its frames.
  static size_t block_bytes(uint32_t depth) {
    static_assert(sizeof(ThreadState) % alignof(jvmtiFrameInfo) == 0);
    return sizeof(ThreadState) + size_t{depth == 0 ? 1 : depth} * sizeof(jvmtiFrameInfo);
  }
};

AllocationTracker::AllocationTracker(const AgentContext& context, ClassInstrumenter* instrumenter)
    : context_(context),
      depth_(static_cast<uint32_t>(context.depth_capacity)),
      sample_interval_(context.options->sample_bytes),
      thread_in_traces_(context.options->thread_in_traces),
      live_(context.options->live),
      recorder_(SiteSlotTableOptions{context.options->max_sites,
                                     frame_budget(context.options->max_sites, static_cast<uint32_t>(context.options->depth))},
                context.options->sample_bytes) {
  state_key_valid_ = pthread_key_create(&state_key_, &release_thread_state) == 0;
  if (counts_by_injection(*context.options, context.attached) && instrumenter != nullptr) {
    injected_ = std::make_unique<InjectedAllocations>(context, instrumenter);
  }
}

AllocationTracker::~AllocationTracker() {
  // The states of threads still running are left to them: no destructor runs after the delete.
  if (state_key_valid_) pthread_key_delete(state_key_);
  while (ThreadState* state = free_states_) {
    free_states_ = state->next_free;
    state->~ThreadState();
    memory::deallocate(state, ThreadState::block_bytes(depth_));
  }
}


void AllocationTracker::add_capabilities(jvmtiCapabilities* wanted) {
  wanted->can_generate_sampled_object_alloc_events = 1;
  wanted->can_tag_objects = 1;
  if (injected_ != nullptr) {
    wanted->can_generate_vm_object_alloc_events = 1;
    wanted->can_retransform_classes = 1;
    injected_->add_capabilities(wanted);  // ExceptionCatch for allocation traces' shadow stack
  }
}

void AllocationTracker::on_load() {
  // Each thread draws its next sampling point when it is created or sampled, so the interval must be
  // set before the VM's threads exist: set at VMInit, the main thread of JDK 23+ would keep a point
  // drawn with the default 512 KiB interval and its first allocations would go unseen.
  set_sampling_interval();
  if (injected_ != nullptr) {
    injected_->hold_back_allocating_intrinsics(context_.attached);
    injected_->leave_out_non_safepoint_debug_info();
  }
}

bool AllocationTracker::set_sampling_interval() {
  jint interval = static_cast<jint>(std::min<uint64_t>(sample_interval_, 0x7fffffff));
  return context_.jvmti->SetHeapSamplingInterval(interval) == JVMTI_ERROR_NONE;
}

void AllocationTracker::start(JNIEnv* jni) {
  jvmtiEnv* jvmti = context_.jvmti;
  gc_stops_before_death_ = jvmti::collector_runs_on_own_threads();
  if (jclass class_class = jni->FindClass("java/lang/Class")) {
    jlong tag = 0;
    jvmti->GetTag(class_class, &tag);
    class_class_tag_.store(tag, std::memory_order_relaxed);
    jni->DeleteLocalRef(class_class);
  } else if (jni->ExceptionCheck()) {
    jni->ExceptionClear();
  }
  if (!recorder_.valid()) {
    jvmti::print_error("Unable to reserve the allocation site table; heap=sites records nothing.");
    return;
  }
  if (!state_key_valid_) {
    jvmti::print_error("Unable to create a thread-specific data key; heap=sites records nothing.");
    return;
  }
  if (!set_sampling_interval()) {
    jvmti::print_error("Unable to set the heap sampling interval; heap=sites records nothing.");
    return;
  }
  if (injected_ != nullptr) {
    std::string why;
    counting_by_injection_ = injected_->start(jni, &why);
    if (counting_by_injection_) {
      event_ = JVMTI_EVENT_VM_OBJECT_ALLOC;
      // What Unsafe.allocateInstance and the marked clones make the injected code counts.
      allocate_instance_ = injected_->counted_instance();
      counted_clone_ = injected_->counted_clone();
    } else {
      injected_->abandon();
      // Chosen by alloc=auto, the event is as exact, only slower: said when asked (verbose=y).
      if (context_.options->alloc == AllocCounting::kInject || context_.options->diagnostics())
        jvmti::print_error("alloc=inject: " + why + "; heap=sites counts by the SampledObjectAlloc event instead");
    }
  }
  started_ = true;
  accepting_.store(true, std::memory_order_release);
  if (counting_by_injection_) injected_->before_natives_event();
  jvmtiError enabled = jvmti->SetEventNotificationMode(JVMTI_ENABLE, event_, nullptr);
  if (counting_by_injection_ && enabled == JVMTI_ERROR_NONE) injected_->after_natives_event();
  if (enabled != JVMTI_ERROR_NONE) {
    accepting_.store(false);
    jvmti::print_error(std::string("Unable to enable ") +
                       (counting_by_injection_ ? "VMObjectAlloc" : "SampledObjectAlloc") + " events (" +
                       jvmti::error_name(enabled) + "); heap=sites records nothing.");
    return;
  }
  if (!context_.attached && !counting_by_injection_) retire_allocation_buffers();
}

// JDK 17 sets a TLAB's sampling end only while SampledObjectAlloc is on, and the event is masked
// until the live phase: main's TLAB from start-up was never sampled (all of its first allocations
// lost with Serial and Parallel). A collection retires every TLAB (ZGC's too, at mark start), so
// each thread's next allocation refills and is sampled; at VMInit it costs a few milliseconds.
// Not under attach: there a running thread is unseen until its first sampling point, drawn at
// the default interval, whatever its TLAB (docs/allocation-sites.md).
void AllocationTracker::retire_allocation_buffers() {
  jvmtiError collected = context_.jvmti->ForceGarbageCollection();
  if (collected != JVMTI_ERROR_NONE) {
    jvmti::print_error("Unable to force a garbage collection (" + jvmti::error_name(collected) +
                       "); allocations of running threads may go uncounted until their next TLAB.");
  }
}

void AllocationTracker::stop(JNIEnv* jni) {
  jvmtiEnv* jvmti = context_.jvmti;
  accepting_.store(false, std::memory_order_release);
  jvmti->SetEventNotificationMode(JVMTI_DISABLE, event_, nullptr);
  if (counting_by_injection_) injected_->stop(jni);
  if (recorder_.dropped() != 0) {
    write_stderr("fasthprof: the allocation site table was full: " + std::to_string(recorder_.dropped()) +
                 " allocations at new sites were not tracked (sites=<n> keeps more)\n");
  }
  if (context_.options->diagnostics()) {
    PipelineStats stats = recorder_.pipeline_stats();
    write_stderr("fasthprof: allocation sites: " + std::to_string(recorder_.sites().site_count()) + " sites, " +
                 std::to_string(stats.drained) + " events, deepest queue " +
                 std::to_string(stats.deepest_queue) + " events, " + std::to_string(stats.producer_waits) +
                 " producer waits, " + std::to_string(unregistered_class_allocations_.load()) +
                 " allocations of classes not registered yet, " + std::to_string(states_created_.load()) +
                 " thread states\n");
  }
}

AllocationTracker::ThreadState* AllocationTracker::thread_state() {
  if (auto* state = static_cast<ThreadState*>(pthread_getspecific(state_key_))) return state;
  ThreadState* state = nullptr;
  {
    std::lock_guard<std::mutex> lock(states_mutex_);
    if (free_states_ != nullptr) {
      state = free_states_;
      free_states_ = state->next_free;
    }
  }
  if (state == nullptr) {
    void* memory = memory::allocate(ThreadState::block_bytes(depth_));
    if (memory == nullptr) return nullptr;
    state = new (memory) ThreadState();
    state->owner = this;
    state->frames = reinterpret_cast<jvmtiFrameInfo*>(state + 1);
    states_created_.fetch_add(1, std::memory_order_relaxed);
  }
  if (pthread_setspecific(state_key_, state) != 0) {
    release_thread_state(state);
    return nullptr;
  }
  return state;
}

// The key's destructor, on a thread that ends: its state (and the producer in it, with any events
// still queued there) goes to the next thread.
void AllocationTracker::release_thread_state(void* pointer) {
  auto* state = static_cast<ThreadState*>(pointer);
  AllocationTracker* owner = state->owner;
  std::lock_guard<std::mutex> lock(owner->states_mutex_);
  state->next_free = owner->free_states_;
  owner->free_states_ = state;
}

void AllocationTracker::on_sampled_object_alloc(JNIEnv* jni, jthread thread, jobject object, jclass klass,
                                                 jlong size) {
  if (!accepting_.load(std::memory_order_relaxed)) return;
  guard_entry(
      "SampledObjectAlloc", kTrackingStopped,
      [&] {
        if (ThreadState* state = thread_state()) record_allocation(*state, jni, thread, object, klass, size);
      },
      [this] { accepting_.store(false, std::memory_order_release); });
}

void AllocationTracker::record_allocation(ThreadState& state, JNIEnv* jni, jthread thread, jobject object,
                                          jclass klass, jlong size) {
  jvmtiEnv* jvmti = context_.jvmti;
  // Counted by the injected code at the native's call: any object Unsafe.allocateInstance makes, a
  // clone where the call marked the thread. The first event after the mark takes it: a mark left
  // by a clone that made nothing (an error thrown) leaves that event out only if it is a clone too
  // (docs/allocation-sites.md "Clones"). The top frame from the VM's record, else from JVMTI.
  const bool natives = allocate_instance_ != nullptr || counted_clone_ != nullptr;
  const bool marked = natives && FrameWalk::take_clone_mark();
  auto counted_at_call = [&](jmethodID top) {
    return top != nullptr && (top == allocate_instance_ || (marked && top == counted_clone_));
  };
  jmethodID top = nullptr;
  const bool told = natives && injected_->native_top(jni, &top);
  if (told && counted_at_call(top)) return;
  jint count = 0;
  // state.frames holds depth_ frames, the capacity; the depth now may be less (net= CONTROL).
  jint depth = context_.current_depth();
  if (depth > 0 && jvmti->GetStackTrace(nullptr, 0, depth, state.frames, &count) != JVMTI_ERROR_NONE) {
    count = 0;
  }
  if (natives && !told) {
    top = count > 0 ? state.frames[0].method : nullptr;
    jlocation at = 0;
    if (depth == 0 && jvmti->GetFrameLocation(nullptr, 0, &top, &at) != JVMTI_ERROR_NONE) top = nullptr;
    if (counted_at_call(injected_->watched_native(jni, top))) return;
  }
  jlong class_tag = 0;
  jvmti->GetTag(klass, &class_tag);
  uint64_t class_key = static_cast<uint64_t>(class_tag);
  if (class_key == 0) {
    // Not registered yet (an array class made after start-up): keyed by name until the writer
    // registers it, which tags it.
    unregistered_class_allocations_.fetch_add(1, std::memory_order_relaxed);
    char* signature = nullptr;
    if (jvmti->GetClassSignature(klass, &signature, nullptr) != JVMTI_ERROR_NONE) return;
    class_key = XXH3_64bits(signature, std::strlen(signature)) | kSignatureKeyBit;
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(signature));
  }
  uint64_t thread_key = 0;
  if (thread_in_traces_) {
    jlong thread_tag = 0;
    jvmti->GetTag(thread, &thread_tag);
    thread_key = static_cast<uint64_t>(thread_tag);
  }
  std::span<const SlotFrame> frames(reinterpret_cast<const SlotFrame*>(state.frames),
                                    static_cast<size_t>(count));
  recorder_.record(
      state.recorder, class_key, thread_key, frames, static_cast<uint64_t>(size),
      [&] {
        // A VMObjectAlloc event (counting by injection) comes with the VM's exception pending when
        // the native threw after allocating (the exception is one of its allocations): set aside
        // across these calls. Not asked of JNI otherwise: a JNI call's return checks the event
        // frame's references against its plan, which only the first call below raises.
        jthrowable pending = nullptr;
        if (counting_by_injection_ && injected_->may_have_exception(jni)) {
          pending = jni->ExceptionOccurred();
          if (pending != nullptr) jni->ExceptionClear();
        }
        jvmti::plan_callback_local_refs(jni);
        auto ref = reinterpret_cast<uint64_t>(jni->NewWeakGlobalRef(klass));
        if (pending != nullptr) {
          jni->Throw(pending);
          jni->DeleteLocalRef(pending);
        }
        return ref;
      },
      [&](uint64_t tag) {
        if (!live_) return;  // live=n: the object is not followed
        // A class mirror's allocation event can arrive after the class was registered (the VM
        // posts sampled allocations when the defining call returns): its registry ID, which LOAD
        // CLASS and every dump use, must stay. It is counted as allocated but not tracked as live.
        jlong existing = 0;
        if (class_tag != 0 && class_tag == class_class_tag_.load(std::memory_order_relaxed) &&
            jvmti->GetTag(object, &existing) == JVMTI_ERROR_NONE && existing != 0) {
          return;
        }
        jvmti->SetTag(object, static_cast<jlong>(tag));
      });
}

size_t AllocationTracker::drain(JNIEnv* jni) {
  if (!started_) return 0;
  if (drain_failed_) return recorder_.discard();  // producers must never wait on a full queue
  size_t drained = 0;
  guard_entry(
      "the allocation writer", kTrackingStopped,
      [&] {
        drained = drain_events(jni);
        // Fed as taken, so that a site table filling up is said when it happens.
        if (counting_by_injection_ && injected_->collect(jni, false)) injected_->feed(jni, recorder_, false);
      },
      [&] {
        drain_failed_ = true;
        accepting_.store(false, std::memory_order_release);
      });
  say_if_full();
  return drained;
}

// Once, on the writer thread, as soon as a drain finds that allocations went uncounted.
void AllocationTracker::say_if_full() {
  if (said_full_ || recorder_.dropped() == 0) return;
  said_full_ = true;
  write_stderr("fasthprof: the allocation site table is full (" + std::to_string(recorder_.slots().max_slots()) +
               " sites, depth " + std::to_string(context_.options->depth) +
               "): allocations at new sites are not counted from now on; sites=<n> keeps more (up to " +
               std::to_string(kMostMaxSites) + "), a smaller depth makes fewer sites\n");
}

size_t AllocationTracker::drain_events(JNIEnv* jni) {
  return recorder_.drain([&](uint32_t, const SlotDescription& slot, SiteIdentity* site) {
    return resolve_slot(jni, slot, site);
  });
}

uint32_t AllocationTracker::class_serial_of(JNIEnv* jni, const SlotDescription& slot) {
  if (registry_object_index(RegistryObjectKind::kClass, slot.class_key) != 0) {
    const ClassInfo* known = context_.writer->classes().find_by_object_id(slot.class_key);
    if (known != nullptr && known->loaded) return known->serial;
  }
  if (slot.class_handle == 0) return 0;
  jobject local = jni->NewLocalRef(reinterpret_cast<jweak>(slot.class_handle));
  if (local == nullptr) return 0;  // the class is gone
  uint32_t serial = context_.classes->serial_of(static_cast<jclass>(local));
  jni->DeleteLocalRef(local);
  return serial;
}

bool AllocationTracker::resolve_slot(JNIEnv* jni, const SlotDescription& description, SiteIdentity* site) {
  ProfileWriter& writer = *context_.writer;
  uint32_t class_serial = class_serial_of(jni, description);
  const ClassInfo* info = class_serial == 0 ? nullptr : writer.classes().find_by_serial(class_serial);
  if (info == nullptr) return false;
  uint32_t thread_serial = 0;
  if (thread_in_traces_ && description.thread_key != 0) {
    // The thread may have ended since: its serial is still the one its START THREAD gave. Its
    // START may still be queued (the thread started after this round applied the queue).
    thread_serial = writer.threads().serial_of_object_id(description.thread_key);
    if (thread_serial == 0) {
      context_.apply_lifecycle(jni);
      thread_serial = writer.threads().serial_of_object_id(description.thread_key);
    }
  }
  std::vector<StackFrame> frames;
  frames.reserve(description.frames.size());
  for (const SlotFrame& frame : description.frames) frames.push_back({frame.method, frame.location});
  site->class_serial = class_serial;
  site->array_kind = array_kind_of(info->signature);
  site->trace_serial = writer.intern_trace(thread_serial, frames);
  if (description.class_handle != 0) jni->DeleteWeakGlobalRef(reinterpret_cast<jweak>(description.class_handle));
  return true;
}

jint JNICALL AllocationTracker::count_live_object(jlong, jlong size, jlong* tag, jint, void* user_data) {
  static_cast<LiveCount*>(user_data)->count(static_cast<uint64_t>(*tag), static_cast<uint64_t>(size));
  return 0;
}

void AllocationTracker::count_live(JNIEnv* jni) {
  LiveCount live = recorder_.start_live_count();
  jvmtiHeapCallbacks callbacks{};
  callbacks.heap_iteration_callback = &count_live_object;
  context_.jvmti->IterateThroughHeap(JVMTI_HEAP_FILTER_UNTAGGED, nullptr, &callbacks, &live);
  // Objects counted by the walk whose events were still queued.
  drain_events(jni);
  // A slot still unknown here belongs to an allocation whose callback was running when the walk
  // met its object.
  recorder_.apply_live(live, [&](uint32_t, const SlotDescription& slot, SiteIdentity* site) {
    return resolve_slot(jni, slot, site);
  });
}

void AllocationTracker::write_report(ReportContext& report) {
  if (!started_) return;
  uint16_t flags = report.sites_flags;
  if (live_) {
    // ZGC and Shenandoah collect on threads that HotSpot has already stopped at VM death: there
    // the live counts of the exit report include the garbage not yet collected (docs/allocation-sites.md).
    if (report.force_gc && !(report.at_exit && gc_stops_before_death_)) context_.jvmti->ForceGarbageCollection();
    drain_events(report.jni);
    if (counting_by_injection_) {
      // The marked objects first: whatever they were counted as is collected after the walk.
      InjectedAllocations::MarkedLive marked;
      std::string why;
      bool walked = injected_->marks_objects() && injected_->walk_marked(report.jni, &marked, &why);
      if (!walked && !said_walk_failed_) {
        said_walk_failed_ = true;
        jvmti::print_error("heap=sites: the live counts lack the objects counted by injection: " + why);
      }
      injected_->collect(report.jni, true);
      injected_->feed(report.jni, recorder_);
      count_live(report.jni);
      if (walked) injected_->add_marked_live(marked, recorder_);
    } else {
      count_live(report.jni);
    }
  } else {
    // live=n: nothing to collect or walk for (a net= command that asks for a collection gets one).
    if ((flags & kSitesForceGc) != 0 && !(report.at_exit && gc_stops_before_death_)) {
      context_.jvmti->ForceGarbageCollection();
    }
    drain_events(report.jni);
    if (counting_by_injection_) {
      injected_->collect(report.jni, true);
      injected_->feed(report.jni, recorder_);
    }
    recorder_.live_from_allocated();
    flags |= kSitesSortedByAllocation;
  }
  say_if_full();  // the injected counts taken just now may have filled the table
  if (report.heap_summary_only) {
    SiteTotals totals;
    recorder_.sites().report_rows(1.0, &totals);
    context_.writer->output().heap_summary(totals);
    return;
  }
  write_sites(report.cutoff < 0 ? context_.options->cutoff : report.cutoff, flags);
}

bool AllocationTracker::control(JNIEnv* jni, const NetCommand& command, std::string* refusal) {
  if (!started_) {
    *refusal = "allocation tracking never started";
    return false;
  }
  switch (command.control) {
    case NetControl::kAllocOn:
    case NetControl::kAllocOff: {
      // Off: the VM stops reporting allocations (with alloc=inject the injected calls stop
      // counting too; their code stays, a call that returns at once). Objects allocated meanwhile
      // belong to no site (the original's behaviour too).
      bool on = command.control == NetControl::kAllocOn;
      if (counting_by_injection_ && !on && !injected_->pause(jni, true)) {
        *refusal = "the injected counting could not be paused";
        return false;
      }
      jvmtiError error = context_.jvmti->SetEventNotificationMode(on ? JVMTI_ENABLE : JVMTI_DISABLE, event_, nullptr);
      if (error != JVMTI_ERROR_NONE) {
        *refusal = "the VM refused (" + jvmti::error_name(error) + ")";
        return false;
      }
      // JDK 17 to 22 set a TLAB's sampling end only while the event is on: a thread would be
      // unseen until its next TLAB (LiveHeap: nothing a second after on). One collection retires
      // them all, as at start (retire_allocation_buffers); JDK 23+ needs none.
      if (on && !counting_by_injection_ && jvmti::vm_major_version(context_.jvmti) < 23) retire_allocation_buffers();
      if (counting_by_injection_ && on) injected_->after_natives_event();
      if (counting_by_injection_ && on && !injected_->pause(jni, false)) {
        *refusal = "the injected counting could not be resumed";
        return false;
      }
      return true;
    }
    case NetControl::kResetSites:
      // Events queued before the command are counted first, then every site's allocated counts
      // start from zero; live counts are the heap's at each report whatever the reset.
      drain_events(jni);
      if (counting_by_injection_) {
        injected_->collect(jni, true);
        injected_->feed(jni, recorder_);
      }
      recorder_.reset_allocated_counts();
      return true;
    default:
      *refusal = "not an allocation tracking control";
      return false;
  }
}

void AllocationTracker::write_sites(double cutoff, uint16_t flags) {
  SiteTotals totals;
  SiteSelection selection;
  selection.changed_only = (flags & kSitesIncremental) != 0;
  selection.by_allocation = (flags & kSitesSortedByAllocation) != 0;
  std::vector<SiteRow> rows = recorder_.sites().report_rows(cutoff, &totals, selection);
  write_sites_section(*context_.writer, rows, totals, cutoff, flags, std::time(nullptr));
  // The next incremental list counts changes from this one, whatever this one listed.
  recorder_.mark_sites_reported();
}

void AllocationTracker::intern_pending(ReportContext& report) {
  if (!started_) return;
  drain_events(report.jni);
  context_.writer->write_unwritten_traces();
}

void AllocationTracker::prepare_object_traces(ReportContext& report) {
  if (marks_objects()) injected_->prepare_object_traces(report.jni);
}

bool AllocationTracker::walk_object_traces(ObjectTraceList* out, std::string* why) {
  if (!marks_objects()) {
    *why = "objects carry no marks";
    return false;
  }
  return injected_->walk_object_traces(out, why);
}

bool AllocationTracker::trace_serial_of_tag(uint64_t tag, uint32_t* trace_serial) const {
  if (allocation_tag_slot(tag) == 0) return false;
  *trace_serial = recorder_.trace_serial_of_tag(tag);
  return true;
}

}  // namespace fasthprof
