#include "queues/allocation_pipeline.h"

#include <sched.h>
#include <time.h>

#include <cstring>

#include "base/clock.h"
#include "base/memory.h"
#include "concurrentqueue/concurrentqueue.h"

namespace fasthprof {
namespace {

// moodycamel frees without saying how much; memory::deallocate needs the size, so every piece of
// the queue (blocks, block indexes, producers) carries its size in a header of its own. 16 bytes
// keep the 16-byte alignment that memory::allocate gives.
constexpr size_t kSizeHeader = 16;

// Large blocks make a bulk dequeue long runs of one producer's events; a large initial block index
// lets a producer hold many blocks before its index would have to be reallocated. The queue's memory
// comes from memory:: (jemalloc where the agent has it, counted in the agent's figures).
struct PipelineTraits : moodycamel::ConcurrentQueueDefaultTraits {
  static const size_t BLOCK_SIZE = 256;
  static const size_t EXPLICIT_INITIAL_INDEX_SIZE = 64;

  static void* malloc(size_t size) {
    auto* block = static_cast<char*>(memory::allocate(size + kSizeHeader));
    if (block == nullptr) return nullptr;  // the queue reports a failed enqueue
    std::memcpy(block, &size, sizeof(size));
    return block + kSizeHeader;
  }
  static void free(void* pointer) {
    if (pointer == nullptr) return;
    char* block = static_cast<char*>(pointer) - kSizeHeader;
    size_t size = 0;
    std::memcpy(&size, block, sizeof(size));
    memory::deallocate(block, size + kSizeHeader);
  }
};

using EventQueue = moodycamel::ConcurrentQueue<AllocationEvent, PipelineTraits>;

void pause_briefly(int round) {
  if (round < 16) {
    sched_yield();
    return;
  }
  timespec delay{0, 50 * 1000};
  nanosleep(&delay, nullptr);
}

}  // namespace

struct AllocationPipeline::Queue {
  explicit Queue(size_t capacity) : events(capacity), consumer(events) {}
  EventQueue events;
  moodycamel::ConsumerToken consumer;  // used by one drain() at a time
};

class AllocationPipeline::Producer {
 public:
  explicit Producer(EventQueue& queue) : token(queue) {}
  moodycamel::ProducerToken token;
};

AllocationPipeline::AllocationPipeline(const AllocationPipelineOptions& options)
    : options_(options),
      queue_(std::make_unique<Queue>(options.capacity)),
      batch_(options.drain_batch == 0 ? 1 : options.drain_batch) {
  if (options_.drain_batch == 0) options_.drain_batch = 1;
}

AllocationPipeline::~AllocationPipeline() = default;

void AllocationPipeline::ProducerDeleter::operator()(Producer* producer) const { delete producer; }

AllocationPipeline::ProducerPtr AllocationPipeline::make_producer() {
  return ProducerPtr(new Producer(queue_->events));
}

void AllocationPipeline::push(Producer& producer, const AllocationEvent& event) {
  if (queue_->events.try_enqueue(producer.token, event)) return;
  wait_for_room(producer, event);
}

void AllocationPipeline::wait_for_room(Producer& producer, const AllocationEvent& event) {
  EventQueue& events = queue_->events;
  if (events.size_approx() < options_.capacity && events.enqueue(producer.token, event)) return;
  waits_.fetch_add(1, std::memory_order_relaxed);
  uint64_t seen_drains = drains_completed_.load(std::memory_order_acquire);
  uint64_t since = monotonic_ms();
  for (int round = 0;; ++round) {
    pause_briefly(round);
    if (events.try_enqueue(producer.token, event)) return;
    if (events.size_approx() < options_.capacity && events.enqueue(producer.token, event)) return;
    uint64_t drains = drains_completed_.load(std::memory_order_acquire);
    uint64_t now = monotonic_ms();
    if (drains != seen_drains) {
      seen_drains = drains;
      since = now;
    } else if (now - since >= options_.stall_limit_ms) {
      forced_growth_.fetch_add(1, std::memory_order_relaxed);
      while (!events.enqueue(producer.token, event)) pause_briefly(round);
      return;
    }
  }
}

size_t AllocationPipeline::dequeue_batch() {
  return queue_->events.try_dequeue_bulk(queue_->consumer, batch_.data(), options_.drain_batch);
}

void AllocationPipeline::note_depth() {
  uint64_t depth = queue_->events.size_approx();
  uint64_t deepest = deepest_.load(std::memory_order_relaxed);
  while (depth > deepest && !deepest_.compare_exchange_weak(deepest, depth, std::memory_order_relaxed)) {
  }
}

void AllocationPipeline::finish_drain(size_t drained) {
  drained_.fetch_add(drained, std::memory_order_relaxed);
  drains_completed_.fetch_add(1, std::memory_order_release);
}

size_t AllocationPipeline::size_approx() const { return queue_->events.size_approx(); }

PipelineStats AllocationPipeline::stats() const {
  PipelineStats stats;
  stats.deepest_queue = deepest_.load(std::memory_order_relaxed);
  stats.producer_waits = waits_.load(std::memory_order_relaxed);
  stats.forced_growth = forced_growth_.load(std::memory_order_relaxed);
  stats.drained = drained_.load(std::memory_order_relaxed);
  return stats;
}

}  // namespace fasthprof
