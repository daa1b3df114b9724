// Aligns two sequences with the fewest insertions and deletions (Myers' O(ND) algorithm), so
// that one missing event is one difference and not a cascade of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace zfetch::trace {

/// One run of an alignment: `count` items that are equal on both sides, only in `a`
/// (deleted) or only in `b` (inserted), starting at a_begin / b_begin.
struct AlignRun {
  enum class Type : uint8_t { Equal, OnlyA, OnlyB };
  Type type = Type::Equal;
  size_t a_begin = 0;
  size_t b_begin = 0;
  size_t count = 0;
};

/// The shortest edit script from a[0, a_size) to b[0, b_size) under `equal(i, j)`, as runs in
/// order; the same inputs always give the same script. When the edit distance would exceed
/// `max_edits`, the part between the common prefix and suffix is returned as one OnlyA and one
/// OnlyB run (memory stays O(max_edits^2)).
std::vector<AlignRun> align(size_t a_size, size_t b_size,
                            const std::function<bool(size_t, size_t)>& equal,
                            size_t max_edits = 1024);

}  // namespace zfetch::trace
