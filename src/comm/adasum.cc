#include "comm/adasum.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "kernels/reduce.h"

namespace kolo::comm {

namespace {

// a.b, |a|^2, |b|^2 over the part of the vectors one rank holds.
struct Dots {
  double ab = 0, aa = 0, bb = 0;
};

void load(const std::byte* bytes, size_t count, DataType type, std::vector<double>& out) {
  out.resize(count);
  for (size_t i = 0; i < count; ++i) {
    switch (type) {
      case DataType::float16: {
        uint16_t bits = 0;
        std::memcpy(&bits, bytes + 2 * i, 2);
        out[i] = kernels::half_to_float(bits);
        break;
      }
      case DataType::bfloat16: {
        uint16_t bits = 0;
        std::memcpy(&bits, bytes + 2 * i, 2);
        out[i] = kernels::bfloat16_to_float(bits);
        break;
      }
      case DataType::float32: {
        float value = 0;
        std::memcpy(&value, bytes + 4 * i, 4);
        out[i] = value;
        break;
      }
      default: {
        double value = 0;
        std::memcpy(&value, bytes + 8 * i, 8);
        out[i] = value;
      }
    }
  }
}

void store(const std::vector<double>& values, DataType type, std::byte* bytes) {
  for (size_t i = 0; i < values.size(); ++i) {
    switch (type) {
      case DataType::float16: {
        const uint16_t bits = kernels::float_to_half(static_cast<float>(values[i]));
        std::memcpy(bytes + 2 * i, &bits, 2);
        break;
      }
      case DataType::bfloat16: {
        const uint16_t bits = kernels::float_to_bfloat16(static_cast<float>(values[i]));
        std::memcpy(bytes + 2 * i, &bits, 2);
        break;
      }
      case DataType::float32: {
        const auto value = static_cast<float>(values[i]);
        std::memcpy(bytes + 4 * i, &value, 4);
        break;
      }
      default:
        std::memcpy(bytes + 8 * i, &values[i], 8);
    }
  }
}

Dots dots_of(const std::vector<double>& a, const std::vector<double>& b) {
  Dots d;
  for (size_t i = 0; i < a.size(); ++i) {
    d.ab += a[i] * b[i];
    d.aa += a[i] * a[i];
    d.bb += b[i] * b[i];
  }
  return d;
}

// a <- ca a + cb b with the coefficients of the whole vectors' dot products `d`.
void combine(std::vector<double>& a, const std::vector<double>& b, const Dots& d) {
  const double ca = d.aa == 0 ? 1.0 : 1.0 - d.ab / (2.0 * d.aa);
  const double cb = d.bb == 0 ? 1.0 : 1.0 - d.ab / (2.0 * d.bb);
  for (size_t i = 0; i < a.size(); ++i) a[i] = ca * a[i] + cb * b[i];
}

// Sums `mine` over the 2d ranks of this rank's block (recursive doubling over the low bits). The
// lower rank's value is always the left operand, so both partners add in the same order and every
// rank of the block ends with bit-identical sums, hence identical coefficients.
Dots sum_over_block(Communicator& comm, Dots mine, int d) {
  const int rank = comm.rank();
  for (int k = 1; k <= d; k <<= 1) {
    std::array<double, 3> out{mine.ab, mine.aa, mine.bb};
    std::array<double, 3> in{};
    comm.send_recv(rank ^ k, std::as_bytes(std::span(out)), rank ^ k,
                   std::as_writable_bytes(std::span(in)));
    const bool lower = (rank & k) == 0;
    auto add = [lower](double own, double theirs) { return lower ? own + theirs : theirs + own; };
    mine = Dots{add(out[0], in[0]), add(out[1], in[1]), add(out[2], in[2])};
  }
  return mine;
}

// The recursive-halving tree over ranks [0, p); on return every one of them holds the result.
void adasum_tree(Communicator& comm, Bytes data, size_t count, DataType type, int p) {
  const int rank = comm.rank();
  const size_t element = dtype_size(type);
  std::vector<std::pair<size_t, size_t>> parents;  // segment held before each level
  size_t lo = 0, hi = count;
  std::vector<std::byte> received;
  std::vector<double> a, b;
  for (int d = 1; d < p; d <<= 1) {
    const int partner = rank ^ d;
    const bool lower = (rank & d) == 0;
    parents.emplace_back(lo, hi);
    const size_t mid = lo + (hi - lo) / 2;
    const auto [keep_lo, keep_hi] = lower ? std::pair(lo, mid) : std::pair(mid, hi);
    const auto [give_lo, give_hi] = lower ? std::pair(mid, hi) : std::pair(lo, mid);
    received.resize((keep_hi - keep_lo) * element);
    comm.send_recv(partner, data.subspan(give_lo * element, (give_hi - give_lo) * element), partner,
                   received);
    std::byte* kept = data.data() + keep_lo * element;
    // a is the lower half-block's vector, b the upper one's, whichever side this rank is on.
    load(lower ? kept : received.data(), keep_hi - keep_lo, type, a);
    load(lower ? received.data() : kept, keep_hi - keep_lo, type, b);
    const Dots total = sum_over_block(comm, dots_of(a, b), d);
    combine(a, b, total);
    store(a, type, kept);
    lo = keep_lo;
    hi = keep_hi;
  }
  // Distance-halving allgather: undo the halvings in reverse order.
  for (int d = p / 2; d >= 1; d >>= 1) {
    const auto [parent_lo, parent_hi] = parents.back();
    parents.pop_back();
    const int partner = rank ^ d;
    const auto [other_lo, other_hi] =
        lo == parent_lo ? std::pair(hi, parent_hi) : std::pair(parent_lo, lo);
    comm.send_recv(partner, data.subspan(lo * element, (hi - lo) * element), partner,
                   data.subspan(other_lo * element, (other_hi - other_lo) * element));
    lo = parent_lo;
    hi = parent_hi;
  }
}

}  // namespace

bool adasum_supports(DataType type) {
  return type == DataType::float16 || type == DataType::bfloat16 || type == DataType::float32 ||
         type == DataType::float64;
}

void adasum_combine(void* a, const void* b, size_t count, DataType type) {
  if (!adasum_supports(type)) {
    throw InvalidArgument(
        fmt::format("Adasum needs floating-point data, got {}", dtype_name(type)));
  }
  std::vector<double> va, vb;
  load(static_cast<const std::byte*>(a), count, type, va);
  load(static_cast<const std::byte*>(b), count, type, vb);
  combine(va, vb, dots_of(va, vb));
  store(va, type, static_cast<std::byte*>(a));
}

void adasum_gathered(Bytes gathered, int ranks, size_t count, DataType type) {
  if (!adasum_supports(type)) {
    throw InvalidArgument(
        fmt::format("Adasum needs floating-point data, got {}", dtype_name(type)));
  }
  const size_t bytes = count * dtype_size(type);
  if (ranks < 1 || gathered.size() < bytes * static_cast<size_t>(ranks)) {
    throw InvalidArgument(fmt::format("adasum of gathered vectors: {} bytes for {} ranks of {}",
                                      gathered.size(), ranks, bytes));
  }
  auto block = [&](int r) { return gathered.data() + bytes * static_cast<size_t>(r); };
  int p = 1;
  while (p * 2 <= ranks) p *= 2;
  for (int i = 0; i + p < ranks; ++i) adasum_combine(block(i), block(i + p), count, type);
  for (int d = 1; d < p; d *= 2) {
    for (int base = 0; base < p; base += 2 * d) {
      adasum_combine(block(base), block(base + d), count, type);
    }
  }
}

void adasum(Communicator& comm, Bytes data, size_t count, DataType type) {
  if (!adasum_supports(type)) {
    throw InvalidArgument(
        fmt::format("Adasum needs floating-point data, got {}", dtype_name(type)));
  }
  const size_t bytes = count * dtype_size(type);
  if (data.size() < bytes) {
    throw InvalidArgument(fmt::format("rank {}: adasum buffer has {} bytes, needs {}", comm.rank(),
                                      data.size(), bytes));
  }
  const int n = comm.size();
  const int rank = comm.rank();
  if (n == 1 || count == 0) return;
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const Bytes whole = data.first(bytes);
  if (rank >= p) {  // folded into rank - p, which sends the result back
    comm.send(rank - p, whole);
    comm.recv(rank - p, whole);
    return;
  }
  if (rank + p < n) {
    std::vector<std::byte> extra(bytes);
    comm.recv(rank + p, extra);
    adasum_combine(whole.data(), extra.data(), count, type);
  }
  adasum_tree(comm, whole, count, type, p);
  if (rank + p < n) comm.send(rank + p, whole);
}

}  // namespace kolo::comm
