// cpu=samples counts: one 64-bit hit counter per trace serial, and the CPU SAMPLES section built
// from them (docs/compatibility.md §2.10 and §3.6). Trace serials are dense from kFirstTraceSerial, so
// the counters are a plain array indexed by serial: counting a sample is one add, no hashing.
//
// A report sorts the traces by count (most first, equal counts by serial), keeps the rows down to
// the first one whose share falls below the cutoff, and restarts every count at zero, as the
// original's reset after each dump did. The total covers every trace, including those cut off.
//
// Threads: no locking inside. The agent's writer thread alone calls it.
#pragma once

#include <cstdint>
#include <ctime>
#include <vector>

#include "base/memory.h"
#include "records/report_rows.h"

namespace fasthprof {

class ProfileWriter;

class CpuSampleTable {
 public:
  // Counts hits samples for trace_serial. Serials below kFirstTraceSerial are ignored. Allocates
  // only when a serial beyond every earlier one arrives (the array grows geometrically; the trace
  // table's memory cap bounds the serials). Never fails.
  void add(uint32_t trace_serial, uint64_t hits = 1);

  // Samples counted since the last report. Never allocates.
  uint64_t total() const { return total_; }
  uint64_t count_of(uint32_t trace_serial) const;

  // The rows of a report at this cutoff (a fraction, 0.0001 by default), then every count back to
  // zero. Allocates the rows. Never fails.
  CpuSampleReport take_report(double cutoff);

 private:
  std::vector<uint64_t, memory::Allocator<uint64_t>> counts_;  // [serial - kFirstTraceSerial]
  uint64_t total_ = 0;
};

// Writes one CPU SAMPLES section for report through writer: the TRACE records of the printed rows
// (those not yet in the file) first, then text `CPU SAMPLES BEGIN (total = N) <date>` ... `CPU
// SAMPLES END`, or one binary CPU SAMPLES record. `when` is the text section's date. Allocates as
// the writer does. Called with the writer's lock held.
void write_cpu_samples_section(ProfileWriter& writer, const CpuSampleReport& report, std::time_t when);

}  // namespace fasthprof
