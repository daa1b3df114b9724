// Replay schedules and the timeline's rules over them (see replay_model.h).
#include "cuda_kernels/replay_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace zfetch::gpu {

namespace {

constexpr std::int64_t kNsPerSecond = 1'000'000'000;
__extension__ typedef __int128 Int128;

std::int64_t round_div(Int128 num, Int128 den) {
  return static_cast<std::int64_t>((num + den / 2) / den);
}

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

std::int64_t replay_transfer_ns(std::int64_t bytes, std::int64_t bytes_per_s) {
  if (bytes <= 0 || bytes_per_s <= 0) {
    return 0;
  }
  return round_div(static_cast<Int128>(bytes) * kNsPerSecond, bytes_per_s);
}

std::int64_t replay_h2d_ns(std::int64_t alpha_ns, std::int64_t bytes, std::int64_t bytes_per_s) {
  if (bytes <= 0) {
    return 0;
  }
  return alpha_ns + replay_transfer_ns(bytes, bytes_per_s);
}

std::int64_t replay_collective_ns(std::int64_t alpha_ns, std::int64_t busbw, std::int64_t bytes,
                                  std::int64_t world_size) {
  if (world_size <= 1 || bytes <= 0) {
    return 0;
  }
  if (busbw <= 0) {
    return alpha_ns;
  }
  const Int128 num = static_cast<Int128>(world_size - 1) * bytes * kNsPerSecond;
  const Int128 den = static_cast<Int128>(world_size) * busbw;
  return alpha_ns + round_div(num, den);
}

ReplaySchedule parse_replay_schedule(std::string_view text) {
  const nlohmann::json j = parse_versioned(text, "replay schedule", "zfetch-replay-schedule");
  ReplaySchedule s;
  s.scenario = j.value("scenario", "");
  s.world_size = std::max<std::int64_t>(1, j.at("world_size").get<std::int64_t>());
  s.offload = j.at("offload").get<bool>();
  const nlohmann::json& cal = j.at("calibration");
  s.calibration.machine = cal.value("machine", "");
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
  }
  return c;
}

std::vector<PredictedStep> predict_steps(const ReplaySchedule& s, const ReplayCalibration& c) {
  enum { kCompute, kComm, kH2d, kRs };
  std::array<std::int64_t, 4> free{};
  std::int64_t& now = free[kCompute];
  std::vector<std::int64_t> ready(s.ops.size(), 0);
  std::vector<PredictedStep> out;
  bool in_step = false;
  PredictedStep cur;
  std::int64_t start = 0;
  auto end_step = [&] {
    if (in_step) {
      cur.step_ns = now - start;
      out.push_back(cur);
    }
    in_step = false;
  };
  auto drain = [&] { now = *std::max_element(free.begin(), free.end()); };
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const ReplayOp& op = s.ops[i];
    switch (op.kind) {
    case ReplayOp::Kind::Step:
      end_step();
      in_step = true;
      cur = PredictedStep{op.step, 0, 0};
      start = now;
      break;
    case ReplayOp::Kind::Gather: {
      std::int64_t r = now;
      if (s.offload) {
        const std::int64_t st = std::max(r, free[kH2d]);
        free[kH2d] = st + replay_h2d_ns(c.h2d_alpha_ns, op.shard_bytes, c.h2d_bytes_per_s);
        r = free[kH2d];
      }
      const std::int64_t dur = replay_collective_ns(c.allgather_alpha_ns, c.allgather_busbw,
                                                    op.shard_bytes * s.world_size, s.world_size);
      if (dur > 0) {
        free[kComm] = std::max(r, free[kComm]) + dur;
        r = free[kComm];
      }
      ready[i] = r;
      if (op.sync) {
        now = std::max(now, r);
      }
      break;
    }
    case ReplayOp::Kind::Wait:
      now = std::max(now, ready[op.waits[0]]);
      break;
    case ReplayOp::Kind::Compute:
      for (std::uint32_t w : op.waits) {
        now = std::max(now, ready[w]);
      }
      now += op.dur_ns;
      cur.compute_ns += op.dur_ns;
      break;
    case ReplayOp::Kind::Rs: {
      const std::int64_t dur =
          replay_collective_ns(c.rs_alpha_ns, c.rs_busbw, op.bytes, s.world_size);
      if (dur > 0) {
        free[kRs] = std::max(now, free[kRs]) + dur;
      }
      break;
    }
    case ReplayOp::Kind::Drain:
      drain();
      break;
    }
  }
  end_step();
  return out;
}

}  // namespace zfetch::gpu
