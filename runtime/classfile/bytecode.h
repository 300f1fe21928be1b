// Opcodes and instruction lengths for the class rewriter (class_rewriter.cpp): the instructions it
// moves, re-encodes or injects (JVMS chapter 6). Internal to the rewriter.
#pragma once

#include <cstdint>

#include "base/byte_decoder.h"

namespace fasthprof::class_file {

// Opcodes the rewriter looks at.
enum Op : uint8_t {
  kBipush = 0x10, kSipush = 0x11, kLdc = 0x12, kLdcW = 0x13, kIinc = 0x84, kIfeq = 0x99, kIfAcmpne = 0xa6, kGoto = 0xa7, kJsr = 0xa8,
  kIconstM1 = 0x02, kPop = 0x57, kPop2 = 0x58, kDup = 0x59, kDupX2 = 0x5b, kDup2 = 0x5c, kDup2X1 = 0x5d,
  kNew = 0xbb, kNewarray = 0xbc, kAnewarray = 0xbd, kMultianewarray = 0xc5, kRet = 0xa9, kTableswitch = 0xaa, kLookupswitch = 0xab, kIreturn = 0xac, kReturn = 0xb1,
  kInvokevirtual = 0xb6, kInvokespecial = 0xb7, kInvokestatic = 0xb8, kWide = 0xc4, kIfnull = 0xc6, kIfnonnull = 0xc7, kGotoW = 0xc8, kJsrW = 0xc9,
};

// Length of the instructions of fixed length; 0 for the variable ones (switches, wide) and for
// the opcodes that may not appear in a class file.
inline constexpr uint8_t kFixedLength[256] = {
    // 0x00-0x0f: nop .. dconst_1
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    // 0x10 bipush, sipush, ldc, ldc_w, ldc2_w, iload..aload, *load_<n> from 0x1a
    2, 3, 2, 3, 3, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 0x20
    1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1,  // 0x30: *aload, istore..astore (0x36-0x3a)
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 0x40
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 0x50
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 0x60
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 0x70
    1, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 0x80: iinc
    1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3,  // 0x90: if* from 0x99
    3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 0, 0, 1, 1, 1, 1,  // 0xa0: .. jsr, ret, switches, returns
    1, 1, 3, 3, 3, 3, 3, 3, 3, 5, 5, 3, 2, 3, 1, 1,  // 0xb0: return, fields, invokes, new, ..
    3, 3, 1, 1, 0, 4, 3, 3, 5, 5, 0, 0, 0, 0, 0, 0,  // 0xc0: checkcast .. jsr_w
};

// invokevirtual, invokespecial, invokestatic, invokeinterface, invokedynamic.
inline bool is_invoke(uint8_t op) { return op >= 0xb6 && op <= 0xba; }
inline bool is_return(uint8_t op) { return op >= kIreturn && op <= kReturn; }
inline bool is_allocation(uint8_t op) { return (op >= kNew && op <= kAnewarray) || op == kMultianewarray; }
inline bool is_branch16(uint8_t op) { return (op >= kIfeq && op <= kJsr) || op == kIfnull || op == kIfnonnull; }
inline bool is_conditional(uint8_t op) { return is_branch16(op) && op != kGoto && op != kJsr; }
inline uint8_t inverted(uint8_t op) {
  if (op == kIfnull || op == kIfnonnull) return op ^ 1;
  return static_cast<uint8_t>(kIfeq + ((op - kIfeq) ^ 1));  // ifeq/ifne, iflt/ifge, ... pair up
}
inline uint32_t switch_padding(uint32_t at) { return (4 - (at + 1) % 4) % 4; }

inline int32_t get_s4(const uint8_t* p) { return static_cast<int32_t>(load_be32(p)); }

}  // namespace fasthprof::class_file
