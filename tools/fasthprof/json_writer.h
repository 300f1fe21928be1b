// A JSON writer for the verbs' --json output: objects, arrays, strings, numbers, streamed to a
// FILE with the commas placed for the caller. Strings are escaped as JSON asks ('"', '\\', control
// characters as \u00XX); other bytes pass as they are (names are the file's, UTF-8 or modified
// UTF-8). No allocation beyond the nesting stack; not for concurrent use.
#pragma once

#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string_view>
#include <type_traits>
#include <vector>

namespace fasthprof::cli {

class JsonWriter {
 public:
  explicit JsonWriter(FILE* out) : out_(out) {}

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
  // The key of the next value in the current object.
  void key(std::string_view name) {
    separate();
    quoted(name);
    std::fputc(':', out_);
    after_key_ = true;
  }
  void string(std::string_view value) {
    separate();
    quoted(value);
  }
  void number(uint64_t value) {
    separate();
    std::fprintf(out_, "%" PRIu64, value);
  }
  void signed_number(int64_t value) {
    separate();
    std::fprintf(out_, "%" PRId64, value);
  }
  // A real number with up to 6 decimals; null when it is not finite.
  void real(double value) {
    separate();
    if (std::isfinite(value)) {
      std::fprintf(out_, "%.6g", value);
    } else {
      std::fputs("null", out_);
    }
  }
  void boolean(bool value) {
    separate();
    std::fputs(value ? "true" : "false", out_);
  }
  // A key and its value in one call.
  template <typename T> void field(std::string_view name, const T& value);
  // Ends the document with a newline.
  void finish() { std::fputc('\n', out_); }

 private:
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) std::fputc(',', out_);
      first_.back() = false;
    }
  }
  void open(char bracket) {
    separate();
    std::fputc(bracket, out_);
    first_.push_back(true);
  }
  void close(char bracket) {
    first_.pop_back();
    std::fputc(bracket, out_);
  }
  void quoted(std::string_view text) {
    std::fputc('"', out_);
    for (unsigned char c : text) {
      if (c == '"' || c == '\\') {
        std::fputc('\\', out_);
        std::fputc(c, out_);
      } else if (c < 0x20) {
        std::fprintf(out_, "\\u%04x", c);
      } else {
        std::fputc(c, out_);
      }
    }
    std::fputc('"', out_);
  }

  FILE* out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

template <typename T> void JsonWriter::field(std::string_view name, const T& value) {
  key(name);
  if constexpr (std::is_same_v<T, bool>) {
    boolean(value);
  } else if constexpr (std::is_floating_point_v<T>) {
    real(value);
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    signed_number(value);
  } else if constexpr (std::is_integral_v<T>) {
    number(value);
  } else {
    string(value);
  }
}

}  // namespace fasthprof::cli
