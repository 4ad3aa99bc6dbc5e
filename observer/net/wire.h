// Byte encoding of the observers' drill-down and finding messages: little-endian integers,
// length-prefixed strings, bounds-checked reading (a short or hostile message sets an error
// instead of reading past its end). docs/observer-network.md lists the message layouts.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace scout::net {

class WireWriter {
 public:
  void u8(uint8_t v) { buf_.push_back(v); }
  void u16(uint16_t v) { raw(&v, 2); }
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void i32(int32_t v) { raw(&v, 4); }
  void i64(int64_t v) { raw(&v, 8); }
  // Any fixed-size integer, in its own width.
  template <typename T>
  void put(const T& v) {
    static_assert(std::is_integral_v<T>);
    raw(&v, sizeof(T));
  }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
  }
  const std::vector<uint8_t>& bytes() const { return buf_; }
  std::vector<uint8_t> take() { return std::move(buf_); }

 private:
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  std::vector<uint8_t> buf_;
};

// Reads what WireWriter wrote. After the first out-of-bounds read every read returns 0 / "" and
// ok() is false. Counts read by u32() used as element counts are checked with fits(n, size).
class WireReader {
 public:
  explicit WireReader(std::span<const uint8_t> b) : b_(b) {}
  uint8_t u8() { return get<uint8_t>(); }
  uint16_t u16() { return get<uint16_t>(); }
  uint32_t u32() { return get<uint32_t>(); }
  uint64_t u64() { return get<uint64_t>(); }
  int32_t i32() { return get<int32_t>(); }
  int64_t i64() { return get<int64_t>(); }
  // One fixed-size integer; 0 once the message is exhausted.
  template <typename T>
  T get() {
    static_assert(std::is_integral_v<T>);
    T v = 0;
    raw(&v, sizeof(T));
    return v;
  }
  std::string str() {
    const uint32_t n = u32();
    if (!fits(n, 1)) return {};
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  // True if `count` elements of at least `min_bytes` each can still follow; else sets the error.
  bool fits(uint64_t count, uint64_t min_bytes) {
    if (!ok_ || count > (b_.size() - pos_) / (min_bytes ? min_bytes : 1)) ok_ = false;
    return ok_;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == b_.size(); }

 private:
  void raw(void* p, size_t n) {
    if (!ok_ || b_.size() - pos_ < n) {
      ok_ = false;
      return;
    }
    std::memcpy(p, b_.data() + pos_, n);
    pos_ += n;
  }
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace scout::net
