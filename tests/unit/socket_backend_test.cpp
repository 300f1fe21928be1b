// SocketBackend's send timeout against loopback peers that stop reading or read in trickles: the
// bound is on what the peer acknowledges, not on what this side's kernel queues.
#include "sink/socket_backend.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>
#include <vector>

#include "loopback_peer.h"

namespace fasthprof {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A peer that never reads: the write gives up about one timeout after the queues filled. With
// SO_SNDTIMEO the kernel's send queue kept growing while the peer took nothing, and each send()
// that queued a few more bytes waited the whole timeout again: 3 x the timeout here.
TEST(SocketBackend, PeerThatNeverReadsHoldsAWriteForTheTimeoutOnly) {
  LoopbackConnection connection;
  ASSERT_NO_FATAL_FAILURE(connection.connect("127.0.0.1", /*send_timeout_seconds=*/1));
  SocketBackend& backend = *connection.backend;
  const std::vector<uint8_t> chunk(1 << 20, 0x5a);
  const auto start = Clock::now();
  WriteResult result;
  for (int i = 0; i < 256 && result.ok(); ++i) result = backend.write_all(chunk.data(), chunk.size());
  const double held = seconds_since(start);
  EXPECT_EQ(result.error, EAGAIN);
  EXPECT_LT(held, 1.8) << "a never-reading peer held the write " << held << " s with a 1 s timeout";
  EXPECT_GE(held, 0.9);
}

// A peer that reads a little now and then (32 KiB every 200 ms, far less than frees the send
// queue enough to make it writable) is taking data: for 3 timeouts it does not fail the write,
// and once it reads at speed it has every byte.
TEST(SocketBackend, PeerThatReadsInTricklesIsNotGivenUp) {
  LoopbackConnection connection;
  ASSERT_NO_FATAL_FAILURE(connection.connect("127.0.0.1", /*send_timeout_seconds=*/1));
  SocketBackend& backend = *connection.backend;
  const int peer = connection.peer;
  const size_t total = size_t{32} << 20;
  std::atomic<size_t> received{0};
  std::thread reader([&] {
    std::vector<uint8_t> buffer(1 << 16);
    const auto start = Clock::now();
    while (received < total) {
      const bool trickle = seconds_since(start) < 3.0;
      const ssize_t n = recv(peer, buffer.data(), trickle ? 32768 : buffer.size(), 0);
      if (n <= 0) return;
      received += static_cast<size_t>(n);
      if (trickle) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  const std::vector<uint8_t> data(total, 0xa5);
  const WriteResult result = backend.write_all(data.data(), data.size());
  EXPECT_TRUE(result.ok()) << "error " << result.error << " after " << received << " bytes read";
  backend.close();
  reader.join();
  EXPECT_EQ(received, total);
}

}  // namespace
}  // namespace fasthprof
