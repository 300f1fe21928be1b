// The class-file rewriter (class_rewriter.h; docs/class_rewriter.md says what is rewritten and
// what is left alone). One pass reads and checks the whole class file; the methods with code are
// then rewritten one by one into a new byte vector, everything else is copied as it was.
//
// A method's code is laid out again as groups, one per original instruction:
//   [entry call]  (once, before the first group)
//   [exit call]   (only before a *return)   [allocation call]   [position call] (only before an
//   invoke*)   instruction (re-encoded when it holds offsets)   [mark call] (RewritePlan::marks:
//   after an array allocation, an allocating call, or an invokespecial <init> of a counted `new`)
// A branch, handler or stack map frame naming an instruction names the start of its group, so a
// branch to a return runs the exit call, a branch to a `new` runs its allocation call, and a loop
// back to offset 0 does not run the entry call again; a branch to the instruction after one with
// a mark call lands past that call, which belongs to the instruction before it. An
// uninitialized(offset) type names the `new` itself, after its allocation call. Short branches
// that no longer reach are widened, which moves later code, so the layout is repeated until
// nothing more needs widening (widening is never undone, so this ends).
#include "classfile/class_rewriter.h"

#include <algorithm>
#include <string>
#include <utility>

#include "base/byte_decoder.h"
#include "classfile/bytecode.h"
#include "classfile/class_file.h"
#include "classfile/code_tables.h"
#include "classfile/multi_allocation.h"
#include "classfile/tracker_pool.h"
#include "classfile/uninitialized_flow.h"

namespace fasthprof {
namespace {

using namespace class_file;

constexpr uint16_t kStackMapVersion = 50;   // from here on, the type checker and StackMapTable
constexpr uint32_t kMaxCodeLength = 65535;  // code_length < 65536 (JVMS 4.7.3)

// ---- one method's code ----------------------------------------------------------------------

struct Instruction {
  uint32_t at;       // original offset
  uint32_t length;   // original length
  uint8_t op;
  bool wide = false;  // a short branch written in its long form
  uint16_t site_constant = 0;  // an allocation's CONSTANT_Integer of its site ID; 0: no allocation call
  uint32_t first_target = 0, target_count = 0;  // into CodeRewriter::targets_ (absolute, original)
  bool positioned = false;  // an invoke that gets a position call (mark_positions)
  uint16_t mark_constant = 0, mark_ref = 0;  // a mark call after it (MarkPoint); 0: none
  uint8_t mark_dimensions = 0;
};

enum class CodeOutcome { kRewritten, kLeftAlone, kMalformed };

// An allocation instruction found by CodeRewriter::find_allocations.
struct Allocation {
  uint32_t offset;
  std::string type;
  int32_t line;        // from the LineNumberTable, -1 without one
  uint8_t dimensions;  // multianewarray's, else 0
  bool instantiates;   // Unsafe.allocateInstance (InjectedSite)
  bool clones;         // a call sure to reach Object.clone (InjectedSite)
  bool marked = false;  // with marks: its mark calls go after `mark_after` (InjectedSite::marked)
  std::vector<uint32_t> mark_after;
};

class CodeRewriter {
 public:
  // One per class: its vectors are reused from method to method.
  CodeRewriter(const ConstantPool& pool, uint16_t major, bool clones, bool marks = false)
      : pool_(pool), major_(major), clones_(clones), marks_(marks) {}

  // Rewrites one Code attribute's info into `out`; kLeftAlone leaves `out` unspecified. The
  // method's name and descriptor are for the error.
  CodeOutcome rewrite(const uint8_t* info, size_t size, std::string_view name, std::string_view descriptor,
                      const Injection& injection, std::vector<uint8_t>& out) {
    CodeOutcome read_outcome = read(info, size, name, descriptor);
    if (read_outcome != CodeOutcome::kRewritten) return read_outcome;
    uint32_t growth = injection.calls ? 1 : 0;  // the ID on top of whatever a *return (or an invoke's arguments) leaves
    uint32_t locals = 0;  // for the counts of a multianewarray (multi_allocation.h)
    size_t site = 0;
    for (Instruction& insn : insns_) {
      if (!counted(insn) || site >= injection.site_count) continue;
      insn.site_constant = injection.site_constants[site++];
      growth = std::max(growth, insn.op == kNew ? 1u : 2u);  // an array's copied length, then the ID
      if (dimensions_of(insn) >= 2) locals = std::max(locals, uint32_t{dimensions_of(insn)});
    }
    static_assert(kMultiStackGrowth <= 2);
    for (size_t m = 0; m < injection.mark_count; ++m) {  // after the instruction: its result, a copy, s (d before s)
      const MarkPoint& mark = injection.marks[m];
      Instruction& insn = insns_[static_cast<size_t>(index_of_[mark.after])];
      insn.mark_constant = mark.site_constant;
      insn.mark_ref = mark.method_ref;
      insn.mark_dimensions = mark.dimensions;
      growth = std::max(growth, mark.dimensions >= 2 ? 3u : 2u);
    }
    if (max_stack_ + growth > 0xffff || max_locals_ + locals > 0xffff) return CodeOutcome::kLeftAlone;
    uint32_t call_size = (injection.id_index < 256 ? 2 : 3) + 3;
    entry_size_ = injection.calls ? call_size : 0;
    exit_size_ = entry_size_;
    position_size_ = injection.at_ref != 0 ? 3 + 3 : 0;  // sipush p; invokestatic
    if (injection.at_ref != 0) mark_positions();
    CodeOutcome laid = lay_out();
    if (laid != CodeOutcome::kRewritten) return laid;

    Writer w(out);
    w.u2(max_stack_ + growth);
    w.u2(max_locals_ + locals);
    w.u4(new_length_);
    emit_code(w, injection);
    w.u2(handler_count_);
    for (uint32_t i = 0; i < handler_count_; ++i) {
      const uint8_t* h = handlers_ + i * 8;
      w.u2(map_target(load_be16(h)));
      w.u2(map_target(load_be16(h + 2)));
      w.u2(map_target(load_be16(h + 4)));
      w.u2(load_be16(h + 6));
    }
    return emit_attributes(w);
  }

  // The allocation instructions of one Code attribute, in code order, with the type each
  // allocates as written (InjectedSite::type). kMalformed when the code, or an allocation's
  // operand (no Class entry, a newarray type outside 4-11, a multianewarray of 0 dimensions or of
  // more than its type has), is.
  CodeOutcome find_allocations(const uint8_t* info, size_t size, std::string_view name, std::string_view descriptor,
                               std::vector<Allocation>& out) {
    out.clear();
    CodeOutcome read_outcome = read(info, size, name, descriptor);
    if (read_outcome != CodeOutcome::kRewritten) return read_outcome;
    for (const Instruction& insn : insns_) {
      if (!counted(insn)) continue;
      bool clones = clone_call(insn);
      Allocation allocation{insn.at, {}, line_of(insn.at),
                            static_cast<uint8_t>(insn.op == kMultianewarray ? code_[insn.at + 3] : 0),
                            !is_allocation(insn.op) && !clones, clones};
      if (is_allocation(insn.op) && !allocation_type(insn, &allocation.type))
        return malformed("allocation at " + std::to_string(insn.at) + " names no array type or class");
      if (marks_ && insn.op != kNew) allocation.mark_after.push_back(insn.at);  // the object on top after it
      if (marks_ && insn.op == kNew && !find_initializers(code_, code_length_, pool_, insn.at, &allocation.mark_after))
        allocation.mark_after.clear();  // not sure of every initializer: none marked
      allocation.marked = !allocation.mark_after.empty();
      out.push_back(std::move(allocation));
    }
    return CodeOutcome::kRewritten;
  }

  const std::string& error() const { return error_; }
  // After rewrite(): (original offset, source line) of every invoke* (InjectedMethod::call_lines).
  void call_lines(std::vector<std::pair<uint32_t, int32_t>>* out) const {
    for (const Instruction& insn : insns_)
      if (is_invoke(insn.op)) out->emplace_back(insn.at, line_of(insn.at));
  }
  uint32_t widened() const {
    return static_cast<uint32_t>(std::count_if(insns_.begin(), insns_.end(), [](const Instruction& i) { return i.wide; }));
  }

 private:
  // Reads and checks one Code attribute's info: kRewritten when it is whole and consistent.
  CodeOutcome read(const uint8_t* info, size_t size, std::string_view name, std::string_view descriptor) {
    name_ = name;
    descriptor_ = descriptor;
    insns_.clear();
    targets_.clear();
    info_ = info;
    Reader in(info, size);
    max_stack_ = in.u2();
    max_locals_ = in.u2();
    code_length_ = in.u4();
    if (in.failed()) return malformed("Code attribute truncated");
    if (code_length_ == 0 || code_length_ > kMaxCodeLength) return malformed("code_length " + std::to_string(code_length_));
    code_ = in.bytes(code_length_);
    if (code_ == nullptr) return malformed("code truncated");
    if (!decode()) return CodeOutcome::kMalformed;
    uint16_t handlers = in.u2();
    handlers_ = in.bytes(size_t{handlers} * 8);
    handler_count_ = handlers;
    if (in.failed()) return malformed("exception table truncated");
    for (uint32_t i = 0; i < handler_count_; ++i) {
      const uint8_t* h = handlers_ + i * 8;
      uint32_t start = load_be16(h), end = load_be16(h + 2), handler = load_be16(h + 4);
      if (start >= end || !boundary(start) || !(end == code_length_ || boundary(end)) || !boundary(handler))
        return malformed("exception table entry " + std::to_string(i) + " names no instruction");
    }
    attributes_at_ = in.at();
    if (!skip_attributes(in, pool_) || !in.at_end()) return malformed("Code attributes malformed");
    return CodeOutcome::kRewritten;
  }

  int32_t line_of(uint32_t offset) const { return source_line(info_ + attributes_at_, pool_, offset); }

  // The invokes that get a position call: the first of each line in a straight run of code (none
  // of a branch's, a handler's or a subroutine's return point inside), as a trace shows the
  // caller's line and the tracker gives a frame its position back when a call it made returns.
  void mark_positions() {
    std::vector<bool> starts(code_length_, false);
    for (uint32_t t : targets_) starts[t] = true;
    for (uint32_t i = 0; i < handler_count_; ++i) starts[load_be16(handlers_ + i * 8 + 4)] = true;
    int64_t line = INT64_MIN;  // of the last position call in this run
    for (size_t i = 0; i < insns_.size(); ++i) {
      Instruction& insn = insns_[i];
      if (starts[insn.at] || (i > 0 && insns_[i - 1].target_count > 0)) line = INT64_MIN;
      if (!is_invoke(insn.op)) continue;
      int32_t here = line_of(insn.at);
      insn.positioned = here != line;
      line = here;
    }
  }

  bool allocation_type(const Instruction& insn, std::string* type) const {
    if (insn.op == kNewarray) {
      static constexpr char kPrimitives[] = "ZCFDBSIJ";  // T_BOOLEAN (4) to T_LONG (11)
      uint8_t code = code_[insn.at + 1];
      if (code < 4 || code > 11) return false;
      *type = std::string("[") + kPrimitives[code - 4];
      return true;
    }
    std::string_view name;
    if (!pool_.class_name(load_be16(code_ + insn.at + 1), &name) || name.empty()) return false;
    if (insn.op == kAnewarray) *type = name[0] == '[' ? "[" + std::string(name) : "[L" + std::string(name) + ";";
    else *type = std::string(name);
    // A multianewarray makes arrays at as many levels as it has dimensions (the agent names each
    // level's class): more than the type's own the JVM rejects too.
    size_t depth = std::min(name.find_first_not_of('['), name.size());
    return insn.op != kMultianewarray || (code_[insn.at + 3] > 0 && code_[insn.at + 3] <= depth);
  }

  // Bytes injected before an allocation instruction (allocation_call writes them).
  uint32_t allocation_size(const Instruction& insn) const {
    if (insn.site_constant == 0) return 0;
    uint32_t call = (insn.site_constant < 256 ? 2 : 3) + 3;
    if (insn.op == kNew) return call;
    if (dimensions_of(insn) >= 2) return multi_allocation_size(dimensions_of(insn), max_locals_, insn.site_constant);
    return call + 1;  // dup
  }

  // Bytes injected after an instruction (mark_call writes them).
  static uint32_t mark_size(const Instruction& insn) {
    if (insn.mark_ref == 0) return 0;
    return 1 + (insn.mark_dimensions >= 2 ? (insn.mark_dimensions <= 127 ? 2 : 3) : 0) + (insn.mark_constant < 256 ? 2 : 3) + 3;
  }
  // dup; [bipush/sipush d;] ldc s; invokestatic (class_rewriter.h)
  void mark_call(Writer& w, const Instruction& insn) const {
    w.u1(kDup);
    if (insn.mark_dimensions > 127) {
      w.u1(kSipush);
      w.u2(insn.mark_dimensions);
    } else if (insn.mark_dimensions >= 2) {
      w.u1(kBipush);
      w.u1(insn.mark_dimensions);
    }
    emit_call(w, insn.mark_constant, insn.mark_ref);
  }

  uint8_t dimensions_of(const Instruction& insn) const { return insn.op == kMultianewarray ? code_[insn.at + 3] : 0; }
  bool counted(const Instruction& insn) const {
    return is_allocation(insn.op) ||
           (is_invoke(insn.op) && kinds_.counted(insn.op, load_be16(code_ + insn.at + 1), clones_));
  }
  bool clone_call(const Instruction& insn) const {
    return clones_ && is_invoke(insn.op) && kinds_.sure_clone(insn.op, load_be16(code_ + insn.at + 1));
  }

  // The counting call before an allocation: an array's length copied to the top of the stack
  // (class_rewriter.h), then the site ID and the call; every count of a multianewarray of 2
  // dimensions or more through fresh locals (multi_allocation.h); Unsafe.allocateInstance's class.
  void allocation_call(Writer& w, const Instruction& insn, const Injection& injection) const {
    if (insn.op == kNew) {
      emit_call(w, insn.site_constant, injection.alloc_ref);
    } else if (dimensions_of(insn) >= 2) {
      multi_allocation_call(w, dimensions_of(insn), max_locals_, insn.site_constant, injection.alloc_multi_ref);
    } else {  // ..., count -> ..., count, count (or the class to allocateInstance, the object to clone)
      w.u1(kDup);
      emit_call(w, insn.site_constant, is_allocation(insn.op) ? injection.alloc_array_ref
                                       : clone_call(insn)     ? injection.alloc_clone_ref
                                                              : injection.alloc_class_ref);
    }
  }

  CodeOutcome malformed(const std::string& what) {
    error_ = "method " + std::string(name_) + std::string(descriptor_) + ": " + what;
    return CodeOutcome::kMalformed;
  }

  bool boundary(uint32_t at) const { return at < code_length_ && index_of_[at] >= 0; }

  // Splits the code into instructions and checks every branch target.
  bool decode() {
    index_of_.assign(code_length_, -1);
    uint32_t at = 0;
    while (at < code_length_) {
      uint8_t op = code_[at];
      uint32_t length = kFixedLength[op];
      // Filled where it is kept: a local copied in stalled on store forwarding (most of decode's time).
      Instruction& insn = insns_.emplace_back();
      insn.at = at;
      insn.op = op;
      uint32_t left = code_length_ - at;
      if (op == kWide) {
        if (left < 2) return malformed_bool("wide truncated at " + std::to_string(at));
        uint8_t inner = code_[at + 1];
        if (inner == kIinc) length = 6;
        else if ((inner >= 0x15 && inner <= 0x19) || (inner >= 0x36 && inner <= 0x3a) || inner == kRet) length = 4;
        else return malformed_bool("wide with opcode " + std::to_string(inner) + " at " + std::to_string(at));
      } else if (op == kTableswitch || op == kLookupswitch) {
        uint32_t pad = switch_padding(at);
        uint32_t fixed = 1 + pad + (op == kTableswitch ? 12 : 8);
        if (left < fixed) return malformed_bool("switch truncated at " + std::to_string(at));
        const uint8_t* p = code_ + at + 1 + pad;
        insn.first_target = static_cast<uint32_t>(targets_.size());
        if (!add_target(at, get_s4(p))) return false;
        uint64_t n;
        if (op == kTableswitch) {
          int32_t low = get_s4(p + 4), high = get_s4(p + 8);
          if (low > high) return malformed_bool("tableswitch low > high at " + std::to_string(at));
          n = static_cast<uint64_t>(static_cast<int64_t>(high) - low) + 1;
          if (n * 4 > left - fixed) return malformed_bool("tableswitch truncated at " + std::to_string(at));
          for (uint64_t i = 0; i < n; ++i)
            if (!add_target(at, get_s4(p + 12 + i * 4))) return false;
          length = fixed + static_cast<uint32_t>(n * 4);
        } else {
          int32_t pairs = get_s4(p + 4);
          if (pairs < 0 || static_cast<uint64_t>(pairs) * 8 > left - fixed)
            return malformed_bool("lookupswitch truncated at " + std::to_string(at));
          n = static_cast<uint64_t>(pairs);
          for (uint64_t i = 0; i < n; ++i)
            if (!add_target(at, get_s4(p + 8 + i * 8 + 4))) return false;
          length = fixed + static_cast<uint32_t>(n * 8);
        }
        insn.target_count = static_cast<uint32_t>(targets_.size()) - insn.first_target;
      } else if (length == 0) {
        return malformed_bool("opcode " + std::to_string(op) + " at " + std::to_string(at));
      }
      if (left < length) return malformed_bool("instruction truncated at " + std::to_string(at));
      if (is_branch16(op) || op == kGotoW || op == kJsrW) {
        insn.first_target = static_cast<uint32_t>(targets_.size());
        int32_t offset = op == kGotoW || op == kJsrW ? get_s4(code_ + at + 1)
                                                     : static_cast<int16_t>(load_be16(code_ + at + 1));
        if (!add_target(at, offset)) return false;
        insn.target_count = 1;
      }
      insn.length = length;
      index_of_[at] = static_cast<int32_t>(insns_.size() - 1);
      at += length;
    }
    for (const Instruction& insn : insns_)
      for (uint32_t i = 0; i < insn.target_count; ++i)
        if (!boundary(targets_[insn.first_target + i]))
          return malformed_bool("branch at " + std::to_string(insn.at) + " to " +
                                std::to_string(targets_[insn.first_target + i]) + ", not an instruction");
    return true;
  }

  bool add_target(uint32_t at, int64_t offset) {
    int64_t target = static_cast<int64_t>(at) + offset;
    if (target < 0 || target >= code_length_)
      return malformed_bool("branch at " + std::to_string(at) + " leaves the code");
    targets_.push_back(static_cast<uint32_t>(target));
    return true;
  }

  bool malformed_bool(const std::string& what) {
    malformed(what);
    return false;
  }

  uint32_t instruction_size(const Instruction& insn, uint32_t at) const {
    if (insn.op == kTableswitch) return 1 + switch_padding(at) + 12 + (insn.target_count - 1) * 4;
    if (insn.op == kLookupswitch) return 1 + switch_padding(at) + 8 + (insn.target_count - 1) * 8;
    if (insn.wide) return is_conditional(insn.op) ? 3 + 5 : 5;  // inverted branch over goto_w
    return insn.length;
  }

  // New offsets for every group, repeated until every short branch reaches its target.
  CodeOutcome lay_out() {
    group_at_.resize(insns_.size());
    insn_at_.resize(insns_.size());
    for (;;) {
      uint64_t at = entry_size_;
      for (size_t i = 0; i < insns_.size(); ++i) {
        group_at_[i] = static_cast<uint32_t>(at);
        if (is_return(insns_[i].op)) at += exit_size_;
        if (insns_[i].positioned) at += position_size_;
        at += allocation_size(insns_[i]);
        insn_at_[i] = static_cast<uint32_t>(at);
        at += instruction_size(insns_[i], static_cast<uint32_t>(at)) + mark_size(insns_[i]);
        if (at > kMaxCodeLength) return CodeOutcome::kLeftAlone;  // the 64 KiB limit
      }
      new_length_ = static_cast<uint32_t>(at);
      bool widened = false;
      for (size_t i = 0; i < insns_.size(); ++i) {
        Instruction& insn = insns_[i];
        if (!is_branch16(insn.op) || insn.wide) continue;
        int64_t delta = static_cast<int64_t>(map_target(targets_[insn.first_target])) - insn_at_[i];
        if (delta >= INT16_MIN && delta <= INT16_MAX) continue;
        // The instruction after an inverted branch would be a new branch target, which from
        // version 50 on needs a stack map frame this rewriter cannot compute without type
        // inference: such a method stays as it was.
        if (is_conditional(insn.op) && major_ >= kStackMapVersion) return CodeOutcome::kLeftAlone;
        insn.wide = true;
        widened = true;
      }
      if (!widened) return CodeOutcome::kRewritten;
    }
  }

  // Where a branch, handler or frame naming original offset `at` now points: the start of its
  // group (the exit call before a return), never the entry call. code_length maps to the end.
  uint32_t map_target(uint32_t at) const {
    return at >= code_length_ ? new_length_ : group_at_[static_cast<size_t>(index_of_[at])];
  }

 public:  // the layout, for the debug tables (code_tables.h)
  uint32_t code_length() const { return code_length_; }
  uint32_t map_instruction(uint32_t at) const {
    return boundary(at) ? insn_at_[static_cast<size_t>(index_of_[at])] : map_debug_start(at);
  }
  // For debug tables, which may name any offset: a start names the group of the instruction it
  // is in (offset 0 stays 0, so that the entry call has the first line and the parameters' ranges),
  // an end the group of the first instruction at or after it.
  uint32_t map_debug_start(uint32_t at) const {
    if (at == 0) return 0;
    if (at >= code_length_) return new_length_;
    auto it = std::upper_bound(insns_.begin(), insns_.end(), at,
                               [](uint32_t v, const Instruction& insn) { return v < insn.at; });
    return group_at_[static_cast<size_t>(it - insns_.begin()) - 1];  // insns_[0].at == 0 <= at
  }
  uint32_t map_debug_end(uint32_t at) const {
    if (at >= code_length_) return new_length_;
    auto it = std::lower_bound(insns_.begin(), insns_.end(), at,
                               [](const Instruction& insn, uint32_t v) { return insn.at < v; });
    return it == insns_.end() ? new_length_ : group_at_[static_cast<size_t>(it - insns_.begin())];
  }

 private:

  void emit_call(Writer& w, uint16_t id_index, uint16_t method_ref) const {
    if (id_index < 256) {
      w.u1(kLdc);
      w.u1(id_index);
    } else {
      w.u1(kLdcW);
      w.u2(id_index);
    }
    w.u1(kInvokestatic);
    w.u2(method_ref);
  }

  void emit_code(Writer& w, const Injection& injection) const {
    if (injection.calls) emit_call(w, injection.id_index, injection.enter_ref);
    for (size_t i = 0; i < insns_.size(); ++i) {
      const Instruction& insn = insns_[i];
      if (injection.calls && is_return(insn.op)) emit_call(w, injection.id_index, injection.exit_ref);
      if (insn.site_constant != 0) allocation_call(w, insn, injection);
      if (injection.at_ref != 0 && insn.positioned) {  // the offset as a short: the tracker takes its low 16 bits
        w.u1(kSipush);
        w.u2(static_cast<uint16_t>(insn.at));
        w.u1(kInvokestatic);
        w.u2(injection.at_ref);
      }
      uint32_t at = insn_at_[i];
      const uint8_t* old = code_ + insn.at;
      auto relative = [&](uint32_t k) {
        return static_cast<int64_t>(map_target(targets_[insn.first_target + k])) - static_cast<int64_t>(at);
      };
      if (is_branch16(insn.op)) {
        if (!insn.wide) {
          w.u1(insn.op);
          w.u2(static_cast<uint16_t>(relative(0)));
        } else if (is_conditional(insn.op)) {
          w.u1(inverted(insn.op));
          w.u2(8);
          w.u1(kGotoW);
          w.u4(static_cast<uint32_t>(relative(0) - 3));
        } else {
          w.u1(insn.op == kGoto ? kGotoW : kJsrW);
          w.u4(static_cast<uint32_t>(relative(0)));
        }
      } else if (insn.op == kGotoW || insn.op == kJsrW) {
        w.u1(insn.op);
        w.u4(static_cast<uint32_t>(relative(0)));
      } else if (insn.op == kTableswitch || insn.op == kLookupswitch) {
        w.u1(insn.op);
        for (uint32_t p = switch_padding(at); p > 0; --p) w.u1(0);
        const uint8_t* body = old + 1 + switch_padding(insn.at);
        w.u4(static_cast<uint32_t>(relative(0)));
        if (insn.op == kTableswitch) {
          w.bytes(body + 4, 8);  // low, high
          for (uint32_t k = 1; k < insn.target_count; ++k) w.u4(static_cast<uint32_t>(relative(k)));
        } else {
          w.bytes(body + 4, 4);  // npairs
          for (uint32_t k = 1; k < insn.target_count; ++k) {
            w.bytes(body + 8 + (k - 1) * 8, 4);  // match
            w.u4(static_cast<uint32_t>(relative(k)));
          }
        }
      } else {
        w.bytes(old, insn.length);
      }
      if (insn.mark_ref != 0) mark_call(w, insn);
    }
  }

  CodeOutcome emit_attributes(Writer& w) {
    Reader in(info_ + attributes_at_, SIZE_MAX);  // already checked by skip_attributes
    uint16_t count = in.u2();
    w.u2(count);
    for (uint32_t i = 0; i < count; ++i) {
      uint16_t name_index = in.u2();
      uint32_t length = in.u4();
      const uint8_t* body = in.bytes(length);
      std::string_view name;
      pool_.utf8(name_index, &name);
      w.u2(name_index);
      size_t length_at = w.size();
      w.u4(0);
      size_t start = w.size();
      bool ok = true;
      if (name == "StackMapTable") ok = emit_stack_map(Reader(body, length), w);
      else if (name == "LineNumberTable") ok = emit_line_numbers(Reader(body, length), w, *this);
      else if (name == "LocalVariableTable" || name == "LocalVariableTypeTable") ok = emit_local_variables(Reader(body, length), w, *this);
      else if (name == "RuntimeVisibleTypeAnnotations" || name == "RuntimeInvisibleTypeAnnotations")
        ok = emit_type_annotations(Reader(body, length), w, *this);
      else w.bytes(body, length);  // no offsets the JVM reads: kept as it is
      if (!ok) return malformed(std::string(name) + " malformed");
      w.patch_u4(length_at, static_cast<uint32_t>(w.size() - start));
    }
    return CodeOutcome::kRewritten;
  }

  bool emit_verification_types(Reader& in, Writer& w, uint32_t count) {
    for (uint32_t i = 0; i < count; ++i) {
      uint8_t tag = in.u1();
      w.u1(tag);
      if (tag == 7) {  // Object: a class entry
        w.u2(in.u2());
      } else if (tag == 8) {  // Uninitialized: the offset of its `new`, now where that instruction went
        uint16_t at = in.u2();
        if (in.failed() || !boundary(at)) return false;
        w.u2(insn_at_[static_cast<size_t>(index_of_[at])]);
      } else if (tag > 8) {
        return false;
      }
    }
    return !in.failed();
  }

  bool emit_stack_map(Reader in, Writer& w) {
    uint16_t count = in.u2();
    w.u2(count);
    int64_t old_at = -1, new_at = -1;
    for (uint32_t i = 0; i < count; ++i) {
      uint8_t type = in.u1();
      uint32_t delta;
      if (type < 128) delta = type % 64;
      else if (type >= 247) delta = in.u2();
      else return false;  // 128-246 are reserved
      if (in.failed()) return false;
      old_at += delta + 1;
      if (old_at >= code_length_ || !boundary(static_cast<uint32_t>(old_at))) return false;
      int64_t here = map_target(static_cast<uint32_t>(old_at));
      uint32_t new_delta = static_cast<uint32_t>(here - new_at - 1);
      new_at = here;
      // The same kind of frame, in its short form when the new delta still fits.
      if (type < 64 || type == 251) {
        if (new_delta < 64) {
          w.u1(new_delta);
        } else {
          w.u1(251);
          w.u2(new_delta);
        }
      } else if (type < 128 || type == 247) {
        if (new_delta < 64) {
          w.u1(64 + new_delta);
        } else {
          w.u1(247);
          w.u2(new_delta);
        }
        if (!emit_verification_types(in, w, 1)) return false;
      } else {
        w.u1(type);
        w.u2(new_delta);
        if (type >= 252 && type <= 254) {
          if (!emit_verification_types(in, w, type - 251u)) return false;
        } else if (type == 255) {
          uint16_t locals = in.u2();
          w.u2(locals);
          if (!emit_verification_types(in, w, locals)) return false;
          uint16_t stack = in.u2();
          w.u2(stack);
          if (!emit_verification_types(in, w, stack)) return false;
        }
      }
    }
    return in.at_end();
  }

  const ConstantPool& pool_;
  InvokeKinds kinds_{pool_};
  uint16_t major_;
  bool clones_;  // RewritePlan::clones
  bool marks_;   // RewritePlan::marks (find_allocations)
  std::string_view name_, descriptor_;
  std::string error_;
  const uint8_t* info_ = nullptr;
  const uint8_t* code_ = nullptr;
  uint16_t max_stack_ = 0, max_locals_ = 0;
  uint32_t code_length_ = 0;
  const uint8_t* handlers_ = nullptr;
  uint32_t handler_count_ = 0;
  size_t attributes_at_ = 0;
  uint32_t entry_size_ = 0, exit_size_ = 0, position_size_ = 0, new_length_ = 0;
  std::vector<Instruction> insns_;
  std::vector<uint32_t> targets_;
  std::vector<int32_t> index_of_;  // original offset -> instruction index, -1 inside an instruction
  std::vector<uint32_t> group_at_, insn_at_;
};

// What the plan injects into one method: its ID, its allocation sites with theirs.
struct MethodPlan {
  bool inject = false;  // has code, and something to inject
  uint32_t id = 0;
  std::vector<InjectedSite> sites;
  std::vector<std::pair<uint32_t, size_t>> marks;  // (original offset a mark call goes after, its site in `sites`)
};

// The IDs, in class-file order then code order (the assigners' contract). False when a method's
// code is malformed (*error set).
bool assign_ids(const uint8_t* data, const ClassFile& cf, const std::string& class_name, const RewritePlan& plan,
                std::vector<MethodPlan>& plans, std::string* error) {
  CodeRewriter reader(cf.pool, cf.major, plan.allocations && plan.clones, plan.allocations && plan.marks);
  std::vector<Allocation> allocations;
  for (size_t i = 0; i < cf.methods.size(); ++i) {
    const MethodInfo& m = cf.methods[i];
    if (m.code_at == 0) continue;
    MethodPlan& method = plans[i];
    if (plan.calls) method.id = plan.assign_method_id(class_name, m.name, m.descriptor);
    if (plan.allocations) {
      if (reader.find_allocations(data + m.code_at, m.code_length, m.name, m.descriptor, allocations) ==
          CodeOutcome::kMalformed) {
        *error = class_name + " " + reader.error();
        return false;
      }
      for (Allocation& a : allocations) {
        // Two objects initialized by one invokespecial: code no verifier passes; the later one unmarked.
        for (uint32_t after : a.mark_after)
          for (const auto& [claimed, _] : method.marks) a.marked &= after != claimed;
        if (a.marked)
          for (uint32_t after : a.mark_after) method.marks.emplace_back(after, method.sites.size());
        InjectedSite site{std::string(m.name), std::string(m.descriptor), a.offset, std::move(a.type), 0, a.line,
                          a.dimensions, a.instantiates, a.clones, a.marked};
        site.id = plan.assign_site_id(class_name, site);
        method.sites.push_back(std::move(site));
      }
    }
    method.inject = plan.calls || !method.sites.empty();
  }
  return true;
}

// The class file again, each method planned for injection rewritten (or left alone), the rest
// copied; `result` already holds the class's names.
RewriteResult rewrite_methods(const uint8_t* data, size_t size, const ClassFile& cf, const RewritePlan& plan,
                              const std::vector<MethodPlan>& plans, const std::vector<uint32_t>& distinct,
                              const PoolAppender& tracker_entries, const TrackerRefs& refs, RewriteResult result) {
  uint32_t first = cf.pool.count();
  auto id_index = [&](uint32_t id) {  // distinct is sorted: the Integers are in its order
    return static_cast<uint16_t>(first + (std::lower_bound(distinct.begin(), distinct.end(), id) - distinct.begin()));
  };
  std::vector<uint8_t> out;
  out.reserve(size + size / 4 + 256);
  Writer w(out);
  write_pool(w, data, cf, distinct, tracker_entries);
  w.bytes(data + cf.pool_end, cf.methods_at - cf.pool_end);
  w.u2(static_cast<uint32_t>(cf.methods.size()));

  std::vector<uint8_t> code;
  std::vector<uint16_t> site_constants;
  std::vector<MarkPoint> marks;
  CodeRewriter rewriter(cf.pool, cf.major, plan.allocations && plan.clones);
  for (size_t i = 0; i < cf.methods.size(); ++i) {
    const MethodInfo& m = cf.methods[i];
    const MethodPlan& method = plans[i];
    if (!method.inject) {
      w.bytes(data + m.start, m.end - m.start);
      continue;
    }
    site_constants.clear();
    for (const InjectedSite& site : method.sites) site_constants.push_back(id_index(site.id));
    marks.clear();
    for (const auto& [after, k] : method.marks) {
      const InjectedSite& site = method.sites[k];
      marks.push_back({after, site_constants[k],
                       site.clones ? refs.marked_clone : site.instantiates ? refs.marked_class
                       : site.dimensions >= 2 ? refs.marked_multi : refs.marked,
                       static_cast<uint8_t>(site.dimensions >= 2 ? site.dimensions : 0)});
    }
    Injection injection{plan.calls, plan.calls ? id_index(method.id) : uint16_t{0}, refs.enter, refs.exit,
                        site_constants.data(), site_constants.size(), refs.alloc, refs.alloc_array, refs.alloc_multi,
                        refs.at, refs.alloc_class, refs.alloc_clone, marks.data(), marks.size()};
    code.clear();
    CodeOutcome outcome = rewriter.rewrite(data + m.code_at, m.code_length, m.name, m.descriptor, injection, code);
    if (outcome == CodeOutcome::kMalformed) {
      RewriteResult malformed;
      malformed.class_name = result.class_name;
      malformed.source_file = result.source_file;
      malformed.error = printable(result.class_name + " " + rewriter.error());
      return malformed;
    }
    if (outcome == CodeOutcome::kLeftAlone) {
      ++result.methods_left_alone;
      w.bytes(data + m.start, m.end - m.start);
      continue;
    }
    write_method(w, data, m, code);
    if (plan.calls) {
      result.methods.push_back({std::string(m.name), std::string(m.descriptor), method.id, {}});
      if (refs.at != 0) rewriter.call_lines(&result.methods.back().call_lines);
    }
    result.sites.insert(result.sites.end(), method.sites.begin(), method.sites.end());
    result.branches_widened += rewriter.widened();
  }
  w.bytes(data + cf.methods_end, size - cf.methods_end);
  if (result.methods.empty() && result.sites.empty()) return result;
  result.outcome = RewriteOutcome::kRewritten;
  result.bytes = std::move(out);
  return result;
}

}  // namespace

RewriteResult rewrite_class(const uint8_t* data, size_t size, const RewritePlan& plan) {
  RewriteResult result;
  ClassFile cf;
  if (data == nullptr) size = 0;
  bool parsed = parse_class(data, size, cf, &result.error);
  result.class_name = cf.class_name;  // also for a malformed class whose name could be read
  result.source_file = cf.source_file;
  if (!parsed) {
    result.outcome = RewriteOutcome::kMalformed;
    result.error = printable(result.error);
    return result;
  }
  result.outcome = RewriteOutcome::kNothingToDo;
  if (result.class_name == plan.tracker.class_name || (!plan.calls && !plan.allocations)) return result;

  // IDs first: the constants they need are appended to the pool.
  std::vector<MethodPlan> plans(cf.methods.size());
  std::string error;
  if (!assign_ids(data, cf, result.class_name, plan, plans, &error)) {
    RewriteResult malformed;
    malformed.class_name = result.class_name;
    malformed.source_file = result.source_file;
    malformed.error = printable(error);
    return malformed;
  }
  std::vector<uint32_t> distinct;
  TrackerNeeds needs{plan.calls};
  needs.positions = plan.calls && plan.call_positions;
  uint32_t injecting = 0;
  for (const MethodPlan& method : plans) {
    if (!method.inject) continue;
    ++injecting;
    if (plan.calls) distinct.push_back(method.id);
    for (const InjectedSite& site : method.sites) {
      distinct.push_back(site.id);
      (site.clones ? needs.clones : site.instantiates ? needs.classes : site.dimensions >= 2 ? needs.multi : site.type[0] == '[' ? needs.arrays : needs.news) = true;
      if (site.marked)
        (site.clones ? needs.marked_clone : site.instantiates ? needs.marked_class
         : site.dimensions >= 2 ? needs.marked_multi : needs.marked) = true;
    }
  }
  if (injecting == 0) return result;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());

  uint32_t first = cf.pool.count();
  PoolAppender tracker_entries(first + static_cast<uint32_t>(distinct.size()));
  TrackerRefs refs = append_tracker(tracker_entries, plan.tracker, needs);
  if (tracker_entries.next() > 0xffff) {
    result.methods_left_alone = injecting;  // the pool would overflow
    return result;
  }
  return rewrite_methods(data, size, cf, plan, plans, distinct, tracker_entries, refs, std::move(result));
}

}  // namespace fasthprof
