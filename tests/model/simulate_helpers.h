// Simulating a loaded scenario in tests: its outcome, or the digest of its events.
#pragma once

#include <cstdint>

#include "model/scenario.h"
#include "sim/explore/event_digest.h"
#include "sim/simulator.h"
#include "trace/sink.h"

namespace zfetch::model::testing {

/// The outcome of `scenario` under the default options.
inline sim::Outcome simulate(const Scenario& scenario) {
  trace::NullSink sink;
  return sim::simulate(scenario, sim::Options{}, sink);
}

/// The digest of every event `scenario` emits under the default options.
inline uint64_t digest_of(const Scenario& scenario) {
  sim::EventDigest digest;
  sim::simulate(scenario, sim::Options{}, digest);
  return digest.digest();
}

}  // namespace zfetch::model::testing
