// The net= command protocol: what a front end sends back on the agent's connection, and the parser
// that turns the byte stream into commands (docs/decisions.md, docs/net.md).
//
// Every command is u1 tag, u4 serial, u4 length, then `length` bytes of body, all big-endian. The
// body's size is fixed per tag (and per sub-command of CONTROL); a thread ID is 8 bytes, the
// identifier size of the output. Unlike the original agent, the parser checks every field: a
// command with a bad length, an unknown tag or sub-command, a cutoff that is not a number in
// 0..1, or unknown flag bits is reported (one message) and skipped; the stream stays in step as
// long as the length can be trusted to skip by (at most kMaxSkippedBody bytes). Past that, the
// parser says so once and takes no more commands: whatever follows cannot be framed.
//
// VM-free; allocates (messages, the command vector). One thread feeds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/hprof_format.h"

namespace fasthprof {

enum class NetCommandTag : uint8_t {
  kGc = 0x01,
  kDumpHeap = 0x02,
  kAllocSites = 0x03,
  kHeapSummary = 0x04,
  kExit = 0x05,
  kDumpTraces = 0x06,
  kCpuSamples = 0x07,
  kControl = 0x08,
};

enum class NetControl : uint16_t {
  kAllocOn = 1,
  kAllocOff = 2,
  kSamplingOn = 3,   // + thread object ID (0: every thread)
  kSamplingOff = 4,  // + thread object ID (0: every thread)
  kClearCpu = 5,
  kResetSites = 6,
  kSetDepth = 7,     // + u2 depth
};

// ALLOC SITES flags: those of the ALLOC SITES record (hprof_format.h), kSitesIncremental,
// kSitesSortedByAllocation, kSitesForceGc.

inline constexpr size_t kNetCommandHeader = 9;  // u1 tag, u4 serial, u4 length
inline constexpr uint32_t kMaxSkippedBody = 4096;

struct NetCommand {
  NetCommandTag tag = NetCommandTag::kGc;
  uint32_t serial = 0;
  uint16_t flags = 0;    // ALLOC SITES
  float cutoff = 0;      // ALLOC SITES, CPU SAMPLES: 0..1
  NetControl control = NetControl::kAllocOn;  // CONTROL
  uint64_t thread_id = 0;  // CONTROL sampling on/off: 0 means every thread
  uint16_t depth = 0;      // CONTROL set depth
};

// "GC", "DUMP HEAP", ... ; "tag 0x2a" for an unknown one. Allocates.
std::string net_command_name(uint8_t tag);

// The body size a command must have, from its tag and (CONTROL) the sub-command in its first two
// bytes. -1 for an unknown tag.
int net_command_body_size(uint8_t tag, uint16_t control);

// Encodes one command as a front end sends it (fasthprof listen, tests). Allocates.
std::vector<uint8_t> encode_net_command(const NetCommand& command);

class NetCommandParser {
 public:
  // Takes the next bytes of the stream (any split). Complete, valid commands are appended to
  // *commands; every problem found is appended to *messages as one line without prefix or newline,
  // e.g. "command 7 (CPU SAMPLES, serial 3): cutoff nan is not in 0..1; ignored".
  void feed(const uint8_t* data, size_t size, std::vector<NetCommand>* commands,
            std::vector<std::string>* messages);
  // The peer closed the connection: a command cut short is reported in *messages.
  void finish(std::vector<std::string>* messages);
  // A length could not be skipped by: no more commands are taken from this stream.
  bool out_of_step() const { return out_of_step_; }
  uint64_t commands_seen() const { return seen_; }

 private:
  void take(const uint8_t* body, std::vector<NetCommand>* commands, std::vector<std::string>* messages);

  std::vector<uint8_t> pending_;  // header + body of the command being read
  uint32_t skip_left_ = 0;        // body bytes of a rejected command still to skip
  bool out_of_step_ = false;
  uint64_t seen_ = 0;
};

}  // namespace fasthprof
