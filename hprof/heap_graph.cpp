#include "heap_graph.h"

#include <algorithm>
#include <cinttypes>

#include "base/hprof_format.h"

namespace fasthprof {

namespace {

constexpr uint8_t kInstance = static_cast<uint8_t>(HeapTag::kInstanceDump);
constexpr uint8_t kObjectArray = static_cast<uint8_t>(HeapTag::kObjectArrayDump);
constexpr uint8_t kPrimitiveArray = static_cast<uint8_t>(HeapTag::kPrimitiveArrayDump);
constexpr uint8_t kClassDump = static_cast<uint8_t>(HeapTag::kClassDump);
constexpr uint8_t kObjectType = static_cast<uint8_t>(BasicType::kObject);

SubRecordView at_offset(uint8_t tag, uint64_t offset) {
  SubRecordView sub;
  sub.tag = tag;
  sub.offset = offset;
  return sub;
}

}  // namespace

bool HeapGraph::build(const HprofModel& model, size_t dump, const HeapGraphOptions& options, std::string* error) {
  model_ = &model;
  references_ = dangling_ = 0;
  compressed_ = options.compressed_references;
  weak_ = options.weak_references;
  reference_class_ = 0;
  if (dump >= model.dumps().size()) {
    *error = "the file has no heap dump " + std::to_string(dump + 1);
    return false;
  }
  const bool framed = collected_ == dump && bytes_.data() == model.bytes().data();
  collected_ = wanted_ = SIZE_MAX - 1;
  if (!framed) {
    start_collecting(model.bytes());
    if (!frame_dump(model, dump, error)) return false;
  }
  index_objects();
  find_reference_class(model);
  return fill_edges(error);
}

void HeapGraph::sub_record(const HprofBytes& bytes, size_t dump, uint8_t tag, uint64_t offset) {
  if (wanted_ != kLastDump && dump != wanted_) return;
  if (dump != collected_) {
    start_collecting(bytes);
    // The model has not counted the objects yet: reserved for the most the file could hold (pages
    // never written cost no memory).
    offsets_.reserve(bytes.size() / (10 + bytes.id_size()) + 1);
    collected_ = dump;
  }
  take(tag, offset);
}

void HeapGraph::start_collecting(const HprofBytes& bytes) {
  bytes_ = bytes;
  offsets_.clear();
  ids_.clear();
  index_.release();
  directory_.clear();
  start_.clear();
  targets_.clear();
  roots_.clear();
  root_ids_.clear();
  layouts_.clear();
  edge_bound_ = duplicates_ = 0;
  min_id_ = UINT64_MAX;
  max_id_ = varying_ = first_id_ = last_id_ = 0;
  ascending_ = true;
}

// One sub-record of the first pass: an object's offset (what index_objects() needs to know of the
// IDs with it), a class dump's layout to make, a root; and a bound on the references (what the
// reference slots could hold) to reserve the edge array with: its pages that stay unwritten cost
// no memory.
void HeapGraph::take(uint8_t tag, uint64_t at) {
  const uint64_t n = bytes_.id_size();
  if (tag != kInstance && tag != kObjectArray && tag != kPrimitiveArray && tag != kClassDump) {
    roots_.push_back(GraphRoot{kNoNode, tag, at});
    root_ids_.push_back(bytes_.id(at + 1));
    ++edge_bound_;
    return;
  }
  const uint64_t id = bytes_.id(at + 1);
  if (offsets_.empty()) first_id_ = id;
  offsets_.push_back(at);
  min_id_ = std::min(min_id_, id);
  max_id_ = std::max(max_id_, id);
  varying_ |= id ^ first_id_;
  if (id < last_id_) ascending_ = false;
  last_id_ = id;
  switch (tag) {
    case kInstance: edge_bound_ += bytes_.u4(at + 1 + 2 * n + 4) / n + 1; break;
    case kObjectArray: edge_bound_ += uint64_t{bytes_.u4(at + 1 + n + 4)} + 1; break;
    case kClassDump: {
      const ClassDumpView view = decode_class_dump(bytes_, at_offset(kClassDump, at));
      Layout& layout = layouts_[view.class_id];
      layout.offset = at;
      layout.super_id = view.super_id;
      edge_bound_ += uint64_t{view.static_count} + 1;
      break;
    }
    default: break;
  }
}

// The first pass, when the model's did not collect the dump.
bool HeapGraph::frame_dump(const HprofModel& model, size_t dump, std::string* error) {
  HprofReader reader(bytes_.data(), bytes_.size());
  if (!reader.read_header()) {
    *error = reader.error().message;
    return false;
  }
  const HeapDumpInfo& info = model.dumps()[dump];
  // The model counted the dump's objects: one allocation, no copies as the array grows.
  offsets_.reserve(info.instances + info.object_arrays + info.primitive_arrays + info.classes);
  reader.seek(info.offset);
  RecordView record;
  while (reader.next_record(&record)) {
    if (record.tag == static_cast<uint8_t>(RecordTag::kHeapDumpEnd)) break;
    const bool whole = record.tag == static_cast<uint8_t>(RecordTag::kHeapDump);
    if (!whole && record.tag != static_cast<uint8_t>(RecordTag::kHeapDumpSegment)) continue;
    SubRecordReader subs(bytes_, record);
    SubRecordView sub;
    while (subs.next(&sub)) take(sub.tag, sub.offset);
    if (!subs.error().message.empty()) {
      *error = subs.error().message + " at byte " + std::to_string(subs.error().offset);
      return false;
    }
    if (whole) break;
  }
  if (!reader.error().message.empty()) {
    *error = reader.error().message + " at byte " + std::to_string(reader.error().offset);
    return false;
  }
  return true;
}

// A least-significant-digit radix sort by ID, 11 bits a pass over the bits in which the IDs differ
// (about 3 passes for the addresses of a heap of a few GiB): std::sort took 30 % of `dominators`'
// time on a JDK dump written by several threads (about 450 ascending runs), this a third of that.
void HeapGraph::sort_objects(BigVector<Object>* objects) {
  BigVector<Object>& list = *objects;
  uint64_t low = UINT64_MAX, high = 0;
  for (const Object& object : list) {
    low = std::min(low, object.id);
    high = std::max(high, object.id);
  }
  uint64_t varying = 0;
  for (const Object& object : list) varying |= object.id - low;
  if (varying == 0) return;
  const unsigned skip = static_cast<unsigned>(__builtin_ctzll(varying));
  const uint64_t top = (high - low) >> skip;
  const unsigned bits = 64 - static_cast<unsigned>(__builtin_clzll(top));
  constexpr unsigned kDigit = 11;
  BigVector<Object> other(list.size());
  std::vector<uint64_t> count(size_t{1} << kDigit);
  Object* from = list.data();
  Object* to = other.data();
  for (unsigned shift = 0; shift < bits; shift += kDigit) {
    auto digit = [&](const Object& o) { return static_cast<size_t>(((o.id - low) >> (skip + shift)) & ((1u << kDigit) - 1)); };
    std::fill(count.begin(), count.end(), 0);
    for (size_t i = 0; i < list.size(); ++i) ++count[digit(from[i])];
    uint64_t sum = 0;
    for (uint64_t& c : count) {
      const uint64_t here = c;
      c = sum;
      sum += here;
    }
    for (size_t i = 0; i < list.size(); ++i) to[count[digit(from[i])]++] = from[i];
    std::swap(from, to);
  }
  if (from != list.data()) list.swap(other);
}

// Node v is the object of the v-th smallest ID. With the bitmap, each offset goes straight to its
// node's place (the dump's order is the IDs' within each of HotSpot's dumping threads' runs, so
// this writes nearly in order); of two objects of one ID, the first in the dump is kept.
void HeapGraph::index_objects() {
  if (offsets_.empty()) return;
  if (!index_.plan(min_id_, max_id_, varying_, offsets_.size())) return index_sorted();
  for (uint64_t& at : offsets_) {
    if (!index_.add(bytes_.id(at + 1))) {
      at = UINT64_MAX;
      ++duplicates_;
    }
  }
  const uint64_t count = index_.finish();
  if (ascending_ && duplicates_ == 0) return;
  BigVector<uint64_t> placed(count);
  for (const uint64_t at : offsets_) {
    if (at != UINT64_MAX) placed[index_.rank(bytes_.id(at + 1))] = at;
  }
  offsets_.swap(placed);
}

void HeapGraph::index_sorted() {
  BigVector<Object> objects(offsets_.size());
  for (size_t i = 0; i < offsets_.size(); ++i) objects[i] = Object{bytes_.id(offsets_[i] + 1), offsets_[i]};
  BigVector<uint64_t>().swap(offsets_);
  auto by_id = [](const Object& a, const Object& b) { return a.id < b.id; };
  // The JDK's dumper and the agent write most objects in address or tag order already.
  if (!std::is_sorted(objects.begin(), objects.end(), by_id)) sort_objects(&objects);
  const auto kept = std::unique(objects.begin(), objects.end(), [](const Object& a, const Object& b) { return a.id == b.id; });
  duplicates_ = static_cast<uint64_t>(objects.end() - kept);
  objects.erase(kept, objects.end());
  offsets_.resize(objects.size());
  ids_.resize(objects.size());
  for (size_t i = 0; i < objects.size(); ++i) {
    offsets_[i] = objects[i].offset;
    ids_[i] = objects[i].id;
  }
  BigVector<Object>().swap(objects);
  // About one bucket per four objects: a lookup is one directory read and a search of a few IDs.
  const uint64_t buckets_wanted = std::max<uint64_t>(1, ids_.size() / 4);
  shift_ = 0;
  // Never 64: a shift by the width of the type is undefined (x86 shifts by 0: an endless loop).
  while (shift_ < 63 && ((max_id_ - min_id_) >> shift_) >= buckets_wanted) ++shift_;
  const uint64_t buckets = ((max_id_ - min_id_) >> shift_) + 1;
  directory_.assign(buckets + 1, 0);
  for (const uint64_t id : ids_) ++directory_[((id - min_id_) >> shift_) + 1];
  for (size_t b = 1; b < directory_.size(); ++b) directory_[b] += directory_[b - 1];
}

uint32_t HeapGraph::find(uint64_t id) const {
  if (offsets_.empty() || id < min_id_ || id > max_id_) return kNoNode;
  if (!index_.empty()) {
    const uint32_t rank = index_.rank(id);
    return rank == IdIndex::kAbsent ? kNoNode : rank + 1;
  }
  const uint64_t bucket = (id - min_id_) >> shift_;
  uint32_t low = directory_[bucket];
  uint32_t high = directory_[bucket + 1];
  while (low < high) {
    const uint32_t middle = low + (high - low) / 2;
    if (ids_[middle] < id) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low < ids_.size() && ids_[low] == id ? low + 1 : kNoNode;
}

void HeapGraph::find_reference_class(const HprofModel& model) {
  for (const auto& [class_id, layout] : layouts_) {
    if (model.class_name_by_object_id(class_id) == "java.lang.ref.Reference") reference_class_ = class_id;
  }
}

const HeapGraph::Layout* HeapGraph::layout(uint64_t class_id) {
  const auto found = layouts_.find(class_id);
  if (found == layouts_.end()) return nullptr;
  if (found->second.state == 2) return &found->second;
  // The classes up the chain not made yet, then made from the top down.
  std::vector<Layout*> chain;
  for (auto at = found; at != layouts_.end() && at->second.state == 0; at = layouts_.find(at->second.super_id)) {
    at->second.state = 1;
    chain.push_back(&at->second);
    if (at->second.super_id == 0) break;
  }
  for (size_t i = chain.size(); i-- > 0;) {
    const auto super = layouts_.find(chain[i]->super_id);
    make_layout(chain[i], super != layouts_.end() && super->second.state == 2 ? &super->second : nullptr);
  }
  return found->second.state == 2 ? &found->second : nullptr;
}

// An instance's values hold its class's own fields first, then its superclass's.
void HeapGraph::make_layout(Layout* layout, const Layout* super) {
  const uint64_t n = bytes_.id_size();
  const ClassDumpView view = decode_class_dump(bytes_, at_offset(kClassDump, layout->offset));
  uint64_t position = 0;
  uint64_t field = view.fields_at;
  for (uint32_t i = 0; i < view.field_count; ++i, field += n + 1) {
    const uint8_t type = bytes_.u1(field + n);
    if (type == kObjectType) {
      ++layout->reference_fields;
      const bool referent = view.class_id == reference_class_ && model_->utf8(bytes_.id(field)) == "referent";
      if ((weak_ || !referent) && position <= UINT32_MAX) layout->references.push_back(static_cast<uint32_t>(position));
    }
    position += bytes_.value_size(type);
  }
  if (super != nullptr) {
    for (uint32_t slot : super->references) {
      if (position + slot <= UINT32_MAX) layout->references.push_back(static_cast<uint32_t>(position + slot));
    }
    layout->reference_fields += super->reference_fields;
    position += super->value_bytes;
  }
  layout->value_bytes = static_cast<uint32_t>(std::min<uint64_t>(position, UINT32_MAX));
  layout->state = 2;
}

uint32_t HeapGraph::append(uint64_t id) {
  if (id == 0) return 0;
  const uint32_t node = find(id);
  if (node == kNoNode) {
    ++dangling_;
    return 0;
  }
  targets_.push_back(node);
  return 1;
}

// The second pass, in node order (which is the dump's order when its IDs ascend): each node's
// references, resolved to nodes.
bool HeapGraph::fill_edges(std::string* error) {
  if (offsets_.size() >= UINT32_MAX - 1) {
    *error = "the dump holds " + std::to_string(offsets_.size()) + " objects, more than 32-bit indices reach";
    return false;
  }
  const uint64_t n = bytes_.id_size();
  const uint32_t count = nodes();
  start_.resize(size_t{count} + 1);
  targets_.reserve(std::min<uint64_t>(edge_bound_, UINT32_MAX));
  start_[kSuperRoot] = 0;
  size_t kept_roots = 0;
  for (size_t i = 0; i < roots_.size(); ++i) {
    GraphRoot root = roots_[i];
    root.node = find(root_ids_[i]);
    if (root.node == kNoNode) {
      ++dangling_;
      continue;
    }
    targets_.push_back(root.node);
    roots_[kept_roots++] = root;
  }
  roots_.resize(kept_roots);
  root_ids_.clear();
  root_ids_.shrink_to_fit();
  // In ID (address) order the class changes at nearly every instance, among a few: a small
  // direct-mapped cache in front of the map of layouts.
  struct Cached {
    uint64_t class_id = 0;
    const Layout* layout = nullptr;
  };
  std::vector<Cached> cache(64);
  for (uint32_t v = 1; v < count; ++v) {
    if (targets_.size() >= UINT32_MAX) {
      *error = "the dump holds more references than 32-bit indices reach";
      return false;
    }
    start_[v] = static_cast<uint32_t>(targets_.size());
    const uint64_t at = offsets_[v - 1];
    switch (bytes_.u1(at)) {
      case kInstance: {
        const uint64_t class_id = bytes_.id(at + 1 + n + 4);
        const uint32_t value_bytes = bytes_.u4(at + 1 + 2 * n + 4);
        const uint64_t values = at + 1 + 2 * n + 8;
        Cached& cached = cache[(class_id ^ (class_id >> 6) ^ (class_id >> 12)) & 63];
        if (cached.class_id != class_id || cached.layout == nullptr) cached = Cached{class_id, this->layout(class_id)};
        const Layout* layout = cached.layout;
        if (layout != nullptr) {
          for (uint32_t slot : layout->references) {
            if (uint64_t{slot} + n <= value_bytes) append(bytes_.id(values + slot));
          }
        }
        append(class_id);
        break;
      }
      case kObjectArray: {
        const uint32_t elements = bytes_.u4(at + 1 + n + 4);
        const uint64_t values = at + 1 + 2 * n + 8;
        for (uint64_t i = 0; i < elements; ++i) append(bytes_.id(values + i * n));
        append(bytes_.id(at + 1 + n + 8));
        break;
      }
      case kClassDump: {
        const ClassDumpView view = decode_class_dump(bytes_, at_offset(kClassDump, at));
        uint64_t field = view.statics_at;
        for (uint32_t i = 0; i < view.static_count; ++i) {
          const uint8_t type = bytes_.u1(field + n);
          if (type == kObjectType) append(bytes_.id(field + n + 1));
          field += n + 1 + bytes_.value_size(type);
        }
        append(view.loader_id);
        break;
      }
      default: break;
    }
  }
  if (targets_.size() >= UINT32_MAX) {
    *error = "the dump holds more references than 32-bit indices reach";
    return false;
  }
  start_[count] = static_cast<uint32_t>(targets_.size());
  references_ = targets_.size();
  return true;
}

ObjectKind HeapGraph::kind(uint32_t node) const {
  if (node == kSuperRoot) return ObjectKind::kSuperRoot;
  switch (bytes_.u1(offset(node))) {
    case kInstance: return ObjectKind::kInstance;
    case kObjectArray: return ObjectKind::kObjectArray;
    case kPrimitiveArray: return ObjectKind::kPrimitiveArray;
    default: return ObjectKind::kClass;
  }
}

uint64_t HeapGraph::shallow_bytes(uint32_t node) const {
  if (node == kSuperRoot) return 0;
  const uint64_t at = offset(node);
  const uint32_t n = bytes_.id_size();
  if (compressed_) return compressed_bytes(at);
  switch (bytes_.u1(at)) {
    case kInstance: return shallow_instance_bytes(n, bytes_.u4(at + 1 + 2 * n + 4));
    case kObjectArray: return shallow_array_bytes(n, n, bytes_.u4(at + 1 + n + 4));
    case kPrimitiveArray:
      return shallow_array_bytes(n, bytes_.value_size(bytes_.u1(at + 1 + n + 8)), bytes_.u4(at + 1 + n + 4));
    default: return 0;
  }
}

uint64_t HeapGraph::compressed_bytes(uint64_t at) const {
  const uint32_t n = bytes_.id_size();
  auto round = [](uint64_t bytes) { return (bytes + 7) & ~uint64_t{7}; };
  switch (bytes_.u1(at)) {
    case kInstance: {
      uint64_t values = bytes_.u4(at + 1 + 2 * n + 4);
      const auto found = layouts_.find(bytes_.id(at + 1 + n + 4));
      // Each reference the dump holds at the identifier size takes 4 bytes in the JVM.
      if (found != layouts_.end() && n > 4) values -= std::min<uint64_t>(values, uint64_t{found->second.reference_fields} * (n - 4));
      return round(12 + values);
    }
    case kObjectArray: return round(16 + uint64_t{bytes_.u4(at + 1 + n + 4)} * 4);
    case kPrimitiveArray:
      return round(16 + uint64_t{bytes_.u4(at + 1 + n + 4)} * bytes_.value_size(bytes_.u1(at + 1 + n + 8)));
    default: return 0;
  }
}

HeapGraph::Facts HeapGraph::facts(uint32_t node) const {
  const uint64_t at = offset(node);
  const uint32_t n = bytes_.id_size();
  const uint64_t shallow = shallow_bytes(node);
  switch (bytes_.u1(at)) {
    case kInstance: return Facts{ObjectKind::kInstance, bytes_.id(at + 1 + n + 4), shallow};
    case kObjectArray: return Facts{ObjectKind::kObjectArray, bytes_.id(at + 1 + n + 8), shallow};
    case kPrimitiveArray: return Facts{ObjectKind::kPrimitiveArray, bytes_.u1(at + 1 + n + 8), shallow};
    default: return Facts{ObjectKind::kClass, bytes_.id(at + 1), shallow};
  }
}

uint64_t HeapGraph::class_id(uint32_t node) const {
  if (node == kSuperRoot) return 0;
  const uint64_t at = offset(node);
  const uint32_t n = bytes_.id_size();
  switch (bytes_.u1(at)) {
    case kInstance: return bytes_.id(at + 1 + n + 4);
    case kObjectArray: return bytes_.id(at + 1 + n + 8);
    case kPrimitiveArray: return 0;
    default: return bytes_.id(at + 1);
  }
}

uint8_t HeapGraph::element_type(uint32_t node) const {
  if (node == kSuperRoot) return 0;
  const uint64_t at = offset(node);
  return bytes_.u1(at) == kPrimitiveArray ? bytes_.u1(at + 1 + bytes_.id_size() + 8) : 0;
}

std::string HeapGraph::type_name(uint32_t node) const {
  switch (kind(node)) {
    case ObjectKind::kSuperRoot: return "<roots>";
    case ObjectKind::kPrimitiveArray: {
      const char* name = primitive_array_name(element_type(node));
      return name != nullptr ? name : "<primitive array>";
    }
    case ObjectKind::kClass: return "class " + model_->class_name_by_object_id(id(node));
    default: return model_->class_name_by_object_id(class_id(node));
  }
}

std::string HeapGraph::field_name(uint64_t class_id, uint64_t value_offset) const {
  const uint64_t n = bytes_.id_size();
  uint64_t position = 0;
  uint64_t current = class_id;
  for (size_t hops = 0; current != 0 && hops <= layouts_.size(); ++hops) {
    const auto found = layouts_.find(current);
    if (found == layouts_.end()) break;
    const ClassDumpView view = decode_class_dump(bytes_, at_offset(kClassDump, found->second.offset));
    uint64_t field = view.fields_at;
    for (uint32_t i = 0; i < view.field_count; ++i, field += n + 1) {
      if (position == value_offset) {
        return model_->class_name_by_object_id(current) + "." + std::string(model_->utf8(bytes_.id(field)));
      }
      position += bytes_.value_size(bytes_.u1(field + n));
    }
    current = view.super_id;
  }
  return "?";
}

std::string HeapGraph::reference_name(uint32_t from, uint32_t to) const {
  const uint64_t target = id(to);
  const uint64_t n = bytes_.id_size();
  if (from == kSuperRoot) {
    for (const GraphRoot& root : roots_) {
      if (root.node != to) continue;
      const char* name = heap_tag_name(root.tag);
      std::string text = name != nullptr ? name : "ROOT";
      const RootView view = decode_root(bytes_, at_offset(root.tag, root.offset));
      if (root.tag == static_cast<uint8_t>(HeapTag::kRootJavaFrame) || root.tag == static_cast<uint8_t>(HeapTag::kRootJniLocal)) {
        text += " (thread serial " + std::to_string(view.thread_serial) + ", frame " + std::to_string(view.frame) + ")";
      }
      return text;
    }
    return "?";
  }
  const uint64_t at = offset(from);
  switch (kind(from)) {
    case ObjectKind::kInstance: {
      const uint64_t cls = bytes_.id(at + 1 + n + 4);
      const uint32_t value_bytes = bytes_.u4(at + 1 + 2 * n + 4);
      const auto found = layouts_.find(cls);
      if (found != layouts_.end()) {
        // The slots the graph follows: the referent too when it was built to cross weak references.
        for (uint64_t position : found->second.references) {
          if (position + n <= value_bytes && bytes_.id(at + 1 + 2 * n + 8 + position) == target) {
            return field_name(cls, position);
          }
        }
      }
      return cls == target ? "<class>" : "?";
    }
    case ObjectKind::kObjectArray: {
      const uint32_t elements = bytes_.u4(at + 1 + n + 4);
      for (uint64_t i = 0; i < elements; ++i) {
        if (bytes_.id(at + 1 + 2 * n + 8 + i * n) == target) return "[" + std::to_string(i) + "]";
      }
      return bytes_.id(at + 1 + n + 8) == target ? "<class>" : "?";
    }
    case ObjectKind::kClass: {
      const ClassDumpView view = decode_class_dump(bytes_, at_offset(kClassDump, at));
      uint64_t field = view.statics_at;
      for (uint32_t i = 0; i < view.static_count; ++i) {
        const uint8_t type = bytes_.u1(field + n);
        if (type == kObjectType && bytes_.id(field + n + 1) == target) {
          return "static " + model_->class_name_by_object_id(view.class_id) + "." + std::string(model_->utf8(bytes_.id(field)));
        }
        field += n + 1 + bytes_.value_size(type);
      }
      return view.loader_id == target ? "<classLoader>" : "?";
    }
    default: return "?";
  }
}

size_t HeapGraph::bytes() const {
  size_t layouts = 0;
  for (const auto& [class_id, layout] : layouts_) layouts += sizeof(layout) + 16 + layout.references.capacity() * 4;
  return (offsets_.size() + ids_.size()) * 8 + index_.bytes() + directory_.capacity() * 4 + start_.capacity() * 4 +
         targets_.size() * 4 + roots_.capacity() * sizeof(GraphRoot) + layouts;
}

}  // namespace fasthprof
