// Fuzzes the net= command parser (runtime/options/net_command.h) on any bytes, fed whole and again in
// pieces of sizes the input itself chooses: the parser never reads outside what it was given,
// every command it returns is one a front end can encode (it re-encodes to the same size its
// header declared), cutoffs are numbers in 0..1, and both feeds give the same commands.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "options/net_command.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fasthprof;
  NetCommandParser whole, pieces;
  std::vector<NetCommand> a, b;
  std::vector<std::string> ma, mb;
  whole.feed(data, size, &a, &ma);
  whole.finish(&ma);
  size_t at = 0;
  size_t step = size > 0 ? (data[0] % 13) + 1 : 1;
  while (at < size) {
    size_t n = std::min(step, size - at);
    pieces.feed(data + at, n, &b, &mb);
    at += n;
    step = (step * 7 + 3) % 17 + 1;
  }
  pieces.finish(&mb);
  if (a.size() != b.size() || ma.size() != mb.size() || whole.out_of_step() != pieces.out_of_step()) {
    std::fprintf(stderr, "net_command_fuzz: the split changed the result\n");
    std::abort();
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const NetCommand& c = a[i];
    if (c.serial != b[i].serial || c.tag != b[i].tag) std::abort();
    if ((c.tag == NetCommandTag::kAllocSites || c.tag == NetCommandTag::kCpuSamples) &&
        !(std::isfinite(c.cutoff) && c.cutoff >= 0.0f && c.cutoff <= 1.0f)) {
      std::fprintf(stderr, "net_command_fuzz: cutoff outside 0..1 accepted\n");
      std::abort();
    }
    std::vector<uint8_t> again = encode_net_command(c);
    NetCommandParser check;
    std::vector<NetCommand> back;
    std::vector<std::string> messages;
    check.feed(again.data(), again.size(), &back, &messages);
    if (back.size() != 1 || !messages.empty() || back[0].serial != c.serial) {
      std::fprintf(stderr, "net_command_fuzz: an accepted command does not re-encode\n");
      std::abort();
    }
  }
  for (const std::string& message : ma) {
    if (message.empty() || message.find('\n') != std::string::npos) std::abort();
  }
  return 0;
}
