// The residency-changing variants of a scenario and their re-simulation.
#include "sim/explore/hazard_check.h"

#include <fmt/format.h>

#include "trace/sink.h"

namespace zfetch::sim {
namespace {

using model::ScheduleItem;

ScheduleItem item(ScheduleItem::Kind kind, std::string tag = {}) {
  ScheduleItem it;
  it.kind = kind;
  it.tag = std::move(tag);
  return it;
}

ScheduleItem train_one_step() {
  ScheduleItem it = item(ScheduleItem::Kind::Train);
  it.steps = 1;
  return it;
}

HazardChange resimulated(std::string change, const model::Scenario& changed,
                         const Options& options) {
  trace::NullSink sink;
  return HazardChange{std::move(change), simulate(changed, options, sink)};
}

}  // namespace

std::vector<HazardChange> resimulate_hazard_changes(const model::Scenario& scenario,
                                                    const Options& options) {
  std::vector<HazardChange> changes;
  // Without prefetching, a param that was INFLIGHT at the access is NOT_AVAILABLE there.
  if (scenario.config.zero.prefetch_bucket_size != 0) {
    model::Scenario changed = scenario;
    changed.config.zero.prefetch_bucket_size = 0;
    changes.push_back(
        resimulated("prefetching off (stage3_prefetch_bucket_size: 0)", changed, options));
  }
  // A resume: a fresh engine whose recording pass sees every param partitioned again
  // (issue #8874), then one more step.
  {
    model::Scenario changed = scenario;
    const std::string tag = "zfetch-hazard-resume";
    changed.schedule.push_back(item(ScheduleItem::Kind::SaveCheckpoint, tag));
    changed.schedule.push_back(item(ScheduleItem::Kind::Restart));
    changed.schedule.push_back(item(ScheduleItem::Kind::LoadCheckpoint, tag));
    changed.schedule.push_back(train_one_step());
    changes.push_back(resimulated(
        "a resume after the schedule (save_checkpoint, restart, load_checkpoint, one more "
        "train step)",
        changed, options));
  }
  // empty_partition_cache partitions the persistent params too; the trace is kept.
  {
    model::Scenario changed = scenario;
    changed.schedule.push_back(item(ScheduleItem::Kind::EmptyPartitionCache));
    changed.schedule.push_back(train_one_step());
    changes.push_back(resimulated(
        "empty_partition_cache() after the schedule, then one more train step", changed, options));
  }
  return changes;
}

}  // namespace zfetch::sim
