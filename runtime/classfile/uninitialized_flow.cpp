#include "classfile/uninitialized_flow.h"

#include <algorithm>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "classfile/bytecode.h"

namespace fasthprof::class_file {
namespace {

// One operand-stack entry above where the walk began. size 0: a value from below it, whose
// category is not known until an instruction that takes it says.
struct Value {
  uint8_t size;
  bool copy;  // a copy of the new's uninitialized object
};

constexpr Value kOne{1, false}, kTwo{2, false};

// The descriptor of the NameAndType of a Fieldref, Methodref, InterfaceMethodref, Dynamic or
// InvokeDynamic entry (each holds its NameAndType at the same place).
bool member_descriptor(const ConstantPool& pool, uint32_t index, std::string_view* out) {
  if (index == 0 || index >= pool.count()) return false;
  uint8_t tag = pool.tag[index];
  if (tag != kFieldref && tag != kMethodref && tag != kInterfaceMethodref && tag != kDynamic && tag != kInvokeDynamic)
    return false;
  uint16_t nat = load_be16(pool.data + pool.offset[index] + 3);
  if (!pool.is(nat, kNameAndType)) return false;
  return pool.utf8(load_be16(pool.data + pool.offset[nat] + 3), out);
}

uint8_t field_size(std::string_view d) { return d.empty() ? 0 : (d[0] == 'J' || d[0] == 'D') ? 2 : 1; }

// A method descriptor's parameters' sizes, in order, and its return's (0 for V). False when malformed.
bool method_sizes(std::string_view d, std::vector<uint8_t>* params, uint8_t* result) {
  params->clear();
  if (d.empty() || d[0] != '(') return false;
  size_t i = 1;
  while (i < d.size() && d[i] != ')') {
    size_t start = i;
    while (i < d.size() && d[i] == '[') ++i;
    if (i >= d.size()) return false;
    if (d[i] == 'L') {
      i = d.find(';', i);
      if (i == std::string_view::npos) return false;
    }
    params->push_back(i == start && (d[i] == 'J' || d[i] == 'D') ? 2 : 1);
    ++i;
  }
  if (i + 1 >= d.size()) return false;
  *result = d[i + 1] == 'V' ? 0 : field_size(d.substr(i + 1));
  return true;
}

class Walk {
 public:
  Walk(const uint8_t* code, uint32_t length, const ConstantPool& pool) : code_(code), length_(length), pool_(pool) {}

  bool run(uint32_t new_at, std::vector<uint32_t>* out) {
    visited_.assign(length_, false);
    visited_[new_at] = true;
    pending_.push_back({new_at + 3, {Value{1, true}}});  // after the new: its object, once
    uint32_t steps = 0;
    while (!pending_.empty()) {
      auto [at, stack] = std::move(pending_.back());
      pending_.pop_back();
      stack_ = std::move(stack);
      for (;;) {  // one path, until it ends or meets an offset walked before
        if (at >= length_) return false;
        if (visited_[at]) break;
        visited_[at] = true;
        if (++steps > kMaxSteps) return false;
        int32_t next = step(at, out);
        if (next == kGiveUp) return false;
        if (next == kEnd) break;
        at = static_cast<uint32_t>(next);
        if (std::none_of(stack_.begin(), stack_.end(), [](Value v) { return v.copy; })) break;  // nothing left of it
      }
    }
    std::sort(out->begin(), out->end());
    return !out->empty();
  }

 private:
  static constexpr int32_t kGiveUp = -1, kEnd = -2;

  // Takes the top entry, of category `size`; a copy only when `copy_ok`. False when it cannot.
  bool pop(uint8_t size, bool copy_ok = false, Value* taken = nullptr) {
    Value v = stack_.empty() ? Value{0, false} : stack_.back();
    if (!stack_.empty()) stack_.pop_back();
    if (v.size == 0) v.size = size;
    if (v.size != size || (v.copy && !copy_ok)) return false;
    if (taken) *taken = v;
    return true;
  }
  // The top entry's size without taking it (0: from below, unknown).
  uint8_t top_size(size_t depth = 0) const { return depth < stack_.size() ? stack_[stack_.size() - 1 - depth].size : 0; }
  void push(uint8_t size) {
    if (size != 0) stack_.push_back(size == 2 ? kTwo : kOne);
  }
  bool pops(std::initializer_list<uint8_t> sizes) {
    for (uint8_t s : sizes)
      if (!pop(s)) return false;
    return true;
  }

  // The stack shuffles: `take` entries of the given sizes off the top (top first), then push them
  // back in `order` (indexes into what was taken, top first = 0), bottom to top.
  bool shuffle(std::initializer_list<uint8_t> sizes, std::initializer_list<uint8_t> order) {
    Value taken[4];
    size_t n = 0;
    for (uint8_t s : sizes)
      if (!pop(s, true, &taken[n++])) return false;
    for (uint8_t k : order) stack_.push_back(taken[k]);
    return true;
  }
  bool stack_op(uint8_t op) {
    switch (op) {
      case 0x57: return pop(1, true);                                      // pop
      case 0x58:                                                           // pop2
        if (top_size() == 2) return pop(2, true);
        return top_size() == 1 && pop(1, true) && pop(1, true);
      case 0x59: return shuffle({1}, {0, 0});                              // dup
      case 0x5a: return shuffle({1, 1}, {0, 1, 0});                        // dup_x1
      case 0x5b:                                                           // dup_x2
        if (top_size(1) == 2) return shuffle({1, 2}, {0, 1, 0});
        return top_size(1) == 1 && shuffle({1, 1, 1}, {0, 2, 1, 0});
      case 0x5c:                                                           // dup2
        if (top_size() == 2) return shuffle({2}, {0, 0});
        return top_size() == 1 && shuffle({1, 1}, {1, 0, 1, 0});
      case 0x5d:                                                           // dup2_x1
        if (top_size() == 2) return shuffle({2, 1}, {0, 1, 0});
        return top_size() == 1 && shuffle({1, 1, 1}, {1, 0, 2, 1, 0});
      case 0x5e:                                                           // dup2_x2
        if (top_size() == 2 && top_size(1) == 2) return shuffle({2, 2}, {0, 1, 0});
        if (top_size() == 2 && top_size(1) == 1) return shuffle({2, 1, 1}, {0, 2, 1, 0});
        if (top_size() == 1 && top_size(1) == 1 && top_size(2) == 2) return shuffle({1, 1, 2}, {1, 0, 2, 1, 0});
        if (top_size() == 1 && top_size(1) == 1 && top_size(2) == 1)
          return shuffle({1, 1, 1, 1}, {1, 0, 3, 2, 1, 0});
        return false;
      default: return shuffle({1, 1}, {0, 1});                             // swap
    }
  }

  bool invoke(uint8_t op, uint32_t at, std::vector<uint32_t>* out, bool* initialized) {
    std::string_view d;
    uint8_t result = 0;
    if (!member_descriptor(pool_, load_be16(code_ + at + 1), &d) || !method_sizes(d, &params_, &result)) return false;
    for (size_t i = params_.size(); i-- > 0;)
      if (!pop(params_[i])) return false;
    if (op != kInvokestatic && op != 0xba) {
      Value receiver;
      if (!pop(1, op == kInvokespecial, &receiver)) return false;
      if (receiver.copy) {  // its initializer: the copies left are initialized, the path ends here
        std::string_view cls, name, descriptor;
        bool init = pool_.method(load_be16(code_ + at + 1), &cls, &name, &descriptor) && name == "<init>";
        if (!init || result != 0 || stack_.empty() || !stack_.back().copy) return false;
        out->push_back(at);
        *initialized = true;
        return true;
      }
    }
    push(result);
    return true;
  }

  // Walks the instruction at `at`: the next offset on this path, kEnd or kGiveUp. Branch targets
  // other than the next go to pending_. Longer than a function here should be, knowingly: it is
  // a table of the opcodes' pops and pushes in JVMS order, read best in one piece.
  int32_t step(uint32_t at, std::vector<uint32_t>* out) {
    uint8_t op = code_[at];
    uint32_t length = kFixedLength[op];
    if (length != 0 && at + length > length_) return kGiveUp;
    uint32_t next = at + length;
    auto ok = [&](bool fine) { return fine ? static_cast<int32_t>(next) : kGiveUp; };
    auto branch = [&](int64_t target) {
      if (target < 0 || target >= length_) return false;
      pending_.push_back({static_cast<uint32_t>(target), stack_});
      return true;
    };
    if (op == 0x00) return ok(true);
    if (op == 0x01 || (op >= 0x02 && op <= 0x08) || (op >= 0x0b && op <= 0x0d) || op == 0x10 || op == 0x11) {
      push(1);
      return ok(true);
    }
    if (op == 0x09 || op == 0x0a || op == 0x0e || op == 0x0f) {
      push(2);
      return ok(true);
    }
    if (op == kLdc || op == kLdcW || op == 0x14) {  // by the constant's tag
      uint32_t index = op == kLdc ? code_[at + 1] : load_be16(code_ + at + 1);
      if (index == 0 || index >= pool_.count()) return kGiveUp;
      uint8_t tag = pool_.tag[index];
      uint8_t size = tag == kLong || tag == kDouble ? 2 : 1;
      std::string_view d;
      if (tag == kDynamic) {
        if (!member_descriptor(pool_, index, &d)) return kGiveUp;
        size = field_size(d);
      } else if (tag != kInteger && tag != kFloat && tag != kString && tag != kClass && tag != kMethodHandle &&
                 tag != kMethodType && size == 1) {
        return kGiveUp;
      }
      if ((op == 0x14) != (size == 2)) return kGiveUp;
      push(size);
      return ok(true);
    }
    static constexpr uint8_t kKindSize[5] = {1, 2, 1, 2, 1};  // i, l, f, d, a
    if (op >= 0x15 && op <= 0x19) return push(kKindSize[op - 0x15]), ok(true);
    if (op >= 0x1a && op <= 0x2d) return push(kKindSize[(op - 0x1a) / 4]), ok(true);
    if (op >= 0x2e && op <= 0x35) return ok(pops({1, 1}) && (push(op == 0x2f || op == 0x31 ? 2 : 1), true));
    if (op >= 0x36 && op <= 0x3a) return ok(pop(kKindSize[op - 0x36]));  // a copy stored: give up
    if (op >= 0x3b && op <= 0x4e) return ok(pop(kKindSize[(op - 0x3b) / 4]));
    if (op >= 0x4f && op <= 0x56) return ok(pop(op == 0x50 || op == 0x52 ? 2 : 1) && pops({1, 1}));
    if (op >= kPop && op <= 0x5f) return ok(stack_op(op));
    if (op >= 0x60 && op <= 0x73) {
      uint8_t s = kKindSize[(op - 0x60) % 4];
      return ok(pops({s, s}) && (push(s), true));
    }
    if (op >= 0x74 && op <= 0x77) {
      uint8_t s = kKindSize[op - 0x74];
      return ok(pop(s) && (push(s), true));
    }
    if (op >= 0x78 && op <= 0x7d) {
      uint8_t s = op % 2 == 0 ? 1 : 2;
      return ok(pops({1, s}) && (push(s), true));
    }
    if (op >= 0x7e && op <= 0x83) {
      uint8_t s = op % 2 == 0 ? 1 : 2;
      return ok(pops({s, s}) && (push(s), true));
    }
    if (op == kIinc) return ok(true);
    if (op >= 0x85 && op <= 0x93) {  // conversions: from, to
      static constexpr uint8_t kFrom[15] = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 1, 1, 1};
      static constexpr uint8_t kTo[15] = {2, 1, 2, 1, 1, 2, 1, 2, 2, 1, 2, 1, 1, 1, 1};
      return ok(pop(kFrom[op - 0x85]) && (push(kTo[op - 0x85]), true));
    }
    if (op >= 0x94 && op <= 0x98) {
      uint8_t s = op == 0x94 || op >= 0x97 ? 2 : 1;
      return ok(pops({s, s}) && (push(1), true));
    }
    if ((op >= kIfeq && op <= 0x9e) || op == kIfnull || op == kIfnonnull)
      return ok(pop(1) && branch(at + static_cast<int16_t>(load_be16(code_ + at + 1))));
    if (op >= 0x9f && op <= kIfAcmpne) return ok(pops({1, 1}) && branch(at + static_cast<int16_t>(load_be16(code_ + at + 1))));
    if (op == kGoto || op == kGotoW) {
      int64_t target = at + (op == kGoto ? static_cast<int16_t>(load_be16(code_ + at + 1)) : get_s4(code_ + at + 1));
      return target >= 0 && target < length_ ? static_cast<int32_t>(target) : kGiveUp;
    }
    if (op == kTableswitch || op == kLookupswitch) {
      uint32_t base = at + 1 + switch_padding(at);
      if (base + 12 > length_ || !pop(1) || !branch(at + int64_t{get_s4(code_ + base)})) return kGiveUp;
      int64_t n = op == kTableswitch ? int64_t{get_s4(code_ + base + 8)} - get_s4(code_ + base + 4) + 1
                                     : get_s4(code_ + base + 4);
      uint32_t first = base + 12, stride = op == kTableswitch ? 4 : 8;  // a lookupswitch's offsets after each match
      if (n < 0 || base + 8 + (op == kTableswitch ? 4 : 0) + n * stride > length_) return kGiveUp;
      for (int64_t i = 0; i < n; ++i)
        if (!branch(at + int64_t{get_s4(code_ + first + i * stride)})) return kGiveUp;
      return kEnd;
    }
    if (is_return(op) || op == 0xbf) return kEnd;  // whatever is left of it is never initialized here
    if (op >= 0xb2 && op <= 0xb5) {
      std::string_view d;
      if (!member_descriptor(pool_, load_be16(code_ + at + 1), &d) || field_size(d) == 0) return kGiveUp;
      uint8_t s = field_size(d);
      if (op == 0xb2) return push(s), ok(true);
      if (op == 0xb3) return ok(pop(s));
      if (op == 0xb4) return ok(pop(1) && (push(s), true));
      return ok(pop(s) && pop(1));
    }
    if (is_invoke(op)) {
      bool initialized = false;
      if (!invoke(op, at, out, &initialized)) return kGiveUp;
      return initialized ? kEnd : ok(true);
    }
    if (op == kNew) return push(1), ok(true);  // another object
    if (op == kNewarray || op == kAnewarray || op == 0xbe || op == 0xc0 || op == 0xc1)
      return ok(pop(1) && (push(1), true));
    if (op == 0xc2 || op == 0xc3) return ok(pop(1));
    if (op == kMultianewarray) {
      for (uint8_t d = code_[at + 3]; d > 0; --d)
        if (!pop(1)) return kGiveUp;
      return push(1), ok(true);
    }
    if (op == kWide && at + 4 <= length_) {
      uint8_t inner = code_[at + 1];
      next = at + (inner == kIinc ? 6 : 4);
      if (next > length_) return kGiveUp;
      if (inner == kIinc) return ok(true);
      if (inner >= 0x15 && inner <= 0x19) return push(kKindSize[inner - 0x15]), ok(true);
      if (inner >= 0x36 && inner <= 0x3a) return ok(pop(kKindSize[inner - 0x36]));
    }
    return kGiveUp;  // jsr, ret, jsr_w, an opcode no class file may hold, a malformed wide
  }

  const uint8_t* code_;
  uint32_t length_;
  const ConstantPool& pool_;
  std::vector<bool> visited_;
  std::vector<std::pair<uint32_t, std::vector<Value>>> pending_;
  std::vector<Value> stack_;
  std::vector<uint8_t> params_;
};

}  // namespace

bool find_initializers(const uint8_t* code, uint32_t code_length, const ConstantPool& pool, uint32_t new_at,
                       std::vector<uint32_t>* out) {
  out->clear();
  if (new_at + 3 > code_length || code[new_at] != kNew) return false;
  Walk walk(code, code_length, pool);
  return walk.run(new_at, out);
}

}  // namespace fasthprof::class_file
