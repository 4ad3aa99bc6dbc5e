// Byte encoding of the observers' drill-down and finding messages: little-endian integers,
// variable-length integers (LEB128; signed ones zigzag-mapped first), times as the difference to
// the previous time of the message, length-prefixed strings, bounds-checked reading (a short or
// hostile message sets an error instead of reading past its end). docs/observer-network.md lists
// the message layouts.
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
  // Unsigned LEB128: 7 bits a byte, lowest first (1 byte below 128, 10 at most).
  void var(uint64_t v) {
    while (v >= 0x80) {
      buf_.push_back(uint8_t(v) | 0x80);
      v >>= 7;
    }
    buf_.push_back(uint8_t(v));
  }
  // Signed: zigzag (0, -1, 1, -2, ... -> 0, 1, 2, 3, ...), then LEB128.
  void svar(int64_t v) { var((uint64_t(v) << 1) ^ uint64_t(v >> 63)); }
  // A time in ns, 0 meaning unknown: 0 for 0, else 1 + the zigzag of its difference to the
  // previous nonzero time of the message (times of one message lie close together, so most
  // take 2 to 6 bytes). Two times 2^63 ns apart cannot be told apart (no clock reads so).
  void time(int64_t t) {
    if (t == 0) {
      var(0);
      return;
    }
    const uint64_t d = uint64_t(t) - uint64_t(prev_time_);
    const uint64_t z = (d << 1) ^ uint64_t(int64_t(d) >> 63);
    var(z == ~0ull ? z : z + 1);
    prev_time_ = t;
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
  int64_t prev_time_ = 0;
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
  // What WireWriter::var, svar and time wrote. A LEB128 of more than 10 bytes is an error.
  uint64_t var() {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      const uint8_t b = u8();
      if (!ok_) return 0;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    ok_ = false;
    return 0;
  }
  int64_t svar() {
    const uint64_t z = var();
    return int64_t((z >> 1) ^ (0 - (z & 1)));
  }
  int64_t time() {
    const uint64_t z = var();
    if (z == 0) return 0;
    const uint64_t d = ((z - 1) >> 1) ^ (0 - ((z - 1) & 1));
    const int64_t t = int64_t(uint64_t(prev_time_) + d);
    if (t != 0) prev_time_ = t;
    return t;
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
  int64_t prev_time_ = 0;
};

}  // namespace scout::net
