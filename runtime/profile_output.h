// The report seam: what the agent tells the writers, in profiling terms, without JVM types.
// ProfileOutput owns the registries (names, threads, traces) and the record writer of the chosen
// format, and writes through an OutputStream (the sink). The agent never encodes bytes itself.
//
// Threads: every call must be serialized by the caller (the agent holds one lock around them, or
// calls them from its writer thread only).
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <string_view>

#include "options.h"
#include "output_stream.h"

namespace fasthprof {

struct ThreadIdentity {
  uint32_t serial = 0;     // from 200001; 200000 is the "unknown thread"
  uint64_t object_id = 0;  // the ID of the java.lang.Thread object (the agent tags it with this)
};

struct ThreadDescription {
  std::string_view name;
  std::string_view group;
  std::string_view parent_group;  // empty: no parent group
};

class ProfileOutput {
 public:
  virtual ~ProfileOutput() = default;

  // Creates the writer for options.format over out. Allocates. Never fails.
  static std::unique_ptr<ProfileOutput> create(const Options& options, OutputStream& out);

  // File header: text `JAVA PROFILE 1.0.1, created <date>` plus the explanation of the record
  // kinds; binary `JAVA PROFILE 1.0.2` plus CONTROL SETTINGS and the empty trace 300000.
  // wall_millis is the header time stamp; record times count from it.
  virtual void write_header(std::time_t now, uint64_t wall_millis) = 0;

  // A Java thread seen for the first time: assigns its serial and object ID and writes
  // THREAD START (text) or the UTF8 names plus START THREAD (binary).
  virtual ThreadIdentity thread_started(const ThreadDescription& thread) = 0;

  // THREAD END / END THREAD for a serial from thread_started(); unknown serials are ignored.
  virtual void thread_ended(uint32_t serial) = 0;

  // Pushes what is buffered towards the stream.
  virtual void flush() = 0;
};

}  // namespace fasthprof
