// Dependencies of a replay graph with implied edges left out (see replay_deps.h).
#include "cuda_kernels/replay_deps.h"

#include <algorithm>

namespace zfetch::gpu {

void ReplayDeps::depend(int chain, const Ref& ref) {
  if (!ref.valid()) {
    return;
  }
  std::vector<Ref>& f = front_.at(ix(chain));
  if (reduce_) {
    for (const Ref& r : f) {
      if (follows(r, ref)) {
        return;  // already implied
      }
    }
    std::erase_if(f, [&](const Ref& r) { return follows(ref, r); });
  } else {
    for (const Ref& r : f) {
      if (r.chain == ref.chain && r.pos >= ref.pos) {
        return;  // the same chain's newer node
      }
    }
    std::erase_if(f, [&](const Ref& r) { return r.chain == ref.chain; });
  }
  f.push_back(ref);
}

void ReplayDeps::depend(int chain, const std::vector<Ref>& refs) {
  for (const Ref& r : refs) {
    depend(chain, r);
  }
}

ReplayDeps::Ref ReplayDeps::add(int chain, std::size_t id) {
  std::vector<Ref>& f = front_.at(ix(chain));
  Ref n;
  n.chain = chain;
  n.id = id;
  for (const Ref& r : f) {
    for (std::size_t c = 0; c < n.clock.size(); ++c) {
      n.clock[c] = std::max(n.clock[c], r.clock[c]);
    }
  }
  Ref& prev = last_.at(ix(chain));
  n.pos = prev.valid() ? prev.pos + 1 : 1;
  n.clock[static_cast<std::size_t>(chain)] = n.pos;
  edges_ += f.size();
  ++nodes_;
  prev = n;
  f.assign(1, n);
  return n;
}

}  // namespace zfetch::gpu
