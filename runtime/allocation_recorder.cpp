#include "allocation_recorder.h"

#include <cmath>

namespace fasthprof {

LiveCount::LiveCount(uint32_t slot_count, uint64_t sample_interval)
    : slot_count_(slot_count), sample_interval_(sample_interval), tallies_(size_t{slot_count} + 1) {}

void LiveCount::count(uint64_t tag, uint64_t size) {
  uint32_t slot = allocation_tag_slot(tag);
  if (slot == 0 || slot > slot_count_) return;
  Tally& tally = tallies_[slot];
  tally.objects += 1;
  tally.bytes += size;
  if (sample_interval_ != 0) {
    double weight = sample_weight(size, sample_interval_);
    tally.weighted_objects += weight;
    tally.weighted_bytes += weight * static_cast<double>(size);
  }
}

AllocationRecorder::AllocationRecorder(const SiteSlotTableOptions& slots, uint64_t sample_interval,
                                       const AllocationPipelineOptions& pipeline)
    : slots_(slots), pipeline_(pipeline), sites_(sample_interval) {}

uint32_t AllocationRecorder::trace_serial_of_tag(uint64_t tag) const {
  uint32_t slot = allocation_tag_slot(tag);
  return slot == 0 ? 0 : slots_.trace_serial(slot);
}

void AllocationRecorder::add_live(uint32_t slot, const LiveCount::Tally& tally) {
  if (sites_.sample_interval() == 0) {
    sites_.add_live(slot, tally.objects, tally.bytes);
  } else {
    sites_.add_live(slot, static_cast<uint64_t>(std::llround(tally.weighted_objects)),
                    static_cast<uint64_t>(std::llround(tally.weighted_bytes)));
  }
}

}  // namespace fasthprof
