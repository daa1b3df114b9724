// The simulated-event bound and the progress line (see work_bound.h).
#include "tools/work_bound.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "trace/bounded_sink.h"

namespace zfetch::tools {

namespace {

// Progress is refreshed every 2^20 events: often enough to look alive, rarely enough to cost
// nothing measurable.
constexpr uint64_t kProgressMask = (uint64_t{1} << 20) - 1;

uint64_t saturating_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t saturating_mul(uint64_t a, uint64_t b) {
  return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

class OperationCounter {
 public:
  explicit OperationCounter(const model::Scenario& scenario)
      : scenario_(scenario), per_module_(scenario.modules.size(), kUnknown) {}

  // One forward of module `m`; memoized, so shared subtrees are counted once each.
  uint64_t module(model::ModuleIndex m) {
    if (m >= per_module_.size()) {
      return 1;
    }
    if (per_module_[m] != kUnknown) {
      return per_module_[m];
    }
    per_module_[m] = 1;  // a call cycle (rejected at load) cannot recurse forever
    const model::ModuleSpec& spec = scenario_.modules[m];
    uint64_t total = 1;
    if (spec.has_forward) {
      total = saturating_add(total, ops(spec.forward));
    } else {
      total = saturating_add(total, spec.params.size());
      for (model::ModuleIndex child : spec.children) {
        total = saturating_add(total, module(child));
      }
    }
    per_module_[m] = total;
    return total;
  }

 private:
  static constexpr uint64_t kUnknown = UINT64_MAX;

  uint64_t ops(const std::vector<model::Op>& list) {
    uint64_t total = 0;
    for (const model::Op& op : list) {
      uint64_t cost = 1;
      if (op.kind == model::Op::Kind::Call) {
        cost = saturating_add(cost, module(op.callee));
      } else if (op.kind == model::Op::Kind::Repeat) {
        cost = saturating_add(
            cost,
            saturating_mul(static_cast<uint64_t>(std::max<int64_t>(op.count, 0)), ops(op.body)));
      } else if (op.kind == model::Op::Kind::Checkpoint) {
        cost = saturating_add(cost, saturating_mul(2, ops(op.body)));  // forward and recompute
      }
      total = saturating_add(total, cost);
    }
    return total;
  }

  const model::Scenario& scenario_;
  std::vector<uint64_t> per_module_;
};

}  // namespace

uint64_t planned_operations(const model::Scenario& scenario) {
  if (scenario.modules.empty()) {
    return 0;
  }
  OperationCounter counter(scenario);
  // Forward and backward of one pass: the backward visits what the forward did.
  const uint64_t pass = saturating_mul(2, counter.module(0));
  const auto gas =
      static_cast<uint64_t>(std::max<int64_t>(scenario.config.gradient_accumulation_steps, 1));
  uint64_t passes = 0;
  for (const model::ScheduleItem& item : scenario.schedule) {
    // A generate item's encoder call is at most one more pass's worth of work.
    const int64_t encoder = item.encoder != model::kNone ? 1 : 0;
    passes = saturating_add(
        passes, static_cast<uint64_t>(model::root_forwards(item, static_cast<int64_t>(gas))) +
                    static_cast<uint64_t>(encoder));
  }
  return saturating_mul(std::max<uint64_t>(passes, 1), pass);
}

std::string planned_work_message(const std::string& file, uint64_t operations,
                                 uint64_t max_events) {
  return fmt::format(
      "{}: error: the schedule asks for {} module operations, more than the --max-events bound "
      "of {}; reduce repeat counts, gradient_accumulation_steps or steps, or raise "
      "--max-events if this much work is intended",
      file, operations == UINT64_MAX ? std::string("more than 2^64") : std::to_string(operations),
      max_events);
}

ProgressSink::ProgressSink(trace::EventSink& next)
    : progress_(::isatty(STDERR_FILENO) == 1), next_(next) {}

ProgressSink::~ProgressSink() {
  if (progress_shown_) {
    std::fputs("\r\033[K", stderr);
  }
}

void ProgressSink::on_event(const trace::Event& event) {
  if (progress_ && (++events_ & kProgressMask) == 0) {
    std::fprintf(stderr, "\rzfetch: %llu events simulated (rank %d, step %d)\033[K",
                 static_cast<unsigned long long>(events_), static_cast<int>(event.rank),
                 static_cast<int>(event.step));
    progress_shown_ = true;
  }
  next_.on_event(event);
}

std::string work_bound_message(const std::string& file, uint64_t max_events) {
  return fmt::format(
      "{}: error: the run needs more than {} simulated events (the --max-events bound); "
      "reduce repeat counts, gradient_accumulation_steps or steps, or raise --max-events if "
      "this much work is intended",
      file, max_events);
}

std::optional<sim::Outcome> simulate_within_bound(const model::Scenario& scenario,
                                                  const sim::Options& options,
                                                  trace::EventSink& sink, uint64_t max_events,
                                                  const std::string& file) {
  if (const uint64_t planned = planned_operations(scenario); planned > max_events) {
    std::fprintf(stderr, "%s\n", planned_work_message(file, planned, max_events).c_str());
    return std::nullopt;
  }
  ProgressSink progress(sink);
  trace::BoundedSink bounded(max_events, progress);
  try {
    return sim::simulate(scenario, options, bounded);
  } catch (const trace::EventBoundExceeded& e) {
    std::fprintf(stderr, "%s\n", work_bound_message(file, e.max_events).c_str());
    return std::nullopt;
  }
}

}  // namespace zfetch::tools
