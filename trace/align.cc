// Myers, "An O(ND) Difference Algorithm and Its Variations" (Algorithmica 1986), the greedy
// forward version with the V array of every step kept for the trace-back.
#include "trace/align.h"

#include <cstdint>

namespace zfetch::trace {
namespace {

void push(std::vector<AlignRun>& runs, AlignRun::Type type, size_t a, size_t b, size_t count) {
  if (count == 0) {
    return;
  }
  if (!runs.empty() && runs.back().type == type) {
    AlignRun& last = runs.back();
    const bool follows = (type == AlignRun::Type::OnlyB || last.a_begin + last.count == a) &&
                         (type == AlignRun::Type::OnlyA || last.b_begin + last.count == b);
    if (follows) {
      last.count += count;
      return;
    }
  }
  runs.push_back({type, a, b, count});
}

}  // namespace

std::vector<AlignRun> align(size_t a_size, size_t b_size,
                            const std::function<bool(size_t, size_t)>& equal, size_t max_edits) {
  // The common prefix and suffix need no search.
  size_t prefix = 0;
  while (prefix < a_size && prefix < b_size && equal(prefix, prefix)) {
    ++prefix;
  }
  size_t suffix = 0;
  while (suffix < a_size - prefix && suffix < b_size - prefix &&
         equal(a_size - 1 - suffix, b_size - 1 - suffix)) {
    ++suffix;
  }
  const auto n = static_cast<int64_t>(a_size - prefix - suffix);
  const auto m = static_cast<int64_t>(b_size - prefix - suffix);
  std::vector<AlignRun> runs;
  push(runs, AlignRun::Type::Equal, 0, 0, prefix);

  // x: position in a (after the prefix); the diagonal k = x - y. v[d] is V after step d,
  // indexed by k + d_max.
  const int64_t d_max = std::min<int64_t>(n + m, static_cast<int64_t>(max_edits));
  const int64_t offset = d_max + 1;
  std::vector<std::vector<int64_t>> history;
  std::vector<int64_t> v(static_cast<size_t>(2 * d_max + 3), 0);
  int64_t found = -1;
  for (int64_t d = 0; d <= d_max && found < 0; ++d) {
    for (int64_t k = -d; k <= d; k += 2) {
      const auto at = [&](int64_t kk) -> int64_t& { return v[static_cast<size_t>(kk + offset)]; };
      int64_t x = 0;
      // Extend whichever neighbouring diagonal reached further (Myers' rule, deterministic).
      if (k == -d || (k != d && at(k - 1) < at(k + 1))) {
        x = at(k + 1);  // insertion: down from diagonal k+1
      } else {
        x = at(k - 1) + 1;  // deletion: right from diagonal k-1
      }
      int64_t y = x - k;
      while (x < n && y < m &&
             equal(prefix + static_cast<size_t>(x), prefix + static_cast<size_t>(y))) {
        ++x;
        ++y;
      }
      at(k) = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
    // Keep V on diagonals -d..d only: the trace-back needs no more, and memory stays O(D^2).
    history.emplace_back(v.begin() + (offset - d), v.begin() + (offset + d + 1));
  }

  std::vector<AlignRun> middle;
  if (found < 0) {
    push(middle, AlignRun::Type::OnlyA, prefix, prefix, static_cast<size_t>(n));
    push(middle, AlignRun::Type::OnlyB, prefix + static_cast<size_t>(n), prefix,
         static_cast<size_t>(m));
  } else {
    // Trace back from (n, m) to (0, 0), collecting runs in reverse.
    std::vector<AlignRun> reversed;
    int64_t x = n;
    int64_t y = m;
    for (int64_t d = found; d > 0; --d) {
      const std::vector<int64_t>& prev = history[static_cast<size_t>(d - 1)];
      const auto at = [&](int64_t kk) { return prev[static_cast<size_t>(kk + d - 1)]; };
      const int64_t k = x - y;
      const bool down = k == -d || (k != d && at(k - 1) < at(k + 1));
      const int64_t prev_k = down ? k + 1 : k - 1;
      const int64_t prev_x = at(prev_k);
      const int64_t prev_y = prev_x - prev_k;
      const int64_t mid_x = down ? prev_x : prev_x + 1;
      const int64_t mid_y = down ? prev_y + 1 : prev_y;
      reversed.push_back({AlignRun::Type::Equal, prefix + static_cast<size_t>(mid_x),
                          prefix + static_cast<size_t>(mid_y), static_cast<size_t>(x - mid_x)});
      if (down) {
        reversed.push_back({AlignRun::Type::OnlyB, prefix + static_cast<size_t>(prev_x),
                            prefix + static_cast<size_t>(prev_y), 1});
      } else {
        reversed.push_back({AlignRun::Type::OnlyA, prefix + static_cast<size_t>(prev_x),
                            prefix + static_cast<size_t>(prev_y), 1});
      }
      x = prev_x;
      y = prev_y;
    }
    reversed.push_back({AlignRun::Type::Equal, prefix, prefix, static_cast<size_t>(x)});
    for (auto it = reversed.rbegin(); it != reversed.rend(); ++it) {
      push(middle, it->type, it->a_begin, it->b_begin, it->count);
    }
  }
  for (const AlignRun& run : middle) {
    push(runs, run.type, run.a_begin, run.b_begin, run.count);
  }
  push(runs, AlignRun::Type::Equal, a_size - suffix, b_size - suffix, suffix);
  return runs;
}

}  // namespace zfetch::trace
