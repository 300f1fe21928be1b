// The queue between the allocation callbacks (many producers, one per Java thread) and the writer
// thread (one consumer at a time): a moodycamel ConcurrentQueue of AllocationEvents, each producer
// with its own explicit producer token, so that a push is a store into the thread's own block.
//
//   callback thread A --push--> [ A's blocks ] --+
//   callback thread B --push--> [ B's blocks ] --+--> drain() (writer thread, bulk dequeue)
//   callback thread C --push--> [ C's blocks ] --+
//
// Bounded: blocks for `capacity` events are allocated up front and recycled by their producer; a
// push that needs a new block takes one from the pool, or allocates one while the queue holds fewer
// than `capacity` events; above that the producer waits for the writer (counts stay exact, nothing
// is dropped). A producer waits only while the writer makes progress: if no drain completes for
// `stall_limit_ms`, it allocates anyway, so a writer stuck behind a lock held by the waiting thread
// itself (an agent thread allocating inside a report) cannot deadlock the VM.
//
// The queue's blocks, block indexes and producers, and the drain batch, come from memory::.
//
// Threads: push() from any thread with its own Producer; drain() by one thread at a time (the caller
// serializes consumers); the statistics from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/memory.h"
#include "sections/allocation_event.h"

namespace fasthprof {

struct AllocationPipelineOptions {
  size_t capacity = size_t{1} << 18;  // events queued before producers wait (4 MiB of events)
  size_t drain_batch = 4096;          // events taken per bulk dequeue
  uint32_t stall_limit_ms = 100;
};

struct PipelineStats {
  uint64_t deepest_queue = 0;  // most events seen waiting at a drain
  uint64_t producer_waits = 0;  // pushes that had to wait for the writer
  uint64_t forced_growth = 0;   // pushes that allocated past the capacity because the writer stalled
  uint64_t drained = 0;         // events handed to drain() callers
};

class AllocationPipeline {
 public:
  class Producer;
  struct ProducerDeleter {
    void operator()(Producer* producer) const;
  };
  using ProducerPtr = std::unique_ptr<Producer, ProducerDeleter>;

  // Allocates the queue and its initial blocks. Never fails (out of memory traps).
  explicit AllocationPipeline(const AllocationPipelineOptions& options = {});
  ~AllocationPipeline();
  AllocationPipeline(const AllocationPipeline&) = delete;
  AllocationPipeline& operator=(const AllocationPipeline&) = delete;

  // A producer for the calling thread. Allocates (a producer, or recycles one whose owner
  // ended). The pipeline must outlive it; destroying it leaves its queued events to drain(). Any
  // thread.
  ProducerPtr make_producer();

  // Queues one event. Never drops: waits while the queue is full (see above). Does not allocate in
  // the steady state. Only the producer's owning thread.
  void push(Producer& producer, const AllocationEvent& event);

  // Hands every queued event to fn(std::span<const AllocationEvent>) in batches, until the queue
  // looks empty; returns how many. Events of one producer keep their order. Allocates nothing
  // after the first call. One consumer at a time.
  template <typename Fn>
  size_t drain(Fn&& fn) {
    size_t total = 0;
    note_depth();
    for (;;) {
      size_t taken = dequeue_batch();
      if (taken == 0) break;
      fn(std::span<const AllocationEvent>(batch_.data(), taken));
      total += taken;
    }
    finish_drain(total);
    return total;
  }

  // Events waiting now (approximate while producers run).
  size_t size_approx() const;

  PipelineStats stats() const;

 private:
  struct Queue;
  size_t dequeue_batch();
  void note_depth();
  void finish_drain(size_t drained);
  void wait_for_room(Producer& producer, const AllocationEvent& event);

  AllocationPipelineOptions options_;
  std::unique_ptr<Queue> queue_;
  std::vector<AllocationEvent, memory::Allocator<AllocationEvent>> batch_;
  std::atomic<uint64_t> drains_completed_{0};
  std::atomic<uint64_t> deepest_{0};
  std::atomic<uint64_t> waits_{0};
  std::atomic<uint64_t> forced_growth_{0};
  std::atomic<uint64_t> drained_{0};
};

}  // namespace fasthprof
