// SinkBackend over a connected stream socket (net=host:port), and the connect that makes one.
#pragma once

#include <memory>
#include <string>

#include "sink/sink_backend.h"

namespace fasthprof {

// Resolves host (a name, an IPv4 or an IPv6 literal; getaddrinfo) and connects a TCP socket to
// the first address that accepts, trying each in turn. Allocates (resolver). Returns the connected
// descriptor (close-on-exec), or -1 with *error set to a one-line reason without prefix, e.g.
// "cannot resolve host 'x.invalid': Name or service not known" or "::1 port 9: Connection refused".
// Any thread; blocks while resolving and connecting.
int connect_socket(const std::string& host, int port, std::string* error);

class SocketBackend final : public SinkBackend {
 public:
  // Takes ownership of the connected socket fd. name ("host:port") names it in messages.
  // send_timeout_seconds > 0 bounds how long a write waits while the peer takes no data (a peer
  // that accepted and never reads would otherwise hold every writer, and with them a heap dump's
  // suspended threads, for as long as it stays connected); 0 waits for ever. The bound is on
  // progress, not on the whole write: a peer that reads slowly but steadily gets everything.
  // Progress is bytes the peer acknowledged (SIOCOUTQ), not bytes the kernel took into this
  // side's send queue (which grows while the peer reads nothing): a write that is blocked gives
  // up send_timeout_seconds after a write first found the queue full, unless the peer
  // acknowledged something meanwhile, which starts the time again.
  // A command listener that reads from the same connection should read from its own dup() of fd:
  // after a write error this backend shuts the connection down (the listener's recv then returns
  // 0) and closes only its own descriptor.
  SocketBackend(int fd, std::string name, int send_timeout_seconds = 0);
  ~SocketBackend() override;

  SocketBackend(const SocketBackend&) = delete;
  SocketBackend& operator=(const SocketBackend&) = delete;

  // connect_socket() plus the backend. Allocates. Returns null with *error set on failure.
  static std::unique_ptr<SocketBackend> connect(const std::string& host, int port,
                                                std::string* error, int send_timeout_seconds = 0);

  // Sends with MSG_NOSIGNAL: a closed peer gives EPIPE, never SIGPIPE. A peer that acknowledges no
  // byte for the send timeout while the send queue is full gives EAGAIN.
  WriteResult write_all(const void* data, size_t size) override;
  // EAGAIN (the send timeout) reads "the peer took no data for N seconds".
  std::string describe_error(int error) const override;
  uint64_t offset() const override { return offset_; }
  bool can_truncate() const override { return false; }
  // A stream cannot be cut back: always fails with ESPIPE.
  WriteResult truncate_to(uint64_t offset) override;
  bool error_ends_output() const override { return true; }
  const std::string& name() const override { return name_; }
  // Shuts the connection down (both directions) and closes the descriptor. Idempotent.
  WriteResult close() override;

  int fd() const { return fd_; }

 private:
  // The last time a write found the send queue full: since when, and what the peer had
  // acknowledged then (a later stall with the same figure continues this one).
  struct Stall {
    bool started = false;
    int64_t since_ms = 0;
    uint64_t acknowledged = 0;
  };
  // Bytes sent that the peer acknowledged (offset_ when the kernel does not tell).
  uint64_t acknowledged() const;
  // Waits until the socket may take more, at most until the stall's time is up: 0, or EAGAIN
  // when the peer acknowledged nothing for the send timeout, or poll()'s error.
  int wait_for_room();

  int fd_;
  std::string name_;
  int send_timeout_seconds_;
  uint64_t offset_ = 0;
  Stall stall_;
};

}  // namespace fasthprof
