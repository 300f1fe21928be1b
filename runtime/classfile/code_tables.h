// The debug tables of a Code attribute written again for the class rewriter (class_rewriter.cpp):
// LineNumberTable, LocalVariableTable and LocalVariableTypeTable, and the type annotations on
// instructions and local variables, each offset moved to where its instruction went. `Offsets` is
// the rewriter's layout of one method: map_debug_start(at) (a range's start or a line's: the group
// of the instruction it is in), map_debug_end(at) (a range's end: the group of the first
// instruction at or after it), map_instruction(at) (the instruction itself where `at` is one, past
// its injected prefix) and code_length() (the original's). Internal to the rewriter.
#pragma once

#include <cstdint>

#include "classfile/class_file.h"

namespace fasthprof::class_file {

template <class Offsets>
bool emit_line_numbers(Reader in, Writer& w, const Offsets& offsets) {
  uint16_t count = in.u2();
  w.u2(count);
  for (uint32_t i = 0; i < count; ++i) {
    uint16_t at = in.u2();
    uint16_t line = in.u2();
    if (in.failed() || at >= offsets.code_length()) return false;
    w.u2(offsets.map_debug_start(at));
    w.u2(line);
  }
  return in.at_end();
}

template <class Offsets>
bool emit_range(Reader& in, Writer& w, const Offsets& offsets) {
  uint16_t start = in.u2();
  uint16_t length = in.u2();
  if (in.failed() || uint32_t{start} + length > offsets.code_length()) return false;
  uint32_t new_start = offsets.map_debug_start(start);
  w.u2(new_start);
  w.u2(offsets.map_debug_end(start + length) - new_start);
  return true;
}

template <class Offsets>
bool emit_local_variables(Reader in, Writer& w, const Offsets& offsets) {
  uint16_t count = in.u2();
  w.u2(count);
  for (uint32_t i = 0; i < count; ++i) {
    if (!emit_range(in, w, offsets)) return false;
    const uint8_t* rest = in.bytes(6);  // name, descriptor or signature, index
    if (rest == nullptr) return false;
    w.bytes(rest, 6);
  }
  return in.at_end();
}

// type_annotation (JVMS 4.7.20): the targets of a Code attribute carry offsets.
template <class Offsets>
bool emit_type_annotations(Reader in, Writer& w, const Offsets& offsets) {
  uint16_t count = in.u2();
  w.u2(count);
  for (uint32_t i = 0; i < count; ++i) {
    uint8_t target = in.u1();
    w.u1(target);
    switch (target) {
      case 0x00: case 0x01: case 0x16: w.u1(in.u1()); break;
      case 0x10: case 0x17: case 0x42: w.u2(in.u2()); break;
      case 0x11: case 0x12: w.u1(in.u1()); w.u1(in.u1()); break;
      case 0x13: case 0x14: case 0x15: break;
      case 0x40: case 0x41: {  // localvar_target
        uint16_t ranges = in.u2();
        w.u2(ranges);
        for (uint32_t r = 0; r < ranges; ++r) {
          if (!emit_range(in, w, offsets)) return false;
          w.u2(in.u2());
        }
        break;
      }
      case 0x43: case 0x44: case 0x45: case 0x46:  // offset_target
      case 0x47: case 0x48: case 0x49: case 0x4a: case 0x4b: {  // type_argument_target
        uint16_t at = in.u2();
        if (in.failed() || at >= offsets.code_length()) return false;
        w.u2(offsets.map_instruction(at));
        if (target >= 0x47) w.u1(in.u1());
        break;
      }
      default: return false;
    }
    uint8_t path = in.u1();
    w.u1(path);
    const uint8_t* steps = in.bytes(size_t{path} * 2);
    if (steps == nullptr) return false;
    w.bytes(steps, size_t{path} * 2);
    size_t annotation_at = in.at();
    if (!skip_annotation(in, 0)) return false;
    w.bytes(in.data() + annotation_at, in.at() - annotation_at);  // no offsets inside
  }
  return in.at_end();
}

}  // namespace fasthprof::class_file
