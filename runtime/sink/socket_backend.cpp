#include "sink/socket_backend.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <new>

namespace fasthprof {
namespace {

// Numeric form of a resolved address, for messages ("::1", "127.0.0.1").
std::string numeric_host(const struct addrinfo* address) {
  char text[NI_MAXHOST];
  if (getnameinfo(address->ai_addr, address->ai_addrlen, text, sizeof text, nullptr, 0,
                  NI_NUMERICHOST) != 0) {
    return "?";
  }
  return text;
}

// How often a stalled write looks at what the peer acknowledged.
constexpr int64_t kAcknowledgementCheckMs = 100;

int64_t monotonic_ms() {
  struct timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1000 + now.tv_nsec / 1000000;
}

}  // namespace

int connect_socket(const std::string& host, int port, std::string* error) {
  if (port <= 0 || port > 65535) {
    if (error != nullptr) *error = "invalid port number " + std::to_string(port);
    return -1;
  }
  struct addrinfo hints;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  hints.ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV;
  struct addrinfo* addresses = nullptr;
  const std::string service = std::to_string(port);
  int status = getaddrinfo(host.c_str(), service.c_str(), &hints, &addresses);
  // AI_ADDRCONFIG hides ::1 and 127.0.0.1 on a host whose only interface is loopback.
  if (status == EAI_NONAME || status == EAI_ADDRFAMILY || status == EAI_NODATA) {
    hints.ai_flags = AI_NUMERICSERV;
    status = getaddrinfo(host.c_str(), service.c_str(), &hints, &addresses);
  }
  if (status != 0) {
    if (error != nullptr) {
      *error = "cannot resolve host '" + host + "': " +
               (status == EAI_SYSTEM ? strerror(errno) : gai_strerror(status));
    }
    return -1;
  }
  std::string last_error = "no address for host '" + host + "'";
  int fd = -1;
  for (const struct addrinfo* address = addresses; address != nullptr; address = address->ai_next) {
    fd = socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC, address->ai_protocol);
    if (fd < 0) {
      last_error = numeric_host(address) + " port " + service + ": " + strerror(errno);
      continue;
    }
    int result;
    do {
      result = ::connect(fd, address->ai_addr, address->ai_addrlen);
    } while (result != 0 && errno == EINTR);
    if (result == 0) break;
    last_error = numeric_host(address) + " port " + service + ": " + strerror(errno);
    ::close(fd);
    fd = -1;
  }
  freeaddrinfo(addresses);
  if (fd < 0 && error != nullptr) *error = last_error;
  return fd;
}

SocketBackend::SocketBackend(int fd, std::string name, int send_timeout_seconds)
    : fd_(fd), name_(std::move(name)), send_timeout_seconds_(send_timeout_seconds > 0 ? send_timeout_seconds : 0) {}

SocketBackend::~SocketBackend() { close(); }

std::unique_ptr<SocketBackend> SocketBackend::connect(const std::string& host, int port,
                                                      std::string* error, int send_timeout_seconds) {
  const int fd = connect_socket(host, port, error);
  if (fd < 0) return nullptr;
  // IPv6 literals are bracketed so that the port stays readable.
  const bool ipv6_literal = host.find(':') != std::string::npos;
  std::string name = (ipv6_literal ? "[" + host + "]" : host) + ":" + std::to_string(port);
  auto backend = std::unique_ptr<SocketBackend>(
      new (std::nothrow) SocketBackend(fd, std::move(name), send_timeout_seconds));
  if (backend == nullptr) {
    ::close(fd);
    if (error != nullptr) *error = "out of memory";
  }
  return backend;
}

WriteResult SocketBackend::write_all(const void* data, size_t size) {
  if (fd_ < 0) return {EBADF};
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    // MSG_DONTWAIT rather than O_NONBLOCK: the command listener reads a dup() of this descriptor,
    // which shares its file status flags.
    const ssize_t n = send(fd_, bytes, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      bytes += n;
      size -= static_cast<size_t>(n);
      offset_ += static_cast<uint64_t>(n);
      continue;
    }
    if (n == 0) return {EIO};
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return {errno};
    const int error = wait_for_room();
    if (error != 0) return {error};
  }
  return {};
}

uint64_t SocketBackend::acknowledged() const {
  int unacknowledged = 0;
  // SIOCOUTQ (TCP): bytes in the send queue, sent or not, that the peer has not acknowledged.
  if (ioctl(fd_, SIOCOUTQ, &unacknowledged) != 0 || unacknowledged < 0) return offset_;
  return offset_ - static_cast<uint64_t>(unacknowledged);
}

int SocketBackend::wait_for_room() {
  const int64_t now = monotonic_ms();
  const uint64_t acknowledged_now = acknowledged();
  // The stall outlives the write: room that the kernel made by growing the send queue, while the
  // peer took nothing, does not start the time again for the next write.
  if (!stall_.started || acknowledged_now != stall_.acknowledged) stall_ = Stall{true, now, acknowledged_now};
  int wait_ms = -1;
  if (send_timeout_seconds_ > 0) {
    const int64_t left = stall_.since_ms + int64_t{send_timeout_seconds_} * 1000 - now;
    if (left <= 0) return EAGAIN;
    // Woken now and then to see whether the peer acknowledged anything: a slow reader frees too
    // little of the queue to make the socket writable, yet it is taking data.
    wait_ms = static_cast<int>(std::min<int64_t>(left, kAcknowledgementCheckMs));
  }
  struct pollfd writable{fd_, POLLOUT, 0};
  if (poll(&writable, 1, wait_ms) < 0 && errno != EINTR) return errno;
  return 0;
}

std::string SocketBackend::describe_error(int error) const {
  if ((error == EAGAIN || error == EWOULDBLOCK) && send_timeout_seconds_ > 0) {
    return "the peer took no data for " + std::to_string(send_timeout_seconds_) +
           (send_timeout_seconds_ == 1 ? " second" : " seconds");
  }
  return SinkBackend::describe_error(error);
}

WriteResult SocketBackend::truncate_to(uint64_t) { return {ESPIPE}; }

WriteResult SocketBackend::close() {
  if (fd_ < 0) return {};
  shutdown(fd_, SHUT_RDWR);
  const int result = ::close(fd_);
  fd_ = -1;
  if (result != 0 && errno != EINTR) return {errno};
  return {};
}

}  // namespace fasthprof
