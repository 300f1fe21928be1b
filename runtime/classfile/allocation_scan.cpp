#include "classfile/allocation_scan.h"

#include <string>

#include "classfile/bytecode.h"

namespace fasthprof {

using namespace class_file;

AllocationScan::AllocationScan(uint16_t count, const uint8_t* entries, size_t size, const RewritePlan& plan)
    : clones_(plan.clones) {
  buffer_.reserve(size + 2);
  buffer_.push_back(static_cast<uint8_t>(count >> 8));
  buffer_.push_back(static_cast<uint8_t>(count));
  if (entries != nullptr) buffer_.insert(buffer_.end(), entries, entries + size);
  std::string error;
  pool_ok_ = parse_constant_pool(buffer_.data(), buffer_.size(), pool_, &error);
}

bool AllocationScan::needs_calls(std::span<const uint8_t> code) const {
  if (!pool_ok_) return true;
  const uint8_t* p = code.data();
  const size_t n = code.size();
  size_t at = 0;
  while (at < n) {
    uint8_t op = p[at];
    if (is_allocation(op)) return true;
    size_t length = kFixedLength[op];
    if (op == kInvokevirtual || op == kInvokespecial) {
      if (at + 3 > n) return true;
      if (kinds_.counted(op, load_be16(p + at + 1), clones_)) return true;
    } else if (op == kTableswitch || op == kLookupswitch) {
      size_t base = at + 1 + switch_padding(static_cast<uint32_t>(at));
      if (base + 12 > n) return true;
      if (op == kTableswitch) {
        int64_t low = get_s4(p + base + 4), high = get_s4(p + base + 8);
        if (high < low) return true;
        length = base - at + 12 + static_cast<size_t>(high - low + 1) * 4;
      } else {
        int64_t pairs = get_s4(p + base + 4);
        if (pairs < 0) return true;
        length = base - at + 8 + static_cast<size_t>(pairs) * 8;
      }
    } else if (op == kWide) {
      if (at + 1 >= n) return true;
      length = p[at + 1] == kIinc ? 6 : 4;
    }
    if (length == 0) return true;  // an opcode no class file may hold: unsure
    at += length;
  }
  return at != n;  // an instruction cut by the end: unsure
}

}  // namespace fasthprof
