// Interned stack traces: (thread serial or 0, frame IDs top first) -> trace serial, from
// kFirstTraceSerial. Layout, after async-profiler's call-trace storage:
//
//   slots_ (open addressing, linear probing, power-of-two size, load <= 1/2)
//     [ hash | body* ] [ 0 | null ] [ hash | body* ] ...
//                 |                          |
//   arena_ (bump allocated, never moves)     v
//     [ serial | thread | n | written | frame 0 .. frame n-1 ] [ ... ]
//                 ^
//   by_serial_ [serial - kFirstTraceSerial] -> body
//
// Growing the slot array rehashes with the stored hashes and never touches a body, so serials and
// body pointers stay stable. A memory cap bounds arena + slots + serial index; once a new trace does
// not fit, that trace and every later new one map to one synthetic, empty "overflow" trace and are
// counted as dropped (traces already interned keep resolving).
//
// Threads: no locking inside. Only the writer thread may call any member.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "base/bump_arena.h"
#include "base/hprof_format.h"

namespace fasthprof {

// Hash of a trace key. Tests inject degenerate functions to force collisions.
using TraceHashFn = uint64_t (*)(uint32_t thread_serial, const uint64_t* frames, size_t num_frames);

// The default hash: XXH3-64 over the frame IDs, seeded with the thread serial.
uint64_t trace_hash(uint32_t thread_serial, const uint64_t* frames, size_t num_frames);

struct TraceTableOptions {
  size_t memory_limit = size_t{256} << 20;  // bytes: arena + slots + serial index
  size_t initial_slots = 4096;              // rounded up to a power of two, at least 16
  size_t arena_chunk_size = 256 * 1024;
  TraceHashFn hash = nullptr;  // nullptr: trace_hash
};

struct TraceRef {
  uint32_t serial = 0;
  bool is_new = false;  // created by this call (never for the overflow trace)
};

struct TraceView {
  uint32_t serial = 0;
  uint32_t thread_serial = 0;
  std::span<const uint64_t> frames;  // top frame first; valid for the table's lifetime
  bool written = false;              // TRACE record already written to this file
  bool overflow = false;             // the synthetic trace that stands for dropped ones
};

class TraceTable {
 public:
  // Creates the table and interns the empty trace of thread 0, which gets kFirstTraceSerial
  // (300000), the "unknown" trace. Allocates the initial slots and serial index; the empty trace
  // is created even when options.memory_limit is smaller than that.
  explicit TraceTable(const TraceTableOptions& options = {});
  ~TraceTable();
  TraceTable(const TraceTable&) = delete;
  TraceTable& operator=(const TraceTable&) = delete;

  // Returns the serial of (thread_serial, frames), creating it with the next serial when new.
  // A hit allocates nothing. A miss may take arena space and grow the slots or the serial index;
  // when that would pass the memory cap (or the allocator fails) it returns overflow_serial() instead,
  // counts one dropped trace, and keeps doing so for every later new trace.
  TraceRef intern(uint32_t thread_serial, std::span<const uint64_t> frames);

  // The trace with this serial, or nothing. Never allocates.
  std::optional<TraceView> find(uint32_t serial) const;

  // Claims the TRACE record of serial for the current file: returns true the first time per file
  // (the caller writes it now, after its FRAMEs), false afterwards or for an unknown serial.
  bool claim(uint32_t serial);

  // Claims every trace not yet written to this file, in serial order (creation order), calling
  // fn(const TraceView&) for each. Never allocates.
  template <typename Fn>
  void claim_unwritten(Fn&& fn) {
    for (size_t i = unwritten_from_; i < serial_count_; ++i) {
      Body* body = by_serial_[i];
      if (body->written) continue;
      body->written = 1;
      fn(view(body));
    }
    unwritten_from_ = serial_count_;
  }

  // Starts a new output file: every trace needs its TRACE record again.
  void reset_written();

  uint32_t empty_trace_serial() const { return kFirstTraceSerial; }
  uint32_t overflow_serial() const { return overflow_serial_; }  // 0 until the cap is first hit
  uint64_t dropped_traces() const { return dropped_; }
  size_t size() const { return serial_count_; }  // serials handed out, overflow trace included
  size_t memory_used() const;                   // bytes counted against the cap
  size_t slot_count() const { return slot_count_; }

 private:
  struct Body {
    uint32_t serial;
    uint32_t thread_serial;
    uint32_t num_frames;
    uint32_t written;
    const uint64_t* frames() const { return reinterpret_cast<const uint64_t*>(this + 1); }
    uint64_t* frames() { return reinterpret_cast<uint64_t*>(this + 1); }
  };
  static_assert(sizeof(Body) % alignof(uint64_t) == 0);
  struct Slot {
    uint64_t hash;
    Body* body;  // nullptr = empty
  };

  uint64_t hash_of(uint32_t thread_serial, std::span<const uint64_t> frames) const;
  TraceRef insert(size_t slot, uint64_t hash, uint32_t thread_serial, std::span<const uint64_t> frames,
                  bool enforce_cap);
  TraceRef overflow();
  static Slot* allocate_slots(size_t count);
  bool grow_slots();
  bool grow_serial_index();
  TraceView view(const Body* body) const;

  size_t memory_limit_;
  TraceHashFn hash_fn_;
  BumpArena arena_;
  Slot* slots_ = nullptr;
  size_t slot_count_ = 0;
  size_t used_slots_ = 0;
  Body** by_serial_ = nullptr;
  size_t serial_count_ = 0;
  size_t serial_capacity_ = 0;
  size_t unwritten_from_ = 0;  // every serial index below it is written
  bool full_ = false;
  uint32_t overflow_serial_ = 0;
  uint64_t dropped_ = 0;
  Body overflow_body_ = {};
};

}  // namespace fasthprof
