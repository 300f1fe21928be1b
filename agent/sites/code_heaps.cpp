#include "sites/code_heaps.h"

#include <cstring>
#include <optional>

#include "hotspot_structs.h"

namespace fasthprof {

namespace {

constexpr uint8_t kFreeSegment = 0xff;
constexpr int kMaxHops = 1 << 16;

template <typename T>
T read_at(uintptr_t address) {
  T value;
  std::memcpy(&value, reinterpret_cast<const void*>(address), sizeof(T));
  return value;
}

}  // namespace

bool CodeHeaps::start(std::string* why) {
  auto heaps = hotspot_static_address("CodeCache", "_heaps");
  auto length = hotspot_field_offset("GrowableArrayBase", "_len");
  auto data = hotspot_field_offset("GrowableArray<int>", "_data");
  auto memory = hotspot_field_offset("CodeHeap", "_memory");
  auto segmap = hotspot_field_offset("CodeHeap", "_segmap");
  auto log2 = hotspot_field_offset("CodeHeap", "_log2_segment_size");
  auto low = hotspot_field_offset("VirtualSpace", "_low");
  auto high = hotspot_field_offset("VirtualSpace", "_high");
  auto block_size = hotspot_type_size("HeapBlock");
  auto header = hotspot_field_offset("HeapBlock", "_header");
  auto used = hotspot_field_offset("HeapBlock::Header", "_used");
  auto name = hotspot_field_offset("CodeBlob", "_name");
  if (!heaps || !length || !data || !memory || !segmap || !log2 || !low || !high || !block_size ||
      !header || !used || !name) {
    *why = "this VM does not describe its code heaps";
    return false;
  }
  auto array = read_at<uintptr_t>(*heaps);
  if (array == 0) {
    *why = "the code heaps are not made yet";
    return false;
  }
  int count = read_at<int>(array + *length);
  auto elements = read_at<uintptr_t>(array + *data);
  if (count <= 0 || count > kMaxHeaps || elements == 0) {
    *why = "the code heaps' list is not as expected";
    return false;
  }
  for (int i = 0; i < count; ++i) heaps_[i] = read_at<const char*>(elements + static_cast<uintptr_t>(i) * sizeof(void*));
  heap_count_ = count;
  memory_ = *memory;
  segmap_ = *segmap;
  log2_segment_ = *log2;
  low_ = *low;
  high_ = *high;
  block_size_ = *block_size;
  used_ = *header + *used;
  name_ = *name;
  return true;
}

uintptr_t CodeHeaps::blob_at(uintptr_t pc) const {
  for (int i = 0; i < heap_count_; ++i) {
    auto heap = reinterpret_cast<uintptr_t>(heaps_[i]);
    if (heap == 0) continue;
    auto start = read_at<uintptr_t>(heap + memory_ + low_);  // committed from its start: segment 0
    auto committed = read_at<uintptr_t>(heap + memory_ + high_);
    if (pc < start || pc >= committed) continue;
    int log2 = read_at<int>(heap + log2_segment_);
    auto map = read_at<uintptr_t>(heap + segmap_ + low_);
    auto map_committed = read_at<uintptr_t>(heap + segmap_ + high_);
    if (log2 <= 0 || log2 > 16 || map == 0) return 0;
    uintptr_t index = (pc - start) >> log2;
    if (map + index >= map_committed) return 0;
    for (int hops = 0; hops < kMaxHops; ++hops) {
      uint8_t step = read_at<uint8_t>(map + index);
      if (step == kFreeSegment || step > index) return 0;
      if (step == 0) {
        uintptr_t block = start + (index << log2);
        if (!read_at<bool>(block + used_)) return 0;
        return block + block_size_;
      }
      index -= step;
    }
    return 0;
  }
  return 0;
}

void CodeHeaps::learn(const void* code) {
  if (heap_count_ == 0 || (names_[0].load(std::memory_order_relaxed) != 0 && names_[1].load(std::memory_order_relaxed) != 0)) {
    return;
  }
  uintptr_t blob = blob_at(reinterpret_cast<uintptr_t>(code));
  if (blob == 0) return;
  auto name = read_at<const char*>(blob + name_);
  // A blob CompiledMethodLoad reported is an nmethod (a native method's wrapper is one too, by
  // another name): its name is a string of the VM's.
  if (name == nullptr) return;
  int which = std::strcmp(name, "nmethod") == 0 ? 0 : std::strcmp(name, "native nmethod") == 0 ? 1 : -1;
  if (which >= 0) names_[which].store(reinterpret_cast<uintptr_t>(name), std::memory_order_release);
}

bool CodeHeaps::in_nmethod(uintptr_t pc) const {
  uintptr_t compiled = names_[0].load(std::memory_order_acquire);
  if (compiled == 0) return false;
  uintptr_t blob = blob_at(pc);
  if (blob == 0) return false;
  auto name = read_at<uintptr_t>(blob + name_);
  return name == compiled || name == names_[1].load(std::memory_order_acquire);
}

}  // namespace fasthprof
