#include "sink/async_sink.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <new>
#include <utility>

#include "base/memory.h"
#include "base/stderr_line.h"

namespace fasthprof {
namespace {

constexpr size_t kBufferAlignment = 4096;

// The sizes a queued entry records for "seal the backend here" and "copy this slot's file range"
// rather than a buffer to write.
constexpr size_t kSealEntry = SIZE_MAX;
constexpr size_t kCopyEntry = SIZE_MAX - 1;

// What one output buffer of buffer_size bytes takes: whole pages.
size_t buffer_allocation(size_t buffer_size) {
  return (buffer_size + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

std::string error_text(int error) {
  char buffer[128];
  // GNU strerror_r: returns the text, which may or may not live in buffer.
  return strerror_r(error, buffer, sizeof buffer);
}

}  // namespace

void report_sink_error_to_stderr(const std::string& message) { write_stderr(message + "\n"); }

AsyncSink::AsyncSink(std::unique_ptr<SinkBackend> backend, AsyncSinkOptions options)
    : backend_(std::move(backend)), options_(std::move(options)) {}

std::unique_ptr<AsyncSink> AsyncSink::create(std::unique_ptr<SinkBackend> backend,
                                             AsyncSinkOptions options, std::string* error) {
  auto fail = [&](const std::string& message, SinkBackend* to_close) {
    if (error != nullptr) *error = message;
    if (to_close != nullptr) to_close->close();
    return std::unique_ptr<AsyncSink>();
  };
  if (backend == nullptr) return fail("no output backend", nullptr);
  if (options.buffer_size == 0 || options.buffer_count < 2) {
    return fail("the output sink needs at least two buffers of at least one byte", backend.get());
  }
  if (!options.reporter) options.reporter = report_sink_error_to_stderr;

  SinkBackend* raw_backend = backend.get();
  std::unique_ptr<AsyncSink> sink(new (std::nothrow) AsyncSink(std::move(backend), options));
  if (sink == nullptr) return fail("out of memory for the output sink", raw_backend);

  const size_t count = options.buffer_count;
  sink->buffers_.reset(new (std::nothrow) uint8_t*[count]());
  sink->sizes_.reset(new (std::nothrow) size_t[count]());
  sink->ranges_.reset(new (std::nothrow) FileRange[count]());
  if (sink->buffers_ == nullptr || sink->sizes_ == nullptr || sink->ranges_ == nullptr) {
    return fail("out of memory for the output sink", raw_backend);
  }
  const size_t allocation = buffer_allocation(options.buffer_size);
  for (size_t i = 0; i < count; ++i) {
    void* buffer = memory::allocate_aligned(allocation, kBufferAlignment);
    if (buffer == nullptr) {
      return fail("out of memory for " + std::to_string(count) + " output buffers of " +
                  std::to_string(options.buffer_size) + " bytes", raw_backend);
    }
    sink->buffers_[i] = static_cast<uint8_t*>(buffer);
  }
  sink->fill_ = sink->buffers_[0];

  // The io thread blocks every signal: they belong to the VM's threads, and a blocked SIGPIPE or
  // SIGXFSZ turns a broken pipe or a file size limit into an error return instead of a kill.
  sigset_t all_signals;
  sigset_t previous;
  sigfillset(&all_signals);
  pthread_sigmask(SIG_SETMASK, &all_signals, &previous);
  const int result = pthread_create(&sink->thread_, nullptr, io_thread_main, sink.get());
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (result != 0) {
    return fail("cannot start the output thread: " + error_text(result), raw_backend);
  }
  sink->thread_started_ = true;
  // Named here rather than by the thread itself, so that the name is visible once create() returns.
  pthread_setname_np(sink->thread_, "fasthprof-io");
  return sink;
}

AsyncSink::~AsyncSink() {
  close();
  if (buffers_ != nullptr) {
    const size_t allocation = buffer_allocation(options_.buffer_size);
    for (size_t i = 0; i < options_.buffer_count; ++i) {
      memory::deallocate_aligned(buffers_[i], allocation, kBufferAlignment);
    }
  }
}

void* AsyncSink::io_thread_main(void* self) {
  static_cast<AsyncSink*>(self)->run_io_thread();
  return nullptr;
}

void AsyncSink::run_io_thread() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [this] { return completed_ != submitted_ || stop_; });
    if (completed_ == submitted_) return;
    const size_t index = static_cast<size_t>(completed_ % options_.buffer_count);
    lock.unlock();
    write_pending(index);
    lock.lock();
    ++completed_;
    if (producer_waiting_ && submitted_ - completed_ <= wake_producer_at_) {
      producer_waiting_ = false;
      buffer_freed_.notify_one();
    }
  }
}

void AsyncSink::write(const void* data, size_t size) {
  if (closed_ || size == 0 || report_failed_.load(std::memory_order_relaxed)) return;
  const uint8_t* bytes = static_cast<const uint8_t*>(data);
  for (;;) {
    const size_t room = options_.buffer_size - fill_used_;
    if (size <= room) {
      memcpy(fill_ + fill_used_, bytes, size);
      fill_used_ += size;
      return;
    }
    memcpy(fill_ + fill_used_, bytes, room);
    fill_used_ += room;
    bytes += room;
    size -= room;
    hand_off(fill_used_);
    // The rest belongs to a report that is already lost.
    if (report_failed_.load(std::memory_order_relaxed)) return;
  }
}

bool AsyncSink::write_file_range(int fd, uint64_t offset, uint64_t size) {
  if (closed_ || size == 0 || report_failed_.load(std::memory_order_relaxed)) return true;
  if (fill_used_ > 0) hand_off(fill_used_);
  // The fill slot is the producer's until hand_off publishes it under mutex_.
  ranges_[submitted_ % options_.buffer_count] = FileRange{fd, offset, size};
  hand_off(kCopyEntry);
  return true;
}

void AsyncSink::hand_off(size_t entry) {
  const size_t count = options_.buffer_count;
  std::unique_lock<std::mutex> lock(mutex_);
  sizes_[submitted_ % count] = entry;
  ++submitted_;
  work_ready_.notify_one();
  // The next buffer is free once fewer than count buffers are queued or being written. A producer
  // that has to wait sleeps until half the ring is free, so that it is woken once per burst of
  // buffers rather than once per buffer.
  if (submitted_ - completed_ == count) {
    wait_until_in_flight(lock, count - std::max<size_t>(1, count / 2));
  }
  fill_ = buffers_[submitted_ % count];
  fill_used_ = 0;
}

void AsyncSink::wait_until_in_flight(std::unique_lock<std::mutex>& lock, uint64_t in_flight) {
  while (submitted_ - completed_ > in_flight) {
    wake_producer_at_ = in_flight;
    producer_waiting_ = true;
    buffer_freed_.wait(lock);
  }
  producer_waiting_ = false;
}

void AsyncSink::drain(bool seal) {
  if (fill_used_ > 0) hand_off(fill_used_);
  // Queued behind the buffers, so that the io thread seals after writing them.
  if (seal) hand_off(kSealEntry);
  std::unique_lock<std::mutex> lock(mutex_);
  wait_until_in_flight(lock, 0);
}

void AsyncSink::write_pending(size_t index) {
  // Only this thread sets the flag; the producer clears it only while this thread is idle.
  if (report_failed_.load(std::memory_order_relaxed)) return;
  const size_t size = sizes_[index];
  WriteResult result;
  if (size == kSealEntry) {
    result = backend_->seal();
  } else if (size == kCopyEntry) {
    // The slot's buffer carries nothing: it is the bounce buffer of a backend that reads the file.
    const FileRange& range = ranges_[index];
    result = backend_->copy_range(range.fd, range.offset, range.size, buffers_[index], options_.buffer_size);
  } else {
    result = backend_->write_all(buffers_[index], size);
  }
  if (!result.ok()) handle_write_error(result.error);
}

void AsyncSink::handle_write_error(int error) {
  std::string message = "fasthprof: error writing ";
  if (backend_->error_ends_output()) {
    message += "to " + backend_->name() + ": " + backend_->describe_error(error) +
               "; the connection was closed and no more output will be sent";
    backend_->close();
    output_ended_.store(true, std::memory_order_release);
  } else {
    message += backend_->name() + ": " + backend_->describe_error(error) + cut_back_report();
  }
  report_failed_.store(true, std::memory_order_release);
  report(message);
}

std::string AsyncSink::cut_back_report() {
  if (!backend_->can_truncate()) return "";
  // A partly written report would corrupt the file: readers would take the next report as its
  // continuation.
  const WriteResult truncated = backend_->truncate_to(report_start_);
  if (truncated.ok()) {
    return "; the file was truncated to the last complete report (" + std::to_string(backend_->stored_offset()) +
           " bytes)";
  }
  return "; the file could not be truncated to the last complete report: " + error_text(truncated.error);
}

void AsyncSink::abandon_report(const std::string& reason) {
  if (closed_) return;
  drain();
  if (report_failed_.load(std::memory_order_acquire)) return;
  std::string message = "fasthprof: " + reason;
  if (!output_ended_.load(std::memory_order_acquire)) message += cut_back_report();
  report_failed_.store(true, std::memory_order_release);
  report(message);
}

void AsyncSink::report(const std::string& message) {
  if (error_reported_) return;
  error_reported_ = true;
  options_.reporter(message);
}

void AsyncSink::begin_report() {
  if (closed_) return;
  drain(/*seal=*/true);
  if (!output_ended_.load(std::memory_order_acquire)) {
    report_failed_.store(false, std::memory_order_release);
  }
  report_start_ = backend_->offset();
}

bool AsyncSink::end_report() {
  if (closed_) return false;
  drain(/*seal=*/true);
  if (report_failed_.load(std::memory_order_acquire)) return false;
  // A report whose bytes reached the backend re-arms the message for the next failure; an empty
  // one proves nothing (a full device stays full).
  if (backend_->offset() > report_start_) error_reported_ = false;
  report_start_ = backend_->offset();
  return true;
}

void AsyncSink::flush() {
  if (!closed_) drain(/*seal=*/true);
}

void AsyncSink::close() {
  if (closed_) return;
  if (thread_started_) {
    drain(/*seal=*/true);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    work_ready_.notify_one();
    pthread_join(thread_, nullptr);
    thread_started_ = false;
  }
  closed_ = true;
  const WriteResult result = backend_->close();
  if (!result.ok()) {
    report("fasthprof: error closing " + backend_->name() + ": " + error_text(result.error));
  }
}

}  // namespace fasthprof
