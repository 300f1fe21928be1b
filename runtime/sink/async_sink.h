// The sink: a multi-buffered OutputStream whose bytes a background thread ("fasthprof-io") writes
// to a SinkBackend, so that the producer (the report writer) never waits for the disk or network
// unless it has filled every buffer while the io thread is still writing.
//
//   producer                               io thread
//   write() ─copy─▶ buffers_[submitted_ % n]   buffers_[completed_ % n] ─write_all()─▶ backend
//   write_file_range() ─▶ ranges_[submitted_ % n]                  ─copy_range()─▶ backend
//
//   ring of n buffers (indices mod n):
//     completed_ .. submitted_ - 1   full: queued for, or being written by, the io thread
//     submitted_                     being filled by the producer (fill_, fill_used_)
//     the others                     free
//
// hand_off() records the fill buffer's size and bumps submitted_ under mutex_; the io thread bumps
// completed_ under mutex_ once a buffer is on the backend, which hands that buffer back.
// With n = 2 this is plain double buffering; more buffers let the io thread start the next write
// without waiting for the producer to wake up.
//
// Errors (docs/decisions.md, "Binary format"): a failed write cuts a truncatable backend back to where
// the current report began and drops the rest of that report; begin_report() starts the next one
// clean. A backend whose error ends output (a socket) is closed and everything later is dropped.
// Either way one message goes to the reporter, and no more until a report has succeeded again.
//
// Reports end on a seal() of the backend (queued to the io thread behind the report's last buffer):
// a compressing backend ends its compressed unit there, so the output is readable after every report.
#pragma once

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "sink/output_stream.h"
#include "sink/sink_backend.h"

namespace fasthprof {

// Receives one complete line per error, without a newline. Called on the io thread (or on the
// caller of close()).
using SinkErrorReporter = std::function<void(const std::string& message)>;

// Writes "<message>\n" to stderr in one write() call.
void report_sink_error_to_stderr(const std::string& message);

struct AsyncSinkOptions {
  // Bytes per buffer, and how many buffers (at least 2; 2 is plain double buffering). Measured with
  // bench_sink on a shared 2-core machine writing to the page cache at about 5 GB/s, alternating
  // configurations: 4 x 1 MiB reached 84-96 % of direct write() with the least CPU; 2 x 1 MiB
  // 73-77 % (the io thread idles while the woken producer waits to be scheduled); 16 x 256 KiB
  // 81-84 %; 4 x 2 MiB 62-91 %. 4 MiB in all keeps the agent's memory bounded.
  size_t buffer_size = size_t{1} << 20;
  size_t buffer_count = 4;
  SinkErrorReporter reporter = report_sink_error_to_stderr;
};

class AsyncSink final : public OutputStream {
 public:
  // Allocates the buffers and starts the io thread. Returns null with *error set when memory or
  // the thread cannot be had; the backend is then closed. Any thread.
  static std::unique_ptr<AsyncSink> create(std::unique_ptr<SinkBackend> backend,
                                           AsyncSinkOptions options, std::string* error);

  // close()s.
  ~AsyncSink() override;

  AsyncSink(const AsyncSink&) = delete;
  AsyncSink& operator=(const AsyncSink&) = delete;

  // Appends size bytes. Copies into the fill buffer; when it is full, hands it to the io thread
  // and waits until the next buffer is free if every other one is still queued or being written
  // (no data is dropped for speed). Never allocates. After an error (see failed()) and after
  // close() the bytes are dropped.
  // Producer only: the caller serializes all producer calls (write, begin_report, end_report,
  // flush, close); they must not run concurrently with each other.
  void write(const void* data, size_t size) override;

  // Appends size bytes of the file fd from offset: queued like a buffer (the ring slot it takes
  // carries no bytes), then the io thread has the backend copy them (FileBackend: in the kernel)
  // between the buffers before and after it. fd must stay open until the next flush(),
  // end_report(), abandon_report() or close(). Always true: errors, reading fd's included, are
  // the sink's (a write error of the report). Producer only.
  bool write_file_range(int fd, uint64_t offset, uint64_t size) override;

  // Marks the start of a report: everything written so far reaches the backend and is sealed
  // first (waits), then the backend offset is remembered as the point to cut back to if this report fails.
  // Clears the error of a previous failed report, so that this one tries again (unless output
  // has ended). Does not allocate. Producer only.
  void begin_report();

  // Hands over what is buffered and waits until it is on the backend, sealed. Returns whether the report
  // begun by begin_report() reached the backend completely (false after an error in it, or when
  // output has ended). Producer only.
  bool end_report();

  // Gives up the current report for a reason of the caller's (a heap dump whose staging file
  // could not be written): as after a write error, a truncatable backend is cut back to where
  // the report began, the rest of the report is dropped, end_report() returns false and one
  // message ("fasthprof: <reason>; the file was truncated to the last complete report (N bytes)")
  // goes to the reporter. Does nothing when the report already failed. Waits for the io thread
  // first. Producer only.
  void abandon_report(const std::string& reason);

  // Hands over what is buffered and waits until it is on the backend, sealed (or dropped after an
  // error). Producer only.
  void flush();

  // Flushes, stops and joins the io thread, closes the backend. Idempotent. A close error of the
  // backend is reported like a write error. Producer only (or the owner once producing is over).
  void close();

  // Whether bytes are currently being dropped: the current report failed or output has ended.
  // Set by the io thread, so it may lag the write that failed. Any thread.
  bool failed() const { return report_failed_.load(std::memory_order_acquire); }

  // Whether output has ended for good (a broken connection). Any thread.
  bool output_ended() const { return output_ended_.load(std::memory_order_acquire); }

 private:
  AsyncSink(std::unique_ptr<SinkBackend> backend, AsyncSinkOptions options);

  static void* io_thread_main(void* self);
  void run_io_thread();
  // Producer: queues the fill buffer for the io thread, with entry as its size (fill_used_, or
  // kSealEntry: seal the backend there, write nothing), and waits until the next one is free.
  void hand_off(size_t entry);
  // Producer: hand_off() of a non-empty fill buffer, with seal a backend seal() behind it (the io
  // thread runs it, so that a compressing backend never compresses on the producer), then waits
  // until the io thread is idle.
  void drain(bool seal = false);
  // Producer, holding mutex_: sleeps until at most in_flight buffers are queued or being written.
  void wait_until_in_flight(std::unique_lock<std::mutex>& lock, uint64_t in_flight);
  // io thread: writes one buffer (or seals the backend), or drops it after an error.
  void write_pending(size_t index);
  void handle_write_error(int error);
  // Cuts a truncatable backend back to report_start_; returns the clause for the message.
  std::string cut_back_report();
  void report(const std::string& message);

  std::unique_ptr<SinkBackend> backend_;
  AsyncSinkOptions options_;
  std::unique_ptr<uint8_t*[]> buffers_;
  // Bytes in each queued buffer; entry i belongs to whoever owns buffers_[i].
  std::unique_ptr<size_t[]> sizes_;
  // The file range of each queued copy entry (write_file_range); same ownership as sizes_.
  struct FileRange {
    int fd;
    uint64_t offset;
    uint64_t size;
  };
  std::unique_ptr<FileRange[]> ranges_;

  // Producer state.
  uint8_t* fill_ = nullptr;
  size_t fill_used_ = 0;
  bool closed_ = false;
  bool thread_started_ = false;
  pthread_t thread_{};

  std::mutex mutex_;
  std::condition_variable work_ready_;    // submitted_ grew, or stop_
  std::condition_variable buffer_freed_;  // completed_ grew
  uint64_t submitted_ = 0;                // guarded by mutex_
  uint64_t completed_ = 0;                // guarded by mutex_
  bool producer_waiting_ = false;         // guarded by mutex_
  uint64_t wake_producer_at_ = 0;         // guarded by mutex_: in-flight count that wakes it
  bool stop_ = false;                     // guarded by mutex_

  // io thread state; the producer touches it only while the io thread is idle (after drain()).
  uint64_t report_start_ = 0;
  bool error_reported_ = false;

  std::atomic<bool> report_failed_{false};
  std::atomic<bool> output_ended_{false};
};

}  // namespace fasthprof
