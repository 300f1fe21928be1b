// The writer thread's allocation sites: (class serial, trace serial) -> 64-bit live and allocated
// bytes and objects, fed by the events the pipeline drains, plus the sorted, cut-off rows of a SITES
// report (docs/compatibility.md §2.9: by live bytes, descending; stop at the first site below cutoff).
//
//   row_of_slot_ [slot] -> row index + 1 (0: slot not bound yet)   slots come from SiteSlotTable
//   rows_        [row]  -> { class, trace, array kind, counters }   several slots may share a row
//   row_by_key_  (class serial, trace serial) -> row index
//
// Several slots share one row when the callback keyed one class two ways (before and after the
// agent's class registry tagged it) or when traces differ only in frames cut by depth.
//
// sample=<bytes>: each sampled object stands for an estimated 1 / (1 - exp(-size / interval))
// objects (the inverse of its probability of being sampled when the JVM samples at exponentially
// distributed byte intervals with that mean); bytes = that weight x size. Counters are then
// estimates, accumulated in floating point and rounded when read (SampledTally, for the allocated
// counts here and for the live counts of a heap walk, allocation_recorder.h).
//
// Threads: not thread-safe; the agent's writer thread alone calls it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/flat_map.h"
#include "base/memory.h"
#include "records/report_rows.h"
#include "sections/allocation_event.h"

namespace fasthprof {

// The estimated number of objects one sampled object of this size stands for; 1 when interval is
// 0 (exact tracking).
double sample_weight(uint64_t size, uint64_t interval);

// The ALLOC SITES array kind of a class (JVM signature): 0 for a non-array, 2 for an array of
// references (arrays of arrays included), the element's basic type (4..11) for a primitive array.
uint8_t array_kind_of(std::string_view signature);

// Objects and bytes counted one object at a time: exactly, and with sample= also as estimates.
// The one place where sampled counts are weighted and rounded.
struct SampledTally {
  uint64_t objects = 0;
  uint64_t bytes = 0;
  double weighted_objects = 0;  // sample mode only
  double weighted_bytes = 0;

  // One object of this size; interval 0 for exact tracking, else the sample= interval.
  void add(uint64_t size, uint64_t interval) {
    objects += 1;
    bytes += size;
    if (interval == 0) return;
    double weight = sample_weight(size, interval);
    weighted_objects += weight;
    weighted_bytes += weight * static_cast<double>(size);
  }

  // What a report prints: the exact counts when interval is 0, the rounded estimates otherwise.
  uint64_t reported_objects(uint64_t interval) const;
  uint64_t reported_bytes(uint64_t interval) const;
};

// What a SITES report lists (the flags of a net= ALLOC SITES command, docs/net.md).
struct SiteSelection {
  // Only the sites whose counts differ from those at the previous SITES output (a report's or a
  // command's, mark_reported()), or that appeared since: what the original called changed sites
  // (every allocation and every free marked a site changed; here the live counts are the heap
  // walk's, so a site whose objects died since counts as changed too).
  bool changed_only = false;
  // Ordered by allocated bytes, and cut at the first site whose share of the allocated bytes is
  // below the cutoff, rather than by live bytes and their share.
  bool by_allocation = false;
};

class SiteTable {
 public:
  // sample_interval: 0 for exact tracking, else the sample= interval in bytes.
  explicit SiteTable(uint64_t sample_interval = 0) : sample_interval_(sample_interval) {}

  bool knows_slot(uint32_t slot) const { return slot < row_of_slot_.size() && row_of_slot_[slot] != 0; }

  // Binds a slot to its site (creating the row on first sight of the site). Allocates.
  void bind_slot(uint32_t slot, const SiteIdentity& site);

  // Counts the events. For a slot not bound yet, resolve(slot, SiteIdentity*) is called once; when
  // it returns false the event is counted as unattributed. Allocates only for new sites.
  template <typename Resolve>
  void apply(std::span<const AllocationEvent> events, Resolve&& resolve) {
    for (const AllocationEvent& event : events) {
      if (!knows_slot(event.slot)) {
        SiteIdentity site;
        if (!resolve(event.slot, &site)) {
          ++unattributed_;
          continue;
        }
        bind_slot(event.slot, site);
      }
      rows_[row_of_slot_[event.slot] - 1].allocated.add(event.size, sample_interval_);
    }
  }

  // Counts taken elsewhere than one event per object (allocations counted by injected code,
  // exact): `objects` objects of `bytes` bytes in all at the site, created on first sight.
  void add_counted(const SiteIdentity& site, uint64_t objects, uint64_t bytes);
  // Whether the site has a row already (its counts go there whatever the table's bound).
  bool has_row(const SiteIdentity& site) const;
  // Live counts for one report: clear, add the walk's per-slot tallies (bound slots only; others
  // are ignored and returned false), read rows.
  void clear_live();
  // Every site's allocated tallies and the unattributed count back to zero; the sites stay
  // (their slots are still bound to them).
  void reset_allocated();
  bool add_live(uint32_t slot, uint64_t objects, uint64_t bytes);
  // Live objects found by what injected code wrote into their headers (after clear_live): added to
  // the site's live counts, the site created on first sight as add_counted does.
  void add_live_counted(const SiteIdentity& site, uint64_t objects, uint64_t bytes);
  // live=n: no object is followed after its allocation, so each site's live counts are set to its
  // allocated ones (as reported: rounded estimates with sample=).
  void live_from_allocated();

  // The rows of a report: sorted by live bytes (descending; ties by allocated bytes, then trace and
  // class serial so that output is stable), cut at the first row whose share of the total live
  // bytes is below cutoff (with no live bytes at all, every share is 0); selection may keep only
  // the changed sites and order and cut by allocated bytes instead. *totals gets the totals over
  // every site, printed or not, changed or not. Allocates the returned vector.
  std::vector<SiteRow> report_rows(double cutoff, SiteTotals* totals, SiteSelection selection = {}) const;

  // Every site's counts now become those a later changed_only report compares with: called after
  // each SITES output, whatever it listed (the original did the same after each one).
  void mark_reported();

  size_t site_count() const { return rows_.size(); }
  uint64_t unattributed() const { return unattributed_; }
  uint64_t sample_interval() const { return sample_interval_; }

 private:
  struct Row {
    SiteIdentity site;
    uint64_t live_bytes = 0;
    uint64_t live_objects = 0;
    SampledTally allocated;
    SiteCounts reported;        // the counts at the last mark_reported()
    bool ever_reported = false;  // false: new since then, so changed
  };
  SiteCounts counts_of(const Row& row) const;
  // The row of (class serial, trace serial), made on first sight.
  Row& row_of(const SiteIdentity& site);

  uint64_t sample_interval_;
  std::vector<uint32_t, memory::Allocator<uint32_t>> row_of_slot_;
  std::vector<Row, memory::Allocator<Row>> rows_;
  FlatMap<uint64_t, uint32_t> row_by_key_;  // (class serial << 32 | trace serial) -> row
  uint64_t unattributed_ = 0;
};

}  // namespace fasthprof
