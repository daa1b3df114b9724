// Reading replay schedules and calibrations on the GPU side (see replay_schedule_file.h).
#include "cuda_kernels/replay_schedule_file.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace zfetch::gpu {

namespace {

// A JSON object whose `format` is `format` and whose `version` is 1; `what` names it in errors.
nlohmann::json parse_versioned(std::string_view text, const char* what, const char* format) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    throw std::runtime_error(std::string(what) + ": not a JSON object");
  }
  if (j.value("format", "") != format || j.value("version", 0) != 1) {
    throw std::runtime_error(std::string(what) + ": format must be " + format + ", version 1");
  }
  return j;
}

std::int64_t gbps(const nlohmann::json& j, const char* key) {
  return j.contains(key) ? std::llround(j.at(key).get<double>() * 1e9) : 0;
}

}  // namespace

ReplaySchedule parse_replay_schedule(std::string_view text) {
  const nlohmann::json j = parse_versioned(text, "replay schedule", "zfetch-replay-schedule");
  ReplaySchedule s;
  s.scenario = j.value("scenario", "");
  s.world_size = std::max<std::int64_t>(1, j.at("world_size").get<std::int64_t>());
  s.offload = j.at("offload").get<bool>();
  const nlohmann::json& cal = j.at("calibration");
  s.calibration.machine = cal.value("machine", "");
  s.calibration.allgather_curve_points =
      cal.at("allgather").contains("curve") ? cal.at("allgather").at("curve").size() : 0;
  s.calibration.allgather_alpha_ns = cal.at("allgather").at("alpha_ns").get<std::int64_t>();
  s.calibration.allgather_busbw = cal.at("allgather").at("busbw_bytes_per_s").get<std::int64_t>();
  s.calibration.rs_alpha_ns = cal.at("reduce_scatter").at("alpha_ns").get<std::int64_t>();
  s.calibration.rs_busbw = cal.at("reduce_scatter").at("busbw_bytes_per_s").get<std::int64_t>();
  s.calibration.h2d_bytes_per_s = cal.at("h2d_bytes_per_s").get<std::int64_t>();
  s.calibration.h2d_alpha_ns = cal.value("h2d_alpha_ns", std::int64_t{0});
  for (const nlohmann::json& p : j.at("params")) {
    s.params.push_back({p.at(0).get<std::uint64_t>(), p.at(1).get<std::uint32_t>()});
  }
  for (const nlohmann::json& o : j.at("ops")) {
    ReplayOp op;
    const std::string kind = o.at("op").get<std::string>();
    if (kind == "step") {
      op.kind = ReplayOp::Kind::Step;
      op.step = o.at("step").get<std::int32_t>();
    } else if (kind == "gather") {
      op.kind = ReplayOp::Kind::Gather;
      op.gather_kind = o.at("kind").get<std::string>();
      op.sync = o.at("sync").get<bool>();
      op.params = o.at("params").get<std::vector<std::uint32_t>>();
      op.shard_bytes = o.at("shard_bytes").get<std::int64_t>();
      op.full_bytes = o.at("full_bytes").get<std::int64_t>();
      for (std::uint32_t p : op.params) {
        if (p >= s.params.size()) {
          throw std::runtime_error("replay schedule: gather of an unknown param");
        }
      }
    } else if (kind == "compute") {
      op.kind = ReplayOp::Kind::Compute;
      op.dur_ns = o.at("dur_ns").get<std::int64_t>();
      op.start_ns = o.value("start_ns", std::int64_t{-1});
      op.waits = o.at("waits").get<std::vector<std::uint32_t>>();
      for (std::uint32_t w : op.waits) {
        if (w >= s.ops.size() || s.ops[w].kind != ReplayOp::Kind::Gather) {
          throw std::runtime_error("replay schedule: compute waits on a non-gather op");
        }
      }
    } else if (kind == "wait") {
      op.kind = ReplayOp::Kind::Wait;
      const auto w = o.at("on").get<std::uint32_t>();
      if (w >= s.ops.size() || s.ops[w].kind != ReplayOp::Kind::Gather) {
        throw std::runtime_error("replay schedule: wait on a non-gather op");
      }
      op.waits = {w};
    } else if (kind == "rs") {
      op.kind = ReplayOp::Kind::Rs;
      op.bytes = o.at("bytes").get<std::int64_t>();
    } else if (kind == "drain") {
      op.kind = ReplayOp::Kind::Drain;
    } else {
      throw std::runtime_error("replay schedule: unknown op '" + kind + "'");
    }
    s.ops.push_back(std::move(op));
  }
  for (const nlohmann::json& st : j.at("steps")) {
    s.sim_steps.push_back(
        {st.at("step").get<std::int32_t>(), st.at("step_ns").get<std::int64_t>()});
  }
  return s;
}

ReplayCalibration parse_replay_calibration(std::string_view text) {
  const nlohmann::json j = parse_versioned(text, "calibration", "zfetch-calibration");
  ReplayCalibration c;
  c.machine = j.value("machine", "");
  const nlohmann::json& ag = j.at("allgather");
  c.allgather_alpha_ns = std::llround(ag.value("alpha_ns", 0.0));
  c.allgather_busbw = gbps(ag, "busbw_GBps");
  if (ag.value("interpolate", false) && ag.contains("points")) {
    c.allgather_curve_points = ag.at("points").size();
  }
  c.rs_alpha_ns = c.allgather_alpha_ns;
  c.rs_busbw = c.allgather_busbw;
  if (j.contains("reduce_scatter")) {
    const nlohmann::json& rs = j.at("reduce_scatter");
    c.rs_alpha_ns = std::llround(rs.value("alpha_ns", 0.0));
    c.rs_busbw = gbps(rs, "busbw_GBps");
  }
  if (j.contains("h2d")) {
    const nlohmann::json& h2d = j.at("h2d");
    c.h2d_bytes_per_s = gbps(h2d, "bandwidth_GBps");
    c.h2d_alpha_ns = std::llround(h2d.value("alpha_ns", 0.0));
    // The simulator's rule (sim/timeline/calibration.cc): copies measured pipelined beside
    // gathers set the copy bandwidth, their rate `bytes / (time - alpha)`.
    if (h2d.contains("beside_gather")) {
      const nlohmann::json& beside = h2d.at("beside_gather");
      const double transfer_ns = beside.value("time_ns", 0.0) - static_cast<double>(c.h2d_alpha_ns);
      if (beside.value("bytes", 0.0) > 0 && transfer_ns > 0) {
        c.h2d_bytes_per_s = std::llround(beside.value("bytes", 0.0) * 1e9 / transfer_ns);
      }
    }
  }
  return c;
}

}  // namespace zfetch::gpu
