#include "options/net_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/byte_decoder.h"

namespace fasthprof {

namespace {

void put_u2(std::vector<uint8_t>& out, uint16_t value) {
  out.push_back(static_cast<uint8_t>(value >> 8));
  out.push_back(static_cast<uint8_t>(value));
}

void put_u4(std::vector<uint8_t>& out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(value >> shift));
}

float float_of_bits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint32_t bits_of_float(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

bool known_tag(uint8_t tag) { return tag >= 0x01 && tag <= 0x08; }

}  // namespace

std::string net_command_name(uint8_t tag) {
  static const char* const kNames[] = {"GC",   "DUMP HEAP",   "ALLOC SITES", "HEAP SUMMARY",
                                       "EXIT", "DUMP TRACES", "CPU SAMPLES", "CONTROL"};
  if (known_tag(tag)) return kNames[tag - 1];
  char text[16];
  std::snprintf(text, sizeof(text), "tag 0x%02x", tag);
  return text;
}

int net_command_body_size(uint8_t tag, uint16_t control) {
  switch (static_cast<NetCommandTag>(tag)) {
    case NetCommandTag::kGc:
    case NetCommandTag::kDumpHeap:
    case NetCommandTag::kHeapSummary:
    case NetCommandTag::kExit:
    case NetCommandTag::kDumpTraces:
      return 0;
    case NetCommandTag::kAllocSites:
    case NetCommandTag::kCpuSamples:
      return 6;  // u2 flags, u4 float bits
    case NetCommandTag::kControl:
      switch (static_cast<NetControl>(control)) {
        case NetControl::kSamplingOn:
        case NetControl::kSamplingOff:
          return 10;  // u2, ID (8)
        case NetControl::kSetDepth:
          return 4;  // u2, u2
        default:
          return 2;
      }
  }
  return -1;
}

std::vector<uint8_t> encode_net_command(const NetCommand& command) {
  std::vector<uint8_t> body;
  switch (command.tag) {
    case NetCommandTag::kAllocSites:
    case NetCommandTag::kCpuSamples:
      put_u2(body, command.tag == NetCommandTag::kAllocSites ? command.flags : 0);
      put_u4(body, bits_of_float(command.cutoff));
      break;
    case NetCommandTag::kControl:
      put_u2(body, static_cast<uint16_t>(command.control));
      if (command.control == NetControl::kSamplingOn || command.control == NetControl::kSamplingOff) {
        put_u4(body, static_cast<uint32_t>(command.thread_id >> 32));
        put_u4(body, static_cast<uint32_t>(command.thread_id));
      } else if (command.control == NetControl::kSetDepth) {
        put_u2(body, command.depth);
      }
      break;
    default:
      break;
  }
  std::vector<uint8_t> out;
  out.push_back(static_cast<uint8_t>(command.tag));
  put_u4(out, command.serial);
  put_u4(out, static_cast<uint32_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

void NetCommandParser::feed(const uint8_t* data, size_t size, std::vector<NetCommand>* commands,
                            std::vector<std::string>* messages) {
  while (size > 0 && !out_of_step_) {
    if (skip_left_ > 0) {
      size_t skipped = std::min<size_t>(skip_left_, size);
      skip_left_ -= static_cast<uint32_t>(skipped);
      data += skipped;
      size -= skipped;
      continue;
    }
    if (pending_.size() < kNetCommandHeader) {
      size_t wanted = std::min(kNetCommandHeader - pending_.size(), size);
      pending_.insert(pending_.end(), data, data + wanted);
      data += wanted;
      size -= wanted;
      if (pending_.size() < kNetCommandHeader) return;
      ++seen_;
      uint8_t tag = pending_[0];
      uint32_t length = load_be32(&pending_[5]);
      // CONTROL's size depends on its sub-command, checked once the body is in.
      bool fits = known_tag(tag) && (tag == static_cast<uint8_t>(NetCommandTag::kControl)
                                         ? (length == 2 || length == 4 || length == 10)
                                         : static_cast<int>(length) == net_command_body_size(tag, 0));
      if (!fits) {
        std::string what = "command " + std::to_string(seen_) + " (" + net_command_name(tag) + ", serial " +
                           std::to_string(load_be32(&pending_[1])) + ")";
        pending_.clear();
        if (length > kMaxSkippedBody) {
          out_of_step_ = true;
          messages->push_back(what + ": length " + std::to_string(length) +
                              " cannot be skipped safely; the command stream is out of step, no more commands "
                              "are read from this connection");
          return;
        }
        messages->push_back(what + (known_tag(tag) ? ": bad length " + std::to_string(length) : ": unknown command") +
                            "; ignored");
        skip_left_ = length;
        continue;
      }
    }
    uint32_t length = load_be32(&pending_[5]);
    size_t wanted = std::min<size_t>(kNetCommandHeader + length - pending_.size(), size);
    pending_.insert(pending_.end(), data, data + wanted);
    data += wanted;
    size -= wanted;
    if (pending_.size() < kNetCommandHeader + length) return;
    take(pending_.data() + kNetCommandHeader, commands, messages);
    pending_.clear();
  }
}

void NetCommandParser::take(const uint8_t* body, std::vector<NetCommand>* commands,
                            std::vector<std::string>* messages) {
  NetCommand command;
  uint8_t tag = pending_[0];
  command.tag = static_cast<NetCommandTag>(tag);
  command.serial = load_be32(&pending_[1]);
  uint32_t length = load_be32(&pending_[5]);
  std::string what = "command " + std::to_string(seen_) + " (" + net_command_name(tag) + ", serial " +
                     std::to_string(command.serial) + ")";
  switch (command.tag) {
    case NetCommandTag::kAllocSites:
    case NetCommandTag::kCpuSamples: {
      command.flags = load_be16(body);
      command.cutoff = float_of_bits(load_be32(body + 2));
      if (!std::isfinite(command.cutoff) || command.cutoff < 0.0f || command.cutoff > 1.0f) {
        char text[48];
        std::snprintf(text, sizeof(text), "%g", static_cast<double>(command.cutoff));
        messages->push_back(what + ": cutoff " + text + " is not a number in 0..1; ignored");
        return;
      }
      // CPU SAMPLES' u2 is unused (the original ignored it too).
      if (command.tag == NetCommandTag::kCpuSamples) command.flags = 0;
      uint16_t known = kSitesIncremental | kSitesSortedByAllocation | kSitesForceGc;
      if ((command.flags & ~known) != 0) {
        messages->push_back(what + ": unknown flags 0x" + [&] {
          char text[8];
          std::snprintf(text, sizeof(text), "%x", command.flags & ~known);
          return std::string(text);
        }() + "; ignored");
        return;
      }
      break;
    }
    case NetCommandTag::kControl: {
      uint16_t control = load_be16(body);
      if (control < 1 || control > 7) {
        messages->push_back(what + ": unknown sub-command " + std::to_string(control) + "; ignored");
        return;
      }
      if (static_cast<int>(length) != net_command_body_size(tag, control)) {
        messages->push_back(what + ": bad length " + std::to_string(length) + " for sub-command " +
                            std::to_string(control) + "; ignored");
        return;
      }
      command.control = static_cast<NetControl>(control);
      if (length == 10) command.thread_id = load_be64(body + 2);
      if (length == 4) command.depth = load_be16(body + 2);
      break;
    }
    default:
      break;
  }
  commands->push_back(command);
}

void NetCommandParser::finish(std::vector<std::string>* messages) {
  if (out_of_step_) return;
  if (!pending_.empty() || skip_left_ > 0) {
    messages->push_back("command " + std::to_string(seen_ + (pending_.size() < kNetCommandHeader ? 1 : 0)) +
                        " was cut short by the end of the connection; ignored");
  }
  pending_.clear();
  skip_left_ = 0;
}

}  // namespace fasthprof
