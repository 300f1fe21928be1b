#include "sections/sites_section.h"

#include "records/profile_writer.h"

namespace fasthprof {

void write_sites_section(ProfileWriter& writer, std::span<const SiteRow> rows, const SiteTotals& totals,
                         double cutoff, uint16_t flags, std::time_t when) {
  writer.write_unwritten_traces();
  writer.output().sites(rows, totals, cutoff, flags, when);
}

}  // namespace fasthprof
