// The VM-free half of allocation tracking (heap=sites|all, sample=): what the JVMTI callback does
// once it has the class key, the frames and the size, what the writer does with the queued events,
// and the live count of a report. agent/allocation_tracker.* feeds it from JVMTI; the unit tests
// and the ThreadSanitizer stress test (tests/unit/allocation_pipeline_stress.cpp) drive the same
// code without a JVM.
//
//   callback thread:  record(): key -> SiteSlotTable slot -> set_tag(tag) -> push {slot, size}
//   writer (one thread: the agent's writer thread, which owns the profile):
//                     drain(): bulk dequeue -> SiteTable rows; a new slot -> resolve() -> trace
//                     serial published in the slot table for heap-walk lookups
//   report (the same thread): LiveCount over the tagged objects -> apply_live()
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/memory.h"
#include "queues/allocation_pipeline.h"
#include "sections/allocation_event.h"
#include "sections/site_slot_table.h"
#include "sections/site_table.h"

namespace fasthprof {

// One Java thread's recording state. Destroying it hands its producer back to the pipeline (its
// queued events still drain). Only its own thread.
struct RecorderThread {
  AllocationPipeline::ProducerPtr producer;
  SequenceBlock sequence;
};

// Live objects per slot, counted by a heap walk over tagged objects. Allocates once, when created;
// count() allocates nothing and takes no lock (heap-walk callbacks). One thread at a time.
class LiveCount {
 public:
  LiveCount(uint32_t slot_count, uint64_t sample_interval);

  // Counts one object whose tag is `tag`; any tag that is not an allocation tag of a slot up to
  // slot_count is ignored.
  void count(uint64_t tag, uint64_t size);

  using Tally = SampledTally;
  uint32_t slot_count() const { return slot_count_; }
  const Tally& tally(uint32_t slot) const { return tallies_[slot]; }

 private:
  uint32_t slot_count_;
  uint64_t sample_interval_;
  std::vector<Tally, memory::Allocator<Tally>> tallies_;  // index = slot
};

class AllocationRecorder {
 public:
  // Reserves the slot table and allocates the pipeline. sample_interval: 0 for exact tracking.
  AllocationRecorder(const SiteSlotTableOptions& slots, uint64_t sample_interval,
                     const AllocationPipelineOptions& pipeline = {});

  bool valid() const { return slots_.valid(); }

  // The callback's step for one allocation: claims (or finds) the slot of (class, thread, frames),
  // calls set_tag(tag) with the object's new allocation tag (before the event is queued, so that a
  // tag always names a slot whose event the writer will see), then queues {slot, size}. For a new
  // slot make_handle() is called once first (the class handle kept with the slot). Returns the slot,
  // or 0 when the table is full (nothing tagged, nothing queued). Allocates only a thread's first
  // time (its producer). Lock-free; only thread's own thread.
  template <typename MakeHandle, typename SetTag>
  uint32_t record(RecorderThread& thread, uint64_t class_key, uint64_t thread_key,
                  std::span<const SlotFrame> frames, uint64_t size, MakeHandle&& make_handle, SetTag&& set_tag) {
    if (!thread.producer) thread.producer = pipeline_.make_producer();
    uint64_t key = SiteSlotTable::key_of(class_key, thread_key, frames);
    SlotClaim claim = slots_.find_or_claim(key, class_key, thread_key, frames, make_handle);
    if (claim.slot == 0) return 0;
    set_tag(make_allocation_tag(claim.slot, thread.sequence.next(sequence_counter_)));
    pipeline_.push(*thread.producer, AllocationEvent{claim.slot, 0, size});
    return claim.slot;
  }

  // Counts every queued event into the site table; returns how many. A slot seen for the first time
  // is resolved by resolve(uint32_t slot, const SlotDescription&, SiteIdentity*) -> bool (the
  // class and trace serials); on true its trace serial is published for trace_serial_of_tag(), on
  // false its events count as unattributed. One caller at a time (with everything below but
  // trace_serial_of_tag).
  template <typename Resolve>
  size_t drain(Resolve&& resolve) {
    return pipeline_.drain([&](std::span<const AllocationEvent> batch) {
      sites_.apply(batch, [&](uint32_t slot, SiteIdentity* site) { return resolve_slot(slot, site, resolve); });
    });
  }

  // Empties the queues without counting: once tracking has failed, producers must still never wait
  // on a full queue. Same caller rule as drain().
  size_t discard() {
    return pipeline_.drain([](std::span<const AllocationEvent>) {});
  }

  // A live count sized for the slots claimed so far.
  LiveCount start_live_count() const { return LiveCount(slots_.claimed(), sites_.sample_interval()); }

  // Replaces the live counts of every site by the count's, resolving (as drain() does) the slots
  // whose objects the walk met before their events were drained. Call drain() first.
  template <typename Resolve>
  void apply_live(const LiveCount& live, Resolve&& resolve) {
    sites_.clear_live();
    for (uint32_t slot = 1; slot <= live.slot_count(); ++slot) {
      const LiveCount::Tally& tally = live.tally(slot);
      if (tally.objects == 0) continue;
      if (!sites_.knows_slot(slot)) {
        SiteIdentity site;
        if (!resolve_slot(slot, &site, resolve)) continue;
        sites_.bind_slot(slot, site);
      }
      add_live(slot, tally);
    }
  }

  // The trace serial of the site of an allocation tag (0 when not resolved yet, or not an
  // allocation tag). Lock-free, allocates nothing: heap-walk callbacks, any thread.
  uint32_t trace_serial_of_tag(uint64_t tag) const;

  const SiteTable& sites() const { return sites_; }
  // net= CONTROL "reset the site table": every site's allocated counts start from zero. Owner.
  void reset_allocated_counts() { sites_.reset_allocated(); }
  // Counts made by injected code (SiteTable::add_counted). A new site beyond the table's bound
  // (max_slots sites in all, as the event path's slots) is not counted: its objects are added to
  // dropped() as the event path's are, and false returned.
  bool add_counted(const SiteIdentity& site, uint64_t objects, uint64_t bytes) {
    if (!sites_.has_row(site) && sites_.site_count() >= slots_.max_slots()) {
      counted_dropped_ += objects;
      return false;
    }
    sites_.add_counted(site, objects, bytes);
    return true;
  }
  // Live objects counted by their headers' marks (SiteTable::add_live_counted), after apply_live();
  // a site the bound kept out (add_counted) stays out.
  void add_live_counted(const SiteIdentity& site, uint64_t objects, uint64_t bytes) {
    if (sites_.has_row(site)) sites_.add_live_counted(site, objects, bytes);
  }
  // Allocations not counted for the bound: the event path's, and the injected code's.
  uint64_t dropped() const { return slots_.dropped() + counted_dropped_; }
  // live=n: every site's live counts become its allocated ones (SiteTable::live_from_allocated).
  void live_from_allocated() { sites_.live_from_allocated(); }
  void mark_sites_reported() { sites_.mark_reported(); }
  const SiteSlotTable& slots() const { return slots_; }
  PipelineStats pipeline_stats() const { return pipeline_.stats(); }

 private:
  template <typename Resolve>
  bool resolve_slot(uint32_t slot, SiteIdentity* site, Resolve& resolve) {
    SlotDescription description;
    if (!slots_.describe(slot, &description) || !resolve(slot, description, site)) return false;
    slots_.set_trace_serial(slot, site->trace_serial);
    return true;
  }
  void add_live(uint32_t slot, const LiveCount::Tally& tally);

  SiteSlotTable slots_;
  AllocationPipeline pipeline_;
  SiteTable sites_;
  std::atomic<uint64_t> sequence_counter_{1};
  uint64_t counted_dropped_ = 0;  // the owner's (add_counted)
};

}  // namespace fasthprof
