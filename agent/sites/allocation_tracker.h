// heap=sites|all: allocation sites (SITES / ALLOC SITES + HEAP SUMMARY) over every allocation the
// JVM makes (JVMTI SampledObjectAlloc at interval 0), or a statistical sample of them (sample=).
//
//   Java thread, in the callback (no lock, no I/O, no allocation once the site and thread are known):
//     GetStackTrace(depth) -> GetTag(class) -> key = XXH3(class, frames[, thread])
//     -> SiteSlotTable::find_or_claim(key) = slot -> SetTag(object, slot | sequence)
//     -> AllocationPipeline::push({slot, size}) into the thread's own producer
//   "fasthprof writer" thread, the profile's owner (drain(), every millisecond):
//     drain in bulk -> SiteTable: slot -> (class serial, trace serial) row, counters += event
//   report (the same thread):
//     drain -> ForceGarbageCollection -> IterateThroughHeap(tagged objects only): live per slot
//     -> drain again -> rows sorted by live bytes, cut -> TRACEs, then SITES / ALLOC SITES
//
// Tags (allocation_event.h): the slot is claimed before the tag is set, so a tag always names a
// complete slot entry, and the report finds each live object's site from its tag alone. The agent
// keeps nothing per object; the JVM's tag map keeps about 32 bytes per tracked object. The
// sequence part makes each tag unique, so heap=all dumps can use it as the object's ID.
//
// The class in the key is the class object's tag: one GetTag per allocation (the agent's class
// registry tags classes as they are prepared; it is the cheapest identity JVMTI offers, measured in
// bench/alloc_overhead_bench.py). A class nobody tagged yet (an array class made after start-up)
// is keyed by a hash of its signature until the writer registers it; such a site and its later
// twin under the class's tag fall into one row (same class serial and trace).
//
// alloc=inject (agent/sites/injected_allocations.h, the default where it can start): code injected
// before each allocation instruction counts in Java instead, with no event per object; the
// VMObjectAlloc event (the same callback as SampledObjectAlloc) takes what natives allocate. Both
// feed the one site table. Live counts then come from each object's header, where code injected
// after the allocation wrote its site (injected_marks.cpp, object_marks.h): the report walks them
// first, takes the counts made so far, then the tagged objects of the natives' events.
//
// Live counts are exact at a report because the report drains every queued event and counts live
// objects itself after a forced GC (ObjectFree stays off; its events arrive too late). live=n sets
// no tag, forces no GC and walks nothing: each site's live counts repeat its allocated ones.
#pragma once

#include <jvmti.h>

#include <pthread.h>

#include <atomic>
#include <memory>
#include <mutex>

#include "feature.h"
#include "instrument/class_instrumenter.h"
#include "queues/allocation_recorder.h"
#include "sites/allocation_traces.h"
#include "sites/injected_allocations.h"

namespace fasthprof {

class AllocationTracker final : public Feature, public AllocationTraces {
 public:
  // instrumenter: used with alloc=inject only.
  AllocationTracker(const AgentContext& context, ClassInstrumenter* instrumenter);
  ~AllocationTracker() override;

  const char* dump_message() const override { return " allocation sites ..."; }
  void served_commands(FeatureCommands* commands) override { commands->alloc_sites = true; }
  void add_capabilities(jvmtiCapabilities* wanted) override;
  void wanted_events(FeatureEvents* events) override { events->compiled_method_load = injected_ != nullptr; }
  void on_compiled_method_load(jmethodID method, const void* code, jint size) override {
    if (injected_ != nullptr) injected_->on_code_loaded(method, code, size);
  }
  void on_compiled_method_unload(jmethodID, const void* code) override {
    if (injected_ != nullptr) injected_->on_code_unloaded(code);
  }
  void on_load() override;
  void start(JNIEnv* jni) override;
  // alloc=inject asked for: VMObjectAlloc goes to on_sampled_object_alloc() too.
  bool wants_vm_object_alloc() const { return injected_ != nullptr; }
  // SampledObjectAlloc (and VMObjectAlloc with alloc=inject), called by the profiler's callback
  // table on the allocating thread.
  void on_sampled_object_alloc(JNIEnv* jni, jthread thread, jobject object, jclass klass, jlong size);
  size_t drain(JNIEnv* jni) override;
  void write_report(ReportContext& report) override;
  // net= CONTROL: allocation tracking on/off (the SampledObjectAlloc event), reset the site table.
  bool control(JNIEnv* jni, const NetCommand& command, std::string* refusal) override;
  void stop(JNIEnv* jni) override;

  // ---- for heap=all dumps (agent/heap_dumper.*, through AllocationTraces) ---------------------
  void intern_pending(ReportContext& report) override;
  bool trace_serial_of_tag(uint64_t tag, uint32_t* trace_serial) const override;
  bool marks_objects() const override { return counting_by_injection_ && injected_->marks_objects(); }
  void prepare_object_traces(ReportContext& report) override;
  bool walk_object_traces(ObjectTraceList* out, std::string* why) override;

 private:
  struct ThreadState;
  static jint JNICALL count_live_object(jlong class_tag, jlong size, jlong* tag, jint length,
                                        void* user_data);

  void record_allocation(ThreadState& state, JNIEnv* jni, jthread thread, jobject object,
                         jclass klass, jlong size);
  ThreadState* thread_state();
  static void release_thread_state(void* state);
  bool set_sampling_interval();
  void retire_allocation_buffers();
  void say_if_full();

  // Drains the pipeline into the site table and interns new sites. The owner.
  size_t drain_events(JNIEnv* jni);
  bool resolve_slot(JNIEnv* jni, const SlotDescription& slot, SiteIdentity* site);
  uint32_t class_serial_of(JNIEnv* jni, const SlotDescription& slot);
  void count_live(JNIEnv* jni);
  void write_sites(double cutoff, uint16_t flags);

  AgentContext context_;
  uint32_t depth_;
  uint64_t sample_interval_;
  bool thread_in_traces_;
  bool live_;  // live=y: objects tagged at allocation and counted live at each report
  std::unique_ptr<InjectedAllocations> injected_;  // alloc=inject
  bool counting_by_injection_ = false;             // start() started it
  // The natives whose VMObjectAlloc events are counted by the injected code at their calls:
  // Unsafe.allocateInstance, and Object.clone where its call marked the thread.
  jmethodID allocate_instance_ = nullptr;
  jmethodID counted_clone_ = nullptr;
  jvmtiEvent event_ = JVMTI_EVENT_SAMPLED_OBJECT_ALLOC;  // the event enabled at start()

  AllocationRecorder recorder_;  // its drain side and sites: the owner's
  bool started_ = false;         // start() got as far as enabling the event
  bool drain_failed_ = false;    // the owner's: a drain threw; the queue is emptied, nothing counted
  bool said_full_ = false;       // the owner's: the table-full line was printed
  bool said_walk_failed_ = false;  // the owner's: the marked objects' walk failed once, said
  std::atomic<bool> accepting_{false};
  std::atomic<uint64_t> unregistered_class_allocations_{0};  // keyed by signature (slow path)
  std::atomic<jlong> class_class_tag_{0};  // registry ID of java.lang.Class, set at start()
  bool gc_stops_before_death_ = false;  // ZGC/Shenandoah: no ForceGarbageCollection at VM death

  // Each allocating thread takes a recording state (its producer, its frames buffer) at its first
  // allocation and gives it back here when it ends (the key's destructor); the next thread reuses
  // it, so that short-lived threads allocate nothing of their own and the states stay as many as
  // the most threads that allocated at once.
  pthread_key_t state_key_{};
  bool state_key_valid_ = false;
  std::mutex states_mutex_;
  ThreadState* free_states_ = nullptr;  // guarded by states_mutex_
  std::atomic<uint64_t> states_created_{0};
};

}  // namespace fasthprof
