#include "queues/allocation_recorder.h"

namespace fasthprof {

LiveCount::LiveCount(uint32_t slot_count, uint64_t sample_interval)
    : slot_count_(slot_count), sample_interval_(sample_interval), tallies_(size_t{slot_count} + 1) {}

void LiveCount::count(uint64_t tag, uint64_t size) {
  uint32_t slot = allocation_tag_slot(tag);
  if (slot == 0 || slot > slot_count_) return;
  tallies_[slot].add(size, sample_interval_);
}

AllocationRecorder::AllocationRecorder(const SiteSlotTableOptions& slots, uint64_t sample_interval,
                                       const AllocationPipelineOptions& pipeline)
    : slots_(slots), pipeline_(pipeline), sites_(sample_interval) {}

uint32_t AllocationRecorder::trace_serial_of_tag(uint64_t tag) const {
  uint32_t slot = allocation_tag_slot(tag);
  return slot == 0 ? 0 : slots_.trace_serial(slot);
}

void AllocationRecorder::add_live(uint32_t slot, const LiveCount::Tally& tally) {
  uint64_t interval = sites_.sample_interval();
  sites_.add_live(slot, tally.reported_objects(interval), tally.reported_bytes(interval));
}

}  // namespace fasthprof
