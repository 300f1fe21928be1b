#include "sections/site_table.h"

#include <algorithm>
#include <cmath>

#include "base/hprof_format.h"

namespace fasthprof {

double sample_weight(uint64_t size, uint64_t interval) {
  if (interval == 0) return 1.0;
  if (size == 0) size = 1;
  double probability = -std::expm1(-static_cast<double>(size) / static_cast<double>(interval));
  return probability > 0 ? 1.0 / probability : 1.0;
}

uint64_t SampledTally::reported_objects(uint64_t interval) const {
  return interval == 0 ? objects : static_cast<uint64_t>(std::llround(weighted_objects));
}

uint64_t SampledTally::reported_bytes(uint64_t interval) const {
  return interval == 0 ? bytes : static_cast<uint64_t>(std::llround(weighted_bytes));
}

uint8_t array_kind_of(std::string_view signature) {
  if (signature.size() < 2 || signature[0] != '[') return 0;
  return static_cast<uint8_t>(basic_type_of_signature(signature[1]));
}

void SiteTable::bind_slot(uint32_t slot, const SiteIdentity& site) {
  uint64_t key = (uint64_t{site.class_serial} << 32) | site.trace_serial;
  auto [found, inserted] = row_by_key_.try_emplace(key, static_cast<uint32_t>(rows_.size()));
  uint32_t row = *found;
  if (inserted) rows_.push_back(Row{site});
  if (slot >= row_of_slot_.size()) row_of_slot_.resize(std::max<size_t>(slot + 1, row_of_slot_.size() * 2), 0);
  row_of_slot_[slot] = row + 1;
}

SiteTable::Row& SiteTable::row_of(const SiteIdentity& site) {
  uint64_t key = (uint64_t{site.class_serial} << 32) | site.trace_serial;
  auto [found, inserted] = row_by_key_.try_emplace(key, static_cast<uint32_t>(rows_.size()));
  if (inserted) rows_.push_back(Row{site});
  return rows_[*found];
}

bool SiteTable::has_row(const SiteIdentity& site) const {
  return row_by_key_.find((uint64_t{site.class_serial} << 32) | site.trace_serial) != nullptr;
}

void SiteTable::add_counted(const SiteIdentity& site, uint64_t objects, uint64_t bytes) {
  Row& row = row_of(site);
  row.allocated.objects += objects;
  row.allocated.bytes += bytes;
}

void SiteTable::add_live_counted(const SiteIdentity& site, uint64_t objects, uint64_t bytes) {
  Row& row = row_of(site);
  row.live_objects += objects;
  row.live_bytes += bytes;
}

void SiteTable::reset_allocated() {
  for (Row& row : rows_) row.allocated = SampledTally{};
  unattributed_ = 0;
}

void SiteTable::clear_live() {
  for (Row& row : rows_) {
    row.live_bytes = 0;
    row.live_objects = 0;
  }
}

void SiteTable::live_from_allocated() {
  for (Row& row : rows_) {
    row.live_objects = row.allocated.reported_objects(sample_interval_);
    row.live_bytes = row.allocated.reported_bytes(sample_interval_);
  }
}

bool SiteTable::add_live(uint32_t slot, uint64_t objects, uint64_t bytes) {
  if (!knows_slot(slot)) return false;
  Row& row = rows_[row_of_slot_[slot] - 1];
  row.live_objects += objects;
  row.live_bytes += bytes;
  return true;
}

SiteCounts SiteTable::counts_of(const Row& row) const {
  uint64_t alloc_bytes = row.allocated.reported_bytes(sample_interval_);
  uint64_t alloc_objects = row.allocated.reported_objects(sample_interval_);
  // Live objects are some of the allocated ones, but with sample= both are rounded estimates: the
  // live count of a row sums the rounded counts of its slots, in the heap walk's order, the
  // allocated count rounds the row's own sum, so the live one can come out one above when every
  // object is alive. Never report more live than allocated then.
  if (sample_interval_ == 0) return {row.live_bytes, row.live_objects, alloc_bytes, alloc_objects};
  return {std::min(row.live_bytes, alloc_bytes), std::min(row.live_objects, alloc_objects), alloc_bytes,
          alloc_objects};
}

namespace {

bool same_counts(const SiteCounts& a, const SiteCounts& b) {
  return a.live_bytes == b.live_bytes && a.live_objects == b.live_objects && a.alloc_bytes == b.alloc_bytes &&
         a.alloc_objects == b.alloc_objects;
}

}  // namespace

std::vector<SiteRow> SiteTable::report_rows(double cutoff, SiteTotals* totals, SiteSelection selection) const {
  std::vector<SiteRow> rows;
  rows.reserve(rows_.size());
  SiteTotals sum;
  for (const Row& row : rows_) {
    SiteRow out{row.site, counts_of(row)};
    sum.live_bytes += out.counts.live_bytes;
    sum.live_objects += out.counts.live_objects;
    sum.alloc_bytes += out.counts.alloc_bytes;
    sum.alloc_objects += out.counts.alloc_objects;
    if (selection.changed_only && row.ever_reported && same_counts(row.reported, out.counts)) continue;
    rows.push_back(out);
  }
  sum.sites = rows_.size();
  // The primary key is live or allocated bytes; the other one, then trace and class serial, break
  // ties so that output is stable.
  bool by_alloc = selection.by_allocation;
  std::sort(rows.begin(), rows.end(), [by_alloc](const SiteRow& a, const SiteRow& b) {
    uint64_t a_first = by_alloc ? a.counts.alloc_bytes : a.counts.live_bytes;
    uint64_t b_first = by_alloc ? b.counts.alloc_bytes : b.counts.live_bytes;
    uint64_t a_second = by_alloc ? a.counts.live_bytes : a.counts.alloc_bytes;
    uint64_t b_second = by_alloc ? b.counts.live_bytes : b.counts.alloc_bytes;
    if (a_first != b_first) return a_first > b_first;
    if (a_second != b_second) return a_second > b_second;
    if (a.site.trace_serial != b.site.trace_serial) return a.site.trace_serial < b.site.trace_serial;
    return a.site.class_serial < b.site.class_serial;
  });
  // The original cut sites sorted by allocation at their live share, which ends the list at the
  // first site whose objects are all dead, however much it allocated: the cut follows the order.
  uint64_t whole = by_alloc ? sum.alloc_bytes : sum.live_bytes;
  size_t keep = 0;
  for (; keep < rows.size(); ++keep) {
    uint64_t part = by_alloc ? rows[keep].counts.alloc_bytes : rows[keep].counts.live_bytes;
    double share = whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
    if (share < cutoff) break;
  }
  rows.resize(keep);
  if (totals != nullptr) *totals = sum;
  return rows;
}

void SiteTable::mark_reported() {
  for (Row& row : rows_) {
    row.reported = counts_of(row);
    row.ever_reported = true;
  }
}

}  // namespace fasthprof
