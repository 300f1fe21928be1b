// The SITES section of heap=sites (docs/compatibility.md §2.9): the TRACE records of every trace
// not yet in the file first, as the original wrote them, then text `SITES BEGIN (ordered by live
// bytes) <date>` ... `SITES END`, or binary ALLOC SITES plus HEAP SUMMARY.
//
// Threads: called with the writer's lock held.
#pragma once

#include <ctime>
#include <span>

#include "sections/site_table.h"

namespace fasthprof {

class ProfileWriter;

// rows and totals as SiteTable::report_rows() gives them (cut at cutoff, totals over every site);
// cutoff and flags (the ALLOC SITES record's) go into the binary record, `when` is the text section's date. Allocates as the writer
// does.
void write_sites_section(ProfileWriter& writer, std::span<const SiteRow> rows, const SiteTotals& totals,
                         double cutoff, uint16_t flags, std::time_t when);

}  // namespace fasthprof
