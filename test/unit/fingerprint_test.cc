// The fingerprint definition (docs/fingerprint.md): an independent straightforward
// implementation, pinned known answers, sensitivity to every kind of change, exact NaN/Inf
// counts, capped subsets, and hash_file.
#include "scout/fingerprint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <vector>

#include "scout/shm_format.h"
#include "test/support/tmpdir.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace {

using scout::fp::fingerprint;
using scout::fp::fingerprint_capped;
constexpr uint64_t kB = 4096;  // block bytes, restated from docs/fingerprint.md on purpose
constexpr uint8_t kU8 = scout::shm::kTypeUint8;

// The definition written the obvious way: all leaf digests in a vector, then level by level.
uint64_t straightforward(const unsigned char* p, uint64_t len, const std::vector<uint64_t>& blocks, bool capped) {
  std::vector<uint64_t> level;
  for (uint64_t b : blocks) {
    uint64_t start = b * kB, n = start >= len ? 0 : std::min<uint64_t>(kB, len - start);
    level.push_back(XXH64(p + start, n, b));
  }
  uint64_t depth = 0;
  while (level.size() > 1) {
    ++depth;
    std::vector<uint64_t> up;
    for (size_t j = 0; j * 64 < level.size(); ++j) {
      size_t k = std::min<size_t>(64, level.size() - j * 64);
      up.push_back(XXH64(&level[j * 64], k * 8, (depth << 56) | j));
    }
    level.swap(up);
  }
  uint64_t words[4] = {level[0], len, 1, capped ? blocks.size() : 0};
  return XXH64(words, 32, 0x73636f75742d6670ull);
}

uint64_t straightforward_full(const std::vector<unsigned char>& v) {
  uint64_t n = v.empty() ? 1 : (v.size() + kB - 1) / kB;
  std::vector<uint64_t> blocks;
  for (uint64_t b = 0; b < n; ++b) blocks.push_back(b);
  return straightforward(v.data(), v.size(), blocks, false);
}

std::vector<unsigned char> random_bytes(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t r = rng();
    std::memcpy(v.data() + i, &r, std::min<size_t>(8, n - i));
  }
  return v;
}

uint64_t fp(const std::vector<unsigned char>& v) { return fingerprint(v.data(), v.size(), kU8, nullptr); }

TEST(Fingerprint, MatchesStraightforwardImplementation) {
  // Sizes around every boundary of the tree: block, fan-out (64 blocks), fan-out^2 (4096 blocks).
  const size_t sizes[] = {
      0,      1,           7,           8,       31,          32,      33,           kB - 1,          kB,
      kB + 1, 3 * kB + 17, 64 * kB - 1, 64 * kB, 64 * kB + 1, 65 * kB, 64 * 64 * kB, 64 * 64 * kB + 5};
  for (size_t n : sizes) {
    auto v = random_bytes(n, uint32_t(n));
    EXPECT_EQ(fp(v), straightforward_full(v)) << "size " << n;
  }
}

TEST(Fingerprint, KnownAnswers) {
  // Pinned once from this implementation after the cross-check above; a change here means the
  // definition changed (bump kFormatVersion and say so in docs/fingerprint.md).
  std::vector<unsigned char> empty;
  std::vector<unsigned char> abc = {'a', 'b', 'c'};
  std::vector<unsigned char> ramp(10000);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = uint8_t(i % 251);
  std::vector<unsigned char> zeros(300000, 0);
  EXPECT_EQ(scout::fp::to_hex(fp(empty)), "f39d645f5ddb80ca");
  EXPECT_EQ(scout::fp::to_hex(fp(abc)), "6ac25a2de29f99d1");
  EXPECT_EQ(scout::fp::to_hex(fp(ramp)), "a2fb037d10a16145");
  EXPECT_EQ(scout::fp::to_hex(fp(zeros)), "c94b05e0c49f9d25");
  uint64_t bytes = 0;
  EXPECT_EQ(scout::fp::to_hex(fingerprint_capped(zeros.data(), zeros.size(), 65536, 42, kU8, nullptr, &bytes)),
            "50658ffe769aaf9f");
  // 74 blocks, 16 hashed; the last stratum picked the short last block (992 bytes).
  EXPECT_EQ(bytes, 15 * kB + 992);
  EXPECT_EQ(straightforward_full(ramp), fp(ramp));
}

TEST(Fingerprint, SwappingTwoBlocksChangesIt) {
  auto v = random_bytes(10 * kB, 1);
  uint64_t before = fp(v);
  auto w = v;
  std::swap_ranges(w.begin() + 2 * kB, w.begin() + 3 * kB, w.begin() + 7 * kB);
  EXPECT_NE(fp(w), before);
  // Two identical blocks swapped are the same bytes: same fingerprint.
  std::vector<unsigned char> z(4 * kB, 0);
  auto z2 = z;
  std::swap_ranges(z2.begin(), z2.begin() + kB, z2.begin() + 2 * kB);
  EXPECT_EQ(fp(z2), fp(z));
  // Blocks with equal content at different positions give different leaves (seeded by index).
  std::vector<unsigned char> a(2 * kB, 0), b(2 * kB, 0);
  a[5] = 1;
  b[kB + 5] = 1;
  EXPECT_NE(fp(a), fp(b));
}

TEST(Fingerprint, EverySingleBitFlipChangesIt) {
  const size_t n = 3 * kB * 64 + 1234;  // several level-1 nodes and a partial block
  auto v = random_bytes(n, 2);
  const uint64_t base = fp(v);
  std::mt19937_64 rng(3);
  std::vector<size_t> positions = {0, 1, kB - 1, kB, 64 * kB - 1, 64 * kB, n - 2, n - 1};
  for (int i = 0; i < 200; ++i) positions.push_back(rng() % n);
  for (size_t pos : positions) {
    for (int bit : {0, 7, int(rng() % 8)}) {
      v[pos] ^= uint8_t(1u << bit);
      EXPECT_NE(fp(v), base) << "byte " << pos << " bit " << bit;
      v[pos] ^= uint8_t(1u << bit);
    }
  }
  EXPECT_EQ(fp(v), base);
}

TEST(Fingerprint, TruncationAndExtensionChangeIt) {
  for (size_t n : {size_t(1), size_t(kB), size_t(kB + 1), size_t(64 * kB), size_t(100000)}) {
    auto v = random_bytes(n, 4);
    const uint64_t base = fp(v);
    auto t = v;
    t.pop_back();
    EXPECT_NE(fp(t), base) << n;
    auto e = v;
    e.push_back(0);
    EXPECT_NE(fp(e), base) << n;
    auto eb = v;
    eb.resize(n + kB, 0);  // a whole block of zeros appended
    EXPECT_NE(fp(eb), base) << n;
  }
  // Zero buffers of different lengths differ (the length is mixed in).
  std::vector<unsigned char> z1(kB, 0), z2(kB - 1, 0), z0;
  EXPECT_NE(fp(z1), fp(z2));
  EXPECT_NE(fp(z2), fp(z0));
}

TEST(Fingerprint, MisalignedStartHashesTheSameBytes) {
  auto v = random_bytes(70000 + 16, 5);
  std::vector<unsigned char> copy(v.begin() + 3, v.begin() + 3 + 70000);
  EXPECT_EQ(fingerprint(v.data() + 3, 70000, kU8, nullptr), fp(copy));
}

// ---- NaN / Inf counts

template <class T>
std::vector<unsigned char> as_bytes(const std::vector<T>& x) {
  std::vector<unsigned char> v(x.size() * sizeof(T));
  std::memcpy(v.data(), x.data(), v.size());
  return v;
}

TEST(Fingerprint, CountsNanAndInfFloat32) {
  std::vector<float> x(3000, 1.5f);
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  x[0] = qnan;
  x[1] = -inf;
  x[1023] = inf;
  x[1024] = -qnan;
  x[2999] = qnan;
  uint32_t snan_bits = 0x7f800001u, max_finite = 0x7f7fffffu;
  std::memcpy(&x[500], &snan_bits, 4);   // signalling NaN (smallest mantissa)
  std::memcpy(&x[501], &max_finite, 4);  // largest finite: not counted
  auto v = as_bytes(x);
  scout::fp::Counts c;
  fingerprint(v.data(), v.size(), scout::shm::kTypeFloat32, &c);
  EXPECT_EQ(c.nan, 4u);
  EXPECT_EQ(c.inf, 2u);
  // The same bytes as another type count nothing but hash the same.
  scout::fp::Counts none;
  EXPECT_EQ(fingerprint(v.data(), v.size(), scout::shm::kTypeInt32, &none), fp(v));
  EXPECT_EQ(none.nan + none.inf, 0u);
  // A trailing partial element is not counted, even if its bytes are all that is left of a NaN.
  scout::fp::Counts partial;
  fingerprint(v.data(), v.size() - 1, scout::shm::kTypeFloat32, &partial);
  EXPECT_EQ(partial.nan, 3u);
}

TEST(Fingerprint, CountsNanAndInfFloat64) {
  std::vector<double> x(1500, -2.0);
  x[0] = std::numeric_limits<double>::infinity();
  x[511] = std::numeric_limits<double>::quiet_NaN();
  x[512] = -std::numeric_limits<double>::infinity();
  x[1499] = std::numeric_limits<double>::quiet_NaN();
  x[7] = std::numeric_limits<double>::max();
  auto v = as_bytes(x);
  scout::fp::Counts c;
  fingerprint(v.data(), v.size(), scout::shm::kTypeFloat64, &c);
  EXPECT_EQ(c.nan, 2u);
  EXPECT_EQ(c.inf, 2u);
}

TEST(Fingerprint, CountsNanAndInfFloat16AndBfloat16) {
  // fp16: Inf 0x7C00, NaN 0x7C01..0x7FFF (either sign); 0x7BFF is the largest finite.
  std::vector<uint16_t> h(5001, 0x3C00);  // 1.0, odd count: the last word is partial
  h[0] = 0x7C00;
  h[1] = 0xFC00;
  h[2] = 0x7C01;
  h[3] = 0xFE00;
  h[4] = 0x7BFF;
  h[2048] = 0x7FFF;
  h[5000] = 0x7E00;
  auto hv = as_bytes(h);
  scout::fp::Counts ch;
  fingerprint(hv.data(), hv.size(), scout::shm::kTypeFloat16, &ch);
  EXPECT_EQ(ch.inf, 2u);
  EXPECT_EQ(ch.nan, 4u);
  // bf16: Inf 0x7F80, NaN 0x7F81..0x7FFF; 0x7F7F is the largest finite; 0x7C00 is finite here.
  std::vector<uint16_t> b(4099, 0x3F80);
  b[0] = 0x7F80;
  b[10] = 0xFF80;
  b[11] = 0x7FC0;
  b[12] = 0x7F7F;
  b[13] = 0x7C00;
  b[4098] = 0xFFC1;
  auto bv = as_bytes(b);
  scout::fp::Counts cb;
  fingerprint(bv.data(), bv.size(), scout::shm::kTypeBfloat16, &cb);
  EXPECT_EQ(cb.inf, 2u);
  EXPECT_EQ(cb.nan, 2u);
  // The fp16 buffer read as bf16: 0x7C00/0xFC00/0x7C01/0xFE00/0x7BFF/0x3C00 are finite bf16,
  // 0x7FFF and 0x7E00 are not (0x7FFF NaN, 0x7E00 finite: exponent 0xFC).
  scout::fp::Counts cx;
  fingerprint(hv.data(), hv.size(), scout::shm::kTypeBfloat16, &cx);
  EXPECT_EQ(cx.nan, 1u);
  EXPECT_EQ(cx.inf, 0u);
}

// ---- capped fingerprints

TEST(FingerprintCapped, EqualsFullUnderTheCap) {
  auto v = random_bytes(100000, 6);
  uint64_t bytes = 0;
  EXPECT_EQ(fingerprint_capped(v.data(), v.size(), v.size(), 7, kU8, nullptr, &bytes), fp(v));
  EXPECT_EQ(bytes, v.size());
}

TEST(FingerprintCapped, HashesADeterministicSubsetOfBlocks) {
  const size_t n = 100 * kB + 100;  // 101 blocks
  auto v = random_bytes(n, 7);
  const uint64_t cap = 10 * kB;
  const uint64_t sel = scout::fp::op_selector(0xabc, scout::shm::kFuncAllReduce, 17);
  uint64_t bytes = 0;
  const uint64_t a = fingerprint_capped(v.data(), n, cap, sel, kU8, nullptr, &bytes);
  EXPECT_EQ(a, fingerprint_capped(v.data(), n, cap, sel, kU8, nullptr, nullptr));
  // Which blocks were hashed: flip one byte in each block and see which flips change it.
  std::vector<uint64_t> hashed;
  for (uint64_t b = 0; b < 101; ++b) {
    v[b * kB] ^= 1;
    if (fingerprint_capped(v.data(), n, cap, sel, kU8, nullptr, nullptr) != a) hashed.push_back(b);
    v[b * kB] ^= 1;
  }
  ASSERT_EQ(hashed.size(), 10u);
  // One block in each stratum [floor(j*101/10), floor((j+1)*101/10)).
  for (uint64_t j = 0; j < 10; ++j) {
    EXPECT_GE(hashed[j], j * 101 / 10);
    EXPECT_LT(hashed[j], (j + 1) * 101 / 10);
  }
  // The straightforward implementation over those blocks gives the same value.
  EXPECT_EQ(straightforward(v.data(), n, hashed, true), a);
  uint64_t expect_bytes = 0;
  for (uint64_t b : hashed) expect_bytes += b == 100 ? 100 : kB;
  EXPECT_EQ(bytes, expect_bytes);
  // Another selector picks another subset (over 20 selectors, not all the same).
  int different = 0;
  for (uint64_t s = 1; s <= 20; ++s)
    different += fingerprint_capped(v.data(), n, cap, sel + s, kU8, nullptr, nullptr) != a;
  EXPECT_GE(different, 19);
  // Capped and full fingerprints of the same bytes differ.
  EXPECT_NE(a, fp(v));
}

// ---- hash_file

TEST(HashFile, PrintsTheFingerprintOfTheFileBytes) {
  scout::testing::TempDir dir;
  auto v = random_bytes(3 * kB + 5, 8);
  const std::string path = dir.path() + "/data.bin";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), v.size());
  std::string err;
  EXPECT_EQ(scout::fp::hash_file(path, &err), scout::fp::to_hex(fp(v)));
  EXPECT_EQ(err, "");
  const std::string empty = dir.path() + "/empty";
  std::ofstream(empty).close();
  EXPECT_EQ(scout::fp::hash_file(empty, &err), scout::fp::to_hex(fp({})));
  EXPECT_EQ(scout::fp::hash_file(dir.path() + "/missing", &err), "");
  EXPECT_EQ(err, dir.path() + "/missing: No such file or directory");
  EXPECT_EQ(scout::fp::hash_file(dir.path(), &err), "");
  EXPECT_EQ(err, dir.path() + ": not a regular file");
}

TEST(HashFile, HexIsSixteenLowercaseDigits) {
  EXPECT_EQ(scout::fp::to_hex(0), "0000000000000000");
  EXPECT_EQ(scout::fp::to_hex(0xABCDEF0123456789ull), "abcdef0123456789");
}

}  // namespace
