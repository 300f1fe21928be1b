// The tracker's class files (agent/instrument/tracker/java/lang/*.java: cpu=times' call tracker and
// heap=sites' allocation counter), compiled by javac at build time and embedded by
// agent/instrument/tracker/embed_tracker.py. Defined with the boot loader in this order.
#pragma once

#include <cstddef>

namespace fasthprof {

struct TrackerClass {
  const char* name;  // internal form, "java/lang/FasthprofTracker"
  const unsigned char* bytes;
  size_t size;
};

extern const TrackerClass kTrackerClasses[];
extern const size_t kTrackerClassCount;

}  // namespace fasthprof
