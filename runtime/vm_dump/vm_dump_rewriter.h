// Inserts a heap dump written by HotSpot's own dumper (`jcmd GC.heap_dump`) into fasthprof's output
// stream as one report (docs/decisions.md, "Binary format"). The JDK's HPROF stream cannot be
// pasted in as it is: it has a file header of its own, re-emits every symbol as UTF8 in every dump,
// and restarts or reuses serials that fasthprof's records, or an earlier VM dump, already defined.
// So the stream passes through a VmDumpRewriter, which edits it in place as it streams:
//
//   JDK record                    what the rewriter does
//   file header                   dropped
//   UTF8 (id = Symbol address)    kept the first time an ID is written in this output; dropped when
//                                 that ID was written before with the same text; given a fresh ID
//                                 (IdSpace::kVmDumpName) when it was written before with another
//                                 text (an address reused after class unloading), and every
//                                 reference to it in this dump is patched
//   LOAD CLASS                    class serial, trace serial, name ID renumbered; a second LOAD
//                                 CLASS of a class ID in one dump (JDK 17 writes two for array
//                                 classes) is dropped, its serial standing for the first one's
//   STACK FRAME                   frame ID (IdSpace::kVmDumpFrame), names, class serial renumbered
//   STACK TRACE                   serial, thread serial, frame IDs renumbered; the JDK's dummy
//                                 trace (no thread, no frames, named by every object) keeps its
//                                 serial (1 in HotSpot) when that is below fasthprof's trace
//                                 serials: written by the first VM dump of the output, dropped by
//                                 the later ones, so that objects need no patch (see Speed)
//   HEAP DUMP SEGMENT             header copied with its length; sub-records streamed, their
//                                 thread serials, trace serials and field name IDs patched
//   HEAP DUMP END                 kept; nothing may follow it
//   HEAP SUMMARY                  kept (it names nothing)
//   UNLOAD CLASS, START/END THREAD, ALLOC SITES, CPU SAMPLES, CONTROL SETTINGS
//                                 dropped whole (the JDK's dumper writes none of them; their serials
//                                 could collide with fasthprof's)
//   HEAP DUMP, any other tag      malformed input
//
// Object and class IDs stay the JDK's addresses (top byte 0), valid within their dump only, with that
// dump's own LOAD CLASS records (runtime/base/ids.h). Serials are renumbered from kFirstVmDumpSerial and
// frame and name IDs into their own ID spaces, with counters kept in VmDumpNumbering for the whole
// run, so no serial or ID is ever defined twice in one output. Every patch keeps the field's size:
// record lengths never change, and a dropped record is skipped whole.
//
// A JDK trace serial that a record names before its STACK TRACE defines it (every LOAD CLASS and
// object names the JDK's dummy trace, written after the LOAD CLASS records) becomes fasthprof's
// empty trace (VmDumpNumbering::empty_trace_serial), which the output must have defined already
// (ProfileWriter::write_header does). A trace with frames defined after such a reference gets a
// fresh serial that later references use.
//
// Speed: bytes are patched in the buffer they arrive in and written as contiguous runs; the work
// per object is a tag switch, one length and one trace serial (cached), which keeps its value (the
// dummy trace's serial is kept). So in a JDK 22+ segment file almost nothing changes: feed_file
// hands the unchanged runs to the kernel to copy, as jcmd's own merge does. Memory: per dump, maps of
// classes, threads, traces and frames; per run, one entry per distinct symbol ID written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/flat_map.h"
#include "base/hprof_format.h"
#include "sink/output_stream.h"

namespace fasthprof {

// What one VmDumpRewriter has done, for the dump's stats line.
struct VmDumpStats {
  uint64_t bytes_in = 0;         // of the JDK's stream, header included
  uint64_t bytes_out = 0;        // written to the output stream
  uint64_t records = 0;          // top-level records read (not the header)
  uint64_t records_dropped = 0;  // other than UTF8 (the empty trace, records the JDK does not write)
  uint64_t segments = 0;
  uint64_t sub_records = 0;
  uint64_t utf8_dropped = 0;     // already written with the same text
  uint64_t utf8_renamed = 0;     // written before with another text: fresh ID
  uint64_t file_bytes = 0;       // of bytes_in: read from a side file (feed_file)
  uint64_t file_ranges = 0;      // runs handed to the output as file ranges
  uint64_t file_range_bytes = 0; // their bytes
  uint64_t roots_renamed = 0;    // sticky class roots of classes without a CLASS DUMP (being loaded)
};

// The numbering state of all VM dumps of one run: serial and ID counters, and the symbol IDs
// already written to the output with a hash of their text (two texts with one 64-bit XXH3 hash
// under one address would be taken for one). Owned by the heap dump feature for the run; used by one
// VmDumpRewriter at a time (one thread at a time). Allocates 3 MiB for the names table at once
// (a JDK has some 40 000 symbols), more as it learns names beyond 65 536.
class VmDumpNumbering {
 public:
  // empty_trace_serial: the empty TRACE the output already defines (fasthprof's "unknown" trace).
  explicit VmDumpNumbering(uint32_t empty_trace_serial = kFirstTraceSerial);
  VmDumpNumbering(const VmDumpNumbering&) = delete;
  VmDumpNumbering& operator=(const VmDumpNumbering&) = delete;

  uint32_t empty_trace_serial() const { return empty_trace_serial_; }
  // Symbol IDs known to be in the output (kept or renamed).
  size_t names_written() const { return name_hashes_.size() + renamed_.size(); }
  // Bytes of the tables above.
  size_t memory_bytes() const { return name_hashes_.memory_bytes() + renamed_.memory_bytes(); }

 private:
  friend class VmDumpRewriter;

  uint32_t empty_trace_serial_;
  uint32_t next_class_serial_;
  uint32_t next_thread_serial_;
  uint32_t next_trace_serial_;
  uint64_t next_name_index_ = 1;
  uint64_t next_frame_index_ = 1;
  // The JDK dummy trace serial the output defines (kept from the first VM dump), 0 if none yet.
  uint32_t dummy_trace_serial_ = 0;
  // JDK symbol ID -> XXH3 of the text written under it; sized for a JDK's symbol table from the start
  FlatMap<uint64_t, uint64_t> name_hashes_{1 << 17};
  FlatMap<uint64_t, uint64_t> renamed_;      // hash of (symbol ID, text hash) -> the fresh ID written
};

// Rewrites one JDK heap dump, fed in chunks, onto an output stream. One thread at a time; allocates
// (its per-dump maps, a carry-over buffer for a record or sub-record header split across chunks: at
// most one record outside the heap segments, never a whole segment).
class VmDumpRewriter {
 public:
  // Both must outlive the rewriter. Nothing is written before the first feed.
  VmDumpRewriter(VmDumpNumbering& numbering, OutputStream& out);
  ~VmDumpRewriter();
  VmDumpRewriter(const VmDumpRewriter&) = delete;
  VmDumpRewriter& operator=(const VmDumpRewriter&) = delete;

  // Takes the next size bytes of the JDK's stream (any split: records and sub-records may span
  // chunks) and writes what it can of the rewritten stream. The bytes are copied into a scratch
  // buffer first; feed_in_place avoids that copy. Returns false on malformed input (error() says
  // what and where; nothing more is written, and every later call returns false): the caller then
  // abandons the report, and still reads the JDK's stream to its end (discarding it): on JDK 17 the
  // VM thread writes it inside a safepoint, and a pipe nobody empties would hold the VM there.
  bool feed(const uint8_t* data, size_t size);
  // As feed, but patches the caller's bytes in place (they are scratch afterwards): the fast path.
  bool feed_in_place(uint8_t* data, size_t size);
  // As feed, with the next size bytes of the JDK's stream read from the file fd (from its offset
  // 0): the segment file that HotSpot 22+ writes beside the path it is given and then copies into
  // that path. The runs it keeps unchanged go to the output
  // with OutputStream::write_file_range (copied by the kernel, never written by this process),
  // what it patches from memory. The file is read a chunk at a time into a buffer of the
  // rewriter's (parsed there, never copied again). fd must stay open until the output has been
  // flushed.
  bool feed_file(int fd, uint64_t size);
  // The end of the JDK's stream: true when it ended at a record boundary after HEAP DUMP END (and no
  // error came before). Call once, after the last feed.
  bool finish();
  // For a dump that will not stay in the output (an error here, a failed write, a report the sink
  // cut back): forgets the symbol IDs this dump added to the numbering, so that a later dump writes
  // them again. Counters are not rewound (their numbers simply stay unused). A second call does
  // nothing.
  void abandon();

  // The one-line reason of the first failure, or empty: "byte 1234 of the JDK's heap dump: ...",
  // with the offset in the JDK's stream (its file header included).
  const std::string& error() const { return error_; }
  const VmDumpStats& stats() const { return stats_; }

 private:
  enum class State : uint8_t { kFileHeader, kRecords, kSubRecords, kBody, kEnded, kFailed };
  struct Serial {
    uint32_t number;  // in the output
    bool defined;     // by its own record in this dump (LOAD CLASS, STACK TRACE)
  };
  struct Frame {
    uint64_t id;  // in the output
    bool defined;
  };
  struct Unit;

  bool fail(uint64_t offset, const char* format, ...) __attribute__((format(printf, 3, 4)));
  uint64_t offset_of(const uint8_t* p) const { return offset_ + static_cast<uint64_t>(p - block_); }
  void flush_run(const uint8_t* to);
  bool take_carried(uint8_t*& pos, uint8_t* end);
  bool step(uint8_t*& pos, uint8_t* end);
  void prefetch_names(const uint8_t* pos, const uint8_t* end);
  void sub_records(uint8_t*& pos, uint8_t* end);
  bool measure(const uint8_t* p, uint64_t avail, uint64_t at, bool hard_end, Unit* unit);
  bool apply(uint8_t* p, const Unit& unit, uint64_t at, bool* keep);
  bool apply_record(uint8_t* p, uint64_t at, bool* keep);
  bool apply_utf8(uint8_t* p, uint32_t length, uint64_t at, bool* keep);
  bool apply_stack_trace(uint8_t* p, uint32_t length, uint64_t at, bool* keep);
  void patch_sub_record(uint8_t* p);
  void patch_class_dump(uint8_t* p);
  uint32_t next_serial(uint32_t& counter);
  uint32_t output_serial(FlatMap<uint32_t, Serial>& map, uint32_t& counter, uint32_t serial);
  uint32_t trace_reference(uint32_t serial);
  uint64_t frame_id(uint64_t frame);
  void patch_name(uint8_t* at);
  // Stores a patched field; marks the unit being applied as changed when the value differs.
  void set32(uint8_t* p, uint32_t value);
  void set64(uint8_t* p, uint64_t value);
  // File mode: writes [from, to), which holds patched bytes, from memory, after the run before it.
  void write_patched(const uint8_t* from, const uint8_t* to);
  // File mode: hands the pending file range to the output (before anything written from memory).
  void emit_range();

  VmDumpNumbering& numbering_;
  OutputStream& out_;
  State state_ = State::kFileHeader;
  std::string error_;
  VmDumpStats stats_;
  const uint8_t* block_ = nullptr;  // the current feed's bytes
  uint64_t offset_ = 0;             // of block_[0] in the JDK's stream
  const uint8_t* run_start_ = nullptr;  // pending output: [run_start_, current position)
  const uint8_t* prefetched_until_ = nullptr;  // UTF8 records before it had their name slots prefetched
  uint64_t segment_left_ = 0;  // bytes of the current HEAP DUMP SEGMENT not yet consumed
  uint64_t body_left_ = 0;     // values of the current sub-record not yet passed over
  std::vector<uint8_t> carry_;  // a unit split across feeds: its first bytes
  uint64_t carry_offset_ = 0;
  std::vector<uint8_t> scratch_;  // feed's copy of the caller's bytes
  // feed_file: the block is a window of this file at this offset; runs go out as file ranges.
  bool file_mode_ = false;
  int source_fd_ = -1;
  uint64_t source_offset_ = 0;
  bool dirty_ = false;  // a set32/set64 changed the unit being applied (file mode reads it)
  uint64_t source_error_at_ = 0;  // 1 + the side file offset that could not be read, 0 if none
  uint64_t range_offset_ = 0;     // the file range not yet handed to the output
  uint64_t range_size_ = 0;
  bool range_open_ = false;       // a run that starts where the range ends joins it
  std::vector<uint8_t> file_chunk_;  // feed_file's buffer

  FlatMap<uint32_t, Serial> class_serials_;   // JDK serial -> output serial, this dump
  FlatMap<uint64_t, uint32_t> class_ids_;     // class object ID -> output serial, this dump
  FlatMap<uint64_t, bool> dumped_classes_;    // class object IDs of this dump's CLASS DUMPs
  uint64_t any_dumped_class_ = 0;             // the first of them (0: none yet)
  FlatMap<uint32_t, Serial> thread_serials_;
  FlatMap<uint32_t, Serial> trace_serials_;
  FlatMap<uint64_t, Frame> frames_;           // JDK frame ID -> output frame ID
  FlatMap<uint64_t, uint64_t> renames_;       // this dump's symbol IDs that got a fresh ID
  std::vector<uint64_t> names_added_;         // symbol IDs this dump added to numbering_.name_hashes_
  std::vector<uint64_t> renames_added_;       // keys this dump added to numbering_.renamed_
  uint32_t last_trace_in_ = 0;  // one-entry cache of trace_reference: objects name one trace
  uint32_t last_trace_out_ = 0;
  bool defined_dummy_ = false;  // this dump wrote the output's dummy trace (abandon() undoes it)
  bool exhausted_ = false;      // a serial counter reached the end of the u4 range
  bool abandoned_ = false;
};

}  // namespace fasthprof
