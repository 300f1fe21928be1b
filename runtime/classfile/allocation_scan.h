// Whether a class already loaded needs the allocation calls the class rewriter (class_rewriter.h)
// injects, judged from what JVMTI gives of it (GetConstantPool, GetBytecodes) before it is
// retransformed: a retransformation parses, verifies and merges the whole class again, which the
// agent's start-up spent on every class loaded before it went live (JDK 25: 413 classes before a
// trivial main, 125 ms), though a third of them allocate nothing that can still run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "classfile/class_file.h"
#include "classfile/class_rewriter.h"

namespace fasthprof {

class AllocationScan {
 public:
  // The class's constant pool as JVMTI gives it: `count` (its entries + 1) and the entries' bytes,
  // read once for the methods' scans. A malformed pool makes every scan say yes.
  AllocationScan(uint16_t count, const uint8_t* entries, size_t size, const RewritePlan& plan);
  AllocationScan(const AllocationScan&) = delete;
  AllocationScan& operator=(const AllocationScan&) = delete;

  // Whether rewrite_class with `plan` (allocations, no entry or position calls) would inject a call
  // into this method's code: an allocation instruction, a call of Unsafe.allocateInstance, or with
  // plan.clones a call sure to run Object.clone. True when unsure (code it cannot walk).
  bool needs_calls(std::span<const uint8_t> code) const;

 private:
  std::vector<uint8_t> buffer_;  // count, then the entries: what the pool's offsets point into
  class_file::ConstantPool pool_;
  class_file::InvokeKinds kinds_{pool_};  // what the rewriter counts, judged as it judges
  bool pool_ok_ = false;
  bool clones_ = false;
};

}  // namespace fasthprof
