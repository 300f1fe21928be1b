// What the `fasthprof` command's verbs read out of an HPROF binary file, in one pass over its
// records (the reader's framing, hprof_reader.h): names, classes, frames and traces, the ALLOC SITES
// and CPU SAMPLES sections as written, and per heap dump a class histogram. Everything else a record
// holds stays in the file's bytes, which the model points into and never copies: the input must
// outlive it. Memory grows with the names, frames, traces and classes the file declares, never with
// its objects: a dump is read sub-record by sub-record into per-class counters.
//
// It checks what it needs to name things (a record too short for its fields is an error); the
// verifier (hprof_verifier.h) is the place for everything else a file promises.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hprof_input.h"
#include "hprof_reader.h"

namespace fasthprof {

// A name as a Java programmer writes it: "java.lang.String", "int[]", "java.lang.Object[][]". Both
// spellings of class names in HPROF files are accepted: fasthprof's (and the original agent's) dotted
// names with [] suffixes, and the JDK dumper's internal names ("java/lang/String", "[I",
// "[Ljava/lang/Object;"). Allocates the returned string.
std::string java_class_name(std::string_view name);

// Java name of a primitive array of the given basic type ("int[]"), or nullptr if it is none.
const char* primitive_array_name(uint8_t basic_type);

struct FrameInfo {
  std::string_view method;      // "<unknown method>" when the name is missing
  std::string_view signature;
  std::string_view source;      // empty: none
  uint32_t class_serial = 0;
  int32_t line = -1;            // > 0 a line; 0 and below: as the writer put it (-1 unknown, -2 compiled, -3 native)
};

struct TraceInfo {
  uint32_t thread_serial = 0;
  uint32_t frame_count = 0;
  uint64_t frames_at = 0;  // offset of the first frame ID (top of the stack first)
};

// One ALLOC SITES entry as written.
struct SiteRow {
  uint8_t kind = 0;  // 0 instance, 2 object array, a primitive basic type for primitive arrays
  uint32_t class_serial = 0;
  uint32_t trace_serial = 0;
  uint32_t live_bytes = 0;
  uint32_t live_instances = 0;
  uint32_t alloc_bytes = 0;
  uint32_t alloc_instances = 0;
};

struct SitesSection {
  uint64_t offset = 0;  // of the record
  uint16_t flags = 0;   // 0x1 incremental, 0x2 sorted by allocation, 0x4 forced GC
  uint32_t cutoff_bits = 0;
  uint32_t total_live_bytes = 0;
  uint32_t total_live_instances = 0;
  uint64_t total_alloc_bytes = 0;
  uint64_t total_alloc_instances = 0;
  std::vector<SiteRow> rows;
};

struct CpuRow {
  uint32_t count = 0;  // samples (cpu=samples) or milliseconds (cpu=times)
  uint32_t trace_serial = 0;
};

struct CpuSamplesSection {
  uint64_t offset = 0;
  uint32_t time_micros = 0;  // the record's time, since the header's time stamp
  uint32_t total = 0;
  std::vector<CpuRow> rows;
};

// One class (or primitive array type) of a heap dump's histogram.
struct HistogramRow {
  std::string name;  // Java name (java_class_name)
  uint64_t instances = 0;
  uint64_t bytes = 0;  // shallow bytes by the rule of shallow_instance_bytes / shallow_array_bytes
};

struct HeapDumpInfo {
  uint64_t offset = 0;  // of its first HEAP DUMP / HEAP DUMP SEGMENT record
  uint64_t segments = 0;
  bool complete = false;  // ended by HEAP DUMP END, or a 1.0.1 HEAP DUMP record
  uint64_t classes = 0;   // CLASS DUMP sub-records
  uint64_t instances = 0;
  uint64_t object_arrays = 0;
  uint64_t primitive_arrays = 0;
  uint64_t roots = 0;
  uint64_t total_bytes = 0;
  std::vector<HistogramRow> histogram;  // largest bytes first, then by name
};

// Shallow sizes, since HPROF stores none. The rule (stated by `fasthprof summary --help`): an
// object has a header of two identifiers (mark word and class word, at the file's identifier
// size); an instance adds its field values as dumped (references at the identifier size), an
// array adds a 4-byte length and its elements; the sum is rounded up to a multiple of 8.
uint64_t shallow_instance_bytes(uint32_t id_size, uint64_t field_bytes);
uint64_t shallow_array_bytes(uint32_t id_size, uint64_t element_size, uint64_t count);

// Told of each sub-record of the heap dumps as the model's pass frames them (dump: the dump's
// index, from 0), so that a reader that needs every object (HeapGraph) need not frame the dump a
// second time.
class HeapDumpObserver {
 public:
  virtual ~HeapDumpObserver() = default;
  virtual void sub_record(const HprofBytes& bytes, size_t dump, uint8_t tag, uint64_t offset) = 0;
};

class HprofModel {
 public:
  // Reads the file in data[0, size), which must outlive the model. False with *error set at the
  // first record that cannot be framed or read (the sections and dumps before it are kept, a dump
  // cut off by it is left out). Allocates. With input (whose bytes data are), the pages behind the
  // pass are released as it goes (HprofInput::release_before).
  // With observer, each heap dump sub-record is told to it as well.
  bool load(const uint8_t* data, uint64_t size, ReadError* error, HprofInput* input = nullptr,
            HeapDumpObserver* observer = nullptr);

  const HprofHeader& header() const { return header_; }
  const HprofBytes& bytes() const { return bytes_; }

  // Name of a UTF8 ID ("" when the file has none).
  std::string_view utf8(uint64_t id) const;
  // Java name of the class loaded under a serial ("<class serial N>" when none is).
  std::string class_name_by_serial(uint32_t serial) const;
  // Java name of the class whose class object has this ID (its LOAD CLASS), or "<class 0x...>".
  std::string class_name_by_object_id(uint64_t class_id) const;
  // Name of a site's class, primitive arrays by element type.
  std::string site_class_name(const SiteRow& row) const;
  const FrameInfo* frame(uint64_t id) const;
  const TraceInfo* trace(uint32_t serial) const;
  // Frame ID at index i (0 = top) of a trace.
  uint64_t trace_frame(const TraceInfo& trace, uint32_t i) const { return bytes_.id(trace.frames_at + uint64_t{i} * bytes_.id_size()); }
  // "java.lang.String.indexOf" of a frame; with_line adds "(String.java:42)" as a TRACE line does.
  std::string frame_name(uint64_t frame_id, bool with_line) const;
  // The folded form of a trace's stack, outermost frame first, frames joined by ';' (any ';' in a
  // name becomes ':'): "java.lang.Thread.run;Main.work". "<empty trace>" for a trace of no frames,
  // "<trace N>" for a serial no STACK TRACE defines.
  std::string folded_stack(uint32_t trace_serial, bool with_lines) const;

  const std::vector<SitesSection>& sites() const { return sites_; }
  const std::vector<CpuSamplesSection>& cpu() const { return cpu_; }
  const std::vector<HeapDumpInfo>& dumps() const { return dumps_; }
  // Records per tag, over the whole file.
  const std::array<uint64_t, 256>& record_counts() const { return record_counts_; }
  uint64_t records() const { return records_; }
  // CONTROL SETTINGS, if the file has one: flags (0x1 alloc traces, 0x2 cpu=samples) and depth.
  bool has_control_settings() const { return has_control_; }
  uint32_t control_flags() const { return control_flags_; }
  // Whether CPU SAMPLES records hold times (ms): a fasthprof or original-agent file whose CONTROL
  // SETTINGS lack the cpu=samples flag.
  bool cpu_is_times() const { return has_control_ && !(control_flags_ & 2); }
  uint64_t threads_started() const { return threads_started_; }
  // CONTROL SETTINGS' stack trace depth (0 without the record): a trace of that many frames may
  // have been cut.
  uint32_t control_depth() const { return control_depth_; }
  // Name of a thread serial from its START THREAD ("" when none names it).
  std::string_view thread_name(uint32_t serial) const;
  // The names (frame_name) of the frames whose line says native (-3).
  std::vector<std::string> native_frame_names() const;

 private:
  struct ClassCounter {
    uint64_t instances = 0;
    uint64_t bytes = 0;
    bool is_class_dump = false;
  };
  // The counters of a dump's classes by class object ID, looked up once per object: open
  // addressing (linear probing, at most half full), since a node map's modulo and pointer chase
  // cost more than the rest of counting an object.
  class ClassCounters {
   public:
    // The counter of class_id, a zero one when new. Valid until the next insertion.
    ClassCounter& operator[](uint64_t class_id);
    template <typename F> void for_each(F f) const {
      for (const Slot& slot : slots_) {
        if (slot.used) f(slot.class_id, slot.counter);
      }
    }
    void clear();

   private:
    struct Slot {
      uint64_t class_id = 0;
      bool used = false;
      ClassCounter counter;
    };
    void grow();
    std::vector<Slot> slots_;
    size_t count_ = 0;
    unsigned shift_ = 64;
  };
  bool record(const RecordView& record, ReadError* error);
  bool dump_record(const RecordView& record, ReadError* error);
  void finish_dump(bool complete);

  HprofHeader header_;
  HprofBytes bytes_;
  std::array<uint64_t, 256> record_counts_{};
  uint64_t records_ = 0;
  bool has_control_ = false;
  uint32_t control_flags_ = 0;
  uint32_t control_depth_ = 0;
  std::unordered_map<uint32_t, uint64_t> thread_name_by_serial_;  // serial -> name ID
  uint64_t threads_started_ = 0;
  std::unordered_map<uint64_t, std::string_view> utf8_;
  std::unordered_map<uint32_t, uint64_t> class_name_by_serial_;  // serial -> name ID
  std::unordered_map<uint64_t, uint64_t> class_name_by_id_;      // class object ID -> name ID
  std::unordered_map<uint64_t, FrameInfo> frames_;
  std::unordered_map<uint32_t, TraceInfo> traces_;
  std::vector<SitesSection> sites_;
  std::vector<CpuSamplesSection> cpu_;
  std::vector<HeapDumpInfo> dumps_;
  // The dump being read.
  bool in_dump_ = false;
  HeapDumpObserver* observer_ = nullptr;
  HeapDumpInfo dump_;
  ClassCounters dump_classes_;  // class object ID -> counts
  std::array<ClassCounter, 16> dump_primitive_arrays_{};     // by basic type
  uint64_t class_dump_count_ = 0;
  uint64_t class_class_id_ = 0;  // java.lang.Class's own class object, once a CLASS DUMP shows it
  uint64_t class_field_bytes_ = 0;
};

}  // namespace fasthprof
