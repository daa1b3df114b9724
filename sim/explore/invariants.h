// Oracle 4: the model's own invariants, checked on the event stream of one simulation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/scenario.h"
#include "trace/event.h"
#include "trace/sink.h"

namespace zfetch::sim {

/// Per module, the own part of its fetch list as the process builds it (semantics 2.1): a z3
/// leaf fetches its whole subtree's params, any other module its direct params; canonical
/// indices, tied params once.
std::vector<std::vector<model::ParamIndex>> own_fetch_lists(const model::Scenario& scenario);

/// Replays the residency of every parameter from the events (per rank; a new engine or rank
/// starts from "unknown") and records the first event that breaks one of:
///
/// - a gather, prefetch, getter gather or persistent gather starts only from NOT_AVAILABLE,
///   and a wait is never on a NOT_AVAILABLE param (it ends the param's whole coalesced gather);
/// - an `access` event reports the residency the events so far imply;
/// - a module computes (forward or backward) only when every param of its fetch list is
///   AVAILABLE: an in-flight gather was waited on, and nothing was released under it;
/// - a param is never released while a module whose own params include it is between its
///   forward fetch and its post-hook (it is in the param's consumers then, semantics 4.3).
///
/// The bound on live gathered bytes is not checked here: DeepSpeed's limits bound prefetching
/// only, never the module's own fetch (semantics 4.2), so it is no invariant of the model.
class InvariantChecker final : public trace::EventSink {
 public:
  explicit InvariantChecker(const model::Scenario& scenario);

  void on_event(const trace::Event& e) override;

  /// "" while every invariant holds; otherwise what broke, at which event.
  [[nodiscard]] const std::string& violation() const { return violation_; }

 private:
  enum class Residency : uint8_t { Unknown, NotAvailable, Inflight, Available };

  void fail(const trace::Event& e, std::string_view what);
  void reset();

  const model::Scenario& scenario_;
  std::vector<std::vector<model::ParamIndex>> fetch_list_;  ///< own params, canonical
  std::vector<model::ParamIndex> canonical_;
  std::vector<Residency> residency_;
  std::vector<int64_t> group_;  ///< gather group of an INFLIGHT param
  std::vector<int32_t> open_forwards_;
  int32_t rank_ = -1;
  std::string violation_;
};

}  // namespace zfetch::sim
