// The counting call the class rewriter (class_rewriter.cpp) puts before a multianewarray of two
// dimensions or more. The tracker needs every count, not only the outermost: the arrays made at
// each level are the product of the counts above it, and a negative count anywhere decides what
// is made at all. No stack instruction reaches below the third value, so the counts go through
// locals the method never had (max_locals is raised by the dimensions):
//   istore L+d-1 ... istore L                      the counts, last (innermost) on top
//   sipush d; newarray int                         an int[] of the counts, not counted itself
//   (dup; sipush k; iload L+k; iastore) for each k
//   ldc site; invokestatic <tracker>.<alloc_multi>([II)V
//   iload L ... iload L+d-1                        the counts back as they were
// Nothing branches into the group before its instruction, and the fresh locals are written before
// they are read within it, so no StackMapTable frame needs to know them (frames name fewer locals,
// the rest are top). Internal to the rewriter.
#pragma once

#include <cstdint>

#include "classfile/bytecode.h"
#include "classfile/class_file.h"

namespace fasthprof::class_file {

// At most this much more stack than at the instruction: the counts are off the stack when the
// int[] is filled (array, array, index, value), and d >= 2 of them were there.
inline constexpr uint32_t kMultiStackGrowth = 2;

inline uint32_t local_access_size(uint32_t local) { return local < 256 ? 2 : 4; }  // wide from 256 on

// Bytes multi_allocation_call writes.
inline uint32_t multi_allocation_size(uint8_t dimensions, uint32_t first_local, uint16_t site_constant) {
  uint32_t size = 3 + 2 + (site_constant < 256 ? 2 : 3) + 3;  // sipush d; newarray; ldc; invokestatic
  for (uint32_t k = 0; k < dimensions; ++k) size += 3 * local_access_size(first_local + k) + 1 + 3 + 1;
  return size;
}

inline void local_access(Writer& w, uint8_t op, uint32_t local) {
  if (local < 256) {
    w.u1(op);
    w.u1(local);
  } else {
    w.u1(kWide);
    w.u1(op);
    w.u2(local);
  }
}

inline void multi_allocation_call(Writer& w, uint8_t dimensions, uint32_t first_local, uint16_t site_constant,
                                  uint16_t method_ref) {
  constexpr uint8_t kIload = 0x15, kIstore = 0x36, kIastore = 0x4f, kTInt = 10;
  for (uint32_t k = dimensions; k-- > 0;) local_access(w, kIstore, first_local + k);
  w.u1(kSipush);
  w.u2(dimensions);
  w.u1(kNewarray);
  w.u1(kTInt);
  for (uint32_t k = 0; k < dimensions; ++k) {
    w.u1(kDup);
    w.u1(kSipush);
    w.u2(k);
    local_access(w, kIload, first_local + k);
    w.u1(kIastore);
  }
  if (site_constant < 256) {
    w.u1(kLdc);
    w.u1(site_constant);
  } else {
    w.u1(kLdcW);
    w.u2(site_constant);
  }
  w.u1(kInvokestatic);
  w.u2(method_ref);
  for (uint32_t k = 0; k < dimensions; ++k) local_access(w, kIload, first_local + k);
}

}  // namespace fasthprof::class_file
