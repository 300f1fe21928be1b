// Loopback TCP for the socket tests: a listener on an ephemeral port of either address family,
// and a SocketBackend connected to one with the peer's end accepted.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sink/socket_backend.h"

namespace fasthprof {

// A TCP listener on the loopback address of the given family; port() is the ephemeral port.
class Listener {
 public:
  explicit Listener(int family) {
    fd_ = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    sockaddr_storage address{};
    socklen_t length;
    if (family == AF_INET) {
      auto* in = reinterpret_cast<sockaddr_in*>(&address);
      in->sin_family = AF_INET;
      in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      length = sizeof *in;
    } else {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(&address);
      in6->sin6_family = AF_INET6;
      in6->sin6_addr = in6addr_loopback;
      length = sizeof *in6;
    }
    if (bind(fd_, reinterpret_cast<sockaddr*>(&address), length) != 0 || listen(fd_, 4) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    port_ = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&address)->sin_port
                                    : reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  }
  ~Listener() { close(); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool ok() const { return fd_ >= 0; }
  int port() const { return port_; }
  int accept() { return ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A SocketBackend connected to a Listener, and the peer's end of the connection (closed with it).
struct LoopbackConnection {
  explicit LoopbackConnection(int family = AF_INET) : listener(family) {}
  ~LoopbackConnection() { close_peer(); }
  LoopbackConnection(const LoopbackConnection&) = delete;
  LoopbackConnection& operator=(const LoopbackConnection&) = delete;

  // Connects to host at the listener's port (0 send_timeout_seconds: no timeout) and accepts on
  // the peer's side; a peer accepted before is closed first.
  void connect(const char* host = "127.0.0.1", int send_timeout_seconds = 0) {
    close_peer();
    ASSERT_TRUE(listener.ok());
    std::string error;
    backend = SocketBackend::connect(host, listener.port(), &error, send_timeout_seconds);
    ASSERT_NE(backend, nullptr) << host << ": " << error;
    name = backend->name();
    peer = listener.accept();
    ASSERT_GE(peer, 0);
  }

  void close_peer() {
    if (peer >= 0) ::close(peer);
    peer = -1;
  }

  Listener listener;
  std::unique_ptr<SocketBackend> backend;  // until a test moves it into a sink
  std::string name;                        // the backend's
  int peer = -1;
};

// What the peer receives until size bytes came or the connection ended.
inline std::vector<uint8_t> receive(int fd, size_t size) {
  std::vector<uint8_t> bytes(size);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = recv(fd, bytes.data() + done, size - done, 0);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

}  // namespace fasthprof
