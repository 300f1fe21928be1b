// For tests of the sink and of backends layered on it: a SinkBackend that keeps its bytes in memory,
// a "disk" with a quota that fills up, optional slowness and truncation, and a record of which
// threads wrote. The state outlives the backend so that tests can inspect it after close().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sink/sink_backend.h"

namespace fasthprof {

struct MemoryBackendState {
  std::vector<uint8_t> data;
  size_t quota = SIZE_MAX;
  bool can_truncate = true;
  bool closed = false;
  int write_calls = 0;
  std::chrono::microseconds delay{0};
  std::mutex mutex;                       // guards writers
  std::vector<std::thread::id> writers;   // the thread of every write_all()
};

class MemoryBackend final : public SinkBackend {
 public:
  explicit MemoryBackend(MemoryBackendState* state) : state_(state) {}

  WriteResult write_all(const void* data, size_t size) override {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->writers.push_back(std::this_thread::get_id());
    }
    ++state_->write_calls;
    if (state_->delay.count() > 0) std::this_thread::sleep_for(state_->delay);
    const uint8_t* bytes = static_cast<const uint8_t*>(data);
    const size_t used = state_->data.size();
    const size_t room = state_->quota > used ? state_->quota - used : 0;
    state_->data.insert(state_->data.end(), bytes, bytes + (size < room ? size : room));
    return size <= room ? WriteResult{} : WriteResult{ENOSPC};
  }
  uint64_t offset() const override { return state_->data.size(); }
  bool can_truncate() const override { return state_->can_truncate; }
  WriteResult truncate_to(uint64_t offset) override {
    if (!state_->can_truncate) return {EINVAL};
    state_->data.resize(offset);
    return {};
  }
  bool error_ends_output() const override { return false; }
  const std::string& name() const override { return name_; }
  WriteResult close() override {
    state_->closed = true;
    return {};
  }

 private:
  MemoryBackendState* state_;
  std::string name_ = "memory";
};

// size bytes that do not compress, the same for the same seed.
inline std::vector<uint8_t> noise_bytes(size_t size, uint32_t seed) {
  std::vector<uint8_t> bytes(size);
  uint32_t x = seed * 2654435761u + 1;
  for (uint8_t& b : bytes) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
  }
  return bytes;
}

}  // namespace fasthprof
