// Step summaries spilled to disk and merged back in order (see step_log.h).
#include "sim/timeline/step_log.h"

#include <queue>
#include <utility>

namespace zfetch::sim {

void StepLog::on_step(const StepSummary& step) {
  if (log_.empty() || step_order(step, last_)) {
    run_starts_.push_back(log_.size());
  }
  log_.push_back(step);
  last_ = step;
}

bool StepLog::for_each(const std::function<void(const StepSummary&)>& visit) {
  struct Head {
    StepSummary step;
    size_t run = 0;
  };
  std::vector<io::SpillLog<StepSummary>::Cursor> cursors;
  cursors.reserve(run_starts_.size());
  for (size_t r = 0; r < run_starts_.size(); ++r) {
    const uint64_t end = r + 1 < run_starts_.size() ? run_starts_[r + 1] : log_.size();
    cursors.push_back(log_.read(run_starts_[r], end));
  }
  // The smallest head first; among equal ones the earlier run, as a stable sort orders them.
  const auto later = [](const Head& a, const Head& b) {
    return step_order(b.step, a.step) || (!step_order(a.step, b.step) && a.run > b.run);
  };
  std::priority_queue<Head, std::vector<Head>, decltype(later)> heads(later);
  for (size_t r = 0; r < cursors.size(); ++r) {
    Head h{{}, r};
    if (cursors[r].next(h.step)) {
      heads.push(h);
    }
  }
  while (!heads.empty()) {
    Head h = heads.top();
    heads.pop();
    visit(h.step);
    if (cursors[h.run].next(h.step)) {
      heads.push(h);
    }
  }
  return log_.error().empty();
}

}  // namespace zfetch::sim
