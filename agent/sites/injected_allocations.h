// heap=sites counted by injected code (alloc=inject, docs/allocation-sites.md "Counted by
// injection"): the class instrumenter puts a call before every allocation instruction, which counts
// in Java on the allocating thread (FasthprofAllocs: objects, and the bytes of arrays from their
// length), with no JVMTI event and no stack walk per object. This side:
//
//   the loading thread (the instrumenter's assigner): numbers each site, (index << 4) | kind, and
//     names its method and source line in the instrumenter's InjectedMethods;
//   start (a Java thread): measures object sizes (object_sizes.h) and starts the Java counter;
//   the owner: collect() takes the counts (one JNI call, FasthprofAllocs.collect) at most once a
//     second between reports and at every report; feed() resolves each site to (class serial,
//     trace serial) and adds its counts to the site table, the bytes of `new` from the class's
//     instance size.
//
// A site's trace is one frame at depth 1, the allocating method at the allocation's line (or none
// at depth=0). At a greater depth the counting call asks the frame walk (sites/frame_walk.h) for
// the context of the frames below the allocating method and counts by (context, site); under
// attach, with cpu=times, or where HotSpot does not keep frame pointers for it, the tracker keeps
// its shadow stack instead (entry, exit and position calls, FasthprofTracker; without cpu=times no
// clock and no times) and counts by (the stack's top node, the site). Either way the trace is the
// site's frame, then the frames below it at the lines they call from.
// What no allocation instruction makes (natives, JNI, reflection) the allocation tracker counts
// by the VMObjectAlloc event. What compiled code would make in a JIT intrinsic (Object.clone,
// Arrays.copyOf, ...) it makes by the intrinsic's own code or native instead: the agent turns those
// intrinsics off at load (hold_back_allocating_intrinsics, docs/allocation-sites.md).
#pragma once

#include <jni.h>
#include <jvmti.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "feature.h"
#include "instrument/class_instrumenter.h"
#include "queues/allocation_recorder.h"
#include "sites/allocation_traces.h"
#include "sites/frame_walk.h"
#include "sites/instance_intrinsic.h"
#include "sites/native_frames.h"
#include "sites/object_marks.h"
#include "sites/object_sizes.h"

// The natives of java.lang.FasthprofAllocs (injected_allocations.cpp, frame_walk.cpp).
extern "C" JNIEXPORT jint JNICALL Java_java_lang_FasthprofAllocs_newClassSite(JNIEnv* jni, jclass, jclass klass, jint call);
extern "C" JNIEXPORT jint JNICALL Java_java_lang_FasthprofAllocs_callers(JNIEnv* jni, jclass);
extern "C" JNIEXPORT jint JNICALL Java_java_lang_FasthprofAllocs_cloneCallers(JNIEnv* jni, jclass);

namespace fasthprof {

class InjectedAllocations {
 public:
  // Load time: asks the instrumenter for the allocation calls.
  InjectedAllocations(const AgentContext& context, ClassInstrumenter* instrumenter);

  // Live, before the instrumenter begins: false with *why when counting cannot start (the tracker
  // then counts by the SampledObjectAlloc event instead).
  bool start(JNIEnv* jni, std::string* why);
  // The owner: takes the counts made since the last collect (`now`: whatever the time); false when
  // it took none (not due yet, or the call failed).
  bool collect(JNIEnv* jni, bool now);
  // The owner: the counts taken so far into the recorder's site table. Between reports
  // (at_report false) sites whose class is not registered yet wait (registering every loaded class
  // is for reports).
  void feed(JNIEnv* jni, AllocationRecorder& recorder, bool at_report = true);
  // The owner (net= CONTROL allocation off and on): pauses or resumes the counting in Java. What
  // was counted before a pause is collected as always. False when the call failed.
  bool pause(JNIEnv* jni, bool paused);
  // VM death: no more counting. Says on stderr (verbose=y) what was counted and left out.
  void stop(JNIEnv* jni);

  // live=y (injected_marks.cpp): the injected code writes each object's mark ID into its header
  // (FasthprofMarks); a report walks the heap for them. The live objects and array bytes per mark ID.
  struct MarkedLive {
    std::vector<uint8_t> kinds;  // by mark ID: the site's SiteKind, 0xff none
    std::vector<uint64_t> objects, bytes;
    int32_t array_base[6] = {}, array_shift[6] = {};
    uint64_t align_mask = 7;
    uint32_t length_offset = 0;
    uint64_t strays = 0;  // IDs no pair or site has
    MarkWalkFigures figures;
  };
  bool marks_objects() const { return marking_; }
  // The owner, after a forced collection: the marked objects in the heap now. False with *why when
  // the heap cannot be walked (the live counts then lack them: said once).
  bool walk_marked(JNIEnv* jni, MarkedLive* out, std::string* why);
  // The owner, after feed() and the tagged objects' apply_live(): the walk's counts as live counts
  // of their sites.
  void add_marked_live(const MarkedLive& live, AllocationRecorder& recorder);
  // heap=all (injected_marks.cpp, allocation_traces.h): with the program held, the TRACE of every
  // site a mark names written (calls into Java); then every object of the heap walked for its
  // trace (no Java, no JNI).
  void prepare_object_traces(JNIEnv* jni);
  bool walk_object_traces(ObjectTraceList* out, std::string* why);
  // start() failed: no class gets calls that would count nothing (ClassInstrumenter::drop_allocations).
  void abandon() { instrumenter_->drop_allocations(); }
  void add_capabilities(jvmtiCapabilities* wanted) const {
    instrumenter_->add_capabilities(wanted);
    wanted->can_generate_compiled_method_load_events = 1;
  }
  // The compiled method events: to the frame walk (traces by frame walk) and to the natives' frames.
  void on_code_loaded(jmethodID method, const void* code, jint size) {
    walk_.on_code_loaded(code, size);
    natives_.on_code_loaded(method, code, size);
  }
  void on_code_unloaded(const void* code) {
    walk_.on_code_unloaded(code);
    natives_.on_code_unloaded(code);
  }
  // Whose VMObjectAlloc event the calling thread is in (NativeFrames::top): the natives counted at
  // their calls, Unsafe.allocateInstance (counted_instance()) and Object.clone (counted_clone()).
  bool native_top(JNIEnv* jni, jmethodID* method) { return natives_.top(jni, method); }
  jmethodID watched_native(JNIEnv* jni, jmethodID top) { return natives_.watched(jni, top); }
  bool may_have_exception(JNIEnv* jni) const { return natives_.may_have_exception(jni); }
  // Unsafe.allocateInstance, once started: every object it makes is counted at its call.
  jmethodID counted_instance() const { return allocate_instance_; }
  // The owner, around each time it enables VMObjectAlloc (start, net= CONTROL allocation on): lets
  // compiled code make Unsafe.allocateInstance's objects inline again (instance_intrinsic.h).
  void before_natives_event();
  void after_natives_event();
  // FasthprofAllocs.newClassSite (any Java thread): the site ID of objects of `klass` made by the
  // Unsafe.allocateInstance or Object.clone call whose site ID is `call` (one per pair, made when
  // first asked), or -1.
  jint class_site(JNIEnv* jni, jclass klass, jint call);
  // Object.clone, once started when the injected code counts what its sure calls make (the JIT's
  // own clone held back, no shadow stack: FasthprofAllocs.cloneCallers marks the thread, so that
  // the clone's VMObjectAlloc event is left out); else null.
  jmethodID counted_clone() const { return object_clone_; }
  // Load time (Agent_OnLoad, or Agent_OnAttach: `attached`): keeps the JIT from compiling the
  // intrinsics that allocate without an instruction or an event (Object.clone, Arrays.copyOf, ...),
  // so that what they allocate is counted by the instructions or the natives they run instead.
  // Says on stderr when it cannot (attached, or a VM that does not describe its flags).
  void hold_back_allocating_intrinsics(bool attached);
  // Load time too (attached: for what is compiled from then on): the compiled method events this
  // enables would make HotSpot record debug information at every compiled instruction
  // (DebugNonSafepoints, on by default while anyone listens to them), which the frame walk and the
  // natives' frames do not read: they name frames at calls. Set off unless the user set it, or
  // cpu=samples, whose walks from any instruction need it, is on.
  void leave_out_non_safepoint_debug_info();

 private:
  struct Site {
    uint32_t method_id;  // InjectedMethods
    uint32_t offset;     // of the instruction in the original code
    SiteKind kind;
    std::string signature;  // of the allocated class: "Ljava/lang/String;", "[I"
    bool clone = false;     // made by Object.clone's native: its frame tops the trace
  };
  struct Resolved {
    uint32_t class_serial = 0;  // 0: not resolved yet
    uint8_t array_kind = 0;
    uint64_t instance_size = 0;  // kInstance only
  };
  struct Count {
    uint64_t objects = 0, bytes = 0;
  };

  uint32_t add_site(std::string_view class_name, const InjectedSite& site);
  void take_rows(JNIEnv* jni, jobjectArray result, std::vector<jobject>* ended);
  bool start_traces(JNIEnv* jni, jclass tracker, std::string* why);
  bool start_walk(JNIEnv* jni, jclass tracker, std::string* why);
  void start_natives(JNIEnv* jni);
  bool bind_natives(JNIEnv* jni, jclass counter);
  void take_traced_rows(JNIEnv* jni, jobjectArray result, const std::vector<uint32_t>& serials);
  void resolve_pending(JNIEnv* jni, bool register_loaded_too);
  bool resolve(JNIEnv* jni, uint32_t index, Resolved* out);
  void index_classes(JNIEnv* jni, bool register_loaded);
  void measure_instances(JNIEnv* jni, const std::vector<uint32_t>& indexes);
  void site_frames(const Site& site, size_t depth, std::vector<StackFrame>* trace) const;
  // The site's frames, then the walked context's below them (0: none), depth frames at most.
  void walked_trace(const Site& site, uint32_t context, size_t depth, std::vector<StackFrame>* trace);
  bool choose_marks(JNIEnv* jni, std::string* why);
  bool start_marks(JNIEnv* jni, std::string* why);
  void take_pairs(JNIEnv* jni);
  // Mark IDs run from 1 to mark_ids() - 1; each names the key (context << 32 | site index).
  size_t mark_ids(size_t sites) const { return (walked_ ? pair_keys_.size() : sites) + 1; }
  uint64_t mark_key(size_t id) const { return walked_ ? pair_keys_[id - 1] : id - 1; }

  AgentContext context_;
  ClassInstrumenter* instrumenter_;
  ObjectSizes sizes_;

  std::mutex sites_mutex_;
  std::vector<Site> sites_;  // by index; guarded by sites_mutex_
  // class_site()'s: (call index, class signature) -> site index; sites_mutex_.
  std::map<std::pair<uint32_t, std::string>, uint32_t> class_sites_;

  // The owner's.
  jclass counter_ = nullptr;  // java.lang.FasthprofAllocs, a global reference
  jmethodID collect_ = nullptr, stop_ = nullptr, ignore_ = nullptr, pause_ = nullptr;
  bool writer_ignored_ = false;
  // Allocation traces (depth > 1): the tracker keeps the shadow stack; without cpu=times this side
  // started it (its words, never freed: a daemon thread may still count after VM death).
  bool traced_ = false, owns_tracker_ = false;
  // Allocation traces (depth > 1) by frame walk instead: no shadow stack.
  bool walked_ = false;
  FrameWalk walk_;
  bool clones_counted_ = false;       // the calls sure to run Object.clone count it (load time)
  jmethodID object_clone_ = nullptr;  // counted_clone()
  jmethodID allocate_instance_ = nullptr;  // counted_instance()
  NativeFrames natives_;
  InstanceIntrinsic instance_intrinsic_;
  jclass tracker_ = nullptr;  // global reference
  jmethodID tracker_ignore_ = nullptr, forget_ = nullptr;
  void* words_ = nullptr;
  jlong budget_bytes_ = 0;
  bool budget_said_ = false;
  std::unordered_map<uint64_t, Count> pending_traced_;  // (site index << 32 | trace serial) -> counts
  uint64_t last_collect_ns_ = 0;
  std::unordered_map<uint64_t, Count> pending_;  // (site index << 32 | thread serial) -> counts
  std::vector<Resolved> resolved_;              // by site index
  std::unordered_map<std::string, uint32_t> serial_by_signature_;
  size_t indexed_classes_ = 0;  // registry size when serial_by_signature_ was built
  uint64_t counted_objects_ = 0, unresolved_objects_ = 0;
  int64_t figures_[3] = {0, 0, 0};  // the counter's: thread states, counts of threads over the cap, unmarked objects

  // live=y: objects marked in their headers (injected_marks.cpp): the header's layout (start()),
  // whether marking started; the owner's pair keys by ID - 1 (context << 32 | site index).
  std::string marks_refusal_;  // load time: why the headers cannot be used ("" when they may be)
  ObjectMarkLayout mark_layout_;
  bool marking_ = false;
  jclass marks_class_ = nullptr;  // java.lang.FasthprofMarks, a global reference
  jmethodID new_pairs_ = nullptr;
  std::vector<uint64_t> pair_keys_;
  uint64_t unresolved_live_ = 0;  // live objects of sites whose class was never resolved
  uint64_t stray_marks_ = 0;      // the last walk's objects whose mark ID names no site
  std::vector<uint32_t> dump_serials_;  // prepare_object_traces(): each mark ID's trace serial
};

}  // namespace fasthprof
